r"""The simulation record: what ran where and when, and when each job finished.

A :class:`SimResult` holds

* the **interval table** (:meth:`SimResult.intervals_frame`), one row per (job, server) for every
  stretch of time the job held GPUs without a change of placement or partner:
  ``job, gpu_type, server, gpus, start, end, shared_with`` (``shared_with`` is the id of the job
  sharing those same GPUs, ``""`` when none; a gang on ``k`` servers has ``k`` rows with the same
  ``start``/``end``), then ``ps_servers``: in the colocation mode
  (:mod:`optsched.sim.world.colocation`) the servers of the job's parameter servers, one per PS,
  comma-separated (``"0,2"``), repeated on each of the segment's rows; ``""`` otherwise (a
  table built without the column reads as all ``""``);
* the **per-job table** (:meth:`SimResult.to_frame`): ``job, arrival, num_gpus, job_type, work,
  weight, deadline, first_start, completion, finished`` (``completion`` NaN when unfinished);
* the run's facts: policy name, round length, the end time, whether the horizon cut it short,
  events and decisions processed.

The record is all the :func:`~optsched.sim.validate` validator reads besides the world, so an
external model (for example an exact time-indexed one) produces a checkable record either by
building a :class:`SimResult` itself or through :func:`optsched.sim.replay_rounds`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from optsched.sim.world.jobs import World

__all__ = ["INTERVAL_COLUMNS", "JOB_RESULT_COLUMNS", "SimResult"]

#: Columns of the interval table, in order.
INTERVAL_COLUMNS: tuple[str, ...] = (
    "job_id",
    "gpu_type",
    "server",
    "gpus",
    "start",
    "end",
    "shared_with",
    "ps_servers",
)
#: Columns of the per-job table, in order.
JOB_RESULT_COLUMNS: tuple[str, ...] = (
    "job_id",
    "arrival",
    "num_gpus",
    "job_type",
    "work",
    "weight",
    "deadline",
    "first_start",
    "completion",
    "finished",
)


@dataclass(repr=False)
class SimResult:
    """A simulation record (see the module notes).

    Attributes
    ----------
    world : World
    policy : str
    round_seconds : float or None
    intervals : dict of str to list
        The interval table by column (:data:`INTERVAL_COLUMNS`).
    completion : list of float
        Completion time per job (aligned with ``world.jobs``; NaN when unfinished).
    first_start : list of float
        First time each job held GPUs (NaN when never).
    end_time : float
        Time the simulation stopped.
    truncated : bool
        The horizon (``max_time``) stopped it with jobs unfinished.
    events, decisions : int
        Loop iterations and policy calls.
    extra : dict
        Run facts beyond the record proper (horizon, wake-ups, grants dropped because the
        job's rate on the granted type is 0, whether the policy claims work conservation).
    notes : list of str
        What the reader of the metrics must know (e.g. a GPU type excluded for some jobs
        because the table gives them no rate there).

    A run *finished* when every job completed or was declined at admission (:attr:`left` is
    0); :attr:`status` is ``"finished"``, ``"unfinished"`` (the policy left jobs waiting when
    nothing else happened) or ``"truncated"`` (the horizon stopped it). :attr:`unfinished`
    counts the jobs without a completion, declined ones included.
    """

    world: World
    policy: str
    round_seconds: float | None
    intervals: dict[str, list[Any]]
    completion: list[float]
    first_start: list[float]
    end_time: float
    truncated: bool = False
    events: int = 0
    decisions: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def unfinished(self) -> int:
        """Jobs that did not complete."""
        return sum(1 for c in self.completion if math.isnan(c))

    @property
    def left(self) -> int:
        """Jobs that did not complete and that no admission control declined.

        A job declined at admission (``extra["declined_jobs"]``, ElasticFlow's mechanism) never
        runs by design: it is missed, not left behind, so it does not make a run unfinished.
        """
        declined = set(self.extra.get("declined_jobs", ()))
        return sum(
            1
            for job, c in zip(self.world.jobs, self.completion, strict=True)
            if math.isnan(c) and job.job_id not in declined
        )

    @property
    def status(self) -> str:
        """``"finished"``, ``"truncated"`` or ``"unfinished"`` (see the class notes)."""
        if self.left == 0:
            return "finished"
        return "truncated" if self.truncated else "unfinished"

    @property
    def finished(self) -> list[bool]:
        """Whether each job finished."""
        return [not math.isnan(c) for c in self.completion]

    @property
    def all_finished(self) -> bool:
        """Whether every job finished."""
        return all(self.finished)

    def intervals_frame(self) -> pd.DataFrame:
        """The interval table (long format, one row per job and server)."""
        import pandas as pd

        n = len(self.intervals.get("job_id", []))
        cols = {c: self.intervals.get(c, []) for c in INTERVAL_COLUMNS}
        if len(cols["ps_servers"]) != n:
            # a table built before the column existed (or by hand): no parameter servers
            cols["ps_servers"] = [""] * n
        frame = pd.DataFrame(cols)
        return frame.astype(
            {
                "job_id": str,
                "gpu_type": str,
                "server": "int64",
                "gpus": "int64",
                "start": float,
                "end": float,
                "shared_with": str,
                "ps_servers": str,
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-job table."""
        import pandas as pd

        jobs = self.world.jobs
        return pd.DataFrame(
            {
                "job_id": [j.job_id for j in jobs],
                "arrival": [j.arrival for j in jobs],
                "num_gpus": [j.num_gpus for j in jobs],
                "job_type": [j.job_type for j in jobs],
                "work": [j.work for j in jobs],
                "weight": [j.weight for j in jobs],
                "deadline": [j.deadline for j in jobs],
                "first_start": list(self.first_start),
                "completion": list(self.completion),
                "finished": self.finished,
            },
            columns=list(JOB_RESULT_COLUMNS),
        )

    def summary(self) -> dict[str, Any]:
        """The run's facts (JSON-ready)."""
        return {
            "policy": self.policy,
            "round_seconds": self.round_seconds,
            # the throughput table's source, so that no record hides which speeds it used
            "throughputs": self.world.throughputs.source or "custom",
            "jobs": len(self.completion),
            "finished": sum(self.finished),
            "unfinished": self.unfinished,
            "status": self.status,
            "end_time": self.end_time,
            "truncated": self.truncated,
            "events": self.events,
            "decisions": self.decisions,
            "intervals": len(self.intervals.get("job_id", [])),
            "zero_rate_grants": int(self.extra.get("zero_rate_grants", 0)),
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"SimResult({s['policy']!r}, {s['finished']}/{s['jobs']} finished, "
            f"end_time={self.end_time:.6g}, intervals={s['intervals']}"
            f"{', truncated' if self.truncated else ''})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.summary().items()
        )
        return f"<table><caption>SimResult</caption>{rows}</table>"


def empty_intervals() -> dict[str, list[Any]]:
    """A fresh interval table by column."""
    return {c: [] for c in INTERVAL_COLUMNS}


def add_interval(
    table: dict[str, list[Any]],
    job: str,
    gpu_type: str,
    servers: Sequence[tuple[int, int]],
    start: float,
    end: float,
    shared_with: str = "",
    ps_servers: Sequence[int] = (),
) -> None:
    """Append one gang's rows (one per server) to ``table``.

    ``ps_servers`` (the colocation mode's parameter servers) goes to the ``ps_servers`` column
    when the table has it.
    """
    ps_col = table.get("ps_servers")
    # (outside the colocation mode there is none: the empty text without a join, at every
    # segment the engine closes)
    ps_text = ",".join(map(str, ps_servers)) if ps_servers and ps_col is not None else ""
    for server, gpus in servers:
        if ps_col is not None:
            ps_col.append(ps_text)
        table["job_id"].append(job)
        table["gpu_type"].append(gpu_type)
        table["server"].append(server)
        table["gpus"].append(gpus)
        table["start"].append(start)
        table["end"].append(end)
        table["shared_with"].append(shared_with)
