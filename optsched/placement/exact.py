r"""Solve a placement instance exactly for one objective.

:func:`solve` builds the objective's formulation, solves it through
:func:`optsched.solvers.solve`, decodes the placement, and checks it with the independent
validator (:func:`optsched.placement.validate`): the placement must be feasible and the
validator's value of the objective must equal the solver's, or the result is an error
(:class:`~optsched.errors.InconsistentResultError`), never a success. It returns an
:class:`~optsched.results.ExactResult` of a :class:`~optsched.placement.Placement`; when a limit
stops the solver, the incumbent placement is attached (status ``feasible``) and the LP
relaxation of the same model is solved too, its value reported as ``lp_bound``.

================ =============================================== ==============================
objective        meaning                                         built by (module.function)
================ =============================================== ==============================
``servers``      fewest servers used (bin packing)               ``servers.build_servers``
``traffic``      least cross-server traffic                      ``traffic.build_traffic``
``max-load``     least maximum link load (Tiresias's min-max)    ``traffic.build_max_load``
``interference`` Harmony's weighted slowdown                     ``interference.build_interference``
``clwp``         whole jobs onto nodes by predicted interference ``clwp.build_clwp``
``nlwp``         tasks onto GPUs: interference + communication   ``nlwp.build_nlwp``
================ =============================================== ==============================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from optsched.errors import InconsistentResultError, InvalidInstanceError, NotOptimalError
from optsched.limits import check_size
from optsched.placement.formulation import PlacementModel
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.placement.validator import validate
from optsched.results import ExactResult
from optsched.solvers.result import SolveResult, Status
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

__all__ = [
    "DEFAULT_MIP_GAP",
    "OBJECTIVES",
    "build_model",
    "lp_relaxation_bound",
    "solve",
]

#: Relative MIP gap requested by default: tight enough that "optimal" matches brute force on
#: objectives with fractional values (HiGHS's own default, 1e-4, is not).
DEFAULT_MIP_GAP = 1e-9


def _servers(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.servers import build_servers

    return build_servers(instance, **options)


def _traffic(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.traffic import build_traffic

    return build_traffic(instance, **options)


def _max_load(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.traffic import build_max_load

    return build_max_load(instance, **options)


def _interference(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.interference import build_interference

    return build_interference(instance, **options)


def _clwp(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.clwp import build_clwp

    return build_clwp(instance, **options)


def _nlwp(instance: PlacementInstance, **options: Any) -> PlacementModel:
    from optsched.placement.nlwp import build_nlwp

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


def _check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {sorted(OBJECTIVES)}"
        )


def model_size_estimate(instance: PlacementInstance, objective: str) -> int:
    """An upper estimate of the variables of ``objective``'s model, computed without building it.

    Assignment binaries (tasks or jobs times servers), plus for ``traffic``/``max-load`` one or
    two per flow and server, for ``interference``/``clwp`` one per job pair and server, and for
    ``nlwp`` one per task pair and slot pair.
    """
    tasks, jobs = len(instance.tasks), len(instance.jobs)
    servers = len(instance.servers)
    flows = len(instance.flows)
    if objective in ("traffic", "max-load"):
        return tasks * servers + 2 * flows * (servers + len(instance.cluster.racks))
    if objective in ("interference", "clwp"):
        return (tasks + jobs * jobs) * servers
    if objective == "nlwp":
        slots = sum(s.gpus + 1 for s in instance.servers)
        return tasks * slots + min(flows, tasks * tasks) * slots * slots + tasks * tasks * slots
    return tasks * servers


def build_model(instance: PlacementInstance, objective: str, **options: Any) -> PlacementModel:
    """Build the model of ``objective`` (a key of :data:`OBJECTIVES`).

    Raises
    ------
    InvalidInstanceError
        Unknown objective name (field ``objective``), or a model over the
        ``max_model_variables`` budget (:mod:`optsched.limits`), refused before it is built.
    """
    _check_objective(objective)
    check_size("jobs", model_size_estimate(instance, objective), "max_model_variables", "variables")
    return OBJECTIVES[objective](instance, **options)


def lp_relaxation_bound(
    built: PlacementModel, solver: str = "highs", time_limit: float | None = None
) -> float | None:
    """Optimal value of the LP relaxation of a built model (``None`` if it was not solved).

    The model is cloned, its integer variables relaxed to their bounds, and the LP solved.
    """
    import pyomo.environ as pyo

    from optsched.solvers import solve as solve_model

    relaxed = built.model.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    try:
        result = solve_model(relaxed, solver, time_limit=time_limit)
    except NotOptimalError:
        return None
    return result.objective


def _objective_at_integral_point(built: PlacementModel, solver: str) -> float | None:
    """The model's objective with every integer variable fixed to its rounded solved value.

    What remains is an LP over the continuous (linearisation) variables, whose vertices are
    exact for integral data.
    """
    import pyomo.environ as pyo

    from optsched.solvers import solve as solve_model

    fixed = built.model.clone()
    for var in fixed.component_data_objects(pyo.Var, active=True):
        if (var.is_integer() or var.is_binary()) and var.value is not None:
            var.fix(round(var.value))
    try:
        return solve_model(fixed, solver).objective
    except NotOptimalError:
        return None


def solve(
    instance: PlacementInstance,
    objective: str = "servers",
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    lp_bound: bool | None = None,
    solver_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> ExactResult[Placement]:
    """Solve ``instance`` exactly for ``objective``; return the validated placement.

    Parameters
    ----------
    instance : PlacementInstance
    objective : str, default "servers"
        A key of :data:`OBJECTIVES` (every objective is minimised).
    solver : str, default "highs"
        Any MILP solver :func:`optsched.solvers.solve` knows.
    time_limit : float, optional
        Seconds, model building included.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default :data:`DEFAULT_MIP_GAP`). A solve
        stopped at a gap looser than :data:`~optsched.tolerances.OPTIMALITY_GAP` is reported
        as ``feasible`` (termination ``gap_limit``), never as ``optimal``.
    threads : int, optional
        Solver threads.
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising.
    lp_bound : bool, optional
        Compute the LP relaxation bound; by default only when optimality was not proven.
    solver_options : mapping, optional
        Native solver options passed through (e.g. HiGHS's ``{"mip_max_nodes": 0}``).
    **options
        Passed to the objective's builder (e.g. ``symmetry="constraints"``,
        ``formulation="assignment"``). With ``symmetry="none"`` HiGHS's own symmetry detection
        is switched off too.

    Returns
    -------
    ExactResult of Placement
        ``objective`` is the number (the validator's value of the placement),
        ``objective_name`` the objective, ``extra["formulation"]`` the formulation solved.

    Raises
    ------
    NotOptimalError
        Optimality not proven and ``accept_feasible`` false, or no feasible placement found.
        ``error.result`` is the :class:`~optsched.results.ExactResult`, with the incumbent
        placement (when there is one) and ``lp_bound``.
    InconsistentResultError
        The decoded placement fails the independent validator, or its recomputed objective
        differs from the solver's: a formulation defect, never silently ignored.
    InvalidInstanceError
        Unknown objective, an option out of range, or a model over the size budget.
    """
    from optsched.solvers import check_options
    from optsched.solvers import solve as solve_model

    _check_objective(objective)
    check_options(time_limit, mip_gap, threads)
    built = build_model(instance, objective, **options)
    native: dict[str, Any] = {}
    if options.get("symmetry") == "none" and solver == "highs":
        native["mip_detect_symmetry"] = False
    native.update(solver_options or {})
    extra: dict[str, Any] = {"formulation": built.formulation}
    try:
        # Always take the incumbent from the solver layer: a result that stops short keeps it
        # (marked feasible) and the acceptance decision is made once, below.
        result = solve_model(
            built.model,
            solver,
            time_limit=time_limit,
            mip_gap=DEFAULT_MIP_GAP if mip_gap is None else mip_gap,
            threads=threads,
            accept_feasible=True,
            build_seconds=built.build_seconds,
            options=native or None,
        )
    except NotOptimalError as exc:
        assert isinstance(exc.result, SolveResult)  # raised by the solver layer
        bound = None
        if lp_bound is not False and exc.result.status is not Status.INFEASIBLE:
            bound = lp_relaxation_bound(built, solver, time_limit)
        raise NotOptimalError(
            ExactResult.from_solve(
                exc.result,
                None,
                sense="min",
                objective_name=objective,
                lp_bound=bound,
                size=built.size,
                extra=extra,
            )
        ) from None
    placement = built.decode()
    report = validate(instance, placement, objective)
    if not report.ok:
        raise InconsistentResultError(
            f"{objective}/{built.formulation}: the solved placement fails validation: "
            + "; ".join(str(v) for v in report.violations[:3])
        )
    if report.objective is None:
        raise InconsistentResultError(
            f"{objective}: the validator cannot evaluate the solved placement"
        )
    bound = None
    if lp_bound or (lp_bound is None and not result.is_optimal):
        bound = lp_relaxation_bound(built, solver, time_limit)
    # The solver's objective must agree with the validator's recomputation (else
    # InconsistentResultError); the validator's value, exact for integral data, is reported.
    model_value = result.objective
    if model_value is not None and not within(
        model_value, report.objective, OBJECTIVE_AGREEMENT_TOL
    ):
        # A MIP solver's objective is only as exact as its integrality tolerance times the
        # objective's coefficients: with coefficients far above the objective's value, an
        # incumbent whose binaries sit 1e-9 off 0/1 misreports it. Re-evaluate the model at the
        # decoded (exactly integral) point; a real formulation defect still disagrees there.
        model_value = _objective_at_integral_point(built, solver)
        extra["objective_check"] = "model re-evaluated at the integral point"
    exact = ExactResult.from_solve(
        result,
        placement,
        sense="min",
        objective_name=objective,
        objective=model_value,
        recomputed=report.objective,
        lp_bound=bound,
        size=built.size,
        extra=extra,
    )
    return dataclasses.replace(exact, objective=report.objective).require(accept_feasible)
