r"""2D-LAS's sorted walk compiled: a decision of :class:`~optsched.sim.policies.Tiresias` in Numba.

The plain-Python walk (:func:`~optsched.sim.policies.walk.walk_sorted` with the hooks of
:class:`~optsched.sim.policies.Tiresias`) is the reference; :func:`decide` carries out the same
decision, step for step, on arrays, and :mod:`optsched.sim.policies.las_core` hands it the
engine's news and turns its answer into the :class:`~optsched.sim.PolicyDecision`. The tests
compare the two walks' records, bit for bit, on random worlds.

**The service, kept here.** The walk reads the attained service of the jobs whose key may
change and of those near the earliest threshold crossing. In the simulator's event-driven
engine without colocation or batch phases a running job's service grows by exactly
``gpus * (t - t')`` from one decision point ``t'`` to the next, and nowhere else
(:meth:`~optsched.sim.Policy.plain_progress`): the sum the engine forms, eagerly or by its
catch-up, bit for bit. So the kernel forms it too, at every decision, for every running job
(a pass in machine code), and reads no job state at all.

**What it keeps** (the layout of the arrays; every row is indexed by job position unless said):

* ``ints`` (int64 rows): the key each running job holds in the sorted running jobs (``-1``: not
  running), its gang, its crossing's version (``0``: none), whether its rate on the one type
  is positive, its gang's queue slot, whether it was granted at the last decision and the key
  it was granted with; the sorted running jobs (job, key, gang), the wait queue's heaps (one
  region per gang size), the crossing heap's counters and jobs, and the inputs and outputs of a
  decision;
* ``flts`` (float64 rows): the service, the time it was last summed to, the crossing predicted at
  the grant, and the crossing heap's times;
* ``sc`` (int64 scalars, the ``S_*`` indices).

Keys are 2D-LAS's full keys as one integer, ``queue * n + position`` (unique; the queue's
heaps compare keys alone). The crossing heap orders ``(time, counter)`` as the reference's
tuples do, and is compacted (its stale entries dropped) when full: what the walk reads of it,
the pops in order and the set of entries up to a time, does not depend on its layout.

Complexity of a decision: :math:`O(R + (g + 1) G + c \log C)` for :math:`R` running jobs,
:math:`g` grants, :math:`G` gang sizes and :math:`c` crossings popped from a heap of :math:`C`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from optsched.tolerances import TIME_TOL

__all__ = ["NF", "NI", "S_LEN", "decide", "reinsert", "sync"]

# -- rows of ints --------------------------------------------------------------------------------
KEYOF = 0  # the key a running job holds in the sorted running jobs, -1 when not running
GANG = 1  # its gang
VER = 2  # the version of its predicted crossing, 0 when none
RUNS = 3  # 1 when its rate on the one type is positive
SLOT = 4  # its gang's queue slot
STARTED = 5  # 1 when granted at the last decision (its grant key and crossing kept)
SKEY = 6  # the key it was granted with
RJOB = 7  # the sorted running jobs: job
RKEY = 8  # ... key
RGPU = 9  # ... gang
QHEAP = 10  # the wait queue: the keys of each slot's heap, in the slot's region
CCNT = 11  # the crossing heap: counter
CJOB = 12  # ... job
IN = 13  # inputs: the finished jobs, then the pending ones, then the arrived ones
INFLAG = 14  # ... for a pending job: 1 when the engine placed it
NEW = 15  # outputs: the jobs granted from the queue, in walk (key) order
NEWKEY = 16  # ... their keys
PRE = 17  # ... the running jobs preempted
SKIP = 18  # ... the waiting jobs skipped (a rate of 0)
STLIST = 19  # the jobs granted at the last decision
QOFF = 20  # per slot: the start of its heap's region
QSIZE = 21  # per slot: its heap's size
QGANG = 22  # per slot: its gang
TMP = 23  # scratch: the crossings popped, the prefix sums, the heap walk's stack
INQ = 24  # 1 when the job waits in the queue
NI = 25

# -- rows of flts --------------------------------------------------------------------------------
SVC = 0  # attained service (as the engine sums it)
SYNCED = 1  # the decision point it was summed to
SAT = 2  # the crossing predicted at the grant (inf: none)
CAT = 3  # the crossing heap: time
NF = 4

# -- sc ----------------------------------------------------------------------------------------
S_N = 0  # jobs
S_R = 1  # running jobs in the sorted list
S_RTOTAL = 2  # the sum of their gangs
S_CSIZE = 3  # entries in the crossing heap
S_CCOUNTER = 4  # crossings predicted so far (the versions)
S_SLOTS = 5  # gang slots
S_STARTED = 6  # jobs in STLIST
S_GPUS = 7  # GPUs of the one type
S_LEN = 8

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _margin(now: float) -> float:
    # optsched.sim.policies.tiresias._margin
    return 1e-3 + 1e-6 * abs(now)


# -- the wait queue ---------------------------------------------------------------------------


@_jit
def _q_push(ints: np.ndarray, key: int, i: int) -> None:
    ints[INQ, i] = 1
    slot = ints[SLOT, i]
    off = ints[QOFF, slot]
    pos = ints[QSIZE, slot]
    ints[QSIZE, slot] = pos + 1
    h = ints[QHEAP]
    while pos > 0:
        parent = (pos - 1) >> 1
        if h[off + parent] <= key:
            break
        h[off + pos] = h[off + parent]
        pos = parent
    h[off + pos] = key


@_jit
def _q_sift_down(h: np.ndarray, off: int, size: int, pos: int) -> None:
    key = h[off + pos]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and h[off + c + 1] < h[off + c]:
            c += 1
        if h[off + c] >= key:
            break
        h[off + pos] = h[off + c]
        pos = c
    h[off + pos] = key


@_jit
def _q_pop_top(ints: np.ndarray, i: int) -> None:
    """Remove job ``i``, the top of its gang's heap."""
    ints[INQ, i] = 0
    slot = ints[SLOT, i]
    off = ints[QOFF, slot]
    size = ints[QSIZE, slot] - 1
    ints[QSIZE, slot] = size
    h = ints[QHEAP]
    if size > 0:
        h[off] = h[off + size]
        _q_sift_down(h, off, size, 0)


@_jit
def _q_discard(ints: np.ndarray, n: int, i: int) -> None:
    """Remove job ``i`` from the queue if it waits there (the reference's ``discard``)."""
    if ints[INQ, i] == 0:
        return
    ints[INQ, i] = 0
    slot = ints[SLOT, i]
    off = ints[QOFF, slot]
    size = ints[QSIZE, slot]
    h = ints[QHEAP]
    for p in range(size):
        if h[off + p] % n == i:
            size -= 1
            ints[QSIZE, slot] = size
            h[off + p] = h[off + size]
            # heapify the region again (a removal from inside a heap: rare)
            for q in range(size // 2 - 1, -1, -1):
                _q_sift_down(h, off, size, q)
            return


@_jit
def _q_best(ints: np.ndarray, slots: int, free: int) -> int:
    """The least key among the waiting jobs whose gang is at most ``free`` (-1: none)."""
    best = -1
    for slot in range(slots):
        if ints[QSIZE, slot] > 0 and ints[QGANG, slot] <= free:
            top = ints[QHEAP, ints[QOFF, slot]]
            if best < 0 or top < best:
                best = top
    return best


# -- the crossing heap ------------------------------------------------------------------------


@_jit
def _c_less(flts: np.ndarray, ints: np.ndarray, a: int, b: int) -> bool:
    ta = flts[CAT, a]
    tb = flts[CAT, b]
    return ta < tb or (ta == tb and ints[CCNT, a] < ints[CCNT, b])


@_jit
def _c_set(flts: np.ndarray, ints: np.ndarray, dst: int, at: float, cnt: int, job: int) -> None:
    flts[CAT, dst] = at
    ints[CCNT, dst] = cnt
    ints[CJOB, dst] = job


@_jit
def _c_sift_down(flts: np.ndarray, ints: np.ndarray, size: int, pos: int) -> None:
    at, cnt, job = flts[CAT, pos], ints[CCNT, pos], ints[CJOB, pos]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and _c_less(flts, ints, c + 1, c):
            c += 1
        tc = flts[CAT, c]
        if not (tc < at or (tc == at and ints[CCNT, c] < cnt)):
            break
        _c_set(flts, ints, pos, tc, ints[CCNT, c], ints[CJOB, c])
        pos = c
    _c_set(flts, ints, pos, at, cnt, job)


@_jit
def _c_compact(flts: np.ndarray, ints: np.ndarray, sc: np.ndarray) -> None:
    """Drop the stale entries (a job's older predictions) and heapify what is left."""
    size = sc[S_CSIZE]
    kept = 0
    for p in range(size):
        job = ints[CJOB, p]
        if ints[VER, job] == ints[CCNT, p]:
            _c_set(flts, ints, kept, flts[CAT, p], ints[CCNT, p], job)
            kept += 1
    sc[S_CSIZE] = kept
    for q in range(kept // 2 - 1, -1, -1):
        _c_sift_down(flts, ints, kept, q)


@_jit
def _c_push(
    flts: np.ndarray, ints: np.ndarray, sc: np.ndarray, at: float, cnt: int, job: int
) -> None:
    if sc[S_CSIZE] == flts.shape[1]:
        _c_compact(flts, ints, sc)
    pos = sc[S_CSIZE]
    sc[S_CSIZE] = pos + 1
    while pos > 0:
        parent = (pos - 1) >> 1
        tp = flts[CAT, parent]
        if not (at < tp or (at == tp and cnt < ints[CCNT, parent])):
            break
        _c_set(flts, ints, pos, tp, ints[CCNT, parent], ints[CJOB, parent])
        pos = parent
    _c_set(flts, ints, pos, at, cnt, job)


@_jit
def _c_pop(flts: np.ndarray, ints: np.ndarray, sc: np.ndarray) -> None:
    size = sc[S_CSIZE] - 1
    sc[S_CSIZE] = size
    if size > 0:
        _c_set(flts, ints, 0, flts[CAT, size], ints[CCNT, size], ints[CJOB, size])
        _c_sift_down(flts, ints, size, 0)


# -- keys, crossings and the sorted running jobs ----------------------------------------------


@_jit
def _full_key(ints: np.ndarray, flts: np.ndarray, th: np.ndarray, n: int, i: int, now: float):
    """Tiresias._full_key: ``(key, service, crossing)``, one of the last two NaN.

    A job granted at the last decision, short of its next threshold by the margin, takes the
    key (and crossing) it was granted with; any other its key from its service now.
    """
    if ints[STARTED, i] == 1:
        ints[STARTED, i] = 0
        at = flts[SAT, i]
        if at > now + _margin(now):
            return ints[SKEY, i], math.nan, at
    a = flts[SVC, i]
    q = np.searchsorted(th, a + TIME_TOL, side="right")
    return q * n + i, a, math.nan


@_jit
def _on_run(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, i: int, now: float,
    a: float, at: float,
) -> None:  # fmt: skip
    """Tiresias.on_run: predict the running job's next crossing (from ``a``, or ``at``)."""
    if at == at:
        if at == math.inf:
            ints[VER, i] = 0
            return
    else:
        q = np.searchsorted(th, a + TIME_TOL, side="right")
        if q >= th.shape[0]:
            ints[VER, i] = 0
            return
        at = now + (th[q] - a) / ints[GANG, i]
    cnt = sc[S_CCOUNTER] + 1
    sc[S_CCOUNTER] = cnt
    ints[VER, i] = cnt
    _c_push(flts, ints, sc, at, cnt, i)


@_jit
def _run_insert(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, i: int, key: int,
    now: float, a: float, at: float,
) -> None:  # fmt: skip
    """OrderWalk._run_insert with Tiresias.on_run."""
    r = sc[S_R]
    keys = ints[RKEY]
    p = np.searchsorted(keys[:r], key, side="left")
    for k in range(r, p, -1):
        keys[k] = keys[k - 1]
        ints[RJOB, k] = ints[RJOB, k - 1]
        ints[RGPU, k] = ints[RGPU, k - 1]
    keys[p] = key
    ints[RJOB, p] = i
    gang = ints[GANG, i]
    ints[RGPU, p] = gang
    sc[S_R] = r + 1
    sc[S_RTOTAL] += gang
    ints[KEYOF, i] = key
    _on_run(ints, flts, sc, th, i, now, a, at)


@_jit
def _run_remove(ints: np.ndarray, sc: np.ndarray, i: int) -> None:
    """OrderWalk._run_remove with Tiresias.on_stop."""
    key = ints[KEYOF, i]
    ints[KEYOF, i] = -1
    r = sc[S_R]
    keys = ints[RKEY]
    p = np.searchsorted(keys[:r], key, side="left")
    sc[S_RTOTAL] -= ints[RGPU, p]
    for k in range(p, r - 1):
        keys[k] = keys[k + 1]
        ints[RJOB, k] = ints[RJOB, k + 1]
        ints[RGPU, k] = ints[RGPU, k + 1]
    sc[S_R] = r - 1
    ints[VER, i] = 0


@_jit
def _sum_to(ints: np.ndarray, flts: np.ndarray, i: int, now: float) -> None:
    # the engine's sum: ``attained += gpus * (t - synced)`` at each decision point after a
    # positive step (a run's GPUs are its rigid gang)
    dt = now - flts[SYNCED, i]
    if dt > 0:
        flts[SVC, i] += ints[GANG, i] * dt
        flts[SYNCED, i] = now


@_jit
def reinsert(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, now: float, k: int
):
    """The reference's safety net: every running job out, ``IN[:k]`` (the engine's) in.

    Their services (``SVC``) are set, as read from the engine, before the call.
    """
    n = sc[S_N]
    while sc[S_R] > 0:
        _run_remove(ints, sc, ints[RJOB, 0])
    for p in range(k):
        i = ints[IN, p]
        flts[SYNCED, i] = now
        key, a, at = _full_key(ints, flts, th, n, i, now)
        _run_insert(ints, flts, sc, th, i, key, now, a, at)


# -- one decision -----------------------------------------------------------------------------


@_jit
def sync(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, now: float, n_fin: int,
    n_pend: int,
) -> None:  # fmt: skip
    """_sync_sorted: the finished jobs leave, the pending ones run or wait again."""
    n = sc[S_N]
    for k in range(n_fin):
        i = ints[IN, k]
        _q_discard(ints, n, i)
        if ints[KEYOF, i] >= 0:
            _run_remove(ints, sc, i)
    end = n_fin + n_pend
    # a running job the engine stopped (a re-granted spread gang it could not place) stopped
    # at the last decision: out before the sums
    for k in range(n_fin, end):
        i = ints[IN, k]
        if ints[INFLAG, k] == 0 and ints[KEYOF, i] >= 0:
            _run_remove(ints, sc, i)
    # the service of every running job at ``now``: those kept, then those started at the last
    # decision (summed from its time, set at their grant)
    for p in range(sc[S_R]):
        _sum_to(ints, flts, ints[RJOB, p], now)
    for k in range(n_fin, end):
        i = ints[IN, k]
        if ints[INFLAG, k] == 1 and ints[KEYOF, i] < 0:
            _sum_to(ints, flts, i, now)
    for k in range(n_fin, end):
        i = ints[IN, k]
        if ints[INFLAG, k] == 0:
            key, _, _ = _full_key(ints, flts, th, n, i, now)
            _q_push(ints, key, i)
        elif ints[KEYOF, i] < 0:
            key, a, at = _full_key(ints, flts, th, n, i, now)
            _run_insert(ints, flts, sc, th, i, key, now, a, at)


@_jit
def _rekey(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, now: float, start: int,
    n_arr: int,
) -> None:  # fmt: skip
    """_rekey_sorted: queue the arrivals; re-key the running jobs predicted to cross by now."""
    n = sc[S_N]
    for k in range(start, start + n_arr):
        i = ints[IN, k]
        key, _, _ = _full_key(ints, flts, th, n, i, now)
        _q_push(ints, key, i)
    limit = now + _margin(now)
    m = 0
    while sc[S_CSIZE] > 0 and flts[CAT, 0] <= limit:
        i = ints[CJOB, 0]
        v = ints[CCNT, 0]
        _c_pop(flts, ints, sc)
        if ints[VER, i] == v:
            ints[VER, i] = 0
            ints[TMP, m] = i
            m += 1
    for c in range(m):
        i = ints[TMP, c]
        if ints[KEYOF, i] >= 0:
            key, a, at = _full_key(ints, flts, th, n, i, now)
            if key != ints[KEYOF, i]:
                _run_remove(ints, sc, i)
                _run_insert(ints, flts, sc, th, i, key, now, a, at)
            else:
                _on_run(ints, flts, sc, th, i, now, a, at)


@_jit
def _merge(ints: np.ndarray, sc: np.ndarray):
    """_merge_sorted: ``(new, preempted, skipped)`` counts, the jobs in NEW, PRE and SKIP."""
    n = sc[S_N]
    free = sc[S_GPUS]
    r_n = sc[S_R]
    keys, gpus = ints[RKEY], ints[RGPU]
    prefix = ints[TMP]
    have_prefix = False
    n_new = n_pre = n_skip = 0
    r = 0
    head = -1
    head_gang = 0
    stale = True
    while True:
        while r < r_n and gpus[r] > free:
            ints[PRE, n_pre] = ints[RJOB, r]
            n_pre += 1
            r += 1
        if stale or head_gang > free:
            head = _q_best(ints, sc[S_SLOTS], free)
            head_gang = ints[GANG, head % n] if head >= 0 else 0
            stale = False
        if r < r_n:
            j = r_n if head < 0 else r + int(np.searchsorted(keys[r:r_n], head, side="right"))
            if j > r + 1:
                run = 0
                for k in range(r, j):
                    run += gpus[k]
                if run <= free:
                    free -= run
                    r = j
                    continue
                if not have_prefix:
                    prefix[0] = 0
                    for k in range(r_n):
                        prefix[k + 1] = prefix[k] + gpus[k]
                    have_prefix = True
                # the longest run from r that fits (gangs are positive: the sums increase)
                m = r + int(np.searchsorted(prefix[r : j + 1], prefix[r] + free, side="right")) - 1
                if m > r:
                    free -= prefix[m] - prefix[r]
                    r = m
                    continue
            if head < 0 or keys[r] <= head:
                i = ints[RJOB, r]
                r += 1
                g = ints[GANG, i]
                if free >= g:
                    free -= g
                else:
                    ints[PRE, n_pre] = i
                    n_pre += 1
                continue
        if head < 0:
            break
        # the queue's best job (it fits), the top of its heap
        i = head % n
        _q_pop_top(ints, i)
        stale = True
        if ints[RUNS, i] == 1:
            free -= head_gang
            ints[NEW, n_new] = i
            ints[NEWKEY, n_new] = head
            n_new += 1
        else:
            ints[SKIP, n_skip] = i
            n_skip += 1
    return n_new, n_pre, n_skip


@_jit
def _decision_at(now: float, wake: float) -> float:
    """Tiresias._decision_at, NaN for none."""
    if not (wake - wake == 0.0):
        return math.nan
    floor = now + TIME_TOL
    return wake if wake > floor else np.nextafter(floor, math.inf)


@_jit
def _after_next_arrival(arrivals: np.ndarray, now: float, t: float) -> bool:
    nxt = np.searchsorted(arrivals, now + TIME_TOL, side="right")
    return nxt < arrivals.shape[0] and t > arrivals[nxt]


@_jit
def _wake(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, arrivals: np.ndarray,
    now: float, n_new: int,
):  # fmt: skip
    """Tiresias._wake_sorted: the crossings of the new jobs and of the running ones nearest."""
    n = sc[S_N]
    n_th = th.shape[0]
    wake = math.inf
    for k in range(sc[S_STARTED]):
        ints[STARTED, ints[STLIST, k]] = 0
    for k in range(n_new):
        i = ints[NEW, k]
        a = flts[SVC, i]
        q = np.searchsorted(th, a + TIME_TOL, side="right")
        at = math.inf
        if q < n_th:
            at = now + (th[q] - a) / ints[GANG, i]
            if at < wake:
                wake = at
        ints[STARTED, i] = 1
        ints[SKEY, i] = q * n + i
        flts[SAT, i] = at
        flts[SYNCED, i] = now  # its run, if the engine places it, starts now
        ints[STLIST, k] = i
    sc[S_STARTED] = n_new
    while sc[S_CSIZE] > 0 and ints[VER, ints[CJOB, 0]] != ints[CCNT, 0]:
        _c_pop(flts, ints, sc)
    size = sc[S_CSIZE]
    if size == 0:
        return _decision_at(now, wake)
    first = flts[CAT, 0]
    margin = _margin(now)
    if _after_next_arrival(arrivals, now, first - 2.0 * margin):
        return _decision_at(now, first if first < wake else wake)
    limit = (first if first < wake else wake) + 2.0 * margin
    if first > limit:
        return _decision_at(now, wake)
    stack = ints[TMP]
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        p = stack[top]
        i = ints[CJOB, p]
        if ints[VER, i] == ints[CCNT, p]:
            a = flts[SVC, i]
            q = np.searchsorted(th, a + TIME_TOL, side="right")
            if q < n_th:
                at = now + (th[q] - a) / ints[GANG, i]
                if at < wake:
                    wake = at
        c = 2 * p + 1
        if c < size and flts[CAT, c] <= limit:
            stack[top] = c
            top += 1
        if c + 1 < size and flts[CAT, c + 1] <= limit:
            stack[top] = c + 1
            top += 1
    return _decision_at(now, wake)


@_jit
def decide(
    ints: np.ndarray, flts: np.ndarray, sc: np.ndarray, th: np.ndarray, arrivals: np.ndarray,
    now: float, n_fin: int, n_pend: int, n_arr: int, news: bool,
):  # fmt: skip
    """One decision of the sorted 2D-LAS walk: ``(new, preempted, skipped, wake-up)``.

    The inputs are in ``IN`` (``n_fin`` finished jobs, ``n_pend`` jobs granted at the last
    decision with ``INFLAG``, then ``n_arr`` arrived ones, whose ``SVC``, ``RUNS`` are set);
    ``news=False`` skips the finished and pending ones (the caller has brought the running
    jobs up to date itself). The outputs are in ``NEW``/``NEWKEY``, ``PRE`` and ``SKIP``;
    the wake-up is NaN for none.
    """
    n = sc[S_N]
    if news:
        sync(ints, flts, sc, th, now, n_fin, n_pend)
    _rekey(ints, flts, sc, th, now, n_fin + n_pend, n_arr)
    n_new, n_pre, n_skip = _merge(ints, sc)
    for k in range(n_pre):
        i = ints[PRE, k]
        _q_push(ints, ints[KEYOF, i], i)
    for k in range(n_skip):
        i = ints[SKIP, k]
        key, _, _ = _full_key(ints, flts, th, n, i, now)
        _q_push(ints, key, i)
    for k in range(n_pre):
        _run_remove(ints, sc, ints[PRE, k])
    wake = _wake(ints, flts, sc, th, arrivals, now, n_new)
    return n_new, n_pre, n_skip, wake
