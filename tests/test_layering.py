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
        ("runs/x.py", "from optsched.sim.engine.core import simulate\n", False),
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


def module_edges(root: Path) -> dict[str, dict[str, int]]:
    """Every optsched module's imports of other optsched modules, each with a line.

    An import counts wherever it stands (module level, in a function, under ``TYPE_CHECKING``):
    a circle of lazy or annotation-only imports is still two modules that cannot be read, moved
    or tested one without the other. ``from pkg import name`` depends on ``pkg.name`` when that
    is a module and on ``pkg`` otherwise; a dotted name depends on its longest module prefix.
    """
    modules = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.stem == "__init__" else module.rpartition(".")[0]
        out: dict[str, int] = {}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    name = f"{source}.{alias.name}"
                    targets.append(name if name in modules else source)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module and target.startswith("optsched"):
                    out.setdefault(target, node.lineno)
        edges[module] = out
    return edges


def circles(root: Path) -> list[list[str]]:
    """The import circles: strongly connected sets of two or more modules (Tarjan's algorithm)."""
    import networkx as nx

    graph = nx.DiGraph()
    for module, targets in module_edges(root).items():
        graph.add_node(module)
        graph.add_edges_from((module, t) for t in targets)
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


#: The circles still to break, each with its plan (a ratchet: a new circle fails the test, and
#: so does a listed one that is gone, so that the list only shrinks). Empty: optsched has none.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def test_no_import_circle_anywhere() -> None:
    edges = module_edges(ROOT)
    found = [c for c in circles(ROOT) if frozenset(c) not in KNOWN_CIRCLES]
    gone = [sorted(c) for c in KNOWN_CIRCLES if sorted(c) not in circles(ROOT)]
    assert not gone, f"broken circles still listed in KNOWN_CIRCLES (remove them): {gone}"
    lines = []
    for circle in found:
        members = set(circle)
        lines.append(" <-> ".join(circle))
        lines += [
            f"    {a} -> {b} (line {edges[a][b]})" for a in circle for b in edges[a] if b in members
        ]
    assert not found, f"{len(found)} import circle(s):\n" + "\n".join(lines)


@pytest.mark.parametrize(
    ("files", "circle"),
    [
        ({"a.py": "from optsched import b\n", "b.py": "import optsched.a\n"}, True),
        ({"a.py": "def f():\n    from optsched.b import x\n", "b.py": "from .a import y\n"}, True),
        (
            {
                "a.py": "import typing\nif typing.TYPE_CHECKING:\n    import optsched.b\n",
                "b.py": "from optsched.a import y\n",
            },
            True,
        ),
        ({"a.py": "from optsched.b import x\n", "b.py": "import numpy\n"}, False),
        # a submodule named through its package depends on the submodule, not the package
        (
            {
                "__init__.py": "from optsched.a import x\n",
                "a.py": "from optsched import b\n",
                "b.py": "",
            },
            False,
        ),
    ],
)
def test_the_circle_finder_sees_every_kind_of_import(
    tmp_path: Path, files: dict[str, str], circle: bool
) -> None:
    root = tmp_path / "optsched"
    root.mkdir()
    (root / "__init__.py").touch()
    for name, source in files.items():
        (root / name).write_text(source, encoding="utf-8")
    assert bool(circles(root)) is circle
