"""Seeded synthetic lease instances.

Speeds follow the shape of measured throughputs: a job has a base speed (steps per lease on the
first type) and each further type is slower by a job-dependent factor; gangs are powers of two
that fit the smallest type; remaining work is one to four leases on the fastest type; deadlines
are uniform over the horizon. Guaranteed jobs, when asked for, are drawn among the jobs the
greedy admits on the same instance without guarantees, so that the guarantees can be kept:
every generated instance is feasible.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optsched.allocation.chronus.instance import BestEffortJob, LeaseInstance, SLOJob
from optsched.errors import InvalidInstanceError

__all__ = ["generate_instance"]


def generate_instance(
    n_slo: int = 6,
    n_best_effort: int = 3,
    *,
    leases: int = 6,
    gpu_types: Sequence[str] = ("v100",),
    gpus: int | Sequence[int] = 4,
    guaranteed_fraction: float = 0.0,
    seed: int = 0,
) -> LeaseInstance:
    """A random lease boundary.

    Parameters
    ----------
    n_slo, n_best_effort : int
        Jobs of each class.
    leases : int
        Horizon :math:`L`.
    gpu_types : sequence of str
    gpus : int or sequence of int
        GPUs per type (the same in every lease).
    guaranteed_fraction : float
        Fraction (in [0, 1]) of the greedily admissible SLO jobs marked guaranteed.
    seed : int

    Examples
    --------
    >>> inst = generate_instance(3, 1, leases=4, seed=2)
    >>> inst.n_leases, len(inst.slo_jobs), len(inst.best_effort)
    (4, 3, 1)
    """
    for name, value in (("n_slo", n_slo), ("n_best_effort", n_best_effort)):
        if not isinstance(value, int) or value < 0:
            raise InvalidInstanceError(name, f"must be an integer >= 0, got {value!r}")
    if not isinstance(leases, int) or leases < 1:
        raise InvalidInstanceError("leases", f"must be an integer >= 1, got {leases!r}")
    if not 0.0 <= guaranteed_fraction <= 1.0:
        raise InvalidInstanceError(
            "guaranteed_fraction", f"must be in [0, 1], got {guaranteed_fraction}"
        )
    types = tuple(gpu_types)
    caps = (gpus,) * len(types) if isinstance(gpus, int) else tuple(gpus)
    if len(caps) != len(types) or any(c < 1 for c in caps):
        raise InvalidInstanceError("gpus", "needs one count >= 1 per GPU type")
    rng = np.random.default_rng(seed)
    gangs = [g for g in (1, 2, 4) if g <= min(caps)]

    def job_fields(prefix: str, i: int) -> dict[str, object]:
        base = int(rng.integers(5, 50))
        slow = np.concatenate([[1.0], np.sort(rng.uniform(0.3, 1.0, len(types) - 1))[::-1]])
        speed = tuple(max(1, int(base * f)) for f in slow)
        return {
            "job_id": f"{prefix}{i}",
            "gang": int(rng.choice(gangs)),
            "remaining": int(rng.integers(1, 4 * base + 1)),
            "speed": speed,
        }

    slo = [
        SLOJob(**job_fields("s", i), deadline=int(rng.integers(0, leases)))  # type: ignore[arg-type]
        for i in range(n_slo)
    ]
    be = [
        BestEffortJob(**job_fields("b", i), weight=float(rng.choice([1.0, 2.0])))  # type: ignore[arg-type]
        for i in range(n_best_effort)
    ]
    capacity = (caps,) * leases
    inst = LeaseInstance(
        gpu_types=types, capacity=capacity, slo_jobs=tuple(slo), best_effort=tuple(be)
    )
    if guaranteed_fraction > 0 and slo:
        from optsched.allocation.chronus.heuristics import ChronusGreedy

        admissible = ChronusGreedy().run(inst).admitted
        pick = {a for a in admissible if rng.random() < guaranteed_fraction}
        slo = [j.model_copy(update={"guaranteed": j.job_id in pick}) for j in slo]
        inst = LeaseInstance(
            gpu_types=types, capacity=capacity, slo_jobs=tuple(slo), best_effort=tuple(be)
        )
    return inst
