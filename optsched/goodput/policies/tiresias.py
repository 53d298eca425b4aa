r"""Tiresias as Pollux's simulator runs it: two priority queues of rigid jobs.

After Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019, in
the discretized two-queue form of the Pollux artifact's baseline (``simulator/tiresias.py``,
branch ``osdi21-artifact``). Each job asks for a fixed gang of ``max_replicas`` GPUs (its
owner's count). At every decision, at time :math:`t` (whole seconds, truncated):

1. new jobs join the end of queue 0 as *pending*, in the order given (workload order);
2. a job that was *running* since the last decision adds :math:`t - t_\mathrm{last}` to its
   executed time (whole seconds); once :math:`\lfloor e \cdot k \rfloor \ge` ``threshold``
   (16 GPU-hours, in GPU-seconds) it moves from queue 0 to the end of queue 1 (jobs examined in
   the order given). A pending job accumulates pending time; with ``starvation > 0`` a job of
   queue 1 pending at least ``starvation`` times its executed time goes back to queue 0 with its
   executed time reset (the artifact's knob, 0 = off, as it runs);
3. queue 0 then queue 1, each in queue order: a job whose gang fits into the GPUs not yet
   promised is *running*, else *pending* (it loses its GPUs) -- later, smaller jobs may still
   run (backfilling over a count, not over nodes);
4. a running job keeps its previous GPUs; one without GPUs gets them most free node first
   (:func:`~optsched.goodput.policies.placement.most_free_first`), queue 0 first.

A job's status at a decision is the one set at the previous decision (a job just preempted
counts as pending, a job just started as running). Executed time counts the whole interval,
restart delay included, as the artifact's does.

Cost per decision: :math:`O(J \cdot n)` for ``J`` jobs and ``n`` nodes.
"""

from __future__ import annotations

from collections.abc import Mapping

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import Allocation, ClusterView, JobView
from optsched.goodput.policies.placement import free_gpus, keep_known, most_free_first

__all__ = ["TIRESIAS_THRESHOLD", "TiresiasPolicy"]

#: The artifact's queue threshold: 16 GPU-hours, in GPU-seconds.
TIRESIAS_THRESHOLD = 3600 * 16


class TiresiasPolicy:
    """Two-queue Tiresias (module notes); one instance per run (state across decisions).

    Parameters
    ----------
    threshold : int
        GPU-seconds of service after which a job drops to queue 1.
    starvation : float
        The starvation knob (0: off, the artifact's setting).
    """

    name = "tiresias"
    job_kind = "rigid"

    def __init__(self, threshold: int = TIRESIAS_THRESHOLD, starvation: float = 0.0) -> None:
        if threshold <= 0:
            raise InvalidInstanceError("threshold", f"must be > 0, got {threshold!r}")
        if starvation < 0:
            raise InvalidInstanceError("starvation", f"must be >= 0, got {starvation!r}")
        self.threshold = threshold
        self.starvation = starvation
        self.reset()

    def reset(self) -> None:
        """Forget every job (before a new run)."""
        self.queues: tuple[list[str], list[str]] = ([], [])
        self.running: dict[str, bool] = {}
        self.last_check: dict[str, int] = {}
        self.total_executed: dict[str, int] = {}
        self.executed: dict[str, int] = {}
        self.last_pending: dict[str, int] = {}
        self.pending: dict[str, int] = {}

    def _update_queues(self, jobs: Mapping[str, JobView], now: int) -> None:
        q0, q1 = self.queues
        for name, job in jobs.items():
            elapsed = int(now - self.last_check.get(name, 0))
            self.last_check[name] = now
            if self.running[name]:
                self.total_executed[name] = self.total_executed.get(name, 0) + elapsed
                self.executed[name] = self.executed.get(name, 0) + elapsed
                if name in q0 and int(self.executed[name] * job.max_replicas) >= self.threshold:
                    q0.remove(name)
                    q1.append(name)
                continue
            self.pending[name] = self.pending.get(name, 0) + elapsed
            executed = self.executed.get(name, 0)
            if executed > 0:
                self.last_pending[name] = self.last_pending.get(name, 0) + elapsed
            if (self.starvation > 0 and name not in q0 and executed > 0
                    and self.total_executed.get(name, 0) > 0
                    and self.last_pending[name] >= int(executed * self.starvation)):  # fmt: skip
                self.executed[name] = 0
                self.last_pending[name] = 0
                q0.append(name)
                q1.remove(name)

    def allocate(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        previous: Mapping[str, Allocation],
    ) -> dict[str, Allocation]:
        """The allocations of the running jobs (module notes)."""
        now = int(cluster.time)
        q0, q1 = self.queues
        q0[:] = [k for k in q0 if k in jobs]
        q1[:] = [k for k in q1 if k in jobs]
        self.running = {k: v for k, v in self.running.items() if k in jobs}
        allocations = keep_known(previous, jobs)
        for name in jobs:
            if name not in self.running:
                self.running[name] = False
                q0.append(name)
        self._update_queues(jobs, now)
        budget = cluster.num_gpus
        for queue in (q0, q1):
            for name in queue:
                fits = jobs[name].max_replicas <= budget
                self.running[name] = fits
                if fits:
                    budget -= jobs[name].max_replicas
                else:
                    allocations.pop(name, None)
        free = free_gpus(cluster, allocations.values())
        for queue in (q0, q1):
            for name in queue:
                if self.running[name] and not allocations.get(name):
                    allocations[name] = most_free_first(free, jobs[name].max_replicas, name)
        return allocations
