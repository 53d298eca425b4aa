"""The horizon and event bound of a run, shared by both mechanisms.

The default horizon and the loop's event bound are derived in the notes of
:mod:`optsched.sim.engine.core`; Gavel's mechanism (:mod:`optsched.sim.engine.gavel`) takes the
same default horizon with its round length.
"""

from __future__ import annotations

import math

from optsched.sim.world.jobs import SimJob, World

__all__ = ["default_horizon", "event_bound", "excluded_type_notes"]


def default_horizon(world: World, round_seconds: float | None) -> float:
    """The default ``max_time`` (see the notes of :mod:`optsched.sim.engine.core`)."""
    if not world.jobs:
        return 0.0
    slow = 1.0
    if round_seconds is not None:
        slow = round_seconds / (round_seconds - world.restore_s)
    total = 0.0
    for j in world.jobs:
        if j.batch_schedule is not None:
            total += _slowest_seconds(world, j)
            continue
        # every gang size the job may run at (an elastic job may run on min_gpus of the
        # slowest type all along: a non-preemptive policy keeps the gang it started with)
        lo, hi = min(j.min_gpus, j.num_gpus), max(j.max_gpus, j.num_gpus)
        rates = [
            world.rate(j, t.name, c, num_gpus=n)
            for n in range(lo, hi + 1)
            for t in world.cluster.gpu_types
            if t.count >= n
            for c in (True, False)
        ]
        positive = [r for r in rates if r > 0]
        total += j.work / min(positive) if positive else 0.0
    if world.colocation is not None:
        # neighbours slow a job down by at most this factor (colocation mode)
        total *= world.colocation.max_slowdown_factor(world)
    n = len(world.jobs)
    rs = round_seconds or 0.0
    return (
        world.jobs[-1].arrival + 2.0 * total * slow + world.restore_s * (4 * n + 2) + (n + 2) * rs
    )


def _slowest_seconds(world: World, job: SimJob) -> float:
    """A dynamic job's time alone on its slowest placement (phases included; 0 if none runs)."""
    times = [
        world.work_seconds(job, t.name, c)
        for t in world.cluster.gpu_types
        if t.count >= job.num_gpus
        for c in (True, False)
    ]
    finite = [x for x in times if math.isfinite(x)]
    return max(finite) if finite else 0.0


def event_bound(world: World, round_seconds: float | None, horizon: float, wakeups: int) -> float:
    """Upper bound on loop iterations (see the notes of :mod:`optsched.sim.engine.core`)."""
    rounds = 0.0 if round_seconds is None else math.floor(horizon / round_seconds) + 1
    # a batch-size phase boundary is crossed once, in one iteration of its own
    boundaries = sum(
        len(j.batch_schedule.phases) - 1 for j in world.jobs if j.batch_schedule is not None
    )
    return 2.0 * len(world.jobs) + rounds + wakeups + 1 + boundaries


def excluded_type_notes(world: World) -> list[str]:
    """One note per GPU type some jobs cannot run on (rate 0 or missing in the table).

    Such a type is excluded for those jobs: the engine never places them there.
    """
    notes: list[str] = []
    for t in world.cluster.gpu_types:
        ids = [j.job_id for j in world.jobs if world.rate(j, t.name) <= 0]
        if ids:
            shown = ", ".join(ids[:5]) + (f", ... ({len(ids)} jobs)" if len(ids) > 5 else "")
            notes.append(
                f"{t.name} excluded for {len(ids)} job(s) whose rate there is 0 or missing in "
                f"the throughput table: {shown}"
            )
    return notes
