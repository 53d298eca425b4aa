"""Elastic gangs: a grant may size a job's gang within its ``min_gpus..max_gpus``."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame, synthetic_throughputs, worlds

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim import (
    ClusterSpec,
    GpuType,
    Grant,
    Policy,
    PolicyDecision,
    SimJob,
    SimState,
    World,
    simulate,
    validate,
)
from optsched.tolerances import TIME_TOL, within


def _world(gang: int = 2, steps: float = 120.0, restore: float = 0.0, count: int = 8) -> World:
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=count, gpus_per_server=4),))
    frame = job_frame([{"model": "A", "total_steps": steps, "num_gpus": gang}])
    return World.from_frame(frame, cluster, synthetic_throughputs(), restore_s=restore)


class Sized(Policy):
    """Grants every active job ``sizes[k]`` GPUs at its k-th decision (the last size after)."""

    def __init__(self, sizes: list[int], round_seconds: float | None = None) -> None:
        self.name = "sized"
        self.sizes = sizes
        self.round_seconds = round_seconds

    def allocate(self, state: SimState) -> PolicyDecision:
        grants = []
        for s in state.active:
            k = min(state.decisions_seen(s) - 1, len(self.sizes) - 1)
            grants.append(Grant(s.job_id, "fast", num_gpus=self.sizes[k]))
        return PolicyDecision(tuple(grants))


def test_jobs_are_rigid_by_default() -> None:
    job = _world().jobs[0]
    assert (job.min_gpus, job.num_gpus, job.max_gpus) == (2, 2, 2)
    assert not job.elastic


def test_bounds_must_bracket_the_request() -> None:
    job = _world().jobs[0]
    with pytest.raises(InvalidInstanceError, match="min_gpus"):
        dataclasses.replace(job, min_gpus=3)
    with pytest.raises(InvalidInstanceError, match="min_gpus"):
        dataclasses.replace(job, max_gpus=1)
    with pytest.raises(InvalidInstanceError, match="min_gpus"):
        SimJob(0, "x", 0.0, 1, "", 1.0, 1.0, 1.0, math.nan, "", "", min_gpus=0)


def test_elastic_world_widens_within_the_cluster() -> None:
    world = _world(gang=2, count=8)
    assert world.elastic().jobs[0].min_gpus == 1
    assert world.elastic().jobs[0].max_gpus == 2  # never grows beyond the request by default
    grown = world.elastic(max_factor=3.0)
    assert (grown.jobs[0].min_gpus, grown.jobs[0].max_gpus) == (1, 6)
    assert world.elastic(max_factor=10.0).jobs[0].max_gpus == 8  # the largest type's count
    assert world.elastic(min_gpus=2, max_gpus=4, max_factor=10.0).jobs[0].max_gpus == 4


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"min_gpus": 0}, "min_gpus"),
        ({"max_gpus": 0}, "max_gpus"),
        ({"max_factor": 0.5}, "max_factor"),
        ({"max_factor": math.inf}, "max_factor"),
    ],
)
def test_elastic_options_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        _world().elastic(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_one_job_on_a_granted_gang_takes_work_over_that_rate(n: int) -> None:
    world = _world(gang=2).elastic(max_factor=3.0)
    result = simulate(world, Sized([n]))
    # the synthetic table: base 1.0 x speed 2.0 x n (linear beyond the measured 1, 2, 4, 8)
    assert within(result.completion[0], 120.0 / (2.0 * n), TIME_TOL)
    report = validate(world, result)
    assert report.ok, report.violations
    assert result.to_frame() is not None


def test_resizing_is_a_preemption_with_its_restore_cost() -> None:
    world = _world(gang=2, restore=1.0).elastic(max_factor=2.0)
    # 10 s on 2 GPUs (rate 4, 40 steps), then 4 GPUs (rate 8) after a 1 s restore: 80 steps
    result = simulate(world, Sized([2, 4], round_seconds=10.0))
    assert within(result.completion[0], 10.0 + 1.0 + 80.0 / 8.0, TIME_TOL)
    assert validate(world, result).ok


def test_a_size_outside_the_range_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="outside its gang sizes"):
        simulate(_world(gang=2), Sized([4]))
    with pytest.raises(PolicyError, match="outside its gang sizes"):
        simulate(_world(gang=2).elastic(), Sized([0]))


def test_validator_refuses_an_elastic_record_in_a_rigid_world() -> None:
    elastic = _world(gang=2).elastic(max_factor=2.0)
    result = simulate(elastic, Sized([4]))
    rigid = _world(gang=2)
    names = {v.constraint for v in validate(rigid, result).violations}
    assert "gang_whole" in names


@given(world=worlds(max_jobs=5), seed=st.integers(0, 2**16))
def test_random_gang_sizes_always_validate(world: World, seed: int) -> None:
    import random

    world = world.elastic(max_factor=2.0)

    class Random(Policy):
        name = "random-sizes"
        round_seconds = 7.0

        def reset(self, w: World) -> None:
            self.rng = random.Random(seed)

        def allocate(self, state: SimState) -> PolicyDecision:
            grants = []
            for s in state.active:
                gpu = self.rng.choice(world.cluster.names)
                cap = world.cluster.count(gpu)
                hi = min(s.job.max_gpus, cap)
                if hi < s.job.min_gpus:
                    continue
                grants.append(Grant(s.job_id, gpu, num_gpus=self.rng.randint(s.job.min_gpus, hi)))
            return PolicyDecision(tuple(grants))

    result = simulate(world, Random())
    report = validate(world, result)
    assert report.ok, report.violations
    assert all(not math.isnan(c) for c in result.completion) or result.truncated


def test_the_exact_model_refuses_elastic_jobs() -> None:
    from optsched.sim import solve

    with pytest.raises(InvalidInstanceError) as err:
        solve(_world(gang=2).elastic(), round_seconds=10.0)
    assert err.value.field == "min_gpus"
