r"""A linear program as sparse matrices, and what a matrix backend returns.

The data types of :mod:`optsched.solvers.matrix` (re-exported there): the backends
(:mod:`optsched.solvers.highs`, :mod:`optsched.solvers.scip`) read these, and
:func:`~optsched.solvers.matrix.solve_matrix` dispatches to the backends, so the types live apart
from both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.solvers.result import SolveResult

__all__ = ["TRUSTED_BUILDS", "LinearProgram", "MatrixSolution"]

#: An absent bound.
_INF = math.inf

#: Whether :class:`LinearProgram` takes its ``trusted`` fast path (the checks of a model whose
#: builder guarantees them skipped). ``False`` checks every model, which the tests compare the
#: fast path against.
TRUSTED_BUILDS = True


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
    trusted : bool, default False
        For builders inside optsched that hand over a float ``scipy.sparse.csc_array`` and
        float vectors: they are stored as they are (no conversion), with the same conditions
        checked in one vectorised pass each (the per-vector checks cost as much as building
        the model when an allocation LP is re-solved every round of a long simulation). A
        model that fails them goes through the full checks, which raise the error naming the
        entry; the result is the same model either way.

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
        trusted: bool = False,
    ) -> None:
        import scipy.sparse as sp

        if (
            trusted
            and TRUSTED_BUILDS
            and integrality is None
            and self._trusted(c, a, row_lower, row_upper, col_lower, col_upper, sense, offset)
        ):
            return
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

    def _trusted(
        self,
        c: ArrayLike,
        a: Any,
        row_lower: ArrayLike,
        row_upper: ArrayLike,
        col_lower: ArrayLike,
        col_upper: ArrayLike,
        sense: str,
        offset: float,
    ) -> bool:
        """Store a trusted builder's model after one-pass checks; ``False`` to check it fully.

        Only a float CSC matrix and float vectors of the right shapes, all finite (bounds
        may be infinite, never NaN, lower at most upper), are taken as they are; anything else
        goes through the full checks of the constructor.
        """
        import scipy.sparse as sp

        if not (isinstance(a, sp.csc_array) and a.dtype == np.float64 and sense in ("min", "max")):
            return False
        m, n = a.shape
        cost = np.asarray(c, dtype=np.float64)
        if cost.shape != (n,):
            return False
        vectors = {"c": cost}
        for name, value, size in (
            ("row_lower", row_lower, m),
            ("row_upper", row_upper, m),
            ("col_lower", col_lower, n),
            ("col_upper", col_upper, n),
        ):
            arr = np.asarray(value, dtype=np.float64)
            if arr.ndim == 0:
                arr = np.full(size, float(arr))
            if arr.shape != (size,):
                return False
            vectors[name] = arr
        # One vectorised pass each instead of the per-vector checks: any doubt and the full
        # checks run (and name the offending entry).
        lo = np.concatenate([vectors["row_lower"], vectors["col_lower"]])
        up = np.concatenate([vectors["row_upper"], vectors["col_upper"]])
        if not (
            np.isfinite(a.data).all()
            and np.isfinite(cost).all()
            and (lo <= up).all()  # False at a NaN too
            and math.isfinite(offset)
        ):
            return False
        limits.check_size("a", float(n) + float(m), "max_model_variables", "variables and rows")
        set_ = object.__setattr__
        for name, arr in vectors.items():
            set_(self, name, arr)
        set_(self, "a", a)
        set_(self, "sense", sense)
        set_(self, "integrality", None)
        set_(self, "offset", float(offset))
        return True

    def with_values(self, data: ArrayLike) -> LinearProgram:
        """The same model with the constraint matrix's stored values replaced, its pattern kept.

        ``data`` takes the place of ``a.data`` (the non-zeros in CSC order). A sequence of LPs
        that differ only in some coefficients (the levels of a bisection) is built once and
        then changed in place of being rebuilt: with :data:`TRUSTED_BUILDS` the sparsity
        pattern and every vector are shared with this model and only ``data`` is checked
        (finite); otherwise, or when it is not, the full constructor checks the new model.

        Raises
        ------
        InvalidInstanceError
            ``data`` has another shape than ``a.data``, or holds a NaN or infinite value.
        """
        import copy

        values = np.asarray(data, dtype=np.float64)
        if values.shape != self.a.data.shape:
            raise InvalidInstanceError(
                "data", f"must have shape {self.a.data.shape}, got {values.shape}"
            )
        a = copy.copy(self.a)  # the same pattern (indices and pointers shared, not re-checked)
        a.data = values
        if not (TRUSTED_BUILDS and np.isfinite(values).all()):
            return LinearProgram(
                self.c,
                a,
                self.row_lower,
                self.row_upper,
                self.col_lower,
                self.col_upper,
                sense=self.sense,
                integrality=self.integrality,
                offset=self.offset,
            )
        new = object.__new__(LinearProgram)
        set_ = object.__setattr__
        for name in ("c", "row_lower", "row_upper", "col_lower", "col_upper", "sense"):
            set_(new, name, getattr(self, name))
        set_(new, "integrality", self.integrality)
        set_(new, "offset", self.offset)
        set_(new, "a", a)
        return new

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
        Dual values of the rows and reduced costs of the columns (HiGHS LPs with a dual
        solution; SCIP, whose presolve transforms the LP, returns none).
    basis : object or None
        HiGHS's basis, to warm-start a later similar LP (HiGHS LPs only).
    iterations : int
        LP iterations (simplex for HiGHS, all LP iterations for SCIP): deterministic, unlike
        time, so what tests compare.
    extra : dict
        Backend-specific figures (e.g. ``"nodes"``).
    """

    result: SolveResult
    x: NDArray[np.float64] | None
    row_dual: NDArray[np.float64] | None = None
    col_dual: NDArray[np.float64] | None = None
    basis: Any = None
    iterations: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
