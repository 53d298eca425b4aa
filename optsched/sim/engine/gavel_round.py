"""Gavel's mechanism, the rounds: the loop, each round's progress, record segments, completions.

See :mod:`optsched.sim.engine.gavel`, "Rounds", "Pairs" and "Progress".
"""

from __future__ import annotations

import math

from optsched.sim.engine.gavel_book import Key, Open
from optsched.sim.engine.gavel_walk import GavelWalk
from optsched.sim.engine.policy import GrantPlacement
from optsched.sim.measure.record import SimResult
from optsched.tolerances import TIME_TOL

__all__ = ["GavelSim"]


class GavelSim(GavelWalk):
    """One run of Gavel's mechanism: :meth:`run` (module notes)."""

    # -- the loop ---------------------------------------------------------------------------

    def run(self, horizon: float, bound: float) -> SimResult:
        """Run to the end (or ``horizon``), at most ``bound`` loop iterations (module notes)."""
        n = len(self.jobs)
        ptr = 0
        t = self.jobs[0].arrival if n else 0.0
        round_start = 0.0
        round_end: float | None = None
        remaining = n
        running: dict[Key, tuple[str, float]] = {}  # the round's gangs: type, end
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
                end = max(e for _, e in running.values())
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
            self.idle_gpu_rounds += self._idle(counted, placed)
            had = bool(running)
            running = self._start(t, placed)
            if not running and not had and ptr >= n:
                stalled += 1
                if stalled > 2:
                    break  # nothing can ever run again: the jobs left stay unfinished
            else:
                stalled = 0
        for i in list(self.open):
            self._close(i, self.open[i].last_end)
        return self._result(t, events, truncated, horizon)

    def _idle(
        self, counted: dict[str, list[Key]], placed: dict[Key, tuple[str, tuple[int, ...]]]
    ) -> int:
        """The GPUs counted for combinations not placed this round (reserved, idle)."""
        if sum(map(len, counted.values())) == len(placed):  # placed: of the counted, all
            return 0
        return sum(
            self.jobs[key[0]].num_gpus
            for keys in counted.values()
            for key in keys
            if key not in placed
        )

    def _result(self, t: float, events: int, truncated: bool, horizon: float) -> SimResult:
        """The record of the run, ended at ``t`` after ``events`` loop iterations."""
        done_all = all(not math.isnan(c) for c in self.completion)
        return SimResult(
            world=self.world,
            policy=self.policy.name,
            round_seconds=self.L,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=t,
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
                "gavel_completion": [
                    self.reported.get(i, c) for i, c in enumerate(self.completion)
                ],
                "work_conserving": False,
                **self.policy.run_facts(),
            },
        )

    def _end_round(self, running: dict[Key, tuple[str, float]], round_start: float) -> int:
        """The round's gangs end: time received (Gavel's bookkeeping), completions."""
        completed = 0
        rows: list[int] = []
        cols: list[int] = []
        got: list[float] = []
        row, col, worker_time = self.row, self.col, self.worker_time
        for key, (name, end) in running.items():
            # counted from the previous round's end, as Gavel's current_round_start_time
            executed = end - round_start
            r = row.get(key)
            if r is not None:
                rows.append(r)
                cols.append(col[name])
                got.append(executed)
                worker_time[name] += executed  # in Gavel's order (a float sum)
        if rows:
            # each combination ran on one type: one addition per entry, as one by one
            self.job_time[rows, cols] += got
        if self.completed:  # only then can a job of the round be done
            self.completed = 0
            for key in running:
                for i in key:
                    if not math.isnan(self.completion[i]) and i in self.active:
                        self._remove(i)
                        completed += 1
        return completed

    def _stays(self, o: Open, name: str, slots: tuple[int, ...]) -> bool:
        """Whether a job open on ``o`` keeps its run on ``slots`` of type ``name``.

        It does on the same GPUs, or on other GPUs of the same servers, as many on each
        (``o.slots`` then follows them).

        The record, the engine and the validator know a run by its GPU type and its servers
        (the GPUs of a server are interchangeable), so a gang whose worker ids change within its
        servers runs on, as in optsched's engine, and pays no restore.
        """
        if o.slots == slots:
            return True
        if o.placement != self._placement(name, slots):
            return False
        o.slots = slots
        return True

    def _open(self, i: int, t: float, name: str, slots: tuple[int, ...], partner: int) -> float:
        """Open or continue job ``i``'s record segment at ``t``; its restore seconds now."""
        o = self.open.get(i)
        if o is not None and o.gpu_type == name and self._stays(o, name, slots):
            # it ran on these servers in the previous round: the run goes on (no restore); a new
            # record segment when the partner changes or whole steps left a gap before the
            # round's end (whole steps only with restore_s = 0: no restore is hidden there)
            # (any gap, however small: it is no progress, and it adds up over the rounds)
            gap = o.last_end < t
            if gap or o.partner != partner:
                self._close(i, o.last_end)
                self.open[i] = Open(t, name, slots, o.placement, partner, t)
            return 0.0
        if o is not None:
            self._close(i, o.last_end)
            self.states[i].preemptions += 1
        st = self.states[i]
        self.open[i] = Open(t, name, slots, self._placement(name, slots), partner, t)
        st.last_start = t
        if math.isnan(self.first_start[i]):
            self.first_start[i] = t
        charged = self.ever_ran[i] or self.world.restore_on_first_start
        self.ever_ran[i] = True
        return self.world.restore_s if charged else 0.0

    def _start(
        self, t: float, placed: dict[Key, tuple[str, tuple[int, ...]]]
    ) -> dict[Key, tuple[str, float]]:
        """Run the round's gangs: progress, record segments, completions (module notes).

        A single job's gang (the rounds' common case) is run here, :meth:`_open` and
        :meth:`_progress` written out for it: this loop runs for every gang of every round.
        """
        out: dict[Key, tuple[str, float]] = {}
        opened, states = self.open, self.states
        self._stop_absent(placed)
        gangs, rate_memo, segment, prev = self._gang_memo, self._rate_memo, self._segment, self.prev
        L, whole, first_start, ever_ran = self.L, self.whole, self.first_start, self.ever_ran
        restore, restore_first = self.world.restore_s, self.world.restore_on_first_start
        for key, (name, slots) in placed.items():
            placement, consolidated, size = gangs.get((name, slots)) or self._gang(name, slots)
            rates = rate_memo.get((key, name, consolidated)) or self._rates(key, name, consolidated)
            if not (rates[0] > 0.0 and rates[-1] > 0.0):  # every member's (one or two)
                # a spread gang the table gives no rate: it waits
                for i in key:
                    if i in opened:
                        self._close(i, opened[i].last_end)
                continue
            if len(key) != 1:
                out[key] = self._run_pair(key, t, name, slots, placement, size, rates)
                continue
            i = key[0]
            st = states[i]
            o = opened.get(i)
            if (
                o is not None
                and o.gpu_type == name
                and (o.slots == slots or self._stays(o, name, slots))
            ):
                # as _open: the run goes on; a new segment after a gap or a partner change
                over = 0.0
                if o.last_end < t or o.partner != -1:
                    if o.last_end > o.seg_start:  # _close, and the segment opened again
                        segment(i, name, o.placement.servers, o.seg_start, o.last_end, o.partner)
                    o.seg_start = t
                    o.partner = -1
                    del opened[i]  # reopened: last in the open segments' order, as _close
                    opened[i] = o
            else:  # as _open: a new run (the previous one, elsewhere, closed: a preemption)
                if o is not None:
                    del opened[i]
                    if o.last_end > o.seg_start:
                        segment(
                            i, o.gpu_type, o.placement.servers, o.seg_start, o.last_end, o.partner
                        )
                    st.preemptions += 1
                opened[i] = o = Open(t, name, slots, placement, -1, t)
                st.last_start = t
                if math.isnan(first_start[i]):
                    first_start[i] = t
                over = restore if ever_ran[i] or restore_first else 0.0
                ever_ran[i] = True
            # as _progress for one job
            rate = rates[0]
            steps = float(math.floor(rate * (L - over))) if whole else rate * (L - over)
            work = st.job.work
            left = work - st.done
            if left <= steps:
                end = t + over + left / rate
                self._complete(i, end)
            else:
                st.done = min(work, st.done + steps)
                end = t + over + steps / rate if whole else t + L
            o.last_end = end
            st.placement = placement
            st.partner = None
            st.rounds_received[name] = st.rounds_received.get(name, 0) + 1
            st.executed_seconds += end - t
            st.attained_service += size * (end - t)
            out[key] = (name, end)
            prev[key] = (name, slots)
        for key in [k for k in prev if k not in placed]:
            del prev[key]
        return out

    def _stop_absent(self, placed: dict[Key, tuple[str, tuple[int, ...]]]) -> None:
        """Close the runs of the jobs not placed this round (stopped; preempted if not done)."""
        opened, states = self.open, self.states
        members = {i for key in placed for i in key}
        for i in [i for i in opened if i not in members]:
            o = opened[i]
            self._close(i, o.last_end)
            states[i].placement = None
            states[i].last_stop = o.last_end
            if math.isnan(self.completion[i]):
                states[i].preemptions += 1

    def _run_pair(
        self,
        key: Key,
        t: float,
        name: str,
        slots: tuple[int, ...],
        placement: GrantPlacement,
        size: int,
        rates: tuple[float, ...],
    ) -> tuple[str, float]:
        """A pair's gang this round (its type and end): runs, progress, completions."""
        partner = {key[0]: key[-1], key[-1]: key[0]} if len(key) == 2 else {key[0]: -1}
        overhead = {i: self._open(i, t, name, slots, partner[i]) for i in key}
        ends = self._progress(key, t, rates, overhead, name, slots)
        for i in key:
            st = self.states[i]
            st.placement = placement
            st.partner = self.jobs[partner[i]].job_id if partner[i] >= 0 else None
            st.rounds_received[name] = st.rounds_received.get(name, 0) + 1
            st.executed_seconds += ends[i] - t
            st.attained_service += size * (ends[i] - t)
            self.open[i].last_end = ends[i]
        self.prev[key] = (name, slots)
        return name, max(ends.values())

    def _steps(self, rate: float, overhead: float, whole: bool) -> float:
        """Steps a gang makes in a whole round: Gavel's ``int(rate * L)`` with whole steps."""
        span = self.L - overhead
        return float(math.floor(rate * span)) if whole else rate * span

    def _progress(
        self,
        key: Key,
        t: float,
        rates: tuple[float, ...],
        overhead: dict[int, float],
        name: str,
        slots: tuple[int, ...],
    ) -> dict[int, float]:
        """Each member's progress this round and the end of it (completions booked).

        A job not done this round makes :meth:`_steps` steps; one done finishes at its own
        time. A pair runs at its pair rates until one of them is done; the other then goes
        on alone, at its alone rate, for the rest of the round.
        """
        limit = t + self.L
        # a pair's two rows must have one end: pairs progress continuously (module notes)
        whole = self.whole and len(key) == 1
        finish: dict[int, float] = {}
        for i, r in zip(key, rates, strict=True):
            left = self.jobs[i].work - self.states[i].done
            if left <= self._steps(r, overhead[i], whole):
                finish[i] = t + overhead[i] + left / r
        ends: dict[int, float] = {}
        if not finish:
            for i, r in zip(key, rates, strict=True):
                steps = self._steps(r, overhead[i], whole)
                st = self.states[i]
                st.done = min(st.job.work, st.done + steps)
                ends[i] = t + overhead[i] + steps / r if whole else limit
            return ends
        first = min(finish.values())
        a = min(finish, key=lambda i: (finish[i], i))
        self._complete(a, first)
        ends[a] = first
        if len(key) == 1:
            return ends
        # Gavel dates a pair member's completion at the end of the pair's round: the later of
        # the two members' whole steps at the pair rates (Scheduler.simulate, max_finish_time)
        gavel_end = max(
            t
            + overhead[i]
            + min(self.jobs[i].work - self.states[i].done, math.floor(r * self.L)) / r
            for i, r in zip(key, rates, strict=True)
            if i != a
        )
        self.reported[a] = max(first, gavel_end)
        b = key[0] if a == key[1] else key[1]
        if b in finish and finish[b] <= first + TIME_TOL * max(1.0, abs(first)):
            self.reported[b] = self.reported[a]
            self._complete(b, first)
            ends[b] = first
            return ends
        # b at the pair rate until a is done, then alone: the same run, a new record segment
        st = self.states[b]
        rb = rates[key.index(b)]
        st.done = min(st.job.work, st.done + rb * max(0.0, first - t - overhead[b]))
        self._close(b, first)
        placement = self._placement(name, slots)
        self.open[b] = Open(first, name, slots, placement, -1, first)
        gps = self.types[name].gpus_per_server
        alone = self.world.rate(self.jobs[b], name, placement.consolidated(gps))
        o_b = max(0.0, overhead[b] - (first - t))
        tail = first + o_b + (st.job.work - st.done) / alone
        if tail <= limit:
            self._complete(b, tail)
            ends[b] = tail
        else:
            st.done = min(st.job.work, st.done + alone * max(0.0, limit - first - o_b))
            ends[b] = limit
        return ends

    def _complete(self, i: int, when: float) -> None:
        self.states[i].done = self.jobs[i].work
        self.completion[i] = when
        self.completed += 1  # the round's end looks for them (_end_round)
