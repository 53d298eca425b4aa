"""Heterogeneity-aware allocation policies of one scheduling round (Gavel class).

The family follows the protocol of every optsched family: :class:`AllocationInstance` (with
``load``/``save``/``schema``), :func:`generate_instance`, :func:`solve` returning an
:class:`~optsched.results.ExactResult` of an :class:`Allocation`, and :func:`validate` returning
a :class:`~optsched.results.Report`. The LPs are built as sparse matrices straight into HiGHS
(:mod:`optsched.allocation.gavel.lp`); declarative cvxpy twins
(:mod:`optsched.allocation.gavel.twin`) state
the same models for the docs and the cross-checks. The space-sharing ("packed") policies, with
pair rows for jobs sharing a gang of GPUs, are in :mod:`optsched.allocation.gavel.packed`.
:func:`themis` is Themis's partial-allocation auction over one lease
(:mod:`optsched.allocation.themis`), a heuristic returning the same :class:`Allocation`, beside
its exact counterpart ``solve(instance, "ftf-perf")``.
"""

from __future__ import annotations

from typing import Any

from optsched.allocation.gavel.generate import generate_instance
from optsched.allocation.gavel.instance import (
    AllocationInstance,
    AllocationJob,
    PairThroughput,
    instance_schema,
    load_instance,
)
from optsched.allocation.gavel.lp import POLICIES, objective_value, solve_lp_policy
from optsched.allocation.gavel.packed import (
    PACKED_POLICIES,
    packed_objective_value,
    solve_packed_policy,
)
from optsched.allocation.gavel.solution import Allocation
from optsched.allocation.gavel.validate import validate
from optsched.allocation.themis import themis
from optsched.errors import NotOptimalError
from optsched.results import ExactResult
from optsched.solvers.result import SolveResult

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "PACKED_POLICIES",
    "POLICIES",
    "Allocation",
    "AllocationInstance",
    "AllocationJob",
    "PairThroughput",
    "generate_instance",
    "instance_schema",
    "load_instance",
    "objective_value",
    "packed_objective_value",
    "solve",
    "themis",
    "validate",
]

_SENSE = {
    "max-min": "max",
    "max-sum-throughput": "max",
    "makespan": "min",
    "ftf": "min",
    "min-cost": "max",
    "min-cost-slo": "max",
}


def solve(
    instance: AllocationInstance,
    policy: str = "max-min-perf",
    *,
    time_limit: float | None = None,
    accept_feasible: bool = False,
    warm_start: Any = None,
) -> ExactResult[Allocation]:
    """Solve one round's allocation exactly.

    Parameters
    ----------
    instance : AllocationInstance
    policy : str
        A key of :data:`POLICIES`: ``max-min``/``max-min-perf`` (LAS), ``makespan``/
        ``makespan-perf``, ``ftf``/``ftf-perf`` (finish-time fairness),
        ``max-sum-throughput-perf``, ``min-cost``/``min-cost-perf`` (throughput per dollar),
        ``min-cost-slo``/``min-cost-slo-perf`` (the same with each job's deadline as a
        throughput lower bound), and the space-sharing forms ``max-min-packed``,
        ``makespan-packed``, ``ftf-packed``, ``max-sum-throughput-packed``
        (:data:`PACKED_POLICIES`; the allocation then has pair rows).
    time_limit : float, optional
        Seconds for the whole policy, model building included.
    accept_feasible : bool
        Return an allocation whose optimality is not proven instead of raising.
    warm_start : optional
        ``result.extra["lp"]`` of the previous round's result for the same policy and shape.

    Returns
    -------
    ExactResult of Allocation
        ``objective`` is the policy's objective of the returned allocation, recomputed from its
        definition; ``bound`` the proven bound; ``extra["lp"]`` the last LP solution (for warm
        starts) and ``extra["lp_solves"]`` how many LPs were solved.

    Raises
    ------
    NotOptimalError
        Not proven optimal and not accepted; carries the result with its allocation (none when
        the round is infeasible, e.g. deadlines no allocation meets: status ``infeasible``).
    InvalidInstanceError
        Unknown policy, or a cost policy on a GPU type without a known price (``prices``).

    Examples
    --------
    >>> res = solve(generate_instance(8, seed=0), "max-min-perf")
    >>> res.status.value, validate(generate_instance(8, seed=0), res.solution).ok
    ('optimal', True)
    """
    if policy in PACKED_POLICIES:
        allocation, result, lp = solve_packed_policy(
            instance, policy, time_limit=time_limit, warm_start=warm_start
        )
    else:
        try:
            x, result, lp = solve_lp_policy(
                instance, policy, time_limit=time_limit, warm_start=warm_start
            )
        except NotOptimalError as err:
            if not isinstance(err.result, SolveResult):
                raise
            # No allocation to return (e.g. deadlines no allocation meets): carry the status,
            # the solver's message and timings in the family's result type.
            stopped: ExactResult[Allocation] = ExactResult.from_solve(
                err.result,
                None,
                sense=_SENSE[POLICIES[policy][0]],  # type: ignore[arg-type]
                objective_name=POLICIES[policy][0],
            )
            raise NotOptimalError(stopped) from err
        allocation = Allocation(
            job_ids=instance.job_ids,
            gpu_types=instance.gpu_types,
            fractions=x,
            policy=policy,
        )
    objective = POLICIES[policy][0]
    out = ExactResult.from_solve(
        result,
        allocation,
        sense=_SENSE[objective],  # type: ignore[arg-type]
        objective_name=objective,
        extra={"lp_solves": result.extra.get("lp_solves", 0), "lp": lp},
    )
    return out.require(accept_feasible)


# Last: the declaration refers to solve, defined above.
from optsched.allocation.gavel.family import ALGORITHMS, FAMILY  # noqa: E402
