"""The package's layers, checked statically on every source file.

The layers, lowest first: the model packages (``online``, ``comm``, ``allocation``,
``placement``, ``interference``, ``sim``, ``traces``, ``solvers``, ``family``, ``models`` and the
shared base modules), then ``runs`` (the run store and the sweeps), then ``report`` (tables and
plots), then ``cli``. A module may import its own layer and those below it, never one above: a
model package imports neither ``runs``, ``report`` nor ``cli``; ``runs`` may import the models;
``report`` the models and ``runs``; ``cli`` everything.

Every import is found by walking each file's syntax tree: module-level, function-level, under
``TYPE_CHECKING``, relative (resolved against the file's package), ``from optsched import x``
(resolved to the submodule ``optsched.x``), and ``importlib.import_module("...")`` /
``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "optsched"

#: Rank of each upper layer; every other optsched module is a model module (rank 0).
RANKS = {"runs": 1, "report": 2, "cli": 3}
NAMES = {0: "a model package", 1: "runs", 2: "report", 3: "cli"}


def rank(module: str) -> int:
    """The layer of a dotted ``optsched...`` module name."""
    parts = module.split(".")
    return RANKS.get(parts[1], 0) if len(parts) > 1 else 0


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every ``optsched`` module named by an import in ``source``, with its line."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # ``from optsched import runs`` / ``from optsched.report import oasis``: the names
            # may be submodules; a name that is not one resolves to its package's layer anyway.
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (
                name in ("import_module", "__import__")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.lineno, node.args[0].value))
    return [(line, t) for line, t in found if t == "optsched" or t.startswith("optsched.")]


def violations(root: Path) -> list[str]:
    """``file:line: module imports target`` for every import of a higher layer."""
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        own = rank(module)
        for line, target in imports(
            path.read_text(encoding="utf-8"), module, path.stem == "__init__"
        ):
            if rank(target) > own:
                out.append(
                    f"{path.relative_to(root.parent)}:{line}: {module} ({NAMES[own]}) imports "
                    f"{target} ({NAMES[rank(target)]})"
                )
    return out


def test_the_layers_are_as_listed() -> None:
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert set(RANKS) <= packages
    # The model packages the rule names exist (a rename would silently empty the check).
    models = {"online", "comm", "allocation", "placement", "interference", "sim", "traces"}
    assert models | {"solvers"} <= packages


def test_no_module_imports_a_higher_layer() -> None:
    found = violations(ROOT)
    assert not found, "layering violations:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("where", "source", "bad"),
    [
        ("sim/x.py", "from optsched.runs.sim_sweep import sweep\n", True),
        ("sim/x.py", "def f():\n    import optsched.report.oasis\n", True),
        ("sim/x.py", "if TYPE_CHECKING:\n    from optsched.cli import main\n", True),
        ("sim/policies/x.py", "from ...runs import store\n", True),
        ("sim/x.py", "from optsched import report\n", True),
        ("sim/x.py", "import importlib\nimportlib.import_module('optsched.runs.driver')\n", True),
        ("runs/x.py", "from optsched.report.oasis import sweep_table\n", True),
        ("report/x.py", "from optsched.cli.common import err_console\n", True),
        ("sim/x.py", "from optsched.allocation.gavel import solve\nfrom . import engine\n", False),
        ("runs/x.py", "from optsched.sim.engine import simulate\n", False),
        ("report/x.py", "from optsched.runs.store import RunStore\n", False),
        ("cli/x.py", "from optsched.report.pace import plot_speedup\n", False),
    ],
)
def test_the_checker_sees_every_kind_of_import(
    tmp_path: Path, where: str, source: str, bad: bool
) -> None:
    root = tmp_path / "optsched"
    path = root / where
    path.parent.mkdir(parents=True)
    for parent in [path.parent, *path.parent.parents]:
        if parent == tmp_path:
            break
        (parent / "__init__.py").touch()
    path.write_text(source, encoding="utf-8")
    assert bool(violations(root)) is bad
