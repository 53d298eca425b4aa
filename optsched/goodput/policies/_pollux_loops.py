"""The loops of Pollux's compiled search (:mod:`.pollux_kernels`), compiled by Numba.

Each loop restates one NumPy operation of :mod:`optsched.goodput.policies.pollux` or
:mod:`optsched.goodput.policies.pollux_nsga` element by element, with the same draws in the
same order (skipped draws noted where they are). ``limits`` is
``[gpus_per_node, max_job_nodes, pop_size, max_matings]``; ``st`` the generator state of
:mod:`.pollux_rng`.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from optsched.goodput.policies.pollux_rng import (
    advance,
    bounded,
    draw32,
    load_state,
    next_double,
    permutation,
    skip,
    step,
    store_state,
    to_double,
)

__all__ = [
    "features",
    "front_order",
    "load_state",
    "mutate",
    "offspring",
    "repair",
    "store_state",
    "survive",
    "unique",
]

#: The NumPy path's constants (:mod:`.pollux`, :mod:`.pollux_nsga`), restated for the loops.
_RESET, _THIN_ROW, _THIN_ENTRY, _CROSS = 0.1, 0.1, 0.1, 0.9
_DUPLICATE = 1e-24  # pollux_nsga.DUPLICATE_DISTANCE
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


_njit = numba.njit(cache=True, nogil=True)


@_njit
def features(s: Any, prev: Any, grid: Any) -> Any:
    """Per child: nodes and GPUs of every job, whether its row changed, and the nodes used.

    Also each job's speedup read from ``grid`` (``round_model.speedup_lookup``'s table) and whether
    any was missing there (NaN or outside it), for the caller to compute.
    """
    c_, j_, n_ = s.shape
    speedups = np.empty((c_, j_))
    missing = False
    nodes = np.zeros((c_, j_), np.int64)
    replicas = np.zeros((c_, j_), np.int64)
    changed = np.zeros((c_, j_), np.bool_)
    active = np.zeros(c_, np.int64)
    for c in range(c_):
        used = 0
        for n in range(n_):
            tot = 0
            for j in range(j_):
                tot += s[c, j, n]
            if tot != 0:
                used += 1
        active[c] = used
        for j in range(j_):
            for n in range(n_):
                v = s[c, j, n]
                if v != 0:
                    nodes[c, j] += 1
                replicas[c, j] += v
                if v != prev[j, n]:
                    changed[c, j] = True
            k, r = nodes[c, j], replicas[c, j]
            if k < grid.shape[1] and r < grid.shape[2]:
                speedups[c, j] = grid[j, k, r]
                if np.isnan(speedups[c, j]):
                    missing = True
            else:
                missing = True
    return nodes, replicas, changed, active, speedups, missing


@_njit
def _interference(s: Any, c: int, spanning: Any) -> None:
    # from the second spanning job on a node on, every job loses that node (spanning as the
    # state was before the cut: NumPy's cumulative count over the jobs)
    j_, n_ = s.shape[1], s.shape[2]
    for j in range(j_):
        span = 0
        for n in range(n_):
            if s[c, j, n] != 0:
                span += 1
        spanning[j] = span > 1
    for n in range(n_):
        count = 0
        for j in range(j_):
            if spanning[j] and s[c, j, n] > 0:
                count += 1
            if count > 1:
                s[c, j, n] = 0


@_njit
def _cap_row(s: Any, c: int, j: int, keys: Any, order: Any, top: int, mjn: int) -> None:
    # the row's nodes in the order of their draws ``keys`` (a stable insertion sort): the
    # first ``top`` GPUs, then the first ``mjn`` nodes, are kept
    n_ = s.shape[2]
    for n in range(n_):
        order[n] = n
    for a in range(1, n_):
        o = order[a]
        b = a - 1
        while b >= 0 and keys[order[b]] > keys[o]:
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = o
    cum = was = cnt = cntw = 0
    for i in range(n_):
        n = order[i]
        cum += s[c, j, n]
        now = min(cum, top)
        v = now - was
        was = now
        if v > 0:
            cnt += 1
        capped = min(cnt, mjn)
        if capped == cntw:
            v = 0
        cntw = capped
        s[c, j, n] = v


@_njit
def _capacity(s: Any, c: int, g: int, min_r: Any) -> None:
    # jobs in order keep GPUs until the node is full; a row below its minimum is emptied
    j_, n_ = s.shape[1], s.shape[2]
    for n in range(n_):
        cum = was = 0
        for j in range(j_):
            cum += s[c, j, n]
            now = min(cum, g)
            s[c, j, n] = now - was
            was = now
    for j in range(j_):
        tot = 0
        for n in range(n_):
            tot += s[c, j, n]
        if tot < min_r[j]:
            s[c, j, :] = 0


@_njit
def repair(s: Any, st: Any, max_r: Any, min_r: Any, limits: Any) -> None:
    """``pollux._repair`` in place: interference, max_replicas and max_job_nodes, capacity, min."""
    g, mjn = limits[0], limits[1]
    c_, j_, n_ = s.shape
    keys = np.empty(n_)
    order = np.empty(n_, np.int64)
    spanning = np.empty(j_, np.bool_)
    for c in range(c_):
        _interference(s, c, spanning)
    pending = 0
    for c in range(c_):
        for j in range(j_):
            tot = nnz = 0
            for n in range(n_):
                tot += s[c, j, n]
                if s[c, j, n] > 0:
                    nnz += 1
            if tot <= max_r[j] and nnz <= mjn:
                pending += n_  # every order of the nodes keeps this row: its draws are skipped
                continue
            skip(st, pending)
            pending = 0
            for n in range(n_):
                keys[n] = next_double(st)
            _cap_row(s, c, j, keys, order, max_r[j], mjn)
    skip(st, pending)
    for c in range(c_):
        _capacity(s, c, g, min_r)


@_njit
def _thin(s: Any, st: Any, prev: Any) -> None:
    # reset rows to the previous allocation, then thin rows entry by entry
    c_, j_, n_ = s.shape
    for c in range(c_):
        for j in range(j_):
            if next_double(st) < _RESET:
                s[c, j, :] = prev[j, :]
    thin = np.empty((c_, j_), np.bool_)
    for c in range(c_):
        for j in range(j_):
            thin[c, j] = next_double(st) < _THIN_ROW
    pending = 0
    for c in range(c_):
        for j in range(j_):
            if not thin[c, j]:
                pending += n_  # threshold 0: no draw is below it
                continue
            skip(st, pending)
            pending = 0
            for n in range(n_):
                if next_double(st) < _THIN_ENTRY:
                    s[c, j, n] = 0
    skip(st, pending)


@_njit
def mutate(s: Any, st: Any, prev: Any, g: int) -> None:
    """``pollux._mutate`` in place: reset, thin, then grow on nodes with a free GPU."""
    _thin(s, st, prev)
    grow = _grow(s, st, g)
    _raise(s, grow, st, g)


@_njit
def _grow(s: Any, st: Any, g: int) -> Any:
    # which entries grow: one draw per entry, in order, against q1 + q2 - q1 q2; a node without
    # a free GPU has probability 0 and its draws are skipped (the state is held in variables)
    c_, j_, n_ = s.shape
    hi, lo, ih, il = st[0], st[1], st[2], st[3]
    grow = np.zeros(s.shape, np.bool_)
    q1 = 1.0 / max(float(j_), 1.0)
    frees = np.empty(n_, np.int64)
    owns = np.empty(n_, np.int64)
    pending = 0
    for c in range(c_):
        for n in range(n_):
            tot = own = 0
            for j in range(j_):
                tot += s[c, j, n]
                if s[c, j, n] > 0:
                    own += 1
            frees[n] = g - tot
            owns[n] = own
        for j in range(j_):
            for n in range(n_):
                if frees[n] < 1:
                    pending += 1
                    continue
                if pending:
                    hi, lo = advance(hi, lo, ih, il, pending)
                    pending = 0
                q2 = 1.0 / max(float(owns[n]), 1.0) if s[c, j, n] > 0 else 0.0
                out, hi, lo = step(hi, lo, ih, il)
                grow[c, j, n] = to_double(out) < q1 + q2 - q1 * q2
    st[0], st[1] = advance(hi, lo, ih, il, pending)
    return grow


@_njit
def _raise(s: Any, grow: Any, st: Any, g: int) -> None:
    # Generator.integers(s, g + 1) entry by entry (Lemire on 32-bit draws, none when s = g);
    # kept where the entry grows
    c_, j_, n_ = s.shape
    hi, lo, ih, il, has, buf = st[0], st[1], st[2], st[3], st[4], st[5]
    for c in range(c_):
        for j in range(j_):
            for n in range(n_):
                v = s[c, j, n]
                r = g - v
                if r == 0:
                    continue
                x, hi, lo, has, buf = draw32(hi, lo, ih, il, has, buf)
                excl = np.uint64(r + 1)
                m = x * excl
                left = m & _M32
                if left < excl:
                    threshold = (_M32 - np.uint64(r)) % excl
                    while left < threshold:
                        x, hi, lo, has, buf = draw32(hi, lo, ih, il, has, buf)
                        m = x * excl
                        left = m & _M32
                if grow[c, j, n]:
                    s[c, j, n] = v + np.int64(m >> _S32)
    st[0], st[1], st[4], st[5] = hi, lo, has, buf


@_njit
def _fronts_two(f: Any) -> Any:
    # two objectives: in lexicographic order, a point joins the first front whose last member
    # (the one of least second objective) does not dominate it; whether a front holds a
    # dominator is monotone over the fronts, so the front is found by bisection
    p_ = f.shape[0]
    order = np.argsort(f[:, 1], kind="mergesort")
    order = order[np.argsort(f[order, 0], kind="mergesort")]
    last0 = np.empty(p_)
    last1 = np.empty(p_)
    rank = np.empty(p_, np.int64)
    nf = 0
    for i in order:
        a0, a1 = f[i, 0], f[i, 1]
        lo, hi = 0, nf
        while lo < hi:
            mid = (lo + hi) // 2
            if last1[mid] < a1 or (last1[mid] == a1 and last0[mid] < a0):
                lo = mid + 1
            else:
                hi = mid
        rank[i] = lo
        last0[lo], last1[lo] = a0, a1
        if lo == nf:
            nf += 1
    return rank, nf


@_njit
def _fronts_pairs(f: Any) -> Any:
    # non_dominated_fronts by comparing every pair, then peeling the fronts off
    p_ = f.shape[0]
    m_ = f.shape[1]
    dom = np.zeros((p_, p_), np.bool_)
    count = np.zeros(p_, np.int64)
    for i in range(p_):
        for k in range(p_):
            le = True
            lt = False
            for o in range(m_):
                if not f[i, o] <= f[k, o]:
                    le = False
                if f[i, o] < f[k, o]:
                    lt = True
            if le and lt:
                dom[i, k] = True
                count[k] += 1
    rank = np.full(p_, -1, np.int64)
    r = 0
    left = p_
    while left > 0:
        cur = np.flatnonzero((count == 0) & (rank < 0))
        if cur.size == 0:
            break
        for q in cur:
            rank[q] = r
        for q in cur:
            for k in range(p_):
                if dom[q, k]:
                    count[k] -= 1
        left -= cur.size
        r += 1
    return rank, r


@_njit
def fronts(f: Any) -> Any:
    r"""``non_dominated_fronts`` as a rank per row (fronts in increasing index) and their count.

    Two finite objectives (Pollux's) take :math:`O(P \log P)`; otherwise every pair is compared.
    """
    if f.shape[1] == 2 and np.isfinite(f).all():
        return _fronts_two(f)
    return _fronts_pairs(f)


@_njit
def front_order(f: Any) -> Any:
    """The fronts in ``non_dominated_fronts``' (pymoo's) order: members, and each front's start.

    Front 0 in increasing index; each later member by the position of its last dominator in
    the previous front, then by index.
    """
    rank, nf = fronts(f)
    p_, m_ = f.shape
    members = np.empty(p_, np.int64)
    starts = np.zeros(nf + 1, np.int64)
    for i in range(p_):
        starts[rank[i] + 1] += 1
    for r in range(nf):
        starts[r + 1] += starts[r]
    got = 0
    for i in range(p_):
        if rank[i] == 0:
            members[got] = i
            got += 1
    for r in range(1, nf):
        lo, hi = starts[r - 1], starts[r]
        idx = np.flatnonzero(rank == r)
        key = np.empty(idx.size, np.int64)
        for q in range(idx.size):
            j = idx[q]
            last = -1
            for pos in range(lo, hi):
                i = members[pos]
                le = True
                lt = False
                for o in range(m_):
                    if not f[i, o] <= f[j, o]:
                        le = False
                    if f[i, o] < f[j, o]:
                        lt = True
                if le and lt:
                    last = pos
            key[q] = last
        order = np.argsort(key, kind="mergesort")
        for q in range(idx.size):
            members[hi + q] = idx[order[q]]
    return members, starts


@_njit
def crowding(f: Any, idx: Any) -> Any:
    """``crowding_distance`` of the rows ``idx`` of ``f`` (one front; pymoo's duplicates rule)."""
    n_ = idx.size
    m_ = f.shape[1]
    out = np.zeros(n_)
    if n_ <= 2:
        out[:] = np.inf
        return out
    uniq = np.empty(n_, np.int64)  # positions in ``idx`` of the first occurrences
    nu = 0
    for i in range(n_):
        first = True
        for k in range(i):
            s = 0.0
            for o in range(m_):
                d = f[idx[i], o] - f[idx[k], o]
                s += d * d
            if np.sqrt(s) < _DUPLICATE:
                first = False
                break
        if first:
            uniq[nu] = i
            nu += 1
    cd = np.zeros(nu)
    col = np.empty(nu)
    for o in range(m_):
        for u in range(nu):
            col[u] = f[idx[uniq[u]], o]
        order = np.argsort(col, kind="mergesort")
        span = col[order[-1]] - col[order[0]]
        if not span > 0:  # the NumPy path's skipped objective: 0 for every point
            continue
        for u in range(nu):
            last = np.inf if u == 0 else (col[order[u]] - col[order[u - 1]]) / span
            nxt = np.inf if u == nu - 1 else (col[order[u + 1]] - col[order[u]]) / span
            cd[order[u]] += last + nxt
    for u in range(nu):
        out[uniq[u]] = cd[u] / m_
    return out


@_njit
def survive(f: Any, size: int, st: Any) -> Any:
    """``pollux_nsga._survive``: the indices kept by rank and crowding, and their crowding."""
    members, starts = front_order(f)
    room = min(size, f.shape[0])
    kept = np.empty(room, np.int64)
    crowd = np.empty(room)
    got = 0
    for r in range(starts.size - 1):
        if got >= room:
            break
        idx = members[starts[r] : starts[r + 1]]
        cd = crowding(f, idx)
        if got + idx.size <= room:
            kept[got : got + idx.size] = idx
            crowd[got : got + idx.size] = cd
            got += idx.size
            continue
        perm = permutation(st, idx.size)
        permuted = np.empty(idx.size)
        for i in range(idx.size):
            permuted[i] = cd[perm[i]]
        order = np.argsort(permuted, kind="mergesort")
        for i in range(room - got):  # descending: from the end of the ascending order
            pos = perm[order[idx.size - 1 - i]]
            kept[got + i] = idx[pos]
            crowd[got + i] = cd[pos]
        got = room
    return kept[:got], crowd[:got]


@_njit
def row_hash(s: Any, c: int) -> Any:
    """FNV-1a hash of state ``s[c]``, as a non-negative int64."""
    h = np.uint64(1469598103934665603)
    for j in range(s.shape[1]):
        for n in range(s.shape[2]):
            h = (h ^ np.uint64(s[c, j, n])) * np.uint64(1099511628211)
    return np.int64(h >> np.uint64(1))


@_njit
def insert(table: Any, store: Any, used: Any, s: Any, c: int) -> bool:
    """Add state ``s[c]`` to the set; ``True`` when it was not in it (``_unique_new``)."""
    # open addressing on the states' hashes; True when the state is new (then stored)
    mask = table.size - 1
    h = row_hash(s, c) & mask
    while table[h] >= 0:
        same = True
        old = store[table[h]]
        for j in range(s.shape[1]):
            for n in range(s.shape[2]):
                if old[j, n] != s[c, j, n]:
                    same = False
                    break
            if not same:
                break
        if same:
            return False
        h = (h + 1) & mask
    table[h] = used[0]
    store[used[0]] = s[c]
    used[0] += 1
    return True


@_njit
def make_seen(pop: Any, extra: int) -> Any:
    """An empty state set with room for ``pop`` and ``extra`` more states."""
    cap = pop.shape[0] + extra
    size = 1
    while size < 2 * cap:
        size *= 2
    table = np.full(size, -1, np.int64)
    store = np.empty((cap, pop.shape[1], pop.shape[2]), np.int64)
    used = np.zeros(1, np.int64)
    return table, store, used


@_njit
def unique(pop: Any) -> Any:
    """The states of ``pop`` without repeats, first occurrences in order."""
    table, store, used = make_seen(pop, 0)
    keep = np.zeros(pop.shape[0], np.bool_)
    for c in range(pop.shape[0]):
        keep[c] = insert(table, store, used, pop, c)
    return pop[keep]


@_njit
def tournament(f: Any, crowd: Any, count: int, st: Any) -> Any:
    """``pollux_nsga._tournament``: ``count`` winners of binary tournaments."""
    n_ = f.shape[0]
    need = 2 * count
    reps = -(-need // n_)
    perms = np.empty(reps * n_, np.int64)
    for r in range(reps):
        perms[r * n_ : (r + 1) * n_] = permutation(st, n_)
    win = np.empty(count, np.int64)
    coin = np.empty(count)
    for i in range(count):
        coin[i] = next_double(st)
    for i in range(count):
        a, b = perms[2 * i], perms[2 * i + 1]
        a_le = b_le = True
        a_lt = b_lt = False
        for o in range(f.shape[1]):
            if not f[a, o] <= f[b, o]:
                a_le = False
            if not f[b, o] <= f[a, o]:
                b_le = False
            if f[a, o] < f[b, o]:
                a_lt = True
            if f[b, o] < f[a, o]:
                b_lt = True
        if a_le and a_lt:
            pick = True
        elif b_le and b_lt:
            pick = False
        elif crowd[a] != crowd[b]:
            pick = crowd[a] > crowd[b]
        else:
            pick = coin[i] < 0.5
        win[i] = a if pick else b
    return win


@_njit
def offspring(pop: Any, f: Any, crowd: Any, st: Any, prev: Any, max_r: Any, min_r: Any,
              limits: Any) -> Any:  # fmt: skip
    """``pollux_nsga._offspring`` with Pollux's operators: new children, at most pop_size.

    ``crowd``: each member's crowding distance from the survival that kept it.
    """
    g, size, matings = limits[0], limits[2], limits[3]
    p_, j_, n_ = pop.shape
    table, store, used = make_seen(pop, 2 * size + 2)
    for c in range(p_):
        insert(table, store, used, pop, c)
    out = np.empty((size, j_, n_), np.int64)
    total = 0
    for _ in range(matings):
        if total >= size:
            break
        pairs = -(-(size - total) // 2)
        win = tournament(f, crowd, 2 * pairs, st)
        kids = np.empty((2 * pairs, j_, n_), np.int64)
        points = np.empty(pairs, np.int64)
        for i in range(pairs):
            points[i] = bounded(st, j_ - 1)
        for i in range(pairs):
            cross = next_double(st) < _CROSS
            a, b = win[2 * i], win[2 * i + 1]
            for j in range(j_):
                swap = cross and j < points[i]
                kids[i, j] = pop[b, j] if swap else pop[a, j]
                kids[pairs + i, j] = pop[a, j] if swap else pop[b, j]
        mutate(kids, st, prev, g)
        repair(kids, st, max_r, min_r, limits)
        new = np.zeros(2 * pairs, np.int64)
        found = 0
        for c in range(2 * pairs):
            if insert(table, store, used, kids, c):
                new[found] = c
                found += 1
        for i in range(min(found, size - total)):  # the first ones, as pymoo
            out[total + i] = kids[new[i]]
        total = min(total + found, size)
    return out[:total]
