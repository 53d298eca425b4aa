"""Reader of Gavel ``.trace`` files (tab-separated, no header), in the three published layouts.

Gavel (Narayanan et al., OSDI 2020; github.com/stanford-futuredata/gavel, ``scheduler/traces``)
ships two layouts and Shockwave (Zheng et al., NSDI 2023; github.com/uw-mad-dash/shockwave,
``scheduler/traces``) a third, told apart by the field count of each line:

* **10 fields** (``physical_cluster/*.trace``, the layout of ``scheduler/utils.py`` at HEAD):
  ``job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps,
  scale_factor, priority_weight, SLO, arrival_time``;
* **7 fields** (the Philly-derived ``msr/seed=*/*.trace``, the layout of the parser before April
  2020): ``job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time,
  scale_factor``. That parser skips rows whose ``scale_factor`` is 0; so does this one (counted
  in ``meta["skipped"]``).
* **12 fields** (Shockwave's "dynamic" traces, the layout of Shockwave's ``scheduler/utils.py``):
  the 10 fields with ``mode`` after ``scale_factor`` and ``duration`` before ``arrival_time``:
  ``job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps,
  scale_factor, mode, priority_weight, SLO, duration, arrival_time``. ``mode`` is the job's
  batch-size adaptation (``static``, ``accordion`` or ``gns``), ``duration`` its run time in
  seconds on the trace's reference GPU type.

Mapping
-------
===================  ===========  ==================================================================
Gavel field          column       rule
===================  ===========  ==================================================================
(line order)         job_id       ``"0"``, ``"1"``, ... in file order (Gavel numbers jobs so)
arrival_time         arrival      seconds, as written (Gavel's clock starts at 0)
scale_factor         num_gpus     whole number >= 1 (0 skipped in the 7-field layout)
job_type             model        ``"ResNet-18 (batch size 64)"`` -> ``"ResNet-18"``; other job
                                  types (``"A3C"``, ``"CycleGAN"``) are kept whole
job_type             batch_size   the ``(batch size N)`` suffix; NaN without one
total_steps          total_steps  whole number >= 1
duration             duration     12-field only: seconds, > 0; NaN in the other layouts
priority_weight      weight       10/12-field, > 0; 1.0 in the 7-field layout
SLO                  slo_factor   extra column: ``-1`` -> NaN (none); else > 0, the job must
                                  finish within ``SLO x duration`` of its arrival (Gavel's rule);
                                  ``deadline`` stays NaN because the duration is unknown here
mode                 batch_mode   extra column, 12-field only: ``static``, ``accordion`` or ``gns``
(none)               user         ``""``
===================  ===========  ==================================================================

``command``, ``working_directory``, ``num_steps_arg`` are launch details, not scheduling data,
and are dropped; ``needs_data_dir`` must be 0 or 1.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace

__all__ = ["BATCH_MODES", "FIELDS_7", "FIELDS_10", "FIELDS_12", "read_gavel", "split_job_type"]

FIELDS_10 = [
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
]
FIELDS_12 = [
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "mode",
    "priority_weight",
    "SLO",
    "duration",
    "arrival_time",
]
#: Batch-size adaptation modes of Shockwave's 12-field layout.
BATCH_MODES = ("static", "accordion", "gns")
FIELDS_7 = [
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
]

_BATCH = re.compile(r"^(.*\S)\s*\(batch size (\d{1,9})\)$")


def split_job_type(job_type: str) -> tuple[str, float]:
    """``"ResNet-18 (batch size 64)"`` -> ``("ResNet-18", 64.0)``; no suffix -> ``(job_type, nan)``.

    >>> split_job_type("Transformer (batch size 128)")
    ('Transformer', 128.0)
    >>> split_job_type("A3C")
    ('A3C', nan)
    """
    match = _BATCH.match(job_type)
    if match is None or int(match.group(2)) < 1:
        return job_type, math.nan
    return match.group(1), float(match.group(2))


def read_gavel(path: str | Path) -> Trace:
    r"""Read a Gavel ``.trace`` file (7-, 10- or 12-field layout; every line uses the same one).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Trace
        ``format="gavel"``; ``meta["fields"]`` is 7, 10 or 12, ``meta["skipped"]`` counts rows left
        out (``scale_factor`` 0 in the 7-field layout).

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and Gavel field of the first bad value.

    Notes
    -----
    One pass, :math:`O(\\text{bytes})` time; memory :math:`O(\\text{jobs})`, bounded by the budget
    ``max_trace_rows``.
    """
    rows = Rows(path)
    table = Table(rows, extras=("slo_factor", "batch_mode"))
    layout: list[str] | None = None
    skipped = 0
    for _, parts in rows.lines(sep="\t"):
        if layout is None:
            layouts = {7: FIELDS_7, 10: FIELDS_10, 12: FIELDS_12}
            if len(parts) not in layouts:
                raise rows.error(
                    "<row>",
                    f"has {len(parts)} tab-separated fields; Gavel traces have 7 or 10 "
                    "(Shockwave's 12)",
                )
            layout = layouts[len(parts)]
        rows.fields(parts, layout)
        f = dict(zip(layout, parts, strict=True))
        job_type = rows.text(f["job_type"], "job_type", required=True)
        if f["needs_data_dir"].strip() not in {"0", "1"}:
            raise rows.error("needs_data_dir", f"must be 0 or 1, got {f['needs_data_dir'][:40]!r}")
        low = 0 if layout is FIELDS_7 else 1
        scale = rows.count(f["scale_factor"], "scale_factor", low=low)
        steps = rows.count(f["total_steps"], "total_steps", bound=BOUNDS["total_steps"])
        arrival = rows.number(f["arrival_time"], "arrival_time", bound=BOUNDS["arrival"])
        weight, slo, duration, mode = 1.0, math.nan, math.nan, ""
        if layout is FIELDS_12:
            mode = f["mode"].strip()
            if mode not in BATCH_MODES:
                raise rows.error("mode", f"must be one of {list(BATCH_MODES)}, got {mode[:40]!r}")
            duration = rows.number(
                f["duration"], "duration", bound=BOUNDS["duration"], positive=True
            )
        if layout is not FIELDS_7:
            weight = rows.number(
                f["priority_weight"], "priority_weight", bound=BOUNDS["weight"], positive=True
            )
            text = f["SLO"].strip()
            try:
                given = float(text)
            except ValueError:
                raise rows.error("SLO", f"is not a number: {text[:40]!r}") from None
            if given != -1:
                slo = rows.number(text, "SLO", bound=BOUNDS["slo_factor"], positive=True)
        job_id = str(len(table) + skipped)
        if scale == 0:
            skipped += 1
            continue
        model, batch = split_job_type(job_type)
        table.add(
            "job_type",
            job_id=job_id,
            arrival=arrival,
            num_gpus=scale,
            model=model,
            total_steps=float(steps),
            batch_size=batch,
            weight=weight,
            duration=duration,
            slo_factor=slo,
            batch_mode=mode,
        )
    if layout is FIELDS_7 or layout is None:
        table.extras.pop("slo_factor")  # the 7-field layout has no SLO field
    if layout is not FIELDS_12:
        table.extras.pop("batch_mode")  # only Shockwave's layout names a mode
    meta = {
        "fields": 0 if layout is None else len(layout),
        "time_origin": 0.0,
        "skipped": {"scale_factor 0": skipped} if skipped else {},
    }
    return Trace(table.frame(), source=str(path), format="gavel", meta=meta)
