r"""The ``traffic`` and ``max-load`` objectives: communication-aware placement.

Both assign tasks with binaries :math:`x_{th}` (task :math:`t` on server :math:`h`, only on
servers it fits alone) under

.. math::
    \sum_h x_{th} = 1 \;\; \forall t \quad (\texttt{task\_assignment}), \qquad
    \sum_t d_{tr} x_{th} \le C_{hr} \;\; \forall h, r \quad (\texttt{server\_capacity}),

and, with ``symmetry="constraints"``, the lowest-index ordering of interchangeable servers
(``server_symmetry``, see :mod:`optsched.placement.formulation`).

``traffic``: least cross-server volume
    For every task pair :math:`\{t, u\}` exchanging :math:`V_{tu} = v_{tu} + v_{ut} > 0`, a
    variable :math:`s_{tu} \ge 0` is 1 when they are apart:

    .. math::
        \min \sum_{\{t,u\}} V_{tu} s_{tu} \quad\text{s.t.}\quad
        s_{tu} \ge x_{th} - x_{uh} \;\; \forall h \quad (\texttt{pair\_split}).

    If :math:`t` is on :math:`h` and :math:`u` elsewhere the row of :math:`h` forces
    :math:`s_{tu} \ge 1`; together they allow 0 otherwise. Servers are interchangeable when their
    capacity vectors are equal.

``max-load``: least maximum link load (Tiresias's min-max model)
    Links are full duplex; each direction :math:`(\ell, d)` has bandwidth :math:`B_\ell` and a
    background load :math:`b_\ell`. For a directed flow :math:`(t \to u)` and a server
    :math:`h`, :math:`e^{out}_{tuh} \ge x_{th} - x_{uh}` (leaves :math:`h`) and
    :math:`e^{in}_{tuh} \ge x_{uh} - x_{th}` (enters :math:`h`); for a rack :math:`R` with
    :math:`X_{tR} = \sum_{h \in R} x_{th}`, likewise :math:`g^{out}_{tuR} \ge X_{tR} - X_{uR}`
    and :math:`g^{in}_{tuR} \ge X_{uR} - X_{tR}` (``flow_leaves``, ``flow_enters``). Then

    .. math::
        \min L \quad\text{s.t.}\quad
        L \ge \Big(b_\ell + \sum_{(t \to u)} v_{tu}\, e^{d}_{tu\ell}\Big) / B_\ell
        \;\; \forall \ell, d \quad (\texttt{link\_load}).

    The :math:`e` and :math:`g` variables may exceed their minimum, which only raises
    :math:`L`, so the optimum is exact. Servers are interchangeable when capacity, NIC
    bandwidth, NIC background load and rack are equal. This generalises Tiresias's GLPK model
    (``simulator/lp.py``: minimise the largest node network load under GPU and CPU capacity) to
    racks, directions and heterogeneous bandwidths.

References
----------
J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning", NSDI 2019.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

from optsched.cluster import Server
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
    task_assignment,
)
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement

__all__ = ["build_max_load", "build_traffic", "network_key", "pair_volumes"]


def network_key(server: Server) -> Hashable:
    """Servers equal in capacity, NIC and rack are interchangeable for link loads."""
    return (capacity_key(server), server.nic_bandwidth_gbps, server.nic_load_gbit, server.rack)


def pair_volumes(instance: PlacementInstance) -> dict[tuple[int, int], float]:
    """Total volume :math:`v_{tu} + v_{ut}` per unordered task pair ``(min, max)``."""
    out: dict[tuple[int, int], float] = {}
    for src, dst, v in instance.flows:
        key = (min(src, dst), max(src, dst))
        out[key] = out.get(key, 0.0) + v
    return out


def _base(
    instance: PlacementInstance, name: str, symmetry: str, key: Any
) -> tuple[Any, list[list[int]]]:
    """Assignment variables, capacity and (optionally) symmetry breaking."""
    import pyomo.environ as pyo

    allowed = allowed_servers(instance)
    n_tasks, n_servers = len(instance.tasks), len(instance.servers)
    m = pyo.ConcreteModel(name=name)
    task_assignment(m, n_tasks, allowed)
    on_server: list[list[int]] = [[] for _ in range(n_servers)]
    for t in range(n_tasks):
        for h in allowed[t]:
            on_server[h].append(t)
    server_capacity(m, instance.demand, instance.capacity, on_server, load=lambda t, h: m.x[t, h])
    if check_symmetry(symmetry):
        allowed_set = {(t, h) for t in range(n_tasks) for h in allowed[t]}
        server_symmetry(
            m,
            server_classes(instance, key),
            n_tasks,
            on=lambda t, h: m.x[t, h],
            allowed=lambda t, h: (t, h) in allowed_set,
        )
    return m, allowed


def _decode(
    instance: PlacementInstance, m: Any, allowed: list[list[int]], method: str
) -> Placement:
    servers = []
    for t in range(len(instance.tasks)):
        servers.append(chosen({h: m.x[t, h] for h in allowed[t]}))
    return Placement.from_indices(instance, servers, method=method)


def build_traffic(instance: PlacementInstance, *, symmetry: str = "solver") -> PlacementModel:
    """Build the ``traffic`` model (least cross-server traffic).

    Parameters
    ----------
    instance : PlacementInstance
    symmetry : {"solver", "constraints", "none"}, default "solver"
        Handling of the symmetry between servers with equal capacity vectors.

    Returns
    -------
    PlacementModel
    """
    import pyomo.environ as pyo

    timer = Timer()
    m, allowed = _base(instance, "traffic", symmetry, capacity_key)
    volumes = pair_volumes(instance)
    pairs = sorted(volumes)
    m.P = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.s = pyo.Var(m.P, bounds=(0, 1))
    allowed_sets = [set(a) for a in allowed]
    rows = [(t, u, h) for t, u in pairs for h in sorted(allowed_sets[t] | allowed_sets[u])]

    def x(t: int, h: int) -> Any:
        return m.x[t, h] if h in allowed_sets[t] else 0

    m.pair_split = pyo.Constraint(rows, rule=lambda m, t, u, h: m.s[t, u] >= x(t, h) - x(u, h))
    m.objective = pyo.Objective(
        expr=pyo.quicksum(volumes[p] * m.s[p] for p in pairs), sense=pyo.minimize
    )
    return PlacementModel(
        "traffic",
        "assignment",
        m,
        lambda: _decode(instance, m, allowed, "ilp:traffic"),
        timer.seconds(),
        model_size(m),
    )


def _load_scale(
    instance: PlacementInstance,
    flows: list[tuple[int, int, float]],
    by_server: dict[int, list[int]],
    cross_racks: bool,
) -> float:
    r"""The power of two :math:`S` by which the ``max-load`` model measures :math:`L`.

    A link_load row :math:`L \ge (b_\ell + \sum v_{tu} e_{tu\ell}) / B_\ell` has flow
    coefficients :math:`v_{tu} / B_\ell` from ``MIN_VALUE / MAX_BANDWIDTH`` to
    ``MAX_VALUE / MIN_BANDWIDTH`` (1e12) against the coefficient 1 of :math:`L`. HiGHS
    mishandles both ends: with a coefficient of 1e9 and a background load
    :math:`b_\ell / B_\ell` of 7000 it declared a trivially feasible model (every task on one
    server) infeasible, and it stopped with a ``numerical_error`` at 1e12; with every load near
    1e-6 its absolute gap tolerance (1e-6) ended the search at twice the optimum. Writing
    :math:`L = S L'`, with :math:`S` the largest flow coefficient or background load rounded
    down to a power of two (so that :math:`S L'` and the division by :math:`S` are exact),
    and dividing every row by :math:`S`, puts every row's coefficients within
    :math:`(0, 2]` with :math:`L'` of order one, whatever the instance's units.
    :math:`S = 1` when every coefficient and background load is zero.
    """
    largest = 0.0
    for h, server in enumerate(instance.servers):
        for f in by_server.get(h, []):
            largest = max(largest, flows[f][2] / server.nic_bandwidth_gbps)
        largest = max(largest, server.nic_load_gbit / server.nic_bandwidth_gbps)
    for rack in instance.cluster.racks:
        largest = max(largest, rack.uplink_load_gbit / rack.uplink_bandwidth_gbps)
        if cross_racks:
            for _, _, volume in flows:
                largest = max(largest, volume / rack.uplink_bandwidth_gbps)
    return 1.0 if largest <= 0.0 else math.ldexp(1.0, math.frexp(largest)[1] - 1)


def build_max_load(instance: PlacementInstance, *, symmetry: str = "solver") -> PlacementModel:
    """Build the ``max-load`` model (least maximum link load, seconds per iteration).

    Parameters
    ----------
    instance : PlacementInstance
    symmetry : {"solver", "constraints", "none"}, default "solver"
        Handling of the symmetry between servers equal in capacity, NIC and rack.

    Returns
    -------
    PlacementModel
    """
    import pyomo.environ as pyo

    timer = Timer()
    m, allowed = _base(instance, "max-load", symmetry, network_key)
    allowed_sets = [set(a) for a in allowed]
    flows = list(instance.flows)
    servers = instance.servers

    def x(t: int, h: int) -> Any:
        return m.x[t, h] if h in allowed_sets[t] else 0

    # A flow can only load server h's NIC if one of its ends may sit on h.
    nic_rows = [
        (f, h)
        for f, (t, u, _) in enumerate(flows)
        for h in sorted(allowed_sets[t] | allowed_sets[u])
    ]
    m.e_out = pyo.Var(nic_rows, bounds=(0, 1))
    m.e_in = pyo.Var(nic_rows, bounds=(0, 1))
    m.flow_leaves = pyo.Constraint(
        nic_rows, rule=lambda m, f, h: m.e_out[f, h] >= x(flows[f][0], h) - x(flows[f][1], h)
    )
    m.flow_enters = pyo.Constraint(
        nic_rows, rule=lambda m, f, h: m.e_in[f, h] >= x(flows[f][1], h) - x(flows[f][0], h)
    )
    racks = [r.name for r in instance.cluster.racks]
    in_rack = {r: [h for h, s in enumerate(servers) if s.rack == r] for r in racks}

    def rack_x(t: int, r: str) -> Any:
        return pyo.quicksum(m.x[t, h] for h in in_rack[r] if h in allowed_sets[t])

    rack_rows = [(f, r) for f in range(len(flows)) for r in racks] if len(racks) > 1 else []
    m.g_out = pyo.Var(rack_rows, bounds=(0, 1))
    m.g_in = pyo.Var(rack_rows, bounds=(0, 1))
    m.flow_leaves_rack = pyo.Constraint(
        rack_rows,
        rule=lambda m, f, r: m.g_out[f, r] >= rack_x(flows[f][0], r) - rack_x(flows[f][1], r),
    )
    m.flow_enters_rack = pyo.Constraint(
        rack_rows,
        rule=lambda m, f, r: m.g_in[f, r] >= rack_x(flows[f][1], r) - rack_x(flows[f][0], r),
    )
    by_server: dict[int, list[int]] = {}
    for f, h in nic_rows:
        by_server.setdefault(h, []).append(f)
    scale = _load_scale(instance, flows, by_server, bool(rack_rows))
    # L = scale * m.L: each link_load row reads m.L >= (b + sum v e) / (B scale), so every
    # coefficient is in (0, 2] and m.L is of order one, whatever the instance's units.
    # Every link carries its background load whatever the placement, so L is at least the
    # largest background share. As a bound, a simplex solver returns it exactly where it binds,
    # where a row's right-hand side of order 1e-18 (background 1e-9 over a scale of 1e12)
    # would fall under the feasibility tolerance and read as 0.
    background = max(
        [s.nic_load_gbit / s.nic_bandwidth_gbps for s in servers]
        + [r.uplink_load_gbit / r.uplink_bandwidth_gbps for r in instance.cluster.racks],
        default=0.0,
    )
    m.L = pyo.Var(bounds=(background / scale, None))
    m.link_load = pyo.ConstraintList()
    for h, server in enumerate(servers):
        fs = by_server.get(h, [])
        for var in (m.e_out, m.e_in):
            load = server.nic_load_gbit + pyo.quicksum(flows[f][2] * var[f, h] for f in fs)
            m.link_load.add(m.L >= load / (server.nic_bandwidth_gbps * scale))
    for rack in instance.cluster.racks:
        for var in (m.g_out, m.g_in):
            # With a single rack no flow crosses the uplink; only its background remains.
            terms = (
                [flows[f][2] * var[f, rack.name] for f in range(len(flows))] if rack_rows else []
            )
            load = rack.uplink_load_gbit + pyo.quicksum(terms)
            m.link_load.add(m.L >= load / (rack.uplink_bandwidth_gbps * scale))
    m.objective = pyo.Objective(expr=scale * m.L, sense=pyo.minimize)
    return PlacementModel(
        "max-load",
        "assignment",
        m,
        lambda: _decode(instance, m, allowed, "ilp:max-load"),
        timer.seconds(),
        model_size(m),
    )
