"""Every example runs to completion from a clean working directory.

The examples are the documentation's runnable companions; a broken one is a broken promise.
Each runs in its own interpreter (as a user would run it) in a temporary directory, so files it
writes do not land in the checkout. The timeout only guards against a hang, it is no speed test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
#: A hang guard, far above any example's run time on a slow machine.
HANG_SECONDS = 900


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip(), "an example prints what it shows"
