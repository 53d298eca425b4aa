"""2D-LAS's compiled walk (``optsched.sim.policies.las_core``) decides as the plain walk.

* **Records.** ``Tiresias("las", compiled=True)`` and ``compiled=False`` (the plain sorted walk,
  itself held to the full sort by ``test_sim_order_reference``) give identical records, bit for
  bit, on busy one-type worlds: spread gangs on small servers, models that wait for consolidated
  GPUs, restore costs, many threshold crossings. The compiled run is checked to have used the
  kernel.
* **The service it keeps.** The kernel forms every running job's attained service itself; at
  every decision of a compiled run it equals the engine's, read from each job.
* **Where it applies.** Only in :func:`~optsched.sim.simulate` (``plain_progress``): never when
  decisions come from outside (``simulate_steps``), for 2D-Gittins, with the PROMOTE knob, for a
  subclass that changes the walk's hooks, or with ``compiled=False``; ``compiled=None`` follows
  the job count and whether the process has loaded the kernel.
* **The safety net.** A run whose running jobs are changed behind the policy's back (a driven
  run that stops a job the policy kept) takes the running jobs again from the engine, as the
  plain walk does: the two records stay identical.
* **The crossing heap** is compacted when full and still pops what ``heapq`` pops.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import one_type_worlds
from test_sim_order_reference import check_identical

from optsched.sim import ClusterSpec, GpuType, SimResult, World, simulate
from optsched.sim.engine.core import simulate_steps
from optsched.sim.engine.policy import PolicyDecision, SimState
from optsched.sim.policies import Tiresias, las_core
from optsched.sim.world.generate import generate_job_table

THRESHOLDS = (2.0, 9.0, 30.0)


def _las(compiled: bool | None, **kwargs: Any) -> Tiresias:
    return Tiresias("las", thresholds=THRESHOLDS, compiled=compiled, **kwargs)


def _busy_world(
    n: int, seed: int, gps: int = 4, count: int = 16, restore: float = 0.5, types: int = 1
) -> World:
    frame = generate_job_table(
        n,
        seed=seed,
        mean_interarrival=2.0,
        mu=2.0,
        sigma=1.0,
        gangs=(1, 2, 4, 8),
        gang_weights=(0.4, 0.3, 0.2, 0.1),
        models=("resnet50", "vgg16", ""),
    )
    names = ("v100", "k80")[:types]
    cluster = ClusterSpec(
        gpu_types=tuple(GpuType(name=t, count=count, gpus_per_server=gps) for t in names)
    )
    return World.from_frame(frame, cluster, restore_s=restore)


@settings(max_examples=60, deadline=None)
@given(one_type_worlds())
def test_the_compiled_walk_gives_the_plain_walks_record(world: World) -> None:
    compiled, plain = _las(True), _las(False)
    check_identical(world, compiled, plain)
    assert compiled._core is not None and plain._core is None


@pytest.mark.parametrize("seed", [7, 11])
def test_the_compiled_walk_on_long_busy_worlds(seed: int) -> None:
    # hundreds of crossings, preemptions and spread gangs (2-GPU servers, 8-GPU gangs)
    world = _busy_world(300, seed, gps=2)
    compiled = _las(True)
    record = check_identical(world, compiled, _las(False))
    assert compiled._core is not None and record.all_finished
    assert record.extra["wakeups"] > 100


class _ServiceChecked(Tiresias):
    """2D-LAS (compiled) checking the kernel's services against the engine's at each decision.

    ``allocate`` is the walk's only hook a subclass may change and keep the compiled walk.
    """

    def __init__(self) -> None:
        super().__init__("las", thresholds=THRESHOLDS, compiled=True)
        self.checked = 0

    def plain_progress(self) -> None:
        # the hook check would refuse this subclass: bypass it (its allocate only reads)
        assert self._world is not None
        self._core = las_core.LasCore(self, self._world)

    def allocate(self, state: SimState) -> PolicyDecision:
        decision = super().allocate(state)
        core = self._core
        assert core is not None
        k = core.k
        svc = core.flts[k.SVC]
        for s in state.running:
            # the kernel summed the services to now at this decision; the engine's are exact
            assert svc[s.job.index] == s.attained_service, (state.now, s.job_id)
            self.checked += 1
        return decision


@pytest.mark.parametrize("restore", [0.0, 0.5])
def test_the_kernels_service_is_the_engines_at_every_decision(restore: float) -> None:
    world = _busy_world(150, 3, restore=restore)
    checked = _ServiceChecked()
    record = simulate(world, checked)
    assert checked.checked > 1000 and record.all_finished


def test_the_compiled_walk_applies_only_where_the_service_is_plain() -> None:
    world = _busy_world(20, 5)
    # in simulate: the kernel
    p = _las(True)
    simulate(world, p)
    assert p._core is not None
    # decisions from outside: never
    p = _las(True)
    steps = simulate_steps(world, p)
    state = next(steps)
    assert p._core is None
    steps.close()
    del state
    # 2D-Gittins, the PROMOTE knob, compiled=False: the plain walk
    for policy in (
        Tiresias("gittins", thresholds=THRESHOLDS, compiled=True),
        _las(True, promote_knob=0.5),
        _las(False),
    ):
        simulate(world, policy)
        assert policy._core is None, policy.name

    class Changed(Tiresias):
        def wake(self, state: SimState, granted: list[Any]) -> float | None:
            return super().wake(state, granted)

    p = Changed("las", thresholds=THRESHOLDS, compiled=True)
    simulate(world, p)
    assert p._core is None
    # two GPU types: no sorted walk
    two = _busy_world(20, 5, types=2)
    p = _las(True)
    simulate(two, p)
    assert p._core is None


def test_compiled_none_follows_the_job_count_and_the_loaded_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _busy_world(20, 5)
    monkeypatch.setattr(las_core, "_LOADED", [])
    monkeypatch.setattr(las_core, "COMPILED_JOBS", 21)
    monkeypatch.setattr("optsched.sim.policies.tiresias.COMPILED_JOBS", 21)
    p = _las(None)
    simulate(world, p)
    assert p._core is None  # small, not loaded
    monkeypatch.setattr("optsched.sim.policies.tiresias.COMPILED_JOBS", 20)
    p = _las(None)
    simulate(world, p)
    assert p._core is not None  # large enough: loads it
    monkeypatch.setattr("optsched.sim.policies.tiresias.COMPILED_JOBS", 10_000)
    p = _las(None)
    simulate(world, p)
    assert p._core is not None  # loaded by now


def _driven(world: World, policy: Tiresias, stop_at: int) -> SimResult:
    """A run driven from outside that stops, at decision ``stop_at``, a running job the policy
    keeps (the engine then runs other jobs than the policy counts)."""
    steps = simulate_steps(world, policy)
    policy.plain_progress()  # the driver carries the policy's decisions out (one aside)
    try:
        state = next(steps)
        while True:
            decision = policy.allocate(state)
            if state.round_index == stop_at and state.running:
                kept = [s.job_id for s in state.running if s.job_id not in (decision.stop or ())]
                if kept:
                    decision = dataclasses.replace(decision, stop=(*(decision.stop or ()), kept[0]))
            state = steps.send(decision)
    except StopIteration as done:
        result: SimResult = done.value
        return result


def test_a_run_changed_behind_the_policy_is_taken_again_from_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _busy_world(60, 9)
    # the news at each taking-in: (finished or pending jobs, arrived jobs)
    news: list[tuple[int, int]] = []
    original = las_core.LasCore._resync

    def counted(self: las_core.LasCore, state: SimState, n_fin: int, n_pend: int) -> None:
        news.append((n_fin + n_pend, len(state.arrived)))
        original(self, state, n_fin, n_pend)

    monkeypatch.setattr(las_core.LasCore, "_resync", counted)
    for stop_at in range(3, 80, 4):
        compiled, plain = _las(True), _las(False)
        a = _driven(world, compiled, stop_at)
        b = _driven(world, plain, stop_at)
        assert compiled._core is not None
        assert a.intervals == b.intervals, stop_at
        assert [None if math.isnan(c) else c for c in a.completion] == [
            None if math.isnan(c) else c for c in b.completion
        ]
        assert (a.events, a.decisions, a.end_time) == (b.events, b.decisions, b.end_time)
    # taken in with news and with arrivals at that decision
    assert any(n > 0 for n, _ in news) and any(arrived > 0 for _, arrived in news)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["push", "pop", "stale"]), st.integers(0, 7), st.integers(0, 5)),
        max_size=120,
    )
)
def test_the_crossing_heap_pops_what_heapq_pops_through_compactions(
    ops: list[tuple[str, int, int]],
) -> None:
    from optsched.sim.policies import las_kernel as k

    width = 12  # 8 jobs at most (one valid entry each) in a small heap: compacted often
    ints = np.zeros((k.NI, width), dtype=np.int64)
    flts = np.zeros((k.NF, width))
    sc = np.zeros(k.S_LEN, dtype=np.int64)
    model: list[tuple[float, int, int]] = []
    counter = 0
    for op, job, t in ops:
        if op == "push":
            counter += 1
            ints[k.VER, job] = counter  # the job's latest prediction: its older ones are stale
            model = [e for e in model if e[2] != job]
            heapq.heapify(model)
            heapq.heappush(model, (float(t), counter, job))
            k._c_push(flts, ints, sc, float(t), counter, job)
        elif op == "stale":
            ints[k.VER, job] = 0  # the job stops: its prediction is stale
            model = [e for e in model if e[2] != job]
            heapq.heapify(model)
        # the valid top, popped as the walk pops it
        while sc[k.S_CSIZE] > 0 and ints[k.VER, ints[k.CJOB, 0]] != ints[k.CCNT, 0]:
            k._c_pop(flts, ints, sc)
        assert sc[k.S_CSIZE] <= width
        if not model:
            assert sc[k.S_CSIZE] == 0
            continue
        assert (flts[k.CAT, 0], ints[k.CCNT, 0], ints[k.CJOB, 0]) == model[0]
        if op == "pop":
            heapq.heappop(model)
            ints[k.VER, ints[k.CJOB, 0]] = 0
            k._c_pop(flts, ints, sc)
