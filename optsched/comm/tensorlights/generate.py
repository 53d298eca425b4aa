"""Seeded synthetic TensorLights instances built from the shipped DNN profiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from optsched import limits
from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.errors import InvalidInstanceError

#: What one generated job (or host) counts against ``max_array_cells``.
JOB_RECORD_CELLS = 1000

__all__ = ["DEFAULT_BANDWIDTH", "generate_instance"]

#: Default NIC capacity of :func:`generate_instance`: 10 Gbit/s in bytes per second.
DEFAULT_BANDWIDTH = 1.25e9


def generate_instance(
    n_hosts: int = 2,
    n_jobs: int = 4,
    *,
    iterations: tuple[int, int] = (10, 30),
    workers: tuple[int, int] = (2, 8),
    max_shards: int = 1,
    bandwidth: float = DEFAULT_BANDWIDTH,
    models: Sequence[str] | None = None,
    seed: int = 0,
) -> TensorLightsInstance:
    """Seeded synthetic instance built from the DNN profiles shipped in ``optsched/models/``.

    Job :math:`j` trains a model drawn uniformly from ``models`` (default: every shipped
    profile); its message is the model's gradient bytes and its compute time the profile's
    forward + backward time. Workers are a power of two in ``workers``, iterations uniform in
    ``iterations``, and the PS shards sit on 1..``max_shards`` distinct random hosts. All jobs
    start at 0 and every NIC has capacity ``bandwidth`` bytes/s.

    Raises
    ------
    InvalidInstanceError
        A parameter is out of range (the message names it).

    Examples
    --------
    >>> generate_instance(2, 3, seed=1)
    TensorLightsInstance(3 jobs on 2 hosts)
    """
    from optsched.profiles import available_profiles, load_profile

    if n_hosts < 1:
        raise InvalidInstanceError("n_hosts", f"must be >= 1, got {n_hosts}")
    if n_jobs < 1:
        raise InvalidInstanceError("n_jobs", f"must be >= 1, got {n_jobs}")
    # A generated job is a record of Python objects, far larger than one 8-byte cell: count it
    # as JOB_RECORD_CELLS against the array budget, before anything is drawn.
    limits.check_size("n_jobs", float(n_jobs) * JOB_RECORD_CELLS, "max_array_cells", "cells")
    limits.check_size("n_hosts", float(n_hosts) * JOB_RECORD_CELLS, "max_array_cells", "cells")
    if len(iterations) != 2 or not 1 <= iterations[0] <= iterations[1]:
        raise InvalidInstanceError("iterations", f"must be 1 <= low <= high, got {iterations}")
    if len(workers) != 2 or not 1 <= workers[0] <= workers[1]:
        raise InvalidInstanceError("workers", f"must be 1 <= low <= high, got {workers}")
    if not 1 <= max_shards <= n_hosts:
        raise InvalidInstanceError("max_shards", f"must be in [1, n_hosts={n_hosts}]")
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise InvalidInstanceError("bandwidth", f"must be finite and > 0, got {bandwidth}")
    if seed < 0:
        raise InvalidInstanceError("seed", f"must be >= 0, got {seed}")
    names = list(models) if models is not None else available_profiles()
    if not names:
        raise InvalidInstanceError("models", "must name at least one profile")
    profiles = [load_profile(n) for n in names]
    powers = [2**k for k in range(0, 31) if workers[0] <= 2**k <= workers[1]] or [workers[0]]
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(n_jobs):
        prof = profiles[int(rng.integers(len(profiles)))]
        shards = int(rng.integers(1, max_shards + 1))
        hosts = sorted(int(h) for h in rng.choice(n_hosts, size=shards, replace=False))
        jobs.append(
            {
                "name": f"{prof.name}-{j}",
                "workers": int(rng.choice(powers)),
                "message_bytes": float(prof.total_bytes),
                "compute_time_s": (prof.forward_ms + prof.backward_ms) / 1000.0,
                "iterations": int(rng.integers(iterations[0], iterations[1] + 1)),
                "ps_hosts": hosts,
            }
        )
    return TensorLightsInstance.from_dict(
        {
            "hosts": [
                {"name": f"host{h}", "bandwidth_bytes_per_s": bandwidth} for h in range(n_hosts)
            ],
            "jobs": jobs,
        }
    )
