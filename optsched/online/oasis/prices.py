r"""OASiS resource prices: exponential in committed usage (Bao et al., INFOCOM 2018, §IV-B).

The price of resource :math:`r` on worker server :math:`h` in slot :math:`t` depends only on the
amount :math:`g` already committed there (equation (22)):

.. math::

    P_h^r(g) = L_1 \left(\frac{U_1^r}{L_1}\right)^{g / c_h^r}, \qquad
    Q_k^r(v) = L_2 \left(\frac{U_2^r}{L_2}\right)^{v / c_k^r}.

It starts at :math:`L` on an idle server and reaches :math:`U^r` when the server is full. With
:math:`W_i = E_i N_i w_i` the worker-slots job :math:`i` needs and
:math:`\delta_i = \max(1, \lceil E_i w_i \rceil)` its shortest possible duration (:math:`N_i`
workers in every slot), the paper sets (23)-(26)

.. math::

    U_1^r &= \max_{i: w_i^r > 0} \frac{f_i(\delta_i)}{w_i^r}, \qquad
    U_2^r = \max_{i: s_i^r > 0} \frac{f_i(\delta_i)}{s_i^r}, \\
    L_1 &= \frac{1}{4\eta_1} \min_i \frac{f_i(T - a_i)}{\lceil W_i \rceil \sum_r w_i^r},
    \qquad
    L_2 = \frac{1}{4\eta_2} \min_i \frac{f_i(T - a_i)}{\lceil W_i \rceil \sum_r s_i^r}, \\
    \eta_1 &= \max\Bigl(1, \max_i \frac{T \sum_h \sum_r c_h^r}{\lceil W_i \rceil
        \sum_r w_i^r}\Bigr), \qquad \eta_2 \text{ likewise,}

so that the initial dual objective :math:`D_0 = T(L_1 \sum_{h,r} c_h^r + L_2 \sum_{k,r}
c_k^r)` is at most a quarter plus a quarter of any admitted job's utility. The competitive
ratio of Theorem 4 is :math:`2\alpha` with :math:`\alpha = \max(1, \max_r \ln(U_1^r/L_1),
\max_r \ln(U_2^r/L_2))`.

Choices where the paper leaves room
-----------------------------------
* Resources no job demands on one side (GPUs of PSs) are not priced there (price 0) and do not
  enter :math:`\alpha`; a server with zero capacity of a priced resource keeps the price
  :math:`L` (no job that needs the resource fits there anyway).
* :math:`L` is clipped to at least :data:`L_FLOOR` times the largest :math:`U` (a job whose
  utility at the horizon is 0 would otherwise make :math:`\alpha` infinite); the estimate records
  whether it was clipped, since the theorem's :math:`D_0 \le OPT/2` argument then needs checking.
* ``multiplier`` scales every :math:`U` (hence :math:`U/L`), the knob of the paper's Fig. 6;
  :math:`U` never drops below :math:`L`.
* Estimates come from the instance in hindsight (:func:`estimate_prices` with ``jobs=None``),
  from a history of jobs (``jobs=`` a list of jobs, evaluated on this cluster and horizon), from
  a warm-up window (:class:`optsched.online.oasis.online.OASiS` with ``warmup=``: re-estimated from
  the
  jobs seen so far until the window closes) or given by the user (:meth:`PriceParams.given`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numba
import numpy as np
from pydantic import Field

from optsched._validation import Frozen, load_data, parse
from optsched.errors import InvalidInstanceError
from optsched.online.oasis.instance import Job, OasisInstance, ceil_work

__all__ = [
    "L_FLOOR",
    "MAX_PRICE",
    "MIN_PRICE",
    "PriceFile",
    "PriceParams",
    "estimate_prices",
    "load_prices",
    "price_schema",
]

#: Smallest allowed :math:`L / \max_r U^r`: keeps
#: :math:`\ln(U/L) \le \ln 10^{12} \approx 27.6`.
L_FLOOR = 1e-12
#: Largest price bound :math:`U` (and :math:`L`) accepted, and the smallest :math:`L`: prices
#: times capacities (at most 1e15) summed over every slot, server and resource stay finite.
MAX_PRICE = 1e30
MIN_PRICE = 1e-30


@dataclass(frozen=True)
class PriceParams:
    r"""Parameters of the exponential price functions.

    Attributes
    ----------
    resources : tuple of str
        Resource names (the instance's order).
    upper_worker, upper_ps : numpy.ndarray, shape (R,)
        :math:`U_1^r` and :math:`U_2^r`; 0 marks a resource that is not priced on that side.
    lower_worker, lower_ps : float
        :math:`L_1` and :math:`L_2`.
    eta_worker, eta_ps : float or None
        :math:`\eta_1, \eta_2` (``None`` when the values were given rather than estimated).
    source : str
        ``"hindsight"``, ``"history"``, ``"warmup"`` or ``"given"``.
    multiplier : float
        Factor applied to every :math:`U`.
    clipped : bool
        Whether an :math:`L` was raised to the floor :data:`L_FLOOR` (or :math:`U` to :math:`L`).
    """

    resources: tuple[str, ...]
    upper_worker: np.ndarray
    upper_ps: np.ndarray
    lower_worker: float
    lower_ps: float
    eta_worker: float | None = None
    eta_ps: float | None = None
    source: str = "given"
    multiplier: float = 1.0
    clipped: bool = False

    # ----- derived ----------------------------------------------------------------------

    @property
    def log_ratio_worker(self) -> np.ndarray:
        r""":math:`\ln(U_1^r/L_1)` per resource (0 where not priced)."""
        return _log_ratio(self.upper_worker, self.lower_worker)

    @property
    def log_ratio_ps(self) -> np.ndarray:
        r""":math:`\ln(U_2^r/L_2)` per resource (0 where not priced)."""
        return _log_ratio(self.upper_ps, self.lower_ps)

    @property
    def alpha(self) -> float:
        r""":math:`\alpha = \max(1, \max_r \ln(U_1^r/L_1), \max_r \ln(U_2^r/L_2))`."""
        values = [1.0, *self.log_ratio_worker.tolist(), *self.log_ratio_ps.tolist()]
        return float(max(values))

    @property
    def proven_bound(self) -> float:
        r"""The competitive ratio :math:`2\alpha` of Theorem 4."""
        return 2.0 * self.alpha

    def worker_prices(self, used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        r"""Prices :math:`P_h^r(g)` of usage ``used`` (..., H, R) on ``capacity`` (H, R)."""
        return _prices(used, capacity, self.upper_worker, self.lower_worker)

    def ps_prices(self, used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        r"""Prices :math:`Q_k^r(v)` of usage ``used`` (..., K, R) on ``capacity`` (K, R)."""
        return _prices(used, capacity, self.upper_ps, self.lower_ps)

    def initial_dual(self, instance: OasisInstance) -> float:
        r""":math:`D_0 = \sum_t \sum_{h,r} P_h^r(0) c_h^r + \sum_t \sum_{k,r} Q_k^r(0) c_k^r`."""
        T = instance.horizon
        w = np.zeros((T, *instance.worker_capacity.shape))
        p = np.zeros((T, *instance.ps_capacity.shape))
        return float(
            np.sum(self.worker_prices(w, instance.worker_capacity) * instance.worker_capacity)
            + np.sum(self.ps_prices(p, instance.ps_capacity) * instance.ps_capacity)
        )

    def scaled(self, multiplier: float) -> PriceParams:
        """A copy with every :math:`U` multiplied by ``multiplier`` (never below :math:`L`)."""
        if not (multiplier > 0 and math.isfinite(multiplier)):
            raise InvalidInstanceError("multiplier", f"must be > 0 and finite, got {multiplier}")
        with np.errstate(over="ignore"):
            uw, cw = _raise_to(self.upper_worker * multiplier, self.lower_worker)
            up, cp = _raise_to(self.upper_ps * multiplier, self.lower_ps)
        ratio_cap = MAX_PRICE / MIN_PRICE  # keeps exp(ln(U/L)) finite in the price function
        if not (
            np.all(uw <= MAX_PRICE)
            and np.all(up <= MAX_PRICE)
            and np.all(uw <= ratio_cap * self.lower_worker)
            and np.all(up <= ratio_cap * self.lower_ps)
        ):
            raise InvalidInstanceError(
                "multiplier",
                f"{multiplier:g} makes a price bound U exceed {MAX_PRICE:g} or U/L exceed "
                f"{ratio_cap:g}",
            )
        return PriceParams(
            resources=self.resources,
            upper_worker=uw,
            upper_ps=up,
            lower_worker=self.lower_worker,
            lower_ps=self.lower_ps,
            eta_worker=self.eta_worker,
            eta_ps=self.eta_ps,
            source=self.source,
            multiplier=self.multiplier * multiplier,
            clipped=self.clipped or cw or cp,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (the price-file format plus derived figures)."""
        return {
            "upper_worker": dict(zip(self.resources, self.upper_worker.tolist(), strict=True)),
            "upper_ps": dict(zip(self.resources, self.upper_ps.tolist(), strict=True)),
            "lower_worker": self.lower_worker,
            "lower_ps": self.lower_ps,
            "eta_worker": self.eta_worker,
            "eta_ps": self.eta_ps,
            "source": self.source,
            "multiplier": self.multiplier,
            "clipped": self.clipped,
            "alpha": self.alpha,
        }

    @classmethod
    def given(
        cls,
        instance: OasisInstance,
        upper_worker: Mapping[str, float],
        upper_ps: Mapping[str, float],
        lower_worker: float,
        lower_ps: float,
    ) -> PriceParams:
        """Price parameters supplied by the user (resources left out are not priced).

        Raises
        ------
        InvalidInstanceError
            An unknown resource, a non-positive :math:`L`, or a positive :math:`U` below
            :math:`L` (the field is named).
        """
        res = instance.resources
        arrays = []
        for label, upper, lower in (
            ("upper_worker", upper_worker, lower_worker),
            ("upper_ps", upper_ps, lower_ps),
        ):
            side = "lower_worker" if label == "upper_worker" else "lower_ps"
            if not (MIN_PRICE <= lower <= MAX_PRICE):
                raise InvalidInstanceError(
                    side, f"must be in [{MIN_PRICE:g}, {MAX_PRICE:g}], got {lower}"
                )
            arr = np.zeros(len(res))
            for r, value in upper.items():
                if r not in res:
                    raise InvalidInstanceError(
                        f"{label}.{r}", f"unknown resource; known: {list(res)}"
                    )
                if not (value == 0 or lower <= value <= MAX_PRICE):
                    raise InvalidInstanceError(
                        f"{label}.{r}",
                        f"must be 0 (not priced) or in [{side} = {lower}, {MAX_PRICE:g}], "
                        f"got {value}",
                    )
                arr[res.index(r)] = value
            arrays.append(arr)
        return cls(res, arrays[0], arrays[1], float(lower_worker), float(lower_ps))


def _log_ratio(upper: np.ndarray, lower: float) -> np.ndarray:
    out = np.zeros_like(upper)
    pos = upper > 0
    if lower > 0:
        # U / L <= MAX_PRICE / MIN_PRICE = 1e60: finite (price files and multipliers are
        # bounded so that it is).
        out[pos] = np.log(upper[pos] / lower)
    return out


def _raise_to(upper: np.ndarray, lower: float) -> tuple[np.ndarray, bool]:
    out = upper.copy()
    low = (out > 0) & (out < lower)
    out[low] = lower
    return out, bool(low.any())


def _prices(used: np.ndarray, capacity: np.ndarray, upper: np.ndarray, lower: float) -> np.ndarray:
    priced = upper > 0
    lr = _log_ratio(upper, lower)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(capacity > 0, used / np.where(capacity > 0, capacity, 1.0), 0.0)
    # exp(ln(U/L) * frac) <= U/L <= 1e60 for frac <= 1: no overflow within the price bounds.
    out = lower * np.exp(lr * frac)
    return np.where(priced, out, 0.0)


@numba.njit(cache=True)
def price_exponents(
    used: np.ndarray, capacity: np.ndarray, ts: np.ndarray, ss: np.ndarray, log_ratio: np.ndarray
) -> np.ndarray:
    r"""The exponents :math:`\ln(U^r/L) \cdot g / c` of the pairs ``(ts[k], ss[k])``, shape (m, R).

    The arithmetic of :func:`_prices` on ``used[ts, ss]`` and ``capacity[ss]`` (the usage
    fraction, 0 on a zero capacity, times ``log_ratio``, one rounding each), so that
    ``lower * numpy.exp(x)`` on the result gives its prices to the last bit. The exponential
    is left to numpy for that reason.
    """
    R = log_ratio.shape[0]
    out = np.empty((ts.shape[0], R))
    for k in range(ts.shape[0]):
        for r in range(R):
            c = capacity[ss[k], r]
            frac = used[ts[k], ss[k], r] / c if c > 0 else 0.0
            out[k, r] = log_ratio[r] * frac
    return out


@numba.njit(cache=True, error_model="numpy")
def apply_prices(
    prices: np.ndarray,
    used: np.ndarray,
    capacity: np.ndarray,
    ts: np.ndarray,
    ss: np.ndarray,
    g_old: np.ndarray,
    growth: np.ndarray,
    lower: float,
    upper: np.ndarray,
) -> float:
    r"""Set the prices of the pairs ``(ts[k], ss[k])`` to ``lower * growth`` and return kappa.

    ``growth`` is ``numpy.exp`` of :func:`price_exponents`; resources with :math:`U^r = 0`
    get price 0, as in :func:`_prices`. Kappa is the largest allocation-cost ratio of
    Lemma 2, :math:`\Delta p \, c / (p_{\text{old}} \Delta g)` over the entries whose usage
    grew on a positive price and capacity (0 when there is none; ``nan`` wins, as in
    :func:`numpy.max`), computed as ``_update`` in :mod:`optsched.online.oasis.online` does.
    """
    R = upper.shape[0]
    kappa = 0.0
    seen = False
    for k in range(ts.shape[0]):
        t = ts[k]
        s = ss[k]
        for r in range(R):
            before = prices[t, s, r]
            after = lower * growth[k, r] if upper[r] > 0 else 0.0
            prices[t, s, r] = after
            dg = used[t, s, r] - g_old[k, r]
            c = capacity[s, r]
            if dg > 0 and before > 0 and c > 0:
                ratio = ((after - before) * c) / (before * dg)
                if not seen or ratio > kappa or np.isnan(ratio):
                    if not (seen and np.isnan(kappa)):
                        kappa = ratio
                seen = True
    return kappa


# ------------------------------------------------------------------------------------------
# Estimation
# ------------------------------------------------------------------------------------------


def _job_figures(job: Job, slot_s: float, horizon: int) -> tuple[float, float, int, float]:
    """(best utility, utility at the horizon, ceil(W), shortest duration) of one job."""
    w = job.work_per_chunk(slot_s)
    shortest = max(1, ceil_work(job.epochs * w))
    W = max(1, ceil_work(job.chunk_epochs * w))
    best = job.utility(float(shortest))
    latest = job.utility(float(max(1, horizon - job.arrival)))
    return best, latest, W, float(shortest)


def estimate_prices(
    instance: OasisInstance,
    jobs: Sequence[Job] | OasisInstance | None = None,
    *,
    multiplier: float = 1.0,
    source: str | None = None,
) -> PriceParams:
    r"""Estimate :math:`U^r, L, \eta` by equations (23)-(26) from a set of jobs.

    Parameters
    ----------
    instance : OasisInstance
        The cluster and horizon the prices are for.
    jobs : sequence of Job or OasisInstance, optional
        The jobs to estimate from: ``None`` uses ``instance.jobs`` (hindsight, the theorem's
        setting); another instance or a list of jobs is a history (their arrivals are taken on
        this horizon, clipped so every duration is at least one slot).
    multiplier : float, default 1
        Scales every :math:`U` (Fig. 6 of the paper).
    source : str, optional
        Label recorded in the result (default ``"hindsight"`` or ``"history"``).

    Returns
    -------
    PriceParams

    Notes
    -----
    :math:`O(I R + (H + K) R)` time. With no job (or only zero utilities) nothing is priced and
    every payoff is the job's utility.
    """
    if jobs is None:
        pool: Sequence[Job] = instance.jobs
        label = source or "hindsight"
    else:
        pool = jobs.jobs if isinstance(jobs, OasisInstance) else list(jobs)
        label = source or "history"
    res = instance.resources
    R = len(res)
    T = instance.horizon
    total_w = float(instance.worker_capacity.sum())
    total_p = float(instance.ps_capacity.sum())
    upper_w = np.zeros(R)
    upper_p = np.zeros(R)
    lows_w: list[float] = []
    lows_p: list[float] = []
    eta_w = 1.0
    eta_p = 1.0
    for job in pool:
        best, latest, W, _ = _job_figures(job, instance.slot_s, T)
        wd = np.array([job.worker_demand.get(r, 0.0) for r in res])
        sd = np.array([job.ps_demand.get(r, 0.0) for r in res])
        pos = wd > 0
        upper_w[pos] = np.maximum(upper_w[pos], best / wd[pos])
        pos = sd > 0
        upper_p[pos] = np.maximum(upper_p[pos], best / sd[pos])
        sw, sp = float(wd.sum()), float(sd.sum())
        lows_w.append(latest / (W * sw))
        lows_p.append(latest / (W * sp))
        eta_w = max(eta_w, T * total_w / (W * sw))
        eta_p = max(eta_p, T * total_p / (W * sp))
    lower_w = min(lows_w) / (4.0 * eta_w) if lows_w else 0.0
    lower_p = min(lows_p) / (4.0 * eta_p) if lows_p else 0.0
    top = float(max(upper_w.max(initial=0.0), upper_p.max(initial=0.0)))
    clipped = False
    floor = L_FLOOR * top
    if top > 0 and lower_w < floor:
        lower_w, clipped = floor, True
    if top > 0 and lower_p < floor:
        lower_p, clipped = floor, True
    params = PriceParams(
        resources=res,
        upper_worker=upper_w,
        upper_ps=upper_p,
        lower_worker=float(lower_w),
        lower_ps=float(lower_p),
        eta_worker=float(eta_w),
        eta_ps=float(eta_p),
        source=label,
        multiplier=1.0,
        clipped=clipped,
    )
    return params.scaled(multiplier) if multiplier != 1.0 else params


# ------------------------------------------------------------------------------------------
# Price files
# ------------------------------------------------------------------------------------------


#: A price bound in a price file: 0 (not priced) or a positive value up to :data:`MAX_PRICE`.
PriceBound = Annotated[float, Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)]


class PriceFile(Frozen):
    """User-given price parameters (``optsched schema oasis-prices``)."""

    upper_worker: dict[str, PriceBound] = Field(
        description="U_1^r per resource (resources left out are not priced on worker servers)."
    )
    upper_ps: dict[str, PriceBound] = Field(description="U_2^r per resource for PS servers.")
    lower_worker: float = Field(
        ge=MIN_PRICE, le=MAX_PRICE, description="L_1: the price on an idle worker server."
    )
    lower_ps: float = Field(
        ge=MIN_PRICE, le=MAX_PRICE, description="L_2: the price on an idle PS server."
    )


def load_prices(source: str | Path | dict[str, Any], instance: OasisInstance) -> PriceParams:
    """Read a price file (JSON/TOML) for ``instance``.

    Raises
    ------
    InvalidInstanceError
        Unreadable file or an invalid field (named in the message).
    """
    data = source if isinstance(source, dict) else load_data(source)
    pf = parse(PriceFile, data)
    return PriceParams.given(instance, pf.upper_worker, pf.upper_ps, pf.lower_worker, pf.lower_ps)


def price_schema() -> dict[str, Any]:
    """JSON Schema of a price file."""
    return PriceFile.model_json_schema()
