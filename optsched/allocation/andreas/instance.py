r"""One ANDREAS scheduling point: node types, queued jobs, their configurations and prices.

ANDREAS (Filippini et al., FiCloud 2021, arXiv:2105.05080) decides, at a scheduling point
:math:`t_0`, which queued jobs run now, on which node type and on how many GPUs, trading the
energy cost of the run against the weighted tardiness of the jobs. The input of one point:

* **node types** :math:`\tau`: a GPU type, :math:`G_\tau` GPUs per node, :math:`N_\tau` nodes,
  the power :math:`P_\tau` of one GPU in watts (from :data:`optsched.power.GPU_POWER_WATTS`
  unless given), and per node the GPUs not available now (held by running jobs, or absent:
  :math:`U_{\tau n}`);
* the **energy price** :math:`\pi` per kWh and the **period** :math:`H`: the next scheduling
  point is at the latest :math:`t_0 + H`;
* **queued jobs** :math:`j` with a due date :math:`d_j` (or none), a tardiness weight
  :math:`\omega_j \ge 0`, and their allowed **configurations** :math:`c = (\tau, g)` with the
  predicted time :math:`t_{jc}` to finish the job's remaining work on :math:`g` GPUs of type
  :math:`\tau` (from a profiling model; in the simulator, from the throughput table).

A configuration with :math:`g \le G_\tau` runs on one node; one with :math:`g > G_\tau` must be a
multiple of :math:`G_\tau` and takes :math:`g / G_\tau` whole nodes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from optsched import limits
from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = [
    "AndreasInstance",
    "AndreasJob",
    "Configuration",
    "NodeType",
    "PostponedEnergy",
    "nodes_needed",
]

#: How a postponed job's energy is charged (see :class:`AndreasInstance`).
PostponedEnergy = Literal["min", "none"]

_BIG = 1e15


class NodeType(Frozen):
    """Identical nodes of one GPU type."""

    name: str = Field(min_length=1, max_length=200)
    """Unique name (configurations refer to it)."""
    gpu_type: str = Field(min_length=1, max_length=200)
    """GPU model (``v100``, ``p100``, ``k80`` ...)."""
    gpus_per_server: int = Field(ge=1, le=1024)
    """:math:`G_\\tau`."""
    nodes: int = Field(ge=0, le=100_000)
    """:math:`N_\\tau`."""
    power_watts: float = Field(gt=0, le=100_000, allow_inf_nan=False)
    """:math:`P_\\tau`: power of one GPU while a job holds it (W); idle power is not modelled."""
    unavailable: tuple[int, ...] = ()
    """:math:`U_{\\tau n}`: GPUs of node ``n`` not available now (empty: all free)."""

    @model_validator(mode="after")
    def _check(self) -> NodeType:
        if self.unavailable and len(self.unavailable) != self.nodes:
            raise InvalidInstanceError(
                "unavailable",
                f"needs one entry per node ({self.nodes}), got {len(self.unavailable)}",
            )
        for n, u in enumerate(self.unavailable):
            if not 0 <= u <= self.gpus_per_server:
                raise InvalidInstanceError(
                    f"unavailable[{n}]", f"must be in [0, {self.gpus_per_server}], got {u}"
                )
        return self

    def free(self, node: int) -> int:
        """GPUs of ``node`` free at this scheduling point."""
        return self.gpus_per_server - (self.unavailable[node] if self.unavailable else 0)


class Configuration(Frozen):
    """One allowed way to run a job: ``gpus`` GPUs of ``node_type``, taking ``runtime_s`` s."""

    node_type: str = Field(min_length=1, max_length=200)
    gpus: int = Field(ge=1, le=1_000_000)
    runtime_s: float = Field(gt=0, le=_BIG, allow_inf_nan=False)
    """:math:`t_{jc}`: predicted seconds to finish the job's remaining work."""


class AndreasJob(Frozen):
    """A queued job."""

    job_id: str = Field(min_length=1, max_length=200)
    due_s: float | None = Field(default=None, ge=0, le=_BIG, allow_inf_nan=False)
    """:math:`d_j`, absolute seconds (``None``: no due date, never tardy)."""
    weight: float = Field(default=1.0, ge=0, le=_BIG, allow_inf_nan=False)
    """:math:`\\omega_j`: cost per second of tardiness (same currency as the energy price)."""
    configurations: tuple[Configuration, ...] = Field(min_length=1)

    @property
    def slowest(self) -> float:
        r""":math:`\max_c t_{jc}`."""
        return max(c.runtime_s for c in self.configurations)


class AndreasInstance(Frozen):
    r"""Every input of one ANDREAS scheduling point.

    Cost of a decision for job :math:`j` (see the formulation page):

    * run now in configuration :math:`c = (\tau, g)`:
      :math:`e_{jc} + \omega_j \max(0, t_0 + t_{jc} - d_j)` with the energy cost
      :math:`e_{jc} = \pi P_\tau g\, t_{jc} / 3.6\cdot10^6` (W s to kWh);
    * postpone: :math:`\bar e_j + \omega_j \max(0, t_0 + H + \max_c t_{jc} - d_j)`, the
      pessimistic completion of a job that starts at the next scheduling point in its slowest
      configuration; :math:`\bar e_j = \min_c e_{jc}` with ``postponed_energy="min"`` (the
      energy the job needs anyway, at best: postponing never looks like a saving), or 0 with
      ``"none"`` (only the energy spent in this decision counts).

    Examples
    --------
    >>> inst = AndreasInstance(
    ...     node_types=[NodeType(name="v100", gpu_type="v100", gpus_per_server=4, nodes=1,
    ...                          power_watts=300.0)],
    ...     jobs=[AndreasJob(job_id="a", due_s=3600.0, configurations=[
    ...         Configuration(node_type="v100", gpus=1, runtime_s=7200.0)])])
    >>> inst.n_jobs, inst.total_gpus
    (1, 4)
    """

    kind: str = Field(default="andreas-instance", pattern="^andreas-instance$")
    now_s: float = Field(default=0.0, ge=0, le=_BIG, allow_inf_nan=False)
    """:math:`t_0`, seconds."""
    period_s: float = Field(default=600.0, gt=0, le=_BIG, allow_inf_nan=False)
    """:math:`H`, seconds to the next scheduling point at the latest."""
    energy_price_per_kwh: float = Field(default=0.2, ge=0, le=_BIG, allow_inf_nan=False)
    """:math:`\\pi`, currency per kWh."""
    postponed_energy: PostponedEnergy = "min"
    node_types: tuple[NodeType, ...] = Field(min_length=1, max_length=1000)
    jobs: tuple[AndreasJob, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> AndreasInstance:
        names = [t.name for t in self.node_types]
        if len(set(names)) != len(names):
            raise InvalidInstanceError("node_types", "names must be unique")
        by_name = {t.name: t for t in self.node_types}
        limits.check_size(
            "node_types", float(sum(t.nodes for t in self.node_types)), "max_array_cells", "nodes"
        )
        seen: set[str] = set()
        configs = 0
        for i, job in enumerate(self.jobs):
            if job.job_id in seen:
                raise InvalidInstanceError(f"jobs[{i}].job_id", f"duplicate {job.job_id!r}")
            seen.add(job.job_id)
            keys: set[tuple[str, int]] = set()
            for k, c in enumerate(job.configurations):
                where = f"jobs[{i}].configurations[{k}]"
                t = by_name.get(c.node_type)
                if t is None:
                    raise InvalidInstanceError(
                        f"{where}.node_type", f"unknown node type {c.node_type!r}"
                    )
                if (c.node_type, c.gpus) in keys:
                    raise InvalidInstanceError(
                        where, f"({c.node_type}, {c.gpus}) is listed twice for {job.job_id!r}"
                    )
                keys.add((c.node_type, c.gpus))
                if c.gpus > t.gpus_per_server and c.gpus % t.gpus_per_server:
                    raise InvalidInstanceError(
                        f"{where}.gpus",
                        f"{c.gpus} GPUs on nodes of {t.gpus_per_server}: more than one node needs "
                        "a multiple of the node size",
                    )
            configs += len(job.configurations)
        limits.check_size("jobs", float(configs), "max_model_variables", "configurations")
        return self

    @property
    def n_jobs(self) -> int:
        """Number of queued jobs."""
        return len(self.jobs)

    @property
    def total_gpus(self) -> int:
        """GPUs of every node type, available or not."""
        return sum(t.gpus_per_server * t.nodes for t in self.node_types)

    def node_type(self, name: str) -> NodeType:
        """The node type called ``name``."""
        for t in self.node_types:
            if t.name == name:
                return t
        raise InvalidInstanceError("node_type", f"unknown node type {name!r}")

    def summary(self) -> dict[str, Any]:
        """Sizes, for reports."""
        return {
            "jobs": self.n_jobs,
            "configurations": sum(len(j.configurations) for j in self.jobs),
            "node_types": [t.name for t in self.node_types],
            "gpus": self.total_gpus,
        }

    def __repr__(self) -> str:
        types = ", ".join(f"{t.name}={t.nodes}x{t.gpus_per_server}" for t in self.node_types)
        return (
            f"AndreasInstance(now_s={self.now_s:g}, period_s={self.period_s:g}, "
            f"jobs={self.n_jobs}, "
            f"nodes=[{types}], price={self.energy_price_per_kwh:g}/kWh)"
        )


def nodes_needed(gpus: int, gpus_per_server: int) -> int:
    """Nodes a configuration of ``gpus`` GPUs takes: 1, or ``gpus / gpus_per_server`` whole ones."""
    return 1 if gpus <= gpus_per_server else -(-gpus // gpus_per_server)
