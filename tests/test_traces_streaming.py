"""The pyarrow pass over normalized CSVs, the up-front row budget and the atomic writer.

The pass may only accept files the row reader accepts, with the same table bit for bit; on any
other file it leaves the decision (and the error naming file, row and column) to the row reader.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.traces import HOSTILE_CELLS, HOSTILE_LINES, traces

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces import COLUMNS, Trace, generate_trace, read_trace, write_trace
from optsched.traces import normalized as normalized_module
from optsched.traces._arrow import PLAIN_NUMBER, available, scan
from optsched.traces.normalized import _read_arrow, read_normalized

pytestmark = pytest.mark.skipif(not available(), reason="pyarrow is not installed")

DATA = Path(__file__).resolve().parent / "data" / "traces"
FIXTURES = sorted(p for p in DATA.glob("*/*") if p.suffix in {".csv", ".trace"})


def _outcome(path: Path, engine: str) -> Trace | tuple[str, int | None]:
    try:
        return read_normalized(path, engine=engine)
    except InvalidInstanceError as exc:
        return (exc.field, exc.row)


def _same(path: Path) -> Trace | tuple[str, int | None]:
    """Every engine's outcome on ``path`` is the row reader's; returns it."""
    slow = _outcome(path, "rows")
    for engine in ("arrow", "python"):
        fast = _outcome(path, engine)
        if isinstance(slow, Trace):
            assert isinstance(fast, Trace), (engine, fast)
            assert fast.equals(slow), engine
            assert list(fast.jobs.dtypes) == list(slow.jobs.dtypes), engine
            assert fast.info() == slow.info(), engine
        else:
            assert fast == slow, engine
    return slow


# --------------------------------------------------------------------------------------------
# Shipped slices: the pass takes them (no fallback) and gives the row reader's table
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_shipped_slices_read_the_same_on_every_path(path: Path, tmp_path: Path) -> None:
    out = write_trace(read_trace(path), tmp_path / "n.csv")
    header = out.read_text().splitlines()[0].split(",")
    fast = _read_arrow(out, header, rows=10_000)
    assert fast is not None, "a clean normalized CSV must not need the row reader"
    slow = _same(out)
    assert isinstance(slow, Trace) and fast.equals(slow)


def test_generated_trace_reads_the_same_on_every_path(tmp_path: Path) -> None:
    trace = generate_trace(3000, seed=5, deadline_fraction=0.3)
    out = write_trace(trace, tmp_path / "g.csv")
    back = _same(out)
    assert isinstance(back, Trace) and back.equals(trace)
    assert back.jobs["job_id"].tolist() == trace.jobs["job_id"].tolist()


# --------------------------------------------------------------------------------------------
# Hostile files: the pass never accepts what the row reader refuses, nor reads it otherwise
# --------------------------------------------------------------------------------------------


@given(trace=traces(), data=st.data())
def test_hostile_edits_give_the_row_readers_outcome(
    trace: Trace, data: st.DataObject, tmp_path_factory
) -> None:
    path = write_trace(trace, tmp_path_factory.mktemp("hostile") / "t.csv")
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        what = data.draw(st.sampled_from(["cell", "line", "crlf"]), label="what")
        if what == "cell" and len(lines) > 1:
            i = data.draw(st.integers(1, len(lines) - 1), label="line")
            parts = lines[i].split(",")
            j = data.draw(st.integers(0, len(parts) - 1), label="field")
            parts[j] = data.draw(HOSTILE_CELLS, label="value")
            lines[i] = ",".join(parts)
        elif what == "line":
            i = data.draw(st.integers(0, len(lines)), label="at")
            lines.insert(i, data.draw(HOSTILE_LINES, label="inserted"))
        else:
            i = data.draw(st.integers(0, len(lines) - 1), label="crlf")
            lines[i] += "\r"
    ending = data.draw(st.sampled_from(["\n", "", "\r\n"]), label="ending")
    path.write_bytes(("\n".join(lines) + ending).encode("utf-8"))
    outcome = _same(path)
    # either the table, or a refusal that names the field (and row) it stopped at
    assert isinstance(outcome, Trace) or (isinstance(outcome[0], str) and outcome[0]), outcome


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe,bad utf-8\n",  # not UTF-8
        b"\xef\xbb\xbf",  # a byte-order mark before the header
        b"j\r1,2\n",  # a bare carriage return splits a line for Arrow, not for the row reader
        b'"j",1,1,m,1,1,1,1,,u\n',  # a quoted id
        b"x" * 200_000 + b",1,1,m,1,1,1,1,,u\n",  # a long id
    ],
    ids=["utf8", "bom", "bare-cr", "quoted", "long"],
)
def test_awkward_bytes_give_the_row_readers_outcome(body: bytes, tmp_path: Path) -> None:
    good = write_trace(generate_trace(4, seed=1), tmp_path / "g.csv").read_bytes()
    head, rest = good.split(b"\n", 1)
    for data in (body + good, head + b"\n" + body + rest, good + body):
        path = tmp_path / "t.csv"
        path.write_bytes(data)
        outcome = _same(path)
        assert isinstance(outcome, Trace) or (isinstance(outcome[0], str) and outcome[0]), outcome


# --------------------------------------------------------------------------------------------
# Numbers: Arrow's conversion and Python's float give the same double on the accepted grammar
# --------------------------------------------------------------------------------------------

_HARD = [
    "9007199254740993",  # 2**53 + 1: halfway, rounds to even
    "9007199254740995",
    "2.2250738585072011e-308",  # below the smallest normal
    "2.2250738585072014e-308",
    "4.9e-324",
    "2.4703282292062327e-324",  # just under half the smallest subnormal: rounds to 0
    "2.4703282292062328e-324",
    "1.7976931348623157e308",
    "0.1",
    "0.30000000000000004",
    "123456789012345678901234567890",
    "1e22",
    "1e23",
    "8.98846567431158e307",
    ".5",
    "5.",
    "0",
    "00000000000000000000000000000001",
]


def _arrow_floats(texts: list[str]) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    array = pa.array(texts, type=pa.string())
    assert pc.all(pc.match_substring_regex(array, PLAIN_NUMBER)).as_py()
    return pc.cast(array, pa.float64()).to_numpy()


def test_hard_decimals_convert_to_the_same_bits() -> None:
    got = _arrow_floats(_HARD)
    want = np.array([float(t) for t in _HARD])
    assert got.tobytes() == want.tobytes()


@given(
    st.lists(
        st.one_of(
            st.floats(0, allow_nan=False, allow_infinity=False).map(repr),
            st.from_regex(r"\A[0-9]{1,20}(\.[0-9]{0,12})?([eE][+-]?[0-9]{1,3})?\Z"),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_generated_decimals_convert_to_the_same_bits(texts: list[str]) -> None:
    texts = [t for t in texts if len(t) <= 32 and "inf" not in t]
    if not texts:
        return
    want = np.array([float(t) for t in texts])
    got = _arrow_floats(texts)
    assert got.tobytes() == want.tobytes(), [
        t for t, a, b in zip(texts, got, want, strict=True) if a != b
    ]


# --------------------------------------------------------------------------------------------
# The row budget: refused up front, naming the file and the budget, the same on every path
# --------------------------------------------------------------------------------------------


def test_budget_refuses_up_front_on_every_path(tmp_path: Path, monkeypatch) -> None:
    path = write_trace(generate_trace(500, seed=2), tmp_path / "t.csv")

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the columns were read although the file is over the budget")

    monkeypatch.setattr(normalized_module, "read_columns", never)
    monkeypatch.setattr(normalized_module, "Table", never)
    monkeypatch.setattr(normalized_module, "collect", never)
    for engine in ("arrow", "python", "rows"):
        with limits.override(max_trace_rows=50), pytest.raises(InvalidInstanceError) as info:
            read_normalized(path, engine=engine)
        err = info.value
        assert err.field == "<file>" and err.row == 52  # header, 50 rows, then the 51st
        assert "max_trace_rows = 50" in str(err) and str(path) in str(err)


def test_budget_counts_rows_not_blank_lines(tmp_path: Path) -> None:
    text = write_trace(generate_trace(5, seed=2), tmp_path / "t.csv").read_text()
    head, *rows = text.splitlines()
    blank = ["", "   ", "\u00a0", "\t\r"]
    path = tmp_path / "b.csv"
    path.write_text(
        "\n".join([head, *[r + "\n" + b for r, b in zip(rows, blank * 2, strict=False)]]) + "\n"
    )
    with limits.override(max_trace_rows=5):
        assert len(read_normalized(path, engine="arrow")) == 5
        assert len(read_normalized(path, engine="rows")) == 5
    with limits.override(max_trace_rows=4), pytest.raises(InvalidInstanceError) as info:
        read_normalized(path, engine="arrow")
    # line 1 header, rows on lines 2, 4, 6, 8, 10: the fifth row (line 10) is one too many
    assert info.value.row == 10


def test_budget_is_the_same_as_the_row_readers_for_any_blank_lines(tmp_path: Path) -> None:
    """The up-front count stops where the row reader's ``Table`` would, blank lines or not."""
    text = write_trace(generate_trace(30, seed=4), tmp_path / "t.csv").read_text()
    head, *rows = text.splitlines()
    mixed = [head]
    for k, row in enumerate(rows):
        mixed += [row] + [" "] * (k % 3)
    path = tmp_path / "m.csv"
    path.write_text("\n".join(mixed) + "\n")
    for budget in (1, 7, 29):
        with limits.override(max_trace_rows=budget), pytest.raises(InvalidInstanceError) as up:
            read_normalized(path)
        expected = mixed.index(rows[budget]) + 1  # 1-based line of the first row over budget
        assert up.value.row == expected


def test_scan_counts_line_feeds_and_sees_quotes_and_bare_returns(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(b"a\r\nb\n\nc")
    assert scan(path) == (3, True)
    path.write_bytes(b'a\n"b"\n')
    assert scan(path) == (2, False)
    path.write_bytes(b"a\rb\n")
    assert scan(path) == (1, False)


# --------------------------------------------------------------------------------------------
# Atomic writes: a failed write leaves no partial file, and no temporary one
# --------------------------------------------------------------------------------------------


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    trace = generate_trace(50, seed=6)
    out = tmp_path / "out.csv"
    out.write_text("previous\n")
    calls = {"n": 0}
    real = normalized_module._cells

    def failing(series, kind):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 12:  # after the first block of rows was written
            raise OSError("disk full")
        return real(series, kind)

    monkeypatch.setattr(normalized_module, "WRITE_BLOCK", 10)
    monkeypatch.setattr(normalized_module, "_cells", failing)
    with pytest.raises(OSError, match="disk full"):
        write_trace(trace, out)
    assert out.read_text() == "previous\n"
    assert sorted(os.listdir(tmp_path)) == ["out.csv"]


def test_write_in_blocks_is_the_same_bytes_and_keeps_the_mode(tmp_path: Path, monkeypatch) -> None:
    trace = generate_trace(95, seed=7, deadline_fraction=0.5)
    whole = write_trace(trace, tmp_path / "a.csv").read_bytes()
    monkeypatch.setattr(normalized_module, "WRITE_BLOCK", 7)
    out = tmp_path / "b.csv"
    out.write_text("")
    out.chmod(0o640)
    assert write_trace(trace, out).read_bytes() == whole
    assert (out.stat().st_mode & 0o777) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "b.csv"]
    assert read_trace(out).equals(trace)


def test_cli_convert_of_a_bad_file_writes_nothing(tmp_path: Path, capsys) -> None:
    from optsched.cli import main

    lines = write_trace(generate_trace(20, seed=8), tmp_path / "g.csv").read_text().splitlines()
    lines.insert(10, "zz,not,a,row")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    assert main(["trace", "convert", str(bad), str(out)]) == 2
    assert "row 11" in capsys.readouterr().err
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.csv", "g.csv"]


def test_info_of_a_fast_read_is_the_row_readers(tmp_path: Path) -> None:
    trace = generate_trace(400, seed=9, deadline_fraction=0.2)
    path = write_trace(trace, tmp_path / "i.csv")
    fast, slow = read_normalized(path, engine="arrow"), read_normalized(path, engine="rows")
    assert fast.info() == slow.info()
    report = fast.info()["columns"]["job_id"]
    assert report["distinct"] == 400 and report["top"] == dict.fromkeys(
        trace.jobs["job_id"].iloc[:5], 1
    )
    assert report["known"] == 400 and report["empty"] == 0


def test_negative_zero_and_repeats_are_written_bit_for_bit(tmp_path: Path) -> None:
    path = tmp_path / "z.csv"
    path.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "a,-0,1,m,1,2,,1,0,u\nb,0,1,m,1,2,,1,-0.0,u\nc,0.0,1,m,,0.1,64,1,,u\n"
    )
    trace = read_normalized(path, engine="rows")
    out = write_trace(trace, tmp_path / "out.csv")
    arrival = np.signbit(read_normalized(out, engine="arrow").jobs["arrival"].to_numpy())
    assert arrival.tolist() == [True, False, False]
    assert out.read_text().splitlines()[1:] == [
        "a,-0.0,1,m,1.0,2.0,,1.0,0.0,u",
        "b,0.0,1,m,1.0,2.0,,1.0,-0.0,u",
        "c,0.0,1,m,,0.1,64.0,1.0,,u",
    ]


@pytest.mark.parametrize("bad", [b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"])
@pytest.mark.parametrize("column", [0, 3, 9])  # job_id, a repeated string column, user
def test_text_that_is_not_utf8_goes_to_the_row_reader(
    bad: bytes, column: int, tmp_path: Path
) -> None:
    parts = [b"a", b"1", b"1", b"m", b"1", b"1", b"", b"1", b"", b"u"]
    parts[column] += bad
    path = tmp_path / "u.csv"
    path.write_bytes(",".join(COLUMNS).encode() + b"\n" + b",".join(parts) + b"\n")
    assert _read_arrow(path, list(COLUMNS), rows=10) is None
    assert _same(path) == ("<file>", 2)


@pytest.mark.parametrize("chunk", [16, 61, 1 << 20])
def test_budget_count_agrees_with_the_row_readers_table(
    chunk: int, tmp_path: Path, monkeypatch
) -> None:
    """Across chunk boundaries and odd blank lines, the up-front refusal names the row at
    which the row reader's own per-row check (``Table``) stops."""
    from optsched.traces import _rows

    text = write_trace(generate_trace(12, seed=3), tmp_path / "t.csv").read_text()
    head, *rows = text.splitlines()
    odd = ["", " ", "\u00a0", "\x1c\t", "\u2003 \r", "\r"]
    mixed = ["\ufeff" + head]
    for k, row in enumerate(rows):
        mixed += [row, *odd[: k % 4]]
    path = tmp_path / "m.csv"
    path.write_text("\n".join(mixed), encoding="utf-8")  # no final line feed
    monkeypatch.setattr(_rows, "_CHUNK", chunk)
    for budget in (1, 5, 11):
        with limits.override(max_trace_rows=budget), pytest.raises(InvalidInstanceError) as up:
            read_normalized(path)
        with monkeypatch.context() as m:
            m.setattr(normalized_module, "check_row_budget", lambda *a, **k: None)
            with limits.override(max_trace_rows=budget), pytest.raises(InvalidInstanceError) as per:
                read_normalized(path, engine="rows")
        assert up.value.row == per.value.row
        assert str(up.value) == str(per.value)
    with limits.override(max_trace_rows=12):
        assert len(read_normalized(path)) == 12


@given(
    st.lists(st.text(min_size=1, max_size=4), min_size=0, max_size=60),
    st.integers(1, 7),
)
def test_id_check_in_arrow_finds_every_repeat(ids: list[str], chunk: int) -> None:
    import pandas as pd
    import pyarrow as pa

    from optsched.traces.schema import ID_DTYPE, _unique_nonempty

    chunks = [
        pa.array(ids[k : k + chunk], type=pa.large_string()) for k in range(0, len(ids), chunk)
    ]
    series = pd.Series(pd.array(pa.chunked_array(chunks, type=pa.large_string()), dtype=ID_DTYPE))
    assert _unique_nonempty(series) == (len(set(ids)) == len(ids))
