r"""The Harmony agent: an actor-critic policy trained offline, placing online by inference.

Training (:func:`train`) runs batches of episodes of :class:`~optsched.harmony.env.PlacementEnv`
whose reward comes from the learned reward network (``reward="learned"``, Harmony's offline
training on a learned model of the cluster) or from the true world (``reward="true"``). Each
iteration samples :math:`E` episodes with the current policy :math:`\pi_\theta` (NumPy
inference, actions drawn from the masked softmax), then takes one Adam step on

.. math::

    \mathcal L(\theta) = -\frac{1}{N}\sum_{i} \hat A_i \log \pi_\theta(a_i \mid s_i)
        + \frac{c_v}{N}\sum_i \big(G_i - V_\theta(s_i)\big)^2
        - \frac{\beta}{N}\sum_i \mathcal H\big(\pi_\theta(\cdot \mid s_i)\big),

with discounted returns :math:`G_i = \sum_{k \ge 0} \gamma^k r_{i+k}` (within the episode),
advantages :math:`A_i = G_i - V_\theta(s_i)` standardised over the batch to :math:`\hat A_i`
(REINFORCE with a learned baseline, i.e. a one-step actor-critic), and the entropy bonus
:math:`\beta` decaying linearly to 0. Gradients are computed by JAX on CPU over a batch padded to
a fixed size (one compilation). Every random draw comes from the seed (NumPy generators for
the initial weights, the traces and the sampled actions), the batch shape is fixed and the
arithmetic runs on the CPU in float32, so one seed gives bit-identical weights run after run
on one machine; the checkpoint's ``digest`` covers the weights and the configuration only
(never a time), so two such runs write the same digest
(:mod:`optsched.harmony.checkpoint`). The shipped model is rebuilt by one command,
:data:`SHIPPED_COMMAND`.

Online, :func:`optsched.harmony.policies.place_job` takes the most probable valid server for
every task (greedy inference, NumPy only).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.harmony.checkpoint import load_checkpoint, save_checkpoint
from optsched.harmony.network import (
    PARAM_NAMES,
    PREDICTOR_NAMES,
    feature_sizes,
    forward,
    init_params,
    input_bound,
    overflow_risk,
    param_shapes,
)
from optsched.harmony.world import WORLD_SETTINGS, HarmonyWorld, check_world_settings
from optsched.limits import check_size

__all__ = [
    "MODEL_FORMAT",
    "MODEL_FORMAT_PREDICTED",
    "SHIPPED_COMMAND",
    "SHIPPED_TRAINING",
    "TrainResult",
    "default_model_path",
    "load_model",
    "policy_shapes",
    "save_model",
    "train",
    "world_from_meta",
]

#: The ``meta.format`` of a policy checkpoint.
MODEL_FORMAT = "optsched-harmony-policy-v2"

#: The ``meta.format`` of a policy that reads the predicted added slowdown of every server and
#: carries the reward network computing it (parameters ``r/*``,
#: :data:`~optsched.harmony.network.PREDICTOR_NAMES`).
MODEL_FORMAT_PREDICTED = "optsched-harmony-policy-v3"

#: The training settings of the shipped model (:func:`default_model_path`); with the default
#: world, ``train(HarmonyWorld(), **SHIPPED_TRAINING)`` rebuilds it bit for bit.
SHIPPED_TRAINING: dict[str, Any] = {
    "reward": "learned",
    "iterations": 200,
    "episodes": 8,
    "n_jobs": 16,
    "seed": 0,
}

#: The command that rebuilds the shipped model (also ``make harmony-model``).
SHIPPED_COMMAND = (
    "optsched harmony train --seed 0 --iterations 200 --episodes 8 --jobs 16 "
    "-o optsched/harmony/data/harmony_small.npz"
)

_WORLD_FIELDS = WORLD_SETTINGS


@dataclass
class TrainResult:
    """A trained policy and its learning curve.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
    world : HarmonyWorld
    curve : list of dict
        Per iteration: ``iteration``, ``reward`` (mean episode return of the training reward),
        ``avg_jct_s`` (mean over the batch, true world) and ``loss``.
    cpu_s : float
        Training CPU time of the process (s), reward-network fitting included; never
        written to the checkpoint.
    meta : dict
        Settings (the world, the network, the training options) and the records (the curve,
        the reward model's errors): what :func:`save_model` writes.
    """

    params: dict[str, np.ndarray]
    world: HarmonyWorld
    curve: list[dict[str, float]] = field(default_factory=list)
    cpu_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def _world_meta(world: HarmonyWorld) -> dict[str, Any]:
    return {name: getattr(world, name) for name in _WORLD_FIELDS}


def world_from_meta(meta: Mapping[str, Any]) -> HarmonyWorld:
    """Rebuild the world a checkpoint was trained on (the truth is regenerated from its seed)."""
    w = meta.get("world")
    if not isinstance(w, Mapping) or set(w) != set(_WORLD_FIELDS):
        raise InvalidInstanceError("meta.world", f"must hold exactly {list(_WORLD_FIELDS)}")
    check_world_settings(w, prefix="meta.world.")
    return HarmonyWorld(**{k: w[k] for k in _WORLD_FIELDS})


def _episode(
    env: Any,
    params: Mapping[str, np.ndarray],
    rng: np.random.Generator,
    seed: int,
    *,
    expert: bool = False,
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], list[float], float]:
    from optsched.harmony.policies import place_job

    fs, _ = feature_sizes(env.world, env.feature_model is not None)
    n = env.world.n_servers
    obs, info = env.reset(seed=seed)
    steps = []
    rewards = []
    plan: list[int] = []
    while True:
        server = obs[: n * fs].reshape(n, fs)
        jobf = obs[n * fs :]
        mask = info["action_mask"].astype(bool)
        if expert:
            if info["task"] == 0:
                plan = place_job("interference-greedy", env._work, env._job)
            a = plan[info["task"]]
        else:
            p, _ = forward(params, server, jobf, mask)
            a = int(rng.choice(n, p=p))
        steps.append((server, jobf, mask, a))
        obs, r, terminated, _, info = env.step(a)
        rewards.append(r)
        if terminated:
            return steps, rewards, float(info["avg_jct_s"])


def _variant_worlds(
    world: HarmonyWorld,
    load: float | tuple[float, float],
    variants: Sequence[Mapping[str, Any]],
) -> list[tuple[HarmonyWorld, float | tuple[float, float]]]:
    """The training worlds: ``world`` alone, or its variants (same truth and servers' sizes)."""
    if not variants:
        return [(world, load)]
    out: list[tuple[HarmonyWorld, float | tuple[float, float]]] = []
    allowed = {"n_servers", "max_workers", "max_ps", "mean_interarrival_s"}
    for i, v in enumerate(variants):
        unknown = sorted(set(v) - allowed)
        if unknown:
            raise InvalidInstanceError(
                f"variants[{i}].{unknown[0]}", f"not one of {sorted(allowed)}"
            )
        settings = {name: getattr(world, name) for name in WORLD_SETTINGS}
        settings.update({k: v[k] for k in ("n_servers", "max_workers", "max_ps") if k in v})
        mean = v.get("mean_interarrival_s", load)
        out.append(
            (
                HarmonyWorld(**settings, truth=world.truth),
                tuple(mean) if isinstance(mean, list) else mean,
            )
        )
    return out


def _check_options(
    reward: str, iterations: int, episodes: int, n_jobs: int, imitate: int, gamma: float
) -> None:
    if reward not in ("learned", "true"):
        raise InvalidInstanceError("reward", f"must be 'learned' or 'true', got {reward!r}")
    for name, value in (("iterations", iterations), ("episodes", episodes), ("n_jobs", n_jobs)):
        if value < 1:
            raise InvalidInstanceError(name, f"must be >= 1, got {value}")
    if not 0 <= imitate <= iterations:
        raise InvalidInstanceError("imitate", f"must be in [0, iterations], got {imitate}")
    if not 0 <= gamma <= 1:
        raise InvalidInstanceError("gamma", f"must be in [0, 1], got {gamma}")


def _batch(
    runs: list[tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], list[float], float]],
    gamma: float,
    dims: tuple[int, int, int, int],
) -> dict[str, np.ndarray]:
    """The padded training batch of one update: every step with its discounted return."""
    cap, n, fs, fj = dims
    server = np.zeros((cap, n, fs), np.float32)
    jobf = np.zeros((cap, fj), np.float32)
    mask = np.zeros((cap, n), bool)
    mask[:, 0] = True  # padding rows: any valid mask, weight 0
    action = np.zeros(cap, np.int32)
    ret = np.zeros(cap, np.float32)
    valid = np.zeros(cap, np.float32)
    real = np.ones((cap, n), np.float32)
    row = 0
    for steps, rewards, _ in runs:
        g = 0.0
        gs = np.zeros(len(rewards))
        for i in range(len(rewards) - 1, -1, -1):
            g = rewards[i] + gamma * g
            gs[i] = g
        for (sv, jf, mk, a), gi in zip(steps, gs, strict=True):
            m = len(sv)  # a world with fewer servers: the rest are padding, masked out
            server[row, :m], jobf[row], action[row] = sv, jf, a
            mask[row] = False
            mask[row, :m] = mk
            real[row, m:] = 0.0
            ret[row], valid[row] = gi, 1.0
            row += 1
    return {"server": server, "job": jobf, "mask": mask, "action": action, "ret": ret,
            "valid": valid, "real": real}  # fmt: skip


def train(
    world: HarmonyWorld | None = None,
    *,
    reward: str = "learned",
    iterations: int = 200,
    episodes: int = 8,
    n_jobs: int = 16,
    hidden: int = 64,
    lr: float = 3e-3,
    gamma: float = 0.9,
    value_coef: float = 0.5,
    entropy: float = 0.01,
    seed: int = 0,
    progress: Callable[[int, int, Mapping[str, float]], None] | None = None,
    reward_net: Any = None,
    predicted: bool = False,
    mean_interarrival_s: float | tuple[float, float] = 60.0,
    imitate: int = 0,
    variants: Sequence[Mapping[str, Any]] = (),
) -> TrainResult:
    r"""Train the placement policy (see the module docstring for the loss).

    Parameters
    ----------
    world : HarmonyWorld, optional
    reward : {"learned", "true"}, default "learned"
        Rewards from the auxiliary network (fitted first unless ``reward_net`` is given) or
        from the true world.
    iterations, episodes, n_jobs : int
        Policy updates, episodes per update, jobs per episode.
    hidden : int, default 64
    lr, gamma, value_coef, entropy : float
        Adam step, discount, value-loss weight, initial entropy bonus.
    seed : int, default 0
    progress : callable, optional
        Called as ``progress(done, total, point)`` after every update, ``point`` the newest
        entry of the learning curve (the command line draws its progress bar with it).
    reward_net : RewardNet, optional
    predicted : bool, default False
        Give the policy the predicted added slowdown of every server as a feature
        (:func:`~optsched.harmony.network.predicted_costs`), computed by the reward network,
        which the checkpoint then carries (format :data:`MODEL_FORMAT_PREDICTED`).
    mean_interarrival_s : float or (float, float), default 60
        Load of the training traces; a pair draws it uniformly per episode.
    imitate : int, default 0
        Warm start: the first ``imitate`` of the ``iterations`` updates are behaviour cloning
        of the ``interference-greedy`` heuristic (an expert reading the ground truth, used
        offline only), maximising :math:`\frac1N\sum_i \log\pi_\theta(a^\star_i\mid s_i)`
        on its own episodes (plus the value loss on their returns); policy-gradient fine-tuning
        follows.
    variants : sequence of mapping, optional
        Train on several worlds at once: each episode runs in one drawn uniformly, each a
        variant of ``world`` (same truth, same servers' sizes) changing ``n_servers``,
        ``max_workers``, ``max_ps`` and/or ``mean_interarrival_s``. The policy's size does not
        depend on the servers; smaller worlds are padded in the batch (masked out).

    Returns
    -------
    TrainResult

    Raises
    ------
    InvalidInstanceError
        An option out of range (named).
    MissingExtraError
        JAX, optax or gymnasium is not installed.
    """
    from optsched.harmony.env import PlacementEnv
    from optsched.harmony.reward import _jax, fit_reward_net

    _check_options(reward, iterations, episodes, n_jobs, imitate, gamma)
    jax, jnp, optax = _jax()
    world = HarmonyWorld() if world is None else world
    start = time.process_time()
    reward_meta: dict[str, Any] = {"source": reward}
    record: dict[str, Any] = {}
    model = None
    if reward == "learned" or predicted:
        if reward_net is None:
            model = fit_reward_net(world, seed=seed)
            reward_meta.update(fitted_here=True, seed=seed)
        else:
            model = reward_net
            reward_meta.update(fitted_here=False)
        record["reward_model"] = {k: model.meta[k] for k in ("train", "heldout") if k in model.meta}
    envs = [
        PlacementEnv(
            w,
            n_jobs=n_jobs,
            reward_model=None if reward == "true" or model is None else model.slowdown,
            mean_interarrival_s=load,
            feature_model=model.slowdown if predicted and model is not None else None,
        )
        for w, load in _variant_worlds(world, mean_interarrival_s, variants)
    ]
    params = init_params(world, hidden, seed, predicted)
    tree = {k: jnp.asarray(v) for k, v in params.items()}
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))
    opt_state = opt.init(tree)
    n = max(e.world.n_servers for e in envs)
    fs, fj = feature_sizes(world, predicted)
    cap = episodes * n_jobs * max(e.world.max_workers + e.world.max_ps for e in envs)
    padded = len(envs) > 1

    def loss_fn(p: Any, batch: Mapping[str, Any], beta: Any, clone: Any) -> Any:
        x = jnp.concatenate(
            [batch["server"], jnp.broadcast_to(batch["job"][:, None, :], (cap, n, fj))], axis=2
        )
        z = jnp.tanh(jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
        logits = (z @ p["w3"])[..., 0] + p["b3"][0]
        logits = jnp.where(batch["mask"], logits, -1e9)
        logp = jax.nn.log_softmax(logits, axis=1)
        if padded:  # the mean over each state's own servers (padding rows are not servers)
            real = batch["real"][..., None]
            pooled = (z * real).sum(axis=1) / real.sum(axis=1)
        else:
            pooled = z.mean(axis=1)
        value = pooled @ p["wv"][:, 0] + p["bv"][0]
        chosen = jnp.take_along_axis(logp, batch["action"][:, None], axis=1)[:, 0]
        adv = batch["ret"] - jax.lax.stop_gradient(value)
        w = batch["valid"]
        count = w.sum()
        mean = (adv * w).sum() / count
        std = jnp.sqrt((((adv - mean) ** 2) * w).sum() / count) + 1e-8
        adv = (adv - mean) / std
        probs = jnp.exp(logp)
        ent = -jnp.sum(jnp.where(batch["mask"], probs * logp, 0.0), axis=1)
        # clone = 1: behaviour cloning (the expert's action, weight 1); 0: policy gradient
        pg = -(jnp.where(clone > 0, 1.0, adv) * chosen * w).sum() / count
        vl = (((batch["ret"] - value) ** 2) * w).sum() / count
        return pg + value_coef * vl - beta * (ent * w).sum() / count

    @jax.jit
    def update(p: Any, s: Any, batch: Mapping[str, Any], beta: Any, clone: Any) -> Any:
        value, grads = jax.value_and_grad(loss_fn)(p, batch, beta, clone)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    rng = np.random.default_rng(seed)
    seeds = np.random.default_rng(seed + 1).integers(0, 2**31 - 1, (iterations, episodes))
    # which world each episode runs in (drawn only when there are several: a single world
    # keeps the random streams, hence the weights, of training without variants)
    which = (
        np.random.default_rng(seed + 2).integers(0, len(envs), (iterations, episodes))
        if padded
        else np.zeros((iterations, episodes), dtype=np.int64)
    )
    curve: list[dict[str, float]] = []
    for it in range(iterations):
        runs = [
            _episode(envs[which[it, e]], params, rng, int(seeds[it, e]), expert=it < imitate)
            for e in range(episodes)
        ]
        arrays = _batch(runs, gamma, (cap, n, fs, fj))
        if not padded:
            del arrays["real"]
        returns = [sum(rewards) for _, rewards, _ in runs]
        jcts = [jct for _, _, jct in runs]
        beta = entropy * (1.0 - it / iterations)
        batch = {k: jnp.asarray(v) for k, v in arrays.items()}
        clone = jnp.float32(1.0 if it < imitate else 0.0)
        tree, opt_state, loss = update(tree, opt_state, batch, jnp.float32(beta), clone)
        params = {k: np.asarray(v) for k, v in tree.items()}
        curve.append(
            {
                "iteration": it,
                "reward": float(np.mean(returns)),
                "avg_jct_s": float(np.mean(jcts)),
                "loss": float(loss),
            }
        )
        if progress is not None:
            progress(it + 1, iterations, curve[-1])
    cpu = time.process_time() - start
    meta: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "world": _world_meta(world),
        "hidden": hidden,
        "training": {
            "reward": reward,
            "iterations": iterations,
            "episodes": episodes,
            "n_jobs": n_jobs,
            "lr": lr,
            "gamma": gamma,
            "value_coef": value_coef,
            "entropy": entropy,
            "seed": seed,
        },
        "reward_model": reward_meta,
        "record": record,
        "curve": curve,
    }
    if predicted or imitate or mean_interarrival_s != 60.0 or variants:
        # only what differs from the base settings, so a base model keeps its digest
        meta["training"].update(
            predicted=predicted,
            imitate=imitate,
            mean_interarrival_s=(
                list(mean_interarrival_s)
                if isinstance(mean_interarrival_s, tuple)
                else mean_interarrival_s
            ),
            variants=[
                {k: list(x) if isinstance(x, tuple) else x for k, x in v.items()} for v in variants
            ],
        )
    if predicted:
        assert model is not None
        meta["format"] = MODEL_FORMAT_PREDICTED
        meta["predictor_hidden"] = int(model.params["w1"].shape[1])
        params = {**params, **{f"r/{k}": v for k, v in model.params.items()}}
    return TrainResult(params, world, curve, cpu, meta)


def save_model(path: str | Path, result: TrainResult, *, key: bytes | None = None) -> Path:
    """Write the trained policy as an ``.npz`` checkpoint (no pickle); signed with ``key``."""
    return save_checkpoint(path, result.params, result.meta, key=key)


def default_model_path() -> Path:
    """The small trained policy shipped with optsched."""
    return Path(__file__).with_name("data") / "harmony_small.npz"


def policy_shapes(meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The parameter shapes a policy checkpoint's settings call for, checked against budgets.

    Arithmetic on the settings only (nothing is allocated): the world's settings
    (:func:`~optsched.harmony.world.check_world_settings`: types, ranges, the budgets
    ``max_harmony_servers``, ``max_harmony_types``, ``max_harmony_job_tasks``), ``hidden`` an
    integer >= 1, and the total weights within ``max_checkpoint_weights``.

    Raises
    ------
    InvalidInstanceError
        The first offending setting, named ``meta.world.<name>`` or ``meta.hidden``.
    """
    w = meta.get("world")
    if not isinstance(w, Mapping) or set(w) != set(_WORLD_FIELDS):
        raise InvalidInstanceError("meta.world", f"must hold exactly {list(_WORLD_FIELDS)}")
    check_world_settings(w, prefix="meta.world.")
    hidden = meta.get("hidden")
    if isinstance(hidden, bool) or not isinstance(hidden, int):
        raise InvalidInstanceError("meta.hidden", f"must be an integer, got {hidden!r}")
    if hidden < 1:
        raise InvalidInstanceError("meta.hidden", f"must be >= 1, got {hidden}")
    predictor_hidden = None
    if meta.get("format") == MODEL_FORMAT_PREDICTED:
        predictor_hidden = meta.get("predictor_hidden")
        if isinstance(predictor_hidden, bool) or not isinstance(predictor_hidden, int):
            raise InvalidInstanceError(
                "meta.predictor_hidden", f"must be an integer, got {predictor_hidden!r}"
            )
        if predictor_hidden < 1:
            raise InvalidInstanceError(
                "meta.predictor_hidden", f"must be >= 1, got {predictor_hidden}"
            )
    shapes = param_shapes(w["n_types"], hidden, predictor_hidden)
    total = sum(math.prod(shape) for shape in shapes.values())
    check_size("meta.hidden", total, "max_checkpoint_weights", "weights")
    return shapes


def load_model(
    path: str | Path | None = None,
    *,
    key: bytes | None = None,
    trusted_digests: Collection[str] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a policy checkpoint (default: the shipped one) through the guarded loader.

    Every setting is bounded and every shape derived from the settings before any array is
    decompressed (:func:`policy_shapes`, :func:`~optsched.harmony.checkpoint.load_checkpoint`),
    and weights through which the forward pass could overflow float32 on any valid input are
    refused (:func:`~optsched.harmony.network.overflow_risk`).

    Parameters
    ----------
    path : str or Path, optional
    key : bytes, optional
        Require a signature made with this key (the digest alone proves integrity, not origin).
    trusted_digests : collection of str, optional
        Require the checkpoint's digest to be one of these.

    Raises
    ------
    CheckpointError
        Malformed, of another kind, with settings out of range or over a budget, with shapes
        that do not match its settings, with weights that overflow, altered, unsigned or
        signed with another key, or not trusted; the file and the field are named.
    """
    from optsched.harmony.checkpoint import CheckpointError

    p = default_model_path() if path is None else Path(path)
    params, meta = load_checkpoint(
        p,
        kind={MODEL_FORMAT: PARAM_NAMES, MODEL_FORMAT_PREDICTED: PARAM_NAMES + PREDICTOR_NAMES},
        shapes=policy_shapes,
        key=key,
        trusted_digests=trusted_digests,
    )
    risky = overflow_risk(params, input_bound(meta["world"]["cpus"]))
    if risky is not None:
        raise CheckpointError(
            f"param/{risky}",
            "the forward pass can overflow float32 on a valid input (weights too large)",
            file=str(p),
        )
    try:
        world_from_meta(meta)
    except InvalidInstanceError as exc:
        raise CheckpointError(
            "meta.world", f"does not describe a world: {exc}", file=str(p)
        ) from None
    return params, meta
