"""The validator's time slack stays a rounding late in a long trace.

Two recorded times count as one instant within ``max(TIME_TOL, FIT_TOL * |t|)``: 4.7e-4 s at
``t = 466,560`` s. The slack was ``TIME_TOL`` relative before, 0.47 s there, and a record in
which a gang still held a server's only GPU 0.4 s after the next gang started on it passed.
Here a FIFO run on one GPU late in a trace is tampered by a few tenths of a second, and by a
rounding, in each direction a check reads.
"""

from __future__ import annotations

import copy
import importlib

import pytest
from strategies.sim import one_gpu_world

from optsched.sim import SimResult, World, simulate, validate
from optsched.sim.policies import make_policy
from optsched.tolerances import FIT_TOL, TIME_TOL

_validate = importlib.import_module("optsched.sim.measure.validate")
T0 = 466_200.0


def _run() -> tuple[World, SimResult]:
    world = one_gpu_world([360.0, 360.0], arrivals=[T0, T0])
    return world, simulate(world, make_policy("fifo"))


def _row(result: SimResult, job: str) -> int:
    return result.intervals["job_id"].index(job)


def _shift_end(result: SimResult, job: str, by: float) -> SimResult:
    """``job``'s segment and completion ``by`` seconds later."""
    out = copy.deepcopy(result)
    r = _row(out, job)
    out.intervals["end"][r] += by
    out.completion[int(job.removeprefix("j"))] += by
    return out


def test_the_untampered_late_run_is_valid() -> None:
    world, result = _run()
    assert (
        result.intervals["start"][_row(result, "j1")] == result.intervals["end"][_row(result, "j0")]
    )
    report = validate(world, result)
    assert report.ok, report.violations


@pytest.mark.parametrize("overlap", [0.4, 0.01, 1e-3])
def test_a_gang_holding_the_gpu_into_the_next_ones_run_is_flagged(overlap: float) -> None:
    world, result = _run()
    t = result.intervals["end"][_row(result, "j0")]
    assert overlap < TIME_TOL * t  # inside the old relative slack, so it used to pass
    tampered = _shift_end(result, "j0", overlap)
    bad = _validate.server_capacity(world, tampered)
    assert [v.constraint for v in bad] == ["server_capacity"]


def test_a_rounding_apart_is_one_instant() -> None:
    world, result = _run()
    t = result.intervals["end"][_row(result, "j0")]
    tampered = _shift_end(result, "j0", 0.5 * FIT_TOL * t)
    assert _validate.server_capacity(world, tampered) == []
    assert _validate.after_completion(world, tampered) == []


def test_a_start_before_the_arrival_is_flagged() -> None:
    world, result = _run()
    out = copy.deepcopy(result)
    r = _row(out, "j0")
    out.intervals["start"][r] -= 0.3
    out.first_start[0] -= 0.3
    assert 0.3 < TIME_TOL * T0  # inside the old relative slack
    bad = _validate.before_arrival(world, out)
    assert [v.constraint for v in bad] == ["before_arrival"]
