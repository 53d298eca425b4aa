"""Seeded synthetic Optimus instances.

Shapes follow the Optimus paper's testbed: jobs train with PSs on CPU servers and workers on
GPU servers, one GPU and a few CPU cores per worker, a few CPU cores per PS; the speed
coefficients make a worker's step 0.05-0.5 s of compute plus a transfer term that grows with the
workers per PS, and jobs have 10^3-10^5 steps left. Every instance is valid by construction: the
capacities hold one PS and one worker of every job and about ``slack`` times more.
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.optimus.instance import OptimusInstance, OptimusJob
from optsched.allocation.optimus.models import SpeedKind

__all__ = ["generate_instance"]


def generate_instance(
    n_jobs: int = 8,
    *,
    kind: SpeedKind = "async",
    max_tasks: int = 6,
    slack: float = 3.0,
    seed: int = 0,
) -> OptimusInstance:
    r"""A random interval: ``n_jobs`` jobs on resources ``gpu`` and ``cpu``.

    Parameters
    ----------
    n_jobs : int
    kind : {"async", "sync", "colocated"}
        The jobs' speed model (``colocated`` jobs have one PS on their workers: ``max_ps = 1``
        and no PS demand).
    max_tasks : int
        :math:`\bar P_j = \bar W_j` (``\bar P_j = 1`` for ``colocated``).
    slack : float
        Capacities are about ``slack`` times the jobs' smallest allocation.
    seed : int

    Examples
    --------
    >>> generate_instance(3, seed=1) == generate_instance(3, seed=1)
    True
    """
    rng = np.random.default_rng(seed)
    jobs = []
    need = np.zeros(2)
    for i in range(n_jobs):
        compute = rng.uniform(0.05, 0.5)
        transfer = rng.uniform(0.01, 0.2) * compute
        overhead = rng.uniform(0.0, 0.01) * compute
        if kind == "async":
            theta: tuple[float, ...] = (compute, transfer, overhead, overhead / 2)
        elif kind == "sync":
            theta = (compute / 32, 0.01 * compute, transfer, overhead, overhead / 2)
        else:
            theta = (compute, 0.01 * compute, transfer / 4)
        theta = tuple(float(round(v, 9)) for v in theta)
        worker = (1.0, float(rng.integers(1, 5)))
        ps = (0.0, 0.0) if kind == "colocated" else (0.0, float(rng.integers(1, 4)))
        need += np.asarray(worker) + np.asarray(ps)
        jobs.append(
            OptimusJob(
                job_id=f"job{i}",
                remaining_steps=float(rng.integers(1_000, 100_000)),
                speed_kind=kind,
                theta=theta,
                batch=32.0 if kind == "sync" else 1.0,
                worker_demand=worker,
                ps_demand=ps,
                max_workers=max_tasks,
                max_ps=1 if kind == "colocated" else max_tasks,
            )
        )
    capacity = tuple(float(np.ceil(v * slack)) for v in need)
    return OptimusInstance(resources=("gpu", "cpu"), capacity=capacity, jobs=tuple(jobs))
