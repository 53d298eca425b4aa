r"""Gavel's round mechanism, as an alternative to the engine's (``simulate(mechanism="gavel")``).

The default engine (:mod:`optsched.sim.engine`) carries out a fractional allocation every round
by :func:`~optsched.sim.policy.carry_out`: the allocation is re-solved every round, pairs
``(job, type)`` are taken in one global priority order, the priority of a pair is
``X / (rounds on the type / rounds since arrival)``. Gavel's simulator (stanford-futuredata/gavel
at c4fa400, ``scheduler/scheduler.py``) differs in each of these points; this module reproduces
its mechanism so that optsched's policies can be run the way Gavel runs them. Under it:

**Rounds.** A round starts when the previous one has ended, and lasts ``L``
(``time_per_iteration``, 360 s) for every job placed in it, except that a job whose work is done
earlier stops then; when every job of the round stops early the round ends at the last one's
stop. Arrivals and completions take effect at the next round start (an arriving job waits for
it). With nothing running, the clock jumps to the next arrival.

**Allocation resets.** The policy's allocation ``X`` is recomputed only at a round start where an
arrival or a completion happened since the last recomputation *and* at least ``reset_interval``
(Gavel's ``minimum_time_between_allocation_resets``, 1920 s) has passed since the last reset, or
no reset has happened at a positive time yet. When all jobs have arrived and nothing ran in the
previous round, the next round start resets. A job that arrived after the last reset is not in
``X``: it may be counted in a round's walk below but is never given GPUs (the GPUs counted for
it stay idle that round), so it waits for the next reset.

**Priorities** (Gavel's ``_update_priorities``). Since the last reset each job ``m`` has
received ``t_mj`` seconds on type ``j`` (including a prior of ``L / 2`` set at the reset and at
its arrival) and the type has been used ``T_j`` seconds (the sum of the priors of the jobs active
at the reset, plus the seconds of every job run on it since). The priority of ``(m, j)`` is

.. math::

    p_{mj} = \begin{cases} 0 & m \notin X \text{ or } X_{mj} = 0 \text{ or rate}_{mj} = 0 \\
             X_{mj} \, T_j / t_{mj} & \text{otherwise.} \end{cases}

A *deficit* ``d_mj`` breaks ties: at every reset it grows by
``X^{old}_{mj} (\text{now} - \text{last reset}) - (t_{mj} - L/2)``.

**The walk** (Gavel's ``_schedule_jobs_on_workers_helper``). The GPU types are taken in Gavel's
order ``v100, p100, k80`` (other types after, in the cluster's order); for a
heterogeneity-agnostic policy the order is shuffled every round by a generator seeded with
``seed + 5`` (Gavel's ``_worker_type_shuffler``). Each type's jobs are sorted by decreasing
``(p, d, X)`` (ties: arrival order), and the per-type lists are walked one after the other: a job
is counted on the type when the type still has GPUs left for its gang, the job was not counted
already, its rate there is positive and (``gavel-fifo`` only) its priority is positive. Jobs with
zero priority thus take GPUs left over by the others (work conservation among the jobs in ``X``).

**Placement** (Gavel's ``_assign_workers_to_job``). Per type, largest gang first: a job counted
on the type it held in the previous round keeps its GPUs when they are all still free; the others
take the first free GPUs in server order. The rate of a gang is the world's rate for its
placement (consolidated or not).

**Progress** is continuous (Gavel counts whole steps per round, ``int(rate L)``, a difference of
less than one step per round). A run that resumes a job which ran before (or any run, with
``restore_on_first_start``) makes no progress for its first ``restore_s``, as in the engine;
Gavel's simulator charges no restore time, so a world with ``restore_s = 0`` reproduces it.

**Time bookkeeping quirk reproduced.** The seconds a job received in a round are counted from the
*previous* round's end (Gavel's ``current_round_start_time``), which after an idle stretch (or
before the first round, from time 0) over-counts them; only the priorities read them.

Complexity: :math:`O(R (A \log A + K A + G))` for :math:`R` rounds, :math:`A` active jobs,
:math:`K` GPU types and :math:`G` GPUs, plus the policy's work at each reset.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.policy import GrantPlacement, JobState, Policy, SimState
from optsched.sim.record import SimResult, add_interval, empty_intervals
from optsched.tolerances import TIME_TOL

if TYPE_CHECKING:
    from optsched.sim.world import World

__all__ = [
    "DEFAULT_RESET_INTERVAL",
    "DEFAULT_ROUND_SECONDS",
    "GAVEL_TYPE_ORDER",
    "GavelMechanism",
    "gavel_refuses",
    "is_agnostic",
    "simulate_gavel",
]

#: Gavel's ``minimum_time_between_allocation_resets`` (seconds).
DEFAULT_RESET_INTERVAL = 1920.0
#: Gavel's driver default ``--time_per_iteration`` (seconds).
DEFAULT_ROUND_SECONDS = 360.0
#: The order in which Gavel walks its per-type queues.
GAVEL_TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")


@dataclass(frozen=True)
class GavelMechanism:
    """Options of Gavel's mechanism (module notes).

    Attributes
    ----------
    reset_interval : float
        Minimum seconds between two allocation resets (Gavel's
        ``minimum_time_between_allocation_resets``), default 1920.
    seed : int
        Seed of the per-round shuffle of the type order of heterogeneity-agnostic policies
        (the generator is seeded with ``seed + 5``, as Gavel's ``_worker_type_shuffler``).
    shuffle : bool or None
        Shuffle the type order every round; ``None`` (default): for heterogeneity-agnostic
        policies only (:func:`is_agnostic`), as Gavel does.
    """

    reset_interval: float = DEFAULT_RESET_INTERVAL
    seed: int = 0
    shuffle: bool | None = None

    def __post_init__(self) -> None:
        r = self.reset_interval
        if isinstance(r, bool) or not (isinstance(r, int | float) and math.isfinite(r) and r >= 0):
            raise InvalidInstanceError("reset_interval", f"must be a finite number >= 0, got {r!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidInstanceError("seed", f"must be an integer, got {self.seed!r}")
        if self.shuffle is not None and not isinstance(self.shuffle, bool):
            raise InvalidInstanceError("shuffle", f"must be a bool or None, got {self.shuffle!r}")


def is_agnostic(policy: Policy) -> bool:
    """Whether Gavel would shuffle the type order for ``policy`` every round.

    Gavel shuffles unless its policy's name contains ``Perf`` or ``Packing``: here, unless the
    name ends in ``-perf``, contains ``packed`` or is Gavel's Gandiva (a packing policy).
    """
    name = policy.name
    return not (name.endswith("-perf") or "packed" in name or "gandiva" in name)


def gavel_refuses(policy: Policy) -> str | None:
    """Why Gavel's mechanism cannot carry out ``policy`` (``None``: it can).

    The mechanism carries out a fractional allocation ``X``; a policy that decides its grants
    itself (it overrides :meth:`~optsched.sim.Policy.allocate`) has none.
    """
    cls = type(policy)
    if cls.allocate is not Policy.allocate or cls.fractional is Policy.fractional:
        return "Gavel's mechanism carries out a fractional allocation, which this policy has not"
    return None


def _type_order(world: World) -> list[str]:
    names = list(world.cluster.names)
    known = [t for t in GAVEL_TYPE_ORDER if t in names]
    return known + [t for t in names if t not in GAVEL_TYPE_ORDER]


@dataclass(slots=True)
class _Run:
    gpu_type: str
    slots: tuple[int, ...]  # indices into the type's GPU slots (Gavel's worker ids)
    placement: GrantPlacement
    rate: float
    seg_start: float  # start of the current record segment (a run of unchanged placement)
    start: float  # start of this round
    end: float  # end of its progress in this round
    overhead: float  # restore seconds at the start of this round
    finishes: bool  # its work is done at ``end``


class _GavelSim:
    def __init__(self, world: World, policy: Policy, L: float, opts: GavelMechanism) -> None:
        self.world = world
        self.policy = policy
        self.L = L
        self.prior = L / 2.0
        self.opts = opts
        self.jobs = world.jobs
        self.states = [JobState(job=j) for j in world.jobs]
        self.types = {t.name: t for t in world.cluster.gpu_types}
        self.order = _type_order(world)
        self.shuffle = is_agnostic(policy) if opts.shuffle is None else opts.shuffle
        self.rng = random.Random(opts.seed + 5)
        # every GPU of a type as (server, slot), in server order: Gavel's worker ids
        self.slots = {
            name: [(s, g) for s in range(t.num_servers) for g in range(t.server_capacity(s))]
            for name, t in self.types.items()
        }
        self.table = empty_intervals()
        self.completion = [math.nan] * len(world.jobs)
        self.first_start = [math.nan] * len(world.jobs)
        self.ever_ran = [False] * len(world.jobs)
        self.active: dict[int, None] = {}  # insertion (arrival) order, as Gavel's dicts
        self.alloc: dict[int, dict[str, float]] = {}
        self.job_time: dict[int, dict[str, float]] = {}
        self.worker_time = {name: 0.0 for name in self.types}
        self.deficit: dict[str, dict[int, float]] = {name: {} for name in self.types}
        self.last_reset = 0.0
        self.need_update = False
        self.prev: dict[int, _Run] = {}  # the previous round's runs
        self.resets = 0
        self.reset_times: list[float] = []
        self.rounds = 0
        self.idle_gpu_rounds = 0
        self.arrived: list[int] = []
        self.finished: list[str] = []

    # -- bookkeeping ------------------------------------------------------------------------

    def _add(self, i: int) -> None:
        self.active[i] = None
        self.job_time[i] = {name: self.prior for name in self.types}
        for name in self.types:
            self.deficit[name][i] = 0.0
        self.need_update = True
        self.arrived.append(i)

    def _remove(self, i: int) -> None:
        del self.active[i]
        del self.job_time[i]
        for name in self.types:
            self.deficit[name].pop(i, None)
        self.need_update = True
        self.finished.append(self.jobs[i].job_id)

    def _reset(self, t: float) -> None:
        """Gavel's ``_reset_time_run_so_far`` followed by a new allocation."""
        elapsed = t - self.last_reset
        for name in self.types:
            self.worker_time[name] = 0.0
            for i, times in self.job_time.items():
                received = times[name] - self.prior
                row = self.alloc.get(i)
                should = 0.0 if row is None else row.get(name, 0.0) * elapsed
                self.deficit[name][i] = self.deficit[name].get(i, 0.0) + should - received
                times[name] = self.prior
                self.worker_time[name] += self.prior
        self.last_reset = t
        self.alloc = self._allocate(t)
        self.need_update = False
        self.resets += 1
        self.reset_times.append(t)

    def _allocate(self, t: float) -> dict[int, dict[str, float]]:
        active = tuple(self.states[i] for i in self.active)
        state = SimState(
            now=t,
            world=self.world,
            active=active,
            round_index=self.resets,
            round_seconds=self.L,
            running=tuple(self.states[i] for i in self.prev if i in self.active),
            arrived=tuple(self.states[i] for i in self.arrived),
            finished=tuple(self.finished),
        )
        for i in self.arrived:
            self.states[i].first_decision = self.resets
        self.arrived = []
        self.finished = []
        x = self.policy.fractional(state)
        if x is None:
            raise PolicyError(
                f"{self.policy.name}: Gavel's mechanism needs a fractional allocation "
                "(Policy.fractional); this policy decides grants itself"
            )
        index = {self.jobs[i].job_id: i for i in self.active}
        alloc: dict[int, dict[str, float]] = {}
        for jid, row in x.items():
            k = index.get(jid)
            if k is None:
                raise PolicyError(f"{self.policy.name}: allocation names inactive job {jid!r}")
            clean: dict[str, float] = {}
            for name, v in row.items():
                if name not in self.types:
                    raise PolicyError(f"{self.policy.name}: unknown GPU type {name!r}")
                clean[name] = float(v)
            alloc[k] = clean
        return alloc

    def _rate(self, i: int, name: str) -> float:
        return self.world.rate(self.jobs[i], name)

    def priorities(self) -> dict[str, dict[int, float]]:
        """Gavel's ``_update_priorities`` (module notes), for every active job and type."""
        out: dict[str, dict[int, float]] = {}
        for name in self.types:
            total = self.worker_time[name]
            row: dict[int, float] = {}
            for i in self.active:
                a = self.alloc.get(i)
                if a is None:
                    row[i] = 0.0
                    continue
                x = a.get(name, 0.0)
                if x == 0.0 or self._rate(i, name) == 0.0:
                    row[i] = 0.0
                    continue
                fraction = 0.0 if total == 0.0 else self.job_time[i][name] / total
                row[i] = x / fraction if fraction > 0.0 else x * 1e9
            out[name] = row
        return out

    def walk(self, order: list[str]) -> dict[str, list[int]]:
        """The jobs counted on each type this round (module notes, "The walk")."""
        prio = self.priorities()
        left = {name: self.types[name].count for name in order}
        counted: dict[str, list[int]] = {name: [] for name in order}
        fifo = getattr(self.policy, "skips_zero_priority", False)
        queue: list[tuple[int, str, float]] = []
        for name in order:
            entries = [
                (i, prio[name][i], self.deficit[name].get(i, 0.0), self.alloc.get(i, {}))
                for i in self.active
            ]
            # stable sort, decreasing: ties keep arrival order, as Gavel's sorted(reverse=True)
            entries.sort(key=lambda e: (e[1], e[2], e[3].get(name, 0.0)), reverse=True)
            queue.extend((i, name, p) for i, p, _, _ in entries)
        done: set[int] = set()
        for i, name, p in queue:
            if left[name] == 0 or i in done or self._rate(i, name) <= 0:
                continue
            if fifo and p <= 0.0:
                continue
            need = self.jobs[i].num_gpus
            if need > left[name]:
                continue
            left[name] -= need
            done.add(i)
            counted[name].append(i)
        return counted

    def place(self, counted: dict[str, list[int]]) -> dict[int, tuple[str, tuple[int, ...]]]:
        """Gavel's worker assignment: keep previous GPUs when free, else first free in order."""
        placed: dict[int, tuple[str, tuple[int, ...]]] = {}
        for name, ids in counted.items():
            taken: set[int] = set()
            ptr = 0
            slots = self.slots[name]
            ids = sorted(ids, key=lambda i: -self.jobs[i].num_gpus)  # stable: walk order
            for size in sorted({self.jobs[i].num_gpus for i in ids}, reverse=True):
                group = [i for i in ids if self.jobs[i].num_gpus == size]
                for i in group:
                    run = self.prev.get(i)
                    if run is not None and run.gpu_type == name:
                        if not any(s in taken for s in run.slots):
                            placed[i] = (name, run.slots)
                            taken.update(run.slots)
                for i in group:
                    if i in placed or i not in self.alloc:
                        continue  # kept, or arrived after the last reset: its GPUs stay idle
                    got: list[int] = []
                    while len(got) < size and ptr < len(slots):
                        if ptr not in taken:
                            got.append(ptr)
                            taken.add(ptr)
                        ptr += 1
                    if len(got) != size:  # pragma: no cover - the walk counted the GPUs
                        raise RuntimeError("could not place a counted gang")
                    placed[i] = (name, tuple(got))
        return placed

    def _placement(self, name: str, slots: tuple[int, ...]) -> GrantPlacement:
        per: dict[int, int] = {}
        for k in slots:
            s = self.slots[name][k][0]
            per[s] = per.get(s, 0) + 1
        return GrantPlacement(name, tuple(sorted(per.items())))

    # -- the loop ---------------------------------------------------------------------------

    def run(self, horizon: float, bound: float) -> SimResult:
        n = len(self.jobs)
        ptr = 0
        t = self.jobs[0].arrival if n else 0.0
        round_start = 0.0
        round_end: float | None = None
        remaining = n
        running: dict[int, _Run] = {}
        truncated = False
        stalled = 0
        events = 0
        while remaining > 0:
            events += 1
            if events > bound:  # pragma: no cover - the bound is proven in the docs
                raise RuntimeError("simulation exceeded its proven event bound")
            next_arrival = self.jobs[ptr].arrival if ptr < n else None
            if next_arrival is None and not running:
                self.last_reset = 0.0  # Gavel forces a reset when the cluster ran idle
            if running:
                end = max(r.end for r in running.values())
                if round_end is not None:
                    round_start = round_end
                round_end = end
                t = end
            elif next_arrival is not None:
                t = max(t, next_arrival)
            remaining -= self._end_round(running, round_start)
            while ptr < n and self.jobs[ptr].arrival <= t + TIME_TOL:
                self._add(ptr)
                ptr += 1
            if remaining == 0:
                break
            if t > horizon:
                truncated = True
                break
            # the new round
            if self.need_update and (
                t - self.last_reset >= self.opts.reset_interval or self.last_reset == 0.0
            ):
                self._reset(t)
            order = list(self.order)
            if self.shuffle:
                self.rng.shuffle(order)
            counted = self.walk(order)
            placed = self.place(counted)
            self.rounds += 1
            self.idle_gpu_rounds += sum(
                self.jobs[i].num_gpus for ids in counted.values() for i in ids if i not in placed
            )
            new_running = self._start(t, placed, running)
            if not new_running and not running and ptr >= n:
                stalled += 1
                if stalled > 2:
                    break  # nothing can ever run again: the jobs left stay unfinished
            else:
                stalled = 0
            running = new_running
        self._flush(running)
        end_time = t
        done_all = all(not math.isnan(c) for c in self.completion)
        return SimResult(
            world=self.world,
            policy=self.policy.name,
            round_seconds=self.L,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=end_time,
            truncated=truncated and not done_all,
            events=events,
            decisions=self.rounds,
            extra={
                "mechanism": "gavel",
                "horizon": horizon,
                "reset_interval": self.opts.reset_interval,
                "seed": self.opts.seed,
                "shuffle": self.shuffle,
                "resets": self.resets,
                "reset_times": list(self.reset_times),
                "rounds": self.rounds,
                "reserved_idle_gpu_rounds": self.idle_gpu_rounds,
                "work_conserving": False,
                **self.policy.run_facts(),
            },
        )

    def _end_round(self, running: dict[int, _Run], round_start: float) -> int:
        """The round's runs end: progress, time received, completions (their number)."""
        completed = 0
        for i, run in running.items():
            st = self.states[i]
            dur = run.end - run.start
            if run.finishes:
                st.done = st.job.work
            else:
                st.done = min(st.job.work, st.done + run.rate * max(0.0, dur - run.overhead))
            st.executed_seconds += dur
            st.attained_service += run.placement.num_gpus * dur
            # counted from the previous round's end, as Gavel's current_round_start_time
            executed = run.end - round_start
            self.job_time[i][run.gpu_type] += executed
            self.worker_time[run.gpu_type] += executed
            if run.finishes:
                self.completion[i] = run.end
                completed += 1
        for i in running:
            if not math.isnan(self.completion[i]):
                self._remove(i)
        return completed

    def _start(
        self, t: float, placed: dict[int, tuple[str, tuple[int, ...]]], old: dict[int, _Run]
    ) -> dict[int, _Run]:
        """Start the round's runs; close the record segments of the runs that stop."""
        out: dict[int, _Run] = {}
        for i, (name, slots) in placed.items():
            st = self.states[i]
            prev = old.get(i)
            if (
                prev is not None
                and prev.gpu_type == name
                and prev.slots == slots
                and abs(prev.end - t) <= TIME_TOL * max(1.0, abs(t))
            ):
                # the same GPUs from the end of its previous round on: the run goes on
                seg_start, overhead, placement, rate = (
                    prev.seg_start,
                    0.0,
                    prev.placement,
                    prev.rate,
                )
            else:
                placement = self._placement(name, slots)
                gps = self.types[name].gpus_per_server
                rate = self.world.rate(
                    st.job, name, placement.consolidated(gps), num_gpus=placement.num_gpus
                )
                if rate <= 0:
                    continue  # a spread gang the table gives no rate: it waits
                if prev is not None:
                    self._close(i, prev)
                    st.preemptions += 1
                    del old[i]
                seg_start = t
                charged = self.ever_ran[i] or self.world.restore_on_first_start
                overhead = self.world.restore_s if charged else 0.0
                st.last_start = t
                if math.isnan(self.first_start[i]):
                    self.first_start[i] = t
            need = overhead + (st.job.work - st.done) / rate
            finishes = need <= self.L
            end = t + need if finishes else t + self.L
            out[i] = _Run(name, slots, placement, rate, seg_start, t, end, overhead, finishes)
            st.placement = placement
            st.rounds_received[name] = st.rounds_received.get(name, 0) + 1
            self.ever_ran[i] = True
        for i, prev in old.items():
            if i in out:
                continue
            self._close(i, prev)
            st = self.states[i]
            st.placement = None
            st.last_stop = prev.end
            if math.isnan(self.completion[i]):
                st.preemptions += 1
        return out

    def _close(self, i: int, run: _Run) -> None:
        if run.end > run.seg_start:
            add_interval(
                self.table,
                self.jobs[i].job_id,
                run.gpu_type,
                run.placement.servers,
                run.seg_start,
                run.end,
                "",
            )

    def _flush(self, running: dict[int, _Run]) -> None:
        for i, run in running.items():
            self._close(i, run)


def event_bound(world: World, round_seconds: float, horizon: float) -> float:
    """Upper bound on the loop's iterations.

    Every iteration ends a full round (at most ``horizon / L`` of them), a round shortened by a
    completion (at most ``n``), jumps to an arrival (at most ``n``), or is one of at most three
    idle iterations before the run stops; ``n`` more for the arrival batches.
    """
    return math.floor(horizon / round_seconds) + 3.0 * len(world.jobs) + 5.0


def simulate_gavel(
    world: World,
    policy: Policy,
    *,
    round_seconds: float | None = None,
    max_time: float | None = None,
    options: GavelMechanism | None = None,
) -> SimResult:
    """Run ``policy`` on ``world`` under Gavel's mechanism (module notes).

    Parameters
    ----------
    world : World
    policy : Policy
        A policy with :meth:`~optsched.sim.Policy.fractional` (the allocation LPs,
        ``gavel-fifo``, ``gavel-gandiva``).
    round_seconds : float, optional
        Gavel's ``time_per_iteration`` (default 360 s).
    max_time : float, optional
        Horizon (default :func:`optsched.sim.engine.default_horizon` with the round length).
    options : GavelMechanism, optional

    Raises
    ------
    InvalidInstanceError
        ``round_seconds`` not finite or not > ``world.restore_s``; ``max_time`` not finite;
        the event bound over ``limits.max_events``.
    PolicyError
        The policy has no fractional allocation, or names an inactive job or unknown type.
    """
    from optsched.sim.engine import default_horizon

    opts = GavelMechanism() if options is None else options
    L = DEFAULT_ROUND_SECONDS if round_seconds is None else round_seconds
    if isinstance(L, bool) or not (isinstance(L, int | float) and math.isfinite(L) and L > 0):
        raise InvalidInstanceError("round_seconds", f"must be a finite number > 0, got {L!r}")
    if L <= world.restore_s:
        raise InvalidInstanceError(
            "round_seconds",
            f"must exceed restore_s ({world.restore_s:g}) or no job could progress in a "
            f"round, got {L:g}",
        )
    horizon = default_horizon(world, float(L)) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    # idle jumps to arrivals and stalled rounds add to the rounds that fit in the horizon
    horizon = float(horizon)
    why = gavel_refuses(policy)
    if why is not None:
        raise PolicyError(f"{policy.name}: {why}")
    policy.reset(world)
    bound = event_bound(world, float(L), horizon)
    limits.check_size("jobs", bound, "max_events", "events")
    sim = _GavelSim(world, policy, float(L), opts)
    return sim.run(horizon, bound)


def with_restore(world: World, restore_on_first_start: bool | None) -> World:
    """``world`` with ``restore_on_first_start`` overridden (``None``: unchanged)."""
    if restore_on_first_start is None or restore_on_first_start == world.restore_on_first_start:
        return world
    return dataclasses.replace(world, restore_on_first_start=restore_on_first_start)
