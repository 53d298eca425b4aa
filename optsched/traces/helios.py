"""Reader of the Helios ``cluster_log.csv`` schema and of the Philly-derived CSVs in that schema.

Sources: github.com/S-Lab-System-Group/HeliosData (SenseTime Helios, SC 2021), README "Schema and
Description": ``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time,
end_time, duration, queue``, times as ``YYYY-MM-DD HH:MM:SS``, ``duration = end - start`` and
``queue = start - submit`` in seconds. The Helios artifact (HeliosArtifact) converts the Philly
trace (msr-fiddle/philly-traces, ATC 2019) to the same columns (``philly_trace.csv``, read there
with the same parser); its ``state`` values are Philly's (``Pass``, ``Killed``, ``Failed``). The
two formats (``"helios"``, ``"philly"``) share this reader and differ only in their label.

Mapping
-------
===========================  ============  ====================================================
source column                column        rule
===========================  ============  ====================================================
job_id (or jobid)            job_id        as written
submit_time                  arrival       seconds since the earliest ``submit_time`` of the
                                           file (``meta["time_origin"]``, ISO text); numeric
                                           times are taken as seconds, unshifted
gpu_num                      num_gpus      whole number; rows with 0 GPUs (CPU jobs) are
                                           skipped and counted
duration (or end - start)    duration      seconds; rows with a zero or unknown duration are
                                           skipped and counted (a job that never ran has no
                                           work to replay)
user                         user          as written
vc                           vc (extra)    as written
state (or status)            status        as written (extra)
queue (or start - submit)    queue_delay   seconds (extra); NaN when unknown
(none)                       model         ``""``; total_steps, batch_size, deadline NaN;
                                           weight 1.0
===========================  ============  ====================================================

Datetimes carry no zone; differences are taken as written (a daylight-saving change inside the
trace shifts the times after it by an hour, as it did in the source).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from optsched.traces._header import HeaderCSV
from optsched.traces._rows import Rows, Table
from optsched.traces.schema import BOUNDS, Trace, stated_defaults

__all__ = ["HELIOS_COLUMNS", "read_helios"]

HELIOS_COLUMNS = [
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
]


def _seconds(rows: Rows, text: str, column: str, *, empty: bool = False) -> float:
    """Parse a time: a ``YYYY-MM-DD HH:MM:SS`` datetime (naive = UTC) or seconds."""
    s = text.strip()
    if not s:
        if empty:
            return math.nan
        raise rows.error(column, "is empty; a time is required")
    if "-" in s[1:] or ":" in s:
        if len(s) > 40:
            raise rows.error(column, f"is not a datetime (a {len(s)}-character field)")
        try:
            moment = datetime.fromisoformat(s)
        except ValueError:
            raise rows.error(column, f"is not a datetime YYYY-MM-DD HH:MM:SS: {s!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return rows.number(s, column, bound=BOUNDS["arrival"])


def read_helios(path: str | Path, *, label: str = "helios") -> Trace:
    """Read a Helios ``cluster_log.csv`` (or a Philly-derived CSV in its schema).

    Parameters
    ----------
    path : str or Path
    label : {"helios", "philly"}
        The ``format`` recorded on the trace.

    Returns
    -------
    Trace
        ``meta["skipped"]`` counts CPU-only jobs and jobs without a positive duration.

    Raises
    ------
    InvalidInstanceError
        Naming the file, line and source column of the first bad value.
    """
    rows = Rows(path)
    csv = HeaderCSV(
        rows,
        required=["gpu_num", "submit_time"],
        any_of=[["job_id", "jobid"], ["duration", "end_time"]],
    )
    table = Table(rows, extras=("status", "vc", "queue_delay"))
    skipped: dict[str, int] = {}
    datetimes: bool | None = None
    for f in csv:
        id_col = "job_id" if "job_id" in f else "jobid"
        job_id = rows.text(f[id_col].strip(), id_col, required=True)
        num_gpus = rows.count(f["gpu_num"], "gpu_num", low=0)
        submit_text = f["submit_time"]
        submit = _seconds(rows, submit_text, "submit_time")
        is_datetime = ":" in submit_text
        if datetimes is None:
            datetimes = is_datetime
        elif datetimes != is_datetime:
            raise rows.error(
                "submit_time", "mixes datetimes and numbers of seconds; use one kind of time"
            )
        start = _seconds(rows, f.get("start_time", ""), "start_time", empty=True)
        end = _seconds(rows, f.get("end_time", ""), "end_time", empty=True)
        if f.get("duration", "").strip():
            duration = rows.number(f["duration"], "duration", bound=BOUNDS["duration"])
        elif not (math.isnan(start) or math.isnan(end)):
            if end < start:
                raise rows.error("end_time", "is before start_time")
            duration = end - start
        else:
            duration = math.nan
        if f.get("queue", "").strip():
            queue = rows.number(f["queue"], "queue", bound=BOUNDS["queue_delay"])
        elif not math.isnan(start):
            if start < submit:
                raise rows.error("start_time", "is before submit_time")
            queue = start - submit
        else:
            queue = math.nan
        reason = None
        if num_gpus == 0:
            reason = "gpu_num 0 (CPU job)"
        elif math.isnan(duration) or duration <= 0:
            reason = "no positive duration"
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1
            table.check_budget()
            table.remember(id_col, job_id)
            continue
        state_col = "state" if "state" in f else "status"
        table.add(
            id_col,
            job_id=job_id,
            arrival=submit,
            num_gpus=num_gpus,
            duration=duration,
            user=rows.text(f.get("user", "").strip(), "user"),
            vc=rows.text(f.get("vc", "").strip(), "vc"),
            status=rows.text(f.get(state_col, "").strip(), state_col),
            queue_delay=queue,
        )
    origin = 0.0
    arrivals = table.columns["arrival"]
    if datetimes and arrivals:
        origin = min(arrivals)
        table.columns["arrival"] = [a - origin for a in arrivals]
    meta: dict[str, object] = {
        "time_origin": (
            datetime.fromtimestamp(origin, tz=UTC).replace(tzinfo=None).isoformat(sep=" ")
            if datetimes and arrivals
            else 0.0
        ),
        "skipped": skipped,
    }
    filled = ["model", "total_steps", "batch_size", "weight", "deadline"]
    meta = stated_defaults(meta, filled + ([] if "user" in csv.header else ["user"]))
    return Trace(table.frame(), source=str(path), format=label, meta=meta)
