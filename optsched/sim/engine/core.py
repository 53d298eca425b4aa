r"""The event-driven simulator that carries out a :class:`~optsched.sim.Policy` on a world.

**Time and decision points.** Event-driven (``round_seconds=None``): decisions at every arrival,
every completion and every ``wake_at`` the policy asks for. Round-based (``round_seconds = L``):
decisions at the times ``k L`` (``k = 0, 1, ...``; rounds with no active job are skipped) and at
the policy's ``wake_at`` times, never at arrivals or completions: an arriving job waits for the
next round, and GPUs a job frees mid-round stay idle until it.

**Between decision points** every placed job progresses at its rate (alone or paired, consolidated
or not; see :meth:`World.rate <optsched.sim.World.rate>`), except during the first
``restore_s`` of a *run* that resumes a job which had run before (a run is a stretch of time
on one unchanged placement), and of every job's first run when the world has
``restore_on_first_start``. When a job's work is done it completes at that exact time and
frees its GPUs; a job sharing its GPUs continues alone, at its alone rate, in the same run.

**Batch-size phases.** A job with a ``batch_schedule`` (Shockwave's dynamic jobs,
:mod:`optsched.sim.world.batch_schedule`) runs at the rate of the phase its progress is in
(:meth:`World.rate <optsched.sim.World.rate>` with ``phase``); the end of its current phase is an
event like a completion, at which its rate changes inside the run (and the round): no decision
point, no new record segment, no restore. A job without a schedule takes none of these steps.

**Placement** (see :mod:`optsched.sim.engine.policy`): at every decision point a running gang spread
over more servers than it needs moves onto the fewest servers as soon as they have room for it
whole (Gavel's behaviour; a migration, charged the restore cost), and keeps its spread servers
only otherwise. A grant of a job onto a GPU type where its rate is 0 (or a spread placement
where the table's unconsolidated rate is 0) is dropped, whichever policy made it, and counted in
``SimResult.extra["zero_rate_grants"]``: no job holds GPUs it cannot progress on.

**Bounds.** With ``n`` jobs, ``R = floor(horizon / L) + 1`` rounds and ``W`` the policy's declared
wake-ups, every loop iteration consumes an arrival batch, a completion, a round or a wake-up, so
the loop runs at most ``2 n + R + W + 1 + P`` times (``P``: the batch-phase boundaries of
the dynamic jobs, each crossed once); that bound is checked against
``limits.max_events`` before anything runs. The horizon (``max_time``) defaults to the last arrival
plus twice the sum, over jobs, of the job's time alone on its slowest type (slowed by
``L / (L - restore)`` in rounds), plus ``restore_s`` per possible event, plus ``n + 2``
rounds (a job finishing mid-round leaves its GPUs idle until the round ends); a run cut short
there says so (``SimResult.truncated``).

Complexity: :math:`O(E (A \log A + S))` for :math:`E` events, :math:`A` active jobs and :math:`S`
servers, plus the policy's own work. The free servers are kept across decisions, bucketed by free
GPUs, so a decision under ``keep_running`` (or its ``stop`` form) places the jobs it starts in
:math:`O(g + \log S)` each (``g`` GPUs per server) with no pass over the servers; a policy with
``lazy_progress`` has the running jobs' progress brought up to date when read (replaying the
decision points it missed, with the same arithmetic) instead of at every decision point.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
from array import array
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.gavel import DEFAULT_ROUND_SECONDS as GAVEL_ROUND_SECONDS
from optsched.sim.engine.gavel import GavelMechanism, simulate_gavel
from optsched.sim.engine.policy import (
    Grant,
    GrantPlacement,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.measure.record import SimResult, add_interval, empty_intervals
from optsched.sim.world.jobs import SimJob, World
from optsched.tolerances import CAPACITY_TOL, FIT_TOL, TIME_TOL

__all__ = [
    "default_horizon",
    "event_bound",
    "excluded_type_notes",
    "simulate",
    "simulate_steps",
]


@dataclass(slots=True)
class _Run:
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


#: Carry out ``keep_running`` decisions at the cost of their changes (the running jobs that stop,
#: move, change partner or start), not of the running jobs; ``False`` runs every decision
#: through the full pass over the running jobs (the specification, for tests).
INCREMENTAL_APPLY = True

#: A lazy catch-up over at least this many missed decision points runs as array accumulations
#: (below it, the plain loop over the shared gaps is the faster).
_VECTOR_STEPS = 96


class _Seen:
    """The jobs already placed or granted: a live key set plus the grants checked so far."""

    __slots__ = ("base", "extra")

    def __init__(self, base: dict[int, Any]) -> None:
        self.base = base
        self.extra: set[int] = set()

    def __contains__(self, i: object) -> bool:
        return i in self.extra or i in self.base

    def add(self, i: int) -> None:
        self.extra.add(i)


class _FreeServers:
    r"""Free GPUs of one GPU type's servers, with the servers bucketed by their free count.

    ``cap[s]`` is server ``s``'s free GPUs; ``buckets[f]`` lists, in increasing order, the
    servers with exactly ``f`` free; ``total`` is their sum. The engine keeps one per type
    across decisions (the cluster as the running jobs leave it) instead of rebuilding the
    free lists from every running job at every decision. Taking or giving GPUs on a server
    moves it between two buckets, :math:`O(\log S + S)` with a small memmove constant for
    :math:`S` servers; the best-fit and most-free walks of placement read the buckets in
    :math:`O(g + \text{servers returned})` for ``g`` GPUs per server instead of scanning or
    sorting every server.
    """

    __slots__ = ("buckets", "cap", "total")

    def __init__(self, caps: list[int], gpus_per_server: int) -> None:
        self.cap = list(caps)
        self.total = sum(caps)
        self.buckets: list[list[int]] = [[] for _ in range(gpus_per_server + 1)]
        for s, f in enumerate(caps):
            self.buckets[f].append(s)

    def copy(self) -> _FreeServers:
        """An independent copy."""
        new = _FreeServers.__new__(_FreeServers)
        new.cap = list(self.cap)
        new.total = self.total
        new.buckets = [list(b) for b in self.buckets]
        return new

    def take(self, s: int, k: int) -> None:
        """Take ``k`` free GPUs of server ``s``."""
        self._set(s, self.cap[s] - k)
        self.total -= k

    def give(self, s: int, k: int) -> None:
        """Give ``k`` GPUs of server ``s`` back."""
        self._set(s, self.cap[s] + k)
        self.total += k

    def _set(self, s: int, f: int) -> None:
        old = self.buckets[self.cap[s]]
        del old[bisect.bisect_left(old, s)]
        bisect.insort(self.buckets[f], s)
        self.cap[s] = f

    def best_fit(self, n: int) -> int:
        """The server with the fewest free GPUs that holds ``n`` (lowest index on ties), or -1."""
        buckets = self.buckets
        for f in range(n, len(buckets)):
            if buckets[f]:
                return buckets[f][0]
        return -1

    def most_free(self, count: int | None = None, gpus: int | None = None) -> list[int]:
        """Servers by decreasing free GPUs, lowest index on ties.

        The first ``count`` of them, or as many (with free GPUs) as hold ``gpus``.
        """
        order: list[int] = []
        held = 0
        for f in range(len(self.buckets) - 1, -1, -1):
            for s in self.buckets[f]:
                if count is not None and len(order) >= count:
                    return order
                if gpus is not None:
                    if held >= gpus or f == 0:
                        return order
                    held += f
                order.append(s)
        return order


def _live(slot: Any) -> property:
    """A progress field read through the engine, which brings it up to date first."""
    get = slot.__get__

    def read(self: _LiveState) -> float:
        # ``_Engine._catch_up_state``, inlined: policies read progress often
        engine = self._engine
        i = self.job.index
        run = engine.running.get(i)
        if run is not None and run.synced < engine._last_time:
            engine._catch_up(i, run)
        return get(self)

    return property(read, slot.__set__)


class _RoundsState(JobState):
    """A :class:`JobState` whose ``rounds_received`` counts the rounds of a kept run when read.

    A decision that keeps a running job's run gives it a round without touching its state
    (see ``_Engine._credit``).
    """

    __slots__ = ("_engine",)
    _engine: _Engine


class _LiveState(_RoundsState):
    """A :class:`_RoundsState` whose progress is also brought up to date when read.

    ``done``, ``attained_service`` and ``executed_seconds`` (the engine's lazy progress).
    """

    __slots__ = ()


#: the slot descriptors of the progress fields (raw reads and writes, no catching up)
_DONE: Any = JobState.__dict__["done"]
_ATTAINED: Any = JobState.__dict__["attained_service"]
_EXECUTED: Any = JobState.__dict__["executed_seconds"]
for _slot in (_DONE, _ATTAINED, _EXECUTED):
    setattr(_LiveState, _slot.__name__, _live(_slot))
_ROUNDS: Any = JobState.__dict__["rounds_received"]


def _live_rounds(self: _RoundsState) -> dict[str, int]:
    self._engine._credit_state(self)
    rounds: dict[str, int] = _ROUNDS.__get__(self)
    return rounds


# the rounds a running job receives while its run is kept are counted when read
_RoundsState.rounds_received = property(_live_rounds, _ROUNDS.__set__)  # type: ignore[assignment,misc]


def default_horizon(world: World, round_seconds: float | None) -> float:
    """The default ``max_time`` (see the module notes)."""
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
        rates = [
            world.rate(j, t.name, c)
            for t in world.cluster.gpu_types
            if t.count >= j.num_gpus
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
    """Upper bound on loop iterations (see the module notes)."""
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


_POLICY_ROUND: Literal["policy"] = "policy"


def simulate(
    world: World,
    policy: Policy | str,
    *,
    round_seconds: float | Literal["policy"] | None = _POLICY_ROUND,
    max_time: float | None = None,
    restore_on_first_start: bool | None = None,
    mechanism: str | GavelMechanism = "optsched",
) -> SimResult:
    """Run ``policy`` on ``world``.

    Parameters
    ----------
    world : World
    policy : Policy or str
        A policy object, or a registered name (:func:`optsched.sim.policies.policy_names`).
    round_seconds : float or None, optional
        Round/lease length; ``None`` is event-driven; by default the policy's own.
    max_time : float, optional
        Horizon (default :func:`default_horizon`).
    restore_on_first_start : bool, optional
        Override :attr:`World.restore_on_first_start <optsched.sim.World>` for this run: charge
        the restore cost on every job's first start too (the reference semantics of
        Gavel-derived simulators). The record's world carries the value used.
    mechanism : {"optsched", "gavel"} or GavelMechanism, optional
        How a round is carried out. ``"optsched"`` (default): this engine, re-solving every
        round and carrying a fractional allocation out by :func:`~optsched.sim.carry_out`
        (kept as the default: it decides every round from the current state, and existing
        runs keep their results). ``"gavel"`` or a
        :class:`~optsched.sim.engine.gavel.GavelMechanism` (its options): Gavel's own
        mechanism (:mod:`optsched.sim.engine.gavel`: resets on arrival/completion at most
        every 1920 s, per-type queues, Gavel's priorities), round length by default 360 s.

    Returns
    -------
    SimResult

    Raises
    ------
    InvalidInstanceError
        ``round_seconds`` not > ``world.restore_s`` or not finite, ``max_time`` not
        finite, or the event bound over ``limits.max_events``; ``world`` not a World (a trace
        goes through :func:`~optsched.sim.compare.world_from_trace`), ``policy`` neither a
        Policy nor a registered name; Gavel's mechanism on a world in the colocation mode.
    PolicyError
        The policy granted an unknown/inactive job, an unknown GPU type, a job twice, an
        impossible placement or pairing, or more wake-ups than it declared.
    """
    from optsched.sim.policies import make_policy

    if not isinstance(world, World):
        raise InvalidInstanceError(
            "world",
            f"must be a World, got {type(world).__name__}; build one from a trace with "
            "world_from_trace(trace, cluster, throughputs) or World.from_frame",
        )
    policy = make_policy(policy, field="policy")
    gavel = _gavel_options(mechanism)
    if restore_on_first_start is not None:
        if not isinstance(restore_on_first_start, bool):
            raise InvalidInstanceError(
                "restore_on_first_start", f"must be a bool, got {restore_on_first_start!r}"
            )
        if restore_on_first_start != world.restore_on_first_start:
            world = dataclasses.replace(world, restore_on_first_start=restore_on_first_start)
    rs = policy.round_seconds if round_seconds == _POLICY_ROUND else round_seconds
    if rs is not None:
        # a round far outside the stated range (1e300 s) leaves times whose sums lose every
        # digit of a job's work: refused before the run, not after its validator rejects it
        limits.check_range("round_seconds", rs, "round_seconds")
    if gavel is not None and world.colocation is not None:
        raise InvalidInstanceError(
            "mechanism", "Gavel's mechanism has no colocation mode; run the world with 'optsched'"
        )
    if gavel is not None:
        if round_seconds is None:
            raise InvalidInstanceError(
                "round_seconds", "Gavel's mechanism runs in rounds; None (event-driven) is refused"
            )
        return simulate_gavel(
            world,
            policy,
            round_seconds=rs if rs is not None else GAVEL_ROUND_SECONDS,
            max_time=max_time,
            options=gavel,
        )
    if rs is not None:
        if rs <= world.restore_s:
            raise InvalidInstanceError(
                "round_seconds",
                f"must exceed restore_s ({world.restore_s:g}) or no job could "
                f"progress in a round, got {rs:g}",
            )
    if max_time is not None:
        limits.check_range("max_time", max_time, "max_time")
    horizon = default_horizon(world, rs) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    policy.reset(world)
    wake_budget = policy.max_wakeups(world)
    bound = event_bound(world, rs, horizon, wake_budget)
    limits.check_size("jobs", bound, "max_events", "events")
    return _Engine(world, policy, rs, float(horizon), wake_budget, bound).run()


def _gavel_options(mechanism: object) -> GavelMechanism | None:
    """``None`` for the engine's own mechanism, else the Gavel mechanism's options."""
    if isinstance(mechanism, GavelMechanism):
        return mechanism
    if mechanism == "gavel":
        return GavelMechanism()
    if mechanism == "optsched":
        return None
    raise InvalidInstanceError(
        "mechanism", f"must be 'optsched', 'gavel' or a GavelMechanism, got {mechanism!r}"
    )


class _Engine:
    def __init__(
        self,
        world: World,
        policy: Policy,
        round_seconds: float | None,
        horizon: float,
        wake_budget: int,
        bound: float,
    ) -> None:
        self.world = world
        self.policy = policy
        self.L = round_seconds
        self.horizon = horizon
        self.wake_budget = wake_budget
        self.bound = bound
        self.jobs = world.jobs
        # lazy progress (a policy that reads the progress of few jobs per decision says so):
        # the running jobs' progress is brought up to date when read, not at every decision
        self.lazy = bool(getattr(policy, "lazy_progress", False))
        self.states: list[JobState] = []
        for j in world.jobs:
            live = _LiveState(job=j) if self.lazy else _RoundsState(job=j)
            live._engine = self
            self.states.append(live)
        self._times: list[float] = []  # the decision times, in order (lazy progress)
        # the gaps between them (``_gaps[k] = _times[k] - _times[k - 1]``, 0.0 first), shared by
        # every catch-up that steps over them (8 bytes each; read as a buffer by numpy)
        self._gaps = array("d")
        self._last_time = -math.inf  # the last of them
        self.index = {j.job_id: j.index for j in world.jobs}
        self.active: dict[int, JobState] = {}
        self.running: dict[int, _Run] = {}
        self.heap: list[tuple[float, int, int]] = []
        self.table = empty_intervals()
        self.completion = [math.nan] * len(world.jobs)
        self.first_start = [math.nan] * len(world.jobs)
        self.ever_ran = [False] * len(world.jobs)
        self.types = {t.name: t for t in world.cluster.gpu_types}
        self.server_caps = {
            t.name: [t.server_capacity(s) for s in range(t.num_servers)]
            for t in world.cluster.gpu_types
        }
        self._empty = {
            t.name: _FreeServers(self.server_caps[t.name], t.gpus_per_server)
            for t in world.cluster.gpu_types
        }
        # the cluster as the running jobs leave it, and what each running job holds (placement,
        # partner): kept across decisions, so that a decision that keeps every running job
        # costs the changes, not the cluster's size
        self._free = {name: fr.copy() for name, fr in self._empty.items()}
        self._holds: dict[int, tuple[GrantPlacement, int]] = {}
        self._gone: list[int] = []  # jobs completed since the last placement
        self._changed: list[int] = []  # jobs whose placement the current placement sets
        self._released: list[int] = []  # running jobs the current placement lets go (``stop``)
        self._fast = False  # the current decision is carried out at the cost of its changes
        self._seq = 0  # entries into the running jobs so far
        # the decisions carried out incrementally so far; each running job
        # kept by one received a round there, counted in its state when read (``_credit``)
        self._kept = 0
        self.type_order = {t.name: k for k, t in enumerate(world.cluster.gpu_types)}
        self.restore = world.restore_s
        self.first_restore = world.restore_on_first_start
        # running gangs placed on more servers than they need: re-placed consolidated at every
        # decision where a server (or set of servers) has room for them
        self.spread: set[int] = set()
        self.zero_rate_grants = 0
        self.decisions = 0
        self.new_arrivals: list[int] = []
        self.finished_ids: list[str] = []
        self.wakeups = 0
        self.wake_at = math.inf
        self.version = 0
        self.coloc = world.colocation
        if self.coloc is not None:
            # colocation mode: the running jobs with any task on each server (workers or PSs)
            self.on_server: list[dict[int, None]] = [
                {} for _ in range(world.cluster.gpu_types[0].num_servers)
            ]
            self.cpu_dropped = 0

    # -- progress ---------------------------------------------------------------------------

    def _sync(self, i: int, t: float) -> None:
        run = self.running[i]
        if self.lazy:
            self._catch_up(i, run)
        dt = t - run.synced
        if dt <= 0:
            return
        st = self.states[i]
        eff = max(0.0, dt - run.overhead)
        run.overhead = max(0.0, run.overhead - dt)
        st.done = min(st.job.work, st.done + run.rate * eff)
        st.attained_service += run.gpus * dt
        st.executed_seconds += dt
        run.synced = t

    def _catch_up_state(self, st: JobState) -> None:
        run = self.running.get(st.job.index)
        if run is not None and run.synced < self._last_time:
            self._catch_up(st.job.index, run)

    def _catch_up(self, i: int, run: _Run) -> None:
        """Bring running job ``i``'s progress up to the last decision point (lazy progress).

        The decision points it missed are replayed one by one, with the arithmetic of the
        eager update at every decision point, so the values are the eager ones bit for bit.
        """
        times = self._times
        if not times or times[-1] <= run.synced:
            return
        st = self.states[i]
        done, attained, executed = _DONE.__get__(st), _ATTAINED.__get__(st), _EXECUTED.__get__(st)
        work, rate, gpus, prev, overhead = st.job.work, run.rate, run.gpus, run.synced, run.overhead
        k = bisect.bisect_right(times, prev)
        n = len(times)
        while overhead > 0 and k < n:
            t = times[k]
            k += 1
            dt = t - prev
            if dt <= 0:
                continue
            eff = max(0.0, dt - overhead)
            overhead = max(0.0, overhead - dt)
            done = min(work, done + rate * eff)
            attained += gpus * dt
            executed += dt
            prev = t
        if n - k >= _VECTOR_STEPS:
            # the same steps as array accumulations, bit for bit: ``np.add.accumulate`` adds
            # left to right as the loop does (no pairwise summation), a zero step adds 0.0
            # (the loop skips it: the same value), and since every increment is >= 0 the
            # running sums never decrease, so ``min(work, .)`` at every step clamps the last
            # sum alike
            # (rows: done, attained, executed; column 0 the start, then each step's increment)
            acc = np.empty((3, n - k + 1))
            acc[:, 0] = (done, attained, executed)
            dts = acc[2, 1:]
            dts[1:] = self._gaps[k + 1 :]
            dts[0] = times[k] - prev
            np.multiply(dts, rate, out=acc[0, 1:])
            np.multiply(dts, gpus, out=acc[1, 1:])
            x, attained, executed = np.add.accumulate(acc, axis=1)[:, -1].tolist()
            done = x if x < work else work
            prev = times[-1]
        elif k < n:
            # the same steps without restore time left: the first from ``prev`` (a decision
            # point, or the time of a completion or phase boundary), then over the shared gaps
            # between decision points (``t - prev`` of the step by step loop, bit for bit; a
            # zero gap adds 0.0, the value the loop's skip keeps). ``done`` is clamped to the
            # work once at the end: every increment is >= 0, so the running sum, once at or
            # above the work, stays there, as the clamped one stays at the work
            x = times[k] - prev
            done += rate * x
            attained += gpus * x
            executed += x
            for x in self._gaps[k + 1 :]:
                done += rate * x
                attained += gpus * x
                executed += x
            done = done if done < work else work
            prev = times[-1]
        _DONE.__set__(st, done)
        _ATTAINED.__set__(st, attained)
        _EXECUTED.__set__(st, executed)
        run.synced = prev
        run.overhead = overhead

    def _credit(self, i: int, run: _Run, upto: int) -> None:
        """Count in job ``i``'s ``rounds_received`` the kept decisions of its run up to ``upto``."""
        n = upto - run.credit
        if n > 0:
            rounds: dict[str, int] = _ROUNDS.__get__(self.states[i])
            name = run.placement.gpu_type
            rounds[name] = rounds.get(name, 0) + n
            run.credit = upto

    def _credit_state(self, st: JobState) -> None:
        run = self.running.get(st.job.index)
        if run is not None and run.credit < self._kept:
            self._credit(st.job.index, run, self._kept)

    def _close(self, i: int, t: float) -> None:
        run = self.running[i]
        if t > run.seg_start:
            partner = self.jobs[run.partner].job_id if run.partner >= 0 else ""
            add_interval(
                self.table,
                self.jobs[i].job_id,
                run.placement.gpu_type,
                run.placement.servers,
                run.seg_start,
                t,
                partner,
                run.ps,
            )
            self.ever_ran[i] = True
        run.seg_start = t

    def _rate(self, i: int, placement: GrantPlacement, partner: int) -> float:
        gps = self.types[placement.gpu_type].gpus_per_server
        job = self.jobs[i]
        schedule = job.batch_schedule
        return self.world.rate(
            job,
            placement.gpu_type,
            placement.consolidated(gps),
            self.jobs[partner] if partner >= 0 else None,
            num_gpus=placement.num_gpus,
            # a dynamic job runs at the rate of the batch phase its progress is in
            phase=None if schedule is None else schedule.phase_at(self.states[i].done),
        )

    def _schedule_completion(self, i: int) -> None:
        run = self.running[i]
        self.version += 1
        run.version = self.version
        if run.rate <= 0:
            return
        st = self.states[i]
        target = st.job.work
        schedule = st.job.batch_schedule
        if schedule is not None:
            # the next event is the end of the current batch phase (the last one ends the work)
            k = schedule.phase_at(st.done)
            run.phase = k if k < len(schedule.phases) - 1 else -1
            if run.phase >= 0:
                target = schedule.phases[k].end
        t_c = run.synced + run.overhead + max(0.0, target - st.done) / run.rate
        heapq.heappush(self.heap, (t_c, run.version, i))

    def _phase_boundary(self, i: int, t: float) -> bool:
        """Cross job ``i``'s batch-phase boundary due at ``t``; ``False`` if the event completes.

        The job's progress is set to the boundary (absorbing rounding), its rate becomes the
        next phase's and its next event is scheduled. No decision point: the grant stands.
        """
        run = self.running[i]
        if run.phase < 0:
            return False
        schedule = self.jobs[i].batch_schedule
        assert schedule is not None
        self._sync(i, t)
        st = self.states[i]
        st.done = min(st.job.work, max(st.done, schedule.phases[run.phase].end))
        run.rate = self._rate(i, run.placement, run.partner)
        self._schedule_completion(i)
        return True

    def _peek_completion(self) -> tuple[float, int]:
        while self.heap:
            t_c, version, i = self.heap[0]
            run = self.running.get(i)
            if run is not None and run.version == version:
                return t_c, i
            heapq.heappop(self.heap)
        return math.inf, -1

    # -- main loop --------------------------------------------------------------------------

    def run(self) -> SimResult:
        """Run to the end, the policy deciding at every decision point."""
        steps = self.steps()
        try:
            state = next(steps)
            while True:
                state = steps.send(self.policy.allocate(state))
        except StopIteration as done:
            result: SimResult = done.value
            return result

    def steps(self) -> Generator[SimState, PolicyDecision, SimResult]:
        """The main loop: yields the state at each decision point, receives the decision."""
        n = len(self.jobs)
        ptr = 0
        L = self.L
        next_round = 0.0
        events = 0
        t = 0.0
        truncated = False
        while True:
            events += 1
            if events > self.bound:  # pragma: no cover - the bound is proven in the docs
                raise RuntimeError("simulation exceeded its proven event bound")
            t_arr = self.jobs[ptr].arrival if ptr < n else math.inf
            t_comp, i_comp = self._peek_completion()
            if L is None:
                t_dec = min(t_arr, self.wake_at)
            else:
                if not self.active and not self.running and t_arr < math.inf:
                    next_round = max(next_round, math.ceil(t_arr / L - TIME_TOL) * L)
                busy = bool(self.active) or t_arr < math.inf
                t_dec = min(next_round if busy else math.inf, self.wake_at)
            t_next = min(t_comp, t_dec)
            if t_next == math.inf:
                break
            if t_next > self.horizon:
                t = max(t, self.horizon)
                truncated = True
                break
            t = t_next
            if t_comp <= t_dec:
                if self._phase_boundary(i_comp, t_comp):
                    continue  # a rate change inside the run: no decision point
                self._complete(i_comp, t_comp)
                if L is not None:
                    continue  # rounds: completions are no decision points
            elif self.wake_at <= t and t_arr > t + TIME_TOL and (L is None or next_round > t):
                self.wakeups += 1  # a decision point only the policy asked for
                if self.wakeups > self.wake_budget:
                    raise PolicyError(
                        f"{self.policy.name}: more wake-ups than its declared max_wakeups "
                        f"({self.wake_budget})"
                    )
            # completions due at this instant (up to rounding) happen before the decision, so no
            # job is preempted with a vanishing remainder
            slack = FIT_TOL * max(1.0, abs(t))
            while True:
                t_c, i_c = self._peek_completion()
                if t_c > t + slack:
                    break
                if not self._phase_boundary(i_c, min(t_c, t)):
                    self._complete(i_c, min(t_c, t))
            while ptr < n and self.jobs[ptr].arrival <= t + TIME_TOL:
                self.active[ptr] = self.states[ptr]
                self.new_arrivals.append(ptr)
                ptr += 1
            if L is not None:
                next_round = (math.floor(t / L + TIME_TOL) + 1) * L
            state = self._decide(t)
            self._apply(t, (yield state))
        for i in list(self.running):
            self._sync(i, t)
            self._close(i, t)
            self._credit(i, self.running[i], self._kept)
        return SimResult(
            world=self.world,
            policy=self.policy.name,
            round_seconds=L,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=t,
            truncated=truncated and not all(not math.isnan(c) for c in self.completion),
            events=events,
            decisions=self.decisions,
            extra={
                "horizon": self.horizon,
                "wakeups": self.wakeups,
                "zero_rate_grants": self.zero_rate_grants,
                **({"cpu_dropped_grants": self.cpu_dropped} if self.coloc is not None else {}),
                "work_conserving": bool(getattr(self.policy, "work_conserving", False)),
                **self.policy.run_facts(),
            },
            notes=excluded_type_notes(self.world),
        )

    def _complete(self, i: int, t: float) -> None:
        self._sync(i, t)
        run = self.running[i]
        self._credit(i, run, self._kept)
        self._close(i, t)
        st = self.states[i]
        st.done = st.job.work
        st.placement = None
        st.partner = None
        st.ps_servers = ()
        st.last_stop = t
        self.completion[i] = t
        self.finished_ids.append(st.job.job_id)
        del self.running[i]
        self.spread.discard(i)
        self.active.pop(i, None)
        if self.coloc is not None:
            self._coloc_leave(i, run)
            for j in self._coloc_refresh(t, [run], []):
                self._schedule_completion(j)
        p = run.partner
        if p >= 0 and p in self.running:
            self._sync(p, t)
            self._close(p, t)
            prun = self.running[p]
            prun.partner = -1
            prun.rate = self._rate(p, prun.placement, -1)
            self.states[p].partner = None
            self._schedule_completion(p)

    # -- decisions --------------------------------------------------------------------------

    def _decide(self, t: float) -> SimState:
        states = self.states
        # the jobs completed since the last decision give their GPUs back at the next placement
        self._gone.extend(map(self.index.__getitem__, self.finished_ids))
        if self.lazy:
            self._gaps.append(t - self._last_time if self._times else 0.0)
            self._times.append(t)  # progress is brought up to here when read
            self._last_time = t
        for i, run in () if self.lazy else self.running.items():
            # _sync, inlined: it runs for every running job at every decision
            dt = t - run.synced
            if dt <= 0:
                continue
            st = states[i]
            if run.overhead > 0:
                eff = max(0.0, dt - run.overhead)
                run.overhead = max(0.0, run.overhead - dt)
            else:
                eff = dt
            x = st.done + run.rate * eff
            work = st.job.work
            st.done = x if x < work else work  # min(work, x), spelled out: it is hot
            st.attained_service += run.gpus * dt
            st.executed_seconds += dt
            run.synced = t
        active = tuple(self.active.values())
        arrived = tuple(self.states[i] for i in self.new_arrivals)
        for st in arrived:
            st.first_decision = self.decisions
        state = SimState(
            now=t,
            world=self.world,
            active=active,
            round_index=self.decisions,
            round_seconds=self.L,
            running=tuple(map(states.__getitem__, self.running)),
            arrived=arrived,
            finished=tuple(self.finished_ids),
        )
        self.new_arrivals = []
        self.finished_ids = []
        self.decisions += 1
        return state

    def _apply(self, t: float, alloc: PolicyDecision) -> None:
        """Carry out the decision taken at ``t`` on the state :meth:`_decide` gave."""
        if not isinstance(alloc, PolicyDecision):
            raise PolicyError(f"{self.policy.name}: allocate must return a PolicyDecision")
        placed = self._place(alloc)
        if self._fast:
            self._apply_changes(t, placed)
            self._set_wake(t, alloc)
            return
        if self._kept:
            for i, run in self.running.items():
                self._credit(i, run, self._kept)
        ps_of = self._coloc_place(alloc, placed) if self.coloc is not None else {}
        stopped: list[_Run] = []
        # stop or change what no longer runs as before
        changed: list[int] = []
        for i, run in list(self.running.items()):
            if self._keep_or_stop(i, run, placed.get(i), t, changed):
                continue
            if self.coloc is not None:
                stopped.append(run)
                self._coloc_leave(i, run)
        for i, (placement, partner) in placed.items():
            st = self.states[i]
            st.rounds_received[placement.gpu_type] = (
                st.rounds_received.get(placement.gpu_type, 0) + 1
            )
            st.partner = self.jobs[partner].job_id if partner >= 0 else None
            if i in self.running:
                continue
            overhead = self.restore if (self.ever_ran[i] or self.first_restore) else 0.0
            self._seq += 1
            self.running[i] = _Run(
                placement=placement,
                partner=partner,
                seg_start=t,
                synced=t,
                overhead=overhead,
                rate=self._rate(i, placement, partner),
                version=0,
                gpus=placement.num_gpus,
                ps=ps_of.get(i, ()),
                seq=self._seq,
                credit=self._kept,
            )
            if self.coloc is not None:
                self._coloc_join(i, self.running[i])
            elif not placement.consolidated(self.types[placement.gpu_type].gpus_per_server):
                # (a colocation placement is spread on purpose: never moved by Gavel's rule)
                self.spread.add(i)
            st.placement = placement
            st.ps_servers = self.running[i].ps
            st.last_start = t
            if math.isnan(self.first_start[i]):
                self.first_start[i] = t
            changed.append(i)
        if self.coloc is not None:
            changed.extend(self._coloc_refresh(t, stopped, changed))
        for i in changed:
            self._schedule_completion(i)
        self._set_wake(t, alloc)

    def _keep_or_stop(
        self,
        i: int,
        run: _Run,
        new: tuple[GrantPlacement, int] | None,
        t: float,
        changed: list[int],
    ) -> bool:
        """Keep running job ``i`` where the decision leaves it (``True``), or stop it.

        A kept job whose partner changes gets its new rate and is added to ``changed``; a
        stopped one is closed, counted as preempted and leaves ``running``.
        """
        if new is not None and (new[0] is run.placement or new[0] == run.placement):
            if new[1] != run.partner:
                self._close(i, t)
                run.partner = new[1]
                run.rate = self._rate(i, run.placement, new[1])
                changed.append(i)
            return True
        self._close(i, t)
        del self.running[i]
        self.spread.discard(i)
        st = self.states[i]
        st.preemptions += 1
        st.last_stop = t
        st.placement = None
        st.partner = None
        st.ps_servers = ()
        return False

    def _apply_changes(self, t: float, placed: dict[int, tuple[GrantPlacement, int]]) -> None:
        """:meth:`_apply`'s passes for a ``keep_running`` decision, over its changes only.

        ``placed`` is every running job's holding as the decision leaves it; only the jobs
        released (``stop`` form) and those the placement set (started, moved, paired) can
        differ from their run. They are stopped in the order of the running jobs and started
        in the order of ``placed``, as the full pass does, so the record is the same; every
        other running job is left alone (its round received is counted when its state's
        ``rounds_received`` is read, see :meth:`_credit`).
        """
        running, states = self.running, self.states
        # the candidates, in the order the placement inserted them into ``placed``
        cands = dict.fromkeys(self._changed)
        for i in self._released:
            cands.setdefault(i, None)
        changed: list[int] = []
        touched = sorted((i for i in cands if i in running), key=lambda i: running[i].seq)
        self._kept += 1  # every running job not touched here receives a round (when read)
        kept = self._kept
        for i in touched:
            run = running[i]
            # the rounds of the run up to the last decision; this one's is counted below
            self._credit(i, run, kept - 1)
            run.credit = kept
            self._keep_or_stop(i, run, placed.get(i), t, changed)
        for i in cands:
            held = placed.get(i)
            if held is None:
                continue  # stopped
            placement, partner = held
            st = states[i]
            st.rounds_received[placement.gpu_type] = (
                st.rounds_received.get(placement.gpu_type, 0) + 1
            )
            st.partner = self.jobs[partner].job_id if partner >= 0 else None
            if i in running:
                continue
            overhead = self.restore if (self.ever_ran[i] or self.first_restore) else 0.0
            self._seq += 1
            running[i] = _Run(
                placement=placement,
                partner=partner,
                seg_start=t,
                synced=t,
                overhead=overhead,
                rate=self._rate(i, placement, partner),
                version=0,
                gpus=placement.num_gpus,
                seq=self._seq,
                credit=kept,
            )
            if not placement.consolidated(self.types[placement.gpu_type].gpus_per_server):
                self.spread.add(i)
            st.placement = placement
            st.ps_servers = ()
            st.last_start = t
            if math.isnan(self.first_start[i]):
                self.first_start[i] = t
            changed.append(i)
        for i in changed:
            self._schedule_completion(i)

    def _set_wake(self, t: float, alloc: PolicyDecision) -> None:
        self.wake_at = math.inf
        if alloc.wake_at is not None:
            w = float(alloc.wake_at)
            if math.isnan(w) or not (w > t + TIME_TOL):
                raise PolicyError(f"{self.policy.name}: wake_at {w} is not after now ({t})")
            self.wake_at = w

    def _check_grant(self, g: Grant, seen: set[int] | _Seen) -> int:
        if not isinstance(g, Grant):
            raise PolicyError(f"{self.policy.name}: grants must be Grant, got {type(g).__name__}")
        i = self.index.get(g.job, -1)
        if i < 0 or i not in self.active:
            raise PolicyError(f"{self.policy.name}: granted job {g.job!r} is not active")
        if i in seen:
            raise PolicyError(f"{self.policy.name}: job {g.job!r} granted twice")
        if g.gpu_type not in self.types:
            raise PolicyError(f"{self.policy.name}: unknown GPU type {g.gpu_type!r}")
        if g.num_gpus is not None:
            job = self.jobs[i]
            n = g.num_gpus
            if (
                isinstance(n, bool)
                or not isinstance(n, int)
                or not (job.min_gpus <= n <= job.max_gpus)
            ):
                raise PolicyError(
                    f"{self.policy.name}: job {g.job!r} granted {n!r} GPUs outside its gang "
                    f"sizes {job.min_gpus}..{job.max_gpus}"
                )
        seen.add(i)
        return i

    def _need(self, i: int, g: Grant) -> int:
        return self.jobs[i].num_gpus if g.num_gpus is None else g.num_gpus

    def _place(self, alloc: PolicyDecision) -> dict[int, tuple[GrantPlacement, int]]:
        """Admission by count, then placement (see :mod:`optsched.sim.engine.policy`).

        The free servers are the engine's running picture of the cluster (:class:`_FreeServers`
        per type): under ``keep_running`` the placement starts from it as the running jobs
        leave it, with no pass over them; otherwise from the empty cluster. Either way the
        result is the cluster the returned placement leaves, kept for the next decision.
        """
        free = self._release_gone()
        keep = alloc.keep_running
        self._changed = changed = []
        released: list[int] = []
        seen: set[int] | _Seen
        self._fast = fast = keep and INCREMENTAL_APPLY and self.coloc is None
        if keep:
            # every running job keeps its GPUs and partner; the grants only add jobs
            # (incremental: the kept holdings are the placement, updated in place)
            placed = self._holds if fast else dict(self._holds)
            if alloc.stop is not None:
                # ... except those that stop and those granted again (placed as in the full form)
                released = self._release_listed(alloc, placed, free)
            seen = _Seen(placed) if fast else set(placed)
            free_count = {name: fr.total for name, fr in free.items()}
            self._reconsolidate_kept(placed, free)
        else:
            free = self._free = {name: fr.copy() for name, fr in self._empty.items()}
            placed = {}
            seen = set()
            free_count = {name: t.count for name, t in self.types.items()}
        admitted: list[tuple[int, Grant]] = []
        sharers: list[tuple[int, Grant]] = []
        for g in alloc.grants:
            i = self._check_grant(g, seen)
            if not self._runs_on(i, g):
                # never place a job where it cannot progress: the grant is dropped (counted in
                # the record) and the job waits, whichever policy asked for it
                self.zero_rate_grants += 1
                continue
            if g.share_with is not None:
                sharers.append((i, g))
                continue
            need = self._need(i, g)
            if free_count[g.gpu_type] >= need:
                free_count[g.gpu_type] -= need
                admitted.append((i, g))
            elif alloc.blocking:
                break
        rest = self._place_explicit(admitted, free, placed)
        others = self._keep_current(rest, free, placed)
        others.sort(key=lambda ig: -self._need(*ig))
        for i, g in others:
            fr = free[g.gpu_type]
            fit = self._fit(fr, g.gpu_type, self._need(i, g), g.consolidate)
            if fit is None:
                continue
            if self._rate(i, fit, -1) <= 0:
                # spread where the table's unconsolidated rate is 0: it would not progress
                for s, k in fit.servers:
                    fr.give(s, k)
                self.zero_rate_grants += 1
                continue
            placed[i] = (fit, -1)
            changed.append(i)
        self._place_sharers(sharers, placed)
        self._released = released
        if fast:
            pass  # the holdings are the placement
        elif keep:
            holds = self._holds
            for i in released:
                del holds[i]
            for i in changed:
                holds[i] = placed[i]
        else:
            self._holds = dict(placed)
        if self.lazy:
            # the jobs whose run changes are brought up to now under their old run
            for i in (*released, *changed) if keep else list(self.running):
                run = self.running.get(i)
                if run is not None:
                    self._catch_up(i, run)
        return placed

    def _release_listed(
        self,
        alloc: PolicyDecision,
        placed: dict[int, tuple[GrantPlacement, int]],
        free: dict[str, _FreeServers],
    ) -> list[int]:
        """Free the GPUs of the running jobs that stop or are granted again (``stop`` form)."""
        released: list[int] = []
        stopping = set()
        for job in alloc.stop or ():
            i = self.index.get(job, -1)
            if i not in placed:
                raise PolicyError(f"{self.policy.name}: stopped job {job!r} is not running")
            stopping.add(i)
            released.append(i)
        for g in alloc.grants:
            i = self.index.get(g.job, -1) if isinstance(g, Grant) else -1
            if i in stopping:
                raise PolicyError(f"{self.policy.name}: job {g.job!r} both stopped and granted")
            if i in placed and i not in released:
                released.append(i)
        for i in released:
            placement, partner = placed.pop(i)
            if partner >= 0:
                raise PolicyError(
                    f"{self.policy.name}: {self.jobs[i].job_id!r} shares its GPUs: it cannot "
                    "be stopped or granted again under keep_running"
                )
            fr = free[placement.gpu_type]
            for s, k in placement.servers:
                fr.give(s, k)
        return released

    def _release_gone(self) -> dict[str, _FreeServers]:
        """Give back the GPUs of the jobs completed since the last placement."""
        if self.coloc is not None:
            # the colocation mode drops placed jobs whose tasks miss CPUs after the placement:
            # the picture is rebuilt from the running jobs
            self._gone = []
            self._holds = {i: (r.placement, r.partner) for i, r in self.running.items()}
            self._free = {name: fr.copy() for name, fr in self._empty.items()}
            for i, (placement, partner) in self._holds.items():
                if 0 <= partner < i:
                    continue  # a shared pair holds its GPUs once
                for s, k in placement.servers:
                    self._free[placement.gpu_type].take(s, k)
            return self._free
        holds, free = self._holds, self._free
        for i in self._gone:
            held = holds.pop(i, None)
            if held is None:
                continue
            placement, partner = held
            if partner >= 0 and partner in holds:
                if partner in self.running:
                    holds[partner] = (placement, -1)  # it runs on alone on the pair's GPUs
                    continue
                del holds[partner]
            fr = free[placement.gpu_type]
            for s, k in placement.servers:
                fr.give(s, k)
        self._gone = []
        return free

    def _runs_on(self, i: int, g: Grant) -> bool:
        """Whether job ``i`` progresses on a consolidated gang of the grant's type and size."""
        return self.world.rate(self.jobs[i], g.gpu_type, True, num_gpus=self._need(i, g)) > 0

    def _consolidated_room(self, fr: _FreeServers, gpu_type: str, n: int) -> GrantPlacement | None:
        """A consolidated placement of ``n`` GPUs in ``fr`` (taken from it), or ``None``."""
        return self._fit(fr, gpu_type, n, "require")

    def _reconsolidate_kept(
        self, placed: dict[int, tuple[GrantPlacement, int]], free: dict[str, _FreeServers]
    ) -> None:
        """Move every kept spread gang onto servers with room for it whole (Gavel's rule)."""
        moved: list[int] = []
        for i in sorted(self.spread):
            run = self.running.get(i)
            if run is None or run.partner >= 0 or i not in placed:
                # a shared pair moves only with its partner's grant; a job stopped or granted
                # again (``stop`` form) is placed with the grants
                continue
            p = run.placement
            fr = free[p.gpu_type]
            for s, k in p.servers:
                fr.give(s, k)
            fit = self._consolidated_room(fr, p.gpu_type, p.num_gpus)
            if fit is None or self._rate(i, fit, -1) <= 0:
                if fit is not None:
                    for s, k in fit.servers:
                        fr.give(s, k)
                for s, k in p.servers:
                    fr.take(s, k)
                continue
            placed[i] = (fit, -1)
            moved.append(i)
        if moved:
            # the moved jobs restart in the order of the running jobs (their completion events
            # are scheduled in that order), ahead of the jobs started now
            ids = set(moved)
            for i in [i for i in self.running if i in ids]:
                placed[i] = placed.pop(i)
                self._changed.append(i)

    def _place_explicit(
        self,
        admitted: list[tuple[int, Grant]],
        free: dict[str, _FreeServers],
        placed: dict[int, tuple[GrantPlacement, int]],
    ) -> list[tuple[int, Grant]]:
        """Carry out the explicit placements; the other admitted grants are returned."""
        rest: list[tuple[int, Grant]] = []
        for i, g in admitted:
            if g.placement is None:
                rest.append((i, g))
                continue
            p = g.placement
            if p.gpu_type != g.gpu_type or p.num_gpus != self._need(i, g):
                raise PolicyError(
                    f"{self.policy.name}: placement of {g.job!r} is not {self._need(i, g)} "
                    f"GPUs of {g.gpu_type}"
                )
            fr = free[g.gpu_type]
            cap = fr.cap
            for s, k in p.servers:
                if not (0 <= s < len(cap)) or k < 1 or cap[s] < k:
                    raise PolicyError(
                        f"{self.policy.name}: placement of {g.job!r} asks {k} GPUs of "
                        f"{g.gpu_type} server {s}, which has "
                        f"{cap[s] if 0 <= s < len(cap) else 0} free"
                    )
            for s, k in p.servers:
                fr.take(s, k)
            placed[i] = (p, -1)
            self._changed.append(i)
        return rest

    def _keep_current(
        self,
        rest: list[tuple[int, Grant]],
        free: dict[str, _FreeServers],
        placed: dict[int, tuple[GrantPlacement, int]],
    ) -> list[tuple[int, Grant]]:
        """Jobs keeping their GPUs: consolidated gangs first, then spread ones.

        A spread gang is re-placed consolidated when servers have room for it whole (a
        migration, with the restore cost), and keeps its servers only otherwise. The jobs
        left to place are returned.
        """
        others: list[tuple[int, Grant]] = []
        spread: list[tuple[int, Grant, GrantPlacement]] = []
        for i, g in rest:
            cur = self.states[i].placement
            if cur is None or cur.gpu_type != g.gpu_type or cur.num_gpus != self._need(i, g):
                others.append((i, g))
            elif i in self.spread:
                spread.append((i, g, cur))
            elif self._take_if_free(free[g.gpu_type], cur):
                placed[i] = (cur, -1)
                self._changed.append(i)
            else:
                others.append((i, g))
        for i, g, cur in spread:
            fr = free[g.gpu_type]
            fit = self._consolidated_room(fr, g.gpu_type, cur.num_gpus)
            if fit is not None:
                placed[i] = (fit, -1)
                self._changed.append(i)
            elif self._take_if_free(fr, cur):
                placed[i] = (cur, -1)
                self._changed.append(i)
            else:
                others.append((i, g))
        return others

    @staticmethod
    def _take_if_free(fr: _FreeServers, placement: GrantPlacement) -> bool:
        cap = fr.cap
        if all(cap[s] >= k for s, k in placement.servers):
            for s, k in placement.servers:
                fr.take(s, k)
            return True
        return False

    def _place_sharers(
        self, sharers: list[tuple[int, Grant]], placed: dict[int, tuple[GrantPlacement, int]]
    ) -> None:
        """Space sharing: each sharer runs on exactly its partner's GPUs."""
        for i, g in sharers:
            j = self.index.get(g.share_with or "", -1)
            if j not in placed:
                continue  # the partner did not get GPUs this time: neither does the sharer
            p, partner = placed[j]
            if partner >= 0 or p.gpu_type != g.gpu_type:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} cannot share {g.share_with!r} "
                    "(already shared, or another GPU type)"
                )
            if self._need(i, g) != p.num_gpus:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} and {g.share_with!r} differ in gang size"
                )
            if self._rate(i, p, j) <= 0 or self._rate(j, p, i) <= 0:
                raise PolicyError(
                    f"{self.policy.name}: {g.job!r} and {g.share_with!r} cannot share a GPU "
                    "(pair not measured or out of memory)"
                )
            placed[j] = (p, i)
            placed[i] = (p, j)
            self._changed += (j, i)

    def _fit(self, fr: _FreeServers, gpu_type: str, n: int, mode: str) -> GrantPlacement | None:
        """:func:`_fit_reference` on the bucketed free servers (the same placement)."""
        gps = self.types[gpu_type].gpus_per_server
        k = -(-n // gps)
        if k == 1:
            best = fr.best_fit(n)
            if best >= 0:
                fr.take(best, n)
                return GrantPlacement(gpu_type, ((best, n),))
        else:
            order = fr.most_free(count=k)
            if sum(fr.cap[s] for s in order) >= n:
                return self._take(fr, gpu_type, order, n)
        if mode == "require":
            return None
        if fr.total < n:  # pragma: no cover - admission counted the GPUs
            return None
        return self._take(fr, gpu_type, fr.most_free(gpus=n), n)

    @staticmethod
    def _take(fr: _FreeServers, gpu_type: str, order: list[int], n: int) -> GrantPlacement:
        servers: list[tuple[int, int]] = []
        left = n
        cap = fr.cap
        for s in order:
            if left == 0:
                break
            k = min(cap[s], left)
            if k > 0:
                servers.append((s, k))
                fr.take(s, k)
                left -= k
        return GrantPlacement(gpu_type, tuple(sorted(servers)))

    # -- colocation mode (optsched.sim.world.colocation) ------------------------------------

    def _coloc_servers(self, run: _Run) -> set[int]:
        """The servers holding any task of a run: its workers' and its parameter servers'."""
        return {s for s, _ in run.placement.servers} | set(run.ps)

    def _coloc_join(self, i: int, run: _Run) -> None:
        for h in self._coloc_servers(run):
            self.on_server[h][i] = None

    def _coloc_leave(self, i: int, run: _Run) -> None:
        for h in self._coloc_servers(run):
            self.on_server[h].pop(i, None)

    def _coloc_rate(self, i: int, run: _Run) -> float:
        """The consolidated rate times the speed factor of the jobs on the run's servers."""
        coloc = self.coloc
        assert coloc is not None
        types = coloc.job_types
        neighbours = [
            [types[self.jobs[k].job_id] for k in self.on_server[h] if k != i]
            for h in sorted(self._coloc_servers(run))
        ]
        job = self.jobs[i]
        base = self.world.rate(job, run.placement.gpu_type, True, num_gpus=run.placement.num_gpus)
        return base * coloc.speed_factor(types[job.job_id], neighbours)

    def _coloc_refresh(self, t: float, stopped: list[_Run], fresh: list[int]) -> list[int]:
        """New rates of the jobs sharing a server with the ones stopped or started at ``t``.

        Every started job (``fresh``) gets its rate; every other affected job whose rate
        changes is synced, its record segment closed at ``t`` (each segment keeps one rate),
        and returned, to have its completion rescheduled.
        """
        touched: set[int] = set()
        for run in stopped:
            touched |= self._coloc_servers(run)
        for i in fresh:
            touched |= self._coloc_servers(self.running[i])
        affected: set[int] = set()
        for h in touched:
            affected.update(self.on_server[h])
        started = set(fresh)
        out: list[int] = []
        for j in sorted(affected):
            run = self.running[j]
            rate = self._coloc_rate(j, run)
            if j in started:
                run.rate = rate
            elif rate != run.rate:
                self._sync(j, t)
                self._close(j, t)
                run.rate = rate
                out.append(j)
        return out

    def _coloc_place(
        self, alloc: PolicyDecision, placed: dict[int, tuple[GrantPlacement, int]]
    ) -> dict[int, tuple[int, ...]]:
        """Parameter servers and CPUs of every placed job (colocation mode).

        Jobs keeping their placement keep their PSs and are counted first; a grant's
        ``ps_servers`` are checked, and a job without them gets each PS on the server with
        the most free CPUs (lowest index first). A job whose tasks do not fit the CPUs waits
        (dropped from ``placed``, counted) unless the policy placed it explicitly, which is
        a :class:`PolicyError` naming the job and the server.
        """
        coloc = self.coloc
        assert coloc is not None
        name = self.policy.name
        n_servers = len(self.on_server)
        cap = coloc.cpus_per_server
        used = [0.0] * n_servers
        grants: dict[int, Grant] = {}
        for given in alloc.grants:
            k = self.index.get(given.job, -1)
            if k >= 0:
                grants[k] = given

        def kept(k: int) -> bool:
            run = self.running.get(k)
            return run is not None and (
                placed[k][0] is run.placement or placed[k][0] == run.placement
            )

        order = [k for k in placed if kept(k)] + [k for k in placed if not kept(k)]
        out: dict[int, tuple[int, ...]] = {}
        for i in order:
            placement, partner = placed[i]
            jid = self.jobs[i].job_id
            if partner >= 0:
                raise PolicyError(
                    f"{name}: job {jid!r} shares GPUs; the colocation mode models no space sharing"
                )
            g = grants.get(i)
            n_ps = coloc.ps[jid]
            ps: tuple[int, ...] | None = None
            if g is not None and g.ps_servers:
                ps = tuple(g.ps_servers)
                if len(ps) != n_ps or any(
                    isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n_servers
                    for h in ps
                ):
                    raise PolicyError(
                        f"{name}: ps_servers of {jid!r} must be {n_ps} servers in "
                        f"0..{n_servers - 1}, got {ps!r}"
                    )
                if kept(i) and ps != self.running[i].ps:
                    raise PolicyError(
                        f"{name}: job {jid!r} runs with its PSs on {self.running[i].ps}; "
                        f"a running job's PSs do not move (got {ps!r})"
                    )
            elif kept(i):
                ps = self.running[i].ps
            if ps is None:
                workers = coloc.cpu_use(placement.servers, ())
                free = list(used)
                for s, c in workers.items():
                    free[s] += c
                chosen: list[int] = []
                for _ in range(n_ps):
                    h = min(range(n_servers), key=lambda s: (free[s], s))
                    chosen.append(h)
                    free[h] += coloc.ps_cpus
                ps = tuple(chosen)
            use = coloc.cpu_use(placement.servers, ps)
            over = [s for s, c in sorted(use.items()) if used[s] + c > cap + CAPACITY_TOL]
            if over:
                s = over[0]
                explicit = g is not None and (g.placement is not None or bool(g.ps_servers))
                if explicit:
                    raise PolicyError(
                        f"{name}: job {jid!r} needs {use[s]:g} CPUs on server {s}, which has "
                        f"{max(0.0, cap - used[s]):g} free"
                    )
                del placed[i]  # the job waits: its tasks do not fit the CPUs
                self.cpu_dropped += 1
                continue
            for s, c in use.items():
                used[s] += c
            out[i] = ps
        return out


def _fit_reference(
    cap: list[int], gpus_per_server: int, gpu_type: str, n: int, mode: str
) -> GrantPlacement | None:
    """The placement rule, on plain free lists (``cap`` is taken from): the specification.

    A gang of ``n <= gpus_per_server`` GPUs goes on the server with the fewest free GPUs that
    holds it whole (lowest index on ties); a larger gang on the ``ceil(n / gpus_per_server)``
    servers with the most free GPUs (lowest index on ties) if they hold it. Otherwise, unless
    ``mode`` is ``"require"``, it is spread over the servers with the most free GPUs.
    """
    k = -(-n // gpus_per_server)
    if k == 1:
        best = -1
        for s, f in enumerate(cap):
            if f >= n and (best < 0 or f < cap[best]):
                best = s
        if best >= 0:
            cap[best] -= n
            return GrantPlacement(gpu_type, ((best, n),))
    else:
        order = sorted(range(len(cap)), key=lambda s: (-cap[s], s))[:k]
        if sum(cap[s] for s in order) >= n:
            return _take_reference(cap, gpu_type, order, n)
    if mode == "require":
        return None
    order = sorted(range(len(cap)), key=lambda s: (-cap[s], s))
    if sum(cap) < n:
        return None
    return _take_reference(cap, gpu_type, order, n)


def _take_reference(cap: list[int], gpu_type: str, order: list[int], n: int) -> GrantPlacement:
    servers: list[tuple[int, int]] = []
    left = n
    for s in order:
        if left == 0:
            break
        k = min(cap[s], left)
        if k > 0:
            servers.append((s, k))
            cap[s] -= k
            left -= k
    return GrantPlacement(gpu_type, tuple(sorted(servers)))


def simulate_steps(
    world: World, policy: Policy, *, max_time: float | None = None
) -> Generator[SimState, PolicyDecision, SimResult]:
    """The event-driven engine driven from outside: a generator of decision points.

    Each ``next``/``send`` advances to the next decision point and yields its
    :class:`~optsched.sim.SimState`; ``send`` the :class:`~optsched.sim.PolicyDecision` taken
    there (as :meth:`Policy.allocate <optsched.sim.Policy.allocate>` would return it). The
    generator's return value (``StopIteration.value``) is the :class:`~optsched.sim.SimResult`,
    the same record :func:`simulate` makes when ``policy.allocate`` takes those decisions.

    Parameters
    ----------
    world : World
    policy : Policy
        Names the record and declares its wake-ups (:meth:`Policy.max_wakeups`); its
        :meth:`~optsched.sim.Policy.reset` is called, its ``allocate`` never.
    max_time : float, optional
        Horizon (default :func:`default_horizon`).

    Raises
    ------
    InvalidInstanceError
        ``world`` not a World, ``policy`` not a Policy, a bad ``max_time``, or the event bound
        over ``limits.max_events``.
    """
    if not isinstance(world, World):
        raise InvalidInstanceError("world", f"must be a World, got {type(world).__name__}")
    if not isinstance(policy, Policy):
        raise InvalidInstanceError("policy", f"must be a Policy, got {type(policy).__name__}")
    horizon = default_horizon(world, None) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    policy.reset(world)
    wake_budget = policy.max_wakeups(world)
    bound = event_bound(world, None, horizon, wake_budget)
    limits.check_size("jobs", bound, "max_events", "events")
    return _Engine(world, policy, None, float(horizon), wake_budget, bound).steps()
