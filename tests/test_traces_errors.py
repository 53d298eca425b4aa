"""Broken copies of real traces: every mutation of a row gives InvalidInstanceError naming the
file, the row and the column, never another exception; absurd sizes are refused early."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.traces import GARBAGE_TEXT

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces import Trace, read_trace
from optsched.traces.elasticflow import TRACE_COLUMNS
from optsched.traces.gavel import FIELDS_7, FIELDS_10
from optsched.traces.helios import HELIOS_COLUMNS
from optsched.traces.pai import TASK_FIELDS
from optsched.traces.tiresias import TIRESIAS_COLUMNS

DATA = Path(__file__).resolve().parent / "data" / "traces"

#: Values no numeric field of any format accepts.
ALWAYS_BAD = ["abc", "-1", "nan", "inf", "-inf", "1e300", "0x10", "1" * 70]


# One case per fixture: (file, separator, has header, field names, {column: extra bad values}),
# columns listed are those where every value of ALWAYS_BAD (and the extras) must be refused.
CASES = {
    "elasticflow": (
        DATA / "elasticflow" / "cluster10_head40.csv",
        ",",
        True,
        TRACE_COLUMNS,
        {
            "submission_time": [""],
            "num_iteration": ["", "0", "1.5"],
            "num_gpu": ["", "0", "2.5"],
            "duration": ["", "0"],
            "batch_size": ["0"],
            "deadline": ["0"],  # before the submission time
        },
    ),
    "gavel7": (
        DATA / "gavel" / "msr_seed0_0e4a51_head40.trace",
        "\t",
        False,
        FIELDS_7,
        {
            "total_steps": ["", "0", "2.5"],
            "arrival_time": [""],
            "scale_factor": ["", "1.5"],
            "needs_data_dir": ["2", ""],
        },
    ),
    "gavel10": (
        DATA / "gavel" / "physical_cluster_small_test.trace",
        "\t",
        False,
        FIELDS_10,
        {
            "total_steps": ["", "0"],
            "scale_factor": ["", "0"],
            "priority_weight": ["", "0"],
            "SLO": ["", "0", "-2"],
            "arrival_time": [""],
        },
    ),
    "tiresias": (
        DATA / "schema" / "tiresias_jobs.csv",
        ",",
        True,
        TIRESIAS_COLUMNS,
        {"num_gpu": ["", "0"], "submit_time": [""], "duration": ["", "0"], "iterations": ["0"]},
    ),
    "helios": (
        DATA / "schema" / "helios_cluster_log.csv",
        ",",
        True,
        HELIOS_COLUMNS,
        {"gpu_num": ["", "1.5"], "submit_time": ["", "2020-13-45 99:00:00"], "queue": []},
    ),
    "pai-task": (
        DATA / "schema" / "pai_task_table.csv",
        ",",
        False,
        TASK_FIELDS,
        {"inst_num": [], "plan_gpu": [], "plan_cpu": [], "start_time": [], "end_time": []},
    ),
}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    out = tmp_path / name
    out.write_text("\n".join(lines) + "\n")
    return out


def check_error_names_row(
    path: Path, row: int, field: str | None = None, format: str | None = None
) -> InvalidInstanceError:
    try:
        read_trace(path, format=format)
    except InvalidInstanceError as exc:
        assert exc.file == str(path)
        assert exc.row == row, (exc.row, row, str(exc))
        assert exc.field, str(exc)
        if field is not None:
            assert exc.field == field, (exc.field, field, str(exc))
        assert str(path) in str(exc)
        return exc
    raise AssertionError(f"{path} was read without error")


@given(data=st.data())
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_value_names_file_row_column(case: str, data: st.DataObject, tmp_path_factory) -> None:
    path, sep, header, names, columns = CASES[case]
    lines = _lines(path)
    first = 1 if header else 0
    index = data.draw(st.integers(first, len(lines) - 1), label="line")
    column = data.draw(st.sampled_from(sorted(columns)), label="column")
    # Gavel's SLO -1 means "none": the one value of ALWAYS_BAD that field accepts.
    bad = [v for v in ALWAYS_BAD if not (column == "SLO" and v == "-1")]
    value = data.draw(st.sampled_from(bad + columns[column]), label="value")
    parts = lines[index].split(sep)
    position = names.index(column)
    parts[position] = value
    lines[index] = sep.join(parts)
    broken = _write(tmp_path_factory.mktemp(case), path.name, lines)
    check_error_names_row(broken, index + 1, column)


@given(data=st.data())
@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_field_count_names_the_row(case: str, data: st.DataObject, tmp_path_factory) -> None:
    path, sep, header, names, _ = CASES[case]
    lines = _lines(path)
    first = 1 if header else 0
    index = data.draw(st.integers(first + (0 if header else 1), len(lines) - 1), label="line")
    drop = data.draw(st.booleans(), label="drop a field")
    parts = lines[index].split(sep)
    parts = parts[:-1] if drop else [*parts, "7"]
    lines[index] = sep.join(parts)
    broken = _write(tmp_path_factory.mktemp(case), path.name, lines)
    exc = check_error_names_row(broken, index + 1)
    if drop:
        assert exc.field == names[-1]
    else:
        assert exc.field == "<row>"


@pytest.mark.parametrize("case", ["elasticflow", "tiresias", "helios"])
def test_duplicate_id_names_the_second_row(case: str, tmp_path: Path) -> None:
    path, sep, _, names, _ = CASES[case]
    lines = _lines(path)
    id_col = names.index("job_id")
    first_id = lines[1].split(sep)[id_col]
    parts = lines[3].split(sep)
    parts[id_col] = first_id
    lines[3] = sep.join(parts)
    exc = check_error_names_row(_write(tmp_path, path.name, lines), 4, "job_id")
    assert "duplicate" in exc.message and "row 2" in exc.message


def test_not_utf8_and_unterminated_quote(tmp_path: Path) -> None:
    path, *_ = CASES["elasticflow"]
    raw = path.read_bytes().splitlines()
    raw[5] = raw[5] + b"\xff\xfe"
    bad = tmp_path / "latin.csv"
    bad.write_bytes(b"\n".join(raw) + b"\n")
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(bad)
    # the guarded boundary decodes in buffered chunks, so the row it names is where the chunk
    # holding the bad byte begins; the file and the reason are always named
    assert info.value.file == str(bad) and "UTF-8" in str(info.value)
    lines = _lines(path)
    lines[4] = '"unterminated,' + lines[4]
    exc = check_error_names_row(_write(tmp_path, "q.csv", lines), 5)
    assert exc.field in {"<row>", "job_id"}


def test_missing_header_column(tmp_path: Path) -> None:
    path, *_ = CASES["tiresias"]
    lines = _lines(path)
    lines[0] = lines[0].replace("num_gpu", "gpus")
    exc = check_error_names_row(_write(tmp_path, "t.csv", lines), 1, "num_gpu", format="tiresias")
    assert "header" in exc.message


# --------------------------------------------------------------------------------------------
# Budgets: refused before the whole file is read
# --------------------------------------------------------------------------------------------


def test_row_budget_refuses_after_budget_rows() -> None:
    path = DATA / "elasticflow" / "cluster10_head40.csv"
    with limits.override(max_trace_rows=10), pytest.raises(InvalidInstanceError) as info:
        read_trace(path)
    # header is line 1, jobs 1..10 are lines 2..11: the 11th job (line 12) is refused, so the
    # reader stopped after 12 of 41 lines and held at most 10 jobs.
    assert info.value.row == 12 and "max_trace_rows" in str(info.value)


def test_row_budget_bounds_memory_not_file_size(tmp_path: Path) -> None:
    """A file 50x larger is refused at the same row: the work done does not grow with it."""
    body = "".join(f"j{i},{i},{10 + i},1\n" for i in range(5000))
    big = tmp_path / "big.csv"
    big.write_text("job_id,submission_time,duration,num_gpu\n" + body * 1)
    small = tmp_path / "small.csv"
    small.write_text("job_id,submission_time,duration,num_gpu\n" + body[: body.index("j100,")])
    for path in (small, big):
        with limits.override(max_trace_rows=50), pytest.raises(InvalidInstanceError) as info:
            read_trace(path)
        assert info.value.row == 52


def test_byte_budget_refuses_before_reading() -> None:
    path = DATA / "elasticflow" / "cluster10_head40.csv"
    with limits.override(max_trace_bytes=100), pytest.raises(InvalidInstanceError) as info:
        read_trace(path)
    assert info.value.field == "<file>" and "max_trace_bytes" in str(info.value)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    for bad in (tmp_path, tmp_path / "nope.csv"):
        with pytest.raises(InvalidInstanceError) as info:
            read_trace(bad, format="elasticflow")
        assert info.value.file == str(bad)


# --------------------------------------------------------------------------------------------
# Trace construction validates the schema
# --------------------------------------------------------------------------------------------


def _good() -> pd.DataFrame:
    return read_trace(DATA / "schema" / "tiresias_jobs.csv").to_frame()


@pytest.mark.parametrize(
    ("column", "value", "row"),
    [
        ("arrival", -1.0, 1),
        ("arrival", math.nan, 2),
        ("duration", math.inf, 3),
        ("weight", 0.0, 1),
        ("batch_size", -2.0, 4),
        ("total_steps", 2e15, 2),
        ("num_gpus", 0, 3),
        ("deadline", 1e13, 4),
        ("model", "a\nb", 2),
        ("job_id", "", 1),
    ],
)
def test_trace_rejects_bad_cell(column: str, value: object, row: int) -> None:
    frame = _good()
    if column == "arrival" and value == -1.0:
        frame.loc[:, "arrival"] = frame["arrival"] - 1.0  # keeps the order, first row is -1
    else:
        frame.at[row - 1, column] = value
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame, source="mem")
    assert info.value.field == column
    assert info.value.row == row
    assert info.value.file == "mem"


def test_trace_rejects_structure() -> None:
    frame = _good()
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.iloc[::-1].reset_index(drop=True))
    assert info.value.field == "arrival"
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.assign(job_id=["0", "1", "0", "3"]))
    assert info.value.field == "job_id" and info.value.row == 3
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.assign(total_steps=np.nan, duration=[1.0, np.nan, 2.0, 3.0]))
    assert info.value.row == 2
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.assign(secret=1.0))
    assert info.value.field == "secret"
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.drop(columns=["user"]))
    assert info.value.field == "user"
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.assign(num_gpus=frame["num_gpus"].astype(float)))
    assert info.value.field == "num_gpus"
    with pytest.raises(InvalidInstanceError):
        Trace(frame.set_index(pd.Index([5, 6, 7, 8])))
    # row 1 arrives at 0 (a deadline of 1.0 is fine), row 2 at 30: a deadline of 2.0 is early
    with pytest.raises(InvalidInstanceError) as info:
        Trace(frame.assign(deadline=[1.0, 2.0, np.nan, np.nan]))
    assert info.value.field == "deadline" and info.value.row == 2


# --------------------------------------------------------------------------------------------
# Arbitrary garbage: never anything but InvalidInstanceError
# --------------------------------------------------------------------------------------------

_ALL_FIXTURES = sorted(p for p in DATA.glob("*/*") if p.suffix in {".csv", ".trace"})


@given(data=st.data())
@pytest.mark.parametrize("path", _ALL_FIXTURES, ids=lambda p: p.name)
def test_garbage_line_never_crashes(path: Path, data: st.DataObject, tmp_path_factory) -> None:
    lines = _lines(path)
    index = data.draw(st.integers(0, len(lines)), label="where")
    replace = data.draw(st.booleans(), label="replace")
    garbage = data.draw(GARBAGE_TEXT, label="line")
    if replace and index < len(lines):
        lines[index] = garbage
    else:
        lines.insert(index, garbage)
    broken = _write(tmp_path_factory.mktemp("garbage"), path.name, lines)
    fmt = data.draw(st.sampled_from([None, "elasticflow", "gavel", "tiresias", "helios",
                                     "pai-task", "optsched"]), label="format")  # fmt: skip
    try:
        trace = read_trace(broken, format=fmt)
    except InvalidInstanceError as exc:
        assert exc.file == str(broken) or exc.field == "format"
        assert exc.field
        if exc.field not in {"<file>", "format", "tasks"}:
            # a lone "\r" ends a line too (universal newlines), so it may add rows
            text = "\n".join(lines)
            assert exc.row is not None and 1 <= exc.row <= len(lines) + text.count("\r")
    else:
        trace.validate()
