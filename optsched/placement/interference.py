r"""Interference predictors: synthetic ground truth, matrix completion and co-location regression.

Co-located training jobs slow each other down through shared resources (GPU compute, memory
bandwidth, the PCIe bus, the host NIC). Placement models need the slowdowns as numbers: the
Harmony interference ILP and the CLWP/NLWP heuristics take a pairwise coefficient matrix
:math:`\kappa` whose entry :math:`\kappa_{ab} \ge 0` is the slowdown job :math:`a` suffers per
server it shares with job :math:`b`. This module produces :math:`\kappa` from data the way the
interference-aware parallelization paper [1]_ does, with two predictors:

* **Matrix completion** (the IASP idea, collaborative filtering): a sparse
  job-type :math:`\times` job-type matrix of measured pairwise slowdowns is completed by a
  low-rank non-negative factorisation (:class:`MatrixCompletion`).
* **Co-location regression** (the IAPP idea): a regressor maps profiled features of a job and of
  its co-runners to its slowdown, so it also predicts job types never measured together or never
  seen at all (:class:`CoLocationRegressor`).

Their output feeds the Harmony-style interference ILP [2]_. Both are evaluated against a
**known ground truth** (:class:`InterferenceTruth`): seeded job types
with latent resource profiles and an explicit slowdown function, so held-out error is measured
against the truth, not against noisy measurements. The baselines are the global, row, column and
additive (row + column) means of the observed entries (:class:`MeanBaseline`).

The learning is done by scikit-learn (:class:`sklearn.decomposition.NMF`,
:class:`sklearn.ensemble.GradientBoostingRegressor`, :class:`sklearn.neural_network.MLPRegressor`);
this module adds the data model, the missing-entry handling and the evaluation.

References
----------
.. [1] X. Geng, H. Zhang, Z. Zhao, H. Ma. "Interference-aware parallelization for deep learning
   workload in GPU cluster." Cluster Computing 23, 2020. doi:10.1007/s10586-019-03037-6
.. [2] Y. Bao, Y. Peng, C. Wu. "Deep learning-based job placement in distributed machine learning
   clusters." IEEE INFOCOM 2019. doi:10.1109/INFOCOM.2019.8737460
.. [3] R. Mazumder, T. Hastie, R. Tibshirani. "Spectral regularization algorithms for learning
   large incomplete matrices." JMLR 11, 2010 (the impute-and-refit scheme used here, with a
   non-negative factorisation in place of the SVD).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from optsched.errors import InvalidInstanceError

__all__ = [
    "DEFAULT_WEIGHTS",
    "RESOURCES",
    "CoLocationRegressor",
    "CoLocationSamples",
    "InterferenceTruth",
    "MatrixCompletion",
    "MeanBaseline",
    "PredictorScore",
    "colocation_features",
    "compare_predictors",
    "generate_interference_truth",
    "interference_matrix",
    "prediction_errors",
]

#: The latent resources of a job type, in the column order of every profile matrix.
RESOURCES: tuple[str, ...] = ("compute", "memory_bandwidth", "pcie", "network")

#: Default contention weights :math:`w_r` of the ground-truth slowdown, one per resource.
DEFAULT_WEIGHTS: tuple[float, ...] = (0.2, 0.25, 0.15, 0.25)

#: Default weight :math:`\gamma` of the over-subscription term of the ground truth.
DEFAULT_OVERFLOW = 0.8

#: Relative change of the imputed entries below which the completion has converged.
COMPLETION_TOL = 1e-3

#: Archetype resource profiles of the job families of the generator (rows follow
#: :data:`RESOURCES`); job types are drawn around them. They stand for compute-bound vision models,
#: memory-bound language models, input-pipeline (PCIe) heavy jobs and communication-heavy
#: parameter-server jobs.
_ARCHETYPES = np.array(
    [
        [0.85, 0.35, 0.20, 0.25],
        [0.45, 0.85, 0.25, 0.30],
        [0.35, 0.30, 0.80, 0.35],
        [0.30, 0.30, 0.35, 0.85],
        [0.60, 0.60, 0.50, 0.55],
    ]
)


def _as_float_matrix(value: object, name: str, shape: tuple[int | None, ...]) -> np.ndarray:
    arr = np.array(value, dtype=np.float64)
    if arr.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(arr.shape, shape, strict=True)
    ):
        raise InvalidInstanceError(name, f"must have shape {shape}, got {arr.shape}")
    return arr


# --------------------------------------------------------------------------------------------
# Ground truth
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CoLocationSamples:
    """Measured co-locations: job ``job_types[i]`` ran beside ``partners[i]``.

    Parameters
    ----------
    job_types : numpy.ndarray of int, shape (n,)
        The measured job's type.
    partners : tuple of tuple of int
        The types of its co-runners on the same server (a multiset, non-empty).
    slowdowns : numpy.ndarray of float, shape (n,)
        Measured relative slowdown :math:`t/t^0 - 1` (noisy when the samples are measurements).
    """

    job_types: np.ndarray
    partners: tuple[tuple[int, ...], ...]
    slowdowns: np.ndarray

    def __len__(self) -> int:
        return len(self.partners)


@dataclass(frozen=True, eq=False)
class InterferenceTruth:
    r"""Known interference of a set of job types (the synthetic ground truth).

    Job type :math:`a` has a latent resource profile :math:`p_a \in [0, 1]^R` over
    :data:`RESOURCES` (the fraction of a server's compute, memory bandwidth, PCIe and NIC
    capacity it uses alone) and a standalone iteration time :math:`t^0_a`. Run beside the
    multiset :math:`B` of co-runners, whose summed load is :math:`L_r(B) = \sum_{b \in B} p_{br}`,
    its iteration time is :math:`t^0_a (1 + S_a(B))` with relative slowdown

    .. math::

        S_a(B) = \sum_r w_r\, p_{ar} L_r(B)
                 + \gamma \sum_r p_{ar} \bigl(p_{ar} + L_r(B) - 1\bigr)_+^2 .

    The first term is contention proportional to how much each job uses a resource; the second
    charges over-subscription (total demand above capacity 1), weighted by how much :math:`a`
    depends on that resource. The pairwise matrix is :math:`S_{ab} = S_a(\{b\})`; its bilinear
    part :math:`P \operatorname{diag}(w) P^\top` has rank at most :math:`R`, so the matrix is
    close to low rank, which is what collaborative filtering exploits.

    Properties (tested): :math:`S_a(\emptyset) = 0`; :math:`S \ge 0`; :math:`S_a` is monotone in
    :math:`B`; and it is **superadditive**, :math:`S_a(B \cup C) \ge S_a(B) + S_a(C)`, because
    :math:`x \mapsto (p + x - 1)_+^2` is convex and vanishes at 0 for :math:`p \le 1`. Hence the
    pairwise-additive model of the placement ILP, :math:`\sum_{b \in B} \kappa_{ab}`, never
    overestimates the true slowdown of a larger group.

    Parameters
    ----------
    profiles : array_like, shape (T, R)
        Latent profiles :math:`p_a`, entries in [0, 1].
    standalone_times : array_like, shape (T,)
        :math:`t^0_a > 0`, seconds per iteration alone.
    weights : array_like, shape (R,)
        Contention weights :math:`w_r \ge 0`.
    overflow : float
        :math:`\gamma \ge 0`.
    families : array_like of int, shape (T,), optional
        The archetype each type was drawn around (informational).
    names : sequence of str, optional
        Type names; default ``type0, type1, ...``.

    Raises
    ------
    InvalidInstanceError
        A field has the wrong shape or a value out of range (the message names it).
    """

    profiles: np.ndarray
    standalone_times: np.ndarray
    weights: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_WEIGHTS))
    overflow: float = DEFAULT_OVERFLOW
    families: np.ndarray | None = None
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        profiles = _as_float_matrix(self.profiles, "profiles", (None, len(RESOURCES)))
        n = profiles.shape[0]
        if n < 1:
            raise InvalidInstanceError("profiles", "must have at least one job type")
        if not np.all(np.isfinite(profiles)) or profiles.min() < 0 or profiles.max() > 1:
            raise InvalidInstanceError("profiles", "entries must lie in [0, 1]")
        times = _as_float_matrix(self.standalone_times, "standalone_times", (n,))
        if not np.all(np.isfinite(times)) or times.min() <= 0:
            raise InvalidInstanceError("standalone_times", "must be finite and > 0")
        weights = _as_float_matrix(self.weights, "weights", (len(RESOURCES),))
        if not np.all(np.isfinite(weights)) or weights.min() < 0:
            raise InvalidInstanceError("weights", "must be finite and >= 0")
        if not np.isfinite(self.overflow) or self.overflow < 0:
            raise InvalidInstanceError("overflow", f"must be finite and >= 0, got {self.overflow}")
        families = None
        if self.families is not None:
            families = np.array(self.families, dtype=np.int64)
            if families.shape != (n,):
                raise InvalidInstanceError("families", f"must have shape ({n},)")
        names = tuple(self.names) if self.names else tuple(f"type{i}" for i in range(n))
        if len(names) != n:
            raise InvalidInstanceError("names", f"must have {n} entries, got {len(names)}")
        for arr in (profiles, times, weights):
            arr.setflags(write=False)
        object.__setattr__(self, "profiles", profiles)
        object.__setattr__(self, "standalone_times", times)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "overflow", float(self.overflow))
        object.__setattr__(self, "families", families)
        object.__setattr__(self, "names", names)

    @property
    def n_types(self) -> int:
        """Number of job types :math:`T`."""
        return int(self.profiles.shape[0])

    def _check_type(self, value: int, name: str) -> int:
        if not 0 <= int(value) < self.n_types:
            raise InvalidInstanceError(
                name, f"must be a job type in [0, {self.n_types}), got {value}"
            )
        return int(value)

    def slowdown(self, job_type: int, partners: Sequence[int]) -> float:
        r"""True relative slowdown :math:`S_a(B)` of ``job_type`` beside ``partners``.

        Parameters
        ----------
        job_type : int
            :math:`a`.
        partners : sequence of int
            The multiset :math:`B` of co-runner types (may be empty, may repeat).

        Returns
        -------
        float
            :math:`S_a(B) \ge 0`; the iteration time is :math:`t^0_a (1 + S_a(B))`.
        """
        a = self._check_type(job_type, "job_type")
        load = np.zeros(len(RESOURCES))
        for i, b in enumerate(partners):
            load += self.profiles[self._check_type(b, f"partners[{i}]")]
        return float(self._slowdown_rows(self.profiles[a][None, :], load[None, :])[0])

    def _slowdown_rows(self, own: np.ndarray, load: np.ndarray) -> np.ndarray:
        over = np.maximum(own + load - 1.0, 0.0)
        return (own * load) @ self.weights + self.overflow * np.sum(own * over**2, axis=1)

    def colocated_speed(self, job_type: int, partners: Sequence[int]) -> float:
        r"""Normalised training speed :math:`1 / (1 + S_a(B))` (1 = as fast as alone)."""
        return 1.0 / (1.0 + self.slowdown(job_type, partners))

    def pairwise_slowdowns(self) -> np.ndarray:
        r"""The full pairwise matrix :math:`S_{ab} = S_a(\{b\})`, shape (T, T).

        Complexity :math:`O(T^2 R)`.
        """
        p = self.profiles
        own = np.repeat(p, self.n_types, axis=0)
        load = np.tile(p, (self.n_types, 1))
        return self._slowdown_rows(own, load).reshape(self.n_types, self.n_types)

    def measured_profiles(self, noise: float = 0.03, seed: int = 0) -> np.ndarray:
        r"""Profiled features of every type: :math:`p_a` plus Gaussian noise, clipped at 0.

        These stand for what standalone profiling measures (GPU utilisation, memory-bandwidth,
        PCIe and NIC counters); the regressor sees them, never the latent :math:`p_a`.

        Parameters
        ----------
        noise : float, default 0.03
            Standard deviation of the additive measurement noise.
        seed : int, default 0
        """
        if noise < 0:
            raise InvalidInstanceError("noise", f"must be >= 0, got {noise}")
        rng = np.random.default_rng(seed)
        return np.clip(self.profiles + rng.normal(0.0, noise, self.profiles.shape), 0.0, None)

    def observe_pairs(
        self, fraction: float = 0.3, noise: float = 0.05, seed: int = 0
    ) -> np.ndarray:
        r"""A sparse noisy measurement of the pairwise matrix (missing entries are NaN).

        Each entry is observed independently with probability ``fraction``; an observed entry is
        :math:`S_{ab}\, e^{\varepsilon}` with :math:`\varepsilon \sim N(0, \text{noise}^2)`
        (multiplicative timing noise). Every row and every column gets at least one observation,
        so each job type has been measured at least once in each role.

        Parameters
        ----------
        fraction : float in (0, 1], default 0.3
        noise : float, default 0.05
        seed : int, default 0

        Returns
        -------
        numpy.ndarray, shape (T, T)
        """
        if not 0 < fraction <= 1:
            raise InvalidInstanceError("fraction", f"must be in (0, 1], got {fraction}")
        if noise < 0:
            raise InvalidInstanceError("noise", f"must be >= 0, got {noise}")
        rng = np.random.default_rng(seed)
        n = self.n_types
        mask = rng.random((n, n)) < fraction
        # One guaranteed entry per row and column: a random permutation matrix.
        mask[np.arange(n), rng.permutation(n)] = True
        values = self.pairwise_slowdowns() * np.exp(rng.normal(0.0, noise, (n, n)))
        return np.where(mask, values, np.nan)

    def sample_colocations(
        self,
        n_samples: int,
        *,
        types: Sequence[int] | None = None,
        max_partners: int = 3,
        noise: float = 0.05,
        seed: int = 0,
    ) -> CoLocationSamples:
        r"""Random co-location measurements, as a profiling campaign would collect them.

        Each sample draws a job type, a number of co-runners uniformly in
        ``1..max_partners`` and the co-runners' types (with repetition) from ``types``; its
        target is :math:`S_a(B)\, e^{\varepsilon}`, :math:`\varepsilon \sim N(0, \text{noise}^2)`.

        Parameters
        ----------
        n_samples : int
        types : sequence of int, optional
            The types to draw from (default all); use it to hold types out.
        max_partners : int, default 3
        noise : float, default 0.05
        seed : int, default 0
        """
        if n_samples < 1:
            raise InvalidInstanceError("n_samples", f"must be >= 1, got {n_samples}")
        if max_partners < 1:
            raise InvalidInstanceError("max_partners", f"must be >= 1, got {max_partners}")
        pool = np.arange(self.n_types) if types is None else np.asarray(types, dtype=np.int64)
        if pool.size == 0:
            raise InvalidInstanceError("types", "must not be empty")
        for i, t in enumerate(pool):
            self._check_type(int(t), f"types[{i}]")
        rng = np.random.default_rng(seed)
        jobs = rng.choice(pool, size=n_samples)
        partners = tuple(
            tuple(int(b) for b in rng.choice(pool, size=int(rng.integers(1, max_partners + 1))))
            for _ in range(n_samples)
        )
        load = np.array([self.profiles[list(b)].sum(axis=0) for b in partners])
        truth = self._slowdown_rows(self.profiles[jobs], load)
        measured = truth * np.exp(rng.normal(0.0, noise, n_samples))
        return CoLocationSamples(jobs.astype(np.int64), partners, measured)


def generate_interference_truth(
    n_types: int = 30,
    *,
    n_families: int = 4,
    spread: float = 0.12,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    overflow: float = DEFAULT_OVERFLOW,
    seed: int = 0,
) -> InterferenceTruth:
    r"""Seeded synthetic job types with latent resource profiles.

    Type :math:`a` belongs to family :math:`f_a` (uniform over the first ``n_families``
    archetypes: compute-bound, memory-bound, PCIe-bound, network-bound, balanced) and has profile
    :math:`p_a = \operatorname{clip}(\bar p_{f_a} + \epsilon_a, 0.02, 1)` with
    :math:`\epsilon_a \sim N(0, \text{spread}^2 I)`. Standalone iteration times are
    log-uniform in [0.1, 1] s.

    Parameters
    ----------
    n_types : int, default 30
    n_families : int in 1..5, default 4
    spread : float, default 0.12
        Within-family standard deviation of the profiles.
    weights : sequence of float, default :data:`DEFAULT_WEIGHTS`
    overflow : float, default 0.8
    seed : int, default 0

    Returns
    -------
    InterferenceTruth
    """
    if n_types < 1:
        raise InvalidInstanceError("n_types", f"must be >= 1, got {n_types}")
    if not 1 <= n_families <= len(_ARCHETYPES):
        raise InvalidInstanceError(
            "n_families", f"must be in [1, {len(_ARCHETYPES)}], got {n_families}"
        )
    if spread < 0:
        raise InvalidInstanceError("spread", f"must be >= 0, got {spread}")
    rng = np.random.default_rng(seed)
    families = rng.integers(0, n_families, size=n_types)
    profiles = _ARCHETYPES[families] + rng.normal(0.0, spread, (n_types, len(RESOURCES)))
    profiles = np.clip(profiles, 0.02, 1.0)
    times = np.exp(rng.uniform(np.log(0.1), np.log(1.0), n_types))
    return InterferenceTruth(
        profiles=profiles,
        standalone_times=times,
        weights=np.asarray(weights, dtype=np.float64),
        overflow=overflow,
        families=families,
    )


# --------------------------------------------------------------------------------------------
# Observed matrices, baselines and errors
# --------------------------------------------------------------------------------------------


def _check_observed(observed: object) -> np.ndarray:
    y = np.array(observed, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] != y.shape[1] or y.shape[0] < 1:
        raise InvalidInstanceError("observed", f"must be a square matrix, got shape {y.shape}")
    seen = ~np.isnan(y)
    if not seen.any():
        raise InvalidInstanceError("observed", "has no observed (non-NaN) entry")
    if not np.all(np.isfinite(y[seen])) or y[seen].min() < 0:
        raise InvalidInstanceError("observed", "observed entries must be finite and >= 0")
    return y


def _means(y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
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
        y = _check_observed(observed)
        mu, rows, cols = _means(y)
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


# --------------------------------------------------------------------------------------------
# Collaborative filtering: low-rank non-negative completion
# --------------------------------------------------------------------------------------------


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
        from sklearn.decomposition import NMF
        from sklearn.exceptions import ConvergenceWarning

        seen = ~np.isnan(y)
        missing = ~seen
        mu, rows, cols = _means(y)
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
        from sklearn.exceptions import ConvergenceWarning

        y = _check_observed(observed)
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


# --------------------------------------------------------------------------------------------
# Regression of co-located slowdown on profiled features
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# From type slowdowns to the placement coefficients
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Side-by-side evaluation
# --------------------------------------------------------------------------------------------


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
) -> list[PredictorScore]:
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
    list of PredictorScore
        In the order: global, row, column and additive means, matrix completion, then one entry
        per regressor (``regression-gbr``, ``regression-mlp``).
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
    scores: list[PredictorScore] = []
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
