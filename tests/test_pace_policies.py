"""PACE against the baselines: never slower, never below the lower bound, on equal terms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from strategies.pace import policy_cases

from optsched.comm.pace import CommInstance, compare
from optsched.comm.pace.cost import MB, CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.exact import exact_schedule
from optsched.comm.pace.generate import random_profile
from optsched.comm.pace.policies import (
    BYTESCHEDULER_CREDITS,
    BYTESCHEDULER_PARTITIONS_MB,
    POLICIES,
    ByteScheduler,
    Horovod,
    run_policy,
)
from optsched.comm.pace.simulate import lower_bound
from optsched.comm.pace.validator import check_trace
from optsched.errors import InvalidInstanceError
from optsched.profiles import available_profiles

#: Times reach the same optimum along different floating-point paths.
REL = 1e-9


@settings(max_examples=40)
@given(policy_cases())
def test_pace_is_never_slower_and_nobody_beats_the_bound(case):
    dag, cost, policies = case
    results = {p.name: p.run(dag, cost) for p in policies}
    bound = lower_bound(dag, cost)
    pace = results["pace"].iteration_time
    for name, res in results.items():
        assert res.iteration_time >= bound * (1 - REL), name
        assert pace <= res.iteration_time * (1 + REL), (name, pace, res.iteration_time)
    assert pace >= bound * (1 - REL)


@settings(max_examples=30)
@given(policy_cases())
def test_horovod_groups_are_in_the_dp_search_space(case):
    # The premise of PACE <= Horovod: Horovod's fused calls are contiguous in consumption
    # order and within the fusion limit, so the DP optimises over them, and the optimal
    # preemptive schedule of those groups is no slower than Horovod's own.
    dag, cost, policies = case
    horovod = next(p for p in policies if isinstance(p, Horovod))
    res = horovod.run(dag, cost)
    calls: dict[int, list[int]] = {}
    for piece, call in enumerate(res.trace.piece_call):
        calls.setdefault(int(call), []).append(piece)  # pieces are whole tensors
    groups = []
    for members in calls.values():
        lo, hi = min(members), max(members)
        assert sorted(members) == list(range(lo, hi + 1))
        if len(members) > 1:
            assert dag.tensor_bytes[lo : hi + 1].sum() <= horovod.threshold_mb * MB
        groups.append((lo, hi + 1))
    groups.sort()
    exact = exact_schedule(dag, cost, groups)
    assert exact.iteration_time <= res.iteration_time * (1 + REL)


@settings(max_examples=15)
@given(policy_cases())
def test_bytescheduler_tuner_finds_the_best_grid_point(case):
    dag, cost, _ = case
    tuned = ByteScheduler().run(dag, cost)
    grid = [
        ByteScheduler(p, c).run(dag, cost).iteration_time
        for p in BYTESCHEDULER_PARTITIONS_MB
        for c in BYTESCHEDULER_CREDITS
    ]
    assert tuned.iteration_time == min(grid)
    assert len(tuned.tuning) == len(grid)
    fixed = ByteScheduler(partition_mb=2.0).run(dag, cost)
    assert fixed.params["partition_mb"] == 2.0
    assert len(fixed.tuning) == len(BYTESCHEDULER_CREDITS)


SETTINGS = [(8, 10.0, 5.0), (16, 1.0, 20.0), (4, 100.0, 2.0)]


@pytest.mark.parametrize("name", available_profiles())
@pytest.mark.parametrize(("workers", "gbps", "latency"), SETTINGS)
def test_every_bundled_model(name, workers, gbps, latency):
    result = compare(name, workers, gbps, latency)
    times = result.iteration_times
    assert set(times) == {"fifo", "horovod", "p3", "tictac", "bytescheduler", "pace"}
    assert result.fastest == "pace"
    for policy, t in times.items():
        assert t >= result.lower_bound * (1 - REL), policy
        assert times["pace"] <= t * (1 + REL), policy
    pace = result.results["pace"]
    assert check_trace(result.dag, result.cost, pace.plan, pace.trace).ok
    assert math.isclose(pace.iteration_time, result.pace.iteration_time, rel_tol=REL)
    # The fusion comparison: the DP is no worse than no fusion or threshold fusion.
    assert result.fusion["dp"] <= min(result.fusion["none"], result.fusion["threshold"]) * (1 + REL)
    assert math.isclose(result.fusion["dp"], result.pace.iteration_time, rel_tol=REL)


def test_compare_report():
    result = compare("resnet50", workers=8, bandwidth_gbps=10, latency_us=5, partition_mb=4)
    d = result.to_dict()
    assert d["policies"]["pace"]["iteration_time"] == result.iteration_times["pace"]
    assert d["lower_bound"] == result.lower_bound
    assert d["fastest"] == "pace"
    assert d["policies"]["bytescheduler"]["params"]["partition_mb"] == 4
    assert d["policies"]["p3"]["params"]["slice_mb"] == 4
    groups = d["pace_schedule"]["groups"]
    assert sum(len(g["tensors"]) for g in groups) == len(result.dag.tensors)
    speed = result.speedup()
    assert speed["pace"] == 1.0 and all(v >= 1 - REL for v in speed.values())
    # One worker: all-reduces are free; every policy runs at compute speed except Horovod,
    # whose tensors still wait for a cycle tick.
    solo = compare("resnet18", workers=1, bandwidth_gbps=10, latency_us=5)
    for name, t in solo.iteration_times.items():
        if name == "horovod":
            assert solo.dag.compute_ms <= t <= solo.dag.compute_ms + 5.0
        else:
            assert math.isclose(t, solo.dag.compute_ms, rel_tol=REL)


def test_kahn_order_changes_only_priorities():
    a = compare("inception_v3", 8, 10, 5)
    b = compare("inception_v3", 8, 10, 5, order="kahn")
    assert a.dag.total_bytes == b.dag.total_bytes
    assert b.fastest == "pace"
    assert math.isclose(a.dag.compute_ms, b.dag.compute_ms, rel_tol=REL)


def test_bad_settings_name_the_field():
    with pytest.raises(InvalidInstanceError) as err:
        compare("resnet18", workers=0, bandwidth_gbps=10, latency_us=5)
    assert err.value.field == "workers"
    with pytest.raises(InvalidInstanceError) as err:
        compare("resnet18", 8, 10, 5, partition_mb=0)
    assert err.value.field == "p3.slice_mb"
    with pytest.raises(InvalidInstanceError) as err:
        compare("resnet18", 8, 10, 5, fusion_mb=-1)
    assert err.value.field == "fusion_mb"
    with pytest.raises(InvalidInstanceError) as err:
        compare("no_such_model", 8, 10, 5)
    assert err.value.field == "profile"
    with pytest.raises(InvalidInstanceError) as err:
        run_policy("sjf", CommInstance(profile=random_profile(0, layers=2)))
    assert err.value.field == "policy"


def test_unfused_pace_dominates_sliced_policies_tensor_by_tensor():
    # The argument for P3/ByteScheduler: one preemptable call per tensor needs less channel
    # time than its slices and finishes every tensor no later under the optimal order.
    dag = build_dag(random_profile(11, layers=10))
    cost = CostModel(0.5, 1e-6)
    unfused = exact_schedule(dag, cost)
    for name in ("p3", "tictac", "fifo"):
        res = POLICIES[name]().run(dag, cost)
        assert unfused.iteration_time <= res.iteration_time * (1 + REL)
    assert np.all(np.isfinite(unfused.tensor_completion))


@pytest.mark.parametrize("partition_mb", [1e308, 1e300])
def test_a_partition_past_every_tensor_leaves_them_whole(partition_mb):
    """A partition larger than any tensor, even past float range in bytes, slices nothing.

    ``1e308`` MB is ``inf`` bytes: the last (only) piece was once ``size - inf * 0 = NaN``
    bytes, and the run refused on ``plan.tensors[0]`` instead of running.
    """
    huge = compare("alexnet", 8, 10, 5, partition_mb=partition_mb)
    whole = compare("alexnet", 8, 10, 5, partition_mb=max(huge.dag.tensor_bytes) / MB)
    assert math.isfinite(huge.iteration_times["p3"])
    assert huge.iteration_times["p3"] == whole.iteration_times["p3"]
    # ByteScheduler's window (credit x partition) then holds every byte: it sends as FIFO does.
    assert huge.iteration_times["bytescheduler"] == huge.iteration_times["fifo"]
