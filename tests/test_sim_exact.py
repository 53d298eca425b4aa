"""The exact model of the round-based world against brute force, its replay and every policy."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from strategies.sim import small_worlds, typed_world

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.sim import SimResult, World, replay_rounds, simulate, validate
from optsched.sim.optimum.exact import (
    OBJECTIVES,
    build_model,
    default_rounds,
    earliest_round,
    objective_value,
    pack_round,
    solve,
)
from optsched.sim.policies import POLICIES, make_policy
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

pytestmark = pytest.mark.solver("highs")


@functools.cache
def _brute(case: int) -> dict[str, float]:
    """Best value of every objective over every per-round assignment (job -> type or idle).

    Rounds before a job's arrival are idle for it; every plan is replayed by the engine and
    checked by the validator.
    """
    rows, types_, L, K = TINY[case]
    world = typed_world(rows, types_)
    types = world.cluster.names
    jobs = world.jobs
    slots = [(k, j) for k in range(K) for j in jobs if k >= earliest_round(j.arrival, L)]
    best = {o: math.inf if s == "min" else -math.inf for o, s in OBJECTIVES.items()}
    for combo in itertools.product((None, *types), repeat=len(slots)):
        plan: list[dict[str, str]] = [{} for _ in range(K)]
        used: dict[tuple[int, str], int] = {}
        for (k, j), g in zip(slots, combo, strict=True):
            if g is not None:
                plan[k][j.job_id] = g
                used[k, g] = used.get((k, g), 0) + j.num_gpus
        if any(v > world.cluster.count(g) for (_, g), v in used.items()):
            continue
        record = replay_rounds(world, plan, L)
        if not record.all_finished:
            continue
        assert validate(world, record).ok
        for o, s in OBJECTIVES.items():
            v = objective_value(world, record, o)
            best[o] = min(best[o], v) if s == "min" else max(best[o], v)
    return best


# -- the model against brute force on tiny worlds --------------------------------------------


TINY = [
    # two jobs on one GPU, the second arriving mid-round
    (
        [
            {"arrival": 0.0, "duration": 3.5, "weight": 1.0, "deadline": 8.0},
            {"arrival": 2.0, "duration": 1.5, "weight": 2.0, "deadline": 9.0},
        ],
        {"slow": (1, 1)},
        5.0,
        4,
    ),
    # two types of different speed, jobs of model A (rates differ by type)
    (
        [
            {"arrival": 0.0, "model": "A", "duration": 9.0, "weight": 1.0, "deadline": 6.0},
            {"arrival": 0.0, "model": "A", "duration": 4.0, "weight": 1.0, "deadline": 6.0},
            {"arrival": 4.0, "model": "B", "duration": 2.0, "weight": 3.0, "deadline": 8.0},
        ],
        {"fast": (1, 1), "slow": (1, 1)},
        4.0,
        3,
    ),
    # gangs of two and a single job on one two-GPU server
    (
        [
            {"arrival": 0.0, "model": "A", "num_gpus": 2, "duration": 4.0, "deadline": 7.0},
            {"arrival": 1.0, "model": "B", "num_gpus": 1, "duration": 3.0, "deadline": 5.0},
            {"arrival": 1.0, "model": "A", "num_gpus": 2, "duration": 3.0, "deadline": 8.0},
        ],
        {"fast": (2, 2)},
        3.0,
        4,
    ),
]


@pytest.mark.parametrize("case", range(len(TINY)))
@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_exact_matches_brute_force(case: int, objective: str) -> None:
    rows, types, L, K = TINY[case]
    world = typed_world(rows, types)
    brute = _brute(case)[objective]
    assert math.isfinite(brute)
    res = solve(world, L, objective, rounds=K)
    assert res.optimal
    assert res.objective is not None and within(res.objective, brute, OBJECTIVE_AGREEMENT_TOL)
    record = res.solution
    assert isinstance(record, SimResult)
    assert validate(world, record).ok and record.all_finished
    assert within(objective_value(world, record, objective), brute, OBJECTIVE_AGREEMENT_TOL)
    assert res.bound is not None


def test_one_job_alone_completes_at_its_duration_on_the_fastest_type() -> None:
    world = typed_world(
        [{"arrival": 0.0, "model": "A", "total_steps": 30.0}], {"fast": (4, 4), "slow": (4, 4)}
    )
    res = solve(world, 4.0)
    # model A alone on one fast GPU: 2 steps/s (table base 1.0 x speed 2.0), so 15 s
    assert res.objective is not None and within(res.objective, 15.0, OBJECTIVE_AGREEMENT_TOL)
    assert res.solution is not None and res.solution.completion == pytest.approx([15.0])


def test_arrival_waits_for_the_next_round() -> None:
    world = typed_world([{"arrival": 1.0, "duration": 2.0}], {"fast": (1, 1)})
    res = solve(world, 5.0)
    # a duration on the reference type (fast); arrives at 1 s, the first round after it
    # starts at 5 s, done at 7 s: JCT 6 s
    assert res.objective is not None and within(res.objective, 6.0, OBJECTIVE_AGREEMENT_TOL)
    assert earliest_round(5.0, 5.0) == 1 and earliest_round(5.0000001, 5.0) == 1
    assert earliest_round(5.1, 5.0) == 2 and earliest_round(0.0, 5.0) == 0


def test_a_gang_is_placed_consolidated_where_it_matters() -> None:
    world = typed_world(
        [
            {"job_id": "a", "model": "A", "num_gpus": 2, "duration": 5.0},
            {"job_id": "b", "model": "A", "num_gpus": 1, "duration": 5.0},
            {"job_id": "c", "model": "A", "num_gpus": 1, "duration": 5.0},
            {"job_id": "d", "model": "A", "num_gpus": 4, "duration": 5.0},
        ],
        {"fast": (8, 2)},
    )
    from optsched.sim.optimum.exact import check_world

    placed = pack_round(
        world, {"b": "fast", "a": "fast", "c": "fast", "d": "fast"}, check_world(world)
    )
    gps = 2
    for p in placed.values():
        assert p.consolidated(gps)
    assert sum(p.num_gpus for p in placed.values()) == 8


# -- incumbents, refusals ---------------------------------------------------------------------


def _medium_world() -> World:
    rows = [
        {"arrival": float(a), "model": m, "duration": d, "weight": w, "deadline": a + 1.5 * d}
        for a, m, d, w in [
            (0, "A", 17.0, 1.0),
            (0, "B", 9.0, 2.0),
            (1, "A", 23.0, 1.0),
            (3, "B", 5.0, 3.0),
            (4, "A", 14.0, 1.0),
        ]
    ]
    return typed_world(rows, {"fast": (1, 1), "slow": (2, 2)})


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_a_solver_stopped_short_says_so_and_keeps_its_incumbent(objective: str) -> None:
    world = _medium_world()
    opts = {"mip_max_nodes": 1, "mip_heuristic_effort": 1.0, "presolve": "off"}
    with pytest.raises(NotOptimalError) as err:
        solve(world, 8.0, objective, solver_options=opts)
    res = solve(world, 8.0, objective, solver_options=opts, accept_feasible=True)
    assert err.value.result.status == res.status
    assert res.status.value == "feasible" and not res.optimal
    # the incumbent is replayed and validated like an optimum, and is no better than it
    assert res.solution is not None and validate(world, res.solution).ok
    assert res.objective is not None
    assert within(objective_value(world, res.solution, objective), res.objective, 1e-6)
    best = solve(world, 8.0, objective)
    assert best.objective is not None and res.bound is not None
    if OBJECTIVES[objective] == "min":
        assert res.objective >= best.objective - 1e-6
        assert res.bound <= best.objective + 1e-6
    else:
        assert res.objective <= best.objective + 1e-6
        assert res.bound >= best.objective - 1e-6


def test_refusals_name_the_field() -> None:
    world = typed_world([{"arrival": 0.0, "duration": 2.0}], {"slow": (1, 1)})
    restore = World(world.cluster, world.throughputs, world.jobs, restore_s=1.0)
    with pytest.raises(InvalidInstanceError) as err:
        build_model(restore, 5.0)
    assert err.value.field == "restore_s"
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(InvalidInstanceError) as err:
            build_model(world, bad)
        assert err.value.field == "round_seconds"
    with pytest.raises(InvalidInstanceError) as err:
        build_model(world, 5.0, "fastest")
    assert err.value.field == "objective"
    with pytest.raises(InvalidInstanceError) as err:
        build_model(world, 5.0, rounds=0)
    assert err.value.field == "rounds"
    # gangs of 2 and 3 on servers of 6 where placement changes the rate: not divisible
    odd = typed_world(
        [
            {"arrival": 0.0, "model": "A", "num_gpus": 2, "duration": 2.0},
            {"arrival": 0.0, "model": "A", "num_gpus": 3, "duration": 2.0},
        ],
        {"fast": (6, 6)},
    )
    with pytest.raises(InvalidInstanceError) as err:
        build_model(odd, 5.0)
    assert err.value.field == "cluster"
    with pytest.raises(InvalidInstanceError) as err:
        solve(typed_world([{"arrival": 0.0, "duration": 20.0}], {"slow": (1, 1)}), 5.0, rounds=2)
    assert err.value.field == "rounds"


def test_the_model_size_is_budgeted_before_building() -> None:
    from optsched import limits

    world = _medium_world()
    with limits.override(max_model_variables=10), pytest.raises(InvalidInstanceError) as err:
        build_model(world, 4.0)
    assert err.value.field == "rounds"


# -- no policy beats the proven optimum ------------------------------------------------------


def _policy_value(world: World, record: SimResult, objective: str) -> float:
    return objective_value(world, record, objective)


@settings(max_examples=15)
@given(
    world=small_worlds(),
    L=st.sampled_from([2.0, 5.0]),
    objective=st.sampled_from(sorted(OBJECTIVES)),
)
def test_no_policy_beats_the_proven_optimum(world: World, L: float, objective: str) -> None:
    K = default_rounds(world, L)
    assume(K <= 40)
    res = solve(world, L, objective, rounds=K)
    assert res.optimal and res.objective is not None
    better = -1.0 if OBJECTIVES[objective] == "min" else 1.0
    for name in POLICIES:
        policy = make_policy(name)
        if policy.refuses(world) is not None:  # AlloX: single-GPU jobs only
            event("policy refuses the world")
            continue
        record = simulate(world, policy, round_seconds=L)
        assert validate(world, record).ok
        shared = (
            bool(record.intervals_frame()["shared_with"].astype(bool).any())
            if len(record.intervals_frame())
            else False
        )
        # the round world has decisions at round starts only and no space sharing; a policy
        # that woke mid-round or shared GPUs acts in a larger world, and a run past the K rounds
        # is outside the model's horizon
        if record.extra.get("wakeups", 0) or shared or not record.all_finished:
            event("policy outside the round world")
            continue
        if max(record.completion) > K * L:
            event("policy past the horizon")
            continue
        event("policy compared")
        value = _policy_value(world, record, objective)
        slack = OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(res.objective))
        assert better * (value - res.objective) <= slack, (name, value, res.objective)


def test_an_incumbent_within_the_solvers_integrality_is_a_schedule() -> None:
    # job j0 needs exactly 25 full rounds on the slow type; at HiGHS's default integrality
    # (1e-6) an incumbent could end it "in" round 25 with a floor-sized last run (e = 1 - 1e-6)
    # while running round 24 fully, which no rounding of x and e turns into a schedule: the
    # runs are carried out instead (the repair), and no limit stops the solve
    rows = [
        {"arrival": 0.0, "num_gpus": 2, "model": "B", "duration": 12.5, "weight": 2.0},
        {"arrival": 0.0, "num_gpus": 1, "model": "A", "duration": 1.0, "weight": 1.0},
        {"arrival": 1.0, "num_gpus": 4, "model": "", "duration": 5.0, "weight": 1.0},
        {"arrival": 1.0, "num_gpus": 1, "model": "B", "duration": 1.0, "weight": 1.0},
    ]
    world = typed_world(rows, {"fast": (1, 1), "slow": (8, 4)})
    for strengthen in (True, False):
        got = solve(world, 1.0, "weighted-jct", strengthen=strengthen)
        assert got.status.value == "optimal"
        assert within(got.objective, 62.0, OBJECTIVE_AGREEMENT_TOL)


# -- an incumbent a tolerance off integral is repaired, not rounded --------------------------

#: A world random search found (``small_worlds``, rounds of 1 s, ``deadlines``): HiGHS's
#: incumbent ran j2 in round 15 with x = u = 1 - 5.3e-7 and ended it in round 23 with a last run
#: of 1.06e-6 (the floor) doing the work that left undone; rounded and fixed, no point of the
#: model (round 15 done fully finishes j2 in round 22), and the solve raised.
_FOUND_ROWS = [
    {"arrival": 7.0, "num_gpus": 1, "model": "A", "duration": 5.0, "weight": 1.0,
     "deadline": 27.0},
    {"arrival": 8.0, "num_gpus": 1, "model": "A", "duration": 5.0, "weight": 1.0,
     "deadline": 13.0},
    {"arrival": 8.0, "num_gpus": 1, "model": "A", "duration": 12.5, "weight": 1.0,
     "deadline": 20.5},
]  # fmt: skip
_FOUND_TYPES = {"slow": (2, 2), "fast": (1, 1)}
#: That incumbent's runs (job, round, type) and its off-integral values.
_FOUND_RUNS = [
    (0, 7, "fast"), (0, 8, "slow"), (0, 9, "slow"), (0, 10, "slow"), (0, 13, "slow"),
    (0, 14, "slow"), (0, 20, "slow"), (0, 23, "fast"),
    *((1, k, "fast") for k in range(8, 13)),
    *((2, k, "slow") for k in range(8, 13)),
    *((2, k, "fast") for k in range(13, 23)),
    (2, 23, "slow"),
]  # fmt: skip
_FOUND_FINAL = {0: 23, 1: 12, 2: 23}
_OFF = 1.0 - 5.3e-7


def _found_incumbent() -> tuple[World, object]:
    from optsched.sim.optimum.exact import ExactModel

    world = typed_world(_FOUND_ROWS, _FOUND_TYPES)
    built: ExactModel = build_model(world, 1.0, "deadlines")
    m = built.model
    for key in built.keys:
        m.x[key].set_value(0, skip_validation=True)
        m.u[key].set_value(0.0, skip_validation=True)
    for v in m.e.values():
        if not v.fixed:
            v.set_value(0, skip_validation=True)
    for j, k, g in _FOUND_RUNS:
        off = (j, k) == (2, 15)
        m.x[j, k, g].set_value(_OFF if off else 1, skip_validation=True)
        m.u[j, k, g].set_value(_OFF if off else 1.0, skip_validation=True)
    m.u[2, 23, "slow"].set_value(1.06e-6, skip_validation=True)
    for j, k in _FOUND_FINAL.items():
        m.e[j, k].set_value(1, skip_validation=True)
    return world, built


def _fixed_and_solved(built: object) -> str:
    """The status of the model solved with its ``x`` and ``e`` rounded and fixed."""
    from optsched.solvers import solve as solve_model

    m = built.model  # type: ignore[attr-defined]
    fixed = [v for name in ("x", "e") for v in getattr(m, name).values() if not v.fixed]
    for v in fixed:
        v.fix(round(v.value))
    try:
        return solve_model(m, "highs").status.value
    except NotOptimalError as exc:
        return exc.result.status.value
    finally:
        for v in fixed:
            v.unfix()


def test_the_found_incumbent_rounded_is_no_point_and_repaired_is_one() -> None:
    from optsched.sim.optimum.exact import _first_violation, repair_incumbent

    _, built = _found_incumbent()
    assert _fixed_and_solved(built) == "infeasible"  # the cause: rounding alone
    _, built = _found_incumbent()
    assert repair_incumbent(built)  # type: ignore[arg-type]
    m = built.model  # type: ignore[attr-defined]
    assert _first_violation(m) == []
    # j2's round 15 done fully finishes it at the end of round 22: the round-23 run is gone
    assert m.x[2, 15, "fast"].value == 1 and m.x[2, 23, "slow"].value == 0
    assert m.e[2, 22].value == 1 and m.u[2, 22, "fast"].value == pytest.approx(1.0)
    assert _fixed_and_solved(built) == "optimal"


def test_the_found_world_solves_to_its_optimum_at_the_solvers_default_tolerance() -> None:
    world = typed_world(_FOUND_ROWS, _FOUND_TYPES)
    # HiGHS's own default integrality, stated: the incumbent it finds is the one above
    got = solve(world, 1.0, "deadlines", solver_options={"mip_feasibility_tolerance": 1e-6})
    tight = solve(world, 1.0, "deadlines", solver_options={"mip_feasibility_tolerance": 1e-9})
    assert got.optimal and got.objective == tight.objective == 2.0
    assert got.solution is not None and validate(world, got.solution).ok


def test_the_matrix_model_repairs_runs_past_the_work_instead_of_rounding_them() -> None:
    from optsched.errors import InconsistentResultError
    from optsched.family.exact import SolveSettings, _polish_matrix
    from optsched.sim.optimum.exact_matrix import build_matrix, repaired_point
    from optsched.solvers.matrix import solve_matrix

    world = typed_world(_FOUND_ROWS, _FOUND_TYPES)
    model = build_matrix(world, 1.0, "weighted-jct")
    best = solve_matrix(model.lp)
    assert best.x is not None
    # the optimum with j1 also run, a tolerance short of 1, in a round after its last one (the
    # incumbent's trick: what rounding turns into a run past the work)
    x0 = model.offsets["x"]
    keys = {
        (int(j), int(k), int(g)): x0 + i
        for i, (j, k, g) in enumerate(zip(model.kj, model.kk, model.kg, strict=True))
    }
    full = model.full(best.x)
    done = [k for (j, k, g), c in keys.items() if j == 1 and full[c] > 0.5]
    extra = next(c for (j, k, g), c in keys.items() if j == 1 and k == max(done) + 1)
    full[extra] = _OFF
    bad = type(best)(result=best.result, x=model.reduced(full))
    with pytest.raises(InconsistentResultError):
        _polish_matrix(model.lp, SolveSettings(), bad)
    values = repaired_point(model, bad)
    assert values is not None
    assert model.full(values)[extra] == 0  # the run past the work dropped, not rounded up
    polished = _polish_matrix(model.lp, SolveSettings(), bad, values)
    assert polished.result.is_optimal
    assert within(polished.result.objective, best.result.objective, OBJECTIVE_AGREEMENT_TOL)
