r"""Chronus in the simulator: lease-based deadline scheduling, one exact decision per lease.

Rounds are *leases* of :attr:`Chronus.round_seconds` (default :data:`DEFAULT_LEASE_SECONDS`).
At every lease boundary the policy builds the family's
:class:`~optsched.allocation.chronus.LeaseInstance` from the simulation state and plans the next
leases:

* **SLO jobs** are the active jobs with a finite deadline whose deadline is at least one whole
  lease away: deadline lease :math:`d_j = \lfloor (\text{deadline}_j - t) / L \rfloor - 1`
  (lease :math:`d_j` ends no later than the deadline). Jobs admitted at an earlier boundary are
  *guaranteed* (Chronus never revokes an admission). A job whose deadline is less than a lease
  away cannot be promised anything and is treated like a best-effort job.
* **Horizon**: :math:`L = \min(\text{max\_leases}, \max_j d_j + 1)`; a deadline past the
  horizon is brought to its last lease (conservative: the job must then finish sooner than it
  has to; the decision's log counts such jobs).
* **Speeds are lower bounds** on what a granted lease delivers, so that an admitted job keeps
  its promise: :math:`s_{jk} = \lfloor r_{jk} (L_s - \rho) \rfloor` steps, with :math:`r_{jk}`
  the smaller of the job's consolidated and spread rates on type :math:`k` (the engine may
  spread a gang), :math:`L_s` the lease length and :math:`\rho` the world's restore time (paid
  when a job resumes); remaining work is rounded up to whole steps. With these, the previous
  plan shifted by one lease stays feasible, so the guarantees can always be kept by the MILP.
* **Best-effort jobs** (no deadline) enter the instance only with ``model_best_effort=True``;
  the admission count does not depend on them (the MILP's best-effort term is worth less than
  one admission), and the policy grants them GPUs by its own rule below, so by default they
  are left out of the model to keep it small.

The plan comes from the MILP (:func:`optsched.allocation.chronus.solve`, ``mode="milp"``) or from
the
greedy (:class:`~optsched.allocation.chronus.ChronusGreedy`, ``mode="greedy"``). A MILP that stops
short
(time limit) or fails is **never used**: the policy falls back to the greedy and records it in
:attr:`Chronus.log`. When the greedy's EDF packing cannot keep every guarantee (possible after
a MILP plan, since EDF packing is not exact), the guarantees it breaks are dropped and logged,
and the greedy runs again (at most once per guaranteed job).

**Re-planning only when the SLO jobs change** (``replan="change"``, the default). The MILP is
solved at a boundary only when the instance's SLO jobs differ from those of the last solve (an
SLO job arrived, finished, or left the instance because its deadline came within a lease) or
their guarantees differ. Otherwise the last plan, shifted by one lease (its lease 0 was just
carried out), is reused, provided the independent validator accepts it on the new instance
(every guarantee still finishes by its deadline in the new instance's speeds and capacities);
else the MILP is solved. A reused plan keeps every admission but is not re-proven optimal:
between changes, only the progress of the jobs not admitted (they run on GPUs left over) and
the horizon's sliding end could let the MILP admit one more, and such a job is weighed again
at the next change (like Chronus itself, which decides admission when jobs arrive). With short
leases a trace has thousands of boundaries and few changes, and re-solving an unchanged model
at each was the whole cost: the 260-job ElasticFlow ``cluster10`` on 64 GPUs with 60 s leases
has 19,000 boundaries with SLO jobs, 422 of them with a change
(``benchmarks/bench_sim_chronus.py``). ``replan="lease"`` solves at every boundary as before.
The log says method ``milp (reused)``, status ``reused``, for a reused plan.

Every job is planned at its requested gang size (``num_gpus``; elastic resizing is no part of
Chronus: the elastic variant below only adds GPUs after the plan). The lease's GPUs are then
granted: the admitted SLO jobs their lease-0 grants of the
plan, in plan order; then every other active job fills the GPUs left, each on the fastest type with
room: first the SLO jobs not admitted that could still meet their deadline running alone from
now (earliest deadline first: no promise, but a chance, as the ChronusArtifact runs
unaccepted SLO jobs that fit before their deadline), then the rest (best-effort jobs and
hopeless SLO jobs) by **smallest remaining GPU-time first** (remaining time on the fastest
type times the gang: the artifact's "emergence" of best-effort jobs).

**Elastic variant** (``elastic=True``; names ``chronus-elastic``, ``chronus-greedy-elastic``;
an addition of this implementation, not of the paper). Admission, the lease plan and the grants
above are unchanged, all at requested gang sizes; then the growth pass of the elastic order
policies (:mod:`optsched.sim.policies.elastic`) gives the GPUs still idle to the granted elastic
jobs, in Chronus's priority order: the admitted SLO jobs by deadline, then the other grants in
the order they were made (the hopeful SLO jobs by deadline, then the rest by remaining
GPU-time). Job :math:`j`, granted :math:`n_j` GPUs of type :math:`t` with :math:`F_t` still
idle, grows to the useful size :math:`u_j(n_j, \min(n^{max}_j, n_j + F_t))` (the smallest gang
with the rate of the largest), and keeps :math:`n_j` unless its slower placement rate on the
larger gang is at least the one the plan's speeds were taken from,

.. math:: \min(r^{c}_{jt}(m), r^{s}_{jt}(m)) \ge \min(r^{c}_{jt}(n_j), r^{s}_{jt}(n_j)),

(:math:`c`, :math:`s`: consolidated, spread): a grown job then does at least the steps the lease
promised, and Chronus's promises hold. A resize is a restart, paid at a lease boundary like any
resume: the restore time :math:`\rho` the speeds already deduct. Nothing is ever shrunk: the
plan and the fill grant requested gangs into GPUs that are free by construction, so there is
never a plan that does not fit, and a job whose requested gang finds no room waits as in the
rigid policy. A grown job finishes sooner, so the work left at later boundaries (and thus
later admissions) can only gain. On a world of rigid jobs (:math:`n^{min} = n^{max}`) no job
grows and the grants are the rigid policy's.

Why the default lease is 20 minutes: the ChronusArtifact's lease term
(``lease_term_interval``) defaults to 60 units of its simulator clock, which counts minutes (its
hour-of-day is ``lease index x term // 60 % 24``), and its cluster experiments pass 20; a
20-minute lease is that setting, and at the simulator's job sizes (tens of minutes to hours) it
keeps the MILP's horizon to a few dozen leases.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from optsched.allocation.chronus import (
    BestEffortJob,
    ChronusGreedy,
    LeaseInstance,
    LeasePlan,
    SLOJob,
    solve,
    validate,
)
from optsched.allocation.chronus.instance import MAX_STEPS
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.sim.engine.policy import Grant, JobState, Policy, PolicyDecision, SimState
from optsched.sim.policies.elastic import useful_size

if TYPE_CHECKING:
    import pandas as pd

    from optsched.sim.world.jobs import World

__all__ = ["DEFAULT_LEASE_SECONDS", "DEFAULT_MAX_LEASES", "Chronus", "LeaseDecision"]

#: 20 minutes: the ChronusArtifact's cluster-experiment lease term (module notes).
DEFAULT_LEASE_SECONDS = 1200.0
#: Longest planning horizon in leases (a day of 20-minute leases is 72; 24 keeps the MILP small).
DEFAULT_MAX_LEASES = 24
#: Seconds a lease's MILP may take before the greedy is used instead.
DEFAULT_TIME_LIMIT = 10.0


@dataclass(frozen=True)
class LeaseDecision:
    """One lease boundary, as recorded in :attr:`Chronus.log`.

    Attributes
    ----------
    now : float
    slo_jobs, best_effort, leases : int
        Size of the instance.
    method : str
        ``milp``, ``greedy``, or ``greedy (fallback: <why>)``.
    status : str
        The MILP's status (``optimal``, ``feasible``, ``infeasible`` ...) or ``""`` without one.
    admitted : tuple of str
        The SLO jobs admitted (each is guaranteed from then on).
    guaranteed : int
        How many jobs were guaranteed before this boundary.
    clamped : int
        Deadlines past the horizon brought to its last lease.
    dropped : tuple of str
        Guarantees not kept: jobs no longer in the instance, and those the greedy could not
        keep (module notes).
    seconds : float
        Time to plan.
    """

    now: float
    slo_jobs: int
    best_effort: int
    leases: int
    method: str
    status: str
    admitted: tuple[str, ...]
    guaranteed: int
    clamped: int
    dropped: tuple[str, ...]
    seconds: float


class Chronus(Policy):
    """Lease-based deadline scheduling (module notes).

    Parameters
    ----------
    lease_s : float
        Lease length (the policy's ``round_seconds``).
    mode : {"milp", "greedy"}
        Plan with the exact MILP (falling back to the greedy when it stops short) or with the
        greedy only.
    max_leases : int
        Longest horizon planned.
    time_limit : float or None
        Seconds per MILP (model building included).
    model_best_effort : bool
        Put best-effort jobs into the instance (module notes).
    replan : {"change", "lease"}
        Solve the MILP only when the instance's SLO jobs change (reusing the shifted plan
        otherwise), or at every lease boundary (module notes). The greedy mode plans every lease.
    elastic : bool
        Grow elastic jobs into the GPUs the lease leaves idle (module notes); the name gains
        ``-elastic``.
    """

    def __init__(
        self,
        lease_s: float = DEFAULT_LEASE_SECONDS,
        *,
        mode: Literal["milp", "greedy"] = "milp",
        max_leases: int = DEFAULT_MAX_LEASES,
        time_limit: float | None = DEFAULT_TIME_LIMIT,
        model_best_effort: bool = False,
        replan: Literal["change", "lease"] = "change",
        elastic: bool = False,
    ) -> None:
        if not (isinstance(lease_s, int | float) and math.isfinite(lease_s)):
            raise InvalidInstanceError("lease_s", f"must be finite, got {lease_s!r}")
        if lease_s <= 0:
            raise InvalidInstanceError("lease_s", f"must be > 0, got {lease_s!r}")
        if mode not in ("milp", "greedy"):
            raise InvalidInstanceError("mode", f"must be 'milp' or 'greedy', got {mode!r}")
        if not (isinstance(max_leases, int) and 1 <= max_leases <= 1000):
            raise InvalidInstanceError("max_leases", f"must be in [1, 1000], got {max_leases!r}")
        if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
            raise InvalidInstanceError("time_limit", f"must be > 0, got {time_limit!r}")
        if replan not in ("change", "lease"):
            raise InvalidInstanceError("replan", f"must be 'change' or 'lease', got {replan!r}")
        self.replan = replan
        self.name = "chronus" if mode == "milp" else "chronus-greedy"
        self.elastic = bool(elastic)
        if self.elastic:
            self.name += "-elastic"
        self.round_seconds = float(lease_s)
        self.mode = mode
        self.max_leases = max_leases
        self.time_limit = time_limit
        self.model_best_effort = model_best_effort
        self.log: list[LeaseDecision] = []
        self._guaranteed: set[str] = set()
        # the last MILP plan and the SLO jobs (with their guarantees) it was solved for
        self._last: tuple[frozenset[tuple[str, bool]], LeasePlan] | None = None

    def reset(self, world: World) -> None:
        """Forget the previous run (guarantees, log and last plan)."""
        self.log = []
        self._guaranteed = set()
        self._last = None

    # -- the instance -----------------------------------------------------------------------

    def _speeds(self, state: SimState, s: JobState, lease: float) -> tuple[int, ...]:
        world = state.world
        usable = max(0.0, lease - world.restore_s)
        out = []
        for t in world.cluster.gpu_types:
            if t.count < s.job.num_gpus:
                out.append(0)
                continue
            rate = min(state.rate(s, t.name, True), state.rate(s, t.name, False))
            out.append(min(MAX_STEPS, math.floor(rate * usable)) if rate > 0 else 0)
        return tuple(out)

    def instance(self, state: SimState) -> tuple[LeaseInstance, int]:
        """The lease instance of this boundary, and how many deadlines were clamped."""
        lease = state.round_seconds or self.round_seconds
        assert lease is not None
        types = state.world.cluster.names
        counts = tuple(state.world.cluster.type(name).count for name in types)
        slo: list[tuple[JobState, int, tuple[int, ...]]] = []
        be: list[tuple[JobState, tuple[int, ...]]] = []
        for s in state.active:
            speed = self._speeds(state, s, lease)
            if not any(speed) or s.remaining > MAX_STEPS:
                continue  # nothing a lease can promise: filled like a best-effort job
            d = s.job.deadline
            if not math.isnan(d):
                last = math.floor((d - state.now) / lease) - 1
                if last >= 0:
                    slo.append((s, last, speed))
            elif self.model_best_effort:
                be.append((s, speed))
        horizon = min(self.max_leases, max((last for _, last, _ in slo), default=0) + 1)
        clamped = sum(1 for _, last, _ in slo if last >= horizon)

        def steps(s: JobState) -> int:
            return max(1, math.ceil(s.remaining))

        instance = LeaseInstance(
            gpu_types=types,
            capacity=(counts,) * horizon,
            lease_s=lease,
            slo_jobs=tuple(
                SLOJob(
                    job_id=s.job_id,
                    gang=s.job.num_gpus,
                    remaining=steps(s),
                    speed=speed,
                    deadline=min(last, horizon - 1),
                    guaranteed=s.job_id in self._guaranteed,
                )
                for s, last, speed in slo
            ),
            best_effort=tuple(
                BestEffortJob(
                    job_id=s.job_id,
                    gang=s.job.num_gpus,
                    remaining=steps(s),
                    speed=speed,
                    weight=min(s.job.weight, 1e6),
                )
                for s, speed in be
            ),
        )
        return instance, clamped

    # -- the plan ---------------------------------------------------------------------------

    def _greedy(self, instance: LeaseInstance) -> tuple[LeasePlan, tuple[str, ...]]:
        """The greedy plan, dropping the guarantees its EDF packing cannot keep.

        Bounded: each pass drops at least one of the finitely many guarantees.
        """
        dropped: list[str] = []
        for _ in range(len(instance.slo_jobs) + 1):
            plan = ChronusGreedy().run(instance)
            report = validate(instance, plan)
            if report.ok:
                return plan, tuple(dropped)
            broken = {
                str(v.where.get("job"))
                for v in report.violations
                if v.constraint == "finish_by_deadline"
            } & instance.guaranteed
            if not broken:  # cannot happen: the greedy admits only EDF-packable extra jobs
                raise AssertionError(f"greedy plan invalid: {report.violations[0]}")
            dropped.extend(sorted(broken))
            instance = instance.model_copy(
                update={
                    "slo_jobs": tuple(
                        j.model_copy(update={"guaranteed": False}) if j.job_id in broken else j
                        for j in instance.slo_jobs
                    )
                }
            )
        raise AssertionError("unreachable: every pass drops a guarantee")

    @staticmethod
    def _key(instance: LeaseInstance) -> frozenset[tuple[str, bool]]:
        return frozenset((j.job_id, j.guaranteed) for j in instance.slo_jobs)

    def _reused(self, instance: LeaseInstance) -> LeasePlan | None:
        """The last MILP plan shifted by one lease, or None.

        Only if the SLO jobs (and their guarantees) did not change since the last solve and the
        validator accepts the shifted plan on ``instance`` (module notes).
        """
        if self.replan != "change" or self._last is None:
            return None
        key, last = self._last
        if key != self._key(instance):
            return None
        shifted = LeasePlan(
            admitted=last.admitted,
            grants=tuple((j, ell - 1, g) for j, ell, g in last.grants if ell >= 1),
            algorithm=last.algorithm,
        )
        return shifted if validate(instance, shifted).ok else None

    def plan(self, instance: LeaseInstance) -> tuple[LeasePlan, str, str, tuple[str, ...]]:
        """The plan of this boundary: ``(plan, method, MILP status, dropped guarantees)``."""
        if self.mode == "greedy":
            plan, dropped = self._greedy(instance)
            return plan, "greedy", "", dropped
        reused = self._reused(instance)
        if reused is not None:
            # the admitted jobs are now all guaranteed: the key of the next boundary
            self._last = (self._key_after(instance, reused), reused)
            return reused, "milp (reused)", "reused", ()
        self._last = None
        try:
            result = solve(instance, time_limit=self.time_limit)
        except NotOptimalError as err:
            status = getattr(err.result.status, "value", str(err.result.status))
            plan, dropped = self._greedy(instance)
            return plan, f"greedy (fallback: MILP {status})", status, dropped
        assert result.solution is not None
        self._last = (self._key_after(instance, result.solution), result.solution)
        return result.solution, "milp", result.status.value, ()

    @staticmethod
    def _key_after(instance: LeaseInstance, plan: LeasePlan) -> frozenset[tuple[str, bool]]:
        """The key the next boundary has if its SLO jobs are these: the admitted guaranteed."""
        admitted = set(plan.admitted)
        return frozenset((j.job_id, j.job_id in admitted) for j in instance.slo_jobs)

    # -- the lease's grants -----------------------------------------------------------------

    def allocate(self, state: SimState) -> PolicyDecision:
        """Plan the next leases and grant the current one (module notes)."""
        start = time.perf_counter()
        finished = set(state.finished)
        self._guaranteed -= finished
        instance, clamped = self.instance(state)
        before = len(instance.guaranteed)
        # A guaranteed job still active but no longer an SLO job of the instance (its deadline
        # is less than a lease away) lost its promise; with the conservative speeds this does
        # not happen, and the log would show it.
        active = {s.job_id for s in state.active}
        lost = tuple(sorted((self._guaranteed & active) - instance.guaranteed))
        if instance.slo_jobs:
            plan, method, status, dropped = self.plan(instance)
        else:
            plan, method, status, dropped = LeasePlan((), ()), "none", "", ()
        self._guaranteed = set(plan.admitted)
        world = state.world
        free = {t.name: t.count for t in world.cluster.gpu_types}
        by_id = {s.job_id: s for s in state.active}
        grants: list[Grant] = []
        now_grants = plan.in_lease(0)
        for job_id in plan.admitted:
            gpu = now_grants.get(job_id)
            if gpu is not None:
                free[gpu] -= by_id[job_id].job.num_gpus
                grants.append(Grant(job=job_id, gpu_type=gpu))
        planned = {g.job for g in grants}
        others = [s for s in state.active if s.job_id not in planned]

        def gpu_time(s: JobState) -> float:
            best = max(
                (
                    state.rate(s, t.name)
                    for t in world.cluster.gpu_types
                    if t.count >= s.job.num_gpus
                ),
                default=0.0,
            )
            return s.remaining / best * s.job.num_gpus if best > 0 else math.inf

        def hopeful(s: JobState) -> bool:
            """A deadline job not admitted that could still make it alone on its fastest type."""
            d = s.job.deadline
            return not math.isnan(d) and gpu_time(s) / s.job.num_gpus <= d - state.now

        others.sort(
            key=lambda s: (
                (0, s.job.deadline) if hopeful(s) else (1, gpu_time(s)),
                s.job.arrival,
                s.job.index,
            )
        )
        for s in others:
            room = [
                t.name
                for t in world.cluster.gpu_types
                if free[t.name] >= s.job.num_gpus and state.rate(s, t.name) > 0
            ]
            if not room:
                continue
            best = max(
                room, key=lambda name: (state.rate(s, name), -world.cluster.names.index(name))
            )
            free[best] -= s.job.num_gpus
            grants.append(Grant(job=s.job_id, gpu_type=best))
        if self.elastic:
            admitted = set(plan.admitted)
            # Chronus's priority: admitted SLO jobs by deadline, then the fill order
            first = sorted(
                (g for g in grants if g.job in admitted),
                key=lambda g: (
                    by_id[g.job].job.deadline,
                    by_id[g.job].job.arrival,
                    by_id[g.job].job.index,
                ),
            )
            rest = [g for g in grants if g.job not in admitted]
            grants = self._grow(state, [*first, *rest], free)
        self.log.append(
            LeaseDecision(
                now=state.now,
                slo_jobs=len(instance.slo_jobs),
                best_effort=len(instance.best_effort),
                leases=instance.n_leases,
                method=method,
                status=status,
                admitted=plan.admitted,
                guaranteed=before,
                clamped=clamped,
                dropped=(*lost, *dropped),
                seconds=time.perf_counter() - start,
            )
        )
        return PolicyDecision(grants=tuple(grants))

    @staticmethod
    def _grow(state: SimState, grants: list[Grant], free: dict[str, int]) -> list[Grant]:
        r"""The growth pass of the elastic variant (module notes), in the order of ``grants``.

        ``free`` holds the GPUs the rigid grants left per type (updated in place). Complexity:
        :math:`O(\sum_j n^{max}_j)` rate look-ups.
        """
        by_id = {s.job_id: s for s in state.active}
        out: list[Grant] = []
        for g in grants:
            s = by_id[g.job]
            job = s.job
            n = job.num_gpus
            if not job.elastic or free[g.gpu_type] <= 0 or job.max_gpus <= n:
                out.append(g)
                continue
            t = g.gpu_type
            m = useful_size(state, s, t, n, min(job.max_gpus, n + free[t]))

            def floor_rate(k: int, s: JobState = s, t: str = t) -> float:
                return min(state.rate(s, t, True, num_gpus=k), state.rate(s, t, False, num_gpus=k))

            if m == n or floor_rate(m) < floor_rate(n):
                out.append(g)  # no gain, or a spread gang could break the lease's promise
                continue
            free[t] -= m - n
            out.append(Grant(job=g.job, gpu_type=t, num_gpus=m))
        return out

    def log_frame(self) -> pd.DataFrame:
        """The log as a DataFrame, one row per lease boundary."""
        import pandas as pd

        return pd.DataFrame([d.__dict__ for d in self.log])
