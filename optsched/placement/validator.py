r"""The independent validator of placements.

Every placement algorithm in optsched (the exact ILPs, the heuristics, brute force) returns a
:class:`~optsched.placement.Placement`. :func:`validate` checks it against the instance and
recomputes **every** objective from the instance and the placement alone, with plain loops over
tasks, flows and network paths. It shares no code with the formulations, so a bug in a
formulation cannot hide itself.

Objectives recomputed (all minimised)
-------------------------------------
``servers``
    Number of servers hosting at least one task.
``traffic``
    :math:`\sum_{(t,u)} v_{tu}\,[h(t) \ne h(u)]`: volume crossing server boundaries (Gbit).
``max-load``
    :math:`\max_{\ell, d} (b_\ell + \sum_{(t,u) \text{ crossing } \ell \text{ in } d} v_{tu}) /
    B_\ell`: the most loaded link direction, in seconds per iteration (background included).
``interference``
    Harmony's weighted iteration time (formulations §3.3):
    :math:`\sum_j \omega_j [t^0_j + \sum_{h \in S_j} (\sum_{k \ne j: h \in S_k} c_{jk} + R_{jh})
    + \lambda_j (|S_j| - 1)]` where :math:`S_j` is the set of servers job :math:`j` uses.
``clwp``
    Only for job-atomic placements (each job on one server):
    :math:`\sum_j \omega_j [\sum_{k \ne j: h(k) = h(j)} c_{jk} + R_{j h(j)}]`.
``nlwp``
    Only when GPUs are assigned: :math:`\sum_{g} \sum_{t \ne u \text{ on } g,\, j(t) \ne j(u)}
    \omega_{j(t)} c_{j(t) j(u)} + \lambda \sum_{(t,u)} v_{tu}\,\tau(t, u)`, with
    :math:`\tau` 0 on one GPU (or two host tasks of one server), :math:`1/B^{gpu}_{h,ij}` between
    GPUs of one server (:math:`1/B^{gpu}_h` between a GPU and the host) and
    :math:`1/\min(B^{nic}_h, B^{nic}_{h'})` between servers.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from optsched.errors import InvalidInstanceError
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL, leq

__all__ = [
    "CONSTRAINTS",
    "OBJECTIVE_NAMES",
    "check",
    "validate",
]

#: The constraint names a :class:`~optsched.results.Violation` of a placement carries.
CONSTRAINTS: tuple[str, ...] = (
    "task_assignment",
    "server_capacity",
    "gpu_assignment",
    "gpu_share",
    "gpu_memory_gb",
)
#: Every objective the validator recomputes, in report order.
OBJECTIVE_NAMES: tuple[str, ...] = (
    "servers",
    "traffic",
    "max-load",
    "interference",
    "clwp",
    "nlwp",
)


def _within(load: float, capacity: float) -> bool:
    return leq(load, capacity, CAPACITY_TOL)


def _coefficient_tables(
    instance: PlacementInstance,
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    jobs = {(c.a, c.b): c.coefficient for c in instance.interference}
    types = {(c.a, c.b): c.coefficient for c in instance.type_interference}
    return jobs, types


def validate(
    instance: PlacementInstance, placement: Placement, objective: str | None = None
) -> Report:
    r"""Check ``placement`` against ``instance`` and recompute every objective.

    Checks: every task is assigned exactly once to a known server, no unknown task is
    assigned, every server's summed demand fits its capacity per resource, and, when GPUs are
    given, every GPU task has a GPU index on its server, GPU shares per GPU sum to at most 1 and
    GPU memory per GPU fits ``gpu_memory_gb``.

    Parameters
    ----------
    instance : PlacementInstance
    placement : Placement
    objective : str, optional
        The objective whose value becomes :attr:`Report.objective` (one of
        :data:`OBJECTIVE_NAMES`); by default the one named by ``placement.method``
        (``"ilp:traffic"`` -> ``traffic``), else none.

    Returns
    -------
    Report
        ``violations`` (typed, with the constraint names of :data:`CONSTRAINTS`),
        ``objectives`` (every objective of :data:`OBJECTIVE_NAMES`; ``None`` where it does not
        apply: ``clwp`` for a placement that splits a job, ``nlwp`` without GPUs, any objective
        when a task is unassigned), and ``details``: ``server_load`` (demand per used server and
        resource) and ``link_load`` (Gbit per link direction, background included: ``"s0:out"``
        leaves server ``s0`` through its NIC, ``"r1:in"`` enters rack ``r1`` through its
        uplink).

    Raises
    ------
    InvalidInstanceError
        ``objective`` is not one of :data:`OBJECTIVE_NAMES`.

    Notes
    -----
    Complexity :math:`O(T R + F \cdot \text{path} + J^2 H)` for :math:`T` tasks, :math:`R`
    resources, :math:`F` flows, :math:`J` jobs and :math:`H` servers.
    """
    if objective is not None and objective not in OBJECTIVE_NAMES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {list(OBJECTIVE_NAMES)}"
        )
    violations: list[Violation] = []
    servers = {s.name: s for s in instance.cluster.servers}
    tasks = instance.tasks
    known = {t.id for t in tasks}
    where: dict[str, str] = {}
    for task_id, server in placement.assignment.items():
        if task_id not in known:
            violations.append(
                Violation(
                    "task_assignment", f"unknown task {task_id!r} is assigned", {"task": task_id}
                )
            )
        elif server not in servers:
            violations.append(
                Violation(
                    "task_assignment",
                    f"task {task_id!r} is assigned to unknown server {server!r}",
                    {"task": task_id, "server": server},
                )
            )
        else:
            where[task_id] = server
    for t in tasks:
        if t.id not in placement.assignment:
            violations.append(
                Violation("task_assignment", f"task {t.id!r} is not assigned", {"task": t.id})
            )

    # Capacity: summed demand per server and resource.
    load: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for t in tasks:
        if t.id in where:
            spec = instance.jobs[t.job].tasks[t.spec]
            used = load[where[t.id]]  # created even for a task with no demand
            for r, v in spec.demand.items():
                used[r] += v
    for name, used in load.items():
        cap = servers[name].capacity
        for r, v in used.items():
            if not _within(v, cap.get(r, 0.0)):
                violations.append(
                    Violation(
                        "server_capacity",
                        f"server {name!r}: {r} demand {v:g} exceeds capacity {cap.get(r, 0.0):g}",
                        {"server": name, "resource": r},
                        v - cap.get(r, 0.0),
                    )
                )

    gpu_of: dict[str, int] = {}
    gpu_ok = True
    if placement.gpus is not None:
        before = len(violations)
        gpu_of = _check_gpus(instance, placement.gpus, where, known, violations)
        gpu_ok = len(violations) == before

    objectives: dict[str, float | None] = dict.fromkeys(OBJECTIVE_NAMES)
    link_load: dict[str, float] = {}
    if len(where) == len(tasks) and all(t.id in where for t in tasks):
        objectives["servers"] = float(len({where[t.id] for t in tasks}))
        objectives["traffic"], objectives["max-load"], link_load = _network(instance, where)
        objectives["interference"], objectives["clwp"] = _interference(instance, where)
        if placement.gpus is not None and gpu_ok:
            objectives["nlwp"] = _node_level(instance, where, gpu_of)
    if objective is None and placement.method.startswith("ilp:"):
        named = placement.method.split(":")[1]
        objective = named if named in OBJECTIVE_NAMES else None
    return Report(
        violations=violations,
        objective=None if objective is None else objectives[objective],
        objectives=objectives,
        details={
            "server_load": {k: dict(v) for k, v in load.items()},
            "link_load": link_load,
        },
    )


def _check_gpus(
    instance: PlacementInstance,
    gpus: Mapping[str, int],
    where: Mapping[str, str],
    known: set[str],
    violations: list[Violation],
) -> dict[str, int]:
    servers = {s.name: s for s in instance.cluster.servers}
    out: dict[str, int] = {}
    share: dict[tuple[str, int], float] = defaultdict(float)
    memory: dict[tuple[str, int], float] = defaultdict(float)

    def bad(message: str, **at: Any) -> None:
        violations.append(Violation("gpu_assignment", f"gpu: {message}", at))

    for task_id in gpus:
        if task_id not in known:
            bad(f"unknown task {task_id!r} has a GPU", task=task_id)
    for t in instance.tasks:
        spec = instance.jobs[t.job].tasks[t.spec]
        need = spec.demand.get("gpu", 0.0)
        g = gpus.get(t.id)
        if need <= 0.0:
            if g is not None:
                bad(f"task {t.id!r} demands no GPU but is given GPU {g}", task=t.id)
            continue
        if not leq(need, 1.0, CAPACITY_TOL):
            bad(f"task {t.id!r} demands {need:g} GPUs; one GPU per task at most", task=t.id)
            continue
        if g is None:
            bad(f"task {t.id!r} demands a GPU but has none", task=t.id)
            continue
        if t.id not in where:
            continue
        server = servers[where[t.id]]
        if not 0 <= g < server.gpus:
            bad(
                f"task {t.id!r} is given GPU {g} but server {server.name!r} has {server.gpus}",
                task=t.id,
                server=server.name,
            )
            continue
        out[t.id] = g
        share[(server.name, g)] += need
        memory[(server.name, g)] += spec.gpu_memory_gb
    for (name, g), s in share.items():
        if not _within(s, 1.0):
            violations.append(
                Violation(
                    "gpu_share",
                    f"gpu: GPU {g} of server {name!r} is shared {s:g} > 1 times",
                    {"server": name, "gpu": g},
                    s - 1.0,
                )
            )
        limit = servers[name].gpu_memory_gb
        if limit is not None and not _within(memory[(name, g)], limit):
            violations.append(
                Violation(
                    "gpu_memory_gb",
                    f"gpu: GPU {g} of server {name!r} needs {memory[(name, g)]:g} GB "
                    f"> {limit:g} GB",
                    {"server": name, "gpu": g},
                    memory[(name, g)] - limit,
                )
            )
    return out


def _network(
    instance: PlacementInstance, where: Mapping[str, str]
) -> tuple[float, float, dict[str, float]]:
    """Cross-server traffic and the most loaded link direction, by walking graph paths."""
    import networkx as nx

    tasks = instance.tasks
    graph = instance.cluster.graph()
    # Orient the tree from its top switch: every other node owns the edge to its parent, whose
    # upward direction is "out" and downward direction is "in".
    root = next(n for n, d in graph.nodes(data=True) if d["kind"] == "switch" and n.startswith("<"))
    parent = dict(nx.bfs_predecessors(graph, root))
    load: dict[tuple[str, str], float] = {}
    bandwidth: dict[tuple[str, str], float] = {}
    for child, up in parent.items():
        data = graph.edges[child, up]
        for direction in ("out", "in"):
            load[(child, direction)] = data["background_gbit"]
            bandwidth[(child, direction)] = data["bandwidth_gbps"]
    crossing = 0.0
    for src, dst, volume in instance.flows:
        hs, hd = where[tasks[src].id], where[tasks[dst].id]
        if hs == hd:
            continue
        crossing += volume
        nodes = nx.shortest_path(graph, hs, hd)
        for x, y in itertools.pairwise(nodes):
            if parent.get(x) == y:
                load[(x, "out")] += volume
            else:
                load[(y, "in")] += volume
    worst = max(load[k] / bandwidth[k] for k in load)
    return crossing, worst, {f"{k[0]}:{k[1]}": v for k, v in sorted(load.items())}


def _interference(
    instance: PlacementInstance, where: Mapping[str, str]
) -> tuple[float, float | None]:
    """Harmony's weighted iteration time, and CLWP's cost when every job sits on one server."""
    jobs_kappa, types_kappa = _coefficient_tables(instance)
    servers = {s.name: s for s in instance.cluster.servers}
    spans: list[set[str]] = [set() for _ in instance.jobs]
    for t in instance.tasks:
        spans[t.job].add(where[t.id])

    def coefficient(a: int, b: int) -> float:
        ja, jb = instance.jobs[a], instance.jobs[b]
        value = jobs_kappa.get((ja.name, jb.name), 0.0)
        if ja.type is not None and jb.type is not None:
            value += types_kappa.get((ja.type, jb.type), 0.0)
        return value

    def residents(a: int, server: str) -> float:
        ja = instance.jobs[a]
        if ja.type is None:
            return 0.0
        return sum(types_kappa.get((ja.type, r), 0.0) for r in servers[server].residents)

    harmony = 0.0
    shared = 0.0
    for a, job in enumerate(instance.jobs):
        slowdown = 0.0
        for b in range(len(instance.jobs)):
            if b != a:
                slowdown += coefficient(a, b) * len(spans[a] & spans[b])
        slowdown += sum(residents(a, h) for h in spans[a])
        harmony += job.weight * (
            job.standalone_time_s + slowdown + job.spread_penalty_s * (len(spans[a]) - 1)
        )
        shared += job.weight * slowdown
    atomic = all(len(s) == 1 for s in spans)
    return harmony, (shared if atomic else None)


def _node_level(
    instance: PlacementInstance, where: Mapping[str, str], gpu_of: Mapping[str, int]
) -> float:
    """NLWP cost: co-runner interference per GPU plus weighted communication time."""
    jobs_kappa, types_kappa = _coefficient_tables(instance)
    servers = {s.name: s for s in instance.cluster.servers}
    tasks = instance.tasks
    by_gpu: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        if t.id in gpu_of:
            by_gpu[(where[t.id], gpu_of[t.id])].append(i)
    cost = 0.0
    for members in by_gpu.values():
        for i in members:
            for k in members:
                ja, jb = instance.jobs[tasks[i].job], instance.jobs[tasks[k].job]
                if tasks[i].job == tasks[k].job:
                    continue
                c = jobs_kappa.get((ja.name, jb.name), 0.0)
                if ja.type is not None and jb.type is not None:
                    c += types_kappa.get((ja.type, jb.type), 0.0)
                cost += ja.weight * c
    comm = 0.0
    for src, dst, volume in instance.flows:
        a, b = tasks[src].id, tasks[dst].id
        ha, hb = servers[where[a]], servers[where[b]]
        if ha.name != hb.name:
            comm += volume / min(ha.nic_bandwidth_gbps, hb.nic_bandwidth_gbps)
            continue
        ga, gb = gpu_of.get(a), gpu_of.get(b)
        if ga is None and gb is None:
            continue
        if ga is None or gb is None:
            comm += volume / ha.gpu_bandwidth_gbps
        elif ga != gb:
            comm += volume / ha.gpu_pair_bandwidth(ga, gb)
    return cost + instance.comm_weight * comm


def check(instance: PlacementInstance, placement: Placement) -> Report:
    """Like :func:`validate`, but raise when the placement is infeasible.

    Raises
    ------
    InvalidScheduleError
        With every violation.
    """
    report = validate(instance, placement)
    report.raise_if_invalid()
    return report
