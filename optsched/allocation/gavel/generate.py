"""Seeded synthetic allocation instances.

Throughputs follow the shape of measured ones (Gavel's ``simulation_throughputs.json``): a job
type has a base speed, each GPU type a speed-up that depends on the job type (V100 > P100 > K80,
but by different factors), and scale factors are powers of two. With ``job_types`` the jobs
also get co-location classes and a pair table for the packed policies: each pair of classes
shares a GPU type at normalised throughputs drawn from ``[0.3, 1]`` per side, or cannot share
it (does not fit in memory) with probability 0.4, as in Gavel's measurements.
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.gavel.instance import AllocationInstance, AllocationJob, PairThroughput
from optsched.errors import InvalidInstanceError

__all__ = ["generate_instance"]


def generate_instance(
    n_jobs: int = 16,
    gpu_types: tuple[str, ...] = ("v100", "p100", "k80"),
    *,
    gpus_per_type: int | None = None,
    multi_gpu: bool = False,
    job_types: int = 0,
    slo_fraction: float = 0.0,
    seed: int = 0,
) -> AllocationInstance:
    """A random round: ``n_jobs`` jobs on ``gpu_types`` with ``gpus_per_type`` GPUs each.

    Parameters
    ----------
    n_jobs : int
    gpu_types : tuple of str
    gpus_per_type : int, optional
        Default ``max(1, n_jobs // 4)`` (Gavel's microbenchmark sizes the cluster so).
    multi_gpu : bool
        Draw scale factors from {1, 2, 4, 8} (else all 1).
    job_types : int
        Number of co-location classes (0: none, the instance has no pair table).
    slo_fraction : float
        Share of the jobs given a deadline (``time_to_deadline_s``): their steps left at their
        best throughput times a slack drawn from [2, 8], so each alone needs at most half of
        the round on its fastest type (drawn from a separate stream: the other fields do not
        change with it).
    seed : int

    Examples
    --------
    >>> generate_instance(4, seed=1).n_jobs
    4
    >>> len(generate_instance(4, job_types=2, seed=1).pair_throughputs) <= 3
    True
    """
    rng = np.random.default_rng(seed)
    k = len(gpu_types)
    per = max(1, n_jobs // 4) if gpus_per_type is None else gpus_per_type
    speedup = np.sort(rng.uniform(1.0, 10.0, size=(n_jobs, k)), axis=1)[:, ::-1]
    base = rng.uniform(0.2, 5.0, size=n_jobs)
    scale = rng.choice([1, 2, 4, 8], size=n_jobs) if multi_gpu else np.ones(n_jobs, dtype=int)
    scale = np.minimum(scale, per)
    jobs = [
        AllocationJob(
            job_id=f"job{i}",
            throughput_steps_per_s=tuple(float(v) for v in np.round(base[i] * speedup[i], 6)),
            scale_factor=int(scale[i]),
            weight=1.0,
            steps_remaining=float(rng.integers(1_000, 100_000)),
            time_since_start_s=float(rng.uniform(0, 3600)),
            isolated_time_s=0.0,
        )
        for i in range(n_jobs)
    ]
    if slo_fraction > 0:
        if not slo_fraction <= 1:
            raise InvalidInstanceError("slo_fraction", f"must be in [0, 1], got {slo_fraction}")
        slo = np.random.default_rng([seed, 1])
        chosen = slo.random(n_jobs) < slo_fraction
        slack = slo.uniform(2.0, 8.0, size=n_jobs)
        jobs = [
            job.model_copy(
                update={
                    "time_to_deadline_s": float(
                        slack[i] * job.steps_remaining / max(job.throughput_steps_per_s)
                    )
                }
            )
            if chosen[i]
            else job
            for i, job in enumerate(jobs)
        ]
    pairs: list[PairThroughput] = []
    if job_types > 0:
        # drawn after the unpacked instance, so that its numbers do not depend on job_types
        names = [f"type{c}" for c in range(job_types)]
        kind = rng.integers(0, job_types, size=n_jobs)
        jobs = [j.model_copy(update={"job_type": names[kind[i]]}) for i, j in enumerate(jobs)]
        for a in range(job_types):
            for b in range(a, job_types):
                f = np.round(rng.uniform(0.3, 1.0, size=(k, 2)), 3)
                f[rng.random(k) < 0.4] = 0.0
                if a == b:
                    f[:, 1] = f[:, 0]
                if (f > 0).any():
                    pairs.append(
                        PairThroughput(
                            job_types=(names[a], names[b]),
                            normalized=tuple((float(x), float(y)) for x, y in f),
                        )
                    )
    return AllocationInstance(
        gpu_types=tuple(gpu_types),
        capacity=(per,) * k,
        jobs=tuple(jobs),
        pair_throughputs=tuple(pairs),
    )
