"""Side-by-side evaluation of the predictors on held-out entries of one ground truth."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.interference.baseline import MeanBaseline, prediction_errors
from optsched.interference.completion import MatrixCompletion
from optsched.interference.regression import CoLocationRegressor
from optsched.interference.truth import CoLocationSamples, InterferenceTruth

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PredictorScore", "PredictorScores", "compare_predictors"]


@dataclass(frozen=True)
class PredictorScore:
    """Held-out error of one predictor against the ground truth.

    Parameters
    ----------
    name : str
    rmse, mae, max_error : float
        On the held-out entries (those not observed).
    cold_rmse : float or None
        RMSE on the pairs among held-out types (types with no measurement at all); ``None`` for
        predictors that cannot predict unseen types.
    """

    name: str
    rmse: float
    mae: float
    max_error: float
    cold_rmse: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "name": self.name,
            "rmse": self.rmse,
            "mae": self.mae,
            "max_error": self.max_error,
            "cold_rmse": self.cold_rmse,
        }


class PredictorScores(list[PredictorScore]):
    """The scores of :func:`compare_predictors`: a list, with one table row per predictor."""

    def to_frame(self) -> pd.DataFrame:
        """One row per predictor: ``name``, ``rmse``, ``mae``, ``max_error``, ``cold_rmse``."""
        import pandas as pd

        columns = ["name", "rmse", "mae", "max_error", "cold_rmse"]
        return pd.DataFrame([s.to_dict() for s in self], columns=columns)

    def __repr__(self) -> str:
        best = min(self, key=lambda s: s.rmse).name if self else "-"
        return f"PredictorScores({len(self)} predictors, lowest held-out RMSE: {best})"


def compare_predictors(
    truth: InterferenceTruth,
    *,
    fraction: float = 0.3,
    noise: float = 0.05,
    profile_noise: float = 0.03,
    n_samples: int = 600,
    cold_types: int = 0,
    regressors: Sequence[Literal["gbr", "mlp"]] = ("gbr",),
    rank: int | Literal["auto"] = "auto",
    seed: int = 0,
) -> PredictorScores:
    r"""Score the baselines and the learned predictors on held-out entries of one ground truth.

    The observed matrix is :meth:`InterferenceTruth.observe_pairs` over the first
    :math:`T - \text{cold\_types}` types; the held-out entries are the unobserved ones among
    them, scored against the noise-free truth. The regressors train on
    :meth:`InterferenceTruth.sample_colocations` (``n_samples`` groups of 1-3 co-runners drawn
    from the same warm types) plus the observed pairs, with profiles measured with
    ``profile_noise``; their ``cold_rmse`` is scored on all pairs among the ``cold_types``
    unseen types, where the only other applicable predictor is the global mean.

    Returns
    -------
    PredictorScores
        A list of :class:`PredictorScore` with :meth:`~PredictorScores.to_frame`, in the order:
        global, row, column and additive means, matrix completion, then one entry per regressor
        (``regression-gbr``, ``regression-mlp``).
    """
    n_warm = truth.n_types - cold_types
    if not 1 <= n_warm <= truth.n_types or cold_types < 0:
        raise InvalidInstanceError("cold_types", f"must be in [0, {truth.n_types - 1}]")
    full = truth.pairwise_slowdowns()
    warm = InterferenceTruth(
        profiles=truth.profiles[:n_warm],
        standalone_times=truth.standalone_times[:n_warm],
        weights=truth.weights,
        overflow=truth.overflow,
    )
    observed = warm.observe_pairs(fraction, noise, seed=seed)
    held = np.isnan(observed)
    if not held.any():
        raise InvalidInstanceError("fraction", "leaves no held-out entry to score")
    target = full[:n_warm, :n_warm]
    cold = np.zeros_like(full, dtype=bool)
    cold[n_warm:, n_warm:] = True
    scores = PredictorScores()
    mu = float(np.nanmean(observed))
    kinds: tuple[Literal["global", "row", "column", "additive"], ...] = (
        "global",
        "row",
        "column",
        "additive",
    )
    for kind in kinds:
        pred = MeanBaseline(kind).fit(observed).predict_matrix()
        e = prediction_errors(pred, target, held)
        cold_rmse = (
            prediction_errors(np.full_like(full, mu), full, cold)["rmse"]
            if kind == "global" and cold_types
            else None
        )
        scores.append(PredictorScore(f"mean-{kind}", e["rmse"], e["mae"], e["max"], cold_rmse))
    completion = MatrixCompletion(rank=rank, seed=seed).fit(observed)
    e = prediction_errors(completion.predict_matrix(), target, held)
    scores.append(
        PredictorScore(f"completion-nmf(rank={completion.rank_})", e["rmse"], e["mae"], e["max"])
    )
    profiles = truth.measured_profiles(profile_noise, seed=seed + 1)
    groups = warm.sample_colocations(n_samples, noise=noise, seed=seed + 2)
    pairs = np.argwhere(~held)
    samples = CoLocationSamples(
        job_types=np.concatenate([groups.job_types, pairs[:, 0]]),
        partners=groups.partners + tuple((int(b),) for b in pairs[:, 1]),
        slowdowns=np.concatenate([groups.slowdowns, observed[~held]]),
    )
    for name in regressors:
        reg = CoLocationRegressor(name, seed=seed).fit(profiles[:n_warm], samples)
        pred = reg.predict_matrix(profiles)
        e = prediction_errors(pred[:n_warm, :n_warm], target, held)
        cold_rmse = prediction_errors(pred, full, cold)["rmse"] if cold_types else None
        scores.append(
            PredictorScore(f"regression-{name}", e["rmse"], e["mae"], e["max"], cold_rmse)
        )
    return scores
