"""OASiS fast paths against the previous ones: bounded oracle kernel, vectorised commit, runs.

:func:`~optsched.online.oasis.oracle.oracle_kernel` stops the deadline scan (and drops DP states)
by a lower bound on the cost still to pay; its notes argue that the result is unchanged whenever
the payoff beats the floor. These tests check that against
:func:`~optsched.online.oasis.oracle.oracle_kernel_full` exactly (same payoff, cost, last slot
and deployment), :meth:`ClusterState.commit` against :meth:`ClusterState.commit_reference`, and
whole online runs of both paths. The paper-literal plain-Python oracle is checked against the
bounded kernel in ``test_oracle.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.oasis import deployments, kernel_inputs, tiny_instances

from optsched.errors import CapacityExceededError, InvalidInstanceError
from optsched.online.oasis.engine import ClusterState
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.online import OASiS
from optsched.online.oasis.oracle import best_schedule, oracle_kernel, oracle_kernel_full


def assert_same(fast: tuple, full: tuple, floor: float) -> None:
    if full[0] > floor:
        assert fast[0] == full[0]
        assert fast[1] == full[1]
        assert fast[2] == full[2]
        assert np.array_equal(fast[3], full[3])
        assert np.array_equal(fast[4], full[4])
    else:
        # Nothing beat the floor: the bounded kernel may stop sooner, never report more.
        assert fast[0] <= floor


@settings(max_examples=500)
@given(kernel_inputs())
def test_bounded_kernel_equals_the_full_kernel(args):
    assert_same(oracle_kernel(*args), oracle_kernel_full(*args), args[-1])


@settings(max_examples=200)
@given(kernel_inputs())
def test_without_a_floor_the_kernels_agree_everywhere(args):
    args = (*args[:-1], -math.inf)
    fast, full = oracle_kernel(*args), oracle_kernel_full(*args)
    assert fast[0] == full[0] and fast[2] == full[2]
    assert np.array_equal(fast[3], full[3]) and np.array_equal(fast[4], full[4])


@settings(max_examples=100)
@given(tiny_instances(max_jobs=1, max_servers=3, max_horizon=6, max_chunks=4), st.data())
def test_best_schedule_kernels_agree_on_instances(inst, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    T = inst.horizon
    wp = rng.lognormal(0, 1, (T, *inst.worker_capacity.shape))
    pp = rng.lognormal(0, 1, (T, *inst.ps_capacity.shape))
    wu = rng.uniform(0, 1, wp.shape) * inst.worker_capacity
    floor = data.draw(st.sampled_from([-math.inf, 0.0]))
    work = data.draw(st.sampled_from(["chunks", "worker-slots"]))
    fast = best_schedule(inst, 0, wp, pp, wu, None, work=work, floor=floor)
    full = best_schedule(inst, 0, wp, pp, wu, None, work=work, floor=floor, kernel="full")
    if full.payoff > floor:
        assert fast == full
    else:
        assert fast.payoff <= floor


def _commit(state: ClusterState, method: str, i: int, workers, ps) -> str | None:
    try:
        getattr(state, method)(i, workers, ps)
    except CapacityExceededError as err:
        return str(err)
    return None


@settings(max_examples=200)
@given(deployments())
def test_vectorised_commit_equals_the_reference(case):
    inst, before, after = case
    fast, ref = ClusterState(inst), ClusterState(inst)
    for state, method in ((fast, "commit"), (ref, "commit_reference")):
        _commit(state, method, 0, *before)
    assert np.array_equal(fast.worker_used, ref.worker_used)
    i = inst.n_jobs - 1
    assert _commit(fast, "commit", i, *after) == _commit(ref, "commit_reference", i, *after)
    assert np.array_equal(fast.worker_used, ref.worker_used)
    assert np.array_equal(fast.ps_used, ref.ps_used)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_online_runs_of_both_paths_are_identical(seed):
    inst = generate_instance(40, 4, 4, 30, seed=seed, arrival_window=1.0)
    fast = OASiS(certify=False).run(inst)
    full = OASiS(certify=False, kernel="full").run(inst)
    assert fast.payoffs == full.payoffs
    assert np.array_equal(fast.worker_prices, full.worker_prices)
    assert np.array_equal(fast.ps_prices, full.ps_prices)
    assert fast.schedule == full.schedule
    assert fast.kappa == full.kappa


def test_unknown_kernels_are_refused():
    with pytest.raises(InvalidInstanceError) as err:
        OASiS(kernel="fast")
    assert err.value.field == "kernel"
    inst = generate_instance(2, 2, 2, 6, seed=0)
    T = inst.horizon
    wp = np.ones((T, *inst.worker_capacity.shape))
    pp = np.ones((T, *inst.ps_capacity.shape))
    with pytest.raises(InvalidInstanceError) as err:
        best_schedule(inst, 0, wp, pp, kernel="fast")  # type: ignore[arg-type]
    assert err.value.field == "kernel"


# Unit costs drawn from a few values so that ties (broken by server index) are common.
_costs = st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0]), min_size=1, max_size=8)


@settings(max_examples=200)
@given(st.data())
def test_picking_servers_equals_sorting_them(data):
    from optsched.online.oasis.oracle import (
        _fill,
        _fill_select,
        _slot_costs,
        _slot_costs_select,
    )

    uc_w = np.array(data.draw(_costs))
    uc_p = np.array(data.draw(_costs))
    room = st.integers(0, 4)
    room_w = np.array([data.draw(room) for _ in uc_w], dtype=np.int64)
    room_p = np.array([data.draw(room) for _ in uc_p], dtype=np.int64)
    n = data.draw(st.integers(1, 10))
    # m(n): fewest PSs for n workers, non-decreasing from m(0) = 0.
    steps = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    mreq = np.concatenate([[0], np.cumsum(steps)]).astype(np.int64)
    sorted_out, picked_out = np.full(n + 1, np.nan), np.full(n + 1, np.nan)
    top = _slot_costs(uc_w, room_w, uc_p, room_p, mreq, sorted_out)
    assert _slot_costs_select(uc_w, room_w, uc_p, room_p, mreq, picked_out) == top
    assert np.array_equal(sorted_out[: top + 1], picked_out[: top + 1])
    count = data.draw(st.integers(0, 12))
    a, b = np.zeros(len(uc_w), dtype=np.int64), np.zeros(len(uc_w), dtype=np.int64)
    total = _fill(uc_w, room_w, np.argsort(uc_w, kind="mergesort"), count, a)
    assert _fill_select(uc_w, room_w, count, b) == total
    assert np.array_equal(a, b)
