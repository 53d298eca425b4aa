"""AlloX: the matching against brute force, and a simulated round computed by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from strategies.sim import job_frame, matching_cases, synthetic_throughputs

from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.policies import AlloX, make_policy
from optsched.sim.policies.allox import allox_sequences
from optsched.tolerances import TIME_TOL, within


def _brute_force(times: np.ndarray, gpus: list[int]) -> float:
    """Least total completion time over every job-to-GPU assignment, SPT on each GPU."""
    machines = [g for g, count in enumerate(gpus) for _ in range(count)]
    best = math.inf
    for choice in itertools.product(range(len(machines)), repeat=times.shape[0]):
        total = 0.0
        for k, g in enumerate(machines):
            own = sorted(times[i, g] for i, c in enumerate(choice) if c == k)
            total += sum(itertools.accumulate(own))
        best = min(best, total)
    return best


@given(matching_cases())
def test_the_matching_is_the_least_total_completion_time(case) -> None:
    times, gpus = case
    sequences, total = allox_sequences(times, gpus)
    assert within(total, _brute_force(times, gpus), TIME_TOL)
    placed = sorted(i for per_type in sequences for seq in per_type for i in seq)
    assert placed == list(range(times.shape[0]))  # every job once
    for g, per_type in enumerate(sequences):
        assert len(per_type) <= gpus[g]
        for seq in per_type:
            assert all(math.isfinite(times[i, g]) for i in seq)  # never where it cannot run


def test_a_job_that_runs_nowhere_is_named() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        allox_sequences(np.array([[1.0, math.inf]]), [0, 1])
    assert info.value.field == "times"


def _world(rows: list[dict], fast: int = 1, slow: int = 1) -> World:
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=fast, gpus_per_server=1),
            GpuType(name="slow", count=slow, gpus_per_server=1),
        )
    )
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs())


def test_a_round_computed_by_hand() -> None:
    """Model A runs 2 steps/s on "fast" and 1 on "slow"; model B 3 and 1.5.

    Jobs (seconds on fast, slow): j0 (2, 4), j1 (1, 2), j2 (3, 6), all at time 0. The least
    total completion time is 9 (e.g. fast runs j1 then j2, slow runs j0: 1 + 4 + 4; or fast j0
    then j2, slow j1: 2 + 5 + 2). Non-preemptive AlloX starts one job per GPU at 0 and the
    last one when a GPU frees, reaching that optimum.
    """
    world = _world(
        [
            {"model": "A", "total_steps": 4.0},
            {"model": "A", "total_steps": 2.0},
            {"model": "B", "total_steps": 9.0},
        ]
    )
    result = simulate(world, AlloX())
    assert validate(world, result).ok
    assert within(sum(result.completion), 9.0, TIME_TOL)
    assert within(max(result.completion), 4.0, TIME_TOL)


def test_alpha_restricts_the_matching_to_the_longest_waiting() -> None:
    """One GPU, three queued jobs: with alpha = 1/3 only the oldest enters the matching, so
    the GPU runs jobs in arrival order (FIFO) instead of shortest first."""
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=1, gpus_per_server=1),))
    rows = [
        {"arrival": 0.0, "model": "A", "total_steps": 2.0},  # occupies the GPU 0..1
        {"arrival": 0.5, "model": "A", "total_steps": 8.0},  # 4 s
        {"arrival": 0.6, "model": "A", "total_steps": 2.0},  # 1 s
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs())
    spt = simulate(world, AlloX())
    fifo = simulate(world, AlloX(alpha=1 / 3))
    assert within(spt.completion[2], 2.0, TIME_TOL) and within(spt.completion[1], 6.0, TIME_TOL)
    assert within(fifo.completion[1], 5.0, TIME_TOL) and within(fifo.completion[2], 6.0, TIME_TOL)
    assert validate(world, spt).ok and validate(world, fifo).ok


def test_gangs_are_refused_naming_the_job() -> None:
    world = _world([{"model": "A", "total_steps": 4.0, "num_gpus": 2}], fast=2, slow=2)
    with pytest.raises(InvalidInstanceError) as info:
        simulate(world, make_policy("allox"))
    assert info.value.field == "jobs[0].num_gpus"


@pytest.mark.parametrize("alpha", [0.0, -1.0, 1.5, math.nan])
def test_alpha_out_of_range_is_named(alpha: float) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        AlloX(alpha=alpha)
    assert info.value.field == "alpha"
