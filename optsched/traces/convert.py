r"""``trace convert`` in bounded memory: a clean normalized CSV streamed block by block.

:func:`convert_trace` writes any supported trace as the normalized CSV, the same bytes as
``write_trace(read_trace(source), output)``, without holding the whole table when it can:

* **streamed** -- a normalized (``optsched``) CSV that pyarrow's reader can take (no quotes,
  plain ``\n`` or ``\r\n`` lines: :func:`~optsched.traces._arrow.scan`) is parsed in blocks of
  :data:`~optsched.traces._arrow.BLOCK_BYTES`; each block is checked with the row reader's rules
  (the pass of :mod:`optsched.traces._arrow`, then the table's own :class:`Trace` checks),
  formatted and written before the next is read. Across blocks it keeps only the last arrival
  and one 64-bit hash per job id (8 bytes a row), which tell whether the file is in arrival
  order (the table is sorted by arrival, so a file out of order would be reordered) and whether
  its ids are unique. Memory: :math:`O(\text{block} + 8n)` bytes for :math:`n` rows.
* **whole** -- any other file (another format, a normalized file the stream has any doubt
  about: out of order, a repeated id hash, a value the row reader must judge) is read whole,
  which names the file, row and column of a bad value. That needs memory linear in the rows
  (about 265 bytes a row), so a file with more rows than the budget ``max_convert_rows``
  (:mod:`optsched.limits`) is refused up front, naming the file and the budget, before it is
  parsed; the row count is a streamed count of its line feeds.

The output is written to a temporary file beside ``output`` and renamed over it once
complete: a failed or interrupted conversion leaves no partial CSV.
"""

from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces.schema import COLUMNS

__all__ = ["convert_trace"]


def convert_trace(
    source: str | Path,
    output: str | Path,
    *,
    format: str | None = None,
    tasks: str | Path | None = None,
    stream: bool = True,
) -> dict[str, Any]:
    """Convert ``source`` (any supported format) to the normalized CSV ``output``.

    Parameters
    ----------
    source, output : path-like
    format : str, optional
        The source's format (detected from its first line when omitted).
    tasks : path-like, optional
        The task table joined to a ``pai-job`` source.
    stream : bool, default True
        Try the streamed pass first (module notes); ``False`` always reads the table whole.

    Returns
    -------
    dict
        ``source``, ``format``, ``output``, ``jobs``, ``columns``, ``skipped`` (rows left out,
        by reason), ``notes`` (the reader's, e.g. columns a hand-written CSV left out and the
        defaults they took) and ``streamed`` (whether the streamed pass wrote the file).

    Raises
    ------
    InvalidInstanceError
        A bad value (file, row and column named); a file read whole with more rows than
        ``max_convert_rows`` (``field="<file>"``, before parsing), or than ``max_trace_rows``.
    OSError
        ``output`` cannot be written (its name set as the error's ``filename``); no partial
        file is left.
    """
    from optsched.traces import _arrow
    from optsched.traces._rows import check_row_budget
    from optsched.traces.formats import detect_format, read_trace
    from optsched.traces.normalized import _header, write_trace

    src, out = Path(source), Path(output)
    name = detect_format(src) if format is None else format.lower()
    try:
        newlines, plain = _arrow.scan(src)
    except OSError as exc:
        # missing, a folder, unreadable: named as the guarded loader names it (exit 2)
        raise InvalidInstanceError(
            "<file>", f"cannot read {src}: {exc.strerror or exc}", file=str(src)
        ) from None
    if stream and name == "optsched" and tasks is None and plain and _arrow.available():
        header = _header(src)
        check_row_budget(src, newlines)
        # the stream copies columns as they stand: a file with columns left out or in another
        # order is read whole (its reader fills and orders them)
        canonical = header[: len(COLUMNS)] == list(COLUMNS)
        jobs = _stream(src, out, header) if canonical else None
        if jobs is not None:
            return {
                "source": str(src),
                "format": "optsched",
                "output": str(out),
                "jobs": jobs,
                "columns": header,
                "skipped": {},
                "notes": [],
                "streamed": True,
            }
    budget = limits.current().max_convert_rows
    if newlines > budget:  # lines less the header, plus a last line without a line feed
        raise InvalidInstanceError(
            "<file>",
            f"has about {newlines:,} rows, more than the {budget:,} that trace convert reads "
            "whole (budget max_convert_rows, raise it with OPTSCHED_MAX_CONVERT_ROWS); only a "
            "clean normalized CSV in arrival order is converted in a stream",
            file=str(src),
        )
    options = {"tasks": tasks} if tasks is not None else {}
    trace = read_trace(src, format=format, **options)
    write_trace(trace, out)
    return {
        "source": str(src),
        "format": trace.format,
        "output": str(out),
        "jobs": len(trace),
        "columns": [str(c) for c in trace.jobs.columns],
        "skipped": dict(trace.meta.get("skipped") or {}),
        "notes": list(trace.meta.get("notes") or ()),
        "streamed": False,
    }


def _stream(source: Path, output: Path, header: list[str]) -> int | None:
    """The streamed pass: the rows written, or None (nothing left behind) on any doubt."""
    from optsched.traces.normalized import _file_mode

    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            rows = _copy(source, fh, header)
        if rows is None:
            os.unlink(tmp)
            return None
        os.chmod(tmp, _file_mode(output))
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return rows


def _copy(source: Path, fh: Any, header: list[str]) -> int | None:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from optsched._io import MAX_LINE_CHARS
    from optsched.traces._arrow import BLOCK_BYTES, _numbers, _strings, plain_parse_options
    from optsched.traces.normalized import _POSITIVE, write_block
    from optsched.traces.schema import BOUNDS, COLUMNS, NULLABLE, Trace, _kind, build_frame

    kinds = [_kind(n) for n in header]
    pool = pa.default_memory_pool()
    try:
        reader = pacsv.open_csv(
            str(source),
            read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=False),
            parse_options=plain_parse_options(),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in header},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
            memory_pool=pool,
        )
    except (pa.ArrowException, OSError, ValueError):
        return None
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(header)
    field_cap = MAX_LINE_CHARS // max(len(header), 1)
    rows = 0
    last_arrival = -np.inf
    hashes: list[np.ndarray] = []
    try:
        if reader.schema.names != header:
            return None
        for batch in reader:
            values: dict[str, Any] = {}
            for i, name in enumerate(header):
                column = batch.column(i)
                if kinds[i] == "str":
                    got = _strings(column, name == "job_id", field_cap, {})
                    if got is not None:
                        got = np.asarray(got.to_numpy(zero_copy_only=False), dtype=object)
                else:
                    got = _numbers(
                        column,
                        bound=BOUNDS[name],
                        positive=name in _POSITIVE,
                        nullable=name in NULLABLE,
                        whole=kinds[i] == "int",
                    )
                if got is None:
                    return None
                values[name] = got
            arrival = values["arrival"]
            if len(arrival) == 0:
                continue
            # out of arrival order: the table would be reordered, which needs it whole
            if arrival[0] < last_arrival or bool(np.any(arrival[1:] < arrival[:-1])):
                return None
            last_arrival = float(arrival[-1])
            base = {n: values.pop(n) for n in COLUMNS}
            try:
                # the table's own checks on this block (deadline >= arrival, work given ...)
                block = Trace(build_frame(base, values), source=str(source)).jobs
            except InvalidInstanceError:
                return None
            hashes.append(pd.util.hash_array(base["job_id"]))
            write_block(fh, writer, block, header, kinds)
            rows += len(block)
            del batch, block, base, values
            pool.release_unused()
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowException):
            raise  # the output's write failed: the caller names it
        return None
    finally:
        reader.close()
    if hashes:
        seen = np.concatenate(hashes)
        hashes.clear()
        seen.sort()  # in place: the hashes are held once more, not twice
        if bool(np.any(seen[1:] == seen[:-1])):
            return None  # a repeated id (or a hash collision): the whole read decides
    return rows
