"""Import time: CPU seconds of ``import optsched``, ``import optsched.sim``, the CLI and its help.

Every command line of ``optsched`` and every script that simulates pays for the imports first, so
SciPy, Numba, pandas, pyarrow and the solvers load only where they are used (module
``__getattr__`` in the package ``__init__`` files, imports inside the functions that need them).
Each case runs in a fresh interpreter; its CPU time (user + system, of that child alone:
``os.wait4``) is the median of a few runs, interpreter start included (the ``python -c pass``
row shows that part). Bytecode is compiled once into a temporary cache
(``PYTHONPYCACHEPREFIX``) by a first, uncounted run of each case, as an installed package has
it; the counted runs read it. CPU time, not wall time, is judged: the load of a shared machine
inflates the latter. The last column lists which of the heavy libraries the case loaded.

``import optsched.sim`` loads no module of the simulator (its names load on first use); the
row ``from optsched.sim import simulate, World, validate`` is what a script that simulates
pays, and ``import numpy`` alone is the part of it no import order can avoid.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REPEATS, QUICK_REPEATS = 7, 3

#: The libraries whose import is worth avoiding (each costs 0.1 to 0.5 CPU s here).
HEAVY = (
    "scipy",
    "scipy.optimize",
    "numba",
    "pandas",
    "pyarrow",
    "cvxpy",
    "pyomo",
    "highspy",
    "jax",
    "networkx",
    "matplotlib",
)

_CLI = "import sys; from optsched.cli import main; sys.argv = ['optsched', {args}]; main()"

#: name -> the code the child runs.
CASES: dict[str, str] = {
    "python -c pass (interpreter start)": "pass",
    "import optsched": "import optsched",
    "import numpy (every simulation needs it)": "import numpy",
    "import optsched.sim": "import optsched.sim",
    "from optsched.sim import simulate, World, validate": (
        "from optsched.sim import simulate, World, validate"
    ),
    "from optsched.sim import compare": "from optsched.sim import compare",
    "import optsched.cli": "import optsched.cli",
    "optsched --help": _CLI.format(args="'--help'"),
    "optsched sim --help": _CLI.format(args="'sim', '--help'"),
}

# Printed by the child at exit (its stdout is otherwise discarded): the heavy modules it loaded.
_REPORT = """
import atexit as _atexit, sys as _sys
def _heavy():
    _sys.__stdout__.write("\\nHEAVY:" + ",".join(m for m in {heavy!r} if m in _sys.modules) + "\\n")
_atexit.register(_heavy)
"""


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONPYCACHEPREFIX"] = cache
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(code: str, env: dict[str, str]) -> tuple[float, float, list[str]]:
    """CPU seconds (user + system) and wall seconds of one fresh interpreter running ``code``.

    Also the heavy libraries it loaded. The CPU time is the child's own (``os.wait4``), not the
    parent's nor another child's.
    """
    script = _REPORT.format(heavy=HEAVY) + code
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{code!r} exited with {proc.returncode}")
    heavy = next((ln[6:] for ln in reversed(out.splitlines()) if ln.startswith("HEAVY:")), "")
    return usage.ru_utime + usage.ru_stime, wall, [m for m in heavy.split(",") if m]


def run(quick: bool = False) -> dict[str, Any]:
    repeats = QUICK_REPEATS if quick else REPEATS
    rows: list[list[Any]] = []
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="optsched-bench-import-") as cache:
        env = _env(cache)
        for name, code in CASES.items():
            measure(code, env)  # compiles the bytecode into the cache; not counted
            runs = [measure(code, env) for _ in range(repeats)]
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            heavy = runs[-1][2]
            rows.append([name, cpu, min(r[0] for r in runs), wall, ", ".join(heavy) or "none"])
            summary[f"{name}: CPU s (median)"] = cpu
    return {
        "name": "bench_import",
        "title": "Import time: optsched, the simulator and the command line",
        "description": __doc__,
        "columns": ["case", "CPU s (median)", "CPU s (min)", "wall s (median)", "heavy loaded"],
        "rows": rows,
        "summary": summary,
        "notes": [f"median of {repeats} fresh interpreters per case, after one uncounted run"],
    }


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv)
    for row in result["rows"]:
        print(row)
