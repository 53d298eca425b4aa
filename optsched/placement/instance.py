r"""Placement instances: a cluster, jobs made of tasks, their traffic and their interference.

File format (``optsched schema placement-instance``)::

    {"kind": "placement-instance",
     "cluster": {"servers": [{"name": "s0", "capacity": {"gpu": 8, "cpu": 64, "memory": 512},
                              "nic_bandwidth": 25}],
                 "racks": []},
     "jobs": [{"name": "resnet", "type": "cnn", "weight": 1, "standalone_time": 0.4,
               "spread_penalty": 0.05,
               "tasks": [{"name": "w", "role": "worker", "count": 4,
                          "demand": {"gpu": 1, "cpu": 4}},
                         {"name": "ps", "role": "ps", "demand": {"cpu": 8}}],
               "communication": {"pattern": "ps", "volume": 0.8},
               "traffic": [{"src": "w0", "dst": "w1", "volume": 0.1}]}],
     "interference": [{"a": "resnet", "b": "bert", "coefficient": 0.05}],
     "type_interference": [{"a": "cnn", "b": "cnn", "coefficient": 0.02}]}

Tasks
    A task spec with ``count`` :math:`n > 1` stands for :math:`n` identical tasks named
    ``<name>0 .. <name>{n-1}``; a task's global id is ``"<job>/<task>"``.
Traffic
    Directed volumes between tasks of one job, in Gbit per training iteration. ``communication``
    generates the usual patterns: ``ps`` (every worker sends ``volume / P`` to each of the
    :math:`P` PSs and receives as much back) and ``ring`` (ring all-reduce over the workers and
    ranks in order: each sends :math:`2(n-1)/n \cdot` ``volume`` to the next). Explicit
    ``traffic`` entries add to the generated ones.
Interference
    ``interference`` holds :math:`\kappa_{ab}`, the slowdown job ``a`` suffers per server it
    shares with job ``b`` (formulations §3.3); ``type_interference`` holds
    :math:`\hat y_{AB}` between job *types* (formulations §5.2, e.g. a predictor's output), which
    also applies to the types listed as a server's ``residents``. The pairwise coefficient every
    objective uses is

    .. math:: c_{ab} = \kappa_{ab} + \hat y_{\mathrm{type}(a)\,\mathrm{type}(b)},

    each term 0 when absent. Coefficients are directed: :math:`c_{ab}` is what ``a`` suffers.

Every field is validated on load; a bad one raises
:class:`~optsched.errors.InvalidInstanceError` naming it, e.g.
``jobs[2].tasks[0].demand.gpu: 9 fits on no server (largest capacity 8)``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from optsched._validation import Frozen
from optsched.cluster import Cluster, Server, two_tier_cluster, uniform_cluster
from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.tolerances import FIT_TOL, leq

__all__ = [
    "MAX_VALUE",
    "MIN_BANDWIDTH",
    "Coefficient",
    "Communication",
    "JobSpec",
    "PlacementInstance",
    "Task",
    "TaskSpec",
    "Traffic",
    "bin_packing_instance",
    "generate_instance",
    "instance_schema",
]

#: Largest number a placement instance may hold (demands, capacities, volumes, loads, times,
#: weights, coefficients, bandwidths). Every objective sums at most a few million such terms
#: (the model budget), so every model coefficient, bound and objective value stays below
#: 1e16, far inside the solvers' numerical range (HiGHS treats 1e20 as infinity) and far from
#: float overflow.
MAX_VALUE = 1e9
#: Smallest bandwidth (Gbit/s) a placement instance may hold: link loads and communication
#: times divide volumes by bandwidths, so this keeps them below ``MAX_VALUE / MIN_BANDWIDTH``.
MIN_BANDWIDTH = 1e-3

NonNegFloat = Annotated[float, Field(ge=0, le=MAX_VALUE, allow_inf_nan=False)]
#: Largest ``count`` of one task spec (the task budget refuses far fewer tasks in total).
MAX_COUNT = 10**9
PosInt = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Name = Annotated[str, Field(min_length=1, pattern=r"^[^/]+$")]


def fits(demand: float, capacity: float) -> bool:
    """Whether ``demand <= capacity`` up to :data:`~optsched.tolerances.FIT_TOL`."""
    return leq(demand, capacity, FIT_TOL)


class TaskSpec(Frozen):
    """One task, or ``count`` identical tasks, of a job."""

    name: Name = Field(description="Task name; with count n > 1 the tasks are <name>0..<name>n-1.")
    role: Literal["worker", "ps", "rank"] = Field(
        default="worker", description="Worker, parameter server, or all-reduce rank."
    )
    count: Count = Field(default=1, description="Number of identical tasks.")
    demand: dict[str, NonNegFloat] = Field(
        default_factory=dict, description="Demand per resource (gpu is a share of GPUs)."
    )
    gpu_memory: NonNegFloat = Field(
        default=0.0, description="Memory the task needs on its GPU (GB), for node-level assignment."
    )

    def names(self) -> list[str]:
        """Names of the tasks this spec stands for."""
        if self.count == 1:
            return [self.name]
        return [f"{self.name}{i}" for i in range(self.count)]


class Traffic(Frozen):
    """Directed traffic between two tasks of one job."""

    src: Name = Field(description="Sending task (expanded name, e.g. w0).")
    dst: Name = Field(description="Receiving task.")
    volume: NonNegFloat = Field(description="Gbit per training iteration.")


class Communication(Frozen):
    """A traffic pattern generated from the job's roles."""

    pattern: Literal["ps", "ring"] = Field(
        description="ps: workers <-> PSs; ring: ring all-reduce."
    )
    volume: NonNegFloat = Field(description="Model (gradient) size exchanged per iteration, Gbit.")


class JobSpec(Frozen):
    """A training job: its tasks, traffic, weight and interference parameters."""

    name: Name
    type: Name | None = Field(
        default=None, description="Job type (model family) for type_interference."
    )
    weight: NonNegFloat = Field(default=1.0, description="omega_j, e.g. remaining iterations.")
    standalone_time: NonNegFloat = Field(
        default=1.0, description="t_j^0: iteration time running alone (s)."
    )
    spread_penalty: NonNegFloat = Field(
        default=0.0, description="lambda_j: penalty per extra server spanned (s)."
    )
    tasks: tuple[TaskSpec, ...] = Field(min_length=1)
    communication: Communication | None = None
    traffic: tuple[Traffic, ...] = ()


class Coefficient(Frozen):
    """One directed interference coefficient: what ``a`` suffers from ``b``."""

    a: Name
    b: Name
    coefficient: NonNegFloat


@dataclass(frozen=True)
class Task:
    """One expanded task.

    Attributes
    ----------
    id : str
        Global id ``"<job>/<name>"``.
    job : int
        Index of its job.
    name : str
        Name within the job.
    role : str
        ``worker``, ``ps`` or ``rank``.
    spec : int
        Index of its :class:`TaskSpec` within the job.
    """

    id: str
    job: int
    name: str
    role: str
    spec: int


def _expand_traffic(job: JobSpec, where: str) -> dict[tuple[str, str], float]:
    """Traffic of one job, ``(src, dst) -> volume`` (pattern plus explicit entries)."""
    roles = [(n, spec.role) for spec in job.tasks for n in spec.names()]
    volume: dict[tuple[str, str], float] = {}

    def add(src: str, dst: str, v: float) -> None:
        if v > 0.0:
            volume[(src, dst)] = volume.get((src, dst), 0.0) + v

    comm = job.communication
    if comm is not None:
        if comm.pattern == "ps":
            workers = [n for n, r in roles if r == "worker"]
            servers = [n for n, r in roles if r == "ps"]
            if not workers or not servers:
                raise InvalidInstanceError(
                    f"{where}.communication.pattern",
                    "pattern 'ps' needs a task with role 'worker' and one with role 'ps'",
                )
            share = comm.volume / len(servers)
            for w in workers:
                for p in servers:
                    add(w, p, share)
                    add(p, w, share)
        else:
            ranks = [n for n, r in roles if r in ("worker", "rank")]
            if not ranks:
                raise InvalidInstanceError(
                    f"{where}.communication.pattern",
                    "pattern 'ring' needs tasks with role 'worker' or 'rank'",
                )
            n = len(ranks)
            if n >= 2:
                per_hop = 2.0 * (n - 1) / n * comm.volume
                for i in range(n):
                    add(ranks[i], ranks[(i + 1) % n], per_hop)
    names = {n for n, _ in roles}
    for k, t in enumerate(job.traffic):
        for end in ("src", "dst"):
            if getattr(t, end) not in names:
                raise InvalidInstanceError(
                    f"{where}.traffic[{k}].{end}",
                    f"unknown task {getattr(t, end)!r} in job {job.name!r}",
                )
        if t.src == t.dst:
            raise InvalidInstanceError(f"{where}.traffic[{k}].dst", "must differ from src")
        add(t.src, t.dst, t.volume)
    return volume


def _check_sizes(instance: PlacementInstance) -> None:
    """Refuse instances whose expansion would exceed the size budgets, before expanding.

    Tasks and flows (each becomes at least one model variable per server it may use) count
    against ``max_model_variables``; the job-by-job and job-by-server coefficient arrays against
    ``max_array_cells``. Checked on the specs' counts, so ``count: 10**7`` costs nothing.
    """
    tasks = 0
    flows = 0
    for j, job in enumerate(instance.jobs):
        workers = ps = ranks = 0
        for k, spec in enumerate(job.tasks):
            tasks += spec.count
            check_size(f"jobs[{j}].tasks[{k}].count", tasks, "max_model_variables", "tasks")
            if spec.role == "worker":
                workers += spec.count
            elif spec.role == "ps":
                ps += spec.count
            else:
                ranks += spec.count
        if job.communication is not None:
            # ps: every worker <-> every PS; ring: one flow per member.
            pattern = job.communication.pattern
            flows += 2 * workers * ps if pattern == "ps" else workers + ranks
        flows += len(job.traffic)
        check_size(f"jobs[{j}].communication", flows, "max_model_variables", "flows")
    n_jobs, n_servers = len(instance.jobs), len(instance.cluster.servers)
    check_size("jobs", n_jobs * n_jobs, "max_array_cells", "job pairs")
    check_size("cluster.servers", n_jobs * n_servers, "max_array_cells", "job-server pairs")


def _check_cluster_magnitudes(cluster: Cluster) -> None:
    """Refuse numbers outside the range every placement model handles exactly.

    Every number at most :data:`MAX_VALUE`, every bandwidth at least :data:`MIN_BANDWIDTH`
    (the instance's own fields are bounded by their types).
    """

    def at_most(field: str, value: float | None) -> None:
        if value is not None and value > MAX_VALUE:
            raise InvalidInstanceError(field, f"must be <= {MAX_VALUE:g}, got {value:g}")

    def bandwidth(field: str, value: float) -> None:
        at_most(field, value)
        if value < MIN_BANDWIDTH:
            raise InvalidInstanceError(field, f"must be >= {MIN_BANDWIDTH:g} Gbit/s, got {value:g}")

    for h, server in enumerate(cluster.servers):
        where = f"cluster.servers[{h}]"
        for r, value in server.capacity.items():
            at_most(f"{where}.capacity.{r}", value)
        at_most(f"{where}.nic_load", server.nic_load)
        at_most(f"{where}.gpu_memory", server.gpu_memory)
        bandwidth(f"{where}.nic_bandwidth", server.nic_bandwidth)
        bandwidth(f"{where}.gpu_bandwidth", server.gpu_bandwidth)
        for i, link in enumerate(server.gpu_links):
            bandwidth(f"{where}.gpu_links[{i}].bandwidth", link.bandwidth)
    gpus = sum(int(s.capacity.get("gpu", 0.0)) for s in cluster.servers)
    check_size("cluster.servers", gpus, "max_model_variables", "GPUs")
    for k, rack in enumerate(cluster.racks):
        at_most(f"cluster.racks[{k}].uplink_load", rack.uplink_load)
        bandwidth(f"cluster.racks[{k}].uplink_bandwidth", rack.uplink_bandwidth)


class PlacementInstance(Frozen):
    r"""A placement problem: the cluster, the jobs to place, their traffic and interference.

    Construct from data with :meth:`from_dict` or :func:`load_instance` (both raise
    :class:`~optsched.errors.InvalidInstanceError` naming the field).

    Attributes
    ----------
    cluster : Cluster
        Servers (with free capacities), racks and links.
    jobs : tuple of JobSpec
        Jobs to place.
    interference : tuple of Coefficient
        Job-level coefficients :math:`\\kappa_{ab}`.
    type_interference : tuple of Coefficient
        Type-level coefficients :math:`\\hat y_{AB}` (also against servers' residents).
    comm_weight : float
        Weight of communication seconds against interference in node-level assignment (NLWP).
    """

    # The title of the published JSON Schema (``optsched schema placement-instance``).
    model_config = ConfigDict(title="optsched placement instance")

    kind: Literal["placement-instance"] = "placement-instance"
    name: str = ""
    cluster: Cluster
    jobs: tuple[JobSpec, ...] = Field(min_length=1)
    interference: tuple[Coefficient, ...] = ()
    type_interference: tuple[Coefficient, ...] = ()
    comm_weight: NonNegFloat = Field(
        default=1.0, description="lambda of NLWP: weight of communication time vs interference."
    )

    @model_validator(mode="after")
    def _check(self) -> PlacementInstance:
        _check_sizes(self)
        _check_cluster_magnitudes(self.cluster)
        resources = set(self.cluster.resources)
        cap = self.cluster.capacity_matrix()
        res_index = {r: i for i, r in enumerate(self.cluster.resources)}
        jobs: set[str] = set()
        for j, job in enumerate(self.jobs):
            where = f"jobs[{j}]"
            if job.name in jobs:
                raise InvalidInstanceError(f"{where}.name", f"duplicate job name {job.name!r}")
            jobs.add(job.name)
            names: set[str] = set()
            for k, spec in enumerate(job.tasks):
                for n in spec.names():
                    if n in names:
                        raise InvalidInstanceError(
                            f"{where}.tasks[{k}].name", f"duplicate task name {n!r} in the job"
                        )
                    names.add(n)
                for r, value in spec.demand.items():
                    if r not in resources:
                        raise InvalidInstanceError(
                            f"{where}.tasks[{k}].demand.{r}",
                            f"unknown resource; the servers have {sorted(resources)}",
                        )
                    best = float(cap[:, res_index[r]].max())
                    if not fits(value, best):
                        raise InvalidInstanceError(
                            f"{where}.tasks[{k}].demand.{r}",
                            f"{value:g} fits on no server (largest capacity {best:g})",
                        )
                vector = np.array([spec.demand.get(r, 0.0) for r in self.cluster.resources])
                if not any(
                    all(fits(float(v), float(c)) for v, c in zip(vector, row, strict=True))
                    for row in cap
                ):
                    raise InvalidInstanceError(
                        f"{where}.tasks[{k}].demand",
                        "fits on no server (no server has all of it free at once)",
                    )
            _expand_traffic(job, where)
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.interference):
            for end in ("a", "b"):
                if getattr(c, end) not in jobs:
                    raise InvalidInstanceError(
                        f"interference[{i}].{end}", f"unknown job {getattr(c, end)!r}"
                    )
            if c.a == c.b:
                raise InvalidInstanceError(
                    f"interference[{i}].b",
                    "must differ from a (a job does not interfere with itself)",
                )
            if (c.a, c.b) in seen:
                raise InvalidInstanceError(f"interference[{i}]", f"duplicate pair ({c.a}, {c.b})")
            seen.add((c.a, c.b))
        types = {job.type for job in self.jobs if job.type is not None}
        types |= {r for s in self.cluster.servers for r in s.residents}
        seen = set()
        for i, c in enumerate(self.type_interference):
            for end in ("a", "b"):
                if getattr(c, end) not in types:
                    raise InvalidInstanceError(
                        f"type_interference[{i}].{end}",
                        f"unknown job type {getattr(c, end)!r}; known: {sorted(types)}",
                    )
            if (c.a, c.b) in seen:
                raise InvalidInstanceError(
                    f"type_interference[{i}]", f"duplicate pair ({c.a}, {c.b})"
                )
            seen.add((c.a, c.b))
        return self

    # ----- construction ------------------------------------------------------------------------

    def with_interference(
        self, matrix: np.ndarray | Sequence[Sequence[float]]
    ) -> PlacementInstance:
        r"""A copy whose job-level coefficients :math:`\kappa` come from ``matrix``.

        Parameters
        ----------
        matrix : array_like, shape (n_jobs, n_jobs)
            ``matrix[a, b]`` is what job ``a`` suffers per server shared with job ``b`` (jobs in
            :attr:`jobs` order). Entries must be finite and >= 0; zeros are dropped, and so is
            the diagonal, because a job does not interfere with itself in these models.

        Raises
        ------
        InvalidInstanceError
            Wrong shape, or a negative or non-finite entry (field ``interference``).
        """
        m = np.asarray(matrix, dtype=np.float64)
        n = len(self.jobs)
        if m.shape != (n, n):
            raise InvalidInstanceError(
                "interference",
                f"matrix must have shape ({n}, {n}) (one row per job), got {m.shape}",
            )
        if not np.all(np.isfinite(m)) or np.any(m < 0):
            a, b = np.argwhere(~np.isfinite(m) | (m < 0))[0]
            raise InvalidInstanceError(
                f"interference[{a}][{b}]", f"must be finite and >= 0, got {m[a, b]}"
            )
        coefficients = [
            {"a": self.jobs[a].name, "b": self.jobs[b].name, "coefficient": float(m[a, b])}
            for a in range(n)
            for b in range(n)
            if a != b and m[a, b] > 0.0
        ]
        data = self.model_dump(mode="json")
        data["interference"] = coefficients
        return PlacementInstance.from_dict(data)

    def with_type_interference(
        self, types: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]]
    ) -> PlacementInstance:
        r"""A copy whose type-level coefficients :math:`\hat y` come from ``matrix``.

        Parameters
        ----------
        types : sequence of str
            Job types indexing the matrix rows and columns.
        matrix : array_like, shape (len(types), len(types))
            ``matrix[A, B]`` is what a job of type ``A`` suffers per server shared with a job (or
            resident) of type ``B``. The diagonal counts: two jobs of one type interfere. Zeros
            are dropped.

        Raises
        ------
        InvalidInstanceError
            Wrong shape, duplicate or unknown types, or a negative or non-finite entry.
        """
        m = np.asarray(matrix, dtype=np.float64)
        names = list(types)
        if len(set(names)) != len(names):
            raise InvalidInstanceError("type_interference", f"duplicate types in {names}")
        if m.shape != (len(names), len(names)):
            raise InvalidInstanceError(
                "type_interference",
                f"matrix must have shape ({len(names)}, {len(names)}), got {m.shape}",
            )
        if not np.all(np.isfinite(m)) or np.any(m < 0):
            a, b = np.argwhere(~np.isfinite(m) | (m < 0))[0]
            raise InvalidInstanceError(
                f"type_interference[{a}][{b}]", f"must be finite and >= 0, got {m[a, b]}"
            )
        coefficients = [
            {"a": names[a], "b": names[b], "coefficient": float(m[a, b])}
            for a in range(len(names))
            for b in range(len(names))
            if m[a, b] > 0.0
        ]
        data = self.model_dump(mode="json")
        data["type_interference"] = coefficients
        return PlacementInstance.from_dict(data)

    # ----- derived data (cached; the instance is immutable) ------------------------------------

    @property
    def servers(self) -> tuple[Server, ...]:
        """The cluster's servers."""
        return self.cluster.servers

    @cached_property
    def resources(self) -> tuple[str, ...]:
        """Resource names (the cluster's)."""
        return self.cluster.resources

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        """Every task, job by job, spec by spec."""
        out = []
        for j, job in enumerate(self.jobs):
            for k, spec in enumerate(job.tasks):
                for n in spec.names():
                    out.append(Task(f"{job.name}/{n}", j, n, spec.role, k))
        return tuple(out)

    @cached_property
    def task_index(self) -> dict[str, int]:
        """Task id to its position in :attr:`tasks`."""
        return {t.id: i for i, t in enumerate(self.tasks)}

    @cached_property
    def job_tasks(self) -> tuple[tuple[int, ...], ...]:
        """Task indices of each job."""
        out: list[list[int]] = [[] for _ in self.jobs]
        for i, t in enumerate(self.tasks):
            out[t.job].append(i)
        return tuple(tuple(x) for x in out)

    def spec(self, task: int) -> TaskSpec:
        """The :class:`TaskSpec` task ``task`` was expanded from."""
        t = self.tasks[task]
        return self.jobs[t.job].tasks[t.spec]

    @cached_property
    def demand(self) -> np.ndarray:
        """Demands, shape ``(tasks, resources)``."""
        rows = [
            [self.spec(i).demand.get(r, 0.0) for r in self.resources]
            for i in range(len(self.tasks))
        ]
        return np.array(rows, dtype=np.float64).reshape(len(self.tasks), len(self.resources))

    @cached_property
    def capacity(self) -> np.ndarray:
        """Capacities, shape ``(servers, resources)``."""
        return self.cluster.capacity_matrix(self.resources)

    @cached_property
    def flows(self) -> tuple[tuple[int, int, float], ...]:
        """Directed traffic ``(src task, dst task, volume)`` with volume > 0, sorted."""
        out = []
        for j, job in enumerate(self.jobs):
            for (src, dst), v in _expand_traffic(job, f"jobs[{j}]").items():
                out.append(
                    (self.task_index[f"{job.name}/{src}"], self.task_index[f"{job.name}/{dst}"], v)
                )
        return tuple(sorted(out))

    @cached_property
    def kappa(self) -> np.ndarray:
        r"""Job-level coefficients :math:`\kappa`, shape ``(jobs, jobs)``."""
        index = {job.name: j for j, job in enumerate(self.jobs)}
        m = np.zeros((len(self.jobs), len(self.jobs)))
        for c in self.interference:
            m[index[c.a], index[c.b]] = c.coefficient
        return m

    @cached_property
    def type_kappa(self) -> dict[tuple[str, str], float]:
        r"""Type-level coefficients :math:`\hat y`, ``(type a, type b) -> value``."""
        return {(c.a, c.b): c.coefficient for c in self.type_interference}

    @cached_property
    def pair_coefficients(self) -> np.ndarray:
        r"""The coefficients :math:`c_{ab}` every objective uses, shape ``(jobs, jobs)``.

        :math:`c_{ab} = \kappa_{ab} + \hat y_{\mathrm{type}(a)\mathrm{type}(b)}` for
        :math:`a \ne b`; the diagonal is 0.
        """
        m = self.kappa.copy()
        for a, ja in enumerate(self.jobs):
            for b, jb in enumerate(self.jobs):
                if a != b and ja.type is not None and jb.type is not None:
                    m[a, b] += self.type_kappa.get((ja.type, jb.type), 0.0)
        np.fill_diagonal(m, 0.0)
        return m

    @cached_property
    def resident_costs(self) -> np.ndarray:
        r"""What each job suffers from each server's residents, shape ``(jobs, servers)``.

        :math:`R_{jh} = \sum_{r \in \mathrm{residents}(h)} \hat y_{\mathrm{type}(j)\,r}`.
        """
        m = np.zeros((len(self.jobs), len(self.servers)))
        for j, job in enumerate(self.jobs):
            if job.type is None:
                continue
            for h, server in enumerate(self.servers):
                m[j, h] = sum(self.type_kappa.get((job.type, r), 0.0) for r in server.residents)
        return m

    @property
    def has_interference(self) -> bool:
        """Whether any pairwise or resident coefficient is positive."""
        return bool(self.pair_coefficients.any() or self.resident_costs.any())

    def describe(self) -> str:
        """One line: sizes of the instance."""
        return (
            f"{len(self.servers)} servers, {len(self.jobs)} jobs, {len(self.tasks)} tasks, "
            f"{len(self.flows)} flows, resources {list(self.resources)}"
        )

    def to_frame(self) -> Any:
        """One row per task: ``job``, ``task``, ``role`` and one column per resource demanded.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        columns = ["job", "task", "role", *self.resources]
        rows = [
            [self.jobs[t.job].name, t.name, t.role, *self.demand[i]]
            for i, t in enumerate(self.tasks)
        ]
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        name = f"{self.name!r}: " if self.name else ""
        return (
            f"PlacementInstance({name}{len(self.servers)} servers, {len(self.jobs)} jobs, "
            f"{len(self.tasks)} tasks)"
        )

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}: {html.escape(self.describe())}</p>"


def instance_schema() -> dict[str, Any]:
    """JSON Schema of the placement-instance file format."""
    schema = PlacementInstance.schema()
    schema["title"] = "optsched placement instance"
    return schema


# ----- seeded generators ---------------------------------------------------------------------


def bin_packing_instance(
    n_tasks: int,
    *,
    capacity: float = 150.0,
    low: int = 20,
    high: int = 100,
    n_servers: int | None = None,
    resource: str = "memory",
    seed: int = 0,
) -> PlacementInstance:
    r"""A bin-packing-shaped instance: single-task jobs, one resource, identical servers.

    Task sizes are integers drawn uniformly from ``[low, high]`` on servers of capacity
    ``capacity`` (the defaults are Falkenauer's "uniform" class, whose optimum is almost always
    the trivial bound :math:`\\lceil \\sum_i s_i / C \\rceil`).

    Parameters
    ----------
    n_tasks : int
        Number of tasks (>= 1).
    capacity, low, high : number
        Server capacity and the size range (``0 <= low <= high <= capacity``).
    n_servers : int, optional
        Servers in the cluster; default ``n_tasks`` (always enough).
    resource : str
        Name of the resource.
    seed : int
        Seed of the generator; equal seeds give equal instances.

    Raises
    ------
    InvalidInstanceError
        Sizes out of range.
    """
    if n_tasks < 1:
        raise InvalidInstanceError("n_tasks", f"must be >= 1, got {n_tasks}")
    if not 0 <= low <= high <= capacity:
        raise InvalidInstanceError(
            "low", f"need 0 <= low <= high <= capacity, got {low}, {high}, {capacity}"
        )
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=n_tasks)
    servers = n_tasks if n_servers is None else n_servers
    data = {
        "kind": "placement-instance",
        "name": f"bin-packing-{n_tasks}-seed{seed}",
        "cluster": {
            "servers": [
                {"name": f"s{h}", "capacity": {resource: float(capacity)}} for h in range(servers)
            ]
        },
        "jobs": [
            {"name": f"j{i}", "tasks": [{"name": "t", "demand": {resource: float(s)}}]}
            for i, s in enumerate(sizes)
        ],
    }
    return PlacementInstance.from_dict(data)


def generate_instance(
    n_jobs: int,
    *,
    n_servers: int = 4,
    gpus: int = 8,
    racks: int = 1,
    max_workers: int = 4,
    interference: bool = True,
    types: Sequence[str] = ("cnn", "rnn", "transformer"),
    fill: float | None = None,
    seed: int = 0,
) -> PlacementInstance:
    r"""A synthetic training-cluster instance with PS and all-reduce jobs.

    Each job draws a pattern (PS or ring), 1..``max_workers`` workers needing one GPU, 4 vCPUs
    and 32 GB each, PS jobs 1..2 PSs needing 8 vCPUs and 16 GB, and a model size of 0.1..2 Gbit
    per iteration. When ``interference`` is set, :math:`\kappa_{ab} \sim U[0, 0.3]\,t_a^0`,
    doubled for pairs of communication-heavy jobs (formulations §3.4), and a type matrix with
    :math:`\hat y_{AB} \sim U[0, 0.1]` is added.

    Parameters
    ----------
    n_jobs : int
        Number of jobs (>= 1).
    n_servers : int
        Servers; with racks, each of the ``racks`` racks gets
        :math:`\lceil n_{servers} / racks \rceil` of them.
    gpus : int
        GPUs per server (each server also has 8 vCPUs and 64 GB per GPU, at least 16 and 128).
    racks : int
        1 for a single switch; more for a two-tier cluster with 4:1 oversubscribed uplinks.
    max_workers : int
        Largest number of workers or ranks per job.
    interference : bool
        Add interference coefficients.
    types : sequence of str
        Job types to draw from.
    fill : float, optional
        When given (in (0, 1]), ignore ``n_servers`` and use the fewest servers whose GPUs the
        workers fill to at most this fraction, so capacity binds (with ``max_workers > gpus``,
        jobs must also span servers).
    seed : int
        Seed; equal seeds give equal instances.

    Raises
    ------
    InvalidInstanceError
        A size below 1, or ``fill`` outside (0, 1] or with ``gpus == 0``.
    """
    for name, value in (("n_jobs", n_jobs), ("n_servers", n_servers), ("racks", racks)):
        if value < 1:
            raise InvalidInstanceError(name, f"must be >= 1, got {value}")
    if max_workers < 1:
        raise InvalidInstanceError("max_workers", f"must be >= 1, got {max_workers}")
    if fill is not None and not (0.0 < fill <= 1.0 and gpus > 0):
        raise InvalidInstanceError("fill", f"must be in (0, 1] with gpus > 0, got {fill}")
    rng = np.random.default_rng(seed)
    jobs = []
    volumes = []
    for j in range(n_jobs):
        workers = int(rng.integers(1, max_workers + 1))
        volume = float(np.round(rng.uniform(0.1, 2.0), 3))
        volumes.append(volume)
        t0 = float(np.round(rng.uniform(0.2, 1.0), 3))
        worker = {"gpu": 1.0, "cpu": 4.0, "memory": 32.0}
        if gpus == 0:
            worker = {"cpu": 4.0, "memory": 32.0}
        job: dict[str, Any] = {
            "name": f"j{j}",
            "type": str(types[int(rng.integers(len(types)))]),
            "weight": float(rng.integers(1, 4)),
            "standalone_time": t0,
            "spread_penalty": float(np.round(0.05 * t0, 4)),
        }
        if rng.random() < 0.5:
            n_ps = int(rng.integers(1, 3))
            job["tasks"] = [
                {"name": "w", "role": "worker", "count": workers, "demand": worker},
                {"name": "ps", "role": "ps", "count": n_ps, "demand": {"cpu": 8.0, "memory": 16.0}},
            ]
            job["communication"] = {"pattern": "ps", "volume": volume}
        else:
            job["tasks"] = [{"name": "r", "role": "rank", "count": workers, "demand": worker}]
            job["communication"] = {"pattern": "ring", "volume": volume}
        jobs.append(job)
    if fill is not None:
        workers = sum(
            spec["count"] for job in jobs for spec in job["tasks"] if "gpu" in spec["demand"]
        )
        n_servers = max(1, math.ceil(workers / (gpus * fill)))
    cpus = max(16.0, 8.0 * gpus)
    memory = max(128.0, 64.0 * gpus)
    if racks == 1:
        cluster = uniform_cluster(n_servers, gpus, cpus=cpus, memory=memory)
    else:
        per_rack = max(1, math.ceil(n_servers / racks))
        cluster = two_tier_cluster(
            racks, per_rack, gpus, cpus=cpus, memory=memory, uplink_bandwidth=25.0 * per_rack / 4
        )
    data: dict[str, Any] = {
        "kind": "placement-instance",
        "name": f"synthetic-{n_jobs}-seed{seed}",
        "cluster": cluster.model_dump(mode="json", exclude_none=True),
        "jobs": jobs,
    }
    if interference:
        heavy = np.array(volumes) > float(np.median(volumes))
        coeffs: list[dict[str, Any]] = []
        for a in range(n_jobs):
            for b in range(n_jobs):
                if a == b:
                    continue
                k = float(rng.uniform(0.0, 0.3)) * float(jobs[a]["standalone_time"])
                if heavy[a] and heavy[b]:
                    k *= 2.0
                coeffs.append({"a": f"j{a}", "b": f"j{b}", "coefficient": float(np.round(k, 4))})
        data["interference"] = [c for c in coeffs if c["coefficient"] > 0]
        used = sorted({job["type"] for job in jobs})
        data["type_interference"] = [
            {"a": ta, "b": tb, "coefficient": float(np.round(rng.uniform(0.0, 0.1), 4))}
            for ta in used
            for tb in used
        ]
        data["type_interference"] = [c for c in data["type_interference"] if c["coefficient"] > 0]
    return PlacementInstance.from_dict(data)
