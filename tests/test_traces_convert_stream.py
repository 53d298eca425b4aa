"""``trace convert`` in bounded memory (:mod:`optsched.traces.convert`).

* a clean normalized CSV is converted in a stream, to the same bytes as the whole-table path;
* the streamed pass's peak traced memory grows by at most 32 bytes a row (the id hashes), where
  the whole-table read holds every column (checked with tracemalloc on a 200,000-row file);
* a file the stream has a doubt about (out of arrival order, a repeated id, a bad value) goes
  to the whole read: the same bytes, or the same error naming file, row and column, and no
  partial output;
* a file that must be read whole and has more rows than ``max_convert_rows`` is refused before
  it is parsed, naming the file.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from optsched import limits
from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.traces import generate_trace, read_trace, write_trace
from optsched.traces.convert import convert_trace

pytest.importorskip("pyarrow")

BIG, SMALL = 200_000, 50_000


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    d = tmp_path_factory.mktemp("convert")
    out = {}
    for n in (2_000, SMALL, BIG):
        out[n] = write_trace(generate_trace(n, seed=3, deadline_fraction=0.3), d / f"t{n}.csv")
    return out


def _whole(source: Path, out: Path) -> bytes:
    write_trace(read_trace(source), out)
    return out.read_bytes()


def test_the_stream_writes_the_bytes_of_the_whole_table(
    files: dict[int, Path], tmp_path: Path
) -> None:
    report = convert_trace(files[2_000], tmp_path / "s.csv")
    assert report["streamed"] and report["jobs"] == 2_000
    same = (tmp_path / "s.csv").read_bytes() == _whole(files[2_000], tmp_path / "w.csv")
    assert same


def _peak(source: Path, out: Path, stream: bool) -> int:
    tracemalloc.start()
    try:
        report = convert_trace(source, out, stream=stream)
        assert report["streamed"] is stream
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_streams_peak_memory_is_bounded(files: dict[int, Path], tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    for stream in (True, False):  # imports and first-use caches are not the conversion's
        convert_trace(files[2_000], out, stream=stream)
    allowance = 32 * (BIG - SMALL) + 2**20  # 8-byte id hashes held a few times, plus slack
    grown = -_peak(files[SMALL], out, True) + _peak(files[BIG], out, True)
    assert grown <= allowance, f"the stream grew by {grown} bytes for {BIG - SMALL} more rows"
    streamed = out.read_bytes()
    same = streamed == _whole(files[BIG], tmp_path / "w.csv")  # (no diff of 20 MB on failure)
    assert same, "the streamed file differs from the whole-table conversion"
    # the whole-table read of the same files does grow with the rows: the check can fail
    whole = _peak(files[BIG], out, False) - _peak(files[SMALL], out, False)
    assert whole > allowance


def _rewrite(source: Path, path: Path, edit: dict[int, str]) -> Path:
    lines = source.read_text().splitlines(keepends=True)
    for k, text in edit.items():
        lines[k] = text
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("case", ["out-of-order", "repeated-id"])
def test_a_doubtful_file_goes_to_the_whole_read(
    files: dict[int, Path], tmp_path: Path, case: str
) -> None:
    lines = files[2_000].read_text().splitlines(keepends=True)
    if case == "out-of-order":  # the last job first: the table is reordered by arrival
        edit = {1: lines[-1], len(lines) - 1: lines[1]}
        src = _rewrite(files[2_000], tmp_path / "in.csv", edit)
        report = convert_trace(src, tmp_path / "s.csv")
        assert not report["streamed"]
        same = (tmp_path / "s.csv").read_bytes() == _whole(src, tmp_path / "w.csv")
        assert same
    else:  # the last row's id repeats the first's, far apart (another block)
        first_id = lines[1].split(",")[0]
        last = lines[-1].split(",")
        src = _rewrite(
            files[2_000], tmp_path / "in.csv", {len(lines) - 1: ",".join([first_id, *last[1:]])}
        )
        with pytest.raises(InvalidInstanceError) as err:
            convert_trace(src, tmp_path / "s.csv")
        assert err.value.field == "job_id" and err.value.file == str(src)
        assert not list(tmp_path.glob("*s.csv*"))  # no partial output


def test_a_bad_value_is_named_and_leaves_no_output(
    files: dict[int, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = files[2_000].read_text().splitlines(keepends=True)
    bad = lines[1500].split(",")
    bad[2] = "-3"  # num_gpus
    src = _rewrite(files[2_000], tmp_path / "in.csv", {1500: ",".join(bad)})
    assert main(["trace", "convert", str(src), str(tmp_path / "s.csv"), "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["field"] == "num_gpus" and payload["row"] == 1501
    assert not list(tmp_path.glob("*s.csv*"))


def test_a_file_read_whole_over_the_convert_budget_is_refused_up_front(
    files: dict[int, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = files[2_000].read_text().splitlines(keepends=True)
    src = _rewrite(files[2_000], tmp_path / "in.csv", {1: lines[-1], len(lines) - 1: lines[1]})
    with limits.override(max_convert_rows=1_000):
        # the clean file streams whatever the convert budget
        assert convert_trace(files[2_000], tmp_path / "ok.csv")["streamed"]
        with pytest.raises(InvalidInstanceError) as err:
            convert_trace(src, tmp_path / "s.csv")
        assert err.value.field == "<file>" and err.value.file == str(src)
        assert "max_convert_rows" in err.value.message
        with pytest.raises(InvalidInstanceError):
            convert_trace(files[2_000], tmp_path / "s.csv", stream=False)
    assert not (tmp_path / "s.csv").exists()
    # the command line names the file too (exit 2)
    env_args = ["trace", "convert", str(src), str(tmp_path / "s.csv"), "--json"]
    with limits.override(max_convert_rows=1_000):
        assert main(env_args) == 2
    payload = json.loads(capsys.readouterr().out)
    assert str(src) in json.dumps(payload) and "max_convert_rows" in payload["message"]


def test_a_missing_source_with_its_format_named_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "absent.csv"
    argv = ["trace", "convert", str(src), str(tmp_path / "o.csv"), "--format", "optsched"]
    assert main([*argv, "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["file"] == str(src) and payload["field"] == "<file>"
