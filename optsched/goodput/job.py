r"""One job of the goodput world advanced through time at a fixed allocation.

A job holds a placement :math:`p` (GPUs per node) and a configuration :math:`(m, s)` and
progresses at :func:`~optsched.goodput.progress.progress_rate` (in :math:`M_0`-iterations per
second), a rate that changes only at epoch boundaries (the gradient statistics are per epoch).
:func:`advance` integrates that piecewise-constant rate over an interval **as the artifact's
simulator does** (``Job.step`` of ``simulator/simulator.py``, branch ``osdi21-artifact``):

* after a reallocation the job makes no progress for its remaining restart delay (30 s there);
* an epoch boundary inside the interval is reached after
  :math:`\operatorname{round}((P_{e+1} - P) / \mathrm{rate})` whole seconds (Python's rounding,
  half to even): the artifact's clock moves in whole seconds at boundaries, so a job's
  completion time is a whole number of seconds after the last decision;
* the job completes when it passes the end of epoch ``max_epochs - 1``;
* the job's *batcher* sees every configuration it runs (its measured step and sync times and
  the gradient statistics of the moment) and picks the configuration after every stretch of
  constant rate (at an epoch boundary and at the end of the interval): the fixed-batch
  baselines keep their batch (:class:`FixedBatch`); Pollux's agent refits its model and
  re-optimizes (:class:`~optsched.goodput.agent.PolluxAgent`).

:math:`O(\text{epochs crossed})` per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

from optsched.errors import InvalidInstanceError
from optsched.goodput.batch import BatchLimits, split_batch
from optsched.goodput.efficiency import GradientStats, gain
from optsched.goodput.progress import (
    gradient_stats,
    measured_step_time,
    normalize_placement,
    progress_at_epoch,
)
from optsched.goodput.traces import ModelTraces

__all__ = ["RESTART_DELAY", "Batcher", "FixedBatch", "JobState", "advance", "fixed_batch_split"]

#: Seconds without progress after each (re)allocation in the artifact's simulator.
RESTART_DELAY = 30.0


@dataclass(frozen=True)
class JobState:
    """A job's progress at a point of time.

    Attributes
    ----------
    time : float
        The job's clock, seconds.
    progress : float
        :math:`P`, in :math:`M_0`-iterations.
    epoch : int
        The epoch it is in (:func:`~optsched.goodput.progress.epoch_at_progress` of ``progress``
        while moving; exactly the boundary's epoch once one is reached).
    restart_left : float
        Seconds of restart delay still to serve.
    completion_time : float or None
        When it finished, once it has.
    """

    time: float = 0.0
    progress: float = 0.0
    epoch: int = 0
    restart_left: float = 0.0
    completion_time: float | None = None


def fixed_batch_split(limits: BatchLimits, batch_size: float, num_replicas: int) -> tuple[int, int]:
    r"""The ``(m, s)`` a fixed global batch runs with on ``num_replicas`` GPUs.

    :func:`~optsched.goodput.batch.split_batch`, then the per-GPU batch is capped at
    :math:`\lfloor M_\mathrm{max} / (K (s+1)) \rfloor` so that rounding up never carries the
    global batch past the maximum (as the artifact's simulator caps it).
    """
    atomic, steps = split_batch(batch_size, num_replicas, limits)
    cap = int(limits.max_batch_size / (num_replicas * (steps + 1)))
    return min(atomic, cap), steps


class Batcher(Protocol):
    """What picks a job's ``(m, s)``: told what each configuration measured, asked for the next."""

    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Record a configuration about to run: its measured times and the current statistics."""

    def choose(self, placement: str) -> tuple[int, int]:
        """The ``(m, s)`` to run on ``placement`` (digits of GPUs per node) from now on."""
        ...


class FixedBatch:
    """The batcher of a job with a fixed global batch (the baselines): :func:`fixed_batch_split`.

    Parameters
    ----------
    limits : BatchLimits
    batch_size : float
        The job's global batch.
    """

    def __init__(self, limits: BatchLimits, batch_size: float) -> None:
        self.limits = limits
        self.batch_size = batch_size

    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Nothing to learn: the batch is fixed."""

    def choose(self, placement: str) -> tuple[int, int]:
        """The fixed batch split over the placement's GPUs."""
        k = sum(int(d) for d in normalize_placement(placement))
        return fixed_batch_split(self.limits, self.batch_size, k)


def advance(
    traces: ModelTraces,
    state: JobState,
    placement: tuple[int, ...] | str,
    config: tuple[int, int],
    seconds: float,
    *,
    batcher: Batcher | None = None,
    slowdown: float = 0.0,
) -> tuple[JobState, tuple[int, int]]:
    r"""Run a job for ``seconds`` on ``placement`` with ``config = (m, s)``.

    Parameters
    ----------
    traces : ModelTraces
        The job type's measurements.
    state : JobState
        Where the job is.
    placement : tuple of int or str
        GPUs per node (not empty: a job without GPUs only waits).
    config : (int, int)
        Atomic batch and accumulation steps in force.
    seconds : float
        Length of the interval, :math:`\ge 0`.
    batcher : Batcher, optional
        Sees each configuration run and picks the next after each stretch of constant rate;
        default: keep ``config``.
    slowdown : float
        Fraction of the rate lost to interference, in :math:`[0, 1)`.

    Returns
    -------
    (JobState, (int, int))
        The state at the end of the interval and the configuration then in force.
    """
    if seconds < 0 or not math.isfinite(seconds):
        raise InvalidInstanceError("seconds", f"must be a finite number >= 0, got {seconds}")
    if not 0.0 <= slowdown < 1.0:
        raise InvalidInstanceError("slowdown", f"must be in [0, 1), got {slowdown}")
    key = normalize_placement(placement)
    last_epoch = traces.max_epochs() - 1
    time, progress, epoch = state.time, state.progress, state.epoch
    done = state.completion_time
    delay = min(state.restart_left, seconds)
    time += delay
    seconds -= delay
    init = float(min(traces.validation))
    nodes, replicas = len(key), sum(int(d) for d in key)
    while seconds > 0 and done is None:
        m, accum = config
        batch = replicas * m * (accum + 1)
        step_time, sync_time = measured_step_time(traces, key, m)
        stats = gradient_stats(traces, batch, epoch)
        if batcher is not None:
            batcher.observe(nodes, replicas, m, step_time, sync_time, stats)
        total = step_time + accum * (step_time - sync_time)
        rate = float(gain(stats, init, batch)) / total * (1.0 - slowdown)
        target = progress_at_epoch(traces, epoch + 1)
        if progress + rate * seconds < target:
            progress += rate * seconds
            time += seconds
            seconds = 0
        else:
            epoch += 1
            step = round((target - progress) / rate)
            if epoch > last_epoch:
                done = time + step
            progress = target
            time += step
            seconds -= step
        if batcher is not None and done is None:
            config = batcher.choose(key)
    time += seconds  # the rest of the interval, once done
    left = state.restart_left - delay
    return replace(state, time=time, progress=progress, epoch=epoch, restart_left=left,
                   completion_time=done), config  # fmt: skip
