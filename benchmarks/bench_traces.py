"""Reading the ten ElasticFlow/ITP cluster traces (69,351 jobs): rows per second.

Each reader streams its file line by line through the guarded boundary and checks every field
(finite, in range, whole where it must be, unique ids) before the job table is built and
validated again as a whole. The table compares, in one run: optsched's reader on every cluster;
the normalized CSV of the same jobs (write, then read back); and ``pandas.read_csv`` of the raw
files, which parses without any of the checks (the reference speed of a C tokenizer). Peak memory
is the Python heap traced while reading everything.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pandas as pd

from optsched.traces import read_trace, write_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = next(
    (p / "shared" / "data" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "data",
)
REPEATS, QUICK_REPEATS = 3, 1


def _best(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def run(quick: bool = False) -> dict[str, Any]:
    files = sorted((SHARED / "elasticflow").glob("cluster*.csv"))
    if not files:
        return {
            "name": "bench_traces",
            "title": "Trace readers",
            "description": __doc__,
            "columns": ["file", "jobs", "seconds", "rows/s"],
            "rows": [],
            "notes": [f"skipped: {SHARED / 'elasticflow'} is not present"],
        }
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

    tracemalloc.start()
    kept = [read_trace(p) for p in files]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return {
        "name": "bench_traces",
        "title": "Trace readers: the ten ElasticFlow clusters",
        "description": __doc__,
        "columns": ["file", "jobs", "seconds", "rows/s"],
        "rows": rows,
        "summary": {
            "jobs": total_jobs,
            "read seconds (all ten)": round(total_s, 3),
            "rows per second": round(total_jobs / total_s),
            "checked reader / pandas.read_csv time": round(total_s / pandas_s, 2),
            "peak traced heap MB": round(peak / 2**20, 1),
        },
        "notes": [f"best of {repeats} runs per row"],
    }


if __name__ == "__main__":
    result = run(quick=False)
    for row in result["rows"]:
        print(row)
    print(result["summary"])
