r"""Independent check of an Optimus allocation, recomputed from the definitions.

Shares no code with the MILP or the greedy: the speed formulas are written out again here, as
stated on the formulation page. Each constraint is one function named as there, and
:data:`CONSTRAINTS` maps every name to its function: ``shape`` (jobs differ from the
instance's), ``integral`` (a count that is not an integer), ``ps_range`` (:math:`1 \le p_j \le
\bar P_j`), ``worker_range`` (:math:`1 \le w_j \le \bar W_j`), ``capacity``
(:math:`\sum_j s_j^r p_j + d_j^r w_j \le C^r`). The objective is the total remaining time
:math:`\sum_j Q_j / f_j(p_j, w_j)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from optsched.allocation.optimus.instance import OptimusInstance, OptimusJob
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL

__all__ = ["CONSTRAINTS", "validate"]


def _seconds_per_step(job: OptimusJob, p: int, w: int) -> float:
    """Wall seconds per step of the job (the inverse of its speed), from the model's formula."""
    t = job.theta
    if job.speed_kind == "async":
        # w workers each take (t0 + t1 w/p + t2 w + t3 p) per mini-batch: w steps per that time.
        return (t[0] + t[1] * w / p + t[2] * w + t[3] * p) / w
    if job.speed_kind == "sync":
        return t[0] * job.batch / w + t[1] + t[2] * w / p + t[3] * w + t[4] * p
    return t[0] / w + t[1] + t[2] * w


def _is_count(value: object) -> bool:
    """Whether ``value`` is an integer count (a bool is not)."""
    return not isinstance(value, bool) and float(value).is_integer()  # type: ignore[arg-type]


def _counted(
    instance: OptimusInstance, solution: OptimusAllocation
) -> list[tuple[OptimusJob, int, int]]:
    """``(job, ps, workers)`` of every job whose two counts are integers.

    The others are reported as ``integral`` and take no further part.
    """
    return [
        (job, int(p), int(w))
        for job, p, w in zip(instance.jobs, solution.ps, solution.workers, strict=True)
        if _is_count(p) and _is_count(w)
    ]


def shape(instance: OptimusInstance, solution: OptimusAllocation) -> list[Violation]:
    """``shape``: one PS and one worker count per job of the instance, in its order."""
    ids = [j.job_id for j in instance.jobs]
    n = len(ids)
    if list(solution.job_ids) != ids or len(solution.ps) != n or len(solution.workers) != n:
        return [Violation("shape", "job ids or counts differ from the instance's jobs")]
    return []


def integral(instance: OptimusInstance, solution: OptimusAllocation) -> list[Violation]:
    r"""``integral``: :math:`p_j, w_j \in \mathbb Z`."""
    return [
        Violation("integral", f"{job.job_id}: {role} = {value!r}", {"job": job.job_id})
        for job, p, w in zip(instance.jobs, solution.ps, solution.workers, strict=True)
        for role, value in (("ps", p), ("workers", w))
        if not _is_count(value)
    ]


def ps_range(instance: OptimusInstance, solution: OptimusAllocation) -> list[Violation]:
    r"""``ps_range``: :math:`1 \le p_j \le \bar P_j`."""
    return [
        Violation(
            "ps_range", f"{job.job_id}: {p} PSs, allowed 1..{job.max_ps}", {"job": job.job_id}
        )
        for job, p, _ in _counted(instance, solution)
        if not 1 <= p <= job.max_ps
    ]


def worker_range(instance: OptimusInstance, solution: OptimusAllocation) -> list[Violation]:
    r"""``worker_range``: :math:`1 \le w_j \le \bar W_j`."""
    return [
        Violation(
            "worker_range",
            f"{job.job_id}: {w} workers, allowed 1..{job.max_workers}",
            {"job": job.job_id},
        )
        for job, _, w in _counted(instance, solution)
        if not 1 <= w <= job.max_workers
    ]


def capacity(instance: OptimusInstance, solution: OptimusAllocation) -> list[Violation]:
    r"""``capacity``: :math:`\sum_j s_j^r p_j + d_j^r w_j \le C^r` for every resource."""
    counted = _counted(instance, solution)
    out: list[Violation] = []
    for r, name in enumerate(instance.resources):
        used = sum(job.ps_demand[r] * p + job.worker_demand[r] * w for job, p, w in counted)
        cap = instance.capacity[r]
        if used > cap + CAPACITY_TOL * max(1.0, cap):
            out.append(
                Violation(
                    "capacity",
                    f"{name}: {used:.9g} allocated, {cap:.9g} exist",
                    {"resource": name},
                    used - cap,
                )
            )
    return out


#: Every constraint the validator checks, by its name on the formulation page, in check order.
CONSTRAINTS: dict[str, Callable[[OptimusInstance, OptimusAllocation], list[Violation]]] = {
    "shape": shape,
    "integral": integral,
    "ps_range": ps_range,
    "worker_range": worker_range,
    "capacity": capacity,
}


def validate(instance: OptimusInstance, solution: OptimusAllocation) -> Report:
    r"""Check ``solution`` against ``instance`` and recompute the total remaining time.

    Returns
    -------
    Report
        Every violation of :data:`CONSTRAINTS` (only ``shape`` when the allocation is not laid
        out over the instance's jobs); ``objective`` is :math:`\sum_j Q_j / f_j(p_j, w_j)`
        (seconds) when nothing is violated; ``details["remaining_time"]`` the per-job terms.
    """
    out = shape(instance, solution)
    if out:
        return Report(out)
    for name, check in CONSTRAINTS.items():
        if name != "shape":
            out += check(instance, solution)
    if out:
        return Report(out)
    terms = {
        job.job_id: job.remaining * _seconds_per_step(job, p, w)
        for job, p, w in _counted(instance, solution)
    }
    total = math.fsum(terms.values())
    return Report(out, objective=total, details={"remaining_time": terms})
