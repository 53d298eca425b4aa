r"""The exact optimum of the simulator's round-based world, as a time-indexed MILP.

The world is the one :func:`~optsched.sim.simulate` carries out with ``round_seconds = L``:
decisions only at the times :math:`kL`; a job granted in round :math:`k` runs on all its
:math:`n_j` GPUs of one type :math:`g` from :math:`kL` until the round ends or its work is done,
whichever comes first; a job that arrives mid-round waits for the next round; GPUs freed mid-round
stay idle. The model chooses, per round and GPU type, which jobs run; its schedule is handed to
:func:`~optsched.sim.replay_rounds` (with explicit consolidated placements) and the record is
checked by :func:`~optsched.sim.validate`; the objective recomputed from that record must agree
with the solver's (:class:`~optsched.errors.InconsistentResultError` otherwise).

Model (rounds :math:`k = 0..K-1`, time measured in rounds; :math:`c_{jg} = r_{jg} L / W_j` the
share of job :math:`j`'s work one full round on type :math:`g` does, :math:`r_{jg}` its
consolidated rate)

.. math::

    x_{jkg} \in \{0,1\},\ e_{jk} \in \{0,1\},\ u_{jkg} \in [0,1] \\
    \textstyle\sum_j n_j x_{jkg} \le C_g                        & \text{(capacity)} \\
    \textstyle\sum_g x_{jkg} \le \sum_{k' \ge k} e_{jk'}       & \text{(no\_run\_after\_final)} \\
    \textstyle\sum_k e_{jk} = 1                                 & \text{(one\_final)} \\
    \textstyle\sum_g x_{jkg} \ge e_{jk}                         & \text{(final\_round\_runs)} \\
    u_{jkg} \le x_{jkg}                                         & \text{(run\_upper)} \\
    u_{jkg} \ge x_{jkg} - e_{jk}                                & \text{(full\_round)} \\
    u_{jkg} \ge \varepsilon\, x_{jkg}                           & \text{(last\_run\_positive)} \\
    \textstyle\sum_{k,g} c_{jg} u_{jkg} = 1                     & \text{(work)} \\
    T_j = \textstyle\sum_k k\, e_{jk} + \sum_{k,g} u_{jkg} - \sum_{k,g} x_{jkg} + 1
                                                                & \text{(completion)}

with :math:`x_{jkg}` only defined for rounds :math:`k` with :math:`a_j \le kL` (arrival, with the
engine's :data:`~optsched.tolerances.TIME_TOL`), types with :math:`r_{jg} > 0` and
:math:`n_j \le C_g`. Every round a job runs but its last is full (``full_round``), so the work done
before the last round is exactly what the engine accumulates, and the last run lasts
:math:`u L` seconds: the completion time is :math:`L T_j`. Objectives: ``weighted-jct``
:math:`\min \sum_j w_j (L T_j - a_j)`; ``makespan`` :math:`\min M,\ M \ge L T_j`
(the validator's makespan: the last completion time); ``deadlines``
:math:`\max \sum_j m_j,\ T_j \le d_j / L + K (1 - m_j)` over jobs with a deadline.

Restrictions (refused with a field-named :class:`~optsched.errors.InvalidInstanceError`):

* ``restore_s`` must be 0 (a preemption is free, so placements may change every round);
* no space sharing (the model never pairs jobs);
* placement: on a GPU type where some job's consolidated and spread rates differ, every server
  must hold ``gpus_per_server`` GPUs and the gang sizes must be *divisible*: the sizes below
  ``gpus_per_server`` together with it form a divisibility chain, larger sizes are multiples of
  it. Then first-fit by decreasing size places every round's gangs consolidated whenever their
  GPUs fit by count (each server's free count stays a multiple of the next gang size), so the
  per-type count capacity is exact;
* every job finishes within the :math:`K` rounds (default :func:`default_rounds`: the last
  arrival's round plus every job alone, one after another, on its slowest type, which always
  admits a schedule);
* a job's last run lasts at least :math:`\varepsilon L` (:func:`last_run_floor`, about
  :math:`10^{-6}` of a round), so that the engine's completion rounding never merges a last run
  into the round before it.

Complexity: :math:`O(n K G)` variables and constraints for :math:`n` jobs and :math:`G` types.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from optsched import limits
from optsched.errors import (
    InvalidInstanceError,
    ModelError,
    NotOptimalError,
)
from optsched.family.exact import Formulation
from optsched.results import ExactResult, Report, Sense, Violation
from optsched.sim.policy import GrantPlacement
from optsched.sim.record import SimResult
from optsched.sim.replay import replay_rounds
from optsched.sim.validate import validate
from optsched.sim.world import SimJob, World
from optsched.solvers import BuildClock
from optsched.tolerances import FIT_TOL, TIME_TOL, leq

__all__ = [
    "OBJECTIVES",
    "POLISH",
    "ExactModel",
    "build_model",
    "check_world",
    "default_rounds",
    "earliest_round",
    "formulation",
    "last_run_floor",
    "objective_value",
    "pack_round",
    "solve",
]

Objective = Literal["weighted-jct", "makespan", "deadlines"]

#: The objectives and their sense.
OBJECTIVES: dict[str, Sense] = {"weighted-jct": "min", "makespan": "min", "deadlines": "max"}


def _check_round_seconds(round_seconds: float) -> float:
    if (
        isinstance(round_seconds, bool)
        or not isinstance(round_seconds, int | float)
        or not math.isfinite(round_seconds)
        or round_seconds <= 0
    ):
        raise InvalidInstanceError(
            "round_seconds", f"must be a finite number > 0, got {round_seconds!r}"
        )
    return float(round_seconds)


def earliest_round(arrival: float, round_seconds: float) -> int:
    """The first round ``k`` whose start ``k L`` admits the job (``arrival <= k L + TIME_TOL``).

    The same test as the engine's; at most two corrections after the closed form.
    """
    k = max(0, math.ceil((arrival - TIME_TOL) / round_seconds))
    if k > 0 and arrival <= (k - 1) * round_seconds + TIME_TOL:
        k -= 1
    if arrival > k * round_seconds + TIME_TOL:
        k += 1
    return k


def _types_for(world: World, job: SimJob) -> list[str]:
    return [
        t.name
        for t in world.cluster.gpu_types
        if t.count >= job.num_gpus and world.rate(job, t.name, True) > 0
    ]


def default_rounds(world: World, round_seconds: float) -> int:
    """Rounds that always admit a schedule: last arrival's round + each job alone, slowest type."""
    L = _check_round_seconds(round_seconds)
    if not world.jobs:
        return 0
    total = max(earliest_round(j.arrival, L) for j in world.jobs)
    for j in world.jobs:
        slowest = min(world.rate(j, t, True) for t in _types_for(world, j))
        total += math.ceil(j.work / (slowest * L) - FIT_TOL) if slowest > 0 else 0
    return max(1, total)


def last_run_floor(world: World, round_seconds: float, rounds: int) -> float:
    r"""The floor :math:`\varepsilon` on a last run's share of its round (see the module notes).

    Large enough that the engine's completion slack (``FIT_TOL`` relative to the time) never
    closes a run of :math:`\varepsilon L` seconds, whatever the rate ratio between two types.
    """
    ratio = 1.0
    for j in world.jobs:
        rates = [world.rate(j, t, True) for t in _types_for(world, j)]
        if rates:
            ratio = max(ratio, max(rates) / min(rates))
    horizon = max(1.0, rounds * round_seconds)
    return max(1e-6, 10.0 * FIT_TOL * horizon * ratio / round_seconds)


def check_world(world: World) -> dict[str, bool]:
    """Refuse worlds outside the model (see the module notes).

    Returns
    -------
    dict of str to bool
        Per GPU type, whether placement matters there (some job's spread rate differs).

    Raises
    ------
    InvalidInstanceError
        ``restore_s`` not 0, no jobs, an elastic job (``min_gpus``), or a GPU type whose
        servers or gang sizes do not allow every count-feasible round to be placed
        consolidated (``cluster``).
    """
    if world.restore_s != 0:
        raise InvalidInstanceError(
            "restore_s",
            f"the exact model needs free preemption (0), got {world.restore_s:g}",
        )
    if not world.jobs:
        raise InvalidInstanceError("jobs", "the exact model needs at least one job")
    elastic = [j.job_id for j in world.jobs if j.elastic]
    if elastic:
        # its gang variables are of the requested size only: with elastic jobs its optimum
        # would not bound the policies that resize them
        raise InvalidInstanceError(
            "min_gpus",
            f"the exact model is of rigid gangs; elastic jobs: {', '.join(elastic[:5])}",
        )
    matters: dict[str, bool] = {}
    for t in world.cluster.gpu_types:
        jobs = [j for j in world.jobs if t.name in _types_for(world, j)]
        matters[t.name] = any(
            world.rate(j, t.name, True) != world.rate(j, t.name, False) for j in jobs
        )
        if not matters[t.name]:
            continue
        gps = t.gpus_per_server
        if t.count % gps:
            raise InvalidInstanceError(
                "cluster",
                f"{t.name}: {t.count} GPUs are not whole servers of {gps}; the exact model "
                "needs equal servers where placement changes a job's rate",
            )
        sizes = sorted({j.num_gpus for j in jobs})
        chain = [s for s in sizes if s < gps] + [gps]
        for a, b in itertools.pairwise(chain):
            if b % a:
                raise InvalidInstanceError(
                    "cluster",
                    f"{t.name}: gang sizes {a} and {b} (servers of {gps}) do not divide each "
                    "other; the exact model needs divisible gang sizes where placement changes "
                    "a job's rate",
                )
        for s in sizes:
            if s > gps and s % gps:
                raise InvalidInstanceError(
                    "cluster",
                    f"{t.name}: gang size {s} is not a multiple of the {gps} GPUs per server",
                )
    return matters


def pack_round(
    world: World, plan: Mapping[str, str], matters: Mapping[str, bool]
) -> dict[str, GrantPlacement]:
    """Place one round's gangs (job id -> GPU type) on servers, by first fit, largest first.

    On a type where placement matters (divisible sizes, see :func:`check_world`) every gang is
    consolidated; elsewhere gangs fill servers in order.

    Raises
    ------
    ModelError
        A gang does not fit although the count capacity holds (a broken invariant).
    """
    out: dict[str, GrantPlacement] = {}
    for t in world.cluster.gpu_types:
        free = [t.server_capacity(s) for s in range(t.num_servers)]
        gps = t.gpus_per_server
        jobs = sorted(
            (world.job(jid) for jid, g in plan.items() if g == t.name),
            key=lambda j: (-j.num_gpus, j.index),
        )
        for j in jobs:
            n = j.num_gpus
            servers: list[tuple[int, int]] = []
            if matters.get(t.name, False) and n <= gps:
                s = next((s for s, f in enumerate(free) if f >= n), -1)
                if s >= 0:
                    servers = [(s, n)]
            elif matters.get(t.name, False):
                empty = [s for s, f in enumerate(free) if f == gps][: n // gps]
                if len(empty) * gps == n:
                    servers = [(s, gps) for s in empty]
            else:
                left = n
                for s, f in enumerate(free):
                    if left == 0:
                        break
                    if f > 0:
                        servers.append((s, min(f, left)))
                        left -= min(f, left)
                if left:
                    servers = []
            if not servers:
                raise ModelError(f"{t.name}: gang {j.job_id!r} of {n} GPUs does not fit")
            for s, k in servers:
                free[s] -= k
            out[j.job_id] = GrantPlacement(t.name, tuple(sorted(servers)))
    return out


@dataclass
class ExactModel:
    """A built model and what decoding its solution needs.

    Attributes
    ----------
    model : pyomo.environ.ConcreteModel
    world : World
    round_seconds : float
    rounds : int
    objective : str
    keys : list of (job index, round, GPU type)
        The index set of ``x`` and ``u``.
    matters : dict of str to bool
        Per type, whether placement changes a rate.
    build_seconds : float
    size : dict of str to int
    """

    model: Any
    world: World
    round_seconds: float
    rounds: int
    objective: str
    keys: list[tuple[int, int, str]]
    matters: dict[str, bool]
    build_seconds: float
    size: dict[str, int] = field(default_factory=dict)

    def value(self) -> float:
        """The objective of the current solution, from its completion times ``L T_j`` alone.

        Equal to the solver's objective at an optimum; for an incumbent it ignores the slack a
        solver may leave in the makespan variable or in a deadline indicator, so that it is
        the value of the schedule itself.
        """
        import pyomo.environ as pyo

        L = self.round_seconds
        done = [L * float(pyo.value(self.model.finish[j.index])) for j in self.world.jobs]
        if self.objective == "weighted-jct":
            return sum(
                j.weight * (c - j.arrival) for j, c in zip(self.world.jobs, done, strict=True)
            )
        if self.objective == "makespan":
            return max(done)
        return float(
            sum(
                1
                for j, c in zip(self.world.jobs, done, strict=True)
                if not math.isnan(j.deadline) and leq(c, j.deadline, TIME_TOL)
            )
        )

    def plan(self) -> list[dict[str, GrantPlacement]]:
        """The per-round placements of the model's current solution."""
        by_round: list[dict[str, str]] = [{} for _ in range(self.rounds)]
        for j, k, g in self.keys:
            v = self.model.x[j, k, g].value
            if v is not None and v > 0.5:
                by_round[k][self.world.jobs[j].job_id] = g
        return [pack_round(self.world, r, self.matters) for r in by_round]


def build_model(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    clock: BuildClock | None = None,
) -> ExactModel:
    """Build the time-indexed model (see the module notes).

    ``clock`` (optional) is checked while each constraint family is built, so a time limit
    stops a large model's build within a hundred rows.

    Raises
    ------
    InvalidInstanceError
        An unknown ``objective``, ``round_seconds`` not > 0, ``rounds`` not an integer >= 1, a
        world outside the model (:func:`check_world`), or a model over
        ``limits.max_model_variables``.
    """
    import pyomo.environ as pyo

    t0 = time.perf_counter()
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    L = _check_round_seconds(round_seconds)
    matters = check_world(world)
    if rounds is None:
        rounds = default_rounds(world, L)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InvalidInstanceError("rounds", f"must be an integer >= 1, got {rounds!r}")
    K = rounds
    n_types = len(world.cluster.gpu_types)
    limits.check_size(
        "rounds", 2.0 * len(world.jobs) * K * (n_types + 1), "max_model_variables", "variables"
    )
    eps = last_run_floor(world, L, K)
    jobs = world.jobs
    first = [earliest_round(j.arrival, L) for j in jobs]
    types = {j.index: _types_for(world, j) for j in jobs}
    keys = [(j.index, k, g) for j in jobs for k in range(first[j.index], K) for g in types[j.index]]
    ek = [(j.index, k) for j in jobs for k in range(first[j.index], K)]
    for j in jobs:
        if first[j.index] >= K:
            raise InvalidInstanceError(
                "rounds", f"job {j.job_id!r} arrives after the last of the {K} rounds"
            )
    share = {
        (j.index, g): world.rate(j, g, True) * L / j.work for j in jobs for g in types[j.index]
    }
    by_jk: dict[tuple[int, int], list[str]] = {}
    for ji, k, g in keys:
        by_jk.setdefault((ji, k), []).append(g)
    by_kg: dict[tuple[int, str], list[int]] = {}
    for ji, k, g in keys:
        by_kg.setdefault((k, g), []).append(ji)

    def tick(stage: str, rule: Any) -> Any:
        return rule if clock is None else clock.rule(rule, stage)

    m = pyo.ConcreteModel(name=f"sim_exact_{objective}")
    m.x = pyo.Var(keys, domain=pyo.Binary)
    m.u = pyo.Var(keys, bounds=(0.0, 1.0))
    m.e = pyo.Var(ek, domain=pyo.Binary)
    count = {t.name: t.count for t in world.cluster.gpu_types}
    m.capacity = pyo.Constraint(
        list(by_kg),
        rule=tick(
            "capacity",
            lambda _, k, g: sum(jobs[j].num_gpus * m.x[j, k, g] for j in by_kg[k, g]) <= count[g],
        ),
    )
    m.no_run_after_final = pyo.Constraint(
        ek,
        rule=tick(
            "no_run_after_final",
            lambda _, j, k: (
                sum(m.x[j, k, g] for g in by_jk.get((j, k), []))
                <= sum(m.e[j, q] for q in range(k, K))
            ),
        ),
    )
    m.one_final = pyo.Constraint(
        [j.index for j in jobs],
        rule=tick("one_final", lambda _, j: sum(m.e[j, k] for k in range(first[j], K)) == 1),
    )
    m.final_round_runs = pyo.Constraint(
        ek,
        rule=tick(
            "final_round_runs",
            lambda _, j, k: sum(m.x[j, k, g] for g in by_jk.get((j, k), [])) >= m.e[j, k],
        ),
    )
    m.run_upper = pyo.Constraint(
        keys, rule=tick("run_upper", lambda _, j, k, g: m.u[j, k, g] <= m.x[j, k, g])
    )
    m.full_round = pyo.Constraint(
        keys, rule=tick("full_round", lambda _, j, k, g: m.u[j, k, g] >= m.x[j, k, g] - m.e[j, k])
    )
    m.last_run_positive = pyo.Constraint(
        keys, rule=tick("last_run_positive", lambda _, j, k, g: m.u[j, k, g] >= eps * m.x[j, k, g])
    )
    # valid cuts: a job finishes no earlier than its fastest full rounds allow (fixing e), and
    # a job that is done by round k has had all its work by then (finished_by)
    cmax = {j.index: max(share[j.index, g] for g in types[j.index]) for j in jobs}
    for j in jobs:
        need = max(1, math.ceil((1.0 - 1e-9) / cmax[j.index]))
        for k in range(first[j.index], min(K, first[j.index] + need - 1)):
            m.e[j.index, k].fix(0)
    m.finished_by = pyo.Constraint(
        ek,
        rule=tick(
            "finished_by",
            lambda _, j, k: (
                sum(share[j, g] * m.x[j, q, g] for q in range(first[j], k + 1) for g in by_jk[j, q])
                >= sum(m.e[j, q] for q in range(first[j], k + 1))
            ),
        ),
    )
    own: dict[int, list[tuple[int, int, str]]] = {j.index: [] for j in jobs}
    for key in keys:
        own[key[0]].append(key)
    m.work = pyo.Constraint(
        [j.index for j in jobs],
        rule=tick(
            "work", lambda _, j: sum(share[j, g] * m.u[j, k, g] for (_j, k, g) in own[j]) == 1
        ),
    )

    def finish(j: int) -> Any:
        """Completion time in rounds (the ``completion`` expression)."""
        return (
            sum(k * m.e[j, k] for k in range(first[j], K))
            + sum(m.u[key] - m.x[key] for key in own[j])
            + 1
        )

    m.finish = pyo.Expression([j.index for j in jobs], rule=lambda _, j: finish(j))

    if objective == "weighted-jct":
        m.objective = pyo.Objective(
            expr=sum(j.weight * (L * finish(j.index) - j.arrival) for j in jobs),
            sense=pyo.minimize,
        )
    elif objective == "makespan":
        m.span = pyo.Var(bounds=(0.0, K * L))
        m.span_def = pyo.Constraint(
            [j.index for j in jobs], rule=tick("span_def", lambda _, j: m.span >= L * finish(j))
        )
        m.objective = pyo.Objective(expr=m.span, sense=pyo.minimize)
    else:
        due = [j for j in jobs if not math.isnan(j.deadline)]
        m.met = pyo.Var([j.index for j in due], domain=pyo.Binary)
        m.deadline = pyo.Constraint(
            [j.index for j in due],
            rule=tick(
                "deadline", lambda _, j: finish(j) <= jobs[j].deadline / L + K * (1 - m.met[j])
            ),
        )
        m.objective = pyo.Objective(
            expr=sum(m.met[j.index] for j in due) if due else 0.0, sense=pyo.maximize
        )
    size = {
        "jobs": len(jobs),
        "rounds": K,
        "gpu_types": n_types,
        "variables": 2 * len(keys) + len(ek),
        "binaries": len(keys) + len(ek),
    }
    return ExactModel(
        model=m,
        world=world,
        round_seconds=L,
        rounds=K,
        objective=objective,
        keys=keys,
        matters=matters,
        build_seconds=time.perf_counter() - t0,
        size=size,
    )


def objective_value(world: World, record: SimResult, objective: str) -> float:
    """``objective`` recomputed from a simulation record alone (every job must have finished).

    ``weighted-jct`` is the validator's total weighted JCT, ``makespan`` its last completion
    time, ``deadlines`` the number of jobs whose completion is at most their deadline (within
    :data:`~optsched.tolerances.TIME_TOL` relative).
    """
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    if objective == "deadlines":
        return float(
            sum(
                1
                for j, c in zip(world.jobs, record.completion, strict=True)
                if not math.isnan(j.deadline) and not math.isnan(c) and leq(c, j.deadline, TIME_TOL)
            )
        )
    report = validate(world, record)
    value = report.objective if objective == "weighted-jct" else report.objectives["makespan"]
    if value is None:
        raise ModelError(f"{objective}: no job finished in the record")
    return float(value)


def solve(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: None = None,
    accept_feasible: bool = False,
) -> ExactResult[SimResult]:
    """The optimal schedule of ``world`` in rounds of ``round_seconds``, replayed and checked.

    Parameters
    ----------
    world : World
    round_seconds : float
        Round length ``L`` (s).
    objective : {"weighted-jct", "makespan", "deadlines"}
    rounds : int, optional
        Rounds ``K`` (default :func:`default_rounds`).
    solver, time_limit, mip_gap, threads, solver_options
        As :func:`optsched.family.exact.exact_solve` (``solver_options`` go to the solver as
        is, e.g. ``{"mip_max_nodes": 1}`` for HiGHS; ``solver="scip"`` works too).
    warm_start : None
        The model takes no MIP start (accepted for the common vocabulary; anything else is
        refused).
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising.

    Returns
    -------
    ExactResult of SimResult
        The solution is the replay's record (``policy == "exact-<objective>"``); ``objective``
        the solver's, checked against the record's recomputed value by the exact-solve path
        (:mod:`optsched.family.exact`); ``extra`` holds ``rounds``, ``round_seconds`` and the
        plan (job ids per round and type).

    Raises
    ------
    InvalidInstanceError
        See :func:`build_model`; ``rounds`` too few for every job to finish; a job with a
        ``batch_schedule`` (field ``batch_schedule``).
    NotOptimalError
        Optimality not proven and ``accept_feasible`` false; ``error.result`` is the
        :class:`ExactResult` with the incumbent's record when there is one.
    InconsistentResultError
        The replayed record fails the validator or leaves a job unfinished, or its objective
        differs from the solver's.

    Notes
    -----
    An incumbent may leave slack in the makespan variable or a deadline indicator; the
    exact-solve path polishes every incumbent (the runs ``x`` and final rounds ``e`` fixed,
    the rest solved again), so the solver's objective is that of the schedule replayed.
    """
    from optsched.family.exact import exact_solve

    if warm_start is not None:
        raise InvalidInstanceError("warm_start", "the exact simulator model takes no warm start")
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        # the model gives a job one rate per GPU type; batch-size phases change it with progress
        raise InvalidInstanceError(
            "batch_schedule",
            f"the exact model has no batch-size phases (jobs {', '.join(dynamic[:5])}); build "
            "the world with batch_modes=False",
        )
    try:
        return exact_solve(
            formulation(world, round_seconds, objective, rounds=rounds),
            solver=solver,
            time_limit=time_limit,
            mip_gap=mip_gap,
            threads=threads,
            solver_options=solver_options,
            accept_feasible=accept_feasible,
        )
    except NotOptimalError as exc:
        if exc.result.status.value in ("infeasible", "infeasible_or_unbounded"):
            raise InvalidInstanceError(
                "rounds",
                f"no schedule finishes every job within {exc.result.extra['rounds']} rounds",
            ) from None
        raise


#: The variables fixed when an incumbent is polished: which jobs run when, and their last round.
POLISH = ("x", "e")


def formulation(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
) -> Formulation[SimResult]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``world``."""
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    plans: dict[str, list[dict[str, list[str]]]] = {}

    def build(clock: BuildClock) -> ExactModel:
        built = build_model(world, round_seconds, objective, rounds=rounds, clock=clock)
        clock.check("model")
        return built

    def extract(built: ExactModel, _point: Any) -> SimResult:
        plan = built.plan()
        plans["plan"] = [
            {g: [jid for jid, p in r.items() if p.gpu_type == g] for g in _types_of(r)}
            for r in plan
        ]
        return replay_rounds(world, plan, built.round_seconds, name=f"exact-{objective}")

    def check(record: SimResult) -> Report:
        report = validate(world, record)
        if not record.all_finished:
            report.violations.append(
                Violation("finished", f"exact {objective}: a job is unfinished in the replay")
            )
        return report

    return Formulation(
        sense=OBJECTIVES[objective],
        objective_name=objective,
        build=build,
        extract=extract,
        validate=check,
        objective_of=lambda record, _report: objective_value(world, record, objective),
        size=lambda built: built.size,
        extra=lambda built, _record, _result: {
            "rounds": built.rounds,
            "round_seconds": built.round_seconds,
            "plan": plans.get("plan", []),
        },
        polish=POLISH,
        solvable=lambda built: built.model,
    )


def _types_of(placements: Mapping[str, GrantPlacement]) -> list[str]:
    """The GPU types of one round's placements, in first-seen order."""
    return list(dict.fromkeys(p.gpu_type for p in placements.values()))
