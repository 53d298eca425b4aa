"""What ``optsched trace info`` prints: rows, time span, GPU-demand histogram, column summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from optsched.traces.schema import _kind

if TYPE_CHECKING:
    from optsched.traces.schema import Trace

__all__ = ["summarize"]


def summarize(trace: Trace) -> dict[str, Any]:
    r"""Summarize a trace as a JSON-ready dict.

    Returns
    -------
    dict
        ``jobs`` (rows), ``format``, ``source``, ``first_arrival``/``last_arrival``/``span``
        (seconds), ``gpu_demand`` (``{num_gpus: jobs}``, ascending), ``gpu_hours`` (sum of
        ``num_gpus * duration / 3600`` over jobs with a known duration), ``columns`` (per column:
        ``known`` count and, for numbers, ``min``/``mean``/``median``/``max``; for strings,
        ``distinct``, ``empty`` and the 5 most frequent ``top`` values), and the reader's
        ``meta``.

    Notes
    -----
    :math:`O(n \\log n)` (medians and value counts).
    """
    jobs = trace.jobs
    n = len(jobs)
    arrival = jobs["arrival"].to_numpy()
    counts = jobs["num_gpus"].value_counts().sort_index()
    duration = jobs["duration"].to_numpy()
    known = ~np.isnan(duration)
    gpu_hours = float(np.sum(jobs["num_gpus"].to_numpy()[known] * duration[known]) / 3600.0)
    columns: dict[str, Any] = {}
    for name in jobs.columns:
        series = jobs[name]
        if name == "job_id":
            # A Trace's ids are distinct and non-empty (validated): each counts once, and the
            # most frequent five are the first five, in order, as value_counts would rank them.
            columns["job_id"] = {
                "known": n,
                "empty": 0,
                "distinct": n,
                "top": {str(k): 1 for k in series.iloc[:5]},
            }
        elif _kind(str(name)) == "str":
            # Arrow-backed strings are counted in Arrow (no Python object per value); one
            # count of every value gives the distinct count, the empty count and the top five.
            values = series if isinstance(series.dtype, pd.StringDtype) else series.astype(object)
            tally = values.value_counts(dropna=False)
            empty = int(tally.get("", 0))
            columns[str(name)] = {
                "known": n - empty,
                "empty": empty,
                "distinct": len(tally),
                "top": {str(k): int(v) for k, v in tally.head(5).items()},
            }
            del tally
        else:
            data = series.to_numpy(dtype=np.float64)
            ok = data[~np.isnan(data)]
            entry: dict[str, Any] = {"known": int(ok.size)}
            if ok.size:
                entry.update(
                    min=float(ok.min()),
                    mean=float(ok.mean()),
                    median=float(np.median(ok)),
                    max=float(ok.max()),
                )
            columns[str(name)] = entry
    return {
        "source": trace.source,
        "format": trace.format,
        "jobs": n,
        "first_arrival": float(arrival[0]) if n else None,
        "last_arrival": float(arrival[-1]) if n else None,
        "span": float(arrival[-1] - arrival[0]) if n else 0.0,
        "gpu_demand": {str(int(k)): int(v) for k, v in counts.items()},
        "gpu_hours": gpu_hours,
        "columns": columns,
        "meta": dict(trace.meta),
    }
