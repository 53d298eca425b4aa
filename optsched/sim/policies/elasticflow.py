r"""ElasticFlow: deadline admission by minimum satisfactory share, then elastic scaling.

Source: Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
Learning", ASPLOS 2023 (the paper, **[S]**), and the reading of its published simulator
(``ElasticFlow/scheduler/scheduler.py``, policy ``ef-accessctrl``); implemented here from that
description, in this project's own terms. Where this implementation decides something the paper
leaves open, or departs from the simulator, the item is marked **[R]**.

Notation at a decision point :math:`t_0`: job :math:`j` has remaining work :math:`W_j` (steps),
deadline :math:`D_j` (absolute seconds; NaN for a best-effort job), gang bounds
:math:`[\ell_j, h_j]` (:attr:`SimJob.min_gpus <optsched.sim.SimJob.min_gpus>`, ``max_gpus``; both
the requested size in a rigid world), and rate :math:`r_j(n)` on :math:`n` GPUs of a type (the
world's table; with ElasticFlow's scaling profiles the concave interpolant of
:mod:`optsched.sim.world.elasticflow_profiles`, flat beyond the largest measured count). Each GPU
type
:math:`g` has a *free-capacity profile* :math:`F_g(\tau)`, :math:`\tau \ge t_0`, piecewise
constant, :math:`C_g` (its GPU count) before any reservation.

**1. Plan of a share [S].** A job held to at most :math:`n` GPUs is planned *as late as
possible* before its deadline: walking back from :math:`D_j` over the pieces of :math:`F_g`, it
takes

.. math:: a_n(\tau) = \begin{cases} \min(n, F_g(\tau)) & \text{if } \min(n, F_g(\tau))
          \ge \ell_j \\ 0 & \text{otherwise} \end{cases}

until :math:`\int_s^{D_j} r_j(a_n(\tau))\,d\tau = W_j`; the plan is :math:`a_n` on
:math:`[s, D_j)` (the simulator's backward walk over its future free GPUs, then "allocate from
period start"). It *meets the deadline* when such :math:`s \ge t_0` exists.

**2. Minimum satisfactory share [S].** The smallest :math:`n \in [\ell_j, u_j]` whose plan meets
the deadline, :math:`u_j` the useful size of :math:`\min(h_j, C_g)` (the smallest gang with the
rate of the largest, :func:`~optsched.sim.policies.elastic.useful_size`). Since :math:`r_j` is
non-decreasing and :math:`a_n` pointwise non-decreasing in :math:`n`, the work a plan delivers is
non-decreasing in :math:`n`, so a binary search finds it (:math:`O(\log h_j)` plans). On a
cluster of several GPU types the job takes the first type, fastest first (by
:math:`r_j(u_j)`), on which a satisfactory share exists **[R]** (ElasticFlow's cluster is of one
type).

**3. Admission control [S].** At every decision the admitted jobs are planned anew in deadline
order (ties by arrival), each against the profile its predecessors left, and its plan reserved
(subtracted from :math:`F_g`). A job arriving since the last decision is admitted only if the
admitted jobs *and* it, planned so in deadline order, all meet their deadlines; otherwise it is
**declined** (counted in :meth:`ElasticFlow.run_facts`). Several arrivals are tried one at a time
in deadline order **[R]** (the simulator declines them all together). A job without a deadline is
*best effort* and always admitted without reservation **[S]** (the simulator's
``best_effort`` jobs). An admitted job that no longer meets its deadline even planned first
(after restore costs, or once its deadline is closer than its work) is demoted to best effort
and counted as ``late`` **[R]**: kept as admitted, the simulator would then decline every
later arrival.

**4. Elastic scaling of the GPUs left [S].** Each admitted job holds its plan's share now,
:math:`a_j(t_0)` (0 when its plan starts later). The GPUs left now go one at a time to the job of
largest *marginal normalized throughput*

.. math:: \Delta_j(n) = \frac{r_j(n') - r_j(n)}{(n' - n)\, r_j(1)}, \qquad
          n' = \begin{cases} \ell_j & n = 0 \\ n + 1 & n \ge \ell_j \end{cases}

(the speed-up a GPU adds, in units of the job's one-GPU rate so that models compare **[R]**;
the simulator ranks by the GPU time a step saves), while some :math:`\Delta_j > 0`, :math:`n' \le
h_j` and :math:`n' - n` GPUs are left (ties: deadline, then arrival). With concave :math:`r_j`
the marginals are non-increasing in :math:`n`, so where every step is of one GPU
(:math:`\ell_j = 1`, or the job already holds GPUs) this greedy maximizes
:math:`\sum_j r_j(n_j)/r_j(1)` over the GPUs left (the classic greedy for separable concave
resource allocation); a first step of :math:`\ell_j > 1` GPUs is ranked by its average gain.
Admitted and best-effort jobs compete first; **declined** jobs take only what they leave
**[R]**: ElasticFlow drops a declined job, but the simulator has no job
removal, so it runs as the lowest class on GPUs no other job can use (its deadline counts as met
only if it does finish by it, which the admission test said it could not be promised).

**Slots [S].** Decisions are taken every slot of :attr:`ElasticFlow.round_seconds` seconds
(default :data:`DEFAULT_SLOT_SECONDS`, the simulator's ``scheduling_slot``; an arrival waits for
the next slot), and plans are aligned to the slots: a deadline counts as the last slot boundary
at or before it (:math:`t_0 + \lfloor (D_j - t_0)/L \rfloor L`, conservative **[R]**: the
simulator also aligns deadlines but lets the last piece run to the exact deadline), and a plan
starts at the slot boundary at or before its as-late-as-possible start, so that every piece of
every profile begins on a slot boundary, a job's share now is its plan's share for the whole
slot, and a reservation never exceeds the free GPUs it was planned against. The plan ignores
the world's restore cost **[R]** (the simulator adds a measured scaling overhead). Gang sizes
are any integer in :math:`[\ell_j, h_j]` **[R]** (the simulator uses the measured counts,
powers of two).

**The promise.** With no restore cost and rates that do not depend on the placement (scaling
profiles), an admitted job that is never demoted finishes by its deadline: at every decision it
holds at least its plan's share for the whole slot (plans are constant on slots), so it does at
least the plan's work until the next decision, where a plan that meets the deadline exists
again (else it would be demoted); the last plan ends by the aligned deadline. (Tested on random
worlds; demotions stay possible when earlier-deadline jobs' new plans take GPUs a later one's
old plan used.)

Complexity per decision: :math:`O(N A \log h)` plans of :math:`O(P)` pieces for :math:`A`
admitted jobs and :math:`N` arrivals (at least one), plus :math:`O(G \log A)` for the greedy
over :math:`G` free GPUs.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Grant, JobState, Policy, PolicyDecision, SimState
from optsched.sim.policies.elastic import useful_size
from optsched.tolerances import TIME_TOL, WORK_TOL

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["DEFAULT_SLOT_SECONDS", "ElasticFlow", "FreeProfile", "Plan"]

#: ElasticFlow's scheduling slot (``--scheduling_slot=60`` in its experiment scripts).
DEFAULT_SLOT_SECONDS = 60.0


class FreeProfile:
    """Free GPUs of one type over time.

    ``free[k]`` GPUs are free on ``[times[k], times[k + 1])``, the last piece to infinity.
    """

    def __init__(self, start: float, capacity: int) -> None:
        self.times: list[float] = [start]
        self.free: list[int] = [capacity]

    def copy(self) -> FreeProfile:
        """An independent copy."""
        out = FreeProfile(self.times[0], self.free[0])
        out.times = list(self.times)
        out.free = list(self.free)
        return out

    def split(self, t: float) -> int:
        """Put a breakpoint at ``t`` (``>= times[0]``); the index of the piece starting there."""
        k = bisect.bisect_right(self.times, t) - 1
        if abs(self.times[k] - t) <= TIME_TOL:
            return k
        if k + 1 < len(self.times) and abs(self.times[k + 1] - t) <= TIME_TOL:
            return k + 1
        self.times.insert(k + 1, t)
        self.free.insert(k + 1, self.free[k])
        return k + 1

    def reserve(self, plan: Plan) -> None:
        """Subtract a plan's GPUs."""
        for s, e, a in plan.pieces:
            i = self.split(s)
            j = self.split(e)
            for k in range(i, j):
                self.free[k] -= a


@dataclass(frozen=True)
class Plan:
    """A job's as-late-as-possible plan: ``pieces`` ``(start, end, gpus)``, latest first."""

    gpu_type: str
    share: int
    pieces: tuple[tuple[float, float, int], ...]

    def at(self, t: float) -> int:
        """GPUs planned at ``t``."""
        for s, e, a in self.pieces:
            if s - TIME_TOL <= t < e - TIME_TOL:
                return a
        return 0


class ElasticFlow(Policy):
    """ElasticFlow's admission control and elastic scaling (see the module notes).

    Attributes
    ----------
    declined : list of str
        Ids of the jobs declined in the last run, in the order declined.
    late : list of str
        Admitted jobs demoted to best effort (their deadline could no longer be met).
    """

    name = "elasticflow"

    def __init__(self, *, round_seconds: float = DEFAULT_SLOT_SECONDS) -> None:
        if not (isinstance(round_seconds, int | float) and math.isfinite(round_seconds)) or (
            round_seconds <= 0
        ):
            raise InvalidInstanceError(
                "round_seconds", f"must be a finite number > 0, got {round_seconds!r}"
            )
        self.round_seconds: float = float(round_seconds)
        self.declined: list[str] = []
        self.late: list[str] = []
        self._admitted: dict[str, JobState] = {}
        self._ever_admitted: set[str] = set()
        self._class: dict[str, int] = {}  # 0: admitted or best effort, 1: declined
        self._best_effort = 0

    def reset(self, world: World) -> None:
        """Forget the previous run's admissions."""
        self.declined = []
        self.late = []
        self._admitted = {}
        self._ever_admitted = set()
        self._class = {}
        self._best_effort = 0

    def run_facts(self) -> dict[str, Any]:
        """Admissions of the last run: counts and the declined jobs' ids."""
        return {
            "admitted": len(self._ever_admitted),
            "declined": len(self.declined),
            "late": len(self.late),
            "best_effort": self._best_effort,
            "declined_jobs": list(self.declined),
        }

    # -- planning -------------------------------------------------------------------------------

    def _plan(
        self,
        state: SimState,
        s: JobState,
        gpu_type: str,
        n: int,
        prof: FreeProfile,
        rates: dict[int, float],
    ) -> tuple[tuple[float, float, int], ...] | None:
        """The plan of share ``n`` against ``prof`` (module notes, step 1); None if it misses."""
        work = s.remaining
        lo = s.job.min_gpus
        if work <= 0:
            return ()
        now, slot = state.now, self.round_seconds
        deadline = now + math.floor((s.job.deadline - now) / slot + WORK_TOL) * slot
        k = bisect.bisect_left(prof.times, deadline - TIME_TOL) - 1  # last piece before it
        end = deadline
        done = 0.0
        pieces: list[tuple[float, float, int]] = []
        while k >= 0:
            start = prof.times[k]
            a = min(n, prof.free[k])
            if a >= lo and a > 0:
                r = rates.get(a)
                if r is None:
                    r = rates[a] = state.rate(s, gpu_type, num_gpus=a)
                if r > 0:
                    if done + r * (end - start) >= work * (1.0 - WORK_TOL):
                        # the latest round boundary from which the piece finishes the work
                        latest = end - (work - done) / r
                        begin = now + math.floor((latest - now) / slot + WORK_TOL) * slot
                        pieces.append((max(start, begin), end, a))
                        return tuple(pieces)
                    done += r * (end - start)
                    pieces.append((start, end, a))
            end = start
            k -= 1
        return None

    def _satisfy(
        self, state: SimState, s: JobState, profiles: dict[str, FreeProfile]
    ) -> Plan | None:
        """The minimum satisfactory share and its plan (module notes, step 2), or None."""
        if s.remaining <= 0:
            return Plan(next(iter(profiles)), 0, ())
        if not s.job.deadline > state.now:
            return None
        lo = s.job.min_gpus
        options: list[tuple[float, int, str, int]] = []
        for t in state.world.cluster.gpu_types:
            top = min(s.job.max_gpus, t.count)
            if top < lo:
                continue
            u = useful_size(state, s, t.name, lo, top)
            r = state.rate(s, t.name, num_gpus=u)
            if r > 0:
                options.append((-r, len(options), t.name, u))
        for _, _, gpu_type, u in sorted(options):
            prof = profiles[gpu_type]
            rates: dict[int, float] = {}
            best = self._plan(state, s, gpu_type, u, prof, rates)
            if best is None:
                continue
            a, b = lo, u  # the smallest feasible share is in [a, b]; b is feasible
            while a < b:
                mid = (a + b) // 2
                found = self._plan(state, s, gpu_type, mid, prof, rates)
                if found is None:
                    a = mid + 1
                else:
                    b, best = mid, found
            return Plan(gpu_type, b, best)
        return None

    def _plan_all(
        self, state: SimState, jobs: list[JobState]
    ) -> tuple[dict[str, Plan], list[JobState]]:
        """Plan ``jobs`` in deadline order, reserving each; ``(plans, jobs that miss)``."""
        profiles = {t.name: FreeProfile(state.now, t.count) for t in state.world.cluster.gpu_types}
        plans: dict[str, Plan] = {}
        missed: list[JobState] = []
        for s in sorted(jobs, key=_deadline_key):
            plan = self._satisfy(state, s, profiles)
            if plan is None:
                missed.append(s)
                continue
            profiles[plan.gpu_type].reserve(plan)
            plans[s.job_id] = plan
        return plans, missed

    # -- the decision ---------------------------------------------------------------------------

    def allocate(self, state: SimState) -> PolicyDecision:
        """Admit or decline the arrivals, plan the admitted jobs, scale by marginal gain."""
        for job_id in state.finished:
            self._admitted.pop(job_id, None)
        # 3. replan the admitted jobs; a job that misses even so is demoted (late)
        plans, missed = self._plan_all(state, list(self._admitted.values()))
        for s in missed:
            del self._admitted[s.job_id]
            self.late.append(s.job_id)
        new = [s for s in state.arrived if s.job_id not in self._class]
        for s in sorted(new, key=_deadline_key):
            if math.isnan(s.job.deadline):
                self._class[s.job_id] = 0
                self._best_effort += 1
                continue
            trial, missed = self._plan_all(state, [*self._admitted.values(), s])
            if missed:
                self._class[s.job_id] = 1
                self.declined.append(s.job_id)
                continue
            self._class[s.job_id] = 0
            self._admitted[s.job_id] = s
            self._ever_admitted.add(s.job_id)
            plans = trial
        # 4. shares now, then the GPUs left by marginal normalized throughput
        free = {t.name: t.count for t in state.world.cluster.gpu_types}
        size: dict[str, int] = {}
        where: dict[str, str] = {}
        for job_id, plan in plans.items():
            a = plan.at(state.now)
            where[job_id] = plan.gpu_type
            if a > 0:
                size[job_id] = a
                free[plan.gpu_type] -= a
        by_class: list[list[JobState]] = [[], []]
        for s in state.active:
            by_class[self._class.get(s.job_id, 0)].append(s)
            if s.job_id not in where:
                where[s.job_id] = _home_type(state, s)
        for members in by_class:
            self._scale(state, members, size, where, free)
        grants = tuple(
            Grant(job=s.job_id, gpu_type=where[s.job_id], num_gpus=size[s.job_id])
            for s in state.active
            if size.get(s.job_id, 0) > 0
        )
        return PolicyDecision(grants=grants)

    def _scale(
        self,
        state: SimState,
        members: list[JobState],
        size: dict[str, int],
        where: dict[str, str],
        free: dict[str, int],
    ) -> None:
        """Greedy by marginal normalized throughput (module notes, step 4)."""
        heap: list[tuple[float, tuple[float, float, int], int, JobState]] = []
        one: dict[str, float] = {}

        def push(s: JobState) -> None:
            t = where[s.job_id]
            n = size.get(s.job_id, 0)
            nxt = s.job.min_gpus if n == 0 else n + 1
            if nxt > s.job.max_gpus or nxt - n > free[t]:
                return
            base = one.get(s.job_id)
            if base is None:
                base = one[s.job_id] = state.rate(s, t, num_gpus=1)
            if base <= 0:
                return
            now = state.rate(s, t, num_gpus=n) if n > 0 else 0.0
            gain = (state.rate(s, t, num_gpus=nxt) - now) / ((nxt - n) * base)
            if gain > 0:
                heapq.heappush(heap, (-gain, _deadline_key(s), nxt, s))

        for s in members:
            push(s)
        while heap:
            _, _, nxt, s = heapq.heappop(heap)
            t = where[s.job_id]
            n = size.get(s.job_id, 0)
            if nxt - n > free[t]:
                continue  # no room any more for this step; a job's later steps are no cheaper
            free[t] -= nxt - n
            size[s.job_id] = nxt
            push(s)


def _deadline_key(s: JobState) -> tuple[float, float, int]:
    d = s.job.deadline
    return (math.inf if math.isnan(d) else d, s.job.arrival, s.job.index)


def _home_type(state: SimState, s: JobState) -> str:
    """An unplanned job's type: its current one, else the fastest on its smallest gang."""
    if s.placement is not None:
        return s.placement.gpu_type
    names = state.world.cluster.names
    ok = [
        t.name
        for t in state.world.cluster.gpu_types
        if t.count >= s.job.min_gpus and state.rate(s, t.name, num_gpus=s.job.min_gpus) > 0
    ]
    return max(ok, key=lambda t: (state.rate(s, t, num_gpus=s.job.min_gpus), -names.index(t)))
