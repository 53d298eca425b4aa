r"""Linear programs as sparse matrices, handed to a solver without a modelling layer.

Where building a model in Pyomo or cvxpy would dominate the solve (allocation LPs re-solved every
round of a simulation over thousands of jobs, MILPs of thousands of binaries built from arrays),
a formulation builds the matrices itself and hands them to :func:`solve_matrix`:

.. math::

    \min_x\ (\text{or } \max_x)\quad c^\top x + c_0 \quad\text{s.t.}\quad
    r^{lo} \le A x \le r^{up},\qquad l \le x \le u,\qquad x_j \in \mathbb{Z}\ (j \in I).

:func:`solve_matrix` checks the generic options once, applies the time limit to what model
building left, dispatches to the backend of the requested solver (:data:`MATRIX_SOLVERS`:
HiGHS in :mod:`optsched.solvers.highs`, SCIP in :mod:`optsched.solvers.scip`) and applies the
never-silently-non-optimal policy to what comes back. Every backend maps its native statuses
onto :class:`~optsched.solvers.result.TerminationCondition` through a total dictionary.

This module imports no solver package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.errors import InvalidInstanceError, NotOptimalError, SolverUnavailableError

# the data types live in their own module, which the backends import (this one imports them)
from optsched.solvers.program import LinearProgram, MatrixSolution
from optsched.solvers.result import Status, stopped_while_building

__all__ = ["MATRIX_SOLVERS", "LinearProgram", "MatrixSolution", "solve_matrix"]

#: A matrix backend: ``(lp, time_limit, mip_gap, threads, build_seconds, options, warm_start)``
#: to a :class:`MatrixSolution` whatever the outcome (the policy is applied by the caller).
Backend = Callable[..., MatrixSolution]


def _highs_backend() -> Backend:
    from optsched.solvers.highs import solve_highs

    return solve_highs


def _scip_backend() -> Backend:
    from optsched.solvers.scip import solve_scip

    return solve_scip


#: Solvers that take a :class:`LinearProgram`, each with the loader of its backend (loaded on
#: first use, so that asking which solvers exist imports no solver package).
MATRIX_SOLVERS: dict[str, Callable[[], Backend]] = {
    "highs": _highs_backend,
    "scip": _scip_backend,
}


def solve_matrix(
    lp: LinearProgram,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    build_seconds: float = 0.0,
    options: dict[str, Any] | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: MatrixSolution | None = None,
) -> MatrixSolution:
    """Solve a :class:`LinearProgram` with a matrix backend.

    Parameters
    ----------
    lp : LinearProgram
    solver : {"highs", "scip"}, default "highs"
        The backend (case-insensitive); see :data:`MATRIX_SOLVERS`.
    time_limit, mip_gap, threads, accept_feasible, build_seconds
        As for :func:`optsched.solvers.solve` (``mip_gap`` defaults to
        :data:`~optsched.solvers.DEFAULT_MIP_GAP`; model building counts against the limit).
    options, solver_options : dict, optional
        Native solver options (HiGHS option names, SCIP parameter names such as
        ``"limits/nodes"``), taking precedence over optsched's defaults. The two names are the
        same argument; give at most one.
    warm_start : MatrixSolution, optional
        A previous solution of a model with the same columns, from either backend. For a MILP
        its point is handed to the solver as a MIP start (both backends); for an LP, HiGHS
        resumes the simplex from its basis (a HiGHS solution's), SCIP ignores it.

    Returns
    -------
    MatrixSolution

    Raises
    ------
    NotOptimalError
        Not proven optimal (within :data:`~optsched.tolerances.OPTIMALITY_GAP`) and no feasible
        point accepted; ``error.result`` holds the :class:`SolveResult`.
    SolverUnavailableError
        ``solver`` has no matrix backend, or its package is not installed (the message names
        the solver and says how to install it).
    InvalidInstanceError
        An option out of range, both ``options`` and ``solver_options`` given, or a native
        option the solver does not know.

    Examples
    --------
    >>> import numpy as np
    >>> lp = LinearProgram([1.0, 1.0], np.array([[1.0, 2.0]]), [4.0], [np.inf], sense="min")
    >>> sol = solve_matrix(lp)
    >>> sol.result.status.value, round(sol.result.objective, 6), sol.x.round(6).tolist()
    ('optimal', 2.0, [0.0, 2.0])
    """
    from optsched.solvers.options import DEFAULT_MIP_GAP, check_options
    from optsched.solvers.registry import require

    if not isinstance(solver, str):
        raise InvalidInstanceError("solver", f"must be a solver name, got {solver!r}")
    name = solver.lower()
    if name not in MATRIX_SOLVERS:
        raise SolverUnavailableError(
            f"solver {solver!r} cannot solve matrix models; use one of {sorted(MATRIX_SOLVERS)}"
        )
    check_options(time_limit, mip_gap, threads)
    if options is not None and solver_options is not None:
        raise InvalidInstanceError("solver_options", "give options or solver_options, not both")
    native = dict(options if options is not None else solver_options or {})
    require(name, "matrix")
    if time_limit is not None:
        # Model building counts against the limit: the solver gets what is left.
        time_limit -= build_seconds
        if time_limit <= 0:
            raise NotOptimalError(
                stopped_while_building(
                    name, build_seconds, "building the model used the whole time limit"
                )
            )
    backend = MATRIX_SOLVERS[name]()
    out = backend(
        lp,
        time_limit=time_limit,
        mip_gap=DEFAULT_MIP_GAP if mip_gap is None else float(mip_gap),
        threads=threads,
        build_seconds=build_seconds,
        options=native,
        warm_start=warm_start,
    )
    status = out.result.status
    if status is Status.OPTIMAL or (accept_feasible and status is Status.FEASIBLE):
        return out
    raise NotOptimalError(out.result)
