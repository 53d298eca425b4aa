r"""Linear programs as sparse matrices, straight into HiGHS (``highspy``).

Where building a model in Pyomo or cvxpy would dominate the solve (allocation LPs re-solved every
round of a simulation over thousands of jobs), a formulation builds the matrices itself and hands
them here:

.. math::

    \min_x\ (\text{or } \max_x)\quad c^\top x + c_0 \quad\text{s.t.}\quad
    r^{lo} \le A x \le r^{up},\qquad l \le x \le u,\qquad x_j \in \mathbb{Z}\ (j \in I).

This module is the only one in optsched that imports ``highspy``. It maps every HiGHS model
status onto :class:`~optsched.solvers.result.TerminationCondition` (the same total map the Pyomo
backend uses), returns the primal point and, for LPs, the row and column duals and the basis, and
takes a previous solution's basis as a warm start (HiGHS then resumes the simplex from it, which
is what makes a sequence of similar LPs cheap).

Complexity: building is :math:`O(\mathrm{nnz}(A))` array copies; the solve is HiGHS's.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched import limits
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.solvers.result import (
    SolutionStatus,
    SolveResult,
    Status,
    TerminationCondition,
    assemble,
    stopped_while_building,
)

__all__ = [
    "HIGHS_MIP_SAFE_OPTIONS",
    "HIGHS_STATUS_MAP",
    "LinearProgram",
    "MatrixSolution",
    "solve_matrix",
]

TC = TerminationCondition

#: Every native HiGHS model status (``highspy.HighsModelStatus``) mapped onto
#: :class:`TerminationCondition`. A test checks the map is total.
HIGHS_STATUS_MAP: dict[str, TerminationCondition] = {
    "kNotset": TC.UNKNOWN,
    "kLoadError": TC.ERROR,
    "kModelError": TC.ERROR,
    "kPresolveError": TC.ERROR,
    "kSolveError": TC.NUMERICAL_ERROR,
    "kPostsolveError": TC.NUMERICAL_ERROR,
    "kModelEmpty": TC.OPTIMAL,
    "kOptimal": TC.OPTIMAL,
    "kInfeasible": TC.INFEASIBLE,
    "kUnboundedOrInfeasible": TC.INFEASIBLE_OR_UNBOUNDED,
    "kUnbounded": TC.UNBOUNDED,
    "kObjectiveBound": TC.OTHER_LIMIT,
    "kObjectiveTarget": TC.OTHER_LIMIT,
    "kTimeLimit": TC.TIME_LIMIT,
    "kIterationLimit": TC.ITERATION_LIMIT,
    "kUnknown": TC.UNKNOWN,
    "kSolutionLimit": TC.OTHER_LIMIT,
    "kInterrupt": TC.INTERRUPTED,
    "kMemoryLimit": TC.OTHER_LIMIT,
    "kHighsInterrupt": TC.INTERRUPTED,
}

#: HiGHS 1.12-1.15.1 MIP presolve returned a wrong "optimal" on an OASiS model (the regression
#: test in tests/test_oasis_offline.py); switching off presolve rules 12 and 13 (aggregator,
#: parallel rows/columns) avoids it. Applied to every MIP unless the caller overrides it.
HIGHS_MIP_SAFE_OPTIONS: dict[str, Any] = {"presolve_rule_off": (1 << 12) | (1 << 13)}

#: HiGHS's value of "infinity" in bounds.
_INF = math.inf


def _vector(name: str, value: ArrayLike, n: int, *, allow_inf: bool) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise InvalidInstanceError(name, f"must have shape ({n},), got {arr.shape}")
    if np.isnan(arr).any():
        raise InvalidInstanceError(f"{name}[{int(np.flatnonzero(np.isnan(arr))[0])}]", "is NaN")
    if not allow_inf and not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InvalidInstanceError(f"{name}[{bad}]", "must be finite")
    return arr


@dataclass(frozen=True, eq=False)
class LinearProgram:
    r"""An LP or MILP in matrix form.

    Optimise :math:`c^\top x + c_0` over :math:`r^{lo} \le Ax \le r^{up}`,
    :math:`l \le x \le u`, with :math:`x_j` integer where ``integrality`` says so.

    Parameters
    ----------
    c : array_like, shape (n,)
        Objective coefficients (finite).
    a : scipy.sparse matrix or array_like, shape (m, n)
        Constraint matrix (stored column-wise).
    row_lower, row_upper : array_like, shape (m,)
        Row bounds (``-inf``/``inf`` for a free side).
    col_lower, col_upper : array_like, shape (n,), default 0 and inf
        Variable bounds.
    sense : {"min", "max"}
    integrality : array_like of bool, shape (n,), optional
        Which variables are integer.
    offset : float
        Constant :math:`c_0` added to the objective.

    Raises
    ------
    InvalidInstanceError
        Shapes disagree, a coefficient is NaN or infinite, a lower bound exceeds its upper bound,
        or the model is larger than the budget ``max_model_variables``.
    """

    c: NDArray[np.float64]
    a: Any
    row_lower: NDArray[np.float64]
    row_upper: NDArray[np.float64]
    col_lower: NDArray[np.float64]
    col_upper: NDArray[np.float64]
    sense: Literal["min", "max"] = "min"
    integrality: NDArray[np.bool_] | None = None
    offset: float = 0.0

    def __init__(
        self,
        c: ArrayLike,
        a: Any,
        row_lower: ArrayLike,
        row_upper: ArrayLike,
        col_lower: ArrayLike = 0.0,
        col_upper: ArrayLike = _INF,
        *,
        sense: Literal["min", "max"] = "min",
        integrality: ArrayLike | None = None,
        offset: float = 0.0,
    ) -> None:
        import scipy.sparse as sp

        cost = np.asarray(c, dtype=np.float64).ravel()
        n = cost.size
        matrix = sp.csc_array(a, dtype=np.float64)
        m = matrix.shape[0]
        if matrix.shape[1] != n:
            raise InvalidInstanceError("a", f"has {matrix.shape[1]} columns, c has {n} entries")
        limits.check_size("a", float(n) + float(m), "max_model_variables", "variables and rows")
        if not np.isfinite(matrix.data).all():
            raise InvalidInstanceError("a", "holds a NaN or infinite coefficient")
        if sense not in ("min", "max"):
            raise InvalidInstanceError("sense", f"must be 'min' or 'max', got {sense!r}")
        if not math.isfinite(offset):
            raise InvalidInstanceError("offset", "must be finite")
        vectors = {
            "c": _vector("c", cost, n, allow_inf=False),
            "row_lower": _vector("row_lower", row_lower, m, allow_inf=True),
            "row_upper": _vector("row_upper", row_upper, m, allow_inf=True),
            "col_lower": _vector("col_lower", col_lower, n, allow_inf=True),
            "col_upper": _vector("col_upper", col_upper, n, allow_inf=True),
        }
        for side in ("row", "col"):
            lo, up = vectors[f"{side}_lower"], vectors[f"{side}_upper"]
            bad = np.flatnonzero(lo > up)
            if bad.size:
                i = int(bad[0])
                raise InvalidInstanceError(
                    f"{side}_lower[{i}]", f"{lo[i]} exceeds {side}_upper[{i}] = {up[i]}"
                )
        ints = None
        if integrality is not None:
            ints = np.asarray(integrality, dtype=bool).ravel()
            if ints.shape != (n,):
                raise InvalidInstanceError("integrality", f"must have shape ({n},)")
        set_ = object.__setattr__
        for name, value in vectors.items():
            set_(self, name, value)
        set_(self, "a", matrix)
        set_(self, "sense", sense)
        set_(self, "integrality", ints)
        set_(self, "offset", float(offset))

    @property
    def n_variables(self) -> int:
        """Number of columns."""
        return int(self.c.size)

    @property
    def n_rows(self) -> int:
        """Number of constraint rows."""
        return int(self.a.shape[0])

    @property
    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return self.integrality is not None and bool(self.integrality.any())

    def objective_value(self, x: ArrayLike) -> float:
        r"""The objective :math:`c^\top x + c_0` of a point (to check the solver's figure)."""
        return float(self.c @ np.asarray(x, dtype=np.float64)) + self.offset

    def max_violation(self, x: ArrayLike) -> float:
        """Largest violation of a row or column bound by ``x`` (0 when feasible)."""
        xv = np.asarray(x, dtype=np.float64)
        ax = self.a @ xv
        worst = 0.0
        for value, lo, up in (
            (ax, self.row_lower, self.row_upper),
            (xv, self.col_lower, self.col_upper),
        ):
            if value.size:
                worst = max(worst, float(np.max(lo - value, initial=0.0)))
                worst = max(worst, float(np.max(value - up, initial=0.0)))
        return worst


@dataclass(frozen=True, eq=False)
class MatrixSolution:
    """What :func:`solve_matrix` returns.

    Attributes
    ----------
    result : SolveResult
        Status, objective, bound, gap, timings, as for every backend.
    x : ndarray or None
        The primal point (``None`` without one).
    row_dual, col_dual : ndarray or None
        Dual values of the rows and reduced costs of the columns (LPs with a dual solution).
    basis : object or None
        HiGHS's basis, to warm-start a later similar LP.
    iterations : int
        Simplex iterations (deterministic, unlike time: what tests compare).
    """

    result: SolveResult
    x: NDArray[np.float64] | None
    row_dual: NDArray[np.float64] | None = None
    col_dual: NDArray[np.float64] | None = None
    basis: Any = None
    iterations: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


_banner_done = False


def _new_highs() -> Any:
    """A silent ``highspy.Highs``.

    HiGHS prints a banner on standard output (file descriptor 1, below Python's ``sys.stdout``)
    when the first instance of a process is made, before any option can switch logging off; that
    would break the one-JSON-object contract of ``--json``. The first construction therefore
    runs with descriptor 1 pointed at the null device.
    """
    global _banner_done
    import os
    import sys

    import highspy

    if _banner_done:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _banner_done = True
    h.setOptionValue("output_flag", False)
    return h


def _highs_lp(lp: LinearProgram) -> Any:
    import highspy

    model = highspy.HighsLp()
    model.num_col_ = lp.n_variables
    model.num_row_ = lp.n_rows
    model.col_cost_ = lp.c
    model.col_lower_ = lp.col_lower
    model.col_upper_ = lp.col_upper
    model.row_lower_ = lp.row_lower
    model.row_upper_ = lp.row_upper
    model.offset_ = lp.offset
    model.sense_ = highspy.ObjSense.kMaximize if lp.sense == "max" else highspy.ObjSense.kMinimize
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = lp.n_variables
    model.a_matrix_.num_row_ = lp.n_rows
    model.a_matrix_.start_ = lp.a.indptr.astype(np.int32)
    model.a_matrix_.index_ = lp.a.indices.astype(np.int32)
    model.a_matrix_.value_ = lp.a.data
    if lp.is_mip:
        assert lp.integrality is not None
        kinds = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
            for flag in lp.integrality
        ]
        model.integrality_ = kinds
    return model


def solve_matrix(
    lp: LinearProgram,
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
    build_seconds: float = 0.0,
    options: dict[str, Any] | None = None,
    warm_start: MatrixSolution | None = None,
) -> MatrixSolution:
    """Solve a :class:`LinearProgram` with HiGHS.

    Parameters
    ----------
    lp : LinearProgram
    time_limit, mip_gap, threads, accept_feasible, build_seconds, options
        As for :func:`optsched.solvers.solve` (``mip_gap`` defaults to
        :data:`~optsched.solvers.DEFAULT_MIP_GAP`; model building counts against the limit).
    warm_start : MatrixSolution, optional
        A previous solution of an LP with the same shape: its basis (LP) or point (MIP) is
        handed to HiGHS as the starting point.

    Returns
    -------
    MatrixSolution

    Raises
    ------
    NotOptimalError
        Not proven optimal (within :data:`~optsched.tolerances.OPTIMALITY_GAP`) and no feasible
        point accepted; ``error.result`` holds the :class:`SolveResult`.
    SolverUnavailableError
        ``highspy`` is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> lp = LinearProgram([1.0, 1.0], np.array([[1.0, 2.0]]), [4.0], [np.inf], sense="min")
    >>> sol = solve_matrix(lp)
    >>> sol.result.status.value, round(sol.result.objective, 6), sol.x.round(6).tolist()
    ('optimal', 2.0, [0.0, 2.0])
    """
    from optsched.solvers import DEFAULT_MIP_GAP, check_options
    from optsched.solvers.registry import require

    check_options(time_limit, mip_gap, threads)
    require("highs", "pyomo")
    import highspy

    if time_limit is not None:
        time_limit -= build_seconds
        if time_limit <= 0:
            raise NotOptimalError(
                stopped_while_building(
                    "highs", build_seconds, "building the model used the whole time limit"
                )
            )
    h = _new_highs()
    h.setOptionValue("random_seed", 0)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    merged: dict[str, Any] = {}
    if lp.is_mip:
        h.setOptionValue("mip_rel_gap", float(DEFAULT_MIP_GAP if mip_gap is None else mip_gap))
        merged.update(HIGHS_MIP_SAFE_OPTIONS)
    merged.update(options or {})
    for key, value in merged.items():
        h.setOptionValue(key, value)
    start = time.perf_counter()
    h.passModel(_highs_lp(lp))
    if warm_start is not None:
        if lp.is_mip and warm_start.x is not None and warm_start.x.size == lp.n_variables:
            sol = highspy.HighsSolution()
            sol.col_value = list(warm_start.x)
            sol.value_valid = True
            h.setSolution(sol)
        elif warm_start.basis is not None and warm_start.x is not None:
            if warm_start.x.size == lp.n_variables:
                h.setBasis(warm_start.basis)
    h.run()
    elapsed = time.perf_counter() - start

    status = h.getModelStatus()
    native = h.modelStatusToString(status) if hasattr(h, "modelStatusToString") else str(status)
    name = getattr(status, "name", str(status).split(".")[-1])
    termination = HIGHS_STATUS_MAP.get(name, TC.UNKNOWN)
    info = h.getInfo()
    has_point = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
    if termination is TC.OPTIMAL and has_point:
        solution = SolutionStatus.OPTIMAL
    elif has_point and termination not in (TC.INFEASIBLE, TC.UNBOUNDED):
        solution = SolutionStatus.FEASIBLE
    else:
        solution = SolutionStatus.NO_SOLUTION
    objective = float(info.objective_function_value) if has_point else None
    bound: float | None = None
    if lp.is_mip:
        dual_bound = float(info.mip_dual_bound)
        bound = dual_bound if math.isfinite(dual_bound) else None
    result = assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver="highs",
        solver_version=str(h.version()),
        native_status=str(native),
        extra={"nodes": int(info.mip_node_count)} if lp.is_mip else {},
    )
    x = row_dual = col_dual = None
    basis = None
    if result.has_solution:
        sol = h.getSolution()
        x = np.asarray(sol.col_value, dtype=np.float64)
        if not lp.is_mip and sol.dual_valid:
            row_dual = np.asarray(sol.row_dual, dtype=np.float64)
            col_dual = np.asarray(sol.col_dual, dtype=np.float64)
        if not lp.is_mip:
            basis = h.getBasis()
    out = MatrixSolution(
        result=result,
        x=x,
        row_dual=row_dual,
        col_dual=col_dual,
        basis=basis,
        iterations=int(info.simplex_iteration_count),
    )
    if result.status is Status.OPTIMAL or (accept_feasible and result.status is Status.FEASIBLE):
        return out
    raise NotOptimalError(result)
