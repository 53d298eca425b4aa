r"""Rounds of Pollux's problem built from the artifact's workloads and traces.

A round needs, for every active job, what Pollux's policy reads (a
:class:`~optsched.goodput.decision.JobView`): its speedup function, service, bounds, restarts and
age. :class:`RoundSampler` builds them from a workload's jobs and their types' measurements:

* the active jobs are ``num_jobs`` consecutive jobs of the workload (a window ending at a random
  job), the decision at the first 60 s boundary after the last one's submission; each job's age
  is the time since its submission;
* a job's agent has profiled allocations of up to :math:`P` GPUs, :math:`P` drawn from
  :math:`\{1, 2, 4, 8, 16\}` (none, and no model, for a job younger than one interval); its
  throughput model is fitted (:func:`~optsched.goodput.fit.fit_throughput`) to the type's
  ``placements.csv`` rows of at most :math:`P` GPUs and its gradient statistics are those of a
  random epoch at the initial batch; its speedup is
  :class:`~optsched.goodput.speedup.SpeedupTable` of that model (``N`` without a model, as in
  the artifact);
* ``max_replicas`` is the artifact's :math:`\min(\max(2P, 1), 64, M_\mathrm{max} /
  m_\mathrm{min})` (1 for ``ncf``), ``min_replicas`` 0; attained service and restarts are drawn
  in proportion to the age.

Profiles, epochs, service and restarts are thus *drawn*, not replayed: the rounds have the
workload's arrivals and job mix and the traces' fitted speedups, not a simulation's history.
:func:`replay_rounds` then lets a policy decide a few consecutive rounds over these jobs
(ages, service and restarts advanced), so that the round measured has a previous allocation and,
for Pollux, a carried population.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import Allocation, ClusterView, GoodputPolicy, JobView, SpeedupFn
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.progress import gradient_stats, measurements
from optsched.goodput.speedup import SpeedupTable
from optsched.goodput.throughput import ThroughputParams
from optsched.goodput.traces import ModelTraces
from optsched.goodput.workload import PolluxJob, PolluxWorkload

__all__ = ["INTERVAL", "PROFILED_GPUS", "RoundSampler", "replay_rounds"]

#: Seconds between decisions in the artifact's simulator.
INTERVAL = 60.0
#: The largest allocations a sampled job may have profiled.
PROFILED_GPUS = (1, 2, 4, 8, 16)


def _replicas(num_nodes: int, num_replicas: int) -> float:
    """A job's speedup before it has a model: its GPU count (the artifact's)."""
    return float(num_replicas)


class RoundSampler:
    """Builds rounds of :class:`~optsched.goodput.decision.JobView` (module notes).

    Parameters
    ----------
    job_types : mapping of str to ModelTraces
        Every type the workload uses (:func:`~optsched.goodput.artifact.read_job_types`).
    num_nodes, gpus_per_node : int
        The cluster (the artifact's: 16 nodes of 4 GPUs).

    Notes
    -----
    Fits are cached per ``(type, P)``: at most five per type.
    """

    def __init__(
        self, job_types: Mapping[str, ModelTraces], *, num_nodes: int = 16, gpus_per_node: int = 4
    ) -> None:
        self.job_types = dict(job_types)
        self.num_nodes = int(num_nodes)
        self.gpus_per_node = int(gpus_per_node)
        self._fits: dict[tuple[str, int], ThroughputParams] = {}

    def params(self, application: str, profiled: int) -> ThroughputParams:
        """The model fitted to the type's placements of at most ``profiled`` GPUs."""
        from optsched.goodput.fit import StepMeasurements, fit_throughput

        key = (application, profiled)
        if key not in self._fits:
            data = measurements(self.job_types[application])
            keep = data.num_replicas <= profiled
            self._fits[key] = fit_throughput(
                StepMeasurements.of(
                    data.num_nodes[keep],
                    data.num_replicas[keep],
                    data.atomic_bsz[keep],
                    data.compute_time[keep],
                    data.step_time[keep],
                )
            )
        return self._fits[key]

    def _view(self, job: PolluxJob, time: float, rng: np.random.Generator) -> JobView:
        name, submitted, app = job.name, job.time, job.application
        if app not in self.job_types:
            raise InvalidInstanceError("application", f"no traces for job type {app!r}")
        traces = self.job_types[app]
        limits = traces.limits()
        age = time - submitted
        profiled = 0 if age < INTERVAL else int(rng.choice(PROFILED_GPUS))
        epoch = int(rng.integers(0, traces.max_epochs()))
        speedup: SpeedupFn = _replicas
        if profiled:
            stats = gradient_stats(traces, limits.init_batch_size, epoch)
            model = GoodputModel(self.params(app, profiled), stats, limits.init_batch_size)
            speedup = SpeedupTable(model, limits)
        cap = int(limits.max_batch_size // limits.min_local_bsz)
        max_replicas = 1 if app == "ncf" else min(max(2 * profiled, 1), 64, cap)
        return JobView(
            name=name,
            submission_time=float(submitted),
            attained_service=float(age * max(profiled, 1) * rng.uniform(0.25, 1.0)),
            min_replicas=0,
            max_replicas=max_replicas,
            num_restarts=int(rng.integers(0, 1 + int(age // 1800))),
            age=float(age),
            epoch=epoch,
            application=app,
            traces=traces,
            speedup=speedup,
        )

    def round(
        self, workload: PolluxWorkload, num_jobs: int, *, seed: int = 0
    ) -> tuple[dict[str, JobView], ClusterView]:
        """``num_jobs`` active jobs of ``workload`` and the cluster at their decision."""
        if not 1 <= num_jobs <= len(workload):
            raise InvalidInstanceError("num_jobs", f"must be in [1, {len(workload)}], got "
                                       f"{num_jobs}")  # fmt: skip
        rng = np.random.default_rng(seed)
        end = int(rng.integers(num_jobs - 1, len(workload)))
        window = workload.jobs[end - num_jobs + 1 : end + 1]
        time = (math.floor(window[-1].time / INTERVAL) + 1) * INTERVAL
        views = {job.name: self._view(job, time, rng) for job in window}
        return views, ClusterView(self.num_nodes, self.gpus_per_node, time)


def replay_rounds(
    policy: GoodputPolicy,
    jobs: Mapping[str, JobView],
    cluster: ClusterView,
    rounds: int,
    previous: Mapping[str, Allocation] | None = None,
) -> tuple[dict[str, JobView], ClusterView, dict[str, Allocation]]:
    """Let ``policy`` decide ``rounds`` consecutive rounds over the same jobs.

    After each decision every job ages by :data:`INTERVAL`, gains the GPU-seconds it was given
    and counts a restart when its allocation changed after a first one.

    Returns
    -------
    (jobs, cluster, previous)
        The next round's jobs and cluster and the last allocations.
    """
    views = dict(jobs)
    prev: dict[str, Allocation] = dict(previous or {})
    for _ in range(rounds):
        alloc = policy.allocate(views, cluster, prev)
        nxt = {}
        for name, view in views.items():
            new = tuple(alloc.get(name, ()))
            old = prev.get(name, ())
            restarts = view.num_restarts + (1 if new != old and old else 0)
            nxt[name] = dataclasses.replace(
                view,
                age=view.age + INTERVAL,
                attained_service=view.attained_service + INTERVAL * len(new),
                num_restarts=restarts,
            )
        views = nxt
        prev = {k: tuple(v) for k, v in alloc.items()}
        cluster = ClusterView(cluster.num_nodes, cluster.gpus_per_node, cluster.time + INTERVAL)
    return views, cluster, prev
