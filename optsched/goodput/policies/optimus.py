r"""Optimus+Oracle as Pollux's simulator runs it: GPUs by marginal gain in remaining time.

After Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning
Clusters", EuroSys 2018, in the form of the Pollux artifact's baseline
(``simulator/optimus.py``, branch ``osdi21-artifact``), whose *oracle* reads the true step
times and iteration counts from the job type's traces (:attr:`JobView.traces
<optsched.goodput.decision.JobView.traces>`) instead of fitting them. Each job trains at its
fixed global batch :math:`M` (``target_batch_size``). At a decision:

* a job in epoch :math:`e` has :math:`R = I_M(E) - I_M(e)` iterations left, where
  :math:`E = \text{max\_epochs} - 1` and :math:`I_M(e)` is the validation runs' iteration count
  after epoch :math:`e`, linear in :math:`M` between the measured batches; :math:`R = 1` once
  :math:`e \ge E`;
* :math:`T(k)` is the oracle's time per step on :math:`k` GPUs packed ``gpus_per_node`` to a
  node: :math:`T_\mathrm{step} + s\,(T_\mathrm{step} - T_\mathrm{sync})` at the split of
  :math:`M` over :math:`k` GPUs (at least one accumulation step on one GPU), the per-GPU batch
  capped at :math:`\lfloor M_\max / (k(s+1)) \rfloor`;
* every job gets one GPU while GPUs last (in the order given); then, one GPU at a time, the job
  with the largest marginal gain :math:`(T(k) - T(k+1)) R > 0` gets one more (the first of
  equal gains), a job's gain being 0 at its ``max_replicas`` or once no GPU is left;
* a job keeps its previous GPUs when their count is unchanged; the others are placed most free
  node first (:func:`~optsched.goodput.policies.placement.most_free_first`), fewest GPUs first
  (the order given among equal counts).

The artifact packs 4 GPUs to a node in :math:`T(k)`, whatever the cluster; this packs
``gpus_per_node`` (the same on its default cluster).

Cost per decision: :math:`O(G \cdot J)` for ``G`` GPUs and ``J`` jobs, plus one trace look-up
per new :math:`(M, k)` of a job type (memoized).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import Allocation, ClusterView, JobView
from optsched.goodput.policies.placement import free_gpus, keep_known, most_free_first
from optsched.goodput.progress import measured_step_time
from optsched.goodput.traces import ModelTraces

__all__ = ["OptimusOraclePolicy", "iterations_after", "oracle_step_time"]

_SLACK = 1e-8


def iterations_after(traces: ModelTraces, batch_size: float, epoch: int) -> float:
    """Iterations done after ``epoch`` at global batch ``batch_size`` (linear between batches)."""
    sizes = list(traces.validation)
    lower = max((b for b in sizes if b <= batch_size), default=None)
    upper = min((b for b in sizes if b >= batch_size), default=None)
    if lower is None or upper is None:
        raise InvalidInstanceError(
            "target_batch_size", f"{batch_size:g} is outside the validated batches of "
            f"{traces.name} [{sizes[0]}, {sizes[-1]}]"
        )  # fmt: skip
    low = float(traces.validation[lower].iteration[epoch])
    if lower == upper:
        return low
    high = float(traces.validation[upper].iteration[epoch])
    return ((batch_size - lower) * high + (upper - batch_size) * low) / (upper - lower)


def oracle_step_time(
    traces: ModelTraces, batch_size: float, num_replicas: int, gpus_per_node: int
) -> float:
    """:math:`T(k)` of the module notes: measured time per step of ``batch_size`` on ``k`` GPUs."""
    full, rest = divmod(num_replicas, gpus_per_node)
    placement = (gpus_per_node,) * full + ((rest,) if rest else ())
    limits = traces.limits()
    local = math.ceil(batch_size / num_replicas - _SLACK)
    steps = math.ceil(local / limits.max_local_bsz - _SLACK) - 1
    if num_replicas == 1:
        steps = max(1, steps)
    atomic = math.ceil(local / (steps + 1) - _SLACK)
    atomic = min(atomic, int(limits.max_batch_size / (num_replicas * (steps + 1))))
    step, sync = measured_step_time(traces, placement, atomic)
    return step + (step - sync) * steps


class OptimusOraclePolicy:
    """Optimus with the oracle's step times and iteration counts (module notes)."""

    name = "optimus-oracle"
    job_kind = "fixed_batch"

    def __init__(self) -> None:
        self._times: dict[tuple[int, float, int, int], tuple[ModelTraces, float]] = {}

    def reset(self) -> None:
        """Drop the memoized step times."""
        self._times.clear()

    def step_time(self, job: JobView, num_replicas: int, gpus_per_node: int) -> float:
        """:math:`T(k)` of ``job`` (memoized per job type, batch, ``k`` and node size)."""
        batch = float(self._batch(job))
        key = (id(job.traces), batch, num_replicas, gpus_per_node)
        hit = self._times.get(key)
        if hit is None or hit[0] is not job.traces:
            hit = (job.traces, oracle_step_time(job.traces, batch, num_replicas, gpus_per_node))
            self._times[key] = hit
        return hit[1]

    @staticmethod
    def _batch(job: JobView) -> int:
        if job.target_batch_size is None:
            raise InvalidInstanceError(
                f"jobs[{job.name}].target_batch_size", "Optimus needs each job's fixed batch"
            )
        return job.target_batch_size

    def _gain(self, job: JobView, k: int, remaining: float, per_node: int) -> float:
        return (self.step_time(job, k, per_node) - self.step_time(job, k + 1, per_node)) * remaining

    def _remaining(self, job: JobView) -> float:
        last = job.traces.max_epochs() - 1
        if last <= job.epoch:
            return 1.0
        batch = self._batch(job)
        return iterations_after(job.traces, batch, last) - iterations_after(
            job.traces, batch, job.epoch
        )

    def replicas(self, jobs: Mapping[str, JobView], cluster: ClusterView) -> dict[str, int]:
        """GPUs per job by marginal gain (module notes)."""
        per_node = cluster.gpus_per_node
        remaining = {k: self._remaining(j) for k, j in jobs.items()}
        left = cluster.num_gpus
        count: dict[str, int] = {}
        gain: dict[str, float] = {}
        for key, job in jobs.items():
            if left < 1:
                count[key], gain[key] = 0, 0.0
                continue
            count[key] = 1
            left -= 1
            if count[key] + 1 > job.max_replicas or left < 1:
                gain[key] = 0.0
            else:
                gain[key] = self._gain(job, 1, remaining[key], per_node)
        while left > 0 and gain and max(gain.values()) > 0:
            key = max(gain, key=gain.__getitem__)
            job = jobs[key]
            count[key] += 1
            if count[key] + 1 > job.max_replicas or left < 1:
                gain[key] = 0.0
            else:
                gain[key] = self._gain(job, count[key], remaining[key], per_node)
            left -= 1
        return count

    def allocate(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        previous: Mapping[str, Allocation],
    ) -> dict[str, Allocation]:
        """The allocations (module notes)."""
        count = self.replicas(jobs, cluster)
        allocations = {k: v for k, v in keep_known(previous, jobs).items() if len(v) == count[k]}
        free = free_gpus(cluster, allocations.values())
        for key in sorted(jobs, key=count.__getitem__):
            if count[key] > 0 and not allocations.get(key):
                allocations[key] = most_free_first(free, count[key], key)
        return allocations
