"""Trace readers: a million-row normalized CSV (info and convert), and the ten ElasticFlow clusters.

**A million rows.** A 1,000,000-job normalized CSV is generated in a temporary directory, then
``trace info`` and ``trace convert`` are timed in one run, each in a fresh process so that its
peak resident memory (``ru_maxrss``) is its own: through the library (``read_trace`` then
``Trace.info`` / ``write_trace``) and through the command line (the whole command, interpreter
start and imports included). The reference is the previous default path on the same file
(``engine="python"``: lines split in Python, numbers parsed one by one, Python strings for every
field); ``engine="rows"`` (the row reader alone, the authority on errors) is timed too. The
budget row shows a file over ``max_trace_rows`` refused before anything is stored.

**ElasticFlow/ITP.** Each reader streams its file line by line through the guarded boundary and
checks every field (finite, in range, whole where it must be, unique ids) before the job table is
built and validated again as a whole. The table compares, in one run: optsched's reader on every
cluster; the normalized CSV of the same jobs (write, then read back); and ``pandas.read_csv`` of
the raw files, which parses without any of the checks (the reference speed of a C tokenizer).
Peak memory is the Python heap traced while reading everything (tracemalloc) beside the
process's resident peak while reading everything (VmHWM reset before it; ``_measure.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pandas as pd

from optsched.traces import read_trace, write_trace

if str(Path(__file__).resolve().parent) not in sys.path:
    # the shared helpers beside this file, also when it is loaded by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import rss_peak

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = next(
    (p / "shared" / "data" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "data",
)
REPEATS, QUICK_REPEATS = 3, 1
BIG_ROWS, QUICK_BIG_ROWS = 1_000_000, 100_000

# The process's own high-water mark: VmHWM starts afresh at exec, whereas ru_maxrss keeps the
# parent's peak across fork and exec.
_PEAK = """
def _peak_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

# Run in a fresh interpreter: prints {"seconds": ..., "peak_mb": ...} for one library call.
_LIBRARY = """
import json, sys, time
from optsched.traces import read_trace, write_trace
from optsched.traces.normalized import read_normalized
what, engine, path, out = sys.argv[1:5]
start = time.perf_counter()
trace = read_normalized(path, engine=engine)
if what == "info":
    trace.info()
else:
    write_trace(trace, out)
seconds = time.perf_counter() - start
peak = _peak_mb()
print(json.dumps({"seconds": seconds, "peak_mb": peak, "jobs": len(trace)}))
"""

# The whole command: interpreter start, imports, reading, printing.
_CLI = """
import json, sys, time
start = time.perf_counter()
from optsched.cli import main
code = main(sys.argv[1:])
seconds = time.perf_counter() - start
peak = _peak_mb()
print(json.dumps({"seconds": seconds, "peak_mb": peak, "code": code}), file=sys.stderr)
"""

_GENERATE = """
import json, sys
from optsched.traces import generate_trace, write_trace
write_trace(generate_trace(int(sys.argv[2]), seed=11, deadline_fraction=0.1), sys.argv[1])
print(json.dumps({}))
"""

_BUDGET = """
import json, sys, time
from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces import read_trace
start = time.perf_counter()
try:
    with limits.override(max_trace_rows=int(sys.argv[2])):
        read_trace(sys.argv[1])
    refused = False
except InvalidInstanceError as exc:
    refused = exc.field == "<file>" and "max_trace_rows" in str(exc)
seconds = time.perf_counter() - start
peak = _peak_mb()
print(json.dumps({"seconds": seconds, "peak_mb": peak, "refused": refused}))
"""


def _best(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _child(script: str, *args: str, stderr: bool = False) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter; its last JSON line (stdout or stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK + script, *args],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
        timeout=3600,
    )
    text = done.stderr if stderr else done.stdout
    return json.loads(text.strip().splitlines()[-1])


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _measure(script: str, args: list[str], repeats: int, stderr: bool = False) -> dict[str, float]:
    runs = [_child(script, *args, stderr=stderr) for _ in range(repeats)]
    seconds = [r["seconds"] for r in runs]
    peaks = [r["peak_mb"] for r in runs]
    return {"min_s": min(seconds), "median_s": _median(seconds), "peak_mb": max(peaks)}


def million(quick: bool = False) -> dict[str, Any]:
    """``trace info`` / ``trace convert`` of a generated normalized CSV: time and peak memory."""
    rows_n = QUICK_BIG_ROWS if quick else BIG_ROWS
    repeats = 1 if quick else REPEATS
    rows: list[list[Any]] = []
    summary: dict[str, Any] = {"jobs": rows_n}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        # generated in a child, so that this process stays small while it measures others
        _child(_GENERATE, str(path), str(rows_n))
        out = str(Path(tmp) / "out.csv")
        size_mb = path.stat().st_size / 2**20
        results: dict[tuple[str, str], dict[str, float]] = {}
        for what in ("info", "convert"):
            for engine, reps in (("arrow", repeats), ("python", 1), ("rows", 1)):
                got = _measure(_LIBRARY, [what, engine, str(path), out], reps)
                results[(what, engine)] = got
                label = {"arrow": "pyarrow pass", "python": "previous path (reference)",
                         "rows": "row reader"}[engine]  # fmt: skip
                rows.append([f"library {what}", label, got["min_s"], got["median_s"],
                             got["peak_mb"], rows_n / got["min_s"]])  # fmt: skip
            args = ["trace", "info", str(path), "--json"] if what == "info" else [
                "trace", "convert", str(path), out]  # fmt: skip
            got = _measure(_CLI, args, repeats, stderr=True)
            results[(what, "cli")] = got
            rows.append([f"optsched trace {what}", "command (imports included)", got["min_s"],
                         got["median_s"], got["peak_mb"], rows_n / got["min_s"]])  # fmt: skip
            ref = results[(what, "python")]
            fast = results[(what, "arrow")]
            summary[f"{what}: previous path / pyarrow pass, time"] = round(
                ref["min_s"] / fast["min_s"], 2
            )
            summary[f"{what}: previous path / pyarrow pass, peak memory"] = round(
                ref["peak_mb"] / fast["peak_mb"], 2
            )
            summary[f"optsched trace {what}: median s"] = round(got["median_s"], 2)
            summary[f"optsched trace {what}: peak MiB"] = round(got["peak_mb"], 1)
        budget = _child(_BUDGET, str(path), str(rows_n // 10))
        seconds = budget["seconds"]
        rows.append(["refused over max_trace_rows", f"budget {rows_n // 10:,}", seconds,
                     seconds, budget["peak_mb"], float("nan")])  # fmt: skip
        summary["over-budget file refused"] = bool(budget["refused"])
    return {
        "columns": ["what", "path", "min s", "median s", "peak RSS MiB", "rows/s"],
        "rows": rows,
        "summary": summary,
        "notes": [
            f"{rows_n:,} jobs, {size_mb:.0f} MB of CSV; pyarrow pass and command: min and "
            f"median of {repeats} runs, previous path and row reader: 1 run",
            "peak RSS (VmHWM, MiB) of the measuring process: a fresh interpreter per run, "
            "imports included",
        ],
    }


def clusters(quick: bool = False) -> dict[str, Any] | None:
    """The ten ElasticFlow clusters (None when the shared data is not present)."""
    files = sorted((SHARED / "elasticflow").glob("cluster*.csv"))
    if not files:
        return None
    repeats = QUICK_REPEATS if quick else REPEATS
    rows: list[list[Any]] = []
    total_jobs, total_s = 0, 0.0
    traces = []
    for path in files:
        seconds, trace = _best(lambda p=path: read_trace(p), repeats)
        traces.append(trace)
        total_jobs += len(trace)
        total_s += seconds
        rows.append([path.name, len(trace), round(seconds, 4), round(len(trace) / seconds)])
    rows.append(
        ["all ten (optsched reader)", total_jobs, round(total_s, 3), round(total_jobs / total_s)]
    )

    pandas_s, _ = _best(lambda: sum(len(pd.read_csv(p)) for p in files), repeats)
    rows.append(["all ten (pandas.read_csv, no checks)", total_jobs, round(pandas_s, 3),
                 round(total_jobs / pandas_s)])  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"{i}.csv" for i in range(len(traces))]
        write_s, _ = _best(
            lambda: [write_trace(t, o) for t, o in zip(traces, outs, strict=True)], repeats
        )
        norm_s, back = _best(lambda: [read_trace(o) for o in outs], repeats)
        assert all(b.equals(t) for b, t in zip(back, traces, strict=True))
    rows.append(["all ten, write normalized CSV", total_jobs, round(write_s, 3),
                 round(total_jobs / write_s)])  # fmt: skip
    rows.append(["all ten, read normalized CSV", total_jobs, round(norm_s, 3),
                 round(total_jobs / norm_s)])  # fmt: skip

    with rss_peak() as resident:
        kept = [read_trace(p) for p in files]
        del kept
    tracemalloc.start()
    kept = [read_trace(p) for p in files]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return {
        "rows": rows,
        "summary": {
            "jobs": total_jobs,
            "read seconds (all ten)": round(total_s, 3),
            "rows per second": round(total_jobs / total_s),
            "checked reader / pandas.read_csv time": round(total_s / pandas_s, 2),
            "peak traced heap MB": round(peak / 2**20, 1),
            "peak resident MiB (reading all ten)": (
                round(resident.mib, 1) if resident.fresh else f"<= {resident.mib:.1f}"
            ),
            "resident MiB before reading": round(resident.base, 1),
        },
        "notes": [f"best of {repeats} runs per row"],
    }


def run(quick: bool = False) -> dict[str, Any]:
    big = million(quick)
    rows = [["(a million rows)", *row] for row in big["rows"]]
    summary = dict(big["summary"])
    notes = list(big["notes"])
    elastic = clusters(quick)
    if elastic is None:
        notes.append(f"ElasticFlow clusters skipped: {SHARED / 'elasticflow'} is not present")
    else:
        rows += [
            ["(ElasticFlow)", f"{r[0]} ({r[1]:,} jobs)", "read", r[2], r[2], float("nan"), r[3]]
            for r in elastic["rows"]
        ]
        summary.update({f"ElasticFlow {k}": v for k, v in elastic["summary"].items()})
        notes += elastic["notes"]
    return {
        "name": "bench_traces",
        "title": "Trace readers: a million-row normalized CSV, and the ElasticFlow clusters",
        "description": __doc__,
        "columns": ["set", *big["columns"]],
        "rows": rows,
        "summary": summary,
        "notes": notes,
    }


if __name__ == "__main__":
    result = run(quick=False)
    for row in result["rows"]:
        print(row)
    print(result["summary"])
