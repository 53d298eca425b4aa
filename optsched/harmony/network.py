r"""The policy network's features and forward pass in NumPy (inference needs no JAX).

State features for placing task :math:`k` of job :math:`j` (all in :math:`[0, 1]` or counts
scaled to about that range):

* per server :math:`h`: free GPUs :math:`/G`, free CPUs :math:`/C`, jobs of each type present
  :math:`n_{hb}/4`, tasks of :math:`j` already on :math:`h` over :math:`W_j + P_j`, and the
  outer product :math:`n_{hb} [\tau_j = a]/4` (the co-runner counts seen from the job's type,
  so that a type pair is one input rather than a product the network must learn);
* of the job: its type one-hot, whether task :math:`k` is a worker, :math:`W_j/W_{\max}`,
  :math:`P_j/P_{\max}` and :math:`k/(W_j+P_j)`;
* optionally (a policy trained with ``predicted=True``, checkpoint format v3), per server the
  added slowdown :math:`\hat c_h` the policy's own reward network predicts for putting the job
  there (:func:`predicted_costs`; 0 where the job already is, clipped to
  :data:`PREDICTED_CLIP`): the cost ``interference-greedy`` reads from the truth, from the
  learned model instead.

The network scores every server with one shared two-layer tanh MLP on
:math:`x_h = [\text{server}_h, \text{job}]`,

.. math::

    z_h = \tanh(W_2 \tanh(W_1 x_h + b_1) + b_2), \qquad
    \ell_h = w_3^\top z_h + b_3, \qquad
    \pi(h) = \frac{m_h e^{\ell_h}}{\sum_{h'} m_{h'} e^{\ell_{h'}}},

with :math:`m` the action mask, and values the state as
:math:`V = w_v^\top \frac{1}{H}\sum_h z_h + b_v`. Sharing the scorer across servers makes the
policy equivariant to the order of servers and its size independent of their number.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.harmony.world import ClusterState, HarmonyWorld, JobArrival, SlowdownFn

__all__ = [
    "FORWARD_BOUND",
    "PARAM_NAMES",
    "PREDICTED_CLIP",
    "PREDICTOR_NAMES",
    "feature_sizes",
    "feature_sizes_for",
    "features",
    "forward",
    "init_params",
    "input_bound",
    "overflow_risk",
    "param_shapes",
    "predicted_costs",
    "predictor",
]

#: Parameter arrays of the network, in checkpoint order.
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3", "wv", "bv")


#: Largest magnitude a logit, the value or a partial sum of the forward pass may reach in the
#: worst case over valid inputs (:func:`overflow_risk`): a quarter of the float32 range, so the
#: softmax's differences of logits and the value's mean stay finite too.
FORWARD_BOUND = float(np.finfo(np.float32).max) / 4


#: The reward network's parameters a policy with the predicted-slowdown feature carries
#: (``r/`` + :data:`optsched.harmony.reward` names), in checkpoint order.
PREDICTOR_NAMES = ("r/w1", "r/b1", "r/w2", "r/b2", "r/w3", "r/b3")

#: The predicted added slowdown feature is clipped to :math:`[0, \bar c]` (a server whose
#: co-runners would slow down by more than 8 in total is as bad as any worse one).
PREDICTED_CLIP = 8.0


def feature_sizes(world: HarmonyWorld, predicted: bool = False) -> tuple[int, int]:
    """Sizes of the per-server and the job features."""
    return feature_sizes_for(world.n_types, predicted)


def feature_sizes_for(n_types: int, predicted: bool = False) -> tuple[int, int]:
    """Sizes of the per-server and the job features with ``n_types`` job types."""
    k = int(n_types)
    return 3 + k + k * k + (1 if predicted else 0), k + 4


def param_shapes(
    n_types: int, hidden: int, predictor_hidden: int | None = None
) -> dict[str, tuple[int, ...]]:
    """The shape of every parameter of a network: arithmetic only.

    With ``predictor_hidden``, the policy reads the predicted-slowdown feature and carries the
    reward network (:data:`PREDICTOR_NAMES`, that many hidden units) that computes it.
    """
    fs, fj = feature_sizes_for(n_types, predictor_hidden is not None)
    out: dict[str, tuple[int, ...]] = {
        "w1": (fs + fj, hidden),
        "b1": (hidden,),
        "w2": (hidden, hidden),
        "b2": (hidden,),
        "w3": (hidden, 1),
        "b3": (1,),
        "wv": (hidden, 1),
        "bv": (1,),
    }
    if predictor_hidden is not None:
        k, r = int(n_types), predictor_hidden
        out.update(
            {
                "r/w1": (k + k + k * k, r),
                "r/b1": (r,),
                "r/w2": (r, r),
                "r/b2": (r,),
                "r/w3": (r, 1),
                "r/b3": (1,),
            }
        )
    return out


def input_bound(cpus: int) -> float:
    """Largest magnitude of any feature in a world whose servers have ``cpus`` CPUs.

    Every feature is a fraction in [0, 1] except the co-runner counts :math:`n_{hb}/4` (a
    server holds at most ``cpus/2`` tasks, a worker's CPUs, hence at most that many jobs) and
    the predicted added slowdown (clipped to :data:`PREDICTED_CLIP`).
    """
    return max(1.0, cpus / 2.0 / 4.0, PREDICTED_CLIP)


def predictor(params: Mapping[str, np.ndarray], n_types: int) -> SlowdownFn | None:
    """The slowdown model a policy carries (its reward network), or ``None`` if it has none."""
    if PREDICTOR_NAMES[0] not in params:
        return None
    from optsched.harmony.reward_net import RewardNet

    net = RewardNet({k.removeprefix("r/"): params[k] for k in PREDICTOR_NAMES}, n_types)
    return net.slowdown


def predicted_costs(state: ClusterState, job: JobArrival, slowdown: SlowdownFn) -> np.ndarray:
    r"""The added slowdown :math:`\hat c_h` of putting ``job`` on each server, per ``slowdown``.

    :math:`\hat c_h = \hat S_a(B_h) + \sum_{i \in h} \big(\hat S_{\tau_i}(B_{ih} + a)
    - \hat S_{\tau_i}(B_{ih})\big)`: what the job suffers there and what it adds to every
    job present, with :math:`\hat S` the model's prediction (the true cost of
    :func:`optsched.harmony.exact.server_costs` with the reward network in place of the truth),
    0 on an empty server, and 0 where the job already has a task (no new co-runner). The job's
    own tasks are left out of the counts. :math:`O(H m)` model calls (memoised).
    """
    world = state.world
    counts = state.type_counts(exclude=job.id)
    out = np.zeros(world.n_servers)
    for h, members in enumerate(state.members):
        if not members or job.id in members:
            continue
        n_h = counts[h]
        c = slowdown(job.job_type, n_h)
        for i in members:
            before = n_h.copy()
            before[state.types[i]] -= 1
            after = before.copy()
            after[job.job_type] += 1
            c += slowdown(state.types[i], after) - (
                slowdown(state.types[i], before) if before.any() else 0.0
            )
        out[h] = c
    return out


def overflow_risk(params: Mapping[str, np.ndarray], bound: float) -> str | None:
    r"""The first parameter through which the forward pass can overflow, or ``None``.

    Interval arithmetic in float64 over every input with :math:`|x_i| \le X` (``bound``): the
    first layer's pre-activations (and every partial sum of its product) are at most
    :math:`X \sum_i |W_{1,iu}| + |b_{1,u}|`; after a :math:`\tanh` every input is in
    :math:`[-1, 1]`, so the second layer, the logits and the value are bounded by the column
    sums of :math:`|W_2|`, :math:`|w_3|`, :math:`|w_v|` plus their biases. Each bound must stay
    below :data:`FORWARD_BOUND`. Finite weights near the float32 maximum (``3e38``) pass a
    finiteness check yet turn the logits into infinities and the action probabilities into
    NaN; this refuses them. :math:`O(|\theta|)`.

    Returns
    -------
    str or None
        The name of the weight or bias carrying the larger share of the first bound exceeded.
    """
    layers = [("w1", "b1", bound), ("w2", "b2", 1.0), ("w3", "b3", 1.0), ("wv", "bv", 1.0)]
    if PREDICTOR_NAMES[0] in params:
        # the carried reward network: one-hot, counts/4 and their products in, tanh layers
        layers += [("r/w1", "r/b1", bound), ("r/w2", "r/b2", 1.0), ("r/w3", "r/b3", 1.0)]
    for w, b, x in layers:
        weights = x * np.abs(np.asarray(params[w], dtype=np.float64)).sum(axis=0)
        biases = np.abs(np.asarray(params[b], dtype=np.float64))
        worst = weights + biases
        if not np.all(worst <= FORWARD_BOUND):  # also catches inf and NaN
            u = int(np.argmax(np.where(np.isfinite(worst), worst, np.inf)))
            return w if not weights[u] <= biases[u] else b
    return None


def features(
    state: ClusterState,
    job: JobArrival,
    k: int,
    placed: list[int],
    slowdown: SlowdownFn | None = None,
    costs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-server features, shape (servers, F_s), and job features, shape (F_j,).

    Parameters
    ----------
    state : ClusterState
        After the first ``k`` tasks of ``job`` were placed on ``placed``.
    job : JobArrival
    k : int
        Index of the task to place.
    placed : list of int
        Servers of tasks ``0..k-1``.
    slowdown : SlowdownFn, optional
        The policy's slowdown model (:func:`predictor`): adds the last per-server feature,
        :func:`predicted_costs` clipped to :data:`PREDICTED_CLIP`, 0 where the job already is.
    costs : numpy.ndarray, optional
        :func:`predicted_costs` of the job before its first task (the same for all its tasks:
        the other jobs do not move), to skip recomputing it.
    """
    world = state.world
    kt = world.n_types
    counts = state.type_counts(exclude=job.id) / 4.0
    own = np.bincount(np.asarray(placed, dtype=np.int64), minlength=world.n_servers)
    cross = np.zeros((world.n_servers, kt, kt))
    cross[:, job.job_type, :] = counts
    server = np.concatenate(
        [
            state.free[:, :1] / world.gpus,
            state.free[:, 1:2] / world.cpus,
            counts,
            (own / job.n_tasks)[:, None],
            cross.reshape(world.n_servers, kt * kt),
        ],
        axis=1,
    )
    if slowdown is not None or costs is not None:
        c = predicted_costs(state, job, slowdown) if costs is None else costs.copy()  # type: ignore[arg-type]
        c[own > 0] = 0.0
        server = np.concatenate([server, np.clip(c, 0.0, PREDICTED_CLIP)[:, None]], axis=1)
    onehot = np.zeros(kt)
    onehot[job.job_type] = 1.0
    jobf = np.concatenate(
        [
            onehot,
            [
                1.0 if k < job.n_workers else 0.0,
                job.n_workers / world.max_workers,
                job.n_ps / max(world.max_ps, 1),
                k / job.n_tasks,
            ],
        ]
    )
    return server, jobf


def init_params(
    world: HarmonyWorld, hidden: int = 64, seed: int = 0, predicted: bool = False
) -> dict[str, np.ndarray]:
    """Glorot-uniform weights, zero biases (float32); the policy only (no predictor)."""
    fs, fj = feature_sizes(world, predicted)
    rng = np.random.default_rng(seed)

    def glorot(n_in: int, n_out: int) -> np.ndarray:
        a = np.sqrt(6.0 / (n_in + n_out))
        return rng.uniform(-a, a, (n_in, n_out)).astype(np.float32)

    return {
        "w1": glorot(fs + fj, hidden),
        "b1": np.zeros(hidden, np.float32),
        "w2": glorot(hidden, hidden),
        "b2": np.zeros(hidden, np.float32),
        "w3": glorot(hidden, 1) * 0.1,
        "b3": np.zeros(1, np.float32),
        "wv": glorot(hidden, 1) * 0.1,
        "bv": np.zeros(1, np.float32),
    }


def forward(
    params: Mapping[str, np.ndarray], server: np.ndarray, jobf: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, float]:
    """Masked action probabilities over servers and the state value (NumPy, float32)."""
    x = np.concatenate(
        [server, np.broadcast_to(jobf, (server.shape[0], jobf.shape[0]))], axis=1
    ).astype(np.float32)
    z = np.tanh(np.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"])
    logits = (z @ params["w3"])[:, 0] + params["b3"][0]
    value = float(z.mean(axis=0) @ params["wv"][:, 0] + params["bv"][0])
    if not (np.all(np.isfinite(logits[mask])) and np.isfinite(value)):
        # Loaded checkpoints are bounded (overflow_risk); weights handed in directly are not.
        raise InvalidInstanceError(
            "params", "the forward pass overflowed: weights too large for float32 inference"
        )
    logits = np.where(mask, logits, -np.inf)
    p = np.exp(logits - logits[mask].max())
    p /= p.sum()
    return p, value
