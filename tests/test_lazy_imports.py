"""Heavy libraries load when first used: what importing the simulator and the CLI brings in.

Importing ``optsched.sim`` once cost 1.4 CPU s here because SciPy, Numba, pandas and pyarrow
came with it. Each check runs in a fresh interpreter and reads ``sys.modules``, so it does not
depend on the machine's speed. The packages that re-export their heavy modules lazily (module
``__getattr__``, :mod:`optsched._lazy`) must still give every name of their ``__all__``, the
object its defining module holds.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

from optsched._lazy import EXPORTS

#: Libraries that cost 0.1 to 0.5 CPU s each to import and that the simulator's core never uses.
HEAVY = ("scipy", "numba", "pyarrow", "pandas", "cvxpy", "pyomo", "highspy", "jax", "networkx")

#: The packages whose heavy re-exports are lazy.
LAZY_PACKAGES = (
    "optsched.allocation",
    "optsched.allocation.gavel",
    "optsched.comm",
    "optsched.online",
    "optsched.sim",
    "optsched.sim.policies",
    "optsched.solvers",
    "optsched.traces",
)


def _loaded(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code``."""
    found = f"','.join(m for m in {modules!r} if m in sys.modules)"
    probe = f"{code}\nimport sys\nprint('loaded:' + {found})\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=600
    )
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout
    return [m for m in last.removeprefix("loaded:").split(",") if m]


@pytest.mark.parametrize(
    "code",
    [
        "import optsched",
        "import optsched.sim",
        "from optsched.sim import *",
        "import optsched.cli",
        "from optsched.sim.policies import make_policy\nmake_policy('fifo')",
        "import optsched.sim.policies\noptsched.sim.policies.Tiresias",
        "import optsched.traces.schema, optsched.traces._rows",
        "import optsched.allocation.gavel.lp",
        "import optsched.online.aonline",
    ],
)
def test_no_heavy_library_at_import(code: str) -> None:
    assert _loaded(code) == []


@pytest.mark.parametrize("argv", [["--help"], ["sim", "--help"], ["sim", "run", "--help"]])
def test_the_command_line_help_loads_no_heavy_library(argv: list[str]) -> None:
    code = (
        "from optsched.cli import main\n"
        "import sys\n"
        f"sys.argv = ['optsched', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    assert _loaded(code) == []


#: What simulating needs not: the exact models, the bounds, the comparison and their solver layer.
NOT_FOR_SIMULATING = (
    "optsched.sim.comparison",
    "optsched.sim.optimum",
    "optsched.sim.family",
    "optsched.solvers.matrix",
)


def test_simulating_loads_neither_the_optimum_nor_the_comparison() -> None:
    # ``import optsched.sim`` itself loads no module of the simulator; simulating loads the
    # world, the engine and the policies, and the comparison is loaded when asked for.
    assert _loaded("import optsched.sim", ("numpy", "pydantic", "optsched.sim.engine")) == []
    code = "from optsched.sim import simulate, World, generate_instance, validate"
    assert _loaded(code, NOT_FOR_SIMULATING) == []
    assert _loaded("from optsched.sim import compare", NOT_FOR_SIMULATING[:2]) == list(
        NOT_FOR_SIMULATING[:2]
    )


def test_a_policy_loads_its_library_when_made() -> None:
    # The probe sees a lazy import happen (so an empty list above is not a blind probe).
    code = "from optsched.sim.policies import make_policy\nmake_policy('allox')"
    assert "scipy" in _loaded(code)
    assert _loaded("from optsched.traces import read_trace") == ["pyarrow", "pandas"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_exported_name_is_its_definition(package: str) -> None:
    pkg = importlib.import_module(package)
    # Import every submodule first: a lazy name that is also a submodule's name would then be
    # bound to the submodule, and read as such.
    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{package}.{info.name}")
    exports = EXPORTS[package]
    for name, target in exports.items():
        module, _, attr = target.partition(":")
        source = importlib.import_module(module)
        expected = source if module == f"{package}.{name}" else getattr(source, attr or name)
        assert getattr(pkg, name) is expected, name
    listed = dir(pkg)
    for name in pkg.__all__:
        assert name in listed, name
        assert hasattr(pkg, name), name
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert set(pkg.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import optsched.traces

    assert not hasattr(optsched.traces, "no_such_name")
    with pytest.raises(ImportError):
        exec("from optsched.allocation import no_such_name", {})


def test_the_trace_table_entries_reach_the_readers(tmp_path) -> None:
    from optsched.traces import Trace, generate_trace

    trace = generate_trace(5, seed=1)
    path = tmp_path / "t.csv"
    trace.save(path)
    assert Trace.load(path).equals(trace)
    assert trace.info()["jobs"] == 5
