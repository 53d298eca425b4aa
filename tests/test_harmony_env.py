"""The Gymnasium placement environment (skipped without the rl extra)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="the Harmony environment needs the rl extra")

from gymnasium.utils.env_checker import check_env

from optsched.harmony.env import INVALID_ACTION_PENALTY, PlacementEnv
from optsched.harmony.world import HarmonyWorld

WORLD = HarmonyWorld(n_servers=4, n_types=4, seed=3)


def test_env_passes_the_gymnasium_checker() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(PlacementEnv(WORLD, n_jobs=4), skip_render_check=True)


def _episode(env: PlacementEnv, seed: int) -> tuple[list[float], dict]:
    _, info = env.reset(seed=seed)
    rewards = []
    while True:
        action = int(np.flatnonzero(info["action_mask"])[-1])
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        assert not truncated
        if terminated:
            return rewards, info


def test_same_seed_same_episode_and_rewards_are_speeds() -> None:
    env = PlacementEnv(WORLD, n_jobs=6)
    a, info = _episode(env, 7)
    b, _ = _episode(env, 7)
    assert a == b
    assert sum(r > 0 for r in a) == 6, "one reward per placed job"
    assert all(0 < r <= 1 for r in a if r > 0), "normalised cluster speed"
    assert info["avg_jct_s"] > 0


def test_invalid_action_is_replaced_and_penalised() -> None:
    # Two one-GPU servers and jobs arriving every second: the second job's worker cannot go
    # where the first one's runs.
    world = HarmonyWorld(n_servers=2, gpus=1, cpus=6, n_types=2, max_workers=1, max_ps=1)
    env = PlacementEnv(world, n_jobs=3, mean_interarrival_s=1.0)
    _, info = env.reset(seed=0)
    while info["action_mask"].all():
        _, _, terminated, _, info = env.step(0)
        assert not terminated, "the world was built so that a server fills up"
    bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
    _, reward, _, _, info = env.step(bad)
    assert info["invalid_action"]
    assert reward <= 1 - INVALID_ACTION_PENALTY
