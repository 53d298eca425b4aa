"""The minimal example at the top of every API page runs as written.

Each ``.. code-block:: python`` of ``docs/api/*.rst`` runs in a fresh interpreter, in a scratch
directory where ``tests/`` (the data the examples read) is linked in, with the Agg backend.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
_BLOCK = re.compile(r"^\.\. code-block:: python\n\n((?:   .*\n|\n)+)", re.MULTILINE)


def blocks(page: Path) -> list[str]:
    return [textwrap.dedent(m.group(1)) for m in _BLOCK.finditer(page.read_text("utf-8"))]


PAGES = sorted(p for p in API.glob("*.rst") if blocks(p))


def test_every_api_page_has_an_example() -> None:
    assert {p.stem for p in API.glob("*.rst")} == {p.stem for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_api_page_examples_run(page: Path, tmp_path: Path) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    for i, source in enumerate(blocks(page)):
        done = subprocess.run(
            [sys.executable, "-c", source],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"{page.name} block {i}:\n{done.stderr[-3000:]}"
