r"""Co-location regression: a job's slowdown from its own and its co-runners' profiles.

The IAPP idea of [G3]_: a regressor (scikit-learn's gradient boosting or a multi-layer perceptron,
imported when a model is fitted: install the ``ml`` extra) maps profiled features of a job and of
its co-runners to its slowdown, so it also predicts job types never measured together or never
seen at all.

References
----------
.. [G3] X. Geng, H. Zhang, Z. Zhao, H. Ma. "Interference-aware parallelization for deep learning
   workload in GPU cluster." Cluster Computing 23, 2020. doi:10.1007/s10586-019-03037-6
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.interference._sklearn import require_sklearn
from optsched.interference.truth import CoLocationSamples

__all__ = ["CoLocationRegressor", "colocation_features"]


def colocation_features(
    profiles: np.ndarray, job_types: Sequence[int] | np.ndarray, partners: Sequence[Sequence[int]]
) -> np.ndarray:
    r"""Feature rows of the co-location regressor.

    For a job of type :math:`a` beside co-runners :math:`B`, with measured profiles
    :math:`f`, the row is :math:`[f_a,\ F_B,\ f_a \odot F_B,\ |B|]` where
    :math:`F_B = \sum_{b \in B} f_b` is the co-runners' summed load: the job's own pressure, the
    pressure it meets, their per-resource interaction, and the number of co-runners.

    Parameters
    ----------
    profiles : numpy.ndarray, shape (T, R)
        Measured profiles (:meth:`InterferenceTruth.measured_profiles`).
    job_types : sequence of int, length n
    partners : sequence of sequence of int, length n

    Returns
    -------
    numpy.ndarray, shape (n, 3R + 1)
    """
    f = np.asarray(profiles, dtype=np.float64)
    a = np.asarray(job_types, dtype=np.int64)
    if len(a) != len(partners):
        raise InvalidInstanceError("partners", "must have one entry per job")
    load = np.array([f[list(b)].sum(axis=0) if len(b) else np.zeros(f.shape[1]) for b in partners])
    own = f[a]
    count = np.array([[len(b)] for b in partners], dtype=np.float64)
    return np.hstack([own, load, own * load, count])


class CoLocationRegressor:
    r"""Predict a job's co-located slowdown from profiled features (the IAPP idea).

    Learns :math:`g(x) \approx S_a(B)` with :math:`x` = :func:`colocation_features`, using a
    gradient-boosted tree ensemble (``model="gbr"``,
    :class:`sklearn.ensemble.GradientBoostingRegressor`) or a two-layer perceptron on
    standardised features (``model="mlp"``, :class:`sklearn.neural_network.MLPRegressor`).
    Unlike :class:`MatrixCompletion` it predicts
    for types that were never measured (cold start), given their profiles.

    Parameters
    ----------
    model : {"gbr", "mlp"}, default "gbr"
    seed : int, default 0
        ``random_state`` of the estimator.
    **params
        Passed to the estimator (e.g. ``n_estimators`` or ``hidden_layer_sizes``).
    """

    def __init__(self, model: Literal["gbr", "mlp"] = "gbr", *, seed: int = 0, **params: object):
        if model not in ("gbr", "mlp"):
            raise InvalidInstanceError("model", f"unknown regressor {model!r}; use 'gbr' or 'mlp'")
        self.model = model
        self.seed = int(seed)
        self.params = dict(params)
        self.estimator_: Any = None

    def _make(self) -> Any:
        require_sklearn()
        if self.model == "gbr":
            from sklearn.ensemble import GradientBoostingRegressor

            kwargs: dict[str, object] = {"n_estimators": 300, "max_depth": 3, "learning_rate": 0.05}
            kwargs.update(self.params)
            return GradientBoostingRegressor(random_state=self.seed, **kwargs)
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        kwargs = {"hidden_layer_sizes": (64, 64), "alpha": 1e-3, "max_iter": 3000}
        kwargs.update(self.params)
        return make_pipeline(StandardScaler(), MLPRegressor(random_state=self.seed, **kwargs))

    def fit(self, profiles: np.ndarray, samples: CoLocationSamples) -> CoLocationRegressor:
        """Fit on measured co-locations; ``profiles`` are the measured type profiles."""
        if len(samples) < 2:
            raise InvalidInstanceError("samples", "need at least 2 samples")
        n_types = len(profiles)
        used = [int(samples.job_types.max()), *(max(b) for b in samples.partners if b)]
        if max(used) >= n_types:
            raise InvalidInstanceError(
                "samples", f"refer to type {max(used)} but profiles has {n_types} rows"
            )
        x = colocation_features(profiles, samples.job_types, samples.partners)
        est = self._make()
        est.fit(x, np.asarray(samples.slowdowns, dtype=np.float64))
        self.estimator_ = est
        return self

    def predict(
        self,
        profiles: np.ndarray,
        job_types: Sequence[int] | np.ndarray,
        partners: Sequence[Sequence[int]],
    ) -> np.ndarray:
        r"""Predicted slowdowns :math:`\hat S_a(B) \ge 0` (clipped at 0), one per job."""
        if self.estimator_ is None:
            raise RuntimeError("call fit() first")
        x = colocation_features(profiles, job_types, partners)
        return np.maximum(self.estimator_.predict(x), 0.0)

    def predict_matrix(self, profiles: np.ndarray) -> np.ndarray:
        r"""Predicted pairwise matrix :math:`\hat S_{ab} = \hat S_a(\{b\})` for every type pair.

        Parameters
        ----------
        profiles : numpy.ndarray, shape (T, R)
            Measured profiles of the types to predict for (may include unseen types).
        """
        n = len(profiles)
        a, b = np.divmod(np.arange(n * n), n)
        return self.predict(profiles, a, [(int(v),) for v in b]).reshape(n, n)
