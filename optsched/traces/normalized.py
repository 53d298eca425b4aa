"""The normalized trace CSV: optsched's own file for a :class:`~optsched.traces.Trace`.

A header line with the columns of :data:`~optsched.traces.schema.COLUMNS` in order, then the
documented extra columns the trace carries, then one line per job. Floats are written with
Python's shortest round-trip representation (``repr``), NaN as an empty field, strings quoted
only when they hold a comma or a quote (RFC 4180). Reading a written file gives back the same
table, bit for bit: ``read_trace(write_trace(t, p)).equals(t)``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, COLUMNS, EXTRA_COLUMNS, NULLABLE, Trace, _kind

__all__ = ["read_normalized", "write_trace"]

_POSITIVE = {"total_steps", "duration", "batch_size", "weight", "slo_factor", "gpu_fraction"}


def write_trace(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` as the normalized CSV (header, one line per job) and return the path.

    Notes
    -----
    :math:`O(n)` time; writes row by row (no second copy of the table in memory).
    """
    p = Path(path)
    jobs = trace.jobs
    columns = [str(c) for c in jobs.columns]
    kinds = [_kind(c) for c in columns]
    arrays = [jobs[c].to_numpy(dtype=object if k == "str" else None) for c, k in zip(
        columns, kinds, strict=True)]  # fmt: skip
    with open(p, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for i in range(len(jobs)):
            out: list[str] = []
            for array, kind in zip(arrays, kinds, strict=True):
                value = array[i]
                if kind == "str":
                    out.append(str(value))
                elif kind == "int":
                    out.append(str(int(value)))
                else:
                    v = float(value)
                    out.append("" if math.isnan(v) else repr(v))
            writer.writerow(out)
    return p


def read_normalized(path: str | Path) -> Trace:
    """Read the normalized CSV written by :func:`write_trace`.

    The header must be the normalized columns in order followed only by documented extras.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and column of the first bad value.
    """
    rows = Rows(path)
    lines = rows.lines(",")
    header: list[str] | None = None
    for _, parts in lines:
        header = parts
        break
    base = list(COLUMNS)
    if header is None or header[: len(base)] != base:
        got = [] if header is None else header[: len(base)]
        raise rows.error("<header>", f"the header must start with {', '.join(base)}; got {got}")
    extras = tuple(header[len(base) :])
    for name in extras:
        if name not in EXTRA_COLUMNS:
            raise rows.error(name, f"is not a documented column ({', '.join(EXTRA_COLUMNS)})")
    if len(set(header)) != len(header):
        raise rows.error("<header>", "a column appears twice")
    table = Table(rows, extras=extras)
    kinds = [_kind(c) for c in header]
    for _, parts in lines:
        rows.fields(parts, header)
        values: dict[str, object] = {}
        for name, kind, text in zip(header, kinds, parts, strict=True):
            if kind == "str":
                values[name] = rows.text(text, name, required=name == "job_id")
            elif kind == "int":
                values[name] = rows.count(text, name)
            else:
                values[name] = rows.number(
                    text,
                    name,
                    bound=BOUNDS[name],
                    positive=name in _POSITIVE,
                    empty=math.nan if name in NULLABLE else None,
                )
        table.add("job_id", **values)
    return Trace(table.frame(), source=str(path), format="optsched", meta={"skipped": {}})
