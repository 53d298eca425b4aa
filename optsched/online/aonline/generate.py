"""Seeded synthetic Aonline instances."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.online.aonline.instance import AonlineInstance, AonlineJob, GpuPool

__all__ = ["generate_instance"]

#: Default pools: a fast type on one 4-GPU server, a slow type on two 2-GPU servers.
DEFAULT_POOLS: tuple[tuple[str, int, int], ...] = (("v100", 4, 4), ("k80", 4, 2))


def generate_instance(
    n_jobs: int = 4,
    *,
    pools: Sequence[tuple[str, int, int]] = DEFAULT_POOLS,
    max_arrival: int = 3,
    max_work: int = 6,
    gang_sizes: Sequence[int] = (1, 2),
    spread_penalty: float = 0.5,
    seed: int | None = None,
) -> AonlineInstance:
    """A seeded instance: uniform arrivals, weights 1..5, integer work and rates.

    Parameters
    ----------
    n_jobs : int
    pools : sequence of (name, gpus, gpus_per_server)
        The first pool is the fastest: a job's rate there is 2 (or 3), elsewhere 1 (or 2).
    max_arrival : int
        Arrivals uniform in ``0..max_arrival``.
    max_work : int
        Work uniform in ``1..max_work`` units.
    gang_sizes : sequence of int
        Gang sizes drawn uniformly (each must fit some server).
    spread_penalty : float
    seed : int, optional

    Raises
    ------
    InvalidInstanceError
        Naming the argument: a negative count, or a gang size that fits no server.
    """
    for name, value in (("n_jobs", n_jobs), ("max_arrival", max_arrival)):
        if not isinstance(value, int) or value < 0:
            raise InvalidInstanceError(name, f"must be an integer >= 0, got {value!r}")
    if not isinstance(max_work, int) or max_work < 1:
        raise InvalidInstanceError("max_work", f"must be an integer >= 1, got {max_work!r}")
    specs = [GpuPool(name=n, count=c, gpus_per_server=m) for n, c, m in pools]
    if not specs:
        raise InvalidInstanceError("pools", "name at least one pool")
    largest = max(p.gpus_per_server for p in specs)
    sizes = list(gang_sizes)
    if not sizes or any(not isinstance(g, int) or not 1 <= g <= largest for g in sizes):
        raise InvalidInstanceError("gang_sizes", f"each must be in 1..{largest}, got {sizes}")
    rng = np.random.default_rng(seed)
    jobs = []
    for _ in range(n_jobs):
        fast = int(rng.integers(2, 4))
        rates = {
            p.name: (fast if k == 0 else int(rng.integers(1, fast))) for k, p in enumerate(specs)
        }
        jobs.append(
            AonlineJob(
                arrival=int(rng.integers(0, max_arrival + 1)),
                weight=float(rng.integers(1, 6)),
                work=int(rng.integers(1, max_work + 1)),
                gpus=int(rng.choice(sizes)),
                rates=rates,
            )
        )
    return AonlineInstance(pools=tuple(specs), jobs=tuple(jobs), spread_penalty=spread_penalty)
