r"""Collaborative filtering: low-rank non-negative completion of the slowdown matrix.

The IASP idea of [G2]_: a sparse job-type :math:`\times` job-type matrix of measured pairwise
slowdowns is completed by a low-rank non-negative factorisation (scikit-learn's
:class:`sklearn.decomposition.NMF`, imported when a model is fitted: install the ``ml`` extra).

References
----------
.. [G2] X. Geng, H. Zhang, Z. Zhao, H. Ma. "Interference-aware parallelization for deep learning
   workload in GPU cluster." Cluster Computing 23, 2020. doi:10.1007/s10586-019-03037-6
.. [3] R. Mazumder, T. Hastie, R. Tibshirani. "Spectral regularization algorithms for learning
   large incomplete matrices." JMLR 11, 2010 (the impute-and-refit scheme used here, with a
   non-negative factorisation in place of the SVD).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.interference._sklearn import require_sklearn
from optsched.interference.baseline import check_observed, observed_means

__all__ = ["COMPLETION_TOL", "MatrixCompletion"]


#: Relative change of the imputed entries below which the completion has converged.
COMPLETION_TOL = 1e-3


class MatrixCompletion:
    r"""Complete a sparse non-negative slowdown matrix by a low-rank NMF (collaborative filtering).

    The model is :math:`\hat S = W H` with :math:`W \in \mathbb{R}_{\ge 0}^{T \times k}` (each
    type's embedding as a *victim*) and :math:`H \in \mathbb{R}_{\ge 0}^{k \times T}` (its
    embedding as an *aggressor*). It is fitted by impute-and-refit [3]_: fill the missing entries
    (first with the additive baseline), fit :class:`sklearn.decomposition.NMF` (warm-started,
    ridge-regularised with ``alpha``) to the filled matrix, replace the missing entries by the
    reconstruction, and repeat until the imputed entries change by less than ``tol`` relative
    to the observed scale. Each refit does not increase the masked objective
    :math:`\sum_{(a,b)\ \text{observed}} (Y_{ab} - (WH)_{ab})^2` plus the ridge penalty, which is
    the usual EM argument.

    With ``rank="auto"`` the rank is chosen from ``candidate_ranks`` (those not above
    :math:`T`) by ``n_folds``-fold cross-validation on the observed entries (smallest mean
    held-out RMSE; ties go to the smaller rank), then refitted on all of them.

    Parameters
    ----------
    rank : int or "auto", default "auto"
    alpha : float, default 1e-3
        Ridge (Frobenius) penalty on both factors, sklearn's ``alpha_W`` with
        ``alpha_H="same"``, ``l1_ratio=0``.
    candidate_ranks : sequence of int, default (1, 2, 3, 4)
    n_folds : int, default 3
    max_iter : int, default 1000
        Impute-and-refit rounds.
    inner_iter : int, default 30
        Coordinate-descent sweeps of NMF per round (the factors are warm-started).
    tol : float, default :data:`COMPLETION_TOL`
    seed : int, default 0
        Seeds the fold split (the NMF initialisation, NNDSVDa, is deterministic).

    Attributes
    ----------
    rank_ : int
        The rank used.
    cv_rmse_ : dict of int to float
        Cross-validated RMSE per candidate rank (empty unless ``rank="auto"``).
    n_iter_ : int
        Rounds of the final fit.
    converged_ : bool
        Whether the final fit met ``tol`` within ``max_iter`` rounds. When it did not, a
        :class:`sklearn.exceptions.ConvergenceWarning` is issued.

    Notes
    -----
    Complexity per round: :math:`O(\text{inner\_iter} \cdot T^2 k)`. A type never observed as a
    victim (empty row) or as an aggressor (empty column) is predicted from the imputed baseline
    only; use :class:`CoLocationRegressor` for such cold-start types.
    """

    def __init__(
        self,
        rank: int | Literal["auto"] = "auto",
        *,
        alpha: float = 1e-3,
        candidate_ranks: Sequence[int] = (1, 2, 3, 4),
        n_folds: int = 3,
        max_iter: int = 1000,
        inner_iter: int = 30,
        tol: float = COMPLETION_TOL,
        seed: int = 0,
    ) -> None:
        if rank != "auto" and (not isinstance(rank, int) or rank < 1):
            raise InvalidInstanceError("rank", f"must be a positive int or 'auto', got {rank!r}")
        if alpha < 0:
            raise InvalidInstanceError("alpha", f"must be >= 0, got {alpha}")
        if not candidate_ranks or min(candidate_ranks) < 1:
            raise InvalidInstanceError("candidate_ranks", "must be non-empty positive ints")
        if n_folds < 2:
            raise InvalidInstanceError("n_folds", f"must be >= 2, got {n_folds}")
        if max_iter < 1 or inner_iter < 1:
            raise InvalidInstanceError("max_iter", "max_iter and inner_iter must be >= 1")
        self.rank = rank
        self.alpha = float(alpha)
        self.candidate_ranks = tuple(int(r) for r in candidate_ranks)
        self.n_folds = int(n_folds)
        self.max_iter = int(max_iter)
        self.inner_iter = int(inner_iter)
        self.tol = float(tol)
        self.seed = int(seed)
        self.rank_: int = 0
        self.cv_rmse_: dict[int, float] = {}
        self.n_iter_: int = 0
        self.converged_: bool = False
        self.factors_: tuple[np.ndarray, np.ndarray] | None = None

    def _fit_rank(self, y: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
        require_sklearn()
        from sklearn.decomposition import NMF
        from sklearn.exceptions import ConvergenceWarning

        seen = ~np.isnan(y)
        missing = ~seen
        mu, rows, cols = observed_means(y)
        x = np.where(seen, y, np.maximum(rows[:, None] + cols[None, :] - mu, 0.0))
        scale = max(float(np.sqrt(np.mean(y[seen] ** 2))), 1e-12)
        w = h = None
        converged = False
        rounds = 0
        for rounds in range(1, self.max_iter + 1):  # noqa: B007 - rounds is reported
            model = NMF(
                n_components=rank,
                init="nndsvda" if w is None else "custom",
                max_iter=self.inner_iter,
                tol=0.0,
                alpha_W=self.alpha,
                alpha_H="same",
                l1_ratio=0.0,
                random_state=self.seed,
            )
            # A round runs a fixed number of warm-started sweeps on purpose (the outer loop
            # decides convergence), so NMF's own "max_iter reached" notice is expected here.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                w = model.fit_transform(x) if w is None else model.fit_transform(x, W=w, H=h)
            h = model.components_
            recon = w @ h
            change = (
                float(np.sqrt(np.mean((recon[missing] - x[missing]) ** 2)))
                if missing.any()
                else 0.0
            )
            x = np.where(seen, y, recon)
            if change <= self.tol * scale:
                converged = True
                break
        assert w is not None and h is not None
        return w, h, rounds, converged

    def fit(self, observed: np.ndarray) -> MatrixCompletion:
        """Fit on a square matrix whose missing entries are NaN; return ``self``.

        Raises
        ------
        InvalidInstanceError
            ``observed`` is not square, has no observed entry, or has a negative entry.
        """
        y = check_observed(observed)
        require_sklearn()
        from sklearn.exceptions import ConvergenceWarning

        rank = self.rank
        self.cv_rmse_ = {}
        if rank != "auto" and rank > len(y):
            raise InvalidInstanceError("rank", f"must be <= the {len(y)} types, got {rank}")
        if rank == "auto":
            rank = self._select_rank(y)
        w, h, rounds, converged = self._fit_rank(y, int(rank))
        self.rank_ = int(rank)
        self.factors_ = (w, h)
        self.n_iter_ = rounds
        self.converged_ = converged
        if not converged:
            warnings.warn(
                f"matrix completion stopped after {rounds} rounds without meeting tol={self.tol}",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _select_rank(self, y: np.ndarray) -> int:
        seen_idx = np.argwhere(~np.isnan(y))
        rng = np.random.default_rng(self.seed)
        folds = rng.permutation(len(seen_idx)) % self.n_folds
        candidates = [r for r in self.candidate_ranks if r <= len(y)] or [1]
        for r in candidates:
            errs = []
            for k in range(self.n_folds):
                held = seen_idx[folds == k]
                train = y.copy()
                train[held[:, 0], held[:, 1]] = np.nan
                if np.isnan(train).all():
                    continue
                w, h, _, _ = self._fit_rank(train, r)
                pred = (w @ h)[held[:, 0], held[:, 1]]
                errs.append(np.mean((pred - y[held[:, 0], held[:, 1]]) ** 2))
            self.cv_rmse_[r] = float(np.sqrt(np.mean(errs))) if errs else float("inf")
        return min(candidates, key=lambda r: (self.cv_rmse_[r], r))

    def predict_matrix(self) -> np.ndarray:
        r"""The completed matrix :math:`W H`, shape (T, T), entries :math:`\ge 0`."""
        if self.factors_ is None:
            raise RuntimeError("call fit() first")
        w, h = self.factors_
        return np.asarray(w @ h)
