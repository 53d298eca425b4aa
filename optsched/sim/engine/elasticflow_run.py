"""ElasticFlow's mechanism, the run: decision points, plans, buddy placement, overhead, record.

:class:`ElasticFlowSim` carries out one run (see :mod:`optsched.sim.engine.elasticflow` for the
rules); the plans are :mod:`optsched.sim.engine.elasticflow_plan`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from optsched.sim.engine.elasticflow_chronus import LEASE_SECONDS, chronus_leases
from optsched.sim.engine.elasticflow_dlas import DlasQueues
from optsched.sim.engine.elasticflow_gandiva import GandivaSets
from optsched.sim.engine.elasticflow_gangs import GangPlanner
from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism, overhead_seconds
from optsched.sim.engine.elasticflow_plan import Plan
from optsched.sim.engine.elasticflow_themis import ThemisLeases
from optsched.sim.measure.record import SimResult, add_interval, empty_intervals
from optsched.tolerances import FIT_TOL

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["ElasticFlowSim", "buddy_place"]

#: A gang's GPUs: ``(server, first slot, count)`` per server.
Place = tuple[tuple[int, int, int], ...]


def buddy_place(gangs: list[tuple[int, int]], caps: list[int]) -> dict[int, Place]:
    """Place ``(job, gpus)`` gangs on servers of ``caps`` GPUs by buddy allocation.

    Largest gang first (ties in the given order). A gang of at least a server takes whole free
    servers, lowest index first; a smaller one takes an aligned block of its size (offset a
    multiple of it) on the fullest server that has one (a server already split, as a buddy
    allocator splits the fewest blocks), lowest offset. With power-of-two gangs and servers
    this always fits when the gangs' total is at most the GPUs (blocks never fragment). A gang
    that fits no aligned block (other sizes) takes free GPUs on the fewest servers.

    Complexity: :math:`O(J (S + C))` for :math:`J` gangs, :math:`S` servers of :math:`C` GPUs.
    """
    used = [[False] * c for c in caps]
    out: dict[int, Place] = {}
    for job, g in sorted(gangs, key=lambda jg: -jg[1]):
        place = _whole(used, caps, g) if g >= max(caps) else _block(used, caps, g)
        if place is None:
            place = _spread(used, caps, g)
        for s, o, n in place:
            for k in range(o, o + n):
                used[s][k] = True
        out[job] = place
    return out


def _whole(used: list[list[bool]], caps: list[int], g: int) -> Place | None:
    left = g
    place: list[tuple[int, int, int]] = []
    for s, c in enumerate(caps):
        if left <= 0:
            break
        if not any(used[s]) and c <= left:
            place.append((s, 0, c))
            left -= c
    return tuple(place) if left == 0 else None


def _block(used: list[list[bool]], caps: list[int], g: int) -> Place | None:
    best: tuple[int, int, int] | None = None  # (free GPUs, server, offset)
    for s, c in enumerate(caps):
        free = c - sum(used[s])
        if free < g or (best is not None and free >= best[0]):
            continue
        for o in range(0, c - g + 1, g):
            if not any(used[s][o : o + g]):
                best = (free, s, o)
                break
    return None if best is None else ((best[1], best[2], g),)


def _spread(used: list[list[bool]], caps: list[int], g: int) -> Place:
    order = sorted(range(len(caps)), key=lambda s: -(caps[s] - sum(used[s])))
    left = g
    place: list[tuple[int, int, int]] = []
    for s in order:
        if left <= 0:
            break
        slots = [k for k in range(caps[s]) if not used[s][k]]
        take = slots[:left]
        if take:
            place.append((s, take[0], len(take)))
            for k in take:
                used[s][k] = True
            left -= len(take)
    for s, o, n in place:  # the caller marks them again
        for k in range(o, o + n):
            used[s][k] = False
    if left > 0:
        raise AssertionError("gangs larger than the cluster's GPUs")
    return tuple(place)


class ElasticFlowSim:
    """One run of ElasticFlow's mechanism (module notes of :mod:`~.elasticflow`)."""

    def __init__(
        self,
        world: World,
        scheme: str,
        opts: ElasticFlowMechanism,
        counts: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        self.world = world
        self.scheme = scheme
        self.opts = opts
        (gt,) = world.cluster.gpu_types
        self.type = gt.name
        self.caps = [gt.server_capacity(s) for s in range(gt.num_servers)]
        self.N = sum(self.caps)
        self.server_size = max(self.caps)
        jobs = world.jobs
        self.jobs = jobs
        self.planner = GangPlanner(jobs, scheme, opts, self.N, self._rate, counts)
        self.left = [j.work for j in jobs]
        self.active: list[int] = []  # admitted (or, for EDF, arrived) and unfinished
        self.declined: list[int] = []
        self.admission: dict[int, tuple[float, float]] = {}  # job -> (decided at, planned end)
        self.plans: dict[int, Plan] = {}
        self.gang: dict[int, int] = {}
        self.place: dict[int, Place] = {}
        self.overhead: dict[int, float] = {}
        self.open: dict[int, tuple[float, Place]] = {}
        self.cache: set[Place] = set()
        self.decisions = 0
        self.schedule_count = 0  # ElasticFlow's decision counter (its restarts)
        self.overhead_total = 0.0
        self.dlas = DlasQueues([j.num_gpus for j in jobs], self.N) if scheme == "dlas" else None
        self.gandiva = (
            GandivaSets([j.num_gpus for j in jobs], len(self.caps), self.server_size, self.N)
            if scheme == "gandiva"
            else None
        )
        self.themis = (
            ThemisLeases(
                [j.num_gpus for j in jobs],
                [j.arrival for j in jobs],
                self.N,
                lambda i: self._rate(i, jobs[i].num_gpus),
                opts.themis_face,
            )
            if scheme == "themis"
            else None
        )
        self.chronus = (
            chronus_leases(jobs, lambda i: self._rate(i, jobs[i].num_gpus), self.N, opts)
            if scheme == "chronus"
            else None
        )
        self.done_since: set[int] = set()  # completed since the last decision (Gandiva, Themis)
        self.table = empty_intervals()
        self.completion = [math.nan] * len(jobs)
        self.first_start = [math.nan] * len(jobs)

    # -- rates and plans --------------------------------------------------------------------

    def _rate(self, i: int, n: int, consolidated: bool = True) -> float:
        return self.world.rate(self.jobs[i], self.type, consolidated, num_gpus=n)

    def _decide_plans(self, t: float, new: list[int]) -> None:
        if self.gandiva is not None:
            self.active += new
            slot = self.opts.slot_seconds
            rotate = (t + self.opts.clock_origin) % slot == 0
            self.gandiva.decide(self.done_since, new, rotate)
            self.done_since = set()
            return
        if self.dlas is not None:
            self.active += new
            self.dlas.add(new)
            return
        if self.chronus is not None:
            self.active += new
            self.gang = self.chronus.decide(t, self.done_since, new)
            self.done_since = set()
            return
        if self.themis is not None:
            self.active += new
            self.gang = self.themis.decide(t, self.done_since, new, self.left)
            self.done_since = set()
            return
        if self.scheme == "edf":
            self.active += new
            _, self.plans, _ = self.planner.plan_all(self.active, t, self.left)
            return
        if new:
            _, trial, ok = self.planner.plan_all(self.active + new, t, self.left)
            if ok:
                self.active += new
                for i in new:
                    self.admission[i] = (t, trial[i].end)
            else:
                # ElasticFlow declines every job of the event together
                self.declined += new
        prof, self.plans, _ = self.planner.plan_all(self.active, t, self.left)
        self.planner.extra(prof, t, self.active, self.plans, self.left)

    # -- one decision -----------------------------------------------------------------------

    def decide(self, t: float, new: list[int], more: bool = True) -> None:
        """Plans, gangs, placement and overhead at decision time ``t``.

        ``more``: arrivals remain after ``t``. ElasticFlow's Gandiva charges overhead and
        counts its decisions (for the restarts) only then.
        """
        self._decide_plans(t, new)
        if self.gandiva is not None:
            place = self.gandiva.running()
            gangs = [(i, self.jobs[i].num_gpus) for i in place]
        else:
            if self.dlas is not None:
                gangs = list(self.dlas.decide().items())
            elif self.themis is not None or self.chronus is not None:
                gangs = list(self.gang.items())
            else:
                gangs = [(i, self.plans[i].gpus_at(t)) for i in self.planner.order(self.active)]
                gangs = [(i, g) for i, g in gangs if g > 0]
            place = buddy_place(gangs, self.caps)
        counted = more or self.gandiva is None
        # ElasticFlow's EDF and Themis charge none (Themis: every job's overhead entry is preset)
        charge = self.scheme not in ("edf", "themis") and self.opts.overhead and counted
        count = self.schedule_count
        restart = count > 0 and count % self.opts.restart_every == 0
        self.schedule_count += 1 if counted else 0
        overhead: dict[int, float] = {}
        for i, g in gangs:
            if self.chronus is not None:
                overhead[i] = self.chronus.overhead[i] if self.opts.overhead else 0.0
            elif charge and self.scheme == "elasticflow":
                cached = place[i] in self.cache
                self.cache.add(place[i])
                overhead[i] = overhead_seconds(g, self.N, restart=restart, cached=cached)
            elif charge and self.scheme == "gandiva":
                # Gandiva: every decision re-launches every running job
                overhead[i] = overhead_seconds(g, self.N, restart=restart, cached=False)
            elif charge and (restart or i not in self.gang):
                # DLAS-GPU: a job (re)started pays the launch, every running job the restart's
                overhead[i] = overhead_seconds(g, self.N, restart=restart, cached=False)
            else:
                overhead[i] = 0.0
        if charge and restart:
            self.cache.clear()
        self.decisions += 1
        for i in list(self.open):
            if place.get(i) != self.open[i][1] or overhead.get(i, 0.0) > 0:
                self._close(i, t)
        self.gang = dict(gangs)
        self.place = place
        self.overhead = overhead
        for i, _ in gangs:
            if i not in self.open:
                self.open[i] = (t + overhead[i], place[i])

    def _close(self, i: int, end: float) -> None:
        start, place = self.open.pop(i)
        if end > start:
            servers = [(s, n) for s, _, n in place]
            add_interval(self.table, self.jobs[i].job_id, self.type, servers, start, end)
            if math.isnan(self.first_start[i]):
                self.first_start[i] = start

    def _speed(self, i: int) -> float:
        g = self.gang[i]
        servers = len(self.place[i])
        consolidated = servers <= -(-g // self.server_size)
        return self._rate(i, g, consolidated)

    def finish_times(self, t: float) -> dict[int, float]:
        """Each running job's end event if nothing changes after ``t``.

        When its work is done; with ``stop_at_plan_end``, its plan's end on the slot grid plus
        its overhead (ElasticFlow's ``end_time``).
        """
        out = {}
        for i in self.gang:
            r = self._speed(i)
            if r > 0:
                done = t + self.overhead[i] + self.left[i] / r
                out[i] = self._end_event(i) if self._stops(i) else done
        return out

    def _stops(self, i: int) -> bool:
        """Whether job ``i`` stops at its plan's end (``stop_at_plan_end``, ``elasticflow``)."""
        return self.opts.stop_at_plan_end and self.scheme == "elasticflow" and i in self.plans

    def _end_event(self, i: int) -> float:
        """ElasticFlow's end event of job ``i``: its plan's end on the slot grid, plus overhead."""
        return self.plans[i].hold + self.overhead[i]

    def _stop(self, i: int, nt: float) -> float:
        """Until when job ``i`` runs before the decision at ``nt``.

        ``nt`` itself, but for a job that stops at its plan's end (:meth:`_stops`) whose end
        event comes after ``nt``: its plan's end. At its end event it runs until done.
        """
        if not self._stops(i) or nt >= self._end_event(i):
            return nt
        return min(nt, self.plans[i].end)

    def advance(self, t: float, nt: float) -> None:
        """Progress from ``t`` to ``nt``; completions on the way free their jobs."""
        for i in list(self.gang):
            r = self._speed(i)
            start = t + self.overhead[i]
            self.overhead_total += min(self.overhead[i], nt - t) * self.gang[i]
            if start >= nt:
                # the overhead took the whole interval: no segment opens before the next decision
                self.open.pop(i, None)
                continue
            if r <= 0:
                continue
            done = start + self.left[i] / r
            if self.themis is not None and self.left[i] - r * (nt - start) <= FIT_TOL * (
                self.jobs[i].work
            ):
                # a float's worth of work left at the slot's end is done by it (else the job
                # would wait as a job with nothing left, and its completion move past its work)
                done = min(done, nt)
            if self.dlas is not None:
                self.dlas.account(i, min(done, nt) - start)
            stop = self._stop(i, nt)
            if done <= stop:
                if self.dlas is not None:
                    self.dlas.remove(i)
                self.done_since.add(i)
                self.left[i] = 0.0
                self.completion[i] = done
                self._close(i, done)
                self.active.remove(i)
                del self.gang[i]
            elif stop < nt:
                # stopped at its plan's end: the work its overhead displaced waits, its GPUs
                # held and idle, for the next decision (no segment if the overhead took it all)
                self.left[i] -= r * max(stop - start, 0.0)
                self._close(i, stop)
            else:
                self.left[i] -= r * (nt - start)

    # -- the run ------------------------------------------------------------------------------

    def run(self, horizon: float, bound: float) -> SimResult:
        """Run to the end (or ``horizon``), at most ``bound`` decisions."""
        order = sorted(range(len(self.jobs)), key=lambda i: (self.jobs[i].arrival, i))
        ptr = 0
        n = len(order)
        t = self.jobs[order[0]].arrival if n else 0.0
        if self.chronus is not None:
            t = self.chronus.next_boundary(t)  # its clock: the lease grid of the trace's time
        truncated = False
        while True:
            new = []
            while ptr < n and self.jobs[order[ptr]].arrival <= t:
                new.append(order[ptr])
                ptr += 1
            self.decide(t, new, ptr < n)
            nt = self._next_time(t, [self.jobs[i].arrival for i in order[ptr:]])
            if nt is None:
                break
            if nt > horizon or self.decisions >= bound:
                truncated = True
                if horizon > t:
                    self.advance(t, horizon)
                    t = horizon
                break
            self.advance(t, nt)
            t = nt
        for i in list(self.open):
            self._close(i, t)
        return self._result(t, truncated, horizon)

    def _next_time(self, t: float, arrivals: list[float]) -> float | None:
        """The next decision after ``t`` (``None``: the run is over; module notes)."""
        slot = self.opts.slot_seconds
        if self.chronus is not None:
            # every lease boundary while a job is active, else the first at the next arrival
            if self.active:
                return t + LEASE_SECONDS
            return self.chronus.next_boundary(arrivals[0]) if arrivals else None
        if self.themis is not None:
            # a lease every slot; a slot with nothing runnable does nothing: skip to the slot
            # of the next arrival
            if self.active:
                return t + slot
            return t + slot * math.ceil((arrivals[0] - t) / slot) if arrivals else None
        if self.gandiva is not None:
            # Gandiva decides at arrivals only, then every slot until every job is done
            if not arrivals:
                return t + slot if self.active else None
            e = arrivals[0]
            return t + slot if (e - t <= slot and len(set(arrivals)) > 1) else e
        events = sorted(self.finish_times(t).values())
        if arrivals:
            events.append(arrivals[0])
        if self.scheme == "elasticflow":
            change = min((p.next_change(t) for p in self.plans.values()), default=math.inf)
            if self.opts.stop_at_plan_end and change >= self._first_end(arrivals):
                # ElasticFlow adds the first planned change as an event only when it comes
                # before every pending one; a change at a plan's end is then lost, the end
                # event moving on by the overhead
                change = math.inf
            if change < math.inf:
                events.append(change)
        if self.dlas is not None and self.dlas.next_demotion(t) < math.inf:
            events.append(self.dlas.next_demotion(t))
        if not events:
            if not self.active:
                return None
            events.append(t + slot)  # nothing runs yet: look again next slot
        e = min(events)
        if self.dlas is not None:
            # DLAS-GPU's end and demotion events are never earlier than a slot on
            return max(e, t + slot)
        return t + slot if (e - t <= slot and len(events) > 1) else e

    def _first_end(self, arrivals: list[float]) -> float:
        """The next arrival or the first running job's plan end on the slot grid.

        ElasticFlow's first pending event when it considers a scale event: its end events are
        still at the plans' ends then, the overheads not yet added.
        """
        ends = [self.plans[i].hold for i in self.gang if i in self.plans]
        return min([*arrivals[:1], *ends], default=math.inf)

    def _themis_extra(self) -> dict[str, object]:
        """Themis's slot ends: ElasticFlow's end times, which its deadline count compares."""
        if self.themis is None:
            return {}
        ends = self.themis.lease_end
        return {
            "lease_end": {self.jobs[i].job_id: e for i, e in sorted(ends.items())},
            "met_by_lease_end": sorted(
                self.jobs[i].job_id for i, e in ends.items() if e <= self.jobs[i].deadline
            ),
        }

    def _result(self, t: float, truncated: bool, horizon: float) -> SimResult:
        declined = [self.jobs[i].job_id for i in self.declined]
        ids = [j.job_id for j in self.jobs]
        return SimResult(
            world=self.world,
            policy=self.scheme,
            round_seconds=self.opts.slot_seconds,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=t,
            truncated=truncated and any(math.isnan(c) for c in self.completion),
            events=self.decisions,
            decisions=self.decisions,
            extra={
                "mechanism": "elasticflow",
                "scheme": self.scheme,
                "horizon": horizon,
                "slot_seconds": self.opts.slot_seconds,
                "overhead": self.opts.overhead,
                "overhead_gpu_seconds": self.overhead_total,
                "admitted": len(self.admission),
                "declined": len(declined),
                "late": sum(
                    1 for i in self.admission if not (self.completion[i] <= self.jobs[i].deadline)
                ),
                "declined_jobs": declined,
                "admission": {self.jobs[i].job_id: v for i, v in self.admission.items()},
                "work_conserving": False,
                **self._themis_extra(),
                **({} if self.chronus is None else self.chronus.extra(ids, self.completion)),
            },
        )
