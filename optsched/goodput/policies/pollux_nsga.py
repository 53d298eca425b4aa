r"""NSGA-II over integer matrices, as Pollux's policy runs it (Deb et al., 2002).

The artifact's policy runs pymoo 0.4's ``NSGA2`` with its own crossover, mutation and repair;
this module is that loop, written for optsched (pymoo is not a dependency), with every random
draw taken from one :class:`numpy.random.Generator` so that a seed fixes the run:

1. the initial population (the carried-over states) is repaired, its duplicates dropped, and
   it is put in the order of rank and crowding (step 3 with room for all: fronts in order);
2. each generation, parents are picked by **binary tournament** (the dominating one wins, else
   the larger crowding distance, else a coin), each pair is crossed with probability
   :data:`CROSSOVER_PROB`, every child is mutated and repaired, and children equal to a member
   or to each other are dropped, mating again until ``pop_size`` new children are found (at most
   :data:`MAX_MATINGS` times; the first ones found are kept); a generation that finds no new
   child ends the search, as pymoo's does;
3. parents and children are cut back to ``pop_size`` by **rank and crowding**: whole
   non-dominated fronts in order, each front in pymoo's order (:func:`non_dominated_fronts`),
   the front that does not fit by decreasing crowding distance, its ties in random order.

**Ties** (pymoo 0.4.2's ``RankAndCrowdingSurvival`` and ``calc_crowding_distance``). Points
of a front with the same objective vector are one point for the crowding distance: the first
(in population order) gets the distance, every later one 0 (:func:`crowding_distance`). The
crowding a member carries into the next generation's tournaments is the one computed in the
survival that kept it, over its whole front before the cut. The front that does not fit is
ordered by a random permutation followed by a sort on the crowding distance, descending, so
that the order of equal distances is uniformly random and a permutation of the front is drawn
only when a front is cut. Together: when many states tie at the best objectives, the first of
them keeps an infinite (extreme) distance and every copy 0, so the first stays first, and it
is the member Pollux takes (:func:`~optsched.goodput.policies.pollux.search`, the first front
member of best :math:`M`); a search from a carried population keeps its previous choice.

Objectives are minimized. A generation costs :math:`O(P^2)` for the non-dominated sort and
the duplicate check of :math:`P \le 2\cdot\text{pop\_size}` points plus the operators' cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "CROSSOVER_PROB",
    "DUPLICATE_DISTANCE",
    "MAX_MATINGS",
    "Operators",
    "crowding_distance",
    "non_dominated_fronts",
    "nsga2",
]

#: Probability that a selected pair is crossed (pymoo's default; otherwise the children are
#: copies of the parents).
CROSSOVER_PROB = 0.9
#: Matings tried per generation to find enough new children: pymoo's ``n_max_iterations``
#: (100) counts the matings after the first, so its loop mates up to 101 times.
MAX_MATINGS = 101
#: Objective vectors nearer than this (Euclidean) are one point for the crowding distance
#: (pymoo 0.4's ``find_duplicates(F, epsilon=1e-24)`` in ``calc_crowding_distance``).
DUPLICATE_DISTANCE = 1e-24

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
    """Indices of each non-dominated front of ``f`` (rows minimized), best front first.

    Each front in pymoo's order (its ``fast_non_dominated_sort``): the first in increasing
    index; a later front in the order its members are reached when the previous front's
    members, in their order, release the points they dominate (in increasing index): by the
    position of a member's last dominator in the previous front, then by index.
    """
    n = len(f)
    if n == 0:
        return []
    dominates = _dominance(f)  # dominates[i, k]: i dominates k
    count = dominates.sum(axis=0)
    fronts = []
    current = np.flatnonzero(count == 0)
    ranked = np.zeros(n, dtype=bool)
    while current.size:
        fronts.append(current)
        ranked[current] = True
        released = dominates[current]
        count = count - released.sum(axis=0)
        nxt = np.flatnonzero((count == 0) & ~ranked)
        if nxt.size:
            # position in ``current`` of each point's last dominator there
            last = len(current) - 1 - np.argmax(released[::-1][:, nxt], axis=0)
            nxt = nxt[np.argsort(last, kind="stable")]
        current = nxt
    return fronts


def _first_occurrences(f: FloatArray) -> IntArray:
    """Rows of ``f`` not within :data:`DUPLICATE_DISTANCE` of an earlier row, in order."""
    diff = f[:, None, :] - f[None, :, :]
    near = np.sqrt((diff * diff).sum(axis=2)) < DUPLICATE_DISTANCE
    return np.flatnonzero(~np.tril(near, k=-1).any(axis=1))


def crowding_distance(f: FloatArray) -> FloatArray:
    r"""Crowding distance of the points of one front (pymoo 0.4.2's rule).

    With :math:`n \le 2` points every distance is infinite. Otherwise a point equal to an
    earlier one (within :data:`DUPLICATE_DISTANCE`) gets 0, and the first occurrences
    :math:`U` get, per objective sorted stably over :math:`U` with range :math:`\Delta`, the
    gaps to their two neighbours over :math:`\Delta` (the extremes :math:`\infty`); an
    objective with :math:`\Delta = 0` adds 0 to every point, the extremes too. The sum over
    objectives is divided by their number. :math:`O(n^2 m)` for the duplicate check.
    """
    n, m = f.shape
    if n <= 2:
        return np.full(n, np.inf)
    unique = _first_occurrences(f)
    u = f[unique]
    cd = np.zeros(len(unique))
    for obj in range(m):
        order = np.argsort(u[:, obj], kind="mergesort")
        col = u[order, obj]
        span = col[-1] - col[0]
        if not span > 0:  # pymoo divides by NaN here and then sets the NaNs to 0
            continue
        gaps = np.diff(col) / span
        cd[order] += np.concatenate([[np.inf], gaps]) + np.concatenate([gaps, [np.inf]])
    out = np.zeros(n)
    out[unique] = cd / m
    return out


def _survive(f: FloatArray, size: int, rng: np.random.Generator) -> tuple[IntArray, FloatArray]:
    """Indices kept by rank and crowding (module notes, step 3) and their crowding distances.

    The front that does not fit draws one permutation of its members; sorted stably on the
    permuted distances and reversed, equal distances come in uniformly random order (pymoo's
    ``randomized_argsort``, whose quicksort orders equal values some other fixed way: the same
    distribution). No draw when every front fits.
    """
    kept: list[IntArray] = []
    crowd: list[FloatArray] = []
    room = min(size, len(f))
    for front in non_dominated_fronts(f):
        if room <= 0:
            break
        cd = crowding_distance(f[front])
        if len(front) > room:
            perm = rng.permutation(len(front))
            order = perm[np.argsort(cd[perm], kind="stable")][::-1][:room]
            front, cd = front[order], cd[order]
        kept.append(front)
        crowd.append(cd)
        room -= len(front)
    if not kept:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(kept).astype(np.int64), np.concatenate(crowd)


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
    crowd: FloatArray,
    ops: Operators,
    size: int,
    rng: np.random.Generator,
    max_matings: int,
) -> IntArray:
    """Up to ``size`` new feasible children not equal to any member (module notes, step 2).

    ``crowd`` is each member's crowding distance from the survival that kept it.
    """
    seen = set(_keys(pop))
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
        children = children[: size - total]  # pymoo keeps the first ones
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
        feasible states are few (one job of one GPU) a generation tries them all, about 1 ms
        each, until one finds no new child and the search ends; fewer change the search only
        in such rounds.

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
    kept, crowd = _survive(f, len(pop), rng)  # everything fits: no draw
    pop, f = pop[kept], f[kept]
    for _ in range(max(generations - 1, 0)):
        children = _offspring(pop, f, crowd, ops, pop_size, rng, max_matings)
        if not len(children):
            break  # pymoo ends the run when mating finds no new child
        pop = np.concatenate([pop, children])
        f = np.concatenate([f, ops.evaluate(children)])
        evaluations += len(children)
        kept, crowd = _survive(f, pop_size, rng)
        pop, f = pop[kept], f[kept]
    front = non_dominated_fronts(f)[0]
    return pop[front], f[front], evaluations
