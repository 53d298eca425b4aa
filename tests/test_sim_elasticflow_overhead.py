"""ElasticFlow's overhead accounting under its mechanism: a job stops at its plan's end.

ElasticFlow's simulator advances a running job between two decisions no further than the end
its plan was given (``real_end_time``), with the overhead charged at the decision taken out of
that window; the work the overhead displaced waits for the next decision. Its end event is the
plan's end on the slot grid plus the overhead. ``ElasticFlowMechanism.stop_at_plan_end``
carries that out; every record still does all of a job's work before it completes.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.sim import World, simulate, validate
from optsched.sim.engine.elasticflow import ElasticFlowMechanism
from tests.test_sim_elasticflow_mechanism import _segments, _world


def _hand_world() -> World:
    # A: 600 steps by 1000 on 8 GPUs of a linear model; B, C, D arrive at 100, 161 and 222
    # and each needs 100 s on all 8 GPUs with 50 s to go: every one is declined
    rows: list[dict[str, object]] = [
        {"job_id": "A", "model": "lin", "total_steps": 600, "deadline": 1000}
    ]
    for name, at in (("B", 100), ("C", 161), ("D", 222)):
        rows.append(
            {"job_id": name, "model": "lin", "total_steps": 800, "arrival": at, "deadline": at + 50}
        )
    return _world(rows)


def test_a_job_stops_at_its_plans_end_and_stalls_under_its_overhead() -> None:
    """By hand. At 0 A is planned on all 8 GPUs: end 0 + 600 / 8 = 75, on the 60 s grid 120,
    overhead 2 + 2 (log2 8 + 1) = 10 s (a new GPU set): it runs from 10 and stops at 75 with
    600 - 8 x 65 = 80 steps left (the overhead's 10 s of work). Its end event would be 130;
    B's arrival at 100 comes first: A is planned again (80 steps: end 110, grid 160, cached
    set: 2 s), runs [102, 110] and stops with 16 steps left. C at 161 (a slot after 100, before
    A's end event 162): A's plan ends at 163, and its 2 s overhead takes the whole window
    [161, 163]: no progress (a stall), and D at 222 comes before A's end event 223. At 222:
    end 224, end event 282 + 2, no arrival left: A runs from 224 until done, at 226."""
    world = _hand_world()
    res = simulate(world, "elasticflow", mechanism="elasticflow")
    validate(res.world, res).raise_if_invalid()
    assert res.extra["declined_jobs"] == ["B", "C", "D"]
    assert _segments(res, "A") == [(10.0, 75.0, 8), (102.0, 110.0, 8), (224.0, 226.0, 8)]
    assert res.completion[0] == pytest.approx(226.0)
    # GPU-seconds of overhead: 10 x 8 at 0, then 2 x 8 at 100, 161 and 222
    assert res.extra["overhead_gpu_seconds"] == pytest.approx(80.0 + 3 * 16.0)


def test_the_knob_off_makes_up_the_overhead_before_the_next_decision() -> None:
    """``stop_at_plan_end=False``: A runs on past its plan's end, 600 steps from 10 at 8
    steps/s: done at 85, before B arrives. Without the overhead both agree: done at 75."""
    world = _hand_world()
    off = simulate(world, "elasticflow", mechanism=ElasticFlowMechanism(stop_at_plan_end=False))
    validate(off.world, off).raise_if_invalid()
    assert _segments(off, "A") == [(10.0, 85.0, 8)]
    for stop in (True, False):
        opts = ElasticFlowMechanism(overhead=False, stop_at_plan_end=stop)
        res = simulate(world, "elasticflow", mechanism=opts)
        assert _segments(res, "A") == [(0.0, 75.0, 8)]


def test_the_knob_is_checked() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        ElasticFlowMechanism(stop_at_plan_end=1)  # type: ignore[arg-type]
    assert err.value.field == "stop_at_plan_end"


def test_other_schedulers_do_not_stop_at_a_plans_end() -> None:
    """The rule is ElasticFlow's own scheduler's: EDF's record is the same either way."""
    world = _hand_world()
    on = simulate(world, "edf", mechanism=ElasticFlowMechanism(stop_at_plan_end=True))
    off = simulate(world, "edf", mechanism=ElasticFlowMechanism(stop_at_plan_end=False))
    assert on.completion == off.completion
    assert on.intervals_frame().equals(off.intervals_frame())


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, object]]:
    rows = []
    for k in range(draw(st.integers(1, 7))):
        arrival = draw(st.integers(0, 400))
        rows.append(
            {
                "job_id": f"j{k}",
                "model": draw(st.sampled_from(["lin", "sub"])),
                "arrival": arrival,
                "total_steps": draw(st.integers(1, 4000)),
                "deadline": arrival + draw(st.integers(1, 1500)),
                "num_gpus": draw(st.sampled_from([1, 2, 4, 8])),
            }
        )
    rows.sort(key=lambda r: r["arrival"])  # type: ignore[arg-type, return-value]
    return rows


@given(_rows(), st.booleans(), st.booleans(), st.sampled_from([8, 16, 24]))
def test_records_valid_with_and_without_the_stop(
    rows: list[dict[str, object]], stop: bool, overhead: bool, count: int
) -> None:
    """Every record passes the validator (a job completes only with its work done), every
    admitted job completes (a stall ends), and an admitted job's stop never loses work."""
    world = _world(rows, count=count)
    opts = ElasticFlowMechanism(overhead=overhead, stop_at_plan_end=stop)
    res = simulate(world, "elasticflow", mechanism=opts)
    validate(res.world, res).raise_if_invalid()
    assert not res.truncated
    declined = set(res.extra["declined_jobs"])
    for i, job in enumerate(world.jobs):
        assert math.isnan(res.completion[i]) == (job.job_id in declined)


def test_declined_jobs_do_not_make_a_run_unfinished() -> None:
    """B, C and D are declined and never run: the run is finished, with three missed."""
    res = simulate(_hand_world(), "elasticflow", mechanism="elasticflow")
    assert res.unfinished == 3 and res.left == 0
    assert res.status == "finished"
