"""Exhaustive reference for a round of Pollux's problem (tiny rounds only).

Enumerates every ``(J, n)`` matrix with entries in ``[0, G]``: each job's rows are filtered by
its own bounds and valued with plain loops, then every combination of rows is checked for node
capacity and the one-spanning-job-per-node rule. No configuration indicators, no MILP, no
genetic algorithm.
"""

from __future__ import annotations

import itertools

import numpy as np

from optsched.goodput.round_model import RoundInstance


def _rows(instance: RoundInstance, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Job ``j``'s admissible rows, each row's term (x + eps)^p, and whether it spans nodes."""
    job = instance.jobs[j]
    rows, terms, spans = [], [], []
    for row in itertools.product(range(instance.gpus_per_node + 1), repeat=instance.num_nodes):
        gpus = sum(row)
        nodes = sum(1 for v in row if v > 0)
        if gpus > job.max_replicas or 0 < gpus < job.min_replicas:
            continue
        if nodes > instance.max_job_nodes:
            continue
        x = instance.scale * job.value(nodes, gpus) if gpus else 0.0
        if tuple(row) != job.previous:
            x *= job.restart_factor
        rows.append(row)
        terms.append((x + instance.epsilon) ** instance.p)
        spans.append(nodes >= 2)
    return np.array(rows, dtype=np.int64), np.array(terms), np.array(spans)


def best_round(instance: RoundInstance) -> tuple[float, np.ndarray]:
    """The optimum value :math:`M` and one optimal allocation, by enumeration."""
    per_job = [_rows(instance, j) for j in range(instance.num_jobs)]
    grids = np.meshgrid(*[np.arange(len(r)) for r, _, _ in per_job], indexing="ij")
    idx = np.stack([g.ravel() for g in grids], axis=1)  # (M, J)
    load = sum(per_job[j][0][idx[:, j]] for j in range(instance.num_jobs))
    spanning = sum(
        (per_job[j][0][idx[:, j]] > 0) & per_job[j][2][idx[:, j]][:, None]
        for j in range(instance.num_jobs)
    )
    ok = (load <= instance.gpus_per_node).all(axis=1) & (spanning <= 1).all(axis=1)
    total = sum(per_job[j][1][idx[:, j]] for j in range(instance.num_jobs))
    total = np.where(ok, total, np.inf if instance.p < 0 else -np.inf)
    best = int(np.argmin(total) if instance.p < 0 else np.argmax(total))
    state = np.array([per_job[j][0][idx[best, j]] for j in range(instance.num_jobs)])
    value = (total[best] / instance.num_jobs) ** (1.0 / instance.p)
    return float(value), state
