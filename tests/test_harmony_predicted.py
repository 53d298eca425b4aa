"""The predicted-slowdown feature, the policy that carries its reward network, and the warm
start by imitation (training parts skipped without the rl extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from optsched.harmony import CheckpointError, load_model
from optsched.harmony.agent import MODEL_FORMAT_PREDICTED, TrainResult, save_model
from optsched.harmony.exact import server_costs
from optsched.harmony.network import (
    PREDICTED_CLIP,
    feature_sizes,
    features,
    init_params,
    predicted_costs,
    predictor,
)
from optsched.harmony.policies import place_job, run_policy
from optsched.harmony.world import WORLD_SETTINGS, EngineDriver, HarmonyWorld, generate_arrivals
from optsched.tolerances import WORK_TOL

WORLD = HarmonyWorld(n_servers=4, n_types=3, seed=3)


def _states(world: HarmonyWorld, n: int, seed: int):
    """(state, job) at every decision of a first-fit run (busy clusters, shared servers)."""
    sim = EngineDriver(world, generate_arrivals(world, n, seed=seed, mean_interarrival_s=20.0))
    while (job := sim.next_job()) is not None:
        yield sim.state.copy(), job
        sim.commit(job, place_job("first-fit", sim.state, job))


def test_predicted_costs_with_the_truth_are_the_true_server_costs() -> None:
    # Computed another way: optsched.harmony.exact.server_costs charges the true S_a(B).
    seen = 0
    for state, job in _states(WORLD, 25, seed=4):
        np.testing.assert_allclose(
            predicted_costs(state, job, WORLD.true_slowdown),
            server_costs(state, job),
            rtol=0,
            atol=WORK_TOL,
        )
        seen += any(len(m) for m in state.members)
    assert seen > 10, "shared clusters were checked"


def test_the_feature_is_zero_where_the_job_already_is_and_clipped() -> None:
    state, job = next((s, j) for s, j in _states(WORLD, 25, seed=4) if j.n_tasks > 1 and
                      any(len(m) for m in s.members))  # fmt: skip
    costs = predicted_costs(state, job, lambda a, n: 50.0)  # every co-runner: huge slowdown
    work = state.copy()
    d = job.demands()
    h = int(np.flatnonzero(work.mask(d, 0))[0])
    work.place_task(job, d[0], h)
    server, _ = features(work, job, 1, [h], costs=costs)
    assert server.shape[1] == feature_sizes(WORLD, predicted=True)[0]
    assert server[h, -1] == 0.0
    assert server[:, -1].max() <= PREDICTED_CLIP
    np.testing.assert_array_equal(server[:, :-1], features(work, job, 1, [h])[0])


def _predicted_model(tmp_path: Path, **change: np.ndarray) -> Path:
    from optsched.harmony.reward_net import PARAM_NAMES as _NAMES

    rng = np.random.default_rng(0)
    k, r = WORLD.n_types, 8
    reward = {
        "w1": rng.normal(0, 0.3, (2 * k + k * k, r)),
        "b1": np.zeros(r),
        "w2": rng.normal(0, 0.3, (r, r)),
        "b2": np.zeros(r),
        "w3": rng.normal(0, 0.3, (r, 1)),
        "b3": np.zeros(1),
    }
    params = {
        **init_params(WORLD, 8, seed=1, predicted=True),
        **{f"r/{n}": reward[n].astype(np.float32) for n in _NAMES},
        **change,
    }
    meta = {
        "format": MODEL_FORMAT_PREDICTED,
        "hidden": 8,
        "predictor_hidden": r,
        "world": {name: getattr(WORLD, name) for name in WORLD_SETTINGS},
    }
    return save_model(tmp_path / "p.npz", TrainResult(params, WORLD, meta=meta))


def test_a_policy_carrying_its_reward_network_loads_and_places_feasibly(tmp_path: Path) -> None:
    params, meta = load_model(_predicted_model(tmp_path))
    assert meta["format"] == MODEL_FORMAT_PREDICTED
    assert predictor(params, WORLD.n_types) is not None
    run = run_policy(WORLD, generate_arrivals(WORLD, 8, seed=2), "harmony", params=params)
    assert len(run.objectives) == 8, "every decision validated"


def test_an_overflowing_carried_reward_network_is_refused(tmp_path: Path) -> None:
    path = _predicted_model(tmp_path, **{"r/w3": np.full((8, 1), 3e38, np.float32)})
    with pytest.raises(CheckpointError, match="overflow") as info:
        load_model(path)
    assert info.value.field == "param/r/w3"


def test_a_v2_layout_cannot_claim_the_v3_format(tmp_path: Path) -> None:
    meta = {
        "format": MODEL_FORMAT_PREDICTED,
        "hidden": 8,
        "predictor_hidden": 8,
        "world": {name: getattr(WORLD, name) for name in WORLD_SETTINGS},
    }
    path = save_model(
        tmp_path / "m.npz", TrainResult(init_params(WORLD, 8, seed=1), WORLD, meta=meta)
    )
    with pytest.raises(CheckpointError, match=r"meta\.format|format"):
        load_model(path)


def test_a_short_training_with_every_option_is_reproducible_to_the_digest(tmp_path: Path) -> None:
    pytest.importorskip("jax", reason="training needs the rl extra")
    pytest.importorskip("gymnasium", reason="training needs the rl extra")
    from optsched.harmony.agent import train
    from optsched.harmony.reward import fit_reward_net

    world = HarmonyWorld(n_servers=3, n_types=3, seed=2)
    digests = []
    for k in range(2):
        net = fit_reward_net(world, n_traces=4, epochs=60, seed=1)
        result = train(
            world, reward_net=net, iterations=3, episodes=2, n_jobs=4, hidden=16, seed=1,
            predicted=True, imitate=2, mean_interarrival_s=(30.0, 60.0),
            variants=[{"n_servers": 2}, {"n_servers": 4, "mean_interarrival_s": [20, 40]}],
        )  # fmt: skip
        assert result.meta["training"]["imitate"] == 2
        assert len(result.meta["training"]["variants"]) == 2
        assert all(np.isfinite(p["loss"]) for p in result.curve)
        _, meta = load_model(save_model(tmp_path / f"m{k}.npz", result))
        digests.append(meta["digest"])
    assert digests[0] == digests[1]


def test_imitation_updates_move_the_policy_towards_the_expert() -> None:
    pytest.importorskip("jax", reason="training needs the rl extra")
    pytest.importorskip("gymnasium", reason="training needs the rl extra")
    from optsched.harmony.agent import train

    world = HarmonyWorld(n_servers=4, n_types=3, seed=3)
    agreement = {}
    for imitate in (0, 30):
        result = train(
            world, reward="true", iterations=30, episodes=2, n_jobs=6, imitate=imitate, seed=0
        )
        # On fresh traces: how often the policy picks the expert's servers for a whole job.
        agreement[imitate] = sum(
            place_job("harmony", state, job, params=result.params)
            == place_job("interference-greedy", state, job)
            for state, job in _states(world, 20, seed=11)
        )
    assert agreement[30] > agreement[0], agreement
    assert agreement[30] >= 18, agreement
