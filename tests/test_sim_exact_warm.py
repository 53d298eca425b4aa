"""The exact model's MIP start (a policy's run) and its valid inequalities."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from strategies.sim import small_worlds, typed_world

from optsched.errors import InvalidInstanceError, ModelError, NotOptimalError
from optsched.sim import SimResult, World, simulate, validate
from optsched.sim.optimum.exact import (
    OBJECTIVES,
    MipStart,
    build_model,
    completion_floor,
    default_rounds,
    earliest_round,
    interchangeable_groups,
    last_run_floor,
    latest_final_rounds,
    objective_value,
    set_start,
    solve,
    start_from_record,
)
from optsched.sim.policies import make_policy
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

pytestmark = pytest.mark.solver("highs")

CANDIDATES = ("fifo", "sjf", "srtf", "edf")


def _best_start(world: World, L: float, objective: str, rounds: int) -> MipStart | None:
    """The best start among the candidate policies' runs that map onto the model."""
    best: MipStart | None = None
    better = 1.0 if OBJECTIVES[objective] == "min" else -1.0
    for name in CANDIDATES:
        record = simulate(world, make_policy(name), round_seconds=L)
        try:
            start = start_from_record(world, record, L, objective, rounds=rounds)
        except InvalidInstanceError as exc:
            assert exc.field == "warm_start"
            continue
        if best is None or better * (start.value - best.value) < 0:
            best = start
    return best


def _completions(res: object) -> list[float]:
    record = res.solution  # type: ignore[attr-defined]
    assert isinstance(record, SimResult)
    return list(record.completion)


@settings(max_examples=15)
@given(
    world=small_worlds(),
    L=st.sampled_from([2.0, 5.0]),
    objective=st.sampled_from(sorted(OBJECTIVES)),
)
def test_strengthened_and_warm_started_models_keep_the_plain_optimum(
    world: World, L: float, objective: str
) -> None:
    K = default_rounds(world, L)
    assume(K <= 30)
    plain = solve(world, L, objective, rounds=K, strengthen=False)
    strong = solve(world, L, objective, rounds=K)
    assert plain.optimal and strong.optimal
    assert plain.objective is not None and strong.objective is not None
    assert within(strong.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    assert strong.extra["strengthened"] and not plain.extra["strengthened"]
    # the plain optimum satisfies every cut: completion floors and the area cuts
    T = [c / L for c in _completions(plain)]
    floor = completion_floor(world, L)
    assert all(t >= f - 1e-9 for t, f in zip(T, floor, strict=True))
    built = build_model(world, L, objective, rounds=K)
    for j in world.jobs:
        built.model.T[j.index].set_value(T[j.index])
    for cut in built.model.area_cut.values():
        assert float(cut.body()) >= float(cut.lower) - 1e-7 * max(1.0, abs(float(cut.lower)))
    start = _best_start(world, L, objective, K)
    if start is None:
        event("no policy maps onto the model")
        return
    event("warm-started")
    # the last rounds an optimum can use, below the start's value, keep the plain optimum's
    eps = last_run_floor(world, L, K)
    latest = latest_final_rounds(world, L, objective, start.value, eps)
    for t, last in zip(T, latest, strict=True):
        # T = k + u with u in [eps, 1]: the optimum's last round k
        assert math.ceil(t - 1e-9) - 1 <= last
    warm = solve(world, L, objective, rounds=K, warm_start=start)
    assert warm.optimal and warm.objective is not None
    assert within(warm.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    assert warm.extra["warm_start"]["policy"] == start.policy
    assert warm.extra["rounds"] == K and warm.extra["model_rounds"] <= K
    # the start is a schedule of the model: never better than the optimum
    better = 1.0 if OBJECTIVES[objective] == "min" else -1.0
    slack = OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(plain.objective))
    assert better * (start.value - plain.objective) >= -slack


def _fifo_world() -> tuple[World, float]:
    rows = [
        {"arrival": 0.0, "model": "A", "duration": 7.0, "weight": 1.0},
        {"arrival": 0.0, "model": "B", "duration": 3.0, "weight": 2.0},
        {"arrival": 1.0, "model": "A", "num_gpus": 2, "duration": 4.0, "weight": 1.0},
        {"arrival": 6.0, "model": "B", "duration": 2.5, "weight": 1.0},
    ]
    return typed_world(rows, {"fast": (2, 2), "slow": (2, 2)}), 3.0


def test_a_round_run_maps_exactly_onto_the_model() -> None:
    world, L = _fifo_world()
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    assert start.notes == ()
    # the model's completion times are the record's, so are the values
    assert [L * t for t in start.completion_rounds()] == pytest.approx(record.completion)
    assert within(start.value, objective_value(world, record, "weighted-jct"), 1e-12)
    for objective in OBJECTIVES:
        built = build_model(world, L, objective, upper_bound=start.value)
        s = start_from_record(world, record, L, objective)
        set_start(built, s)  # raises on any violated constraint
        assert within(built.value(), s.value, 1e-9)


def test_a_start_that_breaks_a_constraint_is_refused_by_name() -> None:
    world, L = _fifo_world()
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    built = build_model(world, L)
    # every job's last share halved: the work constraint no longer holds
    broken = dataclasses.replace(start, last_share=tuple(u / 2 for u in start.last_share))
    with pytest.raises(ModelError, match="infeasible in the model: work"):
        set_start(built, broken)
    # a run in a round the model has no variable for (before the job arrives)
    late = world.jobs[3]
    early = list(start.runs)
    early[late.index] = ((0, "fast"), *start.runs[late.index])
    with pytest.raises(ModelError, match="has no round 0"):
        set_start(built, dataclasses.replace(start, runs=tuple(early)))


def test_runs_outside_the_round_world_are_refused_with_a_reason() -> None:
    world, L = _fifo_world()
    other = simulate(world, make_policy("fifo"), round_seconds=2 * L)
    with pytest.raises(InvalidInstanceError, match="ran on rounds of") as err:
        start_from_record(world, other, L)
    assert err.value.field == "warm_start"
    event_driven = simulate(world, make_policy("fifo"), round_seconds=None)
    with pytest.raises(InvalidInstanceError) as err:
        start_from_record(world, event_driven, L)
    assert err.value.field == "warm_start"
    with pytest.raises(InvalidInstanceError, match="must be a SimResult"):
        solve(world, L, warm_start="fifo")  # type: ignore[arg-type]
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    # a segment moved off the round start: a mid-round decision
    shifted = dict(record.intervals)
    shifted["start"] = [s + 0.5 if s > 0 else s for s in record.intervals["start"]]
    moved = dataclasses.replace(record, intervals=shifted)
    with pytest.raises(InvalidInstanceError, match="mid-round") as err:
        start_from_record(world, moved, L)
    assert err.value.field == "warm_start"
    # a horizon too short for the run
    with pytest.raises(InvalidInstanceError, match="outside the model"):
        start_from_record(world, record, L, rounds=1)


def _sixteen_jobs() -> tuple[World, float]:
    """Sixteen seeded jobs on v100=2, p100=2, k80=4: one search node does not prove them."""
    from optsched.sim import ClusterSpec, GpuType, Throughputs, generate_job_table
    from optsched.sim.comparison import auto_round_seconds

    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="v100", count=2, gpus_per_server=2),
            GpuType(name="p100", count=2, gpus_per_server=2),
            GpuType(name="k80", count=4, gpus_per_server=4),
        )
    )
    table = generate_job_table(
        16, seed=7, mean_interarrival=600.0, gangs=(1, 2), gang_weights=(0.7, 0.3)
    )
    tp = Throughputs.uniform({"v100": 3.0, "p100": 2.0, "k80": 1.0})
    world = World.from_frame(table, cluster, tp)
    return world, auto_round_seconds(world)


def test_a_stopped_solve_reports_its_bound_and_keeps_a_validated_incumbent() -> None:
    world, L = _sixteen_jobs()
    record = simulate(world, make_policy("sjf"), round_seconds=L)
    start = start_from_record(world, record, L)
    opts = {"mip_max_nodes": 1, "presolve": "off"}
    # the plain model: the strengthened models prove this trace optimal at the first node
    with pytest.raises(NotOptimalError) as err:
        solve(world, L, warm_start=record, solver_options=opts, strengthen=False)
    res = solve(
        world, L, warm_start=record, solver_options=opts, accept_feasible=True, strengthen=False
    )
    assert err.value.result.status == res.status
    # stopped short: it says so, with its proven bound and gap
    assert res.status.value == "feasible" and not res.optimal
    assert res.objective is not None and res.bound is not None and res.gap is not None
    assert res.bound <= res.objective and res.gap > 0
    assert within(res.gap, (res.objective - res.bound) / abs(res.objective), 1e-9)
    # the incumbent is no worse than the start and is replayed and validated like an optimum
    assert res.objective <= start.value * (1 + 1e-9)
    assert res.solution is not None and validate(world, res.solution).ok
    assert res.solution.all_finished
    assert within(objective_value(world, res.solution, "weighted-jct"), res.objective, 1e-6)
    assert res.extra["warm_start"]["policy"] == "sjf"


def test_interchangeable_jobs_are_grouped_and_a_start_is_reordered() -> None:
    rows = [
        {"job_id": "a", "arrival": 0.0, "duration": 4.0},
        {"job_id": "b", "arrival": 0.5, "duration": 4.0},
        {"job_id": "c", "arrival": 0.5, "duration": 2.0},
    ]
    world = typed_world(rows, {"fast": (1, 1)})
    L = 5.0
    # b arrives mid-round 0 and may first run in round 1: not interchangeable with a
    assert earliest_round(0.5, L) == 1 and interchangeable_groups(world, L) == []
    rows[1]["arrival"] = 0.0
    world = typed_world(rows, {"fast": (1, 1)})
    assert interchangeable_groups(world, L) == [[0, 1]]
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    # swap a and b's schedules so that b ends first: the start is reordered, same value
    runs = list(start.runs)
    shares = list(start.last_share)
    runs[0], runs[1] = runs[1], runs[0]
    shares[0], shares[1] = shares[1], shares[0]
    swapped = dataclasses.replace(start, runs=tuple(runs), last_share=tuple(shares))
    T = swapped.completion_rounds()
    assert T[1] < T[0]
    built = build_model(world, L)
    notes = set_start(built, swapped)
    assert notes and "reordered" in notes[0]
    assert within(built.value(), start.value, 1e-12)
    res = solve(world, L, warm_start=swapped)
    plain = solve(world, L, strengthen=False)
    assert res.objective is not None and plain.objective is not None
    assert within(res.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    assert any("reordered" in n for n in res.extra["warm_start"]["notes"])


def test_compare_starts_each_solve_from_the_best_policy_and_says_which() -> None:
    from optsched.cli.sim_extra import _exact_line
    from optsched.sim.comparison import compare

    world, _ = _fifo_world()
    names = ["fifo", "sjf", "tiresias-las"]
    warm = compare(world, names, exact=True, objectives=["weighted-jct", "makespan"])
    cold = compare(
        world, names, exact=True, objectives=["weighted-jct", "makespan"], warm_start=False
    )
    assert cold.exact_starts == {}
    for o in ("weighted-jct", "makespan"):
        said = warm.exact_starts[o]
        used = warm.exact[o].extra["warm_start"]
        assert said["policy"] == used["policy"] and said["policy"] in names
        assert cold.exact[o].extra["warm_start"] is None
        a, b = warm.exact[o].objective, cold.exact[o].objective
        assert a is not None and b is not None and within(a, b, OBJECTIVE_AGREEMENT_TOL)
        line = _exact_line(o, warm.exact[o], said)
        assert line.startswith(f"exact {o}: optimal, [bound ")
        assert f"MIP start: {said['policy']}" in line and "optimum >= bound" in line
    assert "exact_starts" in warm.to_dict()


def test_a_stopped_solve_prints_bound_incumbent_and_gap() -> None:
    from optsched.cli.sim_extra import _exact_line
    from optsched.cli.sim_table import objective_text

    world, L = _sixteen_jobs()
    record = simulate(world, make_policy("sjf"), round_seconds=L)
    opts = {"mip_max_nodes": 1, "presolve": "off"}
    res = solve(
        world, L, warm_start=record, solver_options=opts, accept_feasible=True, strengthen=False
    )
    assert res.gap is not None and res.bound is not None and res.objective is not None
    line = _exact_line("weighted-jct", res, None)
    assert line.startswith("exact weighted-jct: feasible, [bound ")
    # the objective in seconds (the table's unit when printed under it), never an exponent
    shown = objective_text("weighted-jct", res.objective, (1.0, "s"))
    assert f"incumbent {shown}]" in line and f"gap {res.gap:.3%}" in line
    assert "e+" not in line
    assert "MIP start: sjf" in line
    cold = solve(world, L, solver_options=opts, accept_feasible=True, strengthen=False)
    assert "no MIP start (fifo: why)" in _exact_line(
        "weighted-jct", cold, {"policy": None, "refused": {"fifo": "why"}}
    )
