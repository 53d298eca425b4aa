"""OASiS fast paths against the previous ones: oracle kernels, commits, whole runs.

:func:`~optsched.online.oasis.oracle.oracle_kernel` stops the deadline scan (and drops DP states)
by a lower bound on the cost still to pay; its notes argue that the result is unchanged whenever
the payoff beats the floor. These tests check that against
:func:`~optsched.online.oasis.oracle.oracle_kernel_full` exactly (same payoff, cost, last slot
and deployment), :meth:`ClusterState.commit` against :meth:`ClusterState.commit_reference`, and
whole online runs of both paths. The fused decision path (``kernel="fused"``) is checked the
same way, piece by piece (:func:`~optsched.online.oasis.oracle.oracle_kernel_pull` against
:func:`~optsched.online.oasis.oracle.oracle_kernel`, :func:`~optsched.online.oasis.oracle.
decide_kernel` against :func:`~optsched.online.oasis.oracle.best_schedule`,
:meth:`ClusterState.commit_arrays` against :meth:`ClusterState.commit`) and as whole runs: the
same decisions, payoffs, prices and schedules to the last bit. The paper-literal plain-Python
oracle is checked against the bounded kernel in ``test_oracle.py``, and against the decisions of
whole runs in ``test_oasis_online.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.oasis import deployments, kernel_inputs, priced, tiny_instances

from optsched.errors import CapacityExceededError, InvalidInstanceError
from optsched.online.oasis.engine import FIT_TOL, ClusterState, work_units
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.online import KERNELS, OASiS
from optsched.online.oasis.oracle import (
    _has_room,
    _room,
    _room_touched,
    best_schedule,
    decide_kernel,
    dp_fits,
    oracle_kernel,
    oracle_kernel_full,
    oracle_kernel_pull,
)


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


def assert_same_run(fast, ref) -> None:
    assert fast.payoffs == ref.payoffs
    assert np.array_equal(fast.worker_prices, ref.worker_prices)
    assert np.array_equal(fast.ps_prices, ref.ps_prices)
    assert fast.schedule == ref.schedule
    assert fast.kappa == ref.kappa


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_online_runs_of_every_path_are_identical(seed):
    inst = generate_instance(40, 4, 4, 30, seed=seed, arrival_window=1.0)
    runs = {k: OASiS(certify=False, kernel=k).run(inst) for k in KERNELS}
    assert OASiS().kernel == "fused"
    assert len(runs["fused"].admitted) > 0
    for k in ("bounded", "full"):
        assert_same_run(runs["fused"], runs[k])


@pytest.mark.parametrize(
    ("seed", "work", "prices"),
    [(4, "worker-slots", "hindsight"), (5, "chunks", "warmup"), (6, "chunks", "hindsight")],
)
def test_fused_runs_equal_the_bounded_path_on_busy_clusters(seed, work, prices):
    """Many jobs on few servers: rooms shrink, capacities bind, most jobs are refused."""
    inst = generate_instance(120, 3, 2, 40, seed=seed, arrival_window=0.5, scale=0.3)
    fused = OASiS(certify=False, kernel="fused", work=work, prices=prices, warmup=5).run(inst)
    ref = OASiS(certify=False, kernel="bounded", work=work, prices=prices, warmup=5).run(inst)
    assert_same_run(fused, ref)
    assert 0 < len(fused.admitted) < inst.n_jobs


@settings(max_examples=300)
@given(kernel_inputs())
def test_pull_kernel_equals_the_bounded_kernel_everywhere(args):
    """Same pruning and stops, loops inverted: identical even below the floor."""
    fast, ref = oracle_kernel_pull(*args), oracle_kernel(*args)
    assert fast[0] == ref[0] and fast[1] == ref[1] and fast[2] == ref[2]
    assert np.array_equal(fast[3], ref[3]) and np.array_equal(fast[4], ref[4])


@settings(max_examples=150)
@given(priced(), st.data())
def test_decide_kernel_equals_best_schedule(case, data):
    inst, wp, pp, wu, pu, work = case
    T = inst.horizon
    wu = np.zeros((T, *inst.worker_capacity.shape)) if wu is None else wu
    pu = np.zeros((T, *inst.ps_capacity.shape)) if pu is None else pu
    # Some pairs never touched (usage exactly 0), the others marked.
    keep_w = np.array(
        data.draw(st.lists(st.booleans(), min_size=wu[..., 0].size, max_size=wu[..., 0].size))
    )
    keep_p = np.array(
        data.draw(st.lists(st.booleans(), min_size=pu[..., 0].size, max_size=pu[..., 0].size))
    )
    wu = wu * keep_w.reshape(wu.shape[:2])[..., None]
    pu = pu * keep_p.reshape(pu.shape[:2])[..., None]
    u = work_units(inst, 0, work)
    ref = best_schedule(inst, 0, wp, pp, wu, pu, work=work, floor=0.0, units=u)
    a = inst.jobs[0].arrival
    if not dp_fits(inst, 0, T - a, u):
        assert not ref.feasible
        return
    wd, sd = inst.worker_demand[0], inst.ps_demand[0]
    last, cost_w, cost_p, wt, wh, wn, pt, pk, pn = decide_kernel(
        wp[a:] @ wd,
        pp[a:] @ sd,
        inst.worker_capacity,
        inst.ps_capacity,
        wu,
        pu,
        keep_w.reshape(wu.shape[:2]),
        keep_p.reshape(pu.shape[:2]),
        a,
        wd,
        sd,
        inst.jobs[0].chunks,
        u.per_workers,
        u.ps_needed,
        u.demand,
        inst.utility_tables[0, a:],
        0.0,
        FIT_TOL,
    )
    if last < 0 or len(wt) == 0:
        assert not ref.feasible
        return
    assert ref.feasible
    assert tuple(zip(wt.tolist(), wh.tolist(), wn.tolist(), strict=True)) == ref.workers
    assert tuple(zip(pt.tolist(), pk.tolist(), pn.tolist(), strict=True)) == ref.ps
    assert float(np.sum(cost_w) + np.sum(cost_p)) == ref.cost
    assert int(wt.max()) + 1 == ref.completion


@settings(max_examples=100)
@given(priced(), st.data())
def test_idle_room_equals_the_computed_room(case, data):
    inst, _, _, wu, _, _ = case
    T = inst.horizon
    wu = np.zeros((T, *inst.worker_capacity.shape)) if wu is None else wu
    touched = np.array(
        data.draw(st.lists(st.booleans(), min_size=wu[..., 0].size, max_size=wu[..., 0].size))
    ).reshape(wu.shape[:2])
    wu = wu * touched[..., None]
    start = data.draw(st.integers(0, T - 1))
    cap = inst.jobs[0].chunks
    wd = inst.worker_demand[0]
    expected = _room(inst.worker_capacity, wu[start:], wd, cap, FIT_TOL)
    got = _room_touched(inst.worker_capacity, wu, touched, start, wd, cap, FIT_TOL)
    assert np.array_equal(got, expected)


# Free capacity as a multiple of the demand, at and around the comparisons' thresholds.
_multiples = st.sampled_from([-1.5, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 1e6])
_nudges = st.sampled_from([0.0, 1e-16, -1e-16, 1e-10, -1e-10, 1e-8, -1e-8])


@settings(max_examples=300)
@given(st.data())
def test_room_test_by_comparisons_equals_the_room(data):
    R = data.draw(st.integers(1, 3))
    demand = np.array(
        [data.draw(st.sampled_from([0.0, 1e-9, 0.3, 1.0, 7.0, 1e6])) for _ in range(R)]
    )
    capacity = np.array([[data.draw(st.sampled_from([0.0, 1.0, 16.0, 1e9])) for _ in range(R)]])
    used = np.empty((1, 1, R))
    for r in range(R):
        free = (data.draw(_multiples) + data.draw(_nudges)) * demand[r]
        used[0, 0, r] = capacity[0, r] - free
    cap = data.draw(st.integers(0, 4))
    room = _room(capacity, used, demand, cap, FIT_TOL)[0, 0]
    assert _has_room(capacity, used, 0, 0, demand, cap, FIT_TOL) == (room > 0)


def _unique(items) -> list[tuple[int, int, int]]:
    """One positive count per (slot, server), first-seen order (an oracle deployment)."""
    need: dict[tuple[int, int], int] = {}
    for t, s, n in items:
        need[(t, s)] = need.get((t, s), 0) + n
    return [(t, s, n) for (t, s), n in need.items() if n > 0]


def _arrays(items) -> tuple[np.ndarray, ...]:
    cols = np.array(items, dtype=np.int64).reshape(len(items), 3)
    return tuple(np.ascontiguousarray(cols[:, c]) for c in range(3))


@settings(max_examples=200)
@given(deployments())
def test_array_commit_equals_the_commit(case):
    inst, before, after = case
    fast, ref = ClusterState(inst), ClusterState(inst)
    first = (_unique(before[0]), _unique(before[1]))
    for state in (fast, ref):
        _commit(state, "commit", 0, *first)
    i = inst.n_jobs - 1
    workers, ps = _unique(after[0]), _unique(after[1])
    w_used, p_used = fast.worker_used.copy(), fast.ps_used.copy()
    try:
        old_w, old_p = fast.commit_arrays(i, _arrays(workers), _arrays(ps))
        message = None
    except CapacityExceededError as err:
        message = str(err)
    assert message == _commit(ref, "commit", i, workers, ps)
    for name in ("worker_used", "ps_used", "worker_touched", "ps_touched"):
        assert np.array_equal(getattr(fast, name), getattr(ref, name)), name
    if message is None:
        assert np.array_equal(old_w, w_used[tuple(_arrays(workers)[:2])])
        assert np.array_equal(old_p, p_used[tuple(_arrays(ps)[:2])])


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
