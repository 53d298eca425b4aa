"""Chronus against EDF on a small deadline trace: deadline satisfaction and best-effort JCT.

Six seeded synthetic traces of 20 jobs (60 % with a deadline of 1.5-4x their isolated
duration) run on 4 V100 and 4 K80 GPUs under three policies, in the same 10-minute leases:
``chronus`` (the admission MILP every lease), ``chronus-greedy`` (Chronus's greedy admission)
and ``edf``. The tables give the deadlines met per seed, and over all seeds the deadline
satisfaction ratio and the mean best-effort JCT. Arrivals are online and deadlines fall inside
leases, so no policy dominates on every seed. Every run is checked by the simulator's
validator, every job Chronus admitted is checked to meet its deadline, and one lease instance
is solved by the MILP, the greedy and EDF side by side.

Run: python examples/chronus_deadlines.py
"""

from __future__ import annotations

import pandas as pd

from optsched import sim
from optsched.allocation import chronus
from optsched.sim.policies import make_policy
from optsched.sim.policies.chronus import Chronus

LEASE = 600.0
SEEDS = range(6)


def main() -> None:
    rows = []
    for seed in SEEDS:
        world = sim.generate_instance(
            20,
            "v100=4,k80=4",
            seed=seed,
            deadline_fraction=0.6,
            mean_interarrival=80.0,
            mu=6.5,
            sigma=0.8,
        )
        for policy in (Chronus(LEASE), Chronus(LEASE, mode="greedy"), make_policy("edf")):
            record = sim.simulate(world, policy, round_seconds=LEASE)
            sim.validate(world, record).raise_if_invalid()
            metrics = sim.deadline_metrics(record)
            if isinstance(policy, Chronus):
                done = dict(zip([j.job_id for j in world.jobs], record.completion, strict=True))
                for decision in policy.log:
                    for job in decision.admitted:  # a promise is a promise
                        assert done[job] <= world.job(job).deadline, job
            rows.append(
                {
                    "seed": seed,
                    "policy": policy.name,
                    "deadlines": metrics["deadlines"],
                    "met": metrics["deadlines_met"],
                    "BE JCT mean (s)": metrics["best_effort_jct_mean"],
                }
            )
    frame = pd.DataFrame(rows)
    print(frame.pivot(index="seed", columns="policy", values="met").to_string())
    total = frame.groupby("policy").agg(
        met=("met", "sum"), deadlines=("deadlines", "sum"), be_jct=("BE JCT mean (s)", "mean")
    )
    total["be_jct"] = total["be_jct"].round(0)
    total["satisfaction"] = (total["met"] / total["deadlines"]).round(3)
    print(total.to_string())

    # One lease boundary on its own: the exact MILP against the two heuristics.
    inst = chronus.generate_instance(10, 3, leases=6, gpu_types=("v100", "k80"), gpus=4, seed=3)
    exact = chronus.solve(inst)
    print(f"\n{inst!r}")
    for plan in (
        exact.solution,
        chronus.ChronusGreedy().run(inst),
        chronus.EDFBaseline().run(inst),
    ):
        assert plan is not None
        report = chronus.validate(inst, plan)
        ok = "valid" if report.ok else f"{len(report.violations)} violation(s)"
        progress = report.objectives["best-effort"]
        print(
            f"{plan.algorithm:>15}: admits {len(plan.admitted)}, BE progress {progress:.3f} ({ok})"
        )


if __name__ == "__main__":
    main()
