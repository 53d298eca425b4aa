"""The solver layer: the only package in optsched that imports a solver interface.

Formulations build Pyomo models or cvxpy problems, which :func:`solve` hands to a backend, or
sparse matrices (:class:`LinearProgram`), which :func:`solve_matrix` hands to HiGHS or SCIP.
Either returns a :class:`SolveResult` whose status is mapped onto one set of enums. A result that
is not optimal raises :class:`~optsched.errors.NotOptimalError` unless the caller opts in to a
feasible incumbent with ``accept_feasible=True``. :data:`SOLVERS` says which solver each path
(``"pyomo"``, ``"cvxpy"``, ``"matrix"``) can reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optsched._lazy import attach
from optsched.solvers.options import DEFAULT_MIP_GAP, check_options
from optsched.solvers.result import SolutionStatus, SolveResult, Status, TerminationCondition

if TYPE_CHECKING:
    from optsched.solvers.matrix import MATRIX_SOLVERS, LinearProgram, MatrixSolution, solve_matrix
    from optsched.solvers.registry import SOLVERS, SolverInfo, available_solvers

#: The matrix path and the registry load on first use: a result type (``optsched.results``,
#: which every validation report reads) needs only :mod:`optsched.solvers.result`.
__getattr__, __dir__ = attach(
    __name__,
    {
        "MATRIX_SOLVERS": "optsched.solvers.matrix",
        "LinearProgram": "optsched.solvers.matrix",
        "MatrixSolution": "optsched.solvers.matrix",
        "solve_matrix": "optsched.solvers.matrix",
        "SOLVERS": "optsched.solvers.registry",
        "SolverInfo": "optsched.solvers.registry",
        "available_solvers": "optsched.solvers.registry",
    },
)

__all__ = [
    "DEFAULT_MIP_GAP",
    "MATRIX_SOLVERS",
    "SOLVERS",
    "BuildClock",
    "LinearProgram",
    "MatrixSolution",
    "SolutionStatus",
    "SolveResult",
    "SolverInfo",
    "Status",
    "TerminationCondition",
    "available_solvers",
    "solve",
    "solve_matrix",
]


class BuildClock:
    """Counts model building against a time limit, between the stages of a builder.

    A builder calls :meth:`check` after each stage (variables, each constraint family); once
    the limit is spent the build stops with :class:`~optsched.errors.NotOptimalError` whose
    result is ``limit_no_solution`` (termination ``time_limit``), as a solver stopped by its
    limit before finding a point would. Without a limit it never stops anything.

    Examples
    --------
    >>> clock = BuildClock(None)
    >>> clock.check("variables")
    >>> clock.elapsed >= 0
    True
    """

    def __init__(self, time_limit: float | None, solver: str = "highs") -> None:
        import time

        check_options(time_limit, None, None)
        self.time_limit = time_limit
        self.solver = solver
        #: set once a :meth:`rule` found the limit spent (the rows after it were skipped)
        self.spent = False
        self._start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Seconds since the clock started."""
        import time

        return time.perf_counter() - self._start

    def rule(self, fn: Any, stage: str, every: int = 100) -> Any:
        """``fn`` (a Pyomo constraint rule) watching the clock once every ``every`` rows.

        One constraint family of a large model can take longer to build than the whole time
        limit. Once the limit is spent the rule skips its remaining rows
        (``Constraint.Skip``, nothing built) and the builder's next :meth:`check` stops the
        build; raising inside the rule instead would make Pyomo log the failure on stdout.

        Examples
        --------
        >>> clock = BuildClock(None)
        >>> clock.rule(lambda m, i: i + 1, "rows")(None, 1)
        2
        """
        calls = 0

        def checked(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            if self.spent or (calls % every == 0 and self._out_of_time()):
                from pyomo.environ import Constraint

                self.spent = True
                return Constraint.Skip
            return fn(*args)

        return checked

    def _out_of_time(self) -> bool:
        return self.time_limit is not None and self.elapsed >= self.time_limit

    def check(self, stage: str) -> None:
        """Stop the build if the time limit is spent (naming the stage reached)."""
        if not self.spent and not self._out_of_time():
            return
        from optsched.errors import NotOptimalError
        from optsched.solvers.result import stopped_while_building

        raise NotOptimalError(
            stopped_while_building(
                self.solver,
                self.elapsed,
                f"building the model used the {self.time_limit:g} s time limit "
                f"(stopped after: {stage})",
            )
        )


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
    warm_start: bool = False,
) -> SolveResult:
    """Solve a Pyomo model or a cvxpy problem.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel or cvxpy.Problem
        The model. Pyomo models get their solution loaded into their variables; cvxpy problems
        get ``variable.value`` set.
    solver : str, default "highs"
        A name from :func:`available_solvers` (or, for Pyomo, any ``SolverFactory`` name);
        ``"scip"`` reaches SCIP through Pyomo's ``scip_direct`` or cvxpy's ``SCIP``.
    time_limit : float, optional
        Wall-clock limit in seconds.
    mip_gap : float, optional
        Relative MIP gap at which the solver may stop (default :data:`DEFAULT_MIP_GAP`). A solve
        that stops at a gap looser than :data:`~optsched.tolerances.OPTIMALITY_GAP` is reported
        as feasible (termination ``gap_limit``), never as optimal.
    threads : int, optional
        Solver threads.
    accept_feasible : bool, default False
        Accept a feasible incumbent when a limit stops the solver; otherwise such a result
        raises :class:`~optsched.errors.NotOptimalError`.
    build_seconds : float, default 0
        Time spent building the model, recorded in the result.
    options : dict, optional
        Extra solver-specific options passed through.
    warm_start : bool, default False
        Hand the Pyomo variables' current values to the solver as a MIP start (HiGHS and SCIP;
        the values must form a feasible point to help). Ignored by backends without MIP
        starts.

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
    InvalidInstanceError
        An option is not finite or out of range (see :func:`check_options`).

    Examples
    --------
    >>> import pyomo.environ as pyo
    >>> m = pyo.ConcreteModel()
    >>> m.x = pyo.Var(bounds=(0, 4), domain=pyo.Integers)
    >>> m.obj = pyo.Objective(expr=m.x, sense=pyo.maximize)
    >>> solve(m).objective
    4.0
    """
    check_options(time_limit, mip_gap, threads)
    if mip_gap is None:
        mip_gap = DEFAULT_MIP_GAP
    if time_limit is not None and build_seconds > 0:
        # Model building counts against the limit: the solver gets what is left.
        remaining = time_limit - build_seconds
        if remaining <= 0:
            from optsched.errors import NotOptimalError
            from optsched.solvers.result import stopped_while_building

            raise NotOptimalError(
                stopped_while_building(
                    solver,
                    build_seconds,
                    f"building the model took {build_seconds:.3g} s of the "
                    f"{time_limit:g} s time limit",
                )
            )
        time_limit = remaining
    # A command's deadline (optsched.solvers.deadline) leaves this solve only what is left.
    from optsched.solvers.deadline import clip

    if clip(time_limit) is not None and clip(time_limit) != time_limit:
        time_limit = clip(time_limit)
        if time_limit is not None and time_limit <= 0:
            from optsched.errors import NotOptimalError
            from optsched.solvers.result import stopped_while_building

            raise NotOptimalError(
                stopped_while_building(
                    solver, build_seconds, "the command's time limit was spent before the solve"
                )
            )
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

        return solve_pyomo(model, solver, warm_start=warm_start, **kwargs)  # type: ignore[arg-type]
    if module.startswith("cvxpy"):
        from optsched.solvers.cvxpy import solve_cvxpy

        return solve_cvxpy(model, solver, **kwargs)  # type: ignore[arg-type]
    from optsched.errors import ModelError

    raise ModelError(
        f"cannot solve a {type(model).__name__}: expected a Pyomo model or a cvxpy Problem"
    )
