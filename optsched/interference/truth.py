r"""The synthetic ground truth of interference: job types with latent resource profiles.

:func:`generate_interference_truth` draws seeded job types around a few archetypes (compute-bound
vision models, memory-bound language models, PCIe-heavy input pipelines, communication-heavy
parameter-server jobs); :class:`InterferenceTruth` holds their profiles and the explicit slowdown
function, so that predictors are scored against the truth, not against noisy measurements, and
simulates the measurements they learn from (observed pairs, profiles, co-location samples).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optsched.errors import InvalidInstanceError

__all__ = [
    "DEFAULT_OVERFLOW",
    "DEFAULT_WEIGHTS",
    "RESOURCES",
    "CoLocationSamples",
    "InterferenceTruth",
    "generate_interference_truth",
]

#: The latent resources of a job type, in the column order of every profile matrix.
RESOURCES: tuple[str, ...] = ("compute", "memory_bandwidth", "pcie", "network")

#: Default contention weights :math:`w_r` of the ground-truth slowdown, one per resource.
DEFAULT_WEIGHTS: tuple[float, ...] = (0.2, 0.25, 0.15, 0.25)

#: Default weight :math:`\gamma` of the over-subscription term of the ground truth.
DEFAULT_OVERFLOW = 0.8

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
