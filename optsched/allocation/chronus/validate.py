r"""Independent check of a lease plan, in the constraint names of the formulation page.

Shares no code with the MILP or the heuristics: plain loops over the instance and the plan's
grants, with integer arithmetic (remaining work and speeds are integers, so "finishes by its
deadline" is decided exactly). Each constraint is one function named as below, and
:data:`CONSTRAINTS` maps every name to its function:

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

from collections.abc import Callable

from optsched.allocation.chronus.instance import BestEffortJob, LeaseInstance, SLOJob
from optsched.allocation.chronus.plan import LeasePlan
from optsched.results import Report, Violation

__all__ = ["CONSTRAINTS", "validate"]


#: A grant of a known job, lease and type: ``(job, lease, type index, the job's spec)``.
_Grant = tuple[str, int, int, SLOJob | BestEffortJob]


def _admitted(solution: LeasePlan) -> set[str]:
    """The names ``admitted`` lists (unknown ones included: they are ``admission``'s to report)."""
    return set(solution.admitted)


def _index(instance: LeaseInstance) -> tuple[dict[str, SLOJob | BestEffortJob], dict[str, int]]:
    """Jobs by name (an SLO job first, where a name were both) and GPU type indices by name."""
    jobs: dict[str, SLOJob | BestEffortJob] = {b.job_id: b for b in instance.best_effort}
    jobs.update({j.job_id: j for j in instance.slo_jobs})
    return jobs, {name: k for k, name in enumerate(instance.gpu_types)}


def _first_unknown(
    instance: LeaseInstance,
    index: tuple[dict[str, SLOJob | BestEffortJob], dict[str, int]],
    grant: tuple[str, int, str],
) -> str:
    """The first of ``known_job``, ``known_type``, ``lease_range`` a grant breaks, else ``""``."""
    job, ell, gpu = grant
    if job not in index[0]:
        return "known_job"
    if gpu not in index[1]:
        return "known_type"
    if not (isinstance(ell, int) and 0 <= ell < instance.n_leases):
        return "lease_range"
    return ""


def _grants(instance: LeaseInstance, solution: LeasePlan) -> list[_Grant]:
    """The grants that name a known job, GPU type and lease, in plan order."""
    index = _index(instance)
    return [
        (job, int(ell), index[1][gpu], index[0][job])
        for job, ell, gpu in solution.grants
        if not _first_unknown(instance, index, (job, ell, gpu))
    ]


def _unknown(instance: LeaseInstance, solution: LeasePlan, name: str, what: str) -> list[Violation]:
    """The grants whose first unknown field is ``name`` (one of the three ``known`` checks)."""
    index = _index(instance)
    out: list[Violation] = []
    for job, ell, gpu in solution.grants:
        if _first_unknown(instance, index, (job, ell, gpu)) == name:
            where = {"job": job, "lease": ell, "gpu_type": gpu}
            value = {"known_job": job, "known_type": gpu, "lease_range": ell}[name]
            out.append(Violation(name, what.format(value=value), where))
    return out


def known_job(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``known_job``: every grant names a job of the instance."""
    return _unknown(instance, solution, "known_job", "grant to unknown job {value!r}")


def known_type(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``known_type``: every grant names a GPU type of the instance."""
    return _unknown(instance, solution, "known_type", "grant of unknown GPU type {value!r}")


def lease_range(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``lease_range``: every grant names a lease of the horizon."""
    return _unknown(instance, solution, "lease_range", "lease {value!r} is outside the horizon")


def admission(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``admission``: ``admitted`` lists SLO jobs, each once."""
    slo = {j.job_id for j in instance.slo_jobs}
    out: list[Violation] = []
    seen: set[str] = set()
    for job in solution.admitted:
        if job not in slo:
            out.append(Violation("admission", f"{job!r} is not an SLO job", {"job": job}))
        elif job in seen:
            out.append(Violation("admission", f"{job!r} is admitted twice", {"job": job}))
        seen.add(job)
    return out


def keep_guaranteed(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``keep_guaranteed``: :math:`a_j = 1` for every guaranteed job."""
    return [
        Violation("keep_guaranteed", f"{job} was guaranteed but is not admitted", {"job": job})
        for job in sorted(instance.guaranteed - _admitted(solution))
    ]


def one_type_per_lease(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``one_type_per_lease``: a job holds GPUs at most once in a lease."""
    out: list[Violation] = []
    seen: set[tuple[str, int]] = set()
    for job, ell, k, _ in _grants(instance, solution):
        if (job, ell) in seen:
            where = {"job": job, "lease": ell, "gpu_type": instance.gpu_types[k]}
            out.append(Violation("one_type_per_lease", f"{job} holds GPUs twice in {ell}", where))
        seen.add((job, ell))
    return out


def runs_on_type(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``runs_on_type``: no job is granted a type on which its speed is 0."""
    return [
        Violation(
            "runs_on_type",
            f"{job} cannot run on {instance.gpu_types[k]}",
            {"job": job, "lease": ell, "gpu_type": instance.gpu_types[k]},
        )
        for job, ell, k, spec in _grants(instance, solution)
        if spec.speed[k] <= 0
    ]


def admitted_only(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    r"""``admitted_only``: :math:`x_{j\ell k} \le a_j` for every SLO job."""
    slo = {j.job_id for j in instance.slo_jobs}
    admitted = _admitted(solution)
    return [
        Violation(
            "admitted_only",
            f"{job} holds GPUs but is not admitted",
            {"job": job, "lease": ell, "gpu_type": instance.gpu_types[k]},
        )
        for job, ell, k, _ in _grants(instance, solution)
        if job in slo and job not in admitted
    ]


def capacity(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    r"""``capacity``: :math:`\sum_j G_j x_{j\ell k} \le C_{\ell k}`."""
    used = [[0] * instance.n_types for _ in range(instance.n_leases)]
    for _, ell, k, spec in _grants(instance, solution):
        used[ell][k] += spec.gang
    return [
        Violation(
            "capacity",
            f"lease {ell}, {gpu}: {used[ell][k]} GPUs granted, {instance.capacity[ell][k]} exist",
            {"lease": ell, "gpu_type": gpu},
            float(used[ell][k] - instance.capacity[ell][k]),
        )
        for ell in range(instance.n_leases)
        for k, gpu in enumerate(instance.gpu_types)
        if used[ell][k] > instance.capacity[ell][k]
    ]


def _steps(instance: LeaseInstance, solution: LeasePlan) -> dict[str, int]:
    """Steps each job is granted.

    An SLO job's count in leases up to its deadline, a best-effort job's in every lease.
    """
    deadline = {j.job_id: j.deadline for j in instance.slo_jobs}
    steps: dict[str, int] = {}
    for job, ell, k, spec in _grants(instance, solution):
        if ell <= deadline.get(job, ell):
            steps[job] = steps.get(job, 0) + spec.speed[k]
    return steps


def finish_by_deadline(instance: LeaseInstance, solution: LeasePlan) -> list[Violation]:
    """``finish_by_deadline``: an admitted job's steps in leases :math:`0..d_j` cover its work."""
    steps = _steps(instance, solution)
    admitted = _admitted(solution)
    return [
        Violation(
            "finish_by_deadline",
            f"{j.job_id} is admitted but gets {steps.get(j.job_id, 0)} of its {j.remaining} "
            f"steps by the end of lease {j.deadline}",
            {"job": j.job_id},
            float(j.remaining - steps.get(j.job_id, 0)),
        )
        for j in instance.slo_jobs
        if j.job_id in admitted and steps.get(j.job_id, 0) < j.remaining
    ]


#: Every constraint the validator checks, by its name on the formulation page, in check order.
CONSTRAINTS: dict[str, Callable[[LeaseInstance, LeasePlan], list[Violation]]] = {
    "admission": admission,
    "keep_guaranteed": keep_guaranteed,
    "known_job": known_job,
    "known_type": known_type,
    "lease_range": lease_range,
    "one_type_per_lease": one_type_per_lease,
    "runs_on_type": runs_on_type,
    "admitted_only": admitted_only,
    "capacity": capacity,
    "finish_by_deadline": finish_by_deadline,
}


def validate(instance: LeaseInstance, solution: LeasePlan) -> Report:
    """Check ``solution`` against ``instance`` and recompute its objective.

    Returns
    -------
    Report
        Every violation of :data:`CONSTRAINTS`; ``objective``: admitted count plus the
        weighted best-effort term; ``objectives`` has ``admitted`` and ``best_effort``
        separately; ``details["finished"]`` lists the SLO jobs (admitted or not) whose grants
        finish them by their deadline.
    """
    out: list[Violation] = []
    for check in CONSTRAINTS.values():
        out += check(instance, solution)
    steps = _steps(instance, solution)
    finished = [j.job_id for j in instance.slo_jobs if steps.get(j.job_id, 0) >= j.remaining]
    progress = sum(
        b.weight * min(1.0, steps.get(b.job_id, 0) / b.remaining) for b in instance.best_effort
    )
    count = len(_admitted(solution) & {j.job_id for j in instance.slo_jobs})
    return Report(
        out,
        objective=count + instance.epsilon * progress,
        objectives={"admitted": float(count), "best_effort": progress},
        details={"finished": finished},
    )
