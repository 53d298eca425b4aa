"""Exact placement: solve time vs instance size for every objective, and where it stops.

Instances (seeded):

* ``servers``: Falkenauer-style bin packing (sizes U{20..100}, capacity 150), the arc-flow
  formulation up to 400 tasks and the compact assignment formulation beside it;
* ``traffic``, ``max-load``, ``interference``, ``clwp``: synthetic PS / ring-all-reduce jobs
  (``generate_instance``) on 4-GPU servers sized so the workers fill 90% of the GPUs and jobs
  of up to 6 workers must span servers (``max-load`` on two racks; ``clwp`` on 8-GPU servers
  with jobs of up to 4 workers, which it keeps whole);
* ``nlwp``: the same jobs on one 8-GPU node (the node-level problem), 1..4 jobs.

A first section times the goal instances (120 and 250 bin-packing tasks, several seeds) with the
default ``auto`` choice (the bin-packing certificate, then arc-flow) beside the arc-flow model
alone (``certificate=False``, the previous default), in the same run.

Each objective grows until a solve is not proven optimal within its budget of CPU seconds (the
process's CPU time, judged after the solve; HiGHS, which has no CPU limit, gets a wall-clock cap
of the budget times the load per core): that size is where exact solving stops being practical
(reported as the first size *not* proven optimal). Times that decide an outcome are CPU times,
which the load of a shared machine does not inflate the way it inflates wall time. A last
section solves one mid-size instance per objective under the three symmetry modes (solver's
orbital methods, our symmetry-breaking constraints, neither).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from optsched.errors import NotOptimalError
from optsched.placement import Placement, bin_packing_instance, generate_instance, solve
from optsched.results import ExactResult

if str(Path(__file__).resolve().parent) not in sys.path:
    # the shared helpers beside this file, also when it is loaded by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import cpu_budget

LIMIT, QUICK_LIMIT = 30.0, 10.0
BIN_SIZES, QUICK_BIN_SIZES = [25, 50, 100, 200, 400], [25, 50, 100]
ASSIGNMENT_SIZES = [10, 25, 50, 100]
JOB_SIZES, QUICK_JOB_SIZES = [2, 3, 4, 6, 8, 10, 12, 16], [2, 3, 4, 6]
#: (jobs, 8-GPU nodes) for nlwp: one node, then two.
NODE_CASES = [(1, 1), (2, 1), (3, 1), (4, 1), (4, 2), (6, 2), (8, 2)]
SYMMETRY_JOBS, QUICK_SYMMETRY_JOBS = 8, 4
#: Goal instances: ``placement servers`` proven optimal in <= 5 CPU s each at 250 tasks.
GOAL_SIZES, GOAL_SEEDS, QUICK_GOAL_SEEDS = [120, 250], range(5), range(2)
GOAL_SECONDS = 5.0

COLUMNS = [
    "objective",
    "instance",
    "tasks",
    "servers",
    "formulation",
    "symmetry",
    "variables",
    "build s",
    "solve s",
    "cpu s",
    "status",
    "value",
    "bound",
    "LP bound",
]


def _row(
    objective: str, label: str, instance: Any, options: dict[str, Any], limit: float
) -> tuple[list[Any], bool, float]:
    """One solve under a budget of ``limit`` CPU seconds: its row, whether it is proven optimal
    within the budget, and its CPU seconds (the process's, every thread counted)."""

    def attempt(wall_cap: float) -> ExactResult[Placement] | NotOptimalError:
        try:
            return solve(instance, objective, time_limit=wall_cap, accept_feasible=True, **options)
        except NotOptimalError as exc:
            return exc

    out = cpu_budget(attempt, limit)
    if isinstance(out.value, NotOptimalError):
        r = out.value.result
        row = [
            objective,
            label,
            len(instance.tasks),
            len(instance.servers),
            options.get("formulation", "-"),
            options.get("symmetry", "solver"),
            0,
            round(r.build_seconds, 3),
            round(r.solve_seconds, 3),
            round(out.cpu, 3),
            r.status.value,
            None,
            r.bound,
            r.lp_bound,
        ]
        return row, False, out.cpu
    s: ExactResult[Placement] = out.value
    row = [
        objective,
        label,
        len(instance.tasks),
        len(instance.servers),
        s.extra["formulation"],
        options.get("symmetry", "solver"),
        (s.size or {}).get("variables", 0),
        round(s.build_seconds, 3),
        round(s.solve_seconds, 3),
        round(out.cpu, 3),
        s.status.value,
        s.objective,
        s.bound,
        s.lp_bound,
    ]
    return row, bool(s.optimal and out.within), out.cpu


def _cluster_instance(objective: str, n_jobs: int, seed: int) -> Any:
    if objective == "clwp":
        # Whole jobs onto nodes: jobs must fit one 8-GPU server; the packing of jobs binds.
        return generate_instance(n_jobs, gpus=8, max_workers=4, fill=0.9, seed=seed)
    return generate_instance(
        n_jobs,
        gpus=4,
        max_workers=6,
        fill=0.9,
        racks=2 if objective == "max-load" else 1,
        seed=seed,
    )


def _node_instance(n_jobs: int, nodes: int, seed: int) -> Any:
    return generate_instance(n_jobs, n_servers=nodes, gpus=8, max_workers=2, seed=seed)


def _goal(
    quick: bool, limit: float, rows: list[list[Any]], stopped: dict[str, str]
) -> list[tuple[int, float, float]]:
    """The goal instances, certificate (auto) and arc-flow alone in the same run.

    Returns ``(tasks, auto CPU seconds, arc-flow CPU seconds)`` for every instance both prove.
    """
    goal_rows: list[tuple[int, float, float]] = []
    # Imports (Pyomo, HiGHS, scipy.sparse) outside the timings: both paths, and an instance
    # outside the goal set whose certificate needs the LP dive.
    solve(bin_packing_instance(250, seed=12), "servers")
    solve(bin_packing_instance(30, seed=1), "servers", certificate=False)
    for n in GOAL_SIZES[1:] if quick else GOAL_SIZES:
        for seed in QUICK_GOAL_SEEDS if quick else GOAL_SEEDS:
            inst = bin_packing_instance(n, seed=seed)
            label = f"bin-packing n={n} seed={seed}"
            new, new_ok, new_s = _row("servers", label, inst, {}, limit)
            old, old_ok, old_s = _row("servers", label, inst, {"certificate": False}, limit)
            rows += [new, old]
            if new_ok and old_ok and new[11] == old[11]:
                goal_rows.append((n, new_s, old_s))
            else:
                stopped[f"servers goal n={n} seed={seed}"] = "not proven optimal by both"
    return goal_rows


def run(quick: bool = False) -> dict[str, Any]:
    limit = QUICK_LIMIT if quick else LIMIT
    rows: list[list[Any]] = []
    largest: dict[str, int] = {}
    stopped: dict[str, str] = {}
    bin_seconds: dict[int, float] = {}

    goal_rows = _goal(quick, limit, rows, stopped)
    # servers: the arc-flow model alone on growing bin packing, then the assignment one.
    for n in QUICK_BIN_SIZES if quick else BIN_SIZES:
        inst = bin_packing_instance(n, seed=n)
        row, optimal, _ = _row("servers", f"bin-packing n={n}", inst, {"certificate": False}, limit)
        rows.append(row)
        if optimal:
            largest["servers (arc-flow)"] = n
            bin_seconds[n] = row[9]
        else:
            stopped["servers (arc-flow)"] = f"{n} tasks"
            break
    assignment_seconds: dict[int, float] = {}
    for n in ASSIGNMENT_SIZES[:3] if quick else ASSIGNMENT_SIZES:
        inst = bin_packing_instance(n, seed=n)
        row, optimal, _ = _row(
            "servers", f"bin-packing n={n}", inst, {"formulation": "assignment"}, limit
        )
        rows.append(row)
        if optimal:
            largest["servers (assignment)"] = n
            assignment_seconds[n] = row[9]
        else:
            stopped["servers (assignment)"] = f"{n} tasks"
            break

    # Communication- and interference-aware objectives on tight synthetic clusters.
    for objective in ("traffic", "max-load", "interference", "clwp"):
        for n in QUICK_JOB_SIZES if quick else JOB_SIZES:
            inst = _cluster_instance(objective, n, seed=n)
            row, optimal, _ = _row(objective, f"{n} jobs, 90% GPUs", inst, {}, limit)
            rows.append(row)
            if optimal:
                largest[objective] = max(largest.get(objective, 0), len(inst.tasks))
            else:
                stopped[objective] = f"{n} jobs ({len(inst.tasks)} tasks)"
                break

    # Node-level GPU assignment on one 8-GPU node.
    for n, nodes in NODE_CASES[:4] if quick else NODE_CASES:
        inst = _node_instance(n, nodes, seed=n)
        row, optimal, _ = _row("nlwp", f"{n} jobs on {nodes} 8-GPU node(s)", inst, {}, limit)
        rows.append(row)
        if optimal:
            largest["nlwp"] = max(largest.get("nlwp", 0), len(inst.tasks))
        else:
            stopped["nlwp"] = f"{n} jobs on {nodes} nodes ({len(inst.tasks)} tasks)"
            break

    # Symmetry handling on one mid-size instance per objective.
    ratios: dict[str, Any] = {}
    sym_jobs = QUICK_SYMMETRY_JOBS if quick else SYMMETRY_JOBS
    for objective in ("traffic", "max-load", "interference", "clwp"):
        inst = _cluster_instance(objective, sym_jobs, seed=100)
        seconds = {}
        for mode in ("solver", "constraints", "none"):
            row, optimal, elapsed = _row(
                objective, f"{sym_jobs} jobs (symmetry test)", inst, {"symmetry": mode}, limit
            )
            rows.append(row)
            seconds[mode] = elapsed if optimal else float("inf")
        for mode in ("constraints", "none"):
            key = f"symmetry {objective}: {mode} / solver CPU time"
            if seconds["solver"] == float("inf"):
                ratios[key] = f"solver mode not proven in {limit:g} CPU s"
            elif seconds[mode] == float("inf"):
                ratios[key] = f"> {limit / seconds['solver']:.3g} (not proven in {limit:g} CPU s)"
            else:
                ratios[key] = seconds[mode] / seconds["solver"]

    summary: dict[str, Any] = {
        f"largest proven optimal, {k}": f"{v} tasks" for k, v in largest.items()
    }
    summary.update(
        {f"first size not proven in {limit:g} CPU s, {k}": v for k, v in stopped.items()}
    )
    if 100 in bin_seconds:
        summary["100-task bin packing, arc-flow CPU s"] = bin_seconds[100]
    common = sorted(set(bin_seconds) & set(assignment_seconds))
    if common:
        n = common[-1]
        summary[f"assignment / arc-flow time at {n} tasks (both optimal)"] = (
            assignment_seconds[n] / bin_seconds[n]
        )
    summary.update(ratios)
    for n in sorted({g[0] for g in goal_rows}):
        mine = [g for g in goal_rows if g[0] == n]
        worst = max(g[1] for g in mine)
        summary[f"servers {n} tasks: slowest proven solve, CPU s (goal <= {GOAL_SECONDS:g})"] = (
            worst
        )
        summary[f"servers {n} tasks: arc-flow alone CPU s (min-max)"] = (
            f"{min(g[2] for g in mine):.3g}-{max(g[2] for g in mine):.3g}"
        )
        summary[f"servers {n} tasks: speed-up vs arc-flow alone (min)"] = min(
            g[2] / g[1] for g in mine
        )
    return {
        "name": "placement",
        "title": "Exact placement: solve time vs size per objective",
        "description": __doc__.strip().splitlines()[0],
        "columns": COLUMNS,
        "rows": rows,
        "summary": summary,
        "notes": [
            f"budget {limit:g} CPU s per solve (the process's CPU time, every thread counted; "
            "HiGHS's wall-clock cap is the budget times the load per core, 1 on an idle "
            "machine, benchmarks/_measure.py); HiGHS with relative MIP gap 1e-9; a solve "
            "proven optimal past its CPU budget counts as not proven",
            "status 'feasible' = incumbent found but optimality not proven within the cap",
            "LP bound is computed only when a solve stops short of optimality",
        ],
    }
