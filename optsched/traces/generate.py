"""Synthetic traces with the normalized schema (for tests, examples and simulator studies)."""

from __future__ import annotations

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.traces.schema import Trace, build_frame

__all__ = ["generate_trace"]

_MODELS = ("resnet50", "vgg16", "bert", "gpt2", "inception3", "deepspeech2")
_GPUS = np.array([1, 2, 4, 8])
_GPU_P = np.array([0.7, 0.1, 0.15, 0.05])  # Gavel's Philly-derived scale-factor mix


def generate_trace(
    num_jobs: int,
    *,
    seed: int = 0,
    arrival_rate: float = 1 / 600,
    deadline_fraction: float = 0.0,
) -> Trace:
    """A random trace: Poisson arrivals, Philly-like GPU demands and log-uniform durations.

    Parameters
    ----------
    num_jobs : int
        Jobs, >= 0.
    seed : int
        Seed of the generator (same seed, same trace).
    arrival_rate : float
        Jobs per second (exponential inter-arrival times of mean ``1 / arrival_rate``).
    deadline_fraction : float
        Share of jobs given a deadline ``arrival + U(1.2, 3) x duration``.

    Returns
    -------
    Trace
        ``format="generated"``: durations are 10^1.5..10^4 minutes (log-uniform, as Gavel's
        generator draws them), GPU demands 1/2/4/8 with probabilities 0.7/0.1/0.15/0.05,
        steps = duration x a per-model rate, batch sizes 32..256.
    """
    if not isinstance(num_jobs, int) or num_jobs < 0:
        raise InvalidInstanceError("num_jobs", f"must be an integer >= 0, got {num_jobs!r}")
    if not (arrival_rate > 0 and np.isfinite(arrival_rate)):
        raise InvalidInstanceError("arrival_rate", f"must be > 0, got {arrival_rate!r}")
    if not 0 <= deadline_fraction <= 1:
        raise InvalidInstanceError(
            "deadline_fraction", f"must be in [0, 1], got {deadline_fraction!r}"
        )
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / arrival_rate, num_jobs))
    if num_jobs:
        arrival -= arrival[0]
    duration = 60.0 * 10 ** rng.uniform(1.5, 4.0, num_jobs)
    models = rng.integers(0, len(_MODELS), num_jobs)
    rate = 1.0 + models  # steps per second by model, so steps and duration are consistent
    deadline = np.full(num_jobs, np.nan)
    has = rng.random(num_jobs) < deadline_fraction
    deadline[has] = arrival[has] + rng.uniform(1.2, 3.0, int(has.sum())) * duration[has]
    columns = {
        "job_id": [f"job{i}" for i in range(num_jobs)],
        "arrival": arrival.tolist(),
        "num_gpus": rng.choice(_GPUS, num_jobs, p=_GPU_P).tolist(),
        "model": [_MODELS[m] for m in models],
        "total_steps": np.round(duration * rate).tolist(),
        "duration": duration.tolist(),
        "batch_size": (32.0 * 2 ** rng.integers(0, 4, num_jobs)).tolist(),
        "weight": np.ones(num_jobs).tolist(),
        "deadline": deadline.tolist(),
        "user": [f"user{u}" for u in rng.integers(0, 8, num_jobs)],
    }
    meta = {"seed": seed, "arrival_rate": arrival_rate, "time_origin": 0.0, "skipped": {}}
    return Trace(build_frame(columns), format="generated", meta=meta)
