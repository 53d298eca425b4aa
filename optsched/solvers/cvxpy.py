"""Solve cvxpy problems through the same result type and non-optimality policy as Pyomo models."""

from __future__ import annotations

import time
import warnings
from typing import Any

from optsched.errors import SolverUnavailableError
from optsched.solvers.pyomo import check
from optsched.solvers.registry import require
from optsched.solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    assemble,
)

__all__ = ["CVXPY_STATUS_MAP", "solve_cvxpy"]

TC = TerminationCondition

#: Every cvxpy status string mapped onto (termination, solution status). A test checks the map
#: covers ``cvxpy.settings``' statuses.
CVXPY_STATUS_MAP: dict[str, tuple[TerminationCondition, SolutionStatus]] = {
    "optimal": (TC.OPTIMAL, SolutionStatus.OPTIMAL),
    "optimal_inaccurate": (TC.NUMERICAL_ERROR, SolutionStatus.FEASIBLE),
    "infeasible": (TC.INFEASIBLE, SolutionStatus.NO_SOLUTION),
    "infeasible_inaccurate": (TC.INFEASIBLE, SolutionStatus.NO_SOLUTION),
    "unbounded": (TC.UNBOUNDED, SolutionStatus.NO_SOLUTION),
    "unbounded_inaccurate": (TC.UNBOUNDED, SolutionStatus.NO_SOLUTION),
    "infeasible_or_unbounded": (TC.INFEASIBLE_OR_UNBOUNDED, SolutionStatus.NO_SOLUTION),
    "user_limit": (TC.OTHER_LIMIT, SolutionStatus.NO_SOLUTION),
    "solver_error": (TC.ERROR, SolutionStatus.NO_SOLUTION),
}

_NAMES = {"highs": "HIGHS", "scip": "SCIP", "clarabel": "CLARABEL", "scs": "SCS"}
_TIME_OPTION = {"highs": "time_limit", "clarabel": "time_limit", "scs": "time_limit_secs"}


def solve_cvxpy(
    problem: Any,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    build_seconds: float = 0.0,
    options: dict[str, Any] | None = None,
) -> SolveResult:
    """Solve a :class:`cvxpy.Problem`; variable values are set on success.

    Parameters
    ----------
    problem : cvxpy.Problem
    solver : {"highs", "clarabel", "scs", "scip"}, default "highs"
    time_limit, mip_gap, threads, accept_feasible, build_seconds, options
        As in :func:`optsched.solvers.solve`.

    Returns
    -------
    SolveResult

    Raises
    ------
    SolverUnavailableError, NotOptimalError
    """
    import cvxpy as cp

    require(solver, "cvxpy")
    native_name = _NAMES.get(solver, solver.upper())
    if native_name not in cp.installed_solvers():
        raise SolverUnavailableError(f"cvxpy cannot find solver {native_name!r}")
    kwargs: dict[str, Any] = dict(options or {})
    if time_limit is not None and solver in _TIME_OPTION:
        kwargs[_TIME_OPTION[solver]] = float(time_limit)
    if mip_gap is not None and solver == "highs":
        kwargs["mip_rel_gap"] = float(mip_gap)
    if threads is not None and solver == "highs":
        kwargs["threads"] = int(threads)
    # solver output goes to file descriptor 1, under the one JSON object of ``--json``
    kwargs.setdefault("verbose", False)
    version = ""
    if solver == "highs":
        # cvxpy builds its own highspy.Highs, and the first one of a process prints HiGHS's
        # banner on stdout before any option can silence it: make that first one here, silently
        from optsched.solvers.highs import _new_highs

        try:
            h = _new_highs()
            version = f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
        except Exception:  # the version is informative only; cvxpy reports a missing highspy
            version = ""
    start = time.perf_counter()
    message = ""
    try:
        with warnings.catch_warnings():
            # cvxpy warns on inaccurate/limited solutions; the status map reports them instead.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=native_name, **kwargs)
        status = str(problem.status)
    except cp.error.SolverError as exc:
        status = "solver_error"
        message = str(exc)
    elapsed = time.perf_counter() - start
    termination, solution = CVXPY_STATUS_MAP.get(status, (TC.UNKNOWN, SolutionStatus.NO_SOLUTION))
    value = problem.value if solution is not SolutionStatus.NO_SOLUTION else None
    if status == "user_limit":
        if time_limit is not None:
            termination = TC.TIME_LIMIT
        if problem.value is not None and abs(float(problem.value)) != float("inf"):
            solution, value = SolutionStatus.FEASIBLE, problem.value
    objective = float(value) if value is not None else None
    stats = problem.solver_stats
    return check(
        assemble(
            termination,
            solution,
            objective,
            None,
            build_seconds=build_seconds,
            solve_seconds=elapsed,
            solver=solver,
            solver_version=version or f"cvxpy {cp.__version__}",
            native_status=status,
            message=message,
            extra={"solver_time": getattr(stats, "solve_time", None)},
        ),
        accept_feasible,
    )
