"""The independent validator rejects every kind of broken record."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import pytest
from strategies.sim import job_frame, synthetic_throughputs

from optsched.sim import ClusterSpec, GpuType, SimResult, World, simulate, validate
from optsched.sim.policies import FIFO, Gandiva


def _world() -> World:
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=4, gpus_per_server=2),))
    rows = [
        {"arrival": 0.0, "model": "A", "total_steps": 40.0, "num_gpus": 4},
        {"arrival": 1.0, "model": "A", "total_steps": 20.0, "num_gpus": 2},
        {"arrival": 1.0, "model": "B", "total_steps": 30.0, "num_gpus": 2},
    ]
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs(), restore_s=0.5)


def _shared_world() -> World:
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=1, gpus_per_server=1),))
    rows = [{"model": "A", "duration": 10.0}, {"model": "A", "duration": 10.0}]
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs())


def _mutated(result: SimResult, change: Callable[[SimResult], None]) -> SimResult:
    broken = copy.deepcopy(result)
    change(broken)
    return broken


def _row(result: SimResult, job: str) -> int:
    return result.intervals["job_id"].index(job)


def _dup(r: SimResult, k: int, **changes: object) -> None:
    for col, values in r.intervals.items():
        values.append(changes.get(col, values[k]))


def test_valid_runs_pass() -> None:
    world = _world()
    assert validate(world, simulate(world, FIFO())).ok
    shared = _shared_world()
    assert validate(shared, simulate(shared, Gandiva(round_seconds=1.0))).ok


BREAKS: dict[str, Callable[[SimResult], None]] = {
    # another job on the same server and time: over-allocated GPUs
    "server_capacity": lambda r: _dup(r, _row(r, "j0"), job="j1", gpus=2),
    "before_arrival": lambda r: r.intervals["start"].__setitem__(_row(r, "j1"), 0.5),
    "work_done": lambda r: r.completion.__setitem__(1, r.completion[1] + 1.0),
    "after_completion": lambda r: r.intervals["end"].__setitem__(
        len(r.intervals["end"]) - 1, r.intervals["end"][-1] + 5.0
    ),
    "gang_whole": lambda r: [v.pop(_row(r, "j0")) for v in r.intervals.values()],
    "interval_shape": lambda r: r.intervals["server"].__setitem__(0, 7),
    "first_start": lambda r: r.first_start.__setitem__(0, 3.0),
}


@pytest.mark.parametrize("constraint", sorted(BREAKS))
def test_each_break_is_named(constraint: str) -> None:
    world = _world()
    good = simulate(world, FIFO())
    report = validate(world, _mutated(good, BREAKS[constraint]))
    assert not report.ok
    assert constraint in {v.constraint for v in report.violations}, report.violations


def test_job_overlap_is_named() -> None:
    world = _world()
    good = simulate(world, FIFO())

    def change(r: SimResult) -> None:
        rows = [k for k, j in enumerate(r.intervals["job_id"]) if j == "j0"]
        for k in rows:
            _dup(r, k, start=r.intervals["start"][k] + 0.5, end=r.intervals["end"][k] + 0.5)

    report = validate(world, _mutated(good, change))
    assert "job_overlap" in {v.constraint for v in report.violations}


def test_share_without_mirror_is_named() -> None:
    world = _shared_world()
    good = simulate(world, Gandiva(round_seconds=1.0))
    k = good.intervals["shared_with"].index("j0")  # a row of j1 shared with j0

    def change(r: SimResult) -> None:
        r.intervals["shared_with"][k] = ""

    report = validate(world, _mutated(good, change))
    names = {v.constraint for v in report.violations}
    assert "share_pair" in names or "gang_whole" in names


def test_over_allocation_is_named() -> None:
    # per type at most the type's count follows from per server (a type's servers hold exactly
    # its GPUs): server_capacity names it
    world = _world()
    good = simulate(world, FIFO())

    def change(r: SimResult) -> None:
        rows = [k for k, j in enumerate(r.intervals["job_id"]) if j == "j0"]
        for k in rows:  # a second copy of the 4-GPU gang, as another job of 4 GPUs
            _dup(r, k, job="j1")

    report = validate(world, _mutated(good, change))
    names = {v.constraint for v in report.violations}
    assert "server_capacity" in names


def test_unfinished_job_with_its_work_done_is_named() -> None:
    world = _world()
    good = simulate(world, FIFO())
    report = validate(world, _mutated(good, lambda r: r.completion.__setitem__(0, math.nan)))
    assert "work_done" in {v.constraint for v in report.violations}
