"""Solve Pyomo models: HiGHS through ``pyomo.contrib.solver`` by default, any Pyomo solver by name.

Together with :mod:`optsched.solvers.cvxpy` and :mod:`optsched.solvers.matrix` (matrices straight
into HiGHS or SCIP), this is where optsched calls a solver. Formulation modules build a Pyomo
model and hand it here. HiGHS and SCIP are reached through ``pyomo.contrib.solver`` (SCIP as its
``scip_direct`` interface to ``pyscipopt``), and for both optsched reads the solver's own status
rather than Pyomo's summary of it.
"""

from __future__ import annotations

import time
from typing import Any

from optsched.errors import InvalidInstanceError, NotOptimalError, SolverUnavailableError
from optsched.solvers.highs import HIGHS_MIP_SAFE_OPTIONS, HIGHS_STATUS_MAP, reset_thread_pool
from optsched.solvers.registry import require
from optsched.solvers.result import (
    SolutionStatus,
    SolveResult,
    Status,
    TerminationCondition,
    assemble,
)
from optsched.solvers.scip import SCIP_STATUS_MAP, scip_version

__all__ = ["HIGHS_STATUS_MAP", "PYOMO_TERMINATION_MAP", "SCIP_STATUS_MAP", "solve_pyomo"]

TC = TerminationCondition

#: Every ``pyomo.contrib.solver`` termination condition mapped onto ours (used for solvers other
#: than HiGHS, whose native code we cannot read).
PYOMO_TERMINATION_MAP: dict[str, TerminationCondition] = {
    "convergenceCriteriaSatisfied": TC.OPTIMAL,
    "maxTimeLimit": TC.TIME_LIMIT,
    "iterationLimit": TC.ITERATION_LIMIT,
    "objectiveLimit": TC.OTHER_LIMIT,
    "minStepLength": TC.NUMERICAL_ERROR,
    "unbounded": TC.UNBOUNDED,
    "provenInfeasible": TC.INFEASIBLE,
    "locallyInfeasible": TC.INFEASIBLE,
    "infeasibleOrUnbounded": TC.INFEASIBLE_OR_UNBOUNDED,
    "error": TC.ERROR,
    "interrupted": TC.INTERRUPTED,
    "licensingProblems": TC.ERROR,
    "emptyModel": TC.OPTIMAL,
    "unknown": TC.UNKNOWN,
}

#: Legacy ``pyomo.opt`` termination conditions (solvers reached through ``SolverFactory``).
LEGACY_TERMINATION_MAP: dict[str, TerminationCondition] = {
    "globallyOptimal": TC.OPTIMAL,
    "optimal": TC.OPTIMAL,
    "locallyOptimal": TC.OPTIMAL,
    "maxTimeLimit": TC.TIME_LIMIT,
    "maxIterations": TC.ITERATION_LIMIT,
    "maxEvaluations": TC.ITERATION_LIMIT,
    "minFunctionValue": TC.OTHER_LIMIT,
    "minStepLength": TC.NUMERICAL_ERROR,
    "other": TC.UNKNOWN,
    "unbounded": TC.UNBOUNDED,
    "infeasible": TC.INFEASIBLE,
    "infeasibleOrUnbounded": TC.INFEASIBLE_OR_UNBOUNDED,
    "invalidProblem": TC.ERROR,
    "intermediateNonInteger": TC.OTHER_LIMIT,
    "noSolution": TC.UNKNOWN,
    "solverFailure": TC.ERROR,
    "internalSolverError": TC.ERROR,
    "error": TC.ERROR,
    "userInterrupt": TC.INTERRUPTED,
    "resourceInterrupt": TC.INTERRUPTED,
    "licensingProblems": TC.ERROR,
    "feasible": TC.OTHER_LIMIT,
    "unknown": TC.UNKNOWN,
}

_CONTRIB_NAMES = {"highs": "highs", "scip": "scip_direct"}


def _has_integers(model: Any) -> bool:
    import pyomo.environ as pyo

    return any(
        v.is_integer() or v.is_binary() for v in model.component_data_objects(pyo.Var, active=True)
    )


def _integers_all_valued(model: Any) -> bool:
    """Whether every active integer variable has a value (what a SCIP MIP start needs)."""
    import pyomo.environ as pyo

    return all(
        v.value is not None
        for v in model.component_data_objects(pyo.Var, active=True)
        if v.is_integer() or v.is_binary()
    )


def _complete_scip_start(opt: Any) -> None:
    """Make ``scip_direct``'s MIP start a complete SCIP solution, not a partial one.

    Pyomo hands SCIP only the integer variables' values, as a *partial* solution that SCIP
    completes later by a sub-MIP heuristic, so a limit can stop SCIP before the start is ever
    an incumbent. With every variable's value (continuous ones included, and the auxiliary
    variable ``scip_direct`` models the objective with), the start is checked at once and, if
    feasible, is the first incumbent. Falls back to Pyomo's own start where ``scip_direct``'s
    internals differ from those this relies on.
    """
    import types

    needed = ("_mipstart", "_solver_model", "_pyomo_var_to_solver_var_map", "_obj_var")
    if not all(hasattr(opt, name) for name in needed):
        return
    partial = opt._mipstart

    def complete(self: Any) -> None:
        import pyomo.environ as pyo

        scip, var_map = self._solver_model, self._pyomo_var_to_solver_var_map
        objective = getattr(self, "_objective", None)
        # (Pyomo variables are not hashable: the map is a ComponentMap, read as pairs.)
        values = [(scip_var, pyomo_var.value) for pyomo_var, scip_var in var_map.items()]
        if any(value is None for _, value in values) or self._obj_var is None:
            partial()
            return
        sol = scip.createSol()
        for scip_var, value in values:
            scip.setSolVal(sol, scip_var, float(value))
        if objective is not None:
            scip.setSolVal(sol, self._obj_var, float(pyo.value(objective.expr)))
        scip.addSol(sol, free=True)

    opt._mipstart = types.MethodType(complete, opt)


def _version_str(version: Any) -> str:
    if version is None:
        return ""
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return str(version)


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def _constant_objective(model: Any) -> float:
    import pyomo.environ as pyo

    objs = list(model.component_data_objects(pyo.Objective, active=True))
    return float(pyo.value(objs[0].expr)) if objs else 0.0


def _is_minimize(model: Any) -> bool:
    import pyomo.environ as pyo

    objs = list(model.component_data_objects(pyo.Objective, active=True))
    return not objs or objs[0].sense == pyo.minimize


def solve_pyomo(
    model: Any,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    build_seconds: float = 0.0,
    options: dict[str, Any] | None = None,
    warm_start: bool = False,
) -> SolveResult:
    """Solve a Pyomo model and load its solution into the model's variables.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        The model; it must have exactly one active objective.
    solver : str, default "highs"
        ``"highs"`` (``pyomo.contrib.solver``, the successor of appsi), ``"scip"``, or any name
        Pyomo's legacy ``SolverFactory`` knows (``"appsi_highs"``, ``"cbc"``, ``"glpk"``...).
    time_limit : float, optional
        Wall-clock limit in seconds.
    mip_gap : float, optional
        Relative MIP gap at which the solver may stop and call the point optimal.
    threads : int, optional
        Solver threads.
    accept_feasible : bool, default False
        Return a feasible incumbent found before a limit instead of raising.
    build_seconds : float
        Model-building time to record in the result.
    options : dict, optional
        Extra solver-specific options.
    warm_start : bool, default False
        Pass the variables' current values as a MIP start. For ``"highs"`` this goes through
        Pyomo's appsi HiGHS interface, the one that accepts a start; for ``"scip"`` the integer
        variables' values become a partial SCIP solution (skipped, and said so in
        ``result.message``, when an integer variable has no value).

    Returns
    -------
    SolveResult
        With the solution loaded into ``model`` whenever ``result.has_solution``.

    Raises
    ------
    SolverUnavailableError
        The solver is not installed.
    NotOptimalError
        The solve did not prove optimality and either ``accept_feasible`` is false or there is
        no feasible point to accept.
    """
    require(solver, "pyomo")
    if warm_start and solver in ("highs", "appsi_highs"):
        import pyomo.contrib.appsi.solvers as appsi

        result = _solve_appsi(
            appsi.Highs(),
            model,
            solver,
            time_limit,
            mip_gap,
            threads,
            build_seconds,
            dict(options or {}),
            warm_start=True,
        )
    elif solver in _CONTRIB_NAMES:
        result = _solve_contrib(
            model, solver, time_limit, mip_gap, threads, build_seconds, options, warm_start
        )
    else:
        result = _solve_legacy(model, solver, time_limit, mip_gap, threads, build_seconds, options)
    return check(result, accept_feasible)


def check(result: SolveResult, accept_feasible: bool) -> SolveResult:
    """Apply the never-silently-non-optimal policy: return ``result`` or raise.

    Raises
    ------
    NotOptimalError
        Unless the result is optimal, or feasible with ``accept_feasible``.
    """
    if result.status is Status.OPTIMAL:
        return result
    if accept_feasible and result.status is Status.FEASIBLE:
        return result
    raise NotOptimalError(result)


def _contrib_kwargs(
    model: Any,
    solver: str,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    options: dict[str, Any] | None,
) -> dict[str, Any]:
    """Keyword arguments of a ``pyomo.contrib.solver`` call (limits, gap, threads, options)."""
    kwargs: dict[str, Any] = {
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
    }
    if time_limit is not None:
        kwargs["time_limit"] = float(time_limit)
    if mip_gap is not None:
        kwargs["rel_gap"] = float(mip_gap)
    if threads is not None:
        kwargs["threads"] = int(threads)
    solver_options: dict[str, Any] = {}
    if solver == "highs" and _has_integers(model):
        solver_options.update(HIGHS_MIP_SAFE_OPTIONS)
    solver_options.update(options or {})
    if solver_options:
        kwargs["solver_options"] = solver_options
    return kwargs


def _contrib_status(opt: Any, res: Any, solver: str) -> tuple[TerminationCondition, str, str]:
    """Termination, native status and version, from the solver's own words where possible."""
    termination = PYOMO_TERMINATION_MAP.get(res.termination_condition.name, TC.UNKNOWN)
    version = _version_str(res.solver_version)
    native_model = getattr(opt, "_solver_model", None)
    if solver == "highs" and native_model is not None:
        # Read HiGHS's own status: it distinguishes limits Pyomo folds together.
        code = native_model.getModelStatus().name
        return HIGHS_STATUS_MAP.get(code, TC.UNKNOWN), code, version
    if solver == "scip" and native_model is not None:
        # SCIP's own status: Pyomo reports a node limit as an iteration limit and a memory
        # or solution limit as "unknown"; and Pyomo's version is pyscipopt's, not SCIP's.
        native = str(native_model.getStatus())
        return SCIP_STATUS_MAP.get(native, TC.UNKNOWN), native, scip_version(native_model)
    return termination, res.termination_condition.name, version


def _contrib_solution(res: Any, termination: TerminationCondition) -> SolutionStatus:
    sol_name = res.solution_status.name
    if sol_name == "optimal" and termination is TC.OPTIMAL:
        return SolutionStatus.OPTIMAL
    if sol_name in ("optimal", "feasible"):
        return SolutionStatus.FEASIBLE
    return SolutionStatus.NO_SOLUTION


def _solve_contrib(
    model: Any,
    solver: str,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    build_seconds: float,
    options: dict[str, Any] | None,
    warm_start: bool = False,
) -> SolveResult:
    from pyomo.contrib.solver.common.factory import SolverFactory

    opt = SolverFactory(_CONTRIB_NAMES[solver])
    if not opt.available():
        raise SolverUnavailableError(f"solver {solver!r} is installed but reports unavailable")
    kwargs = _contrib_kwargs(model, solver, time_limit, mip_gap, threads, options)
    message = ""
    if warm_start and solver == "scip":
        if _integers_all_valued(model):
            kwargs["warmstart_discrete_vars"] = True
            _complete_scip_start(opt)
            message = "warm-started"
        else:
            message = "warm start skipped: an integer variable has no value"
    if threads is not None and solver == "highs":
        reset_thread_pool()
    translated = 0.0
    if solver == "highs" and time_limit is not None:
        # Handing a large model to HiGHS takes as long as building it; HiGHS's own clock
        # starts after, so the hand-over is timed here and checked against the limit.
        translated = _translate_highs(opt, model, time_limit, solver, build_seconds)
        kwargs["time_limit"] = time_limit - translated
    start = time.perf_counter() - translated
    try:
        res = opt.solve(model, **kwargs)
    except KeyError as exc:
        if solver == "scip":  # pyscipopt's answer to an unknown parameter name
            raise InvalidInstanceError("options", f"SCIP has no parameter {exc}") from None
        raise
    elapsed = time.perf_counter() - start
    termination, native, version = _contrib_status(opt, res, solver)
    solution = _contrib_solution(res, termination)
    objective = None
    if native == "kModelEmpty" or res.termination_condition.name == "emptyModel":
        # No variables: the objective is a constant and the empty point is optimal.
        solution, objective = SolutionStatus.OPTIMAL, _constant_objective(model)
    elif solution is not SolutionStatus.NO_SOLUTION:
        res.solution_loader.load_vars()
        objective = _finite(res.incumbent_objective)
    bound = _finite(res.objective_bound)
    return assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver=solver,
        solver_version=version,
        native_status=native,
        message=message,
    )


#: Rows handed to HiGHS between two checks of the time limit (a few hundredths of a second).
TRANSLATE_CHUNK = 2000


def _translate_highs(
    opt: Any, model: Any, time_limit: float, solver: str, build_seconds: float
) -> float:
    """Load ``model`` into the persistent HiGHS ``opt``, within ``time_limit``; its seconds.

    ``opt`` is ``pyomo.contrib.solver``'s HiGHS or appsi's (the MIP-start path): both load a
    model through ``set_instance`` and its ``_add_constraints``.

    The rows go in chunks of :data:`TRANSLATE_CHUNK`, the limit checked before each, so a model
    too large to hand over in the time left stops like a solve stopped before its first point
    (:func:`~optsched.solvers.result.stopped_while_building`). The solve that follows finds
    the model loaded and only checks it for changes.

    Raises
    ------
    NotOptimalError
        The limit ran out before every row was loaded, or right after.
    """
    from optsched.solvers.result import stopped_while_building

    start = time.perf_counter()

    def spent(stage: str) -> NotOptimalError:
        return NotOptimalError(
            stopped_while_building(
                solver,
                build_seconds + time.perf_counter() - start,
                f"handing the model to HiGHS used the {time_limit:.3g} s left ({stage})",
            )
        )

    whole = opt._add_constraints

    def chunked(cons: list[Any]) -> None:
        for k in range(0, len(cons), TRANSLATE_CHUNK):
            if time.perf_counter() - start >= time_limit:
                raise spent(f"{k} of {len(cons)} rows loaded")
            whole(cons[k : k + TRANSLATE_CHUNK])

    # an instance attribute shadows the method for this load only (set_instance calls it)
    opt._add_constraints = chunked
    try:
        opt.set_instance(model)
    finally:
        del opt._add_constraints
    used = time.perf_counter() - start
    if used >= time_limit:
        raise spent("every row loaded")
    return used


def _solve_legacy(
    model: Any,
    solver: str,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    build_seconds: float,
    options: dict[str, Any] | None,
) -> SolveResult:
    import pyomo.environ as pyo

    opt = pyo.SolverFactory(solver)
    if opt is None or not opt.available(exception_flag=False):
        raise SolverUnavailableError(
            f"Pyomo solver {solver!r} is not available on this machine; see available_solvers()"
        )
    opts: dict[str, Any] = dict(options or {})
    if solver.startswith("appsi_"):
        # SolverFactory wraps appsi solvers in the legacy results API; use the appsi class.
        import pyomo.contrib.appsi.solvers as appsi

        cls = {"appsi_highs": appsi.Highs, "appsi_cbc": appsi.Cbc, "appsi_gurobi": appsi.Gurobi}
        if solver in cls:
            return _solve_appsi(
                cls[solver](), model, solver, time_limit, mip_gap, threads, build_seconds, opts
            )
    if time_limit is not None:
        opts.setdefault({"glpk": "tmlim", "cbc": "sec"}.get(solver, "timelimit"), time_limit)
    if mip_gap is not None:
        opts.setdefault({"glpk": "mipgap", "cbc": "ratio"}.get(solver, "mipgap"), mip_gap)
    if threads is not None and solver == "cbc":
        opts.setdefault("threads", threads)
    start = time.perf_counter()
    results = opt.solve(model, load_solutions=False, options=opts)
    elapsed = time.perf_counter() - start
    tc_name = str(results.solver.termination_condition).split(".")[-1]
    termination = LEGACY_TERMINATION_MAP.get(tc_name, TC.UNKNOWN)
    solution = SolutionStatus.NO_SOLUTION
    objective = None
    if len(getattr(results, "solution", [])) > 0:
        model.solutions.load_from(results)
        solution = SolutionStatus.OPTIMAL if termination is TC.OPTIMAL else SolutionStatus.FEASIBLE
        objs = list(model.component_data_objects(pyo.Objective, active=True))
        objective = _finite(pyo.value(objs[0])) if objs else None
    bound = None
    problem = getattr(results, "problem", None)
    if problem is not None:
        lower, upper = _finite(problem.lower_bound), _finite(problem.upper_bound)
        bound = lower if _is_minimize(model) else upper
    return assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver=solver,
        solver_version=_version_str(opt.version()) if hasattr(opt, "version") else "",
        native_status=tc_name,
    )


#: ``pyomo.contrib.appsi`` termination conditions.
APPSI_TERMINATION_MAP: dict[str, TerminationCondition] = {
    "unknown": TC.UNKNOWN,
    "maxTimeLimit": TC.TIME_LIMIT,
    "maxIterations": TC.ITERATION_LIMIT,
    "objectiveLimit": TC.OTHER_LIMIT,
    "minStepLength": TC.NUMERICAL_ERROR,
    "optimal": TC.OPTIMAL,
    "unbounded": TC.UNBOUNDED,
    "infeasible": TC.INFEASIBLE,
    "infeasibleOrUnbounded": TC.INFEASIBLE_OR_UNBOUNDED,
    "error": TC.ERROR,
    "interrupted": TC.INTERRUPTED,
    "licensingProblems": TC.ERROR,
}


def _solve_appsi(
    opt: Any,
    model: Any,
    solver: str,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    build_seconds: float,
    opts: dict[str, Any],
    warm_start: bool = False,
) -> SolveResult:
    """The ``appsi_*`` interfaces (by name, or for HiGHS with a MIP start)."""
    opt.config.load_solution = False
    opt.config.warmstart = warm_start
    translated = 0.0  # seconds of the limit spent handing the model to HiGHS
    if time_limit is not None:
        opt.config.time_limit = float(time_limit)
    if mip_gap is not None:
        opt.config.mip_gap = float(mip_gap)
    if solver in ("appsi_highs", "highs"):
        # HiGHS reached through appsi (by name, or for a MIP start): the MIP-safe presolve
        # options, native options and threads apply exactly as on the default path.
        merged = dict(HIGHS_MIP_SAFE_OPTIONS) if _has_integers(model) else {}
        merged.update(opts)
        if threads is not None:
            merged["threads"] = int(threads)
        for key, value in merged.items():
            opt.highs_options[key] = value
        if threads is not None:
            reset_thread_pool()
        if time_limit is not None:
            # As on the default path (:func:`_solve_contrib`): handing a large model to HiGHS
            # takes as long as building it and HiGHS's clock starts after, so the hand-over is
            # timed and checked against the limit; the solve then finds the model loaded.
            translated = _translate_highs(opt, model, time_limit, solver, build_seconds)
            opt.config.time_limit = float(time_limit) - translated
    start = time.perf_counter() - translated
    results = opt.solve(model)
    elapsed = time.perf_counter() - start
    tc_name = results.termination_condition.name
    termination = APPSI_TERMINATION_MAP.get(tc_name, TC.UNKNOWN)
    objective = _finite(results.best_feasible_objective)
    solution = SolutionStatus.NO_SOLUTION
    if objective is not None:
        results.solution_loader.load_vars()
        solution = SolutionStatus.OPTIMAL if termination is TC.OPTIMAL else SolutionStatus.FEASIBLE
    bound = _finite(results.best_objective_bound)
    return assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver=solver,
        solver_version=_version_str(opt.version()),
        native_status=tc_name,
        message="warm-started" if warm_start else "",
    )
