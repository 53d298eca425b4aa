"""The engine's event loop: decision points, completions, arrivals.

:class:`Engine` puts the parts together (:mod:`~optsched.sim.engine.state` lists them) and runs
the loop of the notes of :mod:`optsched.sim.engine.core`: the next event is the earliest of the
next completion (or batch-phase boundary), the next arrival (event-driven) or round (round-based)
and the policy's wake-up; at a decision point the state is handed to the policy and its decision
carried out.
"""

from __future__ import annotations

import math
from collections.abc import Generator

from optsched.errors import PolicyError
from optsched.sim.engine.apply import Apply
from optsched.sim.engine.bounds import excluded_type_notes
from optsched.sim.engine.policy import JobState, PolicyDecision, SimState
from optsched.sim.measure.record import SimResult
from optsched.tolerances import FIT_TOL, TIME_TOL

__all__ = ["Engine"]


class Engine(Apply):
    """One run of the engine: :meth:`run` with the policy, or :meth:`steps` driven from outside."""

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
                self._complete_due(t)
            else:
                if self.wake_at <= t and t_arr > t + TIME_TOL and (L is None or next_round > t):
                    self._count_wakeup()  # a decision point only the policy asked for
                if t_comp <= t + FIT_TOL * max(1.0, abs(t)):
                    # (the next completion, already looked at, is not due: no second look)
                    self._complete_due(t)
            while ptr < n and self.jobs[ptr].arrival <= t + TIME_TOL:
                self.active[ptr] = self.states[ptr]
                self.new_arrivals.append(ptr)
                self._active_view = None
                ptr += 1
            if L is not None:
                next_round = (math.floor(t / L + TIME_TOL) + 1) * L
            state = self._decide(t)
            self._apply(t, (yield state))
        for i in list(self.running):
            self._sync(i, t)
            self._close(i, t)
            self._credit(i, self.running[i], self._kept)
        return self._result(t, events, truncated)

    def _count_wakeup(self) -> None:
        self.wakeups += 1
        if self.wakeups > self.wake_budget:
            raise PolicyError(
                f"{self.policy.name}: more wake-ups than its declared max_wakeups "
                f"({self.wake_budget})"
            )

    def _complete_due(self, t: float) -> None:
        """The completions (and phase boundaries) due at ``t``, up to rounding.

        They happen before the decision at ``t``, so no job is preempted with a vanishing
        remainder.
        """
        slack = FIT_TOL * max(1.0, abs(t))
        while True:
            t_c, i_c = self._peek_completion()
            if t_c > t + slack:
                break
            if not self._phase_boundary(i_c, min(t_c, t)):
                self._complete(i_c, min(t_c, t))

    def _result(self, t: float, events: int, truncated: bool) -> SimResult:
        """The record of the run, ended at ``t`` after ``events`` loop iterations."""
        return SimResult(
            world=self.world,
            policy=self.policy.name,
            round_seconds=self.L,
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
        del self._running_states[i]
        self.spread.discard(i)
        self.active.pop(i, None)
        self._active_view = self._running_view = None
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

    def _sync_all(self, t: float) -> None:
        """Bring every running job's progress up to ``t`` (eager progress, at every decision)."""
        states = self.states
        for i, run in self.running.items():
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

    def _decide(self, t: float) -> SimState:
        states = self.states
        finished: tuple[str, ...] = ()
        if self.finished_ids:
            # the jobs completed since the last decision give their GPUs back at the next
            # placement
            self._gone.extend(map(self.index.__getitem__, self.finished_ids))
            finished = tuple(self.finished_ids)
            self.finished_ids = []
        if self.lazy:
            gap = t - self._last_time if self._times else 0.0
            self._gaps.append(gap)
            self._times.append(t)  # progress is brought up to here when read
            self._last_time = t
            if self._kernel is not None:
                self._push_time(t, gap)
        else:
            self._sync_all(t)
        active = self._active_view
        if active is None:
            active = self._active_view = tuple(self.active.values())
        running = self._running_view
        if running is None:
            running = self._running_view = tuple(self._running_states.values())
        arrived: tuple[JobState, ...] = ()
        if self.new_arrivals:
            arrived = tuple(map(states.__getitem__, self.new_arrivals))
            for st in arrived:
                st.first_decision = self.decisions
            self.new_arrivals = []
        # (positional: the frozen dataclass's keyword call costs more, at every decision)
        state = SimState(t, self.world, active, self.decisions, self.L, running, arrived, finished)
        self.decisions += 1
        return state
