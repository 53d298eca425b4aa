r"""Certified bounds on the optimum of the simulated world, at trace scale.

The exact model (:mod:`optsched.sim.optimum.exact`) proves optima for a few dozen jobs. For real
traces
this module bounds what *any* schedule the simulator can carry out could achieve: a lower bound
on the total weighted JCT and on the makespan, an upper bound on the number of deadlines met.
Every policy's value on the same world is on the far side of the bound, so
``(value - bound) / bound`` is a certified gap: the policy is at most that far from optimal.

What a schedule may do (and so what the bounds allow). A job :math:`j` arrives at
:math:`a_j`, has work :math:`W_j` (steps), weight :math:`w_j`, and at any instant runs on at
most one gang of one GPU type (any size between its elastic bounds, consolidated or spread,
alone or sharing its GPUs with one partner) or not at all; restore costs only slow it down.
From the world's throughput table, for every job and GPU type :math:`g` (sizes :math:`n` that
fit on :math:`C_g` GPUs, both placements, and every measured partner):

* :math:`\rho_{jg}` — its fastest rate on :math:`g` (steps/s), and
  :math:`P_j = W_j / \max_g \rho_{jg}` — its shortest possible running time;
* :math:`e_{jg} = \max_n r_{jg}(n)/n` — its best work per GPU-second alone, and
  :math:`A_{jg} = W_j / e_{jg}` — the fewest GPU-seconds of type :math:`g` it needs;
* :math:`\kappa_g \ge 1` — the sharing factor of type :math:`g`: the most type-:math:`g`
  GPU-seconds of work (in :math:`A` units) one GPU-second can hold when two jobs share it,
  :math:`\max (r^{pair}_a / e_{ag} + r^{pair}_b / e_{bg}) / n` (1 without packing data);
* :math:`\sigma_g` — the same in the units of each job's best type
  (:math:`A^*_j = \min_g A_{jg}`): :math:`\max(\max_j e_{jg}/e^*_j,\ \text{pairs})`.

A job with batch-size phases (:mod:`optsched.sim.world.batch_schedule`) enters every bound below
with its work divided by its largest phase factor over every placement it could get: its rate
in any phase is at most its base rate times that factor, so the shrunk work at base rates
takes no longer, and no more GPU-seconds, than its real work (the bounds stay valid, if
looser).

**Total weighted JCT** :math:`\sum_j w_j (C_j - a_j)`, the best of

1. *isolated*: :math:`\sum_j w_j P_j`, since :math:`C_j \ge a_j + P_j`;
2. *mean busy time* (Goemans, 1997): the cluster, measured in best-type GPU-seconds, is one
   machine of speed :math:`\Sigma = \sum_g \sigma_g C_g`; any schedule's work-fraction curves
   are a preemptive schedule of that machine with processing times :math:`p_j = A^*_j / \Sigma`
   and release dates :math:`a_j`, in which the weighted mean busy time
   :math:`\sum_j w_j M_j` is at least that of the preemptive WSPT schedule (the optimum of
   Goemans's relaxation). A job whose fraction grows at most at rate
   :math:`1/\max(P_j, p_j)` has :math:`M_j \le C_j - \max(P_j, p_j)/2`, so
   :math:`\sum_j w_j (C_j - a_j) \ge \sum_j w_j (M^{WSPT}_j + \max(P_j,p_j)/2 - a_j)`;
3. *interval LP* (after Hall, Schulz, Shmoys and Wein, 1997): time cut into intervals
   :math:`I_i = [\tau_{i-1}, \tau_i)` up to a horizon :math:`H`, :math:`z_{jgi}` the fraction
   of job :math:`j` done on type :math:`g` in :math:`I_i`, :math:`t_j` the fraction after
   :math:`H_j \le H`, the end of the job's last interval (each job gets a budget of them):

   .. math::

       \min \textstyle\sum_j w_j C_j - \sum_j w_j a_j \quad\text{s.t.}\quad
       \textstyle\sum_{g,i} z_{jgi} + t_j = 1 & \text{(work)} \\
       \textstyle\sum_j A_{jg} z_{jgi} \le \kappa_g C_g |I_i| & \text{(capacity)} \\
       \textstyle\sum_g (W_j/\rho_{jg}) z_{jgi} \le |I_i \cap [a_j, \infty)| & \text{(own\_rate)} \\
       C_j \ge \textstyle\sum_{g,i} \max(\tau_{i-1}, a_j) z_{jgi} + \sum_i q_{ji}
           + H_j t_j + P_j / 2 & \text{(mean\_busy)} \\
       q_{ji} \ge P_j u_{ji} (\textstyle\sum_g z_{jgi} - u_{ji}/2),\ q \ge 0
           & \text{(spread)} \\
       C_j \ge a_j + P_j,\ z, t \ge 0 & \text{(isolated)}

   with :math:`u_{ji} = \min(1, |I_i \cap [a_j, \infty)|/P_j)` the most of the job an
   interval can hold. The *spread* rows: a fraction :math:`Z` done in an interval at rate at
   most :math:`1/P_j` has its mean busy time at least :math:`Z P_j / 2` past the interval's
   start (it is earliest when done at once at full rate), and the convex :math:`P_j Z^2/2` is
   above its tangent at :math:`u_{ji}` and above 0. Any schedule gives a feasible point with
   the same or a smaller objective, so the LP's optimum is a lower bound. Above
   :data:`LP_PART_JOBS` jobs, the jobs are cut in arrival order into parts bounded
   separately and summed: the work curves of a part's jobs in any schedule of all the jobs
   satisfy the part's own rows (its capacity rows hold a subset of the whole world's work),
   so the sum of the parts' bounds is below the optimum, and each part's LP is small enough
   for fine intervals for every job. This holds for *any* partition, so the cuts are chosen
   where the least is lost: where the aggregated machine's backlog
   :math:`B_k = \max_{i \le k} \big(\sum_{i \le l < k} p_{(l)} - (a_{(k)} - a_{(i)})\big)^+`
   (work arrived before the :math:`k`-th arrival that no schedule can have done by then) is
   least, by a dynamic program over part sizes within :data:`LP_PART_SLACK` of
   :data:`LP_PART_JOBS` (:func:`_parts`). The value used is not the solver's figure but the
   bound of the dual point it returns (weak duality, each row's multiplier clipped to its
   feasible sign, so that any dual point, optimal or not, gives a valid bound — Neumaier and
   Shcherbina, 2004).

**Makespan** (the last completion time minus the first arrival :math:`a_0`, as the run
metric; every time below is counted from :math:`a_0`), the best of :math:`\max_j (a_j + P_j)`, the
aggregated machine's :math:`\max_k\ a_{(k)} + \sum_{j: a_j \ge a_{(k)}} A^*_j / \Sigma`, and,
per threshold :math:`t` among arrival quantiles, :math:`t + T^*(t)` where :math:`T^*(t)` is the
LP optimum of fitting the work of the jobs arriving at or after :math:`t` on the types
(:math:`\sum_j A_{jg} z_{jg} \le \kappa_g C_g T`, :math:`\sum_g z_{jg} = 1`,
:math:`T \ge P_j`).

**Deadlines met** (an upper bound): jobs with :math:`a_j + P_j \le d_j` can at most all meet
theirs; the LP :math:`\max \sum_j m_j` over those, with :math:`z_{jgi}` only in intervals
before :math:`d_j` and :math:`\sum_{g,i} z_{jgi} \ge m_j \le 1` under the capacity and own-rate
rows, rounded down after its dual bound.

The bounds assume nothing about round length, so they hold for event-driven and round-based
policies alike (a round-based policy's value is often noticeably above them).

Complexity: isolated and mean-busy-time bounds :math:`O(n \log n)` after the per-job rates
(:math:`O(n G)` table look-ups, one per job group); the interval LP has
:math:`O(n I G)` columns with :math:`I` intervals chosen to keep each part's LP near a fixed
size per job, so about :math:`n / 1000` LPs of at most :math:`1000 (1 + s)` jobs each:
linear in :math:`n`; choosing the cuts is :math:`O(n \cdot 1000 s)` vectorized.

References
----------
M. X. Goemans, "Improved approximation algorithms for scheduling with release dates", SODA 1997.
L. A. Hall, A. S. Schulz, D. B. Shmoys, J. Wein, "Scheduling to minimize average completion
time: off-line and on-line approximation algorithms", Math. Oper. Res. 22(3), 1997.
A. Neumaier, O. Shcherbina, "Safe bounds in linear and mixed-integer linear programming",
Math. Program. 99, 2004.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.sim.optimum.interval_lp import (
    LP_MAX_LEVELS,
    LP_MAX_PER_LEVEL,
    LP_MIN_BLOCKS,
    LP_MIN_PER_LEVEL,
    LP_TANGENTS,
    LP_TARGET_COLUMNS,
    dual_bound,
    interval_lp,
    rescaled,
)
from optsched.sim.optimum.job_limits import JobLimits, job_limits
from optsched.sim.world.jobs import World
from optsched.tolerances import TIME_TOL

__all__ = [
    "BOUND_OBJECTIVES",
    "LP_MAX_INTERVALS",
    "LP_MAX_LEVELS",
    "LP_MAX_PER_LEVEL",
    "LP_MIN_BLOCKS",
    "LP_MIN_PER_LEVEL",
    "LP_PART_JOBS",
    "LP_PART_SLACK",
    "LP_TANGENTS",
    "LP_TARGET_COLUMNS",
    "MAKESPAN_THRESHOLDS",
    "Bound",
    "JobLimits",
    "bound",
    "bounds",
    "certified_gap",
    "job_limits",
]

Objective = Literal["weighted-jct", "makespan", "deadlines"]

#: The objectives bounded, and the side of the bound: ``"lower"`` for the minimized ones.
BOUND_OBJECTIVES: dict[str, Literal["lower", "upper"]] = {
    "weighted-jct": "lower",
    "makespan": "lower",
    "deadlines": "upper",
}

#: Most intervals of the deadline LP.
LP_MAX_INTERVALS = 256
#: Jobs per part of the interval LP: a larger world is cut, in arrival order, into parts of
#: about this many jobs, each bounded on its own (the sum of the parts' bounds is a bound).
LP_PART_JOBS = 1000
#: Parts hold between ``1 - LP_PART_SLACK`` and ``1 + LP_PART_SLACK`` times
#: :data:`LP_PART_JOBS` jobs, their cuts placed within that room where the least work is
#: carried across them (:func:`_parts`).
LP_PART_SLACK = 0.7
#: Arrival-time thresholds of the makespan LP.
MAKESPAN_THRESHOLDS = 12


@dataclass(frozen=True)
class Bound:
    """A certified bound on one objective of a world's optimum.

    Attributes
    ----------
    objective : str
    side : {"lower", "upper"}
        A lower bound for the minimized objectives, an upper bound for ``deadlines``.
    value : float
        The best of the relaxations computed.
    method : str
        The relaxation that gave ``value``.
    candidates : dict
        Every relaxation computed and its value.
    complete : bool
        False when a relaxation was skipped or stopped by the time limit (``value`` is then
        the best found so far, still valid).
    seconds : float
        Wall time.
    notes : list of str
        What was skipped and why.
    """

    objective: str
    side: Literal["lower", "upper"]
    value: float
    method: str
    candidates: dict[str, float]
    complete: bool
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "objective": self.objective,
            "side": self.side,
            "value": self.value,
            "method": self.method,
            "candidates": dict(self.candidates),
            "complete": self.complete,
            "seconds": self.seconds,
            "notes": list(self.notes),
        }


# -- per-job limits -----------------------------------------------------------------------


# -- weighted JCT ---------------------------------------------------------------------------


def _isolated(lim: JobLimits) -> float:
    return float((lim.weight * lim.own_seconds).sum())


def _mean_busy_time(lim: JobLimits) -> float:
    r"""Goemans's bound: preemptive WSPT on the aggregated machine, plus half-lengths.

    The event loop runs the available job of largest :math:`w_j / p_j` until it finishes or
    the next job arrives, accumulating :math:`\int t\,dF_j`.
    """
    speed = lim.speed
    p = lim.best_area / speed
    order = np.argsort(lim.arrival, kind="stable")
    mean_busy = np.zeros(len(p))
    remaining = p.copy()
    heap: list[tuple[float, int]] = []
    t = float(lim.arrival[order[0]]) if len(order) else 0.0
    k = 0
    n = len(order)
    while k < n or heap:
        if not heap:
            t = max(t, float(lim.arrival[order[k]]))
        while k < n and lim.arrival[order[k]] <= t:
            j = int(order[k])
            # a zero-length job finishes at once (ratio inf would be a nan key)
            heapq.heappush(heap, (-(lim.weight[j] / p[j]) if p[j] > 0 else -math.inf, j))
            k += 1
        _, j = heap[0]
        horizon = float(lim.arrival[order[k]]) if k < n else math.inf
        run = min(remaining[j], horizon - t)
        if p[j] > 0:
            mean_busy[j] += (run / p[j]) * (t + run / 2.0)
        # run == remaining exactly when the job finishes first, so the difference is 0.0
        remaining[j] -= run
        t += run
        if remaining[j] <= 0.0:
            heapq.heappop(heap)
            if p[j] <= 0:
                mean_busy[j] = t
    half = np.maximum(lim.own_seconds, p) / 2.0
    return float((lim.weight * (mean_busy + half - lim.arrival)).sum())


def _subset(lim: JobLimits, jobs: NDArray[np.int64]) -> JobLimits:
    """``lim`` restricted to ``jobs`` (the cluster-wide factors kept)."""
    import dataclasses

    per_job = ("arrival", "weight", "deadline", "work", "own_seconds")
    per_job_type = ("type_seconds", "area", "best_area")
    return dataclasses.replace(
        lim, **{name: getattr(lim, name)[jobs] for name in (*per_job, *per_job_type)}
    )


def _fluid_backlog(lim: JobLimits, order: NDArray[np.int64]) -> NDArray[np.float64]:
    r"""The aggregated machine's backlog just before each arrival, in arrival order.

    The work (in seconds of the aggregated machine, :math:`p_j = A^*_j / \Sigma`) that has
    arrived and that no schedule can have done yet: with :math:`S_k` the work of the first
    :math:`k` arrivals, :math:`B_k = (S_k - a_{(k)}) - \min_{i \le k} (S_i - a_{(i)})`
    (Lindley's recursion in closed form), the same for every work-conserving order.
    """
    p = lim.best_area[order] / lim.speed
    a = lim.arrival[order]
    before = np.concatenate([[0.0], np.cumsum(p)[:-1]]) - a
    return np.maximum(before - np.minimum.accumulate(before), 0.0)


def _parts(lim: JobLimits, size: int) -> list[NDArray[np.int64]]:
    r"""The jobs in arrival order, cut into parts of about ``size`` jobs where little is carried.

    Any partition gives a valid sum of bounds (:func:`_interval_lp_parts`); what a cut loses is
    the queueing across it, so the cuts are placed where the aggregated machine's backlog
    (:func:`_fluid_backlog`) is least. With :math:`k = \max(1, \operatorname{round}(n /
    \text{size}))`, one part if :math:`k = 1`; otherwise every part holds between
    :math:`(1 - s)` and :math:`(1 + s)` times ``size`` jobs (:data:`LP_PART_SLACK` :math:`= s`,
    so the time stays linear), and a dynamic program over the cut positions minimizes the sum
    of the backlogs at the cuts, ties going to parts nearer ``size``.

    Complexity: :math:`O(n \cdot s \cdot \text{size})` (vectorized over the window).
    """
    n = len(lim.arrival)
    order = np.argsort(lim.arrival, kind="stable").astype(np.int64)
    k = max(1, round(n / size))
    if k == 1:
        return [order]
    lo = max(1, math.floor(size * (1.0 - LP_PART_SLACK)))
    hi = max(lo + 1, 2 * lo - 1, math.ceil(size * (1.0 + LP_PART_SLACK)))
    backlog = _fluid_backlog(lim, order)
    # a cut's cost: its backlog, plus a hair per job of distance from the nominal size (the
    # tie-break), scaled far below any backlog worth a job
    tie = 1e-6 * max(float(np.median(lim.best_area / lim.speed)), TIME_TOL) / size
    cost = np.full(n + 1, math.inf)
    came = np.zeros(n + 1, dtype=np.int64)
    cost[0] = 0.0
    for c in range(lo, n + 1):
        first, last = max(0, c - hi), c - lo
        prev = cost[first : last + 1] + tie * np.abs((c - np.arange(first, last + 1)) - size)
        best = int(np.argmin(prev))
        here = prev[best] + (backlog[c] if c < n else 0.0)
        if here < cost[c]:
            cost[c], came[c] = here, first + best
    if not math.isfinite(cost[n]):
        return list(np.array_split(order, k))
    cuts = [n]
    while cuts[-1] > 0:
        cuts.append(int(came[cuts[-1]]))
    cuts.reverse()
    return [order[s:e] for s, e in itertools.pairwise(cuts)]


def _interval_lp_parts(lim: JobLimits, run: _Run) -> tuple[float, bool, str]:
    r"""The interval LP of each arrival-ordered part of the jobs, summed.

    In any schedule of all the jobs, the work curves of the jobs of a part :math:`S` satisfy
    every row of :math:`S`'s own relaxations (a capacity row of :math:`S` holds a subset of
    the work the same row of the whole world holds; the other rows are per job; the limits
    :math:`\kappa, \sigma` are the whole world's), so the schedule's cost on :math:`S` is at
    least :math:`\mathrm{LB}(S)`, and summing over a partition,
    :math:`\mathrm{OPT} = \sum_S \mathrm{cost}_S(\text{opt}) \ge \sum_S \mathrm{LB}(S)`:
    each part contributes the best of its interval LP, isolated and mean-busy-time bounds.
    What the parts lose is the queueing across their boundaries; what they gain is a fixed LP
    size per part (fine blocks for every job, a time linear in the number of jobs). A part
    whose LP does not finish in time counts its closed forms (the sum is still valid;
    ``finished`` is then False). The parts are those of :func:`_parts` (any partition would
    do; those cut at lulls lose the least), each LP with a column budget that grows with its
    part beyond :data:`LP_PART_JOBS` jobs, so that every job keeps its resolution.
    """
    parts = _parts(lim, LP_PART_JOBS)
    total, solved = 0.0, 0
    notes: list[str] = []
    for k, jobs in enumerate(parts):
        sub = _subset(lim, jobs) if len(parts) > 1 else lim
        value = max(_isolated(sub), _mean_busy_time(sub))
        left = run.left()
        if left is None or left > 0:
            # each part may use all the time left: the LP times of parts vary several-fold, and
            # an equal share would cut the slow ones while the fast ones leave time unused
            # the column budget grows with the part beyond LP_PART_JOBS, so that every job
            # keeps the same resolution whatever the size of its part
            columns = round(LP_TARGET_COLUMNS * max(1.0, len(jobs) / LP_PART_JOBS))
            lp_value, note = interval_lp(sub, _horizon(sub), left, run.solver, columns=columns)
            if math.isfinite(lp_value):
                solved += 1
            value = max(value, lp_value)
            if not notes or not math.isfinite(lp_value):
                notes.append(note if len(parts) == 1 else f"part {k + 1}: {note}")
        total += value
    note = "; ".join(notes) if notes else "interval LP: no time left"
    if len(parts) > 1:
        note = f"{len(parts)} arrival-ordered parts cut at lulls, {solved} solved; {note}"
    return (total if solved else -math.inf), solved == len(parts), note


# -- makespan -------------------------------------------------------------------------------


def _makespan_aggregated(lim: JobLimits) -> float:
    order = np.argsort(lim.arrival, kind="stable")
    arrivals = lim.arrival[order]
    suffix = np.cumsum((lim.best_area[order] / lim.speed)[::-1])[::-1]
    return float(np.max(arrivals + suffix))


def _makespan_lp(lim: JobLimits, deadline_at: float | None, solver: str) -> tuple[float, bool, str]:
    """Best of ``t + T*(t)`` over arrival-quantile thresholds (each a certified LP bound)."""
    import scipy.sparse as sp

    from optsched.solvers.matrix import LinearProgram, solve_matrix

    big_g = lim.area.shape[1]
    thresholds = np.unique(
        np.quantile(lim.arrival, np.linspace(0.0, 1.0, MAKESPAN_THRESHOLDS), method="lower")
    )
    best = -math.inf
    done = 0
    for t in thresholds:
        left = None if deadline_at is None else deadline_at - time.perf_counter()
        if left is not None and left <= 0:
            break
        jobs = np.flatnonzero(lim.arrival >= t)
        runnable = np.isfinite(lim.area[jobs])
        jj, gg = np.nonzero(runnable)
        nz = len(jj)
        m = len(jobs)
        # columns: z (nz), T; rows: work (m), capacity (G)
        rows = np.concatenate([jj, m + gg, m + np.arange(big_g)])
        cols = np.concatenate([np.arange(nz), np.arange(nz), np.full(big_g, nz)])
        vals = np.concatenate(
            [np.ones(nz), lim.area[jobs[jj], gg], -lim.share_factor * lim.capacity]
        )
        a = sp.csc_array((vals, (rows, cols)), shape=(m + big_g, nz + 1))
        cost = np.zeros(nz + 1)
        cost[-1] = 1.0
        col_lo = np.zeros(nz + 1)
        col_lo[-1] = float(lim.own_seconds[jobs].max())
        col_up = np.ones(nz + 1)
        col_up[-1] = np.inf
        lp = LinearProgram(
            cost,
            a,
            np.concatenate([np.ones(m), np.full(big_g, -np.inf)]),
            np.concatenate([np.ones(m), np.zeros(big_g)]),
            col_lo,
            col_up,
            offset=float(t),
        )
        try:
            sol = solve_matrix(lp, solver=solver, time_limit=left, accept_feasible=True)
        except NotOptimalError:
            break
        if sol.row_dual is None:
            break
        y = sol.row_dual.copy()
        # the capacity rows hold T: keep their multipliers' total within T's cost, so that
        # T's reduced cost stays >= 0 against its infinite upper bound
        caps = y[m:]
        caps = np.minimum(caps, 0.0)
        weight = float((-caps * lim.share_factor * lim.capacity).sum())
        if weight > 1.0:
            caps = caps / weight
        y[m:] = caps
        best = max(best, dual_bound(lp, y))
        done += 1
    note = f"makespan LP: {done} of {len(thresholds)} arrival thresholds"
    return best, done == len(thresholds), note


# -- deadlines ------------------------------------------------------------------------------


def _deadline_candidates(lim: JobLimits) -> NDArray[np.int64]:
    has = ~np.isnan(lim.deadline)
    reach = lim.arrival + lim.own_seconds
    # the objective's own tolerance: met when completion <= deadline within TIME_TOL relative
    slack = TIME_TOL * np.maximum(1.0, np.abs(np.where(has, lim.deadline, 0.0)))
    ok = has & (reach <= np.where(has, lim.deadline, 0.0) + slack)
    return np.flatnonzero(ok)


def _deadline_lp(
    lim: JobLimits, jobs: NDArray[np.int64], time_limit: float | None, solver: str
) -> tuple[float, str]:
    """Upper bound on deadlines met: the LP over the candidates (its dual bound, floored)."""
    import scipy.sparse as sp

    from optsched.solvers.matrix import LinearProgram, solve_matrix

    if len(jobs) == 0:
        return 0.0, "deadline LP: no candidate"
    big_g = lim.area.shape[1]
    arrival = lim.arrival[jobs]
    due = lim.deadline[jobs] + TIME_TOL * np.maximum(1.0, np.abs(lim.deadline[jobs]))
    points = np.unique(np.concatenate([arrival, due]))
    if len(points) > LP_MAX_INTERVALS + 1:
        points = np.unique(np.quantile(points, np.linspace(0, 1, LP_MAX_INTERVALS + 1)))
        points[0], points[-1] = min(points[0], arrival.min()), max(points[-1], due.max())
    intervals = len(points) - 1
    cj, cg, ci = [], [], []
    for k, j in enumerate(jobs):
        first = max(int(np.searchsorted(points, arrival[k], side="right")) - 1, 0)
        last = int(np.searchsorted(points, due[k], side="left"))
        for i in range(first, min(last, intervals)):
            for g in range(big_g):
                if np.isfinite(lim.area[j, g]):
                    cj.append(k)
                    cg.append(g)
                    ci.append(i)
    jz, gz, iz = (np.asarray(v, dtype=np.int64) for v in (cj, cg, ci))
    nz, m = len(jz), len(jobs)
    # columns: z (nz), m_j (m); rows: sum z - m >= 0 (m), capacity (G*I), own (pairs)
    start = np.maximum(points[iz], arrival[jz])
    stop = np.minimum(points[iz + 1], due[jz])
    own_len = np.maximum(stop - start, 0.0)
    pair_index = jz * intervals + iz
    uniq, inverse = np.unique(pair_index, return_inverse=True)
    own_up = np.zeros(len(uniq))
    own_up[inverse] = own_len
    g_rows = m + gz * intervals + iz
    o_rows = m + big_g * intervals + inverse
    rows = np.concatenate([jz, np.arange(m), g_rows, o_rows])
    cols = np.concatenate([np.arange(nz), nz + np.arange(m), np.arange(nz), np.arange(nz)])
    vals = np.concatenate(
        [np.ones(nz), -np.ones(m), lim.area[jobs[jz], gz], lim.type_seconds[jobs[jz], gz]]
    )
    nrows = m + big_g * intervals + len(uniq)
    a = sp.csc_array((vals, (rows, cols)), shape=(nrows, nz + m))
    width = np.diff(points)
    row_lo = np.concatenate([np.zeros(m), np.full(nrows - m, -np.inf)])
    row_up = np.concatenate(
        [
            np.full(m, np.inf),
            (lim.share_factor[:, None] * lim.capacity[:, None] * width[None, :]).ravel(),
            own_up,
        ]
    )
    # maximize sum m as minimize -sum m; the bound is then -(lower bound of the min)
    cost = np.concatenate([np.zeros(nz), -np.ones(m)])
    lp = LinearProgram(cost, a, row_lo, row_up, 0.0, 1.0)
    try:
        sol = solve_matrix(lp, solver=solver, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError as err:
        return math.inf, f"deadline LP: {err}"
    if sol.row_dual is None:
        return math.inf, "deadline LP: the solver returned no dual point"
    value = -dual_bound(lp, sol.row_dual)
    return float(math.floor(value)), f"deadline LP: {intervals} intervals, {nz + m} columns"


# -- the public functions -------------------------------------------------------------------


def _horizon(lim: JobLimits) -> float:
    """Where the interval LP's grid ends: past the aggregated makespan bound by half its span."""
    first = float(lim.arrival.min())
    makespan = max(float((lim.arrival + lim.own_seconds).max()), _makespan_aggregated(lim))
    return makespan + 0.5 * (makespan - first)


def bound(
    world: World,
    objective: str = "weighted-jct",
    *,
    time_limit: float | None = None,
    methods: Sequence[str] | None = None,
    solver: str = "highs",
    limits: JobLimits | None = None,
) -> Bound:
    """A certified bound on ``objective`` for ``world`` (see the module notes).

    Parameters
    ----------
    world : World
    objective : {"weighted-jct", "makespan", "deadlines"}
        Total weighted JCT and makespan get a lower bound, deadlines met an upper bound.
    time_limit : float, optional
        Seconds for the whole computation. The closed-form relaxations always run; the LPs
        get what is left, and one that does not finish is skipped (``complete`` is then False,
        the value still valid).
    methods : sequence of str, optional
        Restrict to these relaxations (``"isolated"``, ``"mean-busy-time"``, ``"interval-lp"``;
        ``"isolated"``, ``"aggregated"``, ``"makespan-lp"``; ``"feasible"``, ``"deadline-lp"``).
    solver : str, default "highs"
        The LP backend (:func:`optsched.solvers.matrix.solve_matrix`).
    limits : JobLimits, optional
        Precomputed :func:`job_limits` (to share between objectives).

    Returns
    -------
    Bound

    Raises
    ------
    InvalidInstanceError
        Unknown objective or method, no job, a non-positive time limit.
    """
    if objective not in BOUND_OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(BOUND_OBJECTIVES)}"
        )
    known = _METHODS[objective]
    chosen = tuple(known) if methods is None else tuple(methods)
    for m in chosen:
        if m not in known:
            raise InvalidInstanceError(
                "methods", f"unknown method {m!r} for {objective}; known: {', '.join(known)}"
            )
    if time_limit is not None and not (
        isinstance(time_limit, int | float) and math.isfinite(time_limit) and time_limit > 0
    ):
        raise InvalidInstanceError("time_limit", f"must be a number > 0, got {time_limit!r}")
    if not world.jobs:
        raise InvalidInstanceError("jobs", "a world with no job has nothing to bound")
    started = time.perf_counter()
    run = _Run(
        lim=job_limits(world) if limits is None else limits,
        chosen=chosen,
        solver=solver,
        deadline_at=None if time_limit is None else started + float(time_limit),
    )
    _RELAXATIONS[objective](run)
    candidates, notes = run.candidates, run.notes
    if not candidates:
        raise InvalidInstanceError("methods", "no relaxation was computed")
    side = BOUND_OBJECTIVES[objective]
    pick = max if side == "lower" else min
    method = pick(candidates, key=lambda k: candidates[k])
    return Bound(
        objective=objective,
        side=side,
        value=candidates[method],
        method=method,
        candidates=candidates,
        complete=run.complete,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


@dataclass
class _Run:
    """One bound computation: the inputs, the clock, what was found."""

    lim: JobLimits
    chosen: tuple[str, ...]
    solver: str
    deadline_at: float | None
    candidates: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    complete: bool = True

    def left(self) -> float | None:
        return None if self.deadline_at is None else self.deadline_at - time.perf_counter()

    def wants_lp(self, name: str) -> bool:
        """Whether LP relaxation ``name`` is chosen and time is left for it."""
        if name not in self.chosen:
            return False
        rest = self.left()
        if rest is not None and rest <= 0:
            self.notes.append(f"{name}: skipped, no time left")
            self.complete = False
            return False
        return True

    def take(self, name: str, value: float, note: str, finished: bool = True) -> None:
        self.notes.append(note)
        if math.isfinite(value):
            self.candidates[name] = value
        self.complete = self.complete and finished and math.isfinite(value)


def _weighted_jct(run: _Run) -> None:
    lim = run.lim
    if "isolated" in run.chosen:
        run.candidates["isolated"] = _isolated(lim)
    if "mean-busy-time" in run.chosen:
        run.candidates["mean-busy-time"] = _mean_busy_time(lim)
    if run.wants_lp("interval-lp"):
        value, finished, note = _interval_lp_parts(lim, run)
        run.take("interval-lp", value, note, finished)


def _makespan(run: _Run) -> None:
    # counted from the first arrival, as the makespan metric and the exact model: every
    # candidate, the LP's safety margin included, is then the same for a trace shifted in time
    lim = rescaled(run.lim, float(run.lim.arrival.min()), 1.0)
    if "isolated" in run.chosen:
        run.candidates["isolated"] = float((lim.arrival + lim.own_seconds).max())
    if "aggregated" in run.chosen:
        run.candidates["aggregated"] = _makespan_aggregated(lim)
    if run.wants_lp("makespan-lp"):
        value, finished, note = _makespan_lp(lim, run.deadline_at, run.solver)
        run.take("makespan-lp", value, note, finished)


def _deadlines(run: _Run) -> None:
    jobs = _deadline_candidates(run.lim)
    if "feasible" in run.chosen:
        run.candidates["feasible"] = float(len(jobs))
    if run.wants_lp("deadline-lp"):
        value, note = _deadline_lp(run.lim, jobs, run.left(), run.solver)
        run.take("deadline-lp", value, note)


_RELAXATIONS = {"weighted-jct": _weighted_jct, "makespan": _makespan, "deadlines": _deadlines}

_METHODS: dict[str, tuple[str, ...]] = {
    "weighted-jct": ("isolated", "mean-busy-time", "interval-lp"),
    "makespan": ("isolated", "aggregated", "makespan-lp"),
    "deadlines": ("feasible", "deadline-lp"),
}


def bounds(
    world: World,
    objectives: Sequence[str] = ("weighted-jct", "makespan", "deadlines"),
    *,
    time_limit: float | None = None,
    solver: str = "highs",
) -> dict[str, Bound]:
    """:func:`bound` for each objective, sharing the per-job limits and the time limit.

    The closed-form makespan and deadline bounds and their small LPs run first; the interval
    LP of the weighted JCT, the costly one, gets whatever time is left.
    """
    started = time.perf_counter()
    if not world.jobs:
        raise InvalidInstanceError("jobs", "a world with no job has nothing to bound")
    lim = job_limits(world)
    order = sorted(objectives, key=lambda o: o == "weighted-jct")
    out: dict[str, Bound] = {}
    for k, objective in enumerate(order):
        rest = None
        if time_limit is not None:
            # an equal share of what is left for all but the last, which gets the rest
            rest = (time_limit - (time.perf_counter() - started)) / (len(order) - k)
            rest = max(rest, 1e-9)
        out[objective] = bound(world, objective, time_limit=rest, solver=solver, limits=lim)
    return {o: out[o] for o in objectives}


def certified_gap(objective: str, value: float, best_bound: float) -> float:
    """How far ``value`` is at most from the optimum, given a bound on it.

    Relative for the minimized objectives (:math:`(v - b)/b`), in jobs for ``deadlines``
    (:math:`b - v`); NaN when either is NaN or the lower bound is not positive.
    """
    if objective not in BOUND_OBJECTIVES:
        raise InvalidInstanceError("objective", f"unknown objective {objective!r}")
    if math.isnan(value) or math.isnan(best_bound):
        return math.nan
    if objective == "deadlines":
        return best_bound - value
    return (value - best_bound) / best_bound if best_bound > 0 else math.nan
