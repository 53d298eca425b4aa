r"""Order-based queueing policies: FIFO, SJF, SRTF and EDF.

Each orders the active jobs and grants them GPUs down that order (:func:`greedy_allocation`):

* **FIFO** — arrival order, *strict* by default (a job that does not fit blocks the ones behind
  it, as in YARN's FIFO and Gavel's ``fifo`` baseline); ``backfill=True`` lets later jobs that
  fit go ahead. Running jobs are never preempted by later ones, since they are ahead in the order.
* **SJF** — non-preemptive shortest job first: running jobs keep their GPUs; waiting jobs go
  by their isolated duration ``work / best rate`` (known durations: the oracle users quote),
  backfilling.
* **SRTF** — preemptive shortest remaining time first: all active jobs by remaining time
  ``remaining / best rate``, backfilling. On one GPU with no restore cost this is SRPT, optimal
  for mean JCT (Schrage 1968).
* **EDF** — earliest deadline first, preemptive; jobs without a deadline go after those with
  one, by arrival.

Ties break by arrival, then job position. **GPU types.** The heterogeneity-*agnostic* variant
(default) treats GPUs as interchangeable: a job keeps the type it runs on if that still has
room, else takes the first type in the cluster's order with room. The *aware* variant
(``aware=True``, names ending in ``-perf``) takes the type on which the job is fastest among
those with room (its current type on ties). All are event-driven (decide at arrivals and
completions) unless given ``round_seconds``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from optsched.sim.policy import Allocation, Grant, JobState, Policy, SimState

__all__ = ["EDF", "FIFO", "SJF", "SRTF", "OrderPolicy", "greedy_allocation"]


def _best_rate(state: SimState, s: JobState) -> float:
    return max(
        (state.rate(s, t.name) for t in state.world.cluster.gpu_types if t.count >= s.job.num_gpus),
        default=0.0,
    )


def greedy_allocation(
    state: SimState,
    order: Sequence[JobState],
    *,
    aware: bool = False,
    blocking: bool = False,
    wake_at: float | None = None,
) -> Allocation:
    """Grant ``order`` its GPUs greedily by count (see the module notes for the type choice).

    Complexity: :math:`O(A K)` for :math:`A` jobs and :math:`K` GPU types.
    """
    free = {t.name: t.count for t in state.world.cluster.gpu_types}
    names = list(free)
    grants: list[Grant] = []
    for s in order:
        n = s.job.num_gpus
        room = [t for t in names if free[t] >= n]
        if aware:
            room = [t for t in room if state.rate(s, t) > 0]
        if not room:
            if blocking:
                break
            continue
        current = s.placement.gpu_type if s.placement is not None else None
        if aware:
            best = max(room, key=lambda t: (state.rate(s, t), t == current, -names.index(t)))
        else:
            best = current if current in room else room[0]
        free[best] -= n
        grants.append(Grant(job=s.job_id, gpu_type=best))
    return Allocation(grants=tuple(grants), blocking=blocking, wake_at=wake_at)


class OrderPolicy(Policy):
    """A policy that orders active jobs by a key and grants greedily.

    Parameters
    ----------
    aware : bool
        Heterogeneity-aware type choice.
    round_seconds : float or None
        Decide every round instead of at events.
    """

    base_name = "order"
    blocking = False

    def __init__(self, *, aware: bool = False, round_seconds: float | None = None) -> None:
        self.aware = aware
        self.round_seconds = round_seconds
        self.name = self.base_name + ("-perf" if aware else "")

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Sort key (smaller first)."""
        raise NotImplementedError

    def allocate(self, state: SimState) -> Allocation:
        """Order the active jobs by :meth:`key` and grant greedily."""
        order = sorted(
            state.active, key=lambda s: (*self.key(state, s), s.job.arrival, s.job.index)
        )
        return greedy_allocation(state, order, aware=self.aware, blocking=self.blocking)


class FIFO(OrderPolicy):
    """First in, first out (strict unless ``backfill``)."""

    base_name = "fifo"

    def __init__(
        self, *, aware: bool = False, backfill: bool = False, round_seconds: float | None = None
    ) -> None:
        super().__init__(aware=aware, round_seconds=round_seconds)
        self.blocking = not backfill
        if backfill:
            self.name = "fifo-backfill" + ("-perf" if aware else "")

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Arrival."""
        return (s.job.arrival,)


class SJF(OrderPolicy):
    """Shortest job first, non-preemptive (known durations)."""

    base_name = "sjf"

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Running first, then isolated duration."""
        rate = _best_rate(state, s)
        return (0.0 if s.running else 1.0, s.job.work / rate if rate > 0 else math.inf)


class SRTF(OrderPolicy):
    """Shortest remaining time first, preemptive (known durations)."""

    base_name = "srtf"

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Remaining time on the best type."""
        rate = _best_rate(state, s)
        return (s.remaining / rate if rate > 0 else math.inf,)


class EDF(OrderPolicy):
    """Earliest deadline first, preemptive; no deadline goes last."""

    base_name = "edf"

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Deadline (infinite when none)."""
        d = s.job.deadline
        return (math.inf if math.isnan(d) else d,)
