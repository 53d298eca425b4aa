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

The packed (space-sharing) rows time Gavel's ``max_min_fairness_packed`` on the inputs its own
microbenchmark builds for packed policies (``sweep_policy_runtimes.generate_input`` with a packed
policy name: every pair of jobs of equal scale factor gets the measured pair rates), against
optsched's ``max-min-packed`` on the same jobs, whose instance (timed with the solve) carries the
job types and the normalised pair table of the job types present. Gavel runs in a child process
capped at ``GAVEL_CAP_SECONDS`` and ``GAVEL_MEMORY_BYTES`` per size; after the first size it does
not finish, larger sizes time optsched alone and say why Gavel was skipped. Gavel's packed
max-min calls ``float()`` on a one-element array, an error under NumPy 2; the child wraps
``ProportionalPolicy.get_throughputs`` to return the same numbers as a flat vector (Gavel's files
are not modified).
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

from optsched.allocation.gavel import (
    Allocation,
    AllocationInstance,
    AllocationJob,
    PairThroughput,
    objective_value,
    packed_objective_value,
    solve,
)

ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` from a clone's root; one level further up from a worktree nested beside clones.
SHARED = next(
    (p / "shared" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared",
)
GAVEL = SHARED / "peers" / "gavel"
THROUGHPUTS = SHARED / "data" / "gavel" / "simulation_throughputs.json"

POLICIES = [
    # (Gavel policy name, optsched policy, objective, maximise?)
    ("max_min_fairness_perf", "max-min-perf", "max-min", True),
    ("finish_time_fairness_perf", "ftf-perf", "ftf", False),
    ("min_total_duration_perf", "makespan-perf", "makespan", False),
]
SIZES = [32, 128, 512, 2048]
QUICK_SIZES = [32, 128]
TRIALS = 3
PACKED_SIZES = [32, 128, 256, 512, 1024, 2048]
#: Gavel's packed policy is given this long per size (then the larger sizes are skipped).
GAVEL_CAP_SECONDS = 600.0
#: ... and this much address space (its job-pair arrays grow as jobs^3: 6.4 GB at 1,024 jobs).
GAVEL_MEMORY_BYTES = 8 * 2**30


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
                throughput_steps_per_s=tuple(float(throughputs[j][t]) for t in types),
                scale_factor=int(scale[j]),
                weight=float(weights[j]),
                steps_remaining=float(steps[j]),
            )
            for j in ids
        ],
    )
    x = np.array([[alloc[j][t] for t in types] for j in ids], dtype=float)
    return inst, x, wall, "|".join(statuses)


def _sweep_module() -> Any:
    path = GAVEL / "scheduler" / "scripts" / "microbenchmarks" / "sweep_policy_runtimes.py"
    spec = importlib.util.spec_from_file_location("sweep_policy_runtimes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gavel_packed_child(n: int, seed: int, conn: Any) -> None:
    """Child process: Gavel's packed max-min on its packed microbenchmark input."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (GAVEL_MEMORY_BYTES, GAVEL_MEMORY_BYTES))
        tg = _load_gavel()
        sw = _sweep_module()
        import proportional  # Gavel's module, on sys.path through time_gavel

        original = proportional.ProportionalPolicy.get_throughputs

        def flat(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(self, *args, **kwargs)
            return None if out is None else out.reshape(-1)

        proportional.ProportionalPolicy.get_throughputs = flat
        oracle = tg.utils.read_all_throughputs_json_v2(str(THROUGHPUTS))
        cluster = {"v100": n // 4, "p100": n // 4, "k80": n // 4}
        name = "max_min_fairness_packed"
        throughputs, jobs, scale = sw.generate_input(n, cluster, name, oracle, False, False, seed)
        weights = {tg.JobIdPair(i, None): jobs[i].priority_weight for i in range(n)}
        policy = tg.utils.get_policy(name, solver="ECOS")
        tg._SOLVES.clear()
        conn.send(("started",))  # the time cap applies to get_allocation alone
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            alloc = policy.get_allocation(throughputs, scale, weights, cluster)
        wall = time.perf_counter() - start
        types = sorted(cluster)
        singles = np.array([[alloc[tg.JobIdPair(i, None)][t] for t in types] for i in range(n)])
        pairs, values = [], []
        for key, row in alloc.items():
            if key.is_pair():
                v = [row[t] for t in types]
                if max(v) > 0:
                    pairs.append((key[0], key[1]))
                    values.append(v)
        statuses = "|".join(sorted({str(x["status"]) for x in tg._SOLVES}))
        conn.send(("ok", wall, statuses, singles, np.array(pairs), np.array(values)))
    except MemoryError:
        conn.send(("failed", f"ran out of its {GAVEL_MEMORY_BYTES / 2**30:.0f} GB memory cap"))
    except Exception as exc:  # reported in the table, never hidden
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))


def _gavel_packed(n: int, seed: int) -> tuple[Any, ...]:
    """Run the child with the time cap; ``("ok", ...)`` or ``("failed", reason)``."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_gavel_packed_child, args=(n, seed, child))
    proc.start()
    child.close()
    out: tuple[Any, ...] = ("failed", "building Gavel's input took longer than the cap")
    try:
        # input generation first (untimed, but bounded), then get_allocation under the cap
        for _ in range(2):
            if not parent.poll(GAVEL_CAP_SECONDS):
                if out[0] == "started":
                    out = ("failed", f"did not finish within {GAVEL_CAP_SECONDS:.0f} s")
                break
            out = parent.recv()
            if out[0] != "started":
                break
    except EOFError:
        out = ("failed", f"died (beyond its {GAVEL_MEMORY_BYTES / 2**30:.0f} GB memory cap?)")
    if proc.is_alive():
        proc.terminate()
    proc.join()
    return out


def _packed_instance(jobs: Any, n: int, oracle: Any) -> AllocationInstance:
    """optsched's instance of Gavel's jobs: job types and the normalised pair table."""
    cluster = {"v100": n // 4, "p100": n // 4, "k80": n // 4}
    types = sorted(cluster)
    keys = [(jobs[i].job_type, jobs[i].scale_factor) for i in range(n)]
    present = sorted(set(keys))
    pairs = []
    for ia, ka in enumerate(present):
        for kb in present[ia:]:
            if ka[1] != kb[1]:
                continue
            factors = []
            for t in types:
                rate = oracle[t][ka].get(kb)
                alone_a, alone_b = oracle[t][ka]["null"], oracle[t][kb]["null"]
                if rate is None or min(rate[0], rate[1], alone_a, alone_b) <= 0:
                    factors.append((0.0, 0.0))
                    continue
                fa, fb = rate[0] / alone_a, rate[1] / alone_b
                if ka == kb:
                    fa = fb = min(fa, fb)
                factors.append((fa, fb))
            if any(fa > 0 for fa, _ in factors):
                pairs.append(
                    PairThroughput(job_types=(str(ka), str(kb)), normalized=tuple(factors))
                )
    return AllocationInstance(
        gpu_types=tuple(types),
        capacity=tuple(cluster[t] for t in types),
        jobs=tuple(
            AllocationJob(
                job_id=str(i),
                throughput_steps_per_s=tuple(float(oracle[t][keys[i]]["null"]) for t in types),
                scale_factor=int(keys[i][1]),
                weight=float(jobs[i].priority_weight),
                job_type=str(keys[i]),
            )
            for i in range(n)
        ),
        pair_throughputs=tuple(pairs),
    )


def _packed_rows(tg: Any, oracle: Any, quick: bool) -> tuple[list[list[Any]], list[str]]:
    """Rows of ``max-min-packed`` vs Gavel's ``max_min_fairness_packed`` (module notes)."""
    rows: list[list[Any]] = []
    notes: list[str] = []
    skip: str | None = None
    for n in QUICK_SIZES if quick else PACKED_SIZES:
        seed = 2  # Gavel's first trial
        ours, solves, value = [], 0, math.nan
        cluster = {"v100": n // 4, "p100": n // 4, "k80": n // 4}
        _, jobs, _ = tg.generate_input(n, cluster, oracle, seed)  # Gavel's jobs, no pair dict
        for _ in range(1 if quick else TRIALS):
            start = time.perf_counter()
            inst = _packed_instance(jobs, n, oracle)
            res = solve(inst, "max-min-packed")
            ours.append(time.perf_counter() - start)
            solves, value = res.extra["lp_solves"], float(res.objective or 0.0)
        o = statistics.median(ours)
        if skip is not None:
            print(f"max-min-packed at {n} jobs: Gavel skipped ({skip})", file=sys.stderr)
            rows.append(["max-min-packed", n, None, o, None, solves, f"skipped: {skip}", None])
            continue
        out = _gavel_packed(n, seed)
        if out[0] != "ok":
            skip = f"Gavel {out[1]} at {n} jobs"
            print(f"max-min-packed at {n} jobs: {skip}", file=sys.stderr)
            rows.append(["max-min-packed", n, None, o, None, solves, f"failed: {out[1]}", None])
            continue
        _, wall, status, singles, pairs, values = out
        k = len(inst.gpu_types)
        alloc = Allocation(
            job_ids=tuple(j.job_id for j in inst.jobs),
            gpu_types=inst.gpu_types,
            fractions=np.clip(singles, 0, 1),
            pairs=pairs.reshape(-1, 2).astype(np.int64),
            pair_fractions=np.clip(values.reshape(-1, k), 0, 1),
        )
        theirs = packed_objective_value(inst, alloc, "max-min")
        diff = (value - theirs) / abs(theirs) if theirs else 0.0
        rows.append(["max-min-packed", n, wall, o, wall / o, solves, status, diff])
    notes.append(
        "max-min-packed: Gavel timed once per size (seed 2) in a child process capped at "
        f"{GAVEL_CAP_SECONDS:.0f} s and {GAVEL_MEMORY_BYTES / 2**30:.0f} GB; optsched's time "
        "includes building its instance (job types, pair table) from Gavel's inputs."
    )
    return rows, notes


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
    packed_rows, packed_notes = _packed_rows(tg, oracle, quick)
    rows += packed_rows
    notes += packed_notes
    finished = [r for r in packed_rows if r[4] is not None]
    if finished:
        summary["max-min-packed speed-up at the largest size Gavel finishes"] = finished[-1][4]
        summary["max-min-packed: largest size Gavel finishes"] = finished[-1][1]
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
