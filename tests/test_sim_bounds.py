"""Certified bounds on the simulated world's optimum (optsched.sim.optimum.bounds).

Every bound is checked against values computed another way: closed forms, the exact optimum
of small worlds, every policy's run on random worlds (rigid, elastic, with packing), and weak
duality on random LPs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies.sim import busy_worlds, one_gpu_world, small_worlds

from optsched.errors import InvalidInstanceError
from optsched.sim import simulate
from optsched.sim.optimum.bounds import (
    BOUND_OBJECTIVES,
    bound,
    bounds,
    certified_gap,
    job_limits,
)
from optsched.sim.optimum.exact import objective_value
from optsched.sim.optimum.exact import solve as solve_exact
from optsched.sim.optimum.interval_lp import blocks, dual_bound
from optsched.sim.policies import make_policy
from optsched.solvers.matrix import LinearProgram, solve_matrix
from optsched.tolerances import BOUND_SAFETY, TIME_TOL

#: Policies of every kind: order, size-based, LP allocation, packing, time-slicing, elastic.
POLICIES = ("fifo", "srtf", "tiresias-las", "max-min-perf", "max-min-packed", "gandiva", "edf")
ELASTIC = ("optimus", "andreas")


def _below(objective: str, value: float, b: float) -> bool:
    """Whether ``b`` is on the right side of ``value`` (the bound's side)."""
    if BOUND_OBJECTIVES[objective] == "lower":
        return b <= value + TIME_TOL * max(1.0, abs(value))
    return value <= b


#: Branch-and-bound nodes an exact solve of a small world gets in these tests: a work limit,
#: so that whether it proves the optimum is the same on every machine (at any load).
EXACT_NODES = 5000


def _exact_or_incumbent(world: Any, objective: str) -> float:
    """The exact optimum of ``world`` in rounds of 1 s, or (nodes spent) the incumbent's value.

    The incumbent is a schedule, no better than the optimum: a bound below the incumbent and
    not below the optimum would go unseen, but no wrong bound passes as right.
    """
    res = solve_exact(
        world,
        1.0,
        objective,
        solver_options={"mip_max_nodes": EXACT_NODES},
        accept_feasible=True,
    )
    event("exact optimum" if res.optimal else "incumbent at the node limit")
    assert res.objective is not None
    return res.objective


def test_two_jobs_on_one_gpu_are_bounded_by_their_optimum() -> None:
    # SPT on one GPU: 1 then 3, total JCT 1 + 4 = 5; makespan 4 either way
    world = one_gpu_world([3.0, 1.0], [0.0, 0.0])
    got = bounds(world)
    assert got["weighted-jct"].value == pytest.approx(5.0, rel=1e-6)
    assert got["makespan"].value == pytest.approx(4.0, rel=1e-6)
    assert got["deadlines"].value == 0.0


def test_a_lone_job_is_bounded_by_its_isolated_time() -> None:
    world = one_gpu_world([7.0], [3.0])
    got = bounds(world)
    assert got["weighted-jct"].value == pytest.approx(7.0, rel=1e-6)
    # the makespan counts from the first arrival (3 s): the job alone takes 7 s
    assert got["makespan"].value == pytest.approx(7.0, rel=1e-6)


def test_queueing_is_counted_by_the_capacity_relaxations() -> None:
    # four unit jobs at 0 on one GPU: optimum 1 + 2 + 3 + 4 = 10, isolated only 4
    world = one_gpu_world([1.0] * 4)
    got = bound(world, "weighted-jct")
    assert got.candidates["isolated"] == pytest.approx(4.0)
    assert got.value == pytest.approx(10.0, rel=1e-6)
    assert got.method in ("mean-busy-time", "interval-lp")


def test_deadlines_out_of_reach_are_not_counted() -> None:
    import dataclasses

    world = one_gpu_world([5.0, 1.0])
    jobs = (
        dataclasses.replace(world.jobs[0], deadline=4.0),  # 5 s of work: never by 4
        dataclasses.replace(world.jobs[1], deadline=1.0),  # alone by 1: reachable
    )
    world = dataclasses.replace(world, jobs=jobs)
    got = bound(world, "deadlines")
    assert got.candidates["feasible"] == 1.0
    assert got.value == 1.0


def test_packing_raises_the_sharing_factor() -> None:
    from strategies.sim import ClusterSpec, GpuType, World, job_frame, synthetic_throughputs

    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=2, gpus_per_server=2),))
    world = World.from_frame(
        job_frame([{"model": "A", "duration": 4.0}, {"model": "A", "duration": 4.0}]),
        cluster,
        synthetic_throughputs(),
    )
    lim = job_limits(world)
    # two A jobs sharing a GPU each keep 80% of their rate: 1.6 GPUs' worth of work
    assert lim.share_factor[0] == pytest.approx(1.6)


@settings(max_examples=25, deadline=None)
@given(busy_worlds(), st.booleans())
def test_no_policy_beats_the_bounds(world, elastic) -> None:  # type: ignore[no-untyped-def]
    if elastic:
        world = world.elastic(max_factor=2.0)
    got = bounds(world)
    names = POLICIES + (ELASTIC if elastic else ())
    for name in names:
        record = simulate(world, make_policy(name))
        if not record.all_finished:
            continue
        for objective, b in got.items():
            value = objective_value(world, record, objective)
            assert _below(objective, value, b.value), (name, objective, value, b)


@settings(max_examples=15, deadline=None)
@given(small_worlds())
def test_the_exact_optimum_is_never_beyond_the_bounds(world) -> None:  # type: ignore[no-untyped-def]
    got = bounds(world)
    for objective in ("weighted-jct", "deadlines"):
        # a solve stopped by the node limit (work, not seconds: the same on every machine)
        # keeps an incumbent no better than the optimum, which the bound must still not pass
        # (the check is then weaker, never wrong)
        optimum = _exact_or_incumbent(world, objective)
        assert _below(objective, optimum, got[objective].value), (objective, optimum, got)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_any_dual_point_gives_a_bound_below_the_lp_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    a = rng.uniform(-1, 2, size=(m, n))
    x0 = rng.uniform(0, 1, size=n)  # a feasible point by construction
    ax = a @ x0
    lo = np.where(rng.random(m) < 0.5, ax - rng.uniform(0, 1, m), -np.inf)
    up = np.where(rng.random(m) < 0.5, ax + rng.uniform(0, 1, m), np.inf)
    lp = LinearProgram(rng.uniform(-1, 1, n), a, lo, up, 0.0, rng.uniform(1, 2, n))
    optimum = solve_matrix(lp).result.objective
    assert optimum is not None
    for _ in range(5):
        y = rng.normal(size=m)
        assert dual_bound(lp, y) <= optimum + 1e-9
    exact = solve_matrix(lp)
    assert exact.row_dual is not None
    # the optimal dual point certifies the optimum itself
    assert dual_bound(lp, exact.row_dual) == pytest.approx(optimum, abs=1e-6)
    assert dual_bound(lp, exact.row_dual) <= optimum + BOUND_SAFETY * max(1.0, abs(optimum))


@given(st.integers(0, 40), st.integers(1, 6), st.integers(1, 4))
def test_blocks_tile_the_rest_of_the_horizon(first: int, levels: int, per_level: int) -> None:
    total = 1 << levels
    first = min(first, total)
    covered = []
    for level, index in blocks(first, levels, per_level):
        covered.extend(range(index << level, (index + 1) << level))
    assert covered == list(range(first, total))


def test_a_time_limit_still_returns_a_valid_bound() -> None:
    world = one_gpu_world([1.0] * 4)
    got = bound(world, "weighted-jct", time_limit=1e-9)
    assert not got.complete
    assert "interval-lp" not in got.candidates
    assert got.value <= 10.0


def test_certified_gap() -> None:
    assert certified_gap("weighted-jct", 12.0, 10.0) == pytest.approx(0.2)
    assert certified_gap("deadlines", 3.0, 5.0) == 2.0
    assert math.isnan(certified_gap("makespan", math.nan, 1.0))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"objective": "jct"}, "objective"),
        ({"methods": ["lagrange"]}, "methods"),
        ({"time_limit": 0}, "time_limit"),
    ],
)
def test_bad_arguments_name_their_field(kwargs, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInstanceError) as err:
        bound(one_gpu_world([1.0]), **kwargs)
    assert err.value.field == field


def test_offered_load_scales_the_arrivals() -> None:
    from optsched.sim.world.load import at_offered_load, offered_load

    # two 1-GPU jobs of 10 s each arriving 10 s apart on one GPU: demand 20 over 10 s
    world = one_gpu_world([10.0, 10.0], [0.0, 10.0])
    assert offered_load(world) == pytest.approx(2.0)
    loaded = at_offered_load(world, 0.5)
    assert [j.arrival for j in loaded.jobs] == pytest.approx([0.0, 40.0])
    assert offered_load(loaded) == pytest.approx(0.5)


def test_offered_load_refuses_what_it_cannot_scale() -> None:
    from optsched.sim.world.load import at_offered_load

    with pytest.raises(InvalidInstanceError) as err:
        at_offered_load(one_gpu_world([1.0, 1.0]), 0.8)
    assert err.value.field == "load"
    with pytest.raises(InvalidInstanceError) as err:
        at_offered_load(one_gpu_world([1.0, 1.0], [0.0, 1.0]), -1)
    assert err.value.field == "load"


def test_compare_reports_every_rows_certified_gap() -> None:
    from optsched.sim.comparison import compare

    world = one_gpu_world([3.0, 1.0, 2.0], [0.0, 0.0, 1.0])
    comp = compare(world, ["fifo", "srtf"], bound=True)
    frame = comp.to_frame()
    for objective, b in comp.bounds.items():
        for _, row in frame.iterrows():
            gap = row[f"bound_gap_{objective}"]
            assert gap == certified_gap(objective, row[f"obj_{objective}"], b.value)
            if objective != "deadlines":
                assert gap >= -TIME_TOL
    assert set(comp.to_dict()["bounds"]) == set(BOUND_OBJECTIVES)
    # SRTF is optimal here (one GPU, preemptive shortest remaining first): a tight bound
    srtf = frame.set_index("policy").loc["srtf", "bound_gap_weighted-jct"]
    assert srtf == pytest.approx(0.0, abs=1e-6)


def test_cli_compare_and_sweep_print_certified_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from optsched.cli import main

    header = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    trace = tmp_path / "t.csv"
    rows = [(0, 3.0), (0, 1.0), (1, 2.0), (5, 4.0)]
    trace.write_text(header + "".join(f"j{k},{a},1,,,{d},,1,,u\n" for k, (a, d) in enumerate(rows)))
    base = [str(trace), "--cluster", "g=1", "--json", "--policies", "fifo,srtf"]
    assert main(["sim", "compare", *base, "--bound", "--offered-load", "0.9"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bounds"]["weighted-jct"]["side"] == "lower"
    for row in out["policies"]:
        assert row["bound_gap_weighted-jct"] >= -TIME_TOL
    assert main(["sim", "sweep", *base, "--bound", "--backend", "serial"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(r["bound_gap_makespan"] >= -TIME_TOL for r in out["rows"])
    assert main(["sim", "compare", *base, "--offered-load", "-1"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--offered-load"


def test_spread_rows_raise_the_interval_lp_and_stay_below_the_optimum() -> None:
    from optsched.sim.optimum.bounds import _horizon
    from optsched.sim.optimum.interval_lp import interval_lp

    # SPT on one GPU: 1 then 3, total JCT 5; without the spread rows the LP counts each
    # block's work at the block's start and stays well below
    lim = job_limits(one_gpu_world([3.0, 1.0], [0.0, 0.0]))
    plain, _ = interval_lp(lim, _horizon(lim), None, "highs", ())
    spread, _ = interval_lp(lim, _horizon(lim), None, "highs", (1.0,))
    assert plain < 4.8
    assert 4.9 < spread <= 5.0 + TIME_TOL


def test_parts_cover_every_job_once_in_arrival_order() -> None:
    import dataclasses

    from optsched.sim.optimum.bounds import _parts

    lim = job_limits(one_gpu_world([1.0] * 7))
    # the limits of a world whose rows are not in arrival order
    lim = dataclasses.replace(lim, arrival=np.array([6.0, 0.0, 5.0, 1.0, 4.0, 2.0, 3.0]))
    parts = _parts(lim, 3)
    assert len(parts) == 2
    joined = np.concatenate(parts)
    assert joined.tolist() == [1, 3, 5, 6, 4, 2, 0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 50.0), min_size=1, max_size=40),
    st.lists(st.floats(0.1, 10.0), min_size=40, max_size=40),
    st.integers(1, 12),
    st.randoms(use_true_random=False),
)
def test_the_chosen_parts_are_a_partition_in_arrival_order(
    arrivals: list[float], durations: list[float], size: int, rng: Any
) -> None:
    from optsched.sim.optimum.bounds import LP_PART_SLACK, _parts, _subset

    n = len(arrivals)
    lim = job_limits(one_gpu_world(durations[:n], sorted(arrivals)))
    # the limits of a world whose rows are not in arrival order
    shuffled = list(range(n))
    rng.shuffle(shuffled)
    lim = _subset(lim, np.array(shuffled, dtype=np.int64))
    parts = _parts(lim, size)
    joined = np.concatenate(parts)
    # every job exactly once
    assert sorted(joined.tolist()) == list(range(n))
    # each part after the previous one in arrival order
    assert np.all(np.diff(lim.arrival[joined]) >= 0)
    if round(n / size) <= 1:
        assert len(parts) == 1
    else:
        lo = max(1, math.floor(size * (1 - LP_PART_SLACK)))
        hi = max(lo + 1, 2 * lo - 1, math.ceil(size * (1 + LP_PART_SLACK)))
        assert all(lo <= len(part) <= hi for part in parts), [len(p) for p in parts]


def test_parts_are_cut_where_no_work_is_carried() -> None:
    from optsched.sim.optimum.bounds import _parts

    # six unit jobs at 0, four at 100: equal parts of five would cut the first burst, whose
    # sixth job waits behind five seconds of work; the lull after it carries nothing
    lim = job_limits(one_gpu_world([1.0] * 10, [0.0] * 6 + [100.0] * 4))
    parts = _parts(lim, 5)
    assert [sorted(p.tolist()) for p in parts] == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9]]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.0, 30.0), min_size=1, max_size=25),
    st.lists(st.floats(0.1, 5.0), min_size=25, max_size=25),
)
def test_the_fluid_backlog_is_lindleys_recursion(
    arrivals: list[float], durations: list[float]
) -> None:
    from optsched.sim.optimum.bounds import _fluid_backlog

    n = len(arrivals)
    lim = job_limits(one_gpu_world(durations[:n], sorted(arrivals)))
    order = np.argsort(lim.arrival, kind="stable")
    got = _fluid_backlog(lim, order)
    # the queue of one machine of speed 1, step by step
    left, now = 0.0, float(lim.arrival[order[0]])
    for k, j in enumerate(order):
        left = max(0.0, left - (lim.arrival[j] - now))
        now = float(lim.arrival[j])
        assert got[k] == pytest.approx(left, abs=1e-9 * (1 + sum(durations)))
        left += lim.best_area[j] / lim.speed


@pytest.mark.parametrize("slack", [0.0, 0.7])
@settings(max_examples=15, deadline=None)
@given(world=busy_worlds())
def test_the_bound_in_parts_is_beaten_by_no_policy(world, slack) -> None:  # type: ignore[no-untyped-def]
    import optsched.sim.optimum.bounds as bounds_module

    with pytest.MonkeyPatch.context() as mp:
        # parts of two or three jobs (no slack): as many boundaries as the world allows; with
        # slack, parts of 1 to 4 jobs wherever the backlog is least
        mp.setattr(bounds_module, "LP_PART_JOBS", 2)
        mp.setattr(bounds_module, "LP_PART_SLACK", slack)
        got = bound(world, "weighted-jct", methods=["interval-lp"])
    if len(world.jobs) >= 4 and slack == 0.0:
        assert "arrival-ordered parts" in got.notes[0]
    for name in (*POLICIES, "smith-gang"):
        record = simulate(world, make_policy(name))
        if record.all_finished:
            value = objective_value(world, record, "weighted-jct")
            assert _below("weighted-jct", value, got.value), (name, value, got)


@settings(max_examples=8, deadline=None)
@given(small_worlds())
def test_the_bound_in_parts_is_below_the_exact_optimum(world) -> None:  # type: ignore[no-untyped-def]
    import optsched.sim.optimum.bounds as bounds_module

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bounds_module, "LP_PART_JOBS", 2)
        mp.setattr(bounds_module, "LP_PART_SLACK", 0.0)
        got = bound(world, "weighted-jct")
    optimum = _exact_or_incumbent(world, "weighted-jct")
    assert _below("weighted-jct", optimum, got.value), (optimum, got)


@settings(max_examples=15, deadline=None)
@given(busy_worlds(), st.sampled_from([0.0, 0.5, 1.0]))
def test_smith_gang_passes_the_validator(world, beta) -> None:  # type: ignore[no-untyped-def]
    from optsched.sim.measure.validate import validate
    from optsched.sim.policies.smith import SmithGang

    record = simulate(world, SmithGang(gang_exponent=beta))
    report = validate(world, record)
    assert report.ok, report.violations


@settings(max_examples=15, deadline=None)
@given(busy_worlds())
def test_smith_gang_without_the_gang_is_srtf_at_equal_weights(world) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from optsched.sim.policies.smith import SmithGang

    world = dataclasses.replace(
        world, jobs=tuple(dataclasses.replace(j, weight=2.0) for j in world.jobs)
    )
    ours = simulate(world, SmithGang(gang_exponent=0.0))
    srtf = simulate(world, make_policy("srtf"))
    assert list(ours.completion) == pytest.approx(list(srtf.completion), nan_ok=True)


def test_smith_gang_is_registered_and_checks_its_exponent() -> None:
    from optsched.sim.policies import all_policy_names, policy_names
    from optsched.sim.policies.smith import SmithGang

    assert make_policy("smith-gang").name == "smith-gang"
    assert "smith-gang" in policy_names()
    assert "smith-gang" not in all_policy_names()  # "all" comparisons keep their rows
    for bad in (-0.1, 1.5, True, "x"):
        with pytest.raises(InvalidInstanceError) as err:
            SmithGang(gang_exponent=bad)  # type: ignore[arg-type]
        assert err.value.field == "gang_exponent"


def test_a_sweep_row_names_the_relaxation_and_whether_the_lp_ran_out(tmp_path: Path) -> None:
    from optsched.cli.sim_extra import _gap_cell
    from optsched.runs.sim_sweep import sweep

    header = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    trace = tmp_path / "t.csv"
    rows = [(0, 3.0), (0, 1.0), (1, 2.0), (5, 4.0)]
    trace.write_text(header + "".join(f"j{k},{a},1,,,{d},,1,,u\n" for k, (a, d) in enumerate(rows)))
    kwargs: dict[str, Any] = {"backend": "serial", "bound": True}
    full = sweep([str(trace)], "g=1", ["fifo"], **kwargs)
    assert bool(full["bound_complete_weighted-jct"].iloc[0])
    assert full["bound_method_weighted-jct"].iloc[0] in ("mean-busy-time", "interval-lp")
    # no time for any LP: the closed forms stand, and the row says so
    short = sweep([str(trace)], "g=1", ["fifo"], bound_time_limit=1e-9, **kwargs)
    assert not bool(short["bound_complete_weighted-jct"].iloc[0])
    assert short["bound_method_weighted-jct"].iloc[0] in ("isolated", "mean-busy-time")
    assert short["bound_weighted-jct"].iloc[0] <= full["bound_weighted-jct"].iloc[0]
    assert _gap_cell(0.1234, True) == "12.3"
    assert _gap_cell(0.1234, False) == "12.3*"
