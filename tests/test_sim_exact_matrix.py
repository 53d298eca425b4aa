"""The exact model built as sparse matrices: the same optimum, its cuts valid, its root sound."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from strategies.sim import small_worlds, typed_world

from optsched.errors import InvalidInstanceError, ModelError
from optsched.sim import World, simulate
from optsched.sim.optimum import exact_matrix as xm
from optsched.sim.optimum.exact import (
    MipStart,
    build_model,
    default_rounds,
    last_run_floor,
    one_round_jobs,
    set_start,
    solve,
    start_from_record,
)
from optsched.sim.optimum.matrix_compact import max_runs
from optsched.sim.policies import make_policy
from optsched.solvers import LinearProgram, solve_matrix
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, RATIO_TOL, within

pytestmark = pytest.mark.solver("highs")

CANDIDATES = ("fifo", "sjf", "srtf")
MATRIX = ("weighted-jct", "makespan")


def _starts(world: World, L: float, objective: str, rounds: int) -> list[MipStart]:
    """Every candidate policy's run that maps onto the model, as a start."""
    out = []
    for name in CANDIDATES:
        record = simulate(world, make_policy(name), round_seconds=L)
        try:
            out.append(start_from_record(world, record, L, objective, rounds=rounds))
        except InvalidInstanceError as exc:
            assert exc.field == "warm_start"
    return out


@settings(max_examples=20)
@given(world=small_worlds(), L=st.sampled_from([2.0, 5.0]), objective=st.sampled_from(MATRIX))
def test_the_matrix_model_keeps_the_plain_optimum(world: World, L: float, objective: str) -> None:
    K = default_rounds(world, L)
    assume(K <= 30)
    plain = solve(world, L, objective, rounds=K, strengthen=False)
    cold = solve(world, L, objective, rounds=K, matrix=True)
    assert plain.optimal and cold.optimal
    assert plain.objective is not None and cold.objective is not None
    assert cold.extra["model"] == "matrix" and "model" not in plain.extra
    assert within(cold.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    # the root's bound is a bound, its start a schedule
    root = cold.extra["root"]
    if "lp_bound" in root:
        assert root["lp_bound"] <= plain.objective * (1 + RATIO_TOL) + RATIO_TOL
    if root.get("heuristic_value") is not None:
        assert root["heuristic_value"] >= plain.objective * (1 - RATIO_TOL) - RATIO_TOL
    starts = _starts(world, L, objective, K)
    if not starts:
        event("no policy maps onto the model")
        return
    best = min(starts, key=lambda s: s.value)
    warm = solve(world, L, objective, rounds=K, warm_start=best)
    assert warm.optimal and warm.objective is not None
    assert warm.extra["model"] == "matrix"
    assert within(warm.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    assert warm.extra["warm_start"]["policy"] == best.policy


@settings(max_examples=25)
@given(world=small_worlds(), L=st.sampled_from([2.0, 5.0]), objective=st.sampled_from(MATRIX))
def test_every_schedule_satisfies_the_cuts_of_both_models(
    world: World, L: float, objective: str
) -> None:
    """The policies' runs are schedules: every row of both models holds at each of them."""
    K = default_rounds(world, L)
    assume(K <= 40)
    eps = last_run_floor(world, L, K)
    pyomo_model = build_model(world, L, objective, rounds=K)
    matrix = xm.build_matrix(world, L, objective, rounds=K, compact=False)
    compact = xm.build_matrix(world, L, objective, rounds=K)
    for start in _starts(world, L, objective, K):
        set_start(pyomo_model, start)  # raises naming the first violated constraint
        assert xm.check_start(matrix, start)[0] is not None
        made = xm.compact_start(world, L, start, eps, objective)
        assert made.value <= start.value * (1 + RATIO_TOL) + RATIO_TOL
        full, _ = xm.check_start(compact, made)
        # the point's objective is the schedule's value, and the schedule reads back
        assert within(float(compact.lp.objective_value(compact.reduced(full))), made.value, 1e-9)
        back = xm.start_from_point(compact, compact.reduced(full))
        assert back is not None and within(back.value, made.value, 1e-9)
        assert back.runs == made.runs


@settings(max_examples=15)
@given(world=small_worlds(), L=st.sampled_from([2.0, 5.0]), seed=st.integers(0, 2**16))
def test_a_lagrangian_bound_from_any_multipliers_is_below_the_optimum(
    world: World, L: float, seed: int
) -> None:
    K = default_rounds(world, L)
    assume(K <= 30)
    model = xm.build_matrix(world, L, rounds=K)
    best = solve(world, L, rounds=K, strengthen=False)
    assert best.objective is not None
    lp = model.lp
    relaxed = LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, offset=lp.offset
    )
    sol = solve_matrix(relaxed)
    assert sol.row_dual is not None
    z, _, _ = xm.lagrangian_bound(relaxed, sol.row_dual)
    assert z <= best.objective * (1 + RATIO_TOL) + RATIO_TOL
    assert within(z, float(sol.result.objective), 1e-6)
    noisy = sol.row_dual + np.random.default_rng(seed).normal(0.0, 1.0, sol.row_dual.size)
    z2, _, _ = xm.lagrangian_bound(relaxed, noisy)
    assert z2 <= best.objective * (1 + RATIO_TOL) + RATIO_TOL


def _short_jobs() -> tuple[World, float]:
    rows = [
        {"arrival": 0.0, "duration": 1.0},
        {"arrival": 0.0, "duration": 1.5},
        {"arrival": 0.0, "duration": 0.5, "num_gpus": 2},
        {"arrival": 0.0, "duration": 1.0},
        {"arrival": 3.0, "duration": 9.0},
        {"arrival": 3.0, "duration": 1.0},
    ]
    return typed_world(rows, {"fast": (2, 2), "slow": (2, 2)}), 4.0


def test_one_round_jobs_and_the_compact_horizon() -> None:
    world, L = _short_jobs()
    single = one_round_jobs(world, L)
    # duration 9 needs more than one round of 4 s; the others one run on either type
    assert 4 not in single and set(single) == {0, 1, 2, 3, 5}
    K = default_rounds(world, L)
    eps = last_run_floor(world, L, K)
    last = xm.compact_last_rounds(world, L, eps)
    assert last[4] is None
    # job 0: the others hold at most 1+1+2+1+1*R_4 GPU-rounds; 4 GPUs of both types busy
    runs = max_runs(world, L)
    held = sum(j.num_gpus * runs[j.index] for j in world.jobs if j.index != 0)
    assert last[0] == held // 4
    built = xm.build_matrix(world, L)
    assert built.stop[0] == min(K, last[0] + 1)
    res = solve(world, L)
    plain = solve(world, L, strengthen=False)
    assert res.objective is not None and plain.objective is not None
    assert within(res.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)


def test_a_broken_start_is_refused_by_name() -> None:
    world, L = _short_jobs()
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    built = xm.build_matrix(world, L, compact=False)
    broken = dataclasses.replace(start, last_share=tuple(u / 2 for u in start.last_share))
    with pytest.raises(ModelError, match="infeasible in the model"):
        xm.check_start(built, broken)
    late = list(start.runs)
    late[5] = ((0, "fast"),)  # job 5 arrives at 3 s: no column in round 0
    with pytest.raises(ModelError, match="has no round 0"):
        xm.check_start(built, dataclasses.replace(start, runs=tuple(late)))


def test_refusals_name_the_field() -> None:
    world, L = _short_jobs()
    with pytest.raises(InvalidInstanceError) as err:
        xm.build_matrix(world, L, "deadlines")
    assert err.value.field == "objective"
    with pytest.raises(InvalidInstanceError) as err:
        solve(world, L, "deadlines", matrix=True)
    assert err.value.field == "matrix"
    with pytest.raises(InvalidInstanceError) as err:
        solve(world, L, strengthen=False, matrix=True)
    assert err.value.field == "matrix"
    with pytest.raises(InvalidInstanceError) as err:
        solve(typed_world([{"arrival": 0.0, "duration": 20.0}], {"slow": (1, 1)}), 5.0, rounds=2)
    assert err.value.field == "rounds"


def test_root_fixing_removes_columns_and_keeps_the_start() -> None:
    world, L = _short_jobs()
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    built = xm.build_matrix(world, L, upper_bound=start.value)
    before = built.lp.n_variables
    best = xm.root_pass(built, start)
    assert best is not None and best.value <= start.value * (1 + RATIO_TOL)
    assert built.lp.n_variables <= before
    assert built.root["lagrangian_bound"] <= best.value * (1 + RATIO_TOL)
    # the start still a point of the reduced model (removed columns at 0 in it)
    full, _ = xm.check_start(built, best)
    assert full.size == built.n_full


def test_parity_and_clique_rows_keep_the_optimum_of_an_odd_packing() -> None:
    """Three single GPUs and two gangs of two on two GPUs: a GPU-round must stay idle."""
    rows = [{"arrival": 0.0, "duration": 1.0 + 0.1 * i} for i in range(3)]
    rows += [{"arrival": 0.0, "duration": 1.0 + 0.1 * i, "num_gpus": 2} for i in range(2)]
    world = typed_world(rows, {"fast": (2, 2)})
    L = 4.0
    built = xm.build_matrix(world, L)
    names = {name for name, lo, hi in built.row_families if hi > lo}
    assert {"parity", "parity_early", "parity_late", "gang_clique", "one_run"} <= names
    lp = built.lp
    relaxed = LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, offset=lp.offset
    )
    bound = solve_matrix(relaxed).result.objective
    res = solve(world, L)
    plain = solve(world, L, strengthen=False)
    assert res.objective is not None and plain.objective is not None and bound is not None
    assert within(res.objective, plain.objective, OBJECTIVE_AGREEMENT_TOL)
    assert bound <= plain.objective * (1 + RATIO_TOL)
    # five gangs, seven GPUs, two per round: the last ends in round 3 at the earliest, and
    # with the cuts the LP knows one GPU-round stays idle (its bound is the optimum here)
    assert within(bound, plain.objective, 1e-6)


def test_root_heuristic_runs_under_its_node_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heuristic's MIP gets HEURISTIC_OPTIONS, so it stops without a time limit too."""
    import optsched.solvers as solvers

    seen: list[dict[str, object] | None] = []
    real = solvers.solve_matrix

    def spy(lp: LinearProgram, **kw: object) -> object:
        if lp.integrality is not None and any(lp.integrality):
            seen.append(kw.get("options"))  # type: ignore[arg-type]
        return real(lp, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(solvers, "solve_matrix", spy)
    world, L = _short_jobs()
    record = simulate(world, make_policy("fifo"), round_seconds=L)
    start = start_from_record(world, record, L)
    built = xm.build_matrix(world, L, upper_bound=start.value)
    xm.root_pass(built, start)
    assert seen and all(o == xm.HEURISTIC_OPTIONS for o in seen)
