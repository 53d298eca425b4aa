"""ANDREAS: energy cost plus weighted tardiness, the exact MILP beside the randomised greedy.

Part 1 draws a scheduling point (8 queued jobs, one 4-GPU node each of V100, P100 and K80),
solves it exactly and runs the greedy with 1, 16 and 256 restarts; every plan is checked by the
independent validator and no greedy plan beats the optimum. Part 2 replays a synthetic
30-job trace on a small heterogeneous cluster (illustrative per-GPU speeds: P100 0.6 and K80
0.3 of a V100, so a V100 does the most work per joule) under FIFO, SRTF (heterogeneity-aware)
and the ``andreas`` policy (also on elastic gangs, choosing each job's GPU count), and prints
JCT, makespan, GPU-hours and the GPU energy of each run.

Run: python examples/andreas_energy.py
"""

from __future__ import annotations

import pandas as pd

from optsched import sim
from optsched.allocation.andreas import RandomizedGreedy, generate_instance, solve, validate
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import make_policy
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, leq


def one_point() -> None:
    inst = generate_instance(8, seed=7)
    exact = solve(inst)
    assert exact.objective is not None and exact.solution is not None
    print(f"{inst!r}\nMILP optimum: {exact.objective:.4f} ({exact.status.value})")
    print(exact.solution.to_frame().to_string(index=False))
    for restarts in (1, 16, 256):
        run = RandomizedGreedy(restarts=restarts, seed=0).run(inst)
        report = validate(inst, run.plan)
        assert report.ok and leq(exact.objective, run.objective, OBJECTIVE_AGREEMENT_TOL)
        gap = run.objective / exact.objective - 1
        print(f"greedy, {restarts:4d} restarts: {run.objective:.4f} (+{gap:.1%} over the optimum)")


def simulation() -> None:
    speeds = Throughputs.uniform({"v100": 1.0, "p100": 0.6, "k80": 0.3})
    world = sim.generate_instance(30, "v100=4,p100=4,k80=8", speeds, seed=4)
    elastic = world.elastic(min_gpus=1, max_factor=2.0)  # gangs of 1 to twice the request
    rows = []
    runs = [("fifo", world), ("srtf-perf", world), ("andreas", world), ("andreas", elastic)]
    for name, w in runs:
        record = sim.simulate(w, make_policy(name))
        assert sim.validate(w, record).ok
        m = run_metrics(record)
        rows.append(
            {
                "policy": name + (", elastic" if w is elastic else ""),
                "jct_mean_h": m["jct_mean"] / 3600,
                "makespan_h": m["makespan"] / 3600,
                "gpu_hours": m["gpu_hours"],
                "energy_kwh": m["energy_kwh"],
            }
        )
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    one_point()
    simulation()
