"""Space sharing: Gavel's packed allocation policies, one round and then a whole simulation.

1. One round of 60 jobs on 15 V100, 15 P100 and 15 K80 GPUs, whose jobs belong to four
   co-location classes with a seeded table of normalised pair throughputs: each packed policy
   beside its unpacked ``-perf`` form, with the number of job pairs it shares gangs with and the
   independent validator's verdict.
2. Twelve jobs of three measured job types replayed on 2 V100 and 2 K80 GPUs under
   ``max-min-perf`` and ``max-min-packed``: the packed run shares gangs at the measured pair
   rates, and both runs pass the simulator's validator.

Run: python examples/allocation_packed.py
"""

from __future__ import annotations

import pandas as pd

from optsched import sim
from optsched.allocation.gavel import generate_instance, solve, validate
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import make_policy
from optsched.sim.world.throughputs import Throughputs


def one_round() -> pd.DataFrame:
    inst = generate_instance(60, gpus_per_type=15, job_types=4, seed=5)
    rows = []
    for objective in ("max-min", "max-sum-throughput", "makespan", "ftf"):
        for form in ("perf", "packed"):
            policy = f"{objective}-{form}"
            res = solve(inst, policy)
            rows.append(
                {
                    "policy": policy,
                    "objective": res.objective,
                    "pairs": res.solution.n_pairs,
                    "LP solves": res.extra["lp_solves"],
                    "valid": validate(inst, res.solution, policy).ok,
                }
            )
    return pd.DataFrame(rows)


def _table() -> Throughputs:
    """Three job types; A shares well with B and with itself on V100, B with C on K80."""
    alone = {
        ("v100", True): {("A", 1): 2.0, ("B", 1): 1.0, ("C", 1): 1.5},
        ("k80", True): {("A", 1): 0.8, ("B", 1): 0.5, ("C", 1): 0.6},
    }
    pairs = {
        ("v100", True): {
            (("A", 1), ("B", 1)): (1.6, 0.9),
            (("B", 1), ("A", 1)): (0.9, 1.6),
            (("A", 1), ("A", 1)): (1.3, 1.3),
        },
        ("k80", True): {(("B", 1), ("C", 1)): (0.4, 0.5), (("C", 1), ("B", 1)): (0.5, 0.4)},
    }
    return Throughputs(alone, pairs, generic_speed={"v100": 1.0, "k80": 0.4}, reference="v100")


def simulation() -> pd.DataFrame:
    n = 12
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "arrival": [90.0 * i for i in range(n)],
            "num_gpus": [1] * n,
            "model": ["ABC"[i % 3] for i in range(n)],
            "total_steps": [float("nan")] * n,
            "duration": [2400.0 + 600.0 * (i % 4) for i in range(n)],
            "batch_size": [float("nan")] * n,
            "weight": [1.0] * n,
            "deadline": [float("nan")] * n,
            "user": [""] * n,
        }
    )
    world = sim.World.from_frame(frame, sim.parse_cluster("v100=2,k80=2"), _table())
    rows = []
    for name in ("max-min-perf", "max-min-packed"):
        result = sim.simulate(world, make_policy(name))
        assert sim.validate(world, result).ok
        iv = pd.DataFrame(result.intervals)
        shared = iv[iv["shared_with"].astype(str) != ""]
        metrics = run_metrics(result)
        rows.append(
            {
                "policy": name,
                "mean JCT (s)": metrics["jct_mean"],
                "makespan (s)": metrics["makespan"],
                "shared GPU-seconds": float((shared["end"] - shared["start"]).sum()),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    with pd.option_context("display.width", 120, "display.float_format", "{:.4g}".format):
        print("One round, 60 jobs, 4 co-location classes:")
        print(one_round().to_string(index=False))
        print("\nSimulation, 12 jobs on v100=2,k80=2 (every run validated):")
        print(simulation().to_string(index=False))


if __name__ == "__main__":
    main()
