"""Interference predictors vs mean baselines on held-out entries of a known ground truth.

For several seeds, :func:`optsched.interference.compare_predictors` draws 30 job types
(6 of them never measured), observes 30% of the pairwise slowdowns among the other 24 with 5%
multiplicative noise, and scores every predictor on the unobserved pairs against the noise-free
truth. ``cold RMSE`` is the error on pairs among the 6 unseen types, which only the regressors
(and the global mean) can predict. The last rows time one fit of each learner on the seed-0
data.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from optsched.interference import (
    CoLocationRegressor,
    MatrixCompletion,
    compare_predictors,
    generate_interference_truth,
)

N_TYPES, COLD, FRACTION, NOISE = 30, 6, 0.3, 0.05
SEEDS = [0, 1, 2, 3, 4]
QUICK_SEEDS = [0, 1]


def _fit_seconds(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(quick: bool = False) -> dict[str, Any]:
    seeds = QUICK_SEEDS if quick else SEEDS
    regressors = ("gbr",) if quick else ("gbr", "mlp")
    rmse: dict[str, list[float]] = defaultdict(list)
    mae: dict[str, list[float]] = defaultdict(list)
    cold: dict[str, list[float]] = defaultdict(list)
    ranks = []
    for seed in seeds:
        truth = generate_interference_truth(N_TYPES, seed=seed)
        for s in compare_predictors(
            truth,
            fraction=FRACTION,
            noise=NOISE,
            cold_types=COLD,
            regressors=regressors,
            seed=seed,
        ):
            name = s.name.split("(")[0]
            if name == "completion-nmf":
                ranks.append(int(s.name.split("=")[1].rstrip(")")))
            rmse[name].append(s.rmse)
            mae[name].append(s.mae)
            if s.cold_rmse is not None:
                cold[name].append(s.cold_rmse)
    rows: list[list[Any]] = []
    for name in rmse:
        rows.append(
            [
                name,
                float(np.mean(rmse[name])),
                float(np.std(rmse[name])),
                float(np.mean(mae[name])),
                float(np.mean(cold[name])) if cold[name] else "-",
            ]
        )
    global_rmse = float(np.mean(rmse["mean-global"]))
    best_mean = min(
        float(np.mean(rmse[f"mean-{k}"])) for k in ("global", "row", "column", "additive")
    )

    truth = generate_interference_truth(N_TYPES - COLD, seed=0)
    observed = truth.observe_pairs(FRACTION, NOISE, seed=0)
    profiles = truth.measured_profiles(0.03, seed=1)
    samples = truth.sample_colocations(600, noise=NOISE, seed=2)
    timings = {
        "completion rank=auto (3-fold CV over ranks 1-4)": _fit_seconds(
            lambda: MatrixCompletion("auto").fit(observed)
        ),
        "completion rank=4": _fit_seconds(lambda: MatrixCompletion(4).fit(observed)),
        "regression-gbr (600 samples)": _fit_seconds(
            lambda: CoLocationRegressor("gbr").fit(profiles, samples)
        ),
    }
    if not quick:
        timings["regression-mlp (600 samples)"] = _fit_seconds(
            lambda: CoLocationRegressor("mlp").fit(profiles, samples)
        )
    for name, seconds in timings.items():
        rows.append([f"fit time (s): {name}", seconds, "-", "-", "-"])
    return {
        "name": "bench_interference",
        "title": "Interference predictors vs mean baselines (held-out RMSE against the truth)",
        "description": (
            f"{N_TYPES} job types ({COLD} unseen), {FRACTION:.0%} of pairs observed with "
            f"{NOISE:.0%} noise, seeds {seeds}; mean and std over seeds. Slowdowns are relative "
            "(0.1 = 10% slower)."
        ),
        "columns": ["predictor", "RMSE", "RMSE std", "MAE", "cold RMSE"],
        "rows": rows,
        "summary": {
            "completion RMSE / global-mean RMSE": float(np.mean(rmse["completion-nmf"]))
            / global_rmse,
            "completion RMSE / best mean baseline": float(np.mean(rmse["completion-nmf"]))
            / best_mean,
            "regression-gbr RMSE / best mean baseline": float(np.mean(rmse["regression-gbr"]))
            / best_mean,
            "ranks chosen by CV": str(ranks),
        },
        "notes": [
            "The regressors also see 600 measured co-locations of 1-3 partners and the types' "
            "profiled features; the completion sees only the sparse pairwise matrix.",
        ],
    }
