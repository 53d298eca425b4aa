r"""The arc-flow graph of one server class: every feasible server content as a path.

Shared by the ``servers`` model (:mod:`optsched.placement.servers`) and the bin-packing
certificate's LP (:mod:`optsched.placement.binpacking`), which is why it lives in neither.

References
----------
J. M. Valério de Carvalho, "Exact solution of bin-packing problems using column generation and
branch-and-bound", Annals of Operations Research 86, 1999.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optsched.tolerances import FIT_TOL

__all__ = ["ARCFLOW_MAX_ARCS", "STATE_DECIMALS", "ArcFlowGraph", "arcflow_graph"]

#: Arc-flow graphs larger than this (arcs over all server classes) are not built; the
#: ``auto`` choice then falls back to the assignment formulation.
ARCFLOW_MAX_ARCS = 300_000
#: Load vectors are merged when equal after rounding to this many decimals.
STATE_DECIMALS = 9


class ArcFlowGraph:
    """The arc-flow graph of one server class.

    Attributes
    ----------
    servers : list of int
        The servers of the class, in order.
    nodes : list of tuple of float
        Reachable load vectors; node 0 is the empty server.
    item_arcs : list of tuple of int
        ``(tail node, head node, type)``.
    """

    def __init__(
        self, servers: list[int], nodes: list[tuple[float, ...]], arcs: list[tuple[int, int, int]]
    ):
        self.servers = servers
        self.nodes = nodes
        self.item_arcs = arcs


def arcflow_graph(
    capacity: np.ndarray,
    types: np.ndarray,
    counts: Sequence[int],
    max_arcs: int = ARCFLOW_MAX_ARCS,
) -> tuple[list[tuple[float, ...]], list[tuple[int, int, int]]] | None:
    r"""Nodes and item arcs of the arc-flow graph for one capacity vector.

    Types are added in the given order; from every node reachable with the earlier types, a
    chain of up to ``counts[k]`` arcs of type ``k`` is added while the load fits. Returns
    ``None`` when more than ``max_arcs`` arcs would be needed.

    Notes
    -----
    Complexity :math:`O(|V| \\sum_k N_k)` with :math:`|V|` reachable load vectors.
    """
    slack = FIT_TOL * np.maximum(1.0, np.abs(capacity))
    origin = tuple(0.0 for _ in capacity)
    index: dict[tuple[float, ...], int] = {origin: 0}
    nodes = [origin]
    arcs: set[tuple[int, int, int]] = set()
    for k, d in enumerate(types):
        if not np.any(d > 0):
            continue
        for start in range(len(nodes)):
            load = np.array(nodes[start])
            tail = start
            for _ in range(counts[k]):
                load = load + d
                if not np.all(load <= capacity + slack):
                    break
                key = tuple(round(float(v), STATE_DECIMALS) for v in load)
                head = index.get(key)
                if head is None:
                    head = len(nodes)
                    index[key] = head
                    nodes.append(key)
                arcs.add((tail, head, k))
                if len(arcs) > max_arcs:
                    return None
                tail = head
    return nodes, sorted(arcs)
