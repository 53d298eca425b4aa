r"""The Optimus allocation problem of one scheduling interval: jobs, their models, the cluster.

Every job :math:`j` has :math:`Q_j` steps left (given, or derived from its convergence curve,
:class:`ConvergenceSpec`) and a speed model :math:`f_j(p, w)`
(:mod:`optsched.allocation.optimus.models`);
one of its parameter servers (PSs) demands :math:`s_j^r` and one of its workers :math:`d_j^r` of
each resource :math:`r` (GPUs, CPU cores, memory ...) of which the cluster has :math:`C^r`. A job
runs with :math:`1 \le p_j \le \bar P_j` PSs and :math:`1 \le w_j \le \bar W_j` workers. The
instance is refused unless every job's smallest allocation (one PS and one worker) fits at once,
so that every job can make progress and the total remaining time is finite.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from optsched import limits
from optsched._validation import Frozen
from optsched.allocation.optimus.models import N_THETA, SpeedKind, convergence_step, speed
from optsched.errors import InvalidInstanceError
from optsched.tolerances import FIT_TOL

__all__ = ["ConvergenceSpec", "OptimusInstance", "OptimusJob"]


class ConvergenceSpec(Frozen):
    r"""A job's (fitted) convergence curve and where it stands on it.

    The job converges at :func:`~optsched.allocation.optimus.models.convergence_step` (capped by
    ``max_steps``); it has done ``progress`` steps, so :math:`Q = \min(k^*, \text{max\_steps}) -
    \text{progress}` are left.
    """

    beta: tuple[float, float, float]
    r""":math:`(\beta_0, \beta_1, \beta_2)`, nonnegative, :math:`\beta_1 > 0`."""
    progress: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Steps done so far."""
    threshold: float = Field(gt=0, allow_inf_nan=False)
    r"""Loss drop :math:`\delta` below which the job counts as converged."""
    window: float = Field(gt=0, allow_inf_nan=False)
    r"""Steps :math:`\Delta` over which the drop is measured."""
    max_steps: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Cap on the convergence step (Optimus caps at 100 epochs)."""

    @model_validator(mode="after")
    def _beta(self) -> ConvergenceSpec:
        for i, v in enumerate(self.beta):
            if not (math.isfinite(v) and v >= 0):
                raise InvalidInstanceError(f"beta[{i}]", f"must be a finite number >= 0, got {v}")
        if self.beta[1] <= 0:
            raise InvalidInstanceError("beta[1]", "must be > 0 (the loss at step 0 is finite)")
        return self

    @property
    def converge_at(self) -> float:
        """The step at which the job converges (capped)."""
        k = convergence_step(self.beta, self.threshold, self.window)
        return k if self.max_steps is None else min(k, self.max_steps)

    @property
    def remaining(self) -> float:
        """Steps left (0 when converged)."""
        return max(0.0, self.converge_at - self.progress)


class OptimusJob(Frozen):
    """One job: its work left, its speed model and its task demands."""

    job_id: str = Field(min_length=1, max_length=200)
    """Unique name."""
    remaining_steps: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Steps left :math:`Q_j`, when given directly (else from ``convergence``)."""
    convergence: ConvergenceSpec | None = None
    """The convergence curve :math:`Q_j` is derived from (exactly one of the two is given)."""
    speed_kind: SpeedKind = "async"
    """Which speed model (:mod:`optsched.allocation.optimus.models`)."""
    theta: tuple[float, ...]
    r"""Its coefficients :math:`\theta \ge 0` (4 ``async``, 5 ``sync``, 3 ``colocated``)."""
    batch: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Global batch size :math:`M` (``sync`` only)."""
    worker_demand: tuple[float, ...]
    """Demand :math:`d_j^r` of one worker for each resource (instance order)."""
    ps_demand: tuple[float, ...]
    """Demand :math:`s_j^r` of one PS for each resource."""
    max_workers: int = Field(default=16, ge=1, le=100_000)
    r""":math:`\bar W_j`."""
    max_ps: int = Field(default=16, ge=1, le=100_000)
    r""":math:`\bar P_j` (1 for ``colocated``: the PS role lives on the workers)."""

    @model_validator(mode="after")
    def _consistent(self) -> OptimusJob:
        if (self.remaining_steps is None) == (self.convergence is None):
            raise InvalidInstanceError(
                "remaining_steps", "give exactly one of remaining_steps and convergence"
            )
        if self.convergence is not None and not self.convergence.remaining > 0:
            raise InvalidInstanceError(
                "convergence", "the job has converged (no steps left); leave it out"
            )
        n = N_THETA[self.speed_kind]
        if len(self.theta) != n:
            raise InvalidInstanceError(
                "theta", f"the {self.speed_kind} model has {n} coefficients, got {len(self.theta)}"
            )
        for i, v in enumerate(self.theta):
            if not (math.isfinite(v) and v >= 0):
                raise InvalidInstanceError(f"theta[{i}]", f"must be a finite number >= 0, got {v}")
        if not any(v > 0 for v in self.theta):
            raise InvalidInstanceError("theta", "at least one coefficient must be > 0")
        for name in ("worker_demand", "ps_demand"):
            for i, v in enumerate(getattr(self, name)):
                if not (math.isfinite(v) and v >= 0):
                    raise InvalidInstanceError(
                        f"{name}[{i}]", f"must be a finite number >= 0, got {v}"
                    )
        if self.speed_kind == "colocated" and self.max_ps != 1:
            raise InvalidInstanceError(
                "max_ps", "must be 1 for the colocated model (PSs live on the workers)"
            )
        return self

    @property
    def remaining(self) -> float:
        """:math:`Q_j`."""
        if self.remaining_steps is not None:
            return self.remaining_steps
        assert self.convergence is not None
        return self.convergence.remaining

    def speed(self, ps: int, workers: int) -> float:
        """:math:`f_j(p, w)`, steps per second."""
        return float(speed(self.speed_kind, self.theta, [ps], [workers], self.batch)[0])

    def remaining_time(self, ps: int, workers: int) -> float:
        """:math:`Q_j / f_j(p, w)`, seconds."""
        return self.remaining / self.speed(ps, workers)


class OptimusInstance(Frozen):
    """Every input of one interval's allocation.

    Examples
    --------
    >>> job = OptimusJob(job_id="a", remaining_steps=1000.0, theta=(0.1, 0.05, 0.0, 0.0),
    ...                  worker_demand=(1.0, 2.0), ps_demand=(0.0, 1.0), max_workers=4, max_ps=2)
    >>> inst = OptimusInstance(resources=("gpu", "cpu"), capacity=(4.0, 16.0), jobs=[job])
    >>> round(inst.jobs[0].remaining_time(1, 1), 6)
    150.0
    """

    kind: str = Field(default="optimus-instance", pattern="^optimus-instance$")
    resources: tuple[str, ...] = Field(min_length=1, max_length=64)
    """Resource names (``gpu``, ``cpu``, ``mem`` ...)."""
    capacity: tuple[float, ...]
    """:math:`C^r` of each resource."""
    jobs: tuple[OptimusJob, ...]
    """The jobs to allocate."""

    @model_validator(mode="after")
    def _consistent(self) -> OptimusInstance:
        k = len(self.resources)
        if len(set(self.resources)) != k:
            raise InvalidInstanceError("resources", "names must be unique")
        if len(self.capacity) != k:
            raise InvalidInstanceError(
                "capacity", f"needs one entry per resource ({k}), got {len(self.capacity)}"
            )
        for r, c in enumerate(self.capacity):
            if not (math.isfinite(c) and c >= 0):
                raise InvalidInstanceError(
                    f"capacity[{r}]", f"must be a finite number >= 0, got {c}"
                )
        choices = sum(float(j.max_ps) * j.max_workers for j in self.jobs)
        limits.check_size("jobs", choices, "max_model_variables", "(job, ps, workers) choices")
        seen: set[str] = set()
        least = np.zeros(k)
        for i, job in enumerate(self.jobs):
            if job.job_id in seen:
                raise InvalidInstanceError(f"jobs[{i}].job_id", f"duplicate {job.job_id!r}")
            seen.add(job.job_id)
            for name in ("worker_demand", "ps_demand"):
                if len(getattr(job, name)) != k:
                    raise InvalidInstanceError(
                        f"jobs[{i}].{name}", f"needs one entry per resource ({k})"
                    )
            least += np.asarray(job.worker_demand) + np.asarray(job.ps_demand)
        for r, c in enumerate(self.capacity):
            if least[r] > c + FIT_TOL * max(1.0, c):
                raise InvalidInstanceError(
                    f"capacity[{r}]",
                    f"{self.resources[r]}: one PS and one worker per job need {least[r]:.6g}, "
                    f"only {c:.6g} exist",
                )
        return self

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @cached_property
    def capacities(self) -> NDArray[np.float64]:
        """:math:`C`, shape (resources,)."""
        return np.array(self.capacity, dtype=np.float64)

    @cached_property
    def remaining(self) -> NDArray[np.float64]:
        """:math:`Q`, shape (jobs,)."""
        return np.array([j.remaining for j in self.jobs], dtype=np.float64)

    def summary(self) -> dict[str, Any]:
        """Sizes, for reports."""
        return {
            "jobs": self.n_jobs,
            "resources": list(self.resources),
            "capacity": list(self.capacity),
        }

    def __repr__(self) -> str:
        return (
            f"OptimusInstance(jobs={self.n_jobs}, resources={self.resources}, "
            f"capacity={self.capacity})"
        )
