r"""All-reduce cost models: the time one all-reduce call of ``b`` bytes occupies the channel.

Every model here is affine in the message size,

.. math::

    c(b) = a + \beta\, b,

with a fixed per-call cost :math:`a` (latency, negotiation, kernel launch) and a per-byte cost
:math:`\beta`. The fixed cost is what makes fusing small tensors pay off and what partitioning
a tensor into :math:`m` calls multiplies by :math:`m` (the per-partition overhead).

Times are in milliseconds, sizes in bytes. optsched has one byte convention: ``MB`` means
:math:`10^6` bytes (SI) throughout the library, and ``MiB`` :math:`2^{20}` bytes where a binary
unit is meant (Horovod's ``HOROVOD_FUSION_THRESHOLD`` default is 64 MiB = 67.108864 MB).
Bandwidths are in gigabits per second (:math:`10^9` bit/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched.errors import InvalidInstanceError

__all__ = ["MB", "CostModel", "MiB", "num_partitions"]

#: Bytes in one MB (SI megabyte, 10^6 bytes), the unit of partition sizes, fusion thresholds and
#: update rates everywhere in optsched.
MB = 10**6
#: Bytes in one MiB (2^20 bytes), for quoting binary sizes such as Horovod's 64 MiB default.
MiB = 2**20

_BITS_PER_GBIT = 1e9


def number(value: object, field: str) -> float:
    """``value`` as a float, or an error naming ``field``.

    Strings, ``None`` and bools are refused with :class:`InvalidInstanceError`, never a bare
    ``TypeError`` or ``ValueError``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInstanceError(field, f"must be a number, got {value!r}")
    return float(value)


def _finite(value: float, field: str, *, positive: bool = False) -> float:
    value = number(value, field)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise InvalidInstanceError(field, f"must be a finite number {bound}, got {value!r}")
    return value


@dataclass(frozen=True)
class CostModel:
    r"""Affine cost of one all-reduce call: ``alpha_ms + beta_ms_per_byte * bytes``.

    Parameters
    ----------
    alpha_ms : float
        Fixed time of one call (ms): latency plus per-call overhead. Paid once per call, so a
        fused call of many tensors pays it once and a tensor cut into ``m`` partitions pays it
        ``m`` times.
    beta_ms_per_byte : float
        Time per byte (ms/byte).
    description : str
        How the figures were obtained (shown in reports).

    Raises
    ------
    InvalidInstanceError
        A negative or non-finite coefficient.

    Examples
    --------
    Four MB (4 * 10^6 bytes) over a ring of 8 at 10 Gbit/s with 5 us per hop:
    :math:`2 \cdot 7 \cdot 5` us of latency plus :math:`2 \cdot 7/8 \cdot 32` Mbit at
    10 Gbit/s, i.e. 0.07 + 5.6 ms.

    >>> cm = CostModel.ring(workers=8, bandwidth_gbps=10, latency_us=5)
    >>> round(float(cm.call_ms(4 * MB)), 3)
    5.67
    """

    alpha_ms: float
    beta_ms_per_byte: float
    description: str = ""

    def __post_init__(self) -> None:
        _finite(self.alpha_ms, "alpha_ms")
        _finite(self.beta_ms_per_byte, "beta_ms_per_byte")

    # -- constructors -----------------------------------------------------------------------

    @classmethod
    def alpha_beta(
        cls, alpha_us: float, bandwidth_gbps: float, overhead_us: float = 0.0
    ) -> CostModel:
        r"""Latency-bandwidth model :math:`c(b) = \alpha + o + b / B`.

        Parameters
        ----------
        alpha_us : float
            Latency of one call (microseconds).
        bandwidth_gbps : float
            Effective all-reduce bandwidth (Gbit/s): bytes of gradient reduced per second
            times 8.
        overhead_us : float, default 0
            Extra fixed overhead per call (framework scheduling, kernel launch), in
            microseconds. It is the per-partition overhead a partitioned tensor pays once per
            partition.

        Returns
        -------
        CostModel
        """
        alpha = _finite(alpha_us, "alpha_us") + _finite(overhead_us, "overhead_us")
        bw = _finite(bandwidth_gbps, "bandwidth_gbps", positive=True)
        beta = 8.0 / (bw * _BITS_PER_GBIT) * 1e3
        return cls(
            alpha * 1e-3,
            beta,
            f"alpha-beta: alpha={alpha_us} us, overhead={overhead_us} us, bandwidth={bw} Gbit/s",
        )

    @classmethod
    def ring(
        cls,
        workers: int,
        bandwidth_gbps: float,
        latency_us: float,
        overhead_us: float = 0.0,
        reduce_gbps: float | None = None,
    ) -> CostModel:
        r"""Ring all-reduce over ``N`` workers (reduce-scatter then all-gather).

        .. math::

            c(b) = 2(N-1)\,\delta + o + 2\,\frac{N-1}{N}\,\frac{b}{B_w}
                   + \frac{N-1}{N}\,\frac{b}{B_r},

        with per-hop latency :math:`\delta`, per-link bandwidth :math:`B_w`, per-call overhead
        :math:`o` and, optionally, the throughput :math:`B_r` of the reduction arithmetic.
        One worker needs no communication, so its cost is zero.

        Parameters
        ----------
        workers : int
            Number of data-parallel workers :math:`N \ge 1`.
        bandwidth_gbps : float
            Per-link bandwidth (Gbit/s).
        latency_us : float
            Per-hop latency (microseconds).
        overhead_us : float, default 0
            Fixed overhead per call (microseconds); the per-partition overhead.
        reduce_gbps : float, optional
            Throughput of the reduction (Gbit/s of gradient); ``None`` ignores it.

        Returns
        -------
        CostModel

        References
        ----------
        Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
        workstations", J. Parallel Distrib. Comput. 69(2), 2009.
        """
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
            raise InvalidInstanceError("workers", f"must be an integer >= 1, got {workers!r}")
        n = int(workers)
        bw = _finite(bandwidth_gbps, "bandwidth_gbps", positive=True)
        delta = _finite(latency_us, "latency_us")
        over = _finite(overhead_us, "overhead_us")
        desc = (
            f"ring all-reduce: {n} workers, {bw} Gbit/s per link, {delta} us per hop, "
            f"{over} us per call"
        )
        if n == 1:
            return cls(0.0, 0.0, desc + " (one worker: no communication)")
        frac = (n - 1) / n
        beta = 2.0 * frac * 8.0 / (bw * _BITS_PER_GBIT) * 1e3
        if reduce_gbps is not None:
            rb = _finite(reduce_gbps, "reduce_gbps", positive=True)
            beta += frac * 8.0 / (rb * _BITS_PER_GBIT) * 1e3
            desc += f", reduction {rb} Gbit/s"
        alpha = (2.0 * (n - 1) * delta + over) * 1e-3
        return cls(alpha, beta, desc)

    @classmethod
    def fit(cls, sizes_bytes: ArrayLike, times_ms: ArrayLike) -> CostModel:
        r"""Least-squares fit of :math:`a` and :math:`\beta` to measured all-reduce times.

        Parameters
        ----------
        sizes_bytes, times_ms : array_like
            Message sizes and their measured call times; at least two distinct sizes.

        Returns
        -------
        CostModel
            Coefficients clipped at zero (a negative intercept means the measurements do not
            resolve the latency).

        Raises
        ------
        InvalidInstanceError
            Mismatched lengths, fewer than two distinct sizes, or non-finite values.
        """
        x = np.asarray(sizes_bytes, dtype=np.float64).ravel()
        y = np.asarray(times_ms, dtype=np.float64).ravel()
        if x.shape != y.shape:
            raise InvalidInstanceError("times_ms", f"has {y.size} values for {x.size} sizes")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise InvalidInstanceError("sizes_bytes", "must be finite")
        if np.unique(x).size < 2:
            raise InvalidInstanceError("sizes_bytes", "needs at least two distinct sizes")
        design = np.column_stack([np.ones_like(x), x])
        (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
        return cls(max(float(a), 0.0), max(float(b), 0.0), f"least-squares fit to {x.size} calls")

    # -- evaluation -------------------------------------------------------------------------

    def call_ms(self, nbytes: ArrayLike) -> NDArray[np.float64]:
        """Time of one call carrying ``nbytes`` bytes (vectorised)."""
        b = np.asarray(nbytes, dtype=np.float64)
        return self.alpha_ms + self.beta_ms_per_byte * b

    def partitioned_ms(self, nbytes: ArrayLike, partition_bytes: float) -> NDArray[np.float64]:
        """Total channel time of a tensor sent as ``ceil(nbytes / partition_bytes)`` calls."""
        b = np.asarray(nbytes, dtype=np.float64)
        return self.alpha_ms * num_partitions(b, partition_bytes) + self.beta_ms_per_byte * b

    def to_dict(self) -> dict[str, object]:
        """JSON-ready coefficients."""
        return {
            "alpha_ms": self.alpha_ms,
            "beta_ms_per_byte": self.beta_ms_per_byte,
            "ms_per_mb": self.beta_ms_per_byte * MB,
            "description": self.description,
        }


def num_partitions(nbytes: ArrayLike, partition_bytes: float) -> NDArray[np.int64]:
    """Number of partitions of at most ``partition_bytes`` (at least one per tensor)."""
    if not partition_bytes > 0:
        raise InvalidInstanceError("partition_bytes", f"must be > 0, got {partition_bytes!r}")
    b = np.asarray(nbytes, dtype=np.float64)
    return np.maximum(np.ceil(b / partition_bytes), 1).astype(np.int64)
