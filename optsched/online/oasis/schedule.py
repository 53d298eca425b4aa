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

import html
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from optsched._validation import Frozen, parse
from optsched.errors import InvalidInstanceError
from optsched.online.oasis.instance import MAX_COUNT, OasisInstance
from optsched.results import Report, Violation
from optsched.tolerances import CAPACITY_TOL, UTILITY_TOL, WORK_TOL, leq, within

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CAPACITY_TOL",
    "UTILITY_TOL",
    "JobSchedule",
    "Report",
    "Schedule",
    "Violation",
    "build_schedule",
    "load_schedule",
    "schedule_schema",
    "validate",
]

#: Largest slot or server index a schedule file may name (far above any budgeted horizon).
MAX_INDEX = 2**31 - 1

Entry = tuple[
    Annotated[int, Field(ge=0, le=MAX_INDEX)],
    Annotated[int, Field(ge=0, le=MAX_INDEX)],
    Annotated[int, Field(ge=1, le=MAX_COUNT)],
]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class JobSchedule(Frozen):
    """What one job was given."""

    job: str = Field(description="The job's label.")
    admitted: bool
    completion: Annotated[int, Field(ge=1, le=MAX_INDEX)] | None = Field(
        default=None, description="Completion time (last slot with workers + 1)."
    )
    utility: FiniteFloat = 0.0
    workers: tuple[Entry, ...] = Field(default=(), description="[slot, worker server, count].")
    ps: tuple[Entry, ...] = Field(default=(), description="[slot, PS server, count].")


class Schedule(Frozen):
    """A schedule for every job of an instance (same order as ``instance.jobs``)."""

    kind: Literal["oasis-schedule"] = "oasis-schedule"
    algorithm: str = ""
    total_utility: FiniteFloat = 0.0
    jobs: tuple[JobSchedule, ...] = ()

    @property
    def admitted(self) -> list[int]:
        """Indices of admitted jobs."""
        return [i for i, j in enumerate(self.jobs) if j.admitted]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (what :meth:`save` writes)."""
        return self.model_dump(mode="json")

    def to_frame(self) -> pd.DataFrame:
        """The deployment in long format, one row per (job, role, server, slot).

        Columns: ``job`` (label), ``role`` (``"worker"`` or ``"ps"``), ``server`` (index into
        ``worker_servers`` or ``ps_servers``), ``slot`` and ``count``. Rejected jobs have no
        rows; :meth:`jobs_frame` has one row per job.
        """
        import pandas as pd

        rows = [
            (js.job, role, s, t, n)
            for js in self.jobs
            for role, entries in (("worker", js.workers), ("ps", js.ps))
            for t, s, n in entries
        ]
        return pd.DataFrame(rows, columns=["job", "role", "server", "slot", "count"])

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job: ``job``, ``admitted``, ``completion``, ``utility``, ``worker_slots``."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "job": js.job,
                    "admitted": js.admitted,
                    "completion": js.completion,
                    "utility": js.utility,
                    "worker_slots": sum(n for _, _, n in js.workers),
                }
                for js in self.jobs
            ],
            columns=["job", "admitted", "completion", "utility", "worker_slots"],
        )

    def save(self, path: str | Path) -> None:
        """Write the schedule as JSON (``.json``) or TOML (``.toml``, absent fields omitted).

        Raises
        ------
        InvalidInstanceError
            Another extension (field ``"path"``).
        """
        p = Path(path)
        if p.suffix.lower() == ".toml":
            import tomli_w

            p.write_text(tomli_w.dumps(self.model_dump(mode="json", exclude_none=True)))
            return
        super().save(p)

    def __repr__(self) -> str:
        name = f"{self.algorithm!r}, " if self.algorithm else ""
        return (
            f"Schedule({name}jobs={len(self.jobs)}, admitted={len(self.admitted)}, "
            f"total_utility={self.total_utility:.6g})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(js.job)}</td><td>{'yes' if js.admitted else 'no'}</td>"
            f"<td>{js.completion if js.completion is not None else '-'}</td>"
            f"<td>{js.utility:.4g}</td></tr>"
            for js in self.jobs[:50]
        )
        more = f"<p>... {len(self.jobs) - 50} more jobs</p>" if len(self.jobs) > 50 else ""
        return (
            f"<table><caption>{html.escape(repr(self))}</caption><tr><th>job</th>"
            f"<th>admitted</th><th>completion</th><th>utility</th></tr>{rows}</table>{more}"
        )


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
        raise InvalidInstanceError(
            "deployments", f"expected {instance.n_jobs} deployments, got {len(deployments)}"
        )
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
    """Load and validate the *format* of a schedule (feasibility is :func:`validate`'s job).

    The same as :meth:`Schedule.load` (a path) or :meth:`Schedule.from_dict`.
    """
    if isinstance(source, (str, Path)):
        return Schedule.load(source)
    return parse(Schedule, source)


def schedule_schema() -> dict[str, Any]:
    """JSON Schema of a schedule file."""
    return Schedule.model_json_schema()


# ------------------------------------------------------------------------------------------
# The independent validator
# ------------------------------------------------------------------------------------------


def validate(instance: OasisInstance, schedule: Schedule) -> Report:
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
    Report
        ``objective`` is the recomputed total utility, ``details["job_utility"]`` the
        recomputed utility per job (index order); each :class:`~optsched.results.Violation`
        has ``where`` with the ``job`` index and/or the ``slot`` where it is known.

    Notes
    -----
    Runs in :math:`O(\text{entries} \cdot R)` time. It deliberately re-implements every rule
    with plain loops instead of reusing the ILP or the oracle.
    """
    rep = Report()
    job_utility: list[float] = []
    rep.details["job_utility"] = job_utility

    def bad(constraint: str, message: str, job: int | None = None, slot: int | None = None) -> None:
        where = {k: v for k, v in (("job", job), ("slot", slot)) if v is not None}
        rep.violations.append(Violation(constraint, message, where))

    T = instance.horizon
    H = len(instance.worker_servers)
    K = len(instance.ps_servers)
    R = len(instance.resources)
    if len(schedule.jobs) != instance.n_jobs:
        bad("schedule_shape", f"{len(schedule.jobs)} job entries for {instance.n_jobs} jobs")
        return rep
    worker_use: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0] * R)
    ps_use: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0] * R)
    total = 0.0
    for i, js in enumerate(schedule.jobs):
        job = instance.jobs[i]
        name = instance.job_name(i)
        value = 0.0
        if js.job != name:
            bad("schedule_shape", f"entry {i} is for {js.job!r}, expected {name!r}", i)
        if not js.admitted:
            if js.workers or js.ps:
                bad("rejected_idle", f"{name} is not admitted but has deployments", i)
            if not within(js.utility, 0.0, UTILITY_TOL):
                bad("utility", f"{name} is not admitted but reports utility {js.utility}", i)
            job_utility.append(0.0)
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
                    bad("schedule_shape", f"{name}: bad {label} entry {[t, s, n]}", i, t)
                    continue
                if (label, t, s) in seen:
                    bad(
                        "schedule_shape",
                        f"{name}: duplicate {label} entry at slot {t}, server {s}",
                        i,
                        t,
                    )
                seen.add((label, t, s))
                if t < job.arrival:
                    bad(
                        "before_arrival",
                        f"{name}: {label}s in slot {t} < arrival {job.arrival}",
                        i,
                        t,
                    )
                per_slot[t] += n
                demand = job.worker_demand if label == "worker" else job.ps_demand
                use = (worker_use if label == "worker" else ps_use)[(t, s)]
                for r_idx, r in enumerate(instance.resources):
                    use[r_idx] += n * demand.get(r, 0.0)
        work_done = sum(per_slot_w.values())
        need = job.epochs * job.chunks * job.minibatches * job.minibatch_slots(instance.slot_s)
        if not leq(need, work_done, WORK_TOL):
            bad("work_requirement", f"{name}: {work_done} worker-slots < required {need:.6g}", i)
        for t, n in per_slot_w.items():
            if n > job.chunks:
                bad("worker_cap", f"{name}: {n} workers in slot {t} > N = {job.chunks}", i, t)
        for t in set(per_slot_w) | set(per_slot_p):
            nw, npp = per_slot_w.get(t, 0), per_slot_p.get(t, 0)
            if not leq(job.b * nw, job.B * npp, WORK_TOL):
                bad("ps_bandwidth", f"{name}: slot {t}: b*{nw} workers > B*{npp} PSs", i, t)
            if npp > nw:
                bad("ps_count", f"{name}: slot {t}: {npp} PSs > {nw} workers", i, t)
        if per_slot_w:
            completion = max(per_slot_w) + 1
            if js.completion != completion:
                bad(
                    "completion",
                    f"{name}: reported completion {js.completion}, actual {completion}",
                    i,
                )
            value = job.utility(completion - job.arrival)
        else:
            bad("work_requirement", f"{name}: admitted with no workers", i)
        if not within(js.utility, value, UTILITY_TOL):
            bad("utility", f"{name}: reported utility {js.utility}, recomputed {value}", i)
        job_utility.append(value)
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
                if not leq(used[r_idx], cap, CAPACITY_TOL):
                    bad(
                        label,
                        f"slot {t}, {pool} {s}: {r} used {used[r_idx]:.6g} > capacity {cap:.6g}",
                        None,
                        t,
                    )
    if not within(schedule.total_utility, total, UTILITY_TOL):
        bad("utility", f"reported total utility {schedule.total_utility}, recomputed {total}")
    rep.objective = total
    return rep
