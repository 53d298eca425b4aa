r"""Mean baselines of a partly observed slowdown matrix, and the prediction errors.

:class:`MeanBaseline` predicts every entry by the global, row, column or additive (row + column)
mean of the observed entries; :func:`prediction_errors` scores any prediction against the truth
on the held-out entries.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from optsched.errors import InvalidInstanceError

__all__ = ["MeanBaseline", "check_observed", "observed_means", "prediction_errors"]


def check_observed(observed: object) -> np.ndarray:
    """A square float matrix with NaN for missing entries and finite, non-negative others.

    Raises
    ------
    InvalidInstanceError
        Not square, nothing observed, or an observed entry negative or infinite.
    """
    y = np.array(observed, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] != y.shape[1] or y.shape[0] < 1:
        raise InvalidInstanceError("observed", f"must be a square matrix, got shape {y.shape}")
    seen = ~np.isnan(y)
    if not seen.any():
        raise InvalidInstanceError("observed", "has no observed (non-NaN) entry")
    if not np.all(np.isfinite(y[seen])) or y[seen].min() < 0:
        raise InvalidInstanceError("observed", "observed entries must be finite and >= 0")
    return y


def observed_means(y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Global, row and column means of the observed entries (empty rows/columns: global)."""
    seen = ~np.isnan(y)
    mu = float(np.mean(y[seen]))
    vals = np.where(seen, y, 0.0)
    rows = np.divide(vals.sum(1), seen.sum(1), out=np.full(len(y), mu), where=seen.sum(1) > 0)
    cols = np.divide(vals.sum(0), seen.sum(0), out=np.full(len(y), mu), where=seen.sum(0) > 0)
    return mu, rows, cols


class MeanBaseline:
    r"""Mean predictors of a sparse slowdown matrix.

    ============ ==============================================================
    ``kind``     prediction :math:`\hat S_{ab}`
    ============ ==============================================================
    ``global``   :math:`\mu`, the mean of all observed entries
    ``row``      :math:`\bar r_a`, the mean of row :math:`a`'s observed entries
    ``column``   :math:`\bar c_b`, the mean of column :math:`b`'s observed entries
    ``additive`` :math:`\max(0, \bar r_a + \bar c_b - \mu)`
    ============ ==============================================================

    A row or column without observations falls back to :math:`\mu`.

    Parameters
    ----------
    kind : {"global", "row", "column", "additive"}, default "global"
    """

    def __init__(self, kind: Literal["global", "row", "column", "additive"] = "global") -> None:
        if kind not in ("global", "row", "column", "additive"):
            raise InvalidInstanceError("kind", f"unknown baseline {kind!r}")
        self.kind = kind
        self.matrix_: np.ndarray | None = None

    def fit(self, observed: np.ndarray) -> MeanBaseline:
        """Fit on a square matrix whose missing entries are NaN; return ``self``."""
        y = check_observed(observed)
        mu, rows, cols = observed_means(y)
        n = len(y)
        if self.kind == "global":
            pred = np.full((n, n), mu)
        elif self.kind == "row":
            pred = np.repeat(rows[:, None], n, axis=1)
        elif self.kind == "column":
            pred = np.repeat(cols[None, :], n, axis=0)
        else:
            pred = np.maximum(rows[:, None] + cols[None, :] - mu, 0.0)
        self.matrix_ = pred
        return self

    def predict_matrix(self) -> np.ndarray:
        """The predicted full matrix, shape (T, T)."""
        if self.matrix_ is None:
            raise RuntimeError("call fit() first")
        return self.matrix_.copy()


def prediction_errors(
    predicted: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None
) -> dict[str, float]:
    r"""Root-mean-square, mean absolute and maximum error on the entries where ``mask`` is True.

    Parameters
    ----------
    predicted, truth : numpy.ndarray, same shape
    mask : numpy.ndarray of bool, optional
        Entries to score (default all); typically the held-out (unobserved) entries.

    Returns
    -------
    dict
        ``{"rmse": ..., "mae": ..., "max": ..., "n": ...}``.
    """
    p = np.asarray(predicted, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    if p.shape != t.shape:
        raise InvalidInstanceError("predicted", f"shape {p.shape} differs from truth {t.shape}")
    m = np.ones(p.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if m.shape != p.shape or not m.any():
        raise InvalidInstanceError("mask", "must have the matrix's shape and select an entry")
    err = p[m] - t[m]
    return {
        "rmse": float(np.sqrt(np.mean(err**2))),
        "mae": float(np.mean(np.abs(err))),
        "max": float(np.max(np.abs(err))),
        "n": int(m.sum()),
    }
