"""Fault injection on the run store: kills after N commits, and two sweeps on one store.

* a ``sim sweep`` killed with ``SIGKILL`` after N records reached its store (for several seeded
  N, found by polling the store's row count read-only) leaves a whole store: the file passes
  SQLite's integrity check, every record its checksum, and at least N records are there; the
  same command rerun completes every run and computes only the missing ones;
* a second writer on a store in use is refused at once with a typed error naming the store
  (in this process and from another one), and the store opens again once the first is closed
  or its process is killed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.store import RunStore, run_key

ROOT = Path(__file__).resolve().parents[1]
POLICIES = "fifo,srtf"
SEEDS = 30  # 60 runs: far more than any kill point below


def _argv(store: Path) -> list[str]:
    return [
        "sim",
        "sweep",
        "synthetic:12",
        "--cluster",
        "v100=8",
        "--policies",
        POLICIES,
        "--seeds",
        ",".join(str(s) for s in range(SEEDS)),
        "--backend",
        "serial",
        "--store",
        str(store),
        "--json",
    ]


def _start(store: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = "import sys; from optsched.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *_argv(store)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _rows(store: Path) -> int:
    """Records committed so far, read as a reader would (never blocking the writer)."""
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1) as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet, or its tables not yet committed


def _kill_after(store: Path, commits: int) -> subprocess.Popen[bytes]:
    """Start the sweep and SIGKILL it (its whole group) once ``commits`` records are stored."""
    proc = _start(store)
    deadline = time.monotonic() + 300  # a guard against a wedged child, not a speed check
    while _rows(store) < commits:
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the sweep stored nothing"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    return proc


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sweep_killed_after_n_commits_leaves_a_whole_store_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    commits = random.Random(seed).randint(1, 12)  # the seeded kill point
    store = tmp_path / "runs.sqlite"
    proc = _kill_after(store, commits)
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        assert [r[0] for r in db.execute("PRAGMA integrity_check")] == ["ok"]
    reader = RunStore.open_existing(store, kind="sim-sweep")
    try:
        kept = dict(reader.items())  # every record checked against its checksum
    finally:
        reader.close()
    assert commits <= len(kept) < 2 * SEEDS
    # the killed writer's lock died with it: the rerun opens the store and finishes the sweep
    assert main(_argv(store)) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["runs"] == 2 * SEEDS
    reader = RunStore.open_existing(store, kind="sim-sweep")
    try:
        again = dict(reader.items())
    finally:
        reader.close()
    assert len(again) == 2 * SEEDS
    assert all(again[k] == v for k, v in kept.items())  # nothing stored was redone


def test_a_second_writer_in_this_process_is_refused_naming_the_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    first = RunStore(path, kind="t", config={"a": 1})
    try:
        with pytest.raises(InvalidInstanceError) as err:
            RunStore(path, kind="t", config={"a": 1})
        assert err.value.field == "store" and str(path) in str(err.value)
        assert "in use" in err.value.message
        # a reader is not refused, and takes the lock only when it writes
        reader = RunStore.open_existing(path)
        try:
            assert len(reader) == 0
            with pytest.raises(InvalidInstanceError) as err:
                reader.put(run_key(seed=1), {"x": 1})
            assert err.value.field == "store"
        finally:
            reader.close()
        first.put(run_key(seed=1), {"x": 1})
    finally:
        first.close()
    with RunStore(path, kind="t", config={"a": 1}) as again:  # released on close
        assert len(again) == 1


def test_a_second_sweep_on_a_store_in_use_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    proc = _start(store)
    try:
        deadline = time.monotonic() + 300
        while _rows(store) < 1:  # the first sweep holds the store from before its first record
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.005)
        if proc.poll() is None:
            assert main(_argv(store)) == 2
            payload = json.loads(capsys.readouterr().out)
            assert str(store) in payload["message"] and "in use" in payload["message"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL  # it was still running when refused
