"""How far is each queueing policy from the best schedule possible on the same small trace?

Six jobs of a Gavel physical-cluster trace (``artifact_evaluation.trace``; all arrive at once)
run on a small heterogeneous cluster (one V100, one P100, two K80 on one server) with Gavel's
measured throughputs. Every policy runs in rounds of the same length as the exact model of that
round-based world (:mod:`optsched.sim.optimum.exact`), which is solved for minimum total weighted
JCT
and minimum makespan; each optimum is replayed by the simulator and checked by its validator.
The table shows every policy's JCT statistics and its gap to each proven optimum. Without the
shared data the example uses a seeded synthetic trace instead.

Run: python examples/sim_compare.py [PATH/TO/shared/data]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from optsched.sim import (
    ClusterSpec,
    GpuType,
    Throughputs,
    World,
    generate_job_table,
    load_throughputs,
    parse_cluster,
)
from optsched.sim.comparison import compare, world_from_trace
from optsched.traces import read_trace

POLICIES = ["fifo", "sjf", "srtf", "srtf-perf", "tiresias-las", "gandiva"]


def _data() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _world(data: Path, tmp: Path) -> World:
    trace = data / "gavel" / "traces" / "physical_cluster" / "artifact_evaluation.trace"
    if not trace.is_file():
        print(f"({trace} not found: a seeded synthetic trace instead)")
        cluster = ClusterSpec(gpu_types=(GpuType(name="v100", count=2, gpus_per_server=2),))
        table = generate_job_table(6, seed=1, gangs=(1, 2), gang_weights=(0.7, 0.3))
        return World.from_frame(table, cluster, Throughputs.uniform(cluster.names))
    six = tmp / "six.trace"
    with trace.open(encoding="utf-8") as fh:
        six.write_text("".join(fh.readlines()[:6]), encoding="utf-8")
    cluster = parse_cluster("v100=1,p100=1,k80=2:2")
    table = load_throughputs(data / "gavel" / "simulation_throughputs.json", reference="v100")
    return world_from_trace(read_trace(six), cluster, table)


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        world = _world(_data(), Path(tmp))
    result = compare(world, POLICIES, exact=True, objectives=["weighted-jct", "makespan"])
    for objective, res in result.exact.items():
        print(
            f"exact {objective}: {res.status.value}, {res.objective:.6g} "
            f"({res.extra['rounds']} rounds of {res.extra['round_seconds']:g} s, "
            f"{res.solve_seconds:.2f} s)"
        )
    cols = [
        "policy",
        "jct_mean",
        "jct_p95",
        "makespan",
        "rho_max",
        "wakeups",
        "shared",
        "gap_weighted-jct",
        "gap_makespan",
    ]
    with pd.option_context("display.width", 160, "display.precision", 4):
        print(result.to_frame()[cols].to_string(index=False))


if __name__ == "__main__":
    main()
