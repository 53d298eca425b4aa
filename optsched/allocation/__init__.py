"""Allocation: what each job gets in a round or a lease.

Systems
-------
gavel
    Gavel's heterogeneity-aware round LPs: max-min, finish-time fairness, makespan, total
    throughput, their space-sharing ("packed") forms and the cost/SLO forms.
themis
    Themis's partial-allocation auction over one lease (a heuristic returning Gavel's
    :class:`~optsched.allocation.gavel.Allocation`).
optimus
    Optimus: fitted convergence and speed models, marginal-gain allocation, exact MILP.
chronus
    Chronus: lease-based deadline scheduling, SLO admission and lease grants as a MILP.
andreas
    ANDREAS: energy cost plus weighted tardiness per scheduling point (MILP, randomised greedy).

"""

from typing import TYPE_CHECKING

from optsched._lazy import attach

if TYPE_CHECKING:
    from optsched.allocation import andreas, chronus, gavel, optimus, themis
    from optsched.allocation.andreas import (
        MAX_RESTARTS,
        AndreasInstance,
        AndreasJob,
        AndreasPlan,
        Assignment,
        Configuration,
        DecisionCosts,
        GreedyRun,
        NodeType,
        RandomizedGreedy,
        decision_cost,
        decision_costs,
        nodes_needed,
    )
    from optsched.allocation.chronus import (
        HEURISTICS,
        BestEffortJob,
        ChronusGreedy,
        EDFBaseline,
        LeaseInstance,
        LeasePlan,
        SLOJob,
        build_milp,
        edf_feasible,
        edf_pack,
        fill_best_effort,
    )
    from optsched.allocation.gavel import (
        PACKED_POLICIES,
        POLICIES,
        Allocation,
        AllocationInstance,
        AllocationJob,
        PairThroughput,
        formulation,
        objective_value,
        packed_objective_value,
    )
    from optsched.allocation.optimus import (
        ConvergenceFit,
        ConvergenceSpec,
        MarginalGain,
        OptimusAllocation,
        OptimusInstance,
        OptimusJob,
        SpeedFit,
        convergence_step,
        fit_convergence,
        fit_speed,
        loss_curve,
        marginal_gain,
        speed,
    )
    from optsched.allocation.themis import (
        DEFAULT_FAIRNESS,
        DEFAULT_LEASE_SECONDS,
        Bid,
        PartialAllocation,
        ThemisOutcome,
        check_options,
        lease_rho,
        partial_allocation,
        themis_round,
    )

#: Every system loads on first use (its solvers, SciPy and pydantic models): a caller that
#: needs one system's module (``optsched.allocation.gavel.lp``) does not import the others.
__getattr__, __dir__ = attach(
    __name__,
    {
        "andreas": "optsched.allocation.andreas",
        "chronus": "optsched.allocation.chronus",
        "gavel": "optsched.allocation.gavel",
        "optimus": "optsched.allocation.optimus",
        "themis": "optsched.allocation.themis",
        "MAX_RESTARTS": "optsched.allocation.andreas",
        "AndreasInstance": "optsched.allocation.andreas",
        "AndreasJob": "optsched.allocation.andreas",
        "AndreasPlan": "optsched.allocation.andreas",
        "Assignment": "optsched.allocation.andreas",
        "Configuration": "optsched.allocation.andreas",
        "DecisionCosts": "optsched.allocation.andreas",
        "GreedyRun": "optsched.allocation.andreas",
        "NodeType": "optsched.allocation.andreas",
        "RandomizedGreedy": "optsched.allocation.andreas",
        "decision_cost": "optsched.allocation.andreas",
        "decision_costs": "optsched.allocation.andreas",
        "nodes_needed": "optsched.allocation.andreas",
        "HEURISTICS": "optsched.allocation.chronus",
        "BestEffortJob": "optsched.allocation.chronus",
        "ChronusGreedy": "optsched.allocation.chronus",
        "EDFBaseline": "optsched.allocation.chronus",
        "LeaseInstance": "optsched.allocation.chronus",
        "LeasePlan": "optsched.allocation.chronus",
        "SLOJob": "optsched.allocation.chronus",
        "build_milp": "optsched.allocation.chronus",
        "edf_feasible": "optsched.allocation.chronus",
        "edf_pack": "optsched.allocation.chronus",
        "fill_best_effort": "optsched.allocation.chronus",
        "PACKED_POLICIES": "optsched.allocation.gavel",
        "POLICIES": "optsched.allocation.gavel",
        "Allocation": "optsched.allocation.gavel",
        "AllocationInstance": "optsched.allocation.gavel",
        "AllocationJob": "optsched.allocation.gavel",
        "PairThroughput": "optsched.allocation.gavel",
        "formulation": "optsched.allocation.gavel",
        "objective_value": "optsched.allocation.gavel",
        "packed_objective_value": "optsched.allocation.gavel",
        "ConvergenceFit": "optsched.allocation.optimus",
        "ConvergenceSpec": "optsched.allocation.optimus",
        "MarginalGain": "optsched.allocation.optimus",
        "OptimusAllocation": "optsched.allocation.optimus",
        "OptimusInstance": "optsched.allocation.optimus",
        "OptimusJob": "optsched.allocation.optimus",
        "SpeedFit": "optsched.allocation.optimus",
        "convergence_step": "optsched.allocation.optimus",
        "fit_convergence": "optsched.allocation.optimus",
        "fit_speed": "optsched.allocation.optimus",
        "loss_curve": "optsched.allocation.optimus",
        "marginal_gain": "optsched.allocation.optimus",
        "speed": "optsched.allocation.optimus",
        "DEFAULT_FAIRNESS": "optsched.allocation.themis",
        "DEFAULT_LEASE_SECONDS": "optsched.allocation.themis",
        "Bid": "optsched.allocation.themis",
        "PartialAllocation": "optsched.allocation.themis",
        "ThemisOutcome": "optsched.allocation.themis",
        "check_options": "optsched.allocation.themis",
        "lease_rho": "optsched.allocation.themis",
        "partial_allocation": "optsched.allocation.themis",
        "themis_round": "optsched.allocation.themis",
    },
)


#: Names two systems share (each system's ``solve``, ``validate``, ``FAMILY``, ...): reach them
#: through the system, e.g. ``optsched.allocation.gavel.solve``.
SHARED_NAMES: frozenset[str] = frozenset(
    [
        "ALGORITHMS",
        "FAMILY",
        "generate_instance",
        "instance_schema",
        "load_instance",
        "solve",
        "validate",
    ]
)

__all__ = [
    "DEFAULT_FAIRNESS",
    "DEFAULT_LEASE_SECONDS",
    "HEURISTICS",
    "MAX_RESTARTS",
    "PACKED_POLICIES",
    "POLICIES",
    "SHARED_NAMES",
    "Allocation",
    "AllocationInstance",
    "AllocationJob",
    "AndreasInstance",
    "AndreasJob",
    "AndreasPlan",
    "Assignment",
    "BestEffortJob",
    "Bid",
    "ChronusGreedy",
    "Configuration",
    "ConvergenceFit",
    "ConvergenceSpec",
    "DecisionCosts",
    "EDFBaseline",
    "GreedyRun",
    "LeaseInstance",
    "LeasePlan",
    "MarginalGain",
    "NodeType",
    "OptimusAllocation",
    "OptimusInstance",
    "OptimusJob",
    "PairThroughput",
    "PartialAllocation",
    "RandomizedGreedy",
    "SLOJob",
    "SpeedFit",
    "ThemisOutcome",
    "andreas",
    "build_milp",
    "check_options",
    "chronus",
    "convergence_step",
    "decision_cost",
    "decision_costs",
    "edf_feasible",
    "edf_pack",
    "fill_best_effort",
    "fit_convergence",
    "fit_speed",
    "formulation",
    "gavel",
    "lease_rho",
    "loss_curve",
    "marginal_gain",
    "nodes_needed",
    "objective_value",
    "optimus",
    "packed_objective_value",
    "partial_allocation",
    "speed",
    "themis",
    "themis_round",
]
