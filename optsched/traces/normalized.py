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
from typing import Any

import numpy as np

from optsched.traces._columnar import collect, counts, floats, texts
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import (
    BOUNDS,
    COLUMNS,
    EXTRA_COLUMNS,
    NULLABLE,
    Trace,
    _kind,
    build_frame,
)

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


def _read_columnar(path: str | Path, header: list[str]) -> Trace | None:
    """Check a clean normalized CSV column by column; None sends it to the row reader."""
    cols = collect(path, header)
    if cols is None:
        return None
    values: dict[str, Any] = {}
    for name in header:
        kind = _kind(name)
        if kind == "str":
            got: Any = texts(cols[name], required=name == "job_id", strip=False)
        elif kind == "int":
            got = counts(cols[name], bound=BOUNDS[name])
        else:
            got = floats(
                cols[name], bound=BOUNDS[name], positive=name in _POSITIVE,
                nullable=name in NULLABLE,
            )  # fmt: skip
        if got is None:
            return None
        values[name] = got
    arrival, deadline = values["arrival"], values["deadline"]
    with np.errstate(invalid="ignore"):
        early = bool(np.any(deadline < arrival))
    no_work = bool(np.any(np.isnan(values["total_steps"]) & np.isnan(values["duration"])))
    if early or no_work or len(set(values["job_id"])) != len(values["job_id"]):
        return None
    base = {name: values[name] for name in COLUMNS}
    extras = {name: values[name] for name in header[len(COLUMNS) :]}
    return Trace(
        build_frame(base, extras), source=str(path), format="optsched", meta={"skipped": {}}
    )


def read_normalized(path: str | Path, *, columnar: bool = True) -> Trace:
    """Read the normalized CSV written by :func:`write_trace`.

    The header must be the normalized columns in order followed only by documented extras. A
    clean file is checked column by column (``columnar=True``); any other is read row by row,
    which names the offending row and column (both paths accept the same files, tested).

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
        # name the first column that is missing or out of place, so the error points at it
        field = next((c for k, c in enumerate(base) if k >= len(got) or got[k] != c), "<header>")
        raise rows.error(field, f"the header must start with {', '.join(base)}; got {got}")
    extras = tuple(header[len(base) :])
    for name in extras:
        if name not in EXTRA_COLUMNS:
            raise rows.error(name, f"is not a documented column ({', '.join(EXTRA_COLUMNS)})")
    if len(set(header)) != len(header):
        raise rows.error("<header>", "a column appears twice")
    if columnar:
        fast = _read_columnar(path, header)
        if fast is not None:
            return fast
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
