"""Per-round allocation time inside a simulation of the largest ElasticFlow trace.

Trace: the ElasticFlow cluster trace with the most jobs (``../shared/data/elasticflow/
cluster*.csv``, by row count: ``cluster04``, 15,801 jobs over 59 days), read as
``bench_sim.py`` reads it; skipped with a printed reason when absent. Throughputs: Gavel's
``simulation_throughputs.json`` (the trace's model names map to Gavel job types, see
:func:`optsched.sim.job_type_for`; trace durations are taken as measured on V100). Cluster:
``bench_sim.py``'s single-type size for the trace (about 80% busy on V100s), split into equal
V100, P100 and K80 pools (each rounded up to a multiple of 8), so the heterogeneous cluster is
more loaded than the V100 one.

Policies: ``max-min-perf`` and ``ftf-perf`` as :class:`~optsched.sim.policies.AllocationLP`
(Gavel's 6-minute rounds, each round's LP(s) solved exactly, warm-started from the previous
round). Reported from ``AllocationLP.solves`` (the time of :func:`optsched.allocation.gavel.solve`,
the LPs and their building) and from a timer around the policy's whole round (``policy``:
also building the round's instance from the simulation state): mean, p50, p95, max per round,
rounds, jobs per round (mean, max), LPs per round, total simulation time.

Bound: the full trace needs about 14,300 rounds per policy; measured on the 2 shared cores
(under load) a 7-day prefix took 41 s (max-min-perf) and 79 s (ftf-perf), so the full trace
would take roughly 6 and 11+ minutes with growing backlogs. The default run therefore
simulates the jobs arriving in the first ``HORIZON_DAYS`` days, until every one of them has
finished (the last rounds drain the backlog, with fewer jobs each); ``--quick`` one day;
``python benchmarks/bench_sim_allocation.py --full`` the whole trace. (Cutting the simulation
at a horizon instead leaves jobs whose work ends within the last round unmarked, which the
simulator's validator reports.)

``--fast-ratio`` adds, within the same run, ``ftf-perf`` with the fast round path switched off
(:data:`optsched.sim.policies.allocation.FAST_ROUNDS`,
:data:`optsched.allocation.gavel.lp.REUSE_LEVEL_LPS`,
:data:`optsched.solvers.matrix.TRUSTED_BUILDS`, :data:`optsched.solvers.highs.REUSE_HIGHS`,
:data:`optsched.allocation.gavel.lp.HOT_LEVELS`)
and on: both simulation times, their ratio, and whether the two runs recorded the same
completion times, first starts and intervals. ``HOT_LEVELS`` certifies every round as the
plain path does but can end a degenerate round at another optimal allocation, so with it the
records may differ: both runs are then checked by the simulator's validator and their mean
completion times compared. ``--ratio-only`` runs only that comparison (not
the per-policy table). With ``--full`` the fast run is held against the goal for the whole
trace, :data:`GOAL_SECONDS` on a quiet 2-core machine: met, or the factor still to gain. The
machine's load average is reported beside it, since a shared machine's load stretches both
runs (the ratio, measured in one run, is the figure that travels).
"""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = next(
    (
        p
        for p in (HERE.parent.parent / "shared", HERE.parent.parent.parent / "shared")
        if p.is_dir()
    ),
    HERE.parent.parent / "shared",
)
DATA = SHARED / "data" / "elasticflow"
THROUGHPUTS = SHARED / "data" / "gavel" / "simulation_throughputs.json"
POLICIES = ("max-min-perf", "ftf-perf")
HORIZON_DAYS = 7.0
#: The goal for ``ftf-perf`` on the whole trace, seconds of simulation on a quiet 2-core machine.
GOAL_SECONDS = 120.0
QUICK_DAYS = 1.0
COLUMNS = [
    "policy",
    "jobs",
    "rounds",
    "jobs/round mean",
    "jobs/round max",
    "LPs/round",
    "LP mean (ms)",
    "LP p50 (ms)",
    "LP p95 (ms)",
    "LP max (ms)",
    "policy mean (ms)",
    "policy p95 (ms)",
    "simulation (s)",
    "finished",
    "valid",
]


def _bench_sim() -> Any:
    spec = importlib.util.spec_from_file_location("bench_sim", HERE / "bench_sim.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh) - 1


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _skipped(reason: str) -> dict[str, Any]:
    print(f"skipped: {reason}", file=sys.stderr)
    return {
        "name": "bench_sim_allocation",
        "title": "Allocation LPs inside a simulation",
        "description": __doc__.split("\n\n")[0],
        "columns": COLUMNS,
        "rows": [],
        "notes": [f"skipped: {reason}"],
    }


def _fast_paths(on: bool) -> None:
    from optsched.allocation.gavel import lp
    from optsched.sim.policies import allocation
    from optsched.solvers import highs, matrix

    allocation.FAST_ROUNDS = matrix.TRUSTED_BUILDS = highs.REUSE_HIGHS = on
    lp.REUSE_LEVEL_LPS = lp.HOT_LEVELS = on


def _same_times(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True)
    )


def _mean_finite(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.mean(finite) if finite else math.nan


def _fast_ratio(world: Any, name: str = "ftf-perf", *, whole: bool = False) -> dict[str, Any]:
    """``name`` with the fast round path off, then on: times, ratio, same records.

    ``whole``: the world is the whole trace, and the fast run is held against
    :data:`GOAL_SECONDS`.
    """
    import os

    from optsched.allocation.gavel import generate_instance, solve
    from optsched.sim import simulate, validate
    from optsched.sim.policies import AllocationLP

    solve(generate_instance(4, seed=0), name)  # imports (scipy.sparse, highspy), untimed
    seconds: dict[bool, float] = {}
    cpu: dict[bool, float] = {}
    records: dict[bool, Any] = {}
    valid: dict[bool, bool] = {}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    try:
        for on in (False, True):
            _fast_paths(on)
            start, start_cpu = time.perf_counter(), time.process_time()
            result = simulate(world, AllocationLP(name))
            seconds[on] = time.perf_counter() - start
            cpu[on] = time.process_time() - start_cpu
            records[on] = (result.completion, result.first_start, result.intervals)
            valid[on] = validate(world, result).ok
    finally:
        _fast_paths(True)
    load = max(load, os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan)
    plain, fast = records[False], records[True]
    same = plain[2] == fast[2] and _same_times(plain[0], fast[0]) and _same_times(plain[1], fast[1])
    out: dict[str, Any] = {
        f"{name}: simulation (s), plain round path": round(seconds[False], 1),
        f"{name}: simulation (s), fast round path": round(seconds[True], 1),
        f"{name}: plain / fast": round(seconds[False] / seconds[True], 2),
        f"{name}: CPU (s), plain round path": round(cpu[False], 1),
        f"{name}: CPU (s), fast round path": round(cpu[True], 1),
        f"{name}: plain / fast, CPU": round(cpu[False] / cpu[True], 2),
        f"{name}: fast path records identical": same,
        f"{name}: plain run valid": valid[False],
        f"{name}: fast run valid": valid[True],
        f"{name}: mean completion time, fast / plain": round(
            _mean_finite(fast[0]) / _mean_finite(plain[0]), 6
        ),
        "load average (1 min, highest seen; 2 cores)": round(load, 2),
    }
    if whole:
        # The goal is wall time on a quiet machine; on a loaded one the process's CPU time
        # stands for it (the simulation runs on one core), and both are held against it.
        out[f"{name}: goal, whole trace (s, quiet 2-core machine)"] = GOAL_SECONDS
        for what, value in (("wall", seconds[True]), ("CPU", cpu[True])):
            out[f"{name}: goal by {what} time"] = (
                "met"
                if value <= GOAL_SECONDS
                else f"not met: {value / GOAL_SECONDS:.2f}x still to gain"
            )
    return out


def run(
    quick: bool = False, full: bool = False, fast_ratio: bool = False, ratio_only: bool = False
) -> dict[str, Any]:
    from optsched.allocation.gavel import generate_instance, solve
    from optsched.sim import World, load_throughputs, parse_cluster, simulate, validate
    from optsched.sim.policies import AllocationLP

    traces = sorted(DATA.glob("cluster*.csv"))
    if not traces or not THROUGHPUTS.exists():
        return _skipped(f"the ElasticFlow traces or Gavel's throughputs are absent ({SHARED})")
    largest = max(traces, key=_rows)
    frame, gpus = _bench_sim().load(largest)
    days = None if full else (QUICK_DAYS if quick else HORIZON_DAYS)
    if days is not None:
        frame = frame[frame["arrival"] < days * 86_400].reset_index(drop=True)
    per = 8 * math.ceil(gpus / 3 / 8)
    cluster = parse_cluster(f"v100={per},p100={per},k80={per}")
    world = World.from_frame(frame, cluster, load_throughputs(THROUGHPUTS))
    rows: list[list[Any]] = []
    summary: dict[str, Any] = {}
    for name in () if ratio_only else POLICIES:
        solve(generate_instance(4, seed=0), name)  # imports (scipy.sparse, highspy), untimed
        policy = AllocationLP(name)
        round_times: list[float] = []
        inner = policy.fractional

        def timed(state: Any, inner: Any = inner, sink: list[float] = round_times) -> Any:
            start = time.perf_counter()
            out = inner(state)
            sink.append(time.perf_counter() - start)
            return out

        policy.fractional = timed  # type: ignore[method-assign]
        start = time.perf_counter()
        result = simulate(world, policy)  # to the end: every job of the window finishes
        total = time.perf_counter() - start
        lp = [s.seconds * 1e3 for s in policy.solves]
        jobs = [s.jobs for s in policy.solves]
        ms = [t * 1e3 for t in round_times]
        finished = sum(1 for c in result.completion if not math.isnan(c))
        rows.append(
            [
                name,
                len(frame),
                len(lp),
                round(statistics.mean(jobs), 1),
                max(jobs),
                round(sum(s.lp_solves for s in policy.solves) / len(lp), 2),
                statistics.mean(lp),
                statistics.median(lp),
                _quantile(lp, 0.95),
                max(lp),
                statistics.mean(ms),
                _quantile(ms, 0.95),
                round(total, 1),
                finished,
                validate(world, result).ok,
            ]
        )
        summary[f"{name}: LP share of the simulation time"] = round(sum(lp) / 1e3 / total, 3)
    if fast_ratio or ratio_only:
        summary.update(_fast_ratio(world, whole=days is None))
    span = "whole trace" if days is None else f"jobs arriving in the first {days:g} day(s)"
    return {
        "name": "bench_sim_allocation",
        "title": f"Allocation LPs inside a simulation ({largest.stem}, {span})",
        "description": __doc__.split("\n\n")[0],
        "columns": COLUMNS,
        "rows": rows,
        "summary": summary,
        "notes": [
            f"cluster v100={per}, p100={per}, k80={per}; Gavel throughputs; 360 s rounds",
            "LP: optsched.allocation.gavel.solve per round; policy: the whole round of the policy "
            "(instance built from the simulation state, LP, fractions handed back)",
        ],
    }


if __name__ == "__main__":
    import json

    print(
        json.dumps(
            run(
                quick="--quick" in sys.argv,
                full="--full" in sys.argv,
                fast_ratio="--fast-ratio" in sys.argv,
                ratio_only="--ratio-only" in sys.argv,
            ),
            indent=1,
            default=str,
        )
    )
