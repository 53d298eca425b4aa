r"""The independent validator of a round's allocation (:mod:`optsched.goodput.round_model`).

:func:`validate` checks a ``(J, n)`` matrix of GPUs per job and node against every constraint
of the round, one function per constraint named as the violations it reports
(:data:`CONSTRAINTS`), and recomputes the round's value :math:`M(a)` with plain loops over jobs
and nodes (sharing no code with the genetic algorithm's vectorized fitness or with the MILP).
``shape`` is checked first (nothing else is when it fails), then ``gpu_range`` (the others
read whole counts), then the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.goodput.round_model import RoundInstance
from optsched.results import Report, Violation

__all__ = [
    "CONSTRAINTS",
    "gpu_range",
    "interference",
    "max_job_nodes",
    "max_replicas",
    "min_replicas",
    "node_capacity",
    "shape",
    "validate",
]

Matrix = npt.NDArray[Any]


def shape(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``shape``: one row per job, one column per node."""
    want = (instance.num_jobs, instance.num_nodes)
    if np.shape(solution) != want:
        return [Violation("shape", f"expected shape {want}, got {np.shape(solution)}")]
    return []


def gpu_range(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``gpu_range``: the GPUs of a job on a node are a whole number in :math:`[0, G]`."""
    out = []
    for j in range(instance.num_jobs):
        for n in range(instance.num_nodes):
            v = float(solution[j, n])
            if not (np.isfinite(v) and v == int(v) and 0 <= v <= instance.gpus_per_node):
                msg = f"{instance.jobs[j].name} has {v:g} GPUs on node {n}"
                out.append(Violation("gpu_range", msg, {"job": j, "node": n}, v))
    return out


def _nodes_of(instance: RoundInstance, solution: Matrix, j: int) -> int:
    return sum(1 for n in range(instance.num_nodes) if solution[j, n] > 0)


def _gpus_of(instance: RoundInstance, solution: Matrix, j: int) -> int:
    return sum(int(solution[j, n]) for n in range(instance.num_nodes))


def node_capacity(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``node_capacity``: the GPUs used on a node are at most :math:`G`."""
    out = []
    for n in range(instance.num_nodes):
        used = sum(int(solution[j, n]) for j in range(instance.num_jobs))
        if used > instance.gpus_per_node:
            msg = f"node {n} holds {used} GPUs of {instance.gpus_per_node}"
            out.append(Violation("node_capacity", msg, {"node": n},
                                 float(used - instance.gpus_per_node)))  # fmt: skip
    return out


def interference(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``interference``: at most one job spanning two or more nodes uses any node."""
    out = []
    spanning = [j for j in range(instance.num_jobs) if _nodes_of(instance, solution, j) >= 2]
    for n in range(instance.num_nodes):
        here = [j for j in spanning if solution[j, n] > 0]
        if len(here) > 1:
            names = ", ".join(instance.jobs[j].name for j in here)
            msg = f"node {n} hosts {len(here)} multi-node jobs ({names})"
            out.append(Violation("interference", msg, {"node": n}, float(len(here) - 1)))
    return out


def max_replicas(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``max_replicas``: a job holds at most its ``max_replicas`` GPUs."""
    out = []
    for j, job in enumerate(instance.jobs):
        gpus = _gpus_of(instance, solution, j)
        if gpus > job.max_replicas:
            msg = f"{job.name} holds {gpus} GPUs, at most {job.max_replicas}"
            out.append(Violation("max_replicas", msg, {"job": j}, float(gpus - job.max_replicas)))
    return out


def min_replicas(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``min_replicas``: a job holds no GPUs or at least its ``min_replicas``."""
    out = []
    for j, job in enumerate(instance.jobs):
        gpus = _gpus_of(instance, solution, j)
        if 0 < gpus < job.min_replicas:
            msg = f"{job.name} holds {gpus} GPUs, needs 0 or >= {job.min_replicas}"
            out.append(Violation("min_replicas", msg, {"job": j}, float(job.min_replicas - gpus)))
    return out


def max_job_nodes(instance: RoundInstance, solution: Matrix) -> list[Violation]:
    """``max_job_nodes``: a job spans at most ``max_job_nodes`` nodes (16 in the artifact)."""
    out = []
    for j, job in enumerate(instance.jobs):
        nodes = _nodes_of(instance, solution, j)
        if nodes > instance.max_job_nodes:
            msg = f"{job.name} spans {nodes} nodes, at most {instance.max_job_nodes}"
            out.append(Violation("max_job_nodes", msg, {"job": j},
                                 float(nodes - instance.max_job_nodes)))  # fmt: skip
    return out


#: Every constraint, by the name its violations carry, to the function checking it.
CONSTRAINTS: dict[str, Callable[[RoundInstance, Matrix], list[Violation]]] = {
    "shape": shape,
    "gpu_range": gpu_range,
    "node_capacity": node_capacity,
    "interference": interference,
    "max_replicas": max_replicas,
    "min_replicas": min_replicas,
    "max_job_nodes": max_job_nodes,
}


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


def validate(instance: RoundInstance, solution: npt.ArrayLike) -> Report:
    """Check a ``(J, n)`` allocation; recompute :math:`M(a)` when it is feasible.

    Returns
    -------
    Report
        ``violations`` named as in :data:`CONSTRAINTS`; ``objective`` the round's value (None
        when infeasible); ``details["scaled_speedups"]`` the :math:`x_j`.
    """
    a = np.asarray(solution)
    for first in (shape, gpu_range):
        violations = first(instance, a)
        if violations:
            return Report(violations)
    ints = a.astype(np.int64)
    violations = []
    for name, check in CONSTRAINTS.items():
        if name not in ("shape", "gpu_range"):
            violations += check(instance, ints)
    if violations:
        return Report(violations)
    value, xs = _value(instance, ints)
    return Report([], objective=value, details={"scaled_speedups": xs})
