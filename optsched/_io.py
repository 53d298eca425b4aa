"""The one guarded boundary every file optsched reads crosses.

Whatever the format (instances, schedules, placements, profiles, price files, traces), a file is
read here and only here, and refused with an :class:`~optsched.errors.InvalidInstanceError` that
names the file (and, where known, the field, row or column) when:

* it is not a regular file (a directory, a FIFO that would block forever, a device such as
  ``/dev/zero`` that never ends), or cannot be opened;
* it is larger than the budget (:attr:`~optsched.limits.Budget.max_file_bytes` for documents
  read whole, :attr:`~optsched.limits.Budget.max_trace_bytes` for streamed text), checked
  *before* reading and again while reading (a file may grow, or lie about its size);
* it is not UTF-8 (the byte offset or line is named);
* a JSON/TOML document nests deeper than :attr:`~optsched.limits.Budget.max_json_depth`, holds an
  integer longer than :attr:`~optsched.limits.Budget.max_int_digits` digits, a number that
  overflows a float (``1e999``), ``NaN``/``Infinity`` (JSON extensions, or TOML ``nan``/``inf``),
  or a duplicated key (JSON would silently keep the last one).

Fields that legitimately take an infinite value document it and accept it in their own
validator (as the string ``"inf"``, which is what optsched writes).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from optsched import limits
from optsched.errors import InvalidInstanceError

__all__ = [
    "MAX_LINE_CHARS",
    "check_tree",
    "iter_lines",
    "load_data",
    "open_text",
    "read_bytes",
    "read_text",
]

#: Longest line :func:`iter_lines` accepts (a "line" of a gigabyte is not a trace row).
MAX_LINE_CHARS = 1 << 20


def _refuse(path: Path, message: str, field: str = "<file>", **where: Any) -> InvalidInstanceError:
    return InvalidInstanceError(field, message, file=str(path), **where)


def _check_regular(path: Path, max_bytes: int, budget: str) -> int:
    """Stat ``path`` (following links) and refuse anything but a regular file within budget."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _refuse(path, f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise _refuse(path, f"cannot read {path}: it is {kind}")
    if st.st_size > max_bytes:
        raise _refuse(
            path,
            f"{path} has {st.st_size:,} bytes, over the budget {budget} = {max_bytes:,} "
            f"(raise it with optsched.limits.override({budget}=...) or OPTSCHED_{budget.upper()})",
        )
    return st.st_size


def _read_capped(fh: IO[bytes], size: int, cap: int) -> bytes:
    """Read to the end, stopping past ``cap`` bytes; memory follows the file, not the cap.

    ``fh.read(cap + 1)`` would allocate the whole budget (64 MiB by default) for every small
    file; this reads the size ``stat`` reported (plus one byte to see growth), then in 1 MiB
    steps while a growing file is still within the cap.
    """
    parts = [fh.read(min(size, cap) + 1)]
    total = len(parts[0])
    while parts[-1] and total <= cap and total > size:
        parts.append(fh.read(min(2**20, cap + 1 - total)))
        total += len(parts[-1])
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(path: str | Path, *, max_bytes: int | None = None) -> str:
    """Read a whole UTF-8 text file through the guards.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Size cap; defaults to the budget ``max_file_bytes``.

    Raises
    ------
    InvalidInstanceError
        Not a regular file, too large, unreadable or not UTF-8 (field ``"<file>"``).
    """
    p = Path(path)
    cap = limits.current().max_file_bytes if max_bytes is None else max_bytes
    size = _check_regular(p, cap, "max_file_bytes")
    try:
        with open(p, "rb") as fh:
            data = _read_capped(fh, size, cap)
    except OSError as exc:
        raise _refuse(p, f"cannot read {p}: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise _refuse(p, f"{p} grew past the budget max_file_bytes = {cap:,} while being read")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _refuse(
            p, f"{p} is not UTF-8 text (byte {exc.start}, line {line}: {exc.reason})", row=line
        ) from None


def read_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """Read a whole binary file (e.g. an ``.npz`` of weights) through the file guards.

    The caller parses the bytes (never with pickle); this only guarantees a regular file within
    the budget ``max_file_bytes`` (checked before and while reading).

    Raises
    ------
    InvalidInstanceError
        Not a regular file, too large or unreadable (field ``"<file>"``).
    """
    p = Path(path)
    cap = limits.current().max_file_bytes if max_bytes is None else max_bytes
    size = _check_regular(p, cap, "max_file_bytes")
    try:
        with open(p, "rb") as fh:
            data = _read_capped(fh, size, cap)
    except OSError as exc:
        raise _refuse(p, f"cannot read {p}: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise _refuse(p, f"{p} grew past the budget max_file_bytes = {cap:,} while being read")
    return data


# ------------------------------------------------------------------------------------------
# Structured documents
# ------------------------------------------------------------------------------------------


class _Refused(Exception):
    """Raised inside the JSON hooks; turned into InvalidInstanceError with the file named."""


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a number optsched accepts in a file")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} is out of the range of a float")
    return value


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key {key[:80]!r} in one object")
        out[key] = value
    return out


def key_part(key: str, first: bool) -> str:
    """A mapping key as one step of a field path: ``.name``, or ``name`` first.

    A key a dotted path cannot show as itself (empty, or holding a dot, a bracket or a quote)
    is written as a quoted index, ``["a.b"]`` or ``[""]``, so that every field path names its
    field.
    """
    if key and not any(c in key for c in '.[]"'):
        return key if first else f".{key}"
    return f"[{json.dumps(key)}]"


def _path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else key_part(part, not out)
    return out or "<root>"


def check_tree(data: Any, *, file: str | None = None) -> None:
    """Check a parsed document's depth and numbers (iteratively: no recursion limit to hit).

    Raises
    ------
    InvalidInstanceError
        Naming the field path of the first offending value.
    """
    budget = limits.current()
    big = 10**budget.max_int_digits
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, parts = stack.pop()
        if len(parts) > budget.max_json_depth:
            raise InvalidInstanceError(
                _path(parts[: budget.max_json_depth]),
                f"nests deeper than the budget max_json_depth = {budget.max_json_depth}",
                file=file,
            )
        if isinstance(value, dict):
            stack.extend((v, (*parts, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*parts, i)) for i, v in enumerate(value))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) >= big:
                raise InvalidInstanceError(
                    _path(parts),
                    f"integer has more than max_int_digits = {budget.max_int_digits} digits",
                    file=file,
                )
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInstanceError(
                _path(parts), f"must be a finite number, got {value}", file=file
            )


def _parse_json(text: str, p: Path) -> Any:
    digits = limits.current().max_int_digits

    def parse_int(s: str) -> int:
        if len(s.lstrip("-")) > digits:
            raise _Refused(f"integer of {len(s):,} digits exceeds max_int_digits = {digits}")
        return int(s)

    try:
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_no_constant,
            parse_float=_parse_float,
            parse_int=parse_int,
        )
    except _Refused as exc:
        raise _refuse(p, f"{p}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _refuse(p, f"{p} is not valid JSON: {exc}", row=exc.lineno) from None
    except RecursionError:
        raise _refuse(p, f"{p} nests too deeply to be a document optsched reads") from None


def _parse_toml(text: str, p: Path) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _refuse(p, f"{p} is not valid TOML: {exc}") from None
    except RecursionError:
        raise _refuse(p, f"{p} nests too deeply to be a document optsched reads") from None
    except ValueError as exc:  # e.g. an integer over Python's digit limit
        raise _refuse(p, f"{p} holds a value optsched cannot read: {exc}") from None


def load_data(path: str | Path, *, max_bytes: int | None = None) -> Any:
    """Read a JSON or TOML document (by extension; JSON otherwise) through every guard.

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        Size cap; defaults to the budget ``max_file_bytes``.

    Returns
    -------
    Any
        The parsed document (dicts, lists, str, int, finite float, bool, None).

    Raises
    ------
    InvalidInstanceError
        The file is refused (see the module docstring); ``field`` is ``"<file>"`` for a file-level
        problem, else the path of the offending value, and ``file`` names the file.
    """
    p = Path(path)
    text = read_text(p, max_bytes=max_bytes)
    data = _parse_toml(text, p) if p.suffix.lower() == ".toml" else _parse_json(text, p)
    check_tree(data, file=str(p))
    return data


# ------------------------------------------------------------------------------------------
# Streamed text (traces)
# ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def open_text(path: str | Path, *, max_bytes: int | None = None) -> Iterator[IO[str]]:
    """Open a UTF-8 text file for streaming, after the regular-file and size checks.

    Decoding errors surface while reading; use :func:`iter_lines` to get them as
    :class:`~optsched.errors.InvalidInstanceError` with the line number.
    """
    p = Path(path)
    cap = limits.current().max_trace_bytes if max_bytes is None else max_bytes
    _check_regular(p, cap, "max_trace_bytes")
    try:
        fh = open(p, encoding="utf-8-sig", errors="strict", newline="")
    except OSError as exc:
        raise _refuse(p, f"cannot read {p}: {exc.strerror or exc}") from None
    with fh:
        yield fh


def iter_lines(path: str | Path, *, max_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, newline stripped) of a text file, streaming.

    Lines are read as bytes and decoded one by one, so a byte that is not UTF-8 is reported on
    its own line (a buffered text decoder would blame the line where its buffer starts).

    Raises
    ------
    InvalidInstanceError
        Refused file, a line that is not UTF-8, a line longer than :data:`MAX_LINE_CHARS` bytes,
        or more bytes than the budget (the file grew while read); the row is named.
    """
    p = Path(path)
    cap = limits.current().max_trace_bytes if max_bytes is None else max_bytes
    _check_regular(p, cap, "max_trace_bytes")
    try:
        fh = open(p, "rb")
    except OSError as exc:
        raise _refuse(p, f"cannot read {p}: {exc.strerror or exc}") from None
    with fh:
        number = 0
        read = 0
        while True:
            try:
                raw = fh.readline(MAX_LINE_CHARS + 3)
            except OSError as exc:
                raise _refuse(p, f"cannot read {p}: {exc.strerror or exc}") from None
            if not raw:
                return
            number += 1
            read += len(raw)
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_CHARS:
                raise _refuse(
                    p, f"{p} line {number} is longer than {MAX_LINE_CHARS:,} bytes", row=number
                )
            if read > cap:
                raise _refuse(p, f"{p} grew past the budget max_trace_bytes while being read")
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _refuse(
                    p,
                    f"{p} line {number} is not UTF-8 text (byte {exc.start} of the line: "
                    f"{exc.reason})",
                    row=number,
                ) from None
            yield number, line.rstrip("\r\n")
