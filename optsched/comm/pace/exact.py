r"""The optimal preemptive communication schedule, and brute forces that check it.

Given the iteration DAG, every all-reduce job ``j`` (a tensor, or a fused group of tensors) has
a release time :math:`r_j` (its gradients exist), a channel time :math:`w_j` (from the cost
model) and a tail :math:`q_j` (compute that must follow it). On one preemptive channel the
iteration time is

.. math::

    \Phi = \max\Bigl(\Phi_0,\; \max_j (C_j + q_j)\Bigr),

with :math:`\Phi_0` the compute-only time. Minimising :math:`\max_j (C_j + q_j)` is the
single-machine problem :math:`1 \mid r_j, \mathrm{pmtn} \mid \max_j (C_j + q_j)`, which the
preemptive *largest-tail-first* rule (Jackson's rule) solves exactly. Tails fall along the
consumption order, so this is PACE's rule "transmit the released tensor whose first consumer
comes first", and it is preemptive EDF for the deadlines :math:`D_j = \Phi - q_j`.

The optimum also has a closed form (Horn's condition):

.. math::

    \min \max_j (C_j + q_j) = \max_{i,k}\Bigl(r_i + \sum_{j:\, r_j \ge r_i,\, q_j \ge q_k}
    w_j + q_k\Bigr).

Functions here work on plain arrays so that tests can compare them on any instance:
:func:`priority_schedule` (the fast exact algorithm with ``priority = -tail``),
:func:`horn_value` (the closed form), :func:`edf_feasible` (Horn's EDF test for given
deadlines), :func:`brute_force_orders` (every priority order) and :func:`brute_force_slots`
(every unit-slot schedule of an integer instance, i.e. every preemptive schedule at partition
granularity). :func:`exact_schedule` applies them to a DAG and a grouping of its tensors.

References
----------
W. A. Horn, "Some simple scheduling algorithms", Naval Research Logistics Quarterly 21(1), 1974.
J. R. Jackson, "Scheduling a production line to minimize maximum tardiness", 1955.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.comm.pace.cost import CostModel
    from optsched.comm.pace.dag import IterationDAG

__all__ = [
    "MAX_BRUTE_JOBS",
    "MAX_BRUTE_SLOTS",
    "TIME_RTOL",
    "ExactSchedule",
    "Jobs",
    "brute_force_orders",
    "brute_force_slots",
    "edf_feasible",
    "exact_schedule",
    "group_jobs",
    "horn_value",
    "jackson_value",
    "priority_schedule",
]

#: Relative tolerance for comparing times computed along different paths (sums in different
#: orders differ by a few ulps).
TIME_RTOL = 1e-9

#: Largest instance the permutation brute force accepts (8! = 40320 schedules).
MAX_BRUTE_JOBS = 8

#: Largest total work (in unit slots) the slot brute force accepts.
MAX_BRUTE_SLOTS = 12


def _arrays(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> tuple[NDArray, ...]:
    r = np.asarray(release, dtype=np.float64).ravel()
    w = np.asarray(work, dtype=np.float64).ravel()
    q = np.asarray(tail, dtype=np.float64).ravel()
    if not (r.shape == w.shape == q.shape):
        raise InvalidInstanceError("work", "release, work and tail must have the same length")
    for name, a in (("release", r), ("work", w), ("tail", q)):
        if a.size and (not np.all(np.isfinite(a)) or np.any(a < 0)):
            raise InvalidInstanceError(name, "must be finite and >= 0")
    return r, w, q


def priority_schedule(
    release: ArrayLike, work: ArrayLike, priority: ArrayLike
) -> tuple[NDArray[np.float64], list[tuple[int, float, float]]]:
    r"""Preemptive priority list schedule on one channel.

    At every instant the channel works on the released, unfinished job with the smallest
    ``priority`` (ties by index); a release of a more urgent job preempts the running one.

    Parameters
    ----------
    release, work : array_like
        Release time and channel time of each job.
    priority : array_like
        Smaller is more urgent.

    Returns
    -------
    completion : ndarray
        Completion time of each job.
    segments : list of (job, start, end)
        Maximal busy intervals, in time order.

    Notes
    -----
    :math:`O(n \log n)`. With ``priority = -tail`` this is Jackson's preemptive rule, optimal
    for :math:`\max_j (C_j + q_j)`. Loop bound: each pass either finishes the job at the top
    of the heap (``n`` times) or runs it up to the next release, which the following pass
    pushes (``n`` times); when rounding leaves ``t`` one ulp short of that release, the next
    pass runs the one-ulp remainder, so at most ``3n`` passes.
    """
    r = np.asarray(release, dtype=np.float64).ravel()
    w = np.asarray(work, dtype=np.float64).ravel()
    pr = np.asarray(priority, dtype=np.float64).ravel()
    n = r.size
    by_release = sorted(range(n), key=lambda j: (r[j], j))
    remaining = w.copy()
    completion = np.zeros(n)
    segments: list[tuple[int, float, float]] = []
    heap: list[tuple[float, int]] = []
    t = 0.0
    i = 0
    while i < n or heap:
        if not heap:
            t = max(t, r[by_release[i]])
        while i < n and r[by_release[i]] <= t:
            j = by_release[i]
            heapq.heappush(heap, (pr[j], j))
            i += 1
        _, j = heap[0]
        next_release = r[by_release[i]] if i < n else math.inf
        run = min(remaining[j], next_release - t)
        if run > 0:
            if segments and segments[-1][0] == j and segments[-1][2] == t:
                segments[-1] = (j, segments[-1][1], t + run)
            else:
                segments.append((j, t, t + run))
        if run >= remaining[j]:
            t += remaining[j]
            remaining[j] = 0.0
            completion[j] = t
            heapq.heappop(heap)
        else:
            t += run
            remaining[j] -= run
    return completion, segments


def jackson_value(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> float:
    r"""Optimal :math:`\max_j (C_j + q_j)` by Jackson's preemptive rule (``-inf`` if empty)."""
    r, w, q = _arrays(release, work, tail)
    if r.size == 0:
        return -math.inf
    completion, _ = priority_schedule(r, w, -q)
    return float(np.max(completion + q))


def horn_value(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> float:
    r"""Closed form of the optimum: :math:`\max_{i,k} (r_i + W_{ik} + q_k)`.

    :math:`W_{ik}` is the work of the jobs released no earlier than job ``i`` whose tail is at
    least job ``k``'s; the maximum runs over pairs with a non-empty set. :math:`O(n^2 \log n)`.
    ``-inf`` for no jobs.
    """
    r, w, q = _arrays(release, work, tail)
    best = -math.inf
    for ri in np.unique(r):
        sel = r >= ri
        qs, ws = q[sel], w[sel]
        order = np.argsort(-qs, kind="stable")
        qs, ws = qs[order], ws[order]
        cum = np.cumsum(ws)
        # For a tail threshold q_k, the set is every job with q >= q_k: a prefix of the sorted
        # list ending at the last occurrence of that tail value.
        last = np.r_[qs[1:] != qs[:-1], True]
        best = max(best, float(np.max(ri + cum[last] + qs[last])))
    return best


def edf_feasible(
    release: ArrayLike, work: ArrayLike, deadline: ArrayLike, *, rtol: float = TIME_RTOL
) -> bool:
    r"""Whether every job meets its deadline under preemptive EDF (Horn's test).

    Preemptive earliest-deadline-first meets all deadlines whenever any preemptive schedule
    does, so this decides feasibility exactly. :math:`O(n \log n)`.
    """
    r = np.asarray(release, dtype=np.float64).ravel()
    d = np.asarray(deadline, dtype=np.float64).ravel()
    completion, _ = priority_schedule(r, work, d)
    scale = max(1.0, float(np.max(np.abs(d)))) if d.size else 1.0
    return bool(np.all(completion <= d + rtol * scale))


def _objective(completion: NDArray, tail: NDArray) -> float:
    return float(np.max(completion + tail)) if completion.size else -math.inf


def brute_force_orders(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> float:
    r"""Best :math:`\max_j (C_j + q_j)` over **every** priority order (``n!`` schedules).

    Parameters
    ----------
    release, work, tail : array_like
        At most :data:`MAX_BRUTE_JOBS` jobs.

    Returns
    -------
    float
    """
    r, w, q = _arrays(release, work, tail)
    n = r.size
    if n > MAX_BRUTE_JOBS:
        raise InvalidInstanceError("release", f"brute force takes at most {MAX_BRUTE_JOBS} jobs")
    best = math.inf
    for perm in itertools.permutations(range(n)):
        prio = np.empty(n)
        prio[list(perm)] = np.arange(n)
        completion, _ = priority_schedule(r, w, prio)
        best = min(best, _objective(completion, q))
    return best if n else -math.inf


def brute_force_slots(release: ArrayLike, work: ArrayLike, tail: ArrayLike) -> float:
    r"""Best :math:`\max_j (C_j + q_j)` over every unit-slot schedule of an integer instance.

    Time is cut into unit slots (one partition each); in every slot the channel sends one unit
    of any released unfinished job, so every preemptive schedule at partition granularity is
    enumerated (idling while work is available is never better and is skipped).

    Parameters
    ----------
    release, work, tail : array_like of int
        Integer data; total work at most :data:`MAX_BRUTE_SLOTS` units.

    Returns
    -------
    float
    """
    r, w, q = _arrays(release, work, tail)
    if np.any(r != np.round(r)) or np.any(w != np.round(w)) or np.any(q != np.round(q)):
        raise InvalidInstanceError("work", "slot brute force needs integer data")
    total = int(w.sum())
    if total > MAX_BRUTE_SLOTS:
        raise InvalidInstanceError("work", f"slot brute force takes at most {MAX_BRUTE_SLOTS}")
    n = r.size
    if n == 0:
        return -math.inf
    rel = [int(x) for x in r]
    tails = [int(x) for x in q]
    best = math.inf
    remaining = [int(x) for x in w]
    done_at = [rel[j] if remaining[j] == 0 else -1 for j in range(n)]

    def search(t: int, left: int) -> None:
        nonlocal best
        if left == 0:
            best = min(best, max(done_at[j] + tails[j] for j in range(n)))
            return
        ready = [j for j in range(n) if remaining[j] > 0 and rel[j] <= t]
        if not ready:
            search(min(rel[j] for j in range(n) if remaining[j] > 0), left)
            return
        for j in ready:
            remaining[j] -= 1
            if remaining[j] == 0:
                done_at[j] = t + 1
            search(t + 1, left - 1)
            remaining[j] += 1
            done_at[j] = -1

    search(0, total)
    return float(best)


@dataclass(frozen=True)
class Jobs:
    """All-reduce jobs of a grouping: one per group of tensors, in priority order.

    Attributes
    ----------
    groups : tuple of (int, int)
        ``[start, stop)`` ranges of tensors (consumption order).
    release, work, tail, nbytes : ndarray
        Per group: latest member release, channel time ``a + beta * bytes``, largest member
        tail, and bytes.
    """

    groups: tuple[tuple[int, int], ...]
    release: NDArray[np.float64]
    work: NDArray[np.float64]
    tail: NDArray[np.float64]
    nbytes: NDArray[np.float64]


def group_jobs(
    dag: IterationDAG, cost: CostModel, groups: Sequence[tuple[int, int]] | None = None
) -> Jobs:
    """Turn a grouping of ``dag``'s tensors into all-reduce jobs.

    Parameters
    ----------
    dag : IterationDAG
    cost : CostModel
    groups : sequence of (start, stop), optional
        Contiguous ranges covering ``0..n-1`` in order; ``None`` means one group per tensor.

    Raises
    ------
    InvalidInstanceError
        The ranges do not partition the tensors in order (field ``groups[i]``).
    """
    n = dag.n_tensors
    if groups is None:
        groups = [(j, j + 1) for j in range(n)]
    groups = tuple((int(a), int(b)) for a, b in groups)
    expect = 0
    for i, (a, b) in enumerate(groups):
        if a != expect or b <= a:
            raise InvalidInstanceError(
                f"groups[{i}]", f"must start at {expect} and be non-empty, got [{a}, {b})"
            )
        expect = b
    if expect != n:
        raise InvalidInstanceError("groups", f"cover tensors 0..{expect - 1} of 0..{n - 1}")
    rel = dag.release
    tl = dag.tail
    size = dag.tensor_bytes
    release = np.array([rel[a:b].max() for a, b in groups], dtype=np.float64)
    tail = np.array([tl[a:b].max() for a, b in groups], dtype=np.float64)
    nbytes = np.array([size[a:b].sum() for a, b in groups], dtype=np.float64)
    work = np.asarray(cost.call_ms(nbytes), dtype=np.float64)
    return Jobs(groups, release, work, tail, nbytes)


@dataclass(frozen=True)
class ExactSchedule:
    r"""The optimal preemptive schedule of a grouping (PACE's module 1).

    Attributes
    ----------
    jobs : Jobs
        The grouping and its jobs.
    completion : ndarray
        Completion time of each group.
    tensor_completion : ndarray
        Completion time of each tensor (its group's).
    segments : list of (group, start, end)
        Channel busy intervals in time order; a group appears in several when preempted.
    iteration_time : float
        :math:`\max(\Phi_0, \max_j (C_j + q_j))` (ms).
    compute_ms : float
        :math:`\Phi_0`, the compute-only iteration time.
    """

    jobs: Jobs
    completion: NDArray[np.float64]
    tensor_completion: NDArray[np.float64]
    segments: list[tuple[int, float, float]]
    iteration_time: float
    compute_ms: float

    def to_dict(self, tensor_names: Sequence[str] | None = None) -> dict[str, object]:
        """JSON-ready schedule: groups (tensor names when given), segments, completions."""
        groups = []
        for g, (a, b) in enumerate(self.jobs.groups):
            entry: dict[str, object] = {
                "group": g,
                "tensors": list(tensor_names[a:b]) if tensor_names else [a, b],
                "bytes": float(self.jobs.nbytes[g]),
                "release_ms": float(self.jobs.release[g]),
                "work_ms": float(self.jobs.work[g]),
                "tail_ms": float(self.jobs.tail[g]),
                "completion_ms": float(self.completion[g]),
            }
            groups.append(entry)
        return {
            "iteration_time": self.iteration_time,
            "compute_ms": self.compute_ms,
            "groups": groups,
            "segments": [{"group": g, "start_ms": s, "end_ms": e} for g, s, e in self.segments],
            "preemptions": len(self.segments) - len({g for g, _, _ in self.segments}),
        }


def exact_schedule(
    dag: IterationDAG, cost: CostModel, groups: Sequence[tuple[int, int]] | None = None
) -> ExactSchedule:
    r"""Optimal preemptive schedule of ``dag``'s all-reduces for a given grouping.

    Parameters
    ----------
    dag : IterationDAG
    cost : CostModel
    groups : sequence of (start, stop), optional
        Fused groups (contiguous in consumption order); ``None`` = no fusion.

    Returns
    -------
    ExactSchedule

    Notes
    -----
    :math:`O(n \log n)`: Jackson's rule (priority = largest tail, then consumption order).
    Optimal over every preemptive schedule of these jobs on one channel (see the module notes);
    the LP of :mod:`optsched.comm.pace.formulation` and the brute forces here confirm it in tests.
    """
    jobs = group_jobs(dag, cost, groups)
    n = len(jobs.groups)
    # Largest tail first; among equal tails the earlier group (consumption order).
    order = np.lexsort((np.arange(n), -jobs.tail))
    rank = np.empty(n)
    rank[order] = np.arange(n)
    completion, segments = priority_schedule(jobs.release, jobs.work, rank)
    tensor_completion = np.empty(dag.n_tensors)
    for g, (a, b) in enumerate(jobs.groups):
        tensor_completion[a:b] = completion[g]
    value = max(dag.compute_ms, _objective(completion, jobs.tail)) if n else dag.compute_ms
    return ExactSchedule(jobs, completion, tensor_completion, segments, value, dag.compute_ms)
