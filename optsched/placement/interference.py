r"""The ``interference`` objective: Harmony-style weighted slowdown (formulations §3.3 [R]).

Tasks of one job with equal demand vectors are interchangeable, so they form a group :math:`g`
of :math:`N_g` tasks of job :math:`j(g)` with demand :math:`d_g`; the model counts them per
server. Variables: :math:`n_{gh} \in \mathbb{Z}_{\ge 0}` (tasks of :math:`g` on :math:`h`),
:math:`o_{jh} \in \{0, 1\}` (job :math:`j` present on :math:`h`) and :math:`q_{jkh} \in [0, 1]`
(:math:`j` and :math:`k` both on :math:`h`, for :math:`j < k`).

.. math::
    \min\; & \sum_j \omega_j \Big[ t^0_j + \lambda_j e_j + \sum_h R_{jh}\, o_{jh} \Big]
        + \sum_{j<k} \sum_h \big(\omega_j c_{jk} + \omega_k c_{kj}\big) q_{jkh} \\
    \text{s.t.}\; & \sum_h n_{gh} = N_g & (\texttt{group\_assignment}) \\
    & \sum_g d_{gr} n_{gh} \le C_{hr} & (\texttt{server\_capacity}) \\
    & n_{gh} \le N_g\, o_{j(g) h}, \quad o_{jh} \le \sum_{g \in j} n_{gh}
        & (\texttt{job\_presence}) \\
    & q_{jkh} \ge o_{jh} + o_{kh} - 1,\; q_{jkh} \le o_{jh},\; q_{jkh} \le o_{kh}
        & (\texttt{co\_location}) \\
    & e_j = \textstyle\sum_h o_{jh} - 1,\; e_j \ge 0 & (\texttt{job\_spread})

Here :math:`c_{jk} = \kappa_{jk} + \hat y_{\mathrm{type}(j)\mathrm{type}(k)}` is the slowdown
:math:`j` suffers per server shared with :math:`k`, :math:`R_{jh}` what it suffers from the
residents of :math:`h`, :math:`\lambda_j` the penalty per extra server spanned, :math:`t^0_j`
the standalone iteration time and :math:`\omega_j` the weight. :math:`q` is only created for
pairs with a positive coefficient, :math:`e_j` (servers spanned beyond the first) only for jobs
with :math:`\omega_j \lambda_j > 0`; it keeps the objective free of the constant
:math:`-\omega_j \lambda_j`, which would cancel in floating point. The objective is the weighted
iteration time
:math:`\sum_j \omega_j [t^0_j + \sum_{h \in S_j} (\sum_{k \ne j: h \in S_k} c_{jk} + R_{jh})
+ \lambda_j(|S_j| - 1)]`.

Compared with formulations §3.3, the worker/PS counts :math:`x_{jh}, y_{jh}` become one count
per group (any number of task kinds per job), the presence link is written per group (tighter
than :math:`x + y \le (W+P) o`), and residents add :math:`R_{jh}`. Servers with equal capacity
and residents are interchangeable; with ``symmetry="constraints"`` they are ordered by weighted
load, :math:`\sum_g w_g n_{g h_i} \ge \sum_g w_g n_{g h_{i+1}}` with :math:`w_g = 1 +`
(normalised size of :math:`d_g`) (``server_order``). Ordering them by lowest job index, as for
job-atomic models, would be wrong here: a job split over two interchangeable servers gives both
the same lowest index.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from optsched.cluster import Server
from optsched.placement.formulation import (
    PlacementModel,
    Timer,
    capacity_key,
    check_symmetry,
    colocation_pairs,
    integer_value,
    model_size,
    server_capacity,
    server_classes,
    server_order,
)
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.tolerances import FIT_TOL

__all__ = ["build_interference", "interference_key", "job_groups"]


def interference_key(server: Server) -> Hashable:
    """Servers equal in capacity and residents are interchangeable for interference."""
    return (capacity_key(server), tuple(sorted(server.residents)))


def job_groups(instance: PlacementInstance) -> list[tuple[int, list[int]]]:
    """Groups of interchangeable tasks: ``(job, task indices)`` per job and demand vector."""
    groups: dict[tuple[int, tuple[float, ...]], list[int]] = {}
    for t, task in enumerate(instance.tasks):
        key = (task.job, tuple(float(v) for v in instance.demand[t]))
        groups.setdefault(key, []).append(t)
    return [(job, members) for (job, _), members in groups.items()]


def _most(demand: np.ndarray, capacity: np.ndarray, count: int) -> int:
    """How many tasks of one demand vector fit on a server (capped at ``count``)."""
    slack = FIT_TOL * np.maximum(1.0, np.abs(capacity))
    if not np.all(demand <= capacity + slack):
        return 0
    limits = [count]
    for r in np.flatnonzero(demand > 0):
        limits.append(int(np.floor((capacity[r] + slack[r]) / demand[r])))
    return min(limits)


def build_interference(instance: PlacementInstance, *, symmetry: str = "solver") -> PlacementModel:
    """Build the ``interference`` (Harmony) model.

    Parameters
    ----------
    instance : PlacementInstance
    symmetry : {"solver", "constraints", "none"}, default "solver"
        Handling of the symmetry between servers equal in capacity and residents.

    Returns
    -------
    PlacementModel
    """
    import pyomo.environ as pyo

    timer = Timer()
    groups = job_groups(instance)
    n_servers = len(instance.servers)
    demand = np.array([instance.demand[members[0]] for _, members in groups]).reshape(
        len(groups), len(instance.resources)
    )
    most = {
        (g, h): _most(demand[g], instance.capacity[h], len(members))
        for g, (_, members) in enumerate(groups)
        for h in range(n_servers)
    }
    pairs = [(g, h) for (g, h), b in most.items() if b > 0]
    presence = sorted({(groups[g][0], h) for g, h in pairs})
    presence_set = set(presence)
    c = instance.pair_coefficients
    weight = np.array([job.weight for job in instance.jobs])
    resident = instance.resident_costs

    m = pyo.ConcreteModel(name="interference")
    m.N = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.n = pyo.Var(m.N, domain=pyo.NonNegativeIntegers, bounds=lambda m, g, h: (0, most[g, h]))
    m.O = pyo.Set(initialize=presence, dimen=2, ordered=True)
    m.o = pyo.Var(m.O, domain=pyo.Binary)
    servers_of: dict[int, list[int]] = {}
    on_server: list[list[int]] = [[] for _ in range(n_servers)]
    for g, h in pairs:
        servers_of.setdefault(g, []).append(h)
        on_server[h].append(g)
    m.group_assignment = pyo.Constraint(
        range(len(groups)),
        rule=lambda m, g: (
            pyo.quicksum(m.n[g, h] for h in servers_of.get(g, [])) == len(groups[g][1])
        ),
    )
    server_capacity(m, demand, instance.capacity, on_server, load=lambda g, h: m.n[g, h])
    m.job_presence = pyo.ConstraintList()
    for g, h in pairs:
        m.job_presence.add(m.n[g, h] <= most[g, h] * m.o[groups[g][0], h])
    for j, h in presence:
        m.job_presence.add(
            m.o[j, h] <= pyo.quicksum(m.n[g, h] for g in on_server[h] if groups[g][0] == j)
        )
    pair_weight, co = colocation_pairs(weight, c, presence_set, n_servers)
    m.Q = pyo.Set(initialize=co, dimen=3, ordered=True)
    m.q = pyo.Var(m.Q, bounds=(0, 1))
    m.co_location = pyo.ConstraintList()
    for a, b, h in co:
        m.co_location.add(m.q[a, b, h] >= m.o[a, h] + m.o[b, h] - 1)
        m.co_location.add(m.q[a, b, h] <= m.o[a, h])
        m.co_location.add(m.q[a, b, h] <= m.o[b, h])
    if check_symmetry(symmetry):
        scale = instance.capacity.max(axis=0)
        size = 1.0 + (demand / np.where(scale > 0, scale, 1.0)).sum(axis=1)
        server_order(
            m,
            server_classes(instance, interference_key),
            key=lambda h: pyo.quicksum(float(size[g]) * m.n[g, h] for g in on_server[h]),
        )
    # Extra servers spanned, e_j = sum_h o_jh - 1 (>= 0: every job is somewhere). Written as a
    # variable rather than as the constant -lambda_j in the objective: with lambda_j * omega_j
    # far above the objective's value, that constant cancels catastrophically in floating point.
    spread = [j for j, job in enumerate(instance.jobs) if job.weight * job.spread_penalty_s > 0]
    m.e = pyo.Var(spread, bounds=(0, n_servers))
    m.job_spread = pyo.Constraint(
        spread,
        rule=lambda m, j: m.e[j] == pyo.quicksum(m.o[j, h] for jj, h in presence if jj == j) - 1,
    )
    constant = float(sum(job.weight * job.standalone_time_s for job in instance.jobs))
    m.objective = pyo.Objective(
        expr=constant
        + pyo.quicksum(
            float(weight[j] * instance.jobs[j].spread_penalty_s) * m.e[j] for j in spread
        )
        + pyo.quicksum(
            float(weight[j] * resident[j, h]) * m.o[j, h]
            for j, h in presence
            if weight[j] * resident[j, h] > 0
        )
        + pyo.quicksum(pair_weight[a, b] * m.q[a, b, h] for a, b, h in co),
        sense=pyo.minimize,
    )

    def decode() -> Placement:
        server_of = np.full(len(instance.tasks), -1, dtype=np.int64)
        queues = [list(members) for _, members in groups]
        for g, h in pairs:
            for _ in range(integer_value(m.n[g, h])):
                server_of[queues[g].pop()] = h
        return Placement.from_indices(instance, server_of.tolist(), method="ilp:interference")

    return PlacementModel("interference", "harmony", m, decode, timer.seconds(), model_size(m))
