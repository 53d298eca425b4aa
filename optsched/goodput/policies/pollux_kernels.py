r"""Pollux's NSGA-II compiled: the same search as the NumPy path, draw for draw.

:func:`nsga2_compiled` runs the loop of :func:`optsched.goodput.policies.pollux_nsga.nsga2`
with Pollux's operators (:mod:`optsched.goodput.policies.pollux`) as Numba kernels: a
generation's matings (tournament, crossover, mutation, repair, duplicate check) are one call
and the survival by rank and crowding another, where the NumPy path makes some 60 array calls
per mating on arrays of a few thousand entries. The objectives stay NumPy's
(:func:`~optsched.goodput.round_model.fitness_of` and
:func:`~optsched.goodput.round_model.utility_of`, the functions the NumPy path evaluates with),
fed the per-job node and GPU counts the kernel computes, so every objective value is the
same float.

**Same draws.** The kernels draw from the policy's generator through
:mod:`~optsched.goodput.policies.pollux_rng` (NumPy's PCG64 and its ``random``, ``integers``
and ``permutation`` reproduced bit for bit), in the NumPy path's order, and hand the state back
at the end. A draw whose value cannot change the outcome is skipped by jumping the generator
ahead, as many outputs as NumPy would have drawn:

* a mutation's per-entry thinning draw in a row that is not thinned (its threshold is 0);
* a mutation's growth draw on a node without a free GPU (its probability is 0);
* a repair's shuffle of a row that fits its ``max_replicas`` and ``max_job_nodes`` (every
  order keeps the row as it is).

**Ties** follow pymoo 0.4.2 as the NumPy path states them
(:mod:`~optsched.goodput.policies.pollux_nsga`): repeated objective vectors crowd at 0, later
fronts come in pymoo's order (``front_order``), each survivor carries its crowding into the next
tournaments, and a cut front draws one ``permutation`` and is sorted stably on the permuted
distances, in both paths, so both keep the same members in the same order.

The shuffle orders a row's nodes by their draws with a stable sort; NumPy's ``argsort`` may
order two equal doubles differently, which in 53-bit draws happens with probability about
:math:`n^2 2^{-54}` per row of :math:`n` nodes.

**Cost.** A generation costs :math:`O(M C J n)` for :math:`M` matings of :math:`C` children
over :math:`J` jobs and :math:`n` nodes, plus :math:`O(P^2)` for the non-dominated sorts of
:math:`P \le 2\,\text{pop\_size}` points. The tests check the compiled search against the NumPy
path (chosen allocation, final front, objectives and the generator's state after) on random
rounds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.goodput.policies.pollux_nsga import non_dominated_fronts
from optsched.goodput.round_model import RoundInstance, fitness_of, utility_of
from optsched.goodput.round_model import speedup_lookup as lookup

__all__ = ["kernels", "nsga2_compiled"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def kernels() -> Any:
    """The module of compiled loops (Numba is imported, and the loops loaded, on first use)."""
    import optsched.goodput.policies._pollux_loops as _pollux_loops  # lazy: imports Numba

    return _pollux_loops


def _features(k: Any, instance: RoundInstance, states: IntArray, prev: IntArray) -> FloatArray:
    nodes, replicas, changed, used, speedups, missing = k.features(states, prev, instance.grid())
    if missing:  # entries not computed yet: the NumPy look-up computes them (same values)
        speedups = lookup(instance, nodes, replicas)
    return np.column_stack([-fitness_of(instance, speedups, changed),
                            -utility_of(instance, speedups, used)])  # fmt: skip


def nsga2_compiled(
    instance: RoundInstance,
    initial: IntArray,
    *,
    pop_size: int,
    generations: int,
    rng: np.random.Generator,
    max_matings: int,
) -> tuple[IntArray, FloatArray, int] | None:
    """:func:`~optsched.goodput.policies.pollux_nsga.nsga2` with Pollux's operators, compiled.

    Same arguments and result as the NumPy path; ``None`` (nothing drawn) when ``rng`` is not
    PCG64-backed, whose draws the kernels do not reproduce.
    """
    k = kernels()
    st = k.load_state(rng)
    if st is None:
        return None
    prev = np.ascontiguousarray(instance.previous, dtype=np.int64)
    max_r = np.array([j.max_replicas for j in instance.jobs], dtype=np.int64)
    min_r = np.array([j.min_replicas for j in instance.jobs], dtype=np.int64)
    limits = np.array([instance.gpus_per_node, instance.max_job_nodes, pop_size, max_matings],
                      dtype=np.int64)  # fmt: skip
    pop = np.array(initial, dtype=np.int64, order="C")
    k.repair(pop, st, max_r, min_r, limits)
    pop = k.unique(pop)
    f = _features(k, instance, pop, prev)
    evaluations = len(pop)
    kept, crowd = k.survive(f, len(pop), st)  # everything fits: no draw
    pop, f = pop[kept], f[kept]
    for _ in range(max(generations - 1, 0)):
        children = k.offspring(pop, f, crowd, st, prev, max_r, min_r, limits)
        if not len(children):
            break  # as the NumPy path (pymoo): no new child ends the search
        pop = np.concatenate([pop, children])
        f = np.concatenate([f, _features(k, instance, children, prev)])
        evaluations += len(children)
        kept, crowd = k.survive(f, pop_size, st)
        pop, f = pop[kept], f[kept]
    k.store_state(rng, st)
    front = non_dominated_fronts(f)[0]
    return pop[front], f[front], evaluations
