"""Elastic order policies (``edf-elastic`` and the others): shrink to fit, grow to useful size."""

from __future__ import annotations

import pytest
from hypothesis import given
from strategies.sim import job_frame, synthetic_throughputs, worlds

from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.policies import (
    EDF,
    ELASTIC_POLICIES,
    FIFO,
    SRTF,
    Gandiva,
    Tiresias,
    make_policy,
)
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import TIME_TOL, within

# model "m", batch 64: 10 steps/s on 1 GPU, 18 on 2, 24 on 4, flat beyond (no extrapolation)
CURVE = ScalingCurve((1, 2, 4), (10.0, 18.0, 24.0))


def _world(rows: list[dict[str, float]], count: int = 8, factor: float = 4.0) -> World:
    profiles = ScalingProfiles(gpu_type="a100", curves={("m", 64): CURVE})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=8),))
    frame = job_frame([{"model": "m", "batch_size": 64, **r} for r in rows])
    world = World.from_frame(frame, cluster, table)
    return world.elastic(max_factor=factor) if factor > 1 else world


def _gangs(result: object, at: float = 0.0) -> dict[str, int]:
    """GPUs held by each job during the interval starting at ``at``."""
    frame = result.intervals_frame()  # type: ignore[attr-defined]
    rows = frame[frame["start"] <= at + TIME_TOL]
    rows = rows[rows["end"] > at + TIME_TOL]
    return {str(j): int(g) for j, g in rows.groupby("job_id")["gpus"].sum().items()}


def test_elastic_edf_hand_computed_round() -> None:
    """Two deadline jobs on 8 GPUs whose profile is flat beyond 4.

    Rigid EDF: j0 (deadline 100) takes its 6 GPUs, j1 (4 GPUs) does not fit the 2 left and
    waits. Elastic EDF, pass 1: j0 takes u(1, min(6, 8)) = 4 (r(4) = r(6) = 24), j1 takes
    u(1, min(4, 4)) = 4; pass 2 grows neither (no GPU left). j0 has 24 x 50 = 1200 steps: done
    at 50; j1 has 24 x 80 = 1920 steps: done at 80 (it keeps 4 GPUs: 4 more would add nothing).
    """
    rows = [
        {"total_steps": 1200.0, "num_gpus": 6, "deadline": 100.0},
        {"total_steps": 1920.0, "num_gpus": 4, "deadline": 200.0},
    ]
    world = _world(rows)
    elastic = simulate(world, EDF(elastic=True))
    assert _gangs(elastic) == {"j0": 4, "j1": 4}
    assert within(elastic.completion[0], 50.0, TIME_TOL)
    assert within(elastic.completion[1], 80.0, TIME_TOL)
    # alone after 50 with 8 GPUs free, j1 stays on 4: more add nothing (no extrapolation)
    assert _gangs(elastic, 60.0) == {"j1": 4}
    assert validate(world, elastic).ok
    rigid = simulate(world, EDF())
    assert _gangs(rigid) == {"j0": 6}
    # j0 alone on 6 GPUs (rate 24): 50 s; then j1 on 4: 80 s more
    assert within(rigid.completion[1], 130.0, TIME_TOL)


def test_elastic_edf_grows_in_deadline_order() -> None:
    """j0 (deadline 100, 1 GPU asked) and j1 (deadline 50, 1 GPU asked), 6 GPUs, factor 8.

    Pass 1 in EDF order: j1 takes 1, j0 takes 1 (4 left). Pass 2: j1 (earliest deadline) grows to
    u(1, min(8, 1 + 4)) = 4 (r(5) = r(4)), leaving 1; j0 grows to u(1, 2) = 2.
    """
    rows = [
        {"total_steps": 1e4, "num_gpus": 1, "deadline": 100.0},
        {"total_steps": 1e4, "num_gpus": 1, "deadline": 50.0},
    ]
    world = _world(rows, count=6, factor=8.0)
    result = simulate(world, EDF(elastic=True))
    assert _gangs(result) == {"j0": 2, "j1": 4}
    assert validate(world, result).ok


def test_a_rigid_world_gives_the_rigid_schedule() -> None:
    rows = [
        {"arrival": 0.0, "total_steps": 500.0, "num_gpus": 4, "deadline": 90.0},
        {"arrival": 5.0, "total_steps": 300.0, "num_gpus": 2, "deadline": 40.0},
        {"arrival": 7.0, "total_steps": 900.0, "num_gpus": 8},
    ]
    world = _world(rows, factor=1.0)
    for rigid, elastic in [
        (EDF(), EDF(elastic=True)),
        (FIFO(), FIFO(elastic=True)),
        (SRTF(), SRTF(elastic=True)),
        (Tiresias("las"), Tiresias("las", elastic=True)),
    ]:
        a, b = simulate(world, rigid), simulate(world, elastic)
        assert a.completion == b.completion, elastic.name
        assert a.intervals_frame().equals(b.intervals_frame()), elastic.name


def test_fifo_shrinks_a_job_to_the_gpus_left() -> None:
    """FIFO elastic, 5 GPUs: j0 takes u(1, 5) = 4 (its useful size), j1 (2 asked, 1 at least)
    takes the last GPU where rigid strict FIFO would block it."""
    rows = [
        {"total_steps": 240.0, "num_gpus": 5},
        {"total_steps": 100.0, "num_gpus": 2},
    ]
    world = _world(rows, count=5)
    result = simulate(world, FIFO(elastic=True))
    assert _gangs(result) == {"j0": 4, "j1": 1}
    # j0: 240 / 24 = 10 s; j1: 100 / 10 = 10 s on one GPU
    assert within(result.completion[0], 10.0, TIME_TOL)
    assert within(result.completion[1], 10.0, TIME_TOL)


def test_non_preemptive_policies_never_resize_a_running_job() -> None:
    rows = [
        {"arrival": 0.0, "total_steps": 2400.0, "num_gpus": 2},
        {"arrival": 10.0, "total_steps": 100.0, "num_gpus": 2},
    ]
    world = _world(rows)
    result = simulate(world, FIFO(elastic=True))
    # j0 alone grows to 4 (useful); j1 arrives later and takes 2 of the 4 left, then grows to 4
    assert _gangs(result, 0.0) == {"j0": 4}
    assert _gangs(result, 10.0) == {"j0": 4, "j1": 4}
    # one run each: j0 was not resized when j1 came
    assert list(result.intervals_frame()["job_id"]).count("j0") == 1


def test_registry_names_and_errors() -> None:
    assert "edf-elastic" in ELASTIC_POLICIES and "tiresias-las-perf-elastic" in ELASTIC_POLICIES
    for name in ELASTIC_POLICIES:
        policy = make_policy(name)
        assert policy.name == name and getattr(policy, "elastic", False)
    with pytest.raises(InvalidInstanceError, match="optimus-elastic"):
        make_policy("optimus-elastic")


def test_tiresias_wakes_at_the_crossing_of_the_granted_gang() -> None:
    """One job asking 1 GPU, elastic up to 4: service grows at 4 GPU-s/s, so the 1800 GPU-s
    threshold is crossed at 450 s, the wake-up asked for (not at 1800 s)."""
    world = _world([{"total_steps": 24.0 * 1000, "num_gpus": 1}], count=4)
    policy = Tiresias("las", elastic=True)
    result = simulate(world, policy)
    assert within(result.completion[0], 1000.0, TIME_TOL)
    assert validate(world, result).ok
    # decisions at 0 (arrival), 450 and 900 (crossings of 1800 and 3600 GPU-s), 1000 (done)
    assert result.decisions == 4


def test_gandiva_grows_into_idle_gpus_and_shrinks_when_others_come() -> None:
    """Rounds of 60 s on 8 GPUs. From 0, j0 alone (2 asked) grows to u(2, 8) = 4 (flat beyond
    4); at 60, j1 and j2 (4 asked each) arrive: in time-slicing order (least executed first)
    j1 takes 4, j2 takes 4, and j0, last, gets nothing this round (time slicing)."""
    rows = [
        {"total_steps": 1e5, "num_gpus": 2},
        {"arrival": 30.0, "total_steps": 1e5, "num_gpus": 4},
        {"arrival": 30.0, "total_steps": 1e5, "num_gpus": 4},
    ]
    world = _world(rows)
    result = simulate(world, Gandiva(elastic=True))
    assert _gangs(result, 0.0) == {"j0": 4}
    assert _gangs(result, 60.0) == {"j1": 4, "j2": 4}
    assert validate(world, result).ok
    rigid = simulate(world, Gandiva())
    assert _gangs(rigid, 0.0) == {"j0": 2}


@given(worlds(max_jobs=5))
def test_elastic_order_runs_validate_on_elastic_worlds(world: World) -> None:
    wide = world.elastic(max_factor=3.0)
    for name in (
        "edf-elastic",
        "srtf-perf-elastic",
        "fifo-elastic",
        "tiresias-gittins-elastic",
        "gandiva-elastic",
    ):
        result = simulate(wide, make_policy(name))
        report = validate(wide, result)
        assert report.ok, (name, report.violations[:3])
        assert result.all_finished


def test_the_default_horizon_covers_an_elastic_job_kept_at_its_smallest_gang() -> None:
    """A non-preemptive elastic policy may start a 2-GPU job on the one slow GPU and keep it
    there; the default horizon counts that gang size too, so the run finishes instead of being
    cut short (found by Hypothesis: 2 of 3 jobs finished, the run truncated at 72.5 s)."""
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=2, gpus_per_server=1),
            GpuType(name="slow", count=1, gpus_per_server=1),
        )
    )
    rows = [
        {"model": "A", "num_gpus": 1, "duration": 1.0, "total_steps": 2.0},
        {"model": "A", "num_gpus": 1, "duration": 1.0, "total_steps": 2.0},
        {"model": "A", "num_gpus": 2, "duration": 25.0, "total_steps": 50.0},
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs())
    wide = world.elastic(max_factor=3.0)
    for name in ("fifo-elastic", "edf-elastic"):
        result = simulate(wide, make_policy(name))
        assert result.all_finished, (name, result)
        assert validate(wide, result).ok
        slow = result.intervals_frame().query("job_id == 'j2'")
        assert list(slow.gpu_type) == ["slow"]  # the case: kept on its smallest gang
