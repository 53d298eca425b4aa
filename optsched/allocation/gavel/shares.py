r"""The reference shares the fairness objectives normalise by.

* **Proportional share** (max-min fairness): every job gets the same slice of every GPU type,
  scaled so that it is busy all the time, :math:`\tilde X_{mj} = n_j / \sum_{j'} n_{j'}`, and its
  throughput there, :math:`p_m = \sum_j T_{mj} \tilde X_{mj}`.
* **Isolated share** (finish-time fairness): job :math:`m` gets :math:`1/M` of every type's GPUs,
  i.e. :math:`\hat X_{mj} = n_j / (M s_m)`, scaled down so that :math:`\sum_j \hat X_{mj} \le 1`;
  its throughput there is :math:`q_m = \sum_j T_{mj} \hat X_{mj}`.

These are the definitions of Gavel's policies (Narayanan et al., OSDI 2020, and its public
``ProportionalPolicy``/``IsolatedPolicy``), so that objective values can be compared with it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["isolated_share", "isolated_throughput", "proportional_throughput"]


def proportional_throughput(
    throughputs: NDArray[np.float64], capacities: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:math:`p_m`, the throughput of each job under the equal proportional share."""
    total = capacities.sum()
    if total <= 0:
        return np.zeros(throughputs.shape[0])
    return throughputs @ (capacities / total)


def isolated_share(
    scale_factors: NDArray[np.float64], capacities: NDArray[np.float64]
) -> NDArray[np.float64]:
    r""":math:`\hat X`, shape (jobs, types)."""
    m = scale_factors.size
    x = (capacities[None, :] / m) / scale_factors[:, None]
    rows = np.maximum(x.sum(axis=1), 1.0)
    return x / rows[:, None]


def isolated_throughput(
    throughputs: NDArray[np.float64],
    scale_factors: NDArray[np.float64],
    capacities: NDArray[np.float64],
) -> NDArray[np.float64]:
    """:math:`q_m`, the throughput of each job under its isolated share."""
    return np.einsum("mj,mj->m", throughputs, isolated_share(scale_factors, capacities))
