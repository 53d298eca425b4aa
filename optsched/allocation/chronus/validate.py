r"""Independent check of a lease plan, in the constraint names of the formulation page.

Shares no code with the MILP or the heuristics: plain loops over the instance and the plan's
grants, with integer arithmetic (remaining work and speeds are integers, so "finishes by its
deadline" is decided exactly). Constraint names:

``known_job``, ``known_type``, ``lease_range``
    a grant names a job, GPU type or lease the instance does not have;
``admission``
    ``admitted`` names something that is not an SLO job, or a job twice;
``one_type_per_lease``
    a job holds GPUs twice in one lease;
``runs_on_type``
    a job is granted a type on which its speed is 0;
``capacity``
    :math:`\sum_j G_j x_{j\ell k} > C_{\ell k}`;
``admitted_only``
    an SLO job that is not admitted holds GPUs (:math:`x_{j\ell k} \le a_j`);
``keep_guaranteed``
    a guaranteed job is not admitted (:math:`a_j = 1` for guaranteed :math:`j`);
``finish_by_deadline``
    an admitted job's steps in leases :math:`0..d_j` fall short of its remaining work.

The objective is recomputed as :math:`\sum_j a_j + \varepsilon \sum_b w_b \min(1,
\sum_{\ell k} s_{bk} y_{b\ell k} / R_b)`, with :math:`\varepsilon` of
:attr:`LeaseInstance.epsilon <optsched.allocation.chronus.LeaseInstance.epsilon>`.
"""

from __future__ import annotations

from optsched.allocation.chronus.instance import LeaseInstance
from optsched.allocation.chronus.plan import LeasePlan
from optsched.results import Report, Violation

__all__ = ["validate"]


def validate(instance: LeaseInstance, plan: LeasePlan) -> Report:
    """Check ``plan`` against ``instance`` and recompute its objective.

    Returns
    -------
    Report
        ``objective``: admitted count plus the weighted best-effort term; ``objectives`` has
        ``admitted`` and ``best-effort`` separately; ``details["finished"]`` lists the SLO jobs
        (admitted or not) whose grants finish them by their deadline.
    """
    out: list[Violation] = []
    slo = {j.job_id: j for j in instance.slo_jobs}
    be = {b.job_id: b for b in instance.best_effort}
    types = {name: k for k, name in enumerate(instance.gpu_types)}
    admitted: set[str] = set()
    for job in plan.admitted:
        if job not in slo:
            out.append(Violation("admission", f"{job!r} is not an SLO job", {"job": job}))
        elif job in admitted:
            out.append(Violation("admission", f"{job!r} is admitted twice", {"job": job}))
        admitted.add(job)
    for job in sorted(instance.guaranteed - admitted):
        out.append(
            Violation("keep_guaranteed", f"{job} was guaranteed but is not admitted", {"job": job})
        )
    used = [[0] * instance.n_types for _ in range(instance.n_leases)]
    seen: set[tuple[str, int]] = set()
    steps: dict[str, int] = {}
    for job, ell, gpu in plan.grants:
        where = {"job": job, "lease": ell, "gpu_type": gpu}
        spec = slo.get(job) or be.get(job)
        if spec is None:
            out.append(Violation("known_job", f"grant to unknown job {job!r}", where))
            continue
        k = types.get(gpu)
        if k is None:
            out.append(Violation("known_type", f"grant of unknown GPU type {gpu!r}", where))
            continue
        if not (isinstance(ell, int) and 0 <= ell < instance.n_leases):
            out.append(Violation("lease_range", f"lease {ell!r} is outside the horizon", where))
            continue
        if (job, ell) in seen:
            out.append(Violation("one_type_per_lease", f"{job} holds GPUs twice in {ell}", where))
        seen.add((job, ell))
        if spec.speed[k] <= 0:
            out.append(Violation("runs_on_type", f"{job} cannot run on {gpu}", where))
        if job in slo and job not in admitted:
            out.append(Violation("admitted_only", f"{job} holds GPUs but is not admitted", where))
        used[ell][k] += spec.gang
        if job in be or ell <= slo[job].deadline:
            steps[job] = steps.get(job, 0) + spec.speed[k]
    for ell in range(instance.n_leases):
        for k, gpu in enumerate(instance.gpu_types):
            cap = instance.capacity[ell][k]
            if used[ell][k] > cap:
                out.append(
                    Violation(
                        "capacity",
                        f"lease {ell}, {gpu}: {used[ell][k]} GPUs granted, {cap} exist",
                        {"lease": ell, "gpu_type": gpu},
                        float(used[ell][k] - cap),
                    )
                )
    finished = []
    for j in instance.slo_jobs:
        done = steps.get(j.job_id, 0)
        if done >= j.remaining:
            finished.append(j.job_id)
        elif j.job_id in admitted:
            out.append(
                Violation(
                    "finish_by_deadline",
                    f"{j.job_id} is admitted but gets {done} of its {j.remaining} steps "
                    f"by the end of lease {j.deadline}",
                    {"job": j.job_id},
                    float(j.remaining - done),
                )
            )
    progress = sum(
        b.weight * min(1.0, steps.get(b.job_id, 0) / b.remaining) for b in instance.best_effort
    )
    count = len(admitted & set(slo))
    return Report(
        out,
        objective=count + instance.epsilon * progress,
        objectives={"admitted": float(count), "best-effort": progress},
        details={"finished": finished},
    )
