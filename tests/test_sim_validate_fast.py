"""The validator's NumPy checks give the plain-Python reference's report, record for record.

:func:`optsched.sim.validate` runs the checks of :mod:`optsched.sim.measure.segments` over
whole arrays; ``_validate_reference`` runs the row-by-row checks of
:mod:`optsched.sim.measure.reference`. On random records of small busy worlds (several policies,
both mechanisms, shared GPUs) and on the same records corrupted (rows moved, stretched, dropped,
duplicated, malformed; completions and first starts falsified; a partner or a type swapped) both
must give the same report: the same violations in the same order, the same objective figures.
A corruption that must be caught is caught.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.sim import CORRUPTIONS, corrupted, hand_records, sim_records

from optsched.sim.measure import segments

_validate = importlib.import_module("optsched.sim.measure.validate")

DATA = Path(__file__).resolve().parent / "data"


def _same(world, record):
    """Both reports of ``record``, asserted equal; the fast one."""
    fast = _validate.validate(world, record)
    plain = _validate._validate_reference(world, record)
    assert fast.violations == plain.violations
    assert (fast.objective, fast.objectives, fast.details) == (
        plain.objective,
        plain.objectives,
        plain.details,
    )
    return fast


@given(sim_records())
@settings(max_examples=25)
def test_fast_and_reference_agree_on_simulated_records(record):
    assert segments.parse(record.world, record) is not None  # the NumPy path is the one tested
    report = _same(record.world, record)
    assert report.ok, report.violations


@given(st.data())
@settings(max_examples=60)
def test_fast_and_reference_agree_on_corrupted_records(data):
    record = data.draw(sim_records())
    bad, hows = data.draw(corrupted(record))
    report = _same(bad.world, bad)
    must = CORRUPTIONS[hows[0]]
    rows = len(record.intervals["job_id"])
    if len(hows) == 1 and must is not None and (rows or must == "work_done"):
        if must != "work_done" or any(c == c for c in record.completion):
            assert must in {v.constraint for v in report.violations}, (hows, report.violations)


def test_each_corruption_runs_on_the_numpy_path():
    """The malformed cells the strategies write are read by the NumPy path, not handed over."""
    from strategies.sim import _spoil, typed_world

    from optsched.sim import simulate

    rows = [
        {"arrival": 0.0, "num_gpus": 2, "model": "A", "duration": 5.0, "weight": 1.0},
        {"arrival": 1.0, "num_gpus": 1, "model": "B", "duration": 3.0, "weight": 2.0},
        {"arrival": 1.0, "num_gpus": 4, "model": "A", "duration": 12.5, "weight": 1.0},
    ]
    world = typed_world(rows, {"fast": (4, 2), "slow": (2, 2)})
    record = simulate(world, "fifo")
    for how in CORRUPTIONS:
        bad = _spoil(record, how, 0, 0.25, 1)
        assert segments.parse(bad.world, bad) is not None, how
        _same(bad.world, bad)


@pytest.mark.parametrize(
    ("policy", "mechanism"),
    [
        ("fifo", "optsched"),
        ("max-min-packed", "optsched"),
        ("gavel-fifo", "gavel"),
        ("max-min-perf", "gavel"),
    ],
)
def test_fast_and_reference_agree_on_a_gavel_trace(policy, mechanism):
    from optsched.sim import parse_cluster, simulate
    from optsched.sim.comparison import world_from_trace
    from optsched.sim.world.throughputs import load_throughputs
    from optsched.traces import read_trace

    trace = read_trace(DATA / "traces" / "gavel" / "msr_seed0_0e4a51_head40.trace")
    table = load_throughputs(DATA / "gavel" / "simulation_throughputs_alone.json")
    world = world_from_trace(trace, parse_cluster("v100=4,p100=4,k80=4"), table)
    record = simulate(world, policy, mechanism=mechanism)
    assert segments.parse(world, record) is not None
    assert _same(world, record).ok


@given(hand_records())
@settings(max_examples=150)
def test_fast_and_reference_agree_on_hand_written_records(record):
    assert segments.parse(record.world, record) is not None
    _same(record.world, record)
