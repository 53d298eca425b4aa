"""The Harmony checkpoint surface of ``make fuzz``: every hostile checkpoint is refused, typed.

``scripts/fuzz.py --checkpoints`` hands each file :func:`fuzz_engine.checkpoint_cases` names to
``optsched harmony place --model``; here every one goes through the loader in-process (each
takes milliseconds: the bounds answer before any array is inflated), and a sample through the
command, which must exit 2 with one JSON object naming the field.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fuzz_engine import (
    check_contract,
    checkpoint_cases,
    run_optsched,
    write_hostile_checkpoint,
)

from optsched.errors import InvalidInstanceError
from optsched.harmony.agent import load_model

CASES = checkpoint_cases()


def test_the_cases_cover_every_setting_weights_and_archives() -> None:
    kinds = {name.partition(":")[0] for name in CASES}
    assert kinds == {"setting", "weights", "archive"}
    assert sum(name.startswith("setting:") for name in CASES) >= 9 * 5


@pytest.mark.parametrize("name", CASES)
def test_a_hostile_checkpoint_is_refused_or_harmless(name: str, tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    write_hostile_checkpoint(name, path)
    try:
        params, _meta = load_model(path)
    except InvalidInstanceError as exc:
        assert exc.field  # the setting, member or array is named
        return
    # accepted: then it is a model the loader's own bounds admit (e.g. a record-only field)
    assert name.startswith("setting:"), f"{name} was loaded"
    assert all(p.size and abs(p).max() < 3e38 for p in params.values())


@pytest.mark.parametrize(
    "name", ["setting:hidden=2", "weights:3e38", "archive:bomb", "archive:pickled-meta"]
)
def test_the_command_exits_2_naming_the_field(name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model.npz"
        write_hostile_checkpoint(name, path)
        run = run_optsched(
            ["harmony", "place", "--jobs", "4", "--seed", "1", "--model", str(path), "--json"]
        )
    assert run.returncode == 2, run.stderr[-2000:]
    assert check_contract(run).ok
