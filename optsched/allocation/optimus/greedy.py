r"""Optimus's marginal-gain allocation (the published heuristic).

1. Every job gets one PS and one worker (the instance guarantees they fit).
2. Each job's two candidate moves, one more PS or one more worker, are keyed by their *gain*:
   the reduction of the job's remaining time :math:`T_j(p, w) = Q_j / f_j(p, w)` per unit of the
   added task's dominant resource,

   .. math::

       g^{ps}_j = \frac{T_j(p, w) - T_j(p + 1, w)}{s_j^{r^*}},\qquad
       g^{w}_j = \frac{T_j(p, w) - T_j(p, w + 1)}{d_j^{r^*}},

   with :math:`r^*` the resource in which the task's demand is the largest share of the
   capacity. ``per="demand"`` divides by the raw demand in :math:`r^*` (the published
   scheduler's code), ``per="share"`` by the share :math:`s_j^{r^*}/C^{r^*}`. A task demanding
   nothing has an infinite gain when it helps.
3. The best move is popped from a max-heap; if it fits in what is left it is made and the job's
   moves are re-keyed, else that move is dropped. It stops when the best gain is :math:`\le 0`
   (no move helps) or no move is left.

Termination and complexity: a made move raises :math:`\sum_j (p_j + w_j)`, bounded by
:math:`\sum_j (\bar P_j + \bar W_j)`; a dropped move is never pushed again until its job moves.
So there are at most :math:`S = \sum_j(\bar P_j + \bar W_j)` made moves and :math:`2J + 2S`
pushes, :math:`O((J + S)\log J)` time.

**When it is optimal.** If every :math:`p_j` is fixed (:math:`\bar P_j = 1`), every worker demands
the same vector :math:`d` and every :math:`T_j(1, w)` is convex in :math:`w` (true of all three
speed models at :math:`p = 1`: :math:`T_j = Q_j(a_j/w + b_j + c_j w)` with :math:`a, b, c \ge 0`,
the ``async`` one with :math:`c_j = 0`), the problem is :math:`\min \sum_j T_j(w_j)` over
:math:`\sum_j w_j \le N` with :math:`N` the workers that fit, a separable convex resource
allocation problem with one unit-demand resource. Its greedy, adding one unit at a time where the
marginal reduction is largest, is optimal (Gross 1956; Ibaraki & Katoh, *Resource Allocation
Problems*, MIT Press 1988, Thm. 4.1.1): by convexity the reductions of each job are
nonincreasing, so the greedy takes the :math:`N` largest of all of them, which is an upper bound
on what any allocation of :math:`N` units saves; stopping at a nonpositive gain is right because
all later reductions of that job are nonpositive too. Dividing by the common demand changes no
order. The tests check greedy = MILP in this case and record, as a Hypothesis event, how often the
greedy is optimal outside it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np

from optsched.allocation.optimus.instance import OptimusInstance, OptimusJob
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.errors import InvalidInstanceError
from optsched.tolerances import FIT_TOL

__all__ = ["MarginalGain", "grow_by_marginal_gain", "marginal_gain"]

Per = Literal["demand", "share"]


def _unit(demand: np.ndarray, capacity: np.ndarray, per: Per) -> float:
    """The divisor of a task's gain: its demand (or share) in its dominant resource."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(capacity > 0, demand / capacity, np.where(demand > 0, np.inf, 0.0))
    r = int(np.argmax(share))
    if share[r] <= 0:
        return 0.0
    return float(share[r]) if per == "share" else float(demand[r])


def _gain(job: OptimusJob, p: int, w: int, dp: int, dw: int, unit: float) -> float:
    drop = job.remaining_time(p, w) - job.remaining_time(p + dp, w + dw)
    if unit <= 0:
        return math.inf if drop > 0 else drop
    return drop / unit


def grow_by_marginal_gain(
    n: int,
    moves: Callable[[int], Iterable[tuple[int, float]]],
    make: Callable[[int, int], bool],
) -> None:
    r"""The marginal-gain loop of Optimus (step 3 of the module notes), over any kind of unit.

    :func:`marginal_gain` runs it on PSs and workers; the simulator's Optimus policy
    (:class:`optsched.sim.policies.Optimus`) on the GPUs of each type.

    Parameters
    ----------
    n : int
        Jobs ``0 .. n - 1``.
    moves : callable
        ``moves(i)``: job ``i``'s moves open now, as ``(role, gain)`` pairs (``role`` a small
        integer naming the move, e.g. 0 for one more PS and 1 for one more worker).
    make : callable
        ``make(i, role)``: make the move and return ``True``, or return ``False`` when it no
        longer fits (it is dropped; the job's other moves stay keyed).

    Notes
    -----
    Every open move is keyed in a max-heap by its gain (ties: the lower job, then the lower
    role). The best is popped; at a gain :math:`\le 0` the loop stops (no move helps); a made
    move re-keys its job's moves from ``moves(i)`` (its older entries are stale and skipped).
    Termination: a dropped move is not pushed again until its job moves, and each made move
    must consume a bounded resource (``make`` decides), so with :math:`S` made moves there are
    at most :math:`2n + 2S` pushes, :math:`O((n + S) \log n)` time for two roles.
    """
    version = [0] * n
    # Heap entries: (-gain, job, role, version); a job's entries of an older version are stale.
    heap: list[tuple[float, int, int, int]] = []

    def push(i: int) -> None:
        for role, gain in moves(i):
            heapq.heappush(heap, (-gain, i, role, version[i]))

    for i in range(n):
        push(i)
    while heap:
        neg, i, role, ver = heapq.heappop(heap)
        if ver != version[i]:
            continue
        if -neg <= 0:
            break
        if not make(i, role):
            continue
        version[i] += 1
        push(i)


def marginal_gain(instance: OptimusInstance, per: Per = "demand") -> OptimusAllocation:
    """Optimus's marginal-gain allocation (see the module notes).

    Parameters
    ----------
    instance : OptimusInstance
    per : {"demand", "share"}
        Divide gains by the dominant resource's raw demand (Optimus's code) or share.

    Returns
    -------
    OptimusAllocation
        ``algorithm`` is ``"marginal-gain"``.

    Examples
    --------
    >>> from optsched.allocation.optimus import generate_instance, validate
    >>> inst = generate_instance(4, seed=0)
    >>> validate(inst, marginal_gain(inst)).ok
    True
    """
    if per not in ("demand", "share"):
        raise InvalidInstanceError("per", f"must be 'demand' or 'share', got {per!r}")
    cap = instance.capacities
    left = cap - sum(
        (np.asarray(j.ps_demand) + np.asarray(j.worker_demand) for j in instance.jobs),
        start=np.zeros(cap.size),
    )
    n = instance.n_jobs
    ps = [1] * n
    workers = [1] * n
    s_dem = [np.asarray(j.ps_demand, dtype=np.float64) for j in instance.jobs]
    d_dem = [np.asarray(j.worker_demand, dtype=np.float64) for j in instance.jobs]
    units = [(_unit(s_dem[i], cap, per), _unit(d_dem[i], cap, per)) for i in range(n)]

    def moves(i: int) -> list[tuple[int, float]]:
        job = instance.jobs[i]
        out = []
        if ps[i] < job.max_ps:
            out.append((0, _gain(job, ps[i], workers[i], 1, 0, units[i][0])))
        if workers[i] < job.max_workers:
            out.append((1, _gain(job, ps[i], workers[i], 0, 1, units[i][1])))
        return out

    def make(i: int, role: int) -> bool:
        nonlocal left
        demand = s_dem[i] if role == 0 else d_dem[i]
        if np.any(demand > left + FIT_TOL * np.maximum(1.0, cap)):
            return False  # this move no longer fits; the job's other move may
        left = left - demand
        if role == 0:
            ps[i] += 1
        else:
            workers[i] += 1
        return True

    grow_by_marginal_gain(n, moves, make)
    return OptimusAllocation(
        job_ids=tuple(j.job_id for j in instance.jobs),
        ps=tuple(ps),
        workers=tuple(workers),
        algorithm="marginal-gain",
    )


class MarginalGain:
    """Optimus's marginal-gain heuristic as an algorithm object: ``MarginalGain().run(inst)``.

    Parameters
    ----------
    per : {"demand", "share"}
        See :func:`marginal_gain`.
    """

    name = "marginal-gain"

    def __init__(self, per: Per = "demand") -> None:
        if per not in ("demand", "share"):
            raise InvalidInstanceError("per", f"must be 'demand' or 'share', got {per!r}")
        self.per: Per = per

    def run(self, instance: OptimusInstance) -> OptimusAllocation:
        """The allocation (see :func:`marginal_gain`)."""
        return marginal_gain(instance, self.per)

    def __repr__(self) -> str:
        return f"MarginalGain(per={self.per!r})"
