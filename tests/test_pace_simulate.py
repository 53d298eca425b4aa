"""The event simulator: Numba kernel vs reference, trace invariants, the validator itself."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from strategies.pace import channel_inputs, dag_cases

from optsched.comm.pace.cost import MB, CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.exact import exact_schedule
from optsched.comm.pace.kernels import channel_kernel, channel_reference
from optsched.comm.pace.policies import (
    FIFO,
    P3,
    ByteScheduler,
    Horovod,
    Pace,
    TicTac,
)
from optsched.comm.pace.simulate import ChannelPlan, overlap_fraction, simulate
from optsched.comm.pace.validator import check_trace
from optsched.errors import InvalidInstanceError, InvalidScheduleError
from optsched.profiles import ComputeInfo, Layer, Profile, Tensor

REL = 1e-9


@settings(max_examples=100)
@given(channel_inputs())
def test_kernel_matches_reference(args):
    fast = channel_kernel(*args)
    ref = channel_reference(*args)
    for a, b in zip(fast, ref, strict=True):
        if isinstance(a, np.ndarray):
            assert a.shape == b.shape
            assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
        else:
            assert a == b


POLICIES = [
    FIFO(),
    Horovod(threshold_mb=8, cycle_ms=1.5),
    P3(slice_mb=1),
    TicTac(),
    ByteScheduler(partition_mb=2, credit=3),
    Pace(max_group_mb=8),
]


@settings(max_examples=25)
@given(dag_cases())
def test_every_policy_produces_a_valid_trace(case):
    dag, cost = case
    for policy in POLICIES:
        result = policy.run(dag, cost)
        assert check_trace(dag, cost, result.plan, result.trace).ok
        assert 0.0 <= result.overlap <= 1.0
        python = simulate(dag, cost, result.plan, engine="python")
        assert math.isclose(python.iteration_time, result.iteration_time, rel_tol=1e-12)


@given(dag_cases())
def test_simulated_pace_is_the_exact_schedule(case):
    dag, cost = case
    policy = Pace(max_group_mb=8)
    result = policy.run(dag, cost)
    exact = exact_schedule(dag, cost, policy.groups(dag, cost))
    assert math.isclose(result.iteration_time, exact.iteration_time, rel_tol=REL, abs_tol=REL)
    assert np.allclose(result.trace.tensor_completion, exact.tensor_completion, rtol=REL)


@given(dag_cases())
def test_credit_window_and_cycle_disciplines(case):
    dag, cost = case
    bs = ByteScheduler(partition_mb=1, credit=2)
    res = bs.run(dag, cost)
    trace = res.trace
    # Bytes admitted but unfinished never exceed the credit, except a lone call.
    credit = 2 * MB
    for c in range(trace.n_calls):
        at = trace.call_start[c]
        waiting = (trace.call_start <= at) & (trace.call_end > at)
        assert trace.call_bytes[waiting].sum() <= credit + 1 or waiting.sum() == 1
    hv = Horovod(threshold_mb=4, cycle_ms=2.0).run(dag, cost).trace
    # Horovod's calls start at a tick or when the previous call ends.
    for c in range(hv.n_calls):
        s = hv.call_start[c]
        at_tick = math.isclose(s / 2.0, round(s / 2.0), abs_tol=1e-9)
        after_prev = c > 0 and math.isclose(s, hv.call_end[c - 1], rel_tol=1e-12)
        assert at_tick or after_prev


def tiny_profile() -> Profile:
    # Two layers; gradients of layer b (released first) and a (released last).
    layers = (
        Layer(name="a", forward_ms=1, backward_ms=1, tensors=(Tensor(name="a.w", params=250),)),
        Layer(name="b", forward_ms=1, backward_ms=1, tensors=(Tensor(name="b.w", params=1000),)),
    )
    return Profile(
        name="tiny",
        display_name="Tiny",
        source="test",
        total_params=1250,
        compute=ComputeInfo(provenance="estimated", device="test", batch_size=1),
        layers=layers,
    )


def test_known_answers():
    dag = build_dag(tiny_profile())
    cost = CostModel(alpha_ms=0.0, beta_ms_per_byte=1e-3)  # a.w: 1 ms, b.w: 4 ms
    # b.w released at 1, a.w at 2; forward: a (1 ms) then b (1 ms).
    fifo = FIFO().run(dag, cost)
    # b.w 1-5, a.w 5-6; F(a) 6-7, F(b) 7-8.
    assert fifo.iteration_time == pytest.approx(8.0)
    pace = Pace().run(dag, cost)
    # Fusion: one call of 5 ms from 2 to 7 -> 9. Separate & preemptive: b.w 1-2, a.w 2-3,
    # b.w 3-6; F(a) 3-4, F(b) 6-7.
    assert pace.iteration_time == pytest.approx(7.0)
    assert pace.trace.n_calls == 2
    assert pace.lower_bound == pytest.approx(7.0)
    tictac = TicTac().run(dag, cost)  # not preemptive: b.w 1-5 started before a.w exists
    assert tictac.iteration_time == pytest.approx(8.0)


def test_validator_catches_violations():
    dag = build_dag(tiny_profile())
    cost = CostModel(alpha_ms=0.5, beta_ms_per_byte=1e-3)
    result = FIFO().run(dag, cost)
    plan, trace = result.plan, result.trace
    report = check_trace(dag, cost, plan, trace)
    assert report.ok and report.objective == pytest.approx(trace.iteration_time)

    def broken(**changes):
        return dataclasses.replace(trace, **changes)

    def names(t):
        return {v.constraint for v in check_trace(dag, cost, plan, t).violations}

    early = trace.segments.copy()
    early[:, 1:] -= 1.0  # every call one ms earlier: b.w starts before its gradient
    assert "release" in names(broken(segments=early))
    overlap = trace.segments.copy()
    overlap[1, 1:] = overlap[0, 1:] + 0.1
    assert "channel_capacity" in names(broken(segments=overlap))
    short = trace.segments.copy()
    short[0, 2] -= 0.25
    assert "call_time" in names(broken(segments=short))
    stream = trace.stream.copy()
    stream[0] -= 6.0  # starts at 1, during backward and before a.w arrives
    found = names(broken(stream=stream))
    assert {"forward_after_allreduce", "stream_capacity"} <= found
    assert "iteration_time" in names(broken(iteration_time=trace.iteration_time - 1))
    nan = trace.segments.copy()
    nan[0, 2] = math.nan
    assert names(broken(segments=nan)) == {"finite"}
    with pytest.raises(InvalidScheduleError):
        check_trace(dag, cost, plan, broken(segments=early)).raise_if_invalid()


def test_plans_must_carry_every_byte():
    dag = build_dag(tiny_profile())
    cost = CostModel(0.0, 1e-3)
    plan = FIFO().plan(dag, cost)
    half = dataclasses.replace(plan, member_bytes=plan.member_bytes / 2)
    with pytest.raises(InvalidInstanceError) as err:
        simulate(dag, cost, half)
    assert err.value.field.startswith("plan.tensors")
    with pytest.raises(InvalidInstanceError) as err:
        simulate(dag, cost, plan, engine="cuda")  # type: ignore[arg-type]
    assert err.value.field == "engine"


def test_overlap_fraction_by_hand():
    dag = build_dag(tiny_profile())  # backward busy 0-2
    segments = np.array([[0, 1.0, 3.0], [1, 3.0, 5.0]])
    stream = np.array([[4.0, 6.0]])
    # Busy comm 4 ms; overlapped with compute: 1-2 and 4-5 = 2 ms.
    assert overlap_fraction(dag, segments, stream) == pytest.approx(0.5)
    assert overlap_fraction(dag, np.zeros((0, 3)), stream) == 1.0


def test_fusion_plan_from_groups():
    dag = build_dag(tiny_profile())
    plan = ChannelPlan.from_groups(dag, [[(0, 1000.0), (1, 4000.0)]], np.zeros(1))
    assert plan.n_pieces == 1
    assert plan.piece_release[0] == pytest.approx(max(dag.release))
    assert plan.piece_bytes[0] == 5000.0
