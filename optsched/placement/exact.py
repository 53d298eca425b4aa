r"""Solve a placement instance exactly for one objective.

:func:`solve_placement` builds the objective's formulation, solves it through
:func:`optsched.solvers.solve`, decodes the placement, and checks it with the independent
validator (:func:`optsched.placement.validate`): the placement must be feasible and the
validator's value of the objective must equal the solver's. When a time limit stops the solver,
the LP relaxation of the same model is solved too and its value reported as ``lp_bound``.

================ =============================================== ==============================
objective        meaning                                         built by (module.function)
================ =============================================== ==============================
``servers``      fewest servers used (bin packing)               ``consolidation.build_servers``
``traffic``      least cross-server traffic                      ``traffic.build_traffic``
``max-load``     least maximum link load (Tiresias's min-max)    ``traffic.build_max_load``
``interference`` Harmony's weighted slowdown                     ``harmony.build_interference``
``clwp``         whole jobs onto nodes by predicted interference ``gpu_assignment.build_clwp``
``nlwp``         tasks onto GPUs: interference + communication   ``gpu_assignment.build_nlwp``
================ =============================================== ==============================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from optsched.errors import ModelError, NotOptimalError
from optsched.placement.formulation import PlacementModel
from optsched.placement.instance import PlacementInstance
from optsched.placement.placement import OBJECTIVE_TOL, Placement, validate
from optsched.solvers.result import SolveResult

__all__ = [
    "DEFAULT_MIP_GAP",
    "OBJECTIVES",
    "PlacementSolution",
    "build_model",
    "lp_relaxation_bound",
    "solve_placement",
]

#: Relative MIP gap requested by default: tight enough that "optimal" matches brute force on
#: objectives with fractional values (HiGHS's own default, 1e-4, is not).
DEFAULT_MIP_GAP = 1e-9


def _servers(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.consolidation import build_servers

    return build_servers(instance, **options)


def _traffic(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.traffic import build_traffic

    return build_traffic(instance, **options)


def _max_load(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.traffic import build_max_load

    return build_max_load(instance, **options)


def _interference(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.harmony import build_interference

    return build_interference(instance, **options)


def _clwp(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.gpu_assignment import build_clwp

    return build_clwp(instance, **options)


def _nlwp(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.gpu_assignment import build_nlwp

    return build_nlwp(instance, **options)


#: Objective name -> model builder ``(instance, **options) -> PlacementModel``.
OBJECTIVES: dict[str, Callable[..., PlacementModel]] = {
    "servers": _servers,
    "traffic": _traffic,
    "max-load": _max_load,
    "interference": _interference,
    "clwp": _clwp,
    "nlwp": _nlwp,
}


@dataclass
class PlacementSolution:
    """An exactly solved (or time-limited) placement.

    Attributes
    ----------
    objective : str
        The objective's name.
    placement : ~optsched.placement.placement.Placement
        The placement found (validated).
    value : float
        Its objective value, as recomputed by the independent validator.
    result : SolveResult
        The solver's report (status, bound, gap, timings).
    formulation : str
        Which formulation was solved.
    lp_bound : float or None
        Value of the LP relaxation, computed when the solve stopped short of optimality (or
        when requested).
    size : dict
        Variables and constraints of the model.
    """

    objective: str
    placement: Placement
    value: float
    result: SolveResult
    formulation: str
    lp_bound: float | None = None
    size: dict[str, int] | None = None

    @property
    def optimal(self) -> bool:
        """Whether optimality was proven."""
        return self.result.is_optimal

    @property
    def bound(self) -> float | None:
        """Best proven lower bound on the optimum."""
        return self.result.bound

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report: ``status``, ``objective`` (the value), ``bound``, ``assignment``..."""
        out = {
            "status": self.result.status.value,
            "objective_name": self.objective,
            "objective": self.value,
            "bound": self.result.bound,
            "gap": self.result.gap,
            "lp_bound": self.lp_bound,
            "formulation": self.formulation,
            "assignment": dict(self.placement.assignment),
            "gpus": dict(self.placement.gpus) if self.placement.gpus is not None else None,
            "solver": self.result.solver,
            "solver_version": self.result.solver_version,
            "termination": self.result.termination.value,
            "build_seconds": self.result.build_seconds,
            "solve_seconds": self.result.solve_seconds,
            "size": dict(self.size or {}),
        }
        return out


def build_model(instance: PlacementInstance, objective: str, **options: Any) -> PlacementModel:
    """Build the model of ``objective`` (a key of :data:`OBJECTIVES`).

    Raises
    ------
    KeyError
        Unknown objective name.
    """
    if objective not in OBJECTIVES:
        raise KeyError(f"unknown objective {objective!r}; known: {sorted(OBJECTIVES)}")
    return OBJECTIVES[objective](instance, **options)


def lp_relaxation_bound(
    built: PlacementModel, solver: str = "highs", time_limit: float | None = None
) -> float | None:
    """Optimal value of the LP relaxation of a built model (``None`` if it was not solved).

    The model is cloned, its integer variables relaxed to their bounds, and the LP solved.
    """
    import pyomo.environ as pyo

    from optsched.solvers import solve

    relaxed = built.model.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    try:
        result = solve(relaxed, solver, time_limit=time_limit)
    except NotOptimalError:
        return None
    return result.objective


def solve_placement(
    instance: PlacementInstance,
    objective: str = "servers",
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = DEFAULT_MIP_GAP,
    threads: int | None = None,
    accept_feasible: bool = False,
    lp_bound: bool | None = None,
    **options: Any,
) -> PlacementSolution:
    """Solve ``instance`` for ``objective`` and return a validated placement.

    Parameters
    ----------
    instance : PlacementInstance
    objective : str
        A key of :data:`OBJECTIVES`.
    solver : str, default "highs"
        Any MILP solver :func:`optsched.solvers.solve` knows.
    time_limit : float, optional
        Seconds.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default :data:`DEFAULT_MIP_GAP`).
    threads : int, optional
        Solver threads.
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver (with ``lp_bound`` set) instead of
        raising.
    lp_bound : bool, optional
        Compute the LP relaxation bound; by default only when optimality was not proven.
    **options
        Passed to the objective's builder (e.g. ``symmetry="constraints"``,
        ``formulation="assignment"``). With ``symmetry="none"`` HiGHS's own symmetry detection
        is switched off too.

    Returns
    -------
    PlacementSolution

    Raises
    ------
    NotOptimalError
        Optimality not proven and ``accept_feasible`` false (or no incumbent). The error's
        ``result.extra["lp_bound"]`` holds the LP relaxation bound.
    ModelError
        The decoded placement fails the independent validator, or its recomputed objective
        differs from the solver's: a formulation bug, never silently ignored.
    """
    from optsched.solvers import solve

    built = build_model(instance, objective, **options)
    native: dict[str, Any] | None = None
    if options.get("symmetry") == "none" and solver == "highs":
        native = {"mip_detect_symmetry": False}
    try:
        result = solve(
            built.model,
            solver,
            time_limit=time_limit,
            mip_gap=mip_gap,
            threads=threads,
            accept_feasible=accept_feasible,
            build_seconds=built.build_seconds,
            options=native,
        )
    except NotOptimalError as exc:
        if lp_bound is not False and exc.result.status.value != "infeasible":
            assert isinstance(exc.result, SolveResult)  # raised by the solver layer
            exc.result.extra["lp_bound"] = lp_relaxation_bound(built, solver, time_limit)
        raise
    placement = built.decode()
    report = validate(instance, placement)
    if not report.valid:
        raise ModelError(
            f"{objective}/{built.formulation}: the solved placement fails validation: "
            + "; ".join(report.violations[:3])
        )
    value = report.objectives[objective]
    if value is None or result.objective is None:
        raise ModelError(f"{objective}: the validator cannot evaluate the solved placement")
    if abs(value - result.objective) > OBJECTIVE_TOL * max(1.0, abs(value)):
        raise ModelError(
            f"{objective}/{built.formulation}: solver objective {result.objective!r} differs "
            f"from the validator's {value!r}"
        )
    bound = None
    if lp_bound or (lp_bound is None and not result.is_optimal):
        bound = lp_relaxation_bound(built, solver, time_limit)
    return PlacementSolution(
        objective=objective,
        placement=placement,
        value=value,
        result=result,
        formulation=built.formulation,
        lp_bound=bound,
        size=built.size,
    )
