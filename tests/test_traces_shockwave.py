"""Shockwave's 12-field "dynamic" layout of Gavel traces, read against an independent parse."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from optsched.errors import InvalidInstanceError
from optsched.traces import detect_format, read_trace
from optsched.traces.gavel import BATCH_MODES, FIELDS_12

SLICE = Path(__file__).parent / "data" / "traces" / "shockwave" / "reproduce_120_head30.trace"


def _by_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        return [dict(zip(FIELDS_12, row, strict=True)) for row in reader]


def test_the_slice_reads_field_by_field_as_csv_parses_it() -> None:
    assert detect_format(SLICE) == "gavel"
    trace = read_trace(SLICE)
    rows = _by_csv(SLICE)
    assert trace.meta["fields"] == 12 and len(trace) == len(rows) == 30
    frame = trace.jobs
    for i, row in enumerate(rows):
        job = frame.iloc[i]
        assert job["job_id"] == str(i)
        assert job["arrival"] == float(row["arrival_time"])
        assert job["num_gpus"] == int(row["scale_factor"])
        assert job["total_steps"] == float(row["total_steps"])
        assert job["duration"] == float(row["duration"])
        assert job["batch_mode"] == row["mode"]
        assert job["model"] == row["job_type"].split(" (batch size")[0]
        assert math.isnan(job["slo_factor"])  # every SLO of the slice is -1 (none)
    assert set(frame["batch_mode"]) <= set(BATCH_MODES)
    assert set(frame["batch_mode"]) == {"static", "accordion", "gns"}


def test_the_mode_column_round_trips_through_the_normalized_table(tmp_path: Path) -> None:
    trace = read_trace(SLICE)
    out = tmp_path / "jobs.csv"
    trace.save(out)
    again = read_trace(out)
    assert list(again.jobs["batch_mode"]) == list(trace.jobs["batch_mode"])
    assert list(again.jobs["duration"]) == list(trace.jobs["duration"])


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "elastic"), ("duration", "0"), ("duration", "nan"), ("duration", "-5")],
)
def test_a_bad_field_is_named_with_its_line(tmp_path: Path, field: str, value: str) -> None:
    lines = SLICE.read_text().splitlines()
    parts = lines[2].split("\t")
    parts[FIELDS_12.index(field)] = value
    lines[2] = "\t".join(parts)
    path = tmp_path / "bad.trace"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path)
    assert info.value.field == field and info.value.row == 3 and info.value.file == str(path)


def test_layouts_are_not_mixed(tmp_path: Path) -> None:
    lines = SLICE.read_text().splitlines()
    ten = lines[1].split("\t")
    del ten[10], ten[7]  # drop duration and mode: a 10-field line after 12-field ones
    path = tmp_path / "mixed.trace"
    path.write_text("\n".join([lines[0], "\t".join(ten)]) + "\n")
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path)
    assert info.value.row == 2
