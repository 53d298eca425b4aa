r"""The reward network's inference: :math:`\hat S(a, n)` in NumPy (no JAX, no sampling).

The model of :mod:`optsched.harmony.reward` (its notes give the formula): a fitted
:class:`RewardNet` predicts the slowdown of a job of type :math:`a` beside co-runners counted
per type :math:`n`. The policy network reads it (:func:`optsched.harmony.network.predictor`)
when a checkpoint carries one; fitting it (:func:`optsched.harmony.reward.fit_reward_net`)
needs the ``rl`` extra and the placement rules that generate its samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from optsched.harmony.world import HarmonyWorld

__all__ = ["PARAM_NAMES", "RewardNet", "RewardSamples", "model_inputs"]

#: The parameters of the network, in order (the layers of the formula).
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


@dataclass(frozen=True, eq=False)
class RewardSamples:
    """Observed (job type, neighbour counts) -> slowdown samples.

    Attributes
    ----------
    types : numpy.ndarray of int, shape (n,)
    counts : numpy.ndarray, shape (n, T)
        Co-runner jobs per type on the server.
    slowdowns : numpy.ndarray, shape (n,)
        Measured slowdown (truth times noise).
    """

    types: np.ndarray
    counts: np.ndarray
    slowdowns: np.ndarray

    def __len__(self) -> int:
        return len(self.types)


def model_inputs(types: np.ndarray, counts: np.ndarray, n_types: int) -> np.ndarray:
    r"""The network's input :math:`x = [e_a, n/4, (e_a \otimes n)/4]`, one row per sample."""
    onehot = np.eye(n_types)[types]
    cross = (onehot[:, :, None] * counts[:, None, :]).reshape(len(types), -1)
    return np.concatenate([onehot, counts / 4.0, cross / 4.0], axis=1).astype(np.float32)


class RewardNet:
    """A fitted reward network (NumPy inference).

    Parameters
    ----------
    params : mapping of str to numpy.ndarray
    n_types : int
    meta : mapping, optional
        Fitting record (held-out errors, samples, seconds).
    """

    def __init__(
        self, params: Mapping[str, np.ndarray], n_types: int, meta: Mapping[str, Any] | None = None
    ) -> None:
        self.params = {k: np.asarray(params[k], dtype=np.float32) for k in PARAM_NAMES}
        self.n_types = n_types
        self.meta = dict(meta or {})
        self._cache: dict[tuple[int, bytes], float] = {}

    def predict(self, types: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Predicted slowdowns, shape (n,)."""
        p = self.params
        x = model_inputs(np.asarray(types, dtype=np.int64), np.asarray(counts), self.n_types)
        z = np.tanh(np.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
        return np.logaddexp(0.0, (z @ p["w3"])[:, 0] + p["b3"][0]).astype(np.float64)

    def slowdown(self, job_type: int, partner_counts: np.ndarray) -> float:
        """The :data:`~optsched.harmony.world.SlowdownFn` of this model (memoised)."""
        key = (int(job_type), np.asarray(partner_counts, dtype=np.float64).tobytes())
        if key not in self._cache:
            self._cache[key] = float(self.predict(np.array([job_type]), partner_counts[None])[0])
        return self._cache[key]

    def errors(self, samples: RewardSamples, world: HarmonyWorld) -> dict[str, float]:
        """Mean absolute error against the *true* slowdown and speed on ``samples``."""
        pred = self.predict(samples.types, samples.counts)
        truth = np.array(
            [
                world.true_slowdown(int(a), b)
                for a, b in zip(samples.types, samples.counts, strict=True)
            ]
        )
        return {
            "mae_slowdown": float(np.mean(np.abs(pred - truth))),
            "mae_speed": float(np.mean(np.abs(1 / (1 + pred) - 1 / (1 + truth)))),
            "samples": len(samples),
        }
