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
from collections.abc import Callable, Iterable, Sequence
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


#: One checked deployment of an admitted job: ``(job, role, slot, server, count)``.
_Deployment = tuple[int, str, int, int, int]


def _violation(
    constraint: str, message: str, job: int | None = None, slot: int | None = None
) -> Violation:
    """A violation located by job index and/or slot, where known."""
    where = {k: v for k, v in (("job", job), ("slot", slot)) if v is not None}
    return Violation(constraint, message, where)


def _entry_fault(instance: OasisInstance, role: str, entry: tuple[int, int, int]) -> bool:
    """Whether a ``[slot, server, count]`` entry names no slot, no server, or no deployment."""
    t, s, n = entry
    servers = instance.worker_servers if role == "worker" else instance.ps_servers
    return not (0 <= t < instance.horizon) or not (0 <= s < len(servers)) or n < 1


def _deployments(instance: OasisInstance, solution: Schedule) -> list[_Deployment]:
    """Every well-formed entry of every admitted job.

    A duplicate entry counts: it is ``schedule_shape``'s to report, and its workers are used.
    """
    return [
        (i, role, t, s, n)
        for i, js in enumerate(solution.jobs)
        if js.admitted
        for role, entries in (("worker", js.workers), ("ps", js.ps))
        for t, s, n in entries
        if not _entry_fault(instance, role, (t, s, n))
    ]


def _per_slot(instance: OasisInstance, solution: Schedule, role: str) -> list[dict[int, int]]:
    """Per job, the workers (``role="worker"``) or PSs it runs in each slot."""
    out: list[dict[int, int]] = [defaultdict(int) for _ in solution.jobs]
    for i, r, t, _, n in _deployments(instance, solution):
        if r == role:
            out[i][t] += n
    return out


def _job_values(instance: OasisInstance, solution: Schedule) -> list[float]:
    r"""Each job's utility :math:`f_i(C_i - a_i)`, 0 for a rejected job or one with no workers."""
    workers = _per_slot(instance, solution, "worker")
    return [
        instance.jobs[i].utility(max(workers[i]) + 1 - instance.jobs[i].arrival)
        if js.admitted and workers[i]
        else 0.0
        for i, js in enumerate(solution.jobs)
    ]


def _job_shape(instance: OasisInstance, i: int, js: JobSchedule) -> list[Violation]:
    """``schedule_shape`` of one job's entry: its name, and its entries if admitted."""
    name = instance.job_name(i)
    out = []
    if js.job != name:
        out.append(
            _violation("schedule_shape", f"entry {i} is for {js.job!r}, expected {name!r}", i)
        )
    seen: set[tuple[str, int, int]] = set()
    for role, entries in (("worker", js.workers), ("ps", js.ps)) if js.admitted else ():
        for t, s, n in entries:
            if _entry_fault(instance, role, (t, s, n)):
                out.append(
                    _violation("schedule_shape", f"{name}: bad {role} entry {[t, s, n]}", i, t)
                )
                continue
            if (role, t, s) in seen:
                message = f"{name}: duplicate {role} entry at slot {t}, server {s}"
                out.append(_violation("schedule_shape", message, i, t))
            seen.add((role, t, s))
    return out


def schedule_shape(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    """``schedule_shape``: one entry per job, in order, with valid entries.

    Valid: slots and servers of the instance, positive counts, and no two entries for one role,
    slot and server.
    """
    if len(solution.jobs) != instance.n_jobs:
        message = f"{len(solution.jobs)} job entries for {instance.n_jobs} jobs"
        return [_violation("schedule_shape", message)]
    return [v for i, js in enumerate(solution.jobs) for v in _job_shape(instance, i, js)]


def rejected_idle(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    """``rejected_idle``: a rejected job (:math:`x_i = 0`) has no deployments."""
    return [
        _violation(
            "rejected_idle", f"{instance.job_name(i)} is not admitted but has deployments", i
        )
        for i, js in enumerate(solution.jobs)
        if not js.admitted and (js.workers or js.ps)
    ]


def before_arrival(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    """``before_arrival`` (9)-(10): no worker or PS before the job's arrival slot."""
    return [
        _violation(
            "before_arrival",
            f"{instance.job_name(i)}: {role}s in slot {t} < arrival {instance.jobs[i].arrival}",
            i,
            t,
        )
        for i, role, t, _, _ in _deployments(instance, solution)
        if t < instance.jobs[i].arrival
    ]


def work_requirement(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``work_requirement`` (2): an admitted job gets at least :math:`W_i` worker-slots."""
    workers = _per_slot(instance, solution, "worker")
    out: list[Violation] = []
    for i, js in enumerate(solution.jobs):
        if not js.admitted:
            continue
        job, name = instance.jobs[i], instance.job_name(i)
        done = sum(workers[i].values())
        need = (
            job.epochs * job.chunks * job.minibatches * job.minibatch_slots(instance.slot_seconds)
        )
        if not leq(need, done, WORK_TOL):
            out.append(
                _violation(
                    "work_requirement", f"{name}: {done} worker-slots < required {need:.6g}", i
                )
            )
        if not workers[i]:
            out.append(_violation("work_requirement", f"{name}: admitted with no workers", i))
    return out


def worker_cap(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``worker_cap`` (3): at most :math:`N_i` workers of a job in a slot."""
    return [
        _violation(
            "worker_cap",
            f"{instance.job_name(i)}: {n} workers in slot {t} > N = {instance.jobs[i].chunks}",
            i,
            t,
        )
        for i, slots in enumerate(_per_slot(instance, solution, "worker"))
        for t, n in slots.items()
        if n > instance.jobs[i].chunks
    ]


def _slot_counts(instance: OasisInstance, solution: Schedule) -> list[tuple[int, int, int, int]]:
    """``(job, slot, workers, PSs)`` for every slot in which an admitted job deploys anything."""
    workers = _per_slot(instance, solution, "worker")
    ps = _per_slot(instance, solution, "ps")
    return [
        (i, t, workers[i].get(t, 0), ps[i].get(t, 0))
        for i in range(len(solution.jobs))
        for t in set(workers[i]) | set(ps[i])
    ]


def ps_bandwidth(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``ps_bandwidth`` (6): :math:`b_i \sum_h y_{iht} \le B_i \sum_k z_{ikt}`."""
    return [
        _violation(
            "ps_bandwidth", f"{instance.job_name(i)}: slot {t}: b*{nw} workers > B*{npp} PSs", i, t
        )
        for i, t, nw, npp in _slot_counts(instance, solution)
        if not leq(instance.jobs[i].b * nw, instance.jobs[i].B * npp, WORK_TOL)
    ]


def ps_count(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``ps_count`` (7): no more PSs than workers of a job in a slot."""
    return [
        _violation("ps_count", f"{instance.job_name(i)}: slot {t}: {npp} PSs > {nw} workers", i, t)
        for i, t, nw, npp in _slot_counts(instance, solution)
        if npp > nw
    ]


def completion(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    """``completion`` (8): the reported completion is the last slot with workers + 1."""
    out: list[Violation] = []
    for i, slots in enumerate(_per_slot(instance, solution, "worker")):
        reported = solution.jobs[i].completion
        if slots and reported != max(slots) + 1:
            message = (
                f"{instance.job_name(i)}: reported completion {reported}, actual {max(slots) + 1}"
            )
            out.append(_violation("completion", message, i))
    return out


def utility(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``utility`` (1): each reported utility is :math:`f_i(C_i - a_i)`, and the total their sum.

    A rejected job's utility is 0.
    """
    values = _job_values(instance, solution)
    out: list[Violation] = []
    for i, js in enumerate(solution.jobs):
        if within(js.utility, values[i], UTILITY_TOL):
            continue
        name = instance.job_name(i)
        message = (
            f"{name}: reported utility {js.utility}, recomputed {values[i]}"
            if js.admitted
            else f"{name} is not admitted but reports utility {js.utility}"
        )
        out.append(_violation("utility", message, i))
    total = sum(values)
    if not within(solution.total_utility, total, UTILITY_TOL):
        message = f"reported total utility {solution.total_utility}, recomputed {total}"
        out.append(_violation("utility", message))
    return out


def _server_capacity(
    instance: OasisInstance, solution: Schedule, role: str, constraint: str
) -> list[Violation]:
    """Capacity of every (slot, server, resource) of one role, summed over admitted jobs."""
    servers = instance.worker_servers if role == "worker" else instance.ps_servers
    pool = "worker server" if role == "worker" else "PS server"
    use: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0] * len(instance.resources))
    for i, r, t, s, n in _deployments(instance, solution):
        if r == role:
            job = instance.jobs[i]
            demand = job.worker_demand if role == "worker" else job.ps_demand
            for r_idx, res in enumerate(instance.resources):
                use[(t, s)][r_idx] += n * demand.get(res, 0.0)
    return [
        _violation(
            constraint,
            f"slot {t}, {pool} {s}: {res} used {used[r_idx]:.6g} > capacity "
            f"{servers[s].capacity[res]:.6g}",
            None,
            t,
        )
        for (t, s), used in use.items()
        for r_idx, res in enumerate(instance.resources)
        if not leq(used[r_idx], servers[s].capacity[res], CAPACITY_TOL)
    ]


def worker_capacity(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``worker_capacity`` (4): :math:`\sum_i w_i^r y_{iht} \le c_h^r`."""
    return _server_capacity(instance, solution, "worker", "worker_capacity")


def ps_capacity(instance: OasisInstance, solution: Schedule) -> list[Violation]:
    r"""``ps_capacity`` (5): :math:`\sum_i s_i^r z_{ikt} \le c_k^r`."""
    return _server_capacity(instance, solution, "ps", "ps_capacity")


#: Every constraint the validator checks, by its name on the formulation page, in check order.
#: ``schedule_shape`` comes first: when the schedule has not one entry per job, nothing else is
#: checked.
CONSTRAINTS: dict[str, Callable[[OasisInstance, Schedule], list[Violation]]] = {
    "schedule_shape": schedule_shape,
    "rejected_idle": rejected_idle,
    "before_arrival": before_arrival,
    "work_requirement": work_requirement,
    "worker_cap": worker_cap,
    "worker_capacity": worker_capacity,
    "ps_capacity": ps_capacity,
    "ps_bandwidth": ps_bandwidth,
    "ps_count": ps_count,
    "completion": completion,
    "utility": utility,
}


def validate(instance: OasisInstance, solution: Schedule) -> Report:
    r"""Check a schedule against an instance and recompute its utility.

    Checks every constraint of :data:`CONSTRAINTS`, in the names used by the docs and the ILP:
    ``schedule_shape`` (one entry per job, valid slots and server indices, no duplicate
    entries), ``rejected_idle`` (a rejected job gets nothing), ``before_arrival`` (9)-(10),
    ``work_requirement`` (2), ``worker_cap`` (3), ``worker_capacity`` (4), ``ps_capacity`` (5),
    ``ps_bandwidth`` (6), ``ps_count`` (7), ``completion`` (8: the reported completion is the
    last slot with workers + 1) and ``utility`` (the reported utilities match
    :math:`f_i(\text{completion} - a_i)`).

    Parameters
    ----------
    instance : OasisInstance
    solution : Schedule

    Returns
    -------
    Report
        ``objective`` is the recomputed total utility, ``details["job_utility"]`` the
        recomputed utility per job (index order); each :class:`~optsched.results.Violation`
        has ``where`` with the ``job`` index and/or the ``slot`` where it is known.

    Notes
    -----
    Runs in :math:`O(\text{entries} \cdot R)` time per constraint. It deliberately
    re-implements every rule with plain loops instead of reusing the ILP or the oracle.
    """
    out = schedule_shape(instance, solution)
    if len(solution.jobs) != instance.n_jobs:
        return Report(out, details={"job_utility": []})
    for name, check in CONSTRAINTS.items():
        if name != "schedule_shape":
            out += check(instance, solution)
    values = _job_values(instance, solution)
    return Report(out, objective=sum(values), details={"job_utility": values})
