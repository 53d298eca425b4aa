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

from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace

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


def read_elasticflow(path: str | Path) -> Trace:
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
    One streaming pass; memory :math:`O(\\text{jobs})`, bounded by ``max_trace_rows``.
    """
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
    meta = {"form": form, "time_origin": 0.0, "skipped": {}}
    return Trace(table.frame(), source=str(path), format="elasticflow", meta=meta)
