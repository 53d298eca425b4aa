"""A ``keep_running`` decision carried out over its changes gives the full pass's record.

The engine carries out a ``keep_running`` decision (and its ``stop`` form) touching only the
jobs that stop, move, change partner or start (``INCREMENTAL_APPLY``); with the switch off
every decision runs through the full pass over the running jobs. Both must give the same
record (intervals, completions, first starts, end time, events, decisions, counters) on worlds
with restore costs, elastic grants, shared pairs, spread gangs, batch phases, rounds, and
policies that keep running jobs (Tiresias, SRTF, EDF, Gandiva) or place everything afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import busy_worlds, job_frame, synthetic_throughputs
from test_sim_dynamic_batch import _two_jobs, _world
from test_sim_engine_incremental import _lazy_and_eager, _Reader, check_same_record

from optsched.sim import ClusterSpec, GpuType, SimResult, World, simulate
from optsched.sim.engine import apply as apply_mod
from optsched.sim.engine import catchup
from optsched.sim.engine.loop import Engine
from optsched.sim.policies import make_policy

POLICIES = ["fifo", "srtf", "tiresias-las", "edf", "gandiva", "themis", "max-min-perf"]
ELASTIC = ["fifo-elastic", "srtf-elastic", "edf-elastic", "tiresias-las-elastic"]


def _job_views(engine: Any, rounds: bool) -> list[Any]:
    """What a policy sees of every job after a decision, and the engine's running jobs.

    The rounds received are read only when ``rounds`` (a read counts the kept rounds, so
    reading them at every decision would hide a count lost between reads).
    """
    jobs = [
        (
            sorted(st.rounds_received.items()) if rounds else None,
            st.placement,
            st.partner,
            st.preemptions,
            st.last_start,
            st.last_stop,
        )
        for st in engine.states
    ]
    return [jobs, list(engine.running), sorted(engine.spread), engine.wake_at]


def _both(world: World, name: str, **kwargs: Any) -> tuple[SimResult, SimResult, int]:
    """The run with the incremental pass and with the full pass; the decisions it took.

    Besides the records, the job states a policy reads and the order of the running jobs must
    agree after every decision.
    """
    fast_calls = [0]
    changes = Engine._apply_changes
    apply = Engine._apply
    views: list[list[Any]] = [[], []]
    engines: list[Any] = [None, None]

    def counting(self: Any, t: float, placed: Any) -> None:
        fast_calls[0] += 1
        changes(self, t, placed)

    def viewing(self: Any, t: float, alloc: Any) -> None:
        apply(self, t, alloc)
        full = apply_mod.INCREMENTAL_APPLY is False
        engines[full] = self
        views[full].append(repr(_job_views(self, self.decisions % 5 == 4)))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Engine, "_apply_changes", counting)
        mp.setattr(Engine, "_apply", viewing)
        a = simulate(world, make_policy(name), **kwargs)
        mp.setattr(apply_mod, "INCREMENTAL_APPLY", False)
        calls = fast_calls[0]
        b = simulate(world, make_policy(name), **kwargs)
    assert fast_calls[0] == calls  # the full pass never takes the incremental one
    assert views[0] == views[1]
    if engines[0] is not None:
        # every round counted at the end
        final = [[dict(st.rounds_received) for st in e.states] for e in engines]
        assert final[0] == final[1]
    return a, b, calls


@settings(max_examples=40, deadline=None)
@given(busy_worlds(), st.sampled_from(POLICIES), st.sampled_from([None, 3.0]))
def test_incremental_apply_gives_the_full_record(
    world: World, name: str, rounds: float | None
) -> None:
    kwargs: dict[str, Any] = {}
    if rounds is not None and rounds > world.restore_s:
        kwargs["round_seconds"] = rounds
    a, b, _ = _both(world, name, **kwargs)
    check_same_record(a, b)


@settings(max_examples=25, deadline=None)
@given(busy_worlds(), st.sampled_from(ELASTIC))
def test_incremental_apply_with_elastic_grants(world: World, name: str) -> None:
    a, b, _ = _both(world.elastic(max_factor=2.0), name)
    check_same_record(a, b)


def test_the_incremental_pass_is_taken_and_matches() -> None:
    """Tiresias keeps its running jobs (``stop`` form): the incremental pass runs."""
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=8, gpus_per_server=4),))
    rows = [
        {"model": "A", "duration": 10.0 + 7.0 * k, "arrival": 3.0 * k, "num_gpus": 1 + k % 3}
        for k in range(14)
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs(), restore_s=0.5)
    for name in ("tiresias-las", "srtf", "edf"):
        a, b, calls = _both(world, name)
        check_same_record(a, b)
        assert calls > 0


def test_spread_gangs_reconsolidate_alike() -> None:
    """Gangs placed spread are moved consolidated when room appears, under both passes."""
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=8, gpus_per_server=4),))
    rows = [
        {"model": "A", "duration": d, "arrival": a, "num_gpus": g}
        for d, a, g in [(30.0, 0.0, 3), (8.0, 0.0, 3), (50.0, 1.0, 2), (9.0, 2.0, 1), (5.0, 4.0, 4)]
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs(), restore_s=1.0)
    for name in ("tiresias-las", "srtf", "fifo"):
        a, b, _ = _both(world, name)
        check_same_record(a, b)
        assert len(a.intervals["job_id"]) > len(rows)  # something was moved or preempted


def test_shared_pairs_and_batch_phases_alike(tmp_path: Path) -> None:
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=2, gpus_per_server=1),))
    rows = [
        {"model": "A", "duration": d, "arrival": a}
        for d, a in [(10.0, 0.0), (25.0, 0.0), (7.0, 1.0), (140.0, 2.0), (120.0, 3.0), (5.0, 9.0)]
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs(), restore_s=0.5)
    a, b, _ = _both(world, "gandiva")
    check_same_record(a, b)
    assert any(a.intervals["shared_with"])
    for restore in (0.0, 30.0):
        phased = _world(_two_jobs(tmp_path), restore_s=restore)
        for name in ("fifo", "srtf", "tiresias-las"):
            a, b, _ = _both(phased, name)
            check_same_record(a, b)


# -- lazy catch-up as array accumulations ---------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    busy_worlds(),
    st.sampled_from(["fifo", "srtf", "tiresias-las", "edf", "themis", "max-min"]),
    st.sampled_from([1, 2, 3]),
)
def test_vectorized_catch_up_gives_the_eager_record(world: World, name: str, steps: int) -> None:
    """Every catch-up of at least ``steps`` decision points runs on arrays: the eager record."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(catchup, "VECTOR_STEPS", steps)
        a, b = _lazy_and_eager(world, name)
    check_same_record(a, b)


def test_vectorized_catch_up_crosses_restores_and_phases(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(catchup, "VECTOR_STEPS", 1)
        for restore in (0.0, 30.0):
            phased = _world(_two_jobs(tmp_path), restore_s=restore)
            for name in ("fifo", "srtf", "max-min"):
                a, b = _lazy_and_eager(phased, name)
                check_same_record(a, b)


@settings(max_examples=25, deadline=None)
@given(busy_worlds())
def test_vectorized_catch_up_reads_are_current(world: World) -> None:
    """The progress a policy reads (done, attained service, executed seconds) is the eager one."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(catchup, "VECTOR_STEPS", 1)
        lazy, eager = _Reader(True), _Reader(False)
        a = simulate(world, lazy, round_seconds=None)
        b = simulate(world, eager, round_seconds=None)
    check_same_record(a, b)
    assert lazy.seen == eager.seen
    assert lazy.seen
