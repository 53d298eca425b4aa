r"""The independent validator of a round's allocation (:mod:`optsched.goodput.round_model`).

:func:`validate` checks a ``(J, n)`` matrix of GPUs per job and node against every constraint
of the round, by name, and recomputes the round's value :math:`M(a)` with plain loops over jobs
and nodes (sharing no code with the genetic algorithm's vectorized fitness or with the MILP).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.goodput.round_model import RoundInstance
from optsched.results import Report, Violation

__all__ = ["CONSTRAINTS", "validate"]

#: Every constraint the validator checks, by the name its violations carry.
CONSTRAINTS: dict[str, str] = {
    "shape": "one row per job, one column per node",
    "gpu_range": "GPUs of a job on a node are a whole number in [0, G]",
    "node_capacity": "GPUs used on a node are at most G",
    "interference": "at most one job spanning two or more nodes uses any node",
    "max_replicas": "a job holds at most max_replicas GPUs",
    "min_replicas": "a job holds no GPUs or at least min_replicas",
    "max_job_nodes": "a job spans at most max_job_nodes nodes",
}


def _check_entries(instance: RoundInstance, a: npt.NDArray[Any]) -> list[Violation]:
    out = []
    for j in range(instance.num_jobs):
        for n in range(instance.num_nodes):
            v = float(a[j, n])
            if v != int(v) or not 0 <= v <= instance.gpus_per_node:
                out.append(
                    Violation(
                        "gpu_range",
                        f"{instance.jobs[j].name} has {v:g} GPUs on node {n}",
                        {"job": j, "node": n},
                        v,
                    )
                )
    return out


def _check_nodes(instance: RoundInstance, a: npt.NDArray[np.int64]) -> list[Violation]:
    out = []
    for n in range(instance.num_nodes):
        used = sum(int(a[j, n]) for j in range(instance.num_jobs))
        if used > instance.gpus_per_node:
            out.append(
                Violation(
                    "node_capacity",
                    f"node {n} holds {used} GPUs of {instance.gpus_per_node}",
                    {"node": n},
                    float(used - instance.gpus_per_node),
                )
            )
        spanning = [
            j
            for j in range(instance.num_jobs)
            if a[j, n] > 0 and sum(1 for m in range(instance.num_nodes) if a[j, m] > 0) >= 2
        ]
        if len(spanning) > 1:
            names = ", ".join(instance.jobs[j].name for j in spanning)
            out.append(
                Violation(
                    "interference",
                    f"node {n} hosts {len(spanning)} multi-node jobs ({names})",
                    {"node": n},
                    float(len(spanning) - 1),
                )
            )
    return out


def _check_jobs(instance: RoundInstance, a: npt.NDArray[np.int64]) -> list[Violation]:
    out = []
    for j, job in enumerate(instance.jobs):
        gpus = sum(int(a[j, n]) for n in range(instance.num_nodes))
        nodes = sum(1 for n in range(instance.num_nodes) if a[j, n] > 0)
        where = {"job": j}
        if gpus > job.max_replicas:
            msg = f"{job.name} holds {gpus} GPUs, at most {job.max_replicas}"
            out.append(Violation("max_replicas", msg, where, float(gpus - job.max_replicas)))
        if 0 < gpus < job.min_replicas:
            msg = f"{job.name} holds {gpus} GPUs, needs 0 or >= {job.min_replicas}"
            out.append(Violation("min_replicas", msg, where, float(job.min_replicas - gpus)))
        if nodes > instance.max_job_nodes:
            msg = f"{job.name} spans {nodes} nodes, at most {instance.max_job_nodes}"
            out.append(
                Violation("max_job_nodes", msg, where, float(nodes - instance.max_job_nodes))
            )
    return out


def _value(instance: RoundInstance, a: npt.NDArray[np.int64]) -> tuple[float, list[float]]:
    total = 0.0
    xs = []
    for j, job in enumerate(instance.jobs):
        gpus = 0
        nodes = 0
        changed = False
        for n in range(instance.num_nodes):
            gpus += int(a[j, n])
            nodes += 1 if a[j, n] > 0 else 0
            changed = changed or int(a[j, n]) != job.previous[n]
        x = instance.scale * job.value(nodes, gpus) if gpus > 0 else 0.0
        if changed:
            x = x * job.restart_factor
        xs.append(x)
        total += (x + instance.epsilon) ** instance.p
    return (total / instance.num_jobs) ** (1.0 / instance.p), xs


def validate(instance: RoundInstance, state: npt.ArrayLike) -> Report:
    """Check a ``(J, n)`` allocation; recompute :math:`M(a)` when it is feasible.

    Returns
    -------
    Report
        ``violations`` named as in :data:`CONSTRAINTS`; ``objective`` the round's value (None
        when infeasible); ``details["scaled_speedups"]`` the :math:`x_j`.
    """
    a = np.asarray(state)
    if a.shape != (instance.num_jobs, instance.num_nodes):
        want = (instance.num_jobs, instance.num_nodes)
        return Report([Violation("shape", f"expected shape {want}, got {a.shape}")])
    violations = _check_entries(instance, a)
    if violations:
        return Report(violations)
    ints = a.astype(np.int64)
    violations = _check_nodes(instance, ints) + _check_jobs(instance, ints)
    if violations:
        return Report(violations)
    value, xs = _value(instance, ints)
    return Report([], objective=value, details={"scaled_speedups": xs})
