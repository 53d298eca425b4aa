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
from collections.abc import Callable, Mapping
from typing import Any

from optsched.errors import InvalidInstanceError
from optsched.placement.instance import PlacementInstance, Task
from optsched.placement.solution import Placement
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL, leq

__all__ = [
    "CONSTRAINTS",
    "OBJECTIVE_NAMES",
    "check",
    "validate",
]

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


def _placed(instance: PlacementInstance, solution: Placement) -> dict[str, str]:
    """Task id to server of every assignment of a known task to a known server."""
    servers = {s.name for s in instance.cluster.servers}
    known = {t.id for t in instance.tasks}
    return {
        task: server
        for task, server in solution.assignment.items()
        if task in known and server in servers
    }


def task_assignment(instance: PlacementInstance, solution: Placement) -> list[Violation]:
    """``task_assignment``: every task sits on exactly one known server, and only tasks do."""
    servers = {s.name for s in instance.cluster.servers}
    known = {t.id for t in instance.tasks}
    out: list[Violation] = []
    for task_id, server in solution.assignment.items():
        if task_id not in known:
            out.append(
                Violation(
                    "task_assignment", f"unknown task {task_id!r} is assigned", {"task": task_id}
                )
            )
        elif server not in servers:
            out.append(
                Violation(
                    "task_assignment",
                    f"task {task_id!r} is assigned to unknown server {server!r}",
                    {"task": task_id, "server": server},
                )
            )
    out += [
        Violation("task_assignment", f"task {t.id!r} is not assigned", {"task": t.id})
        for t in instance.tasks
        if t.id not in solution.assignment
    ]
    return out


def _server_load(instance: PlacementInstance, solution: Placement) -> dict[str, dict[str, float]]:
    """Summed demand per used server and resource (a server appears once it hosts a task)."""
    where = _placed(instance, solution)
    load: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for t in instance.tasks:
        if t.id in where:
            used = load[where[t.id]]  # created even for a task with no demand
            for r, v in instance.jobs[t.job].tasks[t.spec].demand.items():
                used[r] += v
    return load


def server_capacity(instance: PlacementInstance, solution: Placement) -> list[Violation]:
    r"""``server_capacity``: :math:`\sum_{t \text{ on } h} d_t^r \le C_h^r`."""
    servers = {s.name: s for s in instance.cluster.servers}
    return [
        Violation(
            "server_capacity",
            f"server {name!r}: {r} demand {v:g} exceeds capacity "
            f"{servers[name].capacity.get(r, 0.0):g}",
            {"server": name, "resource": r},
            v - servers[name].capacity.get(r, 0.0),
        )
        for name, used in _server_load(instance, solution).items()
        for r, v in used.items()
        if not _within(v, servers[name].capacity.get(r, 0.0))
    ]


def _task_gpu(
    instance: PlacementInstance, solution: Placement, task: Task, where: Mapping[str, str]
) -> tuple[str, dict[str, Any]]:
    """What is wrong with a task's GPU (``""`` if nothing is), and where."""
    need = instance.jobs[task.job].tasks[task.spec].demand.get("gpu", 0.0)
    g = (solution.gpus or {}).get(task.id)
    at: dict[str, Any] = {"task": task.id}
    if need <= 0.0:
        return ("" if g is None else f"task {task.id!r} demands no GPU but is given GPU {g}"), at
    if not leq(need, 1.0, CAPACITY_TOL):
        return f"task {task.id!r} demands {need:g} GPUs; one GPU per task at most", at
    if g is None:
        return f"task {task.id!r} demands a GPU but has none", at
    server = next((s for s in instance.cluster.servers if s.name == where.get(task.id)), None)
    if server is None or 0 <= g < server.gpus:
        return "", at  # an unassigned task is task_assignment's to report
    at["server"] = server.name
    return f"task {task.id!r} is given GPU {g} but server {server.name!r} has {server.gpus}", at


def gpu_assignment(instance: PlacementInstance, solution: Placement) -> list[Violation]:
    """``gpu_assignment``: when GPUs are given, exactly the GPU tasks have one, on their server.

    A task demands at most one GPU.
    """
    if solution.gpus is None:
        return []
    known = {t.id for t in instance.tasks}
    out = [
        Violation("gpu_assignment", f"gpu: unknown task {task_id!r} has a GPU", {"task": task_id})
        for task_id in solution.gpus
        if task_id not in known
    ]
    where = _placed(instance, solution)
    for t in instance.tasks:
        message, at = _task_gpu(instance, solution, t, where)
        if message:
            out.append(Violation("gpu_assignment", f"gpu: {message}", at))
    return out


def _gpu_of(instance: PlacementInstance, solution: Placement) -> dict[str, int]:
    """The GPU of every placed GPU task whose GPU is valid."""
    where = _placed(instance, solution)
    gpus = solution.gpus or {}
    return {
        t.id: gpus[t.id]
        for t in instance.tasks
        if t.id in where
        and t.id in gpus
        and instance.jobs[t.job].tasks[t.spec].demand.get("gpu", 0.0) > 0.0
        and not _task_gpu(instance, solution, t, where)[0]
    }


def _gpu_sums(
    instance: PlacementInstance, solution: Placement, field: str
) -> dict[tuple[str, int], float]:
    """Per (server, GPU): the summed GPU share (``field="share"``) or GPU memory of its tasks."""
    where = _placed(instance, solution)
    gpu_of = _gpu_of(instance, solution)
    out: dict[tuple[str, int], float] = defaultdict(float)
    for t in instance.tasks:
        if t.id in gpu_of:
            spec = instance.jobs[t.job].tasks[t.spec]
            value = spec.demand["gpu"] if field == "share" else spec.gpu_memory
            out[(where[t.id], gpu_of[t.id])] += value
    return out


def gpu_share(instance: PlacementInstance, solution: Placement) -> list[Violation]:
    """``gpu_share``: the GPU shares of the tasks on one GPU sum to at most 1."""
    return [
        Violation(
            "gpu_share",
            f"gpu: GPU {g} of server {name!r} is shared {s:g} > 1 times",
            {"server": name, "gpu": g},
            s - 1.0,
        )
        for (name, g), s in _gpu_sums(instance, solution, "share").items()
        if not _within(s, 1.0)
    ]


def gpu_memory(instance: PlacementInstance, solution: Placement) -> list[Violation]:
    """``gpu_memory``: the GPU memory of the tasks on one GPU fits the server's ``gpu_memory``."""
    limits = {s.name: s.gpu_memory for s in instance.cluster.servers}
    return [
        Violation(
            "gpu_memory",
            f"gpu: GPU {g} of server {name!r} needs {m:g} GB > {limits[name]:g} GB",
            {"server": name, "gpu": g},
            m - limits[name],  # type: ignore[operator]
        )
        for (name, g), m in _gpu_sums(instance, solution, "memory").items()
        if limits[name] is not None and not _within(m, limits[name])  # type: ignore[arg-type]
    ]


#: Every constraint the validator checks, by its name on the formulation page, in check order
#: (the ``gpu_*`` ones only when the placement assigns GPUs).
CONSTRAINTS: dict[str, Callable[[PlacementInstance, Placement], list[Violation]]] = {
    "task_assignment": task_assignment,
    "server_capacity": server_capacity,
    "gpu_assignment": gpu_assignment,
    "gpu_share": gpu_share,
    "gpu_memory": gpu_memory,
}
_GPU_CONSTRAINTS = ("gpu_assignment", "gpu_share", "gpu_memory")


def _objectives(
    instance: PlacementInstance, solution: Placement, gpu_ok: bool
) -> tuple[dict[str, float | None], dict[str, float]]:
    """Every objective of :data:`OBJECTIVE_NAMES` and the link loads.

    An objective is ``None`` where it does not apply.
    """
    objectives: dict[str, float | None] = dict.fromkeys(OBJECTIVE_NAMES)
    where = _placed(instance, solution)
    if not all(t.id in where for t in instance.tasks):
        return objectives, {}
    objectives["servers"] = float(len({where[t.id] for t in instance.tasks}))
    objectives["traffic"], objectives["max-load"], link_load = _network(instance, where)
    objectives["interference"], objectives["clwp"] = _interference(instance, where)
    if solution.gpus is not None and gpu_ok:
        objectives["nlwp"] = _node_level(instance, where, _gpu_of(instance, solution))
    return objectives, link_load


def validate(
    instance: PlacementInstance, solution: Placement, objective: str | None = None
) -> Report:
    r"""Check ``solution`` against ``instance`` and recompute every objective.

    Checks every constraint of :data:`CONSTRAINTS`: every task is assigned exactly once to a
    known server, no unknown task is assigned, every server's summed demand fits its capacity
    per resource, and, when GPUs are given, every GPU task has a GPU index on its server, GPU
    shares per GPU sum to at most 1 and GPU memory per GPU fits ``gpu_memory``.

    Parameters
    ----------
    instance : PlacementInstance
    solution : Placement
    objective : str, optional
        The objective whose value becomes :attr:`Report.objective` (one of
        :data:`OBJECTIVE_NAMES`); by default the one named by ``solution.method``
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
    for check in CONSTRAINTS.values():
        violations += check(instance, solution)
    gpu_ok = not any(v.constraint in _GPU_CONSTRAINTS for v in violations)
    objectives, link_load = _objectives(instance, solution, gpu_ok)
    if objective is None and solution.method.startswith("ilp:"):
        named = solution.method.split(":")[1]
        objective = named if named in OBJECTIVE_NAMES else None
    return Report(
        violations=violations,
        objective=None if objective is None else objectives[objective],
        objectives=objectives,
        details={
            "server_load": {k: dict(v) for k, v in _server_load(instance, solution).items()},
            "link_load": link_load,
        },
    )


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
            load[(child, direction)] = data["background"]
            bandwidth[(child, direction)] = data["bandwidth"]
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
            job.standalone_time + slowdown + job.spread_penalty * (len(spans[a]) - 1)
        )
        shared += job.weight * slowdown
    atomic = all(len(s) == 1 for s in spans)
    return harmony, (shared if atomic else None)


def _corunner_cost(
    instance: PlacementInstance, where: Mapping[str, str], gpu_of: Mapping[str, int]
) -> float:
    r"""The co-runner cost of NLWP.

    .. math:: \sum_g \sum_{t \ne u \text{ on } g,\, j(t) \ne j(u)} \omega_{j(t)} c_{j(t) j(u)}
    """
    jobs_kappa, types_kappa = _coefficient_tables(instance)
    tasks = instance.tasks
    by_gpu: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        if t.id in gpu_of:
            by_gpu[(where[t.id], gpu_of[t.id])].append(tasks[i].job)
    cost = 0.0
    for members in by_gpu.values():
        for a, b in itertools.product(members, members):
            if a == b:
                continue
            ja, jb = instance.jobs[a], instance.jobs[b]
            c = jobs_kappa.get((ja.name, jb.name), 0.0)
            if ja.type is not None and jb.type is not None:
                c += types_kappa.get((ja.type, jb.type), 0.0)
            cost += ja.weight * c
    return cost


def _flow_time(
    instance: PlacementInstance,
    where: Mapping[str, str],
    gpu_of: Mapping[str, int],
    flow: tuple[int, int, float],
) -> float:
    r"""One flow's :math:`v_{tu}\,\tau(t, u)`."""
    servers = {s.name: s for s in instance.cluster.servers}
    src, dst, volume = flow
    a, b = instance.tasks[src].id, instance.tasks[dst].id
    ha, hb = servers[where[a]], servers[where[b]]
    if ha.name != hb.name:
        return volume / min(ha.nic_bandwidth, hb.nic_bandwidth)
    ga, gb = gpu_of.get(a), gpu_of.get(b)
    if ga is None and gb is None:
        return 0.0
    if ga is None or gb is None:
        return volume / ha.gpu_bandwidth
    return 0.0 if ga == gb else volume / ha.gpu_pair_bandwidth(ga, gb)


def _node_level(
    instance: PlacementInstance, where: Mapping[str, str], gpu_of: Mapping[str, int]
) -> float:
    """NLWP cost: co-runner interference per GPU plus weighted communication time."""
    comm = 0.0
    for flow in instance.flows:
        comm += _flow_time(instance, where, gpu_of, flow)
    return _corunner_cost(instance, where, gpu_of) + instance.comm_weight * comm


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
