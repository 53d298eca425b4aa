"""Simulator replay speed: jobs per second replaying the ElasticFlow cluster traces.

Inputs: the ten ElasticFlow production-cluster traces (``../shared/data/elasticflow/cluster*.csv``,
69,351 jobs), read here with a minimal pandas read of their 8 columns (``job_id, submission_time,
num_iteration, model_name, deadline, batch_size, num_gpu, duration``) into the normalized job
table; the model names map to Gavel job types only for documentation, since every job runs as a
generic job at its trace duration (no throughput table: one GPU type). Each trace runs on one
``v100`` type with 8-GPU servers, sized to its load: ``max(largest gang, 8 ceil(1.25 D / 8))``
GPUs, ``D`` the average GPU demand (sum of ``num_gpu x duration`` over the trace's span), so the
cluster is about 80% busy.

Policies: FIFO, SRTF, Tiresias-LAS (event-driven, no restore cost). Every run is checked by the
independent validator. Scaling: the largest trace replicated 1x, 2x, 4x (every job k times at
the same arrival, on a cluster k times as large), so the load stays the same and the job count
grows. Peak memory of one FIFO replay of the largest trace at 1x, twice: the ``tracemalloc``
peak (Python's allocations only) and the process's resident peak (VmHWM reset before the run;
``_measure.py``), which also counts memory allocated outside Python's allocator.

Goals (reported as met, or by the factor still to gain): every policy replays all the traces within
``POLICY_GOAL`` (2) times FIFO's time, and the largest trace replicated 4x takes within
``SCALE_GOAL`` (4.4) times its 1x time, for every policy. Both are ratios of the process CPU times
(column ``CPU s``) measured in the same run: on a shared machine wall times swing with the other
load, CPU times much less. Much less is still 5-10 % from one run to the next on the shared 2-core
machine, enough to move a ratio near its goal across it: each timed replay is run ``REPEATS`` (3)
times in turn, every policy on a trace before the next repetition, and its row is the run with the
least CPU time (as :mod:`timeit` reports the best of its repeats: the swing only ever adds time).
The quick run times each replay once. The summary also gives each policy's work as ratios to
FIFO's, its events (decision points) and run starts (column ``runs``: the record's segments), and
its CPU time per unit of each (:func:`work_ratios`): a policy that decides or starts jobs more
often does more of the engine's work in proportion, whatever its own walk costs.

The compiled catch-up (:mod:`optsched.sim.engine.catchup`) and 2D-LAS's compiled walk
(:mod:`optsched.sim.policies.las_core`) are loaded before the first timed run, and each called
once there: importing Numba and loading a kernel (about 0.4 s), then loading its cached machine
code at its first call (about 0.3 s), are costs of the process, paid once, which would otherwise
fall on the first timed replay that uses it (a run starts with a kernel once the process has
loaded it: FIFO on ``cluster01``, whose CPU time the first call alone more than doubled).
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from optsched.sim import World, parse_cluster, simulate, validate
from optsched.sim.engine.catchup import catch_up_kernel
from optsched.sim.policies import Tiresias, make_policy

if str(Path(__file__).resolve().parent) not in sys.path:
    # the shared helpers beside this file, also when it is loaded by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import rss_peak

HERE = Path(__file__).resolve().parent
DATA = next(
    (
        p / "data" / "elasticflow"
        for p in (HERE.parent.parent / "shared", HERE.parent.parent.parent / "shared")
        if (p / "data" / "elasticflow").is_dir()
    ),
    HERE.parent.parent / "shared" / "data" / "elasticflow",
)
POLICIES = ("fifo", "srtf", "tiresias-las")
#: Every policy's time over all the traces, at most this many times FIFO's.
POLICY_GOAL = 2.0
#: The largest trace replicated 4x, at most this many times its 1x time.
SCALE_GOAL = 4.4
#: Runs of each timed replay; its row is the one with the least CPU time (module notes).
REPEATS = 3
COLUMNS = [
    "trace",
    "copies",
    "jobs",
    "GPUs",
    "policy",
    "seconds",
    "CPU s",
    "jobs/s",
    "events",
    "valid",
    "mean JCT (h)",
    "runs",
]


def load(path: Path, copies: int = 1) -> tuple[pd.DataFrame, int]:
    raw = pd.read_csv(
        path,
        usecols=[
            "job_id",
            "submission_time",
            "num_iteration",
            "model_name",
            "deadline",
            "batch_size",
            "num_gpu",
            "duration",
        ],
    ).sort_values("submission_time", kind="stable")
    t0 = float(raw["submission_time"].min())
    frame = pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str),
            "arrival": raw["submission_time"].astype(float) - t0,
            "num_gpus": raw["num_gpu"].astype("int64"),
            "model": raw["model_name"].astype(str),
            "total_steps": raw["num_iteration"].astype(float),
            "duration": raw["duration"].astype(float),
            "batch_size": raw["batch_size"].astype(float),
            "weight": 1.0,
            "deadline": raw["deadline"].astype(float) - t0,
            "user": "",
        }
    )
    span = max(float(frame["arrival"].max()), 1.0)
    demand = float((frame["num_gpus"] * frame["duration"]).sum()) / span
    gpus = max(int(frame["num_gpus"].max()), 8 * math.ceil(1.25 * demand / 8))
    if copies > 1:
        parts = []
        for k in range(copies):
            part = frame.copy()
            part["job_id"] = part["job_id"] + f"#{k}"
            parts.append(part)
        frame = pd.concat(parts).sort_values("arrival", kind="stable").reset_index(drop=True)
    return frame, gpus * copies


def _replay(label: str, frame: pd.DataFrame, gpus: int, copies: int, policy: str) -> list[Any]:
    world = World.from_frame(frame, parse_cluster(f"v100={gpus}"))
    start, cpu = time.perf_counter(), time.process_time()
    result = simulate(world, make_policy(policy))
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    ok = validate(world, result).ok
    jct = np.array(result.completion) - np.array([j.arrival for j in world.jobs])
    # run starts: the record's segments (a job's run on one placement), one row per server each
    runs = len(set(zip(result.intervals["job_id"], result.intervals["start"], strict=True)))
    return [
        label,
        copies,
        len(frame),
        gpus,
        policy,
        round(seconds, 2),
        round(cpu, 2),
        round(len(frame) / seconds, 1),
        result.events,
        ok,
        round(float(jct.mean()) / 3600, 3),
        runs,
    ]


def _load_las_kernel() -> None:
    """Load 2D-LAS's compiled walk and its machine code: a two-job replay that uses it."""
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "arrival": [0.0, 1.0],
            "num_gpus": [1, 1],
            "model": ["", ""],
            "total_steps": [math.nan, math.nan],
            "duration": [4000.0, 10.0],
            "batch_size": [math.nan, math.nan],
            "weight": [1.0, 1.0],
            "deadline": [math.nan, math.nan],
            "user": ["", ""],
        }
    )
    simulate(World.from_frame(frame, parse_cluster("v100=1")), Tiresias("las", compiled=True))


def _best_rows(
    label: str, frame: pd.DataFrame, gpus: int, copies: int, repeats: int
) -> list[list[Any]]:
    """One row per policy: of ``repeats`` rounds over the policies, its least CPU time run.

    The rounds interleave the policies (every policy once, then again), so that a slow spell
    of the machine falls on all of them alike rather than on one policy's runs.
    """
    best: dict[str, list[Any]] = {}
    for _ in range(repeats):
        for policy in POLICIES:
            row = _replay(label, frame, gpus, copies, policy)
            if policy not in best or row[6] < best[policy][6]:
                best[policy] = row
    return [best[p] for p in POLICIES]


def _verdict(ratio: float, goal: float) -> str:
    if ratio <= goal:
        return f"met ({ratio:.2f} <= {goal:g})"
    return f"NOT met ({ratio:.2f} > {goal:g}: {ratio / goal:.2f}x still to gain)"


def goals(
    totals: dict[str, list[float]], scaling: dict[str, list[float]], copies: int
) -> dict[str, str]:
    """Each goal (see the module notes) as met, or with the factor still to gain.

    ``totals[policy] = [jobs, seconds]`` over all traces; ``scaling[policy]`` the times of the
    largest trace at 1x, 2x, ... (``copies`` the last). With ``copies`` below 4 (the quick
    run) the scale goal is taken in proportion, ``SCALE_GOAL * copies / 4``.
    """
    out: dict[str, str] = {}
    fifo = totals["fifo"][1]
    for p, (_, seconds) in totals.items():
        if p != "fifo" and fifo > 0:
            out[f"goal: {p} within {POLICY_GOAL:g}x FIFO's time"] = _verdict(
                seconds / fifo, POLICY_GOAL
            )
    goal = SCALE_GOAL * copies / 4
    for p, times in scaling.items():
        if times and times[0] > 0:
            out[f"goal: {p} {copies}x the trace within {goal:g}x the time"] = _verdict(
                times[-1] / times[0], goal
            )
    return out


def work_ratios(cpu: dict[str, float], work: dict[str, list[int]]) -> dict[str, float]:
    """Each policy's work and its CPU time per unit of it, as ratios to FIFO's.

    ``cpu[policy]`` is its CPU seconds over all traces, ``work[policy] = [events, runs]`` its
    event-loop iterations (decision points and the last look) and run starts (record segments).
    A policy that decides and starts jobs more often than FIFO does more of the engine's work
    in proportion, whatever its own walk costs: the time ratio over the work ratio says how it
    does per unit of that work (about 1: as FIFO).
    """
    out: dict[str, float] = {}
    base_cpu = cpu.get("fifo", 0.0)
    base_events, base_runs = work.get("fifo", [0, 0])
    if base_cpu <= 0 or base_events <= 0 or base_runs <= 0:
        return out
    for p, (events, runs) in work.items():
        if p == "fifo" or events <= 0 or runs <= 0:
            continue
        ratio = cpu[p] / base_cpu
        out[f"{p} / fifo events, all traces"] = round(events / base_events, 3)
        out[f"{p} / fifo run starts, all traces"] = round(runs / base_runs, 3)
        out[f"{p} / fifo CPU time per event"] = round(ratio / (events / base_events), 3)
        out[f"{p} / fifo CPU time per run start"] = round(ratio / (runs / base_runs), 3)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    traces = sorted(DATA.glob("cluster*.csv"))
    if not traces:
        return {
            "name": "bench_sim",
            "title": "Simulator replay speed",
            "description": __doc__,
            "columns": COLUMNS,
            "rows": [],
            "notes": [f"skipped: {DATA} is absent"],
        }
    if quick:
        traces = [DATA / "cluster10.csv"]
    # a cost of the process, not of a policy (module notes): the first call loads the machine
    # code for the argument types the engine passes
    kernel = catch_up_kernel()
    kernel(np.zeros(2), np.zeros(2), 2, 1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1)
    _load_las_kernel()
    rows: list[list[Any]] = []
    totals: dict[str, list[float]] = {p: [0, 0.0] for p in POLICIES}
    cpu_totals = dict.fromkeys(POLICIES, 0.0)
    # each policy's work over all traces: [events, run starts]
    work = {p: [0, 0] for p in POLICIES}
    repeats = 1 if quick else REPEATS
    for path in traces:
        frame, gpus = load(path)
        for row in _best_rows(path.stem, frame, gpus, 1, repeats):
            rows.append(row)
            policy = row[4]
            totals[policy][0] += row[2]
            totals[policy][1] += row[5]
            cpu_totals[policy] += row[6]
            work[policy][0] += row[8]
            work[policy][1] += row[11]
    largest = max(traces, key=lambda p: p.stat().st_size)
    scaling: dict[str, list[float]] = {}
    cpu_scaling: dict[str, list[float]] = {}
    for copies in (1, 2) if quick else (1, 2, 4):
        frame, gpus = load(largest, copies)
        for row in _best_rows(largest.stem, frame, gpus, copies, repeats):
            rows.append(row)
            scaling.setdefault(row[4], []).append(row[5])
            cpu_scaling.setdefault(row[4], []).append(row[6])
    frame, gpus = load(largest)
    world = World.from_frame(frame, parse_cluster(f"v100={gpus}"))
    with rss_peak() as resident:
        simulate(world, make_policy("fifo"))
    tracemalloc.start()
    simulate(world, make_policy("fifo"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    summary: dict[str, Any] = {
        f"{p} all traces: jobs / seconds": f"{n} / {s:.1f}" for p, (n, s) in totals.items()
    }
    for p, times in scaling.items():
        summary[f"{p} time ratio 2x/1x, 4x/1x"] = ", ".join(
            f"{t / times[0]:.2f}" for t in times[1:]
        )
    summary["peak traced memory (MB), FIFO on the largest trace"] = round(peak / 2**20, 1)
    summary["peak resident memory (MiB), FIFO on the largest trace"] = (
        round(resident.mib, 1) if resident.fresh else f"<= {resident.mib:.1f}"
    )
    summary["resident memory before that replay (MiB)"] = round(resident.base, 1)
    # the goals' figures as numbers (for a goals table), then as verdicts
    for p, c in cpu_totals.items():
        if p != "fifo" and cpu_totals["fifo"] > 0:
            summary[f"{p} / fifo CPU time, all traces"] = round(c / cpu_totals["fifo"], 3)
    summary.update(work_ratios(cpu_totals, work))
    for p, times in cpu_scaling.items():
        if times and times[0] > 0:
            summary[f"{p} CPU time {len(times) and 2 ** (len(times) - 1)}x / 1x"] = round(
                times[-1] / times[0], 3
            )
    summary.update(
        goals({p: [totals[p][0], c] for p, c in cpu_totals.items()}, cpu_scaling, 2 if quick else 4)
    )
    return {
        "name": "bench_sim",
        "title": "Simulator replay speed on the ElasticFlow traces",
        "description": __doc__,
        "columns": COLUMNS,
        "rows": rows,
        "summary": summary,
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=1, default=str))
