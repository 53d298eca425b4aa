"""Optimus end to end: fit the models from noisy measurements, allocate, compare with the optimum.

1. Six jobs with planted (hidden) convergence curves and speed models emit noisy observations:
   (step, loss) points of their training so far and (PSs, workers, step time) probes.
2. Optimus's fits (bounded least squares) recover the models; the table shows how close.
3. The fitted models make an allocation instance on a cluster of GPUs and CPU cores: the
   published marginal-gain greedy allocates PSs and workers, the exact MILP finds the least
   total remaining time for the same models, and the independent validator checks both.
4. In the simulator: the ``optimus`` policy sizes elastic gangs every round by marginal gain
   on speed models it fits to the world's rates; each run passes the simulator's validator.

Run: ``python examples/optimus_fit_and_allocate.py`` (a few seconds).
"""

from __future__ import annotations

import numpy as np

from optsched import sim
from optsched.allocation.optimus import (
    ConvergenceSpec,
    OptimusInstance,
    OptimusJob,
    fit_convergence,
    fit_speed,
    loss_curve,
    marginal_gain,
    solve,
    validate,
)
from optsched.allocation.optimus.models import step_design
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import make_policy

#: Measurement noise (relative standard deviation) of losses and step times.
NOISE = 0.01
#: (PSs, workers) combinations each job is probed at (Optimus probes a handful).
PROBES = [(1, 1), (1, 2), (2, 2), (2, 4), (1, 4), (4, 4), (3, 6), (4, 8)]


def main() -> None:
    rng = np.random.default_rng(7)
    jobs = []
    print(f"{'job':<5}{'beta (planted)':>30}{'beta (fitted)':>30}{'speed rmse':>12}")
    for i in range(6):
        # 1. The hidden truth and the observations it emits.
        beta = (rng.uniform(1e-3, 5e-3), rng.uniform(0.5, 2.0), rng.uniform(0.05, 0.5))
        theta = (rng.uniform(0.1, 0.5), rng.uniform(0.02, 0.1), rng.uniform(0.0, 0.01), 0.002)
        progress = float(rng.integers(2_000, 6_000))
        steps = np.linspace(0.0, progress, 30)
        losses = loss_curve(beta, steps) * (1 + rng.normal(0, NOISE, steps.size))
        p = np.array([a for a, _ in PROBES])
        w = np.array([b for _, b in PROBES])
        times = step_design("async", p, w) @ np.array(theta)
        times = times * (1 + rng.normal(0, NOISE, times.size))

        # 2. The fits.
        conv = fit_convergence(list(zip(steps, losses, strict=True)))
        spd = fit_speed(list(zip(p, w, times, strict=True)), "async")
        show = "(" + ", ".join(f"{v:.3g}" for v in beta) + ")"
        fitted = "(" + ", ".join(f"{v:.3g}" for v in conv.beta) + ")"
        print(f"job{i:<2}{show:>30}{fitted:>30}{spd.rmse:>12.3g}")
        jobs.append(
            OptimusJob(
                job_id=f"job{i}",
                convergence=ConvergenceSpec(
                    beta=conv.beta,
                    progress=progress,
                    threshold=1e-4,
                    window=100.0,
                    max_steps=100_000.0,
                ),
                speed_kind="async",
                theta=spd.theta,
                worker_demand=(1.0, 4.0),  # one GPU and 4 cores per worker
                ps_demand=(0.0, 2.0),  # 2 cores per PS
                max_workers=8,
                max_ps=8,
            )
        )

    # 3. Allocate with the fitted models.
    inst = OptimusInstance(resources=("gpu", "cpu"), capacity=(12.0, 64.0), jobs=tuple(jobs))
    greedy = marginal_gain(inst)
    exact = solve(inst)
    assert exact.solution is not None and exact.objective is not None
    g = validate(inst, greedy)
    e = validate(inst, exact.solution)
    g.raise_if_invalid()
    e.raise_if_invalid()
    assert g.objective is not None and exact.objective <= g.objective * (1 + 1e-6)
    print(f"\n{'job':<6}{'steps left':>11}{'greedy p, w':>13}{'exact p, w':>12}")
    for j, job in enumerate(inst.jobs):
        print(
            f"{job.job_id:<6}{job.remaining:>11.0f}"
            f"{f'{greedy.ps[j]}, {greedy.workers[j]}':>13}"
            f"{f'{exact.solution.ps[j]}, {exact.solution.workers[j]}':>12}"
        )
    above = max(0.0, 100 * (g.objective / exact.objective - 1))
    print(
        f"\ntotal remaining time: greedy {g.objective:,.0f} s, exact {exact.objective:,.0f} s "
        f"({exact.status.value}; greedy is {above:.2f}% "
        f"above); MILP with {exact.size['variables']} choices solved in "
        f"{exact.solve_seconds:.2f} s"
    )

    # 4. The simulator: 20 jobs on 8 V100 + 8 K80 GPUs, gangs elastic from 1 GPU to 4x the
    #    request. A rigid-gang baseline runs the same world.
    world = sim.generate_instance(20, "v100=8,k80=8", seed=2).elastic(min_gpus=1, max_factor=4)
    print(f"\n{'policy':<22}{'mean JCT (s)':>14}{'makespan (s)':>14}  valid")
    for name in ("optimus", "fifo-backfill-perf"):
        run = sim.simulate(world, make_policy(name))
        valid = sim.validate(world, run)
        valid.raise_if_invalid()
        m = run_metrics(run)
        print(f"{name:<22}{m['jct_mean']:>14,.0f}{m['makespan']:>14,.0f}  {valid.ok}")


if __name__ == "__main__":
    main()
