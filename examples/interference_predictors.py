"""Predict pairwise interference from sparse measurements, and turn it into placement coefficients.

30 synthetic job types with latent resource profiles (compute, memory bandwidth, PCIe, NIC) and
a known slowdown function; 24 of them have 30% of their pairwise slowdowns measured with 5%
noise, 6 were never measured. Every predictor is scored on the pairs that were not measured,
against the noise-free truth, and the learned ones are compared with the mean baselines.

Run: ``python examples/interference_predictors.py`` (about 15 s).
"""

from __future__ import annotations

import numpy as np

from optsched.interference import (
    MatrixCompletion,
    compare_predictors,
    generate_interference_truth,
    interference_matrix,
)

SEED = 0

truth = generate_interference_truth(30, seed=SEED)
scores = compare_predictors(
    truth, fraction=0.3, noise=0.05, cold_types=6, regressors=("gbr", "mlp"), seed=SEED
)
print("held-out error against the ground truth (relative slowdown; 0.10 = 10% slower)")
print(f"{'predictor':<28} {'RMSE':>8} {'MAE':>8} {'max':>8} {'unseen types RMSE':>18}")
for s in scores:
    cold = f"{s.cold_rmse:.4f}" if s.cold_rmse is not None else "-"
    print(f"{s.name:<28} {s.rmse:8.4f} {s.mae:8.4f} {s.max_error:8.4f} {cold:>18}")
best_mean = min(s.rmse for s in scores if s.name.startswith("mean-"))
for s in scores:
    if not s.name.startswith("mean-"):
        print(f"  {s.name}: {1 - s.rmse / best_mean:.0%} lower RMSE than the best mean baseline")

# From a completed type-by-type matrix to the jobs x jobs coefficients of a placement model.
observed = truth.observe_pairs(0.3, 0.05, seed=SEED)
completed = MatrixCompletion(rank=4, seed=SEED).fit(observed).predict_matrix()
job_types = [3, 17, 3, 8]  # two jobs of type 3
standalone = truth.standalone_times[job_types]
kappa = interference_matrix(completed, job_types, standalone_times=standalone)
print("\nkappa (seconds of iteration time job a loses per server shared with job b):")
with np.printoptions(precision=4, suppress=True):
    print(kappa)
exact = interference_matrix(truth.pairwise_slowdowns(), job_types, standalone_times=standalone)
print(f"largest error against the true kappa: {np.abs(kappa - exact).max():.4f} s")
