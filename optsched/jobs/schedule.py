"""The OASiS Schedule type and its independent feasibility validator.

Every job-scheduling algorithm in optsched (the exact ILP, OASiS, the baselines) returns a
:class:`Schedule`, and :func:`validate` checks it. The validator re-derives feasibility and
utility from the instance and the schedule alone, with plain loops over the schedule's entries:
it shares no code with any formulation or algorithm, so a bug in one of them cannot hide itself.

JSON form (``optsched schema oasis-schedule``): per job its ``admitted`` flag, ``completion``
(the completion *time*: last slot with workers + 1, DESIGN §2.3), ``utility``, and lists of
``[slot, server, count]`` for ``workers`` (server = index into ``worker_servers``) and ``ps``
(index into ``ps_servers``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from optsched._validation import Frozen, load_data, parse
from optsched.errors import InvalidScheduleError
from optsched.jobs.instance import WORK_TOL, OasisInstance

__all__ = [
    "CAPACITY_TOL",
    "UTILITY_TOL",
    "JobSchedule",
    "Schedule",
    "ValidationReport",
    "Violation",
    "build_schedule",
    "load_schedule",
    "schedule_schema",
    "validate",
]

#: Absolute slack allowed on resource capacities (sums of float demands).
CAPACITY_TOL = 1e-7
#: Tolerance when comparing a reported utility with the recomputed one (relative, floor 1e-9).
UTILITY_TOL = 1e-7

Entry = tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)], Annotated[int, Field(ge=1)]]


class JobSchedule(Frozen):
    """What one job was given."""

    job: str = Field(description="The job's label.")
    admitted: bool
    completion: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Completion time (last slot with workers + 1)."
    )
    utility: float = 0.0
    workers: tuple[Entry, ...] = Field(default=(), description="[slot, worker server, count].")
    ps: tuple[Entry, ...] = Field(default=(), description="[slot, PS server, count].")


class Schedule(Frozen):
    """A schedule for every job of an instance (same order as ``instance.jobs``)."""

    kind: Literal["oasis-schedule"] = "oasis-schedule"
    algorithm: str = ""
    total_utility: float = 0.0
    jobs: tuple[JobSchedule, ...] = ()

    @property
    def admitted(self) -> list[int]:
        """Indices of admitted jobs."""
        return [i for i, j in enumerate(self.jobs) if j.admitted]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (what :meth:`save` writes)."""
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> None:
        """Write the schedule as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


def build_schedule(
    instance: OasisInstance,
    deployments: Sequence[
        tuple[Iterable[tuple[int, int, int]], Iterable[tuple[int, int, int]]] | None
    ],
    algorithm: str = "",
) -> Schedule:
    """Assemble a :class:`Schedule` from per-job deployments.

    Parameters
    ----------
    instance : OasisInstance
    deployments : sequence
        One item per job: ``None`` for a rejected job, else ``(workers, ps)`` where each is an
        iterable of ``(slot, server, count)``; zero counts are dropped, duplicates merged.
    algorithm : str
        Name recorded in the schedule.

    Returns
    -------
    Schedule
        With completion and utility filled in per DESIGN §2.3.
    """
    if len(deployments) != instance.n_jobs:
        raise ValueError(f"expected {instance.n_jobs} deployments, got {len(deployments)}")
    jobs = []
    total = 0.0
    for i, dep in enumerate(deployments):
        name = instance.job_name(i)
        if dep is None:
            jobs.append(JobSchedule(job=name, admitted=False))
            continue
        workers = _merge(dep[0])
        ps = _merge(dep[1])
        if not workers:
            jobs.append(JobSchedule(job=name, admitted=False))
            continue
        completion = max(t for t, _, _ in workers) + 1
        job = instance.jobs[i]
        value = job.utility(completion - job.arrival)
        total += value
        jobs.append(
            JobSchedule(
                job=name,
                admitted=True,
                completion=completion,
                utility=value,
                workers=workers,
                ps=ps,
            )
        )
    return Schedule(algorithm=algorithm, total_utility=total, jobs=tuple(jobs))


def _merge(entries: Iterable[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    acc: dict[tuple[int, int], int] = defaultdict(int)
    for t, s, n in entries:
        if int(n) > 0:
            acc[(int(t), int(s))] += int(n)
    return tuple((t, s, n) for (t, s), n in sorted(acc.items()))


def load_schedule(source: str | Path | dict[str, Any]) -> Schedule:
    """Load and validate the *format* of a schedule (feasibility is :func:`validate`'s job)."""
    data = load_data(source) if isinstance(source, (str, Path)) else source
    return parse(Schedule, data)


def schedule_schema() -> dict[str, Any]:
    """JSON Schema of a schedule file."""
    return Schedule.model_json_schema()


# ------------------------------------------------------------------------------------------
# The independent validator
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    """One violated constraint."""

    constraint: str
    """Constraint family, e.g. ``"worker_capacity"`` (names match the docs)."""
    message: str
    job: int | None = None
    slot: int | None = None

    def __str__(self) -> str:
        return f"[{self.constraint}] {self.message}"


@dataclass
class ValidationReport:
    """The validator's findings.

    Attributes
    ----------
    violations : list of Violation
        Every violated constraint (empty when feasible).
    utility : float
        Total utility recomputed from the instance and the schedule's worker entries.
    job_utility : list of float
        Recomputed utility per job.
    """

    violations: list[Violation] = field(default_factory=list)
    utility: float = 0.0
    job_utility: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the schedule is feasible and its reported figures are right."""
        return not self.violations

    def raise_if_invalid(self) -> None:
        """Raise :class:`~optsched.errors.InvalidScheduleError` listing the violations."""
        if self.violations:
            raise InvalidScheduleError(self.violations)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "valid": self.ok,
            "utility": self.utility,
            "violations": [
                {"constraint": v.constraint, "message": v.message, "job": v.job, "slot": v.slot}
                for v in self.violations
            ],
        }


def validate(instance: OasisInstance, schedule: Schedule) -> ValidationReport:
    r"""Check a schedule against an instance and recompute its utility.

    Checks, in the names used by the docs and the ILP: ``schedule_shape`` (one entry per job,
    valid slots and server indices, no duplicate entries), ``rejected_idle`` (a rejected job
    gets nothing), ``before_arrival`` (9)-(10), ``work_requirement`` (2), ``worker_cap`` (3),
    ``worker_capacity`` (4), ``ps_capacity`` (5), ``ps_bandwidth`` (6), ``ps_count`` (7),
    ``completion`` (8: the reported completion is the last slot with workers + 1) and
    ``utility`` (the reported utilities match :math:`f_i(\text{completion} - a_i)`).

    Parameters
    ----------
    instance : OasisInstance
    schedule : Schedule

    Returns
    -------
    ValidationReport

    Notes
    -----
    Runs in :math:`O(\text{entries} \cdot R)` time. It deliberately re-implements every rule
    with plain loops instead of reusing the ILP or the oracle.
    """
    rep = ValidationReport()
    bad = rep.violations.append
    T = instance.horizon
    H = len(instance.worker_servers)
    K = len(instance.ps_servers)
    R = len(instance.resources)
    if len(schedule.jobs) != instance.n_jobs:
        bad(
            Violation(
                "schedule_shape", f"{len(schedule.jobs)} job entries for {instance.n_jobs} jobs"
            )
        )
        return rep
    worker_use: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0] * R)
    ps_use: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0] * R)
    total = 0.0
    for i, js in enumerate(schedule.jobs):
        job = instance.jobs[i]
        name = instance.job_name(i)
        value = 0.0
        if js.job != name:
            bad(Violation("schedule_shape", f"entry {i} is for {js.job!r}, expected {name!r}", i))
        if not js.admitted:
            if js.workers or js.ps:
                bad(Violation("rejected_idle", f"{name} is not admitted but has deployments", i))
            if abs(js.utility) > UTILITY_TOL:
                bad(
                    Violation(
                        "utility", f"{name} is not admitted but reports utility {js.utility}", i
                    )
                )
            rep.job_utility.append(0.0)
            continue
        per_slot_w: dict[int, int] = defaultdict(int)
        per_slot_p: dict[int, int] = defaultdict(int)
        seen: set[tuple[str, int, int]] = set()
        for label, entries, n_servers, per_slot in (
            ("worker", js.workers, H, per_slot_w),
            ("ps", js.ps, K, per_slot_p),
        ):
            for t, s, n in entries:
                if not (0 <= t < T) or not (0 <= s < n_servers) or n < 1:
                    bad(Violation("schedule_shape", f"{name}: bad {label} entry {[t, s, n]}", i, t))
                    continue
                if (label, t, s) in seen:
                    bad(
                        Violation(
                            "schedule_shape",
                            f"{name}: duplicate {label} entry at slot {t}, server {s}",
                            i,
                            t,
                        )
                    )
                seen.add((label, t, s))
                if t < job.arrival:
                    bad(
                        Violation(
                            "before_arrival",
                            f"{name}: {label}s in slot {t} < arrival {job.arrival}",
                            i,
                            t,
                        )
                    )
                per_slot[t] += n
                demand = job.worker_demand if label == "worker" else job.ps_demand
                use = (worker_use if label == "worker" else ps_use)[(t, s)]
                for r_idx, r in enumerate(instance.resources):
                    use[r_idx] += n * demand.get(r, 0.0)
        work_done = sum(per_slot_w.values())
        need = (
            job.epochs * job.chunks * job.minibatches * job.minibatch_slots(instance.slot_seconds)
        )
        if work_done < need - WORK_TOL * max(1.0, need):
            bad(
                Violation(
                    "work_requirement", f"{name}: {work_done} worker-slots < required {need:.6g}", i
                )
            )
        for t, n in per_slot_w.items():
            if n > job.chunks:
                bad(
                    Violation(
                        "worker_cap", f"{name}: {n} workers in slot {t} > N = {job.chunks}", i, t
                    )
                )
        for t in set(per_slot_w) | set(per_slot_p):
            nw, npp = per_slot_w.get(t, 0), per_slot_p.get(t, 0)
            if job.b * nw > job.B * npp * (1 + 1e-12):
                bad(
                    Violation(
                        "ps_bandwidth", f"{name}: slot {t}: b*{nw} workers > B*{npp} PSs", i, t
                    )
                )
            if npp > nw:
                bad(Violation("ps_count", f"{name}: slot {t}: {npp} PSs > {nw} workers", i, t))
        if per_slot_w:
            completion = max(per_slot_w) + 1
            if js.completion != completion:
                bad(
                    Violation(
                        "completion",
                        f"{name}: reported completion {js.completion}, actual {completion}",
                        i,
                    )
                )
            value = job.utility(completion - job.arrival)
        else:
            bad(Violation("work_requirement", f"{name}: admitted with no workers", i))
        if abs(js.utility - value) > UTILITY_TOL * max(1.0, abs(value)):
            bad(
                Violation(
                    "utility", f"{name}: reported utility {js.utility}, recomputed {value}", i
                )
            )
        rep.job_utility.append(value)
        total += value
    for label, use_map, caps, pool in (
        ("worker_capacity", worker_use, instance.worker_servers, "worker server"),
        ("ps_capacity", ps_use, instance.ps_servers, "PS server"),
    ):
        for (t, s), used in use_map.items():
            if not 0 <= s < len(caps):
                continue
            for r_idx, r in enumerate(instance.resources):
                cap = caps[s].capacity[r]
                if used[r_idx] > cap + CAPACITY_TOL * max(1.0, cap):
                    bad(
                        Violation(
                            label,
                            f"slot {t}, {pool} {s}: {r} used {used[r_idx]:.6g}"
                            f" > capacity {cap:.6g}",
                            None,
                            t,
                        )
                    )
    if abs(schedule.total_utility - total) > UTILITY_TOL * max(1.0, abs(total)):
        bad(
            Violation(
                "utility", f"reported total utility {schedule.total_utility}, recomputed {total}"
            )
        )
    rep.utility = total
    return rep
