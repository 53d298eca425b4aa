"""Reader of the Tiresias simulator's job CSV (Gu et al., NSDI 2019).

Source: github.com/SymbioticLab/Tiresias, ``simulator/README.md``: a job trace has a header and
"the following necessary fields: ``job_id,num_gpu,submit_time,iterations,model_name,duration,
interval``" (``simulator/60_job.csv``). The simulator reads it by column name, so other columns
may follow; they are ignored.

Mapping
-------
=============  ===========  ====================================================================
source column  column       rule
=============  ===========  ====================================================================
job_id         job_id       as written
submit_time    arrival      seconds; the simulator's clock starts at 0
num_gpu        num_gpus     whole number >= 1
iterations     total_steps  whole number >= 1 (optional column; NaN when absent)
model_name     model        as written (``vgg19``, ``inception4``, ...; optional)
duration       duration     seconds, > 0: how long the job runs (the completion event)
interval       (dropped)    gap to the next submission: derivable from ``submit_time``
(none)         batch_size   NaN; weight 1.0; deadline NaN; user ``""``
=============  ===========  ====================================================================
"""

from __future__ import annotations

import math
from pathlib import Path

from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace, stated_defaults

__all__ = ["TIRESIAS_COLUMNS", "read_tiresias"]

TIRESIAS_COLUMNS = [
    "job_id",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "interval",
]


def read_tiresias(path: str | Path) -> Trace:
    """Read a Tiresias job CSV (needs ``job_id, num_gpu, submit_time, duration``).

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and source column of the first bad value.
    """
    rows = Rows(path)
    csv = HeaderCSV(rows, required=["job_id", "num_gpu", "submit_time", "duration"])
    table = Table(rows)
    for f in csv:
        steps = math.nan
        if f.get("iterations", "").strip():
            steps = float(rows.count(f["iterations"], "iterations", bound=BOUNDS["total_steps"]))
        table.add(
            "job_id",
            job_id=rows.text(f["job_id"].strip(), "job_id", required=True),
            arrival=rows.number(f["submit_time"], "submit_time", bound=BOUNDS["arrival"]),
            num_gpus=rows.count(f["num_gpu"], "num_gpu"),
            total_steps=steps,
            model=rows.text(f.get("model_name", "").strip(), "model_name"),
            duration=rows.number(
                f["duration"], "duration", bound=BOUNDS["duration"], positive=True
            ),
        )
    # the columns the format has not, and the optional ones the file left out
    filled = ["batch_size", "weight", "deadline", "user"]
    filled += [c for s, c in (("iterations", "total_steps"), ("model_name", "model"))
               if s not in csv.header]  # fmt: skip
    meta = stated_defaults({"time_origin": 0.0, "skipped": {}}, filled)
    return Trace(table.frame(), source=str(path), format="tiresias", meta=meta)
