r"""One-dimensional bin packing certificates: a lower bound met by a packing proves it optimal.

For the ``servers`` objective on identical servers with one resource of integer sizes, the
number of servers of any packing is an upper bound on the optimum, and a lower bound :math:`L`
that a packing meets proves that packing optimal with no branch-and-bound at all. For
instances of Falkenauer's uniform class the optimum almost always equals the continuous bound,
so this certificate usually closes the problem in well under a second; when it does not, the
caller falls back to the exact arc-flow model (:mod:`optsched.placement.servers`) with the best
packing found here as its upper bound.

Lower bound (Martello and Toth's :math:`L_2`)
    For sizes :math:`s_i` and capacity :math:`C`, and any :math:`0 \le K \le C/2`, let
    :math:`J_1 = \{i : s_i > C - K\}`, :math:`J_2 = \{i : C - K \ge s_i > C/2\}` and
    :math:`J_3 = \{i : C/2 \ge s_i \ge K\}`. No two items of :math:`J_1 \cup J_2` share a bin,
    no item of :math:`J_3` fits beside one of :math:`J_1`, and the items of :math:`J_3` that do
    not fit in the free space of the :math:`J_2` bins need new bins, so

    .. math::
        L(K) = |J_1| + |J_2| + \max\Bigl(0, \Bigl\lceil
            \frac{\sum_{J_3} s_i - (|J_2| C - \sum_{J_2} s_i)}{C} \Bigr\rceil\Bigr)

    is a lower bound for every :math:`K`; :math:`L_2 = \max_K L(K)` over :math:`K = 0` and the
    sizes :math:`\le C/2`. :math:`L(0) \ge \lceil \sum_i s_i / C \rceil`, the continuous bound.

Upper bound (minimum bin slack, then an arc-flow LP dive)
    *Minimum bin slack* (Gupta and Ho) fills one bin at a time: the largest remaining item, and
    beside it the subset of the remaining items that leaves the least free space (a subset-sum
    dynamic programme over the distinct sizes, exact since the sizes are integers). When it does
    not reach :math:`L`, a *dive* on the arc-flow LP relaxation (Valério de Carvalho) follows:
    solve the LP over the remaining items, decompose its flow into patterns (bin contents),
    fix :math:`\lfloor x_p \rfloor` copies of each pattern (or, when none has flow 1, one copy of
    the pattern of largest flow), and repeat on the items left, trying minimum bin slack on them
    before every LP. The dive stops, unsuccessful, as soon as the bins fixed plus the LP's
    rounded-up value exceed :math:`L`.

References
----------
S. Martello and P. Toth, "Lower bounds and reduction procedures for the bin packing problem",
Discrete Applied Mathematics 28, 1990.
J. N. D. Gupta and J. C. Ho, "A new heuristic algorithm for the one-dimensional bin-packing
problem", Production Planning & Control 10, 1999.
J. M. Valério de Carvalho, "Exact solution of bin-packing problems using column generation and
branch-and-bound", Annals of Operations Research 86, 1999.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.tolerances import INTEGRALITY_TOL

__all__ = [
    "Certificate",
    "arcflow_dive",
    "certify",
    "l2_bound",
    "minimum_bin_slack",
]


def _check(sizes: Sequence[int], capacity: int) -> list[int]:
    if capacity < 1:
        raise InvalidInstanceError("capacity", f"must be a positive integer, got {capacity}")
    out = [int(s) for s in sizes]
    bad = [s for s in out if not 0 < s <= capacity]
    if bad:
        raise InvalidInstanceError("sizes", f"every size must be in 1..{capacity}, got {bad[0]}")
    return out


def l2_bound(sizes: Sequence[int], capacity: int) -> int:
    r"""Martello and Toth's lower bound :math:`L_2` on the bins holding ``sizes`` (module notes).

    Parameters
    ----------
    sizes : sequence of int
        Item sizes, each in ``1..capacity``.
    capacity : int
        Bin capacity.

    Returns
    -------
    int
        :math:`\max_K L(K)`, at least the continuous bound; 0 for no items.

    Raises
    ------
    InvalidInstanceError
        A size out of range (field ``sizes``) or a capacity below 1.

    Examples
    --------
    >>> l2_bound([60, 60, 60, 30], 100)  # three items over C/2 need three bins
    3
    >>> l2_bound([50, 50, 50, 50], 100)
    2
    """
    s = np.sort(np.asarray(_check(sizes, capacity), dtype=np.int64))
    if s.size == 0:
        return 0
    c = capacity
    best = 0
    for k in sorted({0, *(int(v) for v in s if 2 * v <= c)}):
        j1 = s > c - k
        j2 = (s <= c - k) & (2 * s > c)
        j3 = (2 * s <= c) & (s >= k)
        n1, n2 = int(j1.sum()), int(j2.sum())
        free = n2 * c - int(s[j2].sum())
        extra = int(s[j3].sum()) - free
        best = max(best, n1 + n2 + max(0, -(-extra // c)))
    return best


def _fill(counts: dict[int, int], room: int) -> list[int]:
    """Sizes of a sub-multiset of ``counts`` with the largest total not above ``room``."""
    # reach[v] = (previous total, size added): the subset-sum table over item copies, largest
    # sizes first so that ties keep few, large items (they are the hard ones to place later).
    reach: dict[int, tuple[int, int] | None] = {0: None}
    for size in sorted(counts, reverse=True):
        for _ in range(counts[size]):
            new = {}
            for v in reach:
                w = v + size
                if w <= room and w not in reach and w not in new:
                    new[w] = (v, size)
            if not new:
                break
            reach.update(new)
            if room in reach:
                break
        if room in reach:
            break
    v = max(reach)
    out = []
    step = reach[v]
    while step is not None:
        v, size = step
        out.append(size)
        step = reach[v]
    return out


def minimum_bin_slack(sizes: Sequence[int], capacity: int) -> list[list[int]]:
    """Gupta and Ho's minimum-bin-slack packing of ``sizes`` (module notes).

    Returns
    -------
    list of list of int
        The bins, each a list of sizes (largest first in the order filled).

    Raises
    ------
    InvalidInstanceError
        A size out of range or a capacity below 1.

    Examples
    --------
    >>> minimum_bin_slack([70, 50, 40, 30, 10], 100)
    [[70, 30], [50, 10, 40]]
    """
    counts = Counter(_check(sizes, capacity))
    bins = []
    while counts:
        first = max(counts)
        counts[first] -= 1
        content = [first, *_fill(+counts, capacity - first)]
        counts.subtract(content[1:])
        counts = +counts
        bins.append(content)
    return bins


def _arcflow_lp(
    counts: dict[int, int], capacity: int
) -> tuple[float, list[tuple[float, list[int]]]]:
    """Value of the arc-flow LP over ``counts`` and its flow decomposed into patterns."""
    import scipy.sparse as sp

    from optsched.placement.arcflow import arcflow_graph
    from optsched.solvers import LinearProgram, solve_matrix

    sizes = sorted(counts, reverse=True)
    built = arcflow_graph(
        np.array([float(capacity)]),
        np.array(sizes, dtype=np.float64).reshape(-1, 1),
        [counts[s] for s in sizes],
        max_arcs=10**9,
    )
    assert built is not None  # no arc budget
    nodes, arcs = built
    n_nodes, n_arcs = len(nodes), len(arcs)
    # Columns: item arcs, one loss arc per node (to the sink), then z (bins used).
    z = n_arcs + n_nodes
    rows, cols, vals = [], [], []
    for a, (tail, head, k) in enumerate(arcs):
        rows += [tail, head, n_nodes + k]
        cols += [a, a, a]
        vals += [1.0, -1.0, 1.0]
    rows += [*range(n_nodes), 0]
    cols += [*range(n_arcs, n_arcs + n_nodes), z]
    vals += [1.0] * n_nodes + [-1.0]
    m = n_nodes + len(sizes)
    a = sp.csc_array((vals, (rows, cols)), shape=(m, z + 1))
    need = np.array([counts[s] for s in sizes], dtype=np.float64)
    lower = np.concatenate([np.zeros(n_nodes), need])
    upper = np.concatenate([np.zeros(n_nodes), np.full(len(sizes), np.inf)])
    cost = np.zeros(z + 1)
    cost[z] = 1.0
    sol = solve_matrix(LinearProgram(cost, a, lower, upper, sense="min"))
    assert sol.x is not None
    x = sol.x
    # Flow decomposition: walk from the empty bin along arcs with flow left to a loss arc;
    # the walk's bottleneck is one pattern's flow. Every walk zeroes one arc or loss arc.
    flow = {i: float(x[i]) for i in range(n_arcs) if x[i] > INTEGRALITY_TOL}
    loss = {v: float(x[n_arcs + v]) for v in range(n_nodes) if x[n_arcs + v] > INTEGRALITY_TOL}
    out: dict[int, list[int]] = {}
    for i, (tail, _, _) in enumerate(arcs):
        if i in flow:
            out.setdefault(tail, []).append(i)
    patterns = []
    while True:
        node, path, amount = 0, [], math.inf
        while True:
            live = [i for i in out.get(node, []) if flow[i] > INTEGRALITY_TOL]
            if live:
                i = max(live, key=lambda i: flow[i])
                path.append(i)
                amount = min(amount, flow[i])
                node = arcs[i][1]
                continue
            amount = min(amount, loss.get(node, 0.0))
            break
        if not path or amount <= INTEGRALITY_TOL:
            break
        for i in path:
            flow[i] -= amount
        loss[node] -= amount
        patterns.append((amount, [sizes[arcs[i][2]] for i in path]))
    return float(sol.result.objective or 0.0), patterns


def _ceil(value: float) -> int:
    """The least integer not below an LP bound computed to within the integrality tolerance."""
    return math.ceil(value - INTEGRALITY_TOL)


def _take(counts: Counter[int], pattern: list[int]) -> list[int]:
    """Remove ``pattern``'s items still in ``counts`` (the LP may over-cover); return them."""
    taken = Counter[int]()
    for size in pattern:
        if counts[size] - taken[size] > 0:
            taken[size] += 1
    counts.subtract(taken)
    return list(taken.elements())


def arcflow_dive(
    sizes: Sequence[int], capacity: int, target: int
) -> tuple[list[list[int]], float | None]:
    """Pack ``sizes`` into ``target`` bins by an arc-flow LP dive (module notes), if it can.

    ``target`` is raised to the rounded-up LP bound over all items when that is higher.

    Returns
    -------
    bins : list of list of int
        The best packing found (sizes per bin): ``target`` bins or fewer when the dive succeeds,
        otherwise the fewest it saw (bins fixed plus minimum bin slack on the rest).
    root_lp : float or None
        The LP value over all items (``None`` when minimum bin slack alone reached ``target``).

    Raises
    ------
    InvalidInstanceError
        A size out of range or a capacity below 1.
    """
    counts = Counter(_check(sizes, capacity))
    fixed: list[list[int]] = []
    best: list[list[int]] | None = None
    root: float | None = None
    while +counts:
        rest = minimum_bin_slack(list((+counts).elements()), capacity)
        if best is None or len(fixed) + len(rest) < len(best):
            best = fixed + rest
        if len(best) <= target:
            return best, root
        value, patterns = _arcflow_lp(+counts, capacity)
        if root is None:
            # The LP over all items bounds the optimum too, often above L2: aim for it.
            root = value
            target = max(target, _ceil(value))
            if len(best) <= target:
                return best, root
        if len(fixed) + _ceil(value) > target:
            break
        before = len(fixed)
        for amount, pattern in patterns:
            for _ in range(math.floor(amount + INTEGRALITY_TOL)):
                content = _take(counts, pattern)
                if content:
                    fixed.append(content)
        if len(fixed) == before:
            # No pattern has a whole unit of flow: round the largest up.
            fixed.append(_take(counts, max(patterns, key=lambda p: p[0])[1]))
        counts = +counts
    if not +counts and (best is None or len(fixed) < len(best)):
        best = fixed
    assert best is not None
    return best, root


@dataclass(frozen=True)
class Certificate:
    """A lower bound and the best packing found; optimal when they meet.

    Attributes
    ----------
    lower : int
        :math:`L_2`, or the rounded-up arc-flow LP bound when the dive solved it and it is
        higher (module notes).
    l2 : int
        :math:`L_2` alone.
    bins : list of list of int
        Item indices per bin.
    method : str
        What found the packing: ``"minimum-bin-slack"`` or ``"arc-flow dive"``.
    root_lp : float or None
        The arc-flow LP bound over all items, when the dive solved it.
    """

    lower: int
    l2: int
    bins: list[list[int]]
    method: str
    root_lp: float | None

    @property
    def proven(self) -> bool:
        """Whether the packing meets the lower bound (so it is optimal)."""
        return len(self.bins) <= self.lower


def certify(sizes: Sequence[int], capacity: int) -> Certificate:
    """Lower bound :math:`L_2` and the best packing of ``sizes`` found by the module's heuristics.

    Minimum bin slack first; the arc-flow dive only when it misses :math:`L_2`.

    Raises
    ------
    InvalidInstanceError
        A size out of range or a capacity below 1.

    Examples
    --------
    >>> c = certify([70, 50, 40, 30, 10], 100)
    >>> c.lower, c.bins, c.proven
    (2, [[0, 3], [1, 2, 4]], True)
    """
    items = _check(sizes, capacity)
    l2 = lower = l2_bound(items, capacity)
    by_size = minimum_bin_slack(items, capacity)
    method, root = "minimum-bin-slack", None
    if len(by_size) > lower:
        dived, root = arcflow_dive(items, capacity, lower)
        if root is not None:
            lower = max(lower, _ceil(root))
        if len(dived) < len(by_size):
            by_size, method = dived, "arc-flow dive"
    # Sizes back to item indices: equal sizes are interchangeable.
    queues: dict[int, list[int]] = {}
    for i in sorted(range(len(items)), reverse=True):
        queues.setdefault(items[i], []).append(i)
    bins = [sorted(queues[s].pop() for s in content) for content in by_size]
    return Certificate(lower, l2, bins, method, root)
