"""Interference-aware placement with predicted coefficients (Harmony ILP and CLWP).

A seeded ground truth of 8 job types is measured on 40% of the type pairs; matrix completion
predicts the rest. The predicted slowdowns become the placement coefficients kappa
(``PlacementInstance.with_interference``), the Harmony ILP places the jobs, and the placement is
then scored under the *true* coefficients, next to the true optimum and to a placement that
ignores interference (fewest servers).

Run: python examples/placement_interference.py
"""

from __future__ import annotations

import numpy as np

from optsched.interference import (
    MatrixCompletion,
    generate_interference_truth,
    interference_matrix,
)
from optsched.placement import generate_instance, solve, validate


def main() -> None:
    truth = generate_interference_truth(8, seed=0)
    observed = truth.observe_pairs(fraction=0.4, noise=0.05, seed=0)
    predicted = MatrixCompletion(seed=0).fit(observed).predict_matrix()
    true_pairs = truth.pairwise_slowdowns()
    unseen = np.isnan(observed)
    error = np.abs(predicted - true_pairs)[unseen].mean()
    print(f"matrix completion: mean abs error {error:.4f} on the {unseen.sum()} unmeasured pairs")

    base = generate_instance(8, n_servers=4, gpus=8, interference=False, seed=2)
    rng = np.random.default_rng(2)
    types = rng.integers(0, truth.n_types, size=len(base.jobs)).tolist()
    t0 = [job.standalone_time_s for job in base.jobs]
    with_true = base.with_interference(interference_matrix(true_pairs, types, t0))
    with_predicted = base.with_interference(interference_matrix(predicted, types, t0))

    def true_cost(placement) -> float:
        return validate(with_true, placement).objectives["interference"]

    optimum = solve(with_true, "interference")
    from_prediction = solve(with_predicted, "interference")
    oblivious = solve(with_true, "servers")
    clwp = solve(with_predicted, "clwp")
    print(f"\n{base.describe()}")
    print("weighted iteration time under the true interference (Harmony objective):")
    rows = [
        ("Harmony ILP, true kappa (optimum)", optimum.solution),
        ("Harmony ILP, predicted kappa", from_prediction.solution),
        ("CLWP ILP, predicted kappa", clwp.solution),
        ("fewest servers (interference-oblivious)", oblivious.solution),
    ]
    for label, placement in rows:
        cost = true_cost(placement)
        gap = (cost - optimum.objective) / optimum.objective
        used = len(set(placement.assignment.values()))
        print(f"  {label:<42} {cost:8.4f}  (+{100 * gap:5.1f}%, {used} servers)")


if __name__ == "__main__":
    main()
