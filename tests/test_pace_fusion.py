"""Tensor fusion: the DP against a brute force over every contiguous grouping."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.pace import fusion_cases

from optsched.comm.pace.cost import MB, CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.exact import exact_schedule
from optsched.comm.pace.fusion import (
    no_fusion,
    optimal_fusion,
    pace_schedule,
    threshold_fusion,
)
from optsched.comm.pace.generate import random_profile
from optsched.comm.pace.kernels import fusion_kernel, fusion_reference
from optsched.errors import InvalidInstanceError

REL = 1e-9


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=REL)


def schedule_value(dag, cost, groups) -> float:
    sched = exact_schedule(dag, cost, groups)
    return float(np.max(sched.completion + sched.jobs.tail))


def all_groupings(n, sizes, limit_mb, limit_tensors):
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        groups = list(itertools.pairwise(bounds))
        ok = True
        for a, b in groups:
            if b - a > 1 and limit_mb is not None and sizes[a:b].sum() > limit_mb * MB:
                ok = False
            if limit_tensors is not None and b - a > limit_tensors:
                ok = False
        if ok:
            yield groups


@settings(max_examples=60)
@given(fusion_cases())
def test_dp_is_optimal_over_contiguous_groupings(case):
    dag, cost, limit_mb, limit_tensors = case
    fusion = optimal_fusion(dag, cost, max_group_mb=limit_mb, max_group_tensors=limit_tensors)
    n = dag.n_tensors
    best = min(
        schedule_value(dag, cost, g)
        for g in all_groupings(n, dag.tensor_bytes, limit_mb, limit_tensors)
    )
    assert close(fusion.value, best)
    # The value the DP reports is the exact schedule's value for its groups.
    assert close(fusion.value, schedule_value(dag, cost, fusion.groups))
    # Its groups are contiguous, cover every tensor and respect the limits.
    assert fusion.groups[0][0] == 0 and fusion.groups[-1][1] == n
    assert all(a < b for a, b in fusion.groups)
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(fusion.groups))
    for a, b in fusion.groups:
        if limit_tensors is not None:
            assert b - a <= limit_tensors
        if limit_mb is not None and b - a > 1:
            assert dag.tensor_bytes[a:b].sum() <= limit_mb * MB


@settings(max_examples=30)
@given(fusion_cases(max_layers=4, max_tensors=2))
def test_kernel_matches_the_oracle_dp(case):
    dag, cost, limit_mb, limit_tensors = case
    n = dag.n_tensors
    max_bytes = math.inf if limit_mb is None else limit_mb * MB
    max_tensors = n if limit_tensors is None else limit_tensors
    prefix = np.concatenate([[0.0], np.cumsum(dag.tensor_bytes)])
    value, _ = fusion_kernel(
        dag.release + dag.tail, prefix, cost.alpha_ms, cost.beta_ms_per_byte, max_bytes, max_tensors
    )
    oracle, _ = fusion_reference(
        dag.release,
        dag.tail,
        dag.tensor_bytes,
        cost.alpha_ms,
        cost.beta_ms_per_byte,
        max_bytes,
        max_tensors,
    )
    assert close(value, oracle)


@given(fusion_cases(max_layers=8, max_tensors=3), st.floats(0.5, 64))
def test_dp_beats_no_fusion_and_threshold_fusion(case, threshold):
    dag, cost, _, _ = case
    dp = optimal_fusion(dag, cost, max_group_mb=threshold)
    none = no_fusion(dag, cost)
    thr = threshold_fusion(dag, cost, threshold)
    assert dp.value <= none.value * (1 + REL) + REL
    assert dp.value <= thr.value * (1 + REL) + REL
    assert none.n_groups == dag.n_tensors


@given(fusion_cases(max_layers=8, max_tensors=3), st.floats(0.5, 64))
def test_threshold_fusion_is_greedy_in_release_order(case, threshold):
    dag, cost, _, _ = case
    limit = threshold * MB
    thr = threshold_fusion(dag, cost, threshold)
    size = dag.tensor_bytes
    groups = thr.groups
    assert groups[0][0] == 0 and groups[-1][1] == dag.n_tensors
    for k, (a, b) in enumerate(groups):
        total = size[a:b].sum()
        assert b - a == 1 or total <= limit
        # Filled greedily from the release end: the next tensor (in release order) didn't fit.
        if k > 0 and b - a >= 1:
            assert total + size[a - 1] > limit


def test_fusion_saves_overhead_when_latency_dominates():
    dag = build_dag(random_profile(7, layers=6))
    cost = CostModel(alpha_ms=100.0, beta_ms_per_byte=1e-9)
    fusion = optimal_fusion(dag, cost)
    assert fusion.n_groups == 1
    sched = pace_schedule(dag, cost, max_group_mb=None)
    assert sched.jobs.groups == fusion.groups


def test_limits_are_validated():
    dag = build_dag(random_profile(1, layers=3))
    cost = CostModel(0.1, 1e-6)
    with pytest.raises(InvalidInstanceError) as err:
        optimal_fusion(dag, cost, max_group_mb=0)
    assert err.value.field == "max_group_mb"
    with pytest.raises(InvalidInstanceError) as err:
        optimal_fusion(dag, cost, max_group_tensors=0)
    assert err.value.field == "max_group_tensors"
    with pytest.raises(InvalidInstanceError) as err:
        threshold_fusion(dag, cost, -1)
    assert err.value.field == "threshold_mb"
