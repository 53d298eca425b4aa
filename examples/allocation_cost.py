"""Buy the most training per dollar, with and without deadlines (Gavel's cost policies).

A synthetic round of 24 jobs on 6 V100, 6 P100 and 6 K80 GPUs priced at the documented
on-demand prices (:mod:`optsched.allocation.gavel.prices`), a quarter of the jobs with a deadline.
Each policy is solved exactly (one HiGHS LP) and checked by the independent validator; the
table shows the steps bought per dollar, how busy each type is, and how many deadlines the
allocation meets (the cost policy without deadlines buys cheaper GPU time and misses some).
The last lines tighten one deadline past what any GPU can do: the round is reported
infeasible, never answered.

Run: python examples/allocation_cost.py
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.gavel import AllocationInstance, generate_instance, solve, validate
from optsched.allocation.gavel.prices import GPU_PRICES_PER_HOUR
from optsched.errors import NotOptimalError


def deadlines_met(inst: AllocationInstance, fractions: np.ndarray) -> str:
    """How many jobs with a deadline get at least steps left / seconds left (real speeds)."""
    theta = np.einsum("mj,mj->m", inst.throughputs, fractions)
    due = np.isfinite(inst.deadlines)
    met = theta[due] >= inst.steps[due] / inst.deadlines[due] * (1 - 1e-9)
    return f"{int(met.sum())}/{int(due.sum())}"


def main() -> None:
    inst = generate_instance(24, gpus_per_type=6, slo_fraction=0.25, seed=11)
    prices = ", ".join(f"{t} ${GPU_PRICES_PER_HOUR[t]:.2f}" for t in inst.gpu_types)
    sizes = dict(zip(inst.gpu_types, inst.capacity, strict=True))
    print(f"{inst.n_jobs} jobs on {sizes}; per GPU-hour: {prices}")
    print(f"{'policy':<20}{'steps/$':>12}  {'busy by type':<28}{'deadlines met':>14}")
    for policy in ("max-sum-throughput-perf", "min-cost", "min-cost-perf", "min-cost-slo-perf"):
        res = solve(inst, policy)
        report = validate(inst, res.solution, policy)
        assert report.ok, report.violations
        x = res.solution.fractions
        per_dollar = validate(inst, res.solution, "min-cost-perf").objective
        busy = (inst.scale_factors @ x) / np.maximum(inst.capacities, 1)
        shares = " ".join(f"{t}={b:.2f}" for t, b in zip(inst.gpu_types, busy, strict=True))
        print(f"{policy:<20}{per_dollar:>12.0f}  {shares:<28}{deadlines_met(inst, x):>14}")

    # One deadline no GPU type can meet: the round is infeasible and says which job.
    first = int(np.flatnonzero(np.isfinite(inst.deadlines))[0])
    jobs = list(inst.jobs)
    best = max(jobs[first].throughput_steps_per_s)
    jobs[first] = jobs[first].model_copy(
        update={"time_to_deadline_s": jobs[first].steps_remaining / (2 * best)}
    )
    tight = inst.model_copy(update={"jobs": tuple(jobs)})
    try:
        solve(tight, "min-cost-slo-perf")
    except NotOptimalError as err:
        print(f"tightened deadline: {err.result.status.value}: {err.result.message}")


if __name__ == "__main__":
    main()
