"""The pruned fusion DP equals the full DP bit for bit (value and groups), on any input.

:func:`~optsched.comm.pace.kernels.fusion_kernel` drops states by an upper bound, a completion
bound and Pareto dominance; its notes prove that the kept states carry exactly the full DP's
values and choices. These tests check that claim against
:func:`~optsched.comm.pace.kernels.fusion_kernel_full` (the unpruned DP) with exact equality,
on integer data (where ties are common and arithmetic is exact) and on float data, and the
plain-Python transcription against both.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from strategies.pace import dp_inputs

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.fusion import optimal_fusion
from optsched.comm.pace.generate import random_profile
from optsched.comm.pace.kernels import (
    fusion_kernel,
    fusion_kernel_full,
    fusion_pruned,
    fusion_pruned_reference,
    fusion_upper_bound,
)
from optsched.errors import InvalidInstanceError
from optsched.tolerances import TIME_TOL


@settings(max_examples=400)
@given(dp_inputs())
def test_pruned_kernel_equals_the_full_dp_exactly(args):
    value, starts = fusion_kernel(*args)
    full_value, full_starts = fusion_kernel_full(*args)
    assert value == full_value
    assert starts.tolist() == full_starts.tolist()


@settings(max_examples=200)
@given(dp_inputs())
def test_plain_python_pruned_dp_equals_both_kernels(args):
    value, starts = fusion_pruned_reference(*args)
    kernel_value, kernel_starts = fusion_kernel(*args)
    assert value == kernel_value
    assert starts == kernel_starts.tolist()


@settings(max_examples=200)
@given(dp_inputs())
def test_upper_bound_is_the_value_of_a_valid_grouping(args):
    value, _ = fusion_kernel_full(*args)
    assert fusion_upper_bound(*args) >= value


@settings(max_examples=200)
@given(dp_inputs())
def test_any_upper_bound_at_least_the_optimum_gives_the_same_answer(args):
    value, starts = fusion_kernel_full(*args)
    for upper in (value, value + 1.0, math.inf):
        got_value, got_starts = fusion_pruned(*args, upper)
        assert got_value == value
        assert got_starts.tolist() == starts.tolist()


def test_an_upper_bound_below_the_optimum_finds_nothing():
    # The bound is a promise; a broken one must not yield a grouping worse than claimed.
    h = np.array([5.0, 1.0, 1.0])
    prefix = np.array([0.0, 1.0, 2.0, 3.0])
    value, _ = fusion_kernel_full(h, prefix, 1.0, 1.0, math.inf, 3)
    got, starts = fusion_pruned(h, prefix, 1.0, 1.0, math.inf, 3, value - 0.5)
    assert got == math.inf and starts.size == 0


def brute_force(h, prefix, alpha, beta, max_bytes, max_tensors) -> float:
    n = len(h)
    best = math.inf
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        value = -math.inf
        for g, (a, b) in enumerate(itertools.pairwise(bounds), start=1):
            if b - a > 1 and (prefix[b] - prefix[a] > max_bytes or b - a > max_tensors):
                break
            value = max(value, h[a] + g * alpha + beta * prefix[b])
        else:
            best = min(best, value)
    return best


@settings(max_examples=150)
@given(dp_inputs().filter(lambda a: len(a[0]) <= 10))
def test_pruned_kernel_is_optimal_over_every_contiguous_grouping(args):
    value, _ = fusion_kernel(*args)
    assert math.isclose(value, brute_force(*args), rel_tol=TIME_TOL, abs_tol=TIME_TOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("limit_mb", [None, 1.0, 64.0])
def test_optimal_fusion_kernels_agree_on_generated_profiles(seed, limit_mb):
    dag = build_dag(random_profile(seed, layers=60, max_tensors=3))
    cost = CostModel.ring(8, 10.0, 5.0)
    fast = optimal_fusion(dag, cost, max_group_mb=limit_mb)
    full = optimal_fusion(dag, cost, max_group_mb=limit_mb, kernel="full")
    assert fast == full


def test_unknown_kernel_is_refused():
    dag = build_dag(random_profile(0, layers=3))
    with pytest.raises(InvalidInstanceError) as err:
        optimal_fusion(dag, CostModel(0.1, 1e-6), kernel="fast")  # type: ignore[arg-type]
    assert err.value.field == "kernel"
