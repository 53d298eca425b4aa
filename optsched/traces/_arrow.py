r"""A C++ columnar pass over clean CSV traces (pyarrow), with the row reader as the authority.

:func:`read_columns` parses a file with ``pyarrow.csv`` in streamed blocks, every column read as
text, and applies to each value the row reader's own rules (:class:`~optsched.traces._rows.Rows`)
column by column in C++. It only ever *accepts* a file the row reader would accept with the same
table, bit for bit, and returns None on any doubt; the caller then reads the file row by row,
which names the offending file, row and column.

Why the results are the same bits
---------------------------------
The row reader parses numbers with Python's ``float`` (David Gay's correctly rounded conversion).
Arrow converts text to ``float64`` with the ``fast_float`` algorithm, which is also correctly
rounded (it falls back to exact big-integer arithmetic on hard cases). Two correctly rounded
conversions of the same decimal give the same double, so the pass only converts fields that are
plain unsigned decimals, ``[0-9]+(\.[0-9]*)?`` or ``\.[0-9]+``, with an optional exponent
``[eE][+-]?[0-9]+``, of at most 32 characters: a grammar both parsers read the same way. Anything
else (spaces, signs, ``nan``, ``inf``, ``1_000``, hex) sends the file to the row reader. The
equality is also tested value by value on hard cases (halfway points, subnormals, the largest
double) and on generated decimals.

What else sends a file to the row reader
----------------------------------------
A double quote anywhere (quoted fields follow Python's ``csv`` rules), a carriage return not
followed by a line feed (the row reader splits lines on ``\n`` only), a row of another width,
text that is not UTF-8, an empty required field, a control character in a string, a value out
of its bounds, a field so long that a line could exceed :data:`optsched._io.MAX_LINE_CHARS`, and
more rows than counted before reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from optsched._io import MAX_LINE_CHARS

__all__ = ["available", "plain_parse_options", "read_columns", "scan"]

#: The plain-decimal grammar on which Python's float and Arrow's agree (see the module notes).
PLAIN_NUMBER = r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
#: Longest numeric field converted here (the row reader allows 32 characters for counts).
MAX_NUMBER_CHARS = 32
#: Bytes parsed per block: the text of one block is held at a time, not the file's.
BLOCK_BYTES = 1 << 20
_CHUNK = 1 << 23


def plain_parse_options() -> Any:
    """The dialect both streaming readers accept: commas, no quoting, one row per line.

    A file outside it (quotes, embedded newlines) fails the stream and is read whole.
    """
    import pyarrow.csv as pacsv

    return pacsv.ParseOptions(
        delimiter=",",
        quote_char=False,
        double_quote=False,
        escape_char=False,
        newlines_in_values=False,
        ignore_empty_lines=True,
    )


def available() -> bool:
    """Whether pyarrow's CSV reader can be imported."""
    try:
        import pyarrow.compute
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def scan(path: str | Path) -> tuple[int, bool]:
    r"""Count line feeds and tell whether the bytes allow the pass, in one streamed read.

    Returns
    -------
    (int, bool)
        The number of ``\n`` bytes, and whether the file has no double quote and no carriage
        return other than in ``\r\n``.
    """
    newlines = 0
    plain = True
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            if chunk.endswith(b"\r"):
                chunk += fh.read(1)  # keep a "\r\n" pair in one chunk
            newlines += chunk.count(b"\n")
            if plain and (b'"' in chunk or chunk.count(b"\r") != chunk.count(b"\r\n")):
                plain = False
    return newlines, plain


def read_columns(
    path: str | Path,
    header: Sequence[str],
    kinds: Mapping[str, str],
    *,
    bounds: Mapping[str, float],
    positive: frozenset[str] | set[str],
    nullable: frozenset[str] | set[str],
    required: frozenset[str] | set[str],
    max_rows: int,
) -> dict[str, Any] | None:
    """The file's columns as NumPy arrays if every value passes the row reader's checks.

    Parameters
    ----------
    path : path-like
        A CSV file whose first non-blank line is ``header`` (the caller has read it).
    header : sequence of str
        Column names, in file order.
    kinds : mapping
        ``"str"``, ``"int"`` or ``"float"`` per column.
    bounds, positive, nullable, required
        The row reader's rules: largest value per numeric column, columns that must be
        ``> 0`` (others ``>= 0``), numeric columns where an empty field is NaN, string columns
        that must not be empty.
    max_rows : int
        Most rows expected (counted before reading); more sends the file to the row reader.

    Returns
    -------
    dict or None
        ``float64`` arrays for numbers (NaN where empty), ``int64`` for counts; a ``required``
        string column as an array of :data:`~optsched.traces.schema.ID_DTYPE` (Arrow-backed
        strings), any other as an object array of ``str`` with one shared object per distinct
        value; None when the row reader must decide.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = list(header)
    pool = pa.default_memory_pool()
    types = {
        n: pa.string()
        if kinds[n] != "str" or n in required
        else pa.dictionary(pa.int32(), pa.string())
        for n in names
    }
    try:
        reader = pacsv.open_csv(
            str(path),
            read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=True),
            parse_options=plain_parse_options(),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
            memory_pool=pool,
        )
    except (pa.ArrowException, OSError, ValueError):
        return None
    try:
        return _fill(reader, names, kinds, bounds, positive, nullable, required, max_rows, pool)
    finally:
        reader.close()


def _fill(
    reader: Any,
    names: list[str],
    kinds: Mapping[str, str],
    bounds: Mapping[str, float],
    positive: frozenset[str] | set[str],
    nullable: frozenset[str] | set[str],
    required: frozenset[str] | set[str],
    max_rows: int,
    pool: Any,
) -> dict[str, Any] | None:
    import pyarrow as pa

    if reader.schema.names != names:
        return None
    # Filled block by block into arrays sized once (rows <= max_rows): no list of blocks to
    # concatenate, so the file's columns are held once, not twice.
    plain_text = [n for n in names if kinds[n] == "str" and n in required]
    out = {n: np.empty(max_rows, dtype=_DTYPES[kinds[n]]) for n in names if n not in plain_text}
    texts: dict[str, list[Any]] = {n: [] for n in plain_text}
    interned: dict[str, dict[str, str]] = {n: {} for n in names}
    rows = 0
    field_cap = MAX_LINE_CHARS // max(len(names), 1)  # n fields this short make a legal line
    try:
        for batch in reader:
            end = rows + batch.num_rows
            if end > max_rows:
                return None
            for i, name in enumerate(names):
                column = batch.column(i)
                kind = kinds[name]
                if kind == "str":
                    got = _strings(column, name in required, field_cap, interned[name])
                else:
                    got = _numbers(
                        column,
                        bound=bounds[name],
                        positive=name in positive,
                        nullable=name in nullable,
                        whole=kind == "int",
                    )
                if got is None:
                    return None
                if name in texts:
                    texts[name].append(got)
                else:
                    out[name][rows:end] = got
            rows = end
            del batch
            # hand the block's buffers back to the system now: the pool would otherwise keep
            # its high-water mark while the Python objects of the columns are being built
            pool.release_unused()
    except (pa.ArrowException, OSError, ValueError):
        return None
    import pandas as pd

    from optsched.traces.schema import ID_DTYPE

    columns: dict[str, Any] = {}
    for n in names:
        if n in texts:
            chunks = pa.chunked_array(texts.pop(n), type=pa.string())
            if ID_DTYPE is None:
                columns[n] = chunks.to_numpy()
            else:
                columns[n] = pd.array(chunks, dtype=ID_DTYPE)
        else:
            columns[n] = out[n][:rows] if rows < max_rows else out[n]
    return columns


_DTYPES: dict[str, Any] = {"str": object, "int": np.int64, "float": np.float64}


def _numbers(
    column: Any, *, bound: float, positive: bool, nullable: bool, whole: bool
) -> np.ndarray | None:
    """One block of a numeric column, checked as :meth:`Rows.number` / :meth:`Rows.count` do."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.binary_length(column)
    if len(column) == 0:
        return np.empty(0, dtype=np.int64 if whole else np.float64)
    if pc.max(lengths).as_py() > MAX_NUMBER_CHARS:
        return None
    empty = pc.equal(lengths, 0)
    has_empty = pc.any(empty).as_py()
    if has_empty and (whole or not nullable):
        return None
    text = pc.if_else(empty, pa.scalar(None, pa.string()), column) if has_empty else column
    plain = pc.match_substring_regex(text, PLAIN_NUMBER)
    if not pc.all(pc.fill_null(plain, True)).as_py():
        return None
    values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)  # nulls become NaN
    known = ~np.isnan(values) if has_empty else None
    finite = values if known is None else values[known]
    if not np.isfinite(finite).all() or (finite > bound).any():
        return None
    if (finite <= 0).any() if positive or whole else (finite < 0).any():
        return None
    if whole:
        if (finite < 1).any() or (finite != np.floor(finite)).any():
            return None
        return values.astype(np.int64)
    return values


def _strings(column: Any, required: bool, field_cap: int, interned: dict[str, str]) -> Any:
    """One block of a string column, checked as :meth:`Rows.text` does, or None.

    A dictionary-encoded column comes back as an object array of shared ``str`` objects, a
    plain one as the Arrow array itself.
    """
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        values, indices = column.dictionary, column.indices
    else:
        values, indices = column, None
    if len(values) and _bad_text(values, required, field_cap):
        return None
    if indices is None:
        return values  # kept in Arrow: the caller decides how to hold it
    # One str object per distinct value across blocks: a repeated column costs a pointer a row.
    lut = np.empty(len(values), dtype=object)
    for k, text in enumerate(values.to_pylist()):
        lut[k] = interned.setdefault(text, text)
    return lut[indices.to_numpy(zero_copy_only=False)]


def _bad_text(values: Any, required: bool, field_cap: int) -> bool:
    import pyarrow.compute as pc

    lengths = pc.binary_length(values)
    if pc.max(lengths).as_py() > field_cap:
        return True
    if required and pc.any(pc.equal(lengths, 0)).as_py():
        return True
    return bool(pc.any(pc.match_substring_regex(values, r"[\x00-\x1f\x7f]")).as_py())
