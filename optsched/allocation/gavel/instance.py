r"""The allocation problem of one scheduling round: jobs, GPU types, throughputs.

Heterogeneity-aware allocation policies (Gavel class) decide, for the jobs active in a round, the
fraction of time :math:`X_{mj} \in [0, 1]` job :math:`m` should spend on GPU type :math:`j`. Their
input is the throughput :math:`T_{mj}` (steps/s of job :math:`m`'s whole gang of :math:`s_m` GPUs
on type :math:`j`; 0 where it cannot run), the scale factors :math:`s_m`, the priority weights
:math:`w_m`, the GPUs per type :math:`n_j`, and, for the time-based objectives, the steps each job
has left and its history (time since arrival, time it would have had in isolation).

Space sharing (the "packed" policies of :mod:`optsched.allocation.gavel.packed`) adds, optionally,
each
job's co-location class :attr:`AllocationJob.job_type` and the table
:attr:`AllocationInstance.pair_throughputs`: for two classes :math:`a, b` and each GPU type
:math:`j`, the *normalised* pair throughputs :math:`(f^{a|b}_j, f^{b|a}_j)`, the fraction of its
throughput alone that a job of class :math:`a` keeps while it shares its GPUs of type :math:`j`
with a job of class :math:`b`, and vice versa (Gavel's measured pair rate divided by the rate
alone). Job :math:`m` of class :math:`a` paired with job :math:`m'` of class :math:`b` on type
:math:`j` then runs at :math:`f^{a|b}_j T_{mj}` steps/s. Instances without them are the
unpacked problem unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from optsched import limits
from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = [
    "AllocationInstance",
    "AllocationJob",
    "PairThroughput",
    "instance_schema",
    "load_instance",
]


class AllocationJob(Frozen):
    """One active job of the round."""

    job_id: str = Field(min_length=1, max_length=200)
    """Unique name."""
    throughput_steps_per_s: tuple[float, ...]
    """Steps per second of the job's whole gang on each GPU type (same order as the instance's
    ``gpu_types``); 0 where it cannot run."""
    scale_factor: int = Field(default=1, ge=1, le=1_000_000)
    """GPUs the job's gang uses (all of one type)."""
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Priority weight (larger = more share under the fairness policies)."""
    steps_remaining: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """Steps the job still has to run."""
    time_since_start_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Seconds since the job arrived (finish-time fairness)."""
    isolated_time_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Seconds of progress it would have made so far with its isolated share (finish-time
    fairness's denominator history)."""
    job_type: str | None = Field(default=None, min_length=1, max_length=200)
    """Co-location class for space sharing (e.g. ``"('ResNet-18', 1)"``): the key of
    :attr:`AllocationInstance.pair_throughputs`. ``None``: the job never shares its GPUs."""
    time_to_deadline_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Seconds from now to the job's deadline (its SLO), or ``None`` for no deadline. The
    ``min-cost-slo`` policies require its effective throughput to be at least
    ``steps_remaining`` divided by this."""

    @model_validator(mode="after")
    def _throughputs_finite(self) -> AllocationJob:
        for j, value in enumerate(self.throughput_steps_per_s):
            if not (math.isfinite(value) and value >= 0):
                raise InvalidInstanceError(
                    f"throughput_steps_per_s[{j}]", f"must be a finite number >= 0, got {value}"
                )
        if not any(v > 0 for v in self.throughput_steps_per_s):
            raise InvalidInstanceError("throughput_steps_per_s", "the job can run on no GPU type")
        return self


class PairThroughput(Frozen):
    """Normalised throughputs of two co-location classes sharing the same GPUs, per GPU type.

    Examples
    --------
    >>> PairThroughput(job_types=("a", "b"), normalized=((0.8, 0.6), (0.0, 0.0))).normalized[0]
    (0.8, 0.6)
    """

    job_types: tuple[str, str]
    """The two classes ``(a, b)`` (may be equal: two jobs of the same class)."""
    normalized: tuple[tuple[float, float], ...]
    """Per GPU type (the instance's order): ``(f_a, f_b)``, each job's throughput in the pair
    over its throughput alone on that type. A 0 on either side means the pair cannot share that
    type (e.g. it does not fit in GPU memory)."""

    @model_validator(mode="after")
    def _finite(self) -> PairThroughput:
        a, b = self.job_types
        for j, (fa, fb) in enumerate(self.normalized):
            for side, value in ((0, fa), (1, fb)):
                if not (math.isfinite(value) and value >= 0):
                    raise InvalidInstanceError(
                        f"normalized[{j}][{side}]", f"must be a finite number >= 0, got {value}"
                    )
            if a == b and fa != fb:
                raise InvalidInstanceError(
                    f"normalized[{j}]",
                    f"two jobs of the same class {a!r} must have equal factors, got {fa}, {fb}",
                )
        return self


class AllocationInstance(Frozen):
    """Every input of one round's allocation.

    Examples
    --------
    >>> inst = AllocationInstance(
    ...     gpu_types=("v100", "k80"), capacity=(1, 1),
    ...     jobs=[AllocationJob(job_id="a", throughput_steps_per_s=(4.0, 1.0)),
    ...           AllocationJob(job_id="b", throughput_steps_per_s=(2.0, 1.0))])
    >>> inst.throughputs.tolist()
    [[4.0, 1.0], [2.0, 1.0]]
    """

    kind: str = Field(default="allocation-instance", pattern="^allocation-instance$")
    gpu_types: tuple[str, ...] = Field(min_length=1, max_length=64)
    """GPU type names."""
    capacity: tuple[int, ...]
    """GPUs of each type."""
    jobs: tuple[AllocationJob, ...]
    """The active jobs."""
    pair_throughputs: tuple[PairThroughput, ...] = ()
    """Normalised pair throughputs of co-location classes (space sharing; optional). Each
    unordered pair of classes at most once; pairs not listed cannot share."""
    prices: tuple[float, ...] | None = None
    """US$ per GPU-hour of each type for the cost policies; ``None`` takes
    :data:`~optsched.allocation.gavel.prices.GPU_PRICES_PER_HOUR` by type name."""

    @model_validator(mode="after")
    def _consistent(self) -> AllocationInstance:
        k = len(self.gpu_types)
        if len(set(self.gpu_types)) != k:
            raise InvalidInstanceError("gpu_types", "names must be unique")
        if len(self.capacity) != k:
            raise InvalidInstanceError(
                "capacity", f"needs one entry per GPU type ({k}), got {len(self.capacity)}"
            )
        for j, c in enumerate(self.capacity):
            if c < 0 or c > 10_000_000:
                raise InvalidInstanceError(f"capacity[{j}]", f"must be in [0, 10^7], got {c}")
        if self.prices is not None:
            if len(self.prices) != k:
                raise InvalidInstanceError(
                    "prices", f"needs one entry per GPU type ({k}), got {len(self.prices)}"
                )
            for j, price in enumerate(self.prices):
                if not (math.isfinite(price) and price > 0):
                    raise InvalidInstanceError(
                        f"prices[{j}]", f"must be finite and > 0, got {price}"
                    )
        limits.check_size("jobs", float(len(self.jobs)) * k, "max_model_variables", "variables")
        seen: set[str] = set()
        for i, job in enumerate(self.jobs):
            if len(job.throughput_steps_per_s) != k:
                raise InvalidInstanceError(
                    f"jobs[{i}].throughput_steps_per_s", f"needs one entry per GPU type ({k})"
                )
            if job.job_id in seen:
                raise InvalidInstanceError(f"jobs[{i}].job_id", f"duplicate {job.job_id!r}")
            seen.add(job.job_id)
            fits = any(
                t > 0 and job.scale_factor <= c
                for t, c in zip(job.throughput_steps_per_s, self.capacity, strict=True)
            )
            if not fits:
                raise InvalidInstanceError(
                    f"jobs[{i}].scale_factor",
                    f"{job.scale_factor} GPUs fit on no GPU type it can run on",
                )
        limits.check_size(
            "pair_throughputs",
            float(len(self.pair_throughputs)) * k,
            "max_model_variables",
            "pair entries",
        )
        pairs: set[tuple[str, str]] = set()
        for i, pair in enumerate(self.pair_throughputs):
            if len(pair.normalized) != k:
                raise InvalidInstanceError(
                    f"pair_throughputs[{i}].normalized", f"needs one entry per GPU type ({k})"
                )
            a, b = pair.job_types
            key = (a, b) if a <= b else (b, a)
            if key in pairs:
                raise InvalidInstanceError(
                    f"pair_throughputs[{i}].job_types", f"duplicate pair {key!r}"
                )
            pairs.add(key)
        return self

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def n_types(self) -> int:
        """Number of GPU types."""
        return len(self.gpu_types)

    @cached_property
    def throughputs(self) -> NDArray[np.float64]:
        """:math:`T`, shape (jobs, types)."""
        flat = chain.from_iterable(map(attrgetter("throughput_steps_per_s"), self.jobs))
        count = self.n_jobs * self.n_types
        return np.fromiter(flat, dtype=np.float64, count=count).reshape(self.n_jobs, self.n_types)

    @cached_property
    def scale_factors(self) -> NDArray[np.float64]:
        """:math:`s_m`, shape (jobs,)."""
        return self._column("scale_factor")

    @cached_property
    def weights(self) -> NDArray[np.float64]:
        """:math:`w_m`, shape (jobs,)."""
        return self._column("weight")

    @cached_property
    def capacities(self) -> NDArray[np.float64]:
        """:math:`n_j`, shape (types,)."""
        return np.array(self.capacity, dtype=np.float64)

    @cached_property
    def steps(self) -> NDArray[np.float64]:
        """Steps remaining, shape (jobs,)."""
        return self._column("steps_remaining")

    @cached_property
    def since_start(self) -> NDArray[np.float64]:
        """Seconds since each job arrived, shape (jobs,)."""
        return self._column("time_since_start_s")

    @cached_property
    def isolated_times(self) -> NDArray[np.float64]:
        """Each job's isolated-share history :math:`h_m`, shape (jobs,)."""
        return self._column("isolated_time_s")

    @cached_property
    def isolated_throughputs(self) -> NDArray[np.float64]:
        r""":math:`q_m`, each job's throughput under its isolated share, shape (jobs,).

        :func:`~optsched.allocation.gavel.shares.isolated_throughput` of the measured
        throughputs, kept for the instance: finish-time fairness reads it for every LP of a
        round and for every recomputation of its objective.
        """
        from optsched.allocation.gavel.shares import isolated_throughput

        return isolated_throughput(self.throughputs, self.scale_factors, self.capacities)

    @cached_property
    def deadlines(self) -> NDArray[np.float64]:
        """Seconds to each job's deadline, ``inf`` where it has none, shape (jobs,)."""
        values = (
            math.inf if j.time_to_deadline_s is None else j.time_to_deadline_s for j in self.jobs
        )
        return np.fromiter(values, dtype=np.float64, count=self.n_jobs)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy (pydantic's), without the arrays cached from this instance's jobs.

        ``model_copy(update={"jobs": ...})`` would otherwise carry this instance's cached
        throughputs, steps or deadlines (or any other value kept beside the fields, such as the
        finish-time-fairness terms of :mod:`optsched.allocation.gavel.lp`) into a copy with
        other jobs.
        """
        copied = super().model_copy(update=update, deep=deep)
        fields = type(self).model_fields
        for name in [name for name in copied.__dict__ if name not in fields]:
            del copied.__dict__[name]
        return copied

    def _column(self, field: str) -> NDArray[np.float64]:
        # One C-level pass over the jobs (a list comprehension costs ~3x more at 2,048 jobs).
        values = map(attrgetter(field), self.jobs)
        return np.fromiter(values, dtype=np.float64, count=self.n_jobs)

    @cached_property
    def job_ids(self) -> tuple[str, ...]:
        """The jobs' names, in order."""
        return tuple(map(attrgetter("job_id"), self.jobs))

    @cached_property
    def pair_table(self) -> dict[tuple[str, str], NDArray[np.float64]]:
        """The pair table as ``{(a, b): f}``, ``f[j] = (f_a, f_b)`` on type ``j``.

        Shape (types, 2); both orders of every listed pair (the reversed one with its columns
        swapped).
        """
        table: dict[tuple[str, str], NDArray[np.float64]] = {}
        for pair in self.pair_throughputs:
            a, b = pair.job_types
            f = np.array(pair.normalized, dtype=np.float64).reshape(self.n_types, 2)
            table[(a, b)] = f
            table[(b, a)] = f[:, ::-1].copy()
        return table

    def summary(self) -> dict[str, Any]:
        """Sizes, for reports."""
        return {"jobs": self.n_jobs, "gpu_types": list(self.gpu_types), "gpus": list(self.capacity)}

    def __repr__(self) -> str:
        return (
            f"AllocationInstance(jobs={self.n_jobs}, gpu_types={self.gpu_types}, "
            f"capacity={self.capacity})"
        )


def load_instance(path: str) -> AllocationInstance:
    """Read an allocation instance (JSON or TOML) through the guarded loader."""
    return AllocationInstance.load(path)


def instance_schema() -> dict[str, Any]:
    """JSON Schema of the allocation-instance format."""
    return AllocationInstance.schema()
