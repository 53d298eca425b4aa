r"""Order-based queueing policies: FIFO, SJF, SRTF and EDF.

Each orders the active jobs and grants them GPUs down that order (:func:`greedy_allocation`):

* **FIFO** — arrival order, non-preemptive, *strict* by default (a job that does not fit blocks
  the ones behind it, as in YARN's FIFO and Gavel's ``fifo`` baseline); ``backfill=True`` lets
  later jobs that fit go ahead (and keep their GPUs once started).
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
room, else takes the first type in the cluster's canonical order with room (see
:class:`~optsched.sim.World`). Neither variant counts a type on which the job's rate is 0 or
missing as room for it. The *aware* variant
(``aware=True``, names ending in ``-perf``) takes the type on which the job is fastest among
those with room (its current type on ties). All are event-driven (decide at arrivals and
completions) unless given ``round_seconds``. With ``elastic=True`` (names ending in
``-elastic``) they size elastic gangs by :mod:`optsched.sim.policies.elastic`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Sequence

from optsched.sim.engine.policy import Grant, JobState, PolicyDecision, SimState
from optsched.sim.policies.walk import (
    OrderWalk,
    WaitQueue,
    walk_default,
    walk_elastic,
    walk_reference,
    walk_sorted,
)
from optsched.sim.world.jobs import World

__all__ = ["EDF", "FIFO", "SJF", "SRTF", "OrderPolicy", "WaitQueue", "greedy_allocation"]


def _first(item: tuple[tuple[float, ...], JobState]) -> tuple[float, ...]:
    return item[0]


#: a full key's job position (its third item)
_POSITION = operator.itemgetter(2)


def _best_rate(state: SimState, s: JobState) -> float:
    return max(
        (state.rate(s, t.name) for t in state.world.cluster.gpu_types if t.count >= s.job.num_gpus),
        default=0.0,
    )


def _srtf_keys(jobs: Sequence[JobState], rates: list[float]) -> list[tuple[float, ...]]:
    """SRTF's full keys ``(remaining work / best rate, arrival, position)`` of running ``jobs``.

    A running job's best rate is positive (the engine places no job where it is 0);
    ``x if x > 0.0 else 0.0`` is ``max(0.0, x)``, spelled out: it runs for every running job.
    """
    return [
        (
            (x if (x := (j := s.job).work - s.done) > 0.0 else 0.0) / rates[j.index],
            j.arrival,
            j.index,
        )
        for s in jobs
    ]


def greedy_allocation(
    state: SimState,
    order: Sequence[JobState],
    *,
    aware: bool = False,
    blocking: bool = False,
    wake_at: float | None = None,
) -> PolicyDecision:
    """Grant ``order`` its GPUs greedily by count (see the module notes for the type choice).

    Complexity: :math:`O(A K)` for :math:`A` jobs and :math:`K` GPU types.
    """
    free = {t.name: t.count for t in state.world.cluster.gpu_types}
    names = list(free)
    grants: list[Grant] = []
    for s in order:
        n = s.job.num_gpus
        # a type where the job's rate is 0 is no room for it (it would hold GPUs forever)
        room = [t for t in names if free[t] >= n and state.rate(s, t) > 0]
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
    return PolicyDecision(grants=tuple(grants), blocking=blocking, wake_at=wake_at)


class OrderPolicy(OrderWalk):
    r"""A policy that grants jobs in the order of a key, greedily.

    **What it decides** (the specification, carried out literally by ``reference=True``): sort
    the candidates by their full key (the policy's :meth:`key`, then arrival, then job
    position) — every active job for a preemptive policy; the waiting jobs for a
    non-preemptive one, whose running jobs keep their GPUs — and walk that order, granting
    each job a GPU type with room for its whole gang (see the module notes for the type);
    a job with no room is skipped, or, for a blocking policy (strict FIFO), ends the walk.
    Running jobs left without a grant are preempted.

    **How the default carries it out.** Waiting jobs keep their key while they wait (it may
    change only while a job runs), so they sit in a :class:`WaitQueue` kept incrementally
    from the engine's ``arrived`` and ``finished`` lists and from the jobs this policy
    granted but the engine could not place; only the running jobs are re-keyed at a
    decision. The walk merges the sorted running jobs with the queue, asking the queue for
    its best job that fits again only when that job was taken or no longer fits (the free
    GPUs only shrink during a walk, so the previous answer stays the best one otherwise).
    Between two jobs taken from the queue its answer is recomputed at most :math:`G` times
    (each recomputation lowers the largest gang it may return), so a decision costs
    :math:`O(R \log R + (g + 1) G (G + \log A))` for :math:`R` running jobs,
    :math:`g` grants, :math:`G` gang sizes and :math:`A` waiting jobs (the reference:
    :math:`O(A \log A)` with :math:`A` active jobs). Both give the same allocation at every
    decision; the tests check that their simulation records are identical.

    Parameters
    ----------
    aware : bool
        Heterogeneity-aware type choice.
    round_seconds : float or None
        Decide every round instead of at events.
    reference : bool
        Decide by the plain full sort of every candidate at every decision (slow; the
        specification the tests hold the default to).
    elastic : bool
        Size elastic jobs' gangs (:mod:`optsched.sim.policies.elastic`): shrink a job to the
        GPUs left rather than skip it, then grow the jobs in order to their useful size. The
        name gains ``-elastic``. In a world of rigid jobs the grants are the rigid policy's.
    """

    base_name = "order"
    #: a running job's key changes only when :meth:`rekey_candidates` says it may (EDF: never;
    #: Tiresias 2D-LAS: at its next threshold crossing), so the running jobs can stay sorted
    stable_running_keys = False
    #: the running jobs are re-keyed and re-sorted at every decision by :meth:`refresh_running`
    #: (SRTF: every running job's remaining time changes), then walked as the sorted ones
    rekeys_running = False
    # greedy by count down the whole order, skipping what does not fit: nothing that fits waits
    # (strict FIFO, which blocks, says otherwise)
    work_conserving = True

    def __init__(
        self,
        *,
        aware: bool = False,
        round_seconds: float | None = None,
        reference: bool = False,
        elastic: bool = False,
    ) -> None:
        self.aware = aware
        self.round_seconds = round_seconds
        self.reference = reference
        self.elastic = elastic
        self.name = self.base_name + ("-perf" if aware else "")
        if elastic:
            self.name += "-elastic"
        self._best: dict[int, float] = {}
        self._reset_walk()

    def reset(self, world: World) -> None:
        """Empty the queue."""
        self._reset_walk()
        self._best = {}
        # the sorted running jobs (see the class notes): preemptive, stable running keys, one
        # GPU type, the agnostic rigid walk
        self._sorted = (
            self.preemptive
            and (self.stable_running_keys or self.rekeys_running)
            and not (self.blocking or self.aware or self.elastic or self.reference)
            and len(world.cluster.gpu_types) == 1
        )
        # it reads the progress of the few jobs whose key may change: lazy progress pays
        self.lazy_progress = (self._sorted and not self.rekeys_running) or type(self).lazy_progress
        self._index = {j.job_id: j.index for j in world.jobs} if self._sorted else {}
        self._gps = world.cluster.gpu_types[0].gpus_per_server

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Sort key (smaller first); must not change while the job waits."""
        raise NotImplementedError

    def best_rate(self, state: SimState, s: JobState) -> float:
        """Steps/s of the job alone on its fastest GPU type with room for its gang (cached)."""
        rate = self._best.get(s.job.index)
        if rate is None:
            rate = self._best[s.job.index] = _best_rate(state, s)
        return rate

    def _full_key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        return (*self.key(state, s), s.job.arrival, s.job.index)

    def allocate(self, state: SimState) -> PolicyDecision:
        """Grant in key order: the best job that still fits, until nothing fits."""
        if self.elastic:
            return walk_elastic(self, state)
        if self.reference:
            return walk_reference(self, state)
        if self._sorted:
            return walk_sorted(self, state)
        return walk_default(self, state)


class FIFO(OrderPolicy):
    """First in, first out (strict unless ``backfill``); non-preemptive."""

    base_name = "fifo"
    lazy_progress = True  # its keys never read a job's progress
    preemptive = False

    def __init__(
        self,
        *,
        aware: bool = False,
        backfill: bool = False,
        round_seconds: float | None = None,
        reference: bool = False,
        elastic: bool = False,
    ) -> None:
        super().__init__(
            aware=aware, round_seconds=round_seconds, reference=reference, elastic=elastic
        )
        self.blocking = not backfill
        self.work_conserving = backfill
        if backfill:
            self.name = "fifo-backfill" + ("-perf" if aware else "")
            if elastic:
                self.name += "-elastic"

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Arrival."""
        return (s.job.arrival,)


class SJF(OrderPolicy):
    """Shortest job first, non-preemptive (known durations)."""

    base_name = "sjf"
    lazy_progress = True  # its keys never read a job's progress
    preemptive = False

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Isolated duration on the best type."""
        rate = self.best_rate(state, s)
        return (s.job.work / rate if rate > 0 else math.inf,)


class SRTF(OrderPolicy):
    """Shortest remaining time first, preemptive (known durations)."""

    base_name = "srtf"
    rekeys_running = True

    def reset(self, world: World) -> None:
        """Empty the queue; the best rate of every job, for its keys."""
        super().reset(world)
        self._rates = [
            max(
                (world.rate(j, t.name) for t in world.cluster.gpu_types if t.count >= j.num_gpus),
                default=0.0,
            )
            for j in world.jobs
        ]

    def refresh_running(self, state: SimState) -> None:
        """The running jobs' keys (:meth:`_full_key`, inlined: the hot loop), re-sorted.

        Only the keys a decision can read are refreshed. A running job's remaining work only
        shrinks while it runs, so its key now is at most the one kept (ties broken alike): the
        running jobs whose kept key is ahead of the queue's best key (the *prefix* of the
        sorted running jobs) are ahead of every waiting job now as well. The walk takes them
        first, all of them (the running jobs fit together), whatever their exact keys and
        order, and preempts none of them: only the keys behind them (the *tail*) are read.

        * Every running job in the prefix (the queue is empty at about a quarter of the
          decisions on the ElasticFlow traces, and the running jobs all ahead at another
          third): nothing is re-keyed.
        * Else the tail is re-keyed; its fresh keys replace the kept ones when they still sort
          behind the prefix and among themselves (one pass, in C), so the list stays sorted by
          the keys it holds, which its insertions and removals bisect.
        * Else (or when a running gang is spread: the ``stop`` form orders the kept spread
          gangs by their keys) every running job is re-keyed and, when their order changed,
          sorted.

        The walk's first run of running jobs (those up to the queue's best job that fits) is
        the same set with the kept keys as with fresh ones (the prefix, and the tail's jobs
        ahead of that job), and behind it the keys are fresh: the decision is the one fresh
        keys give (``tests/test_sim_order_walk.py`` checks every decision against the
        reference walk).
        """
        kept = self._rkeys
        if not kept:
            return
        best = self.queue.best()
        if best is None or kept[-1] < best[0]:
            return
        jobs = self._rjobs
        cut = bisect.bisect_left(kept, best[0])
        if cut and not self._rspread:
            tail = _srtf_keys(jobs[cut:], self._rates)
            if kept[cut - 1] < tail[0] and all(
                map(operator.lt, tail, itertools.islice(tail, 1, None))
            ):
                kept[cut:] = tail
                self._rkey_of.update(zip(map(_POSITION, tail), tail, strict=True))
                return
        keys = _srtf_keys(jobs, self._rates)
        if all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
            self._rkeys = keys
            self._rkey_of = dict(zip(map(_POSITION, keys), keys, strict=True))
            return
        keyed = sorted(zip(keys, jobs, strict=True), key=_first)
        self._set_running(keyed)

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Remaining time on the best type."""
        rate = self.best_rate(state, s)
        return (s.remaining / rate if rate > 0 else math.inf,)

    def _full_key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        # :meth:`key` with the arrival and position, inlined: it runs for every running job
        # at every decision
        job = s.job
        rate = self._best.get(job.index)
        if rate is None:
            rate = self.best_rate(state, s)
        if rate > 0:
            return (max(0.0, job.work - s.done) / rate, job.arrival, job.index)
        return (math.inf, job.arrival, job.index)


class EDF(OrderPolicy):
    """Earliest deadline first, preemptive; no deadline goes last."""

    base_name = "edf"
    stable_running_keys = True  # a deadline never changes
    lazy_progress = True  # its keys never read a job's progress

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Deadline (infinite when none)."""
        d = s.job.deadline
        return (math.inf if math.isnan(d) else d,)
