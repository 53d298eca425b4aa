r"""Gandiva: time slicing, packing, migration and introspection (Xiao et al., OSDI 2018).

Source: the paper ("Gandiva: Introspective Cluster Scheduling for Deep Learning"); implemented
from its description. Choices the paper leaves open, as made here:

**Time slicing at round granularity.** Rounds of ``round_seconds`` (default 60 s; Gandiva
suspends and resumes at mini-batch boundaries, a round here). Each round the active jobs are
ordered by wall time received so far (least first, ties by arrival): when the cluster is
oversubscribed the jobs take turns, round-robin, each resume paying the world's restore cost.

**Packing.** A job left without exclusive GPUs is packed (space-shared) onto the GPUs of a granted
job of the same GPU type and gang size that is not already packed, among pairs whose measured
rates are positive (the pair fits in GPU memory) and not blacklisted; candidates are ranked by
the pair's normalized throughput :math:`r^{pair}_a / r_a + r^{pair}_b / r_b` (the pair profile).

**Introspection.** After a packing has run, its achieved normalized throughput is measured; below
``pack_threshold`` (default 1.0: the pair does less than time slicing would) the packing is
reverted and the pair of job types is never packed again.

**Migration to defragment.** Jobs keep their GPUs; others take the fullest server that holds
their whole gang. When a multi-GPU job finds no such server although its type has enough free
GPUs, every job of that type is re-placed, largest gang first, on the fullest server that holds
it (first-fit decreasing); jobs that move pay the restore cost (a migration). A job that still
fits nowhere consolidated is spread.

GPU types are chosen heterogeneity-agnostically (:func:`~optsched.sim.policies.greedy_allocation`).

**Grow-shrink** (``elastic=True``, name ``gandiva-elastic``; the paper's mechanism for jobs that
can change their GPU count). The time-slicing order is sized by the shared elastic step of the
order policies (:mod:`optsched.sim.policies.elastic`): a job shrinks to the GPUs left rather
than wait, and when GPUs stay idle the jobs grow into them, in the time-slicing order, up to
the size beyond which they gain no throughput. Packing then pairs only jobs granted their
requested gang (pair rates are measured at equal gangs), and placement counts the granted
sizes; a job whose size changed is placed afresh.
"""

from __future__ import annotations

import math

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import (
    Grant,
    GrantPlacement,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.policies.basic import greedy_allocation
from optsched.sim.policies.elastic import elastic_sizes
from optsched.sim.policies.walk import choose_elastic_type
from optsched.sim.world.jobs import World

__all__ = ["Gandiva"]


class Gandiva(Policy):
    """Gandiva's time slicing, packing with introspective revert, and defragmenting migration.

    Parameters
    ----------
    round_seconds : float
        Time-slice (round) length.
    packing : bool
        Pack jobs left without GPUs.
    pack_threshold : float
        Normalized pair throughput below which a packing is reverted and blacklisted.
    migration : bool
        Re-place a GPU type's jobs to defragment it.
    elastic : bool
        Grow-shrink elastic gangs (module notes); the name becomes ``gandiva-elastic``.
    """

    name = "gandiva"

    def __init__(
        self,
        *,
        round_seconds: float = 60.0,
        packing: bool = True,
        pack_threshold: float = 1.0,
        migration: bool = True,
        elastic: bool = False,
    ) -> None:
        if not (math.isfinite(round_seconds) and round_seconds > 0):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds}")
        if not (math.isfinite(pack_threshold) and pack_threshold >= 0):
            raise InvalidInstanceError("pack_threshold", f"must be >= 0, got {pack_threshold}")
        self.round_seconds = round_seconds
        self.packing = packing
        self.pack_threshold = pack_threshold
        self.migration = migration
        self.elastic = elastic
        if elastic:
            self.name = "gandiva-elastic"
        self.blacklist: set[frozenset[str]] = set()
        self.reverted = 0
        self.migrations = 0

    def reset(self, world: World) -> None:
        """Forget blacklisted pairs."""
        self.blacklist = set()
        self.reverted = 0
        self.migrations = 0

    def _gain(self, state: SimState, a: JobState, b: JobState, gpu_type: str) -> float:
        w = state.world
        ra, rb = w.rate(a.job, gpu_type), w.rate(b.job, gpu_type)
        pa, pb = w.rate(a.job, gpu_type, True, b.job), w.rate(b.job, gpu_type, True, a.job)
        if ra <= 0 or rb <= 0 or pa <= 0 or pb <= 0:
            return -math.inf
        return pa / ra + pb / rb

    def allocate(self, state: SimState) -> PolicyDecision:
        """Introspect, time-slice, pack, then place (defragmenting)."""
        by_id = {s.job_id: s for s in state.active}
        # introspection: measure the packings that ran, revert the bad ones
        for s in state.active:
            if s.partner is not None and s.placement is not None and s.job_id < s.partner:
                other = by_id.get(s.partner)
                if other is None:
                    continue
                if self._gain(state, s, other, s.placement.gpu_type) < self.pack_threshold:
                    self.blacklist.add(frozenset((s.job.job_type, other.job.job_type)))
                    self.reverted += 1
        order = sorted(state.active, key=lambda s: (s.executed_seconds, s.job.arrival, s.job.index))
        sizes: dict[str, int] = {}
        if self.elastic:
            names = list(state.world.cluster.names)
            free = {t.name: t.count for t in state.world.cluster.gpu_types}
            sized = elastic_sizes(
                state, order, free, lambda s, f: choose_elastic_type(state, s, f, names, False)
            )
            base = PolicyDecision(
                grants=tuple(Grant(job=s.job_id, gpu_type=t) for s, t, _ in sized)
            )
            sizes = {s.job_id: n for s, _, n in sized}
        else:
            base = greedy_allocation(state, order)
        granted = {g.job: g.gpu_type for g in base.grants}
        shares: list[Grant] = []
        if self.packing:
            # pair rates are measured at equal, requested gangs: only such hosts can share
            hosts = [
                by_id[g.job]
                for g in base.grants
                if sizes.get(g.job, by_id[g.job].job.num_gpus) == by_id[g.job].job.num_gpus
            ]
            packed: set[str] = set()
            for s in order:
                if s.job_id in granted:
                    continue
                best: tuple[float, str, str] | None = None
                for h in hosts:
                    if h.job_id in packed or h.job.num_gpus != s.job.num_gpus:
                        continue
                    if frozenset((s.job.job_type, h.job.job_type)) in self.blacklist:
                        continue
                    gt = granted[h.job_id]
                    gain = self._gain(state, s, h, gt)
                    if gain > -math.inf and (best is None or gain > best[0]):
                        best = (gain, h.job_id, gt)
                if best is not None:
                    packed.update((best[1], s.job_id))
                    shares.append(Grant(job=s.job_id, gpu_type=best[2], share_with=best[1]))
        placements = self._place(state, [by_id[g.job] for g in base.grants], granted, sizes)
        grants = [
            Grant(
                job=g.job,
                gpu_type=g.gpu_type,
                placement=placements.get(g.job),
                num_gpus=sizes.get(g.job),
            )
            for g in base.grants
        ]
        return PolicyDecision(grants=(*grants, *shares))

    def _place(
        self,
        state: SimState,
        jobs: list[JobState],
        gpu_type_of: dict[str, str],
        sizes: dict[str, int] | None = None,
    ) -> dict[str, GrantPlacement]:
        out: dict[str, GrantPlacement] = {}
        for t in state.world.cluster.gpu_types:
            mine = [s for s in jobs if gpu_type_of[s.job_id] == t.name]
            if not mine:
                continue
            cap = [t.server_capacity(k) for k in range(t.num_servers)]
            placed, ok = self._pack_type(
                mine, t.name, t.gpus_per_server, cap, keep=True, sizes=sizes
            )
            if not ok and self.migration:
                cap2 = [t.server_capacity(k) for k in range(t.num_servers)]
                placed2, ok2 = self._pack_type(
                    mine, t.name, t.gpus_per_server, cap2, keep=False, sizes=sizes
                )
                moved = sum(
                    1
                    for s in mine
                    if s.placement is not None and placed2.get(s.job_id) != s.placement
                )
                if ok2:
                    self.migrations += moved
                    placed = placed2
            out.update(placed)
        return out

    @staticmethod
    def _pack_type(
        mine: list[JobState],
        gpu_type: str,
        gps: int,
        cap: list[int],
        *,
        keep: bool,
        sizes: dict[str, int] | None = None,
    ) -> tuple[dict[str, GrantPlacement], bool]:
        size = sizes or {}

        def gang(s: JobState) -> int:
            return size.get(s.job_id, s.job.num_gpus)

        placed: dict[str, GrantPlacement] = {}
        rest: list[JobState] = []
        if keep:
            for s in mine:
                p = s.placement
                if (
                    p is not None
                    and p.gpu_type == gpu_type
                    and p.num_gpus == gang(s)  # a resized job is placed afresh
                    and all(cap[k] >= g for k, g in p.servers)
                ):
                    for k, g in p.servers:
                        cap[k] -= g
                    placed[s.job_id] = p
                else:
                    rest.append(s)
        else:
            rest = list(mine)
        rest.sort(key=lambda s: (-gang(s), s.job.arrival, s.job.index))
        ok = True
        spread: list[JobState] = []
        for s in rest:
            n = gang(s)
            need = -(-n // gps)
            chosen: list[tuple[int, int]] = []
            if need == 1:
                fits = [k for k in range(len(cap)) if cap[k] >= n]
                if fits:
                    k = min(fits, key=lambda k: (cap[k], k))
                    chosen = [(k, n)]
            else:
                full = sorted(range(len(cap)), key=lambda k: (-cap[k], k))[:need]
                if sum(cap[k] for k in full) >= n:
                    left = n
                    for k in full:
                        g = min(cap[k], left)
                        if g > 0:
                            chosen.append((k, g))
                            left -= g
            if not chosen:
                ok = False
                spread.append(s)
                continue
            for k, g in chosen:
                cap[k] -= g
            placed[s.job_id] = GrantPlacement(gpu_type, tuple(sorted(chosen)))
        for s in spread:
            left = gang(s)
            chosen = []
            for k in sorted(range(len(cap)), key=lambda k: (-cap[k], k)):
                g = min(cap[k], left)
                if g > 0:
                    chosen.append((k, g))
                    left -= g
                if left == 0:
                    break
            for k, g in chosen:
                cap[k] -= g
            placed[s.job_id] = GrantPlacement(gpu_type, tuple(sorted(chosen)))
        return placed, ok
