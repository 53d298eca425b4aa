r"""The declarative model of the optimal preemptive schedule: a time-indexed transportation LP.

For a candidate value :math:`\Theta` of :math:`\max_j (C_j + q_j)`, job ``j`` must run
within its window :math:`[r_j, D_j]` with :math:`D_j = \Theta - q_j`. Cut time at every
release and every deadline into slots :math:`s = [\tau_s, \tau_{s+1})` of length
:math:`\ell_s`. A preemptive schedule exists iff the transportation problem

.. math::

    \sum_{s \subseteq [r_j, D_j]} x_{js} = w_j \quad \forall j
    \qquad \text{(tensor-work)}

    \sum_{j} x_{js} \le \ell_s \quad \forall s
    \qquad \text{(slot-capacity)}

    x \ge 0

is feasible (within a slot, any amounts that fit can be sequenced one after the other). Its
constraint matrix is the incidence matrix of a bipartite graph (jobs x slots): every column has
one 1 in a tensor-work row and one 1 in a slot-capacity row, so it is **totally unimodular**.
With integral data (times in whole partitions) every vertex is integral: some optimal schedule
gives every slot unit to one job, i.e. preempts only at partition boundaries.

Search on :math:`\Theta` (exact, no tolerance on the answer): the slot order changes only at
the values :math:`r_i + q_k`. Binary search over those values with the fixed-:math:`\Theta`
feasibility LP finds the bracket that holds the optimum; inside it the slot lengths are affine
in :math:`\Theta`, and one more LP with :math:`\Theta` as a variable minimises it. That is
:math:`O(\log n)` LP solves.

Every LP is built with cvxpy and solved through :func:`optsched.solvers.solve`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.solvers import SolveResult, Status, solve
from optsched.tolerances import INTEGRALITY_TOL

__all__ = ["INTEGRALITY_TOL", "LPResult", "TransportLP", "build_lp", "feasible", "solve_lp"]

# HiGHS runs simplex, which returns a vertex (basic) solution: the integrality claim is about
# vertices.


def _options(solver: str) -> dict[str, object] | None:
    return {"highs_options": {"solver": "simplex"}} if solver == "highs" else None


@dataclass(frozen=True, eq=False)
class TransportLP:
    r"""A built time-indexed LP.

    Attributes
    ----------
    problem : cvxpy.Problem
    x : cvxpy.Variable
        Work per (job, slot) pair in ``pairs``.
    theta : cvxpy.Variable or None
        :math:`\Theta` when it is a variable; ``None`` when fixed.
    pairs : ndarray of shape (m, 2)
        ``(job, slot)`` of each entry of ``x``.
    bounds_const, bounds_coef : ndarray
        Slot boundary ``s`` is ``bounds_const[s] + bounds_coef[s] * theta``.
    build_seconds : float
    """

    problem: object
    x: object
    theta: object | None
    pairs: NDArray[np.int64]
    bounds_const: NDArray[np.float64]
    bounds_coef: NDArray[np.float64]
    build_seconds: float

    @property
    def n_slots(self) -> int:
        """Number of slots."""
        return max(int(self.bounds_const.size) - 1, 0)


def _check(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> tuple[NDArray, ...]:
    r = np.asarray(release, dtype=np.float64).ravel()
    w = np.asarray(work, dtype=np.float64).ravel()
    q = np.asarray(tail, dtype=np.float64).ravel()
    if not (r.shape == w.shape == q.shape) or r.size == 0:
        raise InvalidInstanceError("work", "need one or more jobs with release, work and tail")
    for name, a in (("release", r), ("work", w), ("tail", q)):
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise InvalidInstanceError(name, "must be finite and >= 0")
    return r, w, q


def build_lp(
    release: ArrayLike,
    work: ArrayLike,
    tail: ArrayLike,
    theta: float | tuple[float, float],
) -> TransportLP:
    r"""Build the transportation LP for a fixed :math:`\Theta` or a bracket of it.

    Parameters
    ----------
    release, work, tail : array_like
        Jobs.
    theta : float or (float, float)
        A fixed value (feasibility LP, objective 0), or a bracket ``(lo, hi)`` containing no
        value :math:`r_i + q_k` strictly inside (then :math:`\Theta` is a variable and the LP
        minimises it).

    Returns
    -------
    TransportLP
    """
    import cvxpy as cp
    import scipy.sparse as sp

    start = time.perf_counter()
    r, w, q = _check(release, work, tail)
    n = r.size
    variable = isinstance(theta, tuple)
    lo, hi = (float(theta[0]), float(theta[1])) if isinstance(theta, tuple) else (theta, theta)
    mid = 0.5 * (lo + hi)
    # Boundaries: releases (constant) and deadlines (theta - q_j), as const + coef * theta.
    consts = np.concatenate([r, -q])
    coefs = np.concatenate([np.zeros(n), np.ones(n)])
    if not variable:
        consts, coefs = consts + coefs * float(lo), np.zeros(2 * n)
    at_mid = consts + coefs * mid
    keys = sorted(set(zip(at_mid.tolist(), consts.tolist(), coefs.tolist(), strict=True)))
    index = {(c, k): s for s, (_, c, k) in enumerate(keys)}
    b_const = np.array([c for _, c, _ in keys])
    b_coef = np.array([k for _, _, k in keys])
    first = np.array([index[(consts[j], coefs[j])] for j in range(n)])
    last = np.array([index[(consts[n + j], coefs[n + j])] for j in range(n)])
    jobs, slots = [], []
    for j in range(n):
        for s in range(first[j], last[j]):
            jobs.append(j)
            slots.append(s)
    pairs = np.column_stack([np.array(jobs, dtype=np.int64), np.array(slots, dtype=np.int64)])
    m = len(jobs)
    n_slots = max(len(keys) - 1, 0)
    x = cp.Variable(m, nonneg=True, name="x")
    ones = np.ones(m)
    a_work = sp.csr_matrix((ones, (pairs[:, 0], np.arange(m))), shape=(n, m))
    a_slot = sp.csr_matrix((ones, (pairs[:, 1], np.arange(m))), shape=(n_slots, m))
    length_const = np.diff(b_const)
    length_coef = np.diff(b_coef)
    constraints = []
    if m:
        constraints.append(a_work @ x == w)  # tensor-work
    else:
        # No job has a non-empty window: feasible only if no job needs channel time.
        constraints.append(cp.Constant(float(np.sum(w))) == 0)
    theta_var = None
    if variable:
        theta_var = cp.Variable(name="theta")
        if n_slots and m:
            constraints.append(
                a_slot @ x <= length_const + length_coef * theta_var
            )  # slot-capacity
        constraints += [theta_var >= lo, theta_var <= hi]
        objective = cp.Minimize(theta_var)
    else:
        if n_slots and m:
            constraints.append(a_slot @ x <= length_const)  # slot-capacity
        objective = cp.Minimize(0)
    problem = cp.Problem(objective, constraints)
    return TransportLP(problem, x, theta_var, pairs, b_const, b_coef, time.perf_counter() - start)


def feasible(
    release: ArrayLike,
    work: ArrayLike,
    tail: ArrayLike,
    theta: float,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
) -> tuple[bool, TransportLP, SolveResult]:
    r"""Solve the feasibility LP at a fixed :math:`\Theta`.

    Returns
    -------
    ok : bool
        Whether a preemptive schedule with :math:`\max_j (C_j + q_j) \le \Theta` exists.
    lp : TransportLP
        The model (with ``x.value`` set when feasible).
    result : SolveResult

    Raises
    ------
    NotOptimalError
        The solver stopped without proving feasibility or infeasibility.
    """
    lp = build_lp(release, work, tail, float(theta))
    try:
        result = solve(
            lp.problem,
            solver,
            time_limit=time_limit,
            build_seconds=lp.build_seconds,
            options=_options(solver),
        )
    except NotOptimalError as exc:
        if exc.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
            assert isinstance(exc.result, SolveResult)  # raised by the solver layer
            return False, lp, exc.result
        raise
    return True, lp, result


@dataclass(frozen=True, eq=False)
class LPResult:
    r"""Outcome of the LP search.

    Attributes
    ----------
    value : float
        Optimal :math:`\max_j (C_j + q_j)`.
    lp : TransportLP
        The last LP solved at the optimum (its ``x`` holds an optimal assignment).
    x : ndarray of shape (n_jobs, n_slots)
        Work of each job in each slot.
    slot_bounds : ndarray
        Slot boundaries at the optimum.
    solves : list of SolveResult
        Every LP solved, in order.
    seconds : float
        Wall time of the whole search.
    """

    value: float
    lp: TransportLP
    x: NDArray[np.float64]
    slot_bounds: NDArray[np.float64]
    solves: list[SolveResult] = field(default_factory=list)
    seconds: float = 0.0

    def is_integral(self, tol: float = INTEGRALITY_TOL) -> bool:
        """Whether every ``x`` entry is within ``tol`` of an integer."""
        return bool(np.all(np.abs(self.x - np.round(self.x)) <= tol))


def _matrix(lp: TransportLP, n: int, theta: float) -> tuple[NDArray, NDArray]:
    bounds = lp.bounds_const + lp.bounds_coef * theta
    x = np.zeros((n, lp.n_slots))
    values = np.asarray(getattr(lp.x, "value", None) if lp.pairs.size else np.zeros(0))
    if lp.pairs.size and values is not None:
        x[lp.pairs[:, 0], lp.pairs[:, 1]] = values
    return x, bounds


def solve_lp(
    release: ArrayLike,
    work: ArrayLike,
    tail: ArrayLike,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
) -> LPResult:
    r"""Minimise :math:`\max_j (C_j + q_j)` with the transportation LP and an exact search.

    Parameters
    ----------
    release, work, tail : array_like
        Jobs.
    solver : str, default "highs"
        Any LP solver cvxpy can call through :func:`optsched.solvers.solve`.
    time_limit : float, optional
        Seconds for the whole search (model building included); each LP gets what is left.

    Returns
    -------
    LPResult

    Raises
    ------
    NotOptimalError
        An LP stopped short.

    Notes
    -----
    :math:`O(\log n)` LP solves of :math:`O(n^2)` variables.
    """
    start = time.perf_counter()
    r, w, q = _check(release, work, tail)
    n = r.size
    from optsched.limits import check_size

    # Each job spans at most 2n slots: refuse an LP over the variable budget before building.
    check_size("work", 2.0 * n * n, "max_model_variables", "LP variables")
    solves: list[SolveResult] = []

    def left() -> float | None:
        if time_limit is None:
            return None
        return max(time_limit - (time.perf_counter() - start), 1e-3)

    lo0 = float(np.max(r + w + q))
    hi0 = float(np.max(r) + np.sum(w) + np.max(q))
    cands = np.unique(np.add.outer(r, q).ravel())
    cands = np.unique(np.concatenate([[lo0, hi0], cands[(cands > lo0) & (cands < hi0)]]))

    def check(theta: float) -> tuple[bool, TransportLP]:
        ok, lp, res = feasible(r, w, q, theta, solver=solver, time_limit=left())
        solves.append(res)
        return ok, lp

    # Smallest feasible candidate: cands[-1] = hi0 is always feasible (run jobs in release
    # order without idling: each ends by max r + sum w).
    lo_i, hi_i = -1, len(cands) - 1
    hi_lp: TransportLP | None = None
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        ok, lp = check(float(cands[mid]))
        if ok:
            hi_i, hi_lp = mid, lp
        else:
            lo_i = mid
    if hi_lp is None:
        ok, hi_lp = check(float(cands[hi_i]))
        if not ok:  # pragma: no cover - hi0 is feasible by construction
            raise NotOptimalError(solves[-1])
    if hi_i == 0:
        value, lp = float(cands[0]), hi_lp
    else:
        lp = build_lp(r, w, q, (float(cands[hi_i - 1]), float(cands[hi_i])))
        res = solve(
            lp.problem,
            solver,
            time_limit=left(),
            build_seconds=lp.build_seconds,
            options=_options(solver),
        )
        solves.append(res)
        value = float(lp.theta.value)  # type: ignore[union-attr]
    x, bounds = _matrix(lp, n, value)
    return LPResult(value, lp, x, bounds, solves, time.perf_counter() - start)
