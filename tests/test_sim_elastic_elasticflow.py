"""The ElasticFlow policy: minimum satisfactory share, admission control, marginal scaling."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame, worlds

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.measure.metrics import deadline_metrics
from optsched.sim.policies import POLICIES, ElasticFlow, make_policy
from optsched.sim.policies.elasticflow import FreeProfile, Plan
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import TIME_TOL, within

# "m": 10, 18, 24 steps/s on 1, 2, 4 GPUs, flat beyond; "k": 5 steps/s per GPU up to 8
M = ScalingCurve((1, 2, 4), (10.0, 18.0, 24.0))
K = ScalingCurve((1, 2, 4, 8), (5.0, 10.0, 20.0, 40.0))


def _world(rows: list[dict[str, object]], count: int = 8, factor: float = 8.0) -> World:
    profiles = ScalingProfiles(gpu_type="a100", curves={("m", 64): M, ("k", 64): K})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=8),))
    frame = job_frame([{"batch_size": 64, **r} for r in rows])
    world = World.from_frame(frame, cluster, table)
    return world.elastic(max_factor=factor) if factor > 1 else world


def _gangs(result: object, at: float = 0.0) -> dict[str, int]:
    frame = result.intervals_frame()  # type: ignore[attr-defined]
    rows = frame[(frame["start"] <= at + TIME_TOL) & (frame["end"] > at + TIME_TOL)]
    return {str(j): int(g) for j, g in rows.groupby("job_id")["gpus"].sum().items()}


def _round_world() -> World:
    return _world(
        [
            # A: share 1 gives 10 x 100 = 1000 < 1200; share 2 is satisfactory
            {"job_id": "A", "model": "m", "total_steps": 1200.0, "num_gpus": 1, "deadline": 100.0},
            # B: needs 24 x 90 = 2160 steps by 90: share 4 (r(3) = 21 gives 1890), from now
            {"job_id": "B", "model": "m", "total_steps": 2160.0, "num_gpus": 1, "deadline": 90.0},
            # C: best effort (no deadline)
            {"job_id": "C", "model": "k", "total_steps": 4000.0, "num_gpus": 1},
            # D: 5000 steps by 50 needs 100 steps/s; at most 24: declined
            {"job_id": "D", "model": "m", "total_steps": 5000.0, "num_gpus": 1, "deadline": 50.0},
        ]
    )


def test_hand_computed_round() -> None:
    """Round at t = 0 on 8 GPUs, worked by hand.

    Admission in deadline order: B (deadline 90) gets its minimum satisfactory share 4 on
    [0, 90); A (deadline 100) against what is left (4 GPUs on [0, 90), 8 on [90, 100)): share 1
    delivers 10 x 100 = 1000 < 1200, share 2 delivers 18 x 100 = 1800, so 2, planned as late as
    possible: [90, 100) gives 180, the other 1020 need 1020 / 18 = 56.67 s, from 33.33, so from
    the slot boundary 30 (slots of 10 s); D (50)
    cannot get 5000 steps by 50 (24 steps/s at most): declined. Now: B holds 4, A 0 (plan starts
    at 30), 4 GPUs left. Marginal normalized gains per GPU: A 0 -> 1: 10/10 = 1.0, C 0 -> 1:
    5/5 = 1.0 (tie: A, which has a deadline); then C 1 -> 2: 1.0 beats A 1 -> 2: 8/10 = 0.8,
    twice more (C is linear). Gangs: B 4, A 1, C 3, D none (declined jobs take only GPUs left).
    """
    world = _round_world()
    policy = ElasticFlow(round_seconds=10.0)
    result = simulate(world, policy)
    assert _gangs(result, 0.0) == {"A": 1, "B": 4, "C": 3}
    facts = policy.run_facts()
    assert facts["declined"] == 1 and facts["declined_jobs"] == ["D"]
    assert facts["admitted"] == 2 and facts["best_effort"] == 1
    # B runs 4 GPUs from 0 at 24 steps/s: done exactly at its deadline
    assert within(result.completion[1], 90.0, TIME_TOL)
    assert validate(world, result).ok
    d = deadline_metrics(result)
    assert d["deadlines"] == 3
    assert result.completion[0] <= 100.0 + TIME_TOL  # A admitted, so met
    assert result.completion[3] > 50.0  # D declined: it runs only on leftover GPUs


def test_a_rigid_edf_misses_what_elasticflow_meets() -> None:
    world = _round_world()
    ef = deadline_metrics(simulate(world, ElasticFlow(round_seconds=10.0)))
    edf = deadline_metrics(simulate(world, make_policy("edf")))
    assert ef["deadlines_met"] == 2
    # rigid EDF runs B on 1 GPU (10 steps/s): 216 s, past 90
    assert edf["deadlines_met"] < ef["deadlines_met"]


def test_free_profile_reserves_a_plan() -> None:
    prof = FreeProfile(0.0, 8)
    prof.reserve(Plan("a100", 4, ((0.0, 90.0, 4),)))
    prof.reserve(Plan("a100", 2, ((33.0, 90.0, 2), (90.0, 100.0, 2))))
    assert prof.times == [0.0, 33.0, 90.0, 100.0]
    assert prof.free == [4, 2, 6, 8]
    assert Plan("a100", 2, ((33.0, 90.0, 2),)).at(50.0) == 2
    assert Plan("a100", 2, ((33.0, 90.0, 2),)).at(10.0) == 0


def test_arrivals_are_declined_only_when_they_would_break_a_promise() -> None:
    """On 4 GPUs: X (deadline 100) needs all 4 (2400 steps at 24/s); Y arrives at 10 with a
    deadline of 60 needing 10 x 50 = 500 steps on 1 GPU: admitting Y (earlier deadline) would
    leave X 3 GPUs on [10, 60) (X would miss): Y declined. Z arrives at 10 with deadline 300:
    after X, 200 s free: admitted."""
    world = _world(
        [
            {"job_id": "X", "model": "m", "total_steps": 2400.0, "num_gpus": 4, "deadline": 100.0},
            {
                "job_id": "Y",
                "arrival": 10.0,
                "model": "m",
                "total_steps": 500.0,
                "num_gpus": 1,
                "deadline": 60.0,
            },
            {
                "job_id": "Z",
                "arrival": 10.0,
                "model": "m",
                "total_steps": 1000.0,
                "num_gpus": 1,
                "deadline": 300.0,
            },
        ],
        count=4,
        factor=1.0,
    )
    policy = ElasticFlow(round_seconds=10.0)
    result = simulate(world, policy)
    assert policy.run_facts()["declined_jobs"] == ["Y"]
    assert within(result.completion[0], 100.0, TIME_TOL)
    assert result.completion[2] <= 300.0
    assert validate(world, result).ok


def test_registered_and_slot_checked() -> None:
    assert "elasticflow" in POLICIES and isinstance(make_policy("elasticflow"), ElasticFlow)
    assert make_policy("elasticflow").round_seconds == 60.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InvalidInstanceError, match="round_seconds"):
            ElasticFlow(round_seconds=bad)


@given(worlds(max_jobs=6))
def test_runs_validate_and_finish(world: World) -> None:
    for w in (world, world.elastic(max_factor=2.0)):
        policy = ElasticFlow()
        result = simulate(w, policy)
        report = validate(w, result)
        assert report.ok, report.violations[:3]
        assert result.all_finished
        facts = policy.run_facts()
        with_deadline = sum(not math.isnan(j.deadline) for j in w.jobs)
        assert facts["admitted"] + facts["declined"] == with_deadline


@st.composite
def _deadline_rows(draw: st.DrawFn) -> list[dict[str, object]]:
    n = draw(st.integers(1, 7))
    rows: list[dict[str, object]] = []
    for k in range(n):
        arrival = float(draw(st.integers(0, 300)))
        steps = float(draw(st.integers(50, 5000)))
        row: dict[str, object] = {
            "job_id": f"j{k}",
            "arrival": arrival,
            "model": draw(st.sampled_from(["m", "k"])),
            "total_steps": steps,
            "num_gpus": draw(st.sampled_from([1, 2, 4])),
        }
        if draw(st.booleans()):
            row["deadline"] = arrival + float(draw(st.integers(1, 600)))
        rows.append(row)
    return sorted(rows, key=lambda r: float(r["arrival"]))  # type: ignore[arg-type]


@given(_deadline_rows(), st.sampled_from([1.0, 8.0]), st.sampled_from([10.0, 60.0]))
def test_an_admitted_job_never_demoted_meets_its_deadline(
    rows: list[dict[str, object]], factor: float, slot: float
) -> None:
    """The promise: with no restore cost and rates that do not depend on placement (profiles),
    a job admitted and never demoted (``late``) finishes by its deadline."""
    world = _world(rows, factor=factor)
    policy = ElasticFlow(round_seconds=slot)
    result = simulate(world, policy)
    assert validate(world, result).ok
    assert result.all_finished
    facts = policy.run_facts()
    refused = set(facts["declined_jobs"]) | set(policy.late)
    for job, done in zip(world.jobs, result.completion, strict=True):
        if not math.isnan(job.deadline) and job.job_id not in refused:
            assert done <= job.deadline + TIME_TOL * max(1.0, job.deadline), job.job_id


def test_a_plan_starting_inside_a_slot_holds_its_share_from_the_slot_start() -> None:
    """4 GPUs, rigid gangs, 60 s slots. X (2 GPUs, 1800 steps at 18/s, deadline 120) is planned
    as late as possible from 120 - 100 = 20, i.e. from the slot boundary 0, so it holds 2 GPUs
    now; Y (4 GPUs, best effort, higher marginal gain 20 / (4 x 5) = 1.0 against X's 0.9) does
    not fit beside it. At 60 X has 720 steps left: planned from 80, i.e. from 60. X completes at
    100; Y starts at the slot of 120 and runs 2000 / 20 = 100 s. A plan started at its exact
    as-late-as-possible time would leave X no GPU at 0 (Y would take all 4) and X would be late.
    """
    world = _world(
        [
            {"job_id": "X", "model": "m", "total_steps": 1800.0, "num_gpus": 2, "deadline": 120.0},
            {"job_id": "Y", "model": "k", "total_steps": 2000.0, "num_gpus": 4},
        ],
        count=4,
        factor=1.0,
    )
    policy = ElasticFlow(round_seconds=60.0)
    result = simulate(world, policy)
    assert _gangs(result, 0.0) == {"X": 2}
    assert within(result.completion[0], 100.0, TIME_TOL)
    assert within(result.completion[1], 220.0, TIME_TOL)
    assert policy.late == [] and policy.run_facts()["declined"] == 0


def test_cli_runs_elastic_policies_on_an_elasticflow_slice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = Path(__file__).parent / "data"
    trace = data / "traces" / "elasticflow" / "cluster10_head40.csv"
    profiles = data / "profiles" / "synthetic_a100"
    met = {}
    for name, extra in (
        ("edf", []),
        ("edf-elastic", ["--elastic", "8"]),
        ("elasticflow", ["--elastic", "8"]),
    ):
        args = ["sim", "run", str(trace), "--cluster", "a100=16:8", "--throughputs", str(profiles)]
        code = main([*args, "--policy", name, *extra, "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["valid"] is True and out["policy"] == name
        met[name] = out["metrics"]["deadlines_met"]
    # elastic gangs meet deadlines that the requested gangs cannot
    assert met["edf"] < met["edf-elastic"] <= met["elasticflow"]
