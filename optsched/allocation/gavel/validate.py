"""Independent check of an allocation: the base constraints, recomputed from the definitions.

Shares no code with the LP builders: it reads the instance's throughputs, scale factors and
capacities and the allocation's fractions, and lists every violated constraint by the names of
the formulation page (``nonnegative``, ``job_time``, ``type_capacity``, ``gang_fits``,
``slo`` for the deadline policies, and for the pair rows of a packed allocation ``pair_fits``:
two distinct jobs with a co-location class, the same scale factor, each able to run on the
type, and positive normalised pair throughputs there). A pair row counts once against its
type's GPUs (with the pair's scale factor) and against the time of each of its two jobs.
"""

from __future__ import annotations

import numpy as np

from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.solution import Allocation
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
        A policy name of :data:`~optsched.allocation.gavel.lp.POLICIES`; its value is recomputed
        into
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
    k = len(instance.gpu_types)
    pairs = np.asarray(allocation.pairs)
    y = np.asarray(allocation.pair_fractions, dtype=np.float64)
    if pairs.size and (
        pairs.ndim != 2
        or pairs.shape[1] != 2
        or y.shape != (pairs.shape[0], k)
        or not np.isfinite(y).all()
        or pairs.min() < 0
        or pairs.max() >= len(jobs)
    ):
        out.append(Violation("shape", "pair rows must be (job, job) indices with finite rows"))
        return Report(out)
    time_used = x.sum(axis=1)
    gpus_used = [
        sum(job.scale_factor * x[m, j] for m, job in enumerate(instance.jobs)) for j in range(k)
    ]
    factors: dict[tuple[str, str], tuple[tuple[float, float], ...]] = {}
    for entry in instance.pair_throughputs:
        ta, tb = entry.job_types
        factors[(ta, tb)] = entry.normalized
        factors[(tb, ta)] = tuple((fb, fa) for fa, fb in entry.normalized)
    for r in range(pairs.shape[0] if pairs.size else 0):
        a, b = int(pairs[r, 0]), int(pairs[r, 1])
        ja, jb = instance.jobs[a], instance.jobs[b]
        where_pair = {"job": ja.job_id, "partner": jb.job_id}
        share = float(y[r].sum())
        time_used[a] += share
        time_used[b] += share
        for j, gpu in enumerate(instance.gpu_types):
            value = y[r, j]
            if value < -CAPACITY_TOL:
                out.append(
                    Violation(
                        "nonnegative", f"Y[({ja.job_id}, {jb.job_id}), {gpu}] = {value}", where_pair
                    )
                )
            gpus_used[j] += ja.scale_factor * value
            f = (
                factors.get((ja.job_type, jb.job_type))
                if ja.job_type is not None and jb.job_type is not None
                else None
            )
            fits = (
                a != b
                and f is not None
                and ja.scale_factor == jb.scale_factor
                and f[j][0] > 0
                and f[j][1] > 0
                and all(
                    o.throughput_steps_per_s[j] > 0 and o.scale_factor <= instance.capacity[j]
                    for o in (ja, jb)
                )
            )
            if not fits and value > CAPACITY_TOL:
                out.append(
                    Violation(
                        "pair_fits",
                        f"{ja.job_id} and {jb.job_id} share {gpu} for {value:.6g} of the round, "
                        "where they cannot share",
                        {**where_pair, "gpu_type": gpu},
                        value,
                    )
                )
    for m, job in enumerate(instance.jobs):
        for j, gpu in enumerate(instance.gpu_types):
            value = x[m, j]
            where = {"job": job.job_id, "gpu_type": gpu}
            if value < -CAPACITY_TOL:
                out.append(Violation("nonnegative", f"X[{job.job_id}, {gpu}] = {value}", where))
            cannot = job.throughput_steps_per_s[j] <= 0 or job.scale_factor > instance.capacity[j]
            if cannot and value > CAPACITY_TOL:
                out.append(
                    Violation(
                        "gang_fits",
                        f"{job.job_id} gets {value:.6g} of {gpu}, where it cannot run",
                        where,
                        value,
                    )
                )
        total = float(time_used[m])
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
        used = gpus_used[j]
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
        from optsched.allocation.gavel.lp import POLICIES, objective_value
        from optsched.allocation.gavel.packed import PACKED_POLICIES, packed_objective_value

        kind, aware = POLICIES[objective]
        if objective in PACKED_POLICIES:
            value = packed_objective_value(instance, allocation, kind)
        else:
            value = objective_value(instance, x, kind, aware)
    return Report(out, objective=value)


def _late_jobs(instance: AllocationInstance, x: np.ndarray, *, aware: bool) -> list[Violation]:
    """``slo``: every job with a deadline and steps left gets at least steps / time-to-deadline.

    The throughput is the policy's own: measured per type (``-perf``), else the job's speed on
    the first type (or its best, where it cannot run there) on every type it can run on.
    """
    out: list[Violation] = []
    for m, job in enumerate(instance.jobs):
        due = job.time_to_deadline_s
        if due is None or job.steps_remaining <= 0:
            continue
        speeds = list(job.throughput_steps_per_s)
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
