r"""The ``nlwp`` objective: tasks onto GPUs by interference and communication (stage 2 of 2).

After Geng et al. (Cluster Computing 2020; formulations §5, an implementable reading [R]): the
cluster level assigns whole jobs to worker nodes by predicted interference (CLWP), the node
level assigns tasks to GPUs by co-runner interference and communication cost (NLWP). The
predicted interference enters as the instance's coefficients
:math:`c_{ab} = \kappa_{ab} + \hat y_{\mathrm{type}(a)\mathrm{type}(b)}`
(:meth:`~optsched.placement.PlacementInstance.with_interference`,
:meth:`~optsched.placement.PlacementInstance.with_type_interference`) and the residents' cost
:math:`R_{ah}`.

``nlwp``: node-level workload parallelization
    Each server :math:`h` has GPU slots :math:`(h, i)` and one host slot :math:`(h, \mathrm{H})`.
    A task with GPU share :math:`0 < \sigma_t \le 1` goes on a GPU slot, a task with no GPU
    demand on a host slot; binaries :math:`a_{ts}`. For every task pair :math:`\{t, u\}`
    exchanging :math:`V_{tu}`, continuous :math:`z_{tuss'}` linearise :math:`a_{ts} a_{us'}`
    (Adams–Johnson: exact for binary :math:`a`, tight in the LP):

    .. math::
        \min\; & \sum_{s \text{ GPU}} \sum_{t<u} w_{j(t) j(u)}\, q_{tus}
            + \lambda \sum_{\{t,u\}} V_{tu} \sum_{s, s'} \tau_{ss'} z_{tuss'} \\
        \text{s.t.}\; & \textstyle\sum_s a_{ts} = 1 & (\texttt{slot\_assignment}) \\
        & \textstyle\sum_t d_{tr} \sum_{s \in h} a_{ts} \le C_{hr}
            & (\texttt{server\_capacity}) \\
        & \textstyle\sum_t \sigma_t a_{ts} \le 1,\; \sum_t m_t a_{ts} \le M_h
            & (\texttt{gpu\_share}, \texttt{gpu\_memory}) \\
        & q_{tus} \ge a_{ts} + a_{us} - 1 & (\texttt{co\_runner}) \\
        & \textstyle\sum_{s'} z_{tuss'} = a_{ts},\; \sum_{s} z_{tuss'} = a_{us'}
            & (\texttt{communication})

    where :math:`\tau_{ss'}` is 0 within one slot, :math:`1/B^{gpu}_{h,ij}` between GPUs
    :math:`i \ne j` of one server, :math:`1/B^{gpu}_h` between a GPU and the host, and
    :math:`1/\min(B^{nic}_h, B^{nic}_{h'})` between servers; :math:`\lambda` is the instance's
    ``comm_weight``. Co-runner pairs are only those of different jobs. With
    ``symmetry="constraints"``, servers equal in capacity, NIC and GPU configuration are ordered
    by lowest task index (``server_symmetry``), and the GPUs of a server whose GPU links are
    uniform likewise (``gpu_symmetry``).

    The model grows with (task pairs) :math:`\times` (slots)\ :sup:`2`: it is meant for one node
    or a few, as in the paper, where the node-level problem is small.

References
----------
X. Geng, H. Zhang, Z. Zhao, H. Ma, "Interference-aware parallelization for deep learning
workload in GPU cluster", Cluster Computing 23, 2020.
W. P. Adams, T. A. Johnson, "Improved linear programming-based lower bounds for the quadratic
assignment problem", DIMACS Series 16, 1994.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from optsched.cluster import Server
from optsched.errors import ModelError
from optsched.placement.formulation import (
    PlacementModel,
    Timer,
    allowed_servers,
    capacity_key,
    check_symmetry,
    chosen,
    model_size,
    server_capacity,
    server_classes,
    server_symmetry,
)
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.placement.traffic import pair_volumes
from optsched.tolerances import FIT_TOL

__all__ = ["HOST", "build_nlwp", "gpu_key", "slot_cost"]

#: Slot index of a server's host (CPU) slot in NLWP.
HOST = -1


def gpu_key(server: Server) -> Hashable:
    """Servers equal in capacity, NIC and GPU configuration are interchangeable in NLWP."""
    links = tuple(
        sorted((min(g.a, g.b), max(g.a, g.b), g.bandwidth_gbps) for g in server.gpu_links)
    )
    return (
        capacity_key(server),
        server.nic_bandwidth_gbps,
        server.gpu_memory_gb,
        server.gpu_bandwidth_gbps,
        links,
    )


def slot_cost(instance: PlacementInstance, s: tuple[int, int], r: tuple[int, int]) -> float:
    r"""Seconds per Gbit between two slots, each ``(server, gpu or HOST)``: :math:`\tau`."""
    (h, i), (k, j) = s, r
    a, b = instance.servers[h], instance.servers[k]
    if h != k:
        return 1.0 / min(a.nic_bandwidth_gbps, b.nic_bandwidth_gbps)
    if i == j:
        return 0.0
    if i == HOST or j == HOST:
        return 1.0 / a.gpu_bandwidth_gbps
    return 1.0 / a.gpu_pair_bandwidth(i, j)


def _task_slots(instance: PlacementInstance) -> list[list[tuple[int, int]]]:
    """Slots each task may take: GPU slots for GPU tasks, host slots otherwise."""
    allowed = allowed_servers(instance)
    gpu = instance.resources.index("gpu") if "gpu" in instance.resources else None
    out = []
    for t, task in enumerate(instance.tasks):
        share = float(instance.demand[t, gpu]) if gpu is not None else 0.0
        if share > 1.0 + FIT_TOL:
            raise ModelError(
                f"nlwp: task {task.id!r} demands {share:g} GPUs; NLWP puts each task on one GPU"
            )
        memory = instance.spec(t).gpu_memory_gb
        slots = []
        for h in allowed[t]:
            server = instance.servers[h]
            if share <= 0.0:
                slots.append((h, HOST))
                continue
            limit = server.gpu_memory_gb
            if limit is not None and memory > limit + FIT_TOL * max(1.0, limit):
                continue
            slots.extend((h, i) for i in range(server.gpus))
        if not slots:
            raise ModelError(f"nlwp: task {task.id!r} fits on no GPU")
        out.append(slots)
    return out


def build_nlwp(instance: PlacementInstance, *, symmetry: str = "solver") -> PlacementModel:
    """Build the ``nlwp`` model (tasks onto GPUs: co-runner interference plus communication).

    Parameters
    ----------
    instance : PlacementInstance
    symmetry : {"solver", "constraints", "none"}, default "solver"
        With "constraints", order interchangeable servers, and interchangeable GPUs within a
        server, by their lowest task index.

    Returns
    -------
    PlacementModel

    Raises
    ------
    ModelError
        A task demands more than one GPU, or fits on no GPU.
    """
    import pyomo.environ as pyo

    timer = Timer()
    n_tasks, n_servers = len(instance.tasks), len(instance.servers)
    slots = _task_slots(instance)
    index = [(t, h, i) for t in range(n_tasks) for h, i in slots[t]]
    index_set = set(index)
    gpu = instance.resources.index("gpu") if "gpu" in instance.resources else None
    share = [float(instance.demand[t, gpu]) if gpu is not None else 0.0 for t in range(n_tasks)]
    memory = [instance.spec(t).gpu_memory_gb for t in range(n_tasks)]

    m = pyo.ConcreteModel(name="nlwp")
    m.A = pyo.Set(initialize=index, dimen=3, ordered=True)
    m.a = pyo.Var(m.A, domain=pyo.Binary)
    m.slot_assignment = pyo.Constraint(
        range(n_tasks), rule=lambda m, t: pyo.quicksum(m.a[t, h, i] for h, i in slots[t]) == 1
    )
    per_server: dict[tuple[int, int], list[int]] = {}
    for t, h, i in index:
        per_server.setdefault((t, h), []).append(i)

    def on(t: int, h: int) -> Any:
        return pyo.quicksum(m.a[t, h, i] for i in per_server[t, h])

    on_server = [[t for t in range(n_tasks) if (t, h) in per_server] for h in range(n_servers)]
    server_capacity(m, instance.demand, instance.capacity, on_server, load=on)
    by_gpu: dict[tuple[int, int], list[int]] = {}
    for t, h, i in index:
        if i != HOST:
            by_gpu.setdefault((h, i), []).append(t)
    m.gpu_share = pyo.ConstraintList()
    m.gpu_memory = pyo.ConstraintList()
    for (h, i), ts in sorted(by_gpu.items()):
        if sum(share[t] for t in ts) > 1.0 + FIT_TOL:
            m.gpu_share.add(pyo.quicksum(share[t] * m.a[t, h, i] for t in ts) <= 1.0)
        limit = instance.servers[h].gpu_memory_gb
        if limit is not None and sum(memory[t] for t in ts) > limit:
            m.gpu_memory.add(pyo.quicksum(memory[t] * m.a[t, h, i] for t in ts) <= limit)

    c = instance.pair_coefficients
    weight = [job.weight for job in instance.jobs]
    co = []
    for (h, i), ts in sorted(by_gpu.items()):
        for x, t in enumerate(ts):
            for u in ts[x + 1 :]:
                a, b = instance.tasks[t].job, instance.tasks[u].job
                w = weight[a] * c[a, b] + weight[b] * c[b, a] if a != b else 0.0
                if w > 0:
                    co.append((t, u, h, i, float(w)))
    m.Q = pyo.Set(initialize=[row[:4] for row in co], dimen=4, ordered=True)
    m.q = pyo.Var(m.Q, bounds=(0, None))
    m.co_runner = pyo.Constraint(
        m.Q, rule=lambda m, t, u, h, i: m.q[t, u, h, i] >= m.a[t, h, i] + m.a[u, h, i] - 1
    )

    volumes = pair_volumes(instance)
    z_index = [
        (t, u, h, i, k, j) for (t, u) in sorted(volumes) for h, i in slots[t] for k, j in slots[u]
    ]
    m.Z = pyo.Set(initialize=z_index, dimen=6, ordered=True)
    m.z = pyo.Var(m.Z, bounds=(0, 1))
    rows_t: dict[tuple[int, int, int, int], list[Any]] = {}
    rows_u: dict[tuple[int, int, int, int], list[Any]] = {}
    for t, u, h, i, k, j in z_index:
        rows_t.setdefault((t, u, h, i), []).append(m.z[t, u, h, i, k, j])
        rows_u.setdefault((t, u, k, j), []).append(m.z[t, u, h, i, k, j])
    m.communication = pyo.ConstraintList()
    for (t, _, h, i), zs in rows_t.items():
        m.communication.add(pyo.quicksum(zs) == m.a[t, h, i])
    for (_, u, k, j), zs in rows_u.items():
        m.communication.add(pyo.quicksum(zs) == m.a[u, k, j])

    if check_symmetry(symmetry):
        server_symmetry(
            m,
            server_classes(instance, gpu_key),
            n_tasks,
            on=on,
            allowed=lambda t, h: (t, h) in per_server,
        )
        slot_id = {hi: n for n, hi in enumerate(sorted(by_gpu))}
        gpu_classes = []
        for h, server in enumerate(instance.servers):
            ids = [slot_id[h, i] for i in range(server.gpus) if (h, i) in slot_id]
            if server.gpus_interchangeable and len(ids) > 1:
                gpu_classes.append(ids)
        by_id = {n: hi for hi, n in slot_id.items()}
        server_symmetry(
            m,
            gpu_classes,
            n_tasks,
            on=lambda t, n: m.a[t, by_id[n][0], by_id[n][1]],
            allowed=lambda t, n: (t, *by_id[n]) in index_set,
            name="gpu_symmetry",
        )
    comm = pyo.quicksum(
        volumes[t, u] * slot_cost(instance, (h, i), (k, j)) * m.z[t, u, h, i, k, j]
        for t, u, h, i, k, j in z_index
        if (h, i) != (k, j)
    )
    m.objective = pyo.Objective(
        expr=pyo.quicksum(w * m.q[t, u, h, i] for t, u, h, i, w in co)
        + float(instance.comm_weight) * comm,
        sense=pyo.minimize,
    )

    def decode() -> Placement:
        servers, gpus = [], {}
        for t in range(n_tasks):
            h, i = chosen({(h, i): m.a[t, h, i] for h, i in slots[t]})
            servers.append(h)
            if i != HOST:
                gpus[t] = i
        return Placement.from_indices(instance, servers, gpus=gpus, method="ilp:nlwp")

    return PlacementModel("nlwp", "nlwp", m, decode, timer.seconds(), model_size(m))
