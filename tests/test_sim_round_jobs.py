"""The one translation of a simulation state into the allocation family's jobs
(``optsched.sim.policies.allocation.allocation_jobs``), used by the LPs, the packed LPs and
Themis."""

from __future__ import annotations

import math

import pytest
from strategies.sim import job_frame

from optsched import sim
from optsched.sim.engine.policy import JobState, SimState
from optsched.sim.policies.allocation import IsolatedTime, allocation_jobs


def _state(now: float, states: tuple[JobState, ...], world: sim.World) -> SimState:
    return SimState(now=now, world=world, active=states, round_index=0, round_seconds=360.0)


def _world() -> sim.World:
    frame = job_frame(
        [
            {"job_id": "a", "arrival": 0.0, "duration": 100.0, "num_gpus": 1, "weight": 2.0},
            {"job_id": "b", "arrival": 5.0, "duration": 50.0, "num_gpus": 4, "deadline": 20.0},
            {"job_id": "c", "arrival": 10.0, "duration": 80.0, "num_gpus": 2, "deadline": 900.0},
        ]
    )
    spec = sim.parse_cluster("v100=2,p100=8")
    return sim.World.from_frame(frame, spec, sim.Throughputs.uniform(spec.names))


def test_each_active_job_as_an_allocation_job() -> None:
    world = _world()
    states = tuple(JobState(job=j, done=0.25 * j.work) for j in world.jobs)
    state = _state(30.0, states, world)
    out = allocation_jobs(state, IsolatedTime(), job_type=lambda _st, s: f"t-{s.job_id}")
    assert out.gpu_types == ("v100", "p100") and out.capacity == (2, 8)
    assert out.states == states
    for s, job in zip(out.states, out.jobs, strict=True):
        assert job.job_id == s.job_id
        assert job.throughput_steps_per_s == tuple(state.rate(s, t) for t in out.gpu_types)
        assert job.scale_factor == s.job.num_gpus and job.weight == s.job.weight
        assert job.steps_remaining == pytest.approx(0.75 * s.job.work)
        assert job.time_since_start_s == 30.0 - s.job.arrival
        assert job.isolated_time_s == 0.0 and job.job_type == f"t-{s.job_id}"
        assert job.time_to_deadline_s is None  # deadlines are asked for separately
    assert out.jobs[0].weight == 2.0 and out.jobs[1].scale_factor == 4


def test_deadlines_left_and_passed() -> None:
    world = _world()
    states = tuple(JobState(job=j) for j in world.jobs)
    out = allocation_jobs(_state(30.0, states, world), IsolatedTime(), deadlines=True)
    due = {j.job_id: j.time_to_deadline_s for j in out.jobs}
    # b's deadline (absolute) has passed: it runs on without one; c has seconds left
    assert due["a"] is None and due["b"] is None
    assert due["c"] == pytest.approx(world.job("c").deadline - 30.0)
    assert math.isfinite(due["c"]) and due["c"] > 0


def test_the_isolated_history_grows_with_progress() -> None:
    world = _world()
    isolated = IsolatedTime()
    first = tuple(JobState(job=j) for j in world.jobs)
    out = allocation_jobs(_state(0.0, first, world), isolated)
    from optsched.allocation.gavel import AllocationInstance
    from optsched.allocation.gavel.shares import isolated_throughput

    instance = AllocationInstance(gpu_types=out.gpu_types, capacity=out.capacity, jobs=out.jobs)
    isolated.record(instance)
    shares = isolated_throughput(instance.throughputs, instance.scale_factors, instance.capacities)
    later = tuple(JobState(job=j, done=10.0) for j in world.jobs)
    again = allocation_jobs(_state(60.0, later, world), isolated)
    for i, job in enumerate(again.jobs):
        assert job.isolated_time_s == pytest.approx(10.0 / float(shares[i]))
