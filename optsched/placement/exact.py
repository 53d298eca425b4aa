r"""Solve a placement instance exactly for one objective.

:func:`solve` builds the objective's formulation, solves it through the exact-solve path
(:func:`optsched.family.exact.exact_solve`), decodes the placement, and checks it with the
independent validator (:func:`optsched.placement.validate`): the placement must be feasible and the
validator's value of the objective must equal the solver's, or the result is an error
(:class:`~optsched.errors.InconsistentResultError`), never a success. It returns an
:class:`~optsched.results.ExactResult` of a :class:`~optsched.placement.Placement`; when a limit
stops the solver, the incumbent placement is attached (status ``feasible``) and the LP
relaxation of the same model is solved too, its value reported as ``lp_bound``. The incumbent is
the better of the solver's and the objective's greedy seed (:func:`seed`): a budget spent
before the solver starts still returns a validated placement when a greedy pass finds one.

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

import functools
from collections.abc import Callable, Mapping
from typing import Any

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.family.exact import Formulation
from optsched.limits import check_size
from optsched.placement.formulation import PlacementModel
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.placement.validator import validate
from optsched.results import ExactResult
from optsched.solvers import BuildClock
from optsched.solvers.result import SolveResult, Status

__all__ = [
    "DEFAULT_MIP_GAP",
    "OBJECTIVES",
    "SEEDS",
    "build_model",
    "formulation",
    "lp_relaxation_bound",
    "seed",
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


#: The greedy passes that seed each objective's solve (module ``heuristics``), best kept: the
#: rule the objective was published with first, then a generic packing. Each is one pass over
#: the tasks and servers, O(T S) or O(T G) for ``nlwp-greedy`` (G GPU slots).
SEEDS: dict[str, tuple[str, ...]] = {
    "servers": ("best-fit-decreasing", "first-fit"),
    "traffic": ("consolidate-first", "first-fit"),
    "max-load": ("consolidate-first", "first-fit"),
    "interference": ("clwp-greedy", "consolidate-first"),
    "clwp": ("clwp-greedy", "consolidate-first"),
    "nlwp": ("nlwp-greedy",),
}


def seed(instance: PlacementInstance, objective: str) -> tuple[str, Placement] | None:
    """The best placement the objective's greedy passes (:data:`SEEDS`) find, with its name.

    A pass that finds no room, or whose placement the validator refuses or cannot score for
    ``objective`` (e.g. a job split across servers under ``clwp``), is skipped; ``None`` when
    none is left. This is what a solve stopped by its budget keeps when the solver has no
    better incumbent (:mod:`optsched.family.exact`, *Seeding*).
    """
    from optsched.family.exact import best_seed
    from optsched.placement.heuristics import HEURISTICS

    _check_objective(objective)
    return best_seed(
        {name: functools.partial(HEURISTICS[name], instance, 0) for name in SEEDS[objective]},
        lambda placed: validate(instance, placed, objective),
        "min",
    )


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


def solve(
    instance: PlacementInstance,
    objective: str = "servers",
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
    warm_start: None = None,
    accept_feasible: bool = False,
    lp_bound: bool | None = None,
    **options: Any,
) -> ExactResult[Placement]:
    """Solve ``instance`` exactly for ``objective``; return the validated placement.

    Parameters
    ----------
    instance : PlacementInstance
    objective : str, default "servers"
        A key of :data:`OBJECTIVES` (every objective is minimised).
    solver : str, default "highs"
        Any MILP solver :func:`optsched.solvers.solve` knows (e.g. ``"scip"``).
    time_limit : float, optional
        Seconds, model building included.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default :data:`DEFAULT_MIP_GAP`). A solve
        stopped at a gap looser than :data:`~optsched.tolerances.OPTIMALITY_GAP` is reported
        as ``feasible`` (termination ``gap_limit``), never as ``optimal``.
    threads : int, optional
        Solver threads.
    solver_options : mapping, optional
        Native solver options passed through (e.g. HiGHS's ``{"mip_max_nodes": 0}``).
    warm_start : None
        The placement models take no MIP start (accepted for the common vocabulary; anything
        else is refused).
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising.
    lp_bound : bool, optional
        Compute the LP relaxation bound; by default only when optimality was not proven.
    **options
        Passed to the objective's builder (e.g. ``symmetry="constraints"``,
        ``formulation="assignment"``). With ``symmetry="none"`` HiGHS's own symmetry detection
        is switched off too. For ``servers``, ``formulation="auto"`` first tries a bin-packing
        certificate (:mod:`optsched.placement.servers`), unless ``solver_options`` are given
        or ``certificate=False``.

    Returns
    -------
    ExactResult of Placement
        ``objective`` is the solver's value of the placement, checked against the independent
        validator by the exact-solve path (:mod:`optsched.family.exact`); ``objective_name``
        the objective, ``extra["formulation"]`` the formulation solved.

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

    Notes
    -----
    A MIP solver's objective is only as exact as its integrality tolerance times the
    objective's coefficients: with coefficients far above the objective's value, binaries that
    sit 1e-9 off 0/1 shift it. Every incumbent is therefore polished (the assignment fixed at
    its rounded values, the linearisation variables solved again), so the solver's objective
    is that of the decoded placement.
    """
    from optsched.family.exact import exact_solve, native_options

    _check_objective(objective)
    if warm_start is not None:
        raise InvalidInstanceError("warm_start", "the placement models take no warm start")
    native: dict[str, Any] = {}
    if options.get("symmetry") == "none" and solver == "highs":
        native["mip_detect_symmetry"] = False
    native.update(native_options(solver_options))
    if objective == "servers" and solver_options:
        # Native options configure a model's solve: the certificate, which solves none, would
        # silently ignore them, so the model is built instead.
        options.setdefault("certificate", False)
    return exact_solve(
        formulation(
            instance, objective, lp_bound=lp_bound, solver=solver, time_limit=time_limit, **options
        ),
        solver=solver,
        time_limit=time_limit,
        mip_gap=DEFAULT_MIP_GAP if mip_gap is None else mip_gap,
        threads=threads,
        solver_options=native,
        accept_feasible=accept_feasible,
    )


def formulation(
    instance: PlacementInstance,
    objective: str = "servers",
    *,
    lp_bound: bool | None = None,
    solver: str = "highs",
    time_limit: float | None = None,
    **options: Any,
) -> Formulation[Placement]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``.

    ``lp_bound`` as for :func:`solve`; the LP relaxation is solved with ``solver`` within
    ``time_limit``.
    """
    _check_objective(objective)

    def build(clock: BuildClock) -> PlacementModel:
        built = build_model(instance, objective, **options)
        clock.check("model")
        return built

    def bound(built: PlacementModel, result: SolveResult) -> float | None:
        if not result.has_solution and (lp_bound is False or result.status is Status.INFEASIBLE):
            return None
        if not hasattr(built.model, "clone"):
            # A certificate, not a model: its relaxation bound (if any) was computed with it.
            return built.lp_bound if lp_bound else None
        if lp_bound or (lp_bound is None and not result.is_optimal):
            return lp_relaxation_bound(built, solver, time_limit)
        return None

    return Formulation(
        sense="min",
        objective_name=objective,
        build=build,
        extract=lambda built, _point: built.decode(),
        validate=lambda placement: validate(instance, placement, objective),
        lp_bound=bound,
        size=lambda built: built.size,
        extra=lambda built, *_: {"formulation": built.formulation},
        polish=True,
        solvable=lambda built: built.model,
        seed=lambda: seed(instance, objective),
    )
