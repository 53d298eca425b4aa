"""Row-level parsing shared by the readers: fields, numbers, the row budget, duplicate ids.

Every check names the file, the 1-based line and the *source* column (the name the user sees in
the file), so a user knows what to fix. Readers stream lines through :func:`optsched._io.iter_lines`
and call these parsers per field; nothing here reads a file.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from optsched import limits
from optsched._io import MAX_LINE_CHARS, iter_lines
from optsched.errors import InvalidInstanceError
from optsched.traces.schema import BOUNDS, CONTROL, DEFAULTS, build_frame, empty_columns

__all__ = ["Rows", "Table", "budget_error", "check_row_budget", "split_csv"]


def split_csv(line: str, sep: str = ",") -> list[str]:
    """Split one CSV line; quoted fields (RFC 4180) are honoured, plain lines split fast."""
    if '"' not in line:
        return line.split(sep)
    return next(csv.reader([line], delimiter=sep, strict=True))


class Rows:
    """Field parsers bound to one file, raising errors that name file, row and column.

    Parameters
    ----------
    path : path-like
        The file being read (named in every error).
    """

    def __init__(self, path: str | Path) -> None:
        self.file = str(path)
        self.row = 0

    def error(self, column: str, message: str, row: int | None = None) -> InvalidInstanceError:
        """The error for ``column`` at the current (or given) row."""
        return InvalidInstanceError(
            column, message, file=self.file, row=self.row if row is None else row
        )

    def lines(self, sep: str = ",") -> Iterator[tuple[int, list[str]]]:
        """Yield ``(line_number, fields)`` of every non-blank line, streaming.

        A line that is not valid CSV (an unterminated quote) is refused, naming the row.
        """
        for number, line in iter_lines(self.file):
            self.row = number
            if not line.strip():
                continue
            try:
                yield number, split_csv(line, sep)
            except csv.Error as exc:
                raise self.error("<row>", f"is not a valid CSV line: {exc}") from None

    def fields(self, parts: list[str], names: list[str]) -> None:
        """Refuse a row whose field count differs from ``len(names)``."""
        if len(parts) < len(names):
            raise self.error(
                names[len(parts)],
                f"missing: the row has {len(parts)} fields, the format has {len(names)} "
                f"({', '.join(names)})",
            )
        if len(parts) > len(names):
            raise self.error(
                "<row>",
                f"has {len(parts)} fields, the format has {len(names)} ({', '.join(names)})",
            )

    # -- numbers -----------------------------------------------------------------------------
    def number(
        self,
        text: str,
        column: str,
        *,
        bound: float,
        positive: bool = False,
        empty: float | None = None,
    ) -> float:
        """Parse a finite float in ``[0, bound]`` (``(0, bound]`` when ``positive``).

        ``empty`` is returned for an empty field when given; otherwise an empty field is refused.
        """
        s = text.strip()
        if not s:
            if empty is not None:
                return empty
            raise self.error(column, "is empty; a number is required")
        if len(s) > 64:
            raise self.error(column, f"is not a number (a {len(s)}-character field)")
        try:
            value = float(s)
        except ValueError:
            raise self.error(column, f"is not a number: {s[:40]!r}") from None
        if not math.isfinite(value):
            raise self.error(column, f"must be a finite number, got {s[:40]!r}")
        if positive and value <= 0:
            raise self.error(column, f"must be > 0, got {s[:40]}")
        if value < 0:
            raise self.error(column, f"must be >= 0, got {s[:40]}")
        if value > bound:
            raise self.error(column, f"must be <= {bound:g}, got {s[:40]}")
        return value

    def count(self, text: str, column: str, *, low: int = 1, bound: float | None = None) -> int:
        """Parse a whole number (``"4"`` or ``"4.0"``) in ``[low, bound]``."""
        hi = BOUNDS["num_gpus"] if bound is None else bound
        s = text.strip()
        if not s:
            raise self.error(column, "is empty; a whole number is required")
        if len(s) > 32:
            raise self.error(column, f"is not a whole number (a {len(s)}-character field)")
        try:
            value = float(s)
        except ValueError:
            raise self.error(column, f"is not a whole number: {s[:40]!r}") from None
        if not math.isfinite(value) or value != math.floor(value):
            raise self.error(column, f"must be a whole number, got {s[:40]!r}")
        if value < low:
            raise self.error(column, f"must be >= {low}, got {s[:40]}")
        if value > hi:
            raise self.error(column, f"must be <= {hi:,.0f}, got {s[:40]}")
        return int(value)

    def text(self, value: str, column: str, *, required: bool = False) -> str:
        """A string field: no control characters; non-empty when ``required``."""
        if required and not value:
            raise self.error(column, "is empty; a value is required")
        if CONTROL.search(value):
            raise self.error(column, "must not contain control characters")
        return value


def budget_error(file: str | Path, budget: int, row: int) -> InvalidInstanceError:
    """The refusal of a file with more than ``budget`` rows; ``row`` is the first one over."""
    return InvalidInstanceError(
        "<file>",
        f"{file} has more than max_trace_rows = {budget:,} jobs; raise it "
        "with optsched.limits.override(max_trace_rows=...) or OPTSCHED_MAX_TRACE_ROWS",
        file=str(file),
        row=row,
    )


#: What ``str.strip`` removes among ASCII bytes (a line of only these is blank).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_CHUNK = 1 << 20


def _kept(block: bytes, first: int) -> np.ndarray:
    r"""Indices of the lines of ``block`` that :meth:`Rows.lines` keeps (``line.strip()``).

    ``block`` holds whole lines, each ended by ``\n``; ``first`` is the 1-based number of its
    first line (line 1 may start with a byte-order mark). A line holding a printable ASCII
    character other than space is kept whatever else it holds; only lines without one (empty,
    spaces, or non-ASCII text) are decoded and tested as the reader tests them.
    """
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == 0x0A)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    # positions of the bytes that are not printable ASCII (mostly just the line feeds): a line
    # made only of such bytes, its line feed included, is the only kind that may be blank
    other = np.flatnonzero((data <= 0x20) | (data >= 0x7F))
    count = np.searchsorted(other, ends, side="right") - np.searchsorted(other, starts)
    keep = (count < ends - starts + 1) & (ends > starts)
    for k in np.flatnonzero(~keep & (ends > starts)).tolist():
        s = block[starts[k] : ends[k]].strip(_ASCII_SPACE)
        keep[k] = bool(s) and _text_kept(s, first + k == 1)
    return np.flatnonzero(keep)


def _text_kept(s: bytes, first: bool) -> bool:
    # non-ASCII spaces (NBSP, U+2000...) or a byte-order mark: decode as the reader does
    return bool(s.decode("utf-8-sig" if first else "utf-8", errors="replace").strip())


def check_row_budget(path: str | Path, newlines: int, header_lines: int = 1) -> None:
    r"""Refuse, before anything is stored, a file with more than ``max_trace_rows`` data rows.

    Parameters
    ----------
    path : path-like
        A file every non-blank line of which after ``header_lines`` is one row.
    newlines : int
        Its count of ``\n`` bytes: when ``newlines + 1 - header_lines`` is within the budget the
        file is (no further read); otherwise its lines are counted exactly (blank lines do not
        count), stopping at the first row over the budget.

    Raises
    ------
    InvalidInstanceError
        ``field="<file>"``, naming the file, the budget and the line of the first row over it
        (the row at which the row reader would stop).

    Notes
    -----
    :math:`O(\text{budget})` and bounded memory: the file is read in 1 MiB chunks and stops
    once the budget is passed, so a file of any length is refused after reading at most the
    budget's worth of lines.
    """
    budget = limits.current().max_trace_rows
    if newlines + 1 - header_lines <= budget:
        return
    target = header_lines + budget + 1  # the non-blank line that is one row too many
    kept = 0
    number = 0
    tail = b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            block = tail + chunk
            if chunk:
                cut = block.rfind(b"\n") + 1  # whole lines now, the rest with the next chunk
                block, tail = block[:cut], block[cut:]
                if len(tail) > MAX_LINE_CHARS + 2:
                    # a line the reader refuses as too long: it stops there itself, and every
                    # reader also checks the budget before each row it stores
                    return
            elif block:
                block += b"\n"  # the last line, without its line feed
            keep = _kept(block, number + 1)
            if kept + len(keep) >= target:
                raise budget_error(path, budget, number + int(keep[target - kept - 1]) + 1)
            kept += len(keep)
            number += block.count(b"\n")
            if not chunk:
                return


class Table:
    """Accumulates normalized rows with the row budget and duplicate-id checks.

    The budget ``max_trace_rows`` is checked before each row is stored, so a file with more
    rows is refused after reading at most that many (memory stays bounded by the budget, not
    by the file).
    """

    def __init__(self, rows: Rows, extras: tuple[str, ...] = ()) -> None:
        self.rows = rows
        self.columns = empty_columns()
        self.extras: dict[str, list[Any]] = {name: [] for name in extras}
        self.seen: dict[str, int] = {}
        self.budget = limits.current().max_trace_rows

    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def check_budget(self) -> None:
        """Refuse one more row past ``max_trace_rows``."""
        if len(self) >= self.budget:
            raise budget_error(self.rows.file, self.budget, self.rows.row)

    def remember(self, column: str, job_id: str) -> None:
        """Record the id of a row that is skipped, so that ids stay unique across the file."""
        first = self.seen.get(job_id)
        if first is not None:
            raise self.rows.error(
                column, f"duplicate job id {job_id[:80]!r} (first on row {first})"
            )
        self.seen[job_id] = self.rows.row

    def add(self, column: str, **values: Any) -> None:
        """Store one job; ``column`` is the source column holding its id (for duplicates)."""
        self.check_budget()
        job_id = values["job_id"]
        first = self.seen.get(job_id)
        if first is not None:
            raise self.rows.error(
                column, f"duplicate job id {job_id[:80]!r} (first on row {first})"
            )
        self.seen[job_id] = self.rows.row
        deadline = values.get("deadline", math.nan)
        if not math.isnan(deadline) and deadline < values["arrival"]:
            raise self.rows.error(
                "deadline", f"must be >= the arrival {values['arrival']:g}, got {deadline:g}"
            )
        if math.isnan(values.get("total_steps", math.nan)) and math.isnan(
            values.get("duration", math.nan)
        ):
            raise self.rows.error(
                "duration", "the job has neither a step count nor a duration; one is required"
            )
        for name, store in self.columns.items():
            store.append(values[name] if name in values else _DEFAULTS[name])
        for name, store in self.extras.items():
            store.append(values.get(name, _EXTRA_DEFAULT.get(name, math.nan)))

    def frame(self) -> Any:
        """The normalized DataFrame, sorted stably by arrival."""
        return build_frame(self.columns, self.extras)


#: What a reader leaves out of a row (the schema's defaults).
_DEFAULTS: dict[str, Any] = DEFAULTS
_EXTRA_DEFAULT: dict[str, Any] = {"status": "", "vc": "", "gpu_type": ""}
