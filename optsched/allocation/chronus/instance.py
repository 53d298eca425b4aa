r"""The decision of one lease boundary: future leases, GPUs per lease, SLO and best-effort jobs.

Chronus (Gao et al., SoCC 2021) runs training jobs on *leases*: the cluster is granted in terms of
fixed length, and at every lease boundary the scheduler decides which SLO jobs it admits
(guarantees to finish by their deadline) and which jobs hold GPUs during each of the next
:math:`L` leases. Everything here is integral, so that feasibility is decided exactly:

* a lease :math:`\ell \in \{0, \dots, L-1\}` has :math:`C_{\ell k}` GPUs of type :math:`k`;
* a job :math:`j` runs on its whole gang of :math:`G_j` GPUs of one type in a lease, or not at
  all, and then does :math:`s_{jk}` steps (its *speed per lease* on type :math:`k`; 0 where it
  cannot run); it has :math:`R_j` steps left;
* an SLO job must finish by the end of lease :math:`d_j` (its deadline, a lease index);
  ``guaranteed`` marks a job admitted at an earlier boundary, which must stay admitted;
* a best-effort job has a weight :math:`w_b > 0` and no deadline.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import Field, model_validator

from optsched import limits
from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = ["BestEffortJob", "LeaseInstance", "SLOJob", "instance_schema", "load_instance"]

#: Largest remaining work or speed, in steps: every sum the models and the validator form stays
#: an exactly representable integer in a float (at most 10^4 leases x 10^11 < 2^53).
MAX_STEPS = 10**11
#: Most future leases in one decision.
MAX_LEASES = 10_000


class _Job(Frozen):
    job_id: str = Field(min_length=1, max_length=200)
    """Unique name (unique across SLO and best-effort jobs)."""
    gang: int = Field(ge=1, le=1_000_000)
    """:math:`G_j`: GPUs the job holds whenever it runs (all of one type)."""
    remaining: int = Field(ge=1, le=MAX_STEPS)
    """:math:`R_j`: steps left."""
    speed: tuple[int, ...]
    """:math:`s_{jk}`: steps done in one lease on the whole gang of each GPU type (instance
    order); 0 where the job cannot run."""

    @model_validator(mode="after")
    def _speeds(self) -> _Job:
        for k, v in enumerate(self.speed):
            if v < 0 or v > MAX_STEPS:
                raise InvalidInstanceError(f"speed[{k}]", f"must be in [0, 10^11], got {v}")
        if not any(v > 0 for v in self.speed):
            raise InvalidInstanceError("speed", "the job runs on no GPU type")
        return self


class SLOJob(_Job):
    """A job with a deadline (service-level objective)."""

    deadline: int = Field(ge=0, le=MAX_LEASES - 1)
    """:math:`d_j`: the last lease (0-based) by whose end the job must be finished."""
    guaranteed: bool = False
    """Admitted at an earlier boundary: it must stay admitted."""


class BestEffortJob(_Job):
    """A job without a deadline."""

    weight: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    """:math:`w_b`: weight of its progress in the tie-breaking term."""


class LeaseInstance(Frozen):
    """Every input of one lease boundary's decision.

    Examples
    --------
    >>> inst = LeaseInstance(
    ...     gpu_types=("v100",), capacity=((2,), (2,)),
    ...     slo_jobs=[SLOJob(job_id="a", gang=2, remaining=10, speed=(5,), deadline=1)],
    ... )
    >>> inst.n_leases, inst.n_types, [j.job_id for j in inst.slo_jobs]
    (2, 1, ['a'])
    """

    kind: str = Field(default="chronus-instance", pattern="^chronus-instance$")
    gpu_types: tuple[str, ...] = Field(min_length=1, max_length=64)
    """GPU type names."""
    capacity: tuple[tuple[int, ...], ...] = Field(min_length=1, max_length=MAX_LEASES)
    """:math:`C_{\\ell k}`: GPUs of each type (inner) in each future lease (outer); the number
    of rows is the horizon :math:`L`."""
    lease_s: float = Field(default=1200.0, gt=0, le=1e9, allow_inf_nan=False)
    """Length of a lease (reported, not used by the models: speeds are per lease)."""
    slo_jobs: tuple[SLOJob, ...] = ()
    """Jobs with deadlines."""
    best_effort: tuple[BestEffortJob, ...] = ()
    """Jobs without deadlines."""

    @model_validator(mode="after")
    def _consistent(self) -> LeaseInstance:
        k = len(self.gpu_types)
        if len(set(self.gpu_types)) != k:
            raise InvalidInstanceError("gpu_types", "names must be unique")
        for ell, row in enumerate(self.capacity):
            if len(row) != k:
                raise InvalidInstanceError(
                    f"capacity[{ell}]", f"needs one entry per GPU type ({k}), got {len(row)}"
                )
            for t, c in enumerate(row):
                if c < 0 or c > 10_000_000:
                    raise InvalidInstanceError(
                        f"capacity[{ell}][{t}]", f"must be in [0, 10^7], got {c}"
                    )
        n_jobs = len(self.slo_jobs) + len(self.best_effort)
        limits.check_size(
            "slo_jobs",
            float(n_jobs) * len(self.capacity) * k,
            "max_model_variables",
            "job-lease-type variables",
        )
        seen: set[str] = set()
        groups: tuple[tuple[str, tuple[SLOJob, ...] | tuple[BestEffortJob, ...]], ...] = (
            ("slo_jobs", self.slo_jobs),
            ("best_effort", self.best_effort),
        )
        for name, jobs in groups:
            for i, job in enumerate(jobs):
                if len(job.speed) != k:
                    raise InvalidInstanceError(
                        f"{name}[{i}].speed", f"needs one entry per GPU type ({k})"
                    )
                if job.job_id in seen:
                    raise InvalidInstanceError(f"{name}[{i}].job_id", f"duplicate {job.job_id!r}")
                seen.add(job.job_id)
                if isinstance(job, SLOJob) and job.deadline >= len(self.capacity):
                    raise InvalidInstanceError(
                        f"{name}[{i}].deadline",
                        f"lease {job.deadline} is past the horizon of {len(self.capacity)} leases",
                    )
        return self

    @property
    def n_leases(self) -> int:
        """:math:`L`, the number of future leases."""
        return len(self.capacity)

    @property
    def n_types(self) -> int:
        """Number of GPU types."""
        return len(self.gpu_types)

    @cached_property
    def guaranteed(self) -> frozenset[str]:
        """Ids of the SLO jobs that must stay admitted."""
        return frozenset(j.job_id for j in self.slo_jobs if j.guaranteed)

    @cached_property
    def epsilon(self) -> float:
        r""":math:`\varepsilon = 1 / (1 + \sum_b w_b)`, the weight of best-effort progress.

        The best-effort term :math:`\sum_b w_b f_b` with :math:`f_b \in [0, 1]` is at most
        :math:`\sum_b w_b`, so :math:`\varepsilon \sum_b w_b f_b < 1`: no amount of best-effort
        progress is worth one admitted SLO job.
        """
        return 1.0 / (1.0 + sum(b.weight for b in self.best_effort))

    def summary(self) -> dict[str, Any]:
        """Sizes, for reports."""
        return {
            "leases": self.n_leases,
            "gpu_types": list(self.gpu_types),
            "slo_jobs": len(self.slo_jobs),
            "best_effort": len(self.best_effort),
        }

    def __repr__(self) -> str:
        return (
            f"LeaseInstance(leases={self.n_leases}, gpu_types={self.gpu_types}, "
            f"slo_jobs={len(self.slo_jobs)}, best_effort={len(self.best_effort)})"
        )


def load_instance(path: str) -> LeaseInstance:
    """Read a lease instance (JSON or TOML) through the guarded loader."""
    return LeaseInstance.load(path)


def instance_schema() -> dict[str, Any]:
    """JSON Schema of the chronus-instance format."""
    return LeaseInstance.schema()
