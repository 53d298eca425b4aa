r"""Clusters: servers with resource vectors, racks, network links and a networkx topology.

A :class:`Cluster` is a set of :class:`Server` objects, optionally grouped into :class:`Rack`
objects. Each server has a capacity per named resource (a *resource vector*; the conventional
names are ``gpu`` (a count), ``cpu`` (vCPUs) and ``memory`` (GB), and any other name is allowed),
one NIC, and a GPU interconnect. The network is a two-tier tree:

* without racks, every server hangs off one switch (``"<switch>"``) through its NIC;
* with racks, servers hang off their rack's top-of-rack switch, and every rack switch hangs off
  one core switch (``"<core>"``) through its uplink.

Links are full duplex: each carries an ``out`` direction (away from the server or rack) and an
``in`` direction, each with the link's bandwidth.

Units
-----
========================= ====== ============================================================
quantity                  unit   meaning
========================= ====== ============================================================
``nic_bandwidth_gbps``    Gbit/s per direction of a server's NIC
``uplink_bandwidth_gbps`` Gbit/s per direction of a rack's uplink to the core
``nic_load_gbit``         Gbit   traffic already on the NIC per iteration (each direction)
``uplink_load_gbit``      Gbit   traffic already on the uplink per iteration (each direction)
``gpu_bandwidth_gbps``    Gbit/s default bandwidth between two GPUs of one server
``gpu_memory_gb``         GB     memory of one GPU
``volume_gbit``           Gbit   traffic of a job per training iteration (placement)
========================= ====== ============================================================

Traffic volumes elsewhere in optsched are in Gbit per training iteration, so volume divided by
bandwidth is seconds of transfer per iteration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "CORE",
    "GPU",
    "STANDARD_RESOURCES",
    "SWITCH",
    "Cluster",
    "GpuLink",
    "Link",
    "Rack",
    "Server",
    "two_tier_cluster",
    "uniform_cluster",
]

#: The resource whose capacity is a server's GPU count.
GPU = "gpu"
#: Conventional resource names, listed first (in this order) in :attr:`Cluster.resources`.
STANDARD_RESOURCES: tuple[str, ...] = ("gpu", "cpu", "memory")
#: Name of the single switch of a cluster without racks (a graph node).
SWITCH = "<switch>"
#: Name of the core switch of a cluster with racks (a graph node).
CORE = "<core>"

NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


class GpuLink(Frozen):
    """A GPU pair of one server whose bandwidth differs from the server default (e.g. NVLink)."""

    a: Annotated[int, Field(ge=0)] = Field(description="First GPU index (0-based).")
    b: Annotated[int, Field(ge=0)] = Field(description="Second GPU index (0-based).")
    bandwidth_gbps: PosFloat = Field(description="Bandwidth between the two GPUs (Gbit/s).")


class Server(Frozen):
    """One server: a resource vector, a NIC and a GPU interconnect.

    Attributes
    ----------
    name : str
        Unique name.
    capacity : dict of str to float
        Capacity per resource. ``gpu`` is the number of GPUs and must be a whole number.
    nic_bandwidth_gbps : float
        NIC bandwidth per direction (Gbit/s).
    nic_load_gbit : float
        Background traffic already on the NIC per iteration, in each direction (Gbit); Tiresias's
        "current network load" of a node.
    rack : str or None
        The rack it sits in (required when the cluster declares racks, forbidden otherwise).
    gpu_memory_gb : float or None
        Memory of each GPU (GB); bounds the tasks sharing one GPU in node-level assignment.
    gpu_bandwidth_gbps : float
        Bandwidth between two GPUs of this server, and between a GPU and the host (Gbit/s).
    gpu_links : tuple of GpuLink
        GPU pairs with a different bandwidth (e.g. NVLink pairs).
    residents : tuple of str
        Job types already running on the server (its ``capacity`` is what is left free); used by
        the interference-aware objectives.
    """

    name: Name
    capacity: dict[str, NonNegFloat] = Field(description="Capacity per resource name.")
    nic_bandwidth_gbps: PosFloat = Field(
        default=10.0, description="NIC bandwidth per direction (Gbit/s)."
    )
    nic_load_gbit: NonNegFloat = Field(
        default=0.0, description="Background NIC traffic per iteration and direction (Gbit)."
    )
    rack: Name | None = Field(default=None, description="Rack name (when racks are declared).")
    gpu_memory_gb: NonNegFloat | None = Field(default=None, description="Memory per GPU (GB).")
    gpu_bandwidth_gbps: PosFloat = Field(
        default=128.0, description="Default GPU-GPU and GPU-host bandwidth (Gbit/s)."
    )
    gpu_links: tuple[GpuLink, ...] = Field(default=(), description="Pairwise GPU bandwidths.")
    residents: tuple[Name, ...] = Field(default=(), description="Job types already running.")

    @model_validator(mode="after")
    def _check(self) -> Server:
        gpus = self.capacity.get(GPU, 0.0)
        if gpus != int(gpus):
            raise InvalidInstanceError(
                f"capacity.{GPU}", f"must be a whole number of GPUs, got {gpus}"
            )
        seen: set[tuple[int, int]] = set()
        for i, link in enumerate(self.gpu_links):
            for end in ("a", "b"):
                index = getattr(link, end)
                if index >= gpus:
                    raise InvalidInstanceError(
                        f"gpu_links[{i}].{end}",
                        f"GPU index {index} out of range (the server has {int(gpus)} GPUs)",
                    )
            if link.a == link.b:
                raise InvalidInstanceError(f"gpu_links[{i}].b", "must differ from a")
            pair = (min(link.a, link.b), max(link.a, link.b))
            if pair in seen:
                raise InvalidInstanceError(f"gpu_links[{i}]", f"duplicate GPU pair {list(pair)}")
            seen.add(pair)
        return self

    @property
    def gpus(self) -> int:
        """Number of GPUs (the ``gpu`` capacity)."""
        return int(self.capacity.get(GPU, 0.0))

    def gpu_pair_bandwidth(self, i: int, j: int) -> float:
        """Bandwidth between GPUs ``i`` and ``j`` of this server (Gbit/s).

        ``gpu_bandwidth_gbps`` unless a :class:`GpuLink` names the pair.

        Raises
        ------
        ValueError
            ``i == j`` (a GPU talks to itself through its own memory).
        """
        if i == j:
            raise ValueError("a GPU has no link to itself")
        pair = (min(i, j), max(i, j))
        for link in self.gpu_links:
            if (min(link.a, link.b), max(link.a, link.b)) == pair:
                return link.bandwidth_gbps
        return self.gpu_bandwidth_gbps

    @property
    def gpus_interchangeable(self) -> bool:
        """Whether every GPU pair has the same bandwidth (so GPUs can be relabelled freely)."""
        return all(link.bandwidth_gbps == self.gpu_bandwidth_gbps for link in self.gpu_links)


class Rack(Frozen):
    """A rack: a top-of-rack switch with one uplink to the core."""

    name: Name
    uplink_bandwidth_gbps: PosFloat = Field(description="Uplink bandwidth per direction (Gbit/s).")
    uplink_load_gbit: NonNegFloat = Field(
        default=0.0, description="Background uplink traffic per iteration and direction (Gbit)."
    )


@dataclass(frozen=True)
class Link:
    """One full-duplex network link of the tree.

    Attributes
    ----------
    kind : {"nic", "uplink"}
        A server NIC (server to its switch) or a rack uplink (rack switch to core).
    owner : str
        The server (for a NIC) or rack (for an uplink).
    lower, upper : str
        The graph nodes it joins (the server or rack switch, and the switch above it).
    bandwidth_gbps : float
        Bandwidth per direction (Gbit/s).
    background_gbit : float
        Background load per direction (Gbit per iteration).
    """

    kind: Literal["nic", "uplink"]
    owner: str
    lower: str
    upper: str
    bandwidth_gbps: float
    background_gbit: float

    @property
    def key(self) -> tuple[str, str]:
        """``(kind, owner)``: a stable identifier."""
        return (self.kind, self.owner)


class Cluster(Frozen):
    """Servers, optional racks, and the two-tier network tree joining them.

    Raises
    ------
    InvalidInstanceError
        Duplicate names, a server naming an undeclared rack, a rack with no server, or a server
        without a rack when racks are declared.

    Examples
    --------
    >>> c = two_tier_cluster(2, 3, gpus=4)
    >>> len(c.servers), c.resources
    (6, ('gpu', 'cpu', 'memory'))
    >>> [link.key for link in c.path("r0s0", "r1s2")]
    [('nic', 'r0s0'), ('uplink', 'r0'), ('uplink', 'r1'), ('nic', 'r1s2')]
    """

    servers: tuple[Server, ...] = Field(min_length=1)
    racks: tuple[Rack, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Cluster:
        names: set[str] = set()
        for h, server in enumerate(self.servers):
            if server.name in names:
                raise InvalidInstanceError(f"servers[{h}].name", f"duplicate name {server.name!r}")
            if server.name in (SWITCH, CORE):
                raise InvalidInstanceError(f"servers[{h}].name", f"{server.name!r} is reserved")
            names.add(server.name)
        racks: set[str] = set()
        for r, rack in enumerate(self.racks):
            if rack.name in names or rack.name in racks or rack.name in (SWITCH, CORE):
                raise InvalidInstanceError(
                    f"racks[{r}].name", f"duplicate or reserved name {rack.name!r}"
                )
            racks.add(rack.name)
        used: set[str] = set()
        for h, server in enumerate(self.servers):
            if self.racks and server.rack is None:
                raise InvalidInstanceError(
                    f"servers[{h}].rack", "is required when the cluster declares racks"
                )
            if server.rack is not None and server.rack not in racks:
                raise InvalidInstanceError(
                    f"servers[{h}].rack",
                    f"unknown rack {server.rack!r}; declared: {sorted(racks)}"
                    if racks
                    else f"names rack {server.rack!r} but the cluster declares no racks",
                )
            if server.rack is not None:
                used.add(server.rack)
        for r, rack in enumerate(self.racks):
            if rack.name not in used:
                raise InvalidInstanceError(f"racks[{r}]", f"rack {rack.name!r} has no server")
        return self

    # ----- resources ---------------------------------------------------------------------------

    @cached_property
    def resources(self) -> tuple[str, ...]:
        """Resource names: the standard ones present first, then the others alphabetically."""
        present = {r for s in self.servers for r in s.capacity}
        standard = [r for r in STANDARD_RESOURCES if r in present]
        return tuple(standard + sorted(present - set(standard)))

    def capacity_matrix(self, resources: Sequence[str] | None = None) -> np.ndarray:
        """Capacities, shape ``(servers, resources)``; a missing resource has capacity 0."""
        res = self.resources if resources is None else tuple(resources)
        return np.array(
            [[s.capacity.get(r, 0.0) for r in res] for s in self.servers], dtype=np.float64
        ).reshape(len(self.servers), len(res))

    @cached_property
    def server_index(self) -> dict[str, int]:
        """Server name to its position in :attr:`servers`."""
        return {s.name: h for h, s in enumerate(self.servers)}

    # ----- network -----------------------------------------------------------------------------

    @cached_property
    def links(self) -> tuple[Link, ...]:
        """Every link: one NIC per server, then one uplink per rack."""
        up = {r.name: r for r in self.racks}
        out = [
            Link(
                "nic",
                s.name,
                s.name,
                s.rack if s.rack is not None else SWITCH,
                s.nic_bandwidth_gbps,
                s.nic_load_gbit,
            )
            for s in self.servers
        ]
        out += [
            Link(
                "uplink", r.name, r.name, CORE, up[r.name].uplink_bandwidth_gbps, r.uplink_load_gbit
            )
            for r in self.racks
        ]
        return tuple(out)

    def graph(self, gpus: bool = False) -> nx.Graph:
        """The topology as an undirected :class:`networkx.Graph`.

        Nodes carry ``kind`` (``"server"``, ``"switch"``, ``"gpu"``); edges carry ``kind``
        (``"nic"``, ``"uplink"``, ``"gpu"``), ``bandwidth_gbps`` (Gbit/s) and ``background_gbit``
        (Gbit).

        Parameters
        ----------
        gpus : bool, default False
            Also add one node ``"<server>/gpu<i>"`` per GPU, joined to its server and to every
            other GPU of the server (``kind="gpu"`` edges with the pair's bandwidth).
        """
        import networkx as nx

        g = nx.Graph()
        for s in self.servers:
            g.add_node(s.name, kind="server", rack=s.rack)
        if self.racks:
            g.add_node(CORE, kind="switch")
            for r in self.racks:
                g.add_node(r.name, kind="switch")
        else:
            g.add_node(SWITCH, kind="switch")
        for link in self.links:
            g.add_edge(
                link.lower,
                link.upper,
                kind=link.kind,
                bandwidth_gbps=link.bandwidth_gbps,
                background_gbit=link.background_gbit,
            )
        if gpus:
            for s in self.servers:
                nodes = [f"{s.name}/gpu{i}" for i in range(s.gpus)]
                for i, node in enumerate(nodes):
                    g.add_node(node, kind="gpu", server=s.name, index=i)
                    g.add_edge(
                        s.name,
                        node,
                        kind="gpu",
                        bandwidth_gbps=s.gpu_bandwidth_gbps,
                        background_gbit=0.0,
                    )
                for i in range(s.gpus):
                    for j in range(i + 1, s.gpus):
                        g.add_edge(
                            nodes[i],
                            nodes[j],
                            kind="gpu",
                            bandwidth_gbps=s.gpu_pair_bandwidth(i, j),
                            background_gbit=0.0,
                        )
        return g

    def path(self, src: str, dst: str) -> list[Link]:
        """Links a transfer from server ``src`` to server ``dst`` crosses, in order.

        The first half is crossed in the ``out`` direction, the second half in ``in``; a transfer
        within one server crosses nothing.

        Raises
        ------
        KeyError
            An unknown server name.
        """
        a = self.servers[self.server_index[src]]
        b = self.servers[self.server_index[dst]]
        if src == dst:
            return []
        by_key = {link.key: link for link in self.links}
        hops = [by_key[("nic", src)]]
        if a.rack != b.rack:
            assert a.rack is not None and b.rack is not None
            hops += [by_key[("uplink", a.rack)], by_key[("uplink", b.rack)]]
        hops.append(by_key[("nic", dst)])
        return hops


def _server(
    name: str,
    gpus: int,
    cpus: float,
    memory: float,
    nic_bandwidth_gbps: float,
    rack: str | None,
    gpu_memory_gb: float | None,
    gpu_bandwidth_gbps: float,
) -> Server:
    return Server(
        name=name,
        capacity={"gpu": float(gpus), "cpu": float(cpus), "memory": float(memory)},
        nic_bandwidth_gbps=nic_bandwidth_gbps,
        rack=rack,
        gpu_memory_gb=gpu_memory_gb,
        gpu_bandwidth_gbps=gpu_bandwidth_gbps,
    )


def uniform_cluster(
    n_servers: int,
    gpus: int = 8,
    *,
    cpus: float = 64.0,
    memory: float = 512.0,
    nic_bandwidth_gbps: float = 25.0,
    gpu_memory_gb: float | None = None,
    gpu_bandwidth_gbps: float = 128.0,
    prefix: str = "s",
) -> Cluster:
    """``n_servers`` identical servers with ``gpus`` GPUs each, on one switch.

    Servers are named ``f"{prefix}{i}"``.

    Raises
    ------
    InvalidInstanceError
        A negative size or capacity (``n_servers`` must be >= 1).
    """
    if n_servers < 1:
        raise InvalidInstanceError("n_servers", f"must be >= 1, got {n_servers}")
    if gpus < 0:
        raise InvalidInstanceError("gpus", f"must be >= 0, got {gpus}")
    return Cluster(
        servers=tuple(
            _server(
                f"{prefix}{i}",
                gpus,
                cpus,
                memory,
                nic_bandwidth_gbps,
                None,
                gpu_memory_gb,
                gpu_bandwidth_gbps,
            )
            for i in range(n_servers)
        )
    )


def two_tier_cluster(
    n_racks: int,
    servers_per_rack: int,
    gpus: int = 8,
    *,
    cpus: float = 64.0,
    memory: float = 512.0,
    nic_bandwidth_gbps: float = 25.0,
    uplink_bandwidth_gbps: float = 100.0,
    gpu_memory_gb: float | None = None,
    gpu_bandwidth_gbps: float = 128.0,
) -> Cluster:
    """``n_racks`` racks of ``servers_per_rack`` identical servers, racks joined by a core switch.

    Racks are named ``r<i>`` and servers ``r<i>s<j>``.

    Raises
    ------
    InvalidInstanceError
        A size below 1 or a negative capacity.
    """
    if n_racks < 1:
        raise InvalidInstanceError("n_racks", f"must be >= 1, got {n_racks}")
    if servers_per_rack < 1:
        raise InvalidInstanceError("servers_per_rack", f"must be >= 1, got {servers_per_rack}")
    if gpus < 0:
        raise InvalidInstanceError("gpus", f"must be >= 0, got {gpus}")
    racks = tuple(
        Rack(name=f"r{i}", uplink_bandwidth_gbps=uplink_bandwidth_gbps) for i in range(n_racks)
    )
    servers = tuple(
        _server(
            f"r{i}s{j}",
            gpus,
            cpus,
            memory,
            nic_bandwidth_gbps,
            f"r{i}",
            gpu_memory_gb,
            gpu_bandwidth_gbps,
        )
        for i in range(n_racks)
        for j in range(servers_per_rack)
    )
    return Cluster(servers=servers, racks=racks)
