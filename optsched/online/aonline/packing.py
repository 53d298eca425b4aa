r"""The interval packing step of Aonline: OASiS's primal-dual with a per-pool gang oracle.

At an interval :math:`[b, b + \ell)` the pending jobs :math:`P` (arrived by :math:`b`, not done)
are offered, one at a time in arrival order, to the primal-dual of OASiS (Bao et al., INFOCOM
2018, Alg. 1) on the *packing* problem "maximise the total weight of jobs that finish within the
interval". A job's utility is its weight :math:`w_j` if it finishes in the interval (0
otherwise), its schedules are the gang placements of :mod:`optsched.online.aonline.instance`, and
the
resources are the servers' GPUs in each slot of the interval, priced per GPU by the exponential
function of OASiS (22):

.. math::

    p_{gs}(t) = L \, (U / L)^{u_{gs}(t) / m_{gs}}, \qquad
    U = \max_{j \in Q} \frac{w_j}{n_j}, \qquad
    L = \frac{1}{4\eta} \min_{j \in Q} \frac{w_j}{n_j p_j}, \qquad
    \eta = \max\Bigl(1, \max_{j \in Q} \frac{\ell \, C}{n_j p_j}\Bigr)

with :math:`u_{gs}(t)` the GPUs already committed on server :math:`s` of pool :math:`g` in slot
:math:`t`, :math:`m_{gs}` its GPUs, :math:`C` the GPUs of the cluster, :math:`p_j` the fewest
slots job :math:`j` needs alone and :math:`Q \subseteq P` the jobs that can finish within the
interval at all (:math:`p_j \le \ell`); these are OASiS's (23) and (25) with the utility
:math:`w_j`, the resource "GPU" and the horizon :math:`\ell`.

**Oracle** (:func:`best_schedule`, the per-pool counterpart of OASiS's Alg. 2). The payoff of
job :math:`j` is :math:`w_j - \min_l \text{cost}(l)` over its schedules :math:`l` finishing in the
interval within the residual capacity. A schedule picks, per slot, nothing or one gang placement;
the cheapest placement of progress :math:`r_{jg}` is the cheapest server of pool :math:`g` with
room for the gang (cost :math:`n_j p_{gs}(t)`), the cheapest of progress :math:`\tilde r_{jg}` is
the cheapest-first fill of :math:`n_j` GPUs over the pool's servers (OASiS's Level 3 greedy;
when that fill lands on one server the consolidated option there is as cheap and faster). A
dynamic program over (slot, progress capped at :math:`W_j`) then gives the minimum cost exactly,
ties to the earliest completion. Time :math:`O(\ell\,(W_j G + S \log S))` for :math:`G` pools and
:math:`S` servers.

**Why the OASiS oracle is not reused as is.** :func:`optsched.online.oasis.best_schedule` prices a
*variable* worker count :math:`0..N_i` whose progress depends on the count alone, on
interchangeable worker servers plus a PS pool with bandwidth coupling. Here a job runs a fixed
gang, its progress depends on the GPU type and on whether the gang shares one server, and there
are no parameter servers: the per-slot option set is different (per pool, consolidated or spread),
while the DP over slots and the cheapest-first greedy are the same ideas.

**Guarantee.** With :math:`\alpha_0 = \max(1, \ln(U/L))` OASiS's Theorem 4 makes the admitted
set a :math:`2\alpha_0`-approximation of the packing optimum, under its assumptions (small
demands, :math:`D_0 \le \text{OPT}/2` through :math:`\eta`, at least one job packable); the
family calls :math:`\alpha = 2\alpha_0` the packing ratio (:attr:`PrimalDualPacking.alpha`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from optsched.limits import check_size
from optsched.online.aonline.exact import Packing
from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.schedule import Run
from optsched.tolerances import FIT_TOL

__all__ = [
    "SMALL_DEMAND_FRACTION",
    "PackingOracleResult",
    "PriceState",
    "PrimalDualPacking",
    "assumptions",
    "best_schedule",
    "pack_primal_dual",
    "price_parameters",
]

#: OASiS's analysis needs every demand to be small against a server (its Lemma 3, "w << c");
#: optsched reads "small" as at most this fraction of the server's GPUs.
SMALL_DEMAND_FRACTION = 0.5


@dataclass(frozen=True)
class PackingOracleResult:
    r"""The best schedule of one job in an interval under given prices.

    Attributes
    ----------
    payoff : float
        :math:`w_j - \text{cost}`; ``-inf`` when no schedule finishes in the interval.
    cost : float
    runs : tuple of Run
    """

    payoff: float
    cost: float
    runs: tuple[Run, ...]

    @property
    def feasible(self) -> bool:
        """Whether a schedule finishing in the interval exists."""
        return math.isfinite(self.payoff)


_NONE = PackingOracleResult(-math.inf, math.inf, ())


@dataclass
class PriceState:
    """Prices and committed GPUs per (slot of the interval, pool, server).

    Attributes
    ----------
    start, length : int
    lower, upper : float
        :math:`L` and :math:`U`.
    used : dict of (int, int, int) to int
        GPUs committed at ``(t - start, pool, server)`` (absent: none), so that memory grows
        with the commitments, not with the interval.
    """

    instance: AonlineInstance
    start: int
    length: int
    lower: float
    upper: float
    used: dict[tuple[int, int, int], int]

    @classmethod
    def empty(
        cls, instance: AonlineInstance, start: int, length: int, lower: float, upper: float
    ) -> PriceState:
        """All servers free, every price :math:`L`."""
        return cls(instance, start, length, lower, upper, {})

    def price(self, k: int, g: int, s: int) -> float:
        """Price of one GPU of server ``s`` of pool ``g`` in slot ``start + k``."""
        cap = self.instance.pools[g].server_capacity(s)
        return self.lower * (self.upper / self.lower) ** (self.used.get((k, g, s), 0) / cap)

    def free(self, k: int, g: int, s: int) -> int:
        """GPUs still free there."""
        return self.instance.pools[g].server_capacity(s) - self.used.get((k, g, s), 0)

    def commit(self, runs: Sequence[Run]) -> None:
        """Reserve the GPUs of ``runs``."""
        for r in runs:
            g = self.instance.pool_index[r.pool]
            for s, n in r.servers:
                key = (r.slot - self.start, g, s)
                self.used[key] = self.used.get(key, 0) + n

    def dual_resources(self) -> float:
        r""":math:`\sum_{t,g,s} p_{gs}(t)\, m_{gs}` at the current prices.

        Every untouched server-slot is priced :math:`L`, so the sum is
        :math:`L\,\ell\,C` plus the excess of the committed ones: time :math:`O(\#\text{used})`.
        """
        base = self.lower * self.length * self.instance.total_gpus
        extra = sum(
            (self.price(k, g, s) - self.lower) * self.instance.pools[g].server_capacity(s)
            for (k, g, s) in self.used
        )
        return base + extra


def price_parameters(
    instance: AonlineInstance, jobs: Sequence[int], length: int
) -> tuple[float, float, float] | None:
    """``(L, U, eta)`` of the module notes for the jobs ``jobs`` and an interval of ``length``.

    ``None`` when no job of ``jobs`` can finish within ``length`` slots (nothing to pack).
    """
    q = [j for j in jobs if instance.min_slots(j) <= length]
    if not q:
        return None
    per = {j: instance.jobs[j].weight / (instance.jobs[j].gpus * instance.min_slots(j)) for j in q}
    upper = max(instance.jobs[j].weight / instance.jobs[j].gpus for j in q)
    eta = max(
        1.0,
        max(
            length * instance.total_gpus / (instance.jobs[j].gpus * instance.min_slots(j))
            for j in q
        ),
    )
    lower = min(per.values()) / (4.0 * eta)
    return lower, upper, eta


def best_schedule(instance: AonlineInstance, j: int, prices: PriceState) -> PackingOracleResult:
    """The cheapest schedule of job ``j`` finishing in the interval (see the module notes).

    Returns
    -------
    PackingOracleResult
        ``payoff = w_j - cost`` of the cheapest schedule (ties: earliest completion, then the
        first option in pool order, consolidated before spread, lowest server), or a result with
        ``payoff = -inf`` when none fits.

    Raises
    ------
    InvalidInstanceError
        The DP table (slots x (work + 1)) would exceed the ``max_array_cells`` budget.
    """
    job = instance.jobs[j]
    W, n = job.work, job.gpus
    first = max(prices.start, job.arrival) - prices.start
    if instance.min_slots(j) > prices.length - first:
        return _NONE  # it cannot finish in the interval whatever the prices
    check_size(f"jobs[{j}]", (prices.length - first) * (W + 1), "max_array_cells", "DP cells")
    inf = math.inf
    cost = [0.0] + [inf] * W
    choices: list[list[tuple[int, int] | None]] = []  # per slot: (option, previous d) per d
    options_by_slot: list[list[tuple[int, float, Run]]] = []
    best_cost, best_k = inf, -1
    for k in range(first, prices.length):
        t = prices.start + k
        opts: list[tuple[int, float, Run]] = []
        for g, p in enumerate(instance.pools):
            rc = instance.rate(j, p.name, True)
            if rc > 0:
                cand = [
                    (n * prices.price(k, g, s), s)
                    for s in range(p.num_servers)
                    if prices.free(k, g, s) >= n
                ]
                if cand:
                    c, s = min(cand)
                    opts.append((rc, c, Run(slot=t, job=j, pool=p.name, servers=((s, n),))))
            rs = instance.rate(j, p.name, False)
            if rs > 0:
                order = sorted(range(p.num_servers), key=lambda s: (prices.price(k, g, s), s))
                left, c, used = n, 0.0, []
                for s in order:
                    take = min(prices.free(k, g, s), left)
                    if take > 0:
                        used.append((s, take))
                        c += take * prices.price(k, g, s)
                        left -= take
                    if left == 0:
                        break
                if left == 0 and len(used) > 1:
                    servers = tuple(sorted(used))
                    opts.append((rs, c, Run(slot=t, job=j, pool=p.name, servers=servers)))
        new = list(cost)
        choice: list[tuple[int, int] | None] = [None] * (W + 1)
        for d in range(W + 1):
            if cost[d] == inf:
                continue
            for o, (q, c, _) in enumerate(opts):
                nd = min(W, d + q)
                v = cost[d] + c
                if v < new[nd]:
                    new[nd] = v
                    choice[nd] = (o, d)
        cost = new
        choices.append(choice)
        options_by_slot.append(opts)
        # cost[W] never increases with k: keep the earliest slot reaching the final minimum
        if cost[W] < best_cost - FIT_TOL * max(1.0, abs(best_cost) if best_cost < inf else 1.0):
            best_cost, best_k = cost[W], k
    if best_k < 0:
        return _NONE
    runs: list[Run] = []
    d = W
    # walk back from the completion slot; choices[i] belongs to slot first + i
    for i in range(best_k - first, -1, -1):
        ch = choices[i][d] if d > 0 else None
        if ch is None:
            continue
        o, d = ch
        runs.append(options_by_slot[i][o][2])
    runs.reverse()
    total = sum(
        g * prices.price(r.slot - prices.start, instance.pool_index[r.pool], s)
        for r in runs
        for s, g in r.servers
    )
    return PackingOracleResult(job.weight - total, total, tuple(runs))


@dataclass(frozen=True)
class PrimalDualPacking(Packing):
    r"""A primal-dual packing: the chosen jobs and runs, with the prices' figures.

    Attributes
    ----------
    lower, upper, eta : float
        :math:`L`, :math:`U`, :math:`\eta`.
    dual : float
        OASiS's dual objective :math:`\sum_j \mu_j + \sum_{t,g,s} p_{gs}(t) m_{gs}` at the
        final prices.
    """

    lower: float = 0.0
    upper: float = 0.0
    eta: float = 1.0
    dual: float = 0.0

    @property
    def alpha(self) -> float:
        r"""The packing ratio :math:`2 \max(1, \ln(U/L))` (OASiS's Theorem 4)."""
        return 2.0 * max(1.0, math.log(self.upper / self.lower))


def pack_primal_dual(
    instance: AonlineInstance, jobs: Sequence[int], start: int, length: int
) -> PrimalDualPacking | None:
    """OASiS's primal-dual on the interval packing problem (see the module notes).

    Jobs are offered in arrival order (ties by index); each is admitted with the oracle's
    schedule when its payoff is positive, and the prices of the GPUs it takes rise.

    Returns
    -------
    PrimalDualPacking or None
        ``None`` when no job of ``jobs`` can finish within ``length`` slots.
    """
    params = price_parameters(instance, jobs, length)
    if params is None:
        return None
    lower, upper, eta = params
    state = PriceState.empty(instance, start, length, lower, upper)
    chosen: list[int] = []
    runs: list[Run] = []
    payoffs = 0.0
    for j in sorted(jobs, key=lambda i: (instance.jobs[i].arrival, i)):
        res = best_schedule(instance, j, state)
        if res.feasible and res.payoff > 0:
            chosen.append(j)
            runs.extend(res.runs)
            payoffs += res.payoff
            state.commit(res.runs)
    weight = float(sum(instance.jobs[j].weight for j in chosen))
    return PrimalDualPacking(
        chosen=tuple(sorted(chosen)),
        weight=weight,
        runs=tuple(sorted(runs, key=lambda r: (r.slot, r.job))),
        lower=lower,
        upper=upper,
        eta=eta,
        dual=payoffs + state.dual_resources(),
    )


def assumptions(instance: AonlineInstance) -> dict[str, bool]:
    """Which of the analysis' assumptions the instance meets (see the formulation page).

    ``small_demands``: every gang takes at most :data:`SMALL_DEMAND_FRACTION` of the GPUs of
    every server it can sit on (OASiS's Lemma 3); ``unit_gangs``: every gang is one GPU, so that
    a placement blocked by the residual capacity always touches a full server (priced at
    :math:`U`), which makes the final dual feasible.
    """
    small = all(
        job.gpus <= SMALL_DEMAND_FRACTION * p.gpus_per_server
        for job in instance.jobs
        for p in instance.pools
        if job.rates.get(p.name, 0) > 0
    )
    return {
        "small_demands": small,
        "unit_gangs": all(job.gpus == 1 for job in instance.jobs),
    }
