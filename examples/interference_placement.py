"""Interference-aware placement with predicted coefficients, scored under the true interference.

Twelve synthetic job types have a known pairwise slowdown matrix S; 35% of its entries are
measured (5% noise). Each predictor turns the measurements into a full matrix, which becomes
the coefficients kappa of the Harmony-style interference ILP (``objective="interference"``) of a
placement instance with 8 jobs on 4 servers of 4 GPUs. Every placement is then scored by the
independent validator under the *true* kappa, and compared with the placement that knows the
truth (the optimum): the regret says how much the prediction error costs.

Run: ``python examples/interference_placement.py`` (about 30 s; needs HiGHS).
"""

from __future__ import annotations

import numpy as np

from optsched.interference import (
    CoLocationRegressor,
    MatrixCompletion,
    MeanBaseline,
    generate_interference_truth,
    interference_matrix,
    prediction_errors,
)
from optsched.placement import generate_instance, solve, validate

N_TYPES, SEEDS = 12, range(4)

truth = generate_interference_truth(N_TYPES, seed=0)
true_s = truth.pairwise_slowdowns()
observed = truth.observe_pairs(fraction=0.35, noise=0.05, seed=0)
profiles = truth.measured_profiles(noise=0.03, seed=1)
predictions = {
    "completion (NMF)": MatrixCompletion(seed=0).fit(observed).predict_matrix(),
    "regression (GBR)": CoLocationRegressor("gbr", seed=0)
    .fit(profiles, truth.sample_colocations(400, seed=2))
    .predict_matrix(profiles),
    "global mean": MeanBaseline("global").fit(observed).predict_matrix(),
    "row mean": MeanBaseline("row").fit(observed).predict_matrix(),
    "oblivious (kappa = 0)": np.zeros_like(true_s),
}
print("prediction RMSE over all type pairs:")
for name, pred in predictions.items():
    print(f"  {name:<22} {prediction_errors(pred, true_s)['rmse']:.4f}")

regret: dict[str, list[float]] = {name: [] for name in predictions}
print("\nweighted iteration time under the true interference (s), and regret vs the optimum")
for seed in SEEDS:
    inst = generate_instance(8, n_servers=4, gpus=4, max_workers=2, interference=False, seed=seed)
    job_types = np.random.default_rng(seed).integers(0, N_TYPES, size=len(inst.jobs))
    t0 = [job.standalone_time_s for job in inst.jobs]
    true_inst = inst.with_interference(interference_matrix(true_s, job_types, t0))
    best = solve(true_inst, "interference")
    line = f"instance {seed}: optimum {best.objective:.3f}"
    for name, pred in predictions.items():
        kappa = interference_matrix(pred, job_types, standalone_times=t0)
        sol = solve(inst.with_interference(kappa), "interference")
        value = validate(true_inst, sol.solution).objectives["interference"]
        assert value is not None and value >= best.objective - 1e-6  # the optimum is a lower bound
        regret[name].append(value / best.objective - 1)
    print(line + "  " + "  ".join(f"{n.split()[0]} {r[-1]:+.1%}" for n, r in regret.items()))

print("\nmean regret over the instances:")
for name, values in regret.items():
    print(f"  {name:<22} {np.mean(values):6.1%}")
