r"""Pollux's scheduling policy: a genetic algorithm over per-node GPU counts (OSDI'21, §4.2).

At each decision the policy states the round (:func:`~optsched.goodput.round_model.build_round`:
jobs in order of attained service, speedups over each job's fair share, restart penalties) and
searches it with NSGA-II (:mod:`~optsched.goodput.policies.pollux_nsga`) on two objectives, as
the artifact's ``simulator/pollux.py`` does: the generalized mean :math:`M` of the scaled,
penalized speedups (:func:`~optsched.goodput.round_model.fitness`) and the cluster utility
(:func:`~optsched.goodput.round_model.cluster_utility`), both maximized. It carries out the
member of the final front with the best :math:`M` (the first of them, in population order: on
a tie that is the state the search kept first, see
:mod:`~optsched.goodput.policies.pollux_nsga`).

A state is a ``(J, n)`` matrix of GPUs per job and node. The operators (written after the
artifact's, drawing from the policy's :class:`numpy.random.Generator`):

**crossover**
    single point over jobs: the first :math:`c` rows (:math:`c` uniform in :math:`[0, J)`) of
    the two parents are swapped.
**mutation**
    (1) each row is reset to the previous allocation with probability 0.1; (2) each row is, with
    probability 0.1, thinned (each entry zeroed with probability 0.1); (3) each entry on a node
    with a free GPU is raised to a uniform count in :math:`[a_{jn}, G]` with probability
    :math:`q_1 + q_2 - q_1 q_2`, :math:`q_1` one over the nodes with a free GPU,
    :math:`q_2` one over those the job already uses (the job grows on about one new and one
    old node).
**repair** (makes every state feasible, in this order)
    ``interference``: of the jobs spanning two or more nodes, only the first (in job order) keeps
    its GPUs on each node; ``max_replicas`` then ``max_job_nodes``: the row's entries, in a
    random order of nodes, are cut to the first ``max_replicas`` GPUs and the first 16 nodes;
    ``node_capacity``: on each node, jobs in order keep GPUs until the node is full;
    ``min_replicas``: a row below its minimum is emptied.

The population is carried from one decision to the next: the final front (pymoo's result set)
seeds the next search, its rows matched to jobs by name (a new job starts from no GPUs); the
first search starts from the previous allocation alone. Population 100, 100 generations (the
artifact's settings).

Left out from the artifact: cluster autoscaling (its *desired nodes* is the cluster size; the
artifact's simulator runs it fixed too), non-preemptible (pinned) jobs and resources other than
GPUs (every job of the artifact's simulator is preemptible and asks one GPU per replica).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from optsched.goodput.decision import Allocation, ClusterView, JobView
from optsched.goodput.policies.pollux_nsga import MAX_MATINGS, Operators, nsga2
from optsched.goodput.round_model import (
    RoundInstance,
    build_round,
    cluster_utility,
    fitness,
    matrix_allocations,
)

__all__ = ["GENERATIONS", "POP_SIZE", "PolluxPolicy", "SearchResult", "operators", "search"]

#: The artifact's NSGA-II population size.
POP_SIZE = 100
#: The artifact's number of generations (the initial population counts as the first).
GENERATIONS = 100
#: Probability that a mutation resets a row to the previous allocation, thins a row, and
#: that a thinned row loses each entry.
_RESET_PROB = 0.1
_THIN_ROW_PROB = 0.1
_THIN_ENTRY_PROB = 0.1

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _crossover(p0: IntArray, p1: IntArray, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    num_jobs = p0.shape[1]
    points = rng.integers(num_jobs, size=(len(p0), 1))
    swap = (np.arange(num_jobs)[None, :] < points)[:, :, None]
    return np.where(swap, p1, p0), np.where(swap, p0, p1)


def _mutate(instance: RoundInstance, states: IntArray, rng: np.random.Generator) -> IntArray:
    g = instance.gpus_per_node
    base = instance.previous
    pop, jobs = states.shape[:2]
    reset = rng.random((pop, jobs)) < _RESET_PROB
    out = np.where(reset[:, :, None], base[None], states)
    thin = np.where(rng.random((pop, jobs)) < _THIN_ROW_PROB, _THIN_ENTRY_PROB, 0.0)
    out = np.where(rng.random(out.shape) < thin[:, :, None], 0, out)
    free = g - out.sum(axis=1)  # (P, n)
    fits = np.broadcast_to((free >= 1)[:, None, :], out.shape)
    # normalized over the jobs (axis 1), as the artifact does: per node with a free GPU, about
    # one job gains GPUs there and about one of the jobs already there grows
    q1 = fits / np.maximum(fits.sum(axis=1, keepdims=True), 1.0)
    own = (out > 0) & fits
    q2 = own / np.maximum(own.sum(axis=1, keepdims=True), 1.0)
    grow = rng.random(out.shape) < q1 + q2 - q1 * q2
    raised = rng.integers(out, g + 1)
    return np.asarray(np.where(grow, raised, out), dtype=np.int64)


def _repair(instance: RoundInstance, states: IntArray, rng: np.random.Generator) -> IntArray:
    g = instance.gpus_per_node
    s = np.array(states, dtype=np.int64)
    # interference: only the first spanning job keeps its GPUs on a node
    spanning = np.count_nonzero(s, axis=2) > 1
    on = (s > 0) & spanning[:, :, None]
    s[np.cumsum(on, axis=1) > 1] = 0
    # max_replicas, then max_job_nodes, over the nodes in a random order per row
    max_r = np.array([j.max_replicas for j in instance.jobs])[None, :, None]
    shuffle = np.argsort(rng.random(s.shape), axis=2)
    s = np.take_along_axis(s, shuffle, axis=2)
    s = np.diff(np.minimum(np.cumsum(s, axis=2), max_r), axis=2, prepend=0)
    first = np.diff(np.minimum(np.cumsum(s > 0, axis=2), instance.max_job_nodes), axis=2,
                    prepend=0)  # fmt: skip
    s[first == 0] = 0
    s = np.take_along_axis(s, np.argsort(shuffle, axis=2), axis=2)
    # node_capacity: jobs in order keep GPUs until the node is full
    s = np.diff(np.minimum(np.cumsum(s, axis=1), g), axis=1, prepend=0)
    # min_replicas
    min_r = np.array([j.min_replicas for j in instance.jobs])[None, :]
    s[s.sum(axis=2) < min_r] = 0
    return s


def _evaluate(instance: RoundInstance, states: IntArray) -> FloatArray:
    return np.column_stack([-fitness(instance, states), -cluster_utility(instance, states)])


def operators(instance: RoundInstance) -> Operators:
    """Pollux's objectives and operators for one round (module notes)."""
    return Operators(
        evaluate=lambda s: _evaluate(instance, s),
        crossover=_crossover,
        mutate=lambda s, rng: _mutate(instance, s, rng),
        repair=lambda s, rng: _repair(instance, s, rng),
    )


@dataclass(frozen=True)
class SearchResult:
    """One search of a round.

    Attributes
    ----------
    state : ndarray
        The chosen ``(J, n)`` allocation (best :math:`M` on the final front).
    fitness : float
        Its :math:`M`.
    front : ndarray
        The final front's states, shape ``(F, J, n)`` (carried to the next decision).
    values : ndarray
        Their objectives ``(-M, -utility)``.
    evaluations : int
        States evaluated.
    """

    state: IntArray
    fitness: float
    front: IntArray
    values: FloatArray
    evaluations: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def search(
    instance: RoundInstance,
    initial: IntArray | None = None,
    *,
    rng: np.random.Generator,
    pop_size: int = POP_SIZE,
    generations: int = GENERATIONS,
    max_matings: int = MAX_MATINGS,
    compiled: bool = True,
) -> SearchResult:
    """Run Pollux's NSGA-II on one round from ``initial`` (default: the previous allocation).

    ``compiled`` runs it as Numba kernels (:mod:`~optsched.goodput.policies.pollux_kernels`:
    the same draws and the same result; 7 times faster on a round of 40 jobs on 16 nodes, 23
    times on a round of one one-GPU job), else in NumPy
    (:func:`~optsched.goodput.policies.pollux_nsga.nsga2` with :func:`operators`, the
    reference); a generator other than PCG64 always takes the NumPy path.
    """
    start = instance.previous[None] if initial is None else np.asarray(initial, dtype=np.int64)
    run = None
    if compiled:
        from optsched.goodput.policies.pollux_kernels import nsga2_compiled

        run = nsga2_compiled(instance, start, pop_size=pop_size, generations=generations,
                             rng=rng, max_matings=max_matings)  # fmt: skip
    if run is None:
        run = nsga2(start, operators(instance), pop_size=pop_size, generations=generations,
                    rng=rng, max_matings=max_matings)  # fmt: skip
    front, values, evaluations = run
    best = int(np.argmin(values[:, 0]))
    return SearchResult(front[best], float(-values[best, 0]), front, values, evaluations)


class PolluxPolicy:
    """Pollux's policy (a :class:`~optsched.goodput.decision.GoodputPolicy`).

    Parameters
    ----------
    seed : int
        Seeds the policy's one random generator: a run is reproducible.
    pop_size, generations : int
        NSGA-II's settings (:data:`POP_SIZE`, :data:`GENERATIONS`).
    max_matings : int
        Matings tried per generation for new children
        (:data:`~optsched.goodput.policies.pollux_nsga.MAX_MATINGS`, pymoo's).
    p : float
        The fairness exponent (:data:`~optsched.goodput.round_model.FAIRNESS_P`).
    compiled : bool
        Search with the compiled kernels (the default; the same decisions) or in NumPy
        (:func:`search`).

    Attributes
    ----------
    last_round : RoundInstance or None
        The round of the last decision (for inspection and the exact model).
    last_search : SearchResult or None
    """

    name = "pollux"

    def __init__(
        self,
        *,
        seed: int = 0,
        pop_size: int = POP_SIZE,
        generations: int = GENERATIONS,
        max_matings: int = MAX_MATINGS,
        p: float = -1.0,
        compiled: bool = True,
    ) -> None:
        from optsched.errors import InvalidInstanceError

        if pop_size < 1:
            raise InvalidInstanceError("pop_size", f"must be >= 1, got {pop_size}")
        if generations < 1:
            raise InvalidInstanceError("generations", f"must be >= 1, got {generations}")
        if max_matings < 1:
            raise InvalidInstanceError("max_matings", f"must be >= 1, got {max_matings}")
        self.max_matings = int(max_matings)
        self.rng = np.random.default_rng(seed)
        self.pop_size = int(pop_size)
        self.generations = int(generations)
        self.p = float(p)
        self.compiled = bool(compiled)
        self._carried: tuple[list[str], IntArray] | None = None
        self.last_round: RoundInstance | None = None
        self.last_search: SearchResult | None = None

    def _initial(self, instance: RoundInstance) -> IntArray:
        """The carried front, rows matched by job name and columns by node (module notes)."""
        if self._carried is None:
            return instance.previous[None]
        names, states = self._carried
        index = {name: i for i, name in enumerate(names)}
        nodes = min(states.shape[2], instance.num_nodes)
        out = np.zeros((len(states), instance.num_jobs, instance.num_nodes), dtype=np.int64)
        for j, job in enumerate(instance.jobs):
            if job.name in index:
                out[:, j, :nodes] = states[:, index[job.name], :nodes]
        return out

    def allocate(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        previous: Mapping[str, Allocation],
    ) -> dict[str, Allocation]:
        """Search the round and return the chosen allocation of every job that gets GPUs."""
        if not jobs:
            return {}
        instance = build_round(jobs, cluster, previous, p=self.p)
        result = search(instance, self._initial(instance), rng=self.rng,
                        pop_size=self.pop_size, generations=self.generations,
                        max_matings=self.max_matings, compiled=self.compiled)  # fmt: skip
        self._carried = ([j.name for j in instance.jobs], result.front)
        self.last_round = instance
        self.last_search = result
        return matrix_allocations(instance, result.state)
