r"""Independent check of an allocation: the base constraints, recomputed from the definitions.

Shares no code with the LP builders: it reads the instance's throughputs, scale factors and
capacities and the allocation's fractions. Each constraint of the formulation page is one
function of this module, named as the constraint is named there, and :data:`CONSTRAINTS` maps
each name to its function:

``shape``
    the allocation's job ids, GPU types and array shapes are the instance's, its fractions
    finite, and its pair rows pairs of job indices (checked first: nothing else is checked
    when it fails);
``nonnegative``
    :math:`X_{mj} \ge 0` and :math:`Y_{pj} \ge 0`;
``job_time``
    :math:`\sum_j X_{mj} + \sum_{p \ni m} \sum_j Y_{pj} \le 1`;
``type_capacity``
    :math:`\sum_m s_m X_{mj} + \sum_p s_p Y_{pj} \le n_j` (a pair row counted once, with the
    scale factor of its first job);
``gang_fits``
    :math:`X_{mj} = 0` where :math:`T_{mj} = 0` or :math:`s_m > n_j`;
``pair_fits``
    :math:`Y_{pj} = 0` unless the two jobs are distinct, have co-location classes with a pair
    entry, the same scale factor, positive normalised pair throughputs on the type, and may each
    run on it alone;
``slo``
    for the deadline policies (``min-cost-slo*``) only,
    :math:`\theta_m(X) \ge \sigma_m / d_m` for every job with a deadline and steps left.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from optsched.allocation.gavel.instance import AllocationInstance, AllocationJob
from optsched.allocation.gavel.solution import Allocation
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL

__all__ = ["CONSTRAINTS", "validate"]

#: One constraint's check: ``(instance, solution, objective) -> violations``.
Check = Callable[[AllocationInstance, Allocation, "str | None"], list[Violation]]


def _pair_rows(solution: Allocation, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The pair rows as an ``(r, 2)`` int array and an ``(r, k)`` float array (``r`` may be 0)."""
    pairs = np.asarray(solution.pairs)
    if not pairs.size:
        return np.zeros((0, 2), dtype=np.int64), np.zeros((0, k))
    return pairs.astype(np.int64), np.asarray(solution.pair_fractions, dtype=np.float64)


def _can_run(job: AllocationJob, j: int, instance: AllocationInstance) -> bool:
    """Whether the job may run alone on type ``j``: positive throughput, and its gang fits."""
    return job.throughput_steps_per_s[j] > 0 and job.scale_factor <= instance.capacity[j]


def shape(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    """``shape``: the allocation is laid out over the instance's jobs and GPU types."""
    jobs = list(instance.job_ids)
    k = len(instance.gpu_types)
    if list(solution.job_ids) != jobs or list(solution.gpu_types) != list(instance.gpu_types):
        return [Violation("shape", "job ids or GPU types differ from the instance's")]
    x = np.asarray(solution.fractions, dtype=np.float64)
    if x.shape != (len(jobs), k) or not np.isfinite(x).all():
        return [Violation("shape", f"fractions must be finite, shape {len(jobs)} x types")]
    pairs = np.asarray(solution.pairs)
    if not pairs.size:
        return []
    y = np.asarray(solution.pair_fractions, dtype=np.float64)
    rows_ok = pairs.ndim == 2 and pairs.shape[1] == 2 and y.shape == (pairs.shape[0], k)
    if not rows_ok or not np.isfinite(y).all() or pairs.min() < 0 or pairs.max() >= len(jobs):
        return [Violation("shape", "pair rows must be (job, job) indices with finite rows")]
    return []


def nonnegative(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``nonnegative``: :math:`X_{mj} \ge 0` and :math:`Y_{pj} \ge 0`."""
    out: list[Violation] = []
    k = len(instance.gpu_types)
    pairs, y = _pair_rows(solution, k)
    for r in range(pairs.shape[0]):
        ja, jb = instance.jobs[int(pairs[r, 0])], instance.jobs[int(pairs[r, 1])]
        for j, gpu in enumerate(instance.gpu_types):
            if y[r, j] < -CAPACITY_TOL:
                out.append(
                    Violation(
                        "nonnegative",
                        f"Y[({ja.job_id}, {jb.job_id}), {gpu}] = {y[r, j]}",
                        {"job": ja.job_id, "partner": jb.job_id},
                    )
                )
    x = np.asarray(solution.fractions, dtype=np.float64)
    for m, j in zip(*np.nonzero(x < -CAPACITY_TOL), strict=True):
        job, gpu = instance.jobs[m].job_id, instance.gpu_types[j]
        out.append(
            Violation("nonnegative", f"X[{job}, {gpu}] = {x[m, j]}", {"job": job, "gpu_type": gpu})
        )
    return out


def job_time(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``job_time``: :math:`\sum_j X_{mj} + \sum_{p \ni m} \sum_j Y_{pj} \le 1`."""
    time_used = np.asarray(solution.fractions, dtype=np.float64).sum(axis=1)
    pairs, y = _pair_rows(solution, len(instance.gpu_types))
    for r in range(pairs.shape[0]):
        share = float(y[r].sum())
        time_used[pairs[r, 0]] += share
        time_used[pairs[r, 1]] += share
    over = np.flatnonzero(time_used > 1 + CAPACITY_TOL)
    return [
        Violation(
            "job_time",
            f"{job.job_id} is allocated {float(total):.9g} > 1 of the round",
            {"job": job.job_id},
            float(total) - 1,
        )
        for job, total in ((instance.jobs[m], time_used[m]) for m in over.tolist())
    ]


def type_capacity(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``type_capacity``: :math:`\sum_m s_m X_{mj} + \sum_p s_p Y_{pj} \le n_j`."""
    x = np.asarray(solution.fractions, dtype=np.float64)
    pairs, y = _pair_rows(solution, len(instance.gpu_types))
    out: list[Violation] = []
    # each type's GPUs summed job after job (a running sum, as the definition reads)
    gpus = np.cumsum(instance.scale_factors[:, None] * x, axis=0)
    for j, gpu in enumerate(instance.gpu_types):
        used = float(gpus[-1, j]) if gpus.shape[0] else 0
        # A pair row is one gang: counted once, with its (common) scale factor.
        used += sum(instance.jobs[int(a)].scale_factor * y[r, j] for r, a in enumerate(pairs[:, 0]))
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
    return out


def gang_fits(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``gang_fits``: :math:`X_{mj} = 0` where :math:`T_{mj} = 0` or :math:`s_m > n_j`."""
    x = np.asarray(solution.fractions, dtype=np.float64)
    out: list[Violation] = []
    # where the job may run alone, from the instance's arrays (_can_run for every entry)
    can_run = (instance.throughputs > 0) & (
        instance.scale_factors[:, None] <= instance.capacities[None, :]
    )
    for m, j in zip(*np.nonzero((x > CAPACITY_TOL) & ~can_run), strict=True):
        job, gpu = instance.jobs[m], instance.gpu_types[j]
        out.append(
            Violation(
                "gang_fits",
                f"{job.job_id} gets {x[m, j]:.6g} of {gpu}, where it cannot run",
                {"job": job.job_id, "gpu_type": gpu},
                x[m, j],
            )
        )
    return out


def _pair_factors(
    instance: AllocationInstance,
) -> dict[tuple[str, str], tuple[tuple[float, float], ...]]:
    """Normalised pair throughputs by ordered class pair (both orders of every entry)."""
    factors: dict[tuple[str, str], tuple[tuple[float, float], ...]] = {}
    for entry in instance.pair_throughputs:
        ta, tb = entry.job_types
        factors[(ta, tb)] = entry.normalized
        factors[(tb, ta)] = tuple((fb, fa) for fa, fb in entry.normalized)
    return factors


def _may_share(
    instance: AllocationInstance,
    factors: dict[tuple[str, str], tuple[tuple[float, float], ...]],
    a: int,
    b: int,
    j: int,
) -> bool:
    """Whether jobs ``a`` and ``b`` may share a gang of type ``j`` (the set :math:`P_j`)."""
    ja, jb = instance.jobs[a], instance.jobs[b]
    if a == b or ja.job_type is None or jb.job_type is None:
        return False
    f = factors.get((ja.job_type, jb.job_type))
    if f is None or ja.scale_factor != jb.scale_factor:
        return False
    return f[j][0] > 0 and f[j][1] > 0 and _can_run(ja, j, instance) and _can_run(jb, j, instance)


def pair_fits(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``pair_fits``: :math:`Y_{pj} = 0` for :math:`p \notin \mathcal P_j`."""
    pairs, y = _pair_rows(solution, len(instance.gpu_types))
    factors = _pair_factors(instance)
    out: list[Violation] = []
    for r in range(pairs.shape[0]):
        a, b = int(pairs[r, 0]), int(pairs[r, 1])
        ja, jb = instance.jobs[a], instance.jobs[b]
        for j, gpu in enumerate(instance.gpu_types):
            if y[r, j] > CAPACITY_TOL and not _may_share(instance, factors, a, b, j):
                out.append(
                    Violation(
                        "pair_fits",
                        f"{ja.job_id} and {jb.job_id} share {gpu} for {y[r, j]:.6g} of the "
                        "round, where they cannot share",
                        {"job": ja.job_id, "partner": jb.job_id, "gpu_type": gpu},
                        y[r, j],
                    )
                )
    return out


def _policy_speeds(instance: AllocationInstance, job: AllocationJob, aware: bool) -> list[float]:
    """The throughput the policy believes for ``job`` on each type.

    Measured per type (``-perf``), else the job's speed on the first type (or its best, where it
    cannot run there) on every type it can run on.
    """
    speeds = list(job.throughput_steps_per_s)
    if aware:
        return speeds
    one = speeds[0] if speeds[0] > 0 else max(speeds)
    return [
        one if (s > 0 and job.scale_factor <= c) else 0.0
        for s, c in zip(speeds, instance.capacity, strict=True)
    ]


def slo(
    instance: AllocationInstance, solution: Allocation, objective: str | None
) -> list[Violation]:
    r"""``slo`` (deadline policies only): :math:`\theta_m(X) \ge \sigma_m / d_m`."""
    if objective is None or not objective.startswith("min-cost-slo"):
        return []
    aware = objective.endswith("-perf")
    x = np.asarray(solution.fractions, dtype=np.float64)
    out: list[Violation] = []
    for m, job in enumerate(instance.jobs):
        due = job.time_to_deadline_s
        if due is None or job.steps_remaining <= 0:
            continue
        speeds = _policy_speeds(instance, job, aware)
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


#: Every constraint the validator checks, by its name on the formulation page, in check order.
CONSTRAINTS: dict[str, Check] = {
    "shape": shape,
    "nonnegative": nonnegative,
    "job_time": job_time,
    "type_capacity": type_capacity,
    "gang_fits": gang_fits,
    "pair_fits": pair_fits,
    "slo": slo,
}


def validate(
    instance: AllocationInstance, solution: Allocation, objective: str | None = None
) -> Report:
    """Check ``solution`` against ``instance``; recompute ``objective`` if named.

    Parameters
    ----------
    instance : AllocationInstance
    solution : Allocation
    objective : str, optional
        A policy name of :data:`~optsched.allocation.gavel.lp.POLICIES`; its value is recomputed
        into ``report.objective``, and for the deadline policies (``min-cost-slo*``) the ``slo``
        constraint is checked.

    Returns
    -------
    Report
        Every violation of :data:`CONSTRAINTS` (only ``shape`` when the allocation is not laid
        out over the instance); ``objective`` when one is named and nothing is violated.
    """
    out = shape(instance, solution, objective)
    if out:
        return Report(out)
    for name, check in CONSTRAINTS.items():
        if name != "shape":
            out += check(instance, solution, objective)
    if objective is None or out:
        return Report(out)
    from optsched.allocation.gavel.lp import POLICIES, objective_value
    from optsched.allocation.gavel.packed import PACKED_POLICIES, packed_objective_value

    kind, aware = POLICIES[objective]
    if objective in PACKED_POLICIES:
        return Report(out, objective=packed_objective_value(instance, solution, kind))
    x = np.asarray(solution.fractions, dtype=np.float64)
    return Report(out, objective=objective_value(instance, x, kind, aware))
