r"""Themis: finish-time fairness by partial-allocation auctions over leases (a heuristic).

Themis (Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020) gives
GPUs out in *leases*. At every lease an arbiter estimates each app's finish-time fairness
:math:`\rho`, offers the GPUs to the fraction :math:`1 - f` of apps with the worst
:math:`\rho` (:math:`f \in [0, 1)` is the fairness knob), collects from each offered app a table of
its :math:`\rho` under every bundle of the offered GPUs, runs the Partial Allocation mechanism of
Cole, Gkatzelis and Goel ("Mechanism design for fair division: allocating divisible items without
payments", EC 2013) on the valuations :math:`v = \rho_{\text{old}}/\rho_{\text{new}}`, and hands
what is left work-conservingly to the apps that did not take part.

This module is that mechanism over the allocation family's input: it takes an
:class:`~optsched.allocation.gavel.AllocationInstance` and returns the family's
:class:`~optsched.allocation.gavel.Allocation` (time fractions :math:`X_{mj}` of the lease), so its
allocation is validated by :func:`~optsched.allocation.gavel.validate` and its worst :math:`\rho` is
compared with the exact min-max-:math:`\rho` LP (``solve(instance, "ftf-perf")``), which it can
never beat.

Finish-time fairness
    Defined exactly as the allocation family's ``ftf`` objective
    (:func:`~optsched.allocation.gavel.objective_value`): for job :math:`m` with :math:`\sigma_m`
    steps
    left, :math:`t_m` seconds since arrival, isolated-time history :math:`h_m` and isolated-share
    throughput :math:`q_m` (:func:`~optsched.allocation.gavel.shares.isolated_throughput`, the
    :math:`1/N` share of every GPU type),

    .. math::

        \rho_m = \frac{t_m + \tau_m}{c_m}, \qquad c_m = h_m + \sigma_m / q_m,

    with :math:`\tau_m` the time the job still needs. The ``ftf`` objective takes
    :math:`\tau_m = \sigma_m / \theta_m(X)` for a steady allocation :math:`X`; a bid prices one
    lease of :math:`L` seconds, so its :math:`\tau_m` is that of the plan "this lease on the
    bundle, the isolated share after it":

    .. math::

        \tau_m(j) = \begin{cases} \sigma_m / T_{mj} & \sigma_m \le L T_{mj}\\
        L + (\sigma_m - L T_{mj}) / q_m & \text{otherwise,}\end{cases}
        \qquad \tau_m(\varnothing) = L + \sigma_m / q_m .

    An app's :math:`\rho` is the largest of its jobs' (an app finishes with its last job);
    :math:`\rho_a(\varnothing)` is the app's current estimate (what it reaches if it gets nothing
    this lease). The valuation of bundle :math:`b` is
    :math:`v_a(b) = \rho_a(\varnothing) / \rho_a(b) \ge 1` (equal to 1 for the empty bundle).

Partial Allocation
    With :math:`\mathcal B_a` the bundles of app :math:`a` and :math:`u(b) \in \mathbb Z^K` the GPUs
    per type bundle :math:`b` uses, the arbiter computes the maximal Nash social welfare over
    integral bundles

    .. math::

        z \in \arg\max_{b_a \in \mathcal B_a} \prod_a v_a(b_a) \quad\text{s.t.}\quad
        \sum_a u(b_a) \le n ,

    and, for every app :math:`a`, the same optimum :math:`W_{-a}` without :math:`a`. App
    :math:`a` receives the fraction

    .. math::

        c_a = \frac{\prod_{a' \ne a} v_{a'}(z_{a'})}{W_{-a}} \in (0, 1]

    of its bundle :math:`z_a`: here, the time fraction :math:`X_{mj} = c_a` of the lease for each
    of its jobs on the type its bundle gives it. (:math:`c_a \le 1` because :math:`z` restricted
    to the others is feasible without :math:`a`; :math:`c_a > 0` because every value is
    :math:`\ge 1`.)

Choices the paper leaves open, made here
    * **Apps.** An app is a job unless ``apps`` maps job ids to app names (a user or virtual
      cluster); jobs with no steps left take no part.
    * **What is offered.** Every GPU of the cluster at every lease (all leases have the same
      length and start together, so they all expire at once).
    * **How many apps are offered.** :math:`\lceil (1 - f) A \rceil` of the :math:`A` apps, the
      worst :math:`\rho_a(\varnothing)` first (ties: instance order); at least one.
    * **Bundles and the gang constraint.** In a lease a job gets its whole gang of one GPU type
      or nothing; an app's bundles are every choice "a type or nothing" for each of its jobs whose
      GPUs fit the offer. The enumeration :math:`\sum_a \prod_{m \in a} (1 + K_m)` is checked
      against ``limits.max_events`` before it runs.
    * **Maximising the Nash welfare.** Exactly, over integral bundles, as a dynamic program
      over GPUs used per type (maximise :math:`\sum_a \log v_a`): states
      :math:`S = \prod_j (\min(n_j, D_j) + 1)` with :math:`D_j` the most GPUs of type :math:`j`
      the offered apps can use; a prefix and a suffix pass give every :math:`W_{-a}` from one
      maximisation over states each. Ties go to the earlier bundle (the empty one first). Time
      :math:`O(S \sum_a |\mathcal B_a|)`, memory :math:`O(S A)`, both checked against
      ``limits`` (``max_events``, ``max_array_cells``) before allocating.
    * **The fraction withheld.** :math:`1 - c_a` of the lease on the app's bundle goes back to
      the pool. A loss :math:`\log W_{-a} - \sum_{a' \ne a} \log v_{a'}(z_{a'})` within
      :data:`~optsched.tolerances.UTILITY_TOL` counts as none (:math:`c_a = 1`): the two sums are
      taken in different orders and round apart.
    * **Leftovers.** Every GPU-time of the lease not given out (unwon GPUs, withheld fractions)
      goes to the jobs of the apps that did not take part, worst :math:`\rho_a(\varnothing)`
      first, each on its types fastest first, as much of the lease as is left of the GPUs (a
      time fraction of its gang): work-conserving as long as non-participants can use it. With
      :math:`f = 0` everyone takes part and the withheld time stays idle in :math:`X`; the
      auction itself leaves no GPU unwon that a losing job's gang could use (every value of a
      runnable bundle exceeds 1, so adding it would raise the Nash welfare). In the simulator
      the round mechanism runs a winner on its gang for the whole lease when it admits it; the
      withheld fraction shows in later leases, through the priority :math:`X_{mj}` over the share
      of leases received.
    * **Throughputs** are each job's own per type (heterogeneity-aware), as Themis's agents
      estimate them; compare with the aware exact LP ``ftf-perf``.

Complexity: :math:`O(MK)` to price the bids, the dynamic program above, :math:`O(MK \log K)`
for the leftovers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import _ftf_terms, objective_value
from optsched.allocation.gavel.shares import isolated_throughput
from optsched.allocation.gavel.solution import Allocation
from optsched.errors import InvalidInstanceError
from optsched.tolerances import FIT_TOL, UTILITY_TOL, WORK_TOL

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_FAIRNESS",
    "DEFAULT_LEASE_SECONDS",
    "Bid",
    "PartialAllocation",
    "ThemisOutcome",
    "check_options",
    "lease_rho",
    "partial_allocation",
    "themis",
    "themis_round",
]

#: The fairness knob :math:`f`: the fraction of apps *not* offered GPUs in a lease.
DEFAULT_FAIRNESS = 0.8
#: Lease length in seconds (Themis's leases are about ten minutes).
DEFAULT_LEASE_SECONDS = 600.0


def check_options(fairness: float, lease_s: float) -> None:
    """Refuse a fairness knob outside :math:`[0, 1)` or a lease that is not a positive number.

    Raises
    ------
    InvalidInstanceError
        Naming ``fairness`` or ``lease_s``.
    """
    if isinstance(fairness, bool) or not isinstance(fairness, int | float):
        raise InvalidInstanceError("fairness", f"must be a number in [0, 1), got {fairness!r}")
    if not (math.isfinite(fairness) and 0.0 <= fairness < 1.0):
        raise InvalidInstanceError("fairness", f"must be in [0, 1), got {fairness!r}")
    if isinstance(lease_s, bool) or not isinstance(lease_s, int | float):
        raise InvalidInstanceError("lease_s", f"must be a number > 0, got {lease_s!r}")
    if not (math.isfinite(lease_s) and lease_s > 0):
        raise InvalidInstanceError("lease_s", f"must be finite and > 0, got {lease_s!r}")


def lease_rho(
    instance: AllocationInstance, lease_s: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Every job's :math:`\rho` after one lease: with nothing, and with its gang on each type.

    Returns
    -------
    rho_none : ndarray, shape (jobs,)
        :math:`\rho_m(\varnothing)`; NaN for a job with no steps left.
    rho_on : ndarray, shape (jobs, types)
        :math:`\rho_m(j)`; ``inf`` where the job cannot run (zero throughput, or a gang larger
        than the type), NaN for a job with no steps left. See the module notes.
    """
    t = instance.throughputs
    sigma, since, c = _ftf_terms(instance, t)
    q = isolated_throughput(t, instance.scale_factors, instance.capacities)
    active = sigma > 0
    lease = float(lease_s)
    m, k = t.shape
    rho_none = np.full(m, np.nan)
    rho_on = np.full((m, k), np.nan)
    if not active.any():
        return rho_none, rho_on
    sa, ta, ca, qa, tt = sigma[active], since[active], c[active], q[active], t[active]
    rho_none[active] = (ta + lease + sa / qa) / ca
    fits = (tt > 0) & (instance.scale_factors[active][:, None] <= instance.capacities[None, :])
    safe = np.where(fits, tt, 1.0)
    done_in_lease = sa[:, None] <= lease * safe
    tau = np.where(
        done_in_lease, sa[:, None] / safe, lease + (sa[:, None] - lease * safe) / qa[:, None]
    )
    rho_on[active] = np.where(fits, (ta[:, None] + tau) / ca[:, None], np.inf)
    return rho_none, rho_on


@dataclass(frozen=True, eq=False)
class Bid:
    r"""One app's table: its :math:`\rho` under every bundle of the offered GPUs.

    Attributes
    ----------
    app : str
    jobs : tuple of int
        Indices (in the instance) of the app's jobs with steps left.
    bundles : tuple of tuple of int
        Per bundle, the GPU type index each job gets (``-1``: none). Bundle 0 gives nothing.
    usage : ndarray of int, shape (bundles, types)
        GPUs of each type the bundle uses.
    rho : ndarray, shape (bundles,)
        :math:`\rho_a(b)`, the app's finish-time fairness after the lease under bundle ``b``.
    """

    app: str
    jobs: tuple[int, ...]
    bundles: tuple[tuple[int, ...], ...]
    usage: NDArray[np.int64]
    rho: NDArray[np.float64]

    @property
    def values(self) -> NDArray[np.float64]:
        r""":math:`v_a(b) = \rho_a(\varnothing) / \rho_a(b)` (1 for the empty bundle)."""
        return np.asarray(self.rho[0] / self.rho, dtype=np.float64)


@dataclass(frozen=True)
class PartialAllocation:
    r"""The Partial Allocation mechanism's outcome.

    Attributes
    ----------
    choice : tuple of int
        Per app, the index of its bundle in the maximal Nash welfare allocation :math:`z`.
    log_welfare : float
        :math:`\log W^* = \sum_a \log v_a(z_a)`.
    log_welfare_without : tuple of float
        Per app :math:`a`, :math:`\log W_{-a}`, the maximal log Nash welfare of the others alone.
    fractions : tuple of float
        Per app, :math:`c_a \in (0, 1]`, the fraction of its bundle it receives.
    """

    choice: tuple[int, ...]
    log_welfare: float
    log_welfare_without: tuple[float, ...]
    fractions: tuple[float, ...]


Move = tuple[tuple[slice, ...], tuple[slice, ...]]


def _shift(dims: tuple[int, ...], g: NDArray[np.int64]) -> Move | None:
    """Slices (destination, source) moving a state array by usage ``g``; None if it leaves it."""
    if any(int(gj) >= d for gj, d in zip(g, dims, strict=True)):
        return None
    dst = tuple(slice(int(gj), None) for gj in g)
    src = tuple(slice(0, d - int(gj)) for gj, d in zip(g, dims, strict=True))
    return dst, src


def _add_app(
    table: NDArray[np.float64],
    moves: list[Move | None],
    logv: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.int32]]:
    """One DP stage: best value per exact usage after adding one app; the argmax bundle."""
    best = np.full(table.shape, -np.inf)
    arg = np.zeros(table.shape, dtype=np.int32)
    for b, move in enumerate(moves):
        if move is None:
            continue
        dst, src = move
        cand = table[src] + logv[b]
        better = cand > best[dst]  # strict: the earlier bundle keeps ties
        best[dst] = np.where(better, cand, best[dst])
        arg[dst] = np.where(better, b, arg[dst])
    return best, arg


def _at_most(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Best value using *at most* each usage (running maximum along every axis)."""
    out = table
    for axis in range(table.ndim):
        out = np.maximum.accumulate(out, axis=axis)
    return out


def partial_allocation(
    usages: Sequence[NDArray[np.int64]],
    values: Sequence[NDArray[np.float64]],
    capacity: Sequence[int] | NDArray[np.int64],
) -> PartialAllocation:
    r"""Cole-Gkatzelis-Goel Partial Allocation over integral bundles, exactly.

    Parameters
    ----------
    usages : sequence of int arrays, shape (bundles_a, K)
        Per app, GPUs per type of each bundle; row 0 must be the empty bundle (all zeros).
    values : sequence of arrays, shape (bundles_a,)
        Per app, the (positive, finite) value of each bundle.
    capacity : sequence of int
        GPUs offered per type.

    Returns
    -------
    PartialAllocation

    Notes
    -----
    The maximal Nash welfare :math:`\max \prod_a v_a(b_a)` subject to
    :math:`\sum_a u(b_a) \le n` is found by a dynamic program over the exact GPUs used per type
    (maximising :math:`\sum_a \log v_a`), over states capped at :math:`\min(n_j, D_j)` with
    :math:`D_j` the apps' largest possible total use of type :math:`j`. Prefix tables
    :math:`F_a` (apps before :math:`a`, exact use) and suffix tables :math:`G_{a+1}` (apps after,
    at most a use) give :math:`\log W_{-a} = \max_u F_a(u) + G_{a+1}(\bar n - u)`. Sizes are
    checked against ``limits`` (``max_array_cells``: :math:`(2A + 2) S` cells;
    ``max_events``: :math:`2 S \sum_a |\mathcal B_a|`) before any table is allocated.

    Examples
    --------
    >>> import numpy as np
    >>> pa = partial_allocation(
    ...     [np.array([[0], [1]]), np.array([[0], [1]])],
    ...     [np.array([1.0, 3.0]), np.array([1.0, 2.0])], [1])
    >>> pa.choice, [round(c, 4) for c in pa.fractions]
    ((1, 0), [0.5, 1.0])
    """
    n_apps = len(usages)
    if len(values) != n_apps:
        raise InvalidInstanceError("values", f"needs one table per app ({n_apps})")
    cap = np.asarray(capacity, dtype=np.int64)
    if cap.ndim != 1 or cap.size == 0 or (cap < 0).any():
        raise InvalidInstanceError("capacity", "must be a non-empty list of counts >= 0")
    k = cap.size
    us: list[NDArray[np.int64]] = []
    logs: list[NDArray[np.float64]] = []
    for a in range(n_apps):
        u = np.asarray(usages[a], dtype=np.int64).reshape(-1, k)
        v = np.asarray(values[a], dtype=np.float64).reshape(-1)
        if u.shape[0] == 0 or u.shape[0] != v.size:
            raise InvalidInstanceError(f"values[{a}]", "needs one value per bundle, at least one")
        if (u[0] != 0).any() or (u < 0).any():
            raise InvalidInstanceError(f"usages[{a}]", "row 0 must be the empty bundle, all >= 0")
        if not (np.isfinite(v).all() and (v > 0).all()):
            raise InvalidInstanceError(f"values[{a}]", "must be finite and > 0")
        us.append(u)
        logs.append(np.log(v))
    demand = np.zeros(k, dtype=np.int64)
    for u in us:
        demand += u.max(axis=0)
    dims = tuple(int(d) + 1 for d in np.minimum(cap, demand))
    states = float(np.prod(np.array(dims, dtype=np.float64)))
    limits.check_size("capacity", (2 * n_apps + 2) * states, "max_array_cells", "DP cells")
    limits.check_size(
        "bids", 2 * states * float(sum(u.shape[0] for u in us)), "max_events", "DP steps"
    )
    moves = [[_shift(dims, g) for g in u] for u in us]
    start = np.full(dims, -np.inf)
    start[(0,) * k] = 0.0
    prefix = [start]
    args: list[NDArray[np.int32]] = []
    for a in range(n_apps):
        table, arg = _add_app(prefix[-1], moves[a], logs[a])
        prefix.append(table)
        args.append(arg)
    final = prefix[-1]
    flat = int(np.argmax(final))
    log_welfare = float(final.flat[flat])
    # Backtrack z from the best final state.
    state = np.array(np.unravel_index(flat, dims), dtype=np.int64)
    choice = [0] * n_apps
    for a in range(n_apps - 1, -1, -1):
        b = int(args[a][tuple(state)])
        choice[a] = b
        state = state - us[a][b]
    # Leave-one-out optima from the prefix tables and a suffix pass.
    flip = tuple(slice(None, None, -1) for _ in range(k))
    without = [0.0] * n_apps
    suffix = start
    for a in range(n_apps - 1, -1, -1):
        without[a] = float(np.max(prefix[a] + _at_most(suffix)[flip]))
        suffix, _ = _add_app(suffix, moves[a], logs[a])
    fractions = []
    for a in range(n_apps):
        others = log_welfare - float(logs[a][choice[a]])
        # others <= without[a] in exact arithmetic; sums taken in another order round apart, so
        # a loss within UTILITY_TOL is no loss (c_a = 1) and rounding never lifts c_a above 1.
        loss = without[a] - others
        fractions.append(
            1.0 if loss <= UTILITY_TOL * max(1.0, abs(without[a])) else math.exp(-loss)
        )
    return PartialAllocation(
        choice=tuple(choice),
        log_welfare=log_welfare,
        log_welfare_without=tuple(without),
        fractions=tuple(fractions),
    )


@dataclass(frozen=True, eq=False)
class ThemisOutcome:
    r"""One lease of Themis: the allocation and how it was reached.

    Attributes
    ----------
    allocation : Allocation
        Time fractions of the lease (policy ``"themis"``).
    apps : tuple of str
        Every app with steps left, in instance order.
    rho_empty : tuple of float
        Per app, :math:`\rho_a(\varnothing)` (its current estimate, the offer's ranking key).
    participants : tuple of str
        The apps offered GPUs, worst first.
    bids : tuple of Bid
        The participants' tables (same order).
    auction : PartialAllocation
        The mechanism's outcome over ``bids``.
    max_rho : float
        :math:`\max_m \rho_m(X)` of the allocation, the family's ``ftf`` objective.
    """

    allocation: Allocation
    apps: tuple[str, ...]
    rho_empty: tuple[float, ...]
    participants: tuple[str, ...]
    bids: tuple[Bid, ...]
    auction: PartialAllocation
    max_rho: float

    def to_frame(self) -> pd.DataFrame:
        """One row per app: its estimate, whether it took part, its bundle, value and fraction."""
        import pandas as pd

        won = {bid.app: (bid, b, c) for bid, b, c in _zip_auction(self)}
        rows: list[dict[str, Any]] = []
        for app, rho in zip(self.apps, self.rho_empty, strict=True):
            row: dict[str, Any] = {"app": app, "rho_empty": rho, "participant": app in won}
            if app in won:
                bid, b, c = won[app]
                gpus = self.allocation.gpu_types
                row["bundle"] = ",".join(
                    f"{gpus[j]}:{n}" for j, n in enumerate(bid.usage[b]) if n > 0
                )
                row["value"] = float(bid.values[b])
                row["fraction"] = c
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return (
            f"ThemisOutcome(apps={len(self.apps)}, participants={len(self.participants)}, "
            f"max_rho={self.max_rho:.6g})"
        )


def _zip_auction(outcome: ThemisOutcome) -> list[tuple[Bid, int, float]]:
    return list(zip(outcome.bids, outcome.auction.choice, outcome.auction.fractions, strict=True))


def _apps(
    instance: AllocationInstance, apps: Mapping[str, str] | None, active: NDArray[np.bool_]
) -> list[tuple[str, list[int]]]:
    """Apps (name, job indices with steps left) in order of first appearance."""
    ids = [j.job_id for j in instance.jobs]
    if apps is not None:
        known = set(ids)
        for job_id, app in apps.items():
            if job_id not in known:
                raise InvalidInstanceError(f"apps[{job_id!r}]", "is not a job of the instance")
            if not isinstance(app, str) or not app:
                raise InvalidInstanceError(f"apps[{job_id!r}]", "must be a non-empty app name")
    groups: dict[str, list[int]] = {}
    for m, job_id in enumerate(ids):
        if not active[m]:
            continue
        name = job_id if apps is None else apps.get(job_id, job_id)
        groups.setdefault(name, []).append(m)
    return list(groups.items())


def _bid(
    instance: AllocationInstance,
    app: str,
    jobs: list[int],
    rho_none: NDArray[np.float64],
    rho_on: NDArray[np.float64],
    offered: NDArray[np.int64],
) -> Bid:
    k = instance.n_types
    sf = instance.scale_factors.astype(np.int64)
    options = [
        [-1] + [j for j in range(k) if math.isfinite(rho_on[m, j]) and sf[m] <= offered[j]]
        for m in jobs
    ]
    bundles: list[tuple[int, ...]] = []
    usage: list[NDArray[np.int64]] = []
    rho: list[float] = []
    for combo in itertools.product(*options):  # size checked by the caller
        use = np.zeros(k, dtype=np.int64)
        for m, j in zip(jobs, combo, strict=True):
            if j >= 0:
                use[j] += sf[m]
        if (use > offered).any():
            continue
        bundles.append(tuple(combo))
        usage.append(use)
        rho.append(
            max(
                float(rho_on[m, j]) if j >= 0 else float(rho_none[m])
                for m, j in zip(jobs, combo, strict=True)
            )
        )
    return Bid(
        app=app,
        jobs=tuple(jobs),
        bundles=tuple(bundles),
        usage=np.array(usage, dtype=np.int64).reshape(-1, k),
        rho=np.array(rho, dtype=np.float64),
    )


def themis_round(
    instance: AllocationInstance,
    *,
    fairness: float = DEFAULT_FAIRNESS,
    lease_s: float = DEFAULT_LEASE_SECONDS,
    apps: Mapping[str, str] | None = None,
) -> ThemisOutcome:
    r"""One lease of Themis on ``instance``, with every intermediate step (module notes).

    Parameters
    ----------
    instance : AllocationInstance
    fairness : float
        The knob :math:`f \in [0, 1)`: offer the GPUs to the :math:`1 - f` worst apps.
    lease_s : float
        The lease length :math:`L` (> 0).
    apps : mapping of str to str, optional
        Job id -> app name (a user or virtual cluster); unmapped jobs are apps of their own.

    Returns
    -------
    ThemisOutcome

    Raises
    ------
    InvalidInstanceError
        A bad option (naming ``fairness``, ``lease_s`` or ``apps[...]``), or an auction
        larger than ``limits`` allows (naming ``apps``, ``capacity`` or ``bids``).

    Examples
    --------
    >>> from optsched.allocation.gavel import generate_instance, validate
    >>> inst = generate_instance(6, seed=1)
    >>> out = themis_round(inst, fairness=0.5)
    >>> len(out.participants), validate(inst, out.allocation).ok
    (3, True)
    """
    check_options(fairness, lease_s)
    m, k = instance.n_jobs, instance.n_types
    active = instance.steps > 0
    groups = _apps(instance, apps, active)
    rho_none, rho_on = lease_rho(instance, lease_s)
    offered = np.asarray(instance.capacity, dtype=np.int64)
    x = np.zeros((m, k))
    names = tuple(name for name, _ in groups)
    rho_app = tuple(max(float(rho_none[i]) for i in jobs) for _, jobs in groups)
    n_apps = len(groups)
    n_offer = min(n_apps, max(1, math.ceil((1.0 - fairness) * n_apps - WORK_TOL)))
    order = sorted(range(n_apps), key=lambda a: (-rho_app[a], a))
    chosen = order[:n_offer] if n_apps else []
    # The bundle enumeration's size, checked before it runs.
    options = sum(
        math.prod(1 + int(np.isfinite(rho_on[i]).sum()) for i in groups[a][1]) for a in chosen
    )
    limits.check_size("apps", float(options), "max_events", "bundles")
    bids = tuple(_bid(instance, *groups[a], rho_none, rho_on, offered) for a in chosen)
    auction = (
        partial_allocation([b.usage for b in bids], [b.values for b in bids], offered)
        if bids
        else PartialAllocation((), 0.0, (), ())
    )
    for bid, b, c in zip(bids, auction.choice, auction.fractions, strict=True):
        for i, j in zip(bid.jobs, bid.bundles[b], strict=True):
            if j >= 0:
                x[i, j] = c
    # Leftovers, work-conserving, to the apps that did not take part (worst first).
    sf = instance.scale_factors
    left = instance.capacities - sf @ x
    t = instance.throughputs
    for a in order[n_offer:]:
        for i in groups[a][1]:
            time_left = 1.0
            for j in sorted(range(k), key=lambda j: (-t[i, j], j)):
                if time_left <= 0 or not math.isfinite(rho_on[i, j]) or left[j] <= 0:
                    continue
                share = min(time_left, left[j] / sf[i])
                if share <= FIT_TOL:
                    continue  # rounding dust of a full type, not GPU-time to hand out
                x[i, j] += share
                time_left -= share
                left[j] = max(0.0, left[j] - share * sf[i])
    allocation = Allocation(
        job_ids=tuple(j.job_id for j in instance.jobs),
        gpu_types=instance.gpu_types,
        fractions=x,
        policy="themis",
    )
    return ThemisOutcome(
        allocation=allocation,
        apps=names,
        rho_empty=rho_app,
        participants=tuple(names[a] for a in chosen),
        bids=bids,
        auction=auction,
        max_rho=objective_value(instance, x, "ftf", True),
    )


def themis(
    instance: AllocationInstance,
    *,
    fairness: float = DEFAULT_FAIRNESS,
    lease_s: float = DEFAULT_LEASE_SECONDS,
    apps: Mapping[str, str] | None = None,
) -> Allocation:
    """Themis's allocation of one lease (the heuristic's calling convention of the family).

    The same as ``themis_round(...).allocation``; see :func:`themis_round`.

    Examples
    --------
    >>> from optsched.allocation.gavel import generate_instance, objective_value, solve
    >>> inst = generate_instance(5, seed=3)
    >>> x = themis(inst, fairness=0.0)
    >>> exact = solve(inst, "ftf-perf")
    >>> objective_value(inst, x.fractions, "ftf") >= exact.bound
    True
    """
    return themis_round(instance, fairness=fairness, lease_s=lease_s, apps=apps).allocation
