r"""The cost of every decision of every job, as flat arrays (shared by the MILP and the greedy).

For job :math:`j` and configuration :math:`c = (\tau, g)`:

.. math::

    \kappa_{jc} = \frac{\pi P_\tau g\, t_{jc}}{3.6\cdot 10^6}
                  + \omega_j \max(0,\ t_0 + t_{jc} - d_j),
    \qquad
    \kappa_{j\varnothing} = \bar e_j + \omega_j \max(0,\ t_0 + H + \max_c t_{jc} - d_j),

with :math:`\bar e_j = \min_c e_{jc}` or 0 (``postponed_energy``). Vectorised over the
:math:`C = \sum_j |C_j|` configurations: :math:`O(C)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.andreas.instance import AndreasInstance, nodes_needed
from optsched.power import JOULES_PER_KWH

__all__ = ["DecisionCosts", "decision_costs"]


@dataclass(frozen=True)
class DecisionCosts:
    r"""Flat arrays over the configurations of every job (``job[k]`` owns configuration ``k``).

    Attributes
    ----------
    job : ndarray of int
        Job index of each configuration.
    node_type : ndarray of int
        Node type index of each configuration.
    gpus : ndarray of int
    per_node : ndarray of int
        GPUs taken on each node used (``gpus`` on one node, or whole nodes).
    nodes : ndarray of int
        Nodes used (1, or ``gpus / gpus_per_server``).
    run : ndarray of float
        :math:`\kappa_{jc}`.
    postpone : ndarray of float, shape (jobs,)
        :math:`\kappa_{j\varnothing}`.
    first : ndarray of int, shape (jobs + 1,)
        Configurations of job ``j`` are ``first[j]:first[j + 1]``.
    """

    job: NDArray[np.int64]
    node_type: NDArray[np.int64]
    gpus: NDArray[np.int64]
    per_node: NDArray[np.int64]
    nodes: NDArray[np.int64]
    run: NDArray[np.float64]
    postpone: NDArray[np.float64]
    first: NDArray[np.int64]


def decision_costs(instance: AndreasInstance) -> DecisionCosts:
    """The costs of every decision (see the module notes)."""
    index = {t.name: i for i, t in enumerate(instance.node_types)}
    size = np.array([t.gpus_per_server for t in instance.node_types], dtype=np.int64)
    power = np.array([t.power_watts for t in instance.node_types], dtype=np.float64)
    job, kind, gpus, runtime = [], [], [], []
    first = [0]
    for j, jb in enumerate(instance.jobs):
        for c in jb.configurations:
            job.append(j)
            kind.append(index[c.node_type])
            gpus.append(c.gpus)
            runtime.append(c.runtime_s)
        first.append(len(job))
    job_a = np.array(job, dtype=np.int64)
    kind_a = np.array(kind, dtype=np.int64)
    gpus_a = np.array(gpus, dtype=np.int64)
    t = np.array(runtime, dtype=np.float64)
    energy = instance.energy_price_per_kwh * power[kind_a] * gpus_a * t / JOULES_PER_KWH
    due = np.array(
        [np.inf if jb.due_s is None else jb.due_s for jb in instance.jobs], dtype=np.float64
    )
    weight = np.array([jb.weight for jb in instance.jobs], dtype=np.float64)
    # weight * max(0, C - d) with d = inf (no due date) is 0, also for weight 0.
    late = np.maximum(0.0, instance.now_s + t - due[job_a]) if len(t) else t
    run = energy + weight[job_a] * late
    n = instance.n_jobs
    slowest = np.array([jb.slowest for jb in instance.jobs], dtype=np.float64)
    if instance.postponed_energy == "min" and n:
        least = np.array([energy[first[j] : first[j + 1]].min() for j in range(n)])
    else:
        least = np.zeros(n)
    post_late = np.maximum(0.0, instance.now_s + instance.period_s + slowest - due)
    postpone = least + weight * post_late
    per_node = np.minimum(gpus_a, size[kind_a]) if len(gpus_a) else gpus_a
    nodes = np.array(
        [nodes_needed(int(g), int(size[k])) for g, k in zip(gpus_a, kind_a, strict=True)],
        dtype=np.int64,
    )
    return DecisionCosts(
        job=job_a,
        node_type=kind_a,
        gpus=gpus_a,
        per_node=per_node,
        nodes=nodes,
        run=run,
        postpone=postpone,
        first=np.array(first, dtype=np.int64),
    )
