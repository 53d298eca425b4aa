r"""The heterogeneous goodput world: Sia's simulator loop, with any heterogeneous policy.

:func:`simulate_hetero` runs a workload (Sia's CSVs have Pollux's columns:
:func:`~optsched.goodput.workload.read_workload`) on a cluster of several GPU types
(:data:`~optsched.goodput.hetero.apps.SIA_CLUSTER` by default) **as Sia's simulator does**
(``Cluster.step`` and ``Cluster.optimize_policy`` of ``sia-simulator/cluster.py``). Every
``interval`` seconds (60 for Sia and Pollux, 360 for Gavel in the paper's runs):

1. every job is advanced over the interval (:meth:`~optsched.goodput.hetero.job.HeteroJob.step`);
2. the jobs submitted by now and not complete are the *active* jobs; when there are any, the
   policy sees each as a :class:`HeteroJobView` in workload order, with the allocations of
   the last decision;
3. the answer -- per job a GPU type and one node index (of that type) per GPU, each node's GPUs
   together -- is checked (:func:`check_hetero`; a breach raises
   :class:`~optsched.errors.PolicyError` naming the job);
4. every job whose allocation changed is reallocated
   (:meth:`~optsched.goodput.hetero.job.HeteroJob.reallocate`: a restart only when its GPU type
   or its placement tuple changed).

The run stops once every job has completed. Its metrics follow Sia's ``print_run_stats.py``:
a job's JCT is its completion minus its submission time, the makespan the last completion
minus the first submission, and the **GPU-hours** are the GPUs each decision allocates times
the interval, summed over decisions (a job finishing inside an interval is counted for the
whole interval, as the simulator's log records it).

Sia's simulator also caps a placement at the GPU type's ``max_physical_nodes`` (16 aws, 2
dgx-ext, 3 rtx nodes); a cluster no larger than those (its default) never reaches the cap, and
this world refuses an allocation over more nodes than the type has.

Cost: per interval :math:`O(J)` job advances plus the policy's decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.goodput.hetero.apps import SIA_CLUSTER, GpuType, HeteroApp, load_apps
from optsched.goodput.hetero.job import FixedBatcher, HeteroBatcher, HeteroJob, Stretch
from optsched.goodput.workload import PolluxJob, PolluxWorkload, read_workload

__all__ = [
    "HeteroAllocation",
    "HeteroClusterView",
    "HeteroJobRecord",
    "HeteroJobView",
    "HeteroPolicy",
    "HeteroRun",
    "check_hetero",
    "placement_runs",
    "simulate_hetero",
]

#: ``(GPU type, node index per GPU)``; a job without GPUs is left out of a decision.
HeteroAllocation = tuple[str, tuple[int, ...]]

#: Decisions after which a run stops unfinished (100 days of 60-s intervals).
MAX_INTERVALS = 144_000


@dataclass(frozen=True)
class HeteroJobView:
    """One active job as a heterogeneous policy sees it (Sia's ``JobInfo``).

    ``apps`` are the job type's measurements per GPU type: the oracle Gavel's throughput
    estimate reads (Sia's ``predict_throughput``); ``state`` is the job itself, for policies
    that read its learned model (Sia's goodput estimates).
    """

    name: str
    submission_time: float
    age: float
    attained_service: float
    num_restarts: int
    epoch: int
    progress: float
    application: str
    target_batch_size: int
    target_num_replicas: int
    apps: Mapping[str, HeteroApp]
    state: HeteroJob


@dataclass(frozen=True)
class HeteroClusterView:
    """The GPU types at a decision at ``time`` seconds."""

    gpu_types: tuple[GpuType, ...]
    time: float


class HeteroPolicy(Protocol):
    """A policy of the heterogeneous world (module notes)."""

    name: str

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """Return a GPU type and nodes for every job that gets GPUs."""
        ...


@dataclass(frozen=True)
class HeteroJobRecord:
    """One job's outcome and the stretches of its time (for the validator)."""

    name: str
    application: str
    submission_time: float
    completion_time: float | None
    num_restarts: int
    attained_service: float
    target_batch_size: int
    stretches: tuple[Stretch, ...]

    @property
    def jct(self) -> float | None:
        """Completion minus submission, once complete."""
        c = self.completion_time
        return None if c is None else c - self.submission_time


@dataclass(frozen=True)
class HeteroRun:
    """A run: the jobs, and every decision's allocations ``(time, {job: allocation})``."""

    policy: str
    gpu_types: tuple[GpuType, ...]
    interval: float
    end_time: float
    jobs: tuple[HeteroJobRecord, ...]
    decisions: tuple[tuple[float, dict[str, HeteroAllocation]], ...]
    apps: Mapping[str, Mapping[str, HeteroApp]]
    fixed_batch: bool

    @property
    def complete(self) -> bool:
        """Whether every job completed."""
        return all(j.completion_time is not None for j in self.jobs)

    def avg_jct(self) -> float:
        """Mean JCT of the completed jobs, seconds."""
        jcts = [j.jct for j in self.jobs if j.jct is not None]
        if not jcts:
            raise InvalidInstanceError("jobs", "no job completed")
        return sum(jcts) / len(jcts)

    def makespan(self) -> float:
        """Last completion minus first submission, seconds."""
        done = [j.completion_time for j in self.jobs if j.completion_time is not None]
        if not done:
            raise InvalidInstanceError("jobs", "no job completed")
        return max(done) - min(j.submission_time for j in self.jobs)

    def gpu_hours(self, by_type: bool = False) -> float | dict[str, float]:
        """GPUs allocated at each decision times the interval, in hours (module notes)."""
        per: dict[str, float] = {}
        for _, allocs in self.decisions:
            for gpu_type, nodes in allocs.values():
                per[gpu_type] = per.get(gpu_type, 0.0) + len(nodes) * self.interval
        if by_type:
            return {k: v / 3600 for k, v in per.items()}
        return sum(per.values()) / 3600


def placement_runs(nodes: Sequence[int]) -> tuple[int, ...]:
    """GPUs per run of equal node indices: ``(0, 0, 3) -> (2, 1)`` (Sia's placement rule)."""
    out: list[int] = []
    for i, n in enumerate(nodes):
        if i and n == nodes[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return tuple(out)


def check_hetero(
    result: object, active: Mapping[str, object], gpu_types: Sequence[GpuType]
) -> dict[str, HeteroAllocation]:
    """Check a policy's answer; return it normalized, jobs without GPUs left out.

    Raises
    ------
    PolicyError
        Naming the job of the first breach: not active, an unknown GPU type, a node out of
        range, a node's GPUs not together, or a node over its GPUs.
    """
    if not isinstance(result, Mapping):
        raise PolicyError(f"the policy returned {type(result).__name__}, not a mapping")
    types = {g.name: g for g in gpu_types}
    used: dict[tuple[str, int], int] = {}
    out: dict[str, HeteroAllocation] = {}
    for name, raw in result.items():
        if name not in active:
            raise PolicyError(f"job {name!r}: allocated GPUs but is not an active job")
        try:
            gpu_type, nodes = raw
            alloc = tuple(int(n) for n in nodes)
        except (TypeError, ValueError):
            raise PolicyError(f"job {name!r}: {raw!r} is not (GPU type, nodes)") from None
        if not alloc:
            continue
        if gpu_type not in types:
            raise PolicyError(f"job {name!r}: GPU type {gpu_type!r} is not in the cluster")
        g = types[gpu_type]
        if any(not 0 <= n < g.num_nodes for n in alloc):
            raise PolicyError(f"job {name!r}: a node of {alloc} is not in 0..{g.num_nodes - 1}")
        if len(placement_runs(alloc)) != len(set(alloc)):
            raise PolicyError(f"job {name!r}: allocation {alloc} splits a node's GPUs")
        for n in alloc:
            used[gpu_type, n] = used.get((gpu_type, n), 0) + 1
            if used[gpu_type, n] > g.gpus_per_node:
                raise PolicyError(f"job {name!r}: {gpu_type} node {n} over its GPUs")
        out[name] = (gpu_type, alloc)
    return out


def _view(job: HeteroJob, now: float) -> HeteroJobView:
    s = job.spec
    return HeteroJobView(s.name, s.time, now - s.time, job.attained_service,
                         job.num_restarts or 0, job.epoch, job.progress, s.application,
                         s.batch_size, s.num_replicas, job.apps, job)  # fmt: skip


def _record(job: HeteroJob) -> HeteroJobRecord:
    s = job.spec
    return HeteroJobRecord(s.name, s.application, s.time, job.completion_time,
                           job.num_restarts or 0, job.attained_service, s.batch_size,
                           tuple(job.stretches))  # fmt: skip


def simulate_hetero(
    workload: PolluxWorkload | str | Path,
    policy: HeteroPolicy,
    traces: str | Path | Mapping[str, Mapping[str, HeteroApp]],
    *,
    gpu_types: Sequence[GpuType] = SIA_CLUSTER,
    interval: float = 60.0,
    max_intervals: int = MAX_INTERVALS,
) -> HeteroRun:
    """Run ``workload`` under ``policy`` (module notes).

    Parameters
    ----------
    workload : PolluxWorkload or path
        The jobs (Sia's workload CSV).
    policy : HeteroPolicy
        Decides every interval. Its ``batcher(spec, apps)`` (when it has one) makes each job's
        batcher; otherwise jobs keep their owner's batch (:class:`FixedBatcher`).
    traces : path or mapping
        Sia's ``traces/`` folder, or ``{job type: {GPU type: HeteroApp}}``.
    gpu_types : sequence of GpuType
    interval : float
        Seconds between decisions.
    max_intervals : int
        Decisions after which the run stops with the rest unfinished.
    """
    if not isinstance(workload, PolluxWorkload):
        workload = read_workload(workload)
    if not interval > 0:
        raise InvalidInstanceError("interval", f"must be > 0, got {interval!r}")
    types = tuple(gpu_types)
    if isinstance(traces, (str, Path)):
        apps = load_apps(traces, workload.applications, [g.name for g in types])
    else:
        apps = {k: dict(v) for k, v in traces.items()}
    missing = [a for a in workload.applications if a not in apps]
    if missing:
        raise InvalidInstanceError("traces", f"no measurements for {', '.join(missing)}")
    make = getattr(policy, "batcher", None)

    def batcher(spec: PolluxJob) -> HeteroBatcher:
        return make(spec, apps[spec.application]) if callable(make) else FixedBatcher(
            spec.batch_size)  # fmt: skip

    jobs = [HeteroJob(s, apps[s.application], batcher(s)) for s in workload.jobs]
    now = 0.0
    allocations: dict[str, HeteroAllocation] = {}
    decisions: list[tuple[float, dict[str, HeteroAllocation]]] = []
    for _ in range(max_intervals):
        if all(j.done for j in jobs):
            break
        for job in jobs:
            job.step(float(interval), now)
        now += interval
        active = [j for j in jobs if j.spec.time <= now and not j.done]
        if not active:
            continue
        views = {j.spec.name: _view(j, now) for j in active}
        previous = {k: v for k, v in allocations.items() if k in views}
        result = check_hetero(policy.allocate(views, HeteroClusterView(types, now), previous),
                              views, types)  # fmt: skip
        for job in active:
            new = result.get(job.spec.name)
            if new != previous.get(job.spec.name):
                job.reallocate(new[0] if new else None, placement_runs(new[1]) if new else ())
        allocations = result
        decisions.append((now, result))
    return HeteroRun(str(getattr(policy, "name", type(policy).__name__)), types, float(interval),
                     now, tuple(_record(j) for j in jobs), tuple(decisions), apps,
                     not callable(make))  # fmt: skip
