r"""Tiresias: discretized 2D-LAS and 2D-Gittins (Gu et al., NSDI 2019).

Source: the paper (https://www.usenix.org/conference/nsdi19/presentation/gu) and the simulator's
documentation (https://github.com/SymbioticLab/Tiresias); implemented from the description.

**2D attained service** of a job: GPUs x wall seconds it held them (restore time included),
:attr:`JobState.attained_service <optsched.sim.JobState.attained_service>`.

**Queues.** ``K`` queues separated by the service thresholds ``thresholds`` (GPU-seconds, default
``(1800, 3600, 7200)``: the 30 min / 1 h / 2 h queues of the simulator's documentation, read as
GPU-seconds since the service is two-dimensional). A job is in queue ``q`` = the number of
thresholds at or below its service counted since its last promotion; queues are served in order,
FIFO by arrival within a queue (**2D-LAS**), or, for **2D-Gittins**, by the Gittins index within a
queue:

.. math:: G(a) = \frac{P(S - a \le \Delta \mid S > a)}{E[\min(S - a, \Delta) \mid S > a]}

with ``a`` the job's service, ``Delta`` the distance to its queue's next threshold (the queue's
quantum; the last queue uses the largest threshold as quantum) and ``S`` the GPU-time demand
distribution, taken as the empirical distribution of every job's demand in the trace
(``num_gpus x work / reference rate``: the distribution Tiresias learns from history, known here
exactly, which is the best case). Higher index first; ties FIFO.

**Starvation (PROMOTE knob).** With ``promote_knob = P`` a waiting job that has waited at least
``P x`` its last run's length since that run ended is moved back to the first queue (its service
is counted afresh from then); ``None`` (default) disables promotion. After ``max_promotions``
promotions (default 64) a job is no longer promoted, which bounds the decision points.

**Placement.** Consolidation is required only for models with a skewed tensor-size distribution
(Tiresias profiles them; the paper names the VGG family and AlexNet): a job whose model name starts
with one of ``skewed_prefixes`` (default ``("vgg", "alexnet")``) waits for consolidated GPUs,
others take spread GPUs when fragmentation leaves no consolidated room.

**Decision points.** Event-driven: arrivals, completions, and the next time a running job crosses
a threshold or a waiting job becomes due for promotion (``wake_at``). Preemptive. GPU types as in
:func:`~optsched.sim.policies.greedy_allocation` (agnostic, or aware with ``aware=True``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Consolidation, JobState, PolicyDecision, SimState
from optsched.sim.policies.basic import OrderPolicy
from optsched.sim.policies.las_core import COMPILED_JOBS, LasCore, kernel_loaded
from optsched.sim.world.jobs import World
from optsched.tolerances import TIME_TOL

__all__ = ["Tiresias"]


def _margin(now: float) -> float:
    """How far a predicted crossing may be off (written out where it is hot).

    The rounding of the service's running sum, far below a microsecond per 10^6 s, plus
    ``TIME_TOL`` (a queue changes ``TIME_TOL`` before its threshold).
    """
    return 1e-3 + 1e-6 * abs(now)


def _demand_of(world: World | None) -> np.ndarray:
    """Every job's GPU-time demand on ``world``, sorted (empty before :meth:`Tiresias.reset`)."""
    if world is None:
        return np.zeros(0)
    ref = world.throughputs.reference
    demand = []
    for j in world.jobs:
        rate = world.rate(j, ref) if ref in world.cluster.names else 0.0
        if rate <= 0:
            rate = max(world.rate(j, t) for t in world.cluster.names)
        demand.append(j.num_gpus * j.work / rate if rate > 0 else math.inf)
    return np.sort(np.asarray(demand, dtype=float))


#: what the compiled 2D-LAS walk carries out as :class:`Tiresias` defines it
_WALK_HOOKS = (
    "_full_key",
    "on_run",
    "on_stop",
    "rekey_candidates",
    "wake",
    "_run_insert",
    "key",
    "allocate",
)


class Tiresias(OrderPolicy):
    """Discretized 2D-LAS (``mode="las"``) or 2D-Gittins (``mode="gittins"``).

    Parameters
    ----------
    mode : {"las", "gittins"}
    thresholds : sequence of float
        Increasing service thresholds (GPU-seconds), ``K - 1`` of them for ``K`` queues.
    promote_knob : float or None
        The PROMOTE knob (None: no promotion).
    skewed_prefixes : sequence of str
        Model-name prefixes (lower case) that require consolidation.
    aware : bool
        Heterogeneity-aware GPU type choice.
    max_promotions : int
        Promotions per job at most.
    reference : bool
        Decide by the plain full sort (see :class:`~optsched.sim.policies.OrderPolicy`).
    elastic : bool
        Size elastic gangs (see :mod:`optsched.sim.policies.elastic`).
    compiled : bool or None
        2D-LAS on one GPU type, in :func:`~optsched.sim.simulate`: decide by the compiled walk
        (:mod:`optsched.sim.policies.las_core`, the same decisions): ``None`` (default) for a
        world of at least :data:`~optsched.sim.policies.las_core.COMPILED_JOBS` jobs or once
        the process has loaded it, ``True`` always, ``False`` never.
    """

    def __init__(
        self,
        mode: str = "las",
        *,
        thresholds: Sequence[float] = (1800.0, 3600.0, 7200.0),
        promote_knob: float | None = None,
        skewed_prefixes: Sequence[str] = ("vgg", "alexnet"),
        aware: bool = False,
        max_promotions: int = 64,
        reference: bool = False,
        elastic: bool = False,
        compiled: bool | None = None,
    ) -> None:
        if mode not in ("las", "gittins"):
            raise InvalidInstanceError("mode", f"must be 'las' or 'gittins', got {mode!r}")
        th = [float(x) for x in thresholds]
        if not th or any(not (math.isfinite(x) and x > 0) for x in th) or th != sorted(set(th)):
            raise InvalidInstanceError(
                "thresholds", f"must be increasing positive numbers, got {list(thresholds)}"
            )
        if promote_knob is not None and not (math.isfinite(promote_knob) and promote_knob > 0):
            raise InvalidInstanceError("promote_knob", f"must be > 0, got {promote_knob}")
        if max_promotions < 0:
            raise InvalidInstanceError("max_promotions", f"must be >= 0, got {max_promotions}")
        super().__init__(aware=aware, reference=reference, elastic=elastic)
        self.mode = mode
        self.thresholds = th
        self.promote_knob = promote_knob
        self.skewed = tuple(p.lower() for p in skewed_prefixes)
        self.max_promotions = max_promotions
        self.compiled = compiled
        self._core: LasCore | None = None
        self.name = (
            f"tiresias-{mode}" + ("-perf" if aware else "") + ("-elastic" if elastic else "")
        )
        # 2D-LAS keys change only at threshold crossings, which are predicted
        self.stable_running_keys = mode == "las"
        self._base: dict[str, float] = {}
        self._promotions: dict[str, int] = {}
        self._due: dict[str, float] = {}
        self._due_heap: list[tuple[float, str]] = []
        self._world: World | None = None
        self._demand: np.ndarray | None = None  # every job's demand, sorted (built when used)
        self._skew: dict[int, bool] = {}
        # predicted threshold crossings of the running jobs (sorted running jobs, 2D-LAS):
        # (time, version, job index, state), the valid version per job
        self._cross: list[tuple[float, int, int, JobState]] = []
        self._cross_version: dict[int, int] = {}
        self._cross_counter = 0
        # what the last 2D-LAS key was computed from, for :meth:`on_run`, which follows at the
        # same decision: (job, now, its service net of promotions, its predicted crossing);
        # one of the last two is NaN
        self._keyed: tuple[JobState | None, float, float, float] = (None, math.nan, 0.0, math.nan)
        # the jobs granted at the last decision: job index -> (predicted crossing, inf when
        # none; the full key they were granted with)
        self._started: dict[int, tuple[float, Any]] = {}
        self._arrivals: list[float] = []
        # 2D-LAS's full key (queue, arrival, position) as one integer, ``queue * n + position``
        # (:meth:`_full_key`): the same order, since the world's jobs are sorted by arrival
        # (ties by position), and compared, sorted and heaped several times faster than a tuple;
        # 0 (the tuple) for a world whose jobs are not so (none the engine is given)
        self._n = 0

    def reset(self, world: World) -> None:
        """Clear queues and promotion state (the demand distribution for Gittins: on first use)."""
        super().reset(world)
        self._core = None
        self._base = {}
        self._promotions = {}
        self._due = {}
        self._due_heap = []
        self._skew = {}
        self._cross = []
        self._cross_version = {}
        self._keyed = (None, math.nan, 0.0, math.nan)
        self._started = {}
        self._arrivals = [j.arrival for j in world.jobs]  # sorted, as the world's jobs
        arrivals = self._arrivals
        ordered = all(j.index == k for k, j in enumerate(world.jobs)) and all(
            a <= b for a, b in itertools.pairwise(arrivals)
        )
        self._n = len(world.jobs) if ordered else 0
        # jobs that wait for consolidated GPUs may leave GPUs idle: no claim of work conservation
        self.work_conserving = not (
            self.skewed and any(j.model.lower().startswith(self.skewed) for j in world.jobs)
        )
        # the demand distribution is built when first used (2D-Gittins; 2D-LAS never reads it)
        self._world = world
        self._demand = None
        # without the PROMOTE knob no job is promoted: the sorted walk may skip the hooks
        # (unless a subclass overrides them)
        cls = type(self)
        self._waiting_hooks = (
            self.promote_knob is not None
            or cls.before is not Tiresias.before
            or cls.on_wait is not Tiresias.on_wait
        )

    def plain_progress(self) -> None:
        """Decide by the compiled walk when it applies (see ``compiled`` and :func:`_compiles`)."""
        if self._world is not None and _compiles(self, self._world):
            self._core = LasCore(self, self._world)

    def allocate(self, state: SimState) -> PolicyDecision:
        """The plain walk's decision (by the compiled walk when :meth:`plain_progress` chose it)."""
        core = self._core
        if core is not None:
            return core.allocate(state)
        return super().allocate(state)

    def max_wakeups(self, world: World) -> int:
        """Each wake-up is a predicted threshold crossing or promotion: ``2 n (K + 1) (P + 1)``.

        (A crossing predicted for a job the engine then could not place, for want of consolidated
        GPUs, is at most one spurious wake-up per prediction: the factor 2.)
        """
        return 2 * len(world.jobs) * (len(self.thresholds) + 1) * (self.max_promotions + 1)

    # -- queues ---------------------------------------------------------------------------

    def _service(self, s: JobState) -> float:
        return s.attained_service - self._base.get(s.job_id, 0.0)

    def _queue(self, s: JobState) -> int:
        return bisect.bisect_right(self.thresholds, self._service(s) + TIME_TOL)

    def gittins(self, a: float, delta: float) -> float:
        r"""Gittins index of service ``a`` with quantum ``delta`` on the trace's demand.

        Complexity: :math:`O(\log n + m)` for :math:`m` jobs with demand above ``a``.
        """
        d = self._demand
        if d is None:
            d = self._demand = _demand_of(self._world)
        alive = d[np.searchsorted(d, a, side="right") :]
        if len(alive) == 0:
            return math.inf
        rest = alive - a
        finish = float(np.mean(rest <= delta))
        work = float(np.mean(np.minimum(rest, delta)))
        return finish / work if work > 0 else math.inf

    def key(self, state: SimState, s: JobState) -> tuple[float, ...]:
        """(queue,) for LAS; (queue, -Gittins index) for Gittins."""
        # _service and _queue inlined: this runs for every running job at every decision
        a = s.attained_service - self._base.get(s.job.job_id, 0.0)
        q = bisect.bisect_right(self.thresholds, a + TIME_TOL)
        if self.mode == "las":
            return (q,)
        upper = self.thresholds[q] if q < len(self.thresholds) else a + self.thresholds[-1]
        return (q, -self.gittins(a, max(upper - a, TIME_TOL)))

    def _full_key(self, state: SimState, s: JobState) -> Any:
        # 2D-LAS: :meth:`key` with the arrival and position, inlined (it runs for every job
        # that starts, stops or crosses a threshold), as the one integer ``queue * n +
        # position`` (see ``_n``); the service read is kept for on_run
        if self.mode != "las":
            return (*self.key(state, s), s.job.arrival, s.job.index)
        job = s.job
        now = state.now
        started = self._started.pop(job.index, None)
        if started is not None and started[0] > now + (1e-3 + 1e-6 * abs(now)):  # _margin
            # granted at the last decision, short of its next threshold (by the margin of
            # :meth:`rekey_candidates`): the key it was granted with, its service unread
            self._keyed = (s, now, math.nan, started[0])
            return started[1]
        a = s.attained_service
        if self._base:  # (nothing to take off without promotions)
            a -= self._base.get(job.job_id, 0.0)
        self._keyed = (s, now, a, math.nan)
        q = bisect.bisect_right(self.thresholds, a + TIME_TOL)
        return q * self._n + job.index if self._n else (q, job.arrival, job.index)

    def _skewed(self, s: JobState) -> bool:
        found = self._skew.get(s.job.index)
        if found is None:
            found = self._skew[s.job.index] = bool(self.skewed) and s.job.model.lower().startswith(
                self.skewed
            )
        return found

    def on_wait(self, state: SimState, s: JobState) -> None:
        """Schedule the promotion of a job that stops now."""
        if self.promote_knob is None or self._promotions.get(s.job_id, 0) >= self.max_promotions:
            return
        due = state.now + self.promote_knob * (state.now - s.last_start)
        self._due[s.job_id] = due
        heapq.heappush(self._due_heap, (due, s.job_id))

    def _next_due(self) -> float:
        heap = self._due_heap
        while heap:
            due, job_id = heap[0]
            if self._due.get(job_id) == due and job_id in self.queue:
                return due
            heapq.heappop(heap)
        return math.inf

    def before(self, state: SimState) -> None:
        """Promote the waiting jobs that are due (back to the first queue)."""
        if not self._due_heap:
            return  # no promotion scheduled (always so without the PROMOTE knob)
        slack = TIME_TOL * max(1.0, state.now)
        while self._next_due() <= state.now + slack:
            _, job_id = heapq.heappop(self._due_heap)
            self._due.pop(job_id, None)
            s = self.queue.states[job_id]
            if self._queue(s) > 0:
                self._base[job_id] = s.attained_service
                self._promotions[job_id] = self._promotions.get(job_id, 0) + 1
                self.queue.push(s, self._full_key(state, s))

    # -- the sorted running jobs (2D-LAS on one GPU type) -----------------------------------

    def on_run(self, state: SimState, s: JobState) -> None:
        """Predict the running job's next threshold crossing from its service now.

        (Or, for a job granted at the last decision and keyed from that, the crossing
        predicted then: the same time up to the rounding the margins allow for.)
        """
        keyed, at_now, a, at = self._keyed
        i = s.job.index
        if keyed is s and at_now == state.now and at == at:
            if at == math.inf:
                self._cross_version.pop(i, None)
                return
        else:
            if keyed is not s or at_now != state.now:
                a = s.attained_service - self._base.get(s.job.job_id, 0.0)
            q = bisect.bisect_right(self.thresholds, a + TIME_TOL)
            if q >= len(self.thresholds):
                self._cross_version.pop(i, None)
                return
            # service grows at the gang while the job holds it
            at = state.now + (self.thresholds[q] - a) / s.job.num_gpus
        self._cross_counter += 1
        self._cross_version[i] = self._cross_counter
        heapq.heappush(self._cross, (at, self._cross_counter, i, s))

    def _run_insert(self, state: SimState, s: JobState, key: Any = None) -> None:
        """Insert a running job into the sorted running jobs (and predict its crossing).

        A job granted at the last decision short of its next threshold (the usual insertion:
        every job that starts) takes the key and crossing it was granted with
        (:func:`_insert_granted`); any other insertion is the walk's own.
        """
        if key is not None or not self._started or not _insert_granted(self, state, s):
            super()._run_insert(state, s, key)

    def on_stop(self, i: int) -> None:
        """Forget the crossing of a job that stops running."""
        self._cross_version.pop(i, None)

    def rekey_candidates(self, state: SimState) -> list[JobState]:
        """The running jobs predicted to cross a threshold by now (within the rounding)."""
        now = state.now
        limit = now + (1e-3 + 1e-6 * abs(now))  # :func:`_margin`
        heap, version = self._cross, self._cross_version
        out: list[JobState] = []
        while heap and heap[0][0] <= limit:
            _, v, i, s = heapq.heappop(heap)
            if version.get(i) == v:
                del version[i]
                out.append(s)
        return out

    @staticmethod
    def _decision_at(now: float, wake: float) -> float | None:
        """The wake-up for the earliest crossing or promotion ``wake`` (``inf``: none).

        The engine decides again only after ``now + TIME_TOL``. A crossing or promotion due
        sooner (a job within ``gang x TIME_TOL`` of its threshold, one stopped after a run that
        short) is taken at the first instant the engine allows, never dropped: dropped, it would
        wait for whatever event comes next, arbitrarily later (the promotion of a job stopped
        now, due 1.7e-4 s later at ``now = 221.8``, was lost so under a relative slack).
        """
        if not math.isfinite(wake):
            return None
        floor = now + TIME_TOL
        return wake if wake > floor else math.nextafter(floor, math.inf)

    def _after_next_arrival(self, now: float, t: float) -> bool:
        """Whether ``t`` is after the next arrival (the first job arriving after ``now``).

        The engine takes every job arriving up to ``now + TIME_TOL`` at the decision at
        ``now``, so the next one is its next arrival event.
        """
        arrivals = self._arrivals
        nxt = bisect.bisect_right(arrivals, now + TIME_TOL)
        return nxt < len(arrivals) and t > arrivals[nxt]

    def _wake_sorted(self, state: SimState) -> float | None:
        """:meth:`wake` from the predicted crossings: only the jobs near the earliest count."""
        now = state.now
        wake = self._next_due() if self._due_heap else math.inf
        th, k, base = self.thresholds, len(self.thresholds), self._base
        # the jobs granted now, with their crossings, for their keys at the next decision
        # (:meth:`_full_key`); their service is what they waited with
        started: dict[int, tuple[float, Any]] = {}
        n = self._n
        for s in self._new_granted:
            job = s.job
            a = s.attained_service
            if base:  # (nothing to take off without promotions)
                a -= base.get(job.job_id, 0.0)
            q = bisect.bisect_right(th, a + TIME_TOL)
            at = math.inf
            if q < k:
                # the sorted walk sizes no gang: service grows at the job's own
                at = now + (th[q] - a) / job.num_gpus
                if at < wake:
                    wake = at
            started[job.index] = (at, q * n + job.index if n else (q, job.arrival, job.index))
        self._started = started
        heap, version = self._cross, self._cross_version
        while heap and version.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        if not heap:
            return self._decision_at(now, wake)
        first = heap[0][0]
        margin = 1e-3 + 1e-6 * abs(now)  # :func:`_margin`
        if self._after_next_arrival(now, first - 2.0 * margin):
            # every running job crosses after the next arrival, which the engine takes (the
            # jobs up to it arrived): the exact time would be dropped there unused, so the
            # earliest prediction stands in for it (the wake-up is after that arrival
            # either way, and the decisions are the same)
            return self._decision_at(now, first if first < wake else wake)
        # every job whose exact crossing may be the earliest is within 2 margins of it: the
        # entries up to that limit, found down the heap without taking them out (an entry is
        # no later than its children; the minimum below is order-free)
        limit = (first if first < wake else wake) + 2.0 * margin
        if first > limit:
            return self._decision_at(now, wake)
        size = len(heap)
        todo = [0]
        while todo:
            i = todo.pop()
            entry = heap[i]
            if version.get(entry[2]) == entry[1]:
                s = entry[3]
                a = s.attained_service - base.get(s.job.job_id, 0.0)
                q = bisect.bisect_right(th, a + TIME_TOL)
                if q < k:
                    # the sorted walk sizes no gang: service grows at the job's own
                    at = now + (th[q] - a) / s.job.num_gpus
                    if at < wake:
                        wake = at
            c = 2 * i + 1
            if c < size and heap[c][0] <= limit:
                todo.append(c)
            if c + 1 < size and heap[c + 1][0] <= limit:
                todo.append(c + 1)
        return self._decision_at(now, wake)

    def wake(self, state: SimState, granted: list[JobState]) -> float | None:
        """The next threshold crossing of a granted job, or the next promotion."""
        if self._sorted:
            return self._wake_sorted(state)
        now = state.now
        wake = self._next_due()
        th, k, base = self.thresholds, len(self.thresholds), self._base
        for s in granted:
            a = s.attained_service - base.get(s.job.job_id, 0.0)
            q = bisect.bisect_right(th, a + TIME_TOL)
            if q < k:
                # service grows at the granted gang (an elastic job's may differ from its request)
                wake = min(wake, now + (th[q] - a) / self.gang(s))
        return self._decision_at(now, wake)

    def consolidation(self, s: JobState) -> Consolidation:
        """``"require"`` for a skewed model (see the module notes), else ``"prefer"``."""
        return "require" if self._skewed(s) else "prefer"


def _compiles(p: Tiresias, world: World) -> bool:
    """Whether ``p`` decides by the compiled walk on ``world`` (:meth:`Tiresias.plain_progress`).

    It carries out 2D-LAS on one GPU type by the sorted walk, with jobs in arrival order, no
    promotion and the walk's hooks as :class:`Tiresias` defines them (a subclass that overrides
    one keeps the plain walk); ``compiled=None`` uses it for a large world or once loaded.
    """
    cls = type(p)
    if (
        p.compiled is False
        or p.mode != "las"
        or not (p._sorted and p._n)
        or p._waiting_hooks
        or any(getattr(cls, name) is not getattr(Tiresias, name) for name in _WALK_HOOKS)
    ):
        return False
    return bool(p.compiled) or kernel_loaded() or len(world.jobs) >= COMPILED_JOBS


def _insert_granted(p: Tiresias, state: SimState, s: JobState) -> bool:
    """:meth:`Tiresias._run_insert` of a job granted at the last decision, if it is one.

    What :meth:`~Tiresias._full_key` and :meth:`~Tiresias.on_run` do with such a job, without
    their calls: the key it was granted with, and the crossing predicted then, when that is
    beyond the margin of :meth:`~Tiresias.rekey_candidates` and the job runs on one server
    (never spread). ``False`` (nothing done) otherwise.
    """
    job = s.job
    i = job.index
    started = p._started.get(i)
    now = state.now
    placement = s.placement
    if (
        started is None
        or not started[0] > now + (1e-3 + 1e-6 * abs(now))  # _margin
        or (placement is not None and len(placement.servers) > 1)
    ):
        return False
    del p._started[i]
    at, key = started
    keys = p._rkeys
    k = bisect.bisect_left(keys, key)
    keys.insert(k, key)
    p._rjobs.insert(k, s)
    gang = job.num_gpus
    p._rgpus.insert(k, gang)
    p._rtotal += gang
    p._rkey_of[i] = key
    # :meth:`Tiresias.on_run` with the crossing predicted at the grant (none in the last queue)
    if at == math.inf:
        p._cross_version.pop(i, None)
        return True
    p._cross_counter += 1
    p._cross_version[i] = p._cross_counter
    heapq.heappush(p._cross, (at, p._cross_counter, i, s))
    return True
