r"""What the throughput table allows each job at best: the limits every certified bound rests on.

:func:`job_limits` reads, through the engine's own rate look-up, every job's fastest rate and best
work per GPU-second on each GPU type (every gang size its elastic bounds allow, both placements),
and the cluster's sharing factors; :class:`JobLimits` holds them as arrays. The bounds of
:mod:`optsched.sim.optimum.bounds` and the interval LP of :mod:`optsched.sim.optimum.interval_lp`
read nothing else about the world (the symbols are those of the bounds' module notes).

Complexity: :math:`O(K S G)` look-ups for :math:`K` job groups of at most :math:`S` sizes on
:math:`G` types, plus :math:`O(K^2 S G)` for the sharing factors when the table has pair rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from optsched.errors import InvalidInstanceError
from optsched.sim.world.batch_schedule import phase_factor
from optsched.sim.world.jobs import SimJob, World

__all__ = ["JobLimits", "job_limits"]


@dataclass(frozen=True)
class JobLimits:
    r"""What the throughput table allows each job at best (arrays indexed by job, then type).

    Attributes
    ----------
    types : tuple of str
        The cluster's GPU types (canonical order).
    capacity : ndarray, shape (G,)
        GPUs per type.
    arrival, weight, deadline, work : ndarray, shape (n,)
    own_seconds : ndarray, shape (n,)
        :math:`P_j`, the shortest possible running time.
    type_seconds : ndarray, shape (n, G)
        :math:`W_j / \rho_{jg}` (``inf`` where the job cannot run).
    area : ndarray, shape (n, G)
        :math:`A_{jg}`, fewest GPU-seconds of the type (``inf`` where it cannot run).
    best_area : ndarray, shape (n,)
        :math:`A^*_j`.
    share_factor : ndarray, shape (G,)
        :math:`\kappa_g`.
    best_units : ndarray, shape (G,)
        :math:`\sigma_g`.
    """

    types: tuple[str, ...]
    capacity: NDArray[np.float64]
    arrival: NDArray[np.float64]
    weight: NDArray[np.float64]
    deadline: NDArray[np.float64]
    work: NDArray[np.float64]
    own_seconds: NDArray[np.float64]
    type_seconds: NDArray[np.float64]
    area: NDArray[np.float64]
    best_area: NDArray[np.float64]
    share_factor: NDArray[np.float64]
    best_units: NDArray[np.float64]

    @property
    def speed(self) -> float:
        r""":math:`\Sigma`, the aggregated machine's speed (best-type GPU-seconds per second)."""
        return float((self.best_units * self.capacity).sum())


def _sizes(job: SimJob, count: int) -> range:
    return range(job.min_gpus, min(job.max_gpus, count) + 1)


def _group_key(job: SimJob) -> tuple[str, int, int]:
    return (job.job_type, job.min_gpus, job.max_gpus)


def _phase_boost(world: World, job: SimJob) -> float:
    """The largest rate factor of a job's batch-size phases (1 without a schedule).

    Dividing the job's work by it keeps every bound valid: in any phase, on any placement,
    alone or paired, its rate is its base rate times a factor at most this one, so the shrunk
    work at base rates takes no longer (and no more GPU-seconds) than the real work.
    """
    schedule = job.batch_schedule
    if schedule is None:
        return 1.0
    best = 1.0
    for t in world.cluster.gpu_types:
        for size in _sizes(job, t.count):
            for consolidated in (True, False):
                for k in range(len(schedule.phases)):
                    f = phase_factor(world.throughputs, schedule, k, t.name, size, consolidated)
                    best = max(best, f)
    return best


def job_limits(world: World) -> JobLimits:
    """The per-job limits every bound rests on (see the module notes).

    Rates are read through :meth:`World.rate`, the engine's own look-up, for every gang size a
    job may be given (its elastic bounds) on both placements; the per-group maxima are computed
    once for each (job type, size bounds) and scaled by the job's ``scale``.

    Complexity: :math:`O(K S G)` look-ups for :math:`K` job groups of at most :math:`S` sizes,
    plus :math:`O(K^2 S G)` for the sharing factors when the table has pair rates.
    """
    types = world.cluster.names
    counts = {t.name: t.count for t in world.cluster.gpu_types}
    n, big_g = len(world.jobs), len(types)
    # per group: best rate and best rate per GPU on each type, at scale 1
    reps: dict[tuple[str, int, int], SimJob] = {}
    for job in world.jobs:
        reps.setdefault(_group_key(job), job)
    best_rate: dict[tuple[str, int, int], NDArray[np.float64]] = {}
    best_eff: dict[tuple[str, int, int], NDArray[np.float64]] = {}
    tp = world.throughputs
    for key, job in reps.items():
        rate = np.zeros(big_g)
        eff = np.zeros(big_g)
        for g, name in enumerate(types):
            for size in _sizes(job, counts[name]):
                for consolidated in (True, False):
                    r = tp.rate(job.job_type, size, name, consolidated)
                    if r > 0 and math.isfinite(r):
                        rate[g] = max(rate[g], r)
                        eff[g] = max(eff[g], r / size)
        best_rate[key], best_eff[key] = rate, eff
    share = np.ones(big_g)
    best_units = np.zeros(big_g)
    for eff in best_eff.values():
        top = eff.max()
        if top > 0:
            best_units = np.maximum(best_units, eff / top)
    _pair_factors(world, reps, best_rate, best_eff, counts, share, best_units)
    arrival = np.array([j.arrival for j in world.jobs], dtype=np.float64)
    weight = np.array([j.weight for j in world.jobs], dtype=np.float64)
    deadline = np.array([j.deadline for j in world.jobs], dtype=np.float64)
    work = np.array([j.work / _phase_boost(world, j) for j in world.jobs], dtype=np.float64)
    rates = np.array([best_rate[_group_key(j)] * j.scale for j in world.jobs]).reshape(n, big_g)
    effs = np.array([best_eff[_group_key(j)] * j.scale for j in world.jobs]).reshape(n, big_g)
    with np.errstate(divide="ignore"):
        type_seconds = np.where(rates > 0, work[:, None] / np.where(rates > 0, rates, 1.0), np.inf)
        area = np.where(effs > 0, work[:, None] / np.where(effs > 0, effs, 1.0), np.inf)
    own = type_seconds.min(axis=1) if big_g else np.full(n, np.inf)
    return JobLimits(
        types=types,
        capacity=np.array([counts[t] for t in types], dtype=np.float64),
        arrival=arrival,
        weight=weight,
        deadline=deadline,
        work=work,
        own_seconds=own,
        type_seconds=type_seconds,
        area=area,
        best_area=area.min(axis=1) if big_g else np.full(n, np.inf),
        share_factor=share,
        best_units=best_units,
    )


def _pair_factors(
    world: World,
    reps: dict[tuple[str, int, int], SimJob],
    best_rate: dict[tuple[str, int, int], NDArray[np.float64]],
    best_eff: dict[tuple[str, int, int], NDArray[np.float64]],
    counts: dict[str, int],
    share: NDArray[np.float64],
    best_units: NDArray[np.float64],
) -> None:
    """Raise the sharing factors (in place) by every measured pair, and the jobs' best rates.

    A pair's rates at scale 1 are the table's; scales cancel in the ratios (the pair rate and
    the per-GPU efficiency both carry the job's scale).
    """
    tp = world.throughputs
    if not getattr(tp, "pairs", None):
        return
    keys = list(reps)
    for g, name in enumerate(world.cluster.names):
        for ka in keys:
            a = reps[ka]
            for kb in keys:
                b = reps[kb]
                lo = max(a.min_gpus, b.min_gpus)
                hi = min(a.max_gpus, b.max_gpus, counts[name])
                for size in range(lo, hi + 1):
                    for consolidated in (True, False):
                        pair = tp.pair_rates(a.job_type, b.job_type, size, name, consolidated)
                        if pair is None:
                            continue
                        ra, rb = pair
                        best_rate[ka][g] = max(best_rate[ka][g], ra)
                        ea, eb = best_eff[ka][g], best_eff[kb][g]
                        if ea <= 0 or eb <= 0:
                            # a job that shares where it cannot run alone: no finite factor
                            raise InvalidInstanceError(
                                "throughputs",
                                f"job types {a.job_type!r} and {b.job_type!r} share {name} "
                                "where one cannot run alone: no capacity bound holds",
                            )
                        share[g] = max(share[g], (ra / ea + rb / eb) / size)
                        ta, tb = best_eff[ka].max(), best_eff[kb].max()
                        best_units[g] = max(best_units[g], (ra / ta + rb / tb) / size)
