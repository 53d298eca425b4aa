r"""Metrics of a simulation record, per job and per run, as DataFrames.

Per job (:func:`job_metrics`)
    ``jct = completion - arrival``; ``queueing_delay = first_start - arrival`` (the wait before
    the first run); ``isolated_jct``: work over the job's best consolidated rate alone (its JCT on
    an empty cluster, without queueing); ``contention``: the time-averaged number ``N_j`` of
    active jobs (arrived, unfinished) over ``[arrival, completion]``; ``fair_share_jct`` and
    ``rho`` (finish-time fairness, below); ``deadline_met`` (NA without a deadline);
    ``gpu_seconds`` held; ``runs`` (preemptions + 1). For a job with batch-size phases
    (:mod:`optsched.sim.world.batch_schedule`) every "work over rate" is the sum over its phases of
    the phase's work over the phase's rate (``isolated_jct`` on the type that makes it least;
    ``fair_share_jct`` at the same shares in every phase).

Finish-time fairness
    Themis (Mahajan et al., NSDI 2020) defines :math:`\rho = T_{sh} / T_{id}`: the finish time
    under sharing over the finish time running on an isolated :math:`1/N` share of the cluster,
    :math:`N` the number of contending apps. Gavel (Narayanan et al., OSDI 2020) uses the same
    ratio, with the isolated share computed by its ``Isolated`` policy: every job gets time
    fraction :math:`x_{jg} = C_g / (N\, n_j)` of each GPU type :math:`g` (``C_g`` GPUs,
    ``n_j`` the gang size), normalized so that no job's fractions sum above 1. optsched computes
    exactly that share per job with :math:`N = N_j` (its time-averaged contention):
    :math:`x_{jg} = C_g / (N_j n_j)`, divided by :math:`\max(1, \sum_g x_{jg})`, the isolated rate
    :math:`\sum_g x_{jg}\, r_j(g)` (consolidated rates), ``fair_share_jct = work / isolated rate``
    and ``rho = jct / fair_share_jct``. (Gavel normalizes by the largest row sum over all jobs of a
    round, which can scale shares up; the per-job cap keeps each share a feasible allocation.)
    ``rho <= 1`` means the job finished no later than on its fair share.

Finish-time fairness as Themis, Gavel and Shockwave publish it (``ftf_rho``)
    The published simulators (Shockwave's ``get_finish_time_fairness``, the "Themis" variant
    whose contention factor is averaged over time, and the figures of the Gavel and Shockwave
    papers built on it) use a simpler fair share: the job's *isolated* time scaled by the
    cluster's contention factor,

    .. math::

        \rho^{\mathrm{ftf}}_j = \frac{\mathrm{JCT}_j}{T^{\mathrm{iso}}_j
            \cdot \max\!\left(1, \bar N_j / G\right)},

    with

    * :math:`\mathrm{JCT}_j` = completion minus arrival (finished jobs only; NaN otherwise);
    * :math:`T^{\mathrm{iso}}_j` = ``isolated_jct``: the job's work over its rate alone on
      its **requested** gang of ``num_gpus`` GPUs, consolidated, on its **best** GPU type
      among those with at least ``num_gpus`` GPUs (on a one-type cluster, as in Shockwave,
      simply the type it was profiled on);
    * :math:`\bar N_j` = ``contention``: the number of active (arrived, unfinished) jobs
      averaged over :math:`[a_j, C_j]`. Shockwave averages the per-round job count over the
      rounds from the job's arrival round to its completion round; optsched integrates the
      same count exactly over time, which equals the round average when arrivals and
      completions fall on round boundaries;
    * :math:`G` = the total number of GPUs in the cluster (every type), so that
      :math:`\bar N_j / G` is the number of jobs per GPU; the factor is clamped at 1 because
      a job never has more than a whole gang to itself (Shockwave clamps it likewise).

    ``ftf_fair_jct`` is the denominator. Beside ``rho`` it differs in two ways: it ignores
    the job's gang size (every job is owed :math:`G / \bar N_j` GPUs' worth of time, not a
    share of each type scaled by its gang) and it measures the share in time on the job's
    best type rather than in rate over every type. Both are reported; ``ftf_rho`` is the one to
    set beside published figures.

Finished and unfinished jobs
    A job's JCT exists only when it finished: ``jct_mean``, the percentiles and the weighted mean
    are over the **finished** jobs, and ``unfinished`` counts the others (never hidden: a run
    with unfinished jobs has ``status`` ``"unfinished"`` or ``"truncated"``). The JCT CDF
    (:func:`jct_cdf`) is a fraction of **all** jobs, so it ends at ``finished / jobs``: below 1
    when jobs did not finish.

Spread gangs (:func:`spread_gang_seconds`)
    ``spread_gang_seconds``: the seconds gangs ran *spread* (on more servers than
    ``ceil(gang / gpus_per_server)``), summed over gangs; ``spread_gang_seconds_with_room``: the
    part of it run on placements made while a set of that many servers of the type had room for
    the whole gang (read from the interval table at the start of each run of one unchanged
    placement, the job's own GPUs counted as free). The simulator's own placement re-places a
    spread gang consolidated at every decision point where room exists, so the latter is 0 for
    every policy that lets the engine place its jobs.

Per run (:func:`run_metrics`)
    JCT mean, median, p95, p99 (finished jobs; linear interpolation), weighted mean JCT, makespan
    (last completion minus first arrival), mean queueing delay, worst and mean ``rho`` and
    ``ftf_rho``, deadlines met (count and fraction of jobs with one: the *deadline satisfaction
    ratio*), GPU-hours held, mean utilization over ``[first arrival, makespan end]``, GPU energy
    in kWh, finished and unfinished counts, and the best-effort JCT (:func:`deadline_metrics`).

Steady-state window (``window=(start, end)``)
    Gavel's experiments measure a steady state: its ``-s/--window-start`` and
    ``-e/--window-end`` keep only the jobs whose ids lie in ``[start, end)``, ids being given in
    arrival order, so that the warm-up (an empty cluster filling) and the drain (the last jobs
    finishing alone) do not enter the averages. :func:`run_metrics` takes the same window:
    ``window=(start, end)`` keeps the jobs at positions ``start <= k < end`` of the world's job
    list, which is in arrival order (ties by input order), so ``k`` is the job's arrival index;
    ``end=None`` runs to the last job. Every job-level figure is then over those jobs only:
    ``jobs``, ``finished``, ``unfinished``, the JCT statistics, the weighted mean, ``makespan``
    (the window's last completion minus its first arrival), queueing delay, ``rho`` and
    ``ftf_rho``, deadlines, ``gpu_hours`` (the GPU-hours those jobs held) and the best-effort
    JCT. The simulation itself is unchanged (every job runs and contends; ``contention`` still
    counts every active job), and the cluster-level figures stay whole-run:
    ``utilization_mean`` (all GPU-seconds over the whole span), ``energy_kwh`` and the
    spread-gang seconds. The metrics then carry ``window = [start, end]``.
    :func:`parse_window` reads ``START:END`` (either side may be empty) as the command line
    gives it.

Energy (:func:`energy_kwh`)
    GPU energy in kWh from the interval table alone: every stretch a job holds ``gpus`` GPUs of a
    type for ``end - start`` seconds adds ``gpus x (end - start) x P`` joules, ``P`` the type's
    board power per GPU (:data:`optsched.power.GPU_POWER_WATTS`); GPUs shared by a pair count
    once; idle GPUs, hosts and cooling are not counted. It reads no policy code, so every policy
    is measured alike. ``energy_kwh`` in the run metrics is NaN when a GPU type has no power
    figure.

Deadline scheduling (:func:`deadline_metrics`)
    Chronus (Gao et al., SoCC 2021) reports two numbers: the *deadline satisfaction ratio*
    (jobs with a deadline that finish by it, over the jobs with a deadline) and the JCT of the
    *best-effort* jobs (those without a deadline): ``best_effort_jct_mean`` and
    ``best_effort_jct_median`` over the finished best-effort jobs, ``best_effort_unfinished``
    the others.

Deadlines under admission control (ElasticFlow's count)
    A scheduler with admission control (the ``elasticflow`` policy, ElasticFlow's mechanism)
    *declines* some jobs on arrival: the record lists them (``SimResult.extra["declined_jobs"]``).
    Two ratios are then reported side by side, over the same jobs with a deadline:

    * ``deadlines_met`` / ``deadlines_met_fraction`` (``deadline_satisfaction``): optsched's
      count, *outcome only*: a job met its deadline when it finished by it, declined or not.
      Kept so because it measures the schedule the record holds whatever the policy promised
      (under the default mechanism a declined job still runs, as the lowest class, and may
      finish in time; comparing policies with and without admission needs the one ruler).
    * ``deadlines_met_admitted`` / ``deadlines_met_fraction_admitted``
      (``deadline_satisfaction_admitted``): ElasticFlow's count: a declined job is missed
      whatever happened to it, so only admitted jobs finished by their deadline count. This
      is the ratio ElasticFlow's simulator prints (``ddl_satis_ratio``). Where the record
      gives ElasticFlow's own end times' verdict (``extra["met_by_lease_end"]``: its Themis
      ends a job at the end of the slot its work is done in), that list is the count.

    with ``deadlines_declined`` (declined jobs with a deadline) and ``deadlines_late``
    (admitted, or never subject to admission, and not finished by the deadline):
    ``deadlines = deadlines_met_admitted + deadlines_declined + deadlines_late``. Without
    admission control both ratios are equal and ``deadlines_declined`` is 0. In
    :func:`run_metrics` these four keys are present only when some job has a deadline.

Utilization over time (:func:`utilization`)
    Busy GPUs per type as a step function (a shared pair counts once), one row per change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.power import JOULES_PER_KWH, gpu_power
from optsched.sim.measure.record import SimResult
from optsched.sim.world.batch_schedule import phase_seconds
from optsched.tolerances import FIT_TOL

if TYPE_CHECKING:
    import pandas as pd

    from optsched.sim.world.jobs import SimJob, World

__all__ = [
    "admission_counts",
    "check_window",
    "deadline_metrics",
    "energy_kwh",
    "jct_cdf",
    "job_metrics",
    "parse_window",
    "run_metrics",
    "spread_gang_seconds",
    "utilization",
]


def _contention(result: SimResult) -> np.ndarray:
    jobs = result.world.jobs
    n = len(jobs)
    if n == 0:
        return np.zeros(0)
    arr = np.array([j.arrival for j in jobs])
    end = np.array(
        [c if not math.isnan(c) else result.end_time for c in result.completion], dtype=float
    )
    times = np.concatenate([arr, end])
    delta = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.lexsort((delta, times))  # ends (-1) before starts at equal times
    times, delta = times[order], delta[order]
    level = np.cumsum(delta)
    # F(t) = integral of the active count from times[0] to t, piecewise linear
    widths = np.diff(times)
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * widths)])

    def integral(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(times, t, side="right") - 1
        k = np.clip(k, 0, len(times) - 1)
        return np.asarray(area[k] + level[k] * (t - times[k]))

    span = end - arr
    total = integral(end) - integral(arr)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = np.where(span > 0, total / np.where(span > 0, span, 1.0), 1.0)
    return np.maximum(avg, 1.0)


def job_metrics(result: SimResult) -> pd.DataFrame:
    """Per-job metrics (see the module notes)."""
    import pandas as pd

    world = result.world
    frame = result.to_frame()
    held, runs = _held_and_runs(result)
    contention = _contention(result)
    iso: list[float] = []
    fair: list[float] = []
    for k, j in enumerate(world.jobs):
        rates = {t.name: world.rate(j, t.name) for t in world.cluster.gpu_types}
        feasible = [rates[t.name] for t in world.cluster.gpu_types if t.count >= j.num_gpus]
        best = max(feasible, default=0.0)
        iso.append(j.work / best if best > 0 else math.inf)
        x = {t.name: t.count / (contention[k] * j.num_gpus) for t in world.cluster.gpu_types}
        scale = max(1.0, sum(x.values()))
        rate = sum(x[g] / scale * rates[g] for g in x)
        fair.append(j.work / rate if rate > 0 else math.inf)
        if j.batch_schedule is not None:
            # batch-size phases: the same shares, at each phase's rate
            fits = [t.name for t in world.cluster.gpu_types if t.count >= j.num_gpus]
            iso[-1] = min((world.work_seconds(j, g) for g in fits), default=math.inf)
            fair[-1] = phase_seconds(j.batch_schedule, _shared_rate(world, j, x, scale))
    frame["jct"] = frame["completion"] - frame["arrival"]
    frame["queueing_delay"] = frame["first_start"] - frame["arrival"]
    frame["isolated_jct"] = iso
    frame["contention"] = contention
    frame["fair_share_jct"] = fair
    frame["rho"] = frame["jct"] / frame["fair_share_jct"]
    gpus = max(1, world.cluster.total_gpus)
    frame["ftf_fair_jct"] = frame["isolated_jct"] * np.maximum(1.0, contention / gpus)
    frame["ftf_rho"] = frame["jct"] / frame["ftf_fair_jct"]
    has_deadline = frame["deadline"].notna()
    met = frame["finished"] & (frame["completion"] <= frame["deadline"])
    frame["deadline_met"] = pd.array(
        [bool(m) if d else pd.NA for m, d in zip(met, has_deadline, strict=True)],
        dtype="boolean",
    )
    frame["gpu_seconds"] = held
    frame["runs"] = runs
    return frame


def _held_and_runs(result: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """Per job (world order): GPU-seconds held (a shared GPU counts half) and runs.

    A run starts at a segment (first row of a ``(job, start)``) beginning after every earlier
    one of the job ended (to ``FIT_TOL`` relative). The sums add each job's rows in record
    order (``bincount`` adds in input order), as a row-by-row loop would.
    """
    cols = result.intervals
    ids: dict[Any, int] = {j.job_id: k for k, j in enumerate(result.world.jobs)}
    n_jobs = len(result.world.jobs)
    job = _codes(cols["job_id"], ids)
    gpus = np.asarray(cols["gpus"], dtype=np.int64)
    start = np.asarray(cols["start"], dtype=float)
    end = np.asarray(cols["end"], dtype=float)
    shared = cols["shared_with"]
    half = np.array([0.5 if x else 1.0 for x in shared]) if any(shared) else np.ones(len(job))
    held = np.bincount(job, weights=gpus * (end - start) * half, minlength=len(ids))[:n_jobs]
    runs = np.zeros(n_jobs, dtype=np.int64)
    if not len(job):
        return held, runs
    # the first row of each (job, start), kept in record order within its job
    order = np.lexsort((np.arange(len(job)), start, job))
    j, s = job[order], start[order]
    first = order[np.r_[True, (j[1:] != j[:-1]) | (s[1:] != s[:-1])]]
    first = first[np.lexsort((first, job[first]))]
    bounds = np.searchsorted(job[first], np.arange(n_jobs + 1))
    for k in range(n_jobs):
        rows = first[bounds[k] : bounds[k + 1]]
        if len(rows):
            s, e = start[rows], end[rows]
            before = np.maximum.accumulate(e)[:-1]  # the latest end among earlier segments
            runs[k] = 1 + int(np.count_nonzero(s[1:] > before + FIT_TOL * np.maximum(1.0, s[1:])))
    return held, runs


def _shared_rate(
    world: World, job: SimJob, x: Mapping[str, float], scale: float
) -> Callable[[int], float]:
    """The rate of ``job`` in batch phase ``p`` on the time shares ``x / scale``."""

    def rate(p: int) -> float:
        return sum(x[g] / scale * world.rate(job, g, phase=p) for g in x)

    return rate


def utilization(result: SimResult) -> pd.DataFrame:
    """Busy GPUs over time: columns ``time, gpu_type, busy, capacity, utilization``.

    One row per (change time, type); the value holds until the next row of that type.
    """
    import pandas as pd

    cols = result.intervals
    events: dict[str, list[tuple[float, int]]] = {}
    for job, gt, gpus, start, end, shared in zip(
        cols["job_id"],
        cols["gpu_type"],
        cols["gpus"],
        cols["start"],
        cols["end"],
        cols["shared_with"],
        strict=True,
    ):
        if shared and shared < job:
            continue
        ev = events.setdefault(gt, [])
        ev.append((start, gpus))
        ev.append((end, -gpus))
    rows: list[dict[str, Any]] = []
    for t in result.world.cluster.gpu_types:
        ev = sorted(events.get(t.name, []))
        level = 0
        rows.append({"time": 0.0, "gpu_type": t.name, "busy": 0, "capacity": t.count})
        k = 0
        while k < len(ev):
            time = ev[k][0]
            while k < len(ev) and ev[k][0] == time:
                level += ev[k][1]
                k += 1
            rows.append({"time": time, "gpu_type": t.name, "busy": level, "capacity": t.count})
    frame = pd.DataFrame(rows, columns=["time", "gpu_type", "busy", "capacity"])
    frame["utilization"] = frame["busy"] / frame["capacity"]
    return frame


def energy_kwh(result: SimResult, power: Mapping[str, float] | None = None) -> float:
    """GPU energy of the run in kWh (see the module notes).

    Parameters
    ----------
    result : SimResult
    power : mapping, optional
        Watts per GPU by type, overriding :data:`optsched.power.GPU_POWER_WATTS`.

    Raises
    ------
    InvalidInstanceError
        A GPU type that held a job has no power figure.
    """
    cols = result.intervals
    counted = _counted_once(cols)
    types: dict[Any, int] = {}
    names = cols["gpu_type"]
    if len(counted) < len(names):
        names = [names[r] for r in counted.tolist()]
    gt = _codes(names, types)
    # a type's power is looked up in the order the rows name the types (the first missing
    # one raises)
    watts = np.array([gpu_power(name, power, field="power") for name in types], dtype=float)
    gpus = np.asarray(cols["gpus"], dtype=np.int64)[counted]
    span = (np.asarray(cols["end"], dtype=float) - np.asarray(cols["start"], dtype=float))[counted]
    each = watts[gt] * gpus * span
    # added left to right (``accumulate``), as a loop adds them
    joules = float(np.add.accumulate(each)[-1]) if len(each) else 0.0
    return joules / JOULES_PER_KWH


def _counted_once(cols: Mapping[str, Any]) -> np.ndarray:
    """The rows that count a pair's shared GPUs once (under the smaller id), as positions."""
    shared = cols["shared_with"]
    if not any(shared):
        return np.arange(len(shared))
    pairs = zip(cols["job_id"], shared, strict=True)
    return np.flatnonzero([not (b and b < a) for a, b in pairs])


def jct_cdf(result: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """The empirical JCT CDF as a fraction of **all** jobs: ``(sorted jcts, fraction)``.

    ``fraction[k] = (k + 1) / jobs``: it ends at ``finished / jobs``, below 1 when jobs did not
    finish.
    """
    jobs = result.world.jobs
    jct = np.sort(
        np.array(
            [c - j.arrival for j, c in zip(jobs, result.completion, strict=True) if c == c],
            dtype=float,
        )
    )
    n = max(1, len(jobs))
    return jct, np.arange(1, len(jct) + 1, dtype=float) / n


def _runs(
    cols: Mapping[str, Any],
) -> list[tuple[str, str, float, float, tuple[tuple[int, int], ...]]]:
    """Each job's runs of one unchanged placement: ``(job, gpu_type, start, end, servers)``."""
    segs: dict[tuple[str, float, float], list[tuple[str, int, int]]] = {}
    for job, gt, server, gpus, start, end in zip(
        cols["job_id"],
        cols["gpu_type"],
        cols["server"],
        cols["gpus"],
        cols["start"],
        cols["end"],
        strict=True,
    ):
        segs.setdefault((job, start, end), []).append((gt, server, gpus))
    by_job: dict[str, list[tuple[float, float, str, tuple[tuple[int, int], ...]]]] = {}
    for (job, start, end), parts in segs.items():
        placement = tuple(sorted((p[1], p[2]) for p in parts))
        by_job.setdefault(job, []).append((start, end, parts[0][0], placement))
    runs: list[tuple[str, str, float, float, tuple[tuple[int, int], ...]]] = []
    for job, ss in by_job.items():
        ss.sort()
        s0, e0, g0, p0 = ss[0]
        for start, end, gt, placement in ss[1:]:
            contiguous = abs(start - e0) <= FIT_TOL * max(1.0, abs(start))
            if contiguous and gt == g0 and placement == p0:
                e0 = end
                continue
            runs.append((job, g0, s0, e0, p0))
            s0, e0, g0, p0 = start, end, gt, placement
        runs.append((job, g0, s0, e0, p0))
    return runs


def _codes(values: Sequence[Any], codes: dict[Any, int]) -> np.ndarray:
    """Each value's code in ``codes`` (new values get the next codes), as an int64 array."""
    for v in dict.fromkeys(values):  # the distinct values, in order of first appearance
        codes.setdefault(v, len(codes))
    return np.fromiter(map(codes.__getitem__, values), np.int64, len(values))


def _spread_jobs(result: SimResult) -> set[str]:
    """The jobs with a gang segment on more servers than its gang needs (vectorized screen).

    A run of one unchanged placement is spread exactly when its segments are, so only these
    jobs' runs can count in :func:`spread_gang_seconds`.
    """
    cols = result.intervals
    if not len(cols["job_id"]):
        return set()
    jobs: dict[Any, int] = {}
    job = _codes(cols["job_id"], jobs)
    start = np.asarray(cols["start"], dtype=float)
    end = np.asarray(cols["end"], dtype=float)
    order = np.lexsort((np.arange(len(job)), end, start, job))  # by segment, then row
    j, s, e = job[order], start[order], end[order]
    head = np.r_[True, (j[1:] != j[:-1]) | (s[1:] != s[:-1]) | (e[1:] != e[:-1])]
    lo = np.flatnonzero(head)
    gpus = np.add.reduceat(np.asarray(cols["gpus"], dtype=np.int64)[order], lo)
    servers = np.diff(np.append(lo, len(order)))
    per = {t.name: t.gpus_per_server for t in result.world.cluster.gpu_types}
    types: dict[Any, int] = {}
    gt = _codes(cols["gpu_type"], types)
    gps = np.array([per[name] for name in types], dtype=np.int64)[gt[order[lo]]]  # first row's
    spread = servers > -(-gpus // gps)
    names = list(jobs)
    return {names[k] for k in j[lo[spread]].tolist()}


def _occupancy(result: SimResult) -> Callable[[str, float, str], dict[int, int]]:
    """``occupancy(gpu_type, t, exclude)``: GPUs held per server of the type at ``t``.

    Held by jobs other than ``exclude`` (a shared pair counted once), read from the whole table
    at once.
    """
    cols = result.intervals
    ids: dict[Any, int] = {"": -1}
    job = _codes(cols["job_id"], ids)
    shared = _codes([x if x else "" for x in cols["shared_with"]], ids)
    types: dict[Any, int] = {}
    gt = _codes(cols["gpu_type"], types)
    server = np.asarray(cols["server"], dtype=np.int64)
    gpus = np.asarray(cols["gpus"], dtype=np.int64)
    start = np.asarray(cols["start"], dtype=float)
    end = np.asarray(cols["end"], dtype=float)
    once = np.zeros(len(job), dtype=bool)
    once[_counted_once(cols)] = True

    def occupancy(gpu_type: str, t: float, exclude: str) -> dict[int, int]:
        slack = FIT_TOL * max(1.0, abs(t))
        x = ids.get(exclude, -2)
        held = once & (gt == types.get(gpu_type, -1)) & (job != x) & (shared != x)
        held &= (start <= t + slack) & (end > t + slack)
        used: dict[int, int] = {}
        for s, g in zip(server[held].tolist(), gpus[held].tolist(), strict=True):
            used[s] = used.get(s, 0) + g
        return used

    return occupancy


def spread_gang_seconds(result: SimResult) -> tuple[float, float]:
    r"""``(spread_gang_seconds, spread_gang_seconds_with_room)`` (see the module notes).

    A vectorized screen finds the jobs with a spread segment; only their runs are walked.
    Complexity: :math:`O(R \log R + S R)` for :math:`S` spread runs and :math:`R` interval
    rows (the :math:`S R` part in NumPy).
    """
    spread_jobs = _spread_jobs(result)
    if not spread_jobs:
        return 0.0, 0.0
    cols = result.intervals
    keep = [r for r, j in enumerate(cols["job_id"]) if j in spread_jobs]
    sub = {c: [v[r] for r in keep] for c, v in cols.items() if len(v) == len(cols["job_id"])}
    occupancy = _occupancy(result)
    types = {t.name: t for t in result.world.cluster.gpu_types}
    total = with_room = 0.0
    for job, gt, start, end, servers in _runs(sub):
        t = types[gt]
        n = sum(g for _, g in servers)
        k = -(-n // t.gpus_per_server)
        if len(servers) <= k:
            continue
        total += end - start
        used = occupancy(gt, start, job)
        free = sorted(
            (t.server_capacity(s) - used.get(s, 0) for s in range(t.num_servers)), reverse=True
        )
        if sum(free[:k]) >= n:
            with_room += end - start
    return total, with_room


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def deadline_metrics(result: SimResult, jobs: pd.DataFrame | None = None) -> dict[str, Any]:
    """Deadline satisfaction ratio and best-effort JCT (see the module notes), JSON-ready.

    Keys: ``deadlines``, ``deadlines_met``, ``deadline_satisfaction`` (NaN without deadlines),
    ``deadlines_met_admitted``, ``deadline_satisfaction_admitted`` (ElasticFlow's count: a
    declined job is missed), ``deadlines_declined``, ``deadlines_late``, ``best_effort``,
    ``best_effort_jct_mean``, ``best_effort_jct_median`` (NaN when none finished),
    ``best_effort_unfinished``.
    """
    frame = job_metrics(result) if jobs is None else jobs
    with_deadline = frame["deadline"].notna()
    n = int(with_deadline.sum())
    met = int(frame["deadline_met"].fillna(False).astype(bool).sum())
    adm = admission_counts(result, frame)
    be = frame[~with_deadline]
    done = be[be["finished"]]
    jct = done["jct"].to_numpy(dtype=float)
    return {
        "deadlines": n,
        "deadlines_met": met,
        "deadline_satisfaction": met / n if n else math.nan,
        "deadlines_met_admitted": adm["deadlines_met_admitted"],
        "deadline_satisfaction_admitted": adm["deadlines_met_fraction_admitted"],
        "deadlines_declined": adm["deadlines_declined"],
        "deadlines_late": adm["deadlines_late"],
        "best_effort": len(be),
        "best_effort_jct_mean": float(jct.mean()) if len(jct) else math.nan,
        "best_effort_jct_median": _pct(jct, 50),
        "best_effort_unfinished": len(be) - len(done),
    }


def admission_counts(result: SimResult, frame: pd.DataFrame) -> dict[str, Any]:
    """Deadlines under admission control over ``frame``'s jobs (module notes), JSON-ready.

    Keys ``deadlines_met_admitted``, ``deadlines_met_fraction_admitted`` (NaN without
    deadlines), ``deadlines_declined``, ``deadlines_late``. The declined jobs are the record's
    ``extra["declined_jobs"]`` (none when absent).
    """
    declined = set(result.extra.get("declined_jobs", ()))
    with_deadline = frame["deadline"].notna()
    met = frame["deadline_met"].fillna(False).astype(bool)
    if "met_by_lease_end" in result.extra:
        met = frame["job_id"].astype(str).isin(set(result.extra["met_by_lease_end"]))
    was_declined = frame["job_id"].astype(str).isin(declined)
    n = int(with_deadline.sum())
    met_admitted = int((met & ~was_declined).sum())
    n_declined = int((with_deadline & was_declined).sum())
    return {
        "deadlines_met_admitted": met_admitted,
        "deadlines_met_fraction_admitted": met_admitted / n if n else math.nan,
        "deadlines_declined": n_declined,
        "deadlines_late": n - met_admitted - n_declined,
    }


#: A steady-state window of arrival indices ``[start, end)``; ``end=None``: to the last job.
Window = tuple[int, int | None]


def parse_window(text: str, *, field: str = "window") -> Window:
    """``"START:END"`` as a window ``(start, end)``.

    ``"100:"`` is ``(100, None)``, ``":50"`` is ``(0, 50)``.

    Raises
    ------
    InvalidInstanceError
        Not two integers around one colon, a negative bound, or ``end <= start`` (naming
        ``field``).
    """
    parts = text.strip().split(":")
    if len(parts) != 2:
        raise InvalidInstanceError(field, f"expected START:END, got {text!r}")
    try:
        start = int(parts[0]) if parts[0].strip() else 0
        end = int(parts[1]) if parts[1].strip() else None
    except ValueError:
        raise InvalidInstanceError(field, f"bounds must be integers, got {text!r}") from None
    return check_window((start, end), len_jobs=None, field=field)


def check_window(window: Any, *, len_jobs: int | None, field: str = "window") -> Window:
    """The window, checked: ``0 <= start < end``, and selecting a job when ``len_jobs`` given.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``.
    """
    try:
        start, end = window
    except (TypeError, ValueError):
        raise InvalidInstanceError(field, f"expected (start, end), got {window!r}") from None
    for bound in (start, end):
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, int | np.integer)
        ):
            raise InvalidInstanceError(field, f"bounds must be integers, got {window!r}")
    if start is None:
        start = 0
    if start < 0 or (end is not None and end <= start):
        raise InvalidInstanceError(field, f"needs 0 <= start < end, got start={start}, end={end}")
    if len_jobs is not None and start >= len_jobs:
        raise InvalidInstanceError(
            field, f"start {start} selects no job: the trace has {len_jobs} jobs"
        )
    return int(start), None if end is None else int(end)


def run_metrics(
    result: SimResult, jobs: pd.DataFrame | None = None, *, window: Window | None = None
) -> dict[str, Any]:
    """Per-run metrics (see the module notes), as a JSON-ready mapping.

    Parameters
    ----------
    result : SimResult
    jobs : DataFrame, optional
        :func:`job_metrics` of ``result``, when already computed.
    window : (int, int or None), optional
        Only the jobs of arrival index ``start <= k < end`` enter the job-level figures (the
        steady-state window of the module notes).

    Raises
    ------
    InvalidInstanceError
        A malformed window, or one selecting no job (field ``window``).
    """
    whole = job_metrics(result) if jobs is None else jobs
    frame = whole
    if window is not None:
        window = check_window(window, len_jobs=len(whole))
        frame = whole.iloc[window[0] : window[1]]
    done = frame[frame["finished"]]
    jct = done["jct"].to_numpy(dtype=float)
    world = result.world
    first = float(frame["arrival"].min()) if len(frame) else 0.0
    end = float(done["completion"].max()) if len(done) else math.nan
    gpu_seconds = float(frame["gpu_seconds"].sum())
    span = (end - first) if len(done) else math.nan
    # utilization is a cluster figure: every job's GPU-seconds over the whole run's span
    whole_done = whole[whole["finished"]]
    whole_span = (
        float(whole_done["completion"].max()) - float(whole["arrival"].min())
        if len(whole_done)
        else math.nan
    )
    whole_seconds = float(whole["gpu_seconds"].sum())
    capacity = world.cluster.total_gpus
    with_deadline = frame["deadline"].notna()
    try:
        energy = energy_kwh(result)
    except InvalidInstanceError:
        energy = math.nan  # a GPU type without a power figure: no energy figure at all
    met = int(frame["deadline_met"].fillna(False).astype(bool).sum())
    weights = done["weight"].to_numpy(dtype=float)
    rho = done["rho"].to_numpy(dtype=float)
    ftf = done["ftf_rho"].to_numpy(dtype=float)
    spread = spread_gang_seconds(result)
    out: dict[str, Any] = {
        "policy": result.policy,
        "jobs": len(frame),
        "finished": len(done),
        "unfinished": len(frame) - len(done),
        "jct_mean": float(jct.mean()) if len(jct) else math.nan,
        "jct_median": _pct(jct, 50),
        "jct_p95": _pct(jct, 95),
        "jct_p99": _pct(jct, 99),
        "weighted_jct_mean": float((weights * jct).sum() / weights.sum()) if len(jct) else math.nan,
        "makespan": span,
        "queueing_delay_mean": float(done["queueing_delay"].mean()) if len(done) else math.nan,
        "rho_max": float(rho.max()) if len(rho) else math.nan,
        "rho_mean": float(rho.mean()) if len(rho) else math.nan,
        "ftf_rho_max": float(ftf.max()) if len(ftf) else math.nan,
        "ftf_rho_mean": float(ftf.mean()) if len(ftf) else math.nan,
        "deadlines": int(with_deadline.sum()),
        "deadlines_met": met,
        "deadlines_met_fraction": met / int(with_deadline.sum())
        if with_deadline.any()
        else math.nan,
        **(admission_counts(result, frame) if with_deadline.any() else {}),
        "gpu_hours": gpu_seconds / 3600.0,
        "energy_kwh": energy,
        "utilization_mean": whole_seconds / (capacity * whole_span)
        if whole_span and whole_span > 0
        else math.nan,
        "best_effort_jct_mean": deadline_metrics(result, frame)["best_effort_jct_mean"],
        "spread_gang_seconds": spread[0],
        "spread_gang_seconds_with_room": spread[1],
        "status": result.status,
        "truncated": result.truncated,
    }
    if window is not None:
        out["window"] = [window[0], window[1]]
    return out
