"""Public GPU-cluster traces read into one normalized, validated job table.

:func:`read_trace` reads Gavel ``.trace`` files (7- and 10-field layouts), ElasticFlow/ITP CSVs
(raw 4-column and 8-column), the Tiresias simulator CSV, the Alibaba PAI 2020 job and task
tables, and the Helios ``cluster_log.csv`` schema (also used by the Philly-derived CSVs), detects
the format from the first line unless ``format=`` names it, and returns a :class:`Trace` whose
``jobs`` DataFrame has the columns of :data:`COLUMNS`. :func:`write_trace` writes the normalized
CSV, which reads back unchanged. Every file crosses the guarded boundary :mod:`optsched._io`;
every bad row raises :class:`~optsched.errors.InvalidInstanceError` naming the file, row and
column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optsched._lazy import attach
from optsched.traces.schema import BOUNDS, COLUMNS, EXTRA_COLUMNS, TRACE_IO, Trace

if TYPE_CHECKING:
    from optsched.traces.formats import FORMATS, detect_format, read_trace
    from optsched.traces.generate import generate_trace
    from optsched.traces.normalized import write_trace
    from optsched.traces.summary import summarize

#: The readers, the writer and the summary load pandas (and pyarrow): imported on first use, so
#: that a module needing only the schema or the row parsers (the simulator's ElasticFlow
#: profiles) does not pay for them.
__getattr__, __dir__ = attach(
    __name__,
    {
        "FORMATS": "optsched.traces.formats",
        "detect_format": "optsched.traces.formats",
        "read_trace": "optsched.traces.formats",
        "generate_trace": "optsched.traces.generate",
        "write_trace": "optsched.traces.normalized",
        "summarize": "optsched.traces.summary",
    },
)


def _read(*args: Any, **kwargs: Any) -> Any:
    from optsched.traces.formats import read_trace

    return read_trace(*args, **kwargs)


def _write(*args: Any, **kwargs: Any) -> Any:
    from optsched.traces.normalized import write_trace

    return write_trace(*args, **kwargs)


def _summarize(*args: Any, **kwargs: Any) -> Any:
    from optsched.traces.summary import summarize

    return summarize(*args, **kwargs)


# Trace.load, Trace.save and Trace.info reach the readers through this table (the readers build
# Traces, so the schema module cannot import them); each entry imports its module on first call.
TRACE_IO.update(read=_read, write=_write, summarize=_summarize)

__all__ = [
    "BOUNDS",
    "COLUMNS",
    "EXTRA_COLUMNS",
    "FORMATS",
    "Trace",
    "detect_format",
    "generate_trace",
    "read_trace",
    "summarize",
    "write_trace",
]
