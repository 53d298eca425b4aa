"""Themis's auction beside the exact min-max finish-time-fairness LP, per lease and per run.

The fifteen jobs of a Gavel physical-cluster trace (``artifact_evaluation.trace``) run on a
small heterogeneous cluster (two V100, two P100, four K80 GPUs) with Gavel's measured
throughputs, so that they contend. Three policies run in the same ten-minute leases:

* ``themis`` with the fairness knob f = 0.8 (the 20 % worst apps bid) and f = 0 (everyone bids);
* ``ftf-perf``, the exact min-max-rho LP of the allocation family, re-solved every lease.

First, on the first lease's round, the worst rho of each Themis allocation is set beside the
exact LP's optimum (Themis can never beat it; with more jobs than GPUs a lease leaves some job
without GPUs, whose steady-state rho is infinite). Then the table gives each run's worst finish-time
fairness, mean JCT and makespan; every run passes the simulator's validator. Without the shared
data the example uses a seeded synthetic trace instead.

Run: python examples/themis_vs_ftf.py [PATH/TO/shared/data]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from optsched.allocation.gavel import AllocationInstance, AllocationJob, objective_value, solve
from optsched.allocation.themis import themis_round
from optsched.sim import World, generate_instance, load_throughputs, parse_cluster, simulate
from optsched.sim import validate as validate_run
from optsched.sim.comparison import world_from_trace
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import AllocationLP, Themis
from optsched.traces import read_trace

CLUSTER = "v100=2,p100=2,k80=4"
LEASE = 600.0


def _data() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _world(data: Path) -> World:
    trace = data / "gavel" / "traces" / "physical_cluster" / "artifact_evaluation.trace"
    if not trace.is_file():
        print(f"({trace} not found: a seeded synthetic trace instead)")
        return generate_instance(12, CLUSTER, seed=0)
    table = load_throughputs(data / "gavel" / "simulation_throughputs.json", reference="v100")
    return world_from_trace(read_trace(str(trace)), parse_cluster(CLUSTER), table)


def first_round(world: World) -> AllocationInstance:
    """The round every job arrived for: rates per type, gangs, the work ahead (no history)."""
    names = world.cluster.names
    jobs = tuple(
        AllocationJob(
            job_id=j.job_id,
            throughput_steps_per_s=tuple(world.rate(j, name) for name in names),
            scale_factor=j.num_gpus,
            steps_remaining=j.work,
        )
        for j in world.jobs
    )
    return AllocationInstance(
        gpu_types=names, capacity=tuple(t.count for t in world.cluster.gpu_types), jobs=jobs
    )


def main() -> None:
    world = _world(_data())
    inst = first_round(world)
    exact = solve(inst, "ftf-perf")
    print(f"first lease, {inst.n_jobs} jobs: exact min-max rho {exact.objective:.4f}")
    for f in (0.8, 0.0):
        out = themis_round(inst, fairness=f, lease_s=LEASE)
        value = objective_value(inst, out.allocation.fractions, "ftf")
        idle = int((out.allocation.fractions.sum(axis=1) == 0).sum())
        # A job left out of a lease has no rate, so its steady-state rho is infinite.
        print(
            f"  themis f={f}: {len(out.participants)} of {len(out.apps)} apps bid, "
            f"{idle} jobs get nothing this lease, max rho {value:.4g} (>= {exact.objective:.4f})"
        )
    policies = {
        "themis f=0.8": Themis(fairness=0.8, lease_s=LEASE),
        "themis f=0": Themis(fairness=0.0, lease_s=LEASE),
        "ftf-perf (exact LP)": AllocationLP("ftf-perf", round_seconds=LEASE),
    }
    rows = []
    for name, policy in policies.items():
        result = simulate(world, policy)
        assert validate_run(world, result).ok
        metrics = run_metrics(result)
        rows.append(
            {
                "policy": name,
                "rho_max": metrics["rho_max"],
                "jct_mean": metrics["jct_mean"],
                "makespan": metrics["makespan"],
                "finished": metrics["finished"],
            }
        )
    with pd.option_context("display.width", 120, "display.precision", 4):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
