"""Progress between decision points: the eager update, the lazy catch-up, segments and events.

Every placed job progresses at its run's rate (module notes of :mod:`optsched.sim.engine.core`).
Eagerly, every running job's progress is brought up to date at every decision point (in
:meth:`~optsched.sim.engine.loop.Engine._decide`) and at its own events (:meth:`Progress._sync`);
under ``lazy_progress`` it is brought up to date when read, by replaying the decision points the
job missed (:mod:`optsched.sim.engine.catchup`: the same arithmetic, bit for bit). A decision
that keeps a run gives it a round, counted when its state is read (:meth:`Progress._credit`).
This part also closes record segments, reads rates and schedules each run's next event (its
completion, or the end of its current batch-size phase).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from optsched.sim.engine import catchup
from optsched.sim.engine.jobstate import (
    ATTAINED,
    DONE,
    EXECUTED,
    ROUNDS,
    LiveState,
    RoundsState,
    Run,
)
from optsched.sim.engine.policy import GrantPlacement, JobState, Policy
from optsched.sim.engine.state import EngineState
from optsched.sim.measure.record import add_interval
from optsched.sim.world.jobs import World

__all__ = ["Progress"]

# the progress slots' raw accessors, bound once: ``DONE.__get__`` builds a method wrapper at
# every use, and the catch-up reads and writes them for every job read since its last update
_get_done, _set_done = DONE.__get__, DONE.__set__
_get_attained, _set_attained = ATTAINED.__get__, ATTAINED.__set__
_get_executed, _set_executed = EXECUTED.__get__, EXECUTED.__set__


class Progress(EngineState):
    """The engine's progress part (module notes)."""

    #: room for this many decision points in the compiled catch-up's arrays at first
    F8_START = 1024

    def __init__(
        self,
        world: World,
        policy: Policy,
        round_seconds: float | None,
        horizon: float,
        wake_budget: int,
        bound: float,
    ) -> None:
        super().__init__(world, policy, round_seconds, horizon, wake_budget, bound)
        for j in world.jobs:
            live = LiveState(job=j) if self.lazy else RoundsState(job=j)
            live._engine = self
            self.states.append(live)
        self._replayed = 0  # catch-up steps replayed in Python so far
        # the compiled catch-up (from the start if an earlier run loaded it), and the decision
        # times and gaps again for it, as float64 arrays of which the first ``_n8`` are set
        self._kernel: Callable[..., catchup.Progress] | None = None
        self._t8: NDArray[np.float64] = np.empty(0)
        self._g8: NDArray[np.float64] = np.empty(0)
        self._n8 = 0
        kernel = catchup.loaded_kernel()
        if kernel is not None:
            self._use_kernel(kernel)

    def _use_kernel(self, kernel: Callable[..., catchup.Progress]) -> None:
        """Catch up with the compiled ``kernel`` from now on (its arrays set from the lists)."""
        n = len(self._times)
        self._t8 = np.empty(max(self.F8_START, 2 * n))
        self._g8 = np.empty(len(self._t8))
        self._t8[:n] = self._times
        self._g8[:n] = self._gaps
        self._n8 = n
        self._kernel = kernel

    def _push_time(self, t: float, gap: float) -> None:
        """Record decision point ``t`` (``gap`` after the last) for the compiled catch-up."""
        n = self._n8
        if n == len(self._t8):  # doubled when full: amortized O(1)
            self._t8 = np.concatenate((self._t8, np.empty(n)))
            self._g8 = np.concatenate((self._g8, np.empty(n)))
        self._t8[n] = t
        self._g8[n] = gap
        self._n8 = n + 1

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

    def _catch_up(self, i: int, run: Run) -> None:
        """Bring running job ``i``'s progress up to the last decision point (lazy progress).

        The decision points it missed are replayed one by one, with the arithmetic of the
        eager update at every decision point, so the values are the eager ones bit for bit
        (:mod:`~optsched.sim.engine.catchup`: in Python, or compiled once the run has replayed
        :data:`~optsched.sim.engine.catchup.KERNEL_STEPS` steps).
        """
        times = self._times
        if not times:
            return
        last = times[-1]
        prev = run.synced
        if last <= prev:
            return
        st = self.states[i]
        if run.overhead <= 0 and (len(times) < 2 or times[-2] <= prev):
            # one step (the last decision point only: a job read at every decision, as one
            # near its queue's threshold is) without restore time: catch_up's arithmetic,
            # inline, cheaper than a call (and than the kernel's dispatch) for one step
            x = last - prev
            done = _get_done(st) + run.rate * x
            work = st.job.work
            _set_done(st, done if done < work else work)
            _set_attained(st, _get_attained(st) + run.gpus * x)
            _set_executed(st, _get_executed(st) + x)
            run.synced = last
            return
        k = bisect.bisect_right(times, prev)
        kernel = self._kernel
        if kernel is not None:
            got = kernel(
                self._t8,
                self._g8,
                self._n8,
                k,
                prev,
                run.overhead,
                _get_done(st),
                _get_attained(st),
                _get_executed(st),
                st.job.work,
                run.rate,
                run.gpus,
            )
        else:
            got = catchup.catch_up(
                times,
                self._gaps,
                k,
                prev,
                run.overhead,
                _get_done(st),
                _get_attained(st),
                _get_executed(st),
                st.job.work,
                run.rate,
                run.gpus,
            )
            self._replayed += len(times) - k
            if self._replayed >= catchup.KERNEL_STEPS:
                self._use_kernel(catchup.catch_up_kernel())
        done, attained, executed, run.synced, run.overhead = got
        _set_done(st, done)
        _set_attained(st, attained)
        _set_executed(st, executed)

    def _credit(self, i: int, run: Run, upto: int) -> None:
        """Count in job ``i``'s ``rounds_received`` the kept decisions of its run up to ``upto``."""
        n = upto - run.credit
        if n > 0:
            rounds: dict[str, int] = ROUNDS.__get__(self.states[i])
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
        if partner < 0 and schedule is None:
            # alone and without batch phases: a function of the job, the type, the gang and
            # whether it is consolidated (the world does not change during a run), kept, since
            # a preemptive policy starts the same job again and again
            n = placement.num_gpus
            key = (i, placement.gpu_type, placement.consolidated(gps), n)
            rate = self._rates.get(key)
            if rate is None:
                rate = self._rates[key] = self.world.rate(job, key[1], key[2], num_gpus=n)
            return rate
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
