r"""TensorLights: parameter-server broadcasts contending at host NICs, and priority among them.

A resource manager co-locates the parameter servers (PSs) of several training jobs on the same
hosts. Every iteration, each PS shard broadcasts its part of the model to every worker of its
job, so co-located PSs contend for the host's NIC and workers straggle. TensorLights [1]_ gives
the PS traffic of co-located jobs **priorities at the host NIC** and rotates them. This module
is a fluid model of that mechanism:

* :class:`TensorLightsInstance` -- hosts with NIC capacities and PS jobs (workers, model bytes,
  compute time, iterations, PS hosts), a validated file format;
* :func:`simulate` -- an exact event-driven fluid simulation under **fair sharing**, **strict
  static priority**, **rotating priority** (period :math:`\Delta`, coordinated across hosts by a
  global job order) or the **one-green** rotation, giving per-job iteration times, JCT, straggler
  spread and NIC utilisation;
* :func:`best_static_order` -- the exact best static priority order by brute force, beside the
  Smith-rule order :func:`smith_order` [2]_, which is provably optimal on the instances
  recognised by :func:`smith_rule_is_optimal`.

The model
---------
Job :math:`j` has :math:`n_j` workers, a model update of :math:`m_j` bytes per worker per
iteration split evenly over its PS shards :math:`S_j` (one per host in ``ps_hosts``), a compute
phase of :math:`c_j` seconds, :math:`I_j` iterations and a start time :math:`s_j`. Each
iteration is the compute phase, then the broadcast: shard :math:`h \in S_j` sends one flow of
:math:`m_j/|S_j|` bytes to each worker through host :math:`h`'s NIC of capacity :math:`B_h`.
The iteration ends when the last flow of the job finishes; synchronous training then starts the
next compute phase. Between events every rate is constant, so the simulation is exact:

* **fair** -- every active flow on a host gets an equal share (processor sharing);
* **priority** -- the active flows of the most urgent job on a host get the whole NIC;
* **rotate** -- as priority, with the order rotated cyclically every :math:`\Delta` seconds
  (job :math:`j` at position :math:`\pi_j` of the global order has level
  :math:`(\pi_j - \lfloor t/\Delta \rfloor) \bmod J`), the same on every host;
* **one-green** -- the job at rotated level 0 is urgent, all others share fairly.

Work conservation holds in every policy: a host with an unfinished flow sends at full rate.
Optional ``jitter`` draws each flow's share weight per iteration from
:math:`U[1 - \text{jitter}, 1 + \text{jitter}]` (TCP's unequal shares), which is what makes
workers of one job receive their update at different times.

References
----------
.. [1] X. S. Huang, A. Chen, T. S. E. Ng. "Green, Yellow, Yield: End-Host Traffic Scheduling for
   Distributed Deep Learning with TensorLights." IEEE IPDPS Workshops, 2019.
.. [2] W. E. Smith. "Various optimizers for single-stage production." Naval Research Logistics
   Quarterly 3(1-2), 1956 (the ratio rule for :math:`1 \,\|\, \sum w_j C_j`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen, load_data, parse
from optsched.errors import InvalidInstanceError
from optsched.placement import _tensorlights_kernel as _k

__all__ = [
    "OBJECTIVES",
    "POLICIES",
    "NicHost",
    "NicTrace",
    "OrderSearch",
    "PSJob",
    "SimulationResult",
    "TensorLightsInstance",
    "best_static_order",
    "compare_policies",
    "generate_instance",
    "instance_schema",
    "load_instance",
    "simulate",
    "smith_order",
    "smith_rule_is_optimal",
    "validate_files",
]

Policy = Literal["fair", "priority", "rotate", "one-green"]
Objective = Literal["mean-jct", "weighted-jct", "makespan"]

#: The NIC-sharing policies of :func:`simulate`.
POLICIES: tuple[str, ...] = ("fair", "priority", "rotate", "one-green")
#: The objectives of :func:`best_static_order`.
OBJECTIVES: tuple[str, ...] = ("mean-jct", "weighted-jct", "makespan")

_MODES = {
    "fair": _k.MODE_FAIR,
    "priority": _k.MODE_PRIORITY,
    "rotate": _k.MODE_ROTATE,
    "one-green": _k.MODE_ONE_GREEN,
}

#: Relative tolerance when comparing objective values of orders (ties go to the first order).
OBJECTIVE_RTOL = 1e-9
#: Largest number of jobs :func:`best_static_order` enumerates by default (8! = 40320 orders).
MAX_BRUTE_FORCE_JOBS = 8
#: Default NIC capacity of :func:`generate_instance`: 10 Gb/s in bytes per second.
DEFAULT_BANDWIDTH = 1.25e9

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


# --------------------------------------------------------------------------------------------
# Instance
# --------------------------------------------------------------------------------------------


class NicHost(Frozen):
    """A host whose NIC carries the PS traffic of the jobs placed on it.

    Attributes
    ----------
    name : str
    bandwidth : float
        Egress capacity :math:`B_h` in bytes per second (> 0).
    """

    name: str = ""
    bandwidth: PositiveFloat = Field(description="NIC egress capacity in bytes per second.")


class PSJob(Frozen):
    r"""A parameter-server training job.

    Attributes
    ----------
    name : str
    workers : int
        :math:`n_j \ge 1` workers, each receiving the whole model update every iteration.
    message_bytes : float
        :math:`m_j > 0`: bytes of model update each worker receives per iteration, split evenly
        over the PS shards.
    compute_time : float
        :math:`c_j \ge 0`: seconds of the compute phase of one iteration (forward, backward,
        gradient push and PS update).
    iterations : int
        :math:`I_j \ge 1`.
    ps_hosts : tuple of int
        Indices of the hosts holding the job's PS shards (distinct, non-empty).
    start : float
        :math:`s_j \ge 0`: when the first compute phase starts (seconds).
    weight : float
        :math:`w_j > 0`, for the weighted JCT objective.
    """

    name: str = ""
    workers: Annotated[int, Field(ge=1, le=100_000)] = Field(description="Number of workers.")
    message_bytes: PositiveFloat = Field(
        description="Bytes of model update each worker receives per iteration (all shards)."
    )
    compute_time: NonNegFloat = Field(description="Compute phase of one iteration (seconds).")
    iterations: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        description="Number of iterations."
    )
    ps_hosts: Annotated[tuple[Annotated[int, Field(ge=0)], ...], Field(min_length=1)] = Field(
        description="Hosts holding the job's PS shards."
    )
    start: NonNegFloat = Field(default=0.0, description="Start of the first compute phase (s).")
    weight: PositiveFloat = Field(default=1.0, description="Weight in the weighted JCT.")

    @model_validator(mode="after")
    def _distinct_hosts(self) -> PSJob:
        if len(set(self.ps_hosts)) != len(self.ps_hosts):
            raise InvalidInstanceError("ps_hosts", f"must be distinct, got {list(self.ps_hosts)}")
        return self


class TensorLightsInstance(Frozen):
    """Hosts and the PS jobs whose shards they hold.

    Build one with :meth:`from_dict`, :func:`load_instance` or :func:`generate_instance`; bad
    data raises :class:`~optsched.errors.InvalidInstanceError` naming the field. The properties
    ``n_jobs`` and ``n_hosts`` count the jobs and hosts.
    """

    kind: Literal["tensorlights-instance"] = "tensorlights-instance"
    hosts: Annotated[tuple[NicHost, ...], Field(min_length=1)]
    jobs: Annotated[tuple[PSJob, ...], Field(min_length=1)]

    @model_validator(mode="after")
    def _hosts_exist(self) -> TensorLightsInstance:
        for j, job in enumerate(self.jobs):
            for k, h in enumerate(job.ps_hosts):
                if h >= len(self.hosts):
                    raise InvalidInstanceError(
                        f"jobs[{j}].ps_hosts[{k}]",
                        f"must be a host index in [0, {len(self.hosts)}), got {h}",
                    )
        return self

    @classmethod
    def from_dict(cls, data: Any) -> TensorLightsInstance:
        """Validate plain data (as read from JSON/TOML) into an instance."""
        return parse(cls, data)

    @property
    def n_jobs(self) -> int:
        """Number of jobs :math:`J`."""
        return len(self.jobs)

    @property
    def n_hosts(self) -> int:
        """Number of hosts :math:`H`."""
        return len(self.hosts)

    def job_names(self) -> tuple[str, ...]:
        """Job names (``job{j}`` where empty)."""
        return tuple(job.name or f"job{j}" for j, job in enumerate(self.jobs))

    def host_names(self) -> tuple[str, ...]:
        """Host names (``host{h}`` where empty)."""
        return tuple(host.name or f"host{h}" for h, host in enumerate(self.hosts))

    def alone_comm_time(self) -> np.ndarray:
        r"""Broadcast time of each job alone (s).

        :math:`\tau_j = \max_{h \in S_j} m_j n_j / (|S_j| B_h)`.
        """
        return np.array(
            [
                max(
                    job.message_bytes * job.workers / (len(job.ps_hosts) * self.hosts[h].bandwidth)
                    for h in job.ps_hosts
                )
                for job in self.jobs
            ]
        )

    def alone_iteration_time(self) -> np.ndarray:
        r"""Iteration time of each job alone, :math:`c_j + \tau_j` (s)."""
        return np.array([job.compute_time for job in self.jobs]) + self.alone_comm_time()

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (what :meth:`save` writes)."""
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> None:
        """Write the instance as JSON, or TOML when the path ends in ``.toml``."""
        p = Path(path)
        if p.suffix.lower() == ".toml":
            import tomli_w

            p.write_text(tomli_w.dumps(self.to_dict()), encoding="utf-8")
        else:
            p.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


def load_instance(source: str | Path | dict[str, Any]) -> TensorLightsInstance:
    """Load and validate an instance from a JSON/TOML file or a dict.

    Raises
    ------
    InvalidInstanceError
        Unreadable file or any invalid field (named in the message).
    """
    data = load_data(source) if isinstance(source, (str, Path)) else source
    return parse(TensorLightsInstance, data)


def instance_schema() -> dict[str, Any]:
    """JSON Schema of a TensorLights instance file."""
    return TensorLightsInstance.model_json_schema()


def validate_files(instance_path: str | Path, schedule_path: str | Path | None) -> dict[str, Any]:
    """Validate a TensorLights instance file (the ``optsched validate`` hook).

    Raises
    ------
    InvalidInstanceError
        The file is malformed (the message names the field), or a schedule file was given:
        TensorLights instances have none.
    """
    if schedule_path is not None:
        raise InvalidInstanceError("schedule", "a tensorlights-instance has no schedule file")
    inst = load_instance(instance_path)
    return {
        "valid": True,
        "kind": "tensorlights-instance",
        "jobs": inst.n_jobs,
        "hosts": inst.n_hosts,
        "lines": [f"instance: {inst.n_jobs} jobs on {inst.n_hosts} hosts: valid"],
    }


def generate_instance(
    n_hosts: int = 2,
    n_jobs: int = 4,
    *,
    iterations: tuple[int, int] = (10, 30),
    workers: tuple[int, int] = (2, 8),
    max_shards: int = 1,
    bandwidth: float = DEFAULT_BANDWIDTH,
    models: Sequence[str] | None = None,
    seed: int = 0,
) -> TensorLightsInstance:
    """Seeded synthetic instance built from the DNN profiles shipped in ``models/``.

    Job :math:`j` trains a model drawn uniformly from ``models`` (default: every shipped
    profile); its message is the model's gradient bytes and its compute time the profile's
    forward + backward time. Workers are a power of two in ``workers``, iterations uniform in
    ``iterations``, and the PS shards sit on 1..``max_shards`` distinct random hosts. All jobs
    start at 0 and every NIC has capacity ``bandwidth`` bytes/s.

    Raises
    ------
    InvalidInstanceError
        A parameter is out of range.
    """
    from optsched.profiles import available_profiles, load_profile

    if n_hosts < 1:
        raise InvalidInstanceError("n_hosts", f"must be >= 1, got {n_hosts}")
    if n_jobs < 1:
        raise InvalidInstanceError("n_jobs", f"must be >= 1, got {n_jobs}")
    if not 1 <= iterations[0] <= iterations[1]:
        raise InvalidInstanceError("iterations", f"must be 1 <= low <= high, got {iterations}")
    if not 1 <= workers[0] <= workers[1]:
        raise InvalidInstanceError("workers", f"must be 1 <= low <= high, got {workers}")
    if not 1 <= max_shards <= n_hosts:
        raise InvalidInstanceError("max_shards", f"must be in [1, n_hosts={n_hosts}]")
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise InvalidInstanceError("bandwidth", f"must be finite and > 0, got {bandwidth}")
    names = list(models) if models is not None else available_profiles()
    if not names:
        raise InvalidInstanceError("models", "must name at least one profile")
    profiles = [load_profile(n) for n in names]
    powers = [2**k for k in range(0, 31) if workers[0] <= 2**k <= workers[1]] or [workers[0]]
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(n_jobs):
        prof = profiles[int(rng.integers(len(profiles)))]
        shards = int(rng.integers(1, max_shards + 1))
        hosts = sorted(int(h) for h in rng.choice(n_hosts, size=shards, replace=False))
        jobs.append(
            {
                "name": f"{prof.name}-{j}",
                "workers": int(rng.choice(powers)),
                "message_bytes": float(prof.total_bytes),
                "compute_time": (prof.forward_ms + prof.backward_ms) / 1000.0,
                "iterations": int(rng.integers(iterations[0], iterations[1] + 1)),
                "ps_hosts": hosts,
            }
        )
    return TensorLightsInstance.from_dict(
        {
            "hosts": [{"name": f"host{h}", "bandwidth": bandwidth} for h in range(n_hosts)],
            "jobs": jobs,
        }
    )


# --------------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class NicTrace:
    """Piecewise-constant NIC usage recorded by :func:`simulate` with ``trace=True``.

    Segment :math:`k` spans ``[times[k], times[k + 1])``; during it host :math:`h` sends at total
    rate ``used[k, h]`` and ``active[k, h]`` says whether it had an unfinished flow.
    """

    times: np.ndarray
    used: np.ndarray
    active: np.ndarray
    bandwidth: np.ndarray


@dataclass(frozen=True, eq=False)
class SimulationResult:
    r"""What :func:`simulate` measured.

    Per job :math:`j` (arrays of length :math:`J`): ``completion`` :math:`C_j` (end of the last
    iteration), ``jct`` :math:`C_j - s_j`, ``mean_iteration_time`` :math:`(C_j - s_j)/I_j`,
    ``iteration_time_std`` (population standard deviation of the iteration durations),
    ``alone_iteration_time`` :math:`c_j + \tau_j`, ``mean_comm_time`` (broadcast phase),
    ``straggler_spread_mean`` / ``straggler_spread_max`` (over iterations, of the spread
    :math:`\max_w a_w - \min_w a_w` of the times :math:`a_w` at which worker :math:`w` holds the
    whole update, i.e. its last shard's flow finished) and ``worker_wait_mean`` (mean over
    iterations and workers of :math:`\max_{w'} a_{w'} - a_w`, the time a worker idles waiting for
    the straggler). Per host: ``nic_utilization`` (bytes sent / :math:`B_h \cdot` makespan) and
    ``nic_busy_fraction`` (time with an unfinished flow / makespan). Raw times:
    ``iteration_end`` and ``comm_start`` (shape :math:`J \times \max_j I_j`, NaN past
    :math:`I_j`), ``flow_finish`` (iterations :math:`\times` flows).
    """

    policy: str
    order: tuple[int, ...] | None
    rotation_period: float | None
    coordinated: bool
    jitter: float
    job_names: tuple[str, ...]
    host_names: tuple[str, ...]
    completion: np.ndarray
    jct: np.ndarray
    weights: np.ndarray
    mean_iteration_time: np.ndarray
    iteration_time_std: np.ndarray
    alone_iteration_time: np.ndarray
    mean_comm_time: np.ndarray
    straggler_spread_mean: np.ndarray
    straggler_spread_max: np.ndarray
    worker_wait_mean: np.ndarray
    nic_utilization: np.ndarray
    nic_busy_fraction: np.ndarray
    iteration_end: np.ndarray
    comm_start: np.ndarray
    flow_finish: np.ndarray
    n_events: int
    trace: NicTrace | None = None

    @property
    def makespan(self) -> float:
        r""":math:`\max_j C_j` (time origin 0)."""
        return float(self.completion.max())

    @property
    def mean_jct(self) -> float:
        """Mean JCT over jobs."""
        return float(self.jct.mean())

    @property
    def weighted_jct(self) -> float:
        r""":math:`\sum_j w_j (C_j - s_j) / \sum_j w_j`."""
        return float(self.weights @ self.jct / self.weights.sum())

    def objective(self, name: Objective) -> float:
        """Value of ``"mean-jct"``, ``"weighted-jct"`` or ``"makespan"``."""
        if name == "mean-jct":
            return self.mean_jct
        if name == "weighted-jct":
            return self.weighted_jct
        if name == "makespan":
            return self.makespan
        raise InvalidInstanceError("objective", f"unknown objective {name!r}; known: {OBJECTIVES}")

    def job_rows(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per job."""
        return [
            {
                "job": self.job_names[j],
                "completion": float(self.completion[j]),
                "jct": float(self.jct[j]),
                "mean_iteration_time": float(self.mean_iteration_time[j]),
                "alone_iteration_time": float(self.alone_iteration_time[j]),
                "slowdown": float(self.mean_iteration_time[j] / self.alone_iteration_time[j]),
                "iteration_time_std": float(self.iteration_time_std[j]),
                "mean_comm_time": float(self.mean_comm_time[j]),
                "straggler_spread_mean": float(self.straggler_spread_mean[j]),
                "straggler_spread_max": float(self.straggler_spread_max[j]),
                "worker_wait_mean": float(self.worker_wait_mean[j]),
            }
            for j in range(len(self.job_names))
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no raw per-flow times)."""
        return {
            "policy": self.policy,
            "order": list(self.order) if self.order is not None else None,
            "rotation_period": self.rotation_period,
            "coordinated": self.coordinated,
            "jitter": self.jitter,
            "makespan": self.makespan,
            "mean_jct": self.mean_jct,
            "weighted_jct": self.weighted_jct,
            "mean_straggler_spread": float(self.straggler_spread_mean.mean()),
            "jobs": self.job_rows(),
            "hosts": [
                {
                    "host": self.host_names[h],
                    "nic_utilization": float(self.nic_utilization[h]),
                    "nic_busy_fraction": float(self.nic_busy_fraction[h]),
                }
                for h in range(len(self.host_names))
            ],
            "events": self.n_events,
        }


@dataclass(frozen=True)
class _Layout:
    job_flow_start: np.ndarray
    flow_host: np.ndarray
    flow_bytes: np.ndarray
    flow_worker: np.ndarray
    bandwidth: np.ndarray
    compute: np.ndarray
    start: np.ndarray
    iterations: np.ndarray


def _layout(instance: TensorLightsInstance) -> _Layout:
    """Flows of job ``j``, shard by shard then worker by worker, are contiguous."""
    starts = [0]
    hosts: list[int] = []
    sizes: list[float] = []
    worker: list[int] = []
    for job in instance.jobs:
        share = job.message_bytes / len(job.ps_hosts)
        for h in job.ps_hosts:
            hosts += [h] * job.workers
            sizes += [share] * job.workers
            worker += list(range(job.workers))
        starts.append(len(hosts))
    return _Layout(
        job_flow_start=np.array(starts, dtype=np.int64),
        flow_host=np.array(hosts, dtype=np.int64),
        flow_bytes=np.array(sizes, dtype=np.float64),
        flow_worker=np.array(worker, dtype=np.int64),
        bandwidth=np.array([h.bandwidth for h in instance.hosts], dtype=np.float64),
        compute=np.array([j.compute_time for j in instance.jobs], dtype=np.float64),
        start=np.array([j.start for j in instance.jobs], dtype=np.float64),
        iterations=np.array([j.iterations for j in instance.jobs], dtype=np.int64),
    )


def _check_order(order: Sequence[int], n_jobs: int) -> tuple[int, ...]:
    out = tuple(int(j) for j in order)
    if sorted(out) != list(range(n_jobs)):
        raise InvalidInstanceError(
            "order", f"must be a permutation of 0..{n_jobs - 1}, got {list(out)}"
        )
    return out


def _levels(
    n_hosts: int, order: tuple[int, ...], policy: str, coordinated: bool, seed: int
) -> np.ndarray:
    """Base priority level of every job on every host (0 = most urgent)."""
    n_jobs = len(order)
    rank = np.empty(n_jobs, dtype=np.int64)
    rank[list(order)] = np.arange(n_jobs)
    if policy == "fair":
        return np.zeros((n_hosts, n_jobs), dtype=np.int64)
    if coordinated:
        return np.tile(rank, (n_hosts, 1))
    rng = np.random.default_rng(seed)
    if policy == "priority":
        # Each host ranks its jobs on its own: an independent random order per host.
        return np.array(
            [np.argsort(rng.permutation(n_jobs)) for _ in range(n_hosts)], dtype=np.int64
        )
    # Rotation without coordination: every host runs the same cycle at its own random phase.
    offsets = rng.integers(0, n_jobs, size=n_hosts)
    return ((rank[None, :] + offsets[:, None]) % n_jobs).astype(np.int64)


def simulate(
    instance: TensorLightsInstance,
    policy: Policy = "fair",
    *,
    order: Sequence[int] | None = None,
    rotation_period: float | None = None,
    coordinated: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = False,
    engine: Literal["numba", "python"] = "numba",
) -> SimulationResult:
    r"""Simulate every job to completion under one NIC-sharing policy.

    Parameters
    ----------
    instance : TensorLightsInstance
    policy : {"fair", "priority", "rotate", "one-green"}, default "fair"
        See the module docstring.
    order : sequence of int, optional
        The global job order, most urgent first (default ``0, 1, ..., J-1``, i.e. job-ID order).
        The static order of ``"priority"`` and the starting order of the rotations; ignored by
        ``"fair"``.
    rotation_period : float, optional
        :math:`\Delta > 0` in seconds for ``"rotate"`` and ``"one-green"``; default the median
        standalone iteration time :math:`c_j + \tau_j` of the jobs.
    coordinated : bool, default True
        When False, hosts do not agree: under ``"priority"`` every host draws its own random
        order, under the rotations every host starts the cycle at its own random phase (both
        from ``seed``). Ignored by ``"fair"``.
    jitter : float in [0, 1), default 0
        Per-iteration flow weights are drawn from :math:`U[1 - \text{jitter}, 1 + \text{jitter}]`
        (seeded); flows of one priority level share the NIC in proportion to them.
    seed : int, default 0
    trace : bool, default False
        Record the per-host NIC usage of every segment (:class:`NicTrace`).
    engine : {"numba", "python"}, default "numba"
        The compiled kernel or the plain-Python reference (same results; tests compare them).

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidInstanceError
        Unknown policy, an order that is not a permutation, a bad period or jitter.

    Notes
    -----
    Complexity: :math:`O(E (F + J + H))` for :math:`E` events and :math:`F = \sum_j |S_j| n_j`
    flows. Events are compute ends, flow completions (one per iteration and distinct finishing
    instant) and, for the rotations, period boundaries while a flow is unfinished. Memory
    :math:`O(F \max_j I_j)`: every flow's finishing time (and weight) in every iteration is kept.
    """
    if policy not in _MODES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}; known: {POLICIES}")
    if engine not in ("numba", "python"):
        raise InvalidInstanceError("engine", f"must be 'numba' or 'python', got {engine!r}")
    if not (0.0 <= jitter < 1.0):
        raise InvalidInstanceError("jitter", f"must be in [0, 1), got {jitter}")
    n_jobs = instance.n_jobs
    glob = _check_order(order, n_jobs) if order is not None else tuple(range(n_jobs))
    if policy == "priority" and not coordinated and order is not None:
        raise InvalidInstanceError(
            "order", "an uncoordinated priority policy draws a random order per host; omit order"
        )
    rotating = policy in ("rotate", "one-green")
    period: float | None = None
    if rotating:
        period = (
            float(np.median(instance.alone_iteration_time()))
            if rotation_period is None
            else float(rotation_period)
        )
        if not (math.isfinite(period) and period > 0):
            raise InvalidInstanceError("rotation_period", f"must be finite and > 0, got {period}")
    lay = _layout(instance)
    levels = _levels(instance.n_hosts, glob, policy, coordinated, seed)
    # The order the result reports: none for fair sharing or per-host random orders.
    fair_or_random = policy == "fair" or (policy == "priority" and not coordinated)
    reported = None if fair_or_random else glob
    max_it = int(lay.iterations.max())
    n_flows = len(lay.flow_bytes)
    if jitter > 0:
        rng = np.random.default_rng(seed)
        weights = rng.uniform(1.0 - jitter, 1.0 + jitter, size=(max_it, n_flows))
    else:
        weights = np.ones((max_it, n_flows))
    args = (
        lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start,
        lay.flow_host, lay.flow_bytes, weights, levels, _MODES[policy],
        period if period is not None else 1.0, n_jobs,
    )  # fmt: skip
    if engine == "numba":
        cap = 4 * (n_flows + n_jobs) * max_it + 64 if trace else 0
        out = _k.simulate_kernel(*args, cap)
        if trace and out[5] > cap:
            out = _k.simulate_kernel(*args, int(out[5]))
        iter_end, comm_start, flow_finish, busy_bytes, busy_time, n_seg = out[:6]
        nic_trace = None
        if trace:
            nic_trace = NicTrace(
                times=out[6][: n_seg + 1].copy(),
                used=out[7][:n_seg].copy(),
                active=out[8][:n_seg].astype(bool),
                bandwidth=lay.bandwidth.copy(),
            )
    else:
        ref = _k.simulate_reference(*args)
        iter_end = np.full((n_jobs, max_it), np.nan)
        comm_start = np.full((n_jobs, max_it), np.nan)
        flow_finish = np.full((max_it, n_flows), np.nan)
        for (j, i), v in ref.iter_end.items():
            iter_end[j, i] = v
        for (j, i), v in ref.comm_start.items():
            comm_start[j, i] = v
        for (i, f), v in ref.flow_finish.items():
            flow_finish[i, f] = v
        busy_bytes = np.array(ref.busy_bytes)
        busy_time = np.array(ref.busy_time)
        n_seg = len(ref.segments)
        nic_trace = None
        if trace:
            segs = ref.segments
            nic_trace = NicTrace(
                times=np.array([s[0] for s in segs] + [segs[-1][1] if segs else 0.0]),
                used=np.array([s[2] for s in segs], dtype=np.float64).reshape(n_seg, -1),
                active=np.array([s[3] for s in segs], dtype=np.bool_).reshape(n_seg, -1),
                bandwidth=lay.bandwidth.copy(),
            )
    return _summarise(
        instance, lay, policy, reported, period, coordinated, jitter,
        iter_end, comm_start, flow_finish, busy_bytes, busy_time, int(n_seg), nic_trace,
    )  # fmt: skip


def _summarise(
    instance: TensorLightsInstance,
    lay: _Layout,
    policy: str,
    order: tuple[int, ...] | None,
    period: float | None,
    coordinated: bool,
    jitter: float,
    iter_end: np.ndarray,
    comm_start: np.ndarray,
    flow_finish: np.ndarray,
    busy_bytes: np.ndarray,
    busy_time: np.ndarray,
    n_events: int,
    nic_trace: NicTrace | None,
) -> SimulationResult:
    n_jobs = instance.n_jobs
    completion = np.array([iter_end[j, lay.iterations[j] - 1] for j in range(n_jobs)])
    jct = completion - lay.start
    mean_it = jct / lay.iterations
    it_std = np.zeros(n_jobs)
    comm = np.zeros(n_jobs)
    spread_mean = np.zeros(n_jobs)
    spread_max = np.zeros(n_jobs)
    wait_mean = np.zeros(n_jobs)
    for j, job in enumerate(instance.jobs):
        k = job.iterations
        ends = iter_end[j, :k]
        durations = np.diff(np.concatenate([[job.start], ends]))
        it_std[j] = float(durations.std())
        comm[j] = float(np.mean(ends - comm_start[j, :k]))
        flows = slice(lay.job_flow_start[j], lay.job_flow_start[j + 1])
        # Worker w holds the update when its last shard's flow has finished.
        arrival = flow_finish[:k, flows].reshape(k, len(job.ps_hosts), job.workers).max(axis=1)
        spread = arrival.max(axis=1) - arrival.min(axis=1)
        spread_mean[j] = float(spread.mean())
        spread_max[j] = float(spread.max())
        wait_mean[j] = float(np.mean(arrival.max(axis=1, keepdims=True) - arrival))
    makespan = float(completion.max())
    horizon = makespan if makespan > 0 else 1.0
    return SimulationResult(
        policy=policy,
        order=order,
        rotation_period=period,
        coordinated=coordinated,
        jitter=float(jitter),
        job_names=instance.job_names(),
        host_names=instance.host_names(),
        completion=completion,
        jct=jct,
        weights=np.array([job.weight for job in instance.jobs]),
        mean_iteration_time=mean_it,
        iteration_time_std=it_std,
        alone_iteration_time=instance.alone_iteration_time(),
        mean_comm_time=comm,
        straggler_spread_mean=spread_mean,
        straggler_spread_max=spread_max,
        worker_wait_mean=wait_mean,
        nic_utilization=busy_bytes / (lay.bandwidth * horizon),
        nic_busy_fraction=busy_time / horizon,
        iteration_end=iter_end,
        comm_start=comm_start,
        flow_finish=flow_finish,
        n_events=n_events,
        trace=nic_trace,
    )


def compare_policies(
    instance: TensorLightsInstance,
    policies: Sequence[Policy] = ("fair", "priority", "rotate", "one-green"),
    **options: Any,
) -> dict[str, SimulationResult]:
    """Simulate the same instance under several policies (``options`` go to :func:`simulate`)."""
    return {p: simulate(instance, p, **options) for p in policies}


# --------------------------------------------------------------------------------------------
# Best static priority order
# --------------------------------------------------------------------------------------------


def smith_order(
    instance: TensorLightsInstance, objective: Objective = "weighted-jct"
) -> tuple[int, ...]:
    r"""Jobs by Smith's ratio :math:`I_j \tau_j / w_j` ascending (ties by index).

    :math:`I_j \tau_j` is the job's total NIC time alone. For ``"mean-jct"`` every weight is 1
    (shortest total broadcast time first); for ``"weighted-jct"`` and ``"makespan"`` the job
    weights are used.
    """
    work = instance.alone_comm_time() * np.array([j.iterations for j in instance.jobs])
    if objective == "mean-jct":
        ratio = work
    else:
        ratio = work / np.array([j.weight for j in instance.jobs])
    return tuple(int(j) for j in np.lexsort((np.arange(instance.n_jobs), ratio)))


def smith_rule_is_optimal(instance: TensorLightsInstance, objective: Objective) -> bool:
    r"""Whether :func:`smith_order` is a proven optimal static order for ``objective``.

    True for ``"mean-jct"`` and ``"weighted-jct"`` when every job has one PS shard, all jobs
    start together, and either every compute time is 0 or every job runs one iteration after a
    common compute time.

    Notes
    -----
    Proof. Let every job start at :math:`s` and first need the NIC at :math:`r = s + c`. Under
    strict priority on a host, the most urgent job with an unfinished flow receives the whole
    NIC, and such a job never pauses: with :math:`c_j = 0` its next broadcast starts the instant
    the previous one ends, and with :math:`I_j = 1` there is no next one. So on each host the
    jobs hold the NIC one after another in priority order, and the :math:`k`-th of them
    completes at :math:`C_{\pi(k)} = r + \sum_{l \le k} I_{\pi(l)} \tau_{\pi(l)}`: this is
    :math:`1 \,\|\, \sum w_j C_j` with processing times :math:`I_j \tau_j`, minimised by Smith's
    ratio rule (an adjacent exchange of two jobs out of ratio order lowers the objective).
    Hosts do not interact because every job uses one host, and the restriction of the global
    Smith order to each host is that host's Smith order. Jitter changes how a job's own flows
    share the NIC, not when its last flow finishes. :math:`\square`
    """
    if objective not in ("mean-jct", "weighted-jct"):
        return False
    jobs = instance.jobs
    if any(len(j.ps_hosts) != 1 for j in jobs) or len({j.start for j in jobs}) != 1:
        return False
    if all(j.compute_time == 0 for j in jobs):
        return True
    return all(j.iterations == 1 for j in jobs) and len({j.compute_time for j in jobs}) == 1


@dataclass(frozen=True)
class OrderSearch:
    """Result of :func:`best_static_order`.

    Parameters
    ----------
    objective : str
    best_order : tuple of int
        An optimal static order (most urgent first); the first in lexicographic order among ties.
    best_value, worst_value : float
        Objective of the best and of the worst static order.
    n_orders : int
        Orders evaluated (:math:`J!`).
    rule_order : tuple of int
        :func:`smith_order`.
    rule_value : float
        Its objective value.
    rule_proven : bool
        :func:`smith_rule_is_optimal` for this instance and objective.
    fair_value : float
        The objective under fair sharing, for reference.
    """

    objective: str
    best_order: tuple[int, ...]
    best_value: float
    worst_value: float
    n_orders: int
    rule_order: tuple[int, ...]
    rule_value: float
    rule_proven: bool
    fair_value: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "objective": self.objective,
            "best_order": list(self.best_order),
            "best_value": self.best_value,
            "worst_value": self.worst_value,
            "n_orders": self.n_orders,
            "rule_order": list(self.rule_order),
            "rule_value": self.rule_value,
            "rule_proven": self.rule_proven,
            "rule_gap": self.rule_value / self.best_value - 1.0 if self.best_value > 0 else 0.0,
            "fair_value": self.fair_value,
        }


def _objective_value(
    objective: str, iter_end: np.ndarray, lay: _Layout, weights: np.ndarray
) -> float:
    completion = iter_end[np.arange(len(lay.iterations)), lay.iterations - 1]
    if objective == "makespan":
        return float(completion.max())
    jct = completion - lay.start
    if objective == "mean-jct":
        return float(jct.mean())
    return float(weights @ jct / weights.sum())


def best_static_order(
    instance: TensorLightsInstance,
    objective: Objective = "mean-jct",
    *,
    max_jobs: int = MAX_BRUTE_FORCE_JOBS,
    engine: Literal["numba", "python"] = "numba",
) -> OrderSearch:
    r"""The exact best static priority order, by simulating every permutation.

    All hosts use the same global order (coordinated strict priority, no jitter).

    Parameters
    ----------
    instance : TensorLightsInstance
    objective : {"mean-jct", "weighted-jct", "makespan"}, default "mean-jct"
    max_jobs : int, default 8
        Refuse instances with more jobs (the search is :math:`J!` simulations).
    engine : {"numba", "python"}, default "numba"

    Returns
    -------
    OrderSearch

    Raises
    ------
    InvalidInstanceError
        Unknown objective, or more than ``max_jobs`` jobs.

    Notes
    -----
    Complexity :math:`O(J! \cdot E (F + J + H))`. Where :func:`smith_rule_is_optimal` holds the
    answer is also :func:`smith_order`, in :math:`O(J \log J)`; tests check the two agree.
    """
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {OBJECTIVES}"
        )
    n_jobs = instance.n_jobs
    if n_jobs > max_jobs:
        raise InvalidInstanceError(
            "jobs", f"brute force over {n_jobs}! orders is limited to max_jobs={max_jobs}"
        )
    lay = _layout(instance)
    weights_w = np.array([j.weight for j in instance.jobs])
    max_it = int(lay.iterations.max())
    ones = np.ones((max_it, len(lay.flow_bytes)))

    def evaluate(order: tuple[int, ...]) -> float:
        levels = _levels(instance.n_hosts, order, "priority", True, 0)
        if engine == "numba":
            out = _k.simulate_kernel(
                lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start,
                lay.flow_host, lay.flow_bytes, ones, levels, _k.MODE_PRIORITY, 1.0, n_jobs, 0,
            )  # fmt: skip
            return _objective_value(objective, out[0], lay, weights_w)
        return simulate(instance, "priority", order=order, engine="python").objective(objective)

    best_order: tuple[int, ...] = tuple(range(n_jobs))
    best = math.inf
    worst = -math.inf
    count = 0
    for perm in itertools.permutations(range(n_jobs)):
        value = evaluate(perm)
        count += 1
        if count == 1 or value < best - OBJECTIVE_RTOL * max(1.0, abs(best)):
            best, best_order = value, perm
        worst = max(worst, value)
    rule = smith_order(instance, objective)
    return OrderSearch(
        objective=objective,
        best_order=best_order,
        best_value=best,
        worst_value=worst,
        n_orders=count,
        rule_order=rule,
        rule_value=evaluate(rule),
        rule_proven=smith_rule_is_optimal(instance, objective),
        fair_value=simulate(instance, "fair", engine=engine).objective(objective),
    )
