"""The Harmony world over time: every policy's decisions validate, the ILP is never beaten."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.harmony import load_model
from optsched.harmony.agent import world_from_meta
from optsched.harmony.policies import place_job, run_policy
from optsched.harmony.snapshot import snapshot_instance, solve_decision, validate_decision
from optsched.harmony.world import EngineDriver, HarmonyWorld, generate_arrivals
from optsched.placement import brute_force
from optsched.tolerances import RATIO_TOL

WORLD = HarmonyWorld(n_servers=4, n_types=4, seed=3)


@pytest.mark.parametrize("policy", ["first-fit", "load-balance", "tetris", "random"])
def test_every_decision_validates_and_every_job_finishes(policy: str) -> None:
    arrivals = generate_arrivals(WORLD, 12, seed=5, mean_interarrival_s=20.0)
    run = run_policy(WORLD, arrivals, policy, seed=1)
    assert len(run.objectives) == len(arrivals), "each decision was validated"
    assert len(run.jct) == len(arrivals)
    # A job takes at least its standalone time: iterations * t0 of its type.
    t0 = WORLD.the_truth.standalone_times
    floor = np.array([j.iterations * t0[j.job_type] for j in arrivals])
    assert np.all(run.jct >= floor * (1 - RATIO_TOL)), (run.jct, floor)


def test_interference_slows_jobs_down() -> None:
    # One server: both jobs share it, so the second arrival slows the first.
    world = HarmonyWorld(n_servers=1, gpus=8, cpus=32, n_types=4, seed=3)
    arrivals = generate_arrivals(world, 2, seed=0, mean_interarrival_s=1.0)
    run = run_policy(world, arrivals, "first-fit", validate=False)
    alone = np.array(
        [j.iterations * world.the_truth.standalone_times[j.job_type] for j in arrivals]
    )
    assert run.jct[0] > alone[0] * (1 + RATIO_TOL), "co-location must cost time"


def test_commit_refuses_a_task_that_does_not_fit() -> None:
    arrivals = generate_arrivals(WORLD, 2, seed=0)
    sim = EngineDriver(WORLD, arrivals)
    job = sim.next_job()
    assert job is not None
    with pytest.raises(InvalidInstanceError, match="servers"):
        sim.commit(job, [0] * (job.n_tasks - 1))


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), busy=st.integers(0, 8))
@pytest.mark.solver("highs")
def test_exact_ilp_never_worse_than_any_policy_on_a_snapshot(seed: int, busy: int) -> None:
    # The shipped policy's world: the learned policy is judged alongside the heuristics.
    params, meta = load_model()
    world = world_from_meta(meta)
    arrivals = generate_arrivals(world, busy + 1, seed=seed, mean_interarrival_s=1.0)
    sim = EngineDriver(world, arrivals)
    rng = np.random.default_rng(seed)
    for _ in range(busy):  # fill the cluster with random placements
        job = sim.next_job()
        assert job is not None
        sim.commit(job, place_job("random", sim.state, job, rng=rng))
    job = sim.next_job()
    assert job is not None
    instance = snapshot_instance(sim.state, job)
    servers, optimum = solve_decision(instance)
    _, check = validate_decision(instance, servers, "ilp")
    assert check == pytest.approx(optimum, rel=RATIO_TOL)
    for name in ("harmony", "first-fit", "load-balance", "tetris", "random"):
        placed = place_job(name, sim.state, job, params=params, rng=rng)
        _, value = validate_decision(instance, placed, name)
        assert optimum <= value * (1 + RATIO_TOL), (name, optimum, value)


@settings(max_examples=6)
@given(seed=st.integers(0, 10_000), busy=st.integers(0, 5))
@pytest.mark.solver("highs")
def test_snapshot_ilp_matches_brute_force(seed: int, busy: int) -> None:
    # A tiny snapshot (3 servers, at most 3 tasks): enumeration finds the same optimum.
    world = HarmonyWorld(n_servers=3, n_types=3, seed=seed % 7, max_workers=2, max_ps=1)
    arrivals = generate_arrivals(world, busy + 1, seed=seed, mean_interarrival_s=1.0)
    sim = EngineDriver(world, arrivals)
    rng = np.random.default_rng(seed)
    for _ in range(busy):
        job = sim.next_job()
        assert job is not None
        sim.commit(job, place_job("random", sim.state, job, rng=rng))
    job = sim.next_job()
    assert job is not None
    instance = snapshot_instance(sim.state, job)
    _, optimum = solve_decision(instance)
    brute = brute_force(instance, "interference")
    assert brute is not None
    assert optimum == pytest.approx(brute[0], rel=RATIO_TOL)
