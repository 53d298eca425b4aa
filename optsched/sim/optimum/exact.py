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
:math:`\min \sum_j w_j (L T_j - a_j)`; ``makespan`` :math:`\min M - a_0,\ M \ge L T_j`
with :math:`a_0 = \min_j a_j` the first arrival (the run metric's makespan: the last completion
time minus the first arrival, so that no value depends on where the trace's clock started);
``deadlines``
:math:`\max \sum_j m_j,\ T_j \le d_j / L + K (1 - m_j)` over jobs with a deadline.

Strengthened model (``strengthen=True``, the default; ``False`` builds the plain model above,
with the same optimum). With :math:`\bar c_j = \max_g c_{jg}`, :math:`P_j = n_j / \bar c_j`,
:math:`C = \sum_g C_g`, :math:`W_{j,k-1} = \sum_{q<k,g} c_{jg} x_{jqg}`:

.. math::

    T_j \text{ a variable} = \text{the completion expression}      & \text{(completion)} \\
    \textstyle\sum_g (x_{jkg} - u_{jkg}) \le (1 - \varepsilon)\, e_{jk} & \text{(partial\_last)} \\
    T_j \ge k_j + 1 / \bar c_j                                      & \text{(completion\_floor)} \\
    T_i \le T_j \text{ for interchangeable } i < j                  & \text{(interchangeable)} \\
    \textstyle\sum_{j \in S} P_j T_j \ge P(S)\,(\min_S k_j + P(S) / 2C)
        + \sum_{j \in S} P_j / (2 \bar c_j)                         & \text{(area\_cut)} \\
    c_{jg} u_{jkg} = x_{jkg} \text{ if } \min_g c_{jg} \ge 1       & \text{(one\_round)} \\
    x_{jkg} \le e_{jk} \text{ if } c_{jg} \ge 1                     & \text{(ends\_on\_fast)} \\
    c_{jg} u_{jkg} + W_{j,k-1} \ge x_{jkg} + e_{jk} - 1             & \text{(last\_share)}

Each holds at every schedule of the model, or (``interchangeable``) at one optimum of every
set of equal ones; the proofs are in :func:`completion_floor`, :func:`interchangeable_groups`,
``pyomo_model._strengthen``, ``pyomo_model._last_run_cuts`` and the formulation page. Given
a MIP start of value :math:`U` (:func:`start_from_record`, checked by :func:`set_start`), the
rounds in which a job could only end in a schedule worse than :math:`U` are not built
(:func:`latest_final_rounds`).

For HiGHS (``weighted-jct`` and ``makespan``), :func:`solve` builds the same strengthened model
as sparse matrices instead (:mod:`optsched.sim.optimum.exact_matrix`), with further valid rows (the
last-run type, gang cliques, parity cuts), the rounds a compact schedule uses, and the root
work (LP relaxation, a start from it, reduced-cost fixing) done before the search.

Where it lives: what both models read about the round world (the grid, floors, index sets,
starts and objective values) is :mod:`optsched.sim.optimum.rounds`; the Pyomo model is
:mod:`optsched.sim.optimum.pyomo_model`; this module solves either (:func:`solve`,
:func:`formulation`), translates and writes starts (:func:`start_from_record`,
:func:`set_start`) and repairs incumbents (:func:`repair_incumbent`). Every public name of
those modules the exact model documents is importable from here.

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

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from optsched.errors import (
    InvalidInstanceError,
    ModelError,
    NotOptimalError,
)
from optsched.family.exact import Formulation
from optsched.results import ExactResult
from optsched.sim.measure.record import SimResult
from optsched.sim.optimum.pyomo_model import ExactModel, build_model
from optsched.sim.optimum.rounds import (
    OBJECTIVES,
    POLISH,
    MipStart,
    ReplayedPlan,
    area_sets,
    check_round_seconds,
    check_world,
    completion_floor,
    default_rounds,
    earliest_round,
    interchangeable_groups,
    last_run_floor,
    latest_final_rounds,
    model_run,
    objective_value,
    one_round_jobs,
    ordered_start,
    pack_round,
    value_of,
)
from optsched.sim.world.jobs import World
from optsched.solvers import BuildClock
from optsched.tolerances import CAPACITY_TOL, TIME_TOL, leq

__all__ = [
    "OBJECTIVES",
    "POLISH",
    "ExactModel",
    "MipStart",
    "area_sets",
    "build_model",
    "check_world",
    "completion_floor",
    "default_rounds",
    "earliest_round",
    "formulation",
    "interchangeable_groups",
    "last_run_floor",
    "latest_final_rounds",
    "objective_value",
    "one_round_jobs",
    "pack_round",
    "repair_incumbent",
    "set_start",
    "solve",
    "start_from_record",
]


def _rounds_of(world: World, record: SimResult, L: float, refuse: Any) -> dict[int, dict[int, str]]:
    """Per job index, its rounds and GPU types read off the record's segments."""
    frame = record.intervals_frame()
    if len(frame) and frame["shared_with"].astype(bool).any():
        raise refuse("it shares GPUs between jobs (the model never does)")
    index = {j.job_id: j.index for j in world.jobs}
    plan: dict[int, dict[int, str]] = {j.index: {} for j in world.jobs}
    for row in frame.drop_duplicates(["job_id", "gpu_type", "start", "end"]).itertuples():
        ji = index[row.job_id]
        k0 = round(row.start / L)
        if abs(row.start - k0 * L) > TIME_TOL * max(1.0, row.start):
            raise refuse(f"job {row.job_id!r} starts at {row.start:g} s, mid-round")
        k1 = round(row.end / L)
        if abs(row.end - k1 * L) > TIME_TOL * max(1.0, row.end):
            done = record.completion[ji]
            if abs(row.end - done) > TIME_TOL * max(1.0, done):
                raise refuse(f"job {row.job_id!r} stops at {row.end:g} s, mid-round, unfinished")
            k1 = math.floor(row.end / L) + 1
        for k in range(k0, k1):
            if plan[ji].get(k, row.gpu_type) != row.gpu_type:
                raise refuse(f"job {row.job_id!r} changes GPU type within round {k}")
            plan[ji][k] = row.gpu_type
    return plan


def start_from_record(
    world: World,
    record: SimResult,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
) -> MipStart:
    r"""Translate a run of the round-based world into a start of the model, or say why not.

    The run must be on the model's grid (``record.round_seconds == round_seconds``), finish
    every job, share no GPUs, and decide only at round starts: every segment starts at a round
    start and ends at a round end or at its job's completion. Each job's rounds and GPU types
    are then read off its segments and carried out in the model's semantics (consolidated
    rates, full rounds but the last): the first round at which its shares
    :math:`\sum c_{jg}` reach 1 is its last, with :math:`u = (1 - \text{done before}) /
    c_{jg}`. Runs after that round are dropped, which only happens when the record ran a gang
    spread, slower than the model's consolidated rate; each such repair is listed in
    ``notes``. Capacity per type and round, admissible rounds and types, the horizon and the
    floor :math:`u \ge \varepsilon` are checked.

    Raises
    ------
    InvalidInstanceError
        Field ``warm_start``, naming the policy and the first reason the run does not map
        onto the model (a mid-round decision, sharing, another grid, an unfinished job, a
        last run shorter than :math:`\varepsilon L`, a run beyond the horizon...).
    """
    L = check_round_seconds(round_seconds)
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    check_world(world)
    name = getattr(record, "policy", "?")

    def refuse(why: str) -> InvalidInstanceError:
        return InvalidInstanceError(
            "warm_start", f"the run of {name} is no start of the model: {why}"
        )

    if not isinstance(record, SimResult):
        raise InvalidInstanceError(
            "warm_start", f"must be a SimResult or a MipStart, got {type(record).__name__}"
        )
    ours = [(j.job_id, j.work, j.num_gpus) for j in world.jobs]
    theirs = [(j.job_id, j.work, j.num_gpus) for j in record.world.jobs]
    if ours != theirs:
        raise refuse("it is of another world (its jobs differ)")
    if record.round_seconds is None or not math.isclose(
        record.round_seconds, L, rel_tol=0.0, abs_tol=TIME_TOL
    ):
        raise refuse(f"it ran on rounds of {record.round_seconds} s, the model on {L:g} s")
    if not record.all_finished:
        raise refuse(f"{record.unfinished} job(s) unfinished")
    K = default_rounds(world, L) if rounds is None else rounds
    eps = last_run_floor(world, L, K)
    plan = _rounds_of(world, record, L, refuse)
    runs: list[tuple[tuple[int, str], ...]] = []
    shares: list[float] = []
    notes: list[str] = []
    dropped: list[str] = []
    used: dict[tuple[int, str], int] = {}
    count = {t.name: t.count for t in world.cluster.gpu_types}
    for j in world.jobs:
        mine, last = model_run(world, j, plan[j.index], L, K, eps, refuse)
        for k, g in mine:
            used[k, g] = used.get((k, g), 0) + j.num_gpus
        if len(mine) < len(plan[j.index]):
            dropped.append(j.job_id)
        runs.append(tuple(mine))
        shares.append(last)
    for (k, g), n in used.items():
        if n > count[g]:
            raise refuse(f"round {k} holds {n} GPUs of {g}, above its {count[g]}")
    if dropped:
        notes.append(
            f"{len(dropped)} job(s) finish earlier at the model's consolidated rates; their "
            f"later runs dropped: {', '.join(dropped[:5])}"
        )
    done_s = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    moved = [
        j.job_id
        for j, c in zip(world.jobs, done_s, strict=True)
        if abs(c - record.completion[j.index]) > TIME_TOL * max(1.0, c)
    ]
    if moved and not dropped:
        notes.append(
            f"{len(moved)} job(s) complete at other times at the model's consolidated rates: "
            f"{', '.join(moved[:5])}"
        )
    return MipStart(
        policy=name,
        runs=tuple(runs),
        last_share=tuple(shares),
        value=value_of(world, done_s, objective),
        record_value=objective_value(world, record, objective),
        notes=tuple(notes),
    )


def _first_violation(m: Any) -> list[str]:
    """The first constraint or variable bound the model's current values violate (or none)."""
    import pyomo.environ as pyo

    bad: list[str] = []
    for c in m.component_data_objects(pyo.Constraint, active=True):
        body = float(pyo.value(c.body))
        lo, up = c.lower, c.upper
        if lo is not None and not leq(float(pyo.value(lo)), body, CAPACITY_TOL):
            bad.append(f"{c.name}: {body:.9g} < {float(pyo.value(lo)):.9g}")
        if up is not None and not leq(body, float(pyo.value(up)), CAPACITY_TOL):
            bad.append(f"{c.name}: {body:.9g} > {float(pyo.value(up)):.9g}")
        if bad:
            break
    for v in m.component_data_objects(pyo.Var, active=True):
        if v.value is None:
            bad.append(f"{v.name}: no value")
        elif (v.lb is not None and not leq(v.lb, v.value, CAPACITY_TOL)) or (
            v.ub is not None and not leq(v.value, v.ub, CAPACITY_TOL)
        ):
            bad.append(f"{v.name}: {v.value:.9g} outside its bounds")
        if bad:
            break
    return bad


def set_start(built: ExactModel, start: MipStart) -> list[str]:
    """Write ``start`` into the model's variables and check it against every constraint.

    Interchangeable jobs' schedules are first reordered by completion (the ``interchangeable``
    order, same value). Every variable gets a value (0 where the start does not run); the
    objective's own variables (``span``, ``met``) get the value of the schedule.

    Returns
    -------
    list of str
        The repairs made (for ``extra``).

    Raises
    ------
    ModelError
        The start violates a constraint, a fixed variable or a bound of the model (named), or
        runs where the model has no variable (a pruned round).
    """
    m = built.model
    start, notes = ordered_start(built.interchangeable, start)
    for v in m.x.values():
        v.set_value(0, skip_validation=True)
    for v in m.u.values():
        v.set_value(0.0, skip_validation=True)
    for v in m.e.values():
        if not v.fixed:
            v.set_value(0, skip_validation=True)
    world = built.world
    for j in world.jobs:
        runs, u = start.runs[j.index], start.last_share[j.index]
        for pos, (k, g) in enumerate(runs):
            if (j.index, k, g) not in m.x:
                raise ModelError(
                    f"start of {start.policy}: job {j.job_id!r} has no round {k} on {g}"
                )
            last = pos == len(runs) - 1
            m.x[j.index, k, g].set_value(1, skip_validation=True)
            m.u[j.index, k, g].set_value(u if last else 1.0, skip_validation=True)
            if last:
                if m.e[j.index, k].fixed:
                    raise ModelError(
                        f"start of {start.policy}: job {j.job_id!r} ends in round {k}, which "
                        "the model rules out"
                    )
                m.e[j.index, k].set_value(1, skip_validation=True)
    _objective_start(built, start)
    bad = _first_violation(m)
    if bad:
        raise ModelError(f"start of {start.policy} is infeasible in the model: {bad[0]}")
    return notes


def _objective_start(built: ExactModel, start: MipStart) -> None:
    """The start's completion variables and the objective's own (``span``, ``met``)."""
    import pyomo.environ as pyo

    m, world, L = built.model, built.world, built.round_seconds
    T = start.completion_rounds()
    if hasattr(m, "T"):
        for j in world.jobs:
            m.T[j.index].set_value(float(pyo.value(m.finish[j.index])), skip_validation=True)
    if hasattr(m, "span"):
        m.span.set_value(L * max(T), skip_validation=True)
    if hasattr(m, "met"):
        for ji in m.met:
            d = world.jobs[ji].deadline
            m.met[ji].set_value(1 if leq(L * T[ji], d, TIME_TOL) and T[ji] <= d / L else 0)


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
    warm_start: SimResult | MipStart | None = None,
    accept_feasible: bool = False,
    strengthen: bool = True,
    matrix: bool | None = None,
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
    warm_start : SimResult or MipStart, optional
        A MIP start: a run of the round-based world on the same grid
        (:func:`start_from_record` translates it, or says why it cannot), or a translated
        :class:`MipStart`. It is checked against every constraint of the built model
        (:func:`set_start`) and handed to the solver; with ``strengthen`` its value also
        prunes the rounds no better schedule uses (:func:`latest_final_rounds`).
        ``extra["warm_start"]`` then holds its policy, value and repairs.
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising: the result's
        ``status`` is then ``feasible``, ``bound`` the solver's proven bound and ``gap`` the
        relative gap between them; the incumbent is replayed and validated like an optimum.
    strengthen : bool, default True
        Build with the valid inequalities (module notes); ``False`` builds the plain model,
        which has the same optimum.
    matrix : bool, optional
        Build the strengthened model as sparse matrices (:mod:`optsched.sim.optimum.exact_matrix`:
        no Pyomo, the rounds in linear size, and below a start the binaries only worse
        schedules set removed at the root) instead of the Pyomo model. Default: for HiGHS,
        ``strengthen`` and the objectives of
        :data:`~optsched.sim.optimum.exact_matrix.MATRIX_OBJECTIVES`. ``extra["model"]`` then says
        ``"matrix"`` and ``extra["root"]`` what the root did.

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

    start = _start_of(world, round_seconds, objective, rounds, warm_start)
    formulated, handed = _formulated(
        world, round_seconds, objective, rounds, start, strengthen, matrix, solver
    )
    # an incumbent a tolerance off integral is repaired before it is polished
    # (:func:`repair_incumbent`), so one attempt, at the solver's own tolerances, is the answer
    with _infeasible_as_rounds():
        return exact_solve(
            formulated,
            solver=solver,
            time_limit=time_limit,
            mip_gap=mip_gap,
            threads=threads,
            solver_options=solver_options,
            warm_start=handed,
            accept_feasible=accept_feasible,
        )


@contextlib.contextmanager
def _infeasible_as_rounds() -> Iterator[None]:
    """An infeasible model as the field-named error it means: too few rounds (``rounds``)."""
    try:
        yield
    except NotOptimalError as exc:
        if exc.result.status.value in ("infeasible", "infeasible_or_unbounded"):
            raise InvalidInstanceError(
                "rounds",
                f"no schedule finishes every job within {exc.result.extra['rounds']} rounds",
            ) from None
        raise


def _start_of(
    world: World,
    round_seconds: float,
    objective: str,
    rounds: int | None,
    warm_start: SimResult | MipStart | None,
) -> MipStart | None:
    """:func:`solve`'s start, translated from a record if need be; a world the model refuses.

    Raises
    ------
    InvalidInstanceError
        As :func:`start_from_record`; a job with a ``batch_schedule`` (field ``batch_schedule``).
    """
    start: MipStart | None = None
    if isinstance(warm_start, MipStart):
        start = warm_start
    elif warm_start is not None:
        start = start_from_record(world, warm_start, round_seconds, objective, rounds=rounds)
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        # the model gives a job one rate per GPU type; batch-size phases change it with progress
        raise InvalidInstanceError(
            "batch_schedule",
            f"the exact model has no batch-size phases (jobs {', '.join(dynamic[:5])}); build "
            "the world with batch_modes=False",
        )
    return start


def _formulated(
    world: World,
    round_seconds: float,
    objective: str,
    rounds: int | None,
    start: MipStart | None,
    strengthen: bool,
    matrix: bool | None,
    solver: str,
) -> tuple[Formulation[SimResult], Any]:
    """:func:`solve`'s formulation (the matrix model's or the Pyomo model's) and warm start.

    The matrix model takes its start as a :class:`~optsched.solvers.matrix.MatrixSolution` its
    build fills (:func:`~optsched.sim.optimum.exact_matrix.placeholder_start`); the Pyomo
    model the :class:`MipStart` itself.

    Raises
    ------
    InvalidInstanceError
        ``matrix`` asked for the plain model or an objective it does not state (field
        ``matrix``).
    """
    from optsched.sim.optimum import exact_matrix

    objectives = exact_matrix.MATRIX_OBJECTIVES
    if matrix is None:
        matrix = solver == "highs" and strengthen and objective in objectives
    elif matrix and (not strengthen or objective not in objectives):
        raise InvalidInstanceError(
            "matrix",
            "the matrix model is the strengthened one, for "
            f"{', '.join(objectives)}; got strengthen={strengthen}, objective {objective!r}",
        )
    if matrix:
        handed = exact_matrix.placeholder_start()
        return exact_matrix.formulation(
            world, round_seconds, objective, rounds=rounds, start=start, handed=handed
        ), handed
    return formulation(
        world, round_seconds, objective, rounds=rounds, start=start, strengthen=strengthen
    ), start


def repair_incumbent(built: ExactModel, _point: Any = None) -> bool:
    r"""Write the schedule the incumbent's runs carry out into the model, before polishing.

    HiGHS accepts integrality within :math:`10^{-6}`, about the last-run floor
    :math:`\varepsilon`: an incumbent may run a job :math:`1 - 10^{-6}` of a round with
    :math:`x = 1 - 10^{-6}`, then end it a round later with a floor-sized last run doing the
    work that left undone. Rounded and fixed, those :math:`x, e` are no point of the model (the
    round done fully finishes the job, and the last run must still be
    :math:`\ge \varepsilon`). Here each job's runs (:math:`x > 1/2`) are carried out in the
    model's semantics instead, as for a start (:func:`model_run`): its last round is the first
    whose shares reach 1, later runs are dropped, the last share is what work is left. That
    schedule is written and checked (:func:`set_start`), so the values fixed are a point of the
    model by construction.

    Returns
    -------
    bool
        Whether it wrote the repaired schedule; ``False`` leaves the incumbent as it was (the
        runs finish no job within the rounds and floor of the model, or the schedule breaks
        a row: the polish then reports the plain rounding's infeasibility).
    """
    world, L, m = built.world, built.round_seconds, built.model
    plans: list[dict[int, str]] = [{} for _ in world.jobs]
    for j, k, g in built.keys:
        v = m.x[j, k, g].value
        if v is not None and v > 0.5:
            if k in plans[j]:
                return False  # two types in one round: no schedule to carry out
            plans[j][k] = g

    class _Refused(Exception):
        pass

    def refuse(_why: str) -> _Refused:
        return _Refused()

    eps = last_run_floor(world, L, built.horizon)
    runs: list[tuple[tuple[int, str], ...]] = []
    shares: list[float] = []
    try:
        for job in world.jobs:
            mine, last = model_run(world, job, plans[job.index], L, built.rounds, eps, refuse)
            runs.append(tuple(mine))
            shares.append(last)
    except _Refused:
        return False
    done = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    value = value_of(world, done, built.objective)
    start = MipStart("incumbent", tuple(runs), tuple(shares), value, value)
    import pyomo.environ as pyo

    saved = [(v, v.value) for v in m.component_data_objects(pyo.Var, active=True)]
    try:
        set_start(built, start)
    except ModelError:
        for v, value_ in saved:
            v.set_value(value_, skip_validation=True)
        return False
    return True


def formulation(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    start: MipStart | None = None,
    strengthen: bool = True,
) -> Formulation[SimResult]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``world``.

    With ``start`` the model is built below its value (``strengthen`` only) and the start is
    written into it, checked, as the solver's MIP start (:func:`set_start`).
    """
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    replayed = ReplayedPlan(world, objective)

    held: dict[str, Any] = {}

    def build(clock: BuildClock) -> ExactModel:
        built = build_model(
            world,
            round_seconds,
            objective,
            rounds=rounds,
            clock=clock,
            strengthen=strengthen,
            upper_bound=None if start is None else start.value,
        )
        clock.check("model")
        if start is not None:
            # written and checked here, so that the check counts against the time limit
            held["repairs"] = set_start(built, start)
            clock.check("start")
        return built

    def write_start(_model: Any, _given: MipStart) -> None:
        """Nothing left to write: ``build`` has loaded the checked start into the model."""

    def extract(built: ExactModel, _point: Any) -> SimResult:
        return replayed.replay(built.plan(), built.round_seconds)

    return Formulation(
        sense=OBJECTIVES[objective],
        objective_name=objective,
        build=build,
        extract=extract,
        validate=replayed.check,
        objective_of=lambda record, _report: objective_value(world, record, objective),
        size=lambda built: built.size,
        extra=lambda built, _record, _result: {
            "rounds": built.horizon,
            "model_rounds": built.rounds,
            "round_seconds": built.round_seconds,
            "strengthened": built.strengthened,
            "plan": replayed.plan,
            "warm_start": None
            if start is None
            else {**start.summary(), "notes": [*start.notes, *held.get("repairs", [])]},
        },
        polish=POLISH,
        repair=repair_incumbent,
        set_start=None if start is None else write_start,
        solvable=lambda built: built.model,
    )
