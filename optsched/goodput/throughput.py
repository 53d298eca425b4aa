r"""Pollux's system-throughput model: time per iteration of data-parallel SGD with all-reduce.

A job runs :math:`K` replicas (GPUs) spread over :math:`N` nodes. Each replica processes an
*atomic* (per-GPU) batch of :math:`m` samples per pass; with :math:`s` gradient-accumulation
steps it makes :math:`s + 1` passes before the gradients are all-reduced, so one iteration
trains on the global batch :math:`M = K m (s + 1)`. Following Qiao et al. (OSDI'21, §3.2):

.. math::

   T_\mathrm{grad}(m) &= \alpha_c + \beta_c\, m \\
   T_\mathrm{sync}(N, K) &= \begin{cases}
       0 & K = 1 \\
       \alpha_r + \beta_r \max(K - 2, 0) & N = 1 < K \quad\text{(within a node)} \\
       \alpha_n + \beta_n \max(K - 2, 0) & N > 1 \quad\text{(across nodes)}
   \end{cases} \\
   T_\mathrm{iter}(N, K, m, s) &= s\, T_\mathrm{grad}(m)
       + \bigl(T_\mathrm{grad}(m)^\gamma + T_\mathrm{sync}(N, K)^\gamma\bigr)^{1/\gamma} \\
   \mathrm{THROUGHPUT}(N, K, m, s) &= \frac{K m (s + 1)}{T_\mathrm{iter}(N, K, m, s)}
   \quad\text{samples per second.}

The last pass of an iteration overlaps its backward computation with the all-reduce; the
:math:`\gamma`-norm, :math:`\gamma \in [1, 10]`, models that overlap: :math:`\gamma = 1` is no
overlap (the sum), :math:`\gamma \to \infty` perfect overlap (the maximum). The all-reduce of a
ring over :math:`K` replicas is bottlenecked by its slowest link (:math:`\alpha_n` across nodes,
:math:`\alpha_r` within one); :math:`\beta` is the retrogression per replica beyond two.

References
----------
.. [1] A. Qiao, S. K. Choe, S. J. Subramanya, W. Neiswanger, Q. Ho, H. Zhang, G. R. Ganger and
   E. P. Xing. "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning."
   OSDI 2021, §3.2 (Eqs. 9-11).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError

__all__ = [
    "PARAM_NAMES",
    "ThroughputParams",
    "compute_time",
    "iteration_time",
    "sync_time",
    "throughput",
]

#: The model's parameters in their fixed order (the order of the fit's vector).
PARAM_NAMES: tuple[str, ...] = (
    "alpha_c",
    "beta_c",
    "alpha_n",
    "beta_n",
    "alpha_r",
    "beta_r",
    "gamma",
)

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ThroughputParams:
    r"""The seven parameters :math:`\theta_\mathrm{sys}` of one job type's throughput model.

    Parameters
    ----------
    alpha_c, beta_c : float
        Compute time of one pass, :math:`\alpha_c + \beta_c m` seconds for an atomic batch
        :math:`m`; both :math:`\ge 0`.
    alpha_n, beta_n : float
        All-reduce time across nodes, :math:`\alpha_n + \beta_n \max(K-2, 0)`; :math:`\ge 0`.
    alpha_r, beta_r : float
        All-reduce time within one node, :math:`\alpha_r + \beta_r \max(K-2, 0)`; :math:`\ge 0`.
    gamma : float
        Overlap of computation and all-reduce, in :math:`[1, 10]`.
    """

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def __post_init__(self) -> None:
        for name in PARAM_NAMES:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise InvalidInstanceError(name, f"must be a finite number >= 0, got {value!r}")
        if not 1.0 <= self.gamma <= 10.0:
            raise InvalidInstanceError("gamma", f"must be in [1, 10], got {self.gamma!r}")
        if self.alpha_c + self.beta_c <= 0:
            raise InvalidInstanceError("alpha_c", "alpha_c + beta_c must be > 0 (no free compute)")

    @classmethod
    def from_vector(cls, values: ArrayLike) -> ThroughputParams:
        """Parameters from a vector in the order of :data:`PARAM_NAMES`."""
        vec = np.asarray(values, dtype=np.float64).reshape(-1)
        if vec.size != len(PARAM_NAMES):
            raise InvalidInstanceError(
                "params", f"needs {len(PARAM_NAMES)} values ({', '.join(PARAM_NAMES)})"
            )
        return cls(*(float(v) for v in vec))

    def vector(self) -> FloatArray:
        """The parameters as a vector in the order of :data:`PARAM_NAMES`."""
        return np.array([getattr(self, n) for n in PARAM_NAMES], dtype=np.float64)

    def to_dict(self) -> dict[str, float]:
        """``{name: value}``, JSON-ready."""
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThroughputParams:
        """The inverse of :meth:`to_dict`; an unknown or missing name is refused."""
        unknown = sorted(set(data) - set(PARAM_NAMES))
        if unknown:
            raise InvalidInstanceError(unknown[0], "is not a throughput parameter")
        missing = [n for n in PARAM_NAMES if n not in data]
        if missing:
            raise InvalidInstanceError(missing[0], "is missing")
        return cls(**{n: float(data[n]) for n in PARAM_NAMES})


def _check_shape(num_nodes: FloatArray, num_replicas: FloatArray) -> None:
    if np.any(num_nodes < 1):
        raise InvalidInstanceError("num_nodes", "must be >= 1")
    if np.any(num_replicas < num_nodes):
        raise InvalidInstanceError("num_replicas", "must be >= num_nodes (a node has a replica)")


def compute_time(params: ThroughputParams, atomic_bsz: ArrayLike) -> FloatArray:
    r""":math:`T_\mathrm{grad}(m) = \alpha_c + \beta_c m`: seconds of one forward-backward pass."""
    m = np.asarray(atomic_bsz, dtype=np.float64)
    return params.alpha_c + params.beta_c * m


def sync_time(
    params: ThroughputParams, num_nodes: ArrayLike, num_replicas: ArrayLike
) -> FloatArray:
    r""":math:`T_\mathrm{sync}(N, K)`: seconds of one all-reduce (0 for a single replica).

    The link that bounds the ring is the slowest one it crosses: across nodes when
    :math:`N > 1`, within a node when :math:`N = 1 < K`.
    """
    n = np.asarray(num_nodes, dtype=np.float64)
    k = np.asarray(num_replicas, dtype=np.float64)
    _check_shape(n, k)
    extra = np.maximum(k - 2.0, 0.0)
    across = params.alpha_n + params.beta_n * extra
    within = params.alpha_r + params.beta_r * extra
    return np.where(n > 1, across, np.where(k > 1, within, 0.0))


def iteration_time(
    params: ThroughputParams,
    num_nodes: ArrayLike,
    num_replicas: ArrayLike,
    atomic_bsz: ArrayLike,
    accum_steps: ArrayLike = 0,
) -> FloatArray:
    r"""Seconds per iteration, :math:`T_\mathrm{iter}(N, K, m, s)` (module notes).

    Parameters
    ----------
    params : ThroughputParams
    num_nodes, num_replicas : array_like
        :math:`N \ge 1` and :math:`K \ge N` (broadcast together with the rest).
    atomic_bsz : array_like
        Per-GPU batch of one pass, :math:`m > 0`.
    accum_steps : array_like
        Gradient-accumulation steps :math:`s \ge 0` (passes without an all-reduce).

    Returns
    -------
    ndarray
        Seconds per iteration (per optimizer step).

    Notes
    -----
    The norm is evaluated as
    :math:`T_\mathrm{grad}\,(1 + (T_\mathrm{sync}/T_\mathrm{grad})^\gamma)^{1/\gamma}`
    so that no power overflows for :math:`\gamma` up to 10.
    """
    s = np.asarray(accum_steps, dtype=np.float64)
    if np.any(s < 0):
        raise InvalidInstanceError("accum_steps", "must be >= 0")
    grad = compute_time(params, atomic_bsz)
    if np.any(grad <= 0):
        raise InvalidInstanceError("atomic_bsz", "gives a compute time <= 0")
    sync = sync_time(params, num_nodes, num_replicas)
    g = params.gamma
    optim = grad * (1.0 + (sync / grad) ** g) ** (1.0 / g)
    return np.asarray(s * grad + optim, dtype=np.float64)


def throughput(
    params: ThroughputParams,
    num_nodes: ArrayLike,
    num_replicas: ArrayLike,
    atomic_bsz: ArrayLike,
    accum_steps: ArrayLike = 0,
) -> FloatArray:
    r"""Samples per second: :math:`K m (s + 1) / T_\mathrm{iter}(N, K, m, s)`."""
    k = np.asarray(num_replicas, dtype=np.float64)
    m = np.asarray(atomic_bsz, dtype=np.float64)
    s = np.asarray(accum_steps, dtype=np.float64)
    t = iteration_time(params, num_nodes, num_replicas, atomic_bsz, accum_steps)
    return np.asarray(k * m * (s + 1.0) / t, dtype=np.float64)
