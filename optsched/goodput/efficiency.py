r"""Statistical efficiency from the gradient noise scale (Pollux, after McCandlish et al.).

Training with a global batch :math:`M` larger than the batch :math:`M_0` a job was tuned for
makes less progress per sample. With the gradient's squared norm :math:`|g|^2` and its
per-sample variance :math:`\operatorname{tr}\Sigma` as measured at batch :math:`M_0`
(``grad_sqr`` and ``grad_var`` in the artifact's traces, the latter already scaled to a batch
of :math:`M_0`), the *preconditioned gradient noise scale* is

.. math::

   \varphi = M_0 \,\frac{\operatorname{tr}\Sigma}{|g|^2}

and Pollux's statistical efficiency (Qiao et al., OSDI'21, Eq. 7) is

.. math::

   \mathrm{EFFICIENCY}(M) = \frac{\varphi + M_0}{\varphi + M} \in (0, 1] \quad (M \ge M_0):

one sample of a batch :math:`M` is worth :math:`\mathrm{EFFICIENCY}(M)` samples of a batch
:math:`M_0`. Equivalently, with the *gain* :math:`r = M/M_0` and
:math:`G = (\operatorname{tr}\Sigma + |g|^2) / (\operatorname{tr}\Sigma / r + |g|^2)`, an
iteration at :math:`M` is worth :math:`G` iterations at :math:`M_0` and
:math:`\mathrm{EFFICIENCY} = G / r`. The noise scale grows as training goes on (the gradient
shrinks faster than its noise), so a job's best batch grows with its progress; the artifact's
``validation-<M>.csv`` traces measure :math:`|g|^2` and :math:`\operatorname{tr}\Sigma` per
epoch (:mod:`optsched.goodput.progress`).

References
----------
.. [1] A. Qiao et al. "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
   Learning." OSDI 2021, §3.1.
.. [2] S. McCandlish, J. Kaplan, D. Amodei and the OpenAI Dota Team. "An Empirical Model of
   Large-Batch Training." arXiv:1812.06162, 2018.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError

__all__ = ["GradientStats", "efficiency", "gain", "noise_scale"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GradientStats:
    r"""Gradient statistics at the initial batch :math:`M_0`.

    Parameters
    ----------
    sqr : float
        :math:`|g|^2 \ge 0`, the squared norm of the true gradient.
    var : float
        :math:`\operatorname{tr}\Sigma \ge 0`, the gradient variance at batch :math:`M_0`.

    Notes
    -----
    When both are 0 (nothing measured) the efficiency is 1 at every batch.
    """

    sqr: float
    var: float

    def __post_init__(self) -> None:
        for name in ("sqr", "var"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidInstanceError(name, f"must be a finite number >= 0, got {value!r}")


def noise_scale(stats: GradientStats, init_batch_size: float) -> float:
    r""":math:`\varphi = M_0 \operatorname{tr}\Sigma / |g|^2` (infinite when :math:`|g|^2 = 0`)."""
    if stats.sqr == 0:
        return math.inf
    return init_batch_size * stats.var / stats.sqr


def gain(stats: GradientStats, init_batch_size: float, batch_size: npt.ArrayLike) -> FloatArray:
    r"""Iterations at :math:`M_0` one iteration at :math:`M` is worth, :math:`G(M) \in [1, M/M_0]`.

    :math:`G = (\operatorname{tr}\Sigma + |g|^2)/(\operatorname{tr}\Sigma\, M_0/M + |g|^2)`, and
    1 when both statistics are 0.
    """
    if init_batch_size <= 0:
        raise InvalidInstanceError("init_batch_size", "must be > 0")
    scale = np.asarray(batch_size, dtype=np.float64) / init_batch_size
    if np.any(scale <= 0):
        raise InvalidInstanceError("batch_size", "must be > 0")
    denom = stats.var / scale + stats.sqr
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denom > 0, (stats.var + stats.sqr) / np.where(denom > 0, denom, 1.0), 1.0)
    return np.asarray(out, dtype=np.float64)


def efficiency(
    stats: GradientStats, init_batch_size: float, batch_size: npt.ArrayLike
) -> FloatArray:
    r""":math:`\mathrm{EFFICIENCY}(M) = G(M)\, M_0 / M = (\varphi + M_0)/(\varphi + M)`.

    Parameters
    ----------
    stats : GradientStats
        At the job's current progress.
    init_batch_size : float
        :math:`M_0 > 0`.
    batch_size : array_like
        Global batch :math:`M > 0` (usually :math:`\ge M_0`, where the efficiency is
        :math:`\le 1`).
    """
    scale = np.asarray(batch_size, dtype=np.float64) / init_batch_size
    return np.asarray(gain(stats, init_batch_size, batch_size) / scale, dtype=np.float64)
