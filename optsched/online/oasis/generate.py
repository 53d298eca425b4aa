r"""Seeded synthetic OASiS instances following the paper's simulation setup.

Distributions (Bao et al., INFOCOM 2018, §V-A; formulations.md §1.10), all uniform:

========================= ======================================= =================================
quantity                  paper                                   here
========================= ======================================= =================================
epochs :math:`E_i`        [50, 200]                               [50, 200] x ``scale``, >= 1
chunks :math:`N_i`        [5, 100]                                [5, 100] x ``scale``, >= 1
minibatches :math:`M_i`   [10, 100]                               [10, 100] x ``scale``, >= 1
:math:`\tau_i`            [0.001, 0.1] slots                      same, stored in seconds
:math:`e_i`               [30, 575] MB                            same
:math:`b_i`               100 Mbps - 5 Gbps                       same
:math:`B_i`               5 - 20 Gbps                             same
worker demand             0-4 GPUs, 1-10 vCPUs, 2-32 GB           same (GPUs integral)
PS demand                 1-10 vCPUs, 2-32 GB                     same
server NIC                20 - 50 Gbps                            same
worker servers            EC2 C4 (as printed)                     4 or 8 GPUs, 32-64 vCPUs,
                                                                  128-256 GB (GPU servers: the
                                                                  printed types look swapped)
PS servers                EC2 P2/G3 (as printed)                  16-36 vCPUs, 60-244 GB, no GPU
utility                   sigmoid; 10% insensitive                same; :math:`\gamma_1 \in`
                          (:math:`\gamma_2 = 0`), 55% sensitive   ``priority``, :math:`\gamma_3`
                          ([0.01, 1]), 35% critical ([4, 6]);     clipped to the horizon
                          :math:`\gamma_1 \in [1,100]`,
                          :math:`\gamma_3 \in [1, 15]`
arrivals                  Google-trace pattern, scaled            uniform over the first
                                                                  ``arrival_window`` of the horizon
========================= ======================================= =================================

``scale`` shrinks jobs (work grows roughly as :math:`\text{scale}^3`): ``scale=1`` is the paper's
setting (T = 100-300, H = K = 50); ``scale`` around 0.03-0.05 gives jobs that finish within a
10-slot horizon on a few servers, small enough for the exact ILP.
"""

from __future__ import annotations

import math

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.online.oasis.instance import MAX_VALUE, OasisInstance

__all__ = ["RESOURCES", "generate_instance"]

#: Resource names used by generated instances.
RESOURCES = ("gpu", "cpu", "memory", "bandwidth")


#: What one generated job counts against ``max_array_cells`` at least (its record is a few
#: hundred Python objects, each far larger than an 8-byte cell).
JOB_RECORD_CELLS = 1000


def _count(rng: np.random.Generator, lo: int, hi: int, scale: float) -> int:
    return max(1, round(rng.uniform(lo, hi) * scale))


def generate_instance(
    n_jobs: int,
    worker_servers: int = 4,
    ps_servers: int = 4,
    horizon: int = 20,
    seed: int = 0,
    *,
    scale: float = 0.1,
    arrival_window: float = 0.5,
    priority: tuple[float, float] = (1.0, 100.0),
    mix: tuple[float, float, float] = (0.10, 0.55, 0.35),
    slot_s: float = 3600.0,
) -> OasisInstance:
    r"""Draw a reproducible OASiS instance.

    Parameters
    ----------
    n_jobs : int
        Number of jobs (>= 0).
    worker_servers, ps_servers : int
        :math:`H` and :math:`K` (>= 1).
    horizon : int
        :math:`T` (>= 1).
    seed : int
        Seed of :class:`numpy.random.Generator`; equal arguments give equal instances.
    scale : float, default 0.1
        Multiplies the paper's ranges of epochs, chunks and minibatches (``1`` = the paper).
    arrival_window : float, default 0.5
        Arrivals are uniform over the first ``arrival_window * horizon`` slots.
    priority : (float, float)
        Range of :math:`\gamma_1` (Fig. 5 uses [1,100], [25,100], [50,100], [75,100]).
    mix : (float, float, float)
        Shares of time-insensitive, time-sensitive and time-critical jobs.
    slot_s : float
        Slot length (the paper suggests an hour).

    Returns
    -------
    OasisInstance
        Jobs sorted by arrival.

    Raises
    ------
    InvalidInstanceError
        A parameter is out of range (the message names it).
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")
    if n_jobs < 0:
        raise InvalidInstanceError("n_jobs", f"must be >= 0, got {n_jobs}")
    for name, value in (
        ("worker_servers", worker_servers),
        ("ps_servers", ps_servers),
        ("horizon", horizon),
    ):
        if value < 1:
            raise InvalidInstanceError(name, f"must be >= 1, got {value}")
    if not 0 < scale <= 1:
        raise InvalidInstanceError("scale", f"must be in (0, 1], got {scale}")
    if not 0 < arrival_window <= 1:
        raise InvalidInstanceError("arrival_window", f"must be in (0, 1], got {arrival_window}")
    if not (0 <= priority[0] <= priority[1] <= MAX_VALUE):
        raise InvalidInstanceError("priority", f"must be 0 <= low <= high, got {priority}")
    if len(mix) != 3 or min(mix) < 0 or not math.isclose(sum(mix), 1.0, abs_tol=1e-9):
        raise InvalidInstanceError("mix", f"must be three shares summing to 1, got {mix}")

    # Budgets before drawing anything (the instance checks the same, after the draws).
    check_size("horizon", float(horizon) * (worker_servers + ps_servers) * 4, "max_array_cells")
    # Each job becomes a validated record of a few hundred Python objects plus its utility
    # table of T cells: count it as max(T, JOB_RECORD_CELLS) cells.
    check_size("n_jobs", float(n_jobs) * max(horizon, JOB_RECORD_CELLS), "max_array_cells")
    rng = np.random.default_rng(seed)
    workers = [
        {
            "name": f"w{h}",
            "capacity": {
                "gpu": float(rng.choice([4, 8])),
                "cpu": float(rng.integers(32, 65)),
                "memory": float(rng.integers(128, 257)),
                "bandwidth": float(rng.integers(20, 51)),
            },
        }
        for h in range(worker_servers)
    ]
    pss = [
        {
            "name": f"p{k}",
            "capacity": {
                "gpu": 0.0,
                "cpu": float(rng.integers(16, 37)),
                "memory": float(rng.integers(60, 245)),
                "bandwidth": float(rng.integers(20, 51)),
            },
        }
        for k in range(ps_servers)
    ]
    window = max(1, int(arrival_window * horizon))
    arrivals = np.sort(rng.integers(0, window, size=n_jobs))
    jobs = []
    for i, arrival in enumerate(arrivals):
        kind = rng.choice(3, p=list(mix))
        steep = (
            0.0 if kind == 0 else (rng.uniform(0.01, 1.0) if kind == 1 else rng.uniform(4.0, 6.0))
        )
        jobs.append(
            {
                "name": f"job{i}",
                "arrival": int(arrival),
                "epochs": _count(rng, 50, 200, scale),
                "chunks": _count(rng, 5, 100, scale),
                "minibatches": _count(rng, 10, 100, scale),
                "minibatch_s": float(rng.uniform(0.001, 0.1) * slot_s),
                "gradient_mb": float(rng.uniform(30, 575)),
                "worker_demand": {
                    "gpu": float(rng.integers(0, 5)),
                    "cpu": float(rng.integers(1, 11)),
                    "memory": float(rng.integers(2, 33)),
                    "bandwidth": float(rng.uniform(0.1, 5.0)),
                },
                "ps_demand": {
                    "cpu": float(rng.integers(1, 11)),
                    "memory": float(rng.integers(2, 33)),
                    "bandwidth": float(rng.uniform(5.0, 20.0)),
                },
                "utility": {
                    "kind": "sigmoid",
                    "priority": float(rng.uniform(*priority)),
                    "steepness": float(steep),
                    "target": float(min(rng.uniform(1.0, 15.0), horizon)),
                },
            }
        )
    return OasisInstance.model_validate(
        {
            "horizon": horizon,
            "slot_s": slot_s,
            "resources": list(RESOURCES),
            "worker_servers": workers,
            "ps_servers": pss,
            "jobs": jobs,
        }
    )
