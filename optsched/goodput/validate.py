r"""Independent validator of a goodput-world cluster run.

:func:`validate` reads only the run's record (:class:`~optsched.goodput.record.GoodputRun`:
its cluster, interval, restart delay and every job's segments) and the job types' traces; it
shares no code with :mod:`~optsched.goodput.cluster` or :func:`~optsched.goodput.job.advance`
and rebuilds every job's progress from the record. Each constraint is one function of this
module, ``name(run) -> list[Violation]``, listed in :data:`CONSTRAINTS`:

``segment_shape``
    Every segment has ``start < end`` on the decision grid (multiples of the interval, up to
    the run's end), a non-empty allocation of node indices of the cluster, each node's GPUs
    together.
``job_overlap``
    A job's segments are in time order and do not overlap.
``before_submission``
    No segment starts before its job's submission.
``after_completion``
    No segment starts after its job's completion :math:`C`, and none ends after
    :math:`(\lfloor C/L \rfloor + 1) L` for interval :math:`L`: the end of the interval in
    which the job completed. A job may complete exactly at a decision time :math:`kL` within
    the interval that starts there (its last epoch's end was less than half a second away, a
    stretch of 0 s): it was still active at that decision and holds its GPUs until
    :math:`(k+1)L`, as in the artifact.
``restart_count``
    A job's restarts are its segments less one (every segment is a (re)allocation).
``node_capacity``
    At every instant the GPUs held on each node are at most ``gpus_per_node``.
``fixed_batch``
    A job held to a fixed global batch :math:`M` runs, on :math:`K` GPUs, the split
    :math:`s = \lceil \lceil M/K \rceil / m_\max \rceil - 1` (at least 1 on one GPU above
    :math:`M_0`), :math:`m = \min(\lceil \lceil M/K \rceil/(s+1) \rceil,
    \lfloor M_\max/(K(s+1)) \rfloor)`.
``progress``
    Re-integrating each job over its segments -- no progress for the first ``restart_delay``
    seconds of each, then, per decision interval, stretches of constant rate
    :func:`~optsched.goodput.progress.progress_rate` at the recorded configurations, a stretch
    ending at the interval's end or after :math:`\operatorname{round}((P_{e+1} - P)/r)` s at an
    epoch boundary -- uses every recorded stretch, reaches the end of epoch
    ``max_epochs - 1`` exactly at the recorded completion (within :data:`TIME_TOL`), never
    for an unfinished job, and ends at the recorded epoch and progress.
``attained_service``
    The recorded GPU-seconds equal the segments' GPUs times their length up to completion.

:math:`O(\text{segments} \cdot \text{intervals})` in all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from optsched.errors import OptschedError
from optsched.goodput.progress import progress_at_epoch, progress_rate
from optsched.goodput.record import AllocationSegment, GoodputRun, JobRecord
from optsched.results import Report, Violation
from optsched.tolerances import TIME_TOL, WORK_TOL

__all__ = ["CONSTRAINTS", "validate"]


def _on_grid(run: GoodputRun, t: float) -> bool:
    k = t / run.interval
    return abs(k - round(k)) <= TIME_TOL and -TIME_TOL <= t <= run.end_time + TIME_TOL


def _runs(alloc: tuple[int, ...]) -> list[tuple[int, int]]:
    """(node, GPUs) blocks in order."""
    blocks: list[tuple[int, int]] = []
    for n in alloc:
        if blocks and blocks[-1][0] == n:
            blocks[-1] = (n, blocks[-1][1] + 1)
        else:
            blocks.append((n, 1))
    return blocks


def segment_shape(run: GoodputRun) -> list[Violation]:
    """Segments on the grid, with allocations of the cluster's nodes (module notes)."""
    out = []
    for j in run.jobs:
        for i, s in enumerate(j.segments):
            where = {"job": j.name, "segment": i}
            if not (s.start < s.end and _on_grid(run, s.start) and _on_grid(run, s.end)):
                out.append(
                    Violation(
                        "segment_shape",
                        f"{j.name}: segment [{s.start}, {s.end}) is not a stretch "
                        f"of whole {run.interval:g}-s intervals of the run",
                        where,
                    )
                )
            blocks = _runs(s.allocation)
            if (
                not s.allocation
                or any(not 0 <= n < run.num_nodes for n in s.allocation)
                or len(blocks) != len({n for n, _ in blocks})
            ):
                out.append(
                    Violation(
                        "segment_shape",
                        f"{j.name}: allocation {s.allocation} is empty, names a node "
                        f"outside 0..{run.num_nodes - 1} or splits a node",
                        where,
                    )
                )
    return out


def job_overlap(run: GoodputRun) -> list[Violation]:
    """A job's segments in order, without overlap."""
    out = []
    for j in run.jobs:
        for i in range(1, len(j.segments)):
            a, b = j.segments[i - 1], j.segments[i]
            if b.start < a.end - TIME_TOL:
                out.append(
                    Violation(
                        "job_overlap",
                        f"{j.name}: segment {i} starts at {b.start}, "
                        f"before segment {i - 1} ends at {a.end}",
                        {"job": j.name, "segment": i},
                        a.end - b.start,
                    )
                )
    return out


def before_submission(run: GoodputRun) -> list[Violation]:
    """No segment before the job's submission."""
    return [
        Violation(
            "before_submission",
            f"{j.name}: a segment starts at {s.start}, before its "
            f"submission at {j.submission_time}",
            {"job": j.name, "segment": i},
            j.submission_time - s.start,
        )
        for j in run.jobs
        for i, s in enumerate(j.segments)
        if s.start < j.submission_time - TIME_TOL
    ]


def after_completion(run: GoodputRun) -> list[Violation]:
    """No segment after completion; the last ends with the completion's interval."""
    out = []
    for j in run.jobs:
        if j.completion_time is None:
            continue
        release = (math.floor(j.completion_time / run.interval + TIME_TOL) + 1) * run.interval
        for i, s in enumerate(j.segments):
            if s.start > j.completion_time + TIME_TOL or s.end > release + TIME_TOL:
                out.append(
                    Violation(
                        "after_completion",
                        f"{j.name}: segment [{s.start}, "
                        f"{s.end}) reaches past its completion at "
                        f"{j.completion_time} (released by {release})",
                        {"job": j.name, "segment": i},
                    )
                )
    return out


def restart_count(run: GoodputRun) -> list[Violation]:
    """Restarts = segments - 1."""
    return [
        Violation(
            "restart_count",
            f"{j.name}: {j.num_restarts} restarts recorded, "
            f"{max(len(j.segments) - 1, 0)} reallocations in its segments",
            {"job": j.name},
        )
        for j in run.jobs
        if j.num_restarts != max(len(j.segments) - 1, 0)
    ]


def node_capacity(run: GoodputRun) -> list[Violation]:
    """At every instant, at most ``gpus_per_node`` GPUs held on each node (a sweep)."""
    events: list[tuple[float, int, int, str]] = []
    for j in run.jobs:
        for s in j.segments:
            for node, count in _runs(s.allocation):
                events.append((s.start, count, node, j.name))
                events.append((s.end, -count, node, j.name))
    events.sort(key=lambda e: (e[0], e[1]))  # releases before takes at the same instant
    held: dict[int, int] = {}
    out = []
    for t, delta, node, name in events:
        held[node] = held.get(node, 0) + delta
        if delta > 0 and held[node] > run.gpus_per_node:
            out.append(
                Violation(
                    "node_capacity",
                    f"node {node} holds {held[node]} GPUs at "
                    f"{t} (with {name}), more than its {run.gpus_per_node}",
                    {"node": node, "time": t, "job": name},
                    held[node] - run.gpus_per_node,
                )
            )
    return out


def _fixed_split(run: GoodputRun, j: JobRecord, k: int) -> tuple[int, int]:
    assert j.fixed_batch is not None
    lim = run.traces[j.application].limits()
    local = math.ceil(j.fixed_batch / k - 1e-8)
    steps = math.ceil(local / lim.max_local_bsz - 1e-8) - 1
    if k == 1 and j.fixed_batch > lim.init_batch_size:
        steps = max(1, steps)
    steps = max(steps, 0)
    atomic = math.ceil(local / (steps + 1) - 1e-8)
    return min(atomic, int(lim.max_batch_size / (k * (steps + 1)))), steps


def fixed_batch(run: GoodputRun) -> list[Violation]:
    """A fixed-batch job runs its batch's split (module notes)."""
    out = []
    for j in run.jobs:
        if j.fixed_batch is None:
            continue
        for i, s in enumerate(j.segments):
            want = _fixed_split(run, j, len(s.allocation))
            for m, steps, _ in s.configs:
                if (m, steps) != want:
                    out.append(
                        Violation(
                            "fixed_batch",
                            f"{j.name}: runs (m, s) = {(m, steps)} on "
                            f"{len(s.allocation)} GPUs, its batch {j.fixed_batch} "
                            f"splits as {want}",
                            {"job": j.name, "segment": i},
                        )
                    )
    return out


def _stretches(s: AllocationSegment) -> Iterator[tuple[int, int]]:
    for m, steps, count in s.configs:
        for _ in range(count):
            yield m, steps


_Replay = tuple[float | None, int, float, list[str]]


#: Rates already computed: (job type, placement, m, s, epoch) -> progress per second.
_Rates = dict[tuple[str, str, int, int, int], float]


def _replay(run: GoodputRun, j: JobRecord, rates: _Rates | None = None) -> _Replay:
    """(completion, epoch, progress, problems) re-derived from ``j``'s segments."""
    try:
        return _integrate(run, j, {} if rates is None else rates)
    except (OptschedError, KeyError, IndexError) as exc:
        return None, 0, 0.0, [f"its segments cannot be replayed: {exc}"]


def _integrate(run: GoodputRun, j: JobRecord, rates: _Rates) -> _Replay:
    traces = run.traces[j.application]
    last = traces.max_epochs() - 1
    progress, epoch, done = 0.0, 0, None
    problems: list[str] = []
    for i, s in enumerate(j.segments):
        placement = "".join(str(c) for _, c in _runs(s.allocation))
        configs = _stretches(s)
        restart = run.restart_delay
        t = s.start
        while t < s.end - TIME_TOL and done is None:
            seconds = run.interval
            delay = min(restart, seconds)
            restart -= delay
            seconds -= delay
            clock = t + delay
            while seconds > 0 and done is None:
                config = next(configs, None)
                if config is None:
                    problems.append(f"segment {i} records fewer stretches than it ran")
                    return done, epoch, progress, problems
                key = (j.application, placement, config[0], config[1], epoch)
                rate = rates.get(key)
                if rate is None:
                    rate = rates[key] = progress_rate(traces, placement, *config, epoch)
                target = progress_at_epoch(traces, epoch + 1)
                if progress + rate * seconds < target:
                    progress += rate * seconds
                    seconds = 0
                    continue
                epoch += 1
                delta = round((target - progress) / rate)
                if epoch > last:
                    done = clock + delta
                progress = target
                clock += delta
                seconds -= delta
            t += run.interval
        if next(configs, None) is not None:
            problems.append(f"segment {i} records more stretches than it ran")
    return done, epoch, progress, problems


def progress(run: GoodputRun) -> list[Violation]:
    """Completions, epochs and progress re-derived from the segments (module notes)."""
    rates: _Rates = {}
    return _progress(run, {j.name: _replay(run, j, rates) for j in run.jobs})


def _progress(run: GoodputRun, replays: dict[str, _Replay]) -> list[Violation]:
    out = []
    for j in run.jobs:
        done, epoch, prog, problems = replays[j.name]
        where = {"job": j.name}
        out += [Violation("progress", f"{j.name}: {p}", where) for p in problems]
        if (done is None) != (j.completion_time is None) or (
            done is not None
            and j.completion_time is not None
            and abs(done - j.completion_time) > TIME_TOL
        ):
            out.append(
                Violation(
                    "progress",
                    f"{j.name}: completes at {done} by its segments, recorded {j.completion_time}",
                    where,
                )
            )
        elif epoch != j.epoch or abs(prog - j.progress) > WORK_TOL * max(1.0, abs(prog)):
            out.append(
                Violation(
                    "progress",
                    f"{j.name}: ends at epoch {epoch}, progress {prog} "
                    f"by its segments, recorded {j.epoch}, {j.progress}",
                    where,
                )
            )
    return out


def attained_service(run: GoodputRun) -> list[Violation]:
    """Recorded GPU-seconds = segments' GPUs x length up to completion."""
    out = []
    for j in run.jobs:
        stop = math.inf if j.completion_time is None else j.completion_time
        want = sum(len(s.allocation) * max(0.0, min(s.end, stop) - s.start) for s in j.segments)
        if abs(want - j.attained_service) > TIME_TOL * max(1.0, want):
            out.append(
                Violation(
                    "attained_service",
                    f"{j.name}: {j.attained_service} GPU-s recorded, {want} by its segments",
                    {"job": j.name},
                    j.attained_service - want,
                )
            )
    return out


#: Constraint name -> check, in the order they run.
CONSTRAINTS: dict[str, Callable[[GoodputRun], list[Violation]]] = {
    "segment_shape": segment_shape,
    "job_overlap": job_overlap,
    "before_submission": before_submission,
    "after_completion": after_completion,
    "restart_count": restart_count,
    "node_capacity": node_capacity,
    "fixed_batch": fixed_batch,
    "progress": progress,
    "attained_service": attained_service,
}


def validate(run: GoodputRun) -> Report:
    """Check ``run`` against every constraint of :data:`CONSTRAINTS`.

    Returns
    -------
    Report
        The violations; ``objective`` is the average JCT recomputed from the replayed
        completions (None if a job's replay failed), ``details["jcts"]`` those JCTs.
    """
    rates: _Rates = {}
    replays = {j.name: _replay(run, j, rates) for j in run.jobs}
    violations: list[Violation] = []
    for name, check in CONSTRAINTS.items():
        violations += _progress(run, replays) if name == "progress" else check(run)
    jcts: dict[str, float] = {}
    for j in run.jobs:
        done, _, _, problems = replays[j.name]
        if done is not None and not problems:
            jcts[j.name] = done - j.submission_time
    objective = sum(jcts.values()) / len(jcts) if jcts else None
    return Report(violations=violations, objective=objective, details={"jcts": jcts})
