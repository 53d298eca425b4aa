r"""Optimus in the simulator: fitted speed models and marginal-gain GPU allocation every round.

**How PSs and workers map to GPUs.** The simulator has GPUs only. Every GPU hosts one worker and
the parameter servers are colocated with the workers, one per worker, using no GPU (Gavel-style
simulators treat data-parallel jobs so). With :math:`p = w = k` the synchronous speed model of
Optimus becomes the ``colocated`` model of :mod:`optsched.allocation.optimus.models`,

.. math::

    f_{jg}(k) = \frac{1}{\theta_0 / k + \theta_1 + \theta_2 k},

steps per second of job :math:`j` on :math:`k` GPUs of type :math:`g` (:math:`\theta \ge 0`).

**Fitting.** Like Optimus, which probes a job at a few (PS, worker) counts, the policy observes
the job's rate at a few GPU counts of each type (the world's rate at :math:`k` GPUs:
:math:`k_{min}`, :math:`k_{max}` and the powers of two between, at most the type's GPUs) and fits
the model by bounded least squares (:func:`optsched.allocation.optimus.fit_speed`, relative
residuals on
step times). A job whose range holds fewer than three counts needs no model: its measured rates
cover every count it may get. Fits are kept per (job, type) for the whole run.

**Work.** :math:`Q_j` is the job's steps left. (Optimus estimates it from the fitted loss curve;
a trace gives work in steps and no loss curve, so the simulator's own count is used.)

**Allocation, every round** (Optimus's marginal gain, :mod:`optsched.allocation.optimus.greedy`, on
GPUs):

1. Admission: in arrival order, each active job gets its smallest gang :math:`k_{min}` (its
   ``min_gpus``, see :meth:`World.elastic <optsched.sim.World.elastic>`) on the GPU type where
   its fitted remaining time :math:`T_{jg}(k) = Q_j / f_{jg}(k)` is least among the types with
   room; a running job keeps its type when it still has room there (a move costs a restore).
   Jobs that do not fit wait (later ones may still fit: backfilling).
2. Growth: while GPUs are left, the admitted job with the largest gain
   :math:`T_{jg}(k) - T_{jg}(k + 1)` (per GPU added) gets one more GPU of its type, up to its
   ``max_gpus``; it stops at the first gain :math:`\le 0`. This is the family's own loop,
   :func:`optsched.allocation.optimus.greedy.grow_by_marginal_gain`, with one move per job (one
   more GPU of its type); with every job admitted at one GPU and a fitted model it is
   :func:`~optsched.allocation.optimus.marginal_gain` on the instance whose resources are the
   GPU types (a test checks the two allocations are equal).

The grants carry the chosen counts, highest priority (admission order) first. Growth is optimal
for the fitted models given the admitted jobs and their types: on each GPU type it is the
separable convex problem of the greedy module's theorem (one unit-demand resource, every
:math:`T_{jg}(k) = Q_j(\theta_0/k + \theta_1 + \theta_2 k)` convex in :math:`k`), so the
marginal-gain growth equals the exact MILP of :mod:`optsched.allocation.optimus` for the same
models (a test
checks it). A job with a fixed gang (``min_gpus = max_gpus``) only takes part in admission.

Complexity per round: :math:`O(A K)` admission plus :math:`O(G \log A)` growth for :math:`A` active
jobs, :math:`K` types and :math:`G` GPUs; each job's fits once, :math:`O(K)` least-squares solves
on at most :math:`\log_2 G + 2` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.allocation.optimus.fit import SpeedFit, fit_speed
from optsched.allocation.optimus.greedy import grow_by_marginal_gain
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Grant, JobState, Policy, PolicyDecision, SimState

if TYPE_CHECKING:
    from optsched.sim.world.jobs import SimJob, World

__all__ = ["DEFAULT_ROUND_SECONDS", "JobModel", "Optimus"]

#: Optimus re-allocates every scheduling interval; the simulator's allocation policies use
#: Gavel's 6-minute round, and so does this one by default.
DEFAULT_ROUND_SECONDS = 360.0


@dataclass(frozen=True)
class JobModel:
    """What the policy knows of one job on one GPU type.

    Attributes
    ----------
    gpu_type : str
    low, high : int
        The GPU counts the job may get on this type (``high`` at most the type's GPUs).
    fit : SpeedFit or None
        The fitted ``colocated`` model (``None`` when the measured counts cover the range).
    measured : dict of int to float
        The rates observed at the probed counts (steps/s).
    """

    gpu_type: str
    low: int
    high: int
    fit: SpeedFit | None
    measured: dict[int, float]

    def speed(self, k: int) -> float:
        """Steps per second on ``k`` GPUs: measured where probed without a fit, else fitted."""
        if self.fit is None:
            return self.measured.get(k, 0.0)
        t0, t1, t2 = self.fit.theta
        step = t0 / k + t1 + t2 * k
        return math.inf if step <= 0 else 1.0 / step

    def remaining_time(self, steps: float, k: int) -> float:
        """Seconds to do ``steps`` on ``k`` GPUs (``inf`` where it cannot run)."""
        f = self.speed(k)
        return math.inf if f <= 0 else steps / f


def probe_counts(low: int, high: int) -> list[int]:
    """The GPU counts a job is observed at.

    ``low``, ``high`` and the powers of two between; plus the midpoint when that leaves fewer
    than three counts of a range of three or more, so that a range the probes do not cover
    always has the three points the ``colocated`` model needs.
    """
    out = {low, high}
    p = 1
    while p < high:  # at most log2(high) + 1 iterations
        if p > low:
            out.add(p)
        p *= 2
    if high - low >= 2 and len(out) < 3:
        out.add((low + high) // 2)
    return sorted(out)


class Optimus(Policy):
    """Optimus's marginal-gain allocation as a round-based simulator policy (module notes).

    Parameters
    ----------
    round_seconds : float
        The scheduling interval (default 360 s).

    Attributes
    ----------
    models : dict
        ``models[(job_id, gpu_type)]``: the :class:`JobModel` fitted for the run.
    """

    name = "optimus"

    def __init__(self, round_seconds: float = DEFAULT_ROUND_SECONDS) -> None:
        if not (math.isfinite(round_seconds) and round_seconds > 0):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds!r}")
        self.round_seconds = float(round_seconds)
        self.models: dict[tuple[str, str], JobModel | None] = {}

    def reset(self, world: World) -> None:
        """Forget the previous run's fits."""
        self.models = {}

    def model(self, world: World, job: SimJob, gpu_type: str) -> JobModel | None:
        """The job's model on ``gpu_type`` (fitted once; ``None`` where it cannot run)."""
        key = (job.job_id, gpu_type)
        if key in self.models:
            return self.models[key]
        low, high = job.min_gpus, min(job.max_gpus, world.cluster.count(gpu_type))
        model: JobModel | None = None
        if low <= high:
            counts = probe_counts(low, high)
            measured = {k: world.rate(job, gpu_type, num_gpus=k) for k in counts}
            if all(r > 0 for r in measured.values()):
                fit = None
                if len(counts) >= 3:
                    fit = fit_speed([(k, k, 1.0 / measured[k]) for k in counts], "colocated")
                    if high - low + 1 == len(counts):
                        fit = None  # every allowed count was measured: no model needed
                model = JobModel(gpu_type, low, high, fit, measured)
        self.models[key] = model
        return model

    def allocate(self, state: SimState) -> PolicyDecision:
        """The grants of the round (see the module notes)."""
        world = state.world
        free = {t.name: t.count for t in world.cluster.gpu_types}
        names = list(free)
        chosen: list[tuple[JobState, JobModel, int]] = []
        for s in state.active:
            steps = s.remaining
            current = s.placement.gpu_type if s.placement is not None else None
            # A running job keeps its type where it has room; the others take the type where
            # their fitted remaining time is least (ties: the cluster's type order).
            best: tuple[tuple[int, float, int], JobModel] | None = None
            for rank, name in enumerate(names):
                m = self.model(world, s.job, name)
                if m is None or free[name] < m.low:
                    continue
                t = m.remaining_time(steps, m.low)
                if not math.isfinite(t):
                    continue
                score = (0 if name == current else 1, t, rank)
                if best is None or score < best[0]:
                    best = (score, m)
            if best is None:
                continue
            m = best[1]
            free[m.gpu_type] -= m.low
            chosen.append((s, m, m.low))
        # Growth by the family's marginal-gain loop, one GPU of the job's type per move; each
        # made move takes a free GPU, so at most (GPUs + jobs) pops.
        counts = [k for _, _, k in chosen]

        def moves(i: int) -> list[tuple[int, float]]:
            s, m, _ = chosen[i]
            k = counts[i]
            if k >= m.high:
                return []
            return [(0, m.remaining_time(s.remaining, k) - m.remaining_time(s.remaining, k + 1))]

        def make(i: int, role: int) -> bool:
            gpu_type = chosen[i][1].gpu_type
            if free[gpu_type] < 1:
                return False  # its type is full; others may still grow
            free[gpu_type] -= 1
            counts[i] += 1
            return True

        grow_by_marginal_gain(len(chosen), moves, make)
        grants = tuple(
            Grant(job=s.job_id, gpu_type=m.gpu_type, num_gpus=counts[i])
            for i, (s, m, _) in enumerate(chosen)
        )
        return PolicyDecision(grants=grants)
