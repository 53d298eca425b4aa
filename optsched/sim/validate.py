r"""Independent validator of a simulation record.

:func:`validate` reads only the world and the record (the interval table, completions and first
starts); it shares no code with the engine. Constraints (the names of the
:class:`~optsched.results.Violation`\ s):

``interval_shape``
    Every row names a job and GPU type of the world, a server of that type, ``gpus >= 1`` and
    ``0 <= start < end`` (finite).
``gang_whole``
    The rows of one job with the same ``start`` and ``end`` (one gang segment) are of one GPU type,
    on distinct servers, with the same ``shared_with``, and hold exactly ``num_gpus`` GPUs (an
    elastic job: between its ``min_gpus`` and ``max_gpus``).
``job_overlap``
    A job's segments do not overlap in time.
``before_arrival`` / ``after_completion``
    No segment starts before the job's arrival or ends after its completion.
``share_pair``
    A row shared with job ``b`` has its mirror row of ``b`` (same type, server, GPUs, start, end),
    and the pair has measured positive pair rates.
``server_capacity`` / ``type_capacity``
    At every instant the GPUs held on each server (a shared pair counted once) are at most the
    server's GPUs, and per type at most the type's count.
``work_done``
    Re-integrating each job's rate over its segments (runs of contiguous segments — one ending
    where the next starts, to :data:`~optsched.tolerances.FIT_TOL` relative — on one
    placement; a run that resumes a job which ran before makes no progress for its first
    ``restore_s``), a finished job's work is reached at its completion time (within
    :data:`~optsched.tolerances.TIME_TOL`, relative; a shortfall is converted to time at the last
    segment's rate), and an unfinished job's work is not reached before the end of the run.
``first_start``
    The recorded first start is the earliest segment start.

Complexity: :math:`O(R \log R)` for :math:`R` rows.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Any

from optsched.results import Report, Violation
from optsched.sim.record import SimResult
from optsched.sim.world import SimJob, World
from optsched.tolerances import TIME_TOL, WORK_TOL, within

__all__ = ["validate"]

_MAX_REPORTED = 1000


def validate(world: World, result: SimResult) -> Report:
    """Check ``result`` against ``world`` (see the module notes).

    Returns
    -------
    Report
        ``objective`` is the total weighted JCT of the finished jobs; ``objectives`` holds
        ``mean-jct`` and ``makespan`` (NaN-free: ``None`` when no job finished).
    """
    out: list[Violation] = []

    def bad(constraint: str, message: str, amount: float | None = None, **where: Any) -> None:
        if len(out) < _MAX_REPORTED:
            out.append(Violation(constraint, message, where, amount))

    jobs = {j.job_id: j for j in world.jobs}
    types = {t.name: t for t in world.cluster.gpu_types}
    cols = result.intervals
    n_rows = len(cols.get("job", []))
    for c in ("gpu_type", "server", "gpus", "start", "end", "shared_with"):
        if len(cols.get(c, [])) != n_rows:
            bad("interval_shape", f"column {c!r} has {len(cols.get(c, []))} rows, not {n_rows}")
            return Report(violations=out)
    if len(result.completion) != len(world.jobs) or len(result.first_start) != len(world.jobs):
        bad("interval_shape", "completion/first_start are not one per job of the world")
        return Report(violations=out)
    completion = {j.job_id: result.completion[k] for k, j in enumerate(world.jobs)}

    rows: list[tuple[str, str, int, int, float, float, str]] = []
    for r in range(n_rows):
        job, gt, server, gpus = (
            cols["job"][r],
            cols["gpu_type"][r],
            cols["server"][r],
            cols["gpus"][r],
        )
        start, end, shared = float(cols["start"][r]), float(cols["end"][r]), cols["shared_with"][r]
        shared = "" if shared is None else str(shared)
        if job not in jobs:
            bad("interval_shape", f"row {r}: unknown job {job!r}", row=r)
            continue
        if gt not in types:
            bad("interval_shape", f"row {r}: unknown GPU type {gt!r}", row=r, job=job)
            continue
        if not (isinstance(server, int) and 0 <= server < types[gt].num_servers):
            bad("interval_shape", f"row {r}: no server {server!r} of {gt}", row=r, job=job)
            continue
        if not (isinstance(gpus, int) and gpus >= 1):
            bad("interval_shape", f"row {r}: gpus must be >= 1, got {gpus!r}", row=r, job=job)
            continue
        if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
            bad("interval_shape", f"row {r}: needs 0 <= start < end, got [{start}, {end}]", row=r)
            continue
        if shared and shared not in jobs:
            bad("interval_shape", f"row {r}: shared with unknown job {shared!r}", row=r, job=job)
            continue
        rows.append((job, gt, server, gpus, start, end, shared))

    # -- gangs ----------------------------------------------------------------------------
    segs: dict[tuple[str, float, float], list[tuple[str, int, int, str]]] = defaultdict(list)
    for job, gt, server, gpus, start, end, shared in rows:
        segs[(job, start, end)].append((gt, server, gpus, shared))
    by_job: dict[str, list[tuple[float, float, str, tuple[tuple[int, int], ...], str]]] = (
        defaultdict(list)
    )
    seg_total: dict[tuple[str, float, float], int] = {}
    for (job, start, end), parts in segs.items():
        seg_total[(job, start, end)] = sum(p[2] for p in parts)
        gts = {p[0] for p in parts}
        shareds = {p[3] for p in parts}
        servers = [p[1] for p in parts]
        total = sum(p[2] for p in parts)
        lo, hi = jobs[job].min_gpus, jobs[job].max_gpus
        need = str(lo) if lo == hi else f"{lo}..{hi}"
        if (
            len(gts) != 1
            or len(shareds) != 1
            or len(set(servers)) != len(servers)
            or not (lo <= total <= hi)
        ):
            bad(
                "gang_whole",
                f"job {job} in [{start:g}, {end:g}] holds {total} GPUs of {sorted(gts)} on servers "
                f"{sorted(servers)} (needs {need} of one type, one row per server, one partner)",
                job=job,
                start=start,
            )
            continue
        placement = tuple(sorted((p[1], p[2]) for p in parts))
        by_job[job].append((start, end, parts[0][0], placement, parts[0][3]))

    # -- per job: overlap, arrival, completion, first start, work -------------------------
    reached_total = 0
    for k, j in enumerate(world.jobs):
        ss = sorted(by_job.get(j.job_id, []))
        comp = completion[j.job_id]
        first = result.first_start[k]
        if ss:
            if not within(first, ss[0][0], TIME_TOL):
                bad(
                    "first_start",
                    f"job {j.job_id}: first_start {first} but runs from {ss[0][0]}",
                    job=j.job_id,
                )
        elif not math.isnan(first):
            bad(
                "first_start", f"job {j.job_id}: first_start {first} but it never ran", job=j.job_id
            )
        for a, b in itertools.pairwise(ss):
            if b[0] < a[1] - TIME_TOL * max(1.0, abs(a[1])):
                bad(
                    "job_overlap",
                    f"job {j.job_id}: [{a[0]:g}, {a[1]:g}] overlaps [{b[0]:g}, {b[1]:g}]",
                    job=j.job_id,
                    start=b[0],
                )
        if ss and ss[0][0] < j.arrival - TIME_TOL * max(1.0, j.arrival):
            bad(
                "before_arrival",
                f"job {j.job_id} runs at {ss[0][0]:g} before its arrival {j.arrival:g}",
                j.arrival - ss[0][0],
                job=j.job_id,
            )
        if ss and not math.isnan(comp) and ss[-1][1] > comp + TIME_TOL * max(1.0, abs(comp)):
            bad(
                "after_completion",
                f"job {j.job_id} holds GPUs until {ss[-1][1]:g} after its completion {comp:g}",
                ss[-1][1] - comp,
                job=j.job_id,
            )
        reached = _work_reached(world, j, ss, jobs)
        if not math.isnan(comp):
            if reached is None:
                bad(
                    "work_done",
                    f"job {j.job_id} is marked complete at {comp:g} but its "
                    "segments do not do its work",
                    job=j.job_id,
                )
            elif not within(reached, comp, TIME_TOL):
                bad(
                    "work_done",
                    f"job {j.job_id}'s work is done at {reached:.9g}, its "
                    f"completion says {comp:.9g}",
                    reached - comp,
                    job=j.job_id,
                )
            else:
                reached_total += 1
        elif reached is not None and reached < result.end_time - TIME_TOL * max(1.0, reached):
            bad(
                "work_done",
                f"job {j.job_id}'s work is done at {reached:.9g} but it is not marked complete",
                job=j.job_id,
            )

    # -- sharing --------------------------------------------------------------------------
    keys = {
        (job, gt, server, gpus, start, end, shared)
        for job, gt, server, gpus, start, end, shared in rows
    }
    for job, gt, server, gpus, start, end, shared in rows:
        if not shared:
            continue
        if shared == job or (shared, gt, server, gpus, start, end, job) not in keys:
            bad(
                "share_pair",
                f"job {job} shares with {shared} on {gt} server {server} in "
                f"[{start:g}, {end:g}] without the mirror row",
                job=job,
                start=start,
            )
        elif job < shared:
            ja, jb = jobs[job], jobs[shared]
            n = seg_total[(job, start, end)]
            if _pair_rate(world, ja, gt, jb, n) <= 0 or _pair_rate(world, jb, gt, ja, n) <= 0:
                bad(
                    "share_pair",
                    f"jobs {job} and {shared} cannot share {gt} (no measured pair rate)",
                    job=job,
                    start=start,
                )

    # -- capacity -------------------------------------------------------------------------
    per_server: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    per_type: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job, gt, server, gpus, start, end, shared in rows:
        if shared and shared < job:
            continue  # a shared pair holds its GPUs once
        for ev in ((start, gpus), (end, -gpus)):
            per_server[(gt, server)].append(ev)
            per_type[gt].append(ev)
    for (gt, server), evs in per_server.items():
        peak, at = _peak(evs)
        cap = types[gt].server_capacity(server)
        if peak > cap:
            bad(
                "server_capacity",
                f"{gt} server {server} holds {peak} GPUs at {at:g} (has {cap})",
                peak - cap,
                gpu_type=gt,
                server=server,
                time=at,
            )
    for gt, evs in per_type.items():
        peak, at = _peak(evs)
        if peak > types[gt].count:
            bad(
                "type_capacity",
                f"{gt} holds {peak} GPUs at {at:g} (has {types[gt].count})",
                peak - types[gt].count,
                gpu_type=gt,
                time=at,
            )

    done = [(j, c) for j, c in zip(world.jobs, result.completion, strict=True) if not math.isnan(c)]
    jcts = [c - j.arrival for j, c in done]
    return Report(
        violations=out,
        objective=sum(j.weight * (c - j.arrival) for j, c in done),
        objectives={
            "mean-jct": sum(jcts) / len(jcts) if jcts else None,
            "makespan": max((c for _, c in done), default=None),
        },
        details={"finished": len(done), "jobs": len(world.jobs), "rows": n_rows},
    )


def _peak(events: list[tuple[float, int]]) -> tuple[int, float]:
    # ends sort before starts at the same instant; nearly equal times count as equal
    events.sort(key=lambda e: (e[0], e[1]))
    level = peak = 0
    at = 0.0
    k = 0
    while k < len(events):
        t0 = events[k][0]
        group: list[int] = []
        while k < len(events) and events[k][0] <= t0 + TIME_TOL * max(1.0, abs(t0)):
            group.append(events[k][1])
            k += 1
        level += sum(g for g in group if g < 0)
        level += sum(g for g in group if g > 0)
        if level > peak:
            peak, at = level, t0
    return peak, at


def _pair_rate(world: World, job: SimJob, gpu_type: str, other: SimJob, n: int) -> float:
    return world.rate(job, gpu_type, True, other, num_gpus=n)


def _work_reached(
    world: World,
    job: SimJob,
    segments: list[tuple[float, float, str, tuple[tuple[int, int], ...], str]],
    jobs: dict[str, SimJob],
) -> float | None:
    """Time the job's work is reached by re-integration.

    When the segments fall short, the time it would be reached if the last productive segment
    ran on (so a completion early by rounding is judged by the time tolerance); ``None`` when no
    segment makes progress.
    """
    restore = world.restore_s
    gps = {t.name: t.gpus_per_server for t in world.cluster.gpu_types}
    acc = 0.0
    run_start = -math.inf
    prev: tuple[float, str, tuple[tuple[int, int], ...]] | None = None
    ran_before = False
    last: tuple[float, float] | None = None
    for start, end, gt, placement, shared in segments:
        if (
            prev is not None
            and abs(start - prev[0]) <= TIME_TOL * max(1.0, abs(start))
            and (prev[1] == gt and prev[2] == placement)
        ):
            pass  # the same run continues
        else:
            run_start = start + (restore if ran_before else 0.0)
        ran_before = True
        prev = (end, gt, placement)
        n = sum(g for _, g in placement)
        consolidated = len(placement) <= -(-n // gps[gt])
        partner = jobs.get(shared) if shared else None
        rate = world.rate(job, gt, consolidated, partner, num_gpus=n)
        begin = max(start, run_start)
        if end <= begin or rate <= 0:
            continue
        gain = rate * (end - begin)
        if acc + gain >= job.work * (1 - WORK_TOL):
            return begin + max(0.0, job.work - acc) / rate
        acc += gain
        last = (end, rate)
    if last is None:
        return None
    # short of the work: the time it would be reached running on past the last segment, so that
    # the caller's time tolerance (not a work tolerance) judges a completion a hair early
    return last[0] + (job.work - acc) / last[1]
