r"""OASiS job-scheduling instances: parameter-server training jobs arriving on a slotted cluster.

Model (Bao et al., INFOCOM 2018, §III). Time is slotted; slot :math:`t` covers :math:`[t, t+1)`
and the horizon :math:`T` means slots :math:`0..T-1` (DESIGN §2.3). Two disjoint server pools
host workers (:math:`H` servers) and parameter servers (:math:`K` servers), each with a capacity
per named resource. Job :math:`i` arrives at slot :math:`a_i`, trains :math:`E_i` epochs over
:math:`N_i` data chunks of :math:`M_i` minibatches each, and may run at most :math:`N_i` workers
at once.

Units
-----
===================== ======================= ==========================================
field                 unit                    meaning
===================== ======================= ==========================================
``slot_s``            s                       length of one slot
``minibatch_s``       s                       :math:`\tau_i`, gradient computation of one minibatch
``gradient_mb``       MB (:math:`10^6` bytes) :math:`e_i`, gradients pushed = parameters pulled
``bandwidth``         Gbit/s                  the resource named ``bandwidth``: :math:`b_i` per
                                              worker, :math:`B_i` per PS, NIC capacity per server
other resources       any consistent unit     e.g. ``gpu`` (count), ``cpu`` (vCPU), ``memory`` (GB)
===================== ======================= ==========================================

One minibatch takes :math:`\tau_i + 2 e_i / b_i` seconds (compute, push, pull), so one
chunk-epoch needs

.. math:: w_i = M_i \, (\tau_i + 2 e_i / b_i) / \text{slot\_seconds}

worker-slots (:attr:`Job.work_per_chunk`) and the job needs :math:`W_i = E_i N_i w_i`
worker-slots in all (:attr:`Job.total_work`, the right-hand side of constraint (2)).
"""

from __future__ import annotations

import html
import math
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen, parse
from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.tolerances import WORK_TOL
from optsched.utility import Utility, utility_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BANDWIDTH",
    "MAX_COUNT",
    "MAX_VALUE",
    "MIN_DEMAND",
    "WORK_TOL",
    "Job",
    "OasisInstance",
    "OasisServer",
    "instance_schema",
    "load_instance",
]

#: Name of the resource whose per-worker / per-PS demands are :math:`b_i` / :math:`B_i`.
BANDWIDTH = "bandwidth"

#: Largest count field (epochs, minibatches; chunks are also under the array budget): far
#: above any training job, and small enough that products of counts and seconds stay exact
#: integers or finite floats.
MAX_COUNT = 10**12
#: Largest magnitude of a float field (seconds, MB, capacities, demands): sums and products of
#: a few thousand such values stay finite.
MAX_VALUE = 1e15
#: Smallest positive per-worker or per-PS demand: demands below it (e.g. 5e-324) would make
#: utility per unit of resource, and so OASiS's prices, overflow.
MIN_DEMAND = 1e-9

PosInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegFloat = Annotated[float, Field(ge=0, le=MAX_VALUE, allow_inf_nan=False)]


def ceil_work(x: float) -> int:
    """Smallest integer >= ``x`` up to :data:`WORK_TOL` (so ``ceil_work(3 * 0.1) == 1``)."""
    return max(0, math.ceil(x - WORK_TOL * max(1.0, abs(x))))


class OasisServer(Frozen):
    """A physical server with a capacity per resource."""

    name: str | None = Field(default=None, description="Optional label.")
    capacity: dict[str, NonNegFloat] = Field(description="Capacity per resource name.")


class Job(Frozen):
    """One parameter-server training job (OASiS §III)."""

    name: str | None = Field(default=None, description="Optional label (default job<i>).")
    arrival: Annotated[int, Field(ge=0, le=MAX_COUNT)] = Field(
        description="a_i: first slot it may run in."
    )
    epochs: PosInt = Field(description="E_i: training epochs.")
    chunks: PosInt = Field(description="N_i: data chunks; also the cap on concurrent workers.")
    minibatches: PosInt = Field(description="M_i: minibatches per chunk.")
    minibatch_s: NonNegFloat = Field(description="tau_i: compute time of one minibatch (s).")
    gradient_mb: NonNegFloat = Field(description="e_i: gradient (= parameter) size in MB.")
    worker_demand: dict[str, NonNegFloat] = Field(
        description="Demand of one worker per resource; 'bandwidth' is b_i (Gbit/s)."
    )
    ps_demand: dict[str, NonNegFloat] = Field(
        description="Demand of one PS per resource; 'bandwidth' is B_i (Gbit/s)."
    )
    utility: Utility = Field(description="Utility of the job's duration (slots).")

    @property
    def b(self) -> float:
        """Bandwidth reserved per worker, :math:`b_i` (Gbit/s)."""
        return self.worker_demand.get(BANDWIDTH, 0.0)

    @property
    def B(self) -> float:
        """Bandwidth reserved per PS, :math:`B_i` (Gbit/s)."""
        return self.ps_demand.get(BANDWIDTH, 0.0)

    def minibatch_slots(self, slot_s: float) -> float:
        r"""Time of one minibatch in slots: :math:`(\tau_i + 2 e_i / b_i)/\text{slot}`."""
        comm = 2.0 * self.gradient_mb * 8.0 / (1000.0 * self.b)  # MB -> Mbit, Gbit/s -> Mbit/s
        return (self.minibatch_s + comm) / slot_s

    def work_per_chunk(self, slot_s: float) -> float:
        r"""Worker-slots one chunk-epoch needs, :math:`w_i = M_i(\tau_i + 2e_i/b_i)`."""
        return self.minibatches * self.minibatch_slots(slot_s)

    @property
    def chunk_epochs(self) -> int:
        """Workload in chunk-epochs, :math:`E_i N_i`."""
        return self.epochs * self.chunks


class OasisInstance(Frozen):
    """A complete OASiS instance: cluster, horizon and jobs.

    Validation runs on construction (and on :func:`load_instance`); a bad field raises
    :class:`~optsched.errors.InvalidInstanceError` whose message names it, e.g.
    ``jobs[3].epochs: must be >= 1, got 0``.

    Attributes
    ----------
    horizon : int
        :math:`T`: slots ``0..T-1``.
    slot_s : float
        Slot length in seconds.
    resources : tuple of str
        Resource names; must include ``"bandwidth"``.
    worker_servers, ps_servers : tuple of OasisServer
        The :math:`H` worker servers and :math:`K` PS servers.
    jobs : tuple of Job
        Jobs (in any order; online algorithms process them by arrival, ties by index).
    """

    kind: Literal["oasis-instance"] = "oasis-instance"
    horizon: PosInt
    slot_s: Annotated[float, Field(gt=0, le=MAX_VALUE, allow_inf_nan=False)] = 3600.0
    resources: tuple[str, ...] = Field(min_length=1)
    worker_servers: tuple[OasisServer, ...] = Field(min_length=1)
    ps_servers: tuple[OasisServer, ...] = Field(min_length=1)
    jobs: tuple[Job, ...] = ()

    @model_validator(mode="after")
    def _cross_checks(self) -> OasisInstance:
        res = self.resources
        if len(set(res)) != len(res):
            raise InvalidInstanceError("resources", f"duplicate resource names in {list(res)}")
        if BANDWIDTH not in res:
            raise InvalidInstanceError(
                "resources", f"must include {BANDWIDTH!r} (b_i and B_i are its demands)"
            )
        known = set(res)
        for pool in ("worker_servers", "ps_servers"):
            for h, server in enumerate(getattr(self, pool)):
                for r in server.capacity:
                    if r not in known:
                        raise InvalidInstanceError(
                            f"{pool}[{h}].capacity.{r}", f"unknown resource; known: {list(res)}"
                        )
                for r in res:
                    if r not in server.capacity:
                        raise InvalidInstanceError(f"{pool}[{h}].capacity.{r}", "is required")
        self._check_sizes()
        names: set[str] = set()
        for i, job in enumerate(self.jobs):
            where = f"jobs[{i}]"
            if job.arrival >= self.horizon:
                raise InvalidInstanceError(
                    f"{where}.arrival", f"must be < horizon ({self.horizon}), got {job.arrival}"
                )
            for part in ("worker_demand", "ps_demand"):
                demand = getattr(job, part)
                for r in demand:
                    if r not in known:
                        raise InvalidInstanceError(
                            f"{where}.{part}.{r}", f"unknown resource; known: {list(res)}"
                        )
                if demand.get(BANDWIDTH, 0.0) <= 0.0:
                    raise InvalidInstanceError(
                        f"{where}.{part}.{BANDWIDTH}",
                        f"must be > 0, got {demand.get(BANDWIDTH, 0.0)}",
                    )
            if job.b > job.B:
                # Constraints (6) and (7) then only admit zero workers (formulations §1.11 item 9).
                raise InvalidInstanceError(
                    f"{where}.worker_demand.{BANDWIDTH}",
                    f"b = {job.b} exceeds the PS bandwidth B = {job.B} (ps_demand.{BANDWIDTH}); "
                    "such a job can never run",
                )
            self._check_job_numbers(i, job)
            label = job.name if job.name is not None else f"job{i}"
            if label in names:
                raise InvalidInstanceError(f"{where}.name", f"duplicate job name {label!r}")
            names.add(label)
        return self

    def _check_sizes(self) -> None:
        """Refuse derived sizes over the budgets before any array is allocated."""
        T, H, K, R = (
            self.horizon,
            len(self.worker_servers),
            len(self.ps_servers),
            len(self.resources),
        )
        # Price and usage arrays of the online algorithms: (T, H, R) and (T, K, R).
        check_size("horizon", float(T) * (H + K) * R, "max_array_cells")
        # Utility tables (I, T).
        check_size("horizon", float(T) * max(1, len(self.jobs)), "max_array_cells")
        for i, job in enumerate(self.jobs):
            # Work tables of the engines and the oracle have N_i + 1 entries.
            check_size(f"jobs[{i}].chunks", float(job.chunks) + 1, "max_array_cells")

    def _check_job_numbers(self, i: int, job: Job) -> None:
        """Every derived figure of a job is finite, and the job fits on some server."""
        where = f"jobs[{i}]"
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            per_minibatch = job.minibatch_slots(self.slot_s)
            total = job.chunk_epochs * job.minibatches * per_minibatch
        if not math.isfinite(per_minibatch):
            comm_seconds = 2.0 * job.gradient_mb * 8.0 / (1000.0 * job.b)
            if not math.isfinite(comm_seconds):
                raise InvalidInstanceError(
                    f"{where}.worker_demand.{BANDWIDTH}",
                    f"b = {job.b} Gbit/s makes one minibatch's transfer time overflow "
                    f"(gradient_mb = {job.gradient_mb})",
                )
            raise InvalidInstanceError(
                "slot_s",
                f"{self.slot_s} s makes {where}'s minibatch time in slots overflow",
            )
        if not math.isfinite(total):
            raise InvalidInstanceError(
                f"{where}.epochs",
                f"the job's work E*N*M*(tau + 2e/b)/slot_s overflows "
                f"(epochs = {job.epochs}, chunks = {job.chunks}, minibatches = "
                f"{job.minibatches})",
            )
        if not math.isfinite(job.utility.max_value) or job.utility.max_value > MAX_VALUE:
            raise InvalidInstanceError(
                f"{where}.utility", f"must be at most {MAX_VALUE:g}, got {job.utility.max_value}"
            )
        for part, pool, label in (
            ("worker_demand", "worker_servers", "worker"),
            ("ps_demand", "ps_servers", "PS"),
        ):
            demand = getattr(job, part)
            for r, value in demand.items():
                if 0 < value < MIN_DEMAND:
                    raise InvalidInstanceError(
                        f"{where}.{part}.{r}", f"must be 0 or >= {MIN_DEMAND:g}, got {value}"
                    )
            servers = getattr(self, pool)
            need = np.array([demand.get(r, 0.0) for r in self.resources], dtype=np.float64)
            # The rule of max_workers/max_ps (and of the ILP's bounds): at least one fits.
            if not any(
                _fit(np.array([s.capacity[r] for r in self.resources]), need, 1) >= 1
                for s in servers
            ):
                # The same rule placement applies: a task no server can host is an input error.
                raise InvalidInstanceError(
                    f"{where}.{part}",
                    f"one {label} ({dict(demand)}) fits on none of the {len(servers)} "
                    f"{pool}; such a job can never run",
                )

    # ----- derived arrays (cached; the instance is immutable) -------------------------------

    @property
    def n_jobs(self) -> int:
        """Number of jobs :math:`I`."""
        return len(self.jobs)

    def job_name(self, i: int) -> str:
        """Label of job ``i`` (its ``name`` or ``job<i>``)."""
        name = self.jobs[i].name
        return name if name is not None else f"job{i}"

    @cached_property
    def worker_capacity(self) -> np.ndarray:
        """Capacities :math:`c_h^r`, shape (H, R)."""
        return np.array(
            [[s.capacity[r] for r in self.resources] for s in self.worker_servers], dtype=np.float64
        )

    @cached_property
    def ps_capacity(self) -> np.ndarray:
        """Capacities :math:`c_k^r`, shape (K, R)."""
        return np.array(
            [[s.capacity[r] for r in self.resources] for s in self.ps_servers], dtype=np.float64
        )

    @cached_property
    def worker_demand(self) -> np.ndarray:
        """Per-worker demands :math:`w_i^r`, shape (I, R)."""
        return np.array(
            [[j.worker_demand.get(r, 0.0) for r in self.resources] for j in self.jobs],
            dtype=np.float64,
        ).reshape(self.n_jobs, len(self.resources))

    @cached_property
    def ps_demand(self) -> np.ndarray:
        """Per-PS demands :math:`s_i^r`, shape (I, R)."""
        return np.array(
            [[j.ps_demand.get(r, 0.0) for r in self.resources] for j in self.jobs],
            dtype=np.float64,
        ).reshape(self.n_jobs, len(self.resources))

    @cached_property
    def work_per_chunk(self) -> np.ndarray:
        """Worker-slots per chunk-epoch :math:`w_i`, shape (I,)."""
        return np.array([j.work_per_chunk(self.slot_s) for j in self.jobs], dtype=np.float64)

    @cached_property
    def total_work(self) -> np.ndarray:
        """Worker-slots each job needs, :math:`W_i = E_i N_i w_i`, shape (I,)."""
        ce = np.array([j.chunk_epochs for j in self.jobs], dtype=np.float64)
        return ce * self.work_per_chunk

    @cached_property
    def arrivals(self) -> np.ndarray:
        """Arrival slots, shape (I,)."""
        return np.array([j.arrival for j in self.jobs], dtype=np.int64)

    @cached_property
    def utility_tables(self) -> np.ndarray:
        """Utility of completing at the end of each slot, shape (I, T) (0 before arrival)."""
        out = np.zeros((self.n_jobs, self.horizon), dtype=np.float64)
        for i, job in enumerate(self.jobs):
            out[i] = utility_table(job.utility, job.arrival, self.horizon)
        return out

    def max_workers(self, i: int, h: int) -> int:
        """Largest number of job ``i``'s workers that fit on an empty worker server ``h``."""
        return _fit(self.worker_capacity[h], self.worker_demand[i], self.jobs[i].chunks)

    def max_ps(self, i: int, k: int) -> int:
        """Largest number of job ``i``'s PSs that fit on an empty PS server ``k``."""
        return _fit(self.ps_capacity[k], self.ps_demand[i], self.jobs[i].chunks)

    # ----- display -----------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per job, with its derived work.

        Columns: ``job``, ``arrival``, ``epochs``, ``chunks``, ``minibatches``,
        ``minibatch_s``, ``gradient_mb``, ``work_per_chunk`` and ``total_work``
        (worker-slots), ``utility`` (its kind) and ``max_utility``.
        """
        import pandas as pd

        columns = [
            "job",
            "arrival",
            "epochs",
            "chunks",
            "minibatches",
            "minibatch_s",
            "gradient_mb",
            "work_per_chunk",
            "total_work",
            "utility",
            "max_utility",
        ]
        rows = [
            (
                self.job_name(i),
                job.arrival,
                job.epochs,
                job.chunks,
                job.minibatches,
                job.minibatch_s,
                job.gradient_mb,
                float(self.work_per_chunk[i]),
                float(self.total_work[i]),
                job.utility.kind,
                job.utility.max_value,
            )
            for i, job in enumerate(self.jobs)
        ]
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        return (
            f"OasisInstance(jobs={self.n_jobs}, horizon={self.horizon}, "
            f"worker_servers={len(self.worker_servers)}, ps_servers={len(self.ps_servers)}, "
            f"resources={list(self.resources)})"
        )

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def _fit(capacity: np.ndarray, demand: np.ndarray, cap: int) -> int:
    best = cap
    for c, d in zip(capacity, demand, strict=True):
        if d > 0:
            q = float(c) / float(d)  # may be inf for a tiny demand: then the cap decides
            if q < best:
                best = min(best, math.floor(q + WORK_TOL))
    return max(best, 0)


def load_instance(source: str | Path | dict[str, Any]) -> OasisInstance:
    """Load and validate an instance from a JSON/TOML file or a dict.

    The same as :meth:`OasisInstance.load` (a path) or :meth:`OasisInstance.from_dict`.

    Raises
    ------
    InvalidInstanceError
        Unreadable file or any invalid field (named in the message).
    """
    if isinstance(source, (str, Path)):
        return OasisInstance.load(source)
    return parse(OasisInstance, source)


def instance_schema() -> dict[str, Any]:
    """JSON Schema of an OASiS instance file."""
    return OasisInstance.model_json_schema()
