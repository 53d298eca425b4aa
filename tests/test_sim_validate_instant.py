"""``work_conserving`` reads the state a round's decision left, not events just after it.

Late in a long trace a round start ``t`` is large (day 5: ``t = 466,560`` s), and the general
time slack ``TIME_TOL`` relative to it is half a second or more. Events that far after a round
start are after its decision: a job finishing the last 15 ms of its work in the round, a job
arriving a second into it. The whole-trace ``ftf-perf`` runs of ElasticFlow's cluster04 hit
both (the first with ``HOT_LEVELS``, the second on the default path); the two worlds below are
the same situations cut to three and two jobs.
"""

from __future__ import annotations

import copy
import importlib
import math

from strategies.sim import job_frame, one_gpu_world

from optsched.sim import ClusterSpec, GpuType, SimResult, World, simulate, validate
from optsched.sim.policies import AllocationLP
from optsched.tolerances import TIME_TOL

# ``optsched.sim.validate`` the attribute is the function; the module holds the constraints
_validate = importlib.import_module("optsched.sim.measure.validate")
L = 360.0


def _finishing_world() -> tuple[World, SimResult]:
    # j0 needs one round and 15 ms; j1 and j2 need several rounds: ftf-perf takes turns, so
    # j0's second run starts at a round start with the other two waiting and ends 15 ms later
    world = one_gpu_world([360.015, 2000.0, 2000.0], arrivals=[466_200.0] * 3)
    return world, simulate(world, AllocationLP("ftf-perf"))


def _arriving_world(second: float = 1_000_081.0) -> World:
    # j0 arrives at a round start and holds one of the two GPUs; j1 arrives (by default) a
    # second into that round, so it waits for the next round with the other GPU idle
    rows = [{"arrival": 1_000_080.0, "duration": 1000.0}, {"arrival": second, "duration": 100.0}]
    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=2, gpus_per_server=1),))
    return World.from_frame(job_frame(rows), cluster)


def _last_row(result: SimResult, job: str) -> int:
    ids = result.intervals["job_id"]
    return max(r for r, j in enumerate(ids) if j == job)


def _drop_row(result: SimResult, r: int) -> SimResult:
    out = copy.deepcopy(result)
    for values in out.intervals.values():
        del values[r]
    return out


def test_a_job_finishing_just_after_a_round_start_frees_no_gpu_at_it() -> None:
    world, result = _finishing_world()
    assert result.extra["work_conserving"] is True
    r = _last_row(result, "j0")
    start, end = result.intervals["start"][r], result.intervals["end"][r]
    t = 467_280.0  # the round start j0's second run begins at
    assert start == t and 0.0 < end - t < TIME_TOL * t  # within the old slack, TIME_TOL * t
    # j1 and j2 wait at t: neither holds the GPU over it
    for job, s, e in zip(
        result.intervals["job_id"], result.intervals["start"], result.intervals["end"], strict=True
    ):
        assert job == "j0" or not (s <= t < e)
    report = validate(world, result)
    assert report.ok, report.violations


def test_a_job_arriving_just_after_a_round_start_does_not_wait_at_it() -> None:
    world = _arriving_world()
    result = simulate(world, AllocationLP("ftf-perf"))
    t = 1_000_080.0
    arrival = world.jobs[1].arrival
    assert 0.0 < arrival - t < TIME_TOL * t  # within the old slack, TIME_TOL * t
    assert result.first_start == [t, t + L]  # j1 waits for the next round, a GPU idle
    report = validate(world, result)
    assert report.ok, report.violations


def test_a_gpu_idle_at_a_round_start_with_a_job_waiting_is_still_flagged() -> None:
    world, result = _finishing_world()
    r = _last_row(result, "j0")
    t = result.intervals["start"][r]
    # without j0's last run, the GPU idles from t while j1 and j2 wait
    idle = _drop_row(result, r)
    names = [v.constraint for v in _validate.work_conserving(world, idle)]
    assert names == ["work_conserving"]
    # the GPU freed roundings after t (its holder's run ending at t, as the decision left it)
    drifted = copy.deepcopy(result)
    drifted.intervals["end"][r] = t + 1000 * math.ulp(t)
    assert [v.constraint for v in _validate.work_conserving(world, drifted)] == ["work_conserving"]
    assert _validate.work_conserving(world, result) == []


def test_a_job_arriving_at_a_round_start_with_a_gpu_idle_is_still_flagged() -> None:
    result = simulate(_arriving_world(), AllocationLP("ftf-perf"))
    t = 1_000_080.0
    # the same record in a world where j1 arrived at t (or roundings after it): it waited a
    # round beside an idle GPU
    for arrival in (t, t + 1000 * math.ulp(t)):
        world = _arriving_world(arrival)
        names = [v.constraint for v in _validate.work_conserving(world, result)]
        assert names == ["work_conserving"], arrival
