"""The normalized job table every trace reader produces, and the :class:`Trace` that holds it.

One row per job, the columns of :data:`COLUMNS` in this order (then any documented extra column
of :data:`EXTRA_COLUMNS` a reader adds):

=============  ========  ====================================================================
column         dtype     meaning
=============  ========  ====================================================================
job_id         str       unique, non-empty identifier
arrival        float64   seconds on the trace's clock, ``>= 0``, rows sorted non-decreasing
num_gpus       int64     GPUs requested (a gang), ``>= 1``
model          str       job type / model name; ``""`` when unknown
total_steps    float64   iterations of the whole job, ``> 0``; NaN when unknown
duration       float64   seconds the job runs alone at ``num_gpus`` as the trace records it,
                         ``> 0``; NaN when unknown
batch_size     float64   ``> 0``; NaN when unknown
weight         float64   priority weight, ``> 0`` (1.0 when the trace has none)
deadline       float64   absolute seconds on the clock of ``arrival``, ``>= arrival``; NaN = none
user           str       user or virtual cluster; ``""`` when unknown
=============  ========  ====================================================================

Every row has ``total_steps`` or ``duration`` (or both): a simulator needs one of them to know
when a job is done. A normalized CSV written by hand needs only the columns of :data:`REQUIRED`
and one of those two; the reader sets every column it leaves out to its value of
:data:`DEFAULTS` and says so in the trace's ``meta`` (:mod:`optsched.traces.normalized`).
Every number is finite (NaN only where "unknown" is allowed) and below the bounds of
:data:`BOUNDS`, so that no later product of two of them overflows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

#: The reader, writer and summary behind :meth:`Trace.load`, :meth:`Trace.save` and
#: :meth:`Trace.info`. Those modules build :class:`Trace` tables, so they import this one and
#: not the other way round: :mod:`optsched.traces` fills this table when it is imported, which
#: Python does before any of its submodules, this one included.
TRACE_IO: dict[str, Any] = {}


def _io(name: str) -> Any:
    return TRACE_IO[name]


__all__ = [
    "BOUNDS",
    "COLUMNS",
    "DEFAULTS",
    "EXTRA_COLUMNS",
    "FLOAT_COLUMNS",
    "ID_DTYPE",
    "REQUIRED",
    "STRING_COLUMNS",
    "Trace",
    "defaults_note",
    "row_schema",
    "stated_defaults",
]

#: Normalized columns, in order, with their dtype kind (``"str"``, ``"float"``, ``"int"``).
COLUMNS: dict[str, str] = {
    "job_id": "str",
    "arrival": "float",
    "num_gpus": "int",
    "model": "str",
    "total_steps": "float",
    "duration": "float",
    "batch_size": "float",
    "weight": "float",
    "deadline": "float",
    "user": "str",
}

#: Columns a normalized CSV written by hand must have (in any order); every other normalized
#: column may be left out and then takes its value of :data:`DEFAULTS`. A job also needs its work:
#: ``total_steps`` or ``duration`` (a file must have at least one of the two columns).
REQUIRED: tuple[str, ...] = ("job_id", "arrival", "num_gpus")

#: The value of a normalized column a file (or a reader) leaves out: "unknown" (NaN, ``""``)
#: where the schema allows it, weight 1.0 (every job equal).
DEFAULTS: dict[str, Any] = {
    "model": "",
    "total_steps": math.nan,
    "duration": math.nan,
    "batch_size": math.nan,
    "weight": 1.0,
    "deadline": math.nan,
    "user": "",
}

#: Documented format-specific columns a reader may keep after the normalized ones:
#: name -> (dtype kind, meaning). Nothing else is ever added to the table.
EXTRA_COLUMNS: dict[str, tuple[str, str]] = {
    "slo_factor": (
        "float",
        "Gavel SLO: the job must finish within slo_factor x its isolated duration of its "
        "arrival; NaN when the trace gives -1 (none)",
    ),
    "batch_mode": (
        "str",
        "batch-size adaptation of a Shockwave job: static, accordion (Accordion's critical "
        "regimes) or gns (gradient noise scale); Shockwave's 12-field Gavel layout",
    ),
    "status": ("str", "final state the trace records (PAI status, Helios/Philly state)"),
    "vc": ("str", "virtual cluster (Helios, Philly-derived)"),
    "gpu_type": ("str", "GPU type the trace records for the job (PAI gpu_type)"),
    "gpu_fraction": (
        "float",
        "GPUs requested as the trace states them, possibly fractional (PAI plan_gpu / 100 summed "
        "over instances); num_gpus is its ceiling",
    ),
    "queue_delay": ("float", "seconds the job waited in the recorded cluster (start - submit)"),
}

#: Largest accepted value of each numeric column (a larger one is refused as absurd).
BOUNDS: dict[str, float] = {
    "arrival": 1e12,  # about 31,700 years of seconds
    "num_gpus": 1_000_000,
    "total_steps": 1e15,
    "duration": 1e12,
    "batch_size": 1e9,
    "weight": 1e9,
    "deadline": 1e12,
    "slo_factor": 1e6,
    "gpu_fraction": 1_000_000,
    "queue_delay": 1e12,
}

#: Columns whose value may be NaN ("unknown").
NULLABLE: frozenset[str] = frozenset(
    {"total_steps", "duration", "batch_size", "deadline", "slo_factor", "gpu_fraction",
     "queue_delay"}
)  # fmt: skip

STRING_COLUMNS: tuple[str, ...] = tuple(c for c, k in COLUMNS.items() if k == "str")
FLOAT_COLUMNS: tuple[str, ...] = tuple(c for c, k in COLUMNS.items() if k == "float")

# Strictly positive columns (0 is no work / no weight / no batch); the others are >= 0.
_POSITIVE = frozenset({"total_steps", "duration", "batch_size", "weight", "slo_factor",
                       "gpu_fraction"})  # fmt: skip


def _kind(name: str) -> str:
    if name in COLUMNS:
        return COLUMNS[name]
    return EXTRA_COLUMNS[name][0]


#: Control characters (newlines, tabs, ...) are refused in string columns: a row is one line.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _bad_string(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if CONTROL.search(value):
        return "must not contain control characters (newlines, tabs)"
    return None


def _arrow(series: pd.Series) -> Any:
    """The Arrow array behind a string column, or None (not Arrow-backed, or no pyarrow)."""
    try:
        import pyarrow as pa

        return pa.chunked_array(pa.array(series.array))
    except (ImportError, TypeError, ValueError):
        return None


def _clean_arrow_strings(series: pd.Series) -> bool:
    """Whether an Arrow-backed string column has no missing value and no control character.

    False means "look closer" (the caller then checks value by value and names the row).
    """
    arr = _arrow(series)
    if arr is None or arr.null_count:
        return False
    import pyarrow.compute as pc

    return not len(arr) or not pc.any(pc.match_substring_regex(arr, CONTROL.pattern)).as_py()


def _unique_nonempty(series: pd.Series) -> bool:
    """Whether an Arrow-backed string column holds distinct, non-empty ids (else: look closer)."""
    arr = _arrow(series)
    if arr is None or arr.null_count:
        return False
    if not len(arr):
        return True
    import pyarrow as pa
    import pyarrow.compute as pc

    if pc.any(pc.equal(pc.binary_length(arr), 0)).as_py():
        return False
    # Sorted, equal ids are neighbours. A sort holds an index and a copy of the text (about
    # 40 bytes an id at its peak), so the ids are sorted in about sixteen parts that equal ids
    # cannot straddle: the part is chosen by the last two bytes of the id.
    keys = np.concatenate([_tail_key(chunk) for chunk in arr.chunks])
    counts = np.bincount(keys, minlength=1 << 16)
    parts = 16
    part_of_key = ((np.cumsum(counts) - counts) * parts // max(len(keys), 1)).astype(np.uint8)
    part = part_of_key[keys]
    del keys, counts
    repeated = False
    for k in range(parts):
        mask = part == k
        if not mask.any():
            continue
        subset = arr.filter(pa.array(mask))
        ordered = pc.take(subset, pc.sort_indices(subset)).combine_chunks()
        n = len(ordered)
        repeated = n > 1 and pc.any(pc.equal(ordered.slice(1), ordered.slice(0, n - 1))).as_py()
        del subset, ordered
        if repeated:
            break
    pa.default_memory_pool().release_unused()
    return not repeated


def _tail_key(chunk: Any) -> np.ndarray:
    """The last two bytes of each (non-empty) string of an Arrow string array, as one integer."""
    import pyarrow as pa

    if not len(chunk):
        return np.empty(0, dtype=np.uint16)
    wide = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)
    last = data[offsets[1:] - 1].astype(np.uint16)
    before = data[np.maximum(offsets[1:] - 2, offsets[:-1])].astype(np.uint16)
    return (last << 8) | before


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True, eq=False)
class Trace:
    r"""A validated job table read from (or written to) a trace file.

    Parameters
    ----------
    jobs : pandas.DataFrame
        The normalized table: the columns of :data:`COLUMNS` in order, then any of
        :data:`EXTRA_COLUMNS`; see the module docstring for units and bounds.
    source : str
        The file it came from (``""`` when built in memory); errors name it.
    format : str
        The reader that produced it (``"gavel"``, ``"elasticflow"``, ...; ``"optsched"`` for
        the normalized CSV; ``"generated"`` for :func:`~optsched.traces.generate_trace`).
    meta : dict
        What the reader knows beyond the table: ``time_origin`` (what ``arrival = 0`` is on the
        source's clock), ``skipped`` (rows left out, by reason), the source's field count, ...

    Raises
    ------
    InvalidInstanceError
        On construction, if the table breaks the schema; ``field`` is the column, ``row`` the
        1-based row of the table, ``file`` the source.

    Notes
    -----
    Validation is vectorised: :math:`O(n)` per column plus :math:`O(n \\log n)` for the
    uniqueness of ``job_id``.
    """

    jobs: pd.DataFrame
    source: str = ""
    format: str = "optsched"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # -------------------------------------------------------------------------------------
    def _error(self, column: str, message: str, row: int | None = None) -> InvalidInstanceError:
        return InvalidInstanceError(
            column, message, file=self.source or None, row=None if row is None else row + 1
        )

    def validate(self) -> None:
        """Check the table against the schema; raise on the first offending column and row."""
        import pandas as pd

        jobs = self.jobs
        if not isinstance(jobs, pd.DataFrame):
            raise self._error("jobs", f"must be a pandas DataFrame, got {type(jobs).__name__}")
        columns = list(jobs.columns)
        base = list(COLUMNS)
        if columns[: len(base)] != base:
            missing = [c for c in base if c not in columns]
            name = missing[0] if missing else "columns"
            raise self._error(
                name, f"the table's columns must start with {base}, got {columns[: len(base)]}"
            )
        for extra in columns[len(base) :]:
            if extra not in EXTRA_COLUMNS:
                raise self._error(
                    str(extra),
                    f"is not a documented column; extras allowed: {sorted(EXTRA_COLUMNS)}",
                )
        if len(set(columns)) != len(columns):
            raise self._error("columns", "column names must be unique")
        if (
            not isinstance(jobs.index, pd.RangeIndex)
            or jobs.index.start != 0
            or (jobs.index.step != 1)
        ):
            raise self._error("index", "the table must have a default RangeIndex (0..n-1)")
        for name in columns:
            self._check_column(str(name), jobs[name])
        self._check_ids(jobs["job_id"])
        arrival = jobs["arrival"].to_numpy()
        if len(arrival) > 1:
            down = arrival[1:] < arrival[:-1]
            if down.any():
                i = _first(down) + 1
                raise self._error(
                    "arrival",
                    f"rows must be sorted by arrival: {arrival[i]!r} after {arrival[i - 1]!r}",
                    i,
                )
        work = np.isnan(jobs["total_steps"].to_numpy()) & np.isnan(jobs["duration"].to_numpy())
        if work.any():
            raise self._error(
                "duration", "every job needs total_steps or duration (both are unknown)",
                _first(work),
            )  # fmt: skip
        deadline = jobs["deadline"].to_numpy()
        early = ~np.isnan(deadline) & (deadline < arrival)
        if early.any():
            i = _first(early)
            raise self._error(
                "deadline", f"must be >= arrival ({arrival[i]!r}), got {deadline[i]!r}", i
            )

    def _check_ids(self, series: pd.Series) -> None:
        import pandas as pd

        if isinstance(series.dtype, pd.StringDtype) and _unique_nonempty(series):
            return  # counted in Arrow, without a Python object per id
        ids = series.to_numpy(dtype=object)
        dup = pd.Series(ids, dtype=object, copy=False).duplicated().to_numpy()
        if dup.any():
            i = _first(dup)
            raise self._error("job_id", f"duplicate job id {str(ids[i])[:80]!r}", i)
        if (ids == "").any():
            raise self._error("job_id", "must not be empty", _first(ids == ""))

    def _check_strings(self, name: str, series: pd.Series) -> None:
        import pandas as pd

        if not (series.dtype == object or isinstance(series.dtype, pd.StringDtype)):
            raise self._error(name, f"must hold strings (dtype object), got {series.dtype}")
        if isinstance(series.dtype, pd.StringDtype) and _clean_arrow_strings(series):
            return
        values = series.to_numpy(dtype=object)
        # One scan of the joined text when every value is a clean string; locate otherwise
        # (infer_dtype walks the array in C: "string" means every value is a str).
        clean = pd.api.types.infer_dtype(values, skipna=False) == "string" if len(values) else True
        if clean and not CONTROL.search("".join(values)):
            return
        for i, value in enumerate(values):
            problem = _bad_string(value)
            if problem:
                raise self._error(name, problem, i)

    def _check_column(self, name: str, series: pd.Series) -> None:
        kind = _kind(name)
        if kind == "str":
            self._check_strings(name, series)
            return
        if kind == "int":
            if series.dtype != np.int64:
                raise self._error(name, f"must have dtype int64, got {series.dtype}")
            values = series.to_numpy()
            low = values < 1
            if low.any():
                i = _first(low)
                raise self._error(name, f"must be >= 1, got {values[i]}", i)
            high = values > BOUNDS[name]
            if high.any():
                i = _first(high)
                raise self._error(name, f"must be <= {BOUNDS[name]:,.0f}, got {values[i]}", i)
            return
        if series.dtype != np.float64:
            raise self._error(name, f"must have dtype float64, got {series.dtype}")
        values = series.to_numpy()
        nan = np.isnan(values)
        if name not in NULLABLE and nan.any():
            raise self._error(name, "must be a number (NaN is not allowed here)", _first(nan))
        inf = np.isinf(values)
        if inf.any():
            raise self._error(name, f"must be finite, got {values[_first(inf)]}", _first(inf))
        with np.errstate(invalid="ignore"):
            low = (values <= 0) if name in _POSITIVE else (values < 0)
        low &= ~nan
        if low.any():
            i = _first(low)
            op = ">" if name in _POSITIVE else ">="
            raise self._error(name, f"must be {op} 0, got {values[i]!r}", i)
        high = ~nan & (values > BOUNDS[name])
        if high.any():
            i = _first(high)
            raise self._error(name, f"must be <= {BOUNDS[name]:g}, got {values[i]!r}", i)

    # -------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, format: str | None = None, **options: Any) -> Trace:
        """Read a trace file of any supported format (see :func:`~optsched.traces.read_trace`)."""
        trace: Trace = _io("read")(path, format=format, **options)
        return trace

    def save(self, path: str | Path) -> Path:
        """Write the normalized CSV (see :func:`~optsched.traces.write_trace`)."""
        written: Path = _io("write")(self, path)
        return written

    @staticmethod
    def schema() -> dict[str, Any]:
        """JSON Schema of one row of the normalized table (see :func:`row_schema`)."""
        return row_schema()

    @property
    def extra_columns(self) -> list[str]:
        """The documented extra columns this table carries, in order."""
        return [str(c) for c in self.jobs.columns[len(COLUMNS) :]]

    def __len__(self) -> int:
        return len(self.jobs)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the job table (one row per job, long format)."""
        return self.jobs.copy()

    def info(self) -> dict[str, Any]:
        """Summary: rows, time span, GPU-demand histogram and a per-column summary.

        See :func:`optsched.traces.summary.summarize`.
        """
        summary: dict[str, Any] = _io("summarize")(self)
        return summary

    def equals(self, other: Trace) -> bool:
        """Whether two traces hold the same table (NaN equal to NaN, dtypes compared)."""
        a, b = self.jobs, other.jobs
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            return False
        for name in a.columns:
            if _kind(str(name)) == "str":
                if list(a[name]) != list(b[name]):
                    return False
            elif a[name].dtype != b[name].dtype or not np.array_equal(
                a[name].to_numpy(), b[name].to_numpy(), equal_nan=_kind(str(name)) == "float"
            ):
                return False
        return True

    def __repr__(self) -> str:
        span = 0.0
        if len(self.jobs):
            span = float(self.jobs["arrival"].iloc[-1] - self.jobs["arrival"].iloc[0])
        where = f" from {self.source!r}" if self.source else ""
        return f"Trace({len(self.jobs)} jobs, format={self.format!r}, span={span:g} s{where})"

    def _repr_html_(self) -> str:
        head = self.jobs.head(10).to_html(index=False, na_rep="")
        return f"<p>{self.__repr__()}</p>{head}"


@cache
def _id_dtype() -> Any:
    """:data:`ID_DTYPE`, built on first use (it needs pandas, which this module loads lazily)."""
    import pandas as pd

    try:
        import pyarrow  # noqa: F401

        return pd.StringDtype("pyarrow", na_value=np.nan)
    except (ImportError, TypeError, ValueError):  # no pyarrow, or a pandas before 2.3
        return None


if TYPE_CHECKING:
    #: dtype of ``job_id`` in tables built by the readers: Arrow-backed strings (about 10 bytes
    #: an id, where a Python ``str`` object costs 56 or more), or object when pyarrow is
    #: missing. It is pandas' ``str`` dtype: values are ``str``, comparisons give NumPy
    #: booleans. Built on first read (module ``__getattr__``), so that importing the schema
    #: does not import pandas and pyarrow.
    ID_DTYPE: Any


def __getattr__(name: str) -> Any:
    if name == "ID_DTYPE":
        return _id_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "ID_DTYPE"})


def _ids(values: Any) -> Any:
    """``job_id`` values as an array of :data:`ID_DTYPE` (kept as they are when already so)."""
    import pandas as pd

    id_dtype = _id_dtype()
    if isinstance(getattr(values, "dtype", None), pd.StringDtype):
        return values if values.dtype == id_dtype else pd.array(values, dtype=id_dtype)
    objects = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
    if objects.dtype == object and (
        len(objects) == 0 or pd.api.types.infer_dtype(objects, skipna=False) == "string"
    ):
        return pd.array(objects, dtype=id_dtype)
    return objects  # not all strings: kept as objects, so that validation names the bad one


def empty_columns() -> dict[str, list[Any]]:
    """Fresh per-column lists for a reader to fill (normalized columns only)."""
    return {name: [] for name in COLUMNS}


def build_frame(
    columns: Mapping[str, Sequence[Any] | np.ndarray],
    extras: Mapping[str, Sequence[Any] | np.ndarray] | None = None,
) -> pd.DataFrame:
    """Build the normalized DataFrame from per-column lists, sorted stably by arrival.

    Parameters
    ----------
    columns : mapping
        One list per name of :data:`COLUMNS`, all the same length.
    extras : mapping, optional
        Lists for documented extra columns, in the order they should appear.
    """
    import pandas as pd

    data: dict[str, Any] = {}
    all_columns: dict[str, Sequence[Any] | np.ndarray] = {**columns, **(extras or {})}
    for name, values in all_columns.items():
        kind = _kind(name)
        if name == "job_id" and _id_dtype() is not None:
            data[name] = _ids(values)
            continue
        dtype = object if kind == "str" else np.int64 if kind == "int" else np.float64
        if isinstance(values, np.ndarray) and values.dtype == dtype:
            data[name] = values  # an array of the right dtype is used as it is (no copy)
        else:
            data[name] = np.array(values, dtype=dtype)
    arrival = data["arrival"]
    # Most traces are already in arrival order: then no column is copied to reorder it.
    if len(arrival) > 1 and bool(np.any(arrival[1:] < arrival[:-1])):
        order = np.argsort(arrival, kind="stable")
        data = {name: values[order] for name, values in data.items()}
    # One column per array, none copied or consolidated into a 2-D block (that would hold the
    # numeric columns twice while it is built).
    frame = pd.DataFrame(
        {name: pd.Series(values, dtype=values.dtype, copy=False) for name, values in data.items()},
        copy=False,
    )
    frame.index = pd.RangeIndex(len(frame))
    return frame


def is_missing(value: float) -> bool:
    """Whether a float column value means "unknown"."""
    return math.isnan(value)


_DESCRIPTIONS: dict[str, str] = {
    "job_id": "unique, non-empty job identifier",
    "arrival": "seconds on the trace's clock; rows are sorted by it",
    "num_gpus": "GPUs requested (a gang)",
    "model": "job type / model name; empty when unknown",
    "total_steps": "iterations of the whole job; empty (NaN) when unknown",
    "duration": "seconds the job runs alone at num_gpus as recorded; empty (NaN) when unknown",
    "batch_size": "batch size; empty (NaN) when unknown",
    "weight": "priority weight",
    "deadline": "absolute seconds on the clock of arrival, >= arrival; empty (NaN) = none",
    "user": "user or virtual cluster; empty when unknown",
}


def defaults_note(defaults: Mapping[str, Any]) -> str:
    """One sentence naming the columns a file left out and the value each took (``""`` if none)."""
    if not defaults:
        return ""
    shown = []
    for name, value in defaults.items():
        if name == "deadline":
            text = "none"
        elif value is None or value == "" or value != value:
            text = "unknown"
        else:
            text = repr(value)
        shown.append(f"{name} {text}")
    return f"columns not in the file, the same for every job: {', '.join(shown)}"


def stated_defaults(meta: dict[str, Any], filled: Sequence[str]) -> dict[str, Any]:
    """``meta`` stating the normalized columns a reader set to their :data:`DEFAULTS`.

    Every reader says so in the same way: ``meta["defaults"]`` maps each column the file does
    not carry to the value every row took (NaN as ``None``: ``meta`` is printed as JSON) and
    ``meta["notes"]`` says it in words (:func:`defaults_note`; ``optsched sim`` prints it on
    stderr). ``filled`` in :data:`COLUMNS` order is not required. Nothing is added when a reader
    filled nothing.
    """
    defaults = {name: DEFAULTS[name] for name in COLUMNS if name in filled}
    if defaults:
        meta["defaults"] = {k: None if v != v else v for k, v in defaults.items()}
        meta.setdefault("notes", []).append(defaults_note(defaults))
    return meta


def row_schema() -> dict[str, Any]:
    """JSON Schema of one job (a row of the normalized CSV, NaN written as ``null``).

    Only the columns of :data:`REQUIRED` are required, with ``total_steps`` or ``duration``
    known (an ``anyOf``); every other normalized column is optional and carries its value of
    :data:`DEFAULTS` as the JSON Schema ``default`` (NaN as ``null``), which the readers put in
    a column a file leaves out (and say so in the trace's ``meta["notes"]``). The extra columns
    are optional, without a default (a reader adds them or not). Cross-row rules (unique
    ``job_id``, sorted ``arrival``) and ``deadline >= arrival`` are stated in the description;
    the :class:`Trace` constructor enforces them.
    """
    properties: dict[str, Any] = {}
    for name in [*COLUMNS, *EXTRA_COLUMNS]:
        kind = _kind(name)
        text = _DESCRIPTIONS.get(name) or EXTRA_COLUMNS[name][1]
        if name in DEFAULTS:
            value = DEFAULTS[name]
            shown = "unknown" if value == "" or value != value else repr(value)
            text += f" (optional: {shown} when left out)"
        elif name in REQUIRED:
            text += " (required)"
        if kind == "str":
            prop: dict[str, Any] = {"type": "string", "pattern": "^[^\\x00-\\x1f\\x7f]*$"}
            if name == "job_id":
                prop["minLength"] = 1
        elif kind == "int":
            prop = {"type": "integer", "minimum": 1, "maximum": int(BOUNDS[name])}
        else:
            prop = {"type": ["number", "null"] if name in NULLABLE else "number"}
            prop["maximum"] = BOUNDS[name]
            if name in _POSITIVE:
                prop["exclusiveMinimum"] = 0
            else:
                prop["minimum"] = 0
        if name in DEFAULTS:
            value = DEFAULTS[name]
            prop["default"] = None if isinstance(value, float) and math.isnan(value) else value
        prop["description"] = text
        properties[name] = prop
    extras = ", ".join(EXTRA_COLUMNS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "optsched trace job",
        "description": (
            f"One job of the normalized trace table. Required: {', '.join(REQUIRED)}, and "
            "total_steps or duration known (a job's work). Every other column is optional and "
            "takes its default when left out (model and user unknown, batch_size unknown, "
            "weight 1.0, deadline none; the reader states the defaults it applied). Extra "
            f"columns ({extras}) are optional. Across rows: job_id unique, arrival "
            "non-decreasing; per row: deadline >= arrival."
        ),
        "type": "object",
        "properties": properties,
        "required": list(REQUIRED),
        "anyOf": [
            {"required": [work], "properties": {work: {"type": "number"}}}
            for work in ("total_steps", "duration")
        ],
        "additionalProperties": False,
    }
