"""2D-LAS's compiled walk in the engine: the engine's news in, the policy's decision out.

:class:`LasCore` runs :class:`~optsched.sim.policies.Tiresias` (``mode="las"``) on the compiled
walk of :mod:`optsched.sim.policies.las_kernel` when the simulator's event-driven engine says
that it sums every running job's attained service as the kernel does
(:meth:`~optsched.sim.Policy.plain_progress`). Per decision it writes the finished, pending and
arrived jobs' positions into the kernel's arrays, calls it once, and builds the grants (kept per
job, as the plain walk keeps them), the ``stop`` list and the wake-up from its answer. What the
plain walk keeps in Python (the queue, the sorted running jobs, the crossing heap) the kernel
keeps in its arrays; the spread running gangs, which the engine may move, stay here.

**When.** Loading Numba and the kernel's cached machine code costs a few tenths of a second
once per process. ``compiled=None`` (the default) therefore uses the kernel for a world of at
least :data:`COMPILED_JOBS` jobs, or once this process has loaded it; ``True`` always,
``False`` never (the plain walk: the reference the tests hold the kernel to).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from optsched.sim.engine.policy import Grant, JobState, PolicyDecision, SimState
from optsched.sim.world.jobs import World

__all__ = ["COMPILED_JOBS", "LasCore", "LasPolicy", "kernel_loaded"]

#: The fewest jobs for which ``compiled=None`` loads the kernel (about 5 decisions per job at
#: 5-10 us saved each against the load's 0.2-0.5 s: the point where the two costs meet).
COMPILED_JOBS = 5_000

_LOADED: list[Any] = []


def kernel_loaded() -> bool:
    """Whether this process has loaded the compiled walk."""
    return bool(_LOADED)


def _kernel() -> Any:
    if not _LOADED:
        # lazy: Numba loads here (the module itself, not through its package)
        import optsched.sim.policies.las_kernel as las_kernel

        _LOADED.append(las_kernel)
    return _LOADED[0]


class LasPolicy(Protocol):
    """What the compiled walk reads of its policy (:class:`~optsched.sim.policies.Tiresias`)."""

    thresholds: list[float]

    def _grant(self, s: JobState, gpu_type: str, num_gpus: int | None = None) -> Grant: ...


def _first(item: tuple[int, JobState]) -> int:
    return item[0]


class LasCore:
    """The compiled 2D-LAS walk of one run of ``policy`` on ``world`` (see the module notes)."""

    def __init__(self, policy: LasPolicy, world: World) -> None:
        k = _kernel()
        self.k = k
        self.policy = policy
        n = len(world.jobs)
        width = 2 * n + 16
        ints = np.zeros((k.NI, width), dtype=np.int64)
        flts = np.zeros((k.NF, width), dtype=np.float64)
        sc = np.zeros(k.S_LEN, dtype=np.int64)
        ints[k.KEYOF] = -1
        gangs = [j.num_gpus for j in world.jobs]
        slot_of: dict[int, int] = {}
        counts: list[int] = []
        for g in gangs:
            if g not in slot_of:
                slot_of[g] = len(counts)
                counts.append(0)
            counts[slot_of[g]] += 1
        ints[k.GANG, :n] = gangs
        ints[k.SLOT, :n] = [slot_of[g] for g in gangs]
        off = 0
        for g, slot in slot_of.items():
            ints[k.QOFF, slot] = off
            ints[k.QGANG, slot] = g
            off += counts[slot]
        sc[k.S_N] = n
        sc[k.S_SLOTS] = len(counts)
        gpu_type = world.cluster.gpu_types[0]
        sc[k.S_GPUS] = gpu_type.count
        self.ints, self.flts, self.sc = ints, flts, sc
        self.th = np.asarray(policy.thresholds, dtype=np.float64)
        self.arrivals = np.asarray([j.arrival for j in world.jobs], dtype=np.float64)
        # element access from Python through memoryviews (Python ints and floats, no numpy
        # scalars: several times cheaper per element)
        self.keyof: Any = ints[k.KEYOF].data
        self.inp: Any = ints[k.IN].data
        self.flag: Any = ints[k.INFLAG].data
        self.runs: Any = ints[k.RUNS].data
        self.new: Any = ints[k.NEW].data
        self.newkey: Any = ints[k.NEWKEY].data
        self.pre: Any = ints[k.PRE].data
        self.svc: Any = flts[k.SVC].data
        self.sc_view: Any = sc.data
        self.index = {j.job_id: j.index for j in world.jobs}
        self.states: list[Any] = [None] * n
        self.pending: list[JobState] = []
        self.spread: dict[int, JobState] = {}
        self.gps = gpu_type.gpus_per_server
        self.single = gpu_type.name
        self.grant_of: dict[int, Grant] = {}

    def allocate(self, state: SimState) -> PolicyDecision:
        """The decision at ``state`` (the plain walk's, computed by the kernel)."""
        n_fin, n_pend, running = self._news(state)
        news = True
        m = n_fin + n_pend
        if running != len(state.running):
            self._resync(state, n_fin, n_pend)
            news = False
            n_fin = n_pend = m = 0  # taken in: the arrivals come first
        spread = self.spread
        if spread:
            gps = self.gps
            for i, s in list(spread.items()):
                if s.placement is None or s.placement.consolidated(gps):
                    del spread[i]  # moved onto the fewest servers by the engine
        n_arr = len(state.arrived)
        if n_arr:
            self._arrivals(state, m)
        n_new, n_pre, _, wake = self.k.decide(
            self.ints, self.flts, self.sc, self.th, self.arrivals, state.now, n_fin, n_pend,
            n_arr, news,
        )  # fmt: skip
        return self._decision(n_new, n_pre, wake)

    def _news(self, state: SimState) -> tuple[int, int, int]:
        """The finished and pending jobs into the kernel's inputs.

        Their counts, and the running jobs the kernel will count after them (the engine's
        count, unless something other than this policy's decisions changed what runs).
        """
        keyof, inp, spread = self.keyof, self.inp, self.spread
        running = self.sc_view[self.k.S_R]
        m = 0
        finished = state.finished
        if finished:
            index = self.index
            for job_id in finished:
                i = index[job_id]
                inp[m] = i
                m += 1
                if keyof[i] >= 0:
                    running -= 1
                    spread.pop(i, None)
        n_fin = m
        if self.pending:
            gone = set(finished)
            flag, gps = self.flag, self.gps
            for s in self.pending:
                if s.job_id in gone:
                    continue
                i = s.job.index
                inp[m] = i
                placement = s.placement
                if placement is None:
                    # granted but not placed (or not kept) by the engine: waiting again
                    flag[m] = 0
                    if keyof[i] >= 0:
                        running -= 1
                        spread.pop(i, None)
                else:
                    flag[m] = 1
                    if keyof[i] < 0:
                        running += 1
                        if len(placement.servers) > 1 and not placement.consolidated(gps):
                            spread[i] = s
                m += 1
        return n_fin, m - n_fin, running

    def _arrivals(self, state: SimState, m: int) -> None:
        """The arrived jobs into the kernel's inputs from ``m``: position, service, rate."""
        inp, svc, runs, states, single = self.inp, self.svc, self.runs, self.states, self.single
        for s in state.arrived:
            i = s.job.index
            inp[m] = i
            svc[i] = s.attained_service
            # the job's rate on the one type is positive (a function of the job)
            runs[i] = 1 if state.rate(s, single) > 0 else 0
            states[i] = s
            m += 1

    def _decision(self, n_new: int, n_pre: int, wake: float) -> PolicyDecision:
        """The kernel's answer as the plain walk's decision (``_sorted_decision``)."""
        states, spread = self.states, self.spread
        new = [states[i] for i in self.new[:n_new]]
        stop: tuple[str, ...] | None = None
        pending = new
        if n_pre:
            pre = [states[i] for i in self.pre[:n_pre]]
            if spread:
                for s in pre:
                    spread.pop(s.job.index, None)
            if spread:
                # the stop form grants the new jobs and the kept spread gangs in key order
                newkey, keyof = self.newkey, self.keyof
                items = [(newkey[p], s) for p, s in enumerate(new)]
                items += [(keyof[i], s) for i, s in spread.items()]
                items.sort(key=_first)
                pending = [s for _, s in items]
            stop = tuple([s.job_id for s in pre])
        self.pending = pending
        grants: tuple[Grant, ...] = ()
        if pending:
            grant_of = self.grant_of
            listed = []
            for s in pending:
                g = grant_of.get(s.job.index)
                if g is None:
                    g = grant_of[s.job.index] = self.policy._grant(s, self.single)
                listed.append(g)
            grants = tuple(listed)
        return PolicyDecision(grants, False, None if wake != wake else wake, True, stop)

    def _resync(self, state: SimState, n_fin: int, n_pend: int) -> None:
        """The plain walk's safety net: the running jobs taken again from the engine.

        (The engine runs only the jobs granted, all accounted for by the pending ones: this is
        not reached by any run of the engine's own.) Their services are read from the engine.
        """
        k = self.k
        k.sync(self.ints, self.flts, self.sc, self.th, state.now, n_fin, n_pend)
        inp, svc = self.inp, self.svc
        for p, s in enumerate(state.running):
            inp[p] = s.job.index
            svc[s.job.index] = s.attained_service
            self.states[s.job.index] = s
        k.reinsert(self.ints, self.flts, self.sc, self.th, state.now, len(state.running))
        gps = self.gps
        self.spread = {
            s.job.index: s
            for s in state.running
            if s.placement is not None
            and len(s.placement.servers) > 1
            and not s.placement.consolidated(gps)
        }
