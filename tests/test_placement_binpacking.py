"""Bin packing certificates: L2 and the arc-flow LP bound, minimum bin slack, the dive.

The exact arc-flow model (``formulation="arcflow"``) is the reference: on every instance the
certificate path's value equals it, and the lower bound never exceeds it.
"""

from __future__ import annotations

import math
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.placement import PlacementInstance, bin_packing_instance, binpacking, solve, validate
from optsched.placement.binpacking import (
    Certificate,
    arcflow_dive,
    certify,
    l2_bound,
    minimum_bin_slack,
)
from optsched.placement.servers import one_dimensional

pytestmark = pytest.mark.solver("highs")


def _fewest_bins(sizes: list[int], capacity: int) -> int:
    """Exhaustive optimum: first fit over every order reaches it (some order packs optimally)."""
    best = len(sizes)
    for order in set(permutations(sizes)):
        bins: list[int] = []
        for s in order:
            for i, load in enumerate(bins):
                if load + s <= capacity:
                    bins[i] += s
                    break
            else:
                bins.append(s)
        best = min(best, len(bins))
    return best


def _packs(sizes: list[int], capacity: int, bins: list[list[int]]) -> bool:
    flat = sorted(s for b in bins for s in b)
    return flat == sorted(sizes) and all(sum(b) <= capacity for b in bins)


small = st.integers(2, 20).flatmap(
    lambda c: st.tuples(st.just(c), st.lists(st.integers(1, c), min_size=1, max_size=7))
)


@settings(max_examples=60)
@given(small)
def test_l2_is_a_lower_bound_at_least_the_continuous_one(case):
    capacity, sizes = case
    bound = l2_bound(sizes, capacity)
    assert math.ceil(sum(sizes) / capacity) <= bound <= _fewest_bins(sizes, capacity)


@settings(max_examples=60)
@given(small)
def test_every_packing_is_feasible_and_never_below_the_bound(case):
    capacity, sizes = case
    optimum = _fewest_bins(sizes, capacity)
    mbs = minimum_bin_slack(sizes, capacity)
    assert _packs(sizes, capacity, mbs) and len(mbs) >= optimum
    dived, root = arcflow_dive(sizes, capacity, l2_bound(sizes, capacity))
    assert _packs(sizes, capacity, dived) and len(dived) >= optimum
    if root is not None:
        assert root <= optimum + 1e-6
    cert = certify(sizes, capacity)
    assert cert.l2 <= cert.lower <= optimum <= len(cert.bins)
    assert sorted(i for b in cert.bins for i in b) == list(range(len(sizes)))
    assert all(sum(sizes[i] for i in b) <= capacity for b in cert.bins)
    if cert.proven:
        assert len(cert.bins) == optimum


def test_l2_beats_the_continuous_bound_where_items_cannot_pair():
    # Items over C/2 never share a bin: L2 counts them even where the total would fit fewer.
    assert math.ceil(210 / 100) == 3 and l2_bound([70, 70, 70], 100) == 3
    assert l2_bound([60, 60, 60, 10], 100) == 3
    assert l2_bound([51, 51, 49, 49], 100) == 2


def test_the_dive_reaches_the_lp_bound_where_minimum_bin_slack_misses_it():
    # Seeds where minimum bin slack alone uses one server more than the bound.
    reached = 0
    for seed in (1, 8, 12):
        sizes = [int(v) for v in bin_packing_instance(250, seed=seed).demand[:, 0]]
        lower = l2_bound(sizes, 150)
        assert len(minimum_bin_slack(sizes, 150)) > lower
        cert = certify(sizes, 150)
        assert cert.method == "arc-flow dive" and cert.root_lp is not None
        reached += cert.proven
    assert reached == 3


def test_bad_sizes_are_refused_by_name():
    with pytest.raises(InvalidInstanceError, match="sizes"):
        l2_bound([0, 3], 10)
    with pytest.raises(InvalidInstanceError, match="sizes"):
        certify([11], 10)
    with pytest.raises(InvalidInstanceError, match="capacity"):
        minimum_bin_slack([1], 0)


@settings(max_examples=20, deadline=None)
@given(st.integers(5, 40), st.integers(0, 10_000), st.integers(40, 150))
def test_auto_equals_the_arcflow_reference(n, seed, capacity):
    instance = bin_packing_instance(n, seed=seed, capacity=capacity, low=1, high=capacity)
    auto = solve(instance, "servers")
    reference = solve(instance, "servers", formulation="arcflow")
    assert auto.optimal and reference.optimal
    assert auto.objective == reference.objective
    assert auto.bound is not None and auto.bound <= auto.objective
    assert validate(instance, auto.solution).ok


def test_a_certificate_is_an_exact_result_with_its_proof():
    instance = bin_packing_instance(120, seed=3)
    result = solve(instance, "servers")
    assert result.optimal and result.extra["formulation"] == "certificate"
    assert result.bound == result.objective
    assert validate(instance, result.solution).objectives["servers"] == result.objective
    with_lp = solve(instance, "servers", lp_bound=True)
    assert with_lp.lp_bound is None or with_lp.lp_bound <= with_lp.objective + 1e-6


def test_zero_size_tasks_go_with_the_others():
    data = bin_packing_instance(6, seed=2).to_dict()
    data["jobs"].append({"name": "free", "tasks": [{"name": "t", "demand": {"memory": 0.0}}]})
    instance = PlacementInstance.from_dict(data)
    result = solve(instance, "servers")
    assert result.extra["formulation"] == "certificate"
    assert validate(instance, result.solution).ok
    assert result.objective == solve(instance, "servers", formulation="arcflow").objective


def test_an_unproven_certificate_falls_back_to_arcflow_with_its_bounds(monkeypatch):
    instance = bin_packing_instance(40, seed=4)
    optimum = solve(instance, "servers", formulation="arcflow").objective
    real = binpacking.certify

    def worse(sizes, capacity):
        cert = real(sizes, capacity)
        bins = [b for b in cert.bins if len(b) > 1]
        split = bins[0]
        rest = [b for b in cert.bins if b is not split]
        # One more bin than the certificate found: no longer meeting the bound.
        return Certificate(cert.lower, cert.l2, [*rest, split[:1], split[1:]], "test", None)

    monkeypatch.setattr(binpacking, "certify", worse)
    result = solve(instance, "servers")
    assert result.extra["formulation"] == "arcflow"
    assert result.optimal and result.objective == optimum


def test_only_bin_packing_proper_gets_a_certificate():
    instance = bin_packing_instance(10, seed=1)
    assert one_dimensional(instance) is not None
    data = instance.to_dict()
    data["jobs"][0]["tasks"][0]["demand"]["memory"] = 20.5  # fractional size
    assert one_dimensional(PlacementInstance.from_dict(data)) is None
    data = instance.to_dict()
    data["cluster"]["servers"][0]["capacity"]["memory"] = 300.0  # a larger server
    assert one_dimensional(PlacementInstance.from_dict(data)) is None


def test_native_solver_options_reach_a_model():
    instance = bin_packing_instance(30, seed=5)
    result = solve(instance, "servers", solver_options={"mip_heuristic_effort": 0.05})
    assert result.extra["formulation"] == "arcflow"
    assert solve(instance, "servers", certificate=False).extra["formulation"] == "arcflow"
    assert solve(instance, "servers").objective == result.objective
