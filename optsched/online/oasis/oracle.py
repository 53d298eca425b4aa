r"""The OASiS dual oracle (Alg. 2): the best schedule of one job under given prices.

Given unit prices :math:`p_h^r(t)` and :math:`q_k^r(t)` and the residual capacities, the oracle
solves problem (27) of Bao et al. (INFOCOM 2018) exactly:

.. math::

    \mu_i = \max_{\hat t,\, y,\, z}\; f_i(\hat t + 1 - a_i)
        - \sum_{t} \sum_h \sum_r p_h^r(t)\, w_i^r\, y_{h}(t)
        - \sum_{t} \sum_k \sum_r q_k^r(t)\, s_i^r\, z_{k}(t)

over the deployments of job :math:`i` alone that fit the residual capacities and satisfy
constraints (2), (3), (6), (7) and (9)-(10). Slots are 0-based (DESIGN §2.3): a job whose last
slot with workers is :math:`\hat t` completes at :math:`\hat t + 1`.

Three nested levels (Theorem 1 of the paper proves each exact):

1. **Deadline.** For every :math:`\hat t \ge a_i` the cheapest deployment finishing by
   :math:`\hat t` is found; since :math:`f_i` is non-increasing, the best
   :math:`f_i(\hat t + 1 - a_i) - \text{cost}(\hat t)` over :math:`\hat t` is the optimum, and
   among equal payoffs the earliest :math:`\hat t` is kept (its schedule really ends there).
2. **DP over slots.** With progress counted in units (chunk-epochs or worker-slots, see
   :mod:`optsched.online.oasis.engine`), :math:`\text{cost}(t, d) = \min_{n} C_t(n) +
   \text{cost}(t-1,
   d - q(n))` where :math:`q(n)` is the progress of :math:`n` workers in one slot; one forward
   pass over the slots gives :math:`\text{cost}(\hat t, D_i)` for every deadline.
3. **Greedy per slot.** :math:`C_t(n)` is the cost of :math:`n` workers on the cheapest worker
   servers (unit cost :math:`\sum_r p_h^r(t) w_i^r`, filled cheapest first up to each server's
   room) plus the fewest PSs :math:`m(n)` on the cheapest PS servers. Prices are non-negative,
   so more workers or PSs than needed never help, and cheapest-first is optimal for a count.

:func:`best_schedule` runs a Numba kernel on arrays; :func:`best_schedule_reference` is a
plain-Python transcription of the paper's recursion (chunk-epochs per slot, ceilings and all),
kept as the test oracle for the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.online.oasis.engine import FIT_TOL, WorkUnits, check_work_mode, room_for, work_units
from optsched.online.oasis.instance import OasisInstance, ceil_work

__all__ = [
    "MAX_DP_CELLS",
    "OracleResult",
    "best_schedule",
    "best_schedule_reference",
    "decide_kernel",
    "dp_fits",
    "oracle_kernel",
    "oracle_kernel_full",
    "oracle_kernel_pull",
]

#: Largest DP table (slots x (units + 1)) the kernel allocates; a bigger job is refused with a
#: message (use coarser chunks, or ``work="worker-slots"`` when chunks are tiny).
MAX_DP_CELLS = 60_000_000


@dataclass(frozen=True)
class OracleResult:
    r"""The best schedule of one job under given prices.

    Attributes
    ----------
    payoff : float
        :math:`f_i(\\text{completion} - a_i)` minus the schedule's cost; ``-inf`` when no
        schedule fits (or, with a ``floor``, none beats it).
    utility : float
        Utility of the schedule's completion time.
    cost : float
        Priced resource cost of the schedule.
    completion : int or None
        Completion time (last slot with workers + 1).
    workers, ps : tuple of (slot, server, count)
        The deployment.
    """

    payoff: float
    utility: float
    cost: float
    completion: int | None
    workers: tuple[tuple[int, int, int], ...]
    ps: tuple[tuple[int, int, int], ...]

    @property
    def feasible(self) -> bool:
        """Whether a schedule was found."""
        return self.completion is not None


_NONE = OracleResult(-math.inf, 0.0, 0.0, None, (), ())


# ------------------------------------------------------------------------------------------
# Numba kernel
# ------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _fill(
    unit_cost: np.ndarray, room: np.ndarray, order: np.ndarray, count: int, out: np.ndarray
) -> float:
    """Cheapest-first placement of ``count`` units; writes per-server counts to ``out``."""
    out[:] = 0
    left = count
    total = 0.0
    for idx in range(order.shape[0]):
        if left <= 0:
            break
        s = order[idx]
        take = room[s] if room[s] < left else left
        if take > 0:
            out[s] = take
            total += take * unit_cost[s]
            left -= take
    return total


@numba.njit(cache=True)
def _room(
    capacity: np.ndarray, used: np.ndarray, demand: np.ndarray, cap: int, tol: float
) -> np.ndarray:
    """Units of ``demand`` that fit per (slot, server): ``engine.room_for`` on arrays (S, X, R)."""
    S, X, R = used.shape
    out = np.empty((S, X), dtype=np.int64)
    for t in range(S):
        for s in range(X):
            best = cap
            for r in range(R):
                if demand[r] > 0:
                    ratio = (capacity[s, r] - used[t, s, r]) / demand[r]
                    slack = abs(ratio) if abs(ratio) > 1.0 else 1.0
                    fit = int(np.floor(ratio + tol * slack))
                    if fit < best:
                        best = fit
            out[t, s] = best if best > 0 else 0
    return out


@numba.njit(cache=True)
def _slot_costs(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    mreq: np.ndarray,
    out: np.ndarray,
) -> int:
    """Fill ``out[n]`` = cheapest cost of ``n`` workers plus ``m(n)`` PSs; return the largest n."""
    N = mreq.shape[0] - 1
    order_w = np.argsort(uc_w, kind="mergesort")
    order_p = np.argsort(uc_p, kind="mergesort")
    total_w = 0
    for h in range(room_w.shape[0]):
        total_w += room_w[h]
    total_p = 0
    for k in range(room_p.shape[0]):
        total_p += room_p[k]
    nmax = N if N < total_w else total_w
    while nmax > 0 and mreq[nmax] > total_p:
        nmax -= 1
    if nmax <= 0:
        out[0] = 0.0
        return 0
    mmax = mreq[nmax]
    # Cumulative cheapest-first costs of m PSs, m = 0..mmax.
    pcost = np.empty(mmax + 1)
    pcost[0] = 0.0
    m = 0
    for idx in range(order_p.shape[0]):
        k = order_p[idx]
        for _ in range(room_p[k]):
            if m >= mmax:
                break
            pcost[m + 1] = pcost[m] + uc_p[k]
            m += 1
        if m >= mmax:
            break
    out[0] = 0.0
    n = 0
    acc = 0.0
    for idx in range(order_w.shape[0]):
        h = order_w[idx]
        for _ in range(room_w[h]):
            if n >= nmax:
                break
            acc += uc_w[h]
            n += 1
            out[n] = acc + pcost[mreq[n]]
        if n >= nmax:
            break
    return nmax


@numba.njit(cache=True)
def _next_cheapest(uc: np.ndarray, room: np.ndarray, last_v: float, last_h: int) -> int:
    """The server after ``(last_v, last_h)`` in (unit cost, index) order among those with room.

    ``-1`` when none is left. Successive calls from ``(-inf, -1)`` list the servers with room in
    the order of a stable argsort of ``uc`` (cheapest first, ties by index), without sorting:
    the callers stop after the few servers a slot needs.
    """
    best = -1
    best_v = 0.0
    for h in range(uc.shape[0]):
        if room[h] <= 0:
            continue
        v = uc[h]
        if v < last_v or (v == last_v and h <= last_h):
            continue
        if best < 0 or v < best_v:
            best = h
            best_v = v
    return best


@numba.njit(cache=True)
def _fill_select(unit_cost: np.ndarray, room: np.ndarray, count: int, out: np.ndarray) -> float:
    """:func:`_fill` in the same order, servers picked by :func:`_next_cheapest`."""
    out[:] = 0
    left = count
    total = 0.0
    last_v = -np.inf
    last_h = -1
    while left > 0:
        s = _next_cheapest(unit_cost, room, last_v, last_h)
        if s < 0:
            break
        last_v = unit_cost[s]
        last_h = s
        take = room[s] if room[s] < left else left
        out[s] = take
        total += take * unit_cost[s]
        left -= take
    return total


@numba.njit(cache=True)
def _slot_costs_select(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    mreq: np.ndarray,
    out: np.ndarray,
) -> int:
    r""":func:`_slot_costs` with servers picked by :func:`_next_cheapest` instead of sorted.

    The same servers in the same order, so the same sums term by term: identical results.
    A slot needs few servers (at most :math:`N_i` workers), so picking them costs
    :math:`O(H)` each instead of two :math:`O(H \log H)` sorts per slot.
    """
    N = mreq.shape[0] - 1
    total_w = 0
    for h in range(room_w.shape[0]):
        total_w += room_w[h]
    total_p = 0
    for k in range(room_p.shape[0]):
        total_p += room_p[k]
    nmax = N if N < total_w else total_w
    while nmax > 0 and mreq[nmax] > total_p:
        nmax -= 1
    if nmax <= 0:
        out[0] = 0.0
        return 0
    mmax = mreq[nmax]
    pcost = np.empty(mmax + 1)
    pcost[0] = 0.0
    m = 0
    last_v = -np.inf
    last_h = -1
    while m < mmax:
        k = _next_cheapest(uc_p, room_p, last_v, last_h)
        if k < 0:
            break
        last_v = uc_p[k]
        last_h = k
        for _ in range(room_p[k]):
            if m >= mmax:
                break
            pcost[m + 1] = pcost[m] + uc_p[k]
            m += 1
    out[0] = 0.0
    n = 0
    acc = 0.0
    last_v = -np.inf
    last_h = -1
    while n < nmax:
        h = _next_cheapest(uc_w, room_w, last_v, last_h)
        if h < 0:
            break
        last_v = uc_w[h]
        last_h = h
        for _ in range(room_w[h]):
            if n >= nmax:
                break
            acc += uc_w[h]
            n += 1
            out[n] = acc + pcost[mreq[n]]
    return nmax


#: Relative slack on the cost lower bound of :func:`oracle_kernel`: the bound is computed in
#: floating point from per-slot rates, and the DP's costs are float sums of at most ``S`` terms
#: per path (relative error below ``S * 2**-53``, far under this), so a deadline is skipped only
#: when its payoff is short of the limit by more than rounding could explain.
BOUND_SLACK = 1e-9


@numba.njit(cache=True)
def _unit_rates(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
) -> np.ndarray:
    r"""Suffix minima of a lower bound on each slot's cost per unit of progress.

    In slot :math:`t`, :math:`n` workers cost at least :math:`n a_t + m(n) b_t` with
    :math:`a_t, b_t` the cheapest unit costs of a worker and a PS server with room, and make
    :math:`q(n)` units (fewer once capped at the demand), so every unit made in slot :math:`t`
    costs at least :math:`\rho_t = \min_n (n a_t + m(n) b_t) / q(n)` (``inf`` when the slot
    can make no progress). Returns ``out[t] = min_{t' >= t} rho_{t'}`` with ``out[S] = inf``.
    :math:`O(S (H + K + N))`.
    """
    S = uc_w.shape[0]
    H = uc_w.shape[1]
    K = uc_p.shape[1]
    N = q.shape[0] - 1
    out = np.full(S + 1, np.inf)
    for t in range(S - 1, -1, -1):
        a = np.inf
        for h in range(H):
            if room_w[t, h] > 0 and uc_w[t, h] < a:
                a = uc_w[t, h]
        b = np.inf
        for k in range(K):
            if room_p[t, k] > 0 and uc_p[t, k] < b:
                b = uc_p[t, k]
        rate = np.inf
        if a < np.inf:
            for n in range(1, N + 1):
                if q[n] <= q[n - 1]:
                    continue
                m = mreq[n]
                if m > 0 and b == np.inf:
                    continue
                c = n * a + (m * b if m > 0 else 0.0)
                r = c / q[n]
                if r < rate:
                    rate = r
        out[t] = rate if rate < out[t + 1] else out[t + 1]
    return out


@numba.njit(cache=True)
def oracle_kernel(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    ftab: np.ndarray,
    floor: float,
) -> tuple[float, float, int, np.ndarray, np.ndarray]:
    r"""Alg. 2 on arrays; slots are relative to the job's arrival.

    Parameters
    ----------
    uc_w : float64 (S, H)
        Unit cost of one worker on each worker server in each slot.
    room_w : int64 (S, H)
        Workers that fit on each worker server in each slot.
    uc_p, room_p : (S, K)
        The same for PSs.
    q : int64 (N + 1,)
        Units processed by ``n`` workers in one slot (capped at ``demand``), non-decreasing.
    mreq : int64 (N + 1,)
        Fewest PSs for ``n`` workers, non-decreasing.
    demand : int
        Units the job needs.
    ftab : float64 (S,)
        Utility if the last slot is ``j`` (non-increasing).
    floor : float
        Stop once no later deadline can beat ``max(floor, best so far)``.

    Returns
    -------
    (payoff, cost, last, y, z)
        ``last`` is the relative last slot (-1 when nothing beat ``floor``); ``y`` (S, H) and
        ``z`` (S, K) are the per-slot, per-server counts.

    Notes
    -----
    The DP of :func:`oracle_kernel_full` with a cost bound, and the same results whenever the
    payoff beats ``floor``. Before slot :math:`j`, any deadline :math:`j' \ge j` reached
    through state :math:`d` (units done by slot :math:`j - 1`) costs at least

    .. math::

        L_j(d) = \text{cost}(j - 1, d) + (D - d)\,\bar\rho_j,

    with :math:`\bar\rho_j` the cheapest rate of progress in slots :math:`\ge j`
    (:func:`_unit_rates`): the missing work must be made there. As :math:`f` is
    non-increasing, no schedule through :math:`d` can beat the limit
    :math:`\max(\text{floor}, \text{best})` once :math:`f(j) - L_j(d)` is at most the limit
    (up to :data:`BOUND_SLACK`); such states are dropped, and the scan stops when none is
    left. The full kernel's stop is the special case :math:`\bar\rho = 0`.

    Dropping a state changes nothing that is reported: the best schedule's states all pass
    the test, each of them is its predecessor's first minimiser in the full kernel's order,
    and a dropped state that tied with it would lie on a schedule of the same payoff, which
    the bound excludes. Payoffs at or below ``floor`` are not reported exactly by either
    kernel (they may stop at different slots).

    Effect: job utilities decay over the horizon while every unit costs at least a positive
    price, so the scan now ends near the best deadline instead of running to the horizon;
    on the benchmark instances (T = 300, H = K = 50) it visits about a fifth of the slots.
    The decision table is also cleared row by row as slots are reached instead of being
    allocated zeroed for every slot.
    """
    S = uc_w.shape[0]
    H = uc_w.shape[1]
    K = uc_p.shape[1]
    N = q.shape[0] - 1
    inf = np.inf
    ncand = 0
    cand = np.empty(N, dtype=np.int64)
    for n in range(1, N + 1):
        if q[n] > q[n - 1]:
            cand[ncand] = n
            ncand += 1
    rate = _unit_rates(uc_w, room_w, uc_p, room_p, q, mreq)
    prev = np.full(demand + 1, inf)
    prev[0] = 0.0
    cur = np.empty(demand + 1)
    choice = np.empty((S, demand + 1), dtype=np.int32)
    capfrom = np.full(S, -1, dtype=np.int64)
    C = np.empty(N + 1)
    qc = np.empty(N, dtype=np.int64)
    cc = np.empty(N)
    nc = np.empty(N, dtype=np.int32)
    reach = 0
    best = -inf
    best_cost = inf
    best_j = -1
    for j in range(S):
        limit = floor if floor > best else best
        if ftab[j] <= limit:
            break  # f is non-increasing and costs are >= 0: no later deadline can do better
        # Lower bound on the cost of every deadline >= j through each state; a state whose
        # bound leaves no payoff above the limit is dropped, and the scan stops when none is
        # left.
        r = rate[j]
        alive = False
        for d in range(reach + 1):
            if prev[d] == inf:
                continue
            if d == demand:
                v = prev[d]
            elif r < inf:
                v = prev[d] + (demand - d) * r
            else:
                v = inf
            if ftab[j] - v * (1.0 - BOUND_SLACK) <= limit:
                prev[d] = inf
            else:
                alive = True
        if not alive:
            break
        nmax = _slot_costs_select(uc_w[j], room_w[j], uc_p[j], room_p[j], mreq, C)
        cur[:] = prev
        new_reach = reach + q[nmax] if nmax > 0 else reach
        if new_reach > demand:
            new_reach = demand
        choice[j, : new_reach + 1] = 0
        if nmax > 0:
            kc = 0
            for ci in range(ncand):
                n = cand[ci]
                if n > nmax:
                    break
                qc[kc] = q[n]
                cc[kc] = C[n]
                nc[kc] = n
                kc += 1
            for d in range(reach + 1):
                base = prev[d]
                if base == inf:
                    continue
                for ci in range(kc):
                    nd = d + qc[ci]
                    if nd > demand:
                        nd = demand
                    v = base + cc[ci]
                    if v < cur[nd]:
                        cur[nd] = v
                        choice[j, nd] = nc[ci]
                        if nd == demand:
                            capfrom[j] = d
        reach = new_reach
        if cur[demand] < inf:
            pay = ftab[j] - cur[demand]
            if pay > best:
                best = pay
                best_cost = cur[demand]
                best_j = j
        tmp = prev
        prev = cur
        cur = tmp
    y = np.zeros((S, H), dtype=np.int64)
    z = np.zeros((S, K), dtype=np.int64)
    if best_j < 0:
        return best, best_cost, best_j, y, z
    d = demand
    buf_w = np.zeros(H, dtype=np.int64)
    buf_p = np.zeros(K, dtype=np.int64)
    for j in range(best_j, -1, -1):
        n = choice[j, d]
        if n == 0:
            continue
        if d == demand:
            d = capfrom[j]
        else:
            d = d - q[n]
        _fill_select(uc_w[j], room_w[j], n, buf_w)
        _fill_select(uc_p[j], room_p[j], mreq[n], buf_p)
        y[j, :] = buf_w
        z[j, :] = buf_p
    return best, best_cost, best_j, y, z


@numba.njit(cache=True)
def oracle_kernel_full(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    ftab: np.ndarray,
    floor: float,
) -> tuple[float, float, int, np.ndarray, np.ndarray]:
    """Alg. 2 on arrays, every deadline up to the utility break (the previous kernel).

    Kept as the exact twin of :func:`oracle_kernel`, which adds the cost bound; same
    parameters and results.

    Parameters
    ----------
    uc_w : float64 (S, H)
        Unit cost of one worker on each worker server in each slot.
    room_w : int64 (S, H)
        Workers that fit on each worker server in each slot.
    uc_p, room_p : (S, K)
        The same for PSs.
    q : int64 (N + 1,)
        Units processed by ``n`` workers in one slot (capped at ``demand``), non-decreasing.
    mreq : int64 (N + 1,)
        Fewest PSs for ``n`` workers, non-decreasing.
    demand : int
        Units the job needs.
    ftab : float64 (S,)
        Utility if the last slot is ``j`` (non-increasing).
    floor : float
        Stop once no later deadline can beat ``max(floor, best so far)``.

    Returns
    -------
    (payoff, cost, last, y, z)
        ``last`` is the relative last slot (-1 when nothing beat ``floor``); ``y`` (S, H) and
        ``z`` (S, K) are the per-slot, per-server counts.
    """
    S = uc_w.shape[0]
    H = uc_w.shape[1]
    K = uc_p.shape[1]
    N = q.shape[0] - 1
    inf = np.inf
    ncand = 0
    cand = np.empty(N, dtype=np.int64)
    for n in range(1, N + 1):
        if q[n] > q[n - 1]:
            cand[ncand] = n
            ncand += 1
    prev = np.full(demand + 1, inf)
    prev[0] = 0.0
    cur = np.empty(demand + 1)
    choice = np.zeros((S, demand + 1), dtype=np.int32)
    capfrom = np.full(S, -1, dtype=np.int64)
    C = np.empty(N + 1)
    qc = np.empty(N, dtype=np.int64)
    cc = np.empty(N)
    nc = np.empty(N, dtype=np.int32)
    reach = 0
    best = -inf
    best_cost = inf
    best_j = -1
    for j in range(S):
        limit = floor if floor > best else best
        if ftab[j] <= limit:
            break  # f is non-increasing and costs are >= 0: no later deadline can do better
        nmax = _slot_costs(uc_w[j], room_w[j], uc_p[j], room_p[j], mreq, C)
        cur[:] = prev
        if nmax > 0:
            kc = 0
            for ci in range(ncand):
                n = cand[ci]
                if n > nmax:
                    break
                qc[kc] = q[n]
                cc[kc] = C[n]
                nc[kc] = n
                kc += 1
            for d in range(reach + 1):
                base = prev[d]
                if base == inf:
                    continue
                for ci in range(kc):
                    nd = d + qc[ci]
                    if nd > demand:
                        nd = demand
                    v = base + cc[ci]
                    if v < cur[nd]:
                        cur[nd] = v
                        choice[j, nd] = nc[ci]
                        if nd == demand:
                            capfrom[j] = d
            reach = reach + q[nmax]
            if reach > demand:
                reach = demand
        if cur[demand] < inf:
            pay = ftab[j] - cur[demand]
            if pay > best:
                best = pay
                best_cost = cur[demand]
                best_j = j
        tmp = prev
        prev = cur
        cur = tmp
    y = np.zeros((S, H), dtype=np.int64)
    z = np.zeros((S, K), dtype=np.int64)
    if best_j < 0:
        return best, best_cost, best_j, y, z
    d = demand
    buf_w = np.zeros(H, dtype=np.int64)
    buf_p = np.zeros(K, dtype=np.int64)
    for j in range(best_j, -1, -1):
        n = choice[j, d]
        if n == 0:
            continue
        if d == demand:
            d = capfrom[j]
        else:
            d = d - q[n]
        order_w = np.argsort(uc_w[j], kind="mergesort")
        order_p = np.argsort(uc_p[j], kind="mergesort")
        _fill(uc_w[j], room_w[j], order_w, n, buf_w)
        _fill(uc_p[j], room_p[j], order_p, mreq[n], buf_p)
        y[j, :] = buf_w
        z[j, :] = buf_p
    return best, best_cost, best_j, y, z


# ------------------------------------------------------------------------------------------
# One online decision in one kernel call
# ------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _rates_from_cheapest(
    a: np.ndarray, b: np.ndarray, q: np.ndarray, mreq: np.ndarray
) -> np.ndarray:
    r""":func:`_unit_rates` from the cheapest unit costs with room, :math:`a_t` and :math:`b_t`.

    :math:`\rho_t` is a function of :math:`(a_t, b_t)` alone (the job's :math:`q` and
    :math:`m` fixed), so a slot with the same pair as the slot after it reuses that slot's
    value: the same floats, without the :math:`O(N)` loop of divisions over the long idle
    stretches of the horizon.
    """
    S = a.shape[0]
    N = q.shape[0] - 1
    out = np.full(S + 1, np.inf)
    last_a = np.nan
    last_b = np.nan
    last_rate = np.inf
    for t in range(S - 1, -1, -1):
        at = a[t]
        bt = b[t]
        if at == last_a and bt == last_b:
            rate = last_rate
        else:
            rate = np.inf
            if at < np.inf:
                for n in range(1, N + 1):
                    if q[n] <= q[n - 1]:
                        continue
                    m = mreq[n]
                    if m > 0 and bt == np.inf:
                        continue
                    c = n * at + (m * bt if m > 0 else 0.0)
                    r = c / q[n]
                    if r < rate:
                        rate = r
            last_a = at
            last_b = bt
            last_rate = rate
        out[t] = rate if rate < out[t + 1] else out[t + 1]
    return out


@numba.njit(cache=True)
def _unit_rates_memo(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
) -> np.ndarray:
    """:func:`_unit_rates` by :func:`_rates_from_cheapest`: the same floats."""
    S = uc_w.shape[0]
    a = np.full(S, np.inf)
    b = np.full(S, np.inf)
    for t in range(S):
        for h in range(uc_w.shape[1]):
            if room_w[t, h] > 0 and uc_w[t, h] < a[t]:
                a[t] = uc_w[t, h]
        for k in range(uc_p.shape[1]):
            if room_p[t, k] > 0 and uc_p[t, k] < b[t]:
                b[t] = uc_p[t, k]
    return _rates_from_cheapest(a, b, q, mreq)


@numba.njit(cache=True)
def _relax(src: np.ndarray, dst: np.ndarray, arg: np.ndarray, step: float, n: int) -> None:
    """``dst[k] = src[k] + step`` (and ``arg[k] = n``) wherever that is strictly smaller.

    One count of :func:`oracle_kernel_pull`'s relaxation on aligned slices: each ``k`` on its
    own, so the loop vectorises.
    """
    for k in range(src.shape[0]):
        v = src[k] + step
        if v < dst[k]:
            dst[k] = v
            arg[k] = n


@numba.njit(cache=True)
def _same_row(
    uc: np.ndarray, uc_before: np.ndarray, room: np.ndarray, room_before: np.ndarray
) -> bool:
    """Whether a slot's unit costs and rooms equal the previous slot's, entry by entry."""
    for s in range(uc.shape[0]):
        if uc[s] != uc_before[s] or room[s] != room_before[s]:
            return False
    return True


@numba.njit(cache=True)
def _scan_pull(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    ftab: np.ndarray,
    floor: float,
    rate: np.ndarray,
    lazy: bool,
    rooms: tuple,
) -> tuple[float, float, int, np.ndarray, np.ndarray]:
    """The deadline scan of :func:`oracle_kernel_pull`: ``(best, cost, last, choice, capfrom)``.

    ``rate`` is :func:`_unit_rates`'s. ``choice[j, d]`` is the worker count that reached
    state ``d`` in slot ``j`` (0: none), ``capfrom[j]`` the state the capped cell ``demand``
    came from. With ``lazy``, row ``j`` of ``room_w`` and ``room_p`` is only written (by
    :func:`_room_row`, from ``rooms``, the arguments of :func:`decide_kernel`'s room) when the
    scan reaches slot ``j``: the rows the backtracking reads are all written by then.
    """
    S = uc_w.shape[0]
    N = q.shape[0] - 1
    inf = np.inf
    ncand = 0
    cand = np.empty(N, dtype=np.int64)
    for n in range(1, N + 1):
        if q[n] > q[n - 1]:
            cand[ncand] = n
            ncand += 1
    prev = np.full(demand + 1, inf)
    prev[0] = 0.0
    # Entries above the reach stay inf in both buffers: only [0, reach] is ever written.
    cur = np.full(demand + 1, inf)
    choice = np.empty((S, demand + 1), dtype=np.int32)
    capfrom = np.full(S, -1, dtype=np.int64)
    C = np.empty(N + 1)
    qc = np.empty(N, dtype=np.int64)
    cc = np.empty(N)
    nc = np.empty(N, dtype=np.int32)
    reach = 0
    best = -inf
    best_cost = inf
    best_j = -1
    for j in range(S):
        limit = floor if floor > best else best
        if ftab[j] <= limit:
            break  # f is non-increasing and costs are >= 0: no later deadline can do better
        r = rate[j]
        lo = -1
        for d in range(reach + 1):
            if prev[d] == inf:
                continue
            if d == demand:
                v = prev[d]
            elif r < inf:
                v = prev[d] + (demand - d) * r
            else:
                v = inf
            if ftab[j] - v * (1.0 - BOUND_SLACK) <= limit:
                prev[d] = inf
            elif lo < 0:
                lo = d
        if lo < 0:
            break
        if lazy:
            wcap, wused, wtouch, wd, idle_w, pcap, pused, ptouch, sd, idle_p, start, cap, tol = (
                rooms
            )
            _room_row(wcap, wused, wtouch, start + j, wd, cap, tol, idle_w, room_w[j])
            _room_row(pcap, pused, ptouch, start + j, sd, cap, tol, idle_p, room_p[j])
        # A slot priced and filled like the one before has the same C and nmax: reuse them
        # (long idle stretches of the horizon).
        if j == 0 or not (
            _same_row(uc_w[j], uc_w[j - 1], room_w[j], room_w[j - 1])
            and _same_row(uc_p[j], uc_p[j - 1], room_p[j], room_p[j - 1])
        ):
            nmax = _slot_costs_select(uc_w[j], room_w[j], uc_p[j], room_p[j], mreq, C)
        new_reach = reach + q[nmax] if nmax > 0 else reach
        if new_reach > demand:
            new_reach = demand
        ch = choice[j]
        for d in range(new_reach + 1):
            cur[d] = prev[d]
            ch[d] = 0
        kc = 0
        if nmax > 0:
            for ci in range(ncand):
                n = cand[ci]
                if n > nmax:
                    break
                qc[kc] = q[n]
                cc[kc] = C[n]
                nc[kc] = n
                kc += 1
        if kc > 0:
            # Cells below demand, counts descending (= source states ascending).
            for ci in range(kc - 1, -1, -1):
                qv = qc[ci]
                cv = cc[ci]
                nv = nc[ci]
                top = demand - 1 - qv
                if top > reach:
                    top = reach
                if top >= lo:
                    _relax(prev[lo : top + 1], cur[lo + qv : top + qv + 1], ch[lo + qv :], cv, nv)
            # The capped cell: states ascending, counts ascending, as in oracle_kernel.
            first = demand - qc[kc - 1]
            if first < lo:
                first = lo
            c0 = kc - 1  # the smallest count reaching demand from d (it falls as d grows)
            for d in range(first, reach + 1):
                while c0 > 0 and d + qc[c0 - 1] >= demand:
                    c0 -= 1
                base = prev[d]
                if base == inf:
                    continue
                for ci in range(c0, kc):
                    v = base + cc[ci]
                    if v < cur[demand]:
                        cur[demand] = v
                        ch[demand] = nc[ci]
                        capfrom[j] = d
        reach = new_reach
        if cur[demand] < inf:
            pay = ftab[j] - cur[demand]
            if pay > best:
                best = pay
                best_cost = cur[demand]
                best_j = j
        tmp = prev
        prev = cur
        cur = tmp
    return best, best_cost, best_j, choice, capfrom


@numba.njit(cache=True)
def _backtrack(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    choice: np.ndarray,
    capfrom: np.ndarray,
    last: int,
    y: np.ndarray,
    z: np.ndarray,
) -> None:
    """Write the schedule ending in slot ``last`` into ``y`` and ``z`` (rows up to ``last``).

    :func:`oracle_kernel`'s backtracking: the counts from ``choice``, placed cheapest first.
    """
    H = y.shape[1]
    K = z.shape[1]
    d = demand
    buf_w = np.zeros(H, dtype=np.int64)
    buf_p = np.zeros(K, dtype=np.int64)
    for j in range(last, -1, -1):
        n = choice[j, d]
        if n == 0:
            continue
        if d == demand:
            d = capfrom[j]
        else:
            d = d - q[n]
        _fill_select(uc_w[j], room_w[j], n, buf_w)
        _fill_select(uc_p[j], room_p[j], mreq[n], buf_p)
        y[j, :] = buf_w
        z[j, :] = buf_p


@numba.njit(cache=True)
def _no_rooms() -> tuple:
    """The ``rooms`` argument of :func:`_scan_pull` when the rooms are given (never read)."""
    none2 = np.empty((0, 0))
    none3 = np.empty((0, 0, 0))
    flags = np.empty((0, 0), dtype=np.bool_)
    none1 = np.empty(0)
    idle = np.empty(0, dtype=np.int64)
    return (none2, none3, flags, none1, idle, none2, none3, flags, none1, idle, 0, 0, 0.0)


@numba.njit(cache=True)
def oracle_kernel_pull(
    uc_w: np.ndarray,
    room_w: np.ndarray,
    uc_p: np.ndarray,
    room_p: np.ndarray,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    ftab: np.ndarray,
    floor: float,
) -> tuple[float, float, int, np.ndarray, np.ndarray]:
    r""":func:`oracle_kernel` with the relaxation loops turned inside out; the same results.

    Same parameters and returns as :func:`oracle_kernel`, and the same floats: every
    candidate cost is the same sum ``cost(j - 1, d) + C_j(n)``, and each cell keeps the same
    minimiser.

    Notes
    -----
    :func:`oracle_kernel` pushes every live state :math:`d` (ascending) through every worker
    count :math:`n` (ascending) and keeps the first strict improvement of each cell. A cell
    :math:`d' <` ``demand`` is reached from :math:`d = d' - q(n)`, one state per count, and
    since :math:`q` is strictly increasing over the counts tried, ascending :math:`d` is
    descending :math:`n`: looping over the counts from the largest down, and over the cells
    inside, visits each cell's candidates in the same order, so strict ``<`` keeps the same
    minimiser. The inner loop is a straight pass over two arrays (no ``min`` with
    ``demand``, no skipped states), which the compiler can vectorise. The capped cell
    ``demand`` collects several states per count; it keeps :func:`oracle_kernel`'s order
    (states ascending, counts ascending) in a loop of its own, over the states that can
    reach it. States below the lowest live one are skipped.
    """
    rate = _unit_rates_memo(uc_w, room_w, uc_p, room_p, q, mreq)
    best, best_cost, best_j, choice, capfrom = _scan_pull(
        uc_w, room_w, uc_p, room_p, q, mreq, demand, ftab, floor, rate, False, _no_rooms()
    )
    y = np.zeros((uc_w.shape[0], uc_w.shape[1]), dtype=np.int64)
    z = np.zeros((uc_p.shape[0], uc_p.shape[1]), dtype=np.int64)
    if best_j >= 0:
        _backtrack(uc_w, room_w, uc_p, room_p, q, mreq, demand, choice, capfrom, best_j, y, z)
    return best, best_cost, best_j, y, z


@numba.njit(cache=True)
def _idle_room(capacity: np.ndarray, demand: np.ndarray, cap: int, tol: float) -> np.ndarray:
    """:func:`_room`'s formula per server on an empty slot (usage 0.0)."""
    X, R = capacity.shape
    idle = np.empty(X, dtype=np.int64)
    for s in range(X):
        best = cap
        for r in range(R):
            if demand[r] > 0:
                ratio = (capacity[s, r] - 0.0) / demand[r]
                slack = abs(ratio) if abs(ratio) > 1.0 else 1.0
                fit = int(np.floor(ratio + tol * slack))
                if fit < best:
                    best = fit
        idle[s] = best if best > 0 else 0
    return idle


@numba.njit(cache=True)
def _room_row(
    capacity: np.ndarray,
    used: np.ndarray,
    touched: np.ndarray,
    t: int,
    demand: np.ndarray,
    cap: int,
    tol: float,
    idle: np.ndarray,
    out: np.ndarray,
) -> None:
    """Row ``t`` of :func:`_room` into ``out``, the idle room where nothing was committed.

    ``touched[t, s]`` is false only where ``used[t, s]`` is still the initial 0.0 on every
    resource; there :math:`c - 0 = c` exactly, so the room is :func:`_idle_room`'s.
    """
    R = demand.shape[0]
    for s in range(capacity.shape[0]):
        if not touched[t, s]:
            out[s] = idle[s]
            continue
        best = cap
        for r in range(R):
            if demand[r] > 0:
                ratio = (capacity[s, r] - used[t, s, r]) / demand[r]
                slack = abs(ratio) if abs(ratio) > 1.0 else 1.0
                fit = int(np.floor(ratio + tol * slack))
                if fit < best:
                    best = fit
        out[s] = best if best > 0 else 0


@numba.njit(cache=True)
def _has_room(
    capacity: np.ndarray,
    used: np.ndarray,
    t: int,
    s: int,
    demand: np.ndarray,
    cap: int,
    tol: float,
) -> bool:
    r"""Whether :func:`_room` of ``(t, s)`` is positive, mostly without dividing.

    The room is positive iff ``cap >= 1`` and every resource's fit is at least 1. With
    :math:`D = c - u` (the same subtraction): :math:`D \ge 2d` makes the rounded ratio at least
    2, so the fit is at least 2; :math:`D < d/2` makes it at most 1/2, so the fit is at most 0
    (``tol`` < 1/2). Only in between is the fit computed, by the same formula. (``2d`` and
    ``d/2`` are exact.)
    """
    if cap < 1:
        return False
    for r in range(demand.shape[0]):
        dr = demand[r]
        if dr > 0:
            D = capacity[s, r] - used[t, s, r]
            if D >= 2.0 * dr:
                continue
            if D < 0.5 * dr:
                return False
            ratio = D / dr
            slack = abs(ratio) if abs(ratio) > 1.0 else 1.0
            if int(np.floor(ratio + tol * slack)) < 1:
                return False
    return True


@numba.njit(cache=True)
def _cheapest_with_room(
    uc: np.ndarray,
    capacity: np.ndarray,
    used: np.ndarray,
    touched: np.ndarray,
    start: int,
    demand: np.ndarray,
    cap: int,
    tol: float,
    idle: np.ndarray,
) -> np.ndarray:
    """Per slot, the least unit cost over servers with room (``inf``: none): ``a_t`` or ``b_t``.

    The minimum :func:`_unit_rates` takes, the room test asked only of a server that would
    lower it (the conjunction reordered: the same minimum).
    """
    S, X = uc.shape
    out = np.full(S, np.inf)
    for t in range(S):
        best = np.inf
        for s in range(X):
            v = uc[t, s]
            if v < best:
                if touched[start + t, s]:
                    ok = _has_room(capacity, used, start + t, s, demand, cap, tol)
                else:
                    ok = idle[s] > 0
                if ok:
                    best = v
        out[t] = best
    return out


@numba.njit(cache=True)
def _room_touched(
    capacity: np.ndarray,
    used: np.ndarray,
    touched: np.ndarray,
    start: int,
    demand: np.ndarray,
    cap: int,
    tol: float,
) -> np.ndarray:
    """:func:`_room` on ``used[start:]`` row by row with :func:`_room_row` (the same entries)."""
    S = used.shape[0] - start
    idle = _idle_room(capacity, demand, cap, tol)
    out = np.empty((S, capacity.shape[0]), dtype=np.int64)
    for t in range(S):
        _room_row(capacity, used, touched, start + t, demand, cap, tol, idle, out[t])
    return out


@numba.njit(cache=True)
def _nonzero_rows(
    counts: np.ndarray, unit_cost: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row-major ``(slot + start, server, count)`` of the non-zero ``counts``, and the costs.

    ``counts`` holds the first rows of a schedule whose other rows are 0. The order is
    :func:`numpy.nonzero`'s; the cost array, of ``unit_cost``'s shape, is
    ``unit_cost * counts`` entry by entry (one rounded multiplication each, as numpy computes
    it, the missing rows counted as 0).
    """
    S, X = counts.shape
    m = 0
    for t in range(S):
        for s in range(X):
            if counts[t, s] != 0:
                m += 1
    ts = np.empty(m, dtype=np.int64)
    ss = np.empty(m, dtype=np.int64)
    ns = np.empty(m, dtype=np.int64)
    prod = np.empty(unit_cost.shape)
    for t in range(S, unit_cost.shape[0]):
        for s in range(X):
            prod[t, s] = unit_cost[t, s] * 0
    k = 0
    for t in range(S):
        for s in range(X):
            n = counts[t, s]
            prod[t, s] = unit_cost[t, s] * n
            if n != 0:
                ts[k] = t + start
                ss[k] = s
                ns[k] = n
                k += 1
    return ts, ss, ns, prod


@numba.njit(cache=True)
def decide_kernel(
    uc_w: np.ndarray,
    uc_p: np.ndarray,
    worker_capacity: np.ndarray,
    ps_capacity: np.ndarray,
    worker_used: np.ndarray,
    ps_used: np.ndarray,
    worker_touched: np.ndarray,
    ps_touched: np.ndarray,
    arrival: int,
    worker_demand: np.ndarray,
    ps_demand: np.ndarray,
    cap: int,
    q: np.ndarray,
    mreq: np.ndarray,
    demand: int,
    ftab: np.ndarray,
    floor: float,
    tol: float,
) -> tuple[
    int,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
]:
    r"""One online decision: residual room, :func:`oracle_kernel` and the deployment, in one call.

    Parameters
    ----------
    uc_w, uc_p : float64 (S, H), (S, K)
        Unit costs from the job's arrival on (``prices[a:] @ demand``, computed by the caller
        so that they are the very floats of :func:`best_schedule`).
    worker_capacity, ps_capacity : float64 (H, R), (K, R)
    worker_used, ps_used : float64 (T, H, R), (T, K, R)
        Committed usage.
    worker_touched, ps_touched : bool (T, H), (T, K)
        False where nothing was ever committed (usage exactly 0.0).
    arrival : int
        :math:`a_i`; slots of the outputs of the DP are relative to it.
    worker_demand, ps_demand : float64 (R,)
    cap : int
        :math:`N_i`.
    q, mreq, demand, ftab, floor
        As in :func:`oracle_kernel` (``ftab`` from the arrival on).
    tol : float
        :data:`~optsched.online.oasis.engine.FIT_TOL`.

    Returns
    -------
    (last, cost_w, cost_p, wt, wh, wn, pt, pk, pn)
        ``last`` as in :func:`oracle_kernel` (-1: nothing beat ``floor``, and every array is
        empty). ``cost_w[t, h]`` is :math:`uc_w \cdot y` of :func:`oracle_kernel`'s ``y``
        (shape (S, H), likewise ``cost_p``): summed by the caller with :func:`numpy.sum`
        they give :func:`best_schedule`'s cost to the last bit. ``(wt, wh, wn)`` and
        ``(pt, pk, pn)`` list the deployment (absolute slot, server, count) in
        :func:`numpy.nonzero` order.

    Notes
    -----
    The same floats as :func:`best_schedule` (``kernel="bounded"``) on the same arguments,
    and the same search as :func:`oracle_kernel_pull` (:func:`oracle_kernel` with its loops
    inverted): the rate bound from the same cheapest unit costs (:func:`_cheapest_with_room`
    tests a server's room only when it would lower the minimum, by comparisons where they
    decide it), the room rows by :func:`_room`'s formula (:func:`_room_row`), but only for the
    slots the scan reaches, and the idle room where nothing was committed. Besides, one
    dispatch instead of four, and no ``(S, H)`` int arrays handed back to be searched by
    :func:`numpy.nonzero`.
    """
    idle_w = _idle_room(worker_capacity, worker_demand, cap, tol)
    idle_p = _idle_room(ps_capacity, ps_demand, cap, tol)
    a = _cheapest_with_room(
        uc_w, worker_capacity, worker_used, worker_touched, arrival, worker_demand, cap, tol, idle_w
    )
    b = _cheapest_with_room(
        uc_p, ps_capacity, ps_used, ps_touched, arrival, ps_demand, cap, tol, idle_p
    )
    rate = _rates_from_cheapest(a, b, q, mreq)
    # Rows are filled by the scan as it reaches them (and only those are read).
    room_w = np.empty(uc_w.shape, dtype=np.int64)
    room_p = np.empty(uc_p.shape, dtype=np.int64)
    rooms = (
        worker_capacity,
        worker_used,
        worker_touched,
        worker_demand,
        idle_w,
        ps_capacity,
        ps_used,
        ps_touched,
        ps_demand,
        idle_p,
        arrival,
        cap,
        tol,
    )
    _, _, last, choice, capfrom = _scan_pull(
        uc_w, room_w, uc_p, room_p, q, mreq, demand, ftab, floor, rate, True, rooms
    )
    if last < 0:
        none = np.empty(0, dtype=np.int64)
        flat = np.empty((0, 0))
        return last, flat, flat, none, none, none, none, none, none
    # Only rows up to the last slot can hold workers or PSs.
    y = np.zeros((last + 1, uc_w.shape[1]), dtype=np.int64)
    z = np.zeros((last + 1, uc_p.shape[1]), dtype=np.int64)
    _backtrack(uc_w, room_w, uc_p, room_p, q, mreq, demand, choice, capfrom, last, y, z)
    wt, wh, wn, cost_w = _nonzero_rows(y, uc_w, arrival)
    pt, pk, pn, cost_p = _nonzero_rows(z, uc_p, arrival)
    return last, cost_w, cost_p, wt, wh, wn, pt, pk, pn


# ------------------------------------------------------------------------------------------
# Wrapper
# ------------------------------------------------------------------------------------------


def _check_inputs(
    instance: OasisInstance,
    i: int,
    worker_prices: np.ndarray,
    ps_prices: np.ndarray,
    worker_used: np.ndarray | None,
    ps_used: np.ndarray | None,
) -> None:
    if not 0 <= i < instance.n_jobs:
        raise InvalidInstanceError("i", f"job index {i} out of range for {instance.n_jobs} jobs")
    T = instance.horizon
    shapes = {
        "worker_prices": (worker_prices, (T, *instance.worker_capacity.shape)),
        "ps_prices": (ps_prices, (T, *instance.ps_capacity.shape)),
    }
    if worker_used is not None:
        shapes["worker_used"] = (worker_used, (T, *instance.worker_capacity.shape))
    if ps_used is not None:
        shapes["ps_used"] = (ps_used, (T, *instance.ps_capacity.shape))
    for name, (arr, shape) in shapes.items():
        if np.shape(arr) != shape:
            raise InvalidInstanceError(
                name, f"must have shape {shape} (T, servers, R), got {np.shape(arr)}"
            )
    for name in ("worker_prices", "ps_prices"):
        arr = shapes[name][0]
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidInstanceError(name, "must be finite and >= 0")


def _result(
    instance: OasisInstance,
    i: int,
    uc_w: np.ndarray,
    uc_p: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
) -> OracleResult:
    """Turn per-slot arrays (relative to the arrival) into an :class:`OracleResult`."""
    a = instance.jobs[i].arrival
    ws, hs = np.nonzero(y)
    if len(ws) == 0:
        return _NONE
    # Python ints via tolist(): one conversion per array instead of one per entry.
    workers = tuple(zip((ws + a).tolist(), hs.tolist(), y[ws, hs].tolist(), strict=True))
    ks_j, ks = np.nonzero(z)
    ps = tuple(zip((ks_j + a).tolist(), ks.tolist(), z[ks_j, ks].tolist(), strict=True))
    cost = float(np.sum(uc_w * y) + np.sum(uc_p * z))
    completion = int(a + ws.max() + 1)
    utility = instance.jobs[i].utility(float(completion - a))
    return OracleResult(utility - cost, utility, cost, completion, workers, ps)


def best_schedule(
    instance: OasisInstance,
    i: int,
    worker_prices: np.ndarray,
    ps_prices: np.ndarray,
    worker_used: np.ndarray | None = None,
    ps_used: np.ndarray | None = None,
    *,
    work: str = "chunks",
    floor: float = -math.inf,
    units: WorkUnits | None = None,
    kernel: Literal["bounded", "full"] = "bounded",
) -> OracleResult:
    r"""Best schedule of job ``i`` under the given prices and residual capacities (Numba).

    Parameters
    ----------
    instance : OasisInstance
    i : int
        Job index.
    worker_prices : numpy.ndarray, shape (T, H, R)
        :math:`p_h^r(t) \ge 0`.
    ps_prices : numpy.ndarray, shape (T, K, R)
        :math:`q_k^r(t) \ge 0`.
    worker_used, ps_used : numpy.ndarray, optional
        Usage already committed, shapes (T, H, R) and (T, K, R); ``None`` means an empty
        cluster (full capacity).
    work : {"chunks", "worker-slots"}, default "chunks"
        How progress is counted (:mod:`optsched.online.oasis.engine`); ``"worker-slots"`` searches
        the
        ILP's whole per-job schedule set.
    floor : float, default -inf
        Only payoffs above ``floor`` matter: the search stops once no later deadline can beat
        ``max(floor, best so far)``. The returned payoff is exact whenever it exceeds ``floor``.
    units : WorkUnits, optional
        Precomputed :func:`~optsched.online.oasis.engine.work_units` of the job (must match
        ``work``).
    kernel : {"bounded", "full"}, default "bounded"
        :func:`oracle_kernel` (stops at the cost bound) or :func:`oracle_kernel_full` (the
        previous kernel, kept so benchmarks can time both). Results agree exactly whenever
        the payoff exceeds ``floor``.

    Returns
    -------
    OracleResult
        The best schedule (ties: earliest completion, then lowest server index), or a result
        with ``payoff = -inf`` when none fits or beats ``floor``.

    Raises
    ------
    InvalidInstanceError
        The job's DP table would exceed :data:`MAX_DP_CELLS`; arrays of the wrong shape, or
        negative or non-finite prices, or an unknown ``kernel`` (the argument is named).

    Notes
    -----
    Time :math:`O(S (H \log H + K \log K + N_i) + S\, D_i\, J_i)` for :math:`S = T - a_i` slots,
    :math:`D_i` units of work and :math:`J_i \le N_i` worker counts that make progress, i.e. the
    paper's Theorem 3 bound :math:`O(T N_i E_i (H + K) + T N_i^2 E_i^2)` in chunk mode; memory
    :math:`O(S\, D_i)`.

    References
    ----------
    Y. Bao, Y. Peng, C. Wu, Z. Li. Online Job Scheduling in Distributed Machine Learning
    Clusters. IEEE INFOCOM 2018, Alg. 2 and Theorem 1 (arXiv:1801.00936).
    """
    check_work_mode(work)
    if kernel not in ("bounded", "full"):
        raise InvalidInstanceError("kernel", f"must be 'bounded' or 'full', got {kernel!r}")
    _check_inputs(instance, i, worker_prices, ps_prices, worker_used, ps_used)
    u = units if units is not None else work_units(instance, i, work)
    if u.mode != work:
        raise InvalidInstanceError("units", f"were computed for work={u.mode!r}, not {work!r}")
    return _best_schedule(
        instance, i, worker_prices, ps_prices, worker_used, ps_used, u, floor, kernel
    )


def dp_fits(instance: OasisInstance, i: int, S: int, u: WorkUnits) -> bool:
    """Whether job ``i`` can finish in its ``S`` slots at all (else no schedule exists).

    Raises
    ------
    InvalidInstanceError
        The DP table (``S`` x (units + 1)) would exceed :data:`MAX_DP_CELLS` (field
        ``jobs[i]``).
    """
    if int(u.per_workers[-1]) * S < u.demand:
        # Even N_i workers in every slot up to the horizon cannot finish the job (e.g. a slot
        # far shorter than one minibatch): no schedule exists, whatever the prices.
        return False
    if S * (u.demand + 1) > MAX_DP_CELLS:
        raise InvalidInstanceError(
            f"jobs[{i}]",
            f"the oracle's DP table would have {S * (u.demand + 1):,} cells (> {MAX_DP_CELLS:,}): "
            f"{u.demand} {u.mode} units over {S} slots; use fewer, larger chunks"
            + (" or work='worker-slots'" if u.mode == "chunks" else ""),
        )
    return True


def _best_schedule(
    instance: OasisInstance,
    i: int,
    worker_prices: np.ndarray,
    ps_prices: np.ndarray,
    worker_used: np.ndarray | None,
    ps_used: np.ndarray | None,
    u: WorkUnits,
    floor: float,
    kernel: str = "bounded",
) -> OracleResult:
    """:func:`best_schedule` on checked arguments.

    Prices of the right shapes, finite and >= 0, and ``u`` the job's work units; the online
    loop calls it with its own prices.
    """
    a = instance.jobs[i].arrival
    S = instance.horizon - a
    if not dp_fits(instance, i, S, u):
        return _NONE
    wd = instance.worker_demand[i]
    sd = instance.ps_demand[i]
    N = instance.jobs[i].chunks
    uc_w = np.ascontiguousarray(worker_prices[a:] @ wd)
    uc_p = np.ascontiguousarray(ps_prices[a:] @ sd)
    if worker_used is None:
        room_w = np.broadcast_to(room_for(instance.worker_capacity, wd, N), uc_w.shape)
    else:
        room_w = _room(instance.worker_capacity, worker_used[a:], wd, N, FIT_TOL)
    if ps_used is None:
        room_p = np.broadcast_to(room_for(instance.ps_capacity, sd, N), uc_p.shape)
    else:
        room_p = _room(instance.ps_capacity, ps_used[a:], sd, N, FIT_TOL)
    ftab = np.ascontiguousarray(instance.utility_tables[i, a:])
    dp = oracle_kernel if kernel == "bounded" else oracle_kernel_full
    _, _, last, y, z = dp(
        uc_w,
        np.ascontiguousarray(room_w),
        uc_p,
        np.ascontiguousarray(room_p),
        u.per_workers,
        u.ps_needed,
        int(u.demand),
        ftab,
        float(floor),
    )
    if last < 0:
        return _NONE
    return _result(instance, i, uc_w, uc_p, y, z)


# ------------------------------------------------------------------------------------------
# Plain-Python reference (the paper's recursion, literally)
# ------------------------------------------------------------------------------------------


def best_schedule_reference(
    instance: OasisInstance,
    i: int,
    worker_prices: np.ndarray,
    ps_prices: np.ndarray,
    worker_used: np.ndarray | None = None,
    ps_used: np.ndarray | None = None,
    *,
    work: str = "chunks",
    floor: float = -math.inf,
) -> OracleResult:
    r"""Plain-Python Alg. 2, written from the paper without the kernel's shortcuts.

    Same contract as :func:`best_schedule`. It loops over the amount :math:`d'` of work done in
    each slot (chunk-epochs, needing :math:`\max(1, \lceil d' w_i \rceil)` workers; or
    worker-slots), computes COST_t by the paper's greedy for every :math:`d'`, and evaluates the
    recursion :math:`\text{cost}(t, d) = \min_{d' \le d} \text{cost}_t(t, d') +
    \text{cost}(t - 1, d - d')` in full. Time :math:`O(S D_i^2)`: for tests on small jobs.
    """
    mode = check_work_mode(work)
    _check_inputs(instance, i, worker_prices, ps_prices, worker_used, ps_used)
    job = instance.jobs[i]
    a, T, N = job.arrival, instance.horizon, job.chunks
    H, K = len(instance.worker_servers), len(instance.ps_servers)
    R = len(instance.resources)
    w = job.work_per_chunk(instance.slot_s)
    wd = [job.worker_demand.get(r, 0.0) for r in instance.resources]
    sd = [job.ps_demand.get(r, 0.0) for r in instance.resources]
    if mode == "chunks":
        D = job.chunk_epochs

        def workers_for(d: int) -> int:
            return 0 if d == 0 else max(1, ceil_work(d * w))
    else:
        D = max(1, ceil_work(job.chunk_epochs * w))

        def workers_for(d: int) -> int:
            return d

    def fits(cap: float, used: float, dem: float) -> int:
        ratio = (cap - used) / dem
        return math.floor(ratio + FIT_TOL * max(1.0, abs(ratio)))

    rooms: dict[tuple[int, int, bool], int] = {}
    units: dict[tuple[int, int, bool], float] = {}

    def room(t: int, s: int, workers: bool) -> int:
        key = (t, s, workers)
        if key not in rooms:
            caps = instance.worker_capacity if workers else instance.ps_capacity
            used = worker_used if workers else ps_used
            dem = wd if workers else sd
            best = N
            for r in range(R):
                if dem[r] > 0:
                    u = 0.0 if used is None else float(used[t, s, r])
                    best = min(best, fits(float(caps[s, r]), u, dem[r]))
            rooms[key] = max(best, 0)
        return rooms[key]

    def unit(t: int, s: int, workers: bool) -> float:
        key = (t, s, workers)
        if key not in units:
            prices = worker_prices if workers else ps_prices
            dem = wd if workers else sd
            units[key] = sum(float(prices[t, s, r]) * dem[r] for r in range(R))
        return units[key]

    memo: dict[tuple[int, int], tuple[float, list[int], list[int]]] = {}

    def cost_t(t: int, d: int) -> tuple[float, list[int], list[int]]:
        """COST_t(t, d) of Alg. 2 (steps 1-7) with the deployment."""
        if (t, d) in memo:
            return memo[(t, d)]
        need = workers_for(d)
        y = [0] * H
        z = [0] * K
        if need == 0:
            memo[(t, d)] = (0.0, y, z)
            return memo[(t, d)]
        out: tuple[float, list[int], list[int]] = (math.inf, y, z)
        if need <= N:
            left = need
            for h in sorted(range(H), key=lambda s: (unit(t, s, True), s)):
                y[h] = min(room(t, h, True), N - (need - left), left)
                left -= y[h]
            if left == 0:
                m_need = 0
                while job.b * need > job.B * m_need:
                    m_need += 1
                placed = 0
                for k in sorted(range(K), key=lambda s: (unit(t, s, False), s)):
                    z[k] = max(0, min(room(t, k, False), m_need - placed, need - placed))
                    placed += z[k]
                if job.b * need <= job.B * placed:
                    total = sum(unit(t, h, True) * y[h] for h in range(H)) + sum(
                        unit(t, k, False) * z[k] for k in range(K)
                    )
                    out = (total, y, z)
        memo[(t, d)] = out
        return out

    inf = math.inf
    prev = [0.0] + [inf] * D  # cost(a - 1, d)
    split: list[list[int]] = []  # split[j][d]: the d' chosen in slot a + j
    best, best_j = -inf, -1
    for j, t in enumerate(range(a, T)):
        cur = [inf] * (D + 1)
        arg = [0] * (D + 1)
        for d in range(D + 1):
            for dp in range(d + 1):
                c = cost_t(t, dp)[0]
                if c == inf or prev[d - dp] == inf:
                    continue
                v = c + prev[d - dp]
                if v < cur[d]:
                    cur[d], arg[d] = v, dp
        split.append(arg)
        prev = cur
        if cur[D] < inf:
            pay = job.utility(float(t + 1 - a)) - cur[D]
            if pay > best:
                best, best_j = pay, j
    if best_j < 0 or best <= floor:
        return _NONE
    y_all = np.zeros((T - a, H), dtype=np.int64)
    z_all = np.zeros((T - a, K), dtype=np.int64)
    d = D
    for j in range(best_j, -1, -1):
        dp = split[j][d]
        _, y, z = cost_t(a + j, dp)
        y_all[j] = y
        z_all[j] = z
        d -= dp
    uc_w = np.array([[unit(t, h, True) for h in range(H)] for t in range(a, T)]).reshape(T - a, H)
    uc_p = np.array([[unit(t, k, False) for k in range(K)] for t in range(a, T)]).reshape(T - a, K)
    return _result(instance, i, uc_w, uc_p, y_all, z_all)
