"""What the engine keeps per job: its run, and the job states that bring themselves up to date.

A :class:`Run` is a running job's stretch on one unchanged placement (its record segment, its
progress bookkeeping, its completion event's version). :class:`RoundsState` and
:class:`LiveState` are the :class:`~optsched.sim.JobState` the engine hands to policies: a kept
run's rounds (and, under lazy progress, its progress) are counted when read, not at every
decision point (see :mod:`optsched.sim.engine.progress`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from optsched.sim.engine.policy import GrantPlacement, JobState

__all__ = [
    "ATTAINED",
    "DONE",
    "EXECUTED",
    "ROUNDS",
    "LiveState",
    "ProgressBook",
    "RoundsState",
    "Run",
    "Seen",
]


@dataclass(slots=True)
class Run:
    """A running job's run (one placement) and its progress bookkeeping."""

    placement: GrantPlacement
    partner: int  # job index, -1 when alone
    seg_start: float  # start of the current record segment
    synced: float  # time ``done`` was last brought up to date
    overhead: float  # restore seconds left at ``synced``
    rate: float
    version: int
    gpus: int  # GPUs of ``placement`` (read at every progress update)
    phase: int = -1  # batch phase the pending event ends (-1: no schedule, the event completes)
    ps: tuple[int, ...] = ()  # colocation mode: the server of each parameter server
    seq: int = 0  # order of entry into the running jobs (their dict order)
    credit: int = 0  # kept decisions already counted in ``rounds_received``


class Seen:
    """The jobs already placed or granted: a live key set plus the grants checked so far."""

    __slots__ = ("base", "extra")

    def __init__(self, base: dict[int, Any]) -> None:
        self.base = base
        self.extra: set[int] = set()

    def __contains__(self, i: object) -> bool:
        return i in self.extra or i in self.base

    def add(self, i: int) -> None:
        self.extra.add(i)


class ProgressBook(Protocol):
    """What a job state reads of the engine to bring itself up to date."""

    running: dict[int, Run]
    _last_time: float

    def _catch_up(self, i: int, run: Run) -> None: ...

    def _credit_state(self, st: JobState) -> None: ...


def _live(slot: Any) -> property:
    """A progress field read through the engine, which brings it up to date first."""
    get = slot.__get__

    def read(self: LiveState) -> float:
        # ``Progress._catch_up_state``, inlined: policies read progress often
        engine = self._engine
        i = self.job.index
        run = engine.running.get(i)
        if run is not None and run.synced < engine._last_time:
            engine._catch_up(i, run)
        return get(self)

    return property(read, slot.__set__)


class RoundsState(JobState):
    """A :class:`JobState` whose ``rounds_received`` counts the rounds of a kept run when read.

    A decision that keeps a running job's run gives it a round without touching its state
    (see ``Progress._credit``).
    """

    __slots__ = ("_engine",)
    _engine: ProgressBook


class LiveState(RoundsState):
    """A :class:`RoundsState` whose progress is also brought up to date when read.

    ``done``, ``attained_service`` and ``executed_seconds`` (the engine's lazy progress).
    """

    __slots__ = ()


#: the slot descriptors of the progress fields (raw reads and writes, no catching up)
DONE: Any = JobState.__dict__["done"]
ATTAINED: Any = JobState.__dict__["attained_service"]
EXECUTED: Any = JobState.__dict__["executed_seconds"]
for _slot in (DONE, ATTAINED, EXECUTED):
    setattr(LiveState, _slot.__name__, _live(_slot))
ROUNDS: Any = JobState.__dict__["rounds_received"]


def _live_rounds(self: RoundsState) -> dict[str, int]:
    self._engine._credit_state(self)
    rounds: dict[str, int] = ROUNDS.__get__(self)
    return rounds


# the rounds a running job receives while its run is kept are counted when read
RoundsState.rounds_received = property(_live_rounds, ROUNDS.__set__)  # type: ignore[assignment,misc]
