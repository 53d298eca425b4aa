"""The normalized trace CSV: optsched's own file for a :class:`~optsched.traces.Trace`.

:func:`write_trace` writes a header line with the columns of
:data:`~optsched.traces.schema.COLUMNS` in order, then the documented extra columns the trace
carries, then one line per job. Floats are written with Python's shortest round-trip
representation (``repr``), NaN as an empty field, strings quoted only when they hold a comma or
a quote (RFC 4180). Reading a written file gives back the same table, bit for bit:
``read_trace(write_trace(t, p)).equals(t)``.

:func:`read_normalized` also takes a file written by hand: its columns are matched **by name,
in any order**. The minimal file has ``job_id``, ``arrival``, ``num_gpus`` and one of
``total_steps`` / ``duration``::

    job_id,arrival,num_gpus,model,duration
    a,0,1,ResNet-50,3600
    b,60,4,,7200

Every normalized column left out takes its value of :data:`~optsched.traces.schema.DEFAULTS`
for every job (``model`` and ``user`` ``""``, ``total_steps`` / ``duration`` / ``batch_size``
unknown, ``weight`` 1.0, ``deadline`` none), and the trace says so: ``meta["defaults"]`` maps each
such column to its value and ``meta["notes"]`` states it in words (``optsched trace info`` and
``optsched sim run`` print it). A name that is neither a normalized column nor a documented
extra is refused, naming it.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces._arrow import available, read_columns, scan
from optsched.traces._columnar import collect, counts, floats, texts
from optsched.traces._rows import Rows, Table, check_row_budget
from optsched.traces.schema import (
    BOUNDS,
    COLUMNS,
    DEFAULTS,
    EXTRA_COLUMNS,
    NULLABLE,
    REQUIRED,
    Trace,
    _kind,
    build_frame,
    defaults_note,
    stated_defaults,
)

__all__ = ["ENGINES", "defaulted", "defaults_note", "read_normalized", "write_trace"]

_POSITIVE = {"total_steps", "duration", "batch_size", "weight", "slo_factor", "gpu_fraction"}


#: What makes the csv module quote a field (QUOTE_MINIMAL with "," and "\\n").
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')

#: Rows formatted and written at a time (bounds the text held in memory while writing).
WRITE_BLOCK = 16_384


def write_trace(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` as the normalized CSV (header, one line per job) and return the path.

    The file is written atomically: into a temporary file in the same directory, renamed over
    ``path`` only once complete, so an interrupted or failed write never leaves a partial CSV
    (an existing ``path`` is left as it was).

    Notes
    -----
    :math:`O(n)` time; rows are formatted a block of :data:`WRITE_BLOCK` at a time (the text of
    one block is held, not the file's), each column of a block converted in one pass.
    """
    p = Path(path)
    jobs = trace.jobs
    columns = [str(c) for c in jobs.columns]
    kinds = [_kind(c) for c in columns]
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            for start in range(0, len(jobs), WRITE_BLOCK):
                write_block(fh, writer, jobs.iloc[start : start + WRITE_BLOCK], columns, kinds)
        os.chmod(tmp, _file_mode(p))
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p


def write_block(
    fh: Any, writer: Any, block: pd.DataFrame, columns: list[str], kinds: list[str]
) -> None:
    r"""Write the rows of ``block`` (a slice of a normalized table) as CSV lines to ``fh``.

    ``writer`` is a ``csv.writer`` on ``fh`` with ``lineterminator="\n"``; ``kinds`` are the
    columns' kinds (:func:`~optsched.traces.schema._kind`). The bytes are those of
    :func:`write_trace` for the same rows.
    """
    cells = [_cells(block[c], k) for c, k in zip(columns, kinds, strict=True)]
    texts = [cells[i] for i, k in enumerate(kinds) if k == "str"]
    if any(_NEEDS_QUOTES.search("".join(t)) for t in texts):
        writer.writerows(zip(*cells, strict=True))
    else:
        # no field needs quoting: the csv module would write exactly these bytes
        fh.write("".join([",".join(row) + "\n" for row in zip(*cells, strict=True)]))


def _cells(series: Any, kind: str) -> list[str]:
    """One column of a block as CSV text: ``str`` as is, whole numbers, ``repr`` of floats."""
    if kind == "str":
        return [str(v) for v in series.tolist()]
    if kind == "int":
        return list(map(str, series.to_numpy(dtype=np.int64).tolist()))
    # repr is the shortest text that reads back as the same double; NaN is written empty.
    # Each distinct value is formatted once (weights, batch sizes and NaN repeat a lot).
    # Values are told apart by their bits, so that -0.0 is not written as 0.0.
    values = np.ascontiguousarray(series.to_numpy(dtype=np.float64))
    codes, bits = pd.factorize(values.view(np.int64))
    texts = [repr(v) if v == v else "" for v in np.asarray(bits).view(np.float64).tolist()]
    return np.array(texts, dtype=object)[codes].tolist()


def _file_mode(path: Path) -> int:
    """The mode a new file would get (mkstemp makes 0600): kept from ``path`` if it exists."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


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
    _filled(values, header)
    arrival, deadline = values["arrival"], values["deadline"]
    with np.errstate(invalid="ignore"):
        early = bool(np.any(deadline < arrival))
    no_work = bool(np.any(np.isnan(values["total_steps"]) & np.isnan(values["duration"])))
    if early or no_work or len(set(values["job_id"])) != len(values["job_id"]):
        return None
    base = {name: values[name] for name in COLUMNS}
    extras = {name: values[name] for name in _extras(header)}
    return Trace(build_frame(base, extras), source=str(path), format="optsched", meta=_meta(header))


def _read_arrow(path: str | Path, header: list[str], rows: int) -> Trace | None:
    """The pyarrow pass (:mod:`optsched.traces._arrow`); None sends the file to the row reader."""
    values = read_columns(
        path,
        header,
        {name: _kind(name) for name in header},
        bounds=BOUNDS,
        positive=_POSITIVE,
        nullable=NULLABLE,
        required={"job_id"},
        max_rows=rows,
    )
    if values is None:
        return None
    _filled(values, header)
    base = {name: values.pop(name) for name in COLUMNS}
    extras = {name: values.pop(name) for name in _extras(header)}
    try:
        # cross-row rules (unique ids, deadline >= arrival, a step count or a duration) are the
        # table's: a file that breaks one goes to the row reader, which names its line
        return Trace(
            build_frame(base, extras), source=str(path), format="optsched", meta=_meta(header)
        )
    except InvalidInstanceError:
        return None


#: Ways to read a normalized CSV; every one accepts the same files with the same table.
ENGINES = ("auto", "arrow", "python", "rows")


def read_normalized(path: str | Path, *, columnar: bool = True, engine: str = "auto") -> Trace:
    """Read the normalized CSV written by :func:`write_trace`.

    Columns are matched by name in any order (module notes): the header needs ``job_id``,
    ``arrival``, ``num_gpus`` and ``total_steps`` or ``duration``; any other normalized column
    may be left out (its default is then stated in ``meta["defaults"]`` and ``meta["notes"]``),
    and the only other names allowed are the documented extras. A clean file is checked column
    by column; any other is read row by row, which names the
    offending row and column (every path accepts the same files with the same table, tested).

    Parameters
    ----------
    path : path-like
    columnar : bool
        False reads row by row (the same as ``engine="rows"``).
    engine : {"auto", "arrow", "python", "rows"}
        ``"arrow"``: pyarrow's CSV parser in streamed blocks, checked in C++
        (:mod:`optsched.traces._arrow`); ``"python"``: the column-at-a-time pass over lines
        split in Python; ``"rows"``: the row reader alone. ``"auto"`` is ``"arrow"`` when
        pyarrow imports, else ``"python"``. A columnar pass that has any doubt about a file
        leaves it to the row reader.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and column of the first bad value; ``field="<file>"`` before
        anything is stored when the file has more than ``max_trace_rows`` rows.

    Notes
    -----
    The row budget is checked first, from a count of the file's line feeds (one streamed read
    at memory speed); only a file with more lines than the budget is counted line by line,
    and that count stops at the first row over the budget.
    """
    if engine not in ENGINES:
        raise InvalidInstanceError("engine", f"must be one of {', '.join(ENGINES)}, got {engine!r}")
    if not columnar:
        engine = "rows"
    if engine == "auto":
        engine = "arrow" if available() else "python"
    header = _header(path)
    newlines, plain = scan(path)
    check_row_budget(path, newlines)
    if engine == "arrow" and plain:
        # never more rows than the budget, whatever the count above could not tell
        fast = _read_arrow(path, header, rows=min(newlines + 1, limits.current().max_trace_rows))
        if fast is not None:
            return fast
    elif engine == "python":
        fast = _read_columnar(path, header)
        if fast is not None:
            return fast
    return _read_rows(path, header)


def _header(path: str | Path) -> list[str]:
    """The header line, checked: columns of the schema, matched by name, in any order.

    It must name each column of :data:`~optsched.traces.schema.REQUIRED` and ``total_steps`` or
    ``duration``; every other name must be a normalized column or a documented extra. The names
    are returned stripped of spaces, in file order.
    """
    rows = Rows(path)
    lines = rows.lines(",")
    header: list[str] | None = None
    for _, parts in lines:
        header = [p.strip() for p in parts]
        break
    lines.close()  # type: ignore[attr-defined]  # the rest of the file is read by a path
    if header is None:
        raise rows.error(
            REQUIRED[0], f"the file is empty; the header needs at least {', '.join(REQUIRED)}"
        )
    for name in header:
        if name not in COLUMNS and name not in EXTRA_COLUMNS:
            raise rows.error(
                name or "<header>",
                f"is not a column of the normalized table ({', '.join(COLUMNS)}) nor a "
                f"documented extra ({', '.join(EXTRA_COLUMNS)})",
            )
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise rows.error(name, f"{name!r} appears twice in the header")
        seen.add(name)
    for name in REQUIRED:
        if name not in seen:
            raise rows.error(
                name,
                f"missing from the header (found: {', '.join(header)}); a normalized CSV "
                f"needs {', '.join(REQUIRED)} and total_steps or duration",
            )
    if not seen.intersection(WORK):
        raise rows.error(
            "duration",
            f"the header needs total_steps or duration (a job's work); found: {', '.join(header)}",
        )
    return header


#: Columns of which a normalized CSV must have at least one (a job's work).
WORK = ("total_steps", "duration")


def defaulted(header: list[str]) -> dict[str, Any]:
    """The normalized columns ``header`` leaves out, each with the value every row then takes."""
    return {name: DEFAULTS[name] for name in COLUMNS if name not in header}


def _meta(header: list[str]) -> dict[str, Any]:
    """The trace's ``meta``: ``skipped`` (none) and, when columns were left out, ``defaults``."""
    return stated_defaults({"skipped": {}}, list(defaulted(header)))


def _filled(values: dict[str, Any], header: list[str]) -> dict[str, Any]:
    """``values`` (the file's columns) with every left-out normalized column at its default."""
    rows = len(values["job_id"])
    for name, value in defaulted(header).items():
        kind = _kind(name)
        if kind == "str":
            values[name] = np.full(rows, value, dtype=object)
        else:
            values[name] = np.full(rows, value, dtype=np.float64)
    return values


def _extras(header: list[str]) -> list[str]:
    """The documented extra columns of ``header``, in file order."""
    return [name for name in header if name not in COLUMNS]


def _read_rows(path: str | Path, header: list[str]) -> Trace:
    """The row reader: every field checked where it stands, errors naming file, row, column."""
    rows = Rows(path)
    lines = rows.lines(",")
    next(lines, None)  # the header, checked by _header
    table = Table(rows, extras=tuple(_extras(header)))
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
        # a column the header leaves out takes its default (Table.add)
        table.add("job_id", **values)
    return Trace(table.frame(), source=str(path), format="optsched", meta=_meta(header))
