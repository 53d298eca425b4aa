r"""The ``servers`` objective: place every task on as few servers as possible.

With one resource and identical servers this is bin packing; in general it is vector bin packing
with heterogeneous bins. Two exact formulations are provided; :func:`build_servers` picks one.

Arc-flow (``formulation="arcflow"``, Valério de Carvalho 1999)
    Tasks with equal demand vectors form *types* :math:`k` with multiplicity :math:`N_k`. For
    each class :math:`c` of servers with equal capacity :math:`C_c` (:math:`m_c` servers), a
    graph has one node per reachable load vector (starting at 0, adding item types in a fixed
    order, never exceeding :math:`C_c`), an *item arc* :math:`(p, p + d_k)` for each type that
    fits, and a *loss arc* from every node to a sink. Every source-sink path is the content of
    one server, and every feasible content is a path. With integer flows :math:`f`:

    .. math::
        \min \sum_c z_c \quad\text{s.t.}\quad
        \sum_{a \in \delta^+(v)} f_a - \sum_{a \in \delta^-(v)} f_a =
            \begin{cases} z_c & v = 0 \\ -z_c & v = \text{sink} \\ 0 & \text{else}\end{cases}
            \;\;\forall c, v; \qquad
        \sum_c \sum_{a \text{ of type } k} f_a \ge N_k \;\;\forall k; \qquad
        z_c \le m_c; \qquad \sum_c z_c \ge L.

    Its LP relaxation equals the Gilmore–Gomory bound, which is almost always tight for bin
    packing, and it has no symmetry between servers or between equal tasks. The graph has at most
    :math:`C+1` nodes for one integer resource of capacity :math:`C`; with several independent
    real-valued resources it can explode, so it is built only up to :data:`ARCFLOW_MAX_ARCS`.

Assignment (``formulation="assignment"``)
    Integer counts :math:`n_{kh}` of type :math:`k` on server :math:`h` and binaries
    :math:`u_h` (server used):

    .. math::
        \min \sum_h u_h \quad\text{s.t.}\quad
        \sum_h n_{kh} = N_k; \quad
        \sum_k d_{kr} n_{kh} \le C_{hr} u_h; \quad
        n_{kh} \le \bar n_{kh} u_h; \quad
        \sum_h u_h \ge L; \quad \sum_h u_h \le U,

    with :math:`\bar n_{kh} = \min(N_k, \lfloor C_{hr}/d_{kr} \rfloor_r)`. Symmetry between servers
    of one capacity class :math:`h_1, h_2, \dots` is broken by ordering them by a weighted load,
    :math:`\sum_k w_k n_{k h_i} \ge \sum_k w_k n_{k h_{i+1}}` with :math:`w_k` the size of type
    :math:`k`, and :math:`u_{h_i} \ge u_{h_{i+1}}`; servers beyond position :math:`U` of their
    class are fixed unused.

Bounds: :math:`L = \max_r` (fewest servers whose largest capacities cover the total demand of
resource :math:`r`), at least 1; :math:`U` is the number of servers best-fit decreasing uses.

Certificate (``formulation="auto"`` on one-dimensional instances)
    With identical servers, one resource and integer demands (bin packing proper), ``auto``
    first tries :func:`optsched.placement.binpacking.certify`: Martello and Toth's lower bound
    :math:`L_2` (raised to the rounded-up arc-flow LP bound when that LP is solved) and a packing
    by minimum bin slack or an arc-flow LP dive. When the packing uses as many servers as the
    bound, it is optimal and no model is solved (``formulation`` ``"certificate"``, bound equal
    to the objective). Otherwise the arc-flow model is solved with the certificate's bounds as
    :math:`L` and :math:`U`.

References
----------
J. M. Valério de Carvalho, "Exact solution of bin-packing problems using column generation and
branch-and-bound", Annals of Operations Research 86, 1999.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import numpy as np

from optsched.errors import HeuristicFailedError, ModelError
from optsched.placement.arcflow import ARCFLOW_MAX_ARCS, ArcFlowGraph, arcflow_graph
from optsched.placement.formulation import (
    PlacementModel,
    Timer,
    capacity_key,
    check_symmetry,
    integer_value,
    model_size,
)
from optsched.placement.heuristics import best_fit_decreasing
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.tolerances import FIT_TOL

__all__ = [
    "CERTIFICATE_MAX_WORK",
    "build_servers",
    "one_dimensional",
    "servers_lower_bound",
]

#: The certificate is tried only when tasks times capacity stays under this: its subset-sum
#: tables grow with the capacity (in units of the integer sizes).
CERTIFICATE_MAX_WORK = 2_000_000


def _types(instance: PlacementInstance) -> tuple[np.ndarray, list[list[int]]]:
    """Distinct demand vectors (rows, largest first) and the tasks having each."""
    groups: dict[tuple[float, ...], list[int]] = {}
    for t in range(len(instance.tasks)):
        groups.setdefault(tuple(float(v) for v in instance.demand[t]), []).append(t)
    scale = instance.capacity.max(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    keys = sorted(groups, key=lambda d: (-float(np.sum(np.array(d) / scale)), d))
    return np.array(keys, dtype=np.float64).reshape(len(keys), instance.demand.shape[1]), [
        groups[k] for k in keys
    ]


def servers_lower_bound(instance: PlacementInstance) -> int:
    """Fewest servers whose capacities could hold the total demand of every resource.

    For each resource, the servers are taken largest first until their capacities cover the
    total demand; the bound is the largest count over resources, and at least 1.
    """
    total = instance.demand.sum(axis=0)
    bound = 1
    for r in range(instance.capacity.shape[1]):
        caps = np.sort(instance.capacity[:, r])[::-1]
        covered = np.cumsum(caps)
        need = total[r] - FIT_TOL * max(1.0, float(total[r]))
        count = int(np.searchsorted(covered, need, side="left")) + 1
        bound = max(bound, min(count, len(caps)))
    return bound


def one_dimensional(instance: PlacementInstance) -> tuple[list[int], int, int] | None:
    """The instance as bin packing proper, if it is one: ``(sizes, capacity, resource)``.

    That is: every server has the same capacity vector, exactly one resource has a positive
    demand, and every demand of it is an integer (the capacity is rounded down, which changes
    no fit for integer sizes). ``sizes`` has one entry per task, 0 for tasks needing nothing.
    """
    if len(instance.tasks) == 0 or not np.all(instance.capacity == instance.capacity[0]):
        return None
    used = np.flatnonzero(np.any(instance.demand > 0, axis=0))
    if len(used) != 1:
        return None
    r = int(used[0])
    column = instance.demand[:, r]
    if not np.all(column == np.round(column)):
        return None
    raw = float(instance.capacity[0, r])
    capacity = int(np.floor(raw + FIT_TOL * max(1.0, abs(raw))))
    if capacity < 1 or np.any(column > capacity) or len(column) * capacity > CERTIFICATE_MAX_WORK:
        return None
    return [int(v) for v in column], capacity, r


def _certificate(instance: PlacementInstance) -> tuple[Any, int, int] | None:
    """Run :func:`~optsched.placement.binpacking.certify`; ``(certificate, L, U)`` or ``None``.

    ``None`` when the instance is not bin packing proper or its packing needs more servers
    than there are.
    """
    from optsched.placement.binpacking import certify

    shape = one_dimensional(instance)
    if shape is None:
        return None
    sizes, capacity, _ = shape
    positive = [t for t, v in enumerate(sizes) if v > 0]
    if not positive:
        return None
    cert = certify([sizes[t] for t in positive], capacity)
    if len(cert.bins) > len(instance.servers):
        return None
    bins = [[positive[i] for i in content] for content in cert.bins]
    return (bins, cert), cert.lower, len(cert.bins)


def _certificate_model(instance: PlacementInstance, bins: list[list[int]], cert: Any) -> Any:
    """An :class:`~optsched.family.exact.AlgorithmBackend` returning the certified packing."""
    from optsched.family.exact import closed_form

    server_of = np.full(len(instance.tasks), 0, dtype=np.int64)  # zero-size tasks: server 0
    for h, content in enumerate(bins):
        server_of[content] = h
    placement = Placement.from_indices(instance, server_of.tolist(), method="certificate:servers")
    which = "arc-flow LP" if cert.lower > cert.l2 else "Martello-Toth L2"
    message = f"{cert.method} uses {len(bins)} servers, the lower bound ({which}) is {cert.lower}"

    backend = closed_form(float(len(bins)), None, name="bin-packing certificate", message=message)
    return backend, lambda: placement


def _upper_bound(instance: PlacementInstance) -> tuple[int, Placement | None]:
    try:
        placement = best_fit_decreasing(instance)
    except HeuristicFailedError:
        return len(instance.servers), None
    return len(set(placement.assignment.values())), placement


def build_servers(
    instance: PlacementInstance,
    *,
    formulation: Literal["auto", "arcflow", "assignment"] = "auto",
    symmetry: str = "solver",
    bounds: bool = True,
    certificate: bool = True,
) -> PlacementModel:
    """Build the ``servers`` (fewest servers used) model.

    Parameters
    ----------
    instance : PlacementInstance
    formulation : {"auto", "arcflow", "assignment"}
        ``auto`` uses arc-flow when its graphs stay under :data:`ARCFLOW_MAX_ARCS` arcs.
    symmetry : {"solver", "constraints", "none"}, default "solver"
        How the symmetry between servers of one capacity class is handled in the assignment
        formulation (see :mod:`optsched.placement.formulation`; arc-flow has none).
    bounds : bool, default True
        Add the lower bound :math:`L` and the heuristic upper bound :math:`U`.
    certificate : bool, default True
        With ``formulation="auto"``, try the bin-packing certificate first (module notes).

    Returns
    -------
    PlacementModel

    Raises
    ------
    ModelError
        ``formulation="arcflow"`` but the graph exceeds :data:`ARCFLOW_MAX_ARCS`.
    """
    timer = Timer()
    constraints = check_symmetry(symmetry)
    known: tuple[int, int] | None = None
    if formulation == "auto" and certificate:
        found = _certificate(instance)
        if found is not None:
            (bins, cert), lower, upper = found
            if upper <= lower:
                backend, decode = _certificate_model(instance, bins, cert)
                return PlacementModel(
                    "servers",
                    "certificate",
                    backend,
                    decode,
                    timer.seconds(),
                    {"variables": 0, "integer_variables": 0, "constraints": 0},
                    lp_bound=cert.root_lp,
                )
            known = (lower, upper)
    types, members = _types(instance)
    counts = [len(m) for m in members]
    if formulation in ("auto", "arcflow"):
        graphs = _arcflow_graphs(instance, types, counts)
        if graphs is not None:
            model, decode = _arcflow_model(instance, types, members, graphs, bounds, known)
            return PlacementModel(
                "servers", "arcflow", model, decode, timer.seconds(), model_size(model)
            )
        if formulation == "arcflow":
            raise ModelError(
                f"the arc-flow graph exceeds {ARCFLOW_MAX_ARCS} arcs; use formulation='assignment'"
            )
    model, decode = _assignment_model(instance, types, members, constraints, bounds)
    return PlacementModel(
        "servers", "assignment", model, decode, timer.seconds(), model_size(model)
    )


def _arcflow_graphs(
    instance: PlacementInstance, types: np.ndarray, counts: list[int]
) -> list[ArcFlowGraph] | None:
    classes: dict[Any, list[int]] = {}
    for h, server in enumerate(instance.servers):
        classes.setdefault(capacity_key(server), []).append(h)
    graphs = []
    budget = ARCFLOW_MAX_ARCS
    for servers in classes.values():
        built = arcflow_graph(instance.capacity[servers[0]], types, counts, budget)
        if built is None:
            return None
        nodes, arcs = built
        budget -= len(arcs)
        graphs.append(ArcFlowGraph(servers, nodes, arcs))
    return graphs


def _arcflow_model(
    instance: PlacementInstance,
    types: np.ndarray,
    members: list[list[int]],
    graphs: list[ArcFlowGraph],
    bounds: bool,
    known: tuple[int, int] | None = None,
) -> tuple[Any, Any]:
    import pyomo.environ as pyo

    m = pyo.ConcreteModel(name="servers-arcflow")
    item_index = [(c, a) for c, g in enumerate(graphs) for a in range(len(g.item_arcs))]
    loss_index = [(c, v) for c, g in enumerate(graphs) for v in range(len(g.nodes))]
    m.f = pyo.Var(item_index, domain=pyo.NonNegativeIntegers)
    m.loss = pyo.Var(loss_index, domain=pyo.NonNegativeIntegers)
    m.z = pyo.Var(range(len(graphs)), domain=pyo.NonNegativeIntegers)
    for c, g in enumerate(graphs):
        m.z[c].setub(len(g.servers))

    # flow_conservation: one unit of flow per used server, from the empty load to the sink.
    out_arcs: dict[tuple[int, int], list[Any]] = {}
    in_arcs: dict[tuple[int, int], list[Any]] = {}
    for c, g in enumerate(graphs):
        for a, (tail, head, _) in enumerate(g.item_arcs):
            out_arcs.setdefault((c, tail), []).append(m.f[c, a])
            in_arcs.setdefault((c, head), []).append(m.f[c, a])
    m.flow_conservation = pyo.Constraint(
        loss_index,
        rule=lambda m, c, v: (
            pyo.quicksum(out_arcs.get((c, v), []))
            + m.loss[c, v]
            - pyo.quicksum(in_arcs.get((c, v), []))
            == (m.z[c] if v == 0 else 0)
        ),
    )
    # Every loss arc ends in the sink, so the sink balance is implied; it is written anyway so
    # that the flow leaving equals the servers used, as the formulation states.
    m.sink_balance = pyo.Constraint(
        range(len(graphs)),
        rule=lambda m, c: pyo.quicksum(m.loss[c, v] for v in range(len(graphs[c].nodes))) == m.z[c],
    )
    # type_demand: every task is carried by some server.
    by_type: dict[int, list[Any]] = {}
    for c, g in enumerate(graphs):
        for a, (_, _, k) in enumerate(g.item_arcs):
            by_type.setdefault(k, []).append(m.f[c, a])
    positive = [k for k in range(len(types)) if np.any(types[k] > 0)]
    for k in positive:
        if k not in by_type:
            raise ModelError(f"no server class can hold tasks with demand {types[k].tolist()}")
    m.type_demand = pyo.Constraint(
        positive, rule=lambda m, k: pyo.quicksum(by_type[k]) >= len(members[k])
    )
    lower = servers_lower_bound(instance) if bounds else 1
    if bounds and known is not None:
        lower = max(lower, known[0])
    m.servers_lower_bound = pyo.Constraint(expr=pyo.quicksum(m.z.values()) >= lower)
    if bounds:
        upper = known[1] if known is not None else _upper_bound(instance)[0]
        m.servers_upper_bound = pyo.Constraint(expr=pyo.quicksum(m.z.values()) <= upper)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.z.values()), sense=pyo.minimize)

    def decode() -> Placement:
        server_of = np.full(len(instance.tasks), -1, dtype=np.int64)
        queues = [list(ts) for ts in members]
        used: list[int] = []
        for c, g in enumerate(graphs):
            remaining = {a: integer_value(m.f[c, a]) for a in range(len(g.item_arcs))}
            loss = {v: integer_value(m.loss[c, v]) for v in range(len(g.nodes))}
            out: dict[int, list[int]] = {}
            for a, (tail, _, _) in enumerate(g.item_arcs):
                out.setdefault(tail, []).append(a)
            for position in range(integer_value(m.z[c])):
                server = g.servers[position]
                used.append(server)
                node = 0
                # Walk one unit of flow to the sink, item arcs first. Conservation of the
                # remaining flow guarantees a node reached has an item arc or its loss arc left.
                while True:
                    arc = next((a for a in out.get(node, []) if remaining[a] > 0), None)
                    if arc is None:
                        break
                    remaining[arc] -= 1
                    _, head, k = g.item_arcs[arc]
                    if queues[k]:
                        server_of[queues[k].pop()] = server
                    node = head
                loss[node] -= 1
        # Tasks with no demand go on the first used server (there is one: z >= 1).
        for k, queue in enumerate(queues):
            if np.any(types[k] > 0) and queue:
                raise ModelError(f"arc-flow decoding left {len(queue)} tasks of type {k} unplaced")
            for t in queue:
                server_of[t] = used[0]
        return Placement.from_indices(instance, server_of.tolist(), method="ilp:servers:arcflow")

    return m, decode


def _assignment_model(
    instance: PlacementInstance,
    types: np.ndarray,
    members: list[list[int]],
    constraints: bool,
    bounds: bool,
) -> tuple[Any, Any]:
    import pyomo.environ as pyo

    from optsched.placement.formulation import server_capacity

    n_types, n_servers = len(types), len(instance.servers)
    capacity = instance.capacity
    counts = [len(ms) for ms in members]
    slack = FIT_TOL * np.maximum(1.0, np.abs(capacity))

    def most(k: int, h: int) -> int:
        d = types[k]
        if not np.all(d <= capacity[h] + slack[h]):
            return 0
        limits = [counts[k]]
        for r in np.flatnonzero(d > 0):
            limits.append(int(np.floor((capacity[h, r] + slack[h, r]) / d[r])))
        return min(limits)

    upper = n_servers
    if bounds:
        upper, _ = _upper_bound(instance)
    classes: dict[Any, list[int]] = {}
    for h, server in enumerate(instance.servers):
        classes.setdefault(capacity_key(server), []).append(h)
    position = {h: i for members_ in classes.values() for i, h in enumerate(members_)}
    # A placement on at most U servers uses at most U of each class, which may be relabelled to
    # be the first U: the servers past position U of their class are never needed.
    open_servers = [h for h in range(n_servers) if not (bounds and position[h] >= upper)]
    bound_n = {(k, h): most(k, h) for k in range(n_types) for h in open_servers}
    pairs = [(k, h) for (k, h), b in bound_n.items() if b > 0]

    m = pyo.ConcreteModel(name="servers-assignment")
    m.N = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.n = pyo.Var(m.N, domain=pyo.NonNegativeIntegers, bounds=lambda m, k, h: (0, bound_n[k, h]))
    m.u = pyo.Var(open_servers, domain=pyo.Binary)
    on_type: dict[int, list[int]] = {}
    on_server: list[list[int]] = [[] for _ in range(n_servers)]
    for k, h in pairs:
        on_type.setdefault(k, []).append(h)
        on_server[h].append(k)
    for k in range(n_types):
        if k not in on_type:
            raise ModelError(f"no server can hold tasks with demand {types[k].tolist()}")
    m.type_assignment = pyo.Constraint(
        range(n_types), rule=lambda m, k: pyo.quicksum(m.n[k, h] for h in on_type[k]) == counts[k]
    )
    server_capacity(
        m, types, capacity, on_server, load=lambda k, h: m.n[k, h], use=lambda h: m.u[h]
    )
    m.server_use = pyo.Constraint(m.N, rule=lambda m, k, h: m.n[k, h] <= bound_n[k, h] * m.u[h])
    if constraints:
        scale = np.where(capacity.max(axis=0) > 0, capacity.max(axis=0), 1.0)
        weight = (types / scale).sum(axis=1)
        m.server_order = pyo.ConstraintList()
        for members_ in classes.values():
            chain = [h for h in members_ if h in set(open_servers)]
            for a, b in itertools.pairwise(chain):
                m.server_order.add(m.u[a] >= m.u[b])
                m.server_order.add(
                    pyo.quicksum(float(weight[k]) * m.n[k, a] for k in on_server[a])
                    >= pyo.quicksum(float(weight[k]) * m.n[k, b] for k in on_server[b])
                )
    if bounds:
        m.servers_lower_bound = pyo.Constraint(
            expr=pyo.quicksum(m.u.values()) >= servers_lower_bound(instance)
        )
        m.servers_upper_bound = pyo.Constraint(expr=pyo.quicksum(m.u.values()) <= upper)
    m.objective = pyo.Objective(expr=pyo.quicksum(m.u.values()), sense=pyo.minimize)

    def decode() -> Placement:
        server_of = np.full(len(instance.tasks), -1, dtype=np.int64)
        queues = [list(ts) for ts in members]
        for k, h in pairs:
            for _ in range(integer_value(m.n[k, h])):
                server_of[queues[k].pop()] = h
        return Placement.from_indices(instance, server_of.tolist(), method="ilp:servers:assignment")

    return m, decode
