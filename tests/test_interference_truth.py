"""Synthetic interference ground truth: the slowdown function, its structure and its samplers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.interference import partners, truths

from optsched.errors import InvalidInstanceError
from optsched.interference import (
    DEFAULT_WEIGHTS,
    RESOURCES,
    InterferenceTruth,
    generate_interference_truth,
)

#: Floating-point slack for identities of the slowdown function.
ATOL = 1e-12

R = len(RESOURCES)


def test_slowdown_by_hand():
    """One resource: w = 0.2, gamma = 0.8, p_a = 0.5, p_b = 0.8:
    0.2 * 0.5 * 0.8 + 0.8 * 0.5 * (0.5 + 0.8 - 1)^2 = 0.08 + 0.036 = 0.116."""
    truth = InterferenceTruth(
        profiles=np.array([[0.5, 0, 0, 0], [0.8, 0, 0, 0]]),
        standalone_times=np.array([1.0, 2.0]),
        weights=np.array([0.2, 0.0, 0.0, 0.0]),
        overflow=0.8,
    )
    assert truth.slowdown(0, [1]) == pytest.approx(0.116, abs=ATOL)
    # b suffers 0.2*0.8*0.5 + 0.8*0.8*0.3^2 = 0.08 + 0.0576.
    assert truth.slowdown(1, [0]) == pytest.approx(0.1376, abs=ATOL)
    assert truth.colocated_speed(0, [1]) == pytest.approx(1 / 1.116)
    assert truth.slowdown(0, []) == 0.0


@given(data=st.data(), truth=truths())
def test_pairwise_matrix_matches_slowdown(data, truth):
    s = truth.pairwise_slowdowns()
    a = data.draw(st.integers(0, truth.n_types - 1))
    b = data.draw(st.integers(0, truth.n_types - 1))
    assert s[a, b] == pytest.approx(truth.slowdown(a, [b]), abs=ATOL)
    assert np.all(s >= 0)


@given(data=st.data(), truth=truths())
def test_slowdown_is_monotone_and_superadditive(data, truth):
    a = data.draw(st.integers(0, truth.n_types - 1))
    b = data.draw(partners(truth))
    c = data.draw(partners(truth))
    sb, sc, sbc = truth.slowdown(a, b), truth.slowdown(a, c), truth.slowdown(a, b + c)
    assert sbc >= sb - ATOL
    assert sbc >= sb + sc - ATOL
    # Hence the pairwise-additive model never overestimates a group's slowdown.
    assert sum(truth.slowdown(a, [x]) for x in b) <= sb + ATOL


@given(truth=truths(max_types=8))
def test_without_overflow_the_matrix_has_rank_at_most_r(truth):
    linear = InterferenceTruth(
        profiles=truth.profiles,
        standalone_times=truth.standalone_times,
        weights=truth.weights,
        overflow=0.0,
    )
    s = linear.pairwise_slowdowns()
    expected = truth.profiles @ np.diag(truth.weights) @ truth.profiles.T
    assert np.allclose(s, expected, atol=ATOL)
    assert np.linalg.matrix_rank(s, tol=1e-9) <= R


def test_generator_is_seeded_and_in_range():
    a = generate_interference_truth(40, n_families=5, seed=3)
    b = generate_interference_truth(40, n_families=5, seed=3)
    assert np.array_equal(a.profiles, b.profiles)
    assert np.array_equal(a.standalone_times, b.standalone_times)
    assert not np.array_equal(a.profiles, generate_interference_truth(40, seed=4).profiles)
    assert a.profiles.min() >= 0.02 and a.profiles.max() <= 1.0
    assert 0.1 <= a.standalone_times.min() and a.standalone_times.max() <= 1.0
    assert a.families is not None and set(a.families) <= set(range(5))
    assert np.array_equal(a.weights, DEFAULT_WEIGHTS)
    assert a.names[0] == "type0"


def test_observations_cover_every_row_and_column():
    truth = generate_interference_truth(25, seed=1)
    obs = truth.observe_pairs(fraction=0.05, noise=0.0, seed=2)
    seen = ~np.isnan(obs)
    assert seen.any(axis=0).all() and seen.any(axis=1).all()
    assert np.allclose(obs[seen], truth.pairwise_slowdowns()[seen])
    again = truth.observe_pairs(fraction=0.05, noise=0.0, seed=2)
    assert np.array_equal(seen, ~np.isnan(again))
    full = truth.observe_pairs(fraction=1.0, noise=0.0, seed=0)
    assert not np.isnan(full).any()


def test_noisy_observations_are_multiplicative():
    truth = generate_interference_truth(30, seed=0)
    obs = truth.observe_pairs(fraction=1.0, noise=0.05, seed=5)
    log_ratio = np.log(obs / truth.pairwise_slowdowns())
    # 900 draws of N(0, 0.05^2): the sample std is within 15% of 0.05 with overwhelming odds.
    assert abs(log_ratio.std() - 0.05) < 0.0075
    assert abs(log_ratio.mean()) < 0.01


def test_colocation_samples_follow_the_truth():
    truth = generate_interference_truth(10, seed=0)
    samples = truth.sample_colocations(50, types=[1, 3, 5], max_partners=3, noise=0.0, seed=1)
    assert len(samples) == 50
    assert set(samples.job_types) <= {1, 3, 5}
    for a, b, y in zip(samples.job_types, samples.partners, samples.slowdowns, strict=True):
        assert 1 <= len(b) <= 3 and set(b) <= {1, 3, 5}
        assert y == pytest.approx(truth.slowdown(int(a), b))


def test_measured_profiles():
    truth = generate_interference_truth(10, seed=0)
    assert np.array_equal(truth.measured_profiles(noise=0.0), truth.profiles)
    noisy = truth.measured_profiles(noise=0.1, seed=1)
    assert noisy.shape == truth.profiles.shape and noisy.min() >= 0
    assert not np.array_equal(noisy, truth.profiles)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"profiles": np.full((2, R), 1.5)}, "profiles"),
        ({"profiles": np.ones((2, 3))}, "profiles"),
        ({"standalone_times": np.array([1.0, 0.0])}, "standalone_times"),
        ({"standalone_times": np.array([1.0])}, "standalone_times"),
        ({"weights": -np.ones(R)}, "weights"),
        ({"overflow": -1.0}, "overflow"),
        ({"names": ("x",)}, "names"),
    ],
)
def test_invalid_truth_names_the_field(kwargs, field):
    base = {"profiles": np.full((2, R), 0.5), "standalone_times": np.ones(2)}
    base.update(kwargs)
    with pytest.raises(InvalidInstanceError) as err:
        InterferenceTruth(**base)
    assert err.value.field == field


def test_invalid_sampler_arguments():
    truth = generate_interference_truth(5, seed=0)
    with pytest.raises(InvalidInstanceError, match="fraction"):
        truth.observe_pairs(fraction=0.0)
    with pytest.raises(InvalidInstanceError, match="partners"):
        truth.slowdown(0, [7])
    with pytest.raises(InvalidInstanceError, match="types"):
        truth.sample_colocations(3, types=[9])
    with pytest.raises(InvalidInstanceError, match="n_families"):
        generate_interference_truth(5, n_families=9)
