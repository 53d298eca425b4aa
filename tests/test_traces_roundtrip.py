"""write_trace -> read_trace gives back the same table, for every reader's output and for any
valid trace Hypothesis builds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.traces import CSV_CELLS, traces

from optsched.errors import InvalidInstanceError
from optsched.traces import COLUMNS, Trace, generate_trace, read_trace, write_trace
from optsched.traces.normalized import read_normalized
from optsched.traces.schema import build_frame

DATA = Path(__file__).resolve().parent / "data" / "traces"
FIXTURES = sorted(p for p in DATA.glob("*/*") if p.suffix in {".csv", ".trace"})


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_round_trips(path: Path, tmp_path: Path) -> None:
    trace = read_trace(path)
    out = write_trace(trace, tmp_path / "n.csv")
    back = read_trace(out)
    assert back.format == "optsched"
    assert back.equals(trace)
    # and a second round changes nothing, byte for byte
    again = write_trace(back, tmp_path / "m.csv")
    assert again.read_bytes() == out.read_bytes()


def test_generated_trace_round_trips(tmp_path: Path) -> None:
    trace = generate_trace(300, seed=3, deadline_fraction=0.5)
    back = read_trace(write_trace(trace, tmp_path / "g.csv"))
    assert back.equals(trace)
    assert generate_trace(300, seed=3, deadline_fraction=0.5).equals(trace)
    assert not generate_trace(300, seed=4).equals(trace)


def test_equals_sees_one_bit() -> None:
    trace = generate_trace(5, seed=0)
    frame = trace.to_frame()
    frame.at[2, "duration"] = np.nextafter(frame.at[2, "duration"], math.inf)
    assert not Trace(frame).equals(trace)


@given(trace=traces())
def test_any_valid_trace_survives_write_read(trace: Trace, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("rt") / "t.csv"
    back = read_trace(write_trace(trace, path), format="optsched")
    assert back.equals(trace), (trace.jobs, back.jobs)
    assert read_normalized(path, columnar=False).equals(back)
    assert list(back.jobs.columns)[: len(COLUMNS)] == list(COLUMNS)


def test_quoted_strings_round_trip(tmp_path: Path) -> None:
    columns = {
        "job_id": ['a,"b"', "ü"],
        "arrival": [0.0, 0.1 + 0.2],
        "num_gpus": [1, 2],
        "model": ["ResNet-18 (batch size 64)", " spaced "],
        "total_steps": [1.0, math.nan],
        "duration": [math.nan, 1e-300],
        "batch_size": [math.nan, 3.0],
        "weight": [1.0, 2.5],
        "deadline": [math.nan, 5.0],
        "user": ["", "x"],
    }
    trace = Trace(build_frame(columns))
    back = read_trace(write_trace(trace, tmp_path / "q.csv"))
    assert back.equals(trace)
    assert back.jobs["arrival"][1] == 0.1 + 0.2


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_rows_satisfy_the_published_json_schema(path: Path, tmp_path: Path) -> None:
    import jsonschema  # in the test extra: its absence is a failure, not a skip

    validator = jsonschema.Draft202012Validator(Trace.schema())
    validator.check_schema(Trace.schema())
    trace = Trace.load(path)
    for record in trace.jobs.to_dict("records"):
        row = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in record.items()}
        validator.validate(row)
        bad = {**row, "num_gpus": 0}
        assert not validator.is_valid(bad)
    assert Trace.load(trace.save(tmp_path / "s.csv")).equals(trace)


def _outcome(path: Path, columnar: bool) -> Trace | tuple[str, int | None]:
    try:
        return read_normalized(path, columnar=columnar)
    except InvalidInstanceError as exc:
        return (exc.field, exc.row)


@given(trace=traces(), data=st.data())
def test_columnar_pass_matches_row_reader(
    trace: Trace, data: st.DataObject, tmp_path_factory
) -> None:
    path = write_trace(trace, tmp_path_factory.mktemp("nc") / "t.csv")
    lines = path.read_text().splitlines()
    if len(lines) > 1:
        for _ in range(data.draw(st.integers(0, 3), label="edits")):
            i = data.draw(st.integers(1, len(lines) - 1), label="line")
            parts = lines[i].split(",")
            j = data.draw(st.integers(0, len(parts) - 1), label="field")
            parts[j] = data.draw(CSV_CELLS, label="value")
            lines[i] = ",".join(parts)
    path.write_text("\n".join(lines) + "\n")
    fast, slow = _outcome(path, True), _outcome(path, False)
    if isinstance(slow, Trace):
        assert isinstance(fast, Trace) and fast.equals(slow)
    else:
        assert fast == slow
