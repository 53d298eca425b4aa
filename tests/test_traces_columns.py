"""A normalized CSV written by hand: columns by name in any order, a minimal set, stated defaults.

The expected table is built independently of the readers: the full table written by
``write_trace``, its left-out columns set to the schema's defaults on the pandas frame.
Every engine (arrow, python, rows) must give that table, and the same ``meta``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.traces import COLUMNS, Trace, generate_trace, read_trace, write_trace
from optsched.traces._arrow import available
from optsched.traces.formats import detect_format
from optsched.traces.normalized import _header, _read_arrow, _read_columnar, read_normalized
from optsched.traces.schema import DEFAULTS, REQUIRED

ENGINES = ("arrow", "python", "rows") if available() else ("python", "rows")
OPTIONAL = [c for c in COLUMNS if c not in REQUIRED]


def _rewrite(source: Path, out: Path, columns: list[str]) -> Path:
    """``source`` (a written normalized CSV) with only ``columns``, in that order (same text)."""
    with open(source, newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(out, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([r[c] for c in columns] for r in rows)
    return out


def _expected(trace: Trace, kept: list[str]) -> Trace:
    """The table a file with only ``kept`` columns must read as (defaults set with pandas)."""
    frame = trace.jobs.copy()
    for name in COLUMNS:
        if name not in kept:
            value = DEFAULTS[name]
            frame[name] = (
                np.full(len(frame), value, dtype=object)
                if isinstance(value, str)
                else np.full(len(frame), float(value))
            )
    extras = [c for c in kept if c not in COLUMNS]
    return Trace(frame[[*COLUMNS, *extras]], format="optsched")


def _read_all(path: Path) -> list[Trace]:
    got = [read_normalized(path, engine=e) for e in ENGINES]
    for other in got[1:]:
        assert other.equals(got[0])
        assert list(other.jobs.dtypes) == list(got[0].jobs.dtypes)
        assert dict(other.meta) == dict(got[0].meta)
    return got


def test_the_issue_header_is_read(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,arrival,num_gpus,model,duration\na,0,1,ResNet-50,3600\nb,60,4,,7200\n")
    assert detect_format(path) == "optsched"
    trace = _read_all(path)[0]
    assert trace.jobs["job_id"].tolist() == ["a", "b"]
    assert trace.jobs["duration"].tolist() == [3600.0, 7200.0]
    assert trace.jobs["model"].tolist() == ["ResNet-50", ""]
    assert trace.jobs["weight"].tolist() == [1.0, 1.0]
    assert np.isnan(trace.jobs["total_steps"]).all() and np.isnan(trace.jobs["deadline"]).all()
    assert trace.meta["defaults"] == {
        "total_steps": None, "batch_size": None, "weight": 1.0, "deadline": None, "user": "",
    }  # fmt: skip
    (note,) = trace.meta["notes"]
    for name in ("total_steps", "batch_size", "weight 1.0", "deadline none", "user"):
        assert name in note


def test_every_fast_path_takes_a_clean_partial_file(tmp_path: Path) -> None:
    """No silent fallback: the columnar passes accept a clean file with columns left out."""
    path = tmp_path / "p.csv"
    path.write_text("num_gpus,total_steps,job_id,arrival,slo_factor\n2,100,x,5,\n1,50,y,0,2.5\n")
    header = _header(path)
    assert _read_columnar(path, header) is not None
    if available():
        assert _read_arrow(path, header, rows=10) is not None
    trace = _read_all(path)[0]
    assert trace.jobs["job_id"].tolist() == ["y", "x"]  # sorted by arrival
    assert trace.extra_columns == ["slo_factor"]
    assert trace.jobs["slo_factor"].tolist()[0] == 2.5 and math.isnan(trace.jobs["slo_factor"][1])


def test_full_file_states_no_default(tmp_path: Path) -> None:
    path = write_trace(generate_trace(20, seed=1), tmp_path / "full.csv")
    trace = _read_all(path)[0]
    assert "defaults" not in trace.meta and "notes" not in trace.meta


@given(
    drop=st.sets(st.sampled_from(OPTIONAL)),
    order=st.randoms(use_true_random=False),
    seed=st.integers(0, 50),
)
def test_any_subset_in_any_order_reads_as_the_defaults_say(
    tmp_path_factory: pytest.TempPathFactory, drop: set[str], order: object, seed: int
) -> None:
    if {"total_steps", "duration"} <= drop:
        drop = drop - {"duration"}  # a job's work must be given
    trace = generate_trace(30, seed=seed, deadline_fraction=0.3)
    where = tmp_path_factory.mktemp("cols")
    full = write_trace(trace, where / "full.csv")
    kept = [c for c in COLUMNS if c not in drop]
    order.shuffle(kept)  # type: ignore[attr-defined]
    path = _rewrite(full, where / "part.csv", kept)
    assert detect_format(path) == "optsched"
    got = _read_all(path)[0]
    assert got.equals(_expected(trace, kept))
    assert set(got.meta.get("defaults", {})) == drop


@pytest.mark.parametrize(
    ("header", "field"),
    [
        ("job_id,arrival,model,duration", "num_gpus"),
        ("arrival,num_gpus,job_id,model", "duration"),
        ("job_id,arrival,num_gpus,duration,colour", "colour"),
        ("job_id,arrival,num_gpus,duration,arrival", "arrival"),
    ],
)
def test_header_errors_name_the_column(tmp_path: Path, header: str, field: str) -> None:
    path = tmp_path / "bad.csv"
    width = len(header.split(","))
    path.write_text(header + "\n" + ",".join(["1"] * width) + "\n")
    assert detect_format(path) == "optsched"
    for engine in ENGINES:
        with pytest.raises(InvalidInstanceError) as info:
            read_normalized(path, engine=engine)
        assert info.value.field == field
        assert info.value.file == str(path) and info.value.row == 1


def test_value_errors_name_the_column_in_a_permuted_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("duration,num_gpus,job_id,arrival\n10,1,a,0\n10,0,b,1\n")
    for engine in ENGINES:
        with pytest.raises(InvalidInstanceError) as info:
            read_normalized(path, engine=engine)
        assert (info.value.field, info.value.row) == ("num_gpus", 3)


def test_cli_states_the_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,arrival,num_gpus,model,duration\na,0,1,,3600\nb,60,4,,7200\n")
    assert main(["trace", "info", str(path)]) == 0
    shown = capsys.readouterr().out  # the notes under the table, with the result
    assert "note: columns not in the file" in shown and "weight 1.0" in shown
    out = tmp_path / "out.csv"
    assert main(["trace", "convert", str(path), str(out)]) == 0
    assert "weight 1.0" in capsys.readouterr().err
    assert out.read_text().splitlines()[0] == ",".join(COLUMNS)
    assert read_trace(out).equals(read_trace(path))
    assert main(["sim", "run", str(path), "--cluster", "v100=4", "--policy", "fifo"]) == 0
    assert "columns not in the file" in capsys.readouterr().err
