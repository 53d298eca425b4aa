r"""The validator's plain-Python checks: the reference for :mod:`optsched.sim.measure.segments`.

One body per constraint of :mod:`optsched.sim.measure.validate` (whose module notes state the
rules), each reading the record row by row and segment by segment: ``_first_start(check)``,
``_work_done(check)``, ... on a :class:`Check` made by :func:`parse`. The validator runs the
NumPy checks of :mod:`~optsched.sim.measure.segments` by default; these stay beside them as the
reference they are tested equal to on random worlds (``tests/test_sim_validate_fast.py``), and
run the checks the NumPy path does not cover (the colocation mode, ``work_conserving``, records
whose columns are not of the recorded types). They share no code with the engine.

Complexity: :math:`O(R \log R + D (K + W))` for :math:`R` rows, :math:`D` decision points,
:math:`K` GPU types and :math:`W` jobs waiting at a decision point (``work_conserving`` only).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from optsched.limits import MAX_STALLED_ROUNDS
from optsched.results import Violation
from optsched.sim.measure.record import SimResult
from optsched.sim.world.jobs import SimJob, World
from optsched.tolerances import CAPACITY_TOL, FIT_TOL, TIME_TOL, WORK_TOL, within

__all__ = [
    "BODIES",
    "Check",
    "gang_problem",
    "judge_reached",
    "parse",
    "phased_work_reached",
    "row_problem",
    "stall_allowance",
]

#: At most this many violations are reported per constraint.
MAX_REPORTED = 1000

Row = tuple[str, str, int, int, float, float, str]
Servers = tuple[tuple[int, int], ...]
#: ``(start, end, gpu_type, servers, shared_with)`` of one gang segment.
Segment = tuple[float, float, str, Servers, str]


@dataclass
class Check:
    """What the constraints read: the world, the record, and the rows parsed once."""

    world: World
    result: SimResult
    jobs: dict[str, SimJob]
    out: list[Violation] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    shape: list[Violation] = field(default_factory=list)  # interval_shape's violations
    gangs: list[Violation] = field(default_factory=list)  # gang_whole's violations
    segments: dict[str, list[Segment]] = field(default_factory=dict)
    seg_total: dict[tuple[str, float, float], int] = field(default_factory=dict)
    broken: bool = False  # the record's shape is too wrong to read further
    coloc: Any = None  # the colocation mode's reading of the record (parsed once)

    def bad(self, constraint: str, message: str, amount: float | None = None, **where: Any) -> None:
        if len(self.out) < MAX_REPORTED:
            self.out.append(Violation(constraint, message, where, amount))

    @property
    def completion(self) -> list[float]:
        return self.result.completion


def parse(instance: World, solution: SimResult) -> Check:
    """The record parsed: its rows and gang segments, ``interval_shape`` and ``gang_whole``."""
    check = Check(world=instance, result=solution, jobs={j.job_id: j for j in instance.jobs})
    _parse_rows(check)
    check.shape, check.out = check.out, []
    if not check.broken:
        _group_segments(check)
    check.gangs, check.out = check.out, []
    return check


def run_body(check: Check, body: Callable[[Check], None]) -> list[Violation]:
    """Run one constraint's ``body`` on the parsed record; its violations."""
    if check.broken:
        return []
    out, check.out = check.out, []
    try:
        body(check)
        return check.out
    finally:
        check.out = out


def _slack(t: float) -> float:
    """How far two recorded times may differ and still be one instant.

    ``TIME_TOL`` seconds, or the simulator's own same-instant slack ``FIT_TOL`` relative where
    that is wider (a completion due within it is carried out at the decision point). Not
    ``TIME_TOL`` relative: over a long trace that grows to a second or more (0.47 s at
    466,560 s), and an overlap, an early start or a late end that long is real.
    """
    return max(TIME_TOL, FIT_TOL * abs(t))


# -- interval_shape ----------------------------------------------------------------------------


def row_problem(check: Check, r: int) -> str | None:
    """Why row ``r`` of the interval table is malformed (``None``: it is well formed)."""
    cols = check.result.intervals
    job, gt, server, gpus = (
        cols["job_id"][r],
        cols["gpu_type"][r],
        cols["server"][r],
        cols["gpus"][r],
    )
    start, end, shared = float(cols["start"][r]), float(cols["end"][r]), cols["shared_with"][r]
    types = {t.name: t for t in check.world.cluster.gpu_types}
    if job not in check.jobs:
        return f"unknown job {job!r}"
    if gt not in types:
        return f"unknown GPU type {gt!r}"
    if not (isinstance(server, int) and 0 <= server < types[gt].num_servers):
        return f"no server {server!r} of {gt}"
    if not (isinstance(gpus, int) and gpus >= 1):
        return f"gpus must be >= 1, got {gpus!r}"
    if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
        return f"needs 0 <= start < end, got [{start}, {end}]"
    if shared and shared not in check.jobs:
        return f"shared with unknown job {shared!r}"
    return None


def _parse_rows(check: Check) -> None:
    """Parse the interval table into rows, reporting ``interval_shape`` problems."""
    cols = check.result.intervals
    n_rows = len(cols.get("job_id", []))
    for c in ("gpu_type", "server", "gpus", "start", "end", "shared_with"):
        if len(cols.get(c, [])) != n_rows:
            check.bad(
                "interval_shape", f"column {c!r} has {len(cols.get(c, []))} rows, not {n_rows}"
            )
            check.broken = True
            return
    n = len(check.world.jobs)
    if len(check.result.completion) != n or len(check.result.first_start) != n:
        check.bad("interval_shape", "completion/first_start are not one per job of the world")
        check.broken = True
        return
    for r in range(n_rows):
        problem = row_problem(check, r)
        if problem is not None:
            check.bad("interval_shape", f"row {r}: {problem}", row=r, job=str(cols["job_id"][r]))
            continue
        shared = cols["shared_with"][r]
        check.rows.append(
            (
                cols["job_id"][r],
                cols["gpu_type"][r],
                cols["server"][r],
                cols["gpus"][r],
                float(cols["start"][r]),
                float(cols["end"][r]),
                "" if shared is None else str(shared),
            )
        )


# -- gang_whole --------------------------------------------------------------------------------


Part = tuple[str, int, int, str]  # (gpu_type, server, gpus, shared_with) of one row


def gang_problem(job: SimJob, parts: list[Part]) -> str | None:
    """Why the rows of one gang segment are not one whole gang (``None``: they are)."""
    total = sum(p[2] for p in parts)
    types = sorted({p[0] for p in parts})
    servers = [p[1] for p in parts]
    one_partner = len({p[3] for p in parts}) == 1
    distinct = len(set(servers)) == len(servers)
    if len(types) == 1 and one_partner and distinct and job.min_gpus <= total <= job.max_gpus:
        return None
    lo, hi = job.min_gpus, job.max_gpus
    need = str(lo) if lo == hi else f"{lo}..{hi}"
    return (
        f"holds {total} GPUs of {types} on servers {sorted(servers)} (needs {need} of one type, "
        "one row per server, one partner)"
    )


def _group_segments(check: Check) -> None:
    """Group the rows into each job's gang segments, reporting ``gang_whole`` problems."""
    parts_of: dict[tuple[str, float, float], list[Part]] = defaultdict(list)
    for job, gt, server, gpus, start, end, shared in check.rows:
        parts_of[(job, start, end)].append((gt, server, gpus, shared))
    by_job: dict[str, list[Segment]] = defaultdict(list)
    for (job, start, end), parts in parts_of.items():
        check.seg_total[(job, start, end)] = sum(p[2] for p in parts)
        problem = gang_problem(check.jobs[job], parts)
        if problem is not None:
            check.bad(
                "gang_whole", f"job {job} in [{start:g}, {end:g}] {problem}", job=job, start=start
            )
            continue
        placement = tuple(sorted((p[1], p[2]) for p in parts))
        by_job[job].append((start, end, parts[0][0], placement, parts[0][3]))
    check.segments = {job: sorted(ss) for job, ss in by_job.items()}


# -- per job: first start, overlap, arrival, completion -----------------------------------------


def _first_start(check: Check) -> None:
    """``first_start``."""
    for k, j in enumerate(check.world.jobs):
        ss = check.segments.get(j.job_id, [])
        first = check.result.first_start[k]
        if ss and not within(first, ss[0][0], TIME_TOL):
            check.bad(
                "first_start",
                f"job {j.job_id}: first_start {first} but runs from {ss[0][0]}",
                job=j.job_id,
            )
        elif not ss and not math.isnan(first):
            check.bad(
                "first_start", f"job {j.job_id}: first_start {first} but it never ran", job=j.job_id
            )


def _job_overlap(check: Check) -> None:
    """``job_overlap``."""
    for job, ss in check.segments.items():
        for a, b in itertools.pairwise(ss):
            if b[0] < a[1] - _slack(a[1]):
                check.bad(
                    "job_overlap",
                    f"job {job}: [{a[0]:g}, {a[1]:g}] overlaps [{b[0]:g}, {b[1]:g}]",
                    job=job,
                    start=b[0],
                )


def _before_arrival(check: Check) -> None:
    """``before_arrival``."""
    for j in check.world.jobs:
        ss = check.segments.get(j.job_id, [])
        if ss and ss[0][0] < j.arrival - _slack(j.arrival):
            check.bad(
                "before_arrival",
                f"job {j.job_id} runs at {ss[0][0]:g} before its arrival {j.arrival:g}",
                j.arrival - ss[0][0],
                job=j.job_id,
            )


def _after_completion(check: Check) -> None:
    """``after_completion``."""
    for j, comp in zip(check.world.jobs, check.completion, strict=True):
        ss = check.segments.get(j.job_id, [])
        if ss and not math.isnan(comp) and ss[-1][1] > comp + _slack(comp):
            check.bad(
                "after_completion",
                f"job {j.job_id} holds GPUs until {ss[-1][1]:g} after its completion {comp:g}",
                ss[-1][1] - comp,
                job=j.job_id,
            )


# -- work_done and no_progress -----------------------------------------------------------------


@dataclass(frozen=True)
class _Stretch:
    """One segment as re-integrated: where progress begins in it, and its rate."""

    start: float
    end: float
    begin: float  # progress starts here (after a restore)
    rate: float


def _stretches(
    world: World, job: SimJob, segments: list[Segment], jobs: dict[str, SimJob]
) -> Iterator[_Stretch]:
    """Each segment with the start of its progress (restore rule) and its rate."""
    restore = world.restore_s
    first_too = world.restore_on_first_start
    gps = {t.name: t.gpus_per_server for t in world.cluster.gpu_types}
    prev: tuple[float, str, Servers] | None = None
    run_start = -math.inf
    for start, end, gt, placement, shared in segments:
        same_run = prev is not None and abs(start - prev[0]) <= _slack(start)
        if not (same_run and prev is not None and prev[1:] == (gt, placement)):
            charged = prev is not None or first_too
            run_start = start + (restore if charged else 0.0)
        prev = (end, gt, placement)
        n = sum(g for _, g in placement)
        consolidated = len(placement) <= -(-n // gps[gt])
        partner = jobs.get(shared) if shared else None
        rate = world.rate(job, gt, consolidated, partner, num_gpus=n)
        yield _Stretch(start, end, max(start, run_start), rate)


def _work_reached(
    world: World, job: SimJob, segments: list[Segment], jobs: dict[str, SimJob]
) -> float | None:
    """Time the job's work is reached by re-integration.

    When the segments fall short, the time it would be reached if the last productive segment
    ran on (so a completion early by rounding is judged by the time tolerance); ``None`` when no
    segment makes progress.
    """
    if job.batch_schedule is not None:
        return phased_work_reached(world, job, segments, jobs)
    acc = 0.0
    last: tuple[float, float] | None = None
    for s in _stretches(world, job, segments, jobs):
        if s.end <= s.begin or s.rate <= 0:
            continue
        gain = s.rate * (s.end - s.begin)
        if acc + gain >= job.work * (1 - WORK_TOL):
            return s.begin + max(0.0, job.work - acc) / s.rate
        acc += gain
        last = (s.end, s.rate)
    if last is None:
        return None
    return last[0] + (job.work - acc) / last[1]


def _phase_walk(
    work: float,
    ends: list[float],
    acc: float,
    k: int,
    now: float,
    end: float,
    rate_of: Any,
) -> tuple[float, int, float | None, tuple[float, float] | None]:
    """One productive stretch ``[now, end)`` walked through the phases.

    Returns the work accumulated, the phase it is in, the time the whole work is reached in
    this stretch (``None`` if not), and the ``(end, rate)`` of the stretch's last productive
    piece (``None`` if none).
    """
    last_phase = len(ends) - 1
    piece: tuple[float, float] | None = None
    while now < end:
        while k < last_phase and acc >= ends[k] * (1 - WORK_TOL):
            k += 1
        rate = rate_of(phase=k)
        if rate <= 0:
            break
        goal = work if k == last_phase else ends[k]
        need = max(0.0, goal - acc) / rate
        if k == last_phase and now + need <= end:
            return acc, k, now + need, (now + need, rate)
        if now + need <= end:
            acc, now = goal, now + need  # the phase ends inside the stretch
        else:
            acc += rate * (end - now)
            now = end
        piece = (now, rate)
    return acc, k, None, piece


def phased_work_reached(
    world: World, job: SimJob, segments: list[Segment], jobs: dict[str, SimJob]
) -> float | None:
    """:func:`_work_reached` for a job with batch-size phases.

    Walks each productive stretch from its progress start: in the phase the accumulated work is
    in, at that phase's rate on the stretch's placement, up to the phase's end or the stretch's
    end, whichever comes first; the work is reached inside the phase that holds it.
    """
    schedule = job.batch_schedule
    assert schedule is not None
    ends = [p.end for p in schedule.phases]
    gps = {t.name: t.gpus_per_server for t in world.cluster.gpu_types}
    acc = 0.0
    last: tuple[float, float] | None = None  # (end, rate) of the last productive piece
    k = 0  # the phase of ``acc``: the first whose end exceeds it
    for st, (_s, _e, gt, placement, shared) in zip(
        _stretches(world, job, segments, jobs), segments, strict=True
    ):
        if st.end <= st.begin or st.rate <= 0:
            continue
        n = sum(g for _, g in placement)
        consolidated = len(placement) <= -(-n // gps[gt])
        partner = jobs.get(shared) if shared else None

        rate_of = functools.partial(world.rate, job, gt, consolidated, partner, num_gpus=n)
        acc, k, reached, piece = _phase_walk(job.work, ends, acc, k, st.begin, st.end, rate_of)
        if reached is not None:
            return reached
        if piece is not None:
            last = piece
    if last is None:
        return None
    # short: when it would be reached if the last piece ran on (as for a static job)
    return last[0] + max(0.0, job.work - acc) / last[1]


def _judge_work(check: Check, j: SimJob, comp: float) -> None:
    if check.world.colocation is not None:
        reached = _coloc_work_reached(check, j)
    else:
        reached = _work_reached(check.world, j, check.segments.get(j.job_id, []), check.jobs)
    judge_reached(check, j, comp, reached)


def judge_reached(check: Check, j: SimJob, comp: float, reached: float | None) -> None:
    """``work_done``'s verdict on job ``j`` given the time its work is ``reached`` (or ``None``)."""
    if math.isnan(comp):
        end = check.result.end_time
        if reached is not None and reached < end - _slack(reached):
            check.bad(
                "work_done",
                f"job {j.job_id}'s work is done at {reached:.9g} but it is not marked complete",
                job=j.job_id,
            )
    elif reached is None:
        check.bad(
            "work_done",
            f"job {j.job_id} is marked complete at {comp:g} but its segments do not do its work",
            job=j.job_id,
        )
    elif not within(reached, comp, TIME_TOL):
        check.bad(
            "work_done",
            f"job {j.job_id}'s work is done at {reached:.9g}, its completion says {comp:.9g}",
            reached - comp,
            job=j.job_id,
        )


def _work_done(check: Check) -> None:
    """``work_done``."""
    for j, comp in zip(check.world.jobs, check.completion, strict=True):
        _judge_work(check, j, comp)


def stall_allowance(round_seconds: float | None) -> float:
    """Longest a job may hold GPUs at a rate of 0 (``no_progress``), in seconds."""
    return 0.0 if round_seconds is None else MAX_STALLED_ROUNDS * round_seconds


def _longest_stall(stretches: list[_Stretch]) -> tuple[float, float]:
    """``(length, start)`` of the longest contiguous stretch held at a rate of 0."""
    best = (0.0, math.nan)
    since: float | None = None  # start of the stall in progress
    prev_end: float | None = None
    for s in stretches:
        if prev_end is None or abs(s.start - prev_end) > _slack(s.start) or s.rate > 0:
            since = None  # a gap (nothing held in between) or progress ends a stall
        if s.rate <= 0:
            since = s.start if since is None else since
            best = max(best, (s.end - since, since))
        prev_end = s.end
    return best


def _no_progress(check: Check) -> None:
    """``no_progress``."""
    allowed = stall_allowance(check.result.round_seconds)
    for j in check.world.jobs:
        ss = check.segments.get(j.job_id, [])
        if not ss:
            continue
        length, since = _longest_stall(list(_stretches(check.world, j, ss, check.jobs)))
        if length > allowed + _slack(allowed) and length > 0:
            check.bad(
                "no_progress",
                f"job {j.job_id} holds GPUs at a rate of 0 for {length:g} s from {since:g} "
                f"(at most {allowed:g} s: MAX_STALLED_ROUNDS = {MAX_STALLED_ROUNDS} rounds)",
                length - allowed,
                job=j.job_id,
                start=since,
            )


# -- share_pair --------------------------------------------------------------------------------


def _share_pair(check: Check) -> None:
    """``share_pair``."""
    keys = set(check.rows)
    for job, gt, server, gpus, start, end, shared in check.rows:
        if not shared:
            continue
        if shared == job or (shared, gt, server, gpus, start, end, job) not in keys:
            check.bad(
                "share_pair",
                f"job {job} shares with {shared} on {gt} server {server} in "
                f"[{start:g}, {end:g}] without the mirror row",
                job=job,
                start=start,
            )
        elif job < shared:
            ja, jb = check.jobs[job], check.jobs[shared]
            n = check.seg_total[(job, start, end)]
            w = check.world
            if (
                w.rate(ja, gt, True, jb, num_gpus=n) <= 0
                or w.rate(jb, gt, True, ja, num_gpus=n) <= 0
            ):
                check.bad(
                    "share_pair",
                    f"jobs {job} and {shared} cannot share {gt} (no measured pair rate)",
                    job=job,
                    start=start,
                )


# -- capacity ----------------------------------------------------------------------------------


def _held_events(check: Check) -> tuple[dict[tuple[str, int], list], dict[str, list]]:
    per_server: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    per_type: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job, gt, server, gpus, start, end, shared in check.rows:
        if shared and shared < job:
            continue  # a shared pair holds its GPUs once
        for ev in ((start, gpus), (end, -gpus)):
            per_server[(gt, server)].append(ev)
            per_type[gt].append(ev)
    return per_server, per_type


def _peak(events: list[tuple[float, int]]) -> tuple[int, float]:
    # ends sort before starts at the same instant; nearly equal times count as equal
    events.sort(key=lambda e: (e[0], e[1]))
    level = peak = 0
    at = 0.0
    k = 0
    while k < len(events):
        t0 = events[k][0]
        group: list[int] = []
        while k < len(events) and events[k][0] <= t0 + _slack(t0):
            group.append(events[k][1])
            k += 1
        level += sum(group)
        if level > peak:
            peak, at = level, t0
    return peak, at


def _server_capacity(check: Check) -> None:
    """``server_capacity``."""
    if check.world.colocation is not None:
        _cpu_capacity(check)
    types = {t.name: t for t in check.world.cluster.gpu_types}
    per_server, _ = _held_events(check)
    for (gt, server), evs in per_server.items():
        peak, at = _peak(evs)
        cap = types[gt].server_capacity(server)
        if peak > cap:
            check.bad(
                "server_capacity",
                f"{gt} server {server} holds {peak} GPUs at {at:g} (has {cap})",
                peak - cap,
                gpu_type=gt,
                server=server,
                time=at,
            )


# -- colocation mode ---------------------------------------------------------------------------

#: ``(start, end, servers of every task, parameter servers)`` of one gang segment.
_Held = tuple[float, float, frozenset[int], tuple[int, ...]]


@dataclass
class _Coloc:
    """The record read in the colocation mode: every segment's servers and PSs, by server."""

    held: dict[str, list[_Held]]  # per job
    by_server: dict[int, list[tuple[float, float, str]]]  # (start, end, job) of every task
    bad_ps: list[tuple[str, float, str]]  # (job, start, why) of malformed PS entries


def _parse_ps(text: object) -> tuple[int, ...] | None:
    if text is None or text == "":
        return ()
    try:
        return tuple(int(x) for x in str(text).split(","))
    except ValueError:
        return None


def _ps_column(check: Check) -> dict[tuple[str, float, float], object]:
    """The record's ``ps_servers`` entry per segment ``(job, start, end)`` (none: no column)."""
    cols = check.result.intervals
    ps_col = cols.get("ps_servers")
    ps_of: dict[tuple[str, float, float], object] = {}
    if ps_col is not None and len(ps_col) == len(cols["job_id"]):
        for r in range(len(ps_col)):
            key = (cols["job_id"][r], float(cols["start"][r]), float(cols["end"][r]))
            ps_of.setdefault(key, ps_col[r])
    return ps_of


def _coloc_read(check: Check) -> _Coloc:
    """The segments' task servers (workers and PSs) in the colocation mode (parsed once)."""
    if check.coloc is not None:
        cached: _Coloc = check.coloc
        return cached
    coloc = check.world.colocation
    assert coloc is not None
    n_servers = check.world.cluster.gpu_types[0].num_servers
    ps_of = _ps_column(check)
    held: dict[str, list[_Held]] = {}
    by_server: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    bad: list[tuple[str, float, str]] = []
    for job, segments in check.segments.items():
        out: list[_Held] = []
        want = coloc.ps.get(job, 0)
        for start, end, _gt, placement, _shared in segments:
            ps = _parse_ps(ps_of.get((job, start, end), ""))
            if ps is None or len(ps) != want or any(not 0 <= h < n_servers for h in ps):
                bad.append(
                    (job, start, f"lists PSs {ps_of.get((job, start, end))!r}, needs {want}")
                )
                ps = () if ps is None else tuple(h for h in ps if 0 <= h < n_servers)
            servers = frozenset(s for s, _ in placement) | frozenset(ps)
            out.append((start, end, servers, ps))
            for h in servers:
                by_server[h].append((start, end, job))
        held[job] = out
    found = _Coloc(held, by_server, bad)
    check.coloc = found
    return found


def _overlapping(
    read: _Coloc, job_id: str, servers: frozenset[int], begin: float, end: float
) -> list[tuple[int, float, float, str]]:
    """The other jobs' segments ``(server, start, end, job)`` on ``servers`` within the span."""
    return [
        (h, a, b, k)
        for h in sorted(servers)
        for a, b, k in read.by_server.get(h, [])
        if k != job_id and a < end and b > begin
    ]


def _pieces(
    others: list[tuple[int, float, float, str]], begin: float, end: float
) -> list[tuple[float, float]]:
    """``[begin, end]`` cut at every start and end of the ``others`` inside it."""
    cuts = {begin, end}
    for _h, a, b, _k in others:
        cuts.update(x for x in (a, b) if begin < x < end)
    return list(itertools.pairwise(sorted(cuts)))


def _coloc_work_reached(check: Check, job: SimJob) -> float | None:
    r"""Time ``job``'s work is reached, re-derived with the colocation physics.

    Each segment (from its progress start, restore rule included) is cut at every start and
    end of another job's segment on a server it shares; in each piece the rate is the
    consolidated rate times :math:`f_j` of the jobs present at the piece's midpoint
    (:meth:`Colocation.speed_factor <optsched.sim.world.colocation.Colocation.speed_factor>`).
    A shortfall is extrapolated at the last piece's rate (as :func:`_work_reached`).
    """
    coloc = check.world.colocation
    assert coloc is not None
    read = _coloc_read(check)
    segments = check.segments.get(job.job_id, [])
    types = coloc.job_types
    own = types[job.job_id]
    acc = 0.0
    last: tuple[float, float] | None = None
    stretches = _stretches(check.world, job, segments, check.jobs)
    for st, (_start, end, servers, _ps), seg in zip(
        stretches, read.held.get(job.job_id, []), segments, strict=True
    ):
        if st.end <= st.begin:
            continue
        n = sum(g for _, g in seg[3])
        base = check.world.rate(job, seg[2], True, num_gpus=n)
        if base <= 0:
            continue
        others = _overlapping(read, job.job_id, servers, st.begin, end)
        for p, q in _pieces(others, st.begin, end):
            mid = 0.5 * (p + q)
            # only the segments overlapping this one can be present in the piece
            neighbours = [
                [types[k] for g, a, b, k in others if g == h and a <= mid < b]
                for h in sorted(servers)
            ]
            rate = base * coloc.speed_factor(own, neighbours)
            gain = rate * (q - p)
            if acc + gain >= job.work * (1 - WORK_TOL):
                return p + max(0.0, job.work - acc) / rate
            acc += gain
            last = (q, rate)
    if last is None:
        return None
    return last[0] + (job.work - acc) / last[1]


def _cpu_capacity(check: Check) -> None:
    """The colocation part of ``server_capacity``: CPUs per server and the PSs listed."""
    coloc = check.world.colocation
    assert coloc is not None
    read = _coloc_read(check)
    for job, start, why in read.bad_ps:
        check.bad("server_capacity", f"job {job} in the segment from {start:g} {why}", job=job)
    events: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for job, held in read.held.items():
        for (start, end, _servers, ps), seg in zip(held, check.segments[job], strict=True):
            for h, cpus in coloc.cpu_use(seg[3], ps).items():
                events[h].append((start, cpus))
                events[h].append((end, -cpus))
    cap = coloc.cpus_per_server
    for h, evs in sorted(events.items()):
        peak, at = _peak(evs)  # type: ignore[arg-type]
        if peak > cap + CAPACITY_TOL:
            check.bad(
                "server_capacity",
                f"server {h} holds {peak:g} CPUs at {at:g} (has {cap:g})",
                peak - cap,
                server=h,
                time=at,
            )


# -- work_conserving ---------------------------------------------------------------------------


def _decision_points(check: Check) -> list[float]:
    """Arrivals and completions (event-driven), or every round start ``k L`` up to the end."""
    world, result = check.world, check.result
    if not world.jobs:
        return []
    if result.round_seconds is None:
        done = {c for c in result.completion if not math.isnan(c)}
        return sorted({j.arrival for j in world.jobs} | done)
    L = result.round_seconds
    first = math.ceil(min(j.arrival for j in world.jobs) / L - TIME_TOL)
    last = math.floor(result.end_time / L + TIME_TOL)
    return [k * L for k in range(first, last + 1)]


class _Waiting:
    """Jobs waiting (arrived, unfinished, holding no GPU), counted by type and gang size."""

    def __init__(self, check: Check) -> None:
        self.world = check.world
        self.held = [0] * len(check.world.jobs)
        self.state = [False] * len(check.world.jobs)  # arrived and not completed
        self.gangs: dict[str, dict[int, int]] = {t.name: {} for t in self.world.cluster.gpu_types}
        self.free = {t.name: t.count for t in self.world.cluster.gpu_types}
        self.types = [self.world.runnable_types(j) for j in self.world.jobs]

    def _count(self, k: int, delta: int) -> None:
        n = self.world.jobs[k].num_gpus
        for g in self.types[k]:
            self.gangs[g][n] = self.gangs[g].get(n, 0) + delta

    def change(self, k: int, *, active: bool | None = None, held: int = 0) -> None:
        before = self.state[k] and self.held[k] == 0
        if active is not None:
            self.state[k] = active
        self.held[k] += held
        after = self.state[k] and self.held[k] == 0
        if before != after:
            self._count(k, 1 if after else -1)

    def idle(self) -> tuple[str, int] | None:
        """A type with a waiting job's gang free: ``(type, gang)``, or ``None``."""
        for g, sizes in self.gangs.items():
            fits = [n for n, c in sizes.items() if c > 0 and n <= self.free[g]]
            if fits:
                return g, min(fits)
        return None


def _state_events(check: Check) -> list[tuple[float, int, int, int, str, int]]:
    """``(time, order, job index, held delta, gpu type, free delta)``; arrivals/ends first."""
    index = {j.job_id: k for k, j in enumerate(check.world.jobs)}
    events: list[tuple[float, int, int, int, str, int]] = []
    for k, j in enumerate(check.world.jobs):
        events.append((j.arrival, 0, k, 0, "", 0))
        c = check.completion[k]
        if not math.isnan(c):
            events.append((c, 3, k, 0, "", 0))
    for job, gt, _server, gpus, start, end, shared in check.rows:
        once = 0 if (shared and shared < job) else gpus
        events.append((start, 2, index[job], 1, gt, -once))
        events.append((end, 1, index[job], -1, gt, once))
    events.sort()
    return events


def _instant(t: float) -> float:
    """The window ``w(t)`` within which an event is *at* decision point ``t`` (module notes).

    Not :func:`_slack`: ``TIME_TOL`` relative grows to seconds over a long trace, and an event
    that far after a decision (a job finishing a few milliseconds into a round) is after it.
    """
    return min(TIME_TOL, FIT_TOL * max(1.0, abs(t)))


def _work_conserving(check: Check) -> None:
    """``work_conserving`` (only for a run whose policy claims it)."""
    if not check.result.extra.get("work_conserving", False):
        return
    waiting = _Waiting(check)
    events = _state_events(check)
    e = 0
    for t in _decision_points(check):
        # the state the decision at t left: events at t, not those just after it
        while e < len(events) and events[e][0] <= t + _instant(t):
            _time, order, k, held, gt, free = events[e]
            if gt:
                waiting.free[gt] += free
            waiting.change(k, active={0: True, 3: False}.get(order), held=held)
            e += 1
        found = waiting.idle()
        if found is not None:
            g, n = found
            check.bad(
                "work_conserving",
                f"at {t:g} a job of {n} GPUs waits while {waiting.free[g]} GPUs of {g} are idle",
                gpu_type=g,
                time=t,
            )
            return  # one witness is enough: later points would mostly repeat it


#: Each constraint's body after the parse (``interval_shape`` and ``gang_whole`` are the parse's).
BODIES: dict[str, Callable[[Check], None]] = {
    "first_start": _first_start,
    "job_overlap": _job_overlap,
    "before_arrival": _before_arrival,
    "after_completion": _after_completion,
    "work_done": _work_done,
    "no_progress": _no_progress,
    "share_pair": _share_pair,
    "server_capacity": _server_capacity,
    "work_conserving": _work_conserving,
}
