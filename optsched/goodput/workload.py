"""Pollux's workload CSVs: the jobs of one simulated day, read into typed records.

Source: ``simulator/workloads*/workload-<n>.csv`` of github.com/petuum/adaptdl, branch
``osdi21-artifact`` (Apache-2.0; 8 workloads of 160 jobs, and 0.5x/1.5x/2x load variants).
One row per job, with a header:

============  =========  ==========================================================================
column        type       meaning
============  =========  ==========================================================================
name          str        unique job name (``cifar10-0``)
time          float      submission time, seconds from the start of the workload, ``>= 0``
application   str        job type: a folder of the artifact's ``traces/`` (``cifar10``, ``bert``...)
num_replicas  int        GPUs the job's owner asks for, ``>= 1`` (the fixed-size baselines' gang;
                         Pollux ignores it)
batch_size    int        the owner's (tuned) global batch, ``>= 1`` (the fixed-batch baselines'
                         batch; Pollux starts from the application's initial batch instead)
============  =========  ==========================================================================

A job's length is not in the file: it trains its application for that application's number of
epochs (:mod:`optsched.goodput.traces`). Rows are kept in file order (the artifact's, sorted by
time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows, Table, budget_error
from optsched.traces.schema import BOUNDS

__all__ = ["WORKLOAD_COLUMNS", "PolluxJob", "PolluxWorkload", "read_workload", "write_workload"]

#: The columns of a workload CSV: name -> (type, meaning).
WORKLOAD_COLUMNS: dict[str, tuple[str, str]] = {
    "name": ("str", "unique job name"),
    "time": ("float", "submission time in seconds, >= 0"),
    "application": ("str", "job type (a folder of the artifact's traces/)"),
    "num_replicas": ("int", "GPUs requested by the owner, >= 1"),
    "batch_size": ("int", "the owner's global batch size, >= 1"),
}


@dataclass(frozen=True)
class PolluxJob:
    """One job of a Pollux workload (see the module's table)."""

    name: str
    time: float
    application: str
    num_replicas: int
    batch_size: int


@dataclass(frozen=True)
class PolluxWorkload:
    """The jobs of one workload file, in file order.

    Attributes
    ----------
    jobs : tuple of PolluxJob
    source : str
        The file read ("" when built in memory).
    """

    jobs: tuple[PolluxJob, ...]
    source: str = ""

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def applications(self) -> list[str]:
        """The job types used, sorted."""
        return sorted({j.application for j in self.jobs})

    @classmethod
    def load(cls, path: str | Path) -> PolluxWorkload:
        """Read a workload CSV (:func:`read_workload`)."""
        return read_workload(path)

    def save(self, path: str | Path) -> None:
        """Write the workload CSV (:func:`write_workload`), which reads back equal."""
        write_workload(self, path)


def read_workload(path: str | Path) -> PolluxWorkload:
    r"""Read one of Pollux's workload CSVs.

    Raises
    ------
    InvalidInstanceError
        Naming the file, the 1-based row and the column of the first bad value (a missing
        column, a negative time, a duplicate name, a batch that is not a whole number...).

    Notes
    -----
    Streaming, :math:`O(\text{jobs})` memory, bounded by ``max_trace_rows``.
    """
    rows = Rows(path)
    csv = HeaderCSV(rows, required=list(WORKLOAD_COLUMNS))
    table = Table(rows)  # for its duplicate-name check
    budget = limits.current().max_trace_rows
    jobs: list[PolluxJob] = []
    for f in csv:
        if len(jobs) >= budget:
            raise budget_error(path, budget, rows.row)
        name = rows.text(f["name"].strip(), "name", required=True)
        table.remember("name", name)
        jobs.append(
            PolluxJob(
                name=name,
                time=rows.number(f["time"], "time", bound=BOUNDS["arrival"]),
                application=rows.text(f["application"].strip(), "application", required=True),
                num_replicas=rows.count(f["num_replicas"], "num_replicas"),
                batch_size=rows.count(f["batch_size"], "batch_size", bound=BOUNDS["batch_size"]),
            )
        )
    if not jobs:
        raise InvalidInstanceError("<file>", f"{path} has no jobs", file=str(path))
    return PolluxWorkload(tuple(jobs), source=str(path))


def _number(value: float) -> str:
    # whole seconds as the artifact writes them; anything else exactly (repr round-trips)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_workload(workload: PolluxWorkload, path: str | Path) -> None:
    """Write ``workload`` in the artifact's CSV layout (header, then one row per job)."""
    lines = [",".join(WORKLOAD_COLUMNS)]
    for j in workload.jobs:
        for column, value in (("name", j.name), ("application", j.application)):
            if "," in value or '"' in value or "\n" in value:
                raise InvalidInstanceError(column, f"{value[:40]!r} cannot be written unquoted")
        lines.append(f"{j.name},{_number(j.time)},{j.application},{j.num_replicas},{j.batch_size}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
