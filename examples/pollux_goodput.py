"""Adaptive jobs: Pollux beside its baselines, and its genetic algorithm beside the optimum.

The goodput world of Pollux (Qiao et al., OSDI 2021): jobs whose rate depends on their GPUs,
nodes and batch size, and whose progress counts statistical-efficiency-weighted samples, on a
cluster of identical nodes re-planned every 60 s. The first 32 cifar10/bert jobs of the Pollux
artifact's workload 6 (the slice shipped in ``tests/data/pollux``) run on 2 nodes of 4 GPUs
under the artifact's Tiresias and Optimus+Oracle baselines (fixed batches) and under Pollux
(adaptive batches, its genetic algorithm with a smaller population than the artifact's 100 x
100, so that the example takes about a minute). Every run is checked by the goodput world's
validator, which replays each job's progress from the record alone.

Then, at every fifth Pollux decision, the round the genetic algorithm searched is solved
exactly (the MILP of :mod:`optsched.goodput.round_exact`, HiGHS, a node budget): the table
gives the generalized mean the GA reached, the optimum, and the gap.

Run: ``python examples/pollux_goodput.py``. Point ``OPTSCHED_POLLUX_SIMULATOR`` at the
artifact's ``simulator/`` folder and pass ``--workload 6`` to run the whole workload on the
artifact's 16 x 4 cluster instead (minutes for the baselines; Pollux's own run takes longer).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from optsched.goodput.artifact import read_workload_of
from optsched.goodput.cluster import simulate
from optsched.goodput.policies import OptimusOraclePolicy, PolluxPolicy, TiresiasPolicy
from optsched.goodput.round_exact import solve as solve_round
from optsched.goodput.traces import read_model_traces
from optsched.goodput.validate import validate
from optsched.goodput.workload import PolluxWorkload, read_workload

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "pollux"
#: Jobs of the shipped slice: the first 32 cifar10/bert rows of workload 6.
SLICE_JOBS = 32
#: Every how many Pollux decisions the round is solved exactly.
EVERY = 5
#: Relative gap under which the GA's mean counts as the optimum (HiGHS's own gap tolerance).
GAP_TOL = 1e-6


class GapProbe:
    """Pollux's policy, with the exact optimum of every ``EVERY``-th round it searched."""

    name = "pollux"

    def __init__(self, policy: PolluxPolicy) -> None:
        self.policy = policy
        self.decisions = 0
        self.rows: list[dict[str, Any]] = []

    def allocate(self, jobs: Any, cluster: Any, previous: Any) -> Any:
        out = self.policy.allocate(jobs, cluster, previous)
        self.decisions += 1
        search = self.policy.last_search
        instance = self.policy.last_round
        if self.decisions % EVERY == 0 and search is not None and instance is not None:
            exact = solve_round(instance, warm_start=search.state)
            self.rows.append(
                {
                    "time": cluster.time,
                    "jobs": instance.num_jobs,
                    "ga": search.fitness,
                    "exact": exact.objective,
                    "status": exact.status.value,
                    "gap": (exact.objective - search.fitness) / exact.objective,
                }
            )
        return out


def workload_and_cluster() -> tuple[PolluxWorkload, Any, int]:
    if "--workload" in sys.argv:
        number = int(sys.argv[sys.argv.index("--workload") + 1])
        return read_workload_of(number), None, 16
    w6 = read_workload(SLICE / "workload-6.csv")
    rows = [j for j in w6.jobs if j.application in ("cifar10", "bert")][:SLICE_JOBS]
    traces = {name: read_model_traces(SLICE / "traces" / name) for name in ("bert", "cifar10")}
    return PolluxWorkload(tuple(rows)), traces, 2


def main() -> None:
    workload, traces, nodes = workload_and_cluster()
    probe = GapProbe(PolluxPolicy(seed=0, pop_size=30, generations=20))
    policies = [TiresiasPolicy(), OptimusOraclePolicy(), probe]
    print(f"{len(workload)} jobs on {nodes} nodes x 4 GPUs, 60 s rounds")
    print(f"{'policy':<16}{'avg JCT (s)':>12}{'makespan (s)':>14}{'GPU-hours':>11}  valid")
    for policy in policies:
        run = simulate(workload, policy, num_nodes=nodes, traces=traces)
        report = validate(run)
        assert report.ok, report.violations[:3]
        print(
            f"{policy.name:<16}{run.average_jct:>12.1f}{run.makespan:>14.0f}"
            f"{run.gpu_hours:>11.2f}  {report.ok}"
        )
    rows = probe.rows
    optimal = [r for r in rows if r["status"] == "optimal"]
    # the GA searches the same feasible set: it can never beat a proven optimum
    assert all(r["gap"] >= -GAP_TOL for r in optimal)
    short = [r for r in rows if r["gap"] > GAP_TOL]
    worst = 100 * max((r["gap"] for r in rows), default=0.0)
    print(
        f"\nPollux's genetic algorithm against the exact optimum, every {EVERY}th round: "
        f"{len(rows)} rounds solved ({len(optimal)} proven optimal), the GA at the optimum in "
        f"{len(rows) - len(short)}; largest gap {worst:.2f} %"
    )
    print(f"{'time (s)':>9}{'jobs':>6}{'GA mean':>10}{'optimum':>10}{'gap %':>8}  status")
    for row in short or rows[:3]:
        print(
            f"{row['time']:>9.0f}{row['jobs']:>6}{row['ga']:>10.4f}{row['exact']:>10.4f}"
            f"{100 * max(row['gap'], 0.0):>8.2f}  {row['status']}"
        )


if __name__ == "__main__":
    main()
