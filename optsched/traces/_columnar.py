"""Column-at-a-time checks for clean files, with the row reader as the authority on errors.

A reader's columnar pass collects a file's fields column by column and checks each column with
numpy. It only ever *accepts* a file whose every value the row-checking reader would accept with
the same result, and returns None otherwise; the reader then rereads the file row by row, which
names the offending file, row and column. Numbers are parsed with Python's ``float`` (the row
reader's parser) so both paths give the same bits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.traces._rows import Rows
from optsched.traces.schema import CONTROL

__all__ = ["collect", "counts", "floats", "texts"]

#: Plain decimal numbers (and empty fields, for nullable columns) joined by newlines; anything
#: else (spaces, "nan", "inf", "1_000", hex) goes to the row reader.
_PLAIN = re.compile(r"[0-9.eE+\-\n]*")


def collect(path: str | Path, header: Sequence[str]) -> dict[str, tuple[str, ...]] | None:
    """The file's columns if its header is exactly ``header`` and every row has its width.

    Returns None on any other header, a row of another width, or more rows than the budget
    ``max_trace_rows`` (the row reader then refuses it, naming the row).
    """
    try:
        data = _rows(path, header)
    except InvalidInstanceError:
        # A bad line (not UTF-8, bad quoting, ...) may follow a bad value the row reader
        # meets first: the row reader names whichever comes first.
        return None
    if not data:
        return None
    return dict(zip(header, zip(*data, strict=True), strict=True))


def _rows(path: str | Path, header: Sequence[str]) -> list[list[str]] | None:
    rows = Rows(path)
    lines = rows.lines(",")
    first = next((parts for _, parts in lines), None)
    if first is None or [h.strip() for h in first] != list(header):
        return None
    budget = limits.current().max_trace_rows
    width = len(header)
    data: list[list[str]] = []
    for _, parts in lines:
        if len(parts) != width or len(data) >= budget:
            return None
        data.append(parts)
    return data


def floats(
    column: Sequence[str], *, bound: float, positive: bool, nullable: bool = False
) -> np.ndarray | None:
    """Finite numbers in ``[0, bound]`` (``(0, bound]`` when ``positive``), or None.

    Empty fields are NaN when ``nullable``. None means some value needs the row reader.
    """
    if not _PLAIN.fullmatch("\n".join(column)) or max(map(len, column), default=0) > 32:
        return None
    try:
        if nullable:
            parsed = (float(x) if x else math.nan for x in column)
            values = np.fromiter(parsed, dtype=np.float64, count=len(column))
        else:
            values = np.fromiter(map(float, column), dtype=np.float64, count=len(column))
    except ValueError:
        return None
    known = ~np.isnan(values) if nullable else np.ones(len(values), dtype=bool)
    with np.errstate(invalid="ignore"):
        low = (values <= 0) if positive else (values < 0)
        bad = known & (~np.isfinite(values) | (values > bound) | low)
    return None if bool(bad.any()) else values


def counts(column: Sequence[str], *, bound: float) -> np.ndarray | None:
    """Whole numbers in ``[1, bound]`` as int64, or None."""
    values = floats(column, bound=bound, positive=True)
    if values is None or bool(np.any(values < 1) or np.any(values != np.floor(values))):
        return None
    return values.astype(np.int64)


def texts(column: Sequence[str], *, required: bool, strip: bool) -> list[str] | None:
    """Strings without control characters (non-empty when ``required``), or None."""
    out = [v.strip() for v in column] if strip else list(column)
    if (required and not all(out)) or CONTROL.search("".join(out)):
        return None
    return out
