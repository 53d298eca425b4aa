"""Readers of the Alibaba PAI 2020 GPU trace's job and task tables (Weng et al., NSDI 2022).

Source: github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2020`` (README, section 2). The
tables are headerless CSVs whose columns are listed in the ``*.header`` files (a first line equal
to that header is accepted and skipped):

* ``pai_job_table``: ``job_name, inst_id, user, status, start_time, end_time``; ``start_time``
  is the job's **submission** time;
* ``pai_task_table``: ``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu,
  plan_mem, plan_gpu, gpu_type``; ``start_time``/``end_time`` are a task's launch and completion,
  ``plan_gpu`` is **percent of one GPU per instance** (50.0 = half a GPU), ``inst_num`` the
  number of instances.

Times are seconds with a constant removed by the publisher; they are kept as written
(``time_origin`` 0). Status values: ``Running``, ``Terminated``, ``Failed``, ``Waiting``; only
``Terminated`` jobs succeeded; every status is kept in the ``status`` column.

Mapping (a job = the tasks sharing its ``job_name``)
----------------------------------------------------
====================================  ============  ==============================================
source                                column        rule
====================================  ============  ==============================================
job_name                              job_id        as written
job ``start_time`` (job table), else  arrival       seconds as written: submission time with the
earliest task ``start_time``                        job table, the first launch without it
sum of ``inst_num * plan_gpu / 100``  gpu_fraction  GPUs as requested (may be fractional; extra)
ceil(gpu_fraction)                    num_gpus      a fractional demand occupies whole GPUs;
                                                    jobs with no GPU (CPU only) are skipped
latest task end - earliest task       duration      seconds the job's tasks ran (its queueing
start                                               before the first launch excluded); jobs
                                                    whose tasks have no end (still running) or
                                                    span 0 s are skipped
job ``user``                          user          job table only; ``""`` from tasks alone
job ``status`` (job table), else      status        as written (extra); tasks that disagree
tasks' common status                                give ``"mixed"``
tasks' common ``gpu_type``            gpu_type      extra; ``"mixed"`` when tasks differ
====================================  ============  ==============================================

``plan_cpu``, ``plan_mem``, ``task_name``, ``inst_id`` are not scheduling data for GPUs and are
dropped (their values are still checked: a non-number is an error). Skipped jobs are counted by
reason in ``meta["skipped"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace, stated_defaults

__all__ = ["JOB_FIELDS", "TASK_FIELDS", "read_pai_jobs", "read_pai_tasks"]

#: The normalized columns PAI's tables do not carry, set to their defaults (``meta["notes"]``).
_FILLED = ("model", "total_steps", "batch_size", "weight", "deadline")

JOB_FIELDS = ["job_name", "inst_id", "user", "status", "start_time", "end_time"]
TASK_FIELDS = [
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
]
_PLAN_BOUND = 1e8  # percent of a GPU / CPU, GB of memory: far beyond any machine


@dataclass
class _Job:
    row: int
    start: float = math.inf
    end: float = -math.inf
    gpu_percent: float = 0.0
    unfinished: bool = False
    statuses: set[str] = field(default_factory=set)
    gpu_types: set[str] = field(default_factory=set)


def _aggregate_tasks(path: str | Path) -> tuple[Rows, dict[str, _Job]]:
    rows = Rows(path)
    jobs: dict[str, _Job] = {}
    budget = limits.current().max_trace_rows
    first = True
    for number, parts in rows.lines(","):
        if first:
            first = False
            if [p.strip() for p in parts] == TASK_FIELDS:
                continue
        rows.fields(parts, TASK_FIELDS)
        f = dict(zip(TASK_FIELDS, parts, strict=True))
        name = rows.text(f["job_name"].strip(), "job_name", required=True)
        job = jobs.get(name)
        if job is None:
            if len(jobs) >= budget:
                raise InvalidInstanceError(
                    "<file>",
                    f"{rows.file} has more than max_trace_rows = {budget:,} jobs; raise it with "
                    "optsched.limits.override(max_trace_rows=...)",
                    file=rows.file,
                    row=number,
                )
            job = jobs[name] = _Job(row=number)
        rows.text(f["task_name"], "task_name")
        inst = rows.number(f["inst_num"], "inst_num", bound=BOUNDS["num_gpus"], empty=math.nan)
        rows.number(f["plan_cpu"], "plan_cpu", bound=_PLAN_BOUND, empty=0.0)
        rows.number(f["plan_mem"], "plan_mem", bound=_PLAN_BOUND, empty=0.0)
        gpu = rows.number(f["plan_gpu"], "plan_gpu", bound=_PLAN_BOUND, empty=0.0)
        start = rows.number(f["start_time"], "start_time", bound=BOUNDS["arrival"], empty=math.nan)
        end = rows.number(f["end_time"], "end_time", bound=BOUNDS["arrival"], empty=math.nan)
        if not (math.isnan(start) or math.isnan(end)) and end < start:
            raise rows.error("end_time", f"is before start_time ({end:g} < {start:g})")
        if math.isnan(start) or math.isnan(end) or math.isnan(inst):
            job.unfinished = True
        else:
            job.start = min(job.start, start)
            job.end = max(job.end, end)
            job.gpu_percent += inst * gpu
        job.statuses.add(rows.text(f["status"].strip(), "status"))
        gpu_type = rows.text(f["gpu_type"].strip(), "gpu_type")
        if gpu_type:  # CPU tasks (parameter servers) leave it empty
            job.gpu_types.add(gpu_type)
    return rows, jobs


def _one(values: set[str]) -> str:
    return next(iter(values)) if len(values) == 1 else ("mixed" if values else "")


def _emit(
    table: Table,
    skipped: dict[str, int],
    job_id: str,
    job: _Job | None,
    *,
    arrival: float | None = None,
    user: str = "",
    status: str | None = None,
) -> None:
    reason = None
    if job is None:
        reason = "no task rows"
    elif job.unfinished or job.end == -math.inf:
        reason = "task without start, end or inst_num (unfinished)"
    elif job.gpu_percent <= 0:
        reason = "no GPU requested (CPU job)"
    elif job.end - job.start <= 0:
        reason = "no positive duration"
    if reason is not None or job is None:
        skipped[reason or ""] = skipped.get(reason or "", 0) + 1
        table.check_budget()
        return
    fraction = job.gpu_percent / 100.0
    # Round away float noise (3 x 33.333... %) before taking the ceiling.
    gpus = max(1, math.ceil(round(fraction, 9)))
    if gpus > BOUNDS["num_gpus"]:
        raise table.rows.error("plan_gpu", f"sums to {fraction:g} GPUs, over the bound", job.row)
    table.add(
        "job_name",
        job_id=job_id,
        arrival=job.start if arrival is None else arrival,
        num_gpus=gpus,
        duration=job.end - job.start,
        user=user,
        status=_one(job.statuses) if status is None else status,
        gpu_type=_one(job.gpu_types),
        gpu_fraction=fraction,
    )


def read_pai_tasks(path: str | Path) -> Trace:
    """Read a PAI 2020 ``pai_task_table`` alone: one job per ``job_name``.

    See the module docstring for the mapping.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and column of the first bad value.
    """
    rows, jobs = _aggregate_tasks(path)
    table = Table(rows, extras=("status", "gpu_type", "gpu_fraction"))
    skipped: dict[str, int] = {}
    for name, job in jobs.items():
        rows.row = job.row
        _emit(table, skipped, name, job)
    meta = {"table": "task", "time_origin": 0.0, "skipped": skipped}
    meta = stated_defaults(meta, [*_FILLED, "user"])  # no job table: no user
    return Trace(table.frame(), source=str(path), format="pai-task", meta=meta)


def read_pai_jobs(path: str | Path, tasks: str | Path | None = None) -> Trace:
    """Read a PAI 2020 ``pai_job_table`` joined with its task table.

    Parameters
    ----------
    path : str or Path
        The job table.
    tasks : str or Path, optional
        The task table; default ``pai_task_table.csv`` beside the job table. The job table
        alone has no GPU demand, so a missing task table is an error.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and column of the first bad value, or ``tasks`` when the task
        table cannot be found.
    """
    p = Path(path)
    task_path = Path(tasks) if tasks is not None else p.with_name("pai_task_table.csv")
    if not task_path.is_file():
        raise InvalidInstanceError(
            "tasks",
            f"the PAI job table has no GPU demand; its task table {task_path} is not there "
            "(pass tasks=PATH, or --tasks on the command line)",
            file=str(p),
        )
    _, jobs = _aggregate_tasks(task_path)
    rows = Rows(p)
    table = Table(rows, extras=("status", "gpu_type", "gpu_fraction"))
    skipped: dict[str, int] = {}
    first = True
    for _, parts in rows.lines(","):
        if first:
            first = False
            if [x.strip() for x in parts] == JOB_FIELDS:
                continue
        rows.fields(parts, JOB_FIELDS)
        f = dict(zip(JOB_FIELDS, parts, strict=True))
        name = rows.text(f["job_name"].strip(), "job_name", required=True)
        rows.text(f["inst_id"], "inst_id")
        submit = rows.number(f["start_time"], "start_time", bound=BOUNDS["arrival"], empty=math.nan)
        rows.number(f["end_time"], "end_time", bound=BOUNDS["arrival"], empty=math.nan)
        if math.isnan(submit):
            skipped["no submission time"] = skipped.get("no submission time", 0) + 1
            continue
        _emit(
            table,
            skipped,
            name,
            jobs.get(name),
            arrival=submit,
            user=rows.text(f["user"].strip(), "user"),
            status=rows.text(f["status"].strip(), "status"),
        )
    meta = {"table": "job", "tasks": str(task_path), "time_origin": 0.0, "skipped": skipped}
    meta = stated_defaults(meta, _FILLED)
    return Trace(table.frame(), source=str(p), format="pai-job", meta=meta)
