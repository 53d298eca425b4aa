"""Chronus with short leases: re-planning only when the SLO jobs change vs at every lease.

Input: ElasticFlow's ``cluster10`` trace (``../shared/data/elasticflow/cluster10.csv``, 260 jobs
over about 33 days, deadlines on every job, gangs up to 16) on one ``v100`` type of 64 GPUs in
8-GPU servers, leases of 60 s (the policy's default is 20 minutes), no restore cost, every
job a generic job at its trace duration. Rows: the policy with ``replan="change"`` (the default:
the MILP is solved only when the instance's SLO jobs change, the shifted plan reused otherwise)
on the whole trace, and both settings on the first ``HORIZON`` seconds after the first arrival,
where ``replan="lease"`` (a MILP at every boundary) is run too. Every
record is checked by the independent validator; ``deadlines met`` counts jobs finished by
their deadline. Speed is reported as a ratio within one run, never asserted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from optsched.sim import parse_cluster, simulate, validate
from optsched.sim.comparison import world_from_trace
from optsched.sim.measure.metrics import deadline_metrics
from optsched.sim.policies.chronus import Chronus
from optsched.traces import read_trace

HERE = Path(__file__).resolve().parent
DATA = next(
    (
        p / "data" / "elasticflow"
        for p in (HERE.parent.parent / "shared", HERE.parent.parent.parent / "shared")
        if (p / "data" / "elasticflow").is_dir()
    ),
    HERE.parent.parent / "shared" / "data" / "elasticflow",
)
CLUSTER = "v100=64:8"
LEASE_S = 60.0
#: Simulated seconds after the first arrival compared in both settings.
HORIZON = 1.2e6
COLUMNS = [
    "replan",
    "simulated (s)",
    "leases",
    "MILPs solved",
    "plans reused",
    "seconds",
    "finished",
    "deadlines met",
    "valid",
]


def _one(world: Any, replan: str, max_time: float | None) -> tuple[list[Any], float]:
    policy = Chronus(LEASE_S, replan=replan)  # type: ignore[arg-type]
    start = time.perf_counter()
    record = simulate(world, policy, max_time=max_time)
    seconds = time.perf_counter() - start
    methods = [d.method for d in policy.log]
    return [
        replan,
        "all" if max_time is None else f"{max_time - world.jobs[0].arrival:.3g}",
        len(policy.log),
        methods.count("milp"),
        methods.count("milp (reused)"),
        seconds,
        len(world.jobs) - record.unfinished,
        deadline_metrics(record)["deadlines_met"],
        validate(world, record).ok,
    ], seconds


def run(quick: bool = False) -> dict[str, Any]:
    trace = read_trace(DATA / "cluster10.csv")
    world = world_from_trace(trace, parse_cluster(CLUSTER))
    horizon = HORIZON / 10 if quick else HORIZON
    cut = world.jobs[0].arrival + horizon
    rows = []
    change, t_change = _one(world, "change", cut)
    lease, t_lease = _one(world, "lease", cut)
    rows += [change, lease]
    summary: dict[str, Any] = {
        "lease / change seconds (same horizon)": t_lease / max(t_change, 1e-9)
    }
    if not quick:
        full, t_full = _one(world, "change", None)
        rows.append(full)
        summary["full trace seconds (replan on change)"] = t_full
    return {
        "name": "bench_sim_chronus",
        "title": "Chronus, 60 s leases on the 260-job cluster10 trace",
        "description": __doc__.split("\n\n")[1].replace("\n", " "),
        "columns": COLUMNS,
        "rows": rows,
        "summary": summary,
    }


if __name__ == "__main__":
    for row in run(quick=True)["rows"]:
        print(row)
