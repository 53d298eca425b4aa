"""Reader of the ElasticFlow / ITP traces (Microsoft ITP clusters, ASPLOS 2023).

Source: github.com/microsoft/elasticflow-traces (MIT). Two published CSV forms, both with a
header and told apart by it:

* the **raw** traces (``raw-traces.tar.gz``), 4 columns: ``job_id, submission_time, duration,
  num_gpu``;
* the **ElasticFlow** traces (``elasticflow-traces.tar.gz``: ``cluster01..10.csv``,
  ``195job.csv``), 8 columns: ``job_id, submission_time, num_iteration, model_name, deadline,
  batch_size, num_gpu, duration``.

Mapping
-------
================  ===========  =====================================================================
source column     column       rule
================  ===========  =====================================================================
job_id            job_id       as written (UUIDs)
submission_time   arrival      seconds from the start of collection, as written
num_gpu           num_gpus     whole number >= 1
duration          duration     seconds, > 0: the job's recorded run time at ``num_gpu`` GPUs
num_iteration     total_steps  whole number >= 1 (8-column form; NaN in the raw form)
model_name        model        as written (``bert``, ``vgg16``, ...); ``""`` in the raw form
batch_size        batch_size   > 0 (8-column form)
deadline          deadline     **absolute** seconds on the ``submission_time`` clock (the README's
                               example has ``submission_time`` 16566, ``deadline`` 21347;
                               ElasticFlow's scheduler compares it with absolute end times);
                               must be >= ``submission_time``
(none)            weight       1.0
(none)            user         ``""``
================  ===========  =====================================================================
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from optsched.traces._columnar import collect, counts, floats, texts
from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace, build_frame, stated_defaults

__all__ = ["RAW_COLUMNS", "TRACE_COLUMNS", "read_elasticflow"]

RAW_COLUMNS = ["job_id", "submission_time", "duration", "num_gpu"]
TRACE_COLUMNS = [
    "job_id",
    "submission_time",
    "num_iteration",
    "model_name",
    "deadline",
    "batch_size",
    "num_gpu",
    "duration",
]

#: The normalized columns each form does not carry, set to their defaults (``meta["notes"]``).
_FILLED: dict[str, tuple[str, ...]] = {
    "raw": ("model", "total_steps", "batch_size", "weight", "deadline", "user"),
    "elasticflow": ("weight", "user"),
}


def _read_columnar(path: str | Path) -> Trace | None:
    """The 8-column form in the published column order, checked column by column with numpy.

    Returns None as soon as anything differs from a clean file (a field count, an empty or
    unusual field, a value out of range, a duplicate id, an early deadline, the row budget):
    :func:`read_elasticflow` then rereads the file row by row and names the offending row. So
    both paths accept exactly the same files with the same result (tested), and the fast one
    never has to locate an error.
    """
    cols = collect(path, TRACE_COLUMNS)
    if cols is None:
        return None
    ids = texts(cols["job_id"], required=True, strip=True)
    models = texts(cols["model_name"], required=False, strip=True)
    arrival = floats(cols["submission_time"], bound=BOUNDS["arrival"], positive=False)
    steps = counts(cols["num_iteration"], bound=BOUNDS["total_steps"])
    gpus = counts(cols["num_gpu"], bound=BOUNDS["num_gpus"])
    duration = floats(cols["duration"], bound=BOUNDS["duration"], positive=True)
    batch = floats(cols["batch_size"], bound=BOUNDS["batch_size"], positive=True)
    deadline = floats(cols["deadline"], bound=BOUNDS["deadline"], positive=False)
    if (
        ids is None
        or models is None
        or arrival is None
        or steps is None
        or gpus is None
        or duration is None
        or batch is None
        or deadline is None
        or len(set(ids)) != len(ids)
        or bool(np.any(deadline < arrival))
    ):
        return None
    n = len(ids)
    frame = build_frame(
        {
            "job_id": ids,
            "arrival": arrival,
            "num_gpus": gpus,
            "model": models,
            "total_steps": steps.astype(np.float64),
            "duration": duration,
            "batch_size": batch,
            "weight": np.ones(n),
            "deadline": deadline,
            "user": [""] * n,
        }
    )
    meta = {"form": "elasticflow", "time_origin": 0.0, "skipped": {}}
    meta = stated_defaults(meta, _FILLED["elasticflow"])
    return Trace(frame, source=str(path), format="elasticflow", meta=meta)


def read_elasticflow(path: str | Path, *, columnar: bool = True) -> Trace:
    r"""Read an ElasticFlow/ITP CSV (raw 4-column or 8-column form, by its header).

    Returns
    -------
    Trace
        ``format="elasticflow"``; ``meta["form"]`` is ``"raw"`` or ``"elasticflow"``.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and source column of the first bad value.

    Notes
    -----
    One streaming pass; memory :math:`O(\\text{jobs})`, bounded by ``max_trace_rows``. A clean
    file in the published column order is checked column by column with numpy
    (``columnar=True``); any file the columnar pass does not accept whole is reread row by row,
    which names the offending file, row and column.
    """
    if columnar:
        fast = _read_columnar(path)
        if fast is not None:
            return fast
    rows = Rows(path)
    csv = HeaderCSV(rows, required=RAW_COLUMNS)
    table = Table(rows)
    full = False
    for f in csv:
        full = "num_iteration" in f
        job_id = rows.text(f["job_id"].strip(), "job_id", required=True)
        arrival = rows.number(f["submission_time"], "submission_time", bound=BOUNDS["arrival"])
        values = {
            "job_id": job_id,
            "arrival": arrival,
            "num_gpus": rows.count(f["num_gpu"], "num_gpu"),
            "duration": rows.number(
                f["duration"], "duration", bound=BOUNDS["duration"], positive=True
            ),
        }
        if full:
            values["total_steps"] = float(
                rows.count(f["num_iteration"], "num_iteration", bound=BOUNDS["total_steps"])
            )
            values["model"] = rows.text(f.get("model_name", "").strip(), "model_name")
            values["batch_size"] = rows.number(
                f.get("batch_size", ""), "batch_size", bound=BOUNDS["batch_size"], positive=True,
                empty=math.nan,
            )  # fmt: skip
            values["deadline"] = rows.number(
                f.get("deadline", ""), "deadline", bound=BOUNDS["deadline"], empty=math.nan
            )
        table.add("job_id", **values)
    form = "elasticflow" if set(TRACE_COLUMNS) <= set(csv.header) else "raw"
    meta = stated_defaults({"form": form, "time_origin": 0.0, "skipped": {}}, _FILLED[form])
    return Trace(table.frame(), source=str(path), format="elasticflow", meta=meta)
