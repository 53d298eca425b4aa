"""Allocation LPs: optsched (sparse matrices into HiGHS) vs Gavel's own policy code, same inputs.

Inputs are built the way Gavel's policy microbenchmark builds them (Gavel's ``utils.generate_job``
with ``random.Random(trial + 2)``, throughputs from ``simulation_throughputs.json``, N/4 GPUs each
of v100, p100 and k80, single-GPU jobs), through the unmodified Gavel code in
``../shared/peers/gavel`` (skipped with a printed reason when it is absent). Both sides run in this
process, one after the other, on the very same throughputs; the ratio is Gavel's time over ours.

Objectives are compared on Gavel's own allocation, re-evaluated with optsched's definitions:
``rel. diff`` is (ours - Gavel's) / |Gavel's| in the direction where positive means optsched is
better. Gavel's min-total-duration bisects its makespan only to 5 %, so a positive difference is
expected there; for the other two policies both solve the same convex program.

Columns: ``policy``, ``jobs``, ``gavel (s)`` (median), ``optsched (s)`` (median), ``speed-up``,
``LP solves`` (ours), ``gavel status``, ``rel. diff``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from optsched.allocation import AllocationInstance, AllocationJob, objective_value, solve

ROOT = Path(__file__).resolve().parents[1]
GAVEL = ROOT.parent / "shared" / "peers" / "gavel"
THROUGHPUTS = ROOT.parent / "shared" / "data" / "gavel" / "simulation_throughputs.json"

POLICIES = [
    # (Gavel policy name, optsched policy, objective, maximise?)
    ("max_min_fairness_perf", "max-min-perf", "max-min", True),
    ("finish_time_fairness_perf", "ftf-perf", "ftf", False),
    ("min_total_duration_perf", "makespan-perf", "makespan", False),
]
SIZES = [32, 128, 512, 2048]
QUICK_SIZES = [32, 128]
TRIALS = 3


def _load_gavel() -> Any:
    spec = importlib.util.spec_from_file_location("time_gavel", GAVEL / "time_gavel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(module)
    return module


def _gavel_call(tg: Any, name: str, n: int, oracle: Any, seed: int) -> tuple[Any, ...]:
    cluster = {"v100": n // 4, "p100": n // 4, "k80": n // 4}
    throughputs, jobs, scale = tg.generate_input(n, cluster, oracle, seed)
    policy = tg.utils.get_policy(name, solver="ECOS")
    ids = [tg.JobIdPair(i, None) for i in range(n)]
    weights = {j: jobs[j[0]].priority_weight for j in ids}
    steps = {j: jobs[j[0]].total_steps for j in ids}
    tg._SOLVES.clear()
    sink = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        if name.startswith("max_min"):
            alloc = policy.get_allocation(throughputs, scale, weights, cluster)
        elif name.startswith("min_total"):
            alloc = policy.get_allocation(throughputs, scale, steps, cluster)
        else:
            since = {j: 0.0 for j in ids}
            alloc = policy.get_allocation(throughputs, scale, weights, since, steps, cluster)
    wall = time.perf_counter() - start
    statuses = sorted({s["status"] for s in tg._SOLVES})
    types = sorted(cluster)
    inst = AllocationInstance(
        gpu_types=tuple(types),
        capacity=tuple(cluster[t] for t in types),
        jobs=[
            AllocationJob(
                job_id=str(j[0]),
                throughput=tuple(float(throughputs[j][t]) for t in types),
                scale_factor=int(scale[j]),
                weight=float(weights[j]),
                steps_remaining=float(steps[j]),
            )
            for j in ids
        ],
    )
    x = np.array([[alloc[j][t] for t in types] for j in ids], dtype=float)
    return inst, x, wall, "|".join(statuses)


def run(quick: bool = False) -> dict[str, Any]:
    rows: list[list[Any]] = []
    notes: list[str] = []
    summary: dict[str, Any] = {}
    if not (GAVEL / "time_gavel.py").exists() or not THROUGHPUTS.exists():
        reason = f"Gavel's code or throughputs not found beside the project ({GAVEL})"
        print(f"skipped: {reason}", file=sys.stderr)
        return {
            "name": "bench_allocation",
            "title": "Allocation LPs vs Gavel",
            "description": __doc__.split("\n\n")[0],
            "columns": ["policy"],
            "rows": [],
            "notes": [f"skipped: {reason}"],
        }
    tg = _load_gavel()
    oracle = tg.utils.read_all_throughputs_json_v2(str(THROUGHPUTS))
    _gavel_call(tg, "max_min_fairness_perf", 8, oracle, 0)  # imports and caches, untimed
    sizes = QUICK_SIZES if quick else SIZES
    for gavel_name, ours, objective, maximise in POLICIES:
        for n in sizes:
            gavel_times, our_times, diffs, statuses, solves = [], [], [], set(), 0
            for trial in range(1 if quick else TRIALS):
                inst, x_gavel, wall, status = _gavel_call(tg, gavel_name, n, oracle, trial + 2)
                gavel_times.append(wall)
                statuses.add(status)
                start = time.perf_counter()
                res = solve(inst, ours)
                our_times.append(time.perf_counter() - start)
                solves = res.extra["lp_solves"]
                theirs = objective_value(inst, np.clip(x_gavel, 0, 1), objective)
                mine = float(res.objective or 0.0)
                if math.isfinite(theirs) and theirs != 0:
                    diff = (mine - theirs) / abs(theirs)
                    diffs.append(diff if maximise else -diff)
            g, o = statistics.median(gavel_times), statistics.median(our_times)
            rows.append(
                [ours, n, g, o, g / o, solves, "|".join(sorted(statuses)), max(diffs, default=0)]
            )
            summary[f"{ours} speed-up at {n}"] = g / o
    notes.append(
        "rel. diff > 0: optsched's objective is better than Gavel's on Gavel's own allocation "
        "(re-evaluated with optsched's definitions); |rel. diff| <= 1e-6 means equal."
    )
    return {
        "name": "bench_allocation",
        "title": "Allocation LPs: optsched (HiGHS matrices) vs Gavel (cvxpy + ECOS)",
        "description": __doc__.split("\n\n")[0],
        "columns": [
            "policy",
            "jobs",
            "gavel (s)",
            "optsched (s)",
            "speed-up",
            "LP solves",
            "gavel status",
            "rel. diff",
        ],
        "rows": rows,
        "summary": summary,
        "notes": notes,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, default=str))
