"""One clock for every gap, and gaps only like for like (``optsched.sim.compare``).

* A trace shifted in time gives the same makespan, bound, optimum and gaps: the world starts its
  clock at the first arrival, and the makespan is counted from it everywhere.
* A gap to a proven optimum is printed only for a row in the optimum's own world, and is then
  never negative; the certified bound is below every policy, whatever world it reached.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import job_frame, small_worlds, synthetic_throughputs

from optsched import limits
from optsched.sim import ClusterSpec, GpuType, World
from optsched.sim.comparison import compare, world_from_trace
from optsched.sim.optimum.bounds import bounds
from optsched.sim.optimum.exact import objective_value, solve
from optsched.sim.policies import make_policy, policy_names
from optsched.tolerances import BOUND_SAFETY, SOLVER_AGREEMENT_TOL, within

#: The shift of the findings: a trace whose clock starts two million seconds later.
SHIFT = 2_000_000.0

_ROWS = [
    {"arrival": 10.0, "model": "A", "duration": 9.0, "weight": 1.0, "deadline": 22.0},
    {"arrival": 10.0, "model": "B", "duration": 4.0, "weight": 2.0, "deadline": 16.0},
    {"arrival": 13.0, "model": "A", "num_gpus": 2, "duration": 6.0, "deadline": 40.0},
    {"arrival": 15.0, "model": "B", "duration": 2.0, "weight": 3.0, "deadline": 19.0},
    {"arrival": 16.0, "model": "A", "duration": 5.0, "weight": 1.0},
]
_CLUSTER = ClusterSpec(
    gpu_types=(
        GpuType(name="fast", count=2, gpus_per_server=2),
        GpuType(name="slow", count=2, gpus_per_server=2),
    )
)
_POLICIES = ["fifo", "srtf", "edf", "tiresias-las", "gandiva", "max-min-perf"]
_OBJECTIVES = ("weighted-jct", "makespan", "deadlines")
#: What must not move when the trace's clock does.
_SAME = [
    "policy",
    "makespan",
    "jct_mean",
    "obj_weighted-jct",
    "obj_makespan",
    "obj_deadlines",
    "gap_weighted-jct",
    "gap_makespan",
    "gap_deadlines",
    "bound_gap_weighted-jct",
    "bound_gap_makespan",
    "bound_gap_deadlines",
    "outside",
]


def _shifted(frame: pd.DataFrame, by: float) -> pd.DataFrame:
    out = frame.copy()
    out["arrival"] = out["arrival"] + by
    out["deadline"] = out["deadline"] + by
    return out


def _compare(frame: pd.DataFrame, round_seconds: float | str) -> pd.DataFrame:
    result = compare(
        frame,
        _POLICIES,
        cluster=_CLUSTER,
        throughputs=synthetic_throughputs(),
        exact=True,
        bound=True,
        objectives=_OBJECTIVES,
        round_seconds=round_seconds,
    )
    assert all(r.optimal for r in result.exact.values())
    frame_out = result.to_frame()
    for o, b in result.bounds.items():
        frame_out[f"bound_{o}"] = b.value
    for o, r in result.exact.items():
        frame_out[f"optimum_{o}"] = r.objective
    return frame_out


@pytest.mark.solver("highs")
@pytest.mark.parametrize("round_seconds", [3.0, 7.0])
def test_a_trace_shifted_by_two_million_seconds_gives_identical_gaps(
    round_seconds: float,
) -> None:
    # 2e6 is no multiple of 3 or 7 s: on the trace's clock the rounds would fall at another
    # phase of the arrivals, and the makespan would be read against the clock's zero
    frame = job_frame(_ROWS)
    here = _compare(frame, round_seconds)
    there = _compare(_shifted(frame, SHIFT), round_seconds)
    columns = _SAME + [f"bound_{o}" for o in _OBJECTIVES] + [f"optimum_{o}" for o in _OBJECTIVES]
    pd.testing.assert_frame_equal(here[columns], there[columns], check_exact=True)
    # the makespan objective is the span the makespan column reports
    policies = here[~here["policy"].str.startswith("exact-")]
    assert (policies["obj_makespan"] == policies["makespan"]).all()


def test_world_from_trace_starts_the_clock_at_the_first_arrival() -> None:
    frame = _shifted(job_frame(_ROWS), SHIFT)
    world = world_from_trace(frame, _CLUSTER, synthetic_throughputs())
    assert world.origin == 0.0
    assert [j.arrival for j in world.jobs] == [r["arrival"] - 10.0 for r in _ROWS]
    # deadlines move with their jobs: the slack is kept
    assert world.jobs[0].deadline == 12.0
    assert math.isnan(world.jobs[4].deadline)
    kept = world_from_trace(frame, _CLUSTER, synthetic_throughputs(), rebase=False)
    assert kept.origin == SHIFT + 10.0
    assert kept.rebased() == world
    assert world.rebased() is world


@pytest.mark.solver("highs")
@pytest.mark.parametrize("matrix", [True, False])
def test_makespan_optimum_and_bound_count_from_the_first_arrival(matrix: bool) -> None:
    # a World kept on its own clock (no rebase), shifted by a multiple of the round length so
    # that the rounds keep their phase: only the makespan's zero moves with the clock (not by
    # 2e6 s: the model would then hold 500,000 empty rounds, which is why traces are rebased)
    L = 4.0
    shift = 100 * L
    world = World.from_frame(job_frame(_ROWS), _CLUSTER, synthetic_throughputs())
    later = dataclasses.replace(
        world,
        jobs=tuple(
            dataclasses.replace(j, arrival=j.arrival + shift, deadline=j.deadline + shift)
            for j in world.jobs
        ),
    )
    values = []
    for w in (world, later):
        res = solve(w, L, "makespan", matrix=matrix)
        assert res.optimal and res.solution is not None
        assert within(res.objective, objective_value(w, res.solution, "makespan"), 1e-9)
        values.append((res.objective, bounds(w, ["makespan"])["makespan"].value))
    (opt, low), (opt_later, low_later) = values
    assert within(opt, opt_later, 1e-9)
    assert within(low, low_later, 1e-9)
    assert 0 < low <= opt
    # the optimum is a span: below the shift itself
    assert opt_later < shift


@pytest.mark.solver("highs")
def test_weighted_jct_and_deadlines_never_depended_on_the_clock() -> None:
    world = World.from_frame(job_frame(_ROWS), _CLUSTER, synthetic_throughputs())
    later = World.from_frame(
        _shifted(job_frame(_ROWS), 4.0 * 100), _CLUSTER, synthetic_throughputs()
    )
    for objective in ("weighted-jct", "deadlines"):
        a = solve(world, 4.0, objective)
        b = solve(later, 4.0, objective)
        assert a.optimal and b.optimal
        assert within(a.objective, b.objective, 1e-9)


@pytest.mark.solver("highs")
def test_optimum_runs_on_the_policies_grid_or_says_it_is_of_another_world() -> None:
    world = World.from_frame(job_frame(_ROWS), _CLUSTER, synthetic_throughputs())
    mixed = [make_policy("max-min-perf"), make_policy("fifo"), make_policy("gandiva")]
    for p, rs in zip(mixed, (5.0, None, 5.0), strict=True):
        p.round_seconds = rs
    result = compare(world, mixed, exact=True, objectives=("weighted-jct",), bound=True)
    assert result.exact_grid == "policies" and result.exact_round_seconds == 5.0
    rows = result.to_frame().set_index("policy")
    assert rows.loc["max-min-perf", "like_for_like"]
    assert rows.loc["max-min-perf", "gap_weighted-jct"] >= 0
    # event-driven, and sharing GPUs: no gap to an optimum that forbids what they did
    assert rows.loc["fifo", "outside"] == "event-driven"
    assert "shares GPUs" in rows.loc["gandiva", "outside"] or not rows.loc["gandiva", "shared"]
    for name in ("fifo", "gandiva"):
        if rows.loc[name, "outside"]:
            assert math.isnan(rows.loc[name, "gap_weighted-jct"])
        assert rows.loc[name, "bound_gap_weighted-jct"] >= 0
    # too many job-rounds for the budget: a coarser grid, said to be another world, no gap
    with limits.override(max_exact_job_rounds=1):
        far = compare(world, mixed, exact=True, objectives=("weighted-jct",))
    assert far.exact_grid.startswith("another world")
    rows = far.to_frame().set_index("policy")
    assert rows.loc["exact-weighted-jct", "outside"] == "optimum of another world"
    policies = rows.drop(index="exact-weighted-jct")
    assert policies["gap_weighted-jct"].isna().all()


def _every_policy(world: World) -> list[str]:
    names = []
    for name in policy_names():
        policy = make_policy(name)
        if policy.refuses(world) is None:
            names.append(name)
    return names


@pytest.mark.solver("highs")
@settings(max_examples=6)
@given(world=small_worlds(), round_seconds=st.sampled_from([1.0, 2.5, 4.0]))
def test_no_printed_gap_to_a_proven_optimum_is_negative(world: World, round_seconds: float) -> None:
    names = [n for n in _every_policy(world) if not _needs_colocation(n)]
    result = compare(
        world,
        names,
        exact=True,
        bound=True,
        objectives=("weighted-jct", "makespan"),
        round_seconds=round_seconds,
    )
    frame = result.to_frame()
    for objective, res in result.exact.items():
        assert res.optimal
        low = result.bounds[objective].value
        for _, row in frame.iterrows():
            value = row[f"obj_{objective}"]
            if math.isnan(value):
                continue
            # the certified bound is valid for every world a policy reached
            assert low <= value * (1 + BOUND_SAFETY) + BOUND_SAFETY, (row["policy"], objective)
            gap = row[f"gap_{objective}"]
            if not math.isnan(gap):
                # a printed gap is a gap to the optimum of the row's own world
                assert row["like_for_like"]
                assert gap >= -SOLVER_AGREEMENT_TOL, (row["policy"], objective, gap)
            else:
                assert row["outside"]


def _needs_colocation(name: str) -> bool:
    from optsched.cli.sim_colocation import needs_colocation

    return bool(needs_colocation([name]))


@pytest.mark.solver("highs")
def test_every_certified_bound_is_the_same_on_a_clock_two_million_seconds_later() -> None:
    # no rounds here: a World kept on its own clock, shifted by 2e6 s (no rebase)
    world = World.from_frame(job_frame(_ROWS), _CLUSTER, synthetic_throughputs())
    later = World.from_frame(_shifted(job_frame(_ROWS), SHIFT), _CLUSTER, synthetic_throughputs())
    here, there = bounds(world), bounds(later)
    for objective in _OBJECTIVES:
        assert here[objective].method == there[objective].method
        # arrivals near 2e6 s carry about 1e-10 s of rounding
        assert within(here[objective].value, there[objective].value, 1e-9), objective
