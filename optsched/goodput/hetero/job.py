r"""One job of the heterogeneous goodput world, as Sia's simulator advances it.

Sia's ``Job.step`` (``sia-simulator/job.py``) over an interval of :math:`\Delta` seconds, for a
job holding placement :math:`p` (GPUs per node) of GPU type :math:`g`:

* without GPUs the job only waits;
* with GPUs it first serves what is left of its checkpoint-restore delay (GPU-seconds counted
  as attained service, no progress);
* then it progresses at :math:`c\,G_e(M) / (T_\mathrm{step} + s\,(T_\mathrm{step} -
  T_\mathrm{sync}))` :math:`M_0`-iterations per second, :math:`c` the job type's calibration
  factor, the step and sync times measured on type :math:`g`
  (:func:`~optsched.goodput.progress.measured_step_time` of that type's traces), :math:`M =
  K m (s+1)`; an epoch boundary inside the interval is reached after
  :math:`\operatorname{round}((P_{e+1} - P)/\mathrm{rate})` whole seconds and the job completes
  once past epoch ``max_epochs - 1``;
* after every stretch of constant rate the job re-chooses ``(m, s)`` for its placement (its
  *batcher*: :func:`~optsched.goodput.hetero.apps.fixed_split` of the owner's batch for Gavel's
  jobs).

A reallocation (:meth:`HeteroJob.reallocate`) follows the simulator's ``Job.migrate`` and
``Job.reallocate``: a new GPU type, or the same type with a different placement *tuple*,
restarts the job (delay of its type, restart count + 1; the first allocation is restart 0); the
same placement on other nodes of the same type does **not** (Sia's simulator compares
placements, not nodes); no GPUs suspends it (its GPU type forgotten).

Every stretch is recorded (:class:`Stretch`) for the validator. :math:`O(\text{epochs
crossed})` per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from optsched.goodput.efficiency import GradientStats, gain
from optsched.goodput.hetero.apps import HeteroApp, fixed_split
from optsched.goodput.progress import gradient_stats, measured_step_time, progress_at_epoch
from optsched.goodput.workload import PolluxJob

__all__ = ["FixedBatcher", "HeteroBatcher", "HeteroJob", "Stretch"]


@dataclass(frozen=True)
class Stretch:
    """A stretch of a job's time at one configuration (``atomic_bsz == 0``: a restart delay).

    ``progress`` goes from ``progress_start`` to ``progress_end`` over ``[start, end]``;
    ``epoch`` is the epoch the stretch runs in.
    """

    start: float
    end: float
    gpu_type: str
    placement: tuple[int, ...]
    atomic_bsz: int
    accum_steps: int
    epoch: int
    progress_start: float
    progress_end: float


class HeteroBatcher(Protocol):
    """Picks a job's ``(m, s)`` on a placement of a GPU type, told each configuration run."""

    def observe(
        self,
        gpu_type: str,
        placement: tuple[int, ...],
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Record a configuration about to run (its measured times, current statistics)."""

    def choose(self, app: HeteroApp, placement: tuple[int, ...]) -> tuple[int, int]:
        """The ``(m, s)`` to run on ``placement`` of ``app``'s GPU type from now on."""
        ...


class FixedBatcher:
    """The owner's global batch split over the placement (:func:`fixed_split`)."""

    def __init__(self, batch_size: float) -> None:
        self.batch_size = batch_size

    def observe(
        self,
        gpu_type: str,
        placement: tuple[int, ...],
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Nothing to learn: the batch is fixed."""

    def choose(self, app: HeteroApp, placement: tuple[int, ...]) -> tuple[int, int]:
        """:func:`fixed_split` of the owner's batch."""
        return fixed_split(app, placement, self.batch_size)


@dataclass
class HeteroJob:
    """A job's state in the world (module notes); ``apps`` maps GPU type to its measurements."""

    spec: PolluxJob
    apps: Mapping[str, HeteroApp]
    batcher: HeteroBatcher
    gpu_type: str | None = None
    placement: tuple[int, ...] = ()
    config: tuple[int, int] = (0, 0)
    progress: float = 0.0
    epoch: int = 0
    restart_left: float = 0.0
    completion_time: float | None = None
    num_restarts: int | None = None
    attained_service: float = 0.0
    stretches: list[Stretch] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Whether the job has completed."""
        return self.completion_time is not None

    def _record(self, t0: float, t1: float, epoch: int, p0: float, atomic: int, accum: int) -> None:
        assert self.gpu_type is not None
        self.stretches.append(Stretch(t0, t1, self.gpu_type, self.placement, atomic, accum,
                                      epoch, p0, self.progress))  # fmt: skip

    def step(self, seconds: float, now: float) -> None:
        """Advance over ``[now, now + seconds]`` (module notes)."""
        if self.done or not self.placement:
            return
        assert self.gpu_type is not None
        app = self.apps[self.gpu_type]
        gpus = sum(self.placement)
        delay = min(self.restart_left, seconds)
        if delay > 0:
            self._record(now, now + delay, self.epoch, self.progress, 0, 0)
        time = now + delay
        self.attained_service += delay * gpus
        self.restart_left -= delay
        seconds -= delay
        init = app.limits.init_batch_size
        last_epoch = app.max_epochs - 1
        while seconds > 0 and self.completion_time is None:
            m, s = self.config
            batch = gpus * m * (s + 1)
            stats = gradient_stats(app.traces, batch, self.epoch)
            g = float(gain(stats, init, batch))
            step_time, sync_time = measured_step_time(app.traces, self.placement, m)
            self.batcher.observe(self.gpu_type, self.placement, m, step_time, sync_time, stats)
            rate = g / (step_time + (step_time - sync_time) * s) * app.calibration
            target = progress_at_epoch(app.traces, self.epoch + 1)
            p0, e0 = self.progress, self.epoch
            if self.progress + rate * seconds < target:
                self.progress += rate * seconds
                self._record(time, time + seconds, e0, p0, m, s)
                time += seconds
                self.attained_service += seconds * gpus
                seconds = 0
            else:
                self.epoch += 1
                delta = round((target - self.progress) / rate)
                if self.epoch > last_epoch:
                    self.completion_time = time + delta
                self.progress = target
                self._record(time, time + delta, e0, p0, m, s)
                time += delta
                self.attained_service += delta * gpus
                seconds -= delta
            self.config = self.batcher.choose(app, self.placement)

    def reallocate(self, gpu_type: str | None, placement: tuple[int, ...]) -> bool:
        """Apply a new allocation (module notes); return whether the job restarted."""
        if gpu_type != self.gpu_type:
            self.gpu_type = gpu_type
            if not placement:
                self.placement, self.config = (), (0, 0)
                return False
        elif not placement:
            self.placement, self.config = (), (0, 0)
            return False
        elif placement == self.placement:
            return False
        assert gpu_type is not None
        app = self.apps[gpu_type]
        self.placement = placement
        self.config = self.batcher.choose(app, placement)
        self.restart_left = app.restart_delay
        self.num_restarts = 0 if self.num_restarts is None else self.num_restarts + 1
        return True
