"""The guarded loader (``optsched._io``): every refusal, and what it names.

Each hostile input is built in the test (no fixtures on disk) and must be refused with an
:class:`~optsched.errors.InvalidInstanceError` naming the file (and the field, line or row where
one is known) -- never a traceback of another type, a hang or an allocation the size of the input.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import _io, limits
from optsched.errors import InvalidInstanceError


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def _refused(call: Any, *args: Any, **kwargs: Any) -> InvalidInstanceError:
    with pytest.raises(InvalidInstanceError) as info:
        call(*args, **kwargs)
    return info.value


# ------------------------------------------------------------------------------------------
# Files that are not regular files
# ------------------------------------------------------------------------------------------

READERS = {
    "load_data": lambda p: _io.load_data(p),
    "read_text": lambda p: _io.read_text(p),
    "iter_lines": lambda p: list(_io.iter_lines(p)),
    "open_text": lambda p: _io.open_text(p).__enter__(),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_directory_is_refused(tmp_path: Path, reader: str) -> None:
    d = tmp_path / "instance.json"
    d.mkdir()
    err = _refused(READERS[reader], d)
    assert err.field == "<file>"
    assert err.file == str(d)
    assert "directory" in str(err)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_file_is_refused_naming_it(tmp_path: Path, reader: str) -> None:
    p = tmp_path / "absent.json"
    err = _refused(READERS[reader], p)
    assert err.file == str(p)
    assert str(p) in str(err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="the platform has no FIFOs")
@pytest.mark.parametrize("reader", sorted(READERS))
def test_fifo_is_refused_without_blocking(tmp_path: Path, reader: str) -> None:
    fifo = tmp_path / "instance.json"
    os.mkfifo(fifo)
    outcome: dict[str, BaseException] = {}

    def attempt() -> None:
        try:
            READERS[reader](fifo)
        except BaseException as exc:  # recorded and checked by the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():
        # Unblock the reader (a writer opening the FIFO) so the thread can end, then fail.
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
        pytest.fail(f"{reader} blocked on a FIFO")
    err = outcome.get("error")
    assert isinstance(err, InvalidInstanceError), err
    assert err.file == str(fifo)
    assert "not a regular file" in str(err)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this platform")
@pytest.mark.parametrize("reader", sorted(READERS))
def test_endless_device_is_refused(tmp_path: Path, reader: str) -> None:
    err = _refused(READERS[reader], Path("/dev/zero"))
    assert err.file == "/dev/zero"
    assert "not a regular file" in str(err)
    # Through a symbolic link with an innocent name as well.
    link = tmp_path / "instance.json"
    link.symlink_to("/dev/zero")
    assert "not a regular file" in str(_refused(READERS[reader], link))


# ------------------------------------------------------------------------------------------
# Size caps
# ------------------------------------------------------------------------------------------


def test_size_cap_is_checked_before_reading(tmp_path: Path) -> None:
    # A sparse 100 GB file: reading it would take minutes and all memory; the cap refuses it
    # from its size alone.
    p = tmp_path / "huge.json"
    with open(p, "wb") as fh:
        fh.truncate(100 * 10**9)
    for reader in (_io.load_data, _io.read_text):
        err = _refused(reader, p)
        assert err.field == "<file>"
        assert "100,000,000,000 bytes" in str(err)
        assert "max_file_bytes" in str(err)
        assert "OPTSCHED_MAX_FILE_BYTES" in str(err)
    with limits.override(max_trace_bytes=10**9):
        err = _refused(lambda q: list(_io.iter_lines(q)), p)
    assert "max_trace_bytes" in str(err)


def test_size_cap_follows_the_budget_and_the_argument(tmp_path: Path) -> None:
    p = _write(tmp_path, "a.json", json.dumps({"x": "y" * 100}))
    size = p.stat().st_size
    assert _io.load_data(p, max_bytes=size) == {"x": "y" * 100}
    assert "max_file_bytes" in str(_refused(_io.load_data, p, max_bytes=size - 1))
    with limits.override(max_file_bytes=size - 1):
        _refused(_io.load_data, p)
    with limits.override(max_file_bytes=size):
        assert _io.load_data(p)["x"] == "y" * 100


def _lying_stat(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Make every regular file claim ``size`` bytes (a file that grows after the check)."""
    real = os.stat

    def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
        st_ = real(path, *args, **kwargs)
        if stat.S_ISREG(st_.st_mode):
            return SimpleNamespace(st_mode=st_.st_mode, st_size=size)
        return st_

    class _Os:
        """``os`` as the loader sees it, with the lying ``stat`` (nothing else is patched)."""

        stat = staticmethod(fake)

        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

    monkeypatch.setattr(_io, "os", _Os())


def test_file_growing_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, "grows.json", "[" + "1," * 500 + "1]")
    _lying_stat(monkeypatch, 10)
    err = _refused(_io.load_data, p, max_bytes=100)
    assert "grew past" in str(err) and err.file == str(p)
    q = _write(tmp_path, "grows.csv", "a,b\n" * 100)
    err = _refused(lambda x: list(_io.iter_lines(x, max_bytes=100)), q)
    assert "grew past" in str(err) and err.file == str(q)


def test_a_file_that_grew_within_the_cap_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, "grew.json", "[" + "1," * 500 + "1]")
    _lying_stat(monkeypatch, 10)  # stat says 10 bytes; the file holds 1,003
    assert _io.read_bytes(p, max_bytes=10_000) == p.read_bytes()
    assert _io.read_text(p, max_bytes=10_000) == p.read_text()


def test_reading_a_small_file_allocates_about_its_size(tmp_path: Path) -> None:
    # Reading with fh.read(cap + 1) allocated the whole 64 MiB budget for every small file.
    import tracemalloc

    p = _write(tmp_path, "small.json", "[1, 2, 3]")
    tracemalloc.start()
    try:
        _io.read_bytes(p)
        _io.read_text(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_streamed_growth_is_counted_in_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = _write(tmp_path, "wide.csv", "\u00e9" * 50 + "\n")  # 101 bytes, 51 characters
    _lying_stat(monkeypatch, 10)
    err = _refused(lambda x: list(_io.iter_lines(x, max_bytes=60)), q)
    assert "grew past" in str(err)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc on this platform")
def test_file_whose_size_lies_is_capped_while_reading() -> None:
    # /proc files report st_size 0 and then produce content.
    err = _refused(_io.read_text, "/proc/self/status", max_bytes=16)
    assert "grew past" in str(err)


# ------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_invalid_utf8_names_the_line(tmp_path: Path, suffix: str) -> None:
    body = (
        b'{\n"a": 1,\n"b": "\xff\xfe"\n}' if suffix == ".json" else b'a = 1\nb = 2\nc = "\xc3("\n'
    )
    p = _write(tmp_path, "bad" + suffix, body)
    err = _refused(_io.load_data, p)
    assert err.file == str(p)
    assert "not UTF-8" in str(err)
    assert err.row == 3
    assert "line 3" in str(err)


def test_invalid_utf8_in_streamed_text_is_refused(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", b"a,b\n1,2\n3,\xff\n5,6\n")
    err = _refused(lambda x: list(_io.iter_lines(x)), p)
    assert err.file == str(p)
    assert "not UTF-8" in str(err)


def _far_bad_byte() -> bytes:
    rows = [f"{i},{i * 2}" for i in range(2000)]
    head = ("\n".join(rows[:1500]) + "\n").encode()
    return head + b"1500,\xff\n" + ("\n".join(rows[1501:]) + "\n").encode()


@pytest.mark.parametrize(
    ("body", "line"),
    [(b"a,b\n1,2\n3,\xff\n5,6\n", 3), (_far_bad_byte(), 1501)],
    ids=["small", "far"],
)
def test_invalid_utf8_in_streamed_text_names_its_line(
    tmp_path: Path, body: bytes, line: int
) -> None:
    p = _write(tmp_path, "t.csv", body)
    seen: list[int] = []
    with pytest.raises(InvalidInstanceError) as info:
        for number, _ in _io.iter_lines(p):
            seen.append(number)
    assert info.value.row == line
    assert f"line {line}" in str(info.value)
    assert seen == list(range(1, line))


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_byte_order_mark_is_accepted(tmp_path: Path, suffix: str) -> None:
    text = '{"a": 1}' if suffix == ".json" else "a = 1\n"
    p = _write(tmp_path, "bom" + suffix, b"\xef\xbb\xbf" + text.encode())
    assert _io.load_data(p) == {"a": 1}
    q = _write(tmp_path, "bom.csv", b"\xef\xbb\xbfa,b\n1,2\n")
    assert list(_io.iter_lines(q)) == [(1, "a,b"), (2, "1,2")]


# ------------------------------------------------------------------------------------------
# Structure and numbers
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_json_nested_too_deep_is_refused(tmp_path: Path, depth: int) -> None:
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        p = _write(tmp_path, "deep.json", opener * depth + "1" + closer * depth)
        err = _refused(_io.load_data, p)
        assert err.file == str(p)
        assert "deep" in str(err)


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_toml_nested_too_deep_is_refused(tmp_path: Path, depth: int) -> None:
    for body in (
        "a = " + "[" * depth + "1" + "]" * depth,
        "a = " + "{b = " * depth + "1" + "}" * depth,
    ):
        p = _write(tmp_path, "deep.toml", body + "\n")
        err = _refused(_io.load_data, p)
        assert err.file == str(p)


def test_nesting_at_the_budget_is_accepted(tmp_path: Path) -> None:
    depth = limits.current().max_json_depth
    p = _write(tmp_path, "ok.json", "[" * depth + "1" + "]" * depth)
    data = _io.load_data(p)
    for _ in range(depth):
        data = data[0]
    assert data == 1
    with limits.override(max_json_depth=depth - 1):
        _refused(_io.load_data, p)


def test_deep_field_is_named_by_its_path(tmp_path: Path) -> None:
    doc: Any = 1
    for _ in range(70):
        doc = {"x": doc}
    p = _write(tmp_path, "deep.json", json.dumps({"jobs": [doc]}))
    err = _refused(_io.load_data, p)
    assert err.field.startswith("jobs[0].x.x")


@pytest.mark.parametrize("suffix", [".json", ".toml"])
@pytest.mark.parametrize("digits", [41, 4301, 100_000])
def test_long_integer_is_refused(tmp_path: Path, suffix: str, digits: int) -> None:
    number = "9" * digits
    for sign in ("", "-"):
        text = f'{{"n": {sign}{number}}}' if suffix == ".json" else f"n = {sign}{number}\n"
        p = _write(tmp_path, "big" + suffix, text)
        err = _refused(_io.load_data, p)
        assert err.file == str(p)
        assert "digit" in str(err) or "limit" in str(err)


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_integer_within_the_digit_budget_is_accepted(tmp_path: Path, suffix: str) -> None:
    digits = limits.current().max_int_digits
    number = int("9" * digits)
    text = f'{{"n": -{number}}}' if suffix == ".json" else f"n = -{number}\n"
    assert _io.load_data(_write(tmp_path, "ok" + suffix, text)) == {"n": -number}


@pytest.mark.parametrize("token", ["1e999", "-1e999", "1E400", "123456789e999999"])
def test_json_float_overflow_is_refused(tmp_path: Path, token: str) -> None:
    p = _write(tmp_path, "f.json", f'{{"a": [1, {token}]}}')
    err = _refused(_io.load_data, p)
    assert "out of the range of a float" in str(err)


def test_extreme_finite_floats_are_read_exactly(tmp_path: Path) -> None:
    p = _write(tmp_path, "f.json", '{"a": 1e308, "b": 5e-324, "c": -0.0, "d": 1e-400}')
    assert _io.load_data(p) == {"a": 1e308, "b": 5e-324, "c": 0.0, "d": 0.0}


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_json_non_finite_tokens_are_refused(tmp_path: Path, token: str) -> None:
    p = _write(tmp_path, "f.json", f'{{"a": {{"b": {token}}}}}')
    err = _refused(_io.load_data, p)
    assert token in str(err)
    assert err.file == str(p)


@pytest.mark.parametrize("token", ["nan", "+nan", "-nan", "inf", "+inf", "-inf"])
def test_toml_non_finite_values_are_refused_naming_the_field(tmp_path: Path, token: str) -> None:
    p = _write(tmp_path, "f.toml", f"[model]\nlayers = [{{ms = 1.0}}, {{ms = {token}}}]\n")
    err = _refused(_io.load_data, p)
    assert err.field == "model.layers[1].ms"
    assert err.file == str(p)
    assert "finite" in str(err)


def test_json_duplicate_keys_are_refused(tmp_path: Path) -> None:
    for body in ('{"a": 1, "a": 2}', '{"jobs": [{"x": 1}, {"y": 1, "y": 1}]}'):
        p = _write(tmp_path, "d.json", body)
        err = _refused(_io.load_data, p)
        assert "duplicate key" in str(err)
        assert err.file == str(p)


def test_toml_duplicate_keys_are_refused(tmp_path: Path) -> None:
    for body in ("a = 1\na = 2\n", "[t]\nx = 1\n[t]\ny = 2\n"):
        err = _refused(_io.load_data, _write(tmp_path, "d.toml", body))
        assert "TOML" in str(err)


@pytest.mark.parametrize("body", ["", "{", '{"a": }', "[1, 2", '{"a": 1} {"b": 2}', "\x00"])
def test_malformed_json_is_refused(tmp_path: Path, body: str) -> None:
    err = _refused(_io.load_data, _write(tmp_path, "m.json", body))
    assert "not valid JSON" in str(err)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_read_or_refused(data: bytes) -> None:
    # Whatever the bytes, the loader returns a document or refuses with the typed error.
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for suffix in (".json", ".toml"):
            p = Path(d) / ("x" + suffix)
            p.write_bytes(data)
            try:
                _io.load_data(p)
            except InvalidInstanceError as exc:
                assert exc.file == str(p)


def test_check_tree_names_the_offending_path() -> None:
    err = _refused(_io.check_tree, {"jobs": [{"a": 1}, {"a": float("nan")}]}, file="f.json")
    assert err.field == "jobs[1].a"
    assert err.file == "f.json"
    err = _refused(_io.check_tree, [0, [10**40]])
    assert err.field == "[1][0]"
    _io.check_tree({"a": [True, None, "s", 1.5, 10**40 - 1]})


# ------------------------------------------------------------------------------------------
# Streamed lines
# ------------------------------------------------------------------------------------------


def test_iter_lines_numbers_rows_from_one_and_strips_newlines(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.csv", "a,b\r\n1,2\n\n3,4")
    assert list(_io.iter_lines(p)) == [(1, "a,b"), (2, "1,2"), (3, ""), (4, "3,4")]
    assert list(_io.iter_lines(_write(tmp_path, "e.csv", ""))) == []


def test_iter_lines_refuses_an_overlong_line_naming_its_row(tmp_path: Path) -> None:
    long_line = "x" * (_io.MAX_LINE_CHARS + 1)
    p = _write(tmp_path, "t.csv", f"a\nb\n{long_line}\nc\n")
    seen: list[int] = []
    with pytest.raises(InvalidInstanceError) as info:
        for number, _ in _io.iter_lines(p):
            seen.append(number)
    assert info.value.row == 3
    assert "line 3" in str(info.value)
    assert seen == [1, 2]
    # No newline at all: one endless line is refused without reading it whole.
    q = _write(tmp_path, "u.csv", "y" * (3 * _io.MAX_LINE_CHARS))
    assert _refused(lambda x: list(_io.iter_lines(x)), q).row == 1


def test_iter_lines_accepts_a_line_at_the_cap(tmp_path: Path) -> None:
    at_cap = "x" * _io.MAX_LINE_CHARS
    p = _write(tmp_path, "t.csv", f"a\n{at_cap}\nb\n")
    assert [n for n, _ in _io.iter_lines(p)] == [1, 2, 3]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="the platform has no FIFOs")
@pytest.mark.parametrize("flag", ["--prices", "--history"])
def test_a_refused_file_given_to_an_option_names_the_option(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from optsched.cli import main
    from optsched.online.oasis import generate_instance

    instance = tmp_path / "instance.json"
    generate_instance(3, worker_servers=2, ps_servers=2, horizon=6, seed=1).save(instance)
    fifo = tmp_path / "given.json"
    os.mkfifo(fifo)
    code = main(["oasis", "online", str(instance), flag, str(fifo), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert payload["field"] == flag and payload["file"] == str(fifo)


@pytest.mark.parametrize(
    ("key", "shown"),
    [("", '[""]'), ("a.b", '["a.b"]'), ("x[0]", '["x[0]"]'), ('q"', '["q\\""]'), ("ok", "ok")],
)
def test_every_field_path_names_its_field(key: str, shown: str) -> None:
    """A key a dotted path cannot show (empty, dotted, bracketed, quoted) is a quoted index:
    the empty key was refused naming no field at all (command-line campaign, seed 2027)."""
    from pydantic import BaseModel, ConfigDict

    from optsched._validation import parse

    class Doc(BaseModel):
        model_config = ConfigDict(extra="forbid")
        jobs: list[dict[str, int]] = []

    with pytest.raises(InvalidInstanceError) as info:
        parse(Doc, {key: 1})
    assert info.value.field == shown
    deep: Any = 0
    for _ in range(limits.current().max_json_depth + 1):
        deep = {key: deep}
    with pytest.raises(InvalidInstanceError) as info:
        _io.check_tree({"jobs": [deep]})
    # the path of the first value past the depth budget, in the same notation
    assert info.value.field.startswith(f"jobs[0]{shown if shown.startswith('[') else '.' + shown}")
