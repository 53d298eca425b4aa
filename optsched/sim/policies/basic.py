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
import heapq
import itertools
import math
from collections.abc import Iterable, Sequence

from optsched.sim.engine.policy import (
    Consolidation,
    Grant,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.policies.elastic import elastic_sizes
from optsched.sim.world.jobs import World

__all__ = ["EDF", "FIFO", "SJF", "SRTF", "OrderPolicy", "WaitQueue", "greedy_allocation"]


def _first(item: tuple[tuple[float, ...], JobState]) -> tuple[float, ...]:
    return item[0]


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


class WaitQueue:
    r"""Waiting jobs, one heap per gang size, on keys fixed while a job waits (lazy deletion).

    ``best(max_gang)`` is the smallest key among jobs with a gang of at most ``max_gang`` GPUs,
    in :math:`O(G)` for :math:`G` distinct gang sizes (plus amortized heap clean-up); a push or
    a removal is :math:`O(\log A)`.
    """

    def __init__(self) -> None:
        self.heaps: dict[int, list[tuple[tuple[float, ...], int, str]]] = {}
        self.version: dict[str, int] = {}
        self.states: dict[str, JobState] = {}
        self._counter = 0

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.states

    def __len__(self) -> int:
        return len(self.states)

    def push(self, s: JobState, key: tuple[float, ...]) -> None:
        """Add (or re-key) a waiting job."""
        self._counter += 1
        self.version[s.job_id] = self._counter
        self.states[s.job_id] = s
        heapq.heappush(self.heaps.setdefault(s.job.num_gpus, []), (key, self._counter, s.job_id))

    def discard(self, job_id: str) -> None:
        """Remove a job (no-op when absent)."""
        self.version.pop(job_id, None)
        self.states.pop(job_id, None)

    def _head(self, gang: int) -> tuple[tuple[float, ...], int, str] | None:
        heap = self.heaps[gang]
        while heap:
            _key, version, job_id = heap[0]
            if self.version.get(job_id) == version:
                return heap[0]
            heapq.heappop(heap)
        return None

    def best(self, max_gang: float = math.inf) -> tuple[tuple[float, ...], str] | None:
        """The smallest-key waiting job whose gang is at most ``max_gang`` GPUs."""
        found: tuple[tuple[float, ...], int, str] | None = None
        version = self.version
        for gang, heap in self.heaps.items():
            if gang > max_gang or not heap:
                continue
            head: tuple[tuple[float, ...], int, str] | None = heap[0]
            if version.get(heap[0][2]) != heap[0][1]:  # a stale top: clean the heap up
                head = self._head(gang)
            if head is not None and (found is None or head[0] < found[0]):
                found = head
        return None if found is None else (found[0], found[2])


def _choose_type(
    state: SimState, s: JobState, free: dict[str, int], names: list[str], aware: bool
) -> str | None:
    n = s.job.num_gpus
    # a type where the job's rate is 0 is no room for it (it would hold GPUs forever)
    room = [t for t in names if free[t] >= n and state.rate(s, t) > 0]
    if not room:
        return None
    current = s.placement.gpu_type if s.placement is not None else None
    if aware:
        return max(room, key=lambda t: (state.rate(s, t), t == current, -names.index(t)))
    return current if current in room else room[0]


def _choose_elastic_type(
    state: SimState, s: JobState, free: dict[str, int], names: list[str], aware: bool
) -> str | None:
    # room for an elastic job: at least its smallest gang, with a positive rate on what it gets
    lo, req = s.job.min_gpus, s.job.num_gpus
    room = [t for t in names if free[t] >= lo and state.rate(s, t, num_gpus=min(req, free[t])) > 0]
    if not room:
        return None
    current = s.placement.gpu_type if s.placement is not None else None
    if aware:
        return max(
            room,
            key=lambda t: (
                state.rate(s, t, num_gpus=min(req, free[t])),
                t == current,
                -names.index(t),
            ),
        )
    return current if current in room else room[0]


class OrderPolicy(Policy):
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
    blocking = False
    preemptive = True
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
        self.queue = WaitQueue()
        self._pending: list[JobState] = []
        self._best: dict[int, float] = {}
        self._sizes: dict[str, int] = {}
        self._sorted = False
        self._reset_running()

    def reset(self, world: World) -> None:
        """Empty the queue."""
        self.queue = WaitQueue()
        self._pending = []
        self._best = {}
        self._sizes = {}
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
        self._grant_of: dict[int, Grant] = {}  # the sorted walk's grant of each job, once built
        self._runs_of: dict[int, bool] = {}  # whether a job's rate on the one type is positive
        self._gps = world.cluster.gpu_types[0].gpus_per_server
        self._reset_running()

    # -- the sorted running jobs --------------------------------------------------------------

    def _reset_running(self) -> None:
        self._rkeys: list[tuple[float, ...]] = []  # full keys, sorted
        self._rjobs: list[JobState] = []  # the jobs, in that order
        self._rgpus: list[int] = []  # their gangs
        self._rkey_of: dict[int, tuple[float, ...]] = {}  # job index -> its key in the list
        self._rspread: dict[int, JobState] = {}  # the running jobs spread over extra servers
        self._new_granted: list[JobState] = []

    def _run_insert(
        self, state: SimState, s: JobState, key: tuple[float, ...] | None = None
    ) -> None:
        key = self._full_key(state, s) if key is None else key
        p = bisect.bisect_left(self._rkeys, key)
        self._rkeys.insert(p, key)
        self._rjobs.insert(p, s)
        self._rgpus.insert(p, s.job.num_gpus)
        self._rkey_of[s.job.index] = key
        if s.placement is not None and not s.placement.consolidated(self._gps):
            self._rspread[s.job.index] = s
        self.on_run(state, s)

    def _run_remove(self, i: int) -> None:
        key = self._rkey_of.pop(i)
        p = bisect.bisect_left(self._rkeys, key)
        del self._rkeys[p], self._rjobs[p], self._rgpus[p]
        self._rspread.pop(i, None)
        self.on_stop(i)

    def refresh_running(self, state: SimState) -> None:
        """Re-key and re-sort every running job (``rekeys_running`` policies)."""
        keyed = sorted([(self._full_key(state, s), s) for s in self._rjobs], key=_first)
        self._set_running(keyed)

    def _set_running(self, keyed: Sequence[tuple[tuple[float, ...], JobState]]) -> None:
        self._rkeys = [k for k, _ in keyed]
        self._rjobs = [s for _, s in keyed]
        self._rgpus = [s.job.num_gpus for s in self._rjobs]
        self._rkey_of = {s.job.index: k for k, s in keyed}

    def rekey_candidates(self, state: SimState) -> Iterable[JobState]:
        """Running jobs whose key may have changed since it was last computed (default none)."""
        return ()

    def on_run(self, state: SimState, s: JobState) -> None:
        """Hook run when a running job's key is (re)computed in the sorted running jobs."""

    def on_stop(self, i: int) -> None:
        """Hook run when job ``i`` leaves the sorted running jobs."""

    def gang(self, s: JobState) -> int:
        """The gang granted to ``s`` at the current decision (its request unless resized)."""
        return self._sizes.get(s.job_id, s.job.num_gpus)

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """Sort key (smaller first); must not change while the job waits."""
        raise NotImplementedError

    def best_rate(self, state: SimState, s: JobState) -> float:
        """Steps/s of the job alone on its fastest GPU type with room for its gang (cached)."""
        rate = self._best.get(s.job.index)
        if rate is None:
            rate = self._best[s.job.index] = _best_rate(state, s)
        return rate

    def consolidation(self, s: JobState) -> Consolidation:
        """The ``consolidate`` of the job's grant (default ``"prefer"``).

        A function of the job alone (the sorted walk keeps each job's grant).
        """
        return "prefer"

    def _full_key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        return (*self.key(state, s), s.job.arrival, s.job.index)

    def before(self, state: SimState) -> None:
        """Hook run after the queue is brought up to date (Tiresias promotes here)."""

    def on_wait(self, state: SimState, s: JobState) -> None:
        """Hook run when a running job goes back to waiting at this decision."""

    def wake(self, state: SimState, granted: list[JobState]) -> float | None:
        """The next extra decision point wanted (default none)."""
        return None

    def _grant(self, s: JobState, gpu_type: str, num_gpus: int | None = None) -> Grant:
        return Grant(
            job=s.job_id,
            gpu_type=gpu_type,
            consolidate=self.consolidation(s),
            num_gpus=num_gpus,
        )

    def allocate(self, state: SimState) -> PolicyDecision:
        """Grant in key order: the best job that still fits, until nothing fits."""
        if self.elastic:
            return self._allocate_elastic(state)
        if self.reference:
            return self._allocate_reference(state)
        if self._sorted:
            return self._allocate_sorted(state)
        queue = self.queue
        for job_id in state.finished:
            queue.discard(job_id)
        if self._pending:
            # granted last time but not placed by the engine: waiting again
            gone = set(state.finished)
            for s in self._pending:
                if s.placement is None and s.job_id not in gone:
                    queue.push(s, self._full_key(state, s))
        for s in state.arrived:
            queue.push(s, self._full_key(state, s))
        self.before(state)
        names = list(state.world.cluster.names)
        free = {t.name: t.count for t in state.world.cluster.gpu_types}
        single = names[0] if len(names) == 1 else None
        aware = self.aware
        blocking = self.blocking
        granted: list[JobState] = []
        chosen: list[str] = []  # the GPU type of each granted job
        new: list[int] = []  # positions in ``granted`` of the jobs taken from the queue
        preempted: list[JobState] = []
        moved = False
        if self.preemptive:
            keys = [self._full_key(state, s) for s in state.running]
            order = sorted(range(len(keys)), key=keys.__getitem__)
            running = [state.running[k] for k in order]
            running_keys = [keys[k] for k in order]
        else:
            # non-preemptive: running jobs keep their GPUs (the engine's keep_running form)
            for s in state.running:
                if s.placement is not None and not (s.partner is not None and s.partner < s.job_id):
                    free[s.placement.gpu_type] -= s.job.num_gpus
            running = []
            running_keys = []
        r = 0
        skipped: list[JobState] = []
        head: tuple[tuple[float, ...], str] | None = None
        head_gang = 0
        stale = True
        while True:
            max_free = free[single] if single is not None else max(free.values())
            while r < len(running) and running[r].job.num_gpus > max_free:
                preempted.append(running[r])
                r += 1
            if stale or (head is not None and not blocking and head_gang > max_free):
                head = queue.best(math.inf if blocking else max_free)
                head_gang = queue.states[head[1]].job.num_gpus if head is not None else 0
                stale = False
            if r < len(running) and (head is None or running_keys[r] <= head[0]):
                s = running[r]
                r += 1
                from_queue = False
            elif head is not None:
                s = queue.states[head[1]]
                from_queue = True
                if head_gang > max_free:  # blocking: the head does not fit
                    break
                queue.discard(s.job_id)
                stale = True
            else:
                break
            n = s.job.num_gpus
            if single is not None:
                # a running job runs where its rate is positive (the engine places no other)
                fits = free[single] >= n and (not from_queue or state.rate(s, single) > 0)
                t = single if fits else None
            else:
                t = _choose_type(state, s, free, names, aware)
            if t is None:
                (skipped if from_queue else preempted).append(s)
                if blocking:
                    break
                continue
            free[t] -= n
            # grants are built only for what is returned (usually just the new jobs)
            chosen.append(t)
            if from_queue:
                new.append(len(granted))
            elif s.placement is None or s.placement.gpu_type != t:
                moved = True
            granted.append(s)
        preempted.extend(running[r:])
        for s in (*preempted, *skipped):
            queue.push(s, self._full_key(state, s))
        for s in preempted:
            self.on_wait(state, s)
        # nobody preempted or moved: say so, and list only the jobs to start
        keep = not preempted and not moved
        picks: Sequence[int] = new if keep else range(len(granted))
        stop: tuple[str, ...] | None = None
        if preempted and not moved and single is not None:
            # the ``stop`` form of the full decision: the preempted jobs stop, the new jobs and
            # the kept spread gangs are granted in walk order, and the kept consolidated gangs
            # keep their GPUs, as granting them would
            gps = state.world.cluster.gpu_types[0].gpus_per_server
            isnew = set(new)
            picks = [
                k
                for k, s in enumerate(granted)
                if k in isnew or (s.placement is not None and not s.placement.consolidated(gps))
            ]
            stop = tuple(s.job_id for s in preempted)
            keep = True
        grants = tuple(self._grant(granted[k], chosen[k]) for k in picks)
        # the engine keeps every running job under keep_running: only the others may fail
        self._pending = [granted[k] for k in picks]
        return PolicyDecision(
            grants=grants,
            blocking=blocking,
            wake_at=self.wake(state, granted),
            keep_running=keep,
            stop=stop,
        )

    def _allocate_sorted(self, state: SimState) -> PolicyDecision:
        r"""The default walk on one GPU type with the running jobs kept sorted across decisions.

        The running jobs stay in a sorted list, updated by the jobs that start, stop and
        complete and by those whose key :meth:`rekey_candidates` reports changed, instead of
        being re-keyed and sorted at every decision. The walk takes at once the longest run of
        running jobs that precede the queue's current best job and fit together (a bisection
        of the prefix sums of their gangs; the one-by-one walk would take each of them the
        same way, as the queue's answer, recomputed when GPUs shrink, only moves to larger
        keys), preempts the next one, which does not fit, and steps one job at a time
        otherwise. The grants, their order and the queue's evolution are those of the default
        walk. :meth:`wake` receives the jobs taken from the queue only (a sorted policy follows
        its running jobs through :meth:`on_run` and :meth:`on_stop`).
        """
        queue = self.queue
        index = self._index
        finished = state.finished
        for job_id in finished:
            queue.discard(job_id)
            i = index[job_id]
            if i in self._rkey_of:
                self._run_remove(i)
        if self._pending:
            gone = set(finished)
            for s in self._pending:
                if s.job_id in gone:
                    continue
                if s.placement is None:
                    # granted but not placed (or not kept) by the engine: waiting again
                    if s.job.index in self._rkey_of:
                        self._run_remove(s.job.index)
                    queue.push(s, self._full_key(state, s))
                elif s.job.index not in self._rkey_of:
                    self._run_insert(state, s)
        if len(state.running) != len(self._rkeys):
            # a safety net: the engine runs only granted jobs, all accounted for above
            for i in list(self._rkey_of):
                self._run_remove(i)
            for s in state.running:
                self._run_insert(state, s)
        for i, s in list(self._rspread.items()):
            if s.placement is None or s.placement.consolidated(self._gps):
                del self._rspread[i]  # moved onto the fewest servers by the engine
        for s in state.arrived:
            queue.push(s, self._full_key(state, s))
        if self.rekeys_running:
            self.refresh_running(state)
        for s in list(self.rekey_candidates(state)):
            i = s.job.index
            if i in self._rkey_of:
                key = self._full_key(state, s)
                if key != self._rkey_of[i]:
                    self._run_remove(i)
                    self._run_insert(state, s, key)
                else:
                    self.on_run(state, s)
        self.before(state)
        gpu_type = state.world.cluster.gpu_types[0]
        single, free = gpu_type.name, gpu_type.count
        runs_of = self._runs_of

        def runs(s: JobState) -> bool:
            # the job's rate on the one type is positive (a function of the job: kept)
            found = runs_of.get(s.job.index)
            if found is None:
                found = runs_of[s.job.index] = state.rate(s, single) > 0
            return found

        keys, jobs, gpus = self._rkeys, self._rjobs, self._rgpus
        n_run = len(keys)
        prefix: list[int] | None = None
        # the jobs taken from the queue (the kept running jobs need no list: the decision keeps
        # them, and no sorted policy's wake-up reads them)
        new_granted: list[JobState] = []
        new_keys: list[tuple[float, ...]] = []
        preempted: list[JobState] = []
        skipped: list[JobState] = []
        r = 0
        head: tuple[tuple[float, ...], str] | None = None
        head_key: tuple[float, ...] = ()
        head_gang = 0
        stale = True
        while True:
            while r < n_run and gpus[r] > free:
                preempted.append(jobs[r])
                r += 1
            if stale or (head is not None and head_gang > free):
                head = queue.best(free)
                head_gang = queue.states[head[1]].job.num_gpus if head is not None else 0
                stale = False
            if r < n_run:
                # the running jobs up to the queue's best job, taken at once when they all fit
                j = n_run if head is None else bisect.bisect_right(keys, head[0], r)
                if j > r + 1:
                    if prefix is None:
                        prefix = [0, *itertools.accumulate(gpus)]
                    # the longest run from r that fits (gangs are positive: the prefix sums
                    # increase); the one-by-one walk grants each of them the same way, then
                    # preempts the next one, which does not fit
                    m = bisect.bisect_right(prefix, prefix[r] + free, r, j + 1) - 1
                    if m > r:
                        free -= prefix[m] - prefix[r]
                        r = m
                        continue
            if r < n_run and (head is None or keys[r] <= head[0]):
                s = jobs[r]
                r += 1
                from_queue = False
            elif head is not None:
                s = queue.states[head[1]]
                from_queue = True
                queue.discard(s.job_id)
                stale = True
                head_key = head[0]
            else:
                break
            n = s.job.num_gpus
            # a running job runs where its rate is positive (the engine places no other)
            if free >= n and (not from_queue or runs(s)):
                free -= n
                if from_queue:
                    new_granted.append(s)
                    new_keys.append(head_key)
            else:
                (skipped if from_queue else preempted).append(s)
        for s in (*preempted, *skipped):
            queue.push(s, self._full_key(state, s))
        for s in preempted:
            self._run_remove(s.job.index)
            self.on_wait(state, s)
        self._new_granted = new_granted
        stop: tuple[str, ...] | None = None
        if preempted:
            # the ``stop`` form of the full decision: the preempted jobs stop, the new jobs and
            # the kept spread gangs are granted in the walk's (key) order, and the kept
            # consolidated gangs keep their GPUs, as granting them would
            items = list(zip(new_keys, self._new_granted, strict=True))
            items += [(self._rkey_of[i], s) for i, s in self._rspread.items()]
            items.sort(key=lambda item: item[0])
            self._pending = [s for _, s in items]
            stop = tuple(s.job_id for s in preempted)
        else:
            self._pending = self._new_granted
        grant_of = self._grant_of
        grants = []
        for s in self._pending:
            g = grant_of.get(s.job.index)
            if g is None:
                g = grant_of[s.job.index] = self._grant(s, single)
            grants.append(g)
        return PolicyDecision(
            grants=tuple(grants),
            blocking=False,
            wake_at=self.wake(state, new_granted),
            keep_running=True,
            stop=stop,
        )

    def _allocate_elastic(self, state: SimState) -> PolicyDecision:
        """The reference walk with elastic sizes (:mod:`optsched.sim.policies.elastic`)."""
        queue = self.queue
        running_ids = {s.job_id for s in state.running}
        for job_id in state.finished:
            queue.discard(job_id)
        for s in state.active:
            if s.job_id not in running_ids and s.job_id not in queue:
                queue.push(s, self._full_key(state, s))
        self.before(state)
        names = list(state.world.cluster.names)
        free = {t.name: t.count for t in state.world.cluster.gpu_types}
        if self.preemptive:
            candidates = list(state.active)
        else:
            # non-preemptive: running jobs keep their gangs (a resize would be a restart)
            for s in state.running:
                if s.placement is not None and not (s.partner is not None and s.partner < s.job_id):
                    free[s.placement.gpu_type] -= s.placement.num_gpus
            candidates = [s for s in state.active if s.job_id not in running_ids]
        candidates.sort(key=lambda s: self._full_key(state, s))
        aware = self.aware
        sized = elastic_sizes(
            state,
            candidates,
            free,
            lambda s, f: _choose_elastic_type(state, s, f, names, aware),
            blocking=self.blocking,
        )
        self._sizes = {s.job_id: n for s, _, n in sized}
        granted = [s for s, _, _ in sized]
        grants = [self._grant(s, t, n) for s, t, n in sized]
        granted_ids = set(self._sizes)
        preempted = (
            [s for s in state.running if s.job_id not in granted_ids] if self.preemptive else []
        )
        for s in granted:
            queue.discard(s.job_id)
        for s in preempted:
            queue.push(s, self._full_key(state, s))
            self.on_wait(state, s)
        keep = not self.preemptive
        if self.preemptive:
            # nothing running moved or resized: the incremental form, listing only new jobs
            current = {s.job_id: s.placement for s in state.running if s.placement is not None}
            kept = [g for g in grants if g.job in current]
            if len(kept) == len(current) and all(
                g.gpu_type == current[g.job].gpu_type and g.num_gpus == current[g.job].num_gpus
                for g in kept
            ):
                grants = [g for g in grants if g.job not in current]
                keep = True
        return PolicyDecision(
            grants=tuple(grants),
            blocking=self.blocking,
            wake_at=self.wake(state, granted),
            keep_running=keep,
        )

    def _allocate_reference(self, state: SimState) -> PolicyDecision:
        """The specification: a full sort of the candidates at every decision."""
        queue = self.queue
        running_ids = {s.job_id for s in state.running}
        for job_id in state.finished:
            queue.discard(job_id)
        # the queue holds every waiting job (the hooks read it): the arrived ones, and the
        # ones granted last time that the engine could not place
        for s in state.active:
            if s.job_id not in running_ids and s.job_id not in queue:
                queue.push(s, self._full_key(state, s))
        self.before(state)
        names = list(state.world.cluster.names)
        free = {t.name: t.count for t in state.world.cluster.gpu_types}
        if self.preemptive:
            candidates = list(state.active)
        else:
            for s in state.running:
                if s.placement is not None and not (s.partner is not None and s.partner < s.job_id):
                    free[s.placement.gpu_type] -= s.job.num_gpus
            candidates = [s for s in state.active if s.job_id not in running_ids]
        candidates.sort(key=lambda s: self._full_key(state, s))
        grants: list[Grant] = []
        granted: list[JobState] = []
        for s in candidates:
            t = _choose_type(state, s, free, names, self.aware)
            if t is None:
                if self.blocking:
                    break
                continue
            free[t] -= s.job.num_gpus
            grants.append(self._grant(s, t))
            granted.append(s)
        granted_ids = {s.job_id for s in granted}
        preempted = (
            [s for s in state.running if s.job_id not in granted_ids] if self.preemptive else []
        )
        for s in granted:
            queue.discard(s.job_id)
        for s in preempted:
            queue.push(s, self._full_key(state, s))
            self.on_wait(state, s)
        keep = not self.preemptive
        if self.preemptive:
            current = {
                s.job_id: s.placement.gpu_type for s in state.running if s.placement is not None
            }
            kept = [g for g in grants if g.job in current]
            if len(kept) == len(current) and all(g.gpu_type == current[g.job] for g in kept):
                grants = [g for g in grants if g.job not in current]
                keep = True
        return PolicyDecision(
            grants=tuple(grants),
            blocking=self.blocking,
            wake_at=self.wake(state, granted),
            keep_running=keep,
        )


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
        """Every running job's key (:meth:`_full_key`, inlined: the hot loop) and re-sort."""
        rates = self._rates
        # a running job's best rate is positive: the engine places no job where it is 0
        keyed = sorted(
            [
                (
                    (
                        max(0.0, s.job.work - s.done) / rates[s.job.index],
                        s.job.arrival,
                        s.job.index,
                    ),
                    s,
                )
                for s in self._rjobs
            ],
            key=_first,
        )
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
