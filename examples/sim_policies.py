"""Replay a production GPU-cluster trace under every queueing policy and compare them.

The ElasticFlow trace ``cluster10.csv`` (260 jobs) is read into the normalized job table, its
model names mapped to Gavel's measured job types, and replayed on a heterogeneous cluster
(16 V100 and 16 P100 GPUs, 8 per server) with Gavel's throughput table and a 30 s
checkpoint/restore cost. Each run is checked by the independent validator; the table shows the
JCT statistics, worst finish-time fairness, deadlines met and utilization, and a JCT CDF is
written to ``sim_policies.png``.

Run: python examples/sim_policies.py [PATH/TO/shared/data]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from optsched.report.sim import plot_jct_cdf
from optsched.sim import World, load_throughputs, parse_cluster, simulate, validate
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import make_policy

POLICIES = [
    "fifo",
    "sjf",
    "srtf",
    "srtf-perf",
    "edf",
    "tiresias-las",
    "tiresias-gittins",
    "gandiva",
]


def _data() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    here = Path(__file__).resolve().parents[1]
    for root in (here.parent, here.parent.parent):
        if (root / "shared" / "data").is_dir():
            return root / "shared" / "data"
    raise SystemExit("pass the path of shared/data (ElasticFlow and Gavel files)")


def main() -> None:
    data = _data()
    raw = pd.read_csv(data / "elasticflow" / "cluster10.csv").sort_values("submission_time")
    t0 = raw["submission_time"].min()
    frame = pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str),
            "arrival": (raw["submission_time"] - t0).astype(float),
            "num_gpus": raw["num_gpu"].astype("int64"),
            "model": raw["model_name"].astype(str),
            "total_steps": raw["num_iteration"].astype(float),
            "duration": raw["duration"].astype(float),
            "batch_size": raw["batch_size"].astype(float),
            "weight": 1.0,
            "deadline": (raw["deadline"] - t0).astype(float),
            "user": "",
        }
    )
    table = load_throughputs(data / "gavel" / "simulation_throughputs.json", reference="v100")
    world = World.from_frame(frame, parse_cluster("v100=16,p100=16"), table, restore_s=30.0)
    print(world)
    rows = []
    runs = {}
    for name in POLICIES:
        result = simulate(world, make_policy(name))
        report = validate(world, result)
        m = run_metrics(result)
        runs[name] = result
        rows.append(
            {
                "policy": name,
                "valid": report.ok,
                "mean JCT (h)": m["jct_mean"] / 3600,
                "p95 JCT (h)": m["jct_p95"] / 3600,
                "makespan (h)": m["makespan"] / 3600,
                "worst rho": m["rho_max"],
                "deadlines met": f"{m['deadlines_met']}/{m['deadlines']}",
                "utilization": m["utilization_mean"],
            }
        )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    fig = plot_jct_cdf(runs, unit="h")
    fig.savefig("sim_policies.png", dpi=120)
    print("JCT CDF written to sim_policies.png")


if __name__ == "__main__":
    main()
