r"""Gandiva-Fair: user-level fair share of GPU time with gang-aware stride scheduling and trading.

Source: Chaudhary, Ramjee, Sivathanu, Kwatra, Viswanatha, "Balancing Efficiency and Fairness
in Heterogeneous GPU Clusters for Deep Learning", EuroSys 2020, implemented from its description.
Each choice is marked [S] (stated in the paper) or [R] (reconstructed: the paper leaves it open,
or the simulator's model differs from the paper's cluster).

**Users and tickets [S].** Fairness is between *users* (the trace's ``user`` column; a job with
no user is a user of its own [R]). User :math:`u` holds :math:`t_u > 0` tickets (equal by
default, configurable). The user's fair share of the cluster's :math:`C = \sum_g C_g` GPUs is its
ticket share, and the share a user cannot use (its active gangs ask for
:math:`D_u = \sum_{j \in u} n_j` GPUs in total) is redistributed among the others in ticket
proportion (water filling) [S]:

.. math::

   F_u = \min\bigl(D_u,\; \theta\, t_u\bigr), \qquad
   \theta:\; \sum_u \min(D_u, \theta\, t_u) = \min\Bigl(C, \sum_u D_u\Bigr).

The user's share is then split over the GPU types in proportion to their sizes,
:math:`E_{ug} = F_u\, C_g / C`: without trading every user holds the same fraction of every
generation [R].

**Automated trading [S], price [R].** Let :math:`r_{ug}` be user :math:`u`'s throughput per GPU
of type :math:`g`, normalized per job: the mean over its active jobs :math:`j` of
:math:`\text{rate}_{jg} / \max_h \text{rate}_{jh}` [R]. For a pair of types, the *fast* one
:math:`a` is the type with the higher :math:`\sum_u r_{ug}` (the newer generation) and the other
is the slow one :math:`b` [R]; user :math:`u`'s speedup is :math:`s_u = r_{ua} / r_{ub}`. The
user with the highest speedup (the buyer :math:`B`) trades its share of :math:`b` for the share
of :math:`a` of a user with a lower speedup [S]; here the partner is the user with the lowest
speedup (the seller :math:`S`) [R]. The price, :math:`p` GPUs of :math:`b` per GPU of :math:`a`,
lies between the two users' speedups so that both gain [S]; the exact point is the knob
:math:`\lambda \in [0, 1]` [R], default the midpoint:

.. math::

   p = s_S + \lambda\,(s_B - s_S), \qquad
   x = \min\Bigl(E_{Sa},\; \frac{E_{Bb}}{p},\; \text{demand caps}\Bigr),

   E_{Ba} \mathrel{+}= x,\quad E_{Bb} \mathrel{-}= p\,x,\quad
   E_{Sa} \mathrel{-}= x,\quad E_{Sb} \mathrel{+}= p\,x.

Measured in its own throughput :math:`T_u = \sum_g E_{ug}\, r_{ug}`, the buyer gains
:math:`x\, r_{Bb}\,(s_B - p) \ge 0` and the seller :math:`x\, r_{Sb}\,(p - s_S) \ge 0`: neither
loses, both gain strictly when :math:`0 < \lambda < 1` and :math:`s_B > s_S`. The demand caps
keep each user's total :math:`\sum_g E_{ug}` at most :math:`D_u` (a seller paid in more GPUs than
its gangs can use would gain nothing). Trades repeat over every pair of types until no pair
of users differs in speedup by more than a relative :data:`~optsched.tolerances.RATIO_TOL`, or
after :math:`4 U^2 G^2` trades (a bound, never reached in practice) [R]. Users with a zero rate
on either type of a pair do not trade that pair [R].

**Gang-aware stride scheduling [S], cluster-level [R].** Every (user, type) pair with
:math:`E_{ug} > 0` is a stride client holding :math:`E_{ug}` tickets with a *pass* :math:`P_{ug}`.
Each round the clients are visited lowest pass first (ties: user order, then type order): the
client's user runs its next job (least attained GPU-time first, ties by arrival: the user's
tickets are split equally among its jobs [S], so equal-ticket job-level stride orders them by
service) that fits in the type's remaining GPUs and has a positive rate there, and its pass
advances by the GPU-seconds it takes over its tickets,

.. math::

   P_{ug} \mathrel{+}= \frac{n_j\, \Delta}{E_{ug}},

where :math:`\Delta` is the round length; a client with no job that fits drops out of this round
(gang awareness: smaller jobs of others fill the GPUs a large gang cannot use, and the skipped
client keeps its low pass and goes first next round) [S]. A client that becomes active again
starts at :math:`\max(P_{ug}, \min_{\text{active}} P)` (Waldspurger's join rule for stride
scheduling: no credit for time away) [R]. GPUs left idle after every client has dropped out are
backfilled by the jobs still waiting, lowest user pass first (work conservation) [S];
backfilled GPU-time is charged the same way when the user holds tickets on that type [R]. GPUs
still idle then take granted jobs from types on which they run slower, largest speedup first;
nobody else can use them, so such a move is free and the charge of the type left is refunded
[R] (without it a user's job would follow the user's lowest pass down to the slowest type while
faster GPUs sat idle).

The paper splits this scheduler into a *central* stride scheduler for gangs that span servers
and *per-server local* stride schedulers for the rest, for scalability. In the simulator the
engine admits grants by GPU count per type and places them itself, so a per-server split only
changes which server an admitted job sits on, not who runs: one cluster-level stride scheduler
per type is used, its allocation equal to the split one's when every gang is placed
consolidated [R].

**Load balancing by migration [S], as defragmentation [R].** The paper migrates jobs so that
every server carries an equal ticket load, which its local schedulers need. With a cluster-level
scheduler per-server load needs no balancing; what remains is fragmentation: when a granted
gang finds no consolidated room although its type has the GPUs, every granted job of that type
is re-placed, largest gang first, best fit (first-fit decreasing), jobs that move paying the
restore cost (:attr:`GandivaFair.migrations` counts them) [R].

**Rounds [R].** Decisions every ``round_seconds`` (default 60 s, Gandiva's time slice); running
jobs are re-granted each round and keep their GPUs unless moved.

**Complexity.** Per round, with :math:`U` users, :math:`G` types and :math:`J` active jobs:
water filling :math:`O(U \log U)`, trading :math:`O(T\,G^2 U)` for :math:`T` trades (at most
:math:`4U^2G^2`), the stride pass :math:`O((J + UG) \log(UG) + JG)` (each client scans its
user's jobs once, resuming where it stopped), placement :math:`O(J \log J + J S)` for
:math:`S` servers, the idle-GPU moves :math:`O(J^2 G^2)` in the worst case (each move raises a
job's rate; usually there are none).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import (
    Grant,
    GrantPlacement,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.world.jobs import World
from optsched.tolerances import RATIO_TOL

__all__ = ["GandivaFair", "Trade", "fair_shares", "trade_shares"]


def fair_shares(
    tickets: Mapping[str, float], demand: Mapping[str, float], capacity: float
) -> dict[str, float]:
    r"""Water-filled ticket shares: :math:`F_u = \min(D_u, \theta t_u)` filling the capacity.

    Parameters
    ----------
    tickets : mapping of str to float
        Tickets per user (> 0).
    demand : mapping of str to float
        GPUs each user's active jobs ask for (>= 0); same keys as ``tickets``.
    capacity : float
        GPUs to share (>= 0).

    Returns
    -------
    dict of str to float
        :math:`F_u`, summing to :math:`\min(C, \sum_u D_u)`.

    >>> fair_shares({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 10.0}, 4.0)
    {'a': 1.0, 'b': 3.0}
    """
    out = {u: 0.0 for u in tickets}
    left = float(capacity)
    # users in order of the level theta = D/t at which their demand saturates
    order = sorted(tickets, key=lambda u: (demand[u] / tickets[u], u))
    weight = sum(tickets[u] for u in order)
    for u in order:
        if weight <= 0 or left <= 0:
            break
        level = left / weight
        share = min(demand[u], level * tickets[u])
        out[u] = share
        left -= share
        weight -= tickets[u]
    return out


@dataclass(frozen=True, slots=True)
class Trade:
    """One exchange: ``buyer`` gets ``amount`` GPUs of ``fast`` for ``price * amount`` of ``slow``.

    ``fast`` is the type the buyer values more relative to ``slow`` (higher speedup).
    """

    buyer: str
    seller: str
    fast: str
    slow: str
    amount: float
    price: float


def trade_shares(
    shares: Mapping[str, Mapping[str, float]],
    per_gpu: Mapping[str, Mapping[str, float]],
    demand: Mapping[str, float],
    *,
    price_point: float = 0.5,
) -> tuple[dict[str, dict[str, float]], list[Trade]]:
    r"""Gandiva-Fair's automated trading of GPU-type shares between users.

    Parameters
    ----------
    shares : mapping
        ``shares[u][g]``: GPUs of type ``g`` user ``u`` is entitled to (:math:`E_{ug}`).
    per_gpu : mapping
        ``per_gpu[u][g]``: the user's throughput per GPU of type ``g`` (:math:`r_{ug}`, >= 0).
    demand : mapping
        GPUs each user can use (:math:`D_u`); a trade never lifts a user's total above it.
    price_point : float
        :math:`\lambda` in :math:`p = s_S + \lambda (s_B - s_S)`.

    Returns
    -------
    shares : dict
        The shares after trading.
    trades : list of Trade
        The trades, in order.

    Notes
    -----
    See the module docstring: each trade leaves both parties' throughput
    :math:`\sum_g E_{ug} r_{ug}` no lower; each exhausts the seller's share of the fast type,
    the buyer's share of the slow type or a demand cap.

    >>> e, trades = trade_shares(
    ...     {"a": {"v": 1.0, "k": 1.0}, "b": {"v": 1.0, "k": 1.0}},
    ...     {"a": {"v": 4.0, "k": 1.0}, "b": {"v": 2.0, "k": 1.0}},
    ...     {"a": 2.0, "b": 4.0},
    ... )
    >>> trades[0].price, e["a"], e["b"]
    (3.0, {'v': 1.3333333333333333, 'k': 0.0}, {'v': 0.6666666666666667, 'k': 2.0})
    """
    if not (0.0 <= price_point <= 1.0):
        raise InvalidInstanceError("price_point", f"must be in [0, 1], got {price_point!r}")
    e = {u: dict(row) for u, row in shares.items()}
    users = sorted(e)
    types = sorted({g for row in e.values() for g in row})
    trades: list[Trade] = []
    budget = 4 * len(users) ** 2 * len(types) ** 2
    progress = True
    while progress and len(trades) < budget:
        progress = False
        for ia, a in enumerate(types):
            for b in types[ia + 1 :]:
                t = _one_trade(e, per_gpu, demand, users, a, b, price_point)
                if t is not None:
                    trades.append(t)
                    progress = True
    return e, trades


def _one_trade(
    e: dict[str, dict[str, float]],
    per_gpu: Mapping[str, Mapping[str, float]],
    demand: Mapping[str, float],
    users: Sequence[str],
    a: str,
    b: str,
    lam: float,
) -> Trade | None:
    """The trade of fast for slow GPUs between types ``a`` and ``b``, carried out, or None."""
    # the fast type of the pair is the one with the higher summed per-GPU rate (the newer
    # generation); prices are in slow GPUs per fast GPU, as in the paper's K80-for-V100 trades
    tally_a = sum(per_gpu[u].get(a, 0.0) for u in users)
    tally_b = sum(per_gpu[u].get(b, 0.0) for u in users)
    fast, slow = (a, b) if tally_a >= tally_b else (b, a)
    speed = {
        u: per_gpu[u][fast] / per_gpu[u][slow]
        for u in users
        if per_gpu[u].get(fast, 0.0) > 0 and per_gpu[u].get(slow, 0.0) > 0
    }
    # buyers of the fast type must hold slow GPUs to pay with; sellers must hold fast ones
    buyers = [u for u in speed if e[u].get(slow, 0.0) > 0]
    sellers = [u for u in speed if e[u].get(fast, 0.0) > 0]
    if not buyers or not sellers:
        return None
    buyer = max(buyers, key=lambda u: (speed[u], u))
    seller = min(sellers, key=lambda u: (speed[u], u))
    s_b, s_s = speed[buyer], speed[seller]
    if buyer == seller or not s_b > s_s * (1.0 + RATIO_TOL):
        return None
    price = s_s + lam * (s_b - s_s)
    amount = _amount(e, demand, buyer, seller, fast, slow, price)
    if amount <= 0:
        return None
    e[buyer][fast] = e[buyer].get(fast, 0.0) + amount
    e[buyer][slow] = max(0.0, e[buyer][slow] - price * amount)
    e[seller][fast] = max(0.0, e[seller][fast] - amount)
    e[seller][slow] = e[seller].get(slow, 0.0) + price * amount
    return Trade(buyer=buyer, seller=seller, fast=fast, slow=slow, amount=amount, price=price)


def _amount(
    e: dict[str, dict[str, float]],
    demand: Mapping[str, float],
    buyer: str,
    seller: str,
    fast: str,
    slow: str,
    price: float,
) -> float:
    """Largest amount of ``fast`` the pair can exchange at ``price``."""
    x = min(e[seller][fast], e[buyer][slow] / price)
    # the party whose GPU count grows must be able to use the extra GPUs
    if price > 1.0:
        room = demand[seller] - sum(e[seller].values())
        x = min(x, max(0.0, room) / (price - 1.0))
    elif price < 1.0:
        room = demand[buyer] - sum(e[buyer].values())
        x = min(x, max(0.0, room) / (1.0 - price))
    # amounts at rounding level would loop without changing anything
    return x if x > RATIO_TOL else 0.0


class GandivaFair(Policy):
    r"""Gandiva-Fair's user fair share: water filling, trading, gang-aware stride, migration.

    Parameters
    ----------
    round_seconds : float
        Scheduling quantum.
    tickets : mapping of str to float, optional
        Tickets per user (trace ``user``); users not listed hold ``default_tickets``.
    default_tickets : float
        Tickets of a user not in ``tickets``.
    trading : bool
        Trade GPU-type shares between users by speedup.
    price_point : float
        :math:`\lambda \in [0, 1]`: where the price lies between the seller's and the buyer's
        speedups (0: the seller's, 1: the buyer's).
    migration : bool
        Re-place a GPU type's jobs when a gang finds no consolidated room (defragmentation).

    Attributes
    ----------
    trades : int
        Trades carried out over the run (one per trade per round).
    migrations : int
        Jobs moved by defragmentation.
    """

    name = "gandiva-fair"

    def __init__(
        self,
        *,
        round_seconds: float = 60.0,
        tickets: Mapping[str, float] | None = None,
        default_tickets: float = 1.0,
        trading: bool = True,
        price_point: float = 0.5,
        migration: bool = True,
    ) -> None:
        if not (isinstance(round_seconds, int | float) and math.isfinite(round_seconds)) or (
            round_seconds <= 0
        ):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds!r}")
        if not (isinstance(default_tickets, int | float) and math.isfinite(default_tickets)) or (
            default_tickets <= 0
        ):
            raise InvalidInstanceError(
                "default_tickets", f"must be a finite number > 0, got {default_tickets!r}"
            )
        for user, t in (tickets or {}).items():
            if not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
                raise InvalidInstanceError(
                    f"tickets[{user!r}]", f"must be a finite number > 0, got {t!r}"
                )
        if not (isinstance(price_point, int | float) and 0.0 <= price_point <= 1.0):
            raise InvalidInstanceError("price_point", f"must be in [0, 1], got {price_point!r}")
        self.round_seconds = float(round_seconds)
        self._quantum = float(round_seconds)
        self.tickets = dict(tickets or {})
        self.default_tickets = float(default_tickets)
        self.trading = trading
        self.price_point = float(price_point)
        self.migration = migration
        self.passes: dict[tuple[str, str], float] = {}
        self._active_clients: set[tuple[str, str]] = set()
        self._virtual_time = 0.0
        self._rates: dict[str, dict[str, float]] = {}
        self.trades = 0
        self.migrations = 0

    def reset(self, world: World) -> None:
        """Forget passes and counters."""
        self.passes = {}
        self._active_clients = set()
        self._virtual_time = 0.0
        self._rates = {}
        self.trades = 0
        self.migrations = 0

    @staticmethod
    def user_of(s: JobState) -> str:
        """The job's user; a job without one is a user of its own."""
        return s.job.user if s.job.user else f"\0{s.job_id}"

    def shares(self, state: SimState) -> dict[str, dict[str, float]]:
        """:math:`E_{ug}`: each active user's GPUs per type this round (after trading)."""
        cluster = state.world.cluster
        caps = {t.name: t.count for t in cluster.gpu_types}
        total = float(sum(caps.values()))
        jobs: dict[str, list[JobState]] = {}
        for s in state.active:
            if any(r > 0 for r in self._row(state, s).values()):
                jobs.setdefault(self.user_of(s), []).append(s)
        if not jobs or total <= 0:
            return {}
        tickets = {u: float(self.tickets.get(u, self.default_tickets)) for u in jobs}
        demand = {u: float(sum(s.job.num_gpus for s in js)) for u, js in jobs.items()}
        fair = fair_shares(tickets, demand, total)
        e = {u: {g: fair[u] * c / total for g, c in caps.items()} for u in jobs}
        if not self.trading or len(jobs) < 2 or len(caps) < 2:
            return e
        per_gpu = {u: self._per_gpu(state, js) for u, js in jobs.items()}
        e, trades = trade_shares(e, per_gpu, demand, price_point=self.price_point)
        self.trades += len(trades)
        return e

    def allocate(self, state: SimState) -> PolicyDecision:
        """Shares, then a gang-aware stride pass per (user, type) client, then placement."""
        cluster = state.world.cluster
        names = cluster.names
        caps = {t.name: t.count for t in cluster.gpu_types}
        e = self.shares(state)
        # passes are charged for the round actually run (simulate may override the length);
        # event-driven runs charge the policy's quantum per decision
        delta = state.round_seconds if state.round_seconds is not None else self._quantum
        # the user's jobs, least attained GPU-time first: equal job tickets within a user
        jobs: dict[str, list[JobState]] = {}
        for s in sorted(
            state.active, key=lambda s: (s.attained_service, s.job.arrival, s.job.index)
        ):
            jobs.setdefault(self.user_of(s), []).append(s)
        users = sorted(jobs)
        rank = {u: k for k, u in enumerate(users)}
        trank = {g: k for k, g in enumerate(names)}
        clients = [
            (u, g)
            for u in users
            for g in names
            if e.get(u, {}).get(g, 0.0) > 0 and any(self._row(state, s)[g] > 0 for s in jobs[u])
        ]
        self._join(clients)
        free = dict(caps)
        granted: dict[str, str] = {}
        charged: dict[str, float] = {}  # pass charged to (user, granted type) per job
        cursor: dict[tuple[str, str], int] = {}
        heap = [(self.passes[c], rank[c[0]], trank[c[1]], c) for c in clients]
        heapq.heapify(heap)
        while heap:
            _, _, _, (u, g) = heapq.heappop(heap)
            pick = self._pick(state, jobs[u], g, free[g], granted, cursor, u)
            if pick is None:
                continue  # nothing of u fits g now: u keeps its pass (gang awareness)
            granted[pick.job_id] = g
            free[g] -= pick.job.num_gpus
            charged[pick.job_id] = pick.job.num_gpus * delta / e[u][g]
            self.passes[(u, g)] += charged[pick.job_id]
            heapq.heappush(heap, (self.passes[(u, g)], rank[u], trank[g], (u, g)))
        # work conservation: idle GPUs go to the jobs still waiting, lowest user pass first
        for u in sorted(users, key=lambda u: (self._user_pass(u, names), rank[u])):
            for g in names:
                while True:
                    pick = self._pick(state, jobs[u], g, free[g], granted, cursor, u)
                    if pick is None:
                        break
                    granted[pick.job_id] = g
                    free[g] -= pick.job.num_gpus
                    share = e.get(u, {}).get(g, 0.0)
                    if share > 0 and (u, g) in self.passes:
                        charged[pick.job_id] = pick.job.num_gpus * delta / share
                        self.passes[(u, g)] += charged[pick.job_id]
        self._upgrade(state, jobs, granted, free, charged)
        by_id = {s.job_id: s for s in state.active}
        order = [s.job_id for s in state.active if s.job_id in granted]
        placements = self._place(state, [by_id[j] for j in order], granted)
        grants = tuple(
            Grant(job=j, gpu_type=granted[j], placement=placements.get(j)) for j in order
        )
        return PolicyDecision(grants=grants)

    def _join(self, clients: list[tuple[str, str]]) -> None:
        """Waldspurger's join rule: a returning client starts no lower than the active minimum."""
        staying = [self.passes[c] for c in clients if c in self._active_clients]
        # with nobody staying, the last active minimum stands in for the global virtual time
        floor = min(staying) if staying else self._virtual_time
        for c in clients:
            if c not in self._active_clients:
                self.passes[c] = max(self.passes.get(c, floor), floor)
        self._active_clients = set(clients)
        if clients:
            self._virtual_time = max(self._virtual_time, min(self.passes[c] for c in clients))

    def _upgrade(
        self,
        state: SimState,
        jobs: Mapping[str, list[JobState]],
        granted: dict[str, str],
        free: dict[str, int],
        charged: dict[str, float],
    ) -> None:
        """Move granted jobs to idle GPUs of types they run faster on, largest speedup first.

        Nobody waits for those GPUs (the backfill found no job for them), so a move is not
        charged, and the charge of the type it leaves is refunded.
        """
        mine = [s for js in jobs.values() for s in js if s.job_id in granted]
        while True:
            best: tuple[float, int, JobState, str] | None = None
            for s in mine:
                row = self._row(state, s)
                here = row[granted[s.job_id]]
                for k, g in enumerate(state.world.cluster.names):
                    if free[g] < s.job.num_gpus:
                        continue
                    gain = row[g] / here
                    if gain > 1.0 + RATIO_TOL and (best is None or gain > best[0]):
                        best = (gain, k, s, g)
            if best is None:
                return
            _, _, s, g = best
            old = granted[s.job_id]
            free[old] += s.job.num_gpus
            free[g] -= s.job.num_gpus
            granted[s.job_id] = g
            refund = charged.pop(s.job_id, 0.0)
            if refund:
                self.passes[(self.user_of(s), old)] -= refund

    def _user_pass(self, u: str, names: Sequence[str]) -> float:
        own = [self.passes[(u, g)] for g in names if (u, g) in self.passes]
        return min(own) if own else math.inf

    def _pick(
        self,
        state: SimState,
        mine: list[JobState],
        g: str,
        free: int,
        granted: dict[str, str],
        cursor: dict[tuple[str, str], int],
        u: str,
    ) -> JobState | None:
        """The user's first job not granted that fits ``free`` GPUs of ``g`` and runs there.

        Free GPUs only decrease while jobs are picked, so a job skipped once (granted, too
        large, or not runnable on ``g``) stays skipped for the rest of the round: ``cursor``
        resumes the scan after it.
        """
        k = cursor.get((u, g), 0)
        while k < len(mine):
            s = mine[k]
            if s.job_id not in granted and s.job.num_gpus <= free and self._row(state, s)[g] > 0:
                cursor[(u, g)] = k
                return s
            k += 1
        cursor[(u, g)] = k
        return None

    def _row(self, state: SimState, s: JobState) -> dict[str, float]:
        """Rates of the job on each type, 0 where its gang does not fit (cached per run)."""
        row = self._rates.get(s.job_id)
        if row is None:
            cluster = state.world.cluster
            row = {
                t.name: max(0.0, state.rate(s, t.name)) if s.job.num_gpus <= t.count else 0.0
                for t in cluster.gpu_types
            }
            self._rates[s.job_id] = row
        return row

    def _per_gpu(self, state: SimState, js: list[JobState]) -> dict[str, float]:
        """Mean over the user's jobs of each type's rate over the job's best rate."""
        acc = dict.fromkeys(state.world.cluster.names, 0.0)
        for s in js:
            row = self._row(state, s)
            best = max(row.values())
            if best > 0:
                for g, r in row.items():
                    acc[g] += r / best
        return {g: v / len(js) for g, v in acc.items()}

    def _place(
        self, state: SimState, jobs: list[JobState], gpu_type_of: dict[str, str]
    ) -> dict[str, GrantPlacement]:
        """Explicit placements for the types that need defragmenting (others: the engine's)."""
        out: dict[str, GrantPlacement] = {}
        if not self.migration:
            return out
        for t in state.world.cluster.gpu_types:
            mine = [s for s in jobs if gpu_type_of[s.job_id] == t.name]
            if not mine:
                continue
            cap = [t.server_capacity(k) for k in range(t.num_servers)]
            if _fits_keeping(mine, t.name, t.gpus_per_server, cap):
                continue
            cap = [t.server_capacity(k) for k in range(t.num_servers)]
            placed = _first_fit_decreasing(mine, t.name, t.gpus_per_server, cap)
            if placed is None:
                continue  # even re-placed it does not fit consolidated: the engine spreads
            self.migrations += sum(
                1 for s in mine if s.placement is not None and placed[s.job_id] != s.placement
            )
            out.update(placed)
        return out


def _best_fit(cap: list[int], n: int, gps: int) -> list[tuple[int, int]] | None:
    """Consolidated servers for a gang of ``n``: best fit, or the fullest free servers."""
    need = -(-n // gps)
    if need == 1:
        fits = [k for k in range(len(cap)) if cap[k] >= n]
        if not fits:
            return None
        k = min(fits, key=lambda k: (cap[k], k))
        return [(k, n)]
    full = sorted(range(len(cap)), key=lambda k: (-cap[k], k))[:need]
    if sum(cap[k] for k in full) < n:
        return None
    chosen: list[tuple[int, int]] = []
    left = n
    for k in full:
        take = min(cap[k], left)
        if take > 0:
            chosen.append((k, take))
            left -= take
    return chosen


def _fits_keeping(mine: list[JobState], gpu_type: str, gps: int, cap: list[int]) -> bool:
    """Whether every gang finds consolidated room with running jobs kept where they are."""
    rest: list[JobState] = []
    for s in mine:
        p = s.placement
        if p is not None and p.gpu_type == gpu_type and all(cap[k] >= n for k, n in p.servers):
            for k, n in p.servers:
                cap[k] -= n
        else:
            rest.append(s)
    for s in sorted(rest, key=lambda s: (-s.job.num_gpus, s.job.arrival, s.job.index)):
        chosen = _best_fit(cap, s.job.num_gpus, gps)
        if chosen is None:
            return False
        for k, n in chosen:
            cap[k] -= n
    return True


def _first_fit_decreasing(
    mine: list[JobState], gpu_type: str, gps: int, cap: list[int]
) -> dict[str, GrantPlacement] | None:
    out: dict[str, GrantPlacement] = {}
    for s in sorted(mine, key=lambda s: (-s.job.num_gpus, s.job.arrival, s.job.index)):
        chosen = _best_fit(cap, s.job.num_gpus, gps)
        if chosen is None:
            return None
        for k, n in chosen:
            cap[k] -= n
        out[s.job_id] = GrantPlacement(gpu_type, tuple(sorted(chosen)))
    return out
