"""The resumable sweep store (``optsched.runs.store.RunStore``).

Checked: records round-trip; resuming with the same config keeps them, another config, kind or
format is refused naming what differs; a record edited behind the store's back, a foreign one or
a file that is not a store is reported with its key or file; and a writer killed with SIGKILL at
an arbitrary instant leaves only whole records, from which a rerun completes the same table as an
uninterrupted run.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.runs.store import FORMAT_VERSION, RunStore, run_key

CONFIG = {"jobs": 10, "horizon": 5, "work": "chunks"}


def _store(path: Path, kind: str = "demo", config: dict | None = None) -> RunStore:
    return RunStore(path, kind=kind, config=CONFIG if config is None else config)


def test_put_get_and_listing(tmp_path: Path) -> None:
    with _store(tmp_path / "s.sqlite") as store:
        assert len(store) == 0 and store.keys() == set() and store.records() == []
        for seed in (2, 0, 1):
            store.put(run_key(seed=seed, policy="fifo"), {"seed": seed, "ratio": 1 + seed / 4})
        key = run_key(policy="fifo", seed=1)
        assert key == '{"policy":"fifo","seed":1}'
        assert key in store and run_key(seed=9, policy="fifo") not in store
        assert store.get(key) == {"seed": 1, "ratio": 1.25}
        assert store.get(run_key(seed=9)) is None
        assert len(store) == 3
        assert [r["seed"] for r in store.records()] == [0, 1, 2]
        frame = store.to_frame()
        assert isinstance(frame, pd.DataFrame)
        assert list(frame["ratio"]) == [1.0, 1.25, 1.5]
        assert "runs=3" in repr(store)


def test_directory_path_holds_the_store(tmp_path: Path) -> None:
    with _store(tmp_path / "sweep") as store:
        store.put("a", {"x": 1})
    assert (tmp_path / "sweep" / "runs.sqlite").is_file()
    with _store(tmp_path / "sweep") as again:
        assert again.get("a") == {"x": 1}


def test_records_hold_numpy_and_non_finite_values_as_json(tmp_path: Path) -> None:
    import numpy as np

    with _store(tmp_path / "s.sqlite") as store:
        store.put("a", {"n": np.int64(3), "v": np.array([1.5, 2.0]), "nan": float("nan")})
        assert store.get("a") == {"n": 3, "v": [1.5, 2.0], "nan": None}


def test_resume_with_the_same_config_keeps_the_records(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with _store(path) as store:
        store.put("a", {"x": 1})
    # Key order of the config does not matter; the same record may be put again.
    with _store(path, config=dict(reversed(list(CONFIG.items())))) as store:
        assert store.keys() == {"a"}
        store.put("a", {"x": 1})
        store.put("b", {"x": 2})
    with _store(path) as store:
        assert store.records() == [{"x": 1}, {"x": 2}]


def test_a_key_cannot_be_rewritten_with_another_record(tmp_path: Path) -> None:
    with _store(tmp_path / "s.sqlite") as store:
        store.put("a", {"x": 1})
        with pytest.raises(InvalidInstanceError) as info:
            store.put("a", {"x": 2})
        assert "run a" in str(info.value)
        assert store.get("a") == {"x": 1}


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ({**CONFIG, "jobs": 20}, "jobs"),
        ({**CONFIG, "work": "slots"}, "work"),
        ({k: v for k, v in CONFIG.items() if k != "horizon"}, "horizon"),
        ({**CONFIG, "seed0": 3}, "seed0"),
    ],
)
def test_config_mismatch_names_the_parameter(tmp_path: Path, config: dict, name: str) -> None:
    path = tmp_path / "s.sqlite"
    with _store(path) as store:
        store.put("a", {"x": 1})
    with pytest.raises(InvalidInstanceError) as info:
        _store(path, config=config)
    err = info.value
    assert err.field == f"config.{name}"
    assert err.file == str(path)
    assert "differs from the stored sweep" in str(err)
    # The stored sweep is untouched and still opens with its own config.
    with _store(path) as store:
        assert store.records() == [{"x": 1}]


def test_kind_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store(path, kind="oasis-ratio").close()
    with pytest.raises(InvalidInstanceError) as info:
        _store(path, kind="pace-sweep")
    assert info.value.field == "kind"
    assert "'oasis-ratio'" in str(info.value) and "'pace-sweep'" in str(info.value)


def test_unknown_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'format'", (str(FORMAT_VERSION + 1),))
    with pytest.raises(InvalidInstanceError) as info:
        _store(path)
    assert info.value.field == "format"


def test_corrupt_stored_config_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '{not json' WHERE name = 'config'")
    with pytest.raises(InvalidInstanceError) as info:
        _store(path)
    assert info.value.field == "config"


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ('{"spec": ' * 5000 + "1" + "}" * 5000, "config"),  # exhausts the decoder's stack
        ('{"spec": ' * 200 + "1" + "}" * 200, "config.spec"),  # over the depth budget
        ("[1, 2]", "config"),
    ],
    ids=["stack", "budget", "array"],
)
def test_a_stored_config_too_deep_or_not_an_object_is_refused(
    tmp_path: Path, config: str, field: str
) -> None:
    """Found by the command-line campaign: ``sim report`` on a store whose config was edited to
    nest thousands deep stopped with an internal RecursionError."""
    path = tmp_path / "s.sqlite"
    _store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'config'", (config,))
    db.close()
    for open_store in (_store, RunStore.open_existing):
        with pytest.raises(InvalidInstanceError) as info:
            open_store(path)
        assert info.value.field.startswith(field)
        assert info.value.file == str(path)


@pytest.mark.parametrize("offset", [2, 12, 37])
def test_a_schema_byte_that_is_not_utf8_is_refused_naming_the_file(
    tmp_path: Path, offset: int
) -> None:
    """Found by the command-line campaign (seed 2027): a flipped byte in the store's schema
    text makes SQLite's error message quote non-UTF-8 bytes, and decoding that message stopped
    ``sim sweep --store`` with an internal UnicodeDecodeError."""
    path = tmp_path / "s.sqlite"
    with _store(path) as store:
        store.put("a", {"x": 1})
    data = bytearray(path.read_bytes())
    data[data.index(b"CREATE TABLE meta") + offset] = 0xF5
    path.write_bytes(bytes(data))
    for open_store in (_store, RunStore.open_existing):
        with pytest.raises(InvalidInstanceError) as info:
            open_store(path)
        assert info.value.field == "<file>"
        assert info.value.file == str(path)


def test_a_text_value_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with _store(path) as store:
        store.put("a", {"x": 1})
    _edit(path, "UPDATE runs SET record = CAST(X'7B22F5223A317D' AS TEXT)")
    with _store(path) as store, pytest.raises(InvalidInstanceError) as info:
        store.records()
    assert info.value.field == "<file>"


def _edit(path: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, args)
    db.close()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET record = '{\"x\":999}' WHERE key = ?",
        "UPDATE runs SET record = '{\"x\":' WHERE key = ?",
        "UPDATE runs SET checksum = 'forged' WHERE key = ?",
    ],
    ids=["edited", "torn", "checksum"],
)
def test_corrupt_record_is_reported_with_its_key(tmp_path: Path, sql: str) -> None:
    path = tmp_path / "s.sqlite"
    with _store(path) as store:
        store.put("good", {"x": 1})
        store.put("bad", {"x": 2})
    _edit(path, sql, "bad")
    with _store(path) as store:
        for read in (store.records, store.to_frame, lambda: store.get("bad")):
            with pytest.raises(InvalidInstanceError) as info:
                read()
            assert info.value.field == "runs[bad]"
            assert info.value.file == str(path)


def test_record_copied_from_another_sweep_is_reported(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.sqlite", tmp_path / "theirs.sqlite"
    _store(ours).close()
    with _store(theirs, kind="other") as store:
        store.put("k", {"x": 1})
    with sqlite3.connect(ours) as db:
        db.execute("ATTACH DATABASE ? AS theirs", (str(theirs),))
        db.execute("INSERT INTO runs SELECT * FROM theirs.runs")
    db.close()
    with _store(ours) as store, pytest.raises(InvalidInstanceError) as info:
        store.records()
    assert info.value.field == "runs[k]"


@pytest.mark.parametrize(
    "content", [b"this is not a database\n" * 100, b"SQLite format 3\x00" + b"\xff" * 2000]
)
def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(content)
    with pytest.raises(InvalidInstanceError) as info:
        _store(path)
    assert info.value.field == "<file>"
    assert info.value.file == str(path)
    assert path.read_bytes() == content


@given(
    st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.integers(-(10**12), 10**12), st.floats(allow_nan=False), st.text(max_size=8)),
        max_size=5,
    )
)
def test_any_json_record_round_trips(record: dict) -> None:
    import json
    import math
    import tempfile

    def expect(v: object) -> object:
        if isinstance(v, float) and math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v

    with tempfile.TemporaryDirectory() as d, _store(Path(d)) as store:
        store.put(run_key(r=json.dumps(record, sort_keys=True, default=str)), record)
        assert store.records() == [{k: expect(v) for k, v in record.items()}]


# ------------------------------------------------------------------------------------------
# Killed mid-write
# ------------------------------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from optsched.runs.store import RunStore, run_key

    path, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    gated = len(sys.argv) > 4  # the last record waits for stdin: killed before it, however fast
    store = RunStore(path, kind="kill-test", config={"n": 40})
    for seed in range(start, stop):
        key = run_key(seed=seed)
        if key in store:
            continue
        if gated and seed == stop - 1:
            sys.stdin.readline()
        # A large record so that a kill lands inside a write, not between two.
        store.put(key, {"seed": seed, "payload": [seed * 7 + i for i in range(5000)]})
        print(seed, flush=True)
    store.close()
    """
)


def _record(seed: int) -> dict:
    return {"seed": seed, "payload": [seed * 7 + i for i in range(5000)]}


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.037])
def test_writer_killed_mid_write_leaves_only_whole_records(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "kill.sqlite"
    n = 40
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "0", str(n), "gated"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            written = [proc.stdout.readline() for _ in range(5)]
            assert all(line.strip() for line in written), "the writer failed to start"
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with RunStore(path, kind="kill-test", config={"n": 40}) as store:
        done = {int(r["seed"]) for r in store.records()}  # every stored record is whole
        assert {0, 1, 2, 3, 4} <= done
        assert len(done) < n  # the gate held the last record back
        for key, record in store.items():
            assert record == _record(int(record["seed"])), key
    # Resuming redoes only what is missing, and the table equals an uninterrupted run's.
    resumed = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), "0", str(n)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    redone = {int(line) for line in resumed.stdout.split()}
    assert redone == set(range(n)) - done
    with RunStore(path, kind="kill-test", config={"n": 40}) as store:
        assert store.records() == [
            _record(s) for s in sorted(range(n), key=lambda s: run_key(seed=s))
        ]
