"""Chronus with elastic gangs (``chronus-elastic``): the rigid plan, then growth into idle GPUs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import LEASE, job_frame, worlds

from optsched import sim
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.policies import ELASTIC_POLICIES, make_policy
from optsched.sim.policies.chronus import Chronus
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import TIME_TOL, within

pytestmark = pytest.mark.solver("highs")

# model "m", batch 64: 10 steps/s on 1 GPU, 18 on 2, 24 on 4, flat beyond (no extrapolation)
CURVE = ScalingCurve((1, 2, 4), (10.0, 18.0, 24.0))


def _world(rows: list[dict[str, float]], count: int, factor: float) -> World:
    profiles = ScalingProfiles(gpu_type="a100", curves={("m", 64): CURVE})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=8),))
    frame = job_frame([{"model": "m", "batch_size": 64, **r} for r in rows])
    world = World.from_frame(frame, cluster, table)
    return world.elastic(max_factor=factor) if factor > 1 else world


def _gangs(result: sim.SimResult, at: float) -> dict[str, int]:
    """GPUs held by each job during the interval starting at ``at``."""
    frame = result.intervals_frame()
    rows = frame[frame["start"] <= at + TIME_TOL]
    rows = rows[rows["end"] > at + TIME_TOL]
    return {str(j): int(g) for j, g in rows.groupby("job_id")["gpus"].sum().items()}


@pytest.mark.parametrize("mode", ["milp", "greedy"])
def test_an_admitted_slo_job_grows_into_idle_gpus_and_finishes_earlier(mode: str) -> None:
    """6 GPUs, 100 s leases, no restore cost; every job asks for 1 GPU and may take 4.

    ``j0`` has no deadline (4000 steps), ``j1`` a deadline of 400 (2400 steps): deadline lease
    ``floor(400 / 100) - 1 = 3``, four leases of ``floor(10 x 100) = 1000`` steps on one GPU
    cover 2400, so ``j1`` is admitted. Rigid Chronus runs both on one GPU (rate 10): ``j1``
    completes at 240, ``j0`` at 400. Elastic, lease 0: the rigid grants leave 4 GPUs idle;
    ``j1`` (admitted, first although it arrived second) grows to ``u(1, min(4, 1 + 4)) = 4``
    (rate 24), leaving 1; ``j0`` grows to ``u(1, 2) = 2`` (rate 18). ``j1`` completes at
    ``2400 / 24 = 100``, with 300 s of slack; ``j0`` has 1800 steps done and, alone at lease 1,
    grows to 4: ``2200 / 24`` s more, done at ``100 + 91.67``.
    """
    rows = [
        {"total_steps": 4000.0, "num_gpus": 1},
        {"total_steps": 2400.0, "num_gpus": 1, "deadline": 400.0},
    ]
    world = _world(rows, count=6, factor=4.0)
    rigid = simulate(world, Chronus(100.0, mode=mode))  # type: ignore[arg-type]
    assert within(rigid.completion[1], 240.0, TIME_TOL)
    assert within(rigid.completion[0], 400.0, TIME_TOL)
    policy = Chronus(100.0, mode=mode, elastic=True)  # type: ignore[arg-type]
    elastic = simulate(world, policy)
    assert validate(world, elastic).ok
    assert policy.log[0].admitted == ("j1",)
    assert _gangs(elastic, 0.0) == {"j0": 2, "j1": 4}
    assert within(elastic.completion[1], 100.0, TIME_TOL)
    assert world.jobs[1].deadline - elastic.completion[1] >= 300.0 - TIME_TOL
    assert _gangs(elastic, 100.0) == {"j0": 4}
    assert within(elastic.completion[0], 100.0 + 2200.0 / 24.0, TIME_TOL)


def test_growth_follows_deadlines_and_stops_at_the_useful_size() -> None:
    """5 GPUs, two admitted SLO jobs asking for 1 GPU each, the later deadline arriving first.

    Rigid grants leave 3 idle. ``j1`` (deadline 500) grows first to ``u(1, min(8, 4)) = 4``,
    leaving none for ``j0`` (deadline 900), which keeps 1. With 9 GPUs, ``j1`` stops at 4
    (a fifth adds nothing) and ``j0`` takes ``u(1, min(8, 1 + 4)) = 4``; one GPU stays idle.
    """
    rows = [
        {"total_steps": 3000.0, "num_gpus": 1, "deadline": 900.0},
        {"total_steps": 3000.0, "num_gpus": 1, "deadline": 500.0},
    ]
    for count, gangs in ((5, {"j0": 1, "j1": 4}), (9, {"j0": 4, "j1": 4})):
        world = _world(rows, count=count, factor=8.0)
        policy = Chronus(100.0, elastic=True)
        result = simulate(world, policy)
        assert set(policy.log[0].admitted) == {"j0", "j1"}
        assert _gangs(result, 0.0) == gangs, count
        assert validate(world, result).ok


def test_a_rigid_world_gives_the_rigid_record() -> None:
    rows = [
        {"arrival": 0.0, "total_steps": 5000.0, "num_gpus": 4, "deadline": 900.0},
        {"arrival": 50.0, "total_steps": 3000.0, "num_gpus": 2, "deadline": 400.0},
        {"arrival": 70.0, "total_steps": 9000.0, "num_gpus": 8},
        {"arrival": 120.0, "total_steps": 800.0, "num_gpus": 1, "deadline": 150.0},
    ]
    world = _world(rows, count=8, factor=1.0)
    for mode in ("milp", "greedy"):
        a = simulate(world, Chronus(100.0, mode=mode))  # type: ignore[arg-type]
        b = simulate(world, Chronus(100.0, mode=mode, elastic=True))  # type: ignore[arg-type]
        assert a.completion == b.completion, mode
        assert a.intervals_frame().equals(b.intervals_frame()), mode


@settings(max_examples=10, deadline=None)
@given(worlds(max_jobs=5))
def test_rigid_worlds_give_the_rigid_record_on_random_worlds(world: World) -> None:
    a = simulate(world, Chronus(LEASE, mode="greedy", max_leases=8))
    b = simulate(world, Chronus(LEASE, mode="greedy", max_leases=8, elastic=True))
    assert a.completion == b.completion
    assert a.intervals_frame().equals(b.intervals_frame())


@settings(max_examples=12, deadline=None)
@given(worlds(max_jobs=5), st.sampled_from([2.0, 4.0]), st.sampled_from(["milp", "greedy"]))
def test_random_elastic_worlds_validate_and_admitted_jobs_meet_deadlines(
    world: World, factor: float, mode: str
) -> None:
    elastic = world.elastic(max_factor=factor)
    policy = Chronus(LEASE, mode=mode, max_leases=8, elastic=True)  # type: ignore[arg-type]
    record = simulate(elastic, policy)
    report = validate(elastic, record)
    assert report.ok, report.violations
    completion = dict(zip([j.job_id for j in elastic.jobs], record.completion, strict=True))
    admitted = {job for d in policy.log for job in d.admitted}
    dropped = {job for d in policy.log for job in d.dropped}
    for job in admitted - dropped:
        assert not math.isnan(completion[job])
        assert completion[job] <= elastic.job(job).deadline + TIME_TOL, job


def test_registry_names() -> None:
    for name in ("chronus-elastic", "chronus-greedy-elastic"):
        assert name in ELASTIC_POLICIES
        policy = make_policy(name)
        assert isinstance(policy, Chronus) and policy.elastic and policy.name == name
    assert make_policy("chronus").name == "chronus" and not make_policy("chronus").elastic


@pytest.mark.parametrize(("seed", "restore"), [(0, 30.0), (3, 0.0)])
def test_admitted_jobs_meet_deadlines_with_growth_and_restore_cost(
    seed: int, restore: float
) -> None:
    """Generated two-type worlds, gangs up to 4x: jobs do grow, and growth (a restart, with its
    restore cost) never costs an admitted job its deadline."""
    world = sim.generate_instance(
        10,
        "v100=4,k80=4",
        seed=seed,
        restore_s=restore,
        deadline_fraction=0.6,
        mean_interarrival=200.0,
        mu=6.5,
        sigma=0.8,
    ).elastic(max_factor=4)
    policy = Chronus(600.0, elastic=True)
    record = simulate(world, policy)
    assert validate(world, record).ok
    asked = {j.job_id: j.num_gpus for j in world.jobs}
    frame = record.intervals_frame()
    assert any(g > asked[str(j)] for j, g in zip(frame["job_id"], frame["gpus"], strict=True))
    completion = dict(zip([j.job_id for j in world.jobs], record.completion, strict=True))
    admitted = {job for d in policy.log for job in d.admitted}
    assert admitted
    for job in admitted:
        assert completion[job] <= world.job(job).deadline, job
