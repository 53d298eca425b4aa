"""The wheel smoke's content check (scripts/wheel_smoke.py), on a made-up tree and wheel."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "wheel_smoke.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheel_smoke", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path) -> Path:
    source = root / "optsched"
    for name in ("__init__.py", "py.typed", "sub/__init__.py", "sub/mod.py", "models/m.toml",
                 "data/table.csv"):  # fmt: skip
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.cpython-311.pyc").write_text("")
    return source


def _wheel(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "")
    return path


FULL = [
    "optsched/__init__.py",
    "optsched/py.typed",
    "optsched/sub/__init__.py",
    "optsched/sub/mod.py",
    "optsched/models/m.toml",
    "optsched/data/table.csv",
]


def test_a_complete_wheel_passes(tmp_path: Path) -> None:
    smoke = _script()
    source = _tree(tmp_path / "src")
    assert smoke.shipped_files(source) == set(FULL)
    smoke.check_contents(_wheel(tmp_path / "ok.whl", FULL), source)


@pytest.mark.parametrize("left_out", FULL)
def test_a_wheel_missing_any_file_fails(tmp_path: Path, left_out: str) -> None:
    smoke = _script()
    source = _tree(tmp_path / "src")
    wheel = _wheel(tmp_path / "bad.whl", [n for n in FULL if n != left_out])
    with pytest.raises(SystemExit):
        smoke.check_contents(wheel, source)


def test_the_docs_and_examples_the_wheel_must_hold() -> None:
    smoke = _script()
    root = SCRIPT.parent.parent
    wanted = smoke.shipped_docs_files(root)
    assert "optsched/_docs/docs/conf.py" in wanted
    assert "optsched/_docs/docs/guide/glossary.rst" in wanted
    assert "optsched/_docs/examples/my_policy.py" in wanted
    assert "optsched/_docs/examples/experiments/tiny.toml" in wanted
    assert not any("/_build/" in n or "__pycache__" in n for n in wanted)
    # every data file a shipped experiment or a docs figure reads ships too
    assert "optsched/_docs/tests/data/traces/gavel/msr_seed0_0e4a51_head40.trace" in wanted


def test_a_wheel_missing_a_docs_file_fails(tmp_path: Path) -> None:
    smoke = _script()
    root = SCRIPT.parent.parent
    wanted = sorted(smoke.shipped_docs_files(root))
    smoke.check_docs_contents(_wheel(tmp_path / "ok.whl", wanted), root)
    left_out = "optsched/_docs/examples/my_policy.py"
    with pytest.raises(SystemExit):
        smoke.check_docs_contents(
            _wheel(tmp_path / "bad.whl", [n for n in wanted if n != left_out]), root
        )
