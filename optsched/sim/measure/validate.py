r"""Independent validator of a simulation record, one function per named constraint.

:func:`validate` reads only the world and the record (the interval table, completions, first
starts, the round length and the policy's stated claims); it shares no code with the engine.
Each constraint below is one function of this module named as the constraint,
``name(instance, solution) -> list[Violation]``, listed in :data:`CONSTRAINTS` (name ->
function) in the order they run; a :class:`~optsched.results.Violation` carries the
constraint's name. The record is parsed once per :func:`validate` call and shared by the
constraints; a constraint called alone parses it itself. The table
of names, rules and functions is also on the formulation page (``docs/formulations/sim_exact.rst``,
"Validator constraints").

``interval_shape``
    Every row names a job and GPU type of the world, a server of that type, ``gpus >= 1`` and
    ``0 <= start < end`` (finite); the columns have equal lengths and completions and first starts
    are one per job.
``gang_whole``
    The rows of one job with the same ``start`` and ``end`` (one gang segment) are of one GPU type,
    on distinct servers, with the same ``shared_with``, and hold exactly ``num_gpus`` GPUs (an
    elastic job: between its ``min_gpus`` and ``max_gpus``).
``first_start``
    The recorded first start is the earliest segment start.
``job_overlap``
    A job's segments do not overlap in time.
``before_arrival`` / ``after_completion``
    No segment starts before the job's arrival or ends after its completion.
``work_done``
    Re-integrating each job's rate over its segments (a job with batch-size phases at the rate
    of the phase its re-integrated work is in, changing rate where that work crosses a phase's
    end, inside a segment) (runs of contiguous segments — one ending
    where the next starts, to the validator's time slack (below) — on one
    placement; a run that resumes a job which ran before, or any run when the world has
    ``restore_on_first_start``, makes no progress for its first ``restore_s``), a finished
    job's work is reached at its completion time (within the time slack; a shortfall is
    converted to time at the last segment's rate), and an unfinished
    job's work is not reached before the end of the run. In the colocation mode the rate is
    re-derived from the record: each segment is cut at every start and end of another job's
    segment on a server it shares (workers' or parameter servers'), and in each piece the rate
    is the consolidated rate times the speed factor of the jobs present
    (:meth:`Colocation.speed_factor <optsched.sim.world.colocation.Colocation.speed_factor>`).
``no_progress``
    No job holds GPUs where its rate is 0 (a type or pairing the table gives it no rate on) for
    a stretch longer than :data:`optsched.limits.MAX_STALLED_ROUNDS` rounds of the run;
    event-driven runs have no rounds and allow no such stretch at all. (Restore time is no
    stall: it is the documented cost of a preemption, bounded by ``restore_s`` per run.)
``share_pair``
    A row shared with job ``b`` has its mirror row of ``b`` (same type, server, GPUs, start, end),
    and the pair has measured positive pair rates.
``server_capacity``
    At every instant the GPUs held on each server (a shared pair counted once) are at most the
    server's GPUs. (Per type at most the type's count follows: a type's servers hold exactly its
    GPUs.) In the colocation mode (:mod:`optsched.sim.world.colocation`) also: the CPUs of the
    workers and parameter servers on each server are at most its CPUs, and each segment lists
    its job's number of parameter servers, on servers of the world.
``work_conserving``
    Only for a run whose policy claims it (``SimResult.extra["work_conserving"]``): at every
    decision point (every arrival and completion of an event-driven run; every round start
    ``k L`` of a round-based one) no waiting job — arrived, unfinished, holding no GPU — has a
    GPU type with a positive rate for it and at least its gang's GPUs free. The state at a
    decision point ``t`` is every event up to ``t + w(t)``, with the window
    :math:`w(t) = \min(\mathrm{TIME\_TOL},\ \mathrm{FIT\_TOL} \cdot \max(1, |t|))`
    (:data:`~optsched.tolerances.TIME_TOL` in seconds, :data:`~optsched.tolerances.FIT_TOL`
    relative): the narrower of the two slacks within which a simulation counts an event as at
    its decision point (it admits a job arriving up to ``TIME_TOL`` seconds after it, and
    completes before deciding a job whose work is due within ``FIT_TOL`` relative of it).
    Why this window is right, both ways. (i) Every event the simulation carried out *at* ``t``
    — a segment started or stopped by the decision, a completion folded into it — is recorded
    at ``t`` itself (or a rounding, ~1e-16 relative, off it), inside ``w(t)``. (ii) Every event
    it carried out *after* ``t`` — a job finishing or arriving mid-round — lies beyond its own
    slack, so beyond ``w(t)``: its GPUs freed or its arrival are not read as present at the
    decision that could not have used them. So a run is flagged only for a job that waited with
    a gang's GPUs free in the state its decision left, and every such job is flagged. (The
    general time slack, below, is 4.7e-4 s at ``t = 466,560`` s: a job granted a GPU at that
    round start and finishing its last 0.015 s there would not be read as freeing it at the
    round start, but a job finishing 0.1 ms into the round would.) The one
    corner (ii) leaves: for ``t < 1000`` s an arrival in ``(t + w(t), t + TIME_TOL]``, which a
    simulation may admit at ``t``, is read as after ``t`` and is checked at the next decision
    point only.

Time slack. Every other check counts two recorded times as one instant when they differ by at
most :math:`\max(\mathrm{TIME\_TOL},\ \mathrm{FIT\_TOL} \cdot |t|)`: ``TIME_TOL`` seconds,
or the simulation's own same-instant slack for completions where that is wider. Not
``TIME_TOL`` relative: that grows to 0.47 s at ``t = 466,560`` s, and an overlap of two gangs on
one server, a start before an arrival or an end after a completion that long is real.

How the checks run. :func:`validate` reads the record into arrays once and checks each
constraint over all rows, segments or jobs at once (:mod:`optsched.sim.measure.segments`, in
NumPy); the plain-Python checks that read it row by row (:mod:`optsched.sim.measure.reference`)
stay beside them, give the same report (tested on random and corrupted records), and run the
colocation mode, ``work_conserving`` and records whose columns are not of the recorded types.
``_validate_reference`` runs the reference alone.

Complexity: :math:`O(R \log R + D (K + W))` for :math:`R` rows, :math:`D` decision points,
:math:`K` GPU types and :math:`W` jobs waiting at a decision point (``work_conserving`` only).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from dataclasses import dataclass

from optsched.results import Report, Violation
from optsched.sim.measure import reference, segments
from optsched.sim.measure.record import SimResult
from optsched.sim.measure.reference import stall_allowance
from optsched.sim.world.jobs import World

__all__ = ["CONSTRAINTS", "stall_allowance", "validate"]


@dataclass
class _Parsed:
    """The record read once: as arrays (``table``), or by the reference (``check``)."""

    world: World
    result: SimResult
    table: segments.Table | None
    check: reference.Check | None

    @property
    def broken(self) -> bool:
        """The record's shape is too wrong to read further (the reference found it)."""
        return self.check is not None and self.check.broken


#: The parse of the record being validated, shared by the constraints while ``validate`` runs.
_CURRENT: contextvars.ContextVar[_Parsed | None] = contextvars.ContextVar(
    "optsched_sim_validate", default=None
)


def _parse(instance: World, solution: SimResult, *, plain: bool = False) -> _Parsed:
    """The record parsed once per :func:`validate` call (``plain``: by the reference alone)."""
    current = _CURRENT.get()
    if current is not None and current.world is instance and current.result is solution:
        return current
    table = None if plain else segments.parse(instance, solution)
    check = reference.parse(instance, solution) if table is None else None
    return _Parsed(instance, solution, table, check)


def _body(instance: World, solution: SimResult, name: str) -> list[Violation]:
    """Constraint ``name`` on the parsed record: the NumPy check, or the reference's."""
    parsed = _parse(instance, solution)
    if parsed.table is not None:
        return segments.CHECKS[name](parsed.table)
    assert parsed.check is not None
    return reference.run_body(parsed.check, reference.BODIES[name])


# -- the constraints, as the formulation page names them ------------------------------------


def interval_shape(instance: World, solution: SimResult) -> list[Violation]:
    """``interval_shape``: well-formed rows naming the world's jobs, types and servers."""
    parsed = _parse(instance, solution)
    if parsed.table is not None:
        return list(parsed.table.shape)
    assert parsed.check is not None
    return list(parsed.check.shape)


def gang_whole(instance: World, solution: SimResult) -> list[Violation]:
    """``gang_whole``: each gang segment is one type, distinct servers, its whole gang."""
    parsed = _parse(instance, solution)
    if parsed.table is not None:
        return list(parsed.table.gangs)
    assert parsed.check is not None
    return [] if parsed.broken else list(parsed.check.gangs)


def first_start(instance: World, solution: SimResult) -> list[Violation]:
    """``first_start``: the recorded first start is the earliest segment start."""
    return _body(instance, solution, "first_start")


def job_overlap(instance: World, solution: SimResult) -> list[Violation]:
    """``job_overlap``: a job's segments do not overlap in time."""
    return _body(instance, solution, "job_overlap")


def before_arrival(instance: World, solution: SimResult) -> list[Violation]:
    """``before_arrival``: no segment starts before the job's arrival."""
    return _body(instance, solution, "before_arrival")


def after_completion(instance: World, solution: SimResult) -> list[Violation]:
    """``after_completion``: no segment ends after the job's completion."""
    return _body(instance, solution, "after_completion")


def work_done(instance: World, solution: SimResult) -> list[Violation]:
    """``work_done``: re-integrated, the work is done exactly at each completion."""
    return _body(instance, solution, "work_done")


def no_progress(instance: World, solution: SimResult) -> list[Violation]:
    """``no_progress``: no job holds GPUs at a rate of 0 beyond the allowance."""
    return _body(instance, solution, "no_progress")


def share_pair(instance: World, solution: SimResult) -> list[Violation]:
    """``share_pair``: a shared row has its mirror row and the pair positive measured pair rates."""
    return _body(instance, solution, "share_pair")


def server_capacity(instance: World, solution: SimResult) -> list[Violation]:
    """``server_capacity``: no server ever holds more GPUs than it has."""
    return _body(instance, solution, "server_capacity")


def work_conserving(instance: World, solution: SimResult) -> list[Violation]:
    """``work_conserving``: no job waits while GPUs it could use idle."""
    return _body(instance, solution, "work_conserving")


#: Every constraint by name, in the order :func:`validate` checks them.
CONSTRAINTS: dict[str, Callable[[World, SimResult], list[Violation]]] = {
    "interval_shape": interval_shape,
    "gang_whole": gang_whole,
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


def validate(instance: World, solution: SimResult) -> Report:
    """Check the record ``solution`` against the world ``instance`` (see the module notes).

    Returns
    -------
    Report
        ``objective`` is the total weighted JCT of the finished jobs; ``objectives`` holds
        ``mean-jct`` and ``makespan`` (NaN-free: ``None`` when no job finished); ``details``
        the finished and unfinished counts, the rows and the constraints checked.
    """
    return _validate(instance, solution, plain=False)


def _validate_reference(instance: World, solution: SimResult) -> Report:
    """:func:`validate` by the plain-Python reference checks alone (the NumPy path's oracle)."""
    return _validate(instance, solution, plain=True)


def _validate(instance: World, solution: SimResult, *, plain: bool) -> Report:
    parsed = _parse(instance, solution, plain=plain)
    token = _CURRENT.set(parsed)
    violations: list[Violation] = []
    try:
        for constraint in CONSTRAINTS.values():
            violations.extend(constraint(instance, solution))
            if parsed.broken:
                return Report(violations=violations)
    finally:
        _CURRENT.reset(token)
    pairs = zip(instance.jobs, solution.completion, strict=True)
    done = [(j, c) for j, c in pairs if not math.isnan(c)]
    jcts = [c - j.arrival for j, c in done]
    return Report(
        violations=violations,
        objective=sum(j.weight * (c - j.arrival) for j, c in done),
        objectives={
            "mean-jct": sum(jcts) / len(jcts) if jcts else None,
            "makespan": max((c for _, c in done), default=None),
        },
        details={
            "finished": len(done),
            "unfinished": len(instance.jobs) - len(done),
            "jobs": len(instance.jobs),
            "rows": len(solution.intervals.get("job_id", [])),
            "constraints": list(CONSTRAINTS),
        },
    )
