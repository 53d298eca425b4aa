r"""Seeded synthetic job tables and worlds.

:func:`generate_job_table` draws ``n`` jobs: Poisson arrivals at rate ``1 / mean_interarrival``,
log-normal durations (median ``exp(mu)`` seconds, shape ``sigma``: heavy-tailed, as production
traces are), gang sizes from ``gangs`` with the given weights, model names from ``models``,
deadlines ``arrival + slack x duration`` for a fraction ``deadline_fraction`` of the jobs
(``slack`` uniform in ``[1.5, 4]``), unit weights. It returns the normalized job table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim.world.cluster import ClusterSpec, parse_cluster
from optsched.sim.world.jobs import JOB_COLUMNS, World
from optsched.sim.world.throughputs import Throughputs

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["generate_instance", "generate_job_table"]


def generate_job_table(
    n: int,
    *,
    seed: int,
    mean_interarrival: float = 120.0,
    mu: float = 7.0,
    sigma: float = 1.5,
    gangs: Sequence[int] = (1, 2, 4, 8),
    gang_weights: Sequence[float] = (0.6, 0.2, 0.12, 0.08),
    models: Sequence[str] = ("",),
    deadline_fraction: float = 0.0,
) -> pd.DataFrame:
    """A seeded synthetic normalized job table (see the module notes).

    Raises
    ------
    InvalidInstanceError
        ``n`` not in ``[1, max_trace_rows]`` or a parameter out of range (field named).
    """
    import pandas as pd

    if not isinstance(n, int) or n < 1:
        raise InvalidInstanceError("n", f"must be an integer >= 1, got {n!r}")
    limits.check_size("n", n, "max_trace_rows", "jobs")
    for name, value in (("mean_interarrival", mean_interarrival), ("sigma", sigma)):
        if not (math.isfinite(value) and value > 0):
            raise InvalidInstanceError(name, f"must be a finite number > 0, got {value}")
    if not math.isfinite(mu):
        raise InvalidInstanceError("mu", f"must be finite, got {mu}")
    if not 0 <= deadline_fraction <= 1:
        raise InvalidInstanceError(
            "deadline_fraction", f"must be in [0, 1], got {deadline_fraction}"
        )
    if len(gangs) != len(gang_weights) or not gangs or any(g < 1 for g in gangs):
        raise InvalidInstanceError("gangs", "must be sizes >= 1, one weight each")
    w = np.asarray(gang_weights, dtype=float)
    if not (np.all(w >= 0) and w.sum() > 0):
        raise InvalidInstanceError("gang_weights", "must be >= 0 with a positive sum")
    if not models:
        raise InvalidInstanceError("models", "must name at least one model ('' is generic)")
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(mean_interarrival, n))
    arrival -= arrival[0]
    duration = rng.lognormal(mu, sigma, n)
    gang = rng.choice(np.asarray(gangs, dtype=np.int64), n, p=w / w.sum())
    model = rng.choice(np.asarray(models, dtype=object), n)
    has_deadline = rng.random(n) < deadline_fraction
    deadline = np.where(has_deadline, arrival + rng.uniform(1.5, 4.0, n) * duration, np.nan)
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "arrival": arrival,
            "num_gpus": gang.astype("int64"),
            "model": model.astype(str),
            "total_steps": np.nan,
            "duration": duration,
            "batch_size": np.nan,
            "weight": 1.0,
            "deadline": deadline,
            "user": "",
        }
    )
    return frame[list(JOB_COLUMNS)]


def generate_instance(
    n: int,
    cluster: ClusterSpec | str = "v100=16",
    throughputs: Throughputs | None = None,
    *,
    seed: int,
    restore_s: float = 0.0,
    **kwargs: float,
) -> World:
    """A seeded synthetic :class:`World`: :func:`generate_job_table` on ``cluster``.

    Gangs larger than the cluster's largest GPU type are left out of the draw.
    """
    spec = parse_cluster(cluster) if isinstance(cluster, str) else cluster
    largest = max(t.count for t in spec.gpu_types)
    gangs = tuple(g for g in (1, 2, 4, 8) if g <= largest)
    weights = (0.6, 0.2, 0.12, 0.08)[: len(gangs)]
    frame = generate_job_table(n, seed=seed, gangs=gangs, gang_weights=weights, **kwargs)  # type: ignore[arg-type]
    return World.from_frame(frame, spec, throughputs, restore_s=restore_s)
