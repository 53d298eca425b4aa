"""Hot loops of the communication family: Numba kernels, each with a plain-Python reference.

* :func:`channel_kernel` / :func:`channel_reference`: the communication channel of the event
  simulator (every policy runs through it).
* :func:`fusion_kernel` / :func:`fusion_pruned_reference`: the tensor-fusion dynamic program
  over the states that can still matter; :func:`fusion_kernel_full` fills every state (the
  previous kernel, bit-for-bit equal) and :func:`fusion_reference` is the DP with the exact
  schedule as its oracle.

Kernels are pure functions on arrays; validation and documentation live in the wrappers
(:mod:`optsched.comm.pace.simulate`, :mod:`optsched.comm.pace.fusion`). Property tests check that
each
kernel and its reference agree.

Channel semantics (shared by both implementations)
--------------------------------------------------
Pieces (whole tensors, partitions of tensors, or fused groups) have a release time, a size and
a priority (smaller first). A **call** is one all-reduce carrying one or more pieces and takes
``alpha + beta * bytes`` on the channel, which runs one call at a time.

* ``preemptive``: calls are single pieces and may be paused and resumed at no cost; at every
  instant the channel serves the released unfinished piece of smallest priority.
* otherwise calls are atomic. Admitted calls wait in a first-in-first-out queue in front of the
  channel. When ``cycle > 0`` pieces are admitted only at the ticks ``k * cycle``, all ready
  pieces at once; otherwise at every event (release or completion) while the bytes admitted and
  not yet finished stay within ``window`` (a call is always admitted when nothing is
  outstanding, so ``window = 0`` means one call at a time). A call takes the ready piece of
  smallest priority and, when ``fuse_limit > 0``, the next ready pieces in priority order while
  the call stays within ``fuse_limit`` bytes (it stops at the first that does not fit).

Loop bounds (``n`` pieces)
--------------------------
* Preemptive channel: every pass of the main loop either finishes the running piece (at most
  ``n`` times) or jumps ``t`` to the next release, which the next pass pushes (at most ``n``
  times): at most ``2n`` passes, each with ``O(log n)`` heap work.
* Atomic channel: every pass either admits a call, finishes the running call (each at most
  ``n`` times), or moves ``t`` to the next event: a release (at most ``n``) or, in cycle mode,
  the next tick while pieces wait, after which every waiting piece is admitted. Ticks are
  jumped to, never stepped through, so idle time costs no passes; callers keep the horizon
  below ``2^52`` cycles so tick times are exact (:class:`~optsched.comm.pace.policies.Horovod`).
* Fusion DP: three nested ranges, at most ``n(n+1)(n+2)/6`` inner steps; the full kernel
  fills two ``(n+1) x (n+1)`` tables, the pruned one stores at most as many live states (its
  flat arrays double when full). :func:`~optsched.comm.pace.instance.check_budgets` refuses an
  ``n`` over the budgets before either kernel is called.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = [
    "channel_kernel",
    "channel_reference",
    "fusion_kernel",
    "fusion_kernel_full",
    "fusion_pruned",
    "fusion_pruned_reference",
    "fusion_reference",
    "fusion_upper_bound",
]

_INF = np.inf


# --------------------------------------------------------------------------------------------
# Binary heap of piece indices keyed by (priority, index), for the kernel.


@numba.njit(cache=True)
def _less(prio: NDArray, a: int, b: int) -> bool:
    return prio[a] < prio[b] or (prio[a] == prio[b] and a < b)


@numba.njit(cache=True)
def _heap_push(heap: NDArray, size: int, prio: NDArray, item: int) -> int:
    k = size
    heap[k] = item
    while k > 0:
        parent = (k - 1) // 2
        if _less(prio, heap[k], heap[parent]):
            heap[k], heap[parent] = heap[parent], heap[k]
            k = parent
        else:
            break
    return size + 1


@numba.njit(cache=True)
def _heap_pop(heap: NDArray, size: int, prio: NDArray) -> int:
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _less(prio, heap[left + 1], heap[left]):
            child = left + 1
        if _less(prio, heap[child], heap[k]):
            heap[k], heap[child] = heap[child], heap[k]
            k = child
        else:
            break
    return size


@numba.njit(cache=True)
def channel_kernel(
    release: NDArray,
    nbytes: NDArray,
    priority: NDArray,
    alpha: float,
    beta: float,
    preemptive: bool,
    fuse_limit: float,
    cycle: float,
    window: float,
) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray, int, NDArray, NDArray, NDArray, int]:
    """Simulate the channel (Numba). See the module notes for the semantics.

    Returns
    -------
    piece_call, piece_end, call_start, call_end, call_bytes, n_calls,
    seg_call, seg_start, seg_end, n_segs
    """
    n = release.shape[0]
    by_release = np.argsort(release, kind="mergesort")
    piece_call = np.full(n, -1, dtype=np.int64)
    piece_end = np.zeros(n)
    call_start = np.zeros(n)
    call_end = np.zeros(n)
    call_bytes = np.zeros(n)
    seg_call = np.zeros(2 * n + 1, dtype=np.int64)
    seg_start = np.zeros(2 * n + 1)
    seg_end = np.zeros(2 * n + 1)
    heap = np.zeros(n, dtype=np.int64)
    hsize = 0
    n_calls = 0
    n_segs = 0
    nxt = 0
    t = 0.0
    if preemptive:
        remaining = alpha + beta * nbytes
        running = -1
        while nxt < n or hsize > 0:
            if hsize == 0 and release[by_release[nxt]] > t:
                t = release[by_release[nxt]]
            while nxt < n and release[by_release[nxt]] <= t:
                hsize = _heap_push(heap, hsize, priority, by_release[nxt])
                nxt += 1
            j = heap[0]
            if j != running:
                if running >= 0:
                    seg_end[n_segs - 1] = t
                if piece_call[j] < 0:
                    piece_call[j] = n_calls
                    call_start[n_calls] = t
                    call_bytes[n_calls] = nbytes[j]
                    n_calls += 1
                seg_call[n_segs] = piece_call[j]
                seg_start[n_segs] = t
                n_segs += 1
                running = j
            next_release = release[by_release[nxt]] if nxt < n else _INF
            if t + remaining[j] <= next_release:
                t += remaining[j]
                remaining[j] = 0.0
                piece_end[j] = t
                call_end[piece_call[j]] = t
                seg_end[n_segs - 1] = t
                hsize = _heap_pop(heap, hsize, priority)
                running = -1
            else:
                remaining[j] -= next_release - t
                t = next_release
        return (
            piece_call,
            piece_end,
            call_start[:n_calls],
            call_end[:n_calls],
            call_bytes[:n_calls],
            n_calls,
            seg_call[:n_segs],
            seg_start[:n_segs],
            seg_end[:n_segs],
            n_segs,
        )

    # Atomic calls behind a FIFO queue.
    call_members = np.zeros(n, dtype=np.int64)  # pieces in admission order
    call_first = np.zeros(n + 1, dtype=np.int64)  # call c owns call_members[first[c]:first[c+1]]
    n_members = 0
    head = 0  # next admitted call to start
    running = -1
    running_end = 0.0
    outstanding = 0.0
    tick = 0
    while True:
        while nxt < n and release[by_release[nxt]] <= t:
            hsize = _heap_push(heap, hsize, priority, by_release[nxt])
            nxt += 1
        admit = cycle <= 0.0 or t >= tick * cycle
        if cycle > 0.0 and admit:
            tick = math.floor(t / cycle) + 1
        while admit and hsize > 0:
            first = heap[0]
            if cycle <= 0.0 and outstanding > 0.0 and outstanding + nbytes[first] > window:
                break
            hsize = _heap_pop(heap, hsize, priority)
            call_first[n_calls] = n_members
            call_members[n_members] = first
            n_members += 1
            size = nbytes[first]
            piece_call[first] = n_calls
            while fuse_limit > 0.0 and hsize > 0 and size + nbytes[heap[0]] <= fuse_limit:
                p = heap[0]
                hsize = _heap_pop(heap, hsize, priority)
                call_members[n_members] = p
                n_members += 1
                size += nbytes[p]
                piece_call[p] = n_calls
            call_bytes[n_calls] = size
            call_first[n_calls + 1] = n_members
            n_calls += 1
            outstanding += size
        if running < 0 and head < n_calls:
            running = head
            head += 1
            call_start[running] = t
            running_end = t + alpha + beta * call_bytes[running]
        # Next event: a completion, a release (event-driven) or a tick (cycle mode).
        t_next = _INF
        if running >= 0:
            t_next = running_end
        if cycle > 0.0:
            if hsize > 0:
                t_next = min(t_next, tick * cycle)
            elif nxt < n:
                r = release[by_release[nxt]]
                k = max(tick, math.ceil(r / cycle))
                t_next = min(t_next, k * cycle)
        elif nxt < n:
            t_next = min(t_next, release[by_release[nxt]])
        if t_next == _INF:
            break
        t = max(t, t_next)
        if running >= 0 and running_end <= t:
            call_end[running] = running_end
            seg_call[n_segs] = running
            seg_start[n_segs] = call_start[running]
            seg_end[n_segs] = running_end
            n_segs += 1
            for m in range(call_first[running], call_first[running + 1]):
                piece_end[call_members[m]] = running_end
            # Outstanding = admitted calls not finished = the queue; reset to exactly zero
            # when it empties so rounding never blocks the next admission.
            outstanding = outstanding - call_bytes[running] if head < n_calls else 0.0
            running = -1
    return (
        piece_call,
        piece_end,
        call_start[:n_calls],
        call_end[:n_calls],
        call_bytes[:n_calls],
        n_calls,
        seg_call[:n_segs],
        seg_start[:n_segs],
        seg_end[:n_segs],
        n_segs,
    )


def channel_reference(
    release: NDArray,
    nbytes: NDArray,
    priority: NDArray,
    alpha: float,
    beta: float,
    preemptive: bool,
    fuse_limit: float,
    cycle: float,
    window: float,
) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray, int, NDArray, NDArray, NDArray, int]:
    """Plain-Python twin of :func:`channel_kernel` (same inputs, same outputs)."""
    n = len(release)
    rel = [float(x) for x in release]
    size = [float(x) for x in nbytes]
    pr = [float(x) for x in priority]
    arrivals = deque(sorted(range(n), key=lambda j: (rel[j], j)))
    ready: list[tuple[float, int]] = []
    piece_call = [-1] * n
    piece_end = [0.0] * n
    calls: list[dict[str, object]] = []
    segments: list[list[float]] = []

    def admit_releases(now: float) -> None:
        while arrivals and rel[arrivals[0]] <= now:
            j = arrivals.popleft()
            heapq.heappush(ready, (pr[j], j))

    t = 0.0
    if preemptive:
        remaining = [alpha + beta * s for s in size]
        running = -1
        while arrivals or ready:
            if not ready and rel[arrivals[0]] > t:
                t = rel[arrivals[0]]
            admit_releases(t)
            j = ready[0][1]
            if j != running:
                if running >= 0:
                    segments[-1][2] = t
                if piece_call[j] < 0:
                    piece_call[j] = len(calls)
                    calls.append({"start": t, "end": 0.0, "bytes": size[j]})
                segments.append([piece_call[j], t, t])
                running = j
            nxt = rel[arrivals[0]] if arrivals else math.inf
            if t + remaining[j] <= nxt:
                t += remaining[j]
                remaining[j] = 0.0
                piece_end[j] = t
                calls[piece_call[j]]["end"] = t
                segments[-1][2] = t
                heapq.heappop(ready)
                running = -1
            else:
                remaining[j] -= nxt - t
                t = nxt
    else:
        queue: deque[int] = deque()
        members: list[list[int]] = []
        running = -1
        running_end = 0.0
        outstanding = 0.0
        tick = 0
        while True:
            admit_releases(t)
            may_admit = cycle <= 0 or t >= tick * cycle
            if cycle > 0 and may_admit:
                tick = math.floor(t / cycle) + 1
            while may_admit and ready:
                first = ready[0][1]
                if cycle <= 0 and outstanding > 0 and outstanding + size[first] > window:
                    break
                heapq.heappop(ready)
                group = [first]
                total = size[first]
                while fuse_limit > 0 and ready and total + size[ready[0][1]] <= fuse_limit:
                    p = heapq.heappop(ready)[1]
                    group.append(p)
                    total += size[p]
                for p in group:
                    piece_call[p] = len(calls)
                calls.append({"start": 0.0, "end": 0.0, "bytes": total})
                members.append(group)
                queue.append(len(calls) - 1)
                outstanding += total
            if running < 0 and queue:
                running = queue.popleft()
                calls[running]["start"] = t
                running_end = t + alpha + beta * float(calls[running]["bytes"])  # type: ignore[arg-type]
            candidates = []
            if running >= 0:
                candidates.append(running_end)
            if cycle > 0:
                if ready:
                    candidates.append(tick * cycle)
                elif arrivals:
                    k = max(tick, math.ceil(rel[arrivals[0]] / cycle))
                    candidates.append(k * cycle)
            elif arrivals:
                candidates.append(rel[arrivals[0]])
            if not candidates:
                break
            t = max(t, min(candidates))
            if running >= 0 and running_end <= t:
                calls[running]["end"] = running_end
                segments.append([running, calls[running]["start"], running_end])  # type: ignore[list-item]
                for p in members[running]:
                    piece_end[p] = running_end
                done = float(calls[running]["bytes"])  # type: ignore[arg-type]
                outstanding = outstanding - done if queue else 0.0
                running = -1
    return (
        np.array(piece_call, dtype=np.int64),
        np.array(piece_end, dtype=np.float64),
        np.array([c["start"] for c in calls], dtype=np.float64),
        np.array([c["end"] for c in calls], dtype=np.float64),
        np.array([c["bytes"] for c in calls], dtype=np.float64),
        len(calls),
        np.array([int(s[0]) for s in segments], dtype=np.int64),
        np.array([s[1] for s in segments], dtype=np.float64),
        np.array([s[2] for s in segments], dtype=np.float64),
        len(segments),
    )


# --------------------------------------------------------------------------------------------
# Tensor fusion.


@numba.njit(cache=True)
def _suffix_groups(prefix_bytes: NDArray, max_bytes: float, max_tensors: int) -> NDArray:
    """``r[k]`` = fewest groups covering tensors ``k..n-1`` within the limits (``r[n] = 0``).

    Covering a suffix by contiguous groups is interval covering: from ``k`` the longest valid
    group is taken (its end never decreases with ``k``, so two pointers suffice), which is
    optimal by the usual exchange argument. :math:`O(n)`.
    """
    n = prefix_bytes.shape[0] - 1
    r = np.zeros(n + 1, dtype=np.int64)
    reach = np.empty(n, dtype=np.int64)
    e = 1
    for k in range(n):
        if e < k + 1:
            e = k + 1
        while (
            e < n
            and e + 1 - k <= max_tensors
            and prefix_bytes[e + 1] - prefix_bytes[k] <= max_bytes
        ):
            e += 1
        reach[k] = e
    for k in range(n - 1, -1, -1):
        r[k] = 1 + r[reach[k]]
    return r


@numba.njit(cache=True)
def _greedy_value(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
    cap: float,
) -> float:
    """Value of the grouping that fills each group up to ``cap`` bytes in consumption order.

    The value is computed with the DP's own expression ``h[i] + g * alpha + beta * B[k]`` per
    group, so it is exactly the DP's value of that path and an upper bound on its optimum.
    """
    n = h.shape[0]
    value = -_INF
    i = 0
    g = 0
    while i < n:
        k = i + 1
        while (
            k < n
            and k + 1 - i <= max_tensors
            and prefix_bytes[k + 1] - prefix_bytes[i] <= max_bytes
            and prefix_bytes[k + 1] - prefix_bytes[i] <= cap
        ):
            k += 1
        g += 1
        base = beta * prefix_bytes[k]
        cand = h[i] + g * alpha + base
        if cand > value:
            value = cand
        i = k
    return value


@numba.njit(cache=True)
def fusion_upper_bound(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
) -> float:
    r"""Best DP value among cheap groupings: no fusion and greedy fills at 40 byte caps.

    Caps are :math:`B_n / 1.5^j` for :math:`j = 0..39` (and the byte limit itself); each fill
    is :math:`O(n)`. Every candidate is a path of the DP evaluated with the DP's expressions,
    so the result is :math:`\ge` the DP's optimum in floating point too.
    """
    n = h.shape[0]
    best = _greedy_value(h, prefix_bytes, alpha, beta, max_bytes, max_tensors, 0.0)
    cap = float(prefix_bytes[n])
    for _ in range(40):
        v = _greedy_value(h, prefix_bytes, alpha, beta, max_bytes, max_tensors, cap)
        if v < best:
            best = v
        cap = cap / 1.5
    v = _greedy_value(h, prefix_bytes, alpha, beta, max_bytes, max_tensors, max_bytes)
    if v < best:
        best = v
    return best


@numba.njit(cache=True)
def fusion_kernel(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
) -> tuple[float, NDArray]:
    r"""Optimal contiguous grouping (Numba): the DP of :func:`fusion_kernel_full`, pruned.

    Parameters
    ----------
    h : ndarray
        ``release + tail`` of each tensor in consumption order.
    prefix_bytes : ndarray
        ``prefix_bytes[k]`` = bytes of tensors ``0..k-1`` (length ``n + 1``).
    alpha, beta : float
        Cost model.
    max_bytes : float
        Byte limit of a group of two or more tensors (``inf`` for none).
    max_tensors : int
        Tensor limit of a group.

    Returns
    -------
    value : float
        :math:`\min` over groupings of :math:`\max_g (h_{first(g)} + g\,a + \beta B_{last(g)})`.
    starts : ndarray of int
        First tensor of each group.

    Notes
    -----
    Same value and same groups as :func:`fusion_kernel_full` (same tie-breaking: the largest
    start among equal candidates, then the fewest groups), bit for bit. Three rules drop
    states :math:`(k, g)` (prefix of :math:`k` tensors in :math:`g` groups) that cannot be on
    the grouping the full DP returns:

    1. **Upper bound.** :math:`U` is the DP value of a cheap grouping
       (:func:`fusion_upper_bound`), so :math:`V^* \le U`; a state with :math:`V[k, g] > U`
       is dropped.
    2. **Completion bound.** For :math:`k < n` every completion has a group starting at
       :math:`k` with index :math:`g + 1`, and a last group starting at some :math:`s \ge k`
       with index :math:`\ge g + r_k` (:math:`r_k` = fewest groups covering :math:`k..n-1`,
       :func:`_suffix_groups`), so it is worth at least

       .. math::

           L(k, g) = \max\bigl(h_k + (g+1)\,a + \beta B_{k+1},\;
                     m_k + (g + r_k)\,a + \beta B_n\bigr),
           \qquad m_k = \min_{j \ge k} h_j;

       a state with :math:`L(k, g) > U` is dropped. :math:`L` increases with :math:`g`, so
       the largest live :math:`g` of a row is found by bisection.
    3. **Pareto.** A state is dropped when a smaller group count of its row has a value no
       larger: any completion of it is matched, with a smaller index in every later term, by
       the same completion of the other.

    Why the result is unchanged: the full DP's answer is :math:`(n, g^*)` with :math:`g^*` the
    fewest groups reaching :math:`V^*`, and each state's choice is its largest minimising
    predecessor. A minimising predecessor :math:`(i, g-1)` of a kept state :math:`(k, g)`
    has :math:`V[i, g-1] \le V[k, g] \le U`; :math:`L(i, g-1) \le L(k, g)` (as
    :math:`m_i \le m_k`, :math:`r_i \le 1 + r_k`, and its first term is at most its
    candidate :math:`h_i + g\,a + \beta B_k`); and it is not dominated, else :math:`(k, g)`
    would be. So every minimiser of a kept state is kept, with the full DP's value, and no
    dropped or altered state can tie with it (values computed over fewer predecessors only
    grow). Every comparison uses the full DP's own floating-point expressions and rounding is
    monotone, so this holds for the computed values, not only for the reals; the property
    tests check equality on random float and integer inputs.

    Cost: rows are stored sparsely (:func:`fusion_pruned`), so a row costs its window plus
    the live states in it. Worst case (nothing pruned, e.g. ``alpha = 0`` with increasing
    tails) :math:`O(n^2 G)` as before; on the shipped profiles a handful of states per row
    survive and the DP is close to :math:`O(n\,w)` for a window of :math:`w` tensors.
    """
    n = h.shape[0]
    if n == 0:
        return -_INF, np.zeros(0, dtype=np.int64)
    upper = fusion_upper_bound(h, prefix_bytes, alpha, beta, max_bytes, max_tensors)
    return fusion_pruned(h, prefix_bytes, alpha, beta, max_bytes, max_tensors, upper)


@numba.njit(cache=True)
def fusion_pruned(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
    upper: float,
) -> tuple[float, NDArray]:
    """The pruned DP given an upper bound ``upper`` on the optimum (see :func:`fusion_kernel`).

    Live states are stored row by row in flat arrays: row ``k``'s states (group counts in
    increasing order, values strictly decreasing) sit at ``off[k]:off[k + 1]``.
    """
    n = h.shape[0]
    r = _suffix_groups(prefix_bytes, max_bytes, max_tensors)
    low = np.empty(n)  # suffix minima of h
    low[n - 1] = h[n - 1]
    for k in range(n - 2, -1, -1):
        low[k] = h[k] if h[k] < low[k + 1] else low[k + 1]
    total = beta * prefix_bytes[n]
    size = 4 * (n + 1)
    st_g = np.empty(size, dtype=np.int64)
    st_v = np.empty(size)
    st_arg = np.empty(size, dtype=np.int64)
    off = np.zeros(n + 2, dtype=np.int64)
    st_g[0] = 0
    st_v[0] = -_INF
    st_arg[0] = -1
    off[1] = 1
    used = 1
    best = np.empty(n + 2)
    best_i = np.empty(n + 2, dtype=np.int64)
    lo = 0
    for k in range(1, n + 1):
        off[k + 1] = used
        base = beta * prefix_bytes[k]
        # Smallest i such that [i, k) is a valid group (non-decreasing in k).
        while lo < k - 1 and (
            prefix_bytes[k] - prefix_bytes[lo] > max_bytes or k - lo > max_tensors
        ):
            lo += 1
        # Group counts reachable from the live predecessors.
        g_min = n + 1
        g_max = 0
        for i in range(lo, k):
            if off[i + 1] > off[i]:
                if st_g[off[i]] + 1 < g_min:
                    g_min = st_g[off[i]] + 1
                if st_g[off[i + 1] - 1] + 1 > g_max:
                    g_max = st_g[off[i + 1] - 1] + 1
        if g_max == 0:
            continue
        if k < n:
            # Largest g whose completion bound stays within the upper bound (the bound
            # increases with g: binary search).
            nb = beta * prefix_bytes[k + 1]
            a_g = g_min - 1
            b_g = g_max
            while a_g < b_g:
                mid = (a_g + b_g + 1) // 2
                nxt = h[k] + (mid + 1) * alpha + nb
                last = low[k] + (mid + r[k]) * alpha + total
                if nxt <= upper and last <= upper:
                    a_g = mid
                else:
                    b_g = mid - 1
            g_max = a_g
            if g_max < g_min:
                continue
        for g in range(g_min, g_max + 1):
            best[g] = _INF
            best_i[g] = -1
        for i in range(k - 1, lo - 1, -1):
            for idx in range(off[i], off[i + 1]):
                g = st_g[idx] + 1
                if g > g_max:
                    break
                prev = st_v[idx]
                cand = h[i] + g * alpha + base
                if prev > cand:
                    cand = prev
                if cand < best[g]:
                    best[g] = cand
                    best_i[g] = i
        running = _INF
        for g in range(g_min, g_max + 1):
            # Keep a state only if it beats every smaller group count of its row (Pareto).
            if best[g] < running and best[g] <= upper:
                if used == size:
                    size *= 2
                    st_g2 = np.empty(size, dtype=np.int64)
                    st_v2 = np.empty(size)
                    st_arg2 = np.empty(size, dtype=np.int64)
                    st_g2[:used] = st_g[:used]
                    st_v2[:used] = st_v[:used]
                    st_arg2[:used] = st_arg[:used]
                    st_g = st_g2
                    st_v = st_v2
                    st_arg = st_arg2
                st_g[used] = g
                st_v[used] = best[g]
                st_arg[used] = best_i[g]
                used += 1
            if best[g] < running:
                running = best[g]
        off[k + 1] = used
    out = _INF
    best_idx = -1
    for idx in range(off[n], off[n + 1]):
        if st_v[idx] < out:
            out = st_v[idx]
            best_idx = idx
    if best_idx < 0:  # unreachable when ``upper`` bounds the optimum
        return _INF, np.zeros(0, dtype=np.int64)
    g = st_g[best_idx]
    starts = np.zeros(g, dtype=np.int64)
    idx = best_idx
    while g > 0:
        i = st_arg[idx]
        starts[g - 1] = i
        g -= 1
        for j in range(off[i], off[i + 1]):
            if st_g[j] == g:
                idx = j
                break
    return out, starts


@numba.njit(cache=True)
def fusion_kernel_full(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
) -> tuple[float, NDArray]:
    r"""Optimal contiguous grouping (Numba), every state of the DP: :math:`O(n^2 G)`.

    The previous version of :func:`fusion_kernel`, kept as its exact twin: it fills both
    :math:`(n+1) \times (n+1)` tables in full. Same parameters and result.

    Parameters
    ----------
    h : ndarray
        ``release + tail`` of each tensor in consumption order.
    prefix_bytes : ndarray
        ``prefix_bytes[k]`` = bytes of tensors ``0..k-1`` (length ``n + 1``).
    alpha, beta : float
        Cost model.
    max_bytes : float
        Byte limit of a group of two or more tensors (``inf`` for none).
    max_tensors : int
        Tensor limit of a group.

    Returns
    -------
    value : float
        :math:`\min` over groupings of :math:`\max_g (h_{first(g)} + g\,a + \beta B_{last(g)})`.
    starts : ndarray of int
        First tensor of each group.
    """
    n = h.shape[0]
    if n == 0:
        return -_INF, np.zeros(0, dtype=np.int64)
    value = np.full((n + 1, n + 1), _INF)
    arg = np.full((n + 1, n + 1), -1, dtype=np.int64)
    value[0, 0] = -_INF
    for k in range(1, n + 1):
        base = beta * prefix_bytes[k]
        for g in range(1, k + 1):
            best = _INF
            best_i = -1
            for i in range(k - 1, g - 2, -1):
                if i < k - 1 and (
                    prefix_bytes[k] - prefix_bytes[i] > max_bytes or k - i > max_tensors
                ):
                    break
                prev = value[i, g - 1]
                if prev == _INF:
                    continue
                cand = h[i] + g * alpha + base
                if prev > cand:
                    cand = prev
                if cand < best:
                    best = cand
                    best_i = i
            value[k, g] = best
            arg[k, g] = best_i
    best = _INF
    best_g = -1
    for g in range(1, n + 1):
        if value[n, g] < best:
            best = value[n, g]
            best_g = g
    starts = np.zeros(best_g, dtype=np.int64)
    k = n
    g = best_g
    while g > 0:
        i = arg[k, g]
        starts[g - 1] = i
        k = i
        g -= 1
    return best, starts


def fusion_pruned_reference(
    h: NDArray,
    prefix_bytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
) -> tuple[float, list[int]]:
    r"""Plain-Python twin of :func:`fusion_kernel` (the pruned DP), written with dictionaries.

    Same bound (no fusion and greedy fills at the caps of :func:`fusion_upper_bound`), same
    completion bound and Pareto rule, same floating-point expressions; returns the value and
    the group starts as a list. Tests check it against both kernels.
    """
    n = len(h)
    if n == 0:
        return -math.inf, []
    hs = [float(x) for x in h]
    pb = [float(x) for x in prefix_bytes]

    def valid(i: int, k: int) -> bool:
        return k - i == 1 or (pb[k] - pb[i] <= max_bytes and k - i <= max_tensors)

    def greedy(cap: float) -> float:
        value, i, g = -math.inf, 0, 0
        while i < n:
            k = i + 1
            while k < n and valid(i, k + 1) and pb[k + 1] - pb[i] <= cap:
                k += 1
            g += 1
            base = beta * pb[k]
            value = max(value, hs[i] + g * alpha + base)
            i = k
        return value

    caps = [0.0]
    cap = pb[n]
    for _ in range(40):
        caps.append(cap)
        cap = cap / 1.5
    caps.append(max_bytes)
    upper = min(greedy(c) for c in caps)
    # Fewest groups covering k..n-1, by taking the longest valid group each time.
    fewest = [0] * (n + 1)
    for k in range(n - 1, -1, -1):
        e = k + 1
        while e < n and valid(k, e + 1):
            e += 1
        fewest[k] = 1 + fewest[e]
    low = [min(hs[k:]) for k in range(n)]
    total = beta * pb[n]
    # rows[k]: {g: (value, predecessor row)} of the live states of prefix k.
    rows: list[dict[int, tuple[float, int]]] = [{0: (-math.inf, -1)}] + [{} for _ in range(n)]
    for k in range(1, n + 1):
        base = beta * pb[k]
        found: dict[int, tuple[float, int]] = {}
        for i in range(k - 1, -1, -1):
            if not valid(i, k):
                break
            for gp, (prev, _) in sorted(rows[i].items()):
                g = gp + 1
                if k < n:
                    nb = beta * pb[k + 1]
                    if hs[k] + (g + 1) * alpha + nb > upper:
                        continue
                    if low[k] + (g + fewest[k]) * alpha + total > upper:
                        continue
                cand = max(prev, hs[i] + g * alpha + base)
                if g not in found or cand < found[g][0]:
                    found[g] = (cand, i)
        running = math.inf
        for g in sorted(found):
            cand, i = found[g]
            if cand < running and cand <= upper:
                rows[k][g] = (cand, i)
            running = min(running, cand)
    if not rows[n]:
        return math.inf, []
    best_g = min(rows[n], key=lambda g: (rows[n][g][0], g))
    value = rows[n][best_g][0]
    starts: list[int] = []
    k, g = n, best_g
    while g > 0:
        i = rows[k][g][1]
        starts.append(i)
        k, g = i, g - 1
    return value, starts[::-1]


def fusion_reference(
    release: NDArray,
    tail: NDArray,
    nbytes: NDArray,
    alpha: float,
    beta: float,
    max_bytes: float,
    max_tensors: int,
) -> tuple[float, NDArray]:
    r"""Plain-Python fusion DP whose oracle is the exact schedule itself (§2.5's DP).

    Same state as :func:`fusion_kernel` (tensors covered, groups used), but the value of a
    candidate prefix grouping is computed by running Jackson's preemptive rule
    (:func:`optsched.comm.pace.exact.jackson_value`) on the prefix's jobs rather than by the closed
    form. Lower-priority groups never delay higher-priority ones, so the prefix schedule does
    not depend on how the rest is grouped. :math:`O(n^4 \log n)`: tests only.
    """
    from optsched.comm.pace.exact import jackson_value

    n = len(release)
    if n == 0:
        return -math.inf, np.zeros(0, dtype=np.int64)
    # best[(k, g)] = (value, starts) of the best grouping of tensors 0..k-1 into g groups.
    best: dict[tuple[int, int], tuple[float, list[int]]] = {(0, 0): (-math.inf, [])}
    for k in range(1, n + 1):
        for g in range(1, k + 1):
            chosen: tuple[float, list[int]] | None = None
            for i in range(k - 1, g - 2, -1):
                if i < k - 1 and (float(np.sum(nbytes[i:k])) > max_bytes or k - i > max_tensors):
                    break
                if (i, g - 1) not in best:
                    continue
                starts = [*best[(i, g - 1)][1], i]
                bounds = [*starts, k]
                rel = [float(np.max(release[a:b])) for a, b in itertools.pairwise(bounds)]
                tl = [float(np.max(tail[a:b])) for a, b in itertools.pairwise(bounds)]
                work = [
                    alpha + beta * float(np.sum(nbytes[a:b])) for a, b in itertools.pairwise(bounds)
                ]
                val = jackson_value(rel, work, tl)
                if chosen is None or val < chosen[0]:
                    chosen = (val, starts)
            if chosen is not None:
                best[(k, g)] = chosen
    final = min((best[(n, g)] for g in range(1, n + 1) if (n, g) in best), key=lambda x: x[0])
    return final[0], np.array(final[1], dtype=np.int64)
