"""The solver layer: the only package in optsched that imports a solver interface.

Formulations build Pyomo models or cvxpy problems; :func:`solve` hands either to a backend and
returns a :class:`SolveResult` whose status is mapped onto one set of enums. A result that is not
optimal raises :class:`~optsched.errors.NotOptimalError` unless the caller opts in to a feasible
incumbent with ``accept_feasible=True``.
"""

from __future__ import annotations

from typing import Any

from optsched.solvers.registry import SOLVERS, SolverInfo, available_solvers
from optsched.solvers.result import SolutionStatus, SolveResult, Status, TerminationCondition

__all__ = [
    "SOLVERS",
    "SolutionStatus",
    "SolveResult",
    "SolverInfo",
    "Status",
    "TerminationCondition",
    "available_solvers",
    "solve",
]


def solve(
    model: Any,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    build_seconds: float = 0.0,
    options: dict[str, Any] | None = None,
    warmstart: bool = False,
) -> SolveResult:
    """Solve a Pyomo model or a cvxpy problem.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel or cvxpy.Problem
        The model. Pyomo models get their solution loaded into their variables; cvxpy problems
        get ``variable.value`` set.
    solver : str, default "highs"
        A name from :func:`available_solvers` (or, for Pyomo, any ``SolverFactory`` name).
    time_limit : float, optional
        Wall-clock limit in seconds.
    mip_gap : float, optional
        Relative MIP gap tolerance.
    threads : int, optional
        Solver threads.
    accept_feasible : bool, default False
        Accept a feasible incumbent when a limit stops the solver; otherwise such a result
        raises :class:`~optsched.errors.NotOptimalError`.
    build_seconds : float, default 0
        Time spent building the model, recorded in the result.
    options : dict, optional
        Extra solver-specific options passed through.
    warmstart : bool, default False
        Hand the Pyomo variables' current values to the solver as a MIP start (HiGHS; the
        values must form a feasible point to help). Ignored by backends without MIP starts.

    Returns
    -------
    SolveResult

    Raises
    ------
    SolverUnavailableError
        The solver is not installed (the message says how to install it).
    NotOptimalError
        Optimality was not proven and no feasible point was accepted; ``error.result`` holds the
        full :class:`SolveResult`.
    ModelError
        ``model`` is neither a Pyomo model nor a cvxpy problem.

    Examples
    --------
    >>> import pyomo.environ as pyo
    >>> m = pyo.ConcreteModel()
    >>> m.x = pyo.Var(bounds=(0, 4), domain=pyo.Integers)
    >>> m.obj = pyo.Objective(expr=m.x, sense=pyo.maximize)
    >>> solve(m).objective
    4.0
    """
    kwargs = dict(
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        accept_feasible=accept_feasible,
        build_seconds=build_seconds,
        options=options,
    )
    module = type(model).__module__
    if module.startswith("pyomo"):
        from optsched.solvers.pyomo import solve_pyomo

        return solve_pyomo(model, solver, warmstart=warmstart, **kwargs)  # type: ignore[arg-type]
    if module.startswith("cvxpy"):
        from optsched.solvers.cvxpy import solve_cvxpy

        return solve_cvxpy(model, solver, **kwargs)  # type: ignore[arg-type]
    from optsched.errors import ModelError

    raise ModelError(
        f"cannot solve a {type(model).__name__}: expected a Pyomo model or a cvxpy Problem"
    )
