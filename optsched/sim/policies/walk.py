r"""The order walk of the queueing policies (:class:`~optsched.sim.policies.OrderPolicy`).

An order policy sorts its candidates by a key and grants them GPUs down that order. This module
holds the walk itself, apart from the policies' keys and configuration
(:mod:`optsched.sim.policies.basic`):

* :class:`WaitQueue` — the waiting jobs, one heap per gang size, on keys fixed while they wait;
* :class:`OrderWalk` — the state the walks keep across decisions (the queue, the sorted running
  jobs, the grants the engine may not have placed) and the hooks a policy overrides;
* the walks, one function per way of carrying the specification out:
  :func:`walk_reference` (the specification: a full sort at every decision),
  :func:`walk_default` (the running jobs re-keyed and merged with the queue),
  :func:`walk_sorted` (one GPU type, the running jobs kept sorted across decisions) and
  :func:`walk_elastic` (elastic gang sizes). All give the same allocation at every decision
  (the tests compare their records on random worlds).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from optsched.sim.engine.policy import (
    Consolidation,
    Grant,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.policies.elastic import elastic_sizes

__all__ = [
    "OrderWalk",
    "WaitQueue",
    "choose_elastic_type",
    "choose_type",
    "walk_default",
    "walk_elastic",
    "walk_reference",
    "walk_sorted",
]


def _first(item: tuple[tuple[float, ...], JobState]) -> tuple[float, ...]:
    return item[0]


class WaitQueue:
    r"""Waiting jobs, one heap per gang size, on keys fixed while a job waits.

    ``best(max_gang)`` is the smallest key among jobs with a gang of at most ``max_gang`` GPUs,
    in :math:`O(G)` for :math:`G` distinct gang sizes (a look at each heap's top: only
    non-empty heaps are kept, and a removed job leaves its heap at once). A push, or the
    removal of a heap's top (a job taken by a walk), is :math:`O(\log A)`; removing a job
    from inside its heap (a job re-keyed while waiting, or taken by the reference walk) is
    :math:`O(A)`.
    """

    def __init__(self) -> None:
        self.heaps: dict[int, list[tuple[tuple[float, ...], int, str]]] = {}
        self.entries: dict[str, tuple[tuple[float, ...], int, str]] = {}
        self.states: dict[str, JobState] = {}
        self._counter = 0

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.states

    def __len__(self) -> int:
        return len(self.states)

    def push(self, s: JobState, key: tuple[float, ...]) -> None:
        """Add (or re-key) a waiting job."""
        job_id = s.job_id
        if job_id in self.entries:
            self.discard(job_id)
        self._counter += 1
        entry = (key, self._counter, job_id)
        self.entries[job_id] = entry
        self.states[job_id] = s
        heap = self.heaps.get(s.job.num_gpus)
        if heap is None:
            self.heaps[s.job.num_gpus] = [entry]
        else:
            heapq.heappush(heap, entry)

    def discard(self, job_id: str) -> None:
        """Remove a job (no-op when absent)."""
        entry = self.entries.pop(job_id, None)
        if entry is None:
            return
        gang = self.states.pop(job_id).job.num_gpus
        heap = self.heaps[gang]
        if heap[0] is entry:
            heapq.heappop(heap)
        else:
            heap.remove(entry)
            heapq.heapify(heap)
        if not heap:
            del self.heaps[gang]

    def best(self, max_gang: float = math.inf) -> tuple[tuple[float, ...], str] | None:
        """The smallest-key waiting job whose gang is at most ``max_gang`` GPUs."""
        found: tuple[tuple[float, ...], int, str] | None = None
        for gang, heap in self.heaps.items():
            # the entries' counters differ: the comparison is decided by the key or the counter
            if gang <= max_gang and (found is None or heap[0] < found):
                found = heap[0]
        return None if found is None else (found[0], found[2])


def choose_type(
    state: SimState, s: JobState, free: dict[str, int], names: list[str], aware: bool
) -> str | None:
    """The GPU type granted to rigid job ``s`` given the ``free`` GPUs, or None (no room).

    Agnostic: the job's current type if it has room, else the first in ``names`` with room;
    ``aware``: the fastest with room (the current type on ties). A type on which the job's
    rate is 0 is no room for it.
    """
    n = s.job.num_gpus
    # a type where the job's rate is 0 is no room for it (it would hold GPUs forever)
    room = [t for t in names if free[t] >= n and state.rate(s, t) > 0]
    if not room:
        return None
    current = s.placement.gpu_type if s.placement is not None else None
    if aware:
        return max(room, key=lambda t: (state.rate(s, t), t == current, -names.index(t)))
    return current if current in room else room[0]


def choose_elastic_type(
    state: SimState, s: JobState, free: dict[str, int], names: list[str], aware: bool
) -> str | None:
    """The GPU type for elastic job ``s`` (:func:`choose_type` with its smallest gang as room)."""
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


class OrderWalk(Policy):
    """What the walks keep across decisions, and the hooks an order policy overrides.

    The base of :class:`~optsched.sim.policies.OrderPolicy`, which adds the configuration and
    the keys. The queue holds every waiting job; the *sorted running jobs* (``_rkeys``,
    ``_rjobs``, ``_rgpus``, kept in key order) are used by :func:`walk_sorted` only.
    """

    aware: bool = False
    blocking = False
    preemptive = True
    elastic: bool = False
    reference: bool = False
    #: the running jobs are re-keyed at every decision by :meth:`~OrderWalk.refresh_running`
    rekeys_running = False

    def _reset_walk(self) -> None:
        self.queue = WaitQueue()
        self._pending: list[JobState] = []  # the jobs granted at the last decision, to follow
        self._sizes: dict[str, int] = {}  # the elastic gangs of the last decision
        self._sorted = False  # decide by :func:`walk_sorted`
        self._index: dict[str, int] = {}  # job id -> position (the sorted walk)
        self._grant_of: dict[int, Grant] = {}  # the sorted walk's grant of each job, once built
        self._runs_of: dict[int, bool] = {}  # whether a job's rate on the one type is positive
        self._gps = 1  # GPUs per server of the one type (the sorted walk)
        # whether :meth:`before` and :meth:`on_wait` may do anything (the sorted walk skips the
        # calls otherwise): the hooks as overridden; a policy may narrow it at :meth:`reset`
        self._waiting_hooks = (
            type(self).before is not OrderWalk.before or type(self).on_wait is not OrderWalk.on_wait
        )
        self._reset_running()

    # -- the sorted running jobs --------------------------------------------------------------

    def _reset_running(self) -> None:
        self._rkeys: list[tuple[float, ...]] = []  # full keys, sorted
        self._rjobs: list[JobState] = []  # the jobs, in that order
        self._rgpus: list[int] = []  # their gangs
        self._rtotal = 0  # the sum of their gangs
        self._rkey_of: dict[int, tuple[float, ...]] = {}  # job index -> its key in the list
        self._rspread: dict[int, JobState] = {}  # the running jobs spread over extra servers
        self._new_granted: list[JobState] = []

    def _run_insert(
        self, state: SimState, s: JobState, key: tuple[float, ...] | None = None
    ) -> None:
        if key is None:
            key = self._full_key(state, s)
        keys = self._rkeys
        p = bisect.bisect_left(keys, key)
        keys.insert(p, key)
        self._rjobs.insert(p, s)
        job = s.job
        gang = job.num_gpus
        self._rgpus.insert(p, gang)
        self._rtotal += gang
        self._rkey_of[job.index] = key
        placement = s.placement
        # one server is the fewest (the check without the call, for most jobs)
        if (
            placement is not None
            and len(placement.servers) > 1
            and not placement.consolidated(self._gps)
        ):
            self._rspread[job.index] = s
        self.on_run(state, s)

    def _run_remove(self, i: int) -> None:
        key = self._rkey_of.pop(i)
        keys, gpus = self._rkeys, self._rgpus
        p = bisect.bisect_left(keys, key)
        self._rtotal -= gpus[p]
        del keys[p], self._rjobs[p], gpus[p]
        if self._rspread:
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
        self._rtotal = sum(self._rgpus)
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

    def _full_key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """The full sort key: the policy's key, then arrival, then position."""
        raise NotImplementedError

    def consolidation(self, s: JobState) -> Consolidation:
        """The ``consolidate`` of the job's grant (default ``"prefer"``).

        A function of the job alone (the sorted walk keeps each job's grant).
        """
        return "prefer"

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


def walk_default(p: OrderWalk, state: SimState) -> PolicyDecision:
    r"""The running jobs re-keyed and sorted, merged with the queue (any cluster, rigid gangs).

    The queue is asked for its best job that fits again only when that job was taken or no
    longer fits (the free GPUs only shrink during a walk). Complexity:
    :math:`O(R \log R + (g + 1) G (G + \log A))` (see
    :class:`~optsched.sim.policies.OrderPolicy`).
    """
    queue = p.queue
    for job_id in state.finished:
        queue.discard(job_id)
    if p._pending:
        # granted last time but not placed by the engine: waiting again
        gone = set(state.finished)
        for s in p._pending:
            if s.placement is None and s.job_id not in gone:
                queue.push(s, p._full_key(state, s))
    for s in state.arrived:
        queue.push(s, p._full_key(state, s))
    p.before(state)
    free = {t.name: t.count for t in state.world.cluster.gpu_types}
    if p.preemptive:
        keys = [p._full_key(state, s) for s in state.running]
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
    walked = _merge_default(p, state, free, running, running_keys)
    return _default_decision(p, state, walked)


#: What one walk of :func:`walk_default` found, in walk order: the granted jobs, the GPU type
#: of each, the positions among them of the jobs taken from the queue, the preempted jobs, and
#: whether a running job was granted another GPU type.
_Walked = tuple[list[JobState], list[str], list[int], list[JobState], bool]


def _merge_default(
    p: OrderWalk,
    state: SimState,
    free: dict[str, int],
    running: list[JobState],
    running_keys: list[tuple[float, ...]],
) -> _Walked:
    """The walk of :func:`walk_default`: the sorted running jobs merged with the queue."""
    queue = p.queue
    names = list(state.world.cluster.names)
    single = names[0] if len(names) == 1 else None
    aware = p.aware
    blocking = p.blocking
    granted: list[JobState] = []
    chosen: list[str] = []
    new: list[int] = []
    preempted: list[JobState] = []
    moved = False
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
            t = choose_type(state, s, free, names, aware)
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
        queue.push(s, p._full_key(state, s))
    return granted, chosen, new, preempted, moved


def _default_decision(p: OrderWalk, state: SimState, walked: _Walked) -> PolicyDecision:
    """The decision of :func:`walk_default` in its smallest form."""
    granted, chosen, new, preempted, moved = walked
    for s in preempted:
        p.on_wait(state, s)
    single = len(state.world.cluster.gpu_types) == 1
    # nobody preempted or moved: say so, and list only the jobs to start
    keep = not preempted and not moved
    picks: Sequence[int] = new if keep else range(len(granted))
    stop: tuple[str, ...] | None = None
    if preempted and not moved and single:
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
    grants = tuple([p._grant(granted[k], chosen[k]) for k in picks])
    # the engine keeps every running job under keep_running: only the others may fail
    p._pending = [granted[k] for k in picks]
    return PolicyDecision(
        grants=grants,
        blocking=p.blocking,
        wake_at=p.wake(state, granted),
        keep_running=keep,
        stop=stop,
    )


def walk_sorted(p: OrderWalk, state: SimState) -> PolicyDecision:
    r"""The default walk on one GPU type with the running jobs kept sorted across decisions.

    The running jobs stay in a sorted list, updated by the jobs that start, stop and complete
    and by those whose key :meth:`~OrderWalk.rekey_candidates` reports changed, instead of
    being re-keyed and sorted at every decision. The walk takes at once the longest run of
    running jobs that precede the queue's current best job and fit together (the whole run
    when its sum fits, the usual case since the running jobs fit together; else by a
    bisection of the prefix sums of their gangs: the one-by-one walk would take each of them
    the same way, as the queue's answer, recomputed when GPUs shrink, only moves to larger
    keys), preempts the next one, which does not fit, and steps one job at a time otherwise.
    The grants, their order and the queue's evolution are those of the default walk.
    :meth:`~OrderWalk.wake` receives the jobs taken from the queue only (a sorted policy
    follows its running jobs through :meth:`~OrderWalk.on_run` and
    :meth:`~OrderWalk.on_stop`). A decision costs :math:`O(R + (g + 1) G (G + \log A))` for
    :math:`R` running jobs (the sums and list updates, in C), :math:`g` grants, :math:`G`
    gang sizes and :math:`A` waiting jobs.
    """
    _sync_sorted(p, state)
    _rekey_sorted(p, state)
    if p._waiting_hooks:
        p.before(state)
    walked = _merge_sorted(p, state)
    return _sorted_decision(p, state, *walked)


def _sync_sorted(p: OrderWalk, state: SimState) -> None:
    """Bring the queue and the sorted running jobs up to date with the engine's news."""
    queue = p.queue
    key_of = p._rkey_of
    finished = state.finished
    if finished:
        index = p._index
        for job_id in finished:
            queue.discard(job_id)
            i = index[job_id]
            if i in key_of:
                p._run_remove(i)
    if p._pending:
        _sync_pending(p, state)
    if len(state.running) != len(p._rkeys):
        # a safety net: the engine runs only granted jobs, all accounted for above
        for i in list(key_of):
            p._run_remove(i)
        for s in state.running:
            p._run_insert(state, s)
    if p._rspread:
        gps = p._gps
        for i, s in list(p._rspread.items()):
            if s.placement is None or s.placement.consolidated(gps):
                del p._rspread[i]  # moved onto the fewest servers by the engine


def _sync_pending(p: OrderWalk, state: SimState) -> None:
    """Follow the jobs granted at the last decision: running now, or waiting again."""
    key_of = p._rkey_of
    gone = set(state.finished) if state.finished else ()
    for s in p._pending:
        if s.job_id in gone:
            continue
        if s.placement is None:
            # granted but not placed (or not kept) by the engine: waiting again
            if s.job.index in key_of:
                p._run_remove(s.job.index)
            p.queue.push(s, p._full_key(state, s))
        elif s.job.index not in key_of:
            p._run_insert(state, s)


def _rekey_sorted(p: OrderWalk, state: SimState) -> None:
    """Queue the arrived jobs; re-key the running jobs whose key may have changed."""
    for s in state.arrived:
        p.queue.push(s, p._full_key(state, s))
    if p.rekeys_running:
        p.refresh_running(state)
    candidates = p.rekey_candidates(state)
    if not candidates:
        return
    key_of = p._rkey_of
    for s in list(candidates):
        i = s.job.index
        if i in key_of:
            key = p._full_key(state, s)
            if key != key_of[i]:
                p._run_remove(i)
                p._run_insert(state, s, key)
            else:
                p.on_run(state, s)


def _merge_sorted(
    p: OrderWalk, state: SimState
) -> tuple[list[JobState], list[tuple[float, ...]], list[JobState], list[JobState]]:
    """The walk of :func:`walk_sorted`.

    The jobs granted from the queue and their keys, the running jobs preempted and the
    waiting jobs skipped (a rate of 0).
    """
    queue = p.queue
    states = queue.states
    free = state.world.cluster.gpu_types[0].count
    runs_of = p._runs_of
    keys, jobs, gpus = p._rkeys, p._rjobs, p._rgpus
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
    head_gang = 0
    stale = True
    while True:
        while r < n_run and gpus[r] > free:
            preempted.append(jobs[r])
            r += 1
        if stale or head_gang > free:
            head = queue.best(free)
            head_gang = states[head[1]].job.num_gpus if head is not None else 0
            stale = False
        if r < n_run:
            # the running jobs up to the queue's best job, taken at once when they all fit
            j = n_run if head is None else bisect.bisect_right(keys, head[0], r)
            if j > r + 1:
                # the longest run from r that fits; the one-by-one walk grants each of them
                # the same way, then preempts the next one, which does not fit. Most often
                # the whole run fits (the running jobs fit together): its sum says so
                # without the prefix sums
                # (all of them, the usual first run: their kept sum)
                run = p._rtotal if r == 0 and j == n_run else _run_gpus(p._rtotal, gpus, r, j)
                if run <= free:
                    free -= run
                    r = j
                    continue
                if prefix is None:
                    prefix = [0, *itertools.accumulate(gpus)]
                # gangs are positive: the prefix sums increase
                m = bisect.bisect_right(prefix, prefix[r] + free, r, j + 1) - 1
                if m > r:
                    free -= prefix[m] - prefix[r]
                    r = m
                    continue
            if head is None or keys[r] <= head[0]:
                s = jobs[r]
                r += 1
                n = s.job.num_gpus
                if free >= n:
                    free -= n
                else:
                    preempted.append(s)
                continue
        if head is None:
            break
        # the queue's best job (it fits: its gang is at most ``free``)
        s = states[head[1]]
        queue.discard(head[1])
        stale = True
        i = s.job.index
        ok = runs_of.get(i)
        if ok is None:
            # the job's rate on the one type is positive (a function of the job: kept)
            ok = runs_of[i] = state.rate(s, state.world.cluster.gpu_types[0].name) > 0
        if ok:
            free -= head_gang
            new_granted.append(s)
            new_keys.append(head[0])
        else:
            skipped.append(s)
    return new_granted, new_keys, preempted, skipped


def _run_gpus(total: int, gpus: list[int], r: int, j: int) -> int:
    """The sum of ``gpus[r:j]``, ``total`` being the sum of all.

    From the first running job it is the kept total less the few behind (as when a crossing
    job moved behind the queue's best): a pass over the shorter side. Integers: exact.
    """
    if r == 0 and 2 * j > len(gpus):
        return total - sum(gpus[j:])
    return sum(gpus[r:j])


def _sorted_decision(
    p: OrderWalk,
    state: SimState,
    new_granted: list[JobState],
    new_keys: list[tuple[float, ...]],
    preempted: list[JobState],
    skipped: list[JobState],
) -> PolicyDecision:
    """The decision of :func:`walk_sorted` in its smallest form (``stop`` when preempting)."""
    stop: tuple[str, ...] | None = None
    p._new_granted = new_granted
    if preempted or skipped:
        queue = p.queue
        key_of = p._rkey_of
        for s in preempted:
            # the key it was walked with, which is its full key now: a running job's key
            # changes only when :meth:`~OrderWalk.rekey_candidates` says so, or at every
            # decision when the policy re-keys all (the walk's own premise)
            queue.push(s, key_of[s.job.index])
        for s in skipped:
            queue.push(s, p._full_key(state, s))
        for s in preempted:
            p._run_remove(s.job.index)
        if p._waiting_hooks:
            for s in preempted:
                p.on_wait(state, s)
    if preempted:
        # the ``stop`` form of the full decision: the preempted jobs stop, the new jobs and
        # the kept spread gangs are granted in the walk's (key) order, and the kept
        # consolidated gangs keep their GPUs, as granting them would
        if p._rspread:
            items = list(zip(new_keys, new_granted, strict=True))
            items += [(p._rkey_of[i], s) for i, s in p._rspread.items()]
            items.sort(key=_first)
            p._pending = [s for _, s in items]
        else:
            # the new jobs alone, already in key order: each was the queue's best when taken,
            # from a queue that only shrank
            p._pending = new_granted
        stop = tuple([s.job_id for s in preempted])
    else:
        p._pending = new_granted
    grants: tuple[Grant, ...] = ()
    if p._pending:
        grant_of = p._grant_of
        single = state.world.cluster.gpu_types[0].name
        listed = []
        for s in p._pending:
            g = grant_of.get(s.job.index)
            if g is None:
                g = grant_of[s.job.index] = p._grant(s, single)
            listed.append(g)
        grants = tuple(listed)
    # (positional: the frozen dataclass's keyword call costs more, at every decision)
    return PolicyDecision(grants, False, p.wake(state, new_granted), True, stop)


def _placed_gpus(s: JobState) -> int:
    """GPUs of a running job's placement (an elastic gang may hold other than it asked)."""
    return s.placement.num_gpus if s.placement is not None else 0


def _sorted_candidates(
    p: OrderWalk, state: SimState, held: Callable[[JobState], int]
) -> tuple[list[str], dict[str, int], list[JobState]]:
    """The full-sort walks' start: GPU types, GPUs free per type, candidates in key order.

    The queue is brought up to date first: it holds every waiting job (the hooks read it), the
    arrived ones and the ones granted last time that the engine could not place. A preemptive
    walk ranks every active job on the whole cluster; otherwise the running ones keep their
    GPUs (``held(s)`` of them, counted once per shared gang) and only the waiting ones are
    candidates.
    """
    queue = p.queue
    running_ids = {s.job_id for s in state.running}
    for job_id in state.finished:
        queue.discard(job_id)
    for s in state.active:
        if s.job_id not in running_ids and s.job_id not in queue:
            queue.push(s, p._full_key(state, s))
    p.before(state)
    names = list(state.world.cluster.names)
    free = {t.name: t.count for t in state.world.cluster.gpu_types}
    if p.preemptive:
        candidates = list(state.active)
    else:
        for s in state.running:
            if s.placement is not None and not (s.partner is not None and s.partner < s.job_id):
                free[s.placement.gpu_type] -= held(s)
        candidates = [s for s in state.active if s.job_id not in running_ids]
    candidates.sort(key=lambda s: p._full_key(state, s))
    return names, free, candidates


def walk_elastic(p: OrderWalk, state: SimState) -> PolicyDecision:
    """The reference walk with elastic sizes (:mod:`optsched.sim.policies.elastic`)."""
    queue = p.queue
    # non-preemptive: running jobs keep their gangs (a resize would be a restart)
    names, free, candidates = _sorted_candidates(p, state, held=_placed_gpus)
    aware = p.aware
    sized = elastic_sizes(
        state,
        candidates,
        free,
        lambda s, f: choose_elastic_type(state, s, f, names, aware),
        blocking=p.blocking,
    )
    p._sizes = {s.job_id: n for s, _, n in sized}
    granted = [s for s, _, _ in sized]
    grants = [p._grant(s, t, n) for s, t, n in sized]
    granted_ids = set(p._sizes)
    preempted = [s for s in state.running if s.job_id not in granted_ids] if p.preemptive else []
    for s in granted:
        queue.discard(s.job_id)
    for s in preempted:
        queue.push(s, p._full_key(state, s))
        p.on_wait(state, s)
    keep = not p.preemptive
    if p.preemptive:
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
        blocking=p.blocking,
        wake_at=p.wake(state, granted),
        keep_running=keep,
    )


def walk_reference(p: OrderWalk, state: SimState) -> PolicyDecision:
    """The specification: a full sort of the candidates at every decision."""
    queue = p.queue
    names, free, candidates = _sorted_candidates(p, state, held=lambda s: s.job.num_gpus)
    grants: list[Grant] = []
    granted: list[JobState] = []
    for s in candidates:
        t = choose_type(state, s, free, names, p.aware)
        if t is None:
            if p.blocking:
                break
            continue
        free[t] -= s.job.num_gpus
        grants.append(p._grant(s, t))
        granted.append(s)
    granted_ids = {s.job_id for s in granted}
    preempted = [s for s in state.running if s.job_id not in granted_ids] if p.preemptive else []
    for s in granted:
        queue.discard(s.job_id)
    for s in preempted:
        queue.push(s, p._full_key(state, s))
        p.on_wait(state, s)
    keep = not p.preemptive
    if p.preemptive:
        current = {s.job_id: s.placement.gpu_type for s in state.running if s.placement is not None}
        kept = [g for g in grants if g.job in current]
        if len(kept) == len(current) and all(g.gpu_type == current[g.job] for g in kept):
            grants = [g for g in grants if g.job not in current]
            keep = True
    return PolicyDecision(
        grants=tuple(grants),
        blocking=p.blocking,
        wake_at=p.wake(state, granted),
        keep_running=keep,
    )
