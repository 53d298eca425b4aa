r"""From pairwise slowdowns between job types to the placement coefficients :math:`\kappa`.

Their output feeds the Harmony-style interference objective of the placement family [2]_
(:meth:`optsched.placement.PlacementInstance.with_interference`).

References
----------
.. [2] Y. Bao, Y. Peng, C. Wu. "Deep learning-based job placement in distributed machine learning
   clusters." IEEE INFOCOM 2019. doi:10.1109/INFOCOM.2019.8737460
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optsched.errors import InvalidInstanceError

__all__ = ["interference_matrix"]


def interference_matrix(
    type_slowdowns: np.ndarray,
    job_types: Sequence[int],
    standalone_times: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    r"""The placement coefficients :math:`\kappa` (jobs :math:`\times` jobs) for a list of jobs.

    .. math::

        \kappa_{jk} = \begin{cases} c_j\, \hat S_{\tau_j \tau_k} & j \ne k \\ 0 & j = k
        \end{cases}

    where :math:`\tau_j` is job :math:`j`'s type, :math:`\hat S` a (predicted or true) pairwise
    slowdown matrix over types, and :math:`c_j = 1` (relative slowdown, dimensionless) or
    :math:`c_j = t^0_j` when ``standalone_times`` are given (seconds per iteration, the unit of
    the Harmony ILP objective :math:`t^0_j + \sum_{h} \sum_{k \ne j} \kappa_{jk} q_{jkh}`). Two
    jobs of the same type use the diagonal entry :math:`\hat S_{\tau\tau}`.

    Parameters
    ----------
    type_slowdowns : numpy.ndarray, shape (T, T)
        Non-negative pairwise slowdowns between types (negative predictions are clipped to 0).
    job_types : sequence of int, length J
        Each job's type.
    standalone_times : sequence of float, length J, optional
        Each job's standalone iteration time.

    Returns
    -------
    numpy.ndarray, shape (J, J)
        :math:`\kappa \ge 0` with a zero diagonal.

    Raises
    ------
    InvalidInstanceError
        Bad shapes, a type out of range, a non-finite slowdown or a non-positive time.
    """
    s = np.asarray(type_slowdowns, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise InvalidInstanceError("type_slowdowns", f"must be square, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise InvalidInstanceError("type_slowdowns", "must be finite (complete the matrix first)")
    types = np.asarray(job_types, dtype=np.int64)
    if types.ndim != 1:
        raise InvalidInstanceError("job_types", "must be a flat sequence")
    for i, t in enumerate(types):
        if not 0 <= t < len(s):
            raise InvalidInstanceError(f"job_types[{i}]", f"must be in [0, {len(s)}), got {t}")
    kappa = np.maximum(s[np.ix_(types, types)], 0.0)
    if standalone_times is not None:
        t0 = np.asarray(standalone_times, dtype=np.float64)
        if t0.shape != types.shape:
            raise InvalidInstanceError(
                "standalone_times", f"must have {len(types)} entries, got {t0.shape}"
            )
        bad = np.flatnonzero(~np.isfinite(t0) | (t0 <= 0))
        if bad.size:
            raise InvalidInstanceError(f"standalone_times[{bad[0]}]", "must be finite and > 0")
        kappa = kappa * t0[:, None]
    np.fill_diagonal(kappa, 0.0)
    return kappa
