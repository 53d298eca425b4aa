"""All-reduce cost models: closed forms, fitting, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.comm.pace.cost import MB, CostModel, num_partitions
from optsched.errors import InvalidInstanceError

REL = 1e-12


def test_ring_matches_hand_computation():
    # 8 workers, 10 Gbit/s, 5 us/hop: alpha = 14 * 5 us; beta = 2 * 7/8 * 8 bits / 10e9 bit/s.
    cm = CostModel.ring(workers=8, bandwidth_gbps=10, latency_us=5)
    assert math.isclose(cm.alpha_ms, 0.070, rel_tol=REL)
    assert math.isclose(cm.beta_ms_per_byte, 2 * 7 / 8 * 8 / 10e9 * 1e3, rel_tol=REL)
    # 100 MB (2^20 bytes each) at the ring's 2(N-1)/N factor.
    expected = 0.070 + 1.75 * 100 * MB * 8 / 10e9 * 1e3
    assert math.isclose(float(cm.call_ms(100 * MB)), expected, rel_tol=REL)


def test_ring_overhead_and_reduction_terms():
    base = CostModel.ring(4, 25, 2)
    more = CostModel.ring(4, 25, 2, overhead_us=30, reduce_gbps=100)
    assert math.isclose(more.alpha_ms - base.alpha_ms, 0.030, rel_tol=1e-9)
    assert math.isclose(
        more.beta_ms_per_byte - base.beta_ms_per_byte, 0.75 * 8 / 100e9 * 1e3, rel_tol=1e-9
    )


def test_one_worker_costs_nothing():
    cm = CostModel.ring(1, 10, 50, overhead_us=10)
    assert cm.alpha_ms == 0 and cm.beta_ms_per_byte == 0
    assert float(cm.call_ms(1e9)) == 0.0


def test_alpha_beta():
    cm = CostModel.alpha_beta(alpha_us=20, bandwidth_gbps=8, overhead_us=5)
    assert math.isclose(cm.alpha_ms, 0.025, rel_tol=REL)
    # 8 Gbit/s = 1e9 bytes/s: 1 ms per 1e6 bytes.
    assert math.isclose(float(cm.call_ms(1e6)), 0.025 + 1.0, rel_tol=1e-12)


@given(
    a=st.floats(0, 5),
    b=st.floats(1e-9, 1e-5),
    sizes=st.lists(st.floats(1e3, 1e8), min_size=2, max_size=20, unique=True),
)
def test_fit_recovers_exact_coefficients(a, b, sizes):
    x = np.array(sizes)
    cm = CostModel.fit(x, a + b * x)
    assert math.isclose(cm.alpha_ms, a, rel_tol=1e-6, abs_tol=1e-6 * (1 + b * x.max()))
    assert math.isclose(cm.beta_ms_per_byte, b, rel_tol=1e-6)


@given(nbytes=st.floats(1, 1e9), part=st.floats(1, 1e8))
def test_partitions_cover_the_tensor(nbytes, part):
    m = int(num_partitions(nbytes, part))
    assert m >= 1
    assert (m - 1) * part < nbytes <= m * part or (m == 1 and nbytes <= part)
    cm = CostModel(0.5, 1e-6)
    assert math.isclose(
        float(cm.partitioned_ms(nbytes, part)), m * 0.5 + 1e-6 * nbytes, rel_tol=1e-12
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"workers": 0, "bandwidth_gbps": 10, "latency_us": 1}, "workers"),
        ({"workers": 2.5, "bandwidth_gbps": 10, "latency_us": 1}, "workers"),
        ({"workers": 4, "bandwidth_gbps": 0, "latency_us": 1}, "bandwidth_gbps"),
        ({"workers": 4, "bandwidth_gbps": float("nan"), "latency_us": 1}, "bandwidth_gbps"),
        ({"workers": 4, "bandwidth_gbps": 10, "latency_us": -1}, "latency_us"),
        ({"workers": 4, "bandwidth_gbps": 10, "latency_us": 1, "overhead_us": -2}, "overhead_us"),
    ],
)
def test_ring_rejects_bad_input(kwargs, field):
    with pytest.raises(InvalidInstanceError) as err:
        CostModel.ring(**kwargs)
    assert err.value.field == field


def test_bad_coefficients_and_fit_input():
    with pytest.raises(InvalidInstanceError, match="alpha_ms"):
        CostModel(-1.0, 0.0)
    with pytest.raises(InvalidInstanceError, match="two distinct"):
        CostModel.fit([5, 5], [1, 2])
    with pytest.raises(InvalidInstanceError, match="times_ms"):
        CostModel.fit([1, 2, 3], [1, 2])
    with pytest.raises(InvalidInstanceError, match="partition_bytes"):
        num_partitions(10, 0)
