"""``optsched pace sweep`` killed mid-way and rerun writes the table of an uninterrupted run."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

MODELS = ["resnet18", "alexnet"]
GRID = ["--bandwidths", "1,2.5,10,25,40,100", "--workers", "2,4,8"]
TOTAL = len(MODELS) * 6 * 3
CMD = [sys.executable, "-c", "from optsched.cli import main; main()", "pace", "sweep"]


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def _run(out: Path) -> dict:
    done = subprocess.run(
        [*CMD, *MODELS, *GRID, "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_killed_sweep_resumes_to_the_uninterrupted_table(tmp_path):
    killed = tmp_path / "killed" / "sweep.csv"
    killed.parent.mkdir()
    store = killed.with_suffix(".sqlite")
    proc = subprocess.Popen(
        [*CMD, *MODELS, *GRID, "-o", str(killed), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Wait (bounded by the process's own end) for the first record, then kill it.
        while proc.poll() is None and _stored(store) < 1:
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = _stored(store)
    assert 1 <= partial < TOTAL
    assert not killed.exists()  # the table is written at the end only; the store holds runs
    resumed = _run(killed)
    assert resumed["computed"] == TOTAL - partial
    fresh_out = tmp_path / "fresh" / "sweep.csv"
    fresh_out.parent.mkdir()
    fresh = _run(fresh_out)
    assert fresh["computed"] == TOTAL
    assert resumed["rows"] == fresh["rows"]
    assert killed.read_bytes() == fresh_out.read_bytes()
    assert killed.with_suffix(".md").read_bytes() == fresh_out.with_suffix(".md").read_bytes()
