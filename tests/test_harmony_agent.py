"""The reward network and the trained agent (skipped without the rl extra)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax", reason="training needs the rl extra (JAX)")
pytest.importorskip("optax", reason="training needs the rl extra (optax)")
pytest.importorskip("gymnasium", reason="training needs the rl extra (gymnasium)")

from optsched.errors import InvalidInstanceError
from optsched.harmony.agent import train
from optsched.harmony.network import init_params
from optsched.harmony.policies import run_policy
from optsched.harmony.reward import RewardNet, fit_reward_net
from optsched.harmony.world import HarmonyWorld, generate_arrivals

WORLD = HarmonyWorld(n_servers=4, n_types=4, seed=3)
#: Held-out mean absolute error of the predicted normalised speed 1/(1+S) the reward network
#: must reach (speeds lie in (0, 1]; the fit reaches about 0.01).
SPEED_MAE_BOUND = 0.03


@pytest.fixture(scope="module")
def reward_net() -> RewardNet:
    return fit_reward_net(WORLD, n_traces=8, epochs=600, seed=0)


def test_reward_net_heldout_error_is_below_the_bound(reward_net: RewardNet) -> None:
    held = reward_net.meta["heldout"]
    assert held["samples"] > 100
    assert held["mae_speed"] < SPEED_MAE_BOUND, held


def test_reward_net_beats_predicting_the_mean(reward_net: RewardNet) -> None:
    from optsched.harmony.reward import collect_samples

    held = collect_samples(WORLD, 2, seed=77)
    truth = np.array(
        [WORLD.true_slowdown(int(a), b) for a, b in zip(held.types, held.counts, strict=True)]
    )
    pred = reward_net.predict(held.types, held.counts)
    assert np.mean(np.abs(pred - truth)) < 0.25 * np.mean(np.abs(truth - truth.mean()))


@pytest.fixture(scope="module")
def trained(reward_net: RewardNet):
    return train(
        WORLD, reward="learned", reward_net=reward_net, iterations=12, episodes=4, n_jobs=8, seed=0
    )


def test_trained_agent_beats_random_on_a_heldout_trace(trained) -> None:
    arrivals = generate_arrivals(WORLD, 20, seed=999)
    harmony = run_policy(WORLD, arrivals, "harmony", params=trained.params)
    rand = run_policy(WORLD, arrivals, "random", seed=0)
    assert np.mean(harmony.jct) < np.mean(rand.jct)
    assert len(harmony.objectives) == len(arrivals), "every decision validated"


def test_training_is_deterministic_for_a_seed(reward_net: RewardNet) -> None:
    kwargs = dict(reward="learned", reward_net=reward_net, iterations=2, episodes=2, n_jobs=4)
    a = train(WORLD, seed=5, **kwargs)
    b = train(WORLD, seed=5, **kwargs)
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name])
    assert [p["reward"] for p in a.curve] == [p["reward"] for p in b.curve]
    start = init_params(WORLD, 64, seed=5)
    assert any(not np.array_equal(a.params[k], start[k]) for k in start), "the updates moved"


def test_a_short_training_is_reproducible_to_the_digest(tmp_path) -> None:
    # The whole pipeline, reward network fitted inside: two runs write the same model digest.
    from optsched.harmony.agent import load_model, save_model
    from optsched.harmony.checkpoint import model_digest

    world = HarmonyWorld(n_servers=3, n_types=3, seed=2)
    digests = []
    for k in range(2):
        net = fit_reward_net(world, n_traces=4, epochs=60, seed=1)
        result = train(
            world, reward="learned", reward_net=net, iterations=3, episodes=2, n_jobs=4,
            hidden=16, seed=1,
        )  # fmt: skip
        path = save_model(tmp_path / f"m{k}.npz", result)
        _, meta = load_model(path)
        assert meta["digest"] == model_digest(result.params, result.meta)
        digests.append(meta["digest"])
        # no time of the run is written (it would make two identical runs differ)
        text = repr(meta)
        assert "wall" not in text and "cpu_s" not in text and "fit_s" not in text
    assert digests[0] == digests[1]


def test_the_digest_follows_weights_and_configuration_not_records() -> None:
    from optsched.harmony.checkpoint import model_digest

    params = init_params(WORLD, 8, seed=0)
    meta = {"format": "x", "training": {"seed": 0}, "curve": [{"reward": 1.0}]}
    base = model_digest(params, meta)
    assert model_digest(params, {**meta, "curve": []}) == base
    assert model_digest(params, {**meta, "training": {"seed": 1}}) != base
    nudged = {**params, "b3": params["b3"] + np.float32(1e-3)}
    assert model_digest(nudged, meta) != base


def test_training_on_the_true_world_records_its_source() -> None:
    result = train(WORLD, reward="true", iterations=1, episodes=1, n_jobs=3)
    assert result.meta["reward_model"] == {"source": "true"}
    assert len(result.curve) == 1


def test_bad_training_options_are_refused() -> None:
    with pytest.raises(InvalidInstanceError, match="reward"):
        train(WORLD, reward="oracle")
    with pytest.raises(InvalidInstanceError, match="episodes"):
        train(WORLD, episodes=0)
