r"""The goodput world's cluster: Pollux's simulator loop, with any goodput policy.

:func:`simulate` runs a Pollux workload (:mod:`~optsched.goodput.workload`) on ``num_nodes``
identical nodes of ``gpus_per_node`` GPUs, **as the artifact's simulator does**
(``Cluster.step`` of ``simulator/simulator.py``, branch ``osdi21-artifact``). Every
``interval`` seconds (60 by default):

1. every job is advanced over the interval (:func:`~optsched.goodput.job.advance`): a job
   with GPUs serves its remaining restart delay, then progresses at its measured rate; a job
   without GPUs only waits;
2. the jobs submitted by now and not complete are the *active* jobs; when there are any, each
   is shown to the policy as a :class:`~optsched.goodput.decision.JobView`, in workload order,
   with the allocations of the last decision (:func:`~optsched.goodput.cluster_jobs.job_view`);
3. the policy's allocations are checked (:func:`check_allocations`: active jobs only, node
   indices in range, each node's GPUs together, at most ``max_replicas`` GPUs, at most
   ``gpus_per_node`` GPUs on a node), a breach raising :class:`~optsched.errors.PolicyError`
   naming the job;
4. every job whose allocation differs from its last one is *reallocated*: with GPUs, it picks
   its batch configuration for the new placement and serves a restart delay of
   ``restart_delay`` seconds (30 s), and its restart count grows (the first allocation is
   restart 0); without GPUs, it stops.

The run stops when every job has completed (or after ``max_intervals`` decisions, leaving the
rest unfinished). Each job's batch is chosen by its *batcher*
(:mod:`~optsched.goodput.cluster_jobs`), which the policy's ``job_kind`` picks: ``"adaptive"``
(Pollux: the agent picks the goodput-optimal batch, except ``ncf``, held to 32768 as the
artifact does), ``"rigid"`` (Tiresias: the owner's GPU count and batch) or ``"fixed_batch"``
(Optimus: the owner's batch on any GPU count). A policy without a ``job_kind`` attribute gets
adaptive jobs.

Cost: per interval :math:`O(J)` job advances plus the policy's decision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.goodput.cluster_jobs import JOB_KINDS, ClusterJob, job_view
from optsched.goodput.decision import Allocation, ClusterView, GoodputPolicy
from optsched.goodput.job import RESTART_DELAY
from optsched.goodput.record import GoodputRun
from optsched.goodput.traces import ModelTraces, read_model_traces
from optsched.goodput.workload import PolluxWorkload, read_workload

__all__ = ["DEFAULT_MAX_INTERVALS", "check_allocations", "simulate"]

#: Decisions after which a run stops unfinished (100 days of 60-s intervals).
DEFAULT_MAX_INTERVALS = 144_000


def _load_traces(
    workload: PolluxWorkload, traces: Mapping[str, ModelTraces] | str | Path | None
) -> dict[str, ModelTraces]:
    if traces is None or isinstance(traces, (str, Path)):
        from optsched.goodput.artifact import simulator_dir

        root = simulator_dir(traces) / "traces"
        return {a: read_model_traces(root / a) for a in workload.applications}
    missing = [a for a in workload.applications if a not in traces]
    if missing:
        raise InvalidInstanceError(
            "traces", f"no measurements for the job type(s) {', '.join(missing)}"
        )
    return {a: traces[a] for a in workload.applications}


def _check_shape(num_nodes: int, gpus_per_node: int, interval: float, restart: float) -> None:
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise InvalidInstanceError("num_nodes", f"must be an integer >= 1, got {num_nodes!r}")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) \
            or not 1 <= gpus_per_node <= 9:  # fmt: skip
        # a placement is written one digit per node, as in the traces
        raise InvalidInstanceError(
            "gpus_per_node", f"must be an integer in 1..9, got {gpus_per_node!r}"
        )
    if not (math.isfinite(interval) and interval > 0):
        raise InvalidInstanceError("interval", f"must be a finite number > 0, got {interval!r}")
    if not (math.isfinite(restart) and restart >= 0):
        raise InvalidInstanceError(
            "restart_delay", f"must be a finite number >= 0, got {restart!r}"
        )


def check_allocations(
    result: object,
    views: Mapping[str, object],
    cluster: ClusterView,
    max_replicas: Mapping[str, int],
) -> dict[str, Allocation]:
    """Check a policy's answer; return it as tuples, jobs without GPUs left out.

    Raises
    ------
    PolicyError
        Naming the job (and node) of the first breach: a job not active, a node index out of
        range, a node's GPUs not together, more than ``max_replicas`` GPUs, or more than
        ``gpus_per_node`` GPUs on a node.
    """
    if not isinstance(result, Mapping):
        raise PolicyError(f"the policy returned {type(result).__name__}, not a mapping")
    out: dict[str, Allocation] = {}
    used = [0] * cluster.num_nodes
    owners: list[list[str]] = [[] for _ in range(cluster.num_nodes)]
    for name, raw in result.items():
        if name not in views:
            raise PolicyError(f"job {name!r}: allocated GPUs but is not an active job")
        try:
            alloc = tuple(int(n) for n in raw)
        except (TypeError, ValueError):
            raise PolicyError(
                f"job {name!r}: allocation {raw!r} is not a list of node indices"
            ) from None
        if not alloc:
            continue
        bad = [n for n in alloc if not 0 <= n < cluster.num_nodes]
        if bad:
            raise PolicyError(f"job {name!r}: node {bad[0]} is not in 0..{cluster.num_nodes - 1}")
        if sum(1 for i, n in enumerate(alloc) if i == 0 or n != alloc[i - 1]) != len(set(alloc)):
            raise PolicyError(f"job {name!r}: allocation {alloc} splits a node's GPUs")
        if len(alloc) > max_replicas[name]:
            raise PolicyError(
                f"job {name!r}: {len(alloc)} GPUs exceed its max_replicas {max_replicas[name]}"
            )
        for n in alloc:
            used[n] += 1
            if name not in owners[n]:
                owners[n].append(name)
            if used[n] > cluster.gpus_per_node:
                raise PolicyError(
                    f"job {name!r}: node {n} would hold {used[n]} GPUs, more than its "
                    f"{cluster.gpus_per_node} (jobs there: {', '.join(owners[n])})"
                )
        out[name] = alloc
    return out


def simulate(
    workload: PolluxWorkload | str | Path,
    policy: GoodputPolicy,
    *,
    num_nodes: int = 16,
    gpus_per_node: int = 4,
    interval: float = 60.0,
    traces: Mapping[str, ModelTraces] | str | Path | None = None,
    restart_delay: float = RESTART_DELAY,
    max_intervals: int = DEFAULT_MAX_INTERVALS,
) -> GoodputRun:
    """Run ``workload`` under ``policy`` (module notes).

    Parameters
    ----------
    workload : PolluxWorkload or path
        The jobs (a path is read with :func:`~optsched.goodput.workload.read_workload`).
    policy : GoodputPolicy
        Decides every interval. A stateful policy is reset first when it has ``reset()``.
    num_nodes, gpus_per_node : int
        The cluster (the artifact's defaults: 16 nodes of 4 GPUs; at most 9 GPUs a node).
    interval : float
        Seconds between decisions.
    traces : mapping of str to ModelTraces, or path, optional
        The job types' measurements by name; a path names the artifact's ``simulator/`` folder
        (default: :func:`~optsched.goodput.artifact.simulator_dir`).
    restart_delay : float
        Seconds without progress after each reallocation (the artifact's 30).
    max_intervals : int
        Decisions after which the run stops with the remaining jobs unfinished.

    Returns
    -------
    GoodputRun
    """
    if not isinstance(workload, PolluxWorkload):
        workload = read_workload(workload)
    _check_shape(num_nodes, gpus_per_node, float(interval), float(restart_delay))
    kind = getattr(policy, "job_kind", "adaptive")
    if kind not in JOB_KINDS:
        raise InvalidInstanceError(
            "job_kind", f"must be one of {', '.join(JOB_KINDS)}, got {kind!r}"
        )
    by_type = _load_traces(workload, traces)
    jobs = [
        ClusterJob(spec, by_type[spec.application], kind, restart_delay) for spec in workload.jobs
    ]
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()
    now = 0.0
    allocations: dict[str, Allocation] = {}
    for _ in range(max_intervals):
        if all(j.done for j in jobs):
            break
        for job in jobs:
            job.step(float(interval), now)
        now += interval
        for job in jobs:
            job.close_if_done(now)
        active = [j for j in jobs if j.spec.time <= now and not j.done]
        if not active:
            continue
        cluster = ClusterView(num_nodes, gpus_per_node, now)
        views = {j.spec.name: job_view(j, now) for j in active}
        previous = {k: v for k, v in allocations.items() if k in views}
        result = check_allocations(
            policy.allocate(views, cluster, dict(previous)), views, cluster,
            {k: v.max_replicas for k, v in views.items()},
        )  # fmt: skip
        for job in active:
            name = job.spec.name
            if result.get(name, ()) != previous.get(name, ()):
                job.reallocate(result.get(name, ()), now)
        allocations = result
    for job in jobs:
        job.close(now)
    return GoodputRun(
        policy=str(getattr(policy, "name", type(policy).__name__)),
        job_kind=kind,
        num_nodes=num_nodes,
        gpus_per_node=gpus_per_node,
        interval=float(interval),
        restart_delay=float(restart_delay),
        end_time=now,
        jobs=tuple(j.record() for j in jobs),
        traces=by_type,
        source=workload.source,
    )
