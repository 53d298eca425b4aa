"""Fixtures of the fuzz suite: the valid seed files, written once per test session.

Under pytest-xdist every worker shares one seed directory (the first worker to take the lock
writes it), so the command's generators run once however many workers there are.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

# In the test suite a run's wall-clock limit only guards against a hang: on a loaded machine
# a command's start-up alone can take tens of seconds, which must not read as a hang (a failed
# test). ``make fuzz`` (scripts/fuzz.py) keeps its own 30 s verdict; set before the engine reads
# them, an explicit OPTSCHED_FUZZ_TIMEOUT / OPTSCHED_FUZZ_SIM_TIMEOUT still wins.
os.environ.setdefault("OPTSCHED_FUZZ_TIMEOUT", "600")
os.environ.setdefault("OPTSCHED_FUZZ_SIM_TIMEOUT", "600")

from fuzz_engine import SEED_FILES, make_seeds, prepare_special_files


@pytest.fixture(scope="session")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Format name -> a valid seed file (plus ``fifo``: a FIFO nobody writes to)."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a child of the session's; without it, the base itself.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    shared = root / "optsched-fuzz-seeds"
    shared.mkdir(parents=True, exist_ok=True)
    done = shared / "done.json"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                paths = make_seeds(shared / "files")
                prepare_special_files(shared)
                done.write_text(json.dumps({k: str(v) for k, v in paths.items()}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    paths = {k: Path(v) for k, v in json.loads(done.read_text()).items()}
    assert set(paths) == set(SEED_FILES)
    return {**paths, **prepare_special_files(shared)}
