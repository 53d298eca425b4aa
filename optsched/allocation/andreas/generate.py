r"""Seeded synthetic ANDREAS scheduling points.

Node types default to the three GPU types of Gavel's physical cluster (V100, P100, K80) with the
power of :data:`optsched.power.GPU_POWER_WATTS`. A job's single-GPU runtime on V100 is drawn
between 20 minutes and 4 hours; P100 and K80 are slower by job-dependent factors (1.2-2.5 and
2-6, the spread of Gavel's measured throughputs); ``g`` GPUs take :math:`t_1 / g^{\eta}` with
a scaling efficiency :math:`\eta \in [0.6, 0.95]` per job. Due dates fall between 0.5 and 3
times the job's fastest runtime after ``now_s``; weights are between 1e-5 and 1e-4 per second,
the order of the energy cost of one GPU-second at the default price.
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.andreas.instance import (
    AndreasInstance,
    AndreasJob,
    Configuration,
    NodeType,
)
from optsched.power import gpu_power

__all__ = ["generate_instance"]

_SLOWDOWN = {"v100": (1.0, 1.0), "p100": (1.2, 2.5), "k80": (2.0, 6.0)}


def generate_instance(
    n_jobs: int = 8,
    gpu_types: tuple[str, ...] = ("v100", "p100", "k80"),
    *,
    nodes: int = 1,
    gpus_per_server: int = 4,
    counts: tuple[int, ...] = (1, 2, 4),
    now_s: float = 0.0,
    period_s: float = 600.0,
    energy_price_per_kwh: float = 0.2,
    seed: int = 0,
) -> AndreasInstance:
    """A random scheduling point with ``n_jobs`` queued jobs.

    Parameters
    ----------
    n_jobs : int
    gpu_types : tuple of str
        One node type per GPU type (power from :data:`optsched.power.GPU_POWER_WATTS`).
    nodes, gpus_per_server : int
        Nodes per type and their size.
    counts : tuple of int
        GPU counts each job allows (those above ``gpus_per_server`` that are not multiples of it
        are dropped).
    now_s, period_s, energy_price_per_kwh : float
    seed : int

    Examples
    --------
    >>> generate_instance(3, seed=1) == generate_instance(3, seed=1)
    True
    """
    rng = np.random.default_rng(seed)
    node_types = tuple(
        NodeType(
            name=t,
            gpu_type=t,
            gpus_per_server=gpus_per_server,
            nodes=nodes,
            power_watts=gpu_power(t, field="gpu_types"),
        )
        for t in gpu_types
    )
    allowed = [g for g in counts if g <= gpus_per_server or g % gpus_per_server == 0]
    jobs = []
    for i in range(n_jobs):
        base = float(rng.uniform(1200.0, 14400.0))
        eta = float(rng.uniform(0.6, 0.95))
        slow = {t: float(rng.uniform(*_SLOWDOWN.get(t, (1.0, 3.0)))) for t in gpu_types}
        configs = tuple(
            Configuration(node_type=t, gpus=g, runtime_s=round(base * slow[t] / g**eta, 3))
            for t in gpu_types
            for g in allowed
        )
        fastest = min(c.runtime_s for c in configs)
        jobs.append(
            AndreasJob(
                job_id=f"job{i}",
                due_s=round(now_s + float(rng.uniform(0.5, 3.0)) * fastest, 3),
                weight=round(float(rng.uniform(1e-5, 1e-4)), 8),
                configurations=configs,
            )
        )
    return AndreasInstance(
        now_s=now_s,
        period_s=period_s,
        energy_price_per_kwh=energy_price_per_kwh,
        node_types=node_types,
        jobs=tuple(jobs),
    )
