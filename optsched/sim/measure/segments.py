r"""The validator's checks over the whole record at once, in NumPy.

:func:`parse` reads the interval table into arrays (one entry per row, then one per gang
segment) and the functions of :data:`CHECKS` test each constraint of
:mod:`optsched.sim.measure.validate` (whose module notes state the rules) over every row,
segment or job in a few array operations. They decide exactly what the plain-Python reference
(:mod:`optsched.sim.measure.reference`) decides: the same comparisons on the same floats, in the
same order where a sum's order matters (each job's work is accumulated by ``numpy.cumsum`` over
its own segments, which adds left to right as the reference's loop does). Where a check finds a
violation, the message is written for the flagged rows, segments or jobs only, by the
reference's own per-item functions where it has one
(:func:`~optsched.sim.measure.reference.row_problem`,
:func:`~optsched.sim.measure.reference.gang_problem`,
:func:`~optsched.sim.measure.reference.judge_reached`), so both give the same report
(``tests/test_sim_validate_fast.py`` checks it on random and corrupted records).

What stays with the reference: the colocation mode and a record whose columns are not of the
recorded types (:func:`parse` returns ``None``; the validator then runs the reference
throughout), ``work_conserving`` (it walks the decision points in order; run on the rows this
module parsed), and the work of a job with batch-size phases (its phase walk, per job).

Complexity: :math:`O(R \log R)` array work for :math:`R` rows, plus :math:`O(J)` Python steps
for :math:`J` jobs (one ``cumsum`` per job) and :math:`O(U)` rate look-ups for the :math:`U`
distinct ``(job, type, consolidated, partner, gang)`` keys of the segments.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.limits import MAX_STALLED_ROUNDS
from optsched.results import Violation
from optsched.sim.measure import reference as ref
from optsched.sim.measure.record import SimResult
from optsched.sim.world.jobs import World
from optsched.tolerances import FIT_TOL, TIME_TOL, WORK_TOL, within

__all__ = ["CHECKS", "Table", "parse"]

_COLUMNS = ("gpu_type", "server", "gpus", "start", "end", "shared_with")
_NO_JOB = -2  # a ``shared_with`` naming no job of the world


def _slack(t: np.ndarray) -> np.ndarray:
    """:func:`optsched.sim.measure.reference._slack` elementwise (the same floats)."""
    return np.maximum(TIME_TOL, FIT_TOL * np.abs(t))


@dataclass
class _Rows:
    """The rows that passed ``interval_shape``, in record order, as arrays."""

    row: np.ndarray  # record row index
    job: np.ndarray  # job index in the world
    gt: np.ndarray  # GPU type index
    server: np.ndarray
    gpus: np.ndarray
    start: np.ndarray
    end: np.ndarray
    shared: np.ndarray  # partner's job index, -1 when none


@dataclass
class _Segments:
    """The gang segments that passed ``gang_whole``, by job (world order) then start."""

    job: np.ndarray
    start: np.ndarray
    end: np.ndarray
    gt: np.ndarray
    gpus: np.ndarray  # the gang's GPUs (sum over its rows)
    servers: np.ndarray  # its number of rows (servers)
    shared: np.ndarray
    first_row: np.ndarray  # the record row the segment first appears at
    lo: np.ndarray  # its rows in ``Table.placement`` are ``lo : lo + servers``
    job_lo: np.ndarray  # job k's segments are ``job_lo[k] : job_hi[k]``
    job_hi: np.ndarray
    same_job: np.ndarray  # the previous segment is the same job's
    contiguous: np.ndarray  # ... and ends where this one starts (time slack)
    same_place: np.ndarray  # ... on the same type and servers
    rate: np.ndarray = field(default_factory=lambda: np.zeros(0))
    begin: np.ndarray = field(default_factory=lambda: np.zeros(0))  # progress starts (restore)


@dataclass
class Table:
    """The record as arrays, with ``interval_shape`` and ``gang_whole``'s findings."""

    world: World
    result: SimResult
    check: ref.Check  # the world and record, for the reference's per-item functions
    names: list[str]  # job ids, world order
    types: list[str]  # GPU type names
    rows: _Rows
    seg: _Segments
    placement: np.ndarray  # (server, gpus) of the good gangs' rows, by segment then server
    group_total: dict[int, int]  # record row -> GPUs of its (job, start, end) group (shared rows)
    shape: list[Violation]
    gangs: list[Violation]


# -- parsing -----------------------------------------------------------------------------------


def _ints(col: Sequence[Any]) -> np.ndarray | None:
    """The column as int64 when every entry is a plain ``int`` (``None``: to the reference)."""
    if not set(map(type, col)) <= {int}:
        return None
    try:
        return np.array(col, dtype=np.int64).reshape(len(col))
    except OverflowError:
        return None


def _floats(col: Sequence[Any]) -> np.ndarray | None:
    try:
        return np.array(col, dtype=float).reshape(len(col))
    except (TypeError, ValueError):
        return None


def _shared_index(col: Sequence[Any], index: dict[str, int]) -> np.ndarray | None:
    """Partner job index per row: -1 none, :data:`_NO_JOB` an unknown id (``None``: odd types)."""
    if not set(map(type, col)) <= {str, type(None)}:
        return None
    if not any(col):
        return np.full(len(col), -1, dtype=np.int64)
    return np.array([index.get(x, _NO_JOB) if x else -1 for x in col], dtype=np.int64)


def _read(world: World, cols: dict[str, list[Any]]) -> tuple[np.ndarray, ...] | None:
    """Every column as an array (``None`` when a column is not of the recorded types)."""
    index = {j.job_id: k for k, j in enumerate(world.jobs)}
    tindex = {t.name: k for k, t in enumerate(world.cluster.gpu_types)}
    n = len(cols["job_id"])
    try:
        job = np.fromiter(map(index.get, cols["job_id"], itertools.repeat(-1)), np.int64, n)
        gt = np.fromiter(map(tindex.get, cols["gpu_type"], itertools.repeat(-1)), np.int64, n)
    except TypeError:
        return None  # an unhashable entry: the reference names it
    server, gpus = _ints(cols["server"]), _ints(cols["gpus"])
    start, end = _floats(cols["start"]), _floats(cols["end"])
    shared = _shared_index(cols["shared_with"], index)
    if server is None or gpus is None or start is None or end is None or shared is None:
        return None
    return job, gt, server, gpus, start, end, shared


def _shape(check: ref.Check, arrays: tuple[np.ndarray, ...]) -> tuple[_Rows, list[Violation]]:
    """The well-formed rows, and ``interval_shape``'s violations for the others."""
    job, gt, server, gpus, start, end, shared = arrays
    n_servers = np.array([t.num_servers for t in check.world.cluster.gpu_types] + [0])
    ok = (job >= 0) & (gt >= 0) & (server >= 0) & (server < n_servers[gt]) & (gpus >= 1)
    ok &= np.isfinite(start) & np.isfinite(end) & (start >= 0) & (start < end)
    ok &= shared != _NO_JOB
    out: list[Violation] = []
    ids = check.result.intervals["job_id"]
    for r in np.flatnonzero(~ok)[: ref.MAX_REPORTED].tolist():
        problem = ref.row_problem(check, r)
        out.append(
            Violation("interval_shape", f"row {r}: {problem}", {"row": r, "job": str(ids[r])})
        )
    good = np.flatnonzero(ok)
    rows = _Rows(good, *(a[good] for a in arrays))
    return rows, out


def _groups(rows: _Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by (job, start, end, server); the first sorted position of each group; counts."""
    order = np.lexsort((rows.server, rows.end, rows.start, rows.job))
    j, s, e = rows.job[order], rows.start[order], rows.end[order]
    head = np.ones(len(order), dtype=bool)
    head[1:] = (j[1:] != j[:-1]) | (s[1:] != s[:-1]) | (e[1:] != e[:-1])
    lo = np.flatnonzero(head)
    counts = np.diff(np.append(lo, len(order)))
    return order, lo, counts


def _whole(world: World, rows: _Rows, order: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Whether each group is one whole gang (``gang_whole``'s rule)."""
    if not len(lo):
        return np.zeros(0, dtype=bool)
    gt, sh, sv = rows.gt[order], rows.shared[order], rows.server[order]
    one_type = np.minimum.reduceat(gt, lo) == np.maximum.reduceat(gt, lo)
    one_partner = np.minimum.reduceat(sh, lo) == np.maximum.reduceat(sh, lo)
    repeat = np.zeros(len(order), dtype=bool)  # a server seen twice in one group
    starts = np.zeros(len(order), dtype=bool)
    starts[lo] = True
    repeat[1:] = (sv[1:] == sv[:-1]) & ~starts[1:]
    distinct = ~np.logical_or.reduceat(repeat, lo)
    total = np.add.reduceat(rows.gpus[order], lo)
    job = rows.job[order][lo]
    low = np.array([j.min_gpus for j in world.jobs] or [0])[job]
    high = np.array([j.max_gpus for j in world.jobs] or [0])[job]
    return one_type & one_partner & distinct & (low <= total) & (total <= high)


def _gang_violations(
    table_check: ref.Check, names: list[str], types: list[str], rows: _Rows, grouped: Any
) -> list[Violation]:
    """``gang_whole``'s violations, for the groups that are not whole gangs, in record order."""
    order, lo, counts, whole = grouped
    bad = np.flatnonzero(~whole)
    first = np.minimum.reduceat(rows.row[order], lo) if len(lo) else lo
    out: list[Violation] = []
    for g in sorted(bad.tolist(), key=lambda g: first[g])[: ref.MAX_REPORTED]:
        members = np.sort(order[lo[g] : lo[g] + counts[g]])  # record order
        parts = [
            (
                types[rows.gt[m]],
                int(rows.server[m]),
                int(rows.gpus[m]),
                _text(names, rows.shared[m]),
            )
            for m in members
        ]
        job = names[rows.job[members[0]]]
        start, end = float(rows.start[members[0]]), float(rows.end[members[0]])
        problem = ref.gang_problem(table_check.jobs[job], parts)
        message = f"job {job} in [{start:g}, {end:g}] {problem}"
        out.append(Violation("gang_whole", message, {"job": job, "start": start}))
    return out


def _text(names: list[str], k: int) -> str:
    return names[k] if k >= 0 else ""


def _same_place(seg: _Segments, placement: np.ndarray) -> np.ndarray:
    """Whether each segment has the previous one's type and (server, gpus) rows."""
    cand = np.zeros(len(seg.job), dtype=bool)
    cand[1:] = (
        seg.same_job[1:] & (seg.gt[1:] == seg.gt[:-1]) & (seg.servers[1:] == seg.servers[:-1])
    )
    c = np.flatnonzero(cand)
    if not len(c):
        return cand
    counts = seg.servers[c]
    starts = np.cumsum(counts) - counts
    within_ = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    a = np.repeat(seg.lo[c], counts) + within_
    b = np.repeat(seg.lo[c - 1], counts) + within_
    equal = np.all(placement[a] == placement[b], axis=1)
    cand[c] = np.logical_and.reduceat(equal, starts)
    return cand


def _segments(world: World, rows: _Rows, grouped: Any) -> tuple[_Segments, np.ndarray]:
    """The whole gangs as segments, and their rows' (server, gpus) by segment then server."""
    order, lo, counts, whole = grouped
    keep = np.flatnonzero(whole)
    member = np.repeat(whole, counts)
    placed = order[member]
    placement = np.stack([rows.server[placed], rows.gpus[placed]], axis=1)
    servers = counts[keep]
    head = order[lo[keep]]
    job = rows.job[head]
    starts = rows.start[head]
    ends = rows.end[head]
    jobs = np.arange(len(world.jobs))
    same_job = np.zeros(len(keep), dtype=bool)
    same_job[1:] = job[1:] == job[:-1]
    contiguous = np.zeros(len(keep), dtype=bool)
    contiguous[1:] = same_job[1:] & (np.abs(starts[1:] - ends[:-1]) <= _slack(starts[1:]))
    first = np.minimum.reduceat(rows.row[order], lo)[keep] if len(lo) else lo
    seg = _Segments(
        job=job,
        start=starts,
        end=ends,
        gt=rows.gt[head],
        gpus=np.add.reduceat(rows.gpus[order], lo)[keep] if len(lo) else lo,
        servers=servers,
        shared=rows.shared[head],
        first_row=first,
        lo=np.cumsum(servers) - servers,
        job_lo=np.searchsorted(job, jobs, side="left"),
        job_hi=np.searchsorted(job, jobs, side="right"),
        same_job=same_job,
        contiguous=contiguous,
        same_place=same_job,
    )
    seg.same_place = _same_place(seg, placement)
    return seg, placement


def _rates(world: World, seg: _Segments) -> np.ndarray:
    """Each segment's rate, one :meth:`World.rate` call per distinct key."""
    if not len(seg.job):
        return np.zeros(0)
    gps = np.array([t.gpus_per_server for t in world.cluster.gpu_types])
    consolidated = seg.servers <= -(-seg.gpus // gps[seg.gt])
    columns = (seg.job, seg.gt, consolidated.astype(np.int64), seg.shared + 1, seg.gpus)
    sizes = [int(c.max()) + 1 for c in columns]
    if math.prod(sizes) < 2**62:  # one int64 key per segment: a 1-d unique (fast)
        key = np.ravel_multi_index(columns, sizes)
        codes, inverse = np.unique(key, return_inverse=True)
        unique = np.stack(np.unravel_index(codes, sizes), axis=1)
    else:
        unique, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    unique[:, 3] -= 1  # the partner's index again (-1: none)
    jobs = world.jobs
    names = [t.name for t in world.cluster.gpu_types]
    values = [
        world.rate(jobs[j], names[g], bool(c), jobs[p] if p >= 0 else None, num_gpus=n)
        for j, g, c, p, n in unique.tolist()
    ]
    return np.array(values, dtype=float)[inverse.reshape(-1)]


def _begin(world: World, seg: _Segments) -> np.ndarray:
    """Where each segment's progress starts: after ``restore_s`` at the head of a run."""
    head = ~(seg.contiguous & seg.same_place)
    charged = seg.same_job | world.restore_on_first_start
    run_start = seg.start + np.where(charged, world.restore_s, 0.0)
    at = np.maximum.accumulate(np.where(head, np.arange(len(head)), 0)) if len(head) else head
    return np.maximum(seg.start, run_start[at])


def parse(world: World, result: SimResult) -> Table | None:
    """The record as a :class:`Table`, or ``None`` for the reference to read it.

    ``None`` for the colocation mode, a record whose table is broken (columns of unequal
    lengths, completions not one per job) and columns not of the recorded types.
    """
    cols = result.intervals
    n_rows = len(cols.get("job_id", []))
    n = len(world.jobs)
    if world.colocation is not None or any(len(cols.get(c, [])) != n_rows for c in _COLUMNS):
        return None
    if len(result.completion) != n or len(result.first_start) != n:
        return None
    arrays = _read(world, cols)
    if arrays is None:
        return None
    check = ref.Check(world=world, result=result, jobs={j.job_id: j for j in world.jobs})
    names = [j.job_id for j in world.jobs]
    types = [t.name for t in world.cluster.gpu_types]
    rows, shape = _shape(check, arrays)
    order, lo, counts = _groups(rows)
    grouped = (order, lo, counts, _whole(world, rows, order, lo))
    gangs = _gang_violations(check, names, types, rows, grouped)
    seg, placement = _segments(world, rows, grouped)
    seg.rate = _rates(world, seg)
    seg.begin = _begin(world, seg)
    totals = np.repeat(np.add.reduceat(rows.gpus[order], lo) if len(lo) else lo, counts)
    shared_sorted = np.flatnonzero(rows.shared[order] >= 0)
    group_total = dict(
        zip(rows.row[order][shared_sorted].tolist(), totals[shared_sorted].tolist(), strict=True)
    )
    return Table(
        world, result, check, names, types, rows, seg, placement, group_total, shape, gangs
    )


# -- the checks --------------------------------------------------------------------------------


def _collect(table: Table, body: Callable[[ref.Check], None]) -> list[Violation]:
    """Run ``body`` with the reference's ``bad`` (and its cap) collecting the violations."""
    return ref.run_body(table.check, body)


def _per_job_ends(table: Table) -> tuple[list[bool], list[float], list[float]]:
    """Per job (world order): whether it ran, its first segment's start, its last one's end."""
    seg = table.seg
    ran = seg.job_hi > seg.job_lo
    if not len(seg.start):
        nan = [math.nan] * len(ran)
        return ran.tolist(), nan, list(nan)
    first = np.where(ran, seg.start[np.minimum(seg.job_lo, len(seg.start) - 1)], np.nan)
    last = np.where(ran, seg.end[np.maximum(seg.job_hi - 1, 0)], np.nan)
    return ran.tolist(), first.tolist(), last.tolist()


def first_start(table: Table) -> list[Violation]:
    """``first_start``: per job, its recorded first start against its first segment."""
    ran, first, _ = _per_job_ends(table)

    def body(check: ref.Check) -> None:
        for k, j in enumerate(check.world.jobs):
            recorded = check.result.first_start[k]
            if ran[k] and not within(recorded, first[k], TIME_TOL):
                message = f"job {j.job_id}: first_start {recorded} but runs from {first[k]}"
                check.bad("first_start", message, job=j.job_id)
            elif not ran[k] and not math.isnan(recorded):
                message = f"job {j.job_id}: first_start {recorded} but it never ran"
                check.bad("first_start", message, job=j.job_id)

    return _collect(table, body)


def before_arrival(table: Table) -> list[Violation]:
    """``before_arrival``: per job, its first segment's start against its arrival."""
    ran, first, _ = _per_job_ends(table)

    def body(check: ref.Check) -> None:
        for k, j in enumerate(check.world.jobs):
            if ran[k] and first[k] < j.arrival - max(TIME_TOL, FIT_TOL * abs(j.arrival)):
                message = f"job {j.job_id} runs at {first[k]:g} before its arrival {j.arrival:g}"
                check.bad("before_arrival", message, j.arrival - first[k], job=j.job_id)

    return _collect(table, body)


def after_completion(table: Table) -> list[Violation]:
    """``after_completion``: per job, its last segment's end against its completion."""
    ran, _, last = _per_job_ends(table)

    def body(check: ref.Check) -> None:
        for k, (j, comp) in enumerate(zip(check.world.jobs, check.completion, strict=True)):
            if (
                ran[k]
                and not math.isnan(comp)
                and last[k] > comp + max(TIME_TOL, FIT_TOL * abs(comp))
            ):
                message = (
                    f"job {j.job_id} holds GPUs until {last[k]:g} after its completion {comp:g}"
                )
                check.bad("after_completion", message, last[k] - comp, job=j.job_id)

    return _collect(table, body)


def job_overlap(table: Table) -> list[Violation]:
    """``job_overlap``: every segment against the previous one of its job."""
    seg = table.seg
    hit = np.zeros(len(seg.job), dtype=bool)
    hit[1:] = seg.same_job[1:] & (seg.start[1:] < seg.end[:-1] - _slack(seg.end[:-1]))
    # the reference lists jobs in the order their first whole gang appears in the record
    job_first = np.full(len(table.names), np.iinfo(np.int64).max)
    np.minimum.at(job_first, seg.job, seg.first_row)
    flagged = np.flatnonzero(hit)
    flagged = flagged[np.lexsort((flagged, job_first[seg.job[flagged]]))]

    def body(check: ref.Check) -> None:
        for i in flagged.tolist():
            job = table.names[seg.job[i]]
            a0, a1, b0, b1 = (
                float(x) for x in (seg.start[i - 1], seg.end[i - 1], seg.start[i], seg.end[i])
            )
            message = f"job {job}: [{a0:g}, {a1:g}] overlaps [{b0:g}, {b1:g}]"
            check.bad("job_overlap", message, job=job, start=b0)

    return _collect(table, body)


def _segment_tuples(table: Table, k: int) -> list[ref.Segment]:
    """Job ``k``'s segments as the reference's tuples (for its phase walk)."""
    seg = table.seg
    out: list[ref.Segment] = []
    for i in range(int(seg.job_lo[k]), int(seg.job_hi[k])):
        lo, n = int(seg.lo[i]), int(seg.servers[i])
        placement = tuple((int(s), int(g)) for s, g in table.placement[lo : lo + n].tolist())
        gt = table.types[seg.gt[i]]
        shared = _text(table.names, int(seg.shared[i]))
        out.append((float(seg.start[i]), float(seg.end[i]), gt, placement, shared))
    return out


def _reached(table: Table) -> list[float | None]:
    """Per job, when re-integration reaches its work (the reference's ``_work_reached``)."""
    seg, world = table.seg, table.world
    productive = np.flatnonzero((seg.end > seg.begin) & (seg.rate > 0))
    gain = seg.rate[productive] * (seg.end[productive] - seg.begin[productive])
    jobs = np.arange(len(world.jobs))
    lo = np.searchsorted(seg.job[productive], jobs, side="left").tolist()
    hi = np.searchsorted(seg.job[productive], jobs, side="right").tolist()
    out: list[float | None] = []
    for k, j in enumerate(world.jobs):
        if j.batch_schedule is not None:
            out.append(
                ref.phased_work_reached(world, j, _segment_tuples(table, k), table.check.jobs)
            )
            continue
        if lo[k] == hi[k]:
            out.append(None)
            continue
        acc = np.cumsum(gain[lo[k] : hi[k]])  # left to right, as the reference's loop adds
        at = int(np.searchsorted(acc, j.work * (1 - WORK_TOL), side="left"))
        if at < len(acc):
            p = int(productive[lo[k] + at])
            before = float(acc[at - 1]) if at else 0.0
            out.append(float(seg.begin[p]) + max(0.0, j.work - before) / float(seg.rate[p]))
        else:
            p = int(productive[hi[k] - 1])
            out.append(float(seg.end[p]) + (j.work - float(acc[-1])) / float(seg.rate[p]))
    return out


def work_done(table: Table) -> list[Violation]:
    """``work_done``: each job's re-integrated work against its completion."""
    reached = _reached(table)

    def body(check: ref.Check) -> None:
        for k, (j, comp) in enumerate(zip(check.world.jobs, check.completion, strict=True)):
            ref.judge_reached(check, j, comp, reached[k])

    return _collect(table, body)


def no_progress(table: Table) -> list[Violation]:
    """``no_progress``: the longest contiguous stretch each job holds at a rate of 0."""
    seg = table.seg
    zero = seg.rate <= 0
    link = np.zeros(len(zero), dtype=bool)  # continues the stall of the previous segment
    link[1:] = zero[1:] & seg.contiguous[1:] & zero[:-1]
    head = (
        np.maximum.accumulate(np.where(zero & ~link, np.arange(len(zero)), 0))
        if len(zero)
        else zero
    )
    since = seg.start[head] if len(zero) else seg.start
    length = seg.end - since
    allowed = ref.stall_allowance(table.result.round_seconds)
    limit = allowed + max(TIME_TOL, FIT_TOL * abs(allowed))
    flagged = np.flatnonzero(zero & (length > limit) & (length > 0))
    worst: dict[int, tuple[float, float]] = {}
    for i in flagged.tolist():
        k = int(seg.job[i])
        worst[k] = max(worst.get(k, (0.0, math.nan)), (float(length[i]), float(since[i])))

    def body(check: ref.Check) -> None:
        for k in sorted(worst):
            (span, start), job = worst[k], table.names[k]
            check.bad(
                "no_progress",
                f"job {job} holds GPUs at a rate of 0 for {span:g} s from {start:g} "
                f"(at most {allowed:g} s: MAX_STALLED_ROUNDS = {MAX_STALLED_ROUNDS} rounds)",
                span - allowed,
                job=job,
                start=start,
            )

    return _collect(table, body)


def _row_tuples(table: Table, which: np.ndarray) -> list[ref.Row]:
    """The reference's row tuples for the good rows at positions ``which``."""
    cols, rows = table.result.intervals, table.rows
    out: list[ref.Row] = []
    for i in which.tolist():
        r = int(rows.row[i])
        shared = cols["shared_with"][r]
        out.append(
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
    return out


def share_pair(table: Table) -> list[Violation]:
    """``share_pair``: the reference's check on the shared rows alone (mirror rows are shared)."""
    which = np.flatnonzero(table.rows.shared >= 0)
    if not len(which):
        return []
    check = ref.Check(table.world, table.result, table.check.jobs)
    check.rows = _row_tuples(table, which)
    totals = [table.group_total[int(table.rows.row[i])] for i in which.tolist()]
    check.seg_total = {(r[0], r[4], r[5]): t for r, t in zip(check.rows, totals, strict=True)}
    return ref.run_body(check, ref.BODIES["share_pair"])


def work_conserving(table: Table) -> list[Violation]:
    """``work_conserving``: the reference's walk over the decision points, on the parsed rows."""
    if not table.result.extra.get("work_conserving", False):
        return []
    check = ref.Check(table.world, table.result, table.check.jobs)
    check.rows = _row_tuples(table, np.arange(len(table.rows.row)))
    return ref.run_body(check, ref.BODIES["work_conserving"])


def _group_heads(key: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Heads of the reference's greedy groups of nearly equal times (``_peak``), per key.

    A group starts at ``t0`` and takes every later event up to ``t0 + slack(t0)``. An event
    more than its predecessor's slack after it starts a group (the slack grows with ``t``);
    a run of events each within slack of the previous one is one group when its last event is
    within the slack of its first, and is walked greedily otherwise (rare: events spread
    beyond the slack in steps below it).
    """
    n = len(times)
    head = np.ones(n, dtype=bool)
    head[1:] = (key[1:] != key[:-1]) | (times[1:] > times[:-1] + _slack(times[:-1]))
    first = np.flatnonzero(head)
    last = np.append(first[1:], n) - 1
    spread = np.flatnonzero(times[last] > times[first] + _slack(times[first]))
    for c in spread.tolist():
        i, end = int(first[c]), int(last[c]) + 1
        while i < end:  # one step per group: the next head is the first time past the slack
            t0 = float(times[i])
            i = (
                int(np.searchsorted(times[i:end], t0 + max(TIME_TOL, FIT_TOL * abs(t0)), "right"))
                + i
            )
            if i < end:
                head[i] = True
    return head


def server_capacity(table: Table) -> list[Violation]:
    """``server_capacity``: the peak GPUs held on every server, all servers at once."""
    rows, world = table.rows, table.world
    rank = np.argsort(np.argsort(np.array(table.names, dtype=object)))  # string order of ids
    partner = np.where(rows.shared >= 0, rows.shared, 0)
    once = ~((rows.shared >= 0) & (rank[partner] < rank[rows.job]))  # a pair counted once
    gtypes = world.cluster.gpu_types
    offset = np.cumsum([0] + [t.num_servers for t in gtypes])
    where = (offset[rows.gt] + rows.server)[once]
    if not len(where):
        return []
    key = np.concatenate([where, where])
    times = np.concatenate([rows.start[once], rows.end[once]])
    delta = np.concatenate([rows.gpus[once], -rows.gpus[once]])
    # by server, then time: the order of equal times does not matter, as a group of nearly
    # equal times is summed whole before its level is read
    order = np.argsort(times, kind="stable")
    order = order[np.argsort(key[order], kind="stable")]
    key, times, delta = key[order], times[order], delta[order]
    head = _group_heads(key, times)
    level = np.cumsum(delta)
    key_start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else key
    level -= np.repeat(level[key_start] - delta[key_start], np.diff(np.append(key_start, len(key))))
    ends = np.flatnonzero(np.append(head[1:], True))  # the last event of each group
    peak = np.zeros(offset[-1], dtype=np.int64)
    np.maximum.at(peak, key[ends], level[ends])
    caps = np.array(
        [t.server_capacity(s) for t in gtypes for s in range(t.num_servers)], dtype=np.int64
    )
    over = np.flatnonzero(peak > caps)
    if not len(over):
        return []
    # the reference lists servers in the order their first counted row appears in the record
    first_row = np.full(offset[-1], np.iinfo(np.int64).max)
    np.minimum.at(first_row, where, rows.row[once])
    group_time = times[np.maximum.accumulate(np.where(head, np.arange(len(head)), 0))]

    def body(check: ref.Check) -> None:
        for s in sorted(over.tolist(), key=lambda s: first_row[s]):
            g = int(np.searchsorted(offset, s, side="right") - 1)
            server, top = s - int(offset[g]), int(peak[s])
            at = ends[(key[ends] == s) & (level[ends] == top)][0]  # the first group at the peak
            when, cap = float(group_time[at]), int(caps[s])
            check.bad(
                "server_capacity",
                f"{gtypes[g].name} server {server} holds {top} GPUs at {when:g} (has {cap})",
                top - cap,
                gpu_type=gtypes[g].name,
                server=server,
                time=when,
            )

    return _collect(table, body)


#: The NumPy body of each constraint after the parse (``interval_shape`` and ``gang_whole``
#: are the parse's own findings, :attr:`Table.shape` and :attr:`Table.gangs`).
CHECKS: dict[str, Callable[[Table], list[Violation]]] = {
    "first_start": first_start,
    "job_overlap": job_overlap,
    "before_arrival": before_arrival,
    "after_completion": after_completion,
    "work_done": work_done,
    "no_progress": no_progress,
    "share_pair": share_pair,
    "server_capacity": server_capacity,
    "work_conserving": work_conserving,
}
