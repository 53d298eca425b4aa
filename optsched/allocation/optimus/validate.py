r"""Independent check of an Optimus allocation, recomputed from the definitions.

Shares no code with the MILP or the greedy: the speed formulas are written out again here, as
stated on the formulation page. Violations are named as there: ``shape`` (jobs differ from the
instance's), ``integral`` (a count that is not an integer), ``ps_range`` (:math:`1 \le p_j \le
\bar P_j`), ``worker_range`` (:math:`1 \le w_j \le \bar W_j`), ``capacity``
(:math:`\sum_j s_j^r p_j + d_j^r w_j \le C^r`). The objective is the total remaining time
:math:`\sum_j Q_j / f_j(p_j, w_j)`.
"""

from __future__ import annotations

import math

from optsched.allocation.optimus.instance import OptimusInstance, OptimusJob
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL

__all__ = ["validate"]


def _seconds_per_step(job: OptimusJob, p: int, w: int) -> float:
    """Wall seconds per step of the job (the inverse of its speed), from the model's formula."""
    t = job.theta
    if job.speed_kind == "async":
        # w workers each take (t0 + t1 w/p + t2 w + t3 p) per mini-batch: w steps per that time.
        return (t[0] + t[1] * w / p + t[2] * w + t[3] * p) / w
    if job.speed_kind == "sync":
        return t[0] * job.batch / w + t[1] + t[2] * w / p + t[3] * w + t[4] * p
    return t[0] / w + t[1] + t[2] * w


def validate(instance: OptimusInstance, allocation: OptimusAllocation) -> Report:
    r"""Check ``allocation`` against ``instance`` and recompute the total remaining time.

    Returns
    -------
    Report
        ``objective`` is :math:`\sum_j Q_j / f_j(p_j, w_j)` (seconds) when nothing is violated;
        ``details["remaining_time"]`` the per-job terms.
    """
    out: list[Violation] = []
    ids = [j.job_id for j in instance.jobs]
    n = len(ids)
    if list(allocation.job_ids) != ids or len(allocation.ps) != n or len(allocation.workers) != n:
        out.append(Violation("shape", "job ids or counts differ from the instance's jobs"))
        return Report(out)
    used = [0.0] * len(instance.resources)
    for job, p, w in zip(instance.jobs, allocation.ps, allocation.workers, strict=True):
        where = {"job": job.job_id}
        bad = False
        for role, value in (("ps", p), ("workers", w)):
            if isinstance(value, bool) or not float(value).is_integer():
                out.append(Violation("integral", f"{job.job_id}: {role} = {value!r}", where))
                bad = True
        if bad:
            continue
        if not 1 <= p <= job.max_ps:
            out.append(
                Violation("ps_range", f"{job.job_id}: {p} PSs, allowed 1..{job.max_ps}", where)
            )
        if not 1 <= w <= job.max_workers:
            out.append(
                Violation(
                    "worker_range",
                    f"{job.job_id}: {w} workers, allowed 1..{job.max_workers}",
                    where,
                )
            )
        for r in range(len(used)):
            used[r] += job.ps_demand[r] * p + job.worker_demand[r] * w
    for r, name in enumerate(instance.resources):
        cap = instance.capacity[r]
        if used[r] > cap + CAPACITY_TOL * max(1.0, cap):
            out.append(
                Violation(
                    "capacity",
                    f"{name}: {used[r]:.9g} allocated, {cap:.9g} exist",
                    {"resource": name},
                    used[r] - cap,
                )
            )
    if out:
        return Report(out)
    terms = {
        job.job_id: job.remaining * _seconds_per_step(job, int(p), int(w))
        for job, p, w in zip(instance.jobs, allocation.ps, allocation.workers, strict=True)
    }
    total = math.fsum(terms.values())
    return Report(out, objective=total, details={"remaining_time": terms})
