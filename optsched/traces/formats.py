"""Format detection and the one entry point :func:`read_trace`.

Detection looks at the first non-blank line only (read through the guarded boundary):

=============  ===============================================================================
format         recognised by
=============  ===============================================================================
optsched       header of normalized columns (documented extras allowed) in any order, ``job_id``
               among them, or one naming ``job_id``, ``arrival`` and ``num_gpus``
gavel          a tab-separated line of 7, 10 or 12 fields, or the extension ``.trace``
elasticflow    header with ``job_id`` and ``submission_time``
tiresias       header with ``job_id``, ``num_gpu`` and ``submit_time``
helios         header with ``gpu_num`` and ``submit_time`` (``philly`` is the same schema: name
               it with ``format="philly"``)
pai-job        headerless line of 6 comma-separated fields (or the ``pai_job_table`` header)
pai-task       headerless line of 10 comma-separated fields (or the ``pai_task_table`` header)
=============  ===============================================================================

Anything else is refused with the list of formats, and ``format=`` overrides detection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from optsched._io import iter_lines
from optsched.errors import InvalidInstanceError
from optsched.traces.elasticflow import read_elasticflow
from optsched.traces.gavel import read_gavel
from optsched.traces.helios import read_helios
from optsched.traces.normalized import read_normalized
from optsched.traces.pai import JOB_FIELDS, TASK_FIELDS, read_pai_jobs, read_pai_tasks
from optsched.traces.schema import COLUMNS, EXTRA_COLUMNS, Trace
from optsched.traces.tiresias import read_tiresias

__all__ = ["FORMATS", "detect_format", "read_trace"]


def _helios(path: str | Path) -> Trace:
    return read_helios(path, label="helios")


def _philly(path: str | Path) -> Trace:
    return read_helios(path, label="philly")


#: Format name -> reader.
FORMATS: dict[str, Callable[..., Trace]] = {
    "optsched": read_normalized,
    "gavel": read_gavel,
    "elasticflow": read_elasticflow,
    "tiresias": read_tiresias,
    "helios": _helios,
    "philly": _philly,
    "pai-job": read_pai_jobs,
    "pai-task": read_pai_tasks,
}


def _normalized_header(names: set[str]) -> bool:
    """Whether a header is the normalized table's, its columns in any order, maybe not all.

    Either every name is a normalized column or a documented extra, ``job_id`` among them, or
    the header names ``job_id``, ``arrival`` and ``num_gpus`` (no other format has those three,
    so the normalized reader names whatever else is wrong with it).
    """
    if "job_id" not in names:
        return False
    return names <= set(COLUMNS) | set(EXTRA_COLUMNS) or {"arrival", "num_gpus"} <= names


def detect_format(path: str | Path) -> str:
    """Name the format of ``path`` from its first non-blank line (see the module docstring).

    Raises
    ------
    InvalidInstanceError
        The file is refused by the guarded boundary, is empty, or matches no format
        (``field="format"``).
    """
    first: str | None = None
    row = 0
    lines = iter_lines(path)
    try:
        for number, line in lines:
            if line.strip():
                first, row = line, number
                break
    finally:
        close = getattr(lines, "close", None)  # a generator: close the file after one line
        if close is not None:
            close()
    if first is None:
        raise InvalidInstanceError(
            "format", "the file is empty; no format to detect", file=str(path)
        )
    if "\t" in first:
        count = len(first.split("\t"))
        if count in (7, 10, 12):
            return "gavel"
    if Path(path).suffix.lower() == ".trace":
        # Gavel's extension: its reader names what is wrong with the first line
        return "gavel"
    names = {p.strip() for p in first.split(",")}
    parts = [p.strip() for p in first.split(",")]
    if parts[:3] == list(COLUMNS)[:3] or _normalized_header(names):
        # the normalized table, its columns in any order: its reader names what is missing
        return "optsched"
    if {"job_id", "submission_time"} <= names:
        return "elasticflow"
    if {"job_id", "num_gpu", "submit_time"} <= names:
        return "tiresias"
    if {"gpu_num", "submit_time"} <= names:
        return "helios"
    if parts == JOB_FIELDS or (len(parts) == 6 and not names & set(COLUMNS)):
        return "pai-job"
    if parts == TASK_FIELDS or (len(parts) == 10 and not names & set(COLUMNS)):
        return "pai-task"
    raise InvalidInstanceError(
        "format",
        f"cannot tell the trace format from its first line ({first[:120]!r}); name it with "
        f"format= / --format (one of {', '.join(FORMATS)})",
        file=str(path),
        row=row,
    )


def read_trace(path: str | Path, format: str | None = None, **options: Any) -> Trace:
    """Read any supported trace into the normalized job table.

    Parameters
    ----------
    path : str or Path
    format : str, optional
        One of :data:`FORMATS`; detected from the first line when omitted.
    **options
        Passed to the reader (``tasks=`` for ``"pai-job"``).

    Returns
    -------
    Trace

    Raises
    ------
    InvalidInstanceError
        An unknown format name (``field="format"``), or any problem of the file, naming its
        row and column.

    Examples
    --------
    A trace written in the normalized format is read back with its format detected:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from optsched.traces import generate_trace, read_trace, write_trace
    >>> path = write_trace(generate_trace(5, seed=0), Path(tempfile.mkdtemp()) / "jobs.csv")
    >>> trace = read_trace(path)
    >>> len(trace), trace.format
    (5, 'optsched')
    """
    name = detect_format(path) if format is None else format.lower()
    reader = FORMATS.get(name)
    if reader is None:
        raise InvalidInstanceError(
            "format", f"unknown trace format {format!r}; known: {', '.join(FORMATS)}"
        )
    if options and name != "pai-job":
        raise InvalidInstanceError(next(iter(options)), f"is not an option of the {name!r} reader")
    return reader(path, **options)
