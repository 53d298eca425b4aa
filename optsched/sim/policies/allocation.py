r"""Gavel-class allocation policies in the simulator: an exact LP every round, carried out.

Every round of :attr:`round_seconds` the policy builds the round's
:class:`~optsched.allocation.gavel.AllocationInstance` from the simulation state (each active job's
rate on each GPU type for its whole gang, its gang size, weight, steps left and history) and
solves the policy's LP exactly (:func:`optsched.allocation.gavel.solve`, sparse matrices straight
into
HiGHS, warm-started from the previous round's basis). The time fractions :math:`X_{mj}` are then
carried out by the simulator's round mechanism (:func:`~optsched.sim.carry_out`: priority
:math:`X_{mj}` over the share of rounds received on type :math:`j`).

A round whose LP is not proven optimal is carried out only when it stopped within
:data:`~optsched.tolerances.ROUND_LP_GAP` of the optimum (its gap is recorded in
:attr:`AllocationLP.solves` and in the run's ``SimResult.extra["round_lp_gaps"]``); further
from optimal it raises :class:`~optsched.errors.RoundNotOptimalError` (a
:class:`~optsched.errors.NotOptimalError`): the simulation stops rather than run an allocation
nobody checked. Every solve's status, objective, gap and time is kept in
:attr:`AllocationLP.solves`.

The cost policies with deadlines (``min-cost-slo``, ``min-cost-slo-perf``) read each job's
deadline from the trace (:attr:`SimJob.deadline`, absolute) as the seconds left to it; a job
whose deadline has already passed cannot meet it whatever the round does and runs on without
one. A round whose remaining deadlines no allocation meets is infeasible: by default (as Gavel
does) the infeasible solve is recorded in :attr:`AllocationLP.solves` and the round re-solved
without deadlines, also recorded; ``infeasible_deadlines="raise"`` stops the simulation
instead. The allocation of a round is never one whose LP was not proven optimal.

The cost policies' prices per GPU-hour come from the ``prices`` argument, else from
the documented table; a cluster with a GPU type the table does not know (a synthetic ``fast``
or ``gpu``) is priced uniformly, so that the cost policies maximise steps per GPU-hour there,
and :attr:`AllocationLP.uniform_prices` records it.

Finish-time fairness needs each job's isolated-share history :math:`h_m`; as in Gavel's
policy it accumulates, round by round, the time the progress a job made would have taken at its
isolated share (:math:`\Delta\text{steps} / q_m` with :math:`q_m` the isolated throughput of the
previous round).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optsched.allocation.gavel import POLICIES as LP_POLICIES
from optsched.allocation.gavel import AllocationInstance, AllocationJob, PairThroughput, solve
from optsched.allocation.gavel.prices import GPU_PRICES_PER_HOUR
from optsched.errors import InvalidInstanceError, NotOptimalError, RoundNotOptimalError
from optsched.results import ExactResult
from optsched.sim.engine.policy import (
    FractionalAllocation,
    JobState,
    Policy,
    SimState,
)
from optsched.solvers.result import Status
from optsched.tolerances import ROUND_LP_GAP

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = [
    "DEFAULT_ROUND_SECONDS",
    "AllocationLP",
    "IsolatedTime",
    "RoundJobs",
    "RoundSolve",
    "allocation_jobs",
    "as_fractions",
]

#: Whether the rounds take the fast path: each job's rates looked up once per run and the
#: round's jobs built without pydantic's validation pass (:func:`allocation_jobs`), and
#: :class:`AllocationLP` building its round from per-run arrays of the world's jobs
#: (:class:`RoundTables`: the round's fields, the isolated-share history and the instance's
#: arrays computed as whole arrays, not job by job). Both give the same jobs, instance and run
#: as the plain path (``False``), which the tests compare them against.
FAST_ROUNDS = True

#: Gavel's round length (6 minutes).
DEFAULT_ROUND_SECONDS = 360.0


class IsolatedTime:
    """Gavel's isolated-time history :math:`h_m` of finish-time fairness (module notes).

    Each round adds to a job's history the time the progress it made since the previous round
    would have taken at that round's isolated share :math:`q_m`. Every round policy that
    builds an :class:`~optsched.allocation.gavel.AllocationInstance` (the LPs, Themis) keeps one.
    """

    def __init__(self) -> None:
        self._history: dict[str, float] = {}
        self._previous: dict[str, tuple[float, float]] = {}
        # Each job's rates on the cluster's types, looked up once per run: a job's rate alone
        # on its own gang is a pure function of the (immutable) world, job and type, and the
        # rounds of a long trace would otherwise ask the throughput table the same question
        # hundreds of thousands of times.
        self._rates: dict[int, tuple[float, ...]] = {}
        self._rates_of: tuple[object, tuple[str, ...]] | None = None
        # per job (same world and types): whether it can run somewhere, and whether its fixed
        # fields pass _round_job's checks (both pure functions of the world, job and types)
        self._fixed: dict[int, tuple[bool, bool]] = {}

    def rates(self, state: SimState, s: JobState, types: tuple[str, ...]) -> tuple[float, ...]:
        """``state.rate(s, t)`` for each type ``t``, cached per job for the world and types."""
        key = (state.world, types)
        if (
            self._rates_of is None
            or self._rates_of[0] is not state.world
            or (self._rates_of[1] != types)
        ):
            self._rates = {}
            self._fixed = {}
            self._rates_of = key
        if not FAST_ROUNDS:
            return tuple(state.rate(s, name) for name in types)
        index = s.job.index
        rates = self._rates.get(index)
        if rates is None:
            # as floats (what validation would make of them) once, not every round
            rates = tuple(float(state.rate(s, name)) for name in types)
            self._rates[index] = rates
        return rates

    def fixed(
        self, state: SimState, s: JobState, types: tuple[str, ...], capacity: tuple[int, ...]
    ) -> tuple[tuple[float, ...], bool, bool]:
        """The job's :meth:`rates`, whether it can run somewhere, whether its fixed fields pass.

        It can run on a type with a positive rate and as many GPUs as its gang; its fixed
        fields are those :func:`_round_job` checks every round. Kept per job with the rates.
        """
        rates = self.rates(state, s, types)
        got = self._fixed.get(s.job.index) if FAST_ROUNDS else None
        if got is None:
            job = s.job
            runs = any(r > 0 and job.num_gpus <= c for r, c in zip(rates, capacity, strict=True))
            got = (runs, _fixed_ok(job.job_id, rates, job.num_gpus, job.weight))
            if FAST_ROUNDS:
                self._fixed[job.index] = got
        return rates, got[0], got[1]

    def update(self, job_id: str, steps_left: float) -> float:
        """Account for the progress since the previous round; the job's history ``h_m``."""
        if job_id in self._previous:
            before, q = self._previous[job_id]
            if q > 0:
                self._history[job_id] = self._history.get(job_id, 0.0) + (before - steps_left) / q
        return self._history.get(job_id, 0.0)

    def record(self, instance: AllocationInstance) -> None:
        """Remember this round's steps left and isolated shares for the next update."""
        shares = instance.isolated_throughputs
        self._previous = {
            job.job_id: (job.steps_remaining, float(shares[i]))
            for i, job in enumerate(instance.jobs)
        }


@dataclass(frozen=True)
class RoundJobs:
    """The jobs of one round as an allocation instance sees them (:func:`allocation_jobs`).

    Attributes
    ----------
    gpu_types : tuple of str
        The cluster's GPU types, in its order.
    capacity : tuple of int
        GPUs of each type.
    states : tuple of JobState
        The active jobs that can run somewhere, in the state's order.
    jobs : tuple of AllocationJob
        Each of them as an :class:`~optsched.allocation.gavel.AllocationJob` (same order).
    """

    gpu_types: tuple[str, ...]
    capacity: tuple[int, ...]
    states: tuple[JobState, ...]
    jobs: tuple[AllocationJob, ...]


def allocation_jobs(
    state: SimState,
    isolated: IsolatedTime,
    *,
    job_type: Callable[[SimState, JobState], str | None] | None = None,
    deadlines: bool = False,
) -> RoundJobs:
    r"""The round's :class:`~optsched.allocation.gavel.AllocationJob` list from a state.

    The one translation of the simulator's state into the allocation family's jobs, used by
    every round policy that builds an :class:`~optsched.allocation.gavel.AllocationInstance`
    (the LPs, the packed LPs, Themis). Each active job that can run on some GPU type (a
    positive rate there for its whole gang, and as many GPUs of the type as its gang) becomes
    one job with

    * ``throughput_steps_per_s``: its rate on each type for its whole gang (steps/s);
    * ``scale_factor``: its gang size; ``weight``: its weight;
    * ``steps_remaining``: :math:`\max(W - \text{done}, 0)`;
    * ``time_since_start_s``: seconds since its arrival;
    * ``isolated_time_s``: the history :math:`h_m` of ``isolated``, updated with its progress
      (module notes);
    * ``job_type``: ``job_type(state, s)`` when given (the packed LPs' co-location class);
    * ``time_to_deadline_s``: with ``deadlines``, the seconds left to its deadline, ``None`` when
      it has passed (a missed deadline cannot be met whatever the round does).

    A job that can run nowhere is left out (the round has nothing to give it) and its history
    is not updated.
    """
    world = state.world
    types = world.cluster.names
    capacity = tuple(world.cluster.type(name).count for name in types)
    states: list[JobState] = []
    jobs: list[AllocationJob] = []
    for s in state.active:
        rates, runs, fixed_ok = isolated.fixed(state, s, types, capacity)
        if not runs:
            continue  # it can run nowhere: the round has nothing to give it
        left = max(s.job.work - s.done, 0.0)
        job_id = s.job.job_id
        history = isolated.update(job_id, left)  # Gavel's bookkeeping (module notes)
        due = s.job.deadline - state.now
        states.append(s)
        jobs.append(
            _round_job(
                job_id=job_id,
                throughput_steps_per_s=rates,
                scale_factor=s.job.num_gpus,
                weight=s.job.weight,
                steps_remaining=left,
                time_since_start_s=max(state.now - s.job.arrival, 0.0),
                isolated_time_s=history,
                job_type=None if job_type is None else job_type(state, s),
                time_to_deadline_s=due if deadlines and due > 0 else None,
                fixed_ok=fixed_ok,
            )
        )
    return RoundJobs(types, capacity, tuple(states), tuple(jobs))


def _finite_at_least(value: float, low: float) -> bool:
    return math.isfinite(value) and value >= low


def _fixed_ok(job_id: str, rates: tuple[float, ...], scale_factor: int, weight: float) -> bool:
    """Whether a job's fixed fields pass :func:`_round_job`'s checks (the same every round)."""
    return (
        type(job_id) is str
        and 1 <= len(job_id) <= 200
        and all(type(r) is float and 0.0 <= r < math.inf for r in rates)  # False at NaN
        and any(r > 0 for r in rates)
        and isinstance(scale_factor, int)
        and 1 <= scale_factor <= 1_000_000
        and math.isfinite(weight)
        and weight > 0
    )


def _round_job(
    *,
    job_id: str,
    throughput_steps_per_s: tuple[float, ...],
    scale_factor: int,
    weight: float,
    steps_remaining: float,
    time_since_start_s: float,
    isolated_time_s: float,
    job_type: str | None,
    time_to_deadline_s: float | None,
    fixed_ok: bool | None = None,
) -> AllocationJob:
    """An :class:`AllocationJob` built from the simulation state, without pydantic's pass.

    Validating every job of every round costs as much as solving the round's LPs on a long
    trace. The fields come from a validated world, so the few constraints they could still
    break are checked here directly (the same bounds as the model's fields); when one fails,
    the validating constructor runs and raises its usual typed error naming the field. The
    values are coerced as pydantic would coerce them (``float``/``int``), so the job is the
    one the validating constructor would build.
    """
    rates = throughput_steps_per_s
    if fixed_ok is None:
        fixed_ok = _fixed_ok(job_id, rates, scale_factor, weight)
    ok = (
        FAST_ROUNDS
        and fixed_ok
        and _finite_at_least(steps_remaining, 0.0)
        and _finite_at_least(time_since_start_s, 0.0)
        and _finite_at_least(isolated_time_s, 0.0)
        and (job_type is None or (type(job_type) is str and 1 <= len(job_type) <= 200))
        and (time_to_deadline_s is None or _finite_at_least(time_to_deadline_s, 0.0))
    )
    fields: dict[str, Any] = {
        "job_id": job_id,
        "throughput_steps_per_s": rates,
        "scale_factor": scale_factor,
        "weight": weight,
        "steps_remaining": steps_remaining,
        "time_since_start_s": time_since_start_s,
        "isolated_time_s": isolated_time_s,
        "job_type": job_type,
        "time_to_deadline_s": time_to_deadline_s,
    }
    if not ok:
        return AllocationJob(**fields)  # raises the typed error naming the field
    fields["scale_factor"] = int(scale_factor)
    for name in ("weight", "steps_remaining", "time_since_start_s", "isolated_time_s"):
        fields[name] = float(fields[name])
    if time_to_deadline_s is not None:
        fields["time_to_deadline_s"] = float(time_to_deadline_s)
    return _construct(AllocationJob, fields)


def _round_instance(
    types: tuple[str, ...],
    capacity: tuple[int, ...],
    jobs: tuple[AllocationJob, ...],
    pairs: tuple[PairThroughput, ...],
    prices: tuple[float, ...] | None,
) -> AllocationInstance:
    """The round's :class:`AllocationInstance`, its jobs not validated a second time.

    Validating the instance runs every job's own validator again (pydantic re-checks a model
    field's after-validators); the jobs of :func:`allocation_jobs` are already checked, so on
    the fast path the instance is constructed and only its own consistency check runs (the
    same typed errors). ``FAST_ROUNDS = False`` validates it as a whole.
    """
    fields: dict[str, Any] = {
        "gpu_types": types,
        "capacity": capacity,
        "jobs": jobs,
        "pair_throughputs": pairs,
        "prices": prices,
    }
    plain = (
        FAST_ROUNDS
        and 1 <= len(types) <= 64
        and all(type(t) is str for t in types)
        and all(type(c) is int for c in capacity)
        and all(type(j) is AllocationJob for j in jobs)
        and all(type(p) is PairThroughput for p in pairs)
        and (prices is None or all(type(p) is float for p in prices))
    )
    if not plain:
        return AllocationInstance(**fields)
    instance = AllocationInstance.model_construct(**fields)
    # the instance's own checks, raising the usual typed errors (a plain method at run time)
    instance._consistent()  # type: ignore[operator]
    return instance


def _construct(cls: type[AllocationJob], fields: dict[str, Any]) -> AllocationJob:
    """``cls.model_construct(**fields)`` for checked fields, all given, in declaration order.

    What pydantic's ``model_construct`` does for a model without extra fields, private
    attributes or post-init hook, without its per-field loop over defaults and aliases (which
    costs more than the rest of building a round's job).
    """
    if cls.__pydantic_post_init__ or cls.__private_attributes__ or fields.keys() != _JOB_FIELDS:
        return cls.model_construct(**fields)
    job = cls.__new__(cls)
    set_ = object.__setattr__
    set_(job, "__dict__", fields)
    set_(job, "__pydantic_fields_set__", set(fields))
    set_(job, "__pydantic_extra__", None)
    set_(job, "__pydantic_private__", None)
    return job


_JOB_FIELDS = AllocationJob.model_fields.keys()


class RoundTables:
    r"""Per-run arrays of the world's jobs from which :class:`AllocationLP` builds its rounds.

    The fast path of :data:`FAST_ROUNDS`. Each job's rates on the cluster's types, gang size,
    weight, work, arrival and deadline are laid out once per run as arrays indexed by the job's
    position in the world; a round then gathers its active jobs' rows and computes every field
    of :func:`allocation_jobs` (steps left, time since arrival, the isolated-share history
    :math:`h_m` of :class:`IsolatedTime`, the seconds to the deadline) as whole arrays, with the
    same floating-point operations in the same order, so every value is the one the plain path
    computes. The round's :class:`~optsched.allocation.gavel.AllocationInstance` is constructed
    with those arrays already in place (the instance would otherwise gather them again from its
    jobs), after the checks the validating constructors would make, done as array tests; a job
    that fails one goes through the validating constructor, which raises its usual typed error.

    Parameters
    ----------
    world : World
        The run's world (immutable).
    prices : tuple of float or None
        The instance's prices (:meth:`AllocationLP._prices`), fixed for the run.
    """

    def __init__(self, world: World, prices: tuple[float, ...] | None) -> None:
        import numpy as np

        cluster = world.cluster
        types = cluster.names
        capacity = tuple(cluster.type(name).count for name in types)
        # the instance's own checks of the types, capacities and prices, once per run
        AllocationInstance(gpu_types=types, capacity=capacity, jobs=(), prices=prices)
        jobs = world.jobs
        n, k = len(jobs), len(types)
        self.world = world
        self.types = types
        self.capacity = capacity
        self.prices = prices
        self.capacities = np.array(capacity, dtype=np.float64)
        # as floats (what validation would make of them), as IsolatedTime.rates caches them
        self.rate_rows = [tuple(float(world.rate(j, t)) for t in types) for j in jobs]
        self.rates = np.array(self.rate_rows, dtype=np.float64).reshape(n, k)
        self.ids = [j.job_id for j in jobs]
        self.gangs = [j.num_gpus for j in jobs]
        self.scale = np.array(self.gangs, dtype=np.float64)
        self.weight = np.array([j.weight for j in jobs], dtype=np.float64)
        # the same floats as a list, made once: every round's jobs read their weights from it
        # (converting the whole array every round cost more than the rest of building them)
        self.weight_list: list[float] = self.weight.tolist()
        self.work = np.array([j.work for j in jobs], dtype=np.float64)
        self.arrival = np.array([j.arrival for j in jobs], dtype=np.float64)
        self.deadline = np.array([j.deadline for j in jobs], dtype=np.float64)
        # where a job can run: a positive rate and room for its whole gang (allocation_jobs)
        gang_fits = self.scale[:, None] <= self.capacities[None, :]
        self.fits: Any = (
            ((self.rates > 0) & gang_fits).any(axis=1) if n else np.zeros(0, dtype=bool)
        )
        # the checks of _round_job that depend on the job alone
        self.static_ok = (
            np.isfinite(self.rates).all(axis=1)
            & (self.rates >= 0).all(axis=1)
            & np.isfinite(self.weight)
            & (self.weight > 0)
            & np.array(
                [
                    type(j.job_id) is str
                    and 1 <= len(j.job_id) <= 200
                    and isinstance(j.num_gpus, int)
                    and 1 <= j.num_gpus <= 1_000_000
                    for j in jobs
                ],
                dtype=bool,
            )
        )
        # IsolatedTime's history and its previous round, as arrays (see IsolatedTime)
        self.history = np.zeros(n)
        self.has_history = np.zeros(n, dtype=bool)
        self.before = np.zeros(n)
        self.q = np.zeros(n)
        self.recorded = np.full(n, -1, dtype=np.int64)
        self.generation = 0
        self._last = np.zeros(0, dtype=np.int64)

    def matches(self, world: World, prices: tuple[float, ...] | None) -> bool:
        """Whether these tables are the run's (same world object, same prices)."""
        return self.world is world and self.prices == prices

    def round(self, state: SimState) -> tuple[tuple[JobState, ...], AllocationInstance] | None:
        """The round's runnable states and instance (``None``: no job can run anywhere).

        Updates the isolated-share history as :func:`allocation_jobs` does.
        """
        import numpy as np

        active = state.active
        count = len(active)
        idx = np.fromiter((s.job.index for s in active), dtype=np.int64, count=count)
        done = np.fromiter((s.done for s in active), dtype=np.float64, count=count)
        keep = self.fits[idx]
        states: tuple[JobState, ...] = active
        if not keep.all():
            states = tuple(s for s, ok in zip(active, keep.tolist(), strict=True) if ok)
            idx, done = idx[keep], done[keep]
        if not states:
            return None
        self._last = idx
        now = state.now
        # max(work - done, 0.0), max(now - arrival, 0.0) as Python's max: x unless 0.0 > x
        left = self.work[idx] - done
        left = np.where(left < 0.0, 0.0, left)
        since = now - self.arrival[idx]
        since = np.where(since < 0.0, 0.0, since)
        # IsolatedTime.update: progress since the previous round at that round's share
        history = self.history[idx]
        q = self.q[idx]
        moved = (self.recorded[idx] == self.generation) & (q > 0)
        if moved.any():
            rows = idx[moved]
            history[moved] = history[moved] + (self.before[rows] - left[moved]) / q[moved]
            self.history[rows] = history[moved]
            self.has_history[rows] = True
        due = self.deadline[idx] - now
        has_due = due > 0  # False at NaN (no deadline) and for a deadline already passed
        ok = (
            self.static_ok[idx]
            & np.isfinite(left)
            & np.isfinite(since)
            & np.isfinite(history)
            & (history >= 0)
            & (~has_due | np.isfinite(due))
        )
        if not ok.all():
            self._refuse(states, int(np.flatnonzero(~ok)[0]), left, since, history, due)
        jobs = self._jobs(idx, left, since, history, due, has_due)
        types = self.types
        k = len(types)
        from optsched import limits

        limits.check_size("jobs", float(len(jobs)) * k, "max_model_variables", "variables")
        ids = tuple(job_ids := [self.ids[i] for i in idx.tolist()])
        if len(set(job_ids)) != len(job_ids):
            # the validating constructor names the duplicate
            AllocationInstance(gpu_types=types, capacity=self.capacity, jobs=jobs)
        instance = AllocationInstance.model_construct(
            gpu_types=types,
            capacity=self.capacity,
            jobs=jobs,
            pair_throughputs=(),
            prices=self.prices,
        )
        # the arrays the instance would gather from its jobs (cached properties), each a fresh
        # C-ordered float64 array holding the same values
        cached = instance.__dict__
        cached["throughputs"] = self.rates[idx]
        cached["scale_factors"] = self.scale[idx]
        cached["weights"] = self.weight[idx]
        cached["capacities"] = self.capacities.copy()
        cached["steps"] = left
        cached["since_start"] = since
        cached["isolated_times"] = history
        cached["deadlines"] = np.where(has_due, due, math.inf)
        cached["job_ids"] = ids
        return states, instance

    def _jobs(
        self,
        idx: Any,
        left: Any,
        since: Any,
        history: Any,
        due: Any,
        has_due: Any,
    ) -> tuple[AllocationJob, ...]:
        """The round's jobs, constructed directly (their fields are checked by the caller)."""
        ids, rows, gangs = self.ids, self.rate_rows, self.gangs
        weights = self.weight_list
        new = AllocationJob.__new__
        set_ = object.__setattr__
        out: list[AllocationJob] = []
        append = out.append
        dues = [d if h else None for d, h in zip(due.tolist(), has_due.tolist(), strict=True)]
        for i, steps, seconds, hist, d in zip(
            idx.tolist(), left.tolist(), since.tolist(), history.tolist(), dues, strict=True
        ):
            job = new(AllocationJob)
            set_(
                job,
                "__dict__",
                {
                    "job_id": ids[i],
                    "throughput_steps_per_s": rows[i],
                    "scale_factor": gangs[i],
                    "weight": weights[i],
                    "steps_remaining": steps,
                    "time_since_start_s": seconds,
                    "isolated_time_s": hist,
                    "job_type": None,
                    "time_to_deadline_s": d,
                },
            )
            set_(job, "__pydantic_fields_set__", set(_JOB_FIELDS))
            set_(job, "__pydantic_extra__", None)
            set_(job, "__pydantic_private__", None)
            append(job)
        return tuple(out)

    def _refuse(self, states: Any, r: int, left: Any, since: Any, history: Any, due: Any) -> None:
        """Raise the validating constructor's typed error for the ``r``-th job of the round."""
        s = states[r]
        i = s.job.index
        d = float(due[r])
        AllocationJob(
            job_id=self.ids[i],
            throughput_steps_per_s=self.rate_rows[i],
            scale_factor=self.gangs[i],
            weight=float(self.weight[i]),
            steps_remaining=float(left[r]),
            time_since_start_s=float(since[r]),
            isolated_time_s=float(history[r]),
            time_to_deadline_s=d if d > 0 else None,
        )
        raise InvalidInstanceError(  # pragma: no cover - the constructor raised above
            f"jobs[{r}]", "a field of the round's job is out of its bounds"
        )

    def record(self, instance: AllocationInstance) -> None:
        """:meth:`IsolatedTime.record` for the round :meth:`round` built last."""
        idx = self._last
        self.generation += 1
        self.before[idx] = instance.steps
        self.q[idx] = instance.isolated_throughputs
        self.recorded[idx] = self.generation

    def to_isolated(self) -> IsolatedTime:
        """The same history as an :class:`IsolatedTime` (to go on with the plain path)."""
        import numpy as np

        isolated = IsolatedTime()
        for i in np.flatnonzero(self.has_history).tolist():
            isolated._history[self.ids[i]] = float(self.history[i])
        if self.generation:
            for i in np.flatnonzero(self.recorded == self.generation).tolist():
                isolated._previous[self.ids[i]] = (float(self.before[i]), float(self.q[i]))
        return isolated


def as_fractions(instance: AllocationInstance, fractions: Any) -> FractionalAllocation:
    """``X[job][gpu_type]`` of an allocation matrix, positive entries only."""
    types = instance.gpu_types
    if FAST_ROUNDS:
        import numpy as np

        x = np.asarray(fractions, dtype=np.float64)
        out: dict[str, dict[str, float]] = {job_id: {} for job_id in instance.job_ids}
        ids = instance.job_ids
        # row-major nonzero order: each job's types in their order, as the plain path
        rows, cols = np.nonzero(x > 0)
        for i, j, value in zip(rows.tolist(), cols.tolist(), x[rows, cols].tolist(), strict=True):
            out[ids[i]][types[j]] = value
        return out
    return {
        job.job_id: {
            name: float(fractions[i, j]) for j, name in enumerate(types) if fractions[i, j] > 0
        }
        for i, job in enumerate(instance.jobs)
    }


@dataclass(frozen=True)
class RoundSolve:
    """One round's LP: when, how many jobs, status, objective, bound, seconds, LPs solved."""

    now: float
    jobs: int
    status: str
    objective: float | None
    bound: float | None
    seconds: float
    lp_solves: int
    policy: str = ""
    """The policy actually solved (the deadline-free fallback after an infeasible SLO round)."""
    gap: float | None = None
    """Relative gap of the allocation carried out (0 when proven optimal)."""


def accept_round(result: ExactResult[Any]) -> ExactResult[Any]:
    """``result`` if optimal or feasible within :data:`~optsched.tolerances.ROUND_LP_GAP`.

    Raises
    ------
    RoundNotOptimalError
        Further from optimal (or no allocation): the run stops, with a JSON-safe result.
    """
    if result.optimal:
        return result
    gap = result.gap
    if result.solution is not None and gap is not None and gap <= ROUND_LP_GAP:
        return result
    shown = "unknown" if gap is None else f"{gap:.3g}"
    safe = dataclasses.replace(result, extra={k: v for k, v in result.extra.items() if k != "lp"})
    raise RoundNotOptimalError(
        safe,
        f"a round's {result.objective_name} allocation LP stopped with status "
        f"{result.status.value!r} at gap {shown}, beyond the simulator's tolerance "
        f"ROUND_LP_GAP = {ROUND_LP_GAP:g} (optsched.tolerances); choose another policy "
        "(--policy/--policies) or another round length (--round-seconds)",
    )


class AllocationLP(Policy):
    """An allocation LP of :mod:`optsched.allocation.gavel` as a round-based simulator policy.

    Parameters
    ----------
    policy : str
        A key of :data:`optsched.allocation.gavel.POLICIES` (``max-min``, ``max-min-perf``, ``ftf``,
        ``ftf-perf``, ``makespan``, ``makespan-perf``, ``max-sum-throughput-perf``,
        ``min-cost``, ``min-cost-perf``, ``min-cost-slo``, ``min-cost-slo-perf``).
    round_seconds : float
        Round length (default Gavel's 360 s).
    prices : mapping of str to float, optional
        Cost policies only: US$ per GPU-hour by type name. By default the documented table
        (:data:`optsched.allocation.gavel.prices.GPU_PRICES_PER_HOUR`); a cluster with a type the
        table does not know is priced uniformly (1 per GPU-hour, so the cost policies maximise
        steps per GPU-hour) and :attr:`uniform_prices` says so.
    infeasible_deadlines : {"raise", "drop"}
        SLO policies only: what a round whose deadlines no allocation meets does. ``"drop"``
        (default, Gavel's behaviour) records the infeasible solve in :attr:`solves` (status
        ``infeasible``) and re-solves the round without deadlines, recorded too with its
        ``policy``; ``"raise"`` stops the simulation with the infeasible result.
    """

    #: carried out by :func:`~optsched.sim.carry_out`, which gives leftover GPUs to zero shares
    work_conserving = True

    def __init__(
        self,
        policy: str,
        round_seconds: float = DEFAULT_ROUND_SECONDS,
        *,
        prices: Mapping[str, float] | None = None,
        infeasible_deadlines: str = "drop",
    ) -> None:
        if policy not in LP_POLICIES:
            raise InvalidInstanceError(
                "policy", f"unknown allocation policy {policy!r}; known: {sorted(LP_POLICIES)}"
            )
        if not (math.isfinite(round_seconds) and round_seconds > 0):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds!r}")
        if infeasible_deadlines not in ("raise", "drop"):
            raise InvalidInstanceError(
                "infeasible_deadlines", f"must be 'raise' or 'drop', got {infeasible_deadlines!r}"
            )
        self.infeasible_deadlines = infeasible_deadlines
        self.prices = None if prices is None else dict(prices)
        #: Whether the last run priced every GPU type at 1 (a type not in the price table).
        self.uniform_prices = False
        self.name = policy
        self.policy = policy
        self.round_seconds = float(round_seconds)
        self.solves: list[RoundSolve] = []
        self._warm: Any = None
        self._isolated = IsolatedTime()
        self._tables: RoundTables | None = None
        self._plain_history = False  # the run's history is kept by self._isolated
        #: Rounds of the last run whose interior-point solve fell back to the vertex.
        self.interior_fallbacks = 0

    def run_facts(self) -> dict[str, Any]:
        """The rounds carried out short of proven optimality, with their gaps (module notes)."""
        short = [
            {"now": s.now, "gap": s.gap, "status": s.status}
            for s in self.solves
            if s.gap is not None and s.status == "feasible"
        ]
        facts: dict[str, Any] = {"round_lp_gap_tolerance": ROUND_LP_GAP, "round_lp_gaps": short}
        if self.interior_fallbacks:
            facts["interior_fallbacks"] = self.interior_fallbacks
        return facts

    def reset(self, world: World) -> None:
        """Forget the previous run (solves, warm start, isolated-share history)."""
        self.solves = []
        self._warm = None
        self._isolated = IsolatedTime()
        self._tables = None
        self._plain_history = False
        self.uniform_prices = False
        self.interior_fallbacks = 0

    def _prices(self, types: tuple[str, ...]) -> tuple[float, ...] | None:
        """The instance's prices: given, the table's (``None``), or uniform (module notes)."""
        if LP_POLICIES[self.policy][0] not in ("min-cost", "min-cost-slo"):
            return None
        if self.prices is not None:
            missing = [t for t in types if t not in self.prices]
            if missing:
                raise InvalidInstanceError("prices", f"no price given for GPU type(s) {missing}")
            return tuple(float(self.prices[t]) for t in types)
        if all(t.lower() in GPU_PRICES_PER_HOUR for t in types):
            return None
        self.uniform_prices = True
        return (1.0,) * len(types)

    def fractional(self, state: SimState) -> FractionalAllocation:
        """The round's exact allocation (see the module notes)."""
        solved = self.solve_round(state)
        if solved is None:
            return {}
        instance, result = solved
        assert result.solution is not None
        return as_fractions(instance, result.solution.fractions)

    def interior_fractional(self, state: SimState, *, direct: bool = True) -> FractionalAllocation:
        """The round's allocation as an interior-point solver returns it (Gavel's solve).

        Gavel solves its LPs with cvxpy and an interior-point solver (ECOS), which returns a
        point of the *relative interior* of the optimal face when the optimum is not unique;
        :meth:`fractional` returns a vertex (HiGHS). The two have the same objective value but
        can split the jobs' time differently. When the conic solve stops short of optimal, the
        round takes the exact LP's optimum (counted in :attr:`interior_fallbacks` and in the
        run's facts). This solves the declarative twin of the policy
        (:func:`optsched.allocation.gavel.twin.solve_twin`, Clarabel) on the same instance;
        Gavel's mechanism (:mod:`optsched.sim.engine.gavel`) uses it. The round is not
        recorded in :attr:`solves`. The makespan policies take Gavel's bisection over
        feasibility problems instead (:mod:`optsched.sim.policies.gavel_makespan`). With
        ``direct`` (default) the same problems are built straight into Clarabel
        (:mod:`optsched.allocation.gavel.interior`: the same point, without cvxpy's
        compilation); ``direct=False`` solves them through cvxpy, the reference.
        """
        from optsched.allocation.gavel.interior import gavel_makespan_interior, interior_allocation
        from optsched.allocation.gavel.twin import solve_twin

        # the round's instance as solve_round builds it: by the run's tables (the same values)
        # when the round takes the array path, else job by job
        tables = self._round_tables(state)
        if tables is not None:
            built = tables.round(state)
            if built is None:
                return {}
            instance = built[1]
        else:
            round_jobs = allocation_jobs(
                state, self._isolated, job_type=self.job_type, deadlines=True
            )
            jobs = list(round_jobs.jobs)
            if not jobs:
                return {}
            types = round_jobs.gpu_types
            # the jobs are checked already: the instance's own checks only
            instance = _round_instance(
                types,
                round_jobs.capacity,
                tuple(jobs),
                self.pair_throughputs(state, jobs),
                self._prices(types),
            )
        objective, aware = LP_POLICIES[self.policy]
        x: Any = None
        try:
            if objective == "makespan":
                # Gavel searches the makespan by bisection over feasibility problems
                from optsched.sim.policies.gavel_makespan import gavel_makespan_allocation

                if direct:
                    x = gavel_makespan_interior(instance, aware)
                else:
                    x = gavel_makespan_allocation(instance, aware)
            elif direct and not self.policy.endswith("-packed"):
                x = interior_allocation(instance, self.policy)
            else:
                _, x = solve_twin(instance, self.policy)
        except NotOptimalError:
            x = None
        if x is None:
            # the conic solve stopped short (Gavel warns and goes on with what it got): the
            # round takes the exact LP's optimum instead, and the run counts it
            self.interior_fallbacks += 1
            result = accept_round(solve(instance, self.policy, accept_feasible=True))
            assert result.solution is not None
            x = result.solution.fractions
        if tables is not None:
            tables.record(instance)
        else:
            self._isolated.record(instance)
        return as_fractions(instance, x)

    def job_type(self, state: SimState, s: JobState) -> str | None:
        """The job's co-location class in the round's instance (``None``: never shares)."""
        return None

    def pair_throughputs(
        self, state: SimState, jobs: list[AllocationJob]
    ) -> tuple[PairThroughput, ...]:
        """The round's pair table (none: the unpacked policies)."""
        return ()

    def solve_round(self, state: SimState) -> tuple[AllocationInstance, ExactResult[Any]] | None:
        """Build the round's instance and solve it (recorded in :attr:`solves`).

        ``None`` when no active job can run anywhere.
        """
        # The SLO policies' deadline: seconds left; a deadline already passed is missed
        # whatever the allocation, so such a job runs on without one (module notes).
        tables = self._round_tables(state)
        if tables is not None:
            built = tables.round(state)
            if built is None:
                return None
            instance = built[1]
            jobs = instance.jobs
        else:
            self._history_by_id()
            round_jobs = allocation_jobs(
                state, self._isolated, job_type=self.job_type, deadlines=True
            )
            types, capacity = round_jobs.gpu_types, round_jobs.capacity
            jobs = round_jobs.jobs
            if not jobs:
                return None
            instance = _round_instance(
                types,
                capacity,
                jobs,
                self.pair_throughputs(state, list(jobs)),
                self._prices(types),
            )
        start = time.perf_counter()
        policy = self.policy
        try:
            result = accept_round(
                solve(instance, policy, warm_start=self._warm, accept_feasible=True)
            )
        except NotOptimalError as err:
            slo = LP_POLICIES[policy][0] == "min-cost-slo"
            status = err.result.status
            if not (slo and self.infeasible_deadlines == "drop" and status is Status.INFEASIBLE):
                raise
            self.solves.append(
                RoundSolve(
                    now=state.now,
                    jobs=len(jobs),
                    status=status.value,
                    objective=None,
                    bound=None,
                    seconds=time.perf_counter() - start,
                    lp_solves=int(err.result.extra.get("lp_solves", 0)),
                    policy=policy,
                )
            )
            start = time.perf_counter()
            policy = policy.replace("min-cost-slo", "min-cost")
            result = accept_round(solve(instance, policy, accept_feasible=True))
        self.solves.append(
            RoundSolve(
                now=state.now,
                jobs=len(jobs),
                status=result.status.value,
                objective=result.objective,
                bound=result.bound,
                seconds=time.perf_counter() - start,
                lp_solves=int(result.extra.get("lp_solves", 0)),
                policy=policy,
                gap=result.gap,
            )
        )
        self._warm = result.extra.get("lp")
        if tables is not None:
            tables.record(instance)
        else:
            self._isolated.record(instance)
        return instance, result

    def _round_tables(self, state: SimState) -> RoundTables | None:
        """The run's :class:`RoundTables` when the round takes the array path, else ``None``.

        The array path is the fast path (:data:`FAST_ROUNDS`) of the unpacked policies (a
        subclass with its own co-location classes or pair table builds its jobs one by one)
        for a run whose history is not already kept job by job.
        """
        if not FAST_ROUNDS or self._plain_history:
            self._history_by_id()
            return None
        cls = type(self)
        if (
            cls.job_type is not AllocationLP.job_type
            or cls.pair_throughputs is not AllocationLP.pair_throughputs
        ):
            self._history_by_id()
            return None
        prices = self._prices(state.world.cluster.names)
        if self._tables is None or not self._tables.matches(state.world, prices):
            if self._isolated._history or self._isolated._previous:
                return None
            self._tables = RoundTables(state.world, prices)
        return self._tables

    def _history_by_id(self) -> None:
        """Go on with the history kept job by job (:class:`IsolatedTime`) for the rest of the run.

        A run whose rounds took the array path hands its history over first.
        """
        if self._plain_history:
            return
        self._plain_history = True
        if self._tables is not None:
            self._isolated = self._tables.to_isolated()
            self._tables = None
