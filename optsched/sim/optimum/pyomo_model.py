r"""The exact model of the round-based world as a Pyomo model (:func:`build_model`).

The model, its strengthening and the proofs are in :mod:`optsched.sim.optimum.exact`'s notes and on
the formulation page (``docs/formulations/sim_exact.rst``, whose table names each component).
:func:`build_model` builds it in named steps: the index sets (:func:`_index_sets`), the rows of
the rounds (:func:`_add_rounds`), of the work (:func:`_add_work`), the valid inequalities
(:func:`_strengthen`, :func:`_last_run_cuts`) and the objective (:func:`_add_objective`).
:class:`ExactModel` holds the built model and decodes its solution.

Complexity: :math:`O(n K G)` variables and constraints for :math:`n` jobs, :math:`K` rounds and
:math:`G` GPU types (:math:`O(n K^2 G)` non-zeros, the ``finished_by`` rows).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import GrantPlacement
from optsched.sim.optimum.rounds import (
    OBJECTIVES,
    area_sets,
    check_round_seconds,
    check_world,
    completion_floor,
    default_rounds,
    earliest_round,
    interchangeable_groups,
    last_run_floor,
    one_round_jobs,
    pack_round,
    round_stops,
    types_for,
)
from optsched.sim.world.jobs import World
from optsched.solvers import BuildClock
from optsched.tolerances import TIME_TOL, leq

__all__ = ["ExactModel", "build_model"]


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
    horizon: int = 0
    strengthened: bool = False
    interchangeable: list[list[int]] = field(default_factory=list)

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
            return max(done) - self.world.origin
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


@dataclass
class _IndexSets:
    """The index sets of the Pyomo model and the data its rows read (see :func:`build_model`)."""

    L: float
    matters: dict[str, bool]
    horizon: int
    K: int
    eps: float
    first: list[int]
    types: dict[int, list[str]]
    stop: list[int]
    keys: list[tuple[int, int, str]]
    ek: list[tuple[int, int]]
    share: dict[tuple[int, str], float]
    by_jk: dict[tuple[int, int], list[str]]
    by_kg: dict[tuple[int, str], list[int]]


def _index_sets(
    world: World,
    round_seconds: float,
    objective: str,
    rounds: int | None,
    strengthen: bool,
    upper_bound: float | None,
) -> _IndexSets:
    """Check the input and lay out the keys: per job its rounds (below ``upper_bound``), types."""
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    L = check_round_seconds(round_seconds)
    matters = check_world(world)
    if rounds is None:
        rounds = default_rounds(world, L)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InvalidInstanceError("rounds", f"must be an integer >= 1, got {rounds!r}")
    K = horizon = rounds
    n_types = len(world.cluster.gpu_types)
    limits.check_size(
        "rounds", 2.0 * len(world.jobs) * K * (n_types + 1), "max_model_variables", "variables"
    )
    # the floor depends on the requested horizon only, so a pruned model keeps the same one
    eps = last_run_floor(world, L, K)
    jobs = world.jobs
    first = [earliest_round(j.arrival, L) for j in jobs]
    types = {j.index: types_for(world, j) for j in jobs}
    for j in jobs:
        if first[j.index] >= K:
            raise InvalidInstanceError(
                "rounds", f"job {j.job_id!r} arrives after the last of the {K} rounds"
            )
    # one past each job's last admissible round: K, or less below an incumbent's value
    stop = round_stops(world, L, objective, first, K, eps, upper_bound if strengthen else None)
    K = max(stop)
    keys = [
        (j.index, k, g)
        for j in jobs
        for k in range(first[j.index], stop[j.index])
        for g in types[j.index]
    ]
    ek = [(j.index, k) for j in jobs for k in range(first[j.index], stop[j.index])]
    share = {
        (j.index, g): world.rate(j, g, True) * L / j.work for j in jobs for g in types[j.index]
    }
    by_jk: dict[tuple[int, int], list[str]] = {}
    for ji, k, g in keys:
        by_jk.setdefault((ji, k), []).append(g)
    by_kg: dict[tuple[int, str], list[int]] = {}
    for ji, k, g in keys:
        by_kg.setdefault((k, g), []).append(ji)
    return _IndexSets(
        L, matters, horizon, K, eps, first, types, stop, keys, ek, share, by_jk, by_kg
    )


def _add_rounds(m: Any, world: World, ix: _IndexSets, strengthen: bool, tick: Any) -> None:
    """The variables ``x``, ``u``, ``e`` and the rows of the rounds.

    ``capacity``, ``no_run_after_final``, ``one_final``, ``final_round_runs``, ``run_upper``,
    ``full_round``, ``partial_last`` (``strengthen``) and ``last_run_positive``.
    """
    import pyomo.environ as pyo

    jobs, keys, ek, first, stop = world.jobs, ix.keys, ix.ek, ix.first, ix.stop
    by_jk, by_kg, eps = ix.by_jk, ix.by_kg, ix.eps
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
                <= sum(m.e[j, q] for q in range(k, stop[j]))
            ),
        ),
    )
    m.one_final = pyo.Constraint(
        [j.index for j in jobs],
        rule=tick("one_final", lambda _, j: sum(m.e[j, k] for k in range(first[j], stop[j])) == 1),
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
    if strengthen:
        # only the last round may be partial: the one-type version of full_round, summed
        m.partial_last = pyo.Constraint(
            ek,
            rule=tick(
                "partial_last",
                lambda _, j, k: (
                    sum(m.x[j, k, g] - m.u[j, k, g] for g in by_jk.get((j, k), []))
                    <= (1.0 - eps) * m.e[j, k]
                ),
            ),
        )
    m.last_run_positive = pyo.Constraint(
        keys, rule=tick("last_run_positive", lambda _, j, k, g: m.u[j, k, g] >= eps * m.x[j, k, g])
    )


def _add_work(m: Any, world: World, ix: _IndexSets, tick: Any) -> Any:
    """``e`` fixed early, ``finished_by``, ``work`` and the ``finish`` expression (returned)."""
    import pyomo.environ as pyo

    jobs, ek, first, stop = world.jobs, ix.ek, ix.first, ix.stop
    share, types, by_jk = ix.share, ix.types, ix.by_jk
    # valid cuts: a job finishes no earlier than its fastest full rounds allow (fixing e), and
    # a job that is done by round k has had all its work by then (finished_by)
    cmax = {j.index: max(share[j.index, g] for g in types[j.index]) for j in jobs}
    for j in jobs:
        need = max(1, math.ceil((1.0 - 1e-9) / cmax[j.index]))
        for k in range(first[j.index], min(stop[j.index], first[j.index] + need - 1)):
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
    for key in ix.keys:
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
            sum(k * m.e[j, k] for k in range(first[j], stop[j]))
            + sum(m.u[key] - m.x[key] for key in own[j])
            + 1
        )

    m.finish = pyo.Expression([j.index for j in jobs], rule=lambda _, j: finish(j))
    return finish


def build_model(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    clock: BuildClock | None = None,
    strengthen: bool = True,
    upper_bound: float | None = None,
) -> ExactModel:
    """Build the time-indexed model (see the module notes).

    ``clock`` (optional) is checked while each constraint family is built, so a time limit
    stops a large model's build within a hundred rows.

    ``strengthen`` (default) adds the valid inequalities of :func:`_strengthen` (completion
    floors, interchangeable-job order, the aggregate-capacity cuts); ``False`` builds the plain
    model, with the same optimum. ``upper_bound`` is the value of a schedule known to be
    feasible in this model (a checked MIP start, :class:`MipStart`); with ``strengthen`` it
    removes every round at which a job could only finish in a schedule worse than it
    (:func:`latest_final_rounds`), which keeps every optimum.

    The steps: the index sets (:func:`_index_sets`), the rounds' rows (:func:`_add_rounds`),
    the work's (:func:`_add_work`), the valid inequalities (:func:`_strengthen`) and the
    objective (:func:`_add_objective`).

    Raises
    ------
    InvalidInstanceError
        An unknown ``objective``, ``round_seconds`` not > 0, ``rounds`` not an integer >= 1, a
        world outside the model (:func:`check_world`), or a model over
        ``limits.max_model_variables``.
    """
    import pyomo.environ as pyo

    t0 = time.perf_counter()
    ix = _index_sets(world, round_seconds, objective, rounds, strengthen, upper_bound)
    L, K = ix.L, ix.K

    def tick(stage: str, rule: Any) -> Any:
        return rule if clock is None else clock.rule(rule, stage)

    m = pyo.ConcreteModel(name=f"sim_exact_{objective}")
    _add_rounds(m, world, ix, strengthen, tick)
    finish = _add_work(m, world, ix, tick)
    if strengthen:
        _strengthen(m, world, L, ix.stop, tick)
    _add_objective(m, world, L, K, objective, tick, finish)
    jobs, keys, ek = world.jobs, ix.keys, ix.ek
    size = {
        "jobs": len(jobs),
        "rounds": K,
        "gpu_types": len(world.cluster.gpu_types),
        "variables": 2 * len(keys) + len(ek) + (len(jobs) if strengthen else 0),
        "binaries": len(keys) + len(ek),
    }
    return ExactModel(
        model=m,
        world=world,
        round_seconds=L,
        rounds=K,
        objective=objective,
        keys=keys,
        matters=ix.matters,
        build_seconds=time.perf_counter() - t0,
        size=size,
        horizon=ix.horizon,
        strengthened=strengthen,
        interchangeable=interchangeable_groups(world, L) if strengthen else [],
    )


def _strengthen(
    m: Any,
    world: World,
    L: float,
    stop: list[int],
    tick: Any,
) -> None:
    r"""Add the completion variable and the valid inequalities (see the module notes).

    * ``completion[j]``: :math:`T_j` equals the completion expression;
    * ``completion_floor[j]``: :math:`T_j \ge \underline T_j` (:func:`completion_floor`);
    * ``interchangeable[j]``: :math:`T_i \le T_j` for consecutive jobs :math:`i < j` of a
      group of :func:`interchangeable_groups` (sorting their runs by completion maps any
      schedule onto one that satisfies it, of the same value);
    * ``area_cut[s]``: for job sets :math:`S` (prefixes of two orders), with
      :math:`P_j = n_j / \max_g c_{jg}` GPU-rounds, :math:`C = \sum_g C_g` and
      :math:`R_S = \min_{j \in S} k_j`,

      .. math:: \sum_{j \in S} P_j T_j \ge P(S)\Big(R_S + \frac{P(S)}{2C}\Big)
                + \sum_{j \in S} \frac{P_j}{2 \max_g c_{jg}}.
    """
    import pyomo.environ as pyo

    jobs = world.jobs
    idx = [j.index for j in jobs]
    floor = completion_floor(world, L)
    m.T = pyo.Var(idx, bounds=(0.0, None))
    m.completion = pyo.Constraint(idx, rule=tick("completion", lambda _, j: m.T[j] == m.finish[j]))
    m.completion_floor = pyo.Constraint(
        idx, rule=tick("completion_floor", lambda _, j: m.T[j] >= floor[j])
    )
    pairs: list[tuple[int, int]] = []
    for group in interchangeable_groups(world, L):
        same = [j for j in group if stop[j] == stop[group[0]]]
        pairs += list(itertools.pairwise(same))
    m.interchangeable = pyo.Constraint(
        range(len(pairs)),
        rule=tick("interchangeable", lambda _, p: m.T[pairs[p][0]] <= m.T[pairs[p][1]]),
    )
    sets, coef, rhs = area_sets(world, L)
    m.area_cut = pyo.Constraint(
        range(len(sets)),
        rule=tick("area_cut", lambda _, s: sum(coef[j] * m.T[j] for j in sets[s]) >= rhs[s]),
    )
    _last_run_cuts(m, world, L, tick)


def _last_run_cuts(m: Any, world: World, L: float, tick: Any) -> None:
    r"""The last-run inequalities ``one_round``, ``ends_on_fast`` and ``last_share``.

    With :math:`W_{j,k-1} = \sum_{q<k,g} c_{jg} x_{jqg}` (the work of the runs before round
    :math:`k`, all full in a schedule):

    * ``one_round[j, k, g]``: :math:`c_{jg} u_{jkg} = x_{jkg}` for a job of
      :func:`one_round_jobs` (its only run does all its work);
    * ``ends_on_fast[j, k, g]``: :math:`x_{jkg} \le e_{jk}` where :math:`c_{jg} \ge 1`: a run
      on :math:`g` that is not the last would be a full round doing all the work, and the
      last run would add more (as in :func:`one_round_jobs`);
    * ``last_share[j, k, g]`` (the other jobs): :math:`c_{jg} u_{jkg} + W_{j,k-1} \ge x_{jkg}
      + e_{jk} - 1`, and :math:`\ge x_{jkg}` where :math:`c_{jg} \ge 1`. If round :math:`k`
      is the job's last and it runs on :math:`g`, the work before plus the last share is the
      whole work: :math:`W_{j,k-1} + c_{jg} u_{jkg} = 1`; otherwise the right side is at most
      0 (with ``ends_on_fast`` where :math:`c_{jg} \ge 1`) and the left side is not negative.

    The LP relaxation without them runs a job on two types in its last round, doing all its
    work on the fast one while holding only part of its GPUs (:math:`u \le x` is all that
    ties the two).
    """
    import pyomo.environ as pyo

    single = set(one_round_jobs(world, L))
    share = {}
    by_job: dict[int, list[tuple[int, int, str]]] = {}
    for key in m.x:
        j, _k, g = key
        share[j, g] = world.rate(world.jobs[j], g, True) * L / world.jobs[j].work
        by_job.setdefault(j, []).append(key)
    one = [key for key in m.x if key[0] in single]
    fast = [key for key in m.x if share[key[0], key[2]] >= 1.0]
    rest = [key for key in m.x if key[0] not in single]
    m.one_round = pyo.Constraint(
        one,
        rule=tick("one_round", lambda _, j, k, g: share[j, g] * m.u[j, k, g] == m.x[j, k, g]),
    )
    m.ends_on_fast = pyo.Constraint(
        fast, rule=tick("ends_on_fast", lambda _, j, k, g: m.x[j, k, g] <= m.e[j, k])
    )

    def last_share(_: Any, j: int, k: int, g: str) -> Any:
        before = sum(share[j, h] * m.x[j, q, h] for (_j, q, h) in by_job[j] if q < k)
        if share[j, g] >= 1.0:
            return share[j, g] * m.u[j, k, g] + before >= m.x[j, k, g]
        return share[j, g] * m.u[j, k, g] + before >= m.x[j, k, g] + m.e[j, k] - 1

    m.last_share = pyo.Constraint(rest, rule=tick("last_share", last_share))


def _add_objective(
    m: Any, world: World, L: float, K: int, objective: str, tick: Any, expression: Any
) -> None:
    """The objective (and its variables): of ``T`` when strengthened, else of the expression."""
    import pyomo.environ as pyo

    jobs = world.jobs

    def finish(j: int) -> Any:
        return m.T[j] if hasattr(m, "T") else expression(j)

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
        # counted from the first arrival (the run metric's makespan), whatever the trace's clock
        m.objective = pyo.Objective(expr=m.span - world.origin, sense=pyo.minimize)
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
