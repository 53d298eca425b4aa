"""Hardening: no hang, no overflow, no NaN -- absurd values are refused naming the field, and
every loop of the kernel and the reference has a proven bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies.tensorlights import close, instances, job, make

from optsched import limits
from optsched.comm.tensorlights import (
    POLICIES,
    TensorLightsInstance,
    event_bound,
    generate_instance,
    simulate,
    solve,
    validate,
)
from optsched.comm.tensorlights.kernel import EPS_TIME_REL, rotation_index
from optsched.comm.tensorlights.reference import _boundaries_passed
from optsched.errors import InvalidInstanceError


@pytest.mark.parametrize("engine", ["numba", "python"])
@pytest.mark.parametrize("period", [1e-300, 5e-324, 1e-12])
def test_tiny_rotation_periods_are_refused_before_running(engine, period):
    inst = generate_instance(1, 3, seed=1)
    for policy in ("rotate", "one-green"):
        with pytest.raises(InvalidInstanceError) as err:
            simulate(inst, policy, rotation_period=period, engine=engine)
        assert err.value.field == "rotation_period"


@pytest.mark.parametrize("period", [math.nan, math.inf, -1.0, 0.0])
def test_non_finite_periods_are_refused(period):
    with pytest.raises(InvalidInstanceError) as err:
        simulate(generate_instance(1, 2, seed=0), "rotate", rotation_period=period)
    assert err.value.field == "rotation_period"


def test_a_period_whose_events_exceed_the_budget_is_refused():
    inst = generate_instance(1, 3, seed=1)
    period = 1e-4
    needed = event_bound(inst, period)
    with limits.override(max_events=needed - 1):
        with pytest.raises(InvalidInstanceError) as err:
            simulate(inst, "rotate", rotation_period=period)
        assert err.value.field == "rotation_period" and "max_events" in str(err.value)
    with limits.override(max_array_cells=10):
        with pytest.raises(InvalidInstanceError) as err:
            simulate(inst, "fair")
        assert err.value.field == "jobs" and "max_array_cells" in str(err.value)


def test_a_start_of_1e18_is_refused_naming_the_start():
    data = generate_instance(1, 3, seed=1).to_dict()
    data["jobs"][0]["start_s"] = 1e18
    with pytest.raises(InvalidInstanceError) as err:
        TensorLightsInstance.from_dict(data)
    assert err.value.field == "jobs[0].start_s"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hosts": [{"bandwidth_bytes_per_s": 5e-324}]}, "hosts[0].bandwidth_bytes_per_s"),
        ({"hosts": [{"bandwidth_bytes_per_s": 1e300}]}, "jobs[0].message_bytes"),
        ({"jobs": [job(1e308, 100_000, 0.0, 10_000_000)]}, "jobs[0].message_bytes"),
        ({"jobs": [job(1.0, 1, 1e308, 10)]}, "jobs[0].compute_time_s"),
        ({"jobs": [job(1.0, 1, 0.0, 1, start=1e308), job(1e300, 1, 0, 1)]}, "jobs[0].start_s"),
        ({"jobs": [job(1.0, 1, 0.0, 1, w=1e300)]}, "jobs.0.weight"),
        ({"jobs": [job(1.0, 1, 0.0, 1, w=5e-324)]}, "jobs.0.weight"),
    ],
)
def test_values_that_would_overflow_are_refused(change, field):
    data = {"hosts": [{"bandwidth_bytes_per_s": 1.0}], "jobs": [job(1.0, 1, 0.0, 1)], **change}
    with pytest.raises(InvalidInstanceError) as err:
        TensorLightsInstance.from_dict(data)
    assert err.value.field.replace("[", ".").replace("]", "") == field.replace("[", ".").replace(
        "]", ""
    )


@pytest.mark.parametrize("engine", ["numba", "python"])
def test_rotation_jumps_over_a_long_idle_gap(engine):
    """Job 0 starts 2e5 s after the others finish; with a 1 ms period that is 2e8 idle periods,
    which a period-by-period loop would step through. The jump makes it one event."""
    inst = make([1.0], [job(1.0, 1, 0.0, 2, start=2e5), job(2.0, 1, 0.0, 2), job(1.0, 2, 0, 1)])
    res = simulate(inst, "rotate", rotation_period=1e-3, engine=engine)
    assert validate(inst, res).ok
    assert res.n_events <= event_bound(inst, 1e-3)
    # Alone after the gap: two broadcasts of 1 s each.
    assert close(res.completion[0], 2e5 + 2.0)
    # The other two share the NIC from 0: 6 bytes at 1 B/s, rotating every millisecond.
    assert close(res.makespan, 2e5 + 2.0)
    assert res.completion[1:].max() == pytest.approx(6.0, rel=1e-9)


@settings(max_examples=60)
@given(t=st.floats(0, 1e6), period=st.floats(1e-3, 1e3), rot=st.integers(0, 5))
def test_rotation_index_closed_form_equals_stepping(t, period, rot):
    """The closed form equals the loop it replaces: advance while the next boundary is <= t."""
    assume(t / period <= 1e6)
    stepped = rot
    while (stepped + 1) * period <= t + EPS_TIME_REL * max(1.0, abs(t)):
        stepped += 1
    assert rotation_index(t, period, rot) == stepped
    assert max(rot, _boundaries_passed(t, period)) == stepped


@settings(max_examples=40)
@given(inst=instances(), policy=st.sampled_from(POLICIES), period=st.sampled_from([0.3, 1.0]))
def test_event_bound_holds(inst, policy, period):
    res = simulate(
        inst, policy, rotation_period=period if policy in ("rotate", "one-green") else None
    )
    rotating = policy in ("rotate", "one-green")
    assert res.n_events <= event_bound(inst, period if rotating else None)


@settings(max_examples=60)
@given(
    bw=st.floats(1e-300, 1e300),
    m=st.floats(1e-300, 1e300),
    c=st.floats(0, 1e300),
    start=st.floats(0, 1e300),
    n=st.integers(1, 3),
    iters=st.integers(1, 3),
    k=st.integers(1, 3),
)
def test_whatever_validates_simulates_finitely(bw, m, c, start, n, iters, k):
    """Extreme magnitudes: either the instance is refused naming a field, or every policy
    finishes with finite times and its run validates."""
    try:
        inst = make([bw], [job(m, n, c, iters, start=start * j / k) for j in range(k)])
    except InvalidInstanceError as err:
        assert err.field
        return
    for policy in POLICIES:
        res = simulate(inst, policy)
        assert np.all(np.isfinite(res.completion)) and np.all(np.isfinite(res.nic_utilization))
        assert validate(inst, res).ok


def test_search_budget_on_factorial_is_checked_before_running():
    inst = generate_instance(1, 12, seed=0, iterations=(1, 2))
    with pytest.raises(InvalidInstanceError) as err:
        solve(inst)  # 12! = 479,001,600 simulations
    assert err.value.field == "jobs" and "max_events" in str(err.value)
    stopped = solve(inst, node_limit=5, accept_feasible=True)
    assert not stopped.optimal and stopped.extra["orders_total"] == math.factorial(12)
    assert validate(inst, stopped.solution).ok


def test_search_over_more_than_170_jobs_is_refused_without_a_node_limit():
    inst = generate_instance(1, 171, seed=0, iterations=(1, 1), workers=(1, 1))
    with pytest.raises(InvalidInstanceError) as err:
        solve(inst)
    assert err.value.field == "jobs"
    stopped = solve(inst, node_limit=1, accept_feasible=True)
    assert stopped.extra["orders_total"] is None and not stopped.optimal
