"""The incremental order policies decide exactly as their plain full-sort reference.

Every order policy (FIFO, FIFO with backfilling, SJF, SRTF, EDF, Tiresias 2D-LAS and 2D-Gittins,
each agnostic and ``-perf``) runs twice on the same world, once as shipped and once with
``reference=True`` (a full sort of every candidate at every decision); the two simulation
records must be identical: the same interval table, completions, first starts, end time,
events and decisions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import busy_worlds, one_type_worlds

from optsched.sim import ClusterSpec, GpuType, SimResult, Throughputs, World, simulate, validate
from optsched.sim.policies import POLICIES, OrderPolicy, Tiresias, make_policy

_ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` of a clean clone (or of a worktree one level deeper).
SHARED = next(
    (p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if p.is_dir()),
    _ROOT.parent / "shared",
)
ELASTICFLOW = SHARED / "data" / "elasticflow" / "cluster02.csv"

#: Every registered order policy (the queueing policies and their -perf variants).
ORDER_POLICIES = tuple(p for p in POLICIES if isinstance(make_policy(p), OrderPolicy))


def _pair(name: str, **tiresias: Any) -> tuple[OrderPolicy, OrderPolicy]:
    """The shipped policy and its reference, built alike."""
    if tiresias:
        mode, aware = name.split("-")[1], name.endswith("-perf")
        return (
            Tiresias(mode, aware=aware, **tiresias),
            Tiresias(mode, aware=aware, reference=True, **tiresias),
        )
    fast, ref = make_policy(name), make_policy(name)
    assert isinstance(fast, OrderPolicy) and isinstance(ref, OrderPolicy)
    ref.reference = True
    return fast, ref


def _nan_list(values: list[float]) -> list[Any]:
    return [None if math.isnan(v) else v for v in values]


def check_identical(world: World, fast: OrderPolicy, ref: OrderPolicy) -> SimResult:
    a = simulate(world, fast)
    b = simulate(world, ref)
    assert a.intervals == b.intervals
    assert _nan_list(a.completion) == _nan_list(b.completion)
    assert _nan_list(a.first_start) == _nan_list(b.first_start)
    assert (a.end_time, a.events, a.decisions, a.truncated) == (
        b.end_time,
        b.events,
        b.decisions,
        b.truncated,
    )
    return a


def test_every_order_policy_is_covered() -> None:
    assert {"fifo", "fifo-backfill", "sjf", "srtf", "edf", "tiresias-las"} <= set(ORDER_POLICIES)
    assert {"tiresias-gittins-perf", "srtf-perf", "edf-perf"} <= set(ORDER_POLICIES)
    assert len(ORDER_POLICIES) == 14


@settings(max_examples=25)
@given(busy_worlds(), st.sampled_from(ORDER_POLICIES), st.sampled_from([None, 4.0]))
def test_fast_and_reference_records_are_identical(
    world: World, name: str, rounds: float | None
) -> None:
    fast, ref = _pair(name)
    fast.round_seconds = ref.round_seconds = rounds
    check_identical(world, fast, ref)


@settings(max_examples=20)
@given(
    busy_worlds(),
    st.sampled_from(["tiresias-las", "tiresias-gittins", "tiresias-las-perf"]),
    st.sampled_from([None, 0.5, 2.0]),
)
def test_tiresias_with_demotions_and_promotions_matches_its_reference(
    world: World, name: str, knob: float | None
) -> None:
    # thresholds the small jobs cross, so queues change while jobs run and wait
    fast, ref = _pair(name, thresholds=(4.0, 15.0, 40.0), promote_knob=knob)
    check_identical(world, fast, ref)


def _elasticflow_slice(rows: int) -> World:
    from optsched.traces import read_trace

    frame = read_trace(ELASTICFLOW).jobs.iloc[:rows].copy()
    frame["arrival"] = frame["arrival"] - float(frame["arrival"].min())
    # a deliberately tight two-type cluster so that queues form and the -perf variants differ
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="v100", count=64, gpus_per_server=8),
            GpuType(name="k80", count=32, gpus_per_server=8),
        )
    )
    table = Throughputs.uniform({"v100": 1.0, "k80": 0.4})
    return World.from_frame(frame, cluster, table, restore_s=30.0)


@pytest.mark.skipif(not ELASTICFLOW.is_file(), reason=f"{ELASTICFLOW} is absent")
@pytest.mark.parametrize("name", ORDER_POLICIES)
def test_fast_and_reference_agree_on_a_real_trace_slice(name: str) -> None:
    world = _elasticflow_slice(300)
    fast, ref = _pair(name)
    record = check_identical(world, fast, ref)
    assert record.all_finished
    assert validate(world, record).ok


# -- one GPU type: the sorted running jobs and the ``stop`` form ---------------------------

#: The order policies whose running jobs stay sorted on one GPU type.
SORTED_POLICIES = ("tiresias-las", "edf", "srtf")


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from(SORTED_POLICIES))
def test_sorted_running_jobs_decide_as_the_reference(world: World, name: str) -> None:
    fast, ref = _pair(name)
    assert fast._sorted is False  # decided at reset, from the world
    check_identical(world, fast, ref)
    assert fast._sorted


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from([None, 0.5, 2.0]))
def test_sorted_tiresias_with_crossings_matches_its_reference(
    world: World, knob: float | None
) -> None:
    fast, ref = _pair("tiresias-las", thresholds=(2.0, 9.0, 30.0), promote_knob=knob)
    check_identical(world, fast, ref)
    assert fast._sorted


@pytest.mark.skipif(not ELASTICFLOW.is_file(), reason=f"{ELASTICFLOW} is absent")
@pytest.mark.parametrize("name", SORTED_POLICIES)
def test_sorted_running_jobs_on_a_real_trace_slice(name: str) -> None:
    from optsched.traces import read_trace

    frame = read_trace(ELASTICFLOW).jobs.iloc[:400].copy()
    frame["arrival"] = frame["arrival"] - float(frame["arrival"].min())
    cluster = ClusterSpec(gpu_types=(GpuType(name="v100", count=96, gpus_per_server=8),))
    world = World.from_frame(frame, cluster, Throughputs.uniform({"v100": 1.0}), restore_s=30.0)
    fast, ref = _pair(name)
    record = check_identical(world, fast, ref)
    assert fast._sorted and validate(world, record).ok
    # some job was preempted and resumed: the walk stopped running jobs
    assert len(record.intervals["job_id"]) > len(set(record.intervals["job_id"]))


class _TupleKeyed(Tiresias):
    """2D-LAS on its full keys as tuples ``(queue, arrival, position)`` (no integer keys)."""

    def reset(self, world: World) -> None:
        super().reset(world)
        self._n = 0


@settings(max_examples=40, deadline=None)
@given(one_type_worlds(), st.sampled_from([None, 0.5]))
def test_tiresias_integer_keys_decide_as_the_tuple_keys(world: World, knob: float | None) -> None:
    # the integer ``queue * n + position`` orders as ``(queue, arrival, position)`` on a
    # world sorted by arrival: the records of the two are the same
    fast = Tiresias("las", thresholds=(2.0, 9.0, 30.0), promote_knob=knob)
    plain = _TupleKeyed("las", thresholds=(2.0, 9.0, 30.0), promote_knob=knob)
    check_identical(world, fast, plain)
    assert fast._n == len(world.jobs) and plain._n == 0
