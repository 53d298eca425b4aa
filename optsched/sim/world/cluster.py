r"""Heterogeneous GPU clusters for the simulator: GPU types, counts and GPUs per server.

A :class:`ClusterSpec` lists GPU *types* (``v100``, ``p100``, ...), each with a GPU count and a
number of GPUs per server; servers of a type are numbered ``0, 1, ...`` and a type with ``count``
GPUs and ``gpus_per_server`` GPUs per server has ``ceil(count / gpus_per_server)`` servers, the last
one holding the remainder. It is built from

* the command-line syntax ``"v100=32,p100=16,k80=24"`` (optionally ``"v100=32:4"`` for 4 GPUs per
  server; the default is :data:`DEFAULT_GPUS_PER_SERVER`), see :func:`parse_cluster`;
* Gavel's ``cluster_specs*.json`` files (``{"name": ["v100:p100:k80", ...]}`` counts), see
  :func:`load_gavel_cluster_specs`;

and exported to the general server model of :mod:`optsched.cluster` by
:meth:`ClusterSpec.to_cluster`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from optsched import limits
from optsched._io import load_data
from optsched._validation import Frozen
from optsched.cluster import Cluster
from optsched.errors import InvalidInstanceError

__all__ = [
    "DEFAULT_GPUS_PER_SERVER",
    "ClusterSpec",
    "GpuType",
    "load_gavel_cluster_specs",
    "parse_cluster",
]

#: GPUs per server when the cluster string does not say (the 8-GPU servers of the ElasticFlow
#: clusters and of most published DGX-class testbeds).
DEFAULT_GPUS_PER_SERVER = 8
#: Gavel's order of GPU types in its ``"v100:p100:k80"`` cluster specs.
GAVEL_TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


class GpuType(Frozen):
    """One GPU type of the cluster.

    Attributes
    ----------
    name : str
        Type name, matching the throughput table's (``v100``, ``p100``, ``k80``, ...).
    count : int
        Number of GPUs of this type (>= 1).
    gpus_per_server : int
        GPUs per server (>= 1); the last server holds ``count mod gpus_per_server`` when that is
        not zero.
    """

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=_NAME.pattern)]
    count: Annotated[int, Field(ge=1)]
    gpus_per_server: Annotated[int, Field(ge=1)] = DEFAULT_GPUS_PER_SERVER

    @property
    def num_servers(self) -> int:
        """Number of servers of this type."""
        return -(-self.count // self.gpus_per_server)

    def server_capacity(self, server: int) -> int:
        """GPUs of server ``server`` (0-based) of this type."""
        if not 0 <= server < self.num_servers:
            return 0
        if server < self.num_servers - 1:
            return self.gpus_per_server
        return self.count - self.gpus_per_server * (self.num_servers - 1)


class ClusterSpec(Frozen):
    """A heterogeneous GPU cluster: GPU types with counts and GPUs per server.

    Attributes
    ----------
    gpu_types : tuple of GpuType
        The types, unique by name, in the order given (the order policies break ties in).
    """

    gpu_types: tuple[GpuType, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        seen: set[str] = set()
        total = 0
        for i, t in enumerate(self.gpu_types):
            if t.name in seen:
                raise InvalidInstanceError(f"gpu_types[{i}].name", f"duplicate GPU type {t.name!r}")
            seen.add(t.name)
            total += t.count
        limits.check_size("gpu_types.count", total, "max_array_cells", "GPUs")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """GPU type names, in order."""
        return tuple(t.name for t in self.gpu_types)

    def type(self, name: str) -> GpuType:
        """The GPU type called ``name``.

        Raises
        ------
        InvalidInstanceError
            No such type (field ``gpu_type``).
        """
        for t in self.gpu_types:
            if t.name == name:
                return t
        raise InvalidInstanceError(
            "gpu_type", f"unknown GPU type {name!r}; the cluster has {', '.join(self.names)}"
        )

    def count(self, name: str) -> int:
        """GPUs of type ``name`` (0 when the cluster has no such type)."""
        return next((t.count for t in self.gpu_types if t.name == name), 0)

    @property
    def total_gpus(self) -> int:
        """GPUs of every type."""
        return sum(t.count for t in self.gpu_types)

    def scaled(self, factor: float) -> ClusterSpec:
        """The same types with every count multiplied by ``factor`` (rounded, at least 1)."""
        if not (math.isfinite(factor) and factor > 0):
            raise InvalidInstanceError("factor", f"must be a finite number > 0, got {factor}")
        return ClusterSpec(
            gpu_types=tuple(
                GpuType(
                    name=t.name,
                    count=max(1, round(t.count * factor)),
                    gpus_per_server=t.gpus_per_server,
                )
                for t in self.gpu_types
            )
        )

    def to_cluster(self) -> Cluster:
        """The servers as an :class:`optsched.cluster.Cluster` (one switch, ``gpu`` capacities).

        Servers are named ``"<type>-<index>"``; the GPU type is not a resource there, so the
        server name is its only trace.
        """
        from optsched.cluster import Server

        servers = tuple(
            Server(name=f"{t.name}-{s}", capacity={"gpu": float(t.server_capacity(s))})
            for t in self.gpu_types
            for s in range(t.num_servers)
        )
        return Cluster(servers=servers)

    def __str__(self) -> str:
        return ",".join(f"{t.name}={t.count}:{t.gpus_per_server}" for t in self.gpu_types)


def parse_cluster(text: str, *, field: str = "cluster") -> ClusterSpec:
    """Parse ``"v100=32,p100=16,k80=24"`` (optionally ``"v100=32:4"``) into a :class:`ClusterSpec`.

    Raises
    ------
    InvalidInstanceError
        Naming ``field`` (the option) and the offending entry.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInstanceError(field, "must list GPU types like 'v100=32,p100=16'")
    entries = [e.strip() for e in text.split(",")]
    types: list[GpuType] = []
    for i, entry in enumerate(entries):
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9_.\-]*)\s*=\s*(\d{1,9})(?:\s*:\s*(\d{1,6}))?", entry)
        if m is None:
            raise InvalidInstanceError(
                f"{field}[{i}]", f"expected TYPE=COUNT or TYPE=COUNT:GPUS_PER_SERVER, got {entry!r}"
            )
        count = int(m.group(2))
        per = int(m.group(3)) if m.group(3) else DEFAULT_GPUS_PER_SERVER
        if count < 1:
            raise InvalidInstanceError(f"{field}[{i}]", f"count must be >= 1, got {count}")
        if per < 1:
            raise InvalidInstanceError(f"{field}[{i}]", f"GPUs per server must be >= 1, got {per}")
        types.append(GpuType(name=m.group(1), count=count, gpus_per_server=per))
    try:
        return ClusterSpec(gpu_types=tuple(types))
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(field, exc.message) from None


def load_gavel_cluster_specs(
    path: str | Path, *, gpus_per_server: int = DEFAULT_GPUS_PER_SERVER
) -> dict[str, list[ClusterSpec]]:
    """Read Gavel's ``cluster_specs*.json``: ``{"name": ["v100:p100:k80", ...]}``.

    Types with a zero count are left out; a spec with no GPU at all is an error.

    Raises
    ------
    InvalidInstanceError
        Naming the file and the key.
    """
    data = load_data(path)
    if not isinstance(data, dict):
        raise InvalidInstanceError("<file>", "must be a JSON object of name -> list of specs")
    out: dict[str, list[ClusterSpec]] = {}
    for name, specs in data.items():
        if not isinstance(specs, list):
            raise InvalidInstanceError(name, "must be a list of 'v100:p100:k80' strings")
        parsed: list[ClusterSpec] = []
        for i, spec in enumerate(specs):
            where = f"{name}[{i}]"
            parts = spec.split(":") if isinstance(spec, str) else []
            if len(parts) != 3 or not all(p.isdigit() and len(p) <= 9 for p in parts):
                raise InvalidInstanceError(where, f"expected 'V100:P100:K80' counts, got {spec!r}")
            types = tuple(
                GpuType(name=t, count=int(c), gpus_per_server=gpus_per_server)
                for t, c in zip(GAVEL_TYPE_ORDER, parts, strict=True)
                if int(c) > 0
            )
            if not types:
                raise InvalidInstanceError(where, "has no GPU")
            parsed.append(ClusterSpec(gpu_types=types))
        out[name] = parsed
    return out
