"""Pollux's genetic algorithm against the exact optimum of its own per-round objective.

Rounds (:class:`optsched.goodput.round_workload.RoundSampler`): ``J`` consecutive jobs of
Pollux's workload 6 (the artifact's ``simulator/workloads/workload-6.csv``) on the artifact's
cluster of 16 nodes of 4 GPUs; each job's speedup is its type's throughput model fitted to the
traces' placements of up to ``P`` GPUs (``P`` drawn from 1..16, none for a job younger than one
interval) with the gradient statistics of a drawn epoch; ages are the workload's, service,
restarts and epochs drawn. The policy (:class:`optsched.goodput.policies.pollux.PolluxPolicy`,
population 100, 100 generations, seeded) first decides ``WARMUP`` rounds over these jobs (ages,
service and restarts advanced), so that the round measured has a previous allocation and a
carried population. On that round: the GA's value :math:`M` (its chosen allocation, checked by
the independent validator) and the exact MILP's (:func:`optsched.goodput.round_exact.solve`,
HiGHS, the GA's allocation as MIP start, at most ``NODE_LIMIT`` branch-and-bound nodes: a row
whose status is ``feasible`` has its proven bound beside it). ``gap %`` is
``100 (exact - GA) / exact``; ``gap to bound %`` the same against the bound (an upper bound on
the GA's true gap). ``cold GA gap %`` is the gap of the same search started from the
previous allocation alone, without the carried population. Times are wall seconds of one run
on a shared machine, reported, never asserted.

Without the artifact's folder (``OPTSCHED_POLLUX_SIMULATOR``), the shipped test slice is used:
the workload's ``bert`` and ``cifar10`` jobs only (a note says so).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.policies.pollux import PolluxPolicy, search
from optsched.goodput.round_exact import solve
from optsched.goodput.round_validate import validate
from optsched.goodput.round_workload import RoundSampler, replay_rounds
from optsched.goodput.traces import ModelTraces, read_model_traces
from optsched.goodput.workload import PolluxWorkload, read_workload

HERE = Path(__file__).resolve().parent
SLICE = HERE.parent / "tests" / "data" / "pollux"
SIZES = (10, 15, 20, 25, 30, 35, 40)
QUICK_SIZES = (10,)
WARMUP = 3
NODE_LIMIT = 500
COLUMNS = [
    "jobs",
    "GA M",
    "exact M",
    "bound",
    "gap %",
    "gap to bound %",
    "status",
    "B&B nodes",
    "GA s",
    "exact s",
    "jobs without GPUs (GA/exact)",
    "cold GA gap %",
]


def _inputs() -> tuple[PolluxWorkload, dict[str, ModelTraces], str]:
    from optsched.goodput.artifact import read_job_types, read_workload_of

    try:
        return read_workload_of(6), read_job_types(), "the artifact's workload 6, all job types"
    except InvalidInstanceError:
        types = {name: read_model_traces(SLICE / "traces" / name) for name in ("bert", "cifar10")}
        full = read_workload(SLICE / "workload-6.csv")
        jobs = tuple(j for j in full.jobs if j.application in types)
        note = "the artifact's folder is absent: workload 6's bert and cifar10 jobs only"
        return PolluxWorkload(jobs), types, note


def _row(sampler: RoundSampler, workload: PolluxWorkload, num_jobs: int) -> list[Any]:
    views, cluster = sampler.round(workload, num_jobs, seed=num_jobs)
    policy = PolluxPolicy(seed=num_jobs)
    views, cluster, previous = replay_rounds(policy, views, cluster, WARMUP)
    start = time.perf_counter()
    policy.allocate(views, cluster, previous)
    ga_seconds = time.perf_counter() - start
    instance, found = policy.last_round, policy.last_search
    assert instance is not None and found is not None
    report = validate(instance, found.state)
    if not report.ok:
        raise AssertionError(f"the GA's allocation is infeasible: {report.violations[:3]}")
    instance.complete()  # the speedup tables, outside the exact model's time
    start = time.perf_counter()
    exact = solve(instance, warm_start=found.state, node_limit=NODE_LIMIT)
    exact_seconds = time.perf_counter() - start
    if not validate(instance, exact.state).ok:
        raise AssertionError("the exact model's allocation is infeasible")
    gap = 100.0 * (exact.objective - found.fitness) / exact.objective
    # the same round searched from the previous allocation alone (no carried population)
    cold = search(instance, rng=np.random.default_rng(num_jobs))
    cold_gap = 100.0 * (exact.objective - cold.fitness) / exact.objective
    to_bound = None if exact.bound is None else 100.0 * (exact.bound - found.fitness) / exact.bound
    return [
        num_jobs,
        round(found.fitness, 5),
        round(exact.objective, 5),
        None if exact.bound is None else round(exact.bound, 5),
        round(gap, 2) + 0.0,  # no "-0" for a float a hair below zero
        None if to_bound is None else round(to_bound, 2) + 0.0,
        exact.status.value,
        exact.extra.get("nodes"),
        round(ga_seconds, 1),
        round(exact_seconds, 1),
        f"{int((found.state.sum(axis=1) == 0).sum())}/{int((exact.state.sum(axis=1) == 0).sum())}",
        round(cold_gap, 2) + 0.0,
    ]


def run(quick: bool = False) -> dict[str, Any]:
    workload, types, source = _inputs()
    sampler = RoundSampler(types, num_nodes=16, gpus_per_node=4)
    rows = [_row(sampler, workload, j) for j in (QUICK_SIZES if quick else SIZES)]
    gaps = [r[4] for r in rows]
    return {
        "name": "pollux_gap",
        "title": "Pollux's GA vs the exact optimum of its per-round objective",
        "description": __doc__.splitlines()[0],
        "columns": COLUMNS,
        "rows": rows,
        "summary": {"largest gap %": max(gaps), "mean gap %": round(float(np.mean(gaps)), 2)},
        "notes": [
            f"input: {source}; 16 nodes x 4 GPUs; {WARMUP} rounds decided before the one measured",
            f"exact: HiGHS within {NODE_LIMIT} B&B nodes, the GA's allocation as MIP start",
        ],
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2, default=str))
