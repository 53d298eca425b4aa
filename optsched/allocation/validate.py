"""Independent check of an allocation: the base constraints, recomputed from the definitions.

Shares no code with the LP builders: it reads the instance's throughputs, scale factors and
capacities and the allocation's fractions, and lists every violated constraint by the names of
the formulation page (``nonnegative``, ``job_time``, ``type_capacity``, ``gang_fits``, and
``slo`` for the deadline policies).
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.instance import AllocationInstance
from optsched.allocation.solution import Allocation
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL

__all__ = ["validate"]


def validate(
    instance: AllocationInstance, allocation: Allocation, objective: str | None = None
) -> Report:
    """Check ``allocation`` against ``instance``; recompute ``objective`` if named.

    Parameters
    ----------
    instance : AllocationInstance
    allocation : Allocation
    objective : str, optional
        A policy name of :data:`~optsched.allocation.lp.POLICIES`; its value is recomputed into
        ``report.objective``.

    Returns
    -------
    Report
    """
    out: list[Violation] = []
    x = np.asarray(allocation.fractions, dtype=np.float64)
    jobs = [j.job_id for j in instance.jobs]
    if list(allocation.job_ids) != jobs or list(allocation.gpu_types) != list(instance.gpu_types):
        out.append(Violation("shape", "job ids or GPU types differ from the instance's"))
        return Report(out)
    if x.shape != (len(jobs), len(instance.gpu_types)) or not np.isfinite(x).all():
        out.append(Violation("shape", f"fractions must be finite, shape {len(jobs)} x types"))
        return Report(out)
    for m, job in enumerate(instance.jobs):
        for j, gpu in enumerate(instance.gpu_types):
            value = x[m, j]
            where = {"job": job.job_id, "gpu_type": gpu}
            if value < -CAPACITY_TOL:
                out.append(Violation("nonnegative", f"X[{job.job_id}, {gpu}] = {value}", where))
            cannot = job.throughput[j] <= 0 or job.scale_factor > instance.capacity[j]
            if cannot and value > CAPACITY_TOL:
                out.append(
                    Violation(
                        "gang_fits",
                        f"{job.job_id} gets {value:.6g} of {gpu}, where it cannot run",
                        where,
                        value,
                    )
                )
        total = float(x[m].sum())
        if total > 1 + CAPACITY_TOL:
            out.append(
                Violation(
                    "job_time",
                    f"{job.job_id} is allocated {total:.9g} > 1 of the round",
                    {"job": job.job_id},
                    total - 1,
                )
            )
    for j, gpu in enumerate(instance.gpu_types):
        used = sum(job.scale_factor * x[m, j] for m, job in enumerate(instance.jobs))
        cap = instance.capacity[j]
        if used > cap + CAPACITY_TOL * max(1.0, cap):
            out.append(
                Violation(
                    "type_capacity",
                    f"{gpu}: {used:.9g} GPUs allocated, {cap} exist",
                    {"gpu_type": gpu},
                    used - cap,
                )
            )
    if objective is not None and objective.startswith("min-cost-slo"):
        out += _late_jobs(instance, x, aware=objective.endswith("-perf"))
    value = None
    if objective is not None and not out:
        from optsched.allocation.lp import POLICIES, objective_value

        kind, aware = POLICIES[objective]
        value = objective_value(instance, x, kind, aware)
    return Report(out, objective=value)


def _late_jobs(instance: AllocationInstance, x: np.ndarray, *, aware: bool) -> list[Violation]:
    """``slo``: every job with a deadline and steps left gets at least steps / time-to-deadline.

    The throughput is the policy's own: measured per type (``-perf``), else the job's speed on
    the first type (or its best, where it cannot run there) on every type it can run on.
    """
    out: list[Violation] = []
    for m, job in enumerate(instance.jobs):
        due = job.time_to_deadline
        if due is None or job.steps_remaining <= 0:
            continue
        speeds = list(job.throughput)
        if not aware:
            one = speeds[0] if speeds[0] > 0 else max(speeds)
            speeds = [
                one if (s > 0 and job.scale_factor <= c) else 0.0
                for s, c in zip(speeds, instance.capacity, strict=True)
            ]
        theta = float(sum(s * v for s, v in zip(speeds, x[m], strict=True)))
        need = job.steps_remaining / due if due > 0 else float("inf")
        if theta < need * (1 - CAPACITY_TOL) - CAPACITY_TOL:
            out.append(
                Violation(
                    "slo",
                    f"{job.job_id} runs {theta:.9g} steps/s, its deadline needs {need:.9g}",
                    {"job": job.job_id},
                    need - theta,
                )
            )
    return out
