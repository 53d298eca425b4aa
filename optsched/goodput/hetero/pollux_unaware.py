r"""Pollux as Sia's artifact runs it on a heterogeneous cluster: heterogeneity-unaware.

Sia's baseline (``multi_simulator_unaware.py --policy=pollux --policy_p_val=-1``, with
``cluster_unaware.py`` and ``pollux_unaware.py``) hands Pollux's genetic search a cluster it
believes homogeneous and repairs the answer afterwards. :class:`PolluxUnaware` states the same
round and searches it with optsched's own NSGA-II
(:class:`~optsched.goodput.policies.pollux.PolluxPolicy`, seeded; the artifact's search is not):

**Virtual nodes.** With :math:`G = \min_g G_g` GPUs per virtual node, each node of type
:math:`g` becomes :math:`G_g / G` virtual nodes, types in cluster order, nodes in index order
(for Sia's cluster: 6 aws, 4 dgx-ext, 6 rtx virtual nodes of 4 GPUs). The search sees
:math:`V = \sum_g n_g G_g / G` identical nodes of :math:`G` GPUs.

**One model per job.** Each job keeps one profile and one throughput fit over every type
(:class:`~optsched.goodput.hetero.replay.MergedProfileBatcher`, fitted with the artifact's
floored network time, ``fit_throughput(floored=True)``: without the floors the fit stops at
other points, and the ImageNet job's model, which decides between 8 RTX and 16 T4 GPUs, with
it); its speedup
(:class:`~optsched.goodput.speedup.SpeedupTable`) reads that model with the *reference* type's
batch limits (the artifact's ``"aws"``, the first type of Sia's cluster), and is
:math:`\mathrm{SPEEDUP}(K, N) = N` before the job has a model. Its GPU bound is
:math:`\min(\max(2R, 1), R_\mathrm{cl}, \lfloor M_\max / m_\min \rfloor)` on the reference
type, :math:`R` the most GPUs profiled on any type and :math:`R_\mathrm{cl}` the fewest GPUs of
any type (each type capped at its ``max_physical_nodes``); one GPU for the single-GPU job types.
No minimum: a job may be left without GPUs.

**Mapping back** (``fix_allocations_by_dropping``). A chosen allocation spanning virtual nodes of
several types keeps only the GPUs of its most frequent type -- on a tie between the two most
frequent (in order of first appearance among the job's virtual nodes) the one earlier in
``priority`` (dgx-ext, azure, quad, rtx, aws) -- and drops the rest. The kept virtual nodes
give the job's GPU type and physical nodes. The repaired allocation (in virtual nodes) is the
next round's previous allocation, which is what the search's restart penalty compares with.

The GA's own population, carried from round to round, stays in virtual nodes, unrepaired.

Cost per round: the search's (:math:`100 \times 100` evaluations of :math:`O(JV)`) plus
:math:`O(JV)` to map back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from optsched.errors import InvalidInstanceError
from optsched.goodput.cluster_jobs import SINGLE_GPU_TYPES, LazySpeedup
from optsched.goodput.decision import ClusterView, JobView
from optsched.goodput.hetero.apps import GpuType, HeteroApp
from optsched.goodput.hetero.replay import MergedProfileBatcher
from optsched.goodput.hetero.sia import MAX_PHYSICAL_NODES
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView
from optsched.goodput.policies.pollux import GENERATIONS, POP_SIZE, PolluxPolicy
from optsched.goodput.workload import PolluxJob

__all__ = ["DROP_PRIORITY", "PolluxUnaware", "virtual_nodes"]

#: The artifact's tie-break between equally frequent types: earlier is kept.
DROP_PRIORITY: tuple[str, ...] = ("dgx-ext", "azure", "quad", "rtx", "aws")


def virtual_nodes(gpu_types: Sequence[GpuType]) -> tuple[int, list[tuple[str, int]]]:
    """``(G, [(type, physical node) per virtual node])`` (module notes).

    Raises
    ------
    InvalidInstanceError
        When a type's GPUs per node are not a multiple of the smallest.
    """
    if not gpu_types:
        raise InvalidInstanceError("gpu_types", "the cluster has no GPU type")
    g = min(t.gpus_per_node for t in gpu_types)
    out: list[tuple[str, int]] = []
    for t in gpu_types:
        if t.gpus_per_node % g:
            raise InvalidInstanceError(
                f"gpu_types[{t.name}].gpus_per_node",
                f"{t.gpus_per_node} is not a multiple of the smallest, {g}",
            )
        out.extend((t.name, n) for n in range(t.num_nodes) for _ in range(t.gpus_per_node // g))
    return g, out


def _drop(vnodes: Sequence[int], vmap: Sequence[tuple[str, int]],
          rank: Mapping[str, int]) -> tuple[int, ...]:  # fmt: skip
    """The job's virtual nodes of its kept type (module notes, *Mapping back*)."""
    counts = Counter(vmap[v][0] for v in vnodes).most_common()
    if len(counts) == 1:
        return tuple(vnodes)
    chosen = counts[0][0]
    if counts[0][1] == counts[1][1]:
        other = counts[1][0]
        if rank.get(other, len(rank)) < rank.get(chosen, len(rank)):
            chosen = other
    return tuple(v for v in vnodes if vmap[v][0] == chosen)


class PolluxUnaware:
    """Sia's heterogeneity-unaware Pollux baseline (module notes).

    Parameters
    ----------
    seed : int
        Seeds the search's generator: a run is reproducible.
    p : float
        The fairness exponent (the artifact's runs: -1).
    reference : str, optional
        The GPU type whose batch limits the merged model reads; default the cluster's first.
    priority : sequence of str
        Tie-break order of the types when mapping back (:data:`DROP_PRIORITY`).
    pop_size, generations : int
        NSGA-II's settings.
    """

    name = "pollux-unaware"

    def __init__(
        self,
        *,
        seed: int = 0,
        p: float = -1.0,
        reference: str | None = None,
        priority: Sequence[str] = DROP_PRIORITY,
        pop_size: int = POP_SIZE,
        generations: int = GENERATIONS,
    ) -> None:
        self.search = PolluxPolicy(seed=seed, p=p, pop_size=pop_size, generations=generations)
        self.reference = reference
        self.rank = {t: i for i, t in enumerate(priority)}
        self._vprev: dict[str, tuple[int, ...]] = {}

    def batcher(self, spec: PolluxJob, apps: Mapping[str, HeteroApp]) -> MergedProfileBatcher:
        """Each job's one merged model (:class:`MergedProfileBatcher`)."""
        return MergedProfileBatcher(apps)

    def _job_view(self, view: HeteroJobView, ref: str, cluster_cap: int) -> JobView:
        agent = view.state.batcher
        if not isinstance(agent, MergedProfileBatcher):
            raise InvalidInstanceError(
                f"jobs[{view.name}]", "needs the policy's batcher (one merged model per job)"
            )
        app = view.apps[ref]
        lim = app.limits
        profiled = max((k[1] for k in agent.profiles.get("*", {})), default=0)
        cap = min(max(2 * profiled, 1), cluster_cap, int(lim.max_batch_size // lim.min_local_bsz))
        if view.application in SINGLE_GPU_TYPES:
            cap = 1
        return JobView(
            view.name, view.submission_time, view.attained_service, 0, max(cap, 1),
            view.num_restarts, view.age, view.epoch, view.application, app.traces,
            LazySpeedup(lambda: agent.model(ref), lim),
        )  # fmt: skip

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """Search the virtual cluster, then keep each job's majority type (module notes)."""
        if not jobs:
            return {}
        types = cluster.gpu_types
        g, vmap = virtual_nodes(types)
        ref = self.reference or types[0].name
        cap = min(t.gpus_per_node * min(t.num_nodes, MAX_PHYSICAL_NODES.get(t.name, t.num_nodes))
                  for t in types)  # fmt: skip
        views = {k: self._job_view(v, ref, cap) for k, v in jobs.items()}
        vprev = {k: v for k, v in self._vprev.items() if k in jobs}
        chosen = self.search.allocate(views, ClusterView(len(vmap), g, cluster.time), vprev)
        repaired = {k: _drop(v, vmap, self.rank) for k, v in chosen.items() if v}
        self._vprev = repaired
        out: dict[str, HeteroAllocation] = {}
        for name, vnodes in repaired.items():
            out[name] = (vmap[vnodes[0]][0], tuple(sorted(vmap[v][1] for v in vnodes)))
        return out
