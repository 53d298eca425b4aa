r"""The simulator's view of a Pollux workload at fixed batches: one world for both families.

:class:`~optsched.goodput.policies.sim_adapter.SimPolicyAdapter` runs the policies of
:mod:`optsched.sim.policies` on the goodput world's jobs. Those policies read a
:class:`~optsched.sim.World` (jobs with a gang size, a rate per gang size and an amount of
work) and :class:`~optsched.sim.JobState`\ s (progress, attained service); this module builds
that world from a :class:`~optsched.goodput.workload.PolluxWorkload` and its job types'
measurements, once per run.

Every job trains at its owner's global batch :math:`M` (``batch_size``), so its work and its
rates are counted in **iterations at batch** :math:`M`:

* **rate** on :math:`k` GPUs: :math:`1 / T_M(k)` iterations per second, :math:`T_M(k)` the
  measured time of one step of batch :math:`M` on :math:`k` GPUs packed ``gpus_per_node`` to a
  node (:func:`~optsched.goodput.policies.optimus.oracle_step_time`: gradient accumulation when
  :math:`M / k` exceeds a GPU's largest batch). It does not depend on the epoch, so it is the
  simulator's constant rate; the job's true rate differs only when its placement is not packed;
* **work**: :math:`W = I_M(E)`, the iterations of the job type's validation runs after its last
  epoch :math:`E = \text{max\_epochs} - 1`, linear in :math:`M` between the validated batches
  (:func:`~optsched.goodput.policies.optimus.iterations_after`): the *oracle* the
  Optimus+Oracle baseline reads;
* **done** in epoch :math:`e`: :math:`I_M(e - 1)` (0 in epoch 0) -- the progress known at the
  granularity the policies of the goodput world see it (:attr:`JobView.epoch
  <optsched.goodput.decision.JobView.epoch>`).

The policies that read the work or the remaining work (``sjf``, ``srtf``, ``tiresias-gittins``'s
demand distribution, ``optimus``, ``themis``'s finish times, the ``makespan`` and ``ftf``
allocations) therefore use that oracle; ``fifo``, ``tiresias-las``, ``gandiva``,
``gandiva-fair`` and ``max-min`` read only arrivals, rates and attained service.

**Gangs.** ``job_kind = "rigid"``: one gang of the owner's GPU count (``num_replicas``),
``min_gpus = max_gpus``. ``"fixed_batch"``: the owner's count is the requested gang, and a
policy that sizes gangs (the ``-elastic`` variants, ``optimus``) may grant 1 to
:math:`\min(\lfloor M / m_\mathrm{min} \rfloor, G)` GPUs (``ncf``: 1), the same bound the
goodput world's fixed-batch jobs have, capped at the cluster's :math:`G` GPUs.

The cluster is one GPU type, :data:`GPU_TYPE`, of ``num_nodes`` servers of ``gpus_per_node``
GPUs; a restore costs the cluster's restart delay. Jobs are in submission order (ties: workload
order). Cost: :math:`O(J \cdot K)` trace look-ups (memoized per job type, batch and count) for
:math:`J` jobs of at most :math:`K` gang sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from optsched.errors import InvalidInstanceError
from optsched.goodput.cluster_jobs import SINGLE_GPU_TYPES
from optsched.goodput.policies.optimus import iterations_after, oracle_step_time
from optsched.goodput.traces import ModelTraces
from optsched.goodput.workload import PolluxWorkload
from optsched.sim.world.cluster import ClusterSpec, GpuType
from optsched.sim.world.jobs import SimJob, World
from optsched.sim.world.throughputs import Throughputs

__all__ = ["GPU_TYPE", "FixedBatchWorld", "fixed_batch_world"]

#: The one GPU type of the simulator's view of the goodput cluster.
GPU_TYPE = "gpu"


@dataclass(frozen=True)
class FixedBatchWorld:
    """A simulator world of a Pollux workload, and how to read a job's progress in it.

    Attributes
    ----------
    world : World
        The jobs in submission order, one GPU type (module notes).
    iterations : dict of str to tuple of float
        ``iterations[name][e]`` = :math:`I_M(e)`, iterations at the job's batch after epoch
        ``e``, for ``e`` in ``0 .. max_epochs - 1``.
    job_kind : str
        ``"rigid"`` or ``"fixed_batch"``.
    """

    world: World
    iterations: Mapping[str, tuple[float, ...]]
    job_kind: str

    @property
    def index(self) -> dict[str, int]:
        """Each job's position in the world (submission order), by name."""
        cached: dict[str, int] | None = self.__dict__.get("_index")
        if cached is None:
            cached = {j.job_id: j.index for j in self.world.jobs}
            object.__setattr__(self, "_index", cached)
        return cached

    def done(self, name: str, epoch: int) -> float:
        """Iterations done by job ``name`` at the start of ``epoch`` (module notes)."""
        if epoch <= 0:
            return 0.0
        table = self.iterations[name]
        return table[min(epoch, len(table)) - 1]


def _max_gang(app: str, batch: int, traces: ModelTraces, total: int) -> int:
    """The most GPUs a fixed-batch job of ``app`` at ``batch`` may hold (module notes)."""
    if app in SINGLE_GPU_TYPES:
        return 1
    return min(int(batch // traces.limits().min_local_bsz), total)


def fixed_batch_world(
    workload: PolluxWorkload,
    traces: Mapping[str, ModelTraces],
    num_nodes: int,
    gpus_per_node: int,
    job_kind: str,
    restart_delay: float,
) -> FixedBatchWorld:
    """The simulator's world of ``workload`` at fixed batches (module notes).

    Raises
    ------
    InvalidInstanceError
        ``job_kind`` not ``rigid``/``fixed_batch``; a job type without measurements; a rigid
        gang larger than the cluster or a batch below one GPU's smallest (naming the job).
    """
    if job_kind not in ("rigid", "fixed_batch"):
        raise InvalidInstanceError(
            "job_kind", f"must be 'rigid' or 'fixed_batch', got {job_kind!r}"
        )
    total = num_nodes * gpus_per_node
    order = sorted(range(len(workload.jobs)), key=lambda i: (workload.jobs[i].time, i))
    alone: dict[tuple[str, int], float] = {}
    step_times: dict[tuple[str, int, int], float] = {}
    jobs: list[SimJob] = []
    iterations: dict[str, tuple[float, ...]] = {}
    for index, i in enumerate(order):
        spec = workload.jobs[i]
        field = f"jobs[{spec.name}]"
        job_traces = traces.get(spec.application)
        if job_traces is None:
            raise InvalidInstanceError(
                f"{field}.application", f"no measurements for the job type {spec.application!r}"
            )
        if job_kind == "rigid":
            if spec.num_replicas > total:
                raise InvalidInstanceError(
                    f"{field}.num_replicas",
                    f"a rigid gang of {spec.num_replicas} GPUs cannot run on {total} GPUs",
                )
            low = high = wanted = spec.num_replicas
        else:
            high = _max_gang(spec.application, spec.batch_size, job_traces, total)
            if high < 1:
                raise InvalidInstanceError(
                    f"{field}.batch_size",
                    f"{spec.batch_size} is below one GPU's smallest batch of {spec.application}",
                )
            low, wanted = 1, min(spec.num_replicas, high)
        for k in range(low, high + 1):
            key = (spec.application, spec.batch_size, k)
            step = step_times.get(key)
            if step is None:
                step = step_times[key] = oracle_step_time(
                    job_traces, float(spec.batch_size), k, gpus_per_node
                )
            if not (math.isfinite(step) and step > 0):
                raise InvalidInstanceError(
                    f"{field}.batch_size", f"no positive step time on {k} GPUs (got {step!r})"
                )
            alone[(spec.name, k)] = 1.0 / step
        last = job_traces.max_epochs() - 1
        table = tuple(
            iterations_after(job_traces, float(spec.batch_size), e) for e in range(last + 1)
        )
        iterations[spec.name] = table
        jobs.append(
            SimJob(
                index=index,
                job_id=spec.name,
                arrival=float(spec.time),
                num_gpus=wanted,
                job_type=spec.name,
                work=table[-1],
                scale=1.0,
                weight=1.0,
                deadline=math.nan,
                model=spec.application,
                user="",
                min_gpus=low,
                max_gpus=high,
            )
        )
    throughputs = Throughputs(
        alone={(GPU_TYPE, True): alone},
        pairs={},
        generic_speed={GPU_TYPE: 1.0},
        reference=GPU_TYPE,
        source="goodput:fixed-batch",
    )
    cluster = ClusterSpec(
        gpu_types=(GpuType(name=GPU_TYPE, count=total, gpus_per_server=gpus_per_node),)
    )
    world = World(
        cluster=cluster, throughputs=throughputs, jobs=tuple(jobs), restore_s=restart_delay
    )
    return FixedBatchWorld(world, iterations, job_kind)
