r"""The Tiresias simulator's mechanism: its ``dlas-gpu`` as ``run_sim.py`` runs it.

SymbioticLab/Tiresias (``simulator/run_sim.py``, ``dlas_sim_jobs(gputime=True)``; read for its
semantics, none of it copied; the guide page ``docs/guide/elasticflow_crosscheck.rst`` gives the
reading rule by rule) simulates its discretized two-dimensional LAS on a whole-second clock.
``simulate(world, "tiresias-las", mechanism="tiresias")`` carries that out, so that a run can be
compared with the simulator's job for job:

**Clock and durations.** Times are whole seconds. A job's *duration* is its work over its rate
on its requested gang (consolidated), made whole as the simulator's ``int(float(duration))``
(up to a float's rounding: 4935.999999999999 is 4936), at least 1 s; it runs exactly that many
seconds, wherever it is placed. Arrivals are rounded up to the second. The record's world is
the given one with each job's work set to its rate times its whole duration where the two
differ (the validator checks against it).

**Queues** are :class:`~optsched.sim.engine.elasticflow_dlas.DlasQueues` (three, limits
``(3250, 7200)`` GPU-seconds by default): a list per queue in order of entry, an arrival at the
end of queue 0, the walk of the queues in order, each front to back, a job run when its gang fits
the free GPU *count* (a larger job does not block a smaller one), a running job that does not
fit preempted, and after the walk each queue re-ordered running jobs first.

**Events.** The simulator decides at arrivals, completions and its predicted next *queue jump*.
At an event, completions leave first, arrivals join, then every job in order of arrival is
updated: a running job adds the whole seconds since the last event to its executed time and,
if its executed seconds times its gang reach its queue's limit, moves to the end of the next
queue (one queue per event at most). The next jump of a running job of queue :math:`q` with
:math:`e` executed seconds on :math:`n` GPUs is :math:`t + \lfloor (\mathrm{limit}_q - e) / n
\rfloor` (:attr:`~.TiresiasMechanism.jump_division`), *wall* seconds subtracted from a
GPU-second limit, so for :math:`n > 1` the demotion can fall well after the service reaches the
limit (and a jump can find the limit not yet reached, when another is predicted). Between events
nothing happens.

**Promotion** (:attr:`~.TiresiasMechanism.promote_knob`, the ``dlas-gpu-K`` schedules) is off
by default. On: a waiting job adds the seconds since the last event to its wait when it has run
since its last promotion; a waiting job of a queue below the first that has run is promoted to
the end of queue 0 once that wait reaches ``int(K e)``, its executed seconds and its wait then
counted afresh; its due time is a jump.

**Placement** counts GPUs only. The record needs servers: a job keeps its GPUs while it runs, and
one started takes the fullest server with room for its whole gang, else the free GPUs of the
servers with most free first. No restart cost, no slot floor: the world's ``restore_s`` must be
0, and its rates may not depend on consolidation (a spread gang runs as a consolidated one in
the simulator).

Complexity: :math:`O(J)` per event for :math:`J` active jobs (:math:`O(J^2)` with the list
removals), plus :math:`O(S)` per placement on :math:`S` servers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.bounds import default_horizon
from optsched.sim.engine.elasticflow_dlas import DlasQueues
from optsched.sim.engine.tiresias_options import TiresiasMechanism, tiresias_refuses
from optsched.sim.measure.record import SimResult, add_interval, empty_intervals
from optsched.tolerances import FIT_TOL, TIME_TOL, WORK_TOL

if TYPE_CHECKING:
    from optsched.sim.engine.policy import Policy
    from optsched.sim.world.jobs import World

__all__ = ["SimulatorQueues", "TiresiasSim", "simulate_tiresias", "whole_seconds"]


def whole_seconds(seconds: float) -> int:
    """``seconds`` made whole as the simulator's ``int(float(...))``, at least 1.

    Truncated, but a value within a float's rounding below a whole number is that number.
    """
    return max(1, math.floor(seconds * (1.0 + FIT_TOL) + FIT_TOL))


class SimulatorQueues(DlasQueues):
    """:class:`DlasQueues` updated as the simulator updates them (module notes).

    Jobs are updated in order of arrival (the simulator's list of runnable jobs), executed
    seconds are whole, and a waiting job may be promoted.
    """

    def __init__(
        self,
        gangs: Sequence[int],
        total: int,
        opts: TiresiasMechanism,
        arrival: Sequence[float] = (),
    ) -> None:
        super().__init__(gangs, total, opts.limits)
        self.opts = opts
        self.arrival = list(arrival)  # read with queue_order="arrival" alone
        self.order: list[int] = []  # the runnable jobs, in order of arrival
        self.total_run: dict[int, int] = {}  # seconds run in all (never reset)
        self.waited: dict[int, int] = {}  # seconds waited since the last promotion, having run
        self.promotions = [0] * len(gangs)
        self.demotions = 0

    def add(self, new: Sequence[int]) -> None:
        """Arrivals join the end of queue 0 and of the runnable list."""
        super().add(new)
        for i in new:
            self.order.append(i)
            self.total_run[i] = 0
            self.waited[i] = 0

    def remove(self, i: int) -> None:
        """A completed job leaves."""
        super().remove(i)
        self.order.remove(i)

    def update(self, dt: int) -> None:
        """Every job's counts after ``dt`` seconds, in order of arrival: demotion, promotion."""
        knob = self.opts.promote_knob
        for i in self.order:
            if i in self.running:
                self.executed[i] += dt
                self.total_run[i] += dt
                self.demotions += self.demote(i)
                continue
            if self.executed[i] > 0:
                self.waited[i] += dt
            if (
                knob is not None
                and self.qid[i] > 0
                and self.total_run[i] > 0
                and self.executed[i] > 0
                and self.waited[i] >= int(self.executed[i] * knob)
            ):
                self.executed[i] = 0
                self.waited[i] = 0
                self.move(i, 0)
                self.promotions[i] += 1

    def walk(self) -> dict[int, int]:
        """The walk of :class:`DlasQueues` (job -> GPUs).

        With ``queue_order="arrival"`` each queue is first sorted by arrival, then position.
        """
        if self.opts.queue_order == "arrival":
            for q in self.queues:
                q.sort(key=lambda i: (self.arrival[i], i))
        return super().walk()

    def next_jump(self, t: int) -> int | None:
        """The simulator's next predicted queue jump after ``t`` (``None``: none)."""
        best: int | None = None
        whole = math.floor if self.opts.jump_division == "floor" else math.ceil
        knob = self.opts.promote_knob
        for i in self.order:
            q = self.qid[i]
            if i in self.running:
                if q >= len(self.limits):
                    continue
                # never the event itself: the simulator would take it again, forever
                jump = t + max(1, whole((self.limits[q] - self.executed[i]) / self.gangs[i]))
            elif knob is not None and q > 0 and self.total_run[i] > 0 and self.executed[i] > 0:
                diff = int(self.executed[i] * knob - self.waited[i])
                if diff <= 0:
                    continue
                jump = t + diff
            else:
                continue
            best = jump if best is None else min(best, jump)
        return best


class TiresiasSim:
    """One run of the Tiresias simulator's mechanism (module notes)."""

    def __init__(self, world: World, opts: TiresiasMechanism) -> None:
        (gt,) = world.cluster.gpu_types
        self.type = gt.name
        self.caps = [gt.server_capacity(s) for s in range(gt.num_servers)]
        self.free = list(self.caps)
        self.opts = opts
        jobs = world.jobs
        self.rates = [world.rate(j, gt.name, True) for j in jobs]
        self.duration = [whole_seconds(world.work_seconds(j, gt.name)) for j in jobs]
        self.arrival = [math.ceil(j.arrival - TIME_TOL) for j in jobs]
        self.world = _whole_world(world, self.rates, self.duration)
        self.jobs = self.world.jobs
        self.left = list(self.duration)  # whole seconds still to run
        gangs = [j.num_gpus for j in jobs]
        self.queues = SimulatorQueues(gangs, sum(self.caps), opts, [j.arrival for j in jobs])
        self.place: dict[int, list[tuple[int, int]]] = {}
        self.start: dict[int, int] = {}  # the open segment of each running job
        self.table = empty_intervals()
        self.completion = [math.nan] * len(jobs)
        self.first_start = [math.nan] * len(jobs)
        self.events = 0
        self.preemptions = 0

    def _take(self, i: int) -> None:
        """Place job ``i``'s gang (module notes) and open its segment."""
        g = self.jobs[i].num_gpus
        fits = [s for s, f in enumerate(self.free) if f >= g]
        if fits:
            s = min(fits, key=lambda s: (self.free[s], s))
            place = [(s, g)]
        else:
            place = []
            for s in sorted(range(len(self.free)), key=lambda s: (-self.free[s], s)):
                n = min(self.free[s], g - sum(c for _, c in place))
                if n > 0:
                    place.append((s, n))
        for s, n in place:
            self.free[s] -= n
        self.place[i] = place

    def _close(self, i: int, t: float) -> None:
        """Close job ``i``'s segment at ``t`` and free its GPUs."""
        start = self.start.pop(i)
        place = self.place.pop(i)
        for s, n in place:
            self.free[s] += n
        if t > start:
            add_interval(self.table, self.jobs[i].job_id, self.type, place, start, t)

    def decide(self, t: int, dt: int, new: list[int]) -> None:
        """One event at ``t``, ``dt`` seconds after the last: ends, arrivals, update, walk."""
        q = self.queues
        for i in [i for i in self.start if self.left[i] <= dt]:
            self._close(i, t)
            self.left[i] = 0
            self.completion[i] = float(t)
            q.remove(i)
        for i in self.start:
            self.left[i] -= dt
        q.add(new)
        q.update(dt)
        run = q.walk()
        for i in [i for i in self.start if i not in run]:
            self._close(i, t)
            self.preemptions += 1
        for i in sorted(run, key=lambda i: -self.jobs[i].num_gpus):
            if i not in self.start:
                self._take(i)
                self.start[i] = t
                if math.isnan(self.first_start[i]):
                    self.first_start[i] = float(t)
        self.events += 1

    def next_event(self, t: int, arrival: int | None) -> int | None:
        """The next event after ``t``: an arrival, a completion or a jump (``None``: none)."""
        times = [t + self.left[i] for i in self.start]
        if arrival is not None:
            times.append(arrival)
        if not times:
            return None  # jobs left that never fit: the simulator stops here too
        jump = self.queues.next_jump(t)
        return min(times) if jump is None else min(*times, jump)

    def run(self, horizon: float, bound: float) -> SimResult:
        """Run to the end (or ``horizon``), at most ``bound`` events."""
        n = len(self.jobs)
        order = sorted(range(n), key=lambda i: (self.arrival[i], i))
        ptr = 0
        t = self.arrival[order[0]] if n else 0
        last = t
        truncated = False
        while True:
            new = []
            while ptr < n and self.arrival[order[ptr]] <= t:
                new.append(order[ptr])
                ptr += 1
            self.decide(t, t - last, new)
            last = t
            nt = self.next_event(t, self.arrival[order[ptr]] if ptr < n else None)
            if nt is None:
                break
            if nt > horizon or self.events >= bound:
                truncated = True
                break
            t = nt
        end = float(t)
        if truncated and nt is not None and nt > horizon:
            # cut at the horizon: what ran up to it is recorded (no job ends before nt)
            end = max(end, horizon)
        for i in list(self.start):
            self._close(i, end)
        return self._result(end, truncated, horizon)

    def _result(self, end: float, truncated: bool, horizon: float) -> SimResult:
        return SimResult(
            world=self.world,
            policy="tiresias-las",
            round_seconds=None,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=end,
            truncated=truncated and any(math.isnan(c) for c in self.completion),
            events=self.events,
            decisions=self.events,
            extra={
                "mechanism": "tiresias",
                "schedule": "dlas-gpu"
                if self.opts.promote_knob is None
                else f"dlas-gpu-{self.opts.promote_knob:g}",
                "horizon": horizon,
                "limits": list(self.opts.limits),
                "jump_division": self.opts.jump_division,
                "durations": {j.job_id: d for j, d in zip(self.jobs, self.duration, strict=True)},
                "preemptions": self.preemptions,
                "demotions": self.queues.demotions,
                "promotions": sum(self.queues.promotions),
                "work_conserving": False,
            },
        )


def _whole_world(world: World, rates: list[float], duration: list[int]) -> World:
    """``world`` with each job's work its rate times its whole duration, where they differ."""
    jobs = []
    for j, r, d in zip(world.jobs, rates, duration, strict=True):
        w = r * d
        jobs.append(j if abs(w - j.work) <= WORK_TOL * j.work else dataclasses.replace(j, work=w))
    return dataclasses.replace(world, jobs=tuple(jobs))


def _check_world(world: World) -> None:
    """Refuse a world the simulator's mechanism cannot carry out (module notes)."""
    if len(world.cluster.gpu_types) != 1:
        raise InvalidInstanceError(
            "cluster", "the Tiresias simulator's mechanism runs on one GPU type (it counts GPUs)"
        )
    if world.restore_s > 0:
        raise InvalidInstanceError(
            "restore_s",
            "the Tiresias simulator charges no restart cost; build the world with restore_s = 0 "
            f"(got {world.restore_s:g})",
        )
    if world.colocation is not None:
        raise InvalidInstanceError("mechanism", "the Tiresias simulator has no colocation mode")
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        raise InvalidInstanceError(
            "batch_schedule",
            f"the Tiresias simulator has no batch-size phases (jobs {', '.join(dynamic[:5])}); "
            "build the world with batch_modes=False",
        )
    (gt,) = world.cluster.gpu_types
    total = gt.count
    for j in world.jobs:
        if j.num_gpus > total:
            raise InvalidInstanceError(
                "num_gpus", f"job {j.job_id} asks {j.num_gpus} GPUs of a cluster of {total}"
            )
        if world.rate(j, gt.name, True) <= 0:
            raise InvalidInstanceError("throughputs", f"job {j.job_id} has no rate on its gang")
        spread = world.rate(j, gt.name, False)
        if j.num_gpus > 1 and abs(spread - world.rate(j, gt.name, True)) > FIT_TOL * spread:
            raise InvalidInstanceError(
                "throughputs",
                f"job {j.job_id} runs slower spread than consolidated; the Tiresias simulator "
                "counts GPUs only, so a world whose rates depend on placement is refused",
            )


def simulate_tiresias(
    world: World,
    policy: Policy,
    *,
    max_time: float | None = None,
    options: TiresiasMechanism | None = None,
) -> SimResult:
    """Run ``policy`` (``tiresias-las``) on ``world`` as the Tiresias simulator runs it.

    Parameters
    ----------
    world : World
        One GPU type, ``restore_s = 0``, no batch-size phases, no colocation mode, rates that
        do not depend on consolidation.
    policy : Policy
        ``tiresias-las`` (the simulator's ``dlas-gpu``).
    max_time : float, optional
        Horizon (default :func:`~optsched.sim.engine.bounds.default_horizon`, event-driven).
    options : TiresiasMechanism, optional

    Raises
    ------
    InvalidInstanceError
        A world outside the above, ``max_time`` not finite, or the event bound over
        ``limits.max_events``.
    PolicyError
        A policy other than ``tiresias-las``.
    """
    opts = TiresiasMechanism() if options is None else options
    why = tiresias_refuses(policy)
    if why is not None:
        raise PolicyError(f"{policy.name}: {why}")
    _check_world(world)
    horizon = default_horizon(world, None) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    # an arrival, a completion and a jump per queue per job; with promotion, one event a second
    # at most (every event is a whole second after the last)
    bound = (len(opts.limits) + 2.0) * len(world.jobs) + 5.0
    if opts.promote_knob is not None:
        bound += math.floor(float(horizon))
    limits.check_size("jobs", bound, "max_events", "events")
    policy.reset(world)
    result = TiresiasSim(world, opts).run(float(horizon), bound)
    result.policy = policy.name
    return result
