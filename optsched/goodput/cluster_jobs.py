r"""The jobs of the goodput world's cluster: their batchers, bookkeeping and policy views.

A :class:`ClusterJob` is one workload row in a run of :func:`~optsched.goodput.cluster.simulate`:
its state (:class:`~optsched.goodput.job.JobState`), its allocation and batch configuration, its
restart count, the GPU time it held, and the record of its allocation segments. How it is
built and shown to the policy follows the artifact's ``Cluster.__init__`` and
``get_{pollux,tiresias,optimus}_job_info`` (``simulator/simulator.py``, ``osdi21-artifact``):

================  ============================  ===========================  ==================
``job_kind``      batch                         ``max_replicas``             policy
================  ============================  ===========================  ==================
``adaptive``      the agent's goodput optimum   :math:`\min(\max(2 K_p, 1),  Pollux
                  (``ncf``: fixed at 32768)     64, \lfloor M_\max /
                                                m_\min \rfloor)` (ncf: 1)
``rigid``         the owner's batch             the owner's GPU count        Tiresias
``fixed_batch``   the owner's batch             :math:`\lfloor M /           Optimus+Oracle
                                                m_\min \rfloor` (ncf: 1)
================  ============================  ===========================  ==================

(:math:`K_p` is the most GPUs the job has been profiled on.) Every job profiles the
configurations it runs, as in the artifact; a fixed-batch job fits its model only when its
speedup is asked for. ``min_replicas`` is 0 for all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from optsched.errors import InvalidInstanceError
from optsched.goodput.agent import PolluxAgent
from optsched.goodput.batch import BatchLimits
from optsched.goodput.decision import Allocation, JobView, placement_of
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements, fit_throughput
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.job import Batcher, JobState, advance, fixed_batch_split
from optsched.goodput.progress import normalize_placement
from optsched.goodput.record import AllocationSegment, JobRecord
from optsched.goodput.speedup import SpeedupTable
from optsched.goodput.throughput import ThroughputParams
from optsched.goodput.traces import ModelTraces
from optsched.goodput.workload import PolluxJob

__all__ = ["ADAPTIVE_FIXED_BATCH", "JOB_KINDS", "MAX_ADAPTIVE_REPLICAS", "ClusterJob", "job_view"]

#: The job kinds a policy may ask for (module table).
JOB_KINDS = ("adaptive", "rigid", "fixed_batch")
#: Job types an adaptive policy still runs at a fixed global batch (the artifact's ncf case).
ADAPTIVE_FIXED_BATCH: dict[str, int] = {"ncf": 32768}
#: Job types limited to one GPU by the baselines and Pollux alike.
SINGLE_GPU_TYPES = ("ncf",)
#: The most GPUs an adaptive job may ask for (the artifact's simulator "can't handle more").
MAX_ADAPTIVE_REPLICAS = 64


class FixedProfiled(PolluxAgent):
    """A fixed-batch batcher that still profiles what it runs (as every artifact job does).

    It chooses :func:`~optsched.goodput.job.fixed_batch_split` of its batch; its model is
    fitted only when asked for (:meth:`model_of`), once per profile size.
    """

    def __init__(self, limits: BatchLimits, batch_size: float) -> None:
        super().__init__(limits)
        self.batch_size = batch_size
        self._fits: dict[int, ThroughputParams] = {}

    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Take the statistics; record a configuration not profiled yet (no refit)."""
        self.stats = stats
        self.profile.setdefault((num_nodes, num_replicas, atomic_bsz), (step_time, sync_time))

    def model_of(self, size: int, stats: GradientStats | None) -> GoodputModel | None:
        """The model fitted to the first ``size`` profiled configurations, with ``stats``."""
        if size == 0 or stats is None:
            return None
        params = self._fits.get(size)
        if params is None:
            keys = list(self.profile)[:size]
            times = [self.profile[k] for k in keys]
            params = self._fits[size] = fit_throughput(
                StepMeasurements.of(
                    [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                    [t[0] - t[1] for t in times], [t[0] for t in times],
                )
            )  # fmt: skip
        return GoodputModel(params, stats, self.limits.init_batch_size)

    def choose(self, placement: str) -> tuple[int, int]:
        """The fixed batch split over the placement's GPUs."""
        replicas = sum(int(d) for d in normalize_placement(placement))
        return fixed_batch_split(self.limits, self.batch_size, replicas)


class LazySpeedup:
    r"""A job's speedup function, built on first use from the model it had at the decision.

    Before the job has a model, :math:`\mathrm{SPEEDUP}(N, K) = K` (the artifact's
    ``lambda n, r: r``).
    """

    def __init__(self, make_model: Callable[[], GoodputModel | None], limits: BatchLimits):
        self._make_model = make_model
        self._limits = limits
        self._table: SpeedupTable | None = None
        self._unfitted = False

    def _built(self) -> SpeedupTable | None:
        if self._table is None and not self._unfitted:
            model = self._make_model()
            if model is None:
                self._unfitted = True
            else:
                self._table = SpeedupTable(model, self._limits)
        return self._table

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        table = self._built()
        if table is None:
            return float(num_replicas)
        return table(num_nodes, num_replicas)

    def many(self, pairs: Sequence[tuple[int, int]]) -> list[float]:
        """The speedup of each ``(num_nodes, num_replicas)`` pair (:meth:`SpeedupTable.many`)."""
        table = self._built()
        if table is None:
            return [float(n) for _, n in pairs]
        return table.many(pairs)


class _Recorder:
    """Wraps a batcher to note the configuration in force at each stretch of constant rate."""

    def __init__(self, inner: Batcher, config: tuple[int, int]) -> None:
        self.inner = inner
        self.current = config
        self.stretches: list[tuple[int, int]] = []

    def observe(self, num_nodes: int, num_replicas: int, atomic_bsz: int, step_time: float,
                sync_time: float, stats: GradientStats) -> None:  # fmt: skip
        self.stretches.append(self.current)
        self.inner.observe(num_nodes, num_replicas, atomic_bsz, step_time, sync_time, stats)

    def choose(self, placement: str) -> tuple[int, int]:
        self.current = self.inner.choose(placement)
        return self.current


class ClusterJob:
    """One job of a run (module notes)."""

    def __init__(self, spec: PolluxJob, traces: ModelTraces, kind: str, restart: float) -> None:
        self.spec = spec
        self.traces = traces
        self.kind = kind
        self.restart_delay = restart
        self.limits = traces.limits()
        fixed: float | None = None
        if kind == "adaptive":
            fixed = ADAPTIVE_FIXED_BATCH.get(spec.application)
        else:
            fixed = float(spec.batch_size)
        self.fixed_batch = fixed
        self.batcher: PolluxAgent = (
            PolluxAgent(self.limits) if fixed is None else FixedProfiled(self.limits, fixed)
        )
        self.state = JobState()
        self.allocation: Allocation = ()
        self.placement = ""
        self.config = (0, 0)
        self.num_restarts: int | None = None
        self.attained_service = 0.0
        self.segments: list[AllocationSegment] = []
        self._open: tuple[float, Allocation, list[list[int]]] | None = None

    @property
    def done(self) -> bool:
        """Whether the job has completed."""
        return self.state.completion_time is not None

    def step(self, seconds: float, now: float) -> None:
        """Advance over ``[now, now + seconds)`` (the artifact's ``Job.step``)."""
        if not self.allocation or self.done:
            self.state = replace(self.state, time=self.state.time + seconds)
            return
        recorder = _Recorder(self.batcher, self.config)
        start = self.state.time
        self.state, self.config = advance(
            self.traces, self.state, self.placement, self.config, seconds, batcher=recorder
        )
        held = (self.state.completion_time if self.done else self.state.time) - start
        self.attained_service += held * len(self.allocation)
        assert self._open is not None
        runs = self._open[2]
        for m, s in recorder.stretches:
            if runs and runs[-1][0] == m and runs[-1][1] == s:
                runs[-1][2] += 1
            else:
                runs.append([m, s, 1])

    def close(self, now: float) -> None:
        """End the open segment at ``now``."""
        if self._open is not None:
            start, alloc, runs = self._open
            configs = tuple((m, s, n) for m, s, n in runs)
            self.segments.append(AllocationSegment(start, now, alloc, configs))
            self._open = None

    def close_if_done(self, now: float) -> None:
        """A job that completed gives its GPUs back at the end of the interval."""
        if self.done and self._open is not None:
            self.close(now)
            self.allocation, self.placement = (), ""

    def reallocate(self, allocation: Allocation, now: float) -> None:
        """Take ``allocation`` at ``now`` (the artifact's ``Job.reallocate``)."""
        self.close(now)
        self.allocation = allocation
        if not allocation:
            self.placement = ""
            return
        self.placement = "".join(str(c) for c in placement_of(allocation))
        self.config = self.batcher.choose(self.placement)
        self.state = replace(self.state, restart_left=self.restart_delay)
        self.num_restarts = 0 if self.num_restarts is None else self.num_restarts + 1
        self._open = (now, allocation, [])

    def max_replicas(self) -> int:
        """The most GPUs the policy may give it now (module table)."""
        app = self.spec.application
        if self.kind == "rigid":
            return self.spec.num_replicas
        if app in SINGLE_GPU_TYPES:
            return 1
        if self.kind == "fixed_batch":
            cap = int(self.spec.batch_size // self.limits.min_local_bsz)
        else:
            profiled = max((k[1] for k in self.batcher.profile), default=0)
            cap = min(max(2 * profiled, 1), MAX_ADAPTIVE_REPLICAS,
                      int(self.limits.max_batch_size // self.limits.min_local_bsz))  # fmt: skip
        if cap < 1:
            raise InvalidInstanceError(
                f"jobs[{self.spec.name}].batch_size",
                f"{self.spec.batch_size} is below one GPU's smallest batch "
                f"{self.limits.min_local_bsz:g} of {app}",
            )
        return cap

    def speedup(self) -> LazySpeedup:
        """The job's speedup function as of now (built when first called)."""
        agent = self.batcher
        if isinstance(agent, FixedProfiled):
            size, stats = len(agent.profile), agent.stats
            return LazySpeedup(lambda: agent.model_of(size, stats), self.limits)
        model = agent.goodput_model()
        return LazySpeedup(lambda: model, self.limits)

    def record(self) -> JobRecord:
        """The job's record (its open segment must be closed)."""
        fixed = None if self.fixed_batch is None else int(self.fixed_batch)
        return JobRecord(
            name=self.spec.name,
            application=self.spec.application,
            submission_time=self.spec.time,
            completion_time=self.state.completion_time,
            num_restarts=self.num_restarts or 0,
            segments=tuple(self.segments),
            fixed_batch=fixed,
            attained_service=self.attained_service,
            epoch=self.state.epoch,
            progress=self.state.progress,
        )


def job_view(job: ClusterJob, now: float) -> JobView:
    """What the policy sees of ``job`` at the decision at ``now`` (module table)."""
    spec = job.spec
    return JobView(
        name=spec.name,
        submission_time=spec.time,
        attained_service=job.attained_service,
        min_replicas=0,
        max_replicas=job.max_replicas(),
        num_restarts=job.num_restarts or 0,
        age=now - spec.time,
        epoch=job.state.epoch,
        application=spec.application,
        traces=job.traces,
        speedup=job.speedup(),
        target_batch_size=None if job.fixed_batch is None else int(job.fixed_batch),
        target_num_replicas=spec.num_replicas if job.kind == "rigid" else None,
    )
