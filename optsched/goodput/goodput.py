r"""Goodput: throughput times statistical efficiency (Pollux, OSDI'21, Eq. 4).

.. math::

   \mathrm{GOODPUT}(N, K, m, s) = \mathrm{THROUGHPUT}(N, K, m, s)
       \times \mathrm{EFFICIENCY}\bigl(M = K m (s + 1)\bigr)

in :math:`M_0`-equivalent samples per second: the rate at which a job progresses, measured in
samples of its initial batch size. Dividing by :math:`M_0` gives its progress in
:math:`M_0`-iterations per second, the unit of the artifact's ``progress`` column
(:mod:`optsched.goodput.progress`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from optsched.goodput.efficiency import GradientStats, efficiency
from optsched.goodput.throughput import ThroughputParams, throughput

__all__ = ["GoodputModel"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GoodputModel:
    r"""One job's goodput model: its throughput parameters, gradient statistics and :math:`M_0`.

    Parameters
    ----------
    params : ThroughputParams
        The fitted throughput model.
    stats : GradientStats
        Gradient statistics at the job's current progress.
    init_batch_size : float
        :math:`M_0 > 0`, the batch the job was submitted with (its efficiency is 1 there).
    """

    params: ThroughputParams
    stats: GradientStats
    init_batch_size: float

    def throughput(
        self,
        num_nodes: npt.ArrayLike,
        num_replicas: npt.ArrayLike,
        atomic_bsz: npt.ArrayLike,
        accum_steps: npt.ArrayLike = 0,
    ) -> FloatArray:
        """Samples per second (:func:`~optsched.goodput.throughput.throughput`)."""
        return throughput(self.params, num_nodes, num_replicas, atomic_bsz, accum_steps)

    def efficiency(self, batch_size: npt.ArrayLike) -> FloatArray:
        """Statistical efficiency at global batch ``batch_size``."""
        return efficiency(self.stats, self.init_batch_size, batch_size)

    def goodput(
        self,
        num_nodes: npt.ArrayLike,
        num_replicas: npt.ArrayLike,
        atomic_bsz: npt.ArrayLike,
        accum_steps: npt.ArrayLike = 0,
    ) -> FloatArray:
        r""":math:`\mathrm{THROUGHPUT} \times \mathrm{EFFICIENCY}(K m (s+1))`, broadcast."""
        k = np.asarray(num_replicas, dtype=np.float64)
        m = np.asarray(atomic_bsz, dtype=np.float64)
        s = np.asarray(accum_steps, dtype=np.float64)
        batch = k * m * (s + 1.0)
        tput = self.throughput(num_nodes, num_replicas, atomic_bsz, accum_steps)
        return np.asarray(tput * self.efficiency(batch), dtype=np.float64)
