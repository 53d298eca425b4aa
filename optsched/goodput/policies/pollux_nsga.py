r"""NSGA-II over integer matrices, as Pollux's policy runs it (Deb et al., 2002).

The artifact's policy runs pymoo 0.4's ``NSGA2`` with its own crossover, mutation and repair;
this module is that loop, written for optsched (pymoo is not a dependency), with every random
draw taken from one :class:`numpy.random.Generator` so that a seed fixes the run:

1. the initial population (the carried-over states) is repaired and its duplicates dropped;
2. each generation, parents are picked by **binary tournament** (the dominating one wins, else
   the larger crowding distance, else a coin), each pair is crossed with probability
   :data:`CROSSOVER_PROB`, every child is mutated and repaired, and children equal to a member
   or to each other are dropped, mating again until ``pop_size`` new children are found (at most
   :data:`MAX_MATINGS` times);
3. parents and children are cut back to ``pop_size`` by **rank and crowding**: whole
   non-dominated fronts in order, the last one by decreasing crowding distance (random ties).

Objectives are minimized. A generation costs :math:`O(P^2)` for the non-dominated sort of
:math:`P \le 2\cdot\text{pop\_size}` points plus the operators' cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "CROSSOVER_PROB",
    "MAX_MATINGS",
    "Operators",
    "crowding_distance",
    "non_dominated_fronts",
    "nsga2",
]

#: Probability that a selected pair is crossed (pymoo's default; otherwise the children are
#: copies of the parents).
CROSSOVER_PROB = 0.9
#: Matings tried per generation to find enough new children (pymoo's ``n_max_iterations``).
MAX_MATINGS = 100

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Operators:
    """The problem's side of the search, on populations of shape ``(P, *shape)``.

    Attributes
    ----------
    evaluate : callable
        ``states -> F`` of shape ``(P, n_obj)``, minimized.
    crossover : callable
        ``(parents0, parents1, rng) -> (children0, children1)``.
    mutate : callable
        ``(states, rng) -> states``.
    repair : callable
        ``(states, rng) -> states``, feasible.
    """

    evaluate: Callable[[IntArray], FloatArray]
    crossover: Callable[[IntArray, IntArray, np.random.Generator], tuple[IntArray, IntArray]]
    mutate: Callable[[IntArray, np.random.Generator], IntArray]
    repair: Callable[[IntArray, np.random.Generator], IntArray]


def _dominance(f: FloatArray) -> npt.NDArray[np.bool_]:
    """``d[i, k]``: row ``i`` of ``f`` dominates row ``k`` (no worse everywhere, better somewhere).

    One objective at a time on ``(n, n)`` matrices: the same result as reducing an
    ``(n, n, m)`` comparison over its last axis, without the reduction's per-call overhead,
    which dominated a Pollux replay's time (a generation sorts twice, ``m = 2``).
    """
    le = np.ones((len(f), len(f)), dtype=bool)
    lt = np.zeros((len(f), len(f)), dtype=bool)
    for col in f.T:
        le &= col[:, None] <= col[None, :]
        lt |= col[:, None] < col[None, :]
    return le & lt


def non_dominated_fronts(f: FloatArray) -> list[IntArray]:
    """Indices of each non-dominated front of ``f`` (rows minimized), best front first."""
    n = len(f)
    if n == 0:
        return []
    dominates = _dominance(f)  # dominates[i, k]: i dominates k
    count = dominates.sum(axis=0)
    fronts = []
    current = np.flatnonzero(count == 0)
    while current.size:
        fronts.append(current)
        count = count - dominates[current].sum(axis=0)
        count[np.concatenate(fronts)] = -1
        current = np.flatnonzero(count == 0)
    return fronts


def crowding_distance(f: FloatArray) -> FloatArray:
    """Crowding distance of the points of one front.

    The extremes of each objective are infinite; the others get the mean over objectives of the
    normalized distance between their two neighbours.
    """
    n, m = f.shape
    if n <= 2:
        return np.full(n, np.inf)
    out = np.zeros(n)
    for obj in range(m):
        order = np.argsort(f[:, obj], kind="mergesort")
        col = f[order, obj]
        span = col[-1] - col[0]
        dist = np.full(n, np.inf)
        if span > 0:
            dist[1:-1] = (col[2:] - col[:-2]) / span
        else:
            dist[1:-1] = 0.0
        out[order] += dist
    return out / m


def _rank_and_crowding(f: FloatArray) -> tuple[IntArray, FloatArray, list[IntArray]]:
    fronts = non_dominated_fronts(f)
    rank = np.empty(len(f), dtype=np.int64)
    crowd = np.empty(len(f))
    for r, front in enumerate(fronts):
        rank[front] = r
        crowd[front] = crowding_distance(f[front])
    return rank, crowd, fronts


def _survive(f: FloatArray, size: int, rng: np.random.Generator) -> IntArray:
    """Indices kept by rank and crowding (module notes, step 3)."""
    _, crowd, fronts = _rank_and_crowding(f)
    kept: list[int] = []
    for front in fronts:
        if len(kept) + len(front) <= size:
            kept.extend(front.tolist())
            continue
        # descending crowding, ties in random order
        order = np.lexsort((rng.random(len(front)), -crowd[front]))
        kept.extend(front[order[: size - len(kept)]].tolist())
        break
    return np.array(kept, dtype=np.int64)


def _pair_dominance(
    fa: FloatArray, fb: FloatArray
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Whether ``fa[i]`` dominates ``fb[i]`` and the reverse, one objective at a time."""
    a_le = np.ones(len(fa), dtype=bool)
    b_le = np.ones(len(fa), dtype=bool)
    a_lt = np.zeros(len(fa), dtype=bool)
    b_lt = np.zeros(len(fa), dtype=bool)
    for ca, cb in zip(fa.T, fb.T, strict=True):
        a_le &= ca <= cb
        b_le &= cb <= ca
        a_lt |= ca < cb
        b_lt |= cb < ca
    return a_le & a_lt, b_le & b_lt


def _tournament(f: FloatArray, crowd: FloatArray, count: int, rng: np.random.Generator) -> IntArray:
    """``count`` winners of binary tournaments over random permutations of the population."""
    n = len(f)
    need = 2 * count
    perms = np.concatenate([rng.permutation(n) for _ in range(-(-need // n))])
    if perms.size < need:  # one member: it meets itself
        perms = np.resize(perms, need)
    a, b = perms[:need:2], perms[1:need:2]
    a_dom, b_dom = _pair_dominance(f[a], f[b])
    coin = rng.random(count) < 0.5
    pick_a = np.where(a_dom, True, np.where(b_dom, False,
                      np.where(crowd[a] != crowd[b], crowd[a] > crowd[b], coin)))  # fmt: skip
    return np.where(pick_a, a, b)


def _keys(states: IntArray) -> list[bytes]:
    flat = np.ascontiguousarray(states.reshape(len(states), -1))
    return [row.tobytes() for row in flat]


def _unique_new(states: IntArray, seen: set[bytes]) -> IntArray:
    keep = []
    for i, key in enumerate(_keys(states)):
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return states[keep]


def _offspring(
    pop: IntArray,
    f: FloatArray,
    ops: Operators,
    size: int,
    rng: np.random.Generator,
    max_matings: int,
) -> IntArray:
    """Up to ``size`` new feasible children not equal to any member (module notes, step 2)."""
    seen = set(_keys(pop))
    _, crowd, _ = _rank_and_crowding(f)
    found: list[IntArray] = []
    total = 0
    for _ in range(max_matings):
        if total >= size:
            break
        pairs = -(-(size - total) // 2)
        winners = _tournament(f, crowd, 2 * pairs, rng)
        p0, p1 = pop[winners[0::2]], pop[winners[1::2]]
        c0, c1 = ops.crossover(p0, p1, rng)
        cross = rng.random(pairs) < CROSSOVER_PROB
        shape = (pairs,) + (1,) * (pop.ndim - 1)
        c0 = np.where(cross.reshape(shape), c0, p0)
        c1 = np.where(cross.reshape(shape), c1, p1)
        children = ops.repair(ops.mutate(np.concatenate([c0, c1]), rng), rng)
        children = _unique_new(children, seen)
        if total + len(children) > size:
            children = children[rng.permutation(len(children))[: size - total]]
        found.append(children)
        total += len(children)
    if not found:
        return pop[:0]
    return np.concatenate(found)


def nsga2(
    initial: IntArray,
    ops: Operators,
    *,
    pop_size: int,
    generations: int,
    rng: np.random.Generator,
    max_matings: int = MAX_MATINGS,
) -> tuple[IntArray, FloatArray, int]:
    """Run NSGA-II from ``initial``; return the final population's first front.

    Parameters
    ----------
    initial : ndarray of shape (P0, ...)
        The starting states (repaired first); ``P0 >= 1``.
    ops : Operators
    pop_size, generations : int
        As pymoo counts them: the initial population is generation 1.
    rng : numpy.random.Generator
    max_matings : int
        Matings tried per generation for new children (:data:`MAX_MATINGS`). In a round whose
        feasible states are few (one job of one GPU) every generation tries them all, which
        costs about 1 ms each; fewer change the search only in such rounds.

    Returns
    -------
    (states, F, evaluations)
        The non-dominated members of the last population, their objectives, and how many
        states were evaluated.
    """
    pop = ops.repair(np.asarray(initial, dtype=np.int64).copy(), rng)
    pop = _unique_new(pop, set())
    f = ops.evaluate(pop)
    evaluations = len(pop)
    for _ in range(max(generations - 1, 0)):
        children = _offspring(pop, f, ops, pop_size, rng, max_matings)
        if len(children):
            pop = np.concatenate([pop, children])
            f = np.concatenate([f, ops.evaluate(children)])
            evaluations += len(children)
        kept = _survive(f, pop_size, rng)
        pop, f = pop[kept], f[kept]
    front = non_dominated_fronts(f)[0]
    return pop[front], f[front], evaluations
