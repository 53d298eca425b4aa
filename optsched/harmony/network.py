r"""The policy network's features and forward pass in NumPy (inference needs no JAX).

State features for placing task :math:`k` of job :math:`j` (all in :math:`[0, 1]` or counts
scaled to about that range):

* per server :math:`h`: free GPUs :math:`/G`, free CPUs :math:`/C`, jobs of each type present
  :math:`n_{hb}/4`, tasks of :math:`j` already on :math:`h` over :math:`W_j + P_j`, and the
  outer product :math:`n_{hb} [\tau_j = a]/4` (the co-runner counts seen from the job's type,
  so that a type pair is one input rather than a product the network must learn);
* of the job: its type one-hot, whether task :math:`k` is a worker, :math:`W_j/W_{\max}`,
  :math:`P_j/P_{\max}` and :math:`k/(W_j+P_j)`.

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
from optsched.harmony.world import ClusterState, HarmonyWorld, JobArrival

__all__ = [
    "FORWARD_BOUND",
    "PARAM_NAMES",
    "feature_sizes",
    "feature_sizes_for",
    "features",
    "forward",
    "init_params",
    "input_bound",
    "overflow_risk",
    "param_shapes",
]

#: Parameter arrays of the network, in checkpoint order.
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3", "wv", "bv")


#: Largest magnitude a logit, the value or a partial sum of the forward pass may reach in the
#: worst case over valid inputs (:func:`overflow_risk`): a quarter of the float32 range, so the
#: softmax's differences of logits and the value's mean stay finite too.
FORWARD_BOUND = float(np.finfo(np.float32).max) / 4


def feature_sizes(world: HarmonyWorld) -> tuple[int, int]:
    """Sizes of the per-server and the job features."""
    return feature_sizes_for(world.n_types)


def feature_sizes_for(n_types: int) -> tuple[int, int]:
    """Sizes of the per-server and the job features with ``n_types`` job types."""
    k = int(n_types)
    return 3 + k + k * k, k + 4


def param_shapes(n_types: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """The shape of every parameter (:data:`PARAM_NAMES`) of a network: arithmetic only."""
    fs, fj = feature_sizes_for(n_types)
    return {
        "w1": (fs + fj, hidden),
        "b1": (hidden,),
        "w2": (hidden, hidden),
        "b2": (hidden,),
        "w3": (hidden, 1),
        "b3": (1,),
        "wv": (hidden, 1),
        "bv": (1,),
    }


def input_bound(cpus: int) -> float:
    """Largest magnitude of any feature in a world whose servers have ``cpus`` CPUs.

    Every feature is a fraction in [0, 1] except the co-runner counts :math:`n_{hb}/4`; a server
    holds at most ``cpus/2`` tasks (a worker's CPUs), hence at most that many jobs.
    """
    return max(1.0, cpus / 2.0 / 4.0)


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
    layers = (("w1", "b1", bound), ("w2", "b2", 1.0), ("w3", "b3", 1.0), ("wv", "bv", 1.0))
    for w, b, x in layers:
        weights = x * np.abs(np.asarray(params[w], dtype=np.float64)).sum(axis=0)
        biases = np.abs(np.asarray(params[b], dtype=np.float64))
        worst = weights + biases
        if not np.all(worst <= FORWARD_BOUND):  # also catches inf and NaN
            u = int(np.argmax(np.where(np.isfinite(worst), worst, np.inf)))
            return w if not weights[u] <= biases[u] else b
    return None


def features(
    state: ClusterState, job: JobArrival, k: int, placed: list[int]
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


def init_params(world: HarmonyWorld, hidden: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Glorot-uniform weights, zero biases (float32)."""
    fs, fj = feature_sizes(world)
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
