r"""OASiS: the online primal-dual job scheduler (Bao et al., INFOCOM 2018, Alg. 1).

Jobs are processed in arrival order (ties by index). For each job the dual oracle
(:func:`optsched.online.oasis.oracle.best_schedule`) finds the schedule with the largest payoff
:math:`\mu_i = f_i - \text{cost}` under the current prices and residual capacities. The job is
admitted iff :math:`\mu_i > 0`; its schedule is then reserved for good (no preemption) and the
prices of every server, slot and resource it touches are raised to
:math:`P(g) = L (U/L)^{g/c}` of the new usage (:mod:`optsched.online.oasis.prices`). The oracle only
looks at residual capacities, so no capacity is ever exceeded.

Beside the schedule, a run reports

* the proven competitive ratio :math:`2\alpha` of Theorem 4 (valid under its assumptions, which
  :meth:`OasisResult.theorem_check` spells out for the instance at hand);
* a **certified** upper bound :math:`D` on the offline optimum, from weak duality with the final
  prices :math:`p` (see :class:`Certificate`):

  .. math::

      OPT \le D(p) = \sum_i \max\Bigl(0, \max_{l \in \mathcal{L}_i} f_i(l) - \text{cost}_p(l)
      \Bigr) + \sum_{t,h,r} p_h^r(t) c_h^r + \sum_{t,k,r} q_k^r(t) c_k^r,

  where :math:`\mathcal{L}_i` is job :math:`i`'s whole schedule set at *full* capacity under the
  ILP's work constraint (2): one more oracle call per job, with ``work="worker-slots"`` and an
  empty cluster. Any :math:`p \ge 0` gives a valid bound; ``tighten=True`` also minimises
  :math:`D(\lambda p)` over the scale :math:`\lambda \ge 0` (a convex function of
  :math:`\lambda`).

Proof of :math:`OPT \le D(p)`: take an optimal schedule, job :math:`i` run by schedule
:math:`l_i \in \mathcal{L}_i` with usage :math:`u_i`. Then
:math:`OPT = \sum_i f_i(l_i) = \sum_i [f_i(l_i) - p \cdot u_i] + p \cdot \sum_i u_i
\le \sum_i \mu_i^{\text{full}} + p \cdot c`, because each bracket is at most the job's best
full-capacity payoff (which is :math:`\le \max(0, \cdot)`), :math:`p \ge 0` and
:math:`\sum_i u_i \le c` entrywise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.online.oasis.engine import (
    FIT_TOL,
    ClusterState,
    OnlineRun,
    WorkUnits,
    check_work_mode,
    work_units,
)
from optsched.online.oasis.instance import Job, OasisInstance
from optsched.online.oasis.oracle import (
    MAX_DP_CELLS,
    _best_schedule,
    best_schedule,
    decide_kernel,
    dp_fits,
)
from optsched.online.oasis.prices import (
    PriceParams,
    apply_prices,
    estimate_prices,
    price_exponents,
)
from optsched.online.oasis.schedule import build_schedule

__all__ = [
    "KERNELS",
    "SMALL_CHUNK",
    "SMALL_DEMAND",
    "Certificate",
    "OASiS",
    "OasisResult",
    "TheoremCheck",
    "dual_bound",
]

#: Largest per-unit demand / server capacity ratio :math:`w_i^r / c_h^r` that we count as the
#: theorem's "small demands" (:math:`w \ll c`). A quantification of our own: the paper states the
#: assumption only qualitatively.
SMALL_DEMAND = 0.1
#: Largest chunk-epoch work :math:`w_i` (worker-slots) that we count as "a chunk is much shorter
#: than a slot", the paper's assumption behind Alg. 2's per-slot rounding (only relevant with
#: ``work="chunks"``).
SMALL_CHUNK = 0.1
#: Relative slack on :math:`D_0 \le OPT/2`: the :math:`\eta` condition can make it an equality.
D0_TOL = 1e-9
#: Decision paths of :class:`OASiS` (``kernel=``), fastest first; all give the same run.
KERNELS: tuple[str, ...] = ("fused", "bounded", "full")
#: Golden-section evaluations of :math:`D(\lambda p)` spent by ``tighten=True``.
TIGHTEN_EVALS = 16
#: Projected subgradient steps spent by ``tighten=True`` after the scale search.
TIGHTEN_STEPS = 40


# ------------------------------------------------------------------------------------------
# The certificate
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificate:
    r"""A weak-duality upper bound on the offline optimum.

    Attributes
    ----------
    value : float
        :math:`D(p)` for the prices :math:`p` below.
    scale : float
        The factor :math:`\lambda` applied to the input prices before any subgradient step
        (1 unless tightened).
    job_payoffs : list of float
        :math:`\max(0, 	ext{best full-capacity payoff})` per job (index order).
    price_term : float
        :math:`\sum p c + \sum q c`.
    fallbacks : int
        Jobs whose DP was too large for :data:`~optsched.online.oasis.oracle.MAX_DP_CELLS`; for
        them the
        (still valid, looser) bound :math:`\mu_i \le \max_t f_i` is used.
    evaluations : int
        How many :math:`D(\cdot)` values were computed.
    method : str
        ``"given"``, ``"scaled"`` or ``"subgradient"``: how the prices were obtained.
    worker_prices, ps_prices : numpy.ndarray
        The prices :math:`p \ge 0` that certify the bound (anyone can re-check it with
        :func:`dual_bound`).
    """

    value: float
    scale: float
    job_payoffs: list[float]
    price_term: float
    fallbacks: int = 0
    evaluations: int = 1
    method: str = "given"
    worker_prices: np.ndarray | None = field(default=None, repr=False)
    ps_prices: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (without the price arrays)."""
        return {
            "value": self.value,
            "scale": self.scale,
            "method": self.method,
            "price_term": self.price_term,
            "job_payoffs": self.job_payoffs,
            "fallbacks": self.fallbacks,
            "evaluations": self.evaluations,
        }


@dataclass
class _Eval:
    value: float
    payoffs: list[float]
    price_term: float
    fallbacks: int
    worker_use: np.ndarray
    ps_use: np.ndarray


def _dual_at(
    instance: OasisInstance,
    wp: np.ndarray,
    pp: np.ndarray,
    units: Sequence[WorkUnits | None],
) -> _Eval:
    """:math:`D(p)` and the usage of every job's best schedule (a subgradient's ingredients)."""
    payoffs: list[float] = []
    fallbacks = 0
    wuse = np.zeros_like(wp)
    puse = np.zeros_like(pp)
    for i in range(instance.n_jobs):
        u = units[i]
        if u is None:
            payoffs.append(float(instance.utility_tables[i].max(initial=0.0)))
            fallbacks += 1
            continue
        res = best_schedule(
            instance, i, wp, pp, None, None, work="worker-slots", floor=0.0, units=u
        )
        if res.payoff > 0:
            payoffs.append(res.payoff)
            for t, h, n in res.workers:
                wuse[t, h] += n * instance.worker_demand[i]
            for t, k, n in res.ps:
                puse[t, k] += n * instance.ps_demand[i]
        else:
            payoffs.append(0.0)
    price_term = float(np.sum(wp * instance.worker_capacity) + np.sum(pp * instance.ps_capacity))
    return _Eval(float(sum(payoffs) + price_term), payoffs, price_term, fallbacks, wuse, puse)


def dual_bound(
    instance: OasisInstance,
    worker_prices: np.ndarray,
    ps_prices: np.ndarray,
    *,
    tighten: bool = False,
    target: float = 0.0,
) -> Certificate:
    r"""Certified upper bound :math:`D(p)` on the offline optimum for any prices :math:`p \ge 0`.

    Parameters
    ----------
    instance : OasisInstance
    worker_prices : numpy.ndarray, shape (T, H, R)
    ps_prices : numpy.ndarray, shape (T, K, R)
    tighten : bool, default False
        Also look for better prices: first minimise :math:`D(\lambda p)` over the scale
        :math:`\lambda \in [0, \lambda_{\max}]` by golden-section search
        (:data:`TIGHTEN_EVALS` evaluations), then take :data:`TIGHTEN_STEPS` projected
        subgradient steps. Every iterate is a valid bound; the smallest is returned, so the
        result is never above :math:`D(p)`.
    target : float, default 0
        A known lower bound on the optimum (e.g. an online algorithm's utility), used for
        Polyak step sizes.

    Returns
    -------
    Certificate

    Notes
    -----
    One oracle call per job and evaluation, each over the ILP's whole per-job schedule set
    (``work="worker-slots"``, full capacity). :math:`D(\lambda p)` is convex in :math:`\lambda`:
    for a fixed schedule the payoff is affine in :math:`\lambda`, and maxima and sums of convex
    functions are convex. Since :math:`D(\lambda p) \ge \lambda \sum p c`, no
    :math:`\lambda > D(p) / \sum p c` can improve on :math:`D(p)`. :math:`D` is convex in
    :math:`p` too, with subgradient :math:`c - \sum_i u_i` where :math:`u_i` is the usage of job
    :math:`i`'s best schedule (jobs with positive payoff only); a step
    :math:`p \leftarrow \max(0, p - \theta (D - \text{target}) g / \lVert g \rVert^2)`
    lowers prices of resources the best schedules leave idle and raises over-demanded ones.
    """
    if np.any(worker_prices < 0) or np.any(ps_prices < 0):
        raise InvalidInstanceError("prices", "must be >= 0 for a valid certificate")
    units: list[WorkUnits | None] = []
    for i in range(instance.n_jobs):
        u = work_units(instance, i, "worker-slots")
        cells = (instance.horizon - instance.jobs[i].arrival) * (u.demand + 1)
        units.append(u if cells <= MAX_DP_CELLS else None)
    wcap = instance.worker_capacity
    pcap = instance.ps_capacity
    evals = 1
    base = _dual_at(instance, worker_prices, ps_prices, units)
    best = (base, worker_prices, ps_prices, 1.0, "given")
    if tighten and base.price_term > 0:
        cache: dict[float, _Eval] = {1.0: base}

        def at(lam: float) -> float:
            nonlocal best, evals
            if lam not in cache:
                cache[lam] = _dual_at(instance, lam * worker_prices, lam * ps_prices, units)
                evals += 1
                if cache[lam].value < best[0].value:
                    best = (cache[lam], lam * worker_prices, lam * ps_prices, lam, "scaled")
            return cache[lam].value

        lo, hi = 0.0, base.value / base.price_term
        at(0.0)
        golden = (math.sqrt(5.0) - 1.0) / 2.0
        x1 = hi - golden * (hi - lo)
        x2 = lo + golden * (hi - lo)
        for _ in range(TIGHTEN_EVALS):
            if at(x1) <= at(x2):
                hi, x2 = x2, x1
                x1 = hi - golden * (hi - lo)
            else:
                lo, x1 = x1, x2
                x2 = lo + golden * (hi - lo)
    if tighten:
        cur, wp, pp, lam = best[0], best[1], best[2], best[3]
        theta = 1.0
        stall = 0
        for _ in range(TIGHTEN_STEPS):
            gw = wcap[None] - cur.worker_use
            gp = pcap[None] - cur.ps_use
            norm = float(np.sum(gw * gw) + np.sum(gp * gp))
            if norm <= 0 or cur.value <= target:
                break
            step = theta * (cur.value - target) / norm
            wp = np.maximum(0.0, wp - step * gw)
            pp = np.maximum(0.0, pp - step * gp)
            cur = _dual_at(instance, wp, pp, units)
            evals += 1
            if cur.value < best[0].value * (1 - 1e-9):
                best = (cur, wp, pp, lam, "subgradient")
                stall = 0
            else:
                stall += 1
                if stall >= 3:
                    theta /= 2
                    stall = 0
                    cur, wp, pp = best[0], best[1], best[2]
    ev, wp, pp, lam, method = best
    return Certificate(
        value=ev.value,
        scale=lam,
        job_payoffs=ev.payoffs,
        price_term=ev.price_term,
        fallbacks=ev.fallbacks,
        evaluations=evals,
        method=method,
        worker_prices=wp,
        ps_prices=pp,
    )


# ------------------------------------------------------------------------------------------
# Theorem 4's assumptions
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TheoremCheck:
    """Whether Theorem 4 (``OPT / ALG <= 2 alpha``) applies to one run, and why not.

    Attributes
    ----------
    applies : bool or None
        ``True`` when every assumption holds, ``False`` when one fails, ``None`` when one cannot
        be decided without the optimum.
    assumptions : dict
        Name -> ``{"holds": bool | None, "detail": str}`` for ``hindsight_prices``,
        ``small_demands``, ``short_chunks``, ``opt_admits_a_job`` and ``initial_dual``.
    """

    applies: bool | None
    assumptions: dict[str, dict[str, Any]]

    @property
    def reasons(self) -> list[str]:
        """Details of the assumptions that fail or are undecided."""
        return [
            f"{name}: {a['detail']}"
            for name, a in self.assumptions.items()
            if a["holds"] is not True
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``theorem_applies`` plus the per-assumption table)."""
        return {
            "theorem_applies": self.applies,
            "reasons": self.reasons,
            "assumptions": self.assumptions,
        }


def _max_demand_ratio(instance: OasisInstance) -> float:
    worst = 0.0
    for demand, cap in (
        (instance.worker_demand, instance.worker_capacity),
        (instance.ps_demand, instance.ps_capacity),
    ):
        for i in range(instance.n_jobs):
            for s in range(cap.shape[0]):
                for r in range(cap.shape[1]):
                    if demand[i, r] > 0 and cap[s, r] > 0:
                        worst = max(worst, float(demand[i, r] / cap[s, r]))
    return worst


# ------------------------------------------------------------------------------------------
# The algorithm
# ------------------------------------------------------------------------------------------


@dataclass(repr=False)
class OasisResult(OnlineRun):
    r"""An OASiS run: the schedule plus the primal-dual figures.

    Attributes
    ----------
    params : PriceParams
        The price parameters used at the end of the run.
    payoffs : list of float
        :math:`\mu_i = \max(0, \text{payoff})` per job (index order): the positive payoff of an
        admitted job, 0 for a rejected one.
    worker_prices, ps_prices : numpy.ndarray
        Final prices, shapes (T, H, R) and (T, K, R).
    alpha : float
        :math:`\alpha` of Theorem 4.
    initial_dual : float
        :math:`D_0`, the dual objective of the initial prices.
    online_dual : float
        :math:`\sum_i \mu_i + \sum p c` with the final prices: Alg. 1's own dual objective. It
        bounds the optimum only when these duals are feasible, which residual-capacity payoffs do
        not guarantee; :attr:`dual_bound` is the certified bound.
    kappa : float
        Largest :math:`\Delta p\, c / (p_{\text{old}} \Delta g)` over all price updates: the
        allocation-cost factor of Lemma 2 actually realised (Lemma 3's :math:`\alpha` in the
        limit of small increments). :math:`\text{online\_dual} - D_0 \le \max(1, \kappa) ALG`.
    certificate : Certificate or None
        The weak-duality certificate (``None`` with ``certify=False``).
    work : str
        The work mode used.
    """

    params: PriceParams | None = None
    payoffs: list[float] = field(default_factory=list)
    worker_prices: np.ndarray | None = None
    ps_prices: np.ndarray | None = None
    alpha: float = 1.0
    initial_dual: float = 0.0
    online_dual: float = 0.0
    kappa: float = 0.0
    certificate: Certificate | None = None
    work: str = "chunks"
    instance: OasisInstance | None = None

    @property
    def certified_ratio(self) -> float | None:
        """:math:`D / ALG` (``inf`` when ALG is 0 and D is positive)."""
        if self.dual_bound is None:
            return None
        return _ratio(self.dual_bound, self.utility)

    def theorem_check(self, opt: float | None = None) -> TheoremCheck:
        r"""Check Theorem 4's assumptions on this run.

        Parameters
        ----------
        opt : float, optional
            The offline optimum (or a lower bound on it, e.g. ALG, makes
            ``opt_admits_a_job`` decidable only when positive).

        Notes
        -----
        The assumptions (Appendix E of the paper) are: exact :math:`U, L` (the hindsight
        estimate, no multiplier, no clipping); small demands (:math:`w_i^r / c_h^r \le`
        :data:`SMALL_DEMAND`); chunk-epochs much shorter than a slot (:math:`w_i \le`
        :data:`SMALL_CHUNK`) unless ``work="worker-slots"``, since the chunk rounding of Alg. 2
        otherwise searches a smaller schedule set than the ILP; the optimum admits at least one
        job; and :math:`D_0 \le OPT/2` (which :math:`\eta` guarantees in exact arithmetic when
        the optimum admits a job and :math:`L` is not clipped).
        """
        inst = self.instance
        assert inst is not None and self.params is not None
        p = self.params
        known_opt = opt if opt is not None else None
        lower = max(self.utility, known_opt or 0.0)
        a: dict[str, dict[str, Any]] = {}
        hind = p.source == "hindsight" and p.multiplier == 1.0 and not p.clipped
        a["hindsight_prices"] = {
            "holds": hind,
            "detail": f"U, L from {p.source}, multiplier {p.multiplier:g}, "
            f"{'clipped' if p.clipped else 'not clipped'}",
        }
        ratio = _max_demand_ratio(inst)
        a["small_demands"] = {
            "holds": ratio <= SMALL_DEMAND,
            "detail": f"max demand/capacity {ratio:.3g} (threshold {SMALL_DEMAND})",
        }
        wmax = float(inst.work_per_chunk.max(initial=0.0))
        short = self.work == "worker-slots" or wmax <= SMALL_CHUNK
        a["short_chunks"] = {
            "holds": short,
            "detail": f"work={self.work}, max chunk-epoch work {wmax:.3g} worker-slots "
            f"(threshold {SMALL_CHUNK})",
        }
        if lower > 0:
            admits: bool | None = True
        elif known_opt is not None:
            admits = False
        else:
            admits = None
        a["opt_admits_a_job"] = {
            "holds": admits,
            "detail": f"OPT {'unknown' if known_opt is None else f'{known_opt:.6g}'}, "
            f"ALG {self.utility:.6g}",
        }
        d0 = self.initial_dual
        if d0 <= lower / 2 * (1 + D0_TOL):
            init: bool | None = True
        elif known_opt is not None:
            init = False
        else:
            init = None
        a["initial_dual"] = {
            "holds": init,
            "detail": f"D0 {d0:.6g} vs OPT/2 "
            f"{'unknown' if known_opt is None else f'{known_opt / 2:.6g}'}",
        }
        states = [v["holds"] for v in a.values()]
        applies: bool | None
        if any(s is False for s in states):
            applies = False
        elif all(s is True for s in states):
            applies = True
        else:
            applies = None
        return TheoremCheck(applies, a)

    def to_dict(self, *, with_prices: bool = False) -> dict[str, Any]:
        """JSON-ready mapping (``with_prices`` adds the full final price arrays)."""
        out = super().to_dict()
        out.update(
            alpha=self.alpha,
            certified_ratio=self.certified_ratio,
            payoffs=self.payoffs,
            price_params=self.params.to_dict() if self.params is not None else None,
            initial_dual=self.initial_dual,
            online_dual=self.online_dual,
            kappa=self.kappa,
            certificate=self.certificate.to_dict() if self.certificate else None,
            work=self.work,
            theorem=self.theorem_check().to_dict(),
        )
        if with_prices and self.worker_prices is not None and self.ps_prices is not None:
            out["final_prices"] = {
                "worker": self.worker_prices.tolist(),
                "ps": self.ps_prices.tolist(),
            }
        return out


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return 1.0 if num <= 0 else math.inf


class OASiS:
    r"""The OASiS online scheduler.

    Parameters
    ----------
    prices : "hindsight", "warmup", PriceParams, OasisInstance or sequence of Job
        Where :math:`U, L, \eta` come from: the instance itself (``"hindsight"``, the theorem's
        setting), the jobs seen so far until ``warmup`` jobs have arrived and then frozen
        (``"warmup"``), a history of jobs (another instance or a list of jobs), or given values.
    multiplier : float, default 1
        Scales every :math:`U` (the paper's Fig. 6 knob; below 1 under-estimates :math:`U/L`).
    warmup : int, default 10
        Size of the warm-up window in jobs (``prices="warmup"`` only).
    work : {"chunks", "worker-slots"}, default "chunks"
        Progress accounting of the oracle: the paper's chunk-epochs, or the ILP's worker-slots.
    certify : bool, default True
        Compute the weak-duality certificate :math:`D` (one more oracle call per job).
    tighten : bool, default False
        Also minimise the certificate over a price scale (see :func:`dual_bound`).
    kernel : {"fused", "bounded", "full"}, default "fused"
        Decision path; all three give identical decisions, payoffs, prices and schedules.
        ``"fused"``: one :func:`~optsched.online.oasis.oracle.decide_kernel` call per job
        (residual room, oracle and deployment lists in one Numba call, the idle room reused
        where nothing was committed) and, on admission, the capacity check and usage update
        of :meth:`~optsched.online.oasis.engine.ClusterState.commit_arrays` (Numba) before
        the price update of the touched pairs. ``"bounded"`` (the previous path, kept so
        benchmarks can time both): :func:`~optsched.online.oasis.oracle.oracle_kernel` on
        the run's own prices, an :class:`~optsched.online.oasis.oracle.OracleResult` per job
        and the vectorised :meth:`~optsched.online.oasis.engine.ClusterState.commit`.
        ``"full"``: the path before that (argument checks on every oracle call,
        :func:`~optsched.online.oasis.oracle.oracle_kernel_full`,
        :meth:`~optsched.online.oasis.engine.ClusterState.commit_reference`).

    Examples
    --------
    >>> from optsched.online.oasis.generate import generate_instance
    >>> inst = generate_instance(6, worker_servers=2, ps_servers=2, horizon=8, seed=3)
    >>> run = OASiS().run(inst)
    >>> run.utility <= run.dual_bound
    True
    """

    name = "oasis"

    def __init__(
        self,
        *,
        prices: str | PriceParams | OasisInstance | Sequence[Job] = "hindsight",
        multiplier: float = 1.0,
        warmup: int = 10,
        work: str = "chunks",
        certify: bool = True,
        tighten: bool = False,
        kernel: str = "fused",
    ) -> None:
        if kernel not in KERNELS:
            raise InvalidInstanceError("kernel", f"must be one of {list(KERNELS)}, got {kernel!r}")
        if isinstance(prices, str) and prices not in ("hindsight", "warmup"):
            raise InvalidInstanceError(
                "prices", f"must be 'hindsight', 'warmup' or parameters, got {prices!r}"
            )
        if not (
            isinstance(multiplier, (int, float))
            and not isinstance(multiplier, bool)
            and math.isfinite(multiplier)
            and multiplier > 0
        ):
            raise InvalidInstanceError("multiplier", f"must be > 0 and finite, got {multiplier!r}")
        if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 1:
            raise InvalidInstanceError("warmup", f"must be an integer >= 1, got {warmup!r}")
        if not isinstance(prices, (str, PriceParams, OasisInstance)) and not (
            isinstance(prices, Sequence) and all(isinstance(j, Job) for j in prices)
        ):
            raise InvalidInstanceError(
                "prices",
                "must be 'hindsight', 'warmup', PriceParams, an OasisInstance or a sequence of "
                f"Job, got {type(prices).__name__}",
            )
        self.prices = prices
        self.multiplier = float(multiplier)
        self.warmup = int(warmup)
        self.work = check_work_mode(work)
        self.certify = certify
        self.tighten = tighten
        self.kernel = kernel

    def _params(self, instance: OasisInstance, seen: Sequence[Job]) -> PriceParams:
        spec = self.prices
        if isinstance(spec, PriceParams):
            if spec.resources != instance.resources:
                raise InvalidInstanceError(
                    "prices",
                    f"price parameters are for resources {spec.resources}, "
                    f"the instance has {instance.resources}",
                )
            return spec.scaled(self.multiplier) if self.multiplier != 1.0 else spec
        if spec == "hindsight":
            return estimate_prices(instance, multiplier=self.multiplier)
        if spec == "warmup":
            return estimate_prices(
                instance, list(seen), multiplier=self.multiplier, source="warmup"
            )
        assert not isinstance(spec, str)
        return estimate_prices(instance, spec, multiplier=self.multiplier)

    def run(self, instance: OasisInstance) -> OasisResult:
        """Schedule every job of ``instance`` online, in arrival order.

        Returns
        -------
        OasisResult

        Notes
        -----
        Per job: one oracle call (see :func:`~optsched.online.oasis.oracle.best_schedule` for its
        complexity) and, on admission, an :math:`O(S (H + K) R)` price update over the slots it
        touches; plus one full-capacity oracle call per job for the certificate.
        """
        inst = instance
        order = sorted(range(inst.n_jobs), key=lambda j: (inst.jobs[j].arrival, j))
        state = ClusterState(inst)
        wcap, pcap = inst.worker_capacity, inst.ps_capacity
        seen: list[Job] = []
        params = self._params(inst, [inst.jobs[order[0]]] if order else [])
        wp = params.worker_prices(state.worker_used, wcap)
        pp = params.ps_prices(state.ps_used, pcap)
        deployments: list[Any] = [None] * inst.n_jobs
        payoffs = [0.0] * inst.n_jobs
        decision: list[float] = []
        kappa = 0.0
        units = [work_units(inst, i, self.work) for i in range(inst.n_jobs)]
        # Fill the instance's cached tables here, not inside the first job's decision time.
        _ = (inst.utility_tables, inst.worker_demand, inst.ps_demand)
        # ln(U/L) per resource of the parameters in force (they change during a warm-up).
        priced_by: PriceParams | None = None
        log_w = log_p = np.zeros(0)
        for i in order:
            start = time.perf_counter()
            if self.prices == "warmup" and len(seen) < self.warmup:
                seen.append(inst.jobs[i])
                params = self._params(inst, seen)
                wp = params.worker_prices(state.worker_used, wcap)
                pp = params.ps_prices(state.ps_used, pcap)
            if self.kernel == "fused":
                got = _decide(inst, i, wp, pp, state, units[i])
                if got is not None and got[0] > 0:
                    payoff, w_arr, p_arr = got
                    w_old, p_old = state.commit_arrays(i, w_arr, p_arr)
                    if params is not priced_by:
                        priced_by = params
                        log_w, log_p = params.log_ratio_worker, params.log_ratio_ps
                    kappa = max(
                        kappa,
                        _reprice(
                            wp,
                            state.worker_used,
                            wcap,
                            w_arr,
                            w_old,
                            params.lower_worker,
                            params.upper_worker,
                            log_w,
                        ),
                        _reprice(
                            pp,
                            state.ps_used,
                            pcap,
                            p_arr,
                            p_old,
                            params.lower_ps,
                            params.upper_ps,
                            log_p,
                        ),
                    )
                    deployments[i] = (_triples(w_arr), _triples(p_arr))
                    payoffs[i] = payoff
                decision.append(time.perf_counter() - start)
                continue
            if self.kernel == "bounded":
                # The run's own prices (finite, >= 0, of the instance's shapes): the oracle's
                # argument checks, a pass over every price, are skipped.
                res = _best_schedule(
                    inst, i, wp, pp, state.worker_used, state.ps_used, units[i], 0.0
                )
            else:
                res = best_schedule(
                    inst,
                    i,
                    wp,
                    pp,
                    state.worker_used,
                    state.ps_used,
                    work=self.work,
                    floor=0.0,
                    units=units[i],
                    kernel="full",
                )
            if res.feasible and res.payoff > 0:
                old_w = {(t, h): state.worker_used[t, h].copy() for t, h, _ in res.workers}
                old_p = {(t, k): state.ps_used[t, k].copy() for t, k, _ in res.ps}
                if self.kernel == "bounded":
                    state.commit(i, res.workers, res.ps)
                else:
                    state.commit_reference(i, res.workers, res.ps)
                kappa = max(
                    kappa,
                    _update(
                        wp,
                        state.worker_used,
                        wcap,
                        old_w,
                        params.upper_worker,
                        params.lower_worker,
                        params.worker_prices,
                    ),
                    _update(
                        pp,
                        state.ps_used,
                        pcap,
                        old_p,
                        params.upper_ps,
                        params.lower_ps,
                        params.ps_prices,
                    ),
                )
                deployments[i] = (res.workers, res.ps)
                payoffs[i] = res.payoff
            decision.append(time.perf_counter() - start)
        schedule = build_schedule(inst, deployments, algorithm=self.name)
        price_term = float(np.sum(wp * wcap) + np.sum(pp * pcap))
        d0 = params.initial_dual(inst)
        cert = (
            dual_bound(inst, wp, pp, tighten=self.tighten, target=schedule.total_utility)
            if self.certify
            else None
        )
        return OasisResult(
            algorithm=self.name,
            schedule=schedule,
            decision_seconds=decision,
            stats={"work": self.work, "price_source": params.source},
            proven_bound=params.proven_bound,
            dual_bound=cert.value if cert is not None else None,
            params=params,
            payoffs=payoffs,
            worker_prices=wp,
            ps_prices=pp,
            alpha=params.alpha,
            initial_dual=d0,
            online_dual=float(sum(payoffs)) + price_term,
            kappa=kappa,
            certificate=cert,
            work=self.work,
            instance=inst,
        )


#: A deployment as int64 arrays (slots, servers, counts).
_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _decide(
    inst: OasisInstance,
    i: int,
    wp: np.ndarray,
    pp: np.ndarray,
    state: ClusterState,
    u: WorkUnits,
) -> tuple[float, _Arrays, _Arrays] | None:
    """Job ``i``'s best schedule under the run's prices and residual room (``floor = 0``).

    ``(payoff, (slots, servers, counts) of the workers, the same of the PSs)``, or ``None``
    when no schedule beats 0. The floats of :func:`~optsched.online.oasis.oracle._best_schedule`
    and :func:`~optsched.online.oasis.oracle._result` on the same arguments: unit costs by the
    same matrix product, the cost by :func:`numpy.sum` over the same ``(S, H)`` and ``(S, K)``
    products, the utility by the job's own function.
    """
    a = inst.jobs[i].arrival
    S = inst.horizon - a
    if not dp_fits(inst, i, S, u):
        return None
    wd = inst.worker_demand[i]
    sd = inst.ps_demand[i]
    last, cost_w, cost_p, wt, wh, wn, pt, pk, pn = decide_kernel(
        wp[a:] @ wd,
        pp[a:] @ sd,
        state.worker_capacity,
        state.ps_capacity,
        state.worker_used,
        state.ps_used,
        state.worker_touched,
        state.ps_touched,
        a,
        wd,
        sd,
        inst.jobs[i].chunks,
        u.per_workers,
        u.ps_needed,
        int(u.demand),
        inst.utility_tables[i, a:],
        0.0,
        FIT_TOL,
    )
    if last < 0 or len(wt) == 0:
        return None
    cost = float(np.sum(cost_w) + np.sum(cost_p))
    utility = inst.jobs[i].utility(float(int(wt.max()) + 1 - a))
    return utility - cost, (wt, wh, wn), (pt, pk, pn)


def _triples(arrays: _Arrays) -> tuple[tuple[int, int, int], ...]:
    """``(slot, server, count)`` tuples of Python ints, as an OracleResult lists them."""
    return tuple(zip(*(x.tolist() for x in arrays), strict=True))


def _reprice(
    prices: np.ndarray,
    used: np.ndarray,
    capacity: np.ndarray,
    arrays: _Arrays,
    g_old: np.ndarray,
    lower: float,
    upper: np.ndarray,
    log_ratio: np.ndarray,
) -> float:
    """:func:`_update_pairs` in two Numba loops around one :func:`numpy.exp`: the same prices.

    The exponents and the kappa ratios are :func:`_update_pairs`'s elementwise arithmetic;
    the exponential stays numpy's, so the prices agree to the last bit.
    """
    ts, ss = arrays[0], arrays[1]
    if len(ts) == 0:
        return 0.0
    growth = np.exp(price_exponents(used, capacity, ts, ss, log_ratio))
    return apply_prices(prices, used, capacity, ts, ss, g_old, growth, lower, upper)


def _update(
    prices: np.ndarray,
    used: np.ndarray,
    capacity: np.ndarray,
    old: dict[tuple[int, int], np.ndarray],
    upper: np.ndarray,
    lower: float,
    fn: Any,
) -> float:
    """Recompute prices of the touched (slot, server) pairs; return the largest kappa."""
    if not old:
        return 0.0
    keys = list(old)
    ts = np.array([t for t, _ in keys])
    ss = np.array([s for _, s in keys])
    return _update_pairs(prices, used, capacity, ts, ss, np.array([old[k] for k in keys]), fn)


def _update_pairs(
    prices: np.ndarray,
    used: np.ndarray,
    capacity: np.ndarray,
    ts: np.ndarray,
    ss: np.ndarray,
    g_old: np.ndarray,
    fn: Any,
) -> float:
    """:func:`_update` on the pairs ``(ts[k], ss[k])`` whose usage was ``g_old[k]`` (m, R)."""
    if len(ts) == 0:
        return 0.0
    before = prices[ts, ss].copy()
    prices[ts, ss] = fn(used[ts, ss], capacity[ss])
    after = prices[ts, ss]
    dg = used[ts, ss] - g_old
    cap = capacity[ss]
    mask = (dg > 0) & (before > 0) & (cap > 0)
    if not mask.any():
        return 0.0
    # kappa = (delta p * c) / (p_old * delta g), Lemma 2's allocation-cost ratio.
    ratio = ((after - before) * cap)[mask] / (before * dg)[mask]
    return float(ratio.max())
