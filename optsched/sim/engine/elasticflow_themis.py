r"""ElasticFlow's Themis baseline: finish-time fairness re-solved every slot, gangs by its shares.

Read from ElasticFlow's simulator (``themis_sim_jobs`` and ``utils.get_isolated_throughputs``,
``get_base_constraints``), none of it copied. It is Gavel's statement of Themis's objective, with
ElasticFlow's quirks kept:

**Every slot** (a *lease*: decisions at the first arrival and then every ``slot`` seconds, every
event taken at the first decision at or after it) the jobs that arrived join the end of the
runnable list and the jobs that completed leave it. With :math:`J` runnable jobs, job :math:`j`
of requested gang :math:`g_j`, iterations left :math:`L_j`, rate :math:`T_j` on its gang and
arrival :math:`s_j`, ElasticFlow solves (cvxpy, ECOS)

.. math::

    \min_{x}\ \max_j\ \rho_j(x_j),\qquad
    \rho_j(x) = \frac{A_j + L_j / (T_j x)}{D_j},\qquad
    0 \le x_j \le 1,\quad \sum_j g_j x_j \le N,

with :math:`A_j = e - s_j`, :math:`e` the time of the last decision *that had an event* (an arrival
or a completion: ElasticFlow reads its ``event_time`` variable, which a slot without an event
leaves as it was), and :math:`D_j = C_j + L_j / a_j`, where :math:`a_j = \min(1, \lceil N/J
\rceil / g_j)` is the job's *isolated share* (ElasticFlow's ``get_isolated_throughputs`` returns
this fraction, not a throughput, so the "isolated time" is in iterations per share) and
:math:`C_j` accumulates, slot by slot, the iterations made since the previous slot over the
previous slot's :math:`a_j`.

**Gangs.** Every job's priority is its :math:`x_j` (ElasticFlow's ``rounds_received`` is never
set, so the priority is :math:`10^9 x_j`); the runnable list is sorted by it, highest first (a
stable sort: ties keep the list's order, which carries over from slot to slot), and walked: a job
runs on its requested gang when that fits in the GPUs left (a larger job does not block a smaller
one behind it). Placement is buddy allocation; speed is the rate of the requested gang.

**Overhead**: none. ElasticFlow's loop charges its modelled overhead only to a job without an
``overhead`` entry, and every job gets one (0) when the trace is read.

**Completion**: a job whose iterations run out within a slot completes then (the record's time);
ElasticFlow writes the slot's end as its end time and frees its GPUs at the next slot, as here
(:attr:`ThemisLeases.lease_end` keeps the slot ends for its deadline count).

The round's program
-------------------

Write :math:`\rho_j(x) = \beta_j + \alpha_j / x` (:math:`\alpha_j = L_j/(T_j D_j) > 0`,
:math:`\beta_j = A_j / D_j \ge 0`). :math:`\rho_j(x) \le F` iff :math:`x \ge h_j(F) =
\alpha_j/(F - \beta_j)`, so the least achievable :math:`F` is :math:`F^* = \max(F_1, F_c)` with
:math:`F_1 = \max_j (\beta_j + \alpha_j)` (every :math:`x_j \le 1`) and :math:`F_c` the root of
:math:`S(F) = \sum_j g_j h_j(F) = N` (:math:`S` is convex and decreasing on
:math:`F > \max_j \beta_j`; Newton's method from :math:`F_1` climbs to the root without
overshooting) (:func:`ftf_optimum`). When :math:`F_c > F_1` the optimum is unique, :math:`x_j =
h_j(F^*)`. Otherwise the jobs with :math:`\beta_j + \alpha_j = F^*` are held at :math:`x_j = 1`
and the others may take any :math:`x_j \in [h_j(F^*), 1]` within the capacity: the optimum is a
face, and which point of it a solver returns decides the priorities. ECOS is an interior-point
method; its iterates tend to the *analytic centre* of the optimal face of the conic program cvxpy
gives it, which :func:`ftf_allocation` computes (:func:`_centre`): with :math:`u_j \ge 1/(T_j
x_j)` cvxpy's variable for ``inv_pos`` (the cone :math:`(T_j x_j + u_j, T_j x_j - u_j, 2) \in
\mathcal Q^3`), it maximises

.. math::

    \sum_{j\ \text{free}} \Big[\log x_j + \log(1 - x_j) + \log(U_j - u_j)
        + \log(T_j x_j u_j - 1)\Big] + \log\Big(N - \sum_{j\ \text{held}} g_j
        - \sum_{j\ \text{free}} g_j x_j\Big),
    \qquad U_j = \frac{F^* D_j - A_j}{L_j},

the logarithms of the slacks of the inequalities not tight on the whole face (the cone's barrier
is :math:`\log \det = \log(4(T_j x_j u_j - 1))`), by Newton's method on the :math:`2J` variables
(block-diagonal Hessian plus the capacity's rank one: Sherman-Morrison), with backtracking that
keeps every slack positive. ``face="vertex"`` (the mechanism's ``themis_face``) takes instead
the vertex HiGHS returns for the face as an LP without objective, every free job at
:math:`h_j(F^*)` (:func:`_vertex`); the two points are where an interior-point and a simplex
solver land, and on a face they order the jobs differently.

Complexity: a round is :math:`O(J \log J)` for the sort plus :math:`O(J)` per Newton step of
:math:`F_c` and of the centre (a few dozen steps each).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["FtfOptimum", "ThemisLeases", "ftf_allocation", "ftf_optimum"]

Array = NDArray[np.float64]

#: Relative width under which a job's bound is taken as reached (its ``beta + alpha`` equal to
#: the optimum, or the capacity's slack nil): below the solvers' own tolerances.
_TIE = 1e-12
#: Newton steps at most, for the root and for the centre (each converges in far fewer).
_MAX_STEPS = 200


@dataclass(frozen=True)
class FtfOptimum:
    r"""The optimum of one round's program (module notes).

    Attributes
    ----------
    value : float
        :math:`F^*`, the least achievable worst finish-time fairness.
    lower : numpy.ndarray
        :math:`h_j(F^*)`: the least share at which each job attains it.
    held : numpy.ndarray
        Jobs pinned at share 1 on the optimal face (:math:`\beta_j + \alpha_j = F^*`).
    unique : bool
        The optimum is a single point (the capacity binds: :math:`x = h(F^*)`).
    """

    value: float
    lower: Array
    held: NDArray[np.bool_]
    unique: bool


def ftf_optimum(alpha: Array, beta: Array, gangs: Array, total: float) -> FtfOptimum:
    r"""The least :math:`\max_j \beta_j + \alpha_j/x_j` over the round's polytope (module notes).

    ``alpha > 0`` and ``beta >= 0`` per job, ``gangs`` their GPUs, ``total`` the cluster's.
    Complexity :math:`O(J)` per Newton step.
    """
    f1 = float(np.max(beta + alpha))

    def demand(f: float) -> float:
        return float(np.sum(gangs * alpha / (f - beta)))

    if demand(f1) <= total:
        lower = alpha / (f1 - beta)
        held = beta + alpha >= f1 * (1.0 - _TIE)
        slack = total - float(np.sum(gangs * np.where(held, 1.0, lower)))
        return FtfOptimum(f1, np.minimum(lower, 1.0), held, slack <= _TIE * total)
    f = f1
    for _ in range(_MAX_STEPS):
        d = f - beta
        s = float(np.sum(gangs * alpha / d)) - total
        slope = -float(np.sum(gangs * alpha / (d * d)))
        step = -s / slope
        if not step > _TIE * f:  # convex and decreasing: the steps climb to the root
            f += max(step, 0.0)
            break
        f += step
    lower = np.minimum(alpha / (f - beta), 1.0)
    return FtfOptimum(f, lower, np.zeros(len(alpha), dtype=bool), True)


def ftf_allocation(
    since: Array,
    left: Array,
    rate: Array,
    isolated: Array,
    gangs: Array,
    total: float,
    face: str = "centre",
) -> Array:
    r"""The shares ElasticFlow's Themis solves for (module notes).

    Parameters
    ----------
    since : numpy.ndarray
        :math:`A_j` (seconds since arrival, at the last event).
    left, rate : numpy.ndarray
        :math:`L_j` iterations left (> 0) and :math:`T_j` the rate on the job's gang (> 0).
    isolated : numpy.ndarray
        :math:`D_j > 0`, the denominator of each job's finish-time fairness.
    gangs : numpy.ndarray
        :math:`g_j`.
    total : float
        :math:`N`.
    face : {"centre", "vertex"}
        The point of an optimal face: its analytic centre (where an interior-point solver such
        as ElasticFlow's ECOS tends), or the vertex HiGHS's simplex returns for the face as an
        LP without objective (:func:`_vertex`: every free job at its least share).
    """
    alpha = left / (rate * isolated)
    beta = since / isolated
    opt = ftf_optimum(alpha, beta, gangs, total)
    x = np.where(opt.held, 1.0, opt.lower)
    if opt.unique:
        return x
    if face == "vertex":
        return _vertex(x, gangs, total)
    free = ~opt.held
    room = total - float(np.sum(gangs[opt.held]))
    upper = (opt.value * isolated - since) / left
    x[free] = _centre(opt.lower[free], upper[free], rate[free], gangs[free], room)
    return x


def _vertex(low: Array, gangs: Array, total: float) -> Array:
    r"""The face :math:`\{x : \text{low} \le x \le 1,\ g^\top x \le N\}` solved by HiGHS.

    An LP without objective: HiGHS's simplex stops at the vertex it starts from, every share at
    its lower bound (the tests check it returns ``low``).
    """
    from optsched.solvers.matrix import LinearProgram, solve_matrix

    lp = LinearProgram(
        c=np.zeros(low.size),
        a=gangs.reshape(1, -1),
        row_lower=np.array([-np.inf]),
        row_upper=np.array([total]),
        col_lower=low,
        col_upper=np.ones(low.size),
    )
    x = solve_matrix(lp).x
    assert x is not None  # solve_matrix raises rather than return no point
    return np.asarray(x, dtype=np.float64)


def _centre(low: Array, upper: Array, rate: Array, gangs: Array, room: float) -> Array:
    r"""The analytic centre's shares of the free jobs (module notes), by damped Newton.

    ``low`` their least shares (< 1), ``upper`` their :math:`U_j`, ``room`` the GPUs the held
    jobs leave (more than ``gangs @ low``).
    """
    if low.size == 0:
        return low
    spare = room - float(gangs @ low)
    tau = min(0.5, 0.5 * spare / float(gangs @ (1.0 - low)))
    x = low + tau * (1.0 - low)
    # u halfway between its bounds 1/(T x) and U (T x U > 1 for x above its least share)
    u = 0.5 * (1.0 / (rate * x) + upper)

    def value(x: Array, u: Array) -> float:
        q = rate * x * u - 1.0
        r = room - float(gangs @ x)
        if np.any(x <= 0) or np.any(x >= 1) or np.any(u >= upper) or np.any(q <= 0) or r <= 0:
            return -math.inf
        terms = np.log(x) + np.log1p(-x) + np.log(upper - u) + np.log(q)
        return float(np.sum(terms)) + math.log(r)

    current = value(x, u)
    for _ in range(_MAX_STEPS):
        q = rate * x * u - 1.0
        r = room - float(gangs @ x)
        gx = 1.0 / x - 1.0 / (1.0 - x) + rate * u / q - gangs / r
        gu = -1.0 / (upper - u) + rate * x / q
        a = -1.0 / x**2 - 1.0 / (1.0 - x) ** 2 - (rate * u / q) ** 2
        b = -rate / q**2
        d = -1.0 / (upper - u) ** 2 - (rate * x / q) ** 2
        dx, du = _newton_step(a, b, d, gangs / r, gx, gu)
        decrement = float(gx @ dx + gu @ du)  # the Newton decrement squared (ascent: > 0)
        if not decrement > 1e-24:
            break
        step = 1.0
        while step > 1e-16:
            trial = value(x + step * dx, u + step * du)
            if trial > current:
                break
            step *= 0.5
        else:
            break
        x, u, current = x + step * dx, u + step * du, trial
    return x


def _newton_step(
    a: Array, b: Array, d: Array, v: Array, gx: Array, gu: Array
) -> tuple[Array, Array]:
    """Solve ``(blockdiag([[a, b], [b, d]]) - w w^T) delta = -grad`` (``w`` = ``v`` on the x's)."""
    det = a * d - b * b

    def solve(px: Array, pu: Array) -> tuple[Array, Array]:
        return (d * px - b * pu) / det, (a * pu - b * px) / det

    zx, zu = solve(-gx, -gu)
    yx, yu = solve(v, np.zeros_like(v))
    # Sherman-Morrison: (B - w w^T)^-1 p = B^-1 p + B^-1 w (w^T B^-1 p) / (1 - w^T B^-1 w)
    coef = float(v @ zx) / (1.0 - float(v @ yx))
    return zx + coef * yx, zu + coef * yu


class ThemisLeases:
    """ElasticFlow's Themis across slots (module notes): its runnable list and its history."""

    def __init__(
        self,
        gangs: Sequence[int],
        arrivals: Sequence[float],
        total: int,
        rate: Callable[[int], float],
        face: str = "centre",
    ) -> None:
        self.face = face  # the point of an optimal face (ftf_allocation)
        self.gangs = list(gangs)
        self.arrivals = list(arrivals)
        self.total = total
        self.rate = rate  # job -> its rate on its requested gang
        self.runnable: list[int] = []
        self.event_time = math.nan
        self.history: dict[int, float] = {}  # C_j
        self.prev_left: dict[int, float] = {}
        self.prev_share: dict[int, float] = {}
        self.shares: dict[int, float] = {}  # the last round's x, for inspection
        self.lease_end: dict[int, float] = {}

    def decide(
        self, t: float, done: set[int], new: Sequence[int], left: Sequence[float]
    ) -> dict[int, int]:
        """One slot at time ``t``: drop ``done``, add ``new``, solve, walk; job -> GPUs."""
        for i in done:
            self.lease_end[i] = t
        if done or new:
            self.event_time = t
        self.runnable = [i for i in self.runnable if i not in done] + list(new)
        if not self.runnable:
            return {}
        ids = self.runnable
        n = len(ids)
        gangs = np.array([self.gangs[i] for i in ids], dtype=float)
        share = np.minimum(math.ceil(self.total / n) / gangs, 1.0)
        lefts = np.array([left[i] for i in ids], dtype=float)
        for k, i in enumerate(ids):
            if i in self.prev_left:
                made = self.prev_left[i] - lefts[k]
                self.history[i] = self.history.get(i, 0.0) + made / self.prev_share[i]
            self.prev_left[i] = float(lefts[k])
            self.prev_share[i] = float(share[k])
        history = np.array([self.history.get(i, 0.0) for i in ids])
        since = np.array([self.event_time - self.arrivals[i] for i in ids])
        rates = np.array([self.rate(i) for i in ids])
        # a job that cannot progress on its gang has no finish time to be fair about: share 0
        ok = rates > 0
        x = np.zeros(n)
        if ok.any():
            isolated = history + lefts / share
            x[ok] = ftf_allocation(
                since[ok], lefts[ok], rates[ok], isolated[ok], gangs[ok], self.total, self.face
            )
        self.shares = dict(zip(ids, x.tolist(), strict=True))
        order = sorted(range(n), key=lambda k: -x[k])  # stable: ties keep the list's order
        self.runnable = [ids[k] for k in order]
        free = self.total
        run: dict[int, int] = {}
        for i in self.runnable:
            if free <= 0:
                break
            if self.gangs[i] <= free:
                run[i] = self.gangs[i]
                free -= self.gangs[i]
        return run
