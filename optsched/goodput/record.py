r"""The record of a goodput-world cluster run: who held which GPUs when, at which batch.

A run (:func:`~optsched.goodput.cluster.simulate`) records, per job, its submission and
completion, its restarts and its **allocation segments**: maximal stretches of decision
intervals over which it held one allocation (one node index per GPU,
:data:`~optsched.goodput.decision.Allocation`). A segment starts at the decision that gave the
job that allocation and ends at the decision that changed or took it (or at the end of the
interval in which the job completed). It carries the job's batch configurations in force, in
order, as ``(atomic_bsz, accum_steps, stretches)``: the job ran ``stretches`` consecutive
stretches of constant rate at that configuration (a stretch ends at an epoch boundary or at
the end of a decision interval, where the job's batcher may re-choose). That is all
:func:`~optsched.goodput.validate.validate` needs, with the traces, to re-derive every job's
progress.

Summary figures:

* average JCT, :math:`\frac1n\sum_j (C_j - a_j)`, over the jobs that completed (the artifact's
  ``Average JCT``);
* makespan, :math:`\max_j C_j` (seconds from the workload's start);
* GPU-hours, the GPU time the jobs held from each allocation to its end or the job's
  completion, restart delays included (the artifact's ``attained_service``), over 3600.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optsched.goodput.decision import Allocation
from optsched.goodput.traces import ModelTraces

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AllocationSegment", "GoodputRun", "JobRecord"]


@dataclass(frozen=True)
class AllocationSegment:
    """One allocation held over ``[start, end)`` seconds.

    Attributes
    ----------
    start, end : float
        Decision times (multiples of the run's interval), ``start < end``.
    allocation : Allocation
        One node index per GPU (each node's GPUs together; the order of the nodes is the
        placement's order).
    configs : tuple of (int, int, int)
        ``(atomic_bsz, accum_steps, stretches)`` in order (module notes); the first is the
        configuration chosen at the reallocation.
    """

    start: float
    end: float
    allocation: Allocation
    configs: tuple[tuple[int, int, int], ...] = ()

    @property
    def num_gpus(self) -> int:
        """GPUs held."""
        return len(self.allocation)


@dataclass(frozen=True)
class JobRecord:
    """One job of a run.

    Attributes
    ----------
    name, application : str
        As in the workload.
    submission_time : float
    completion_time : float or None
        None when the run ended first.
    num_restarts : int
        Reallocations after the first allocation (the artifact's count).
    segments : tuple of AllocationSegment
        In time order.
    fixed_batch : int or None
        The global batch the job was held to (the fixed-batch baselines; ``ncf`` under an
        adaptive policy), None when its batch adapted.
    attained_service : float
        GPU-seconds held up to completion (restart delays included).
    epoch : int
        The epoch it ended in (``max_epochs`` when complete).
    progress : float
        Its final progress in :math:`M_0`-iterations.
    """

    name: str
    application: str
    submission_time: float
    completion_time: float | None
    num_restarts: int
    segments: tuple[AllocationSegment, ...]
    fixed_batch: int | None
    attained_service: float
    epoch: int
    progress: float

    @property
    def jct(self) -> float | None:
        """Completion minus submission, seconds (None if unfinished)."""
        if self.completion_time is None:
            return None
        return self.completion_time - self.submission_time


@dataclass(frozen=True)
class GoodputRun:
    """A whole run (see the module notes).

    Attributes
    ----------
    policy : str
        The policy's name.
    job_kind : str
        ``"adaptive"``, ``"rigid"`` or ``"fixed_batch"`` (how the jobs were built).
    num_nodes, gpus_per_node : int
    interval : float
        Seconds between decisions.
    restart_delay : float
        Seconds without progress after each reallocation.
    end_time : float
        The clock when the run stopped.
    jobs : tuple of JobRecord
        In workload order.
    traces : mapping of str to ModelTraces
        The job types' measurements the run used (what the validator reads).
    source : str
        The workload file ("" when built in memory).
    """

    policy: str
    job_kind: str
    num_nodes: int
    gpus_per_node: int
    interval: float
    restart_delay: float
    end_time: float
    jobs: tuple[JobRecord, ...]
    traces: Mapping[str, ModelTraces] = field(repr=False, compare=False)
    source: str = ""

    @property
    def finished(self) -> bool:
        """Whether every job completed."""
        return all(j.completion_time is not None for j in self.jobs)

    @property
    def jcts(self) -> dict[str, float]:
        """Job completion times of the completed jobs, by name (the artifact's ``get_jcts``)."""
        return {j.name: j.jct for j in self.jobs if j.jct is not None}

    @property
    def average_jct(self) -> float:
        """Mean JCT over the completed jobs, seconds (0 when none completed, as the artifact)."""
        jcts = self.jcts
        return sum(jcts.values()) / len(jcts) if jcts else 0.0

    @property
    def makespan(self) -> float:
        """Latest completion, seconds from the workload's start (0 when none completed)."""
        return max((j.completion_time for j in self.jobs if j.completion_time is not None),
                   default=0.0)  # fmt: skip

    @property
    def gpu_hours(self) -> float:
        """GPU time held by the jobs up to their completions, hours (module notes)."""
        return sum(j.attained_service for j in self.jobs) / 3600.0

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures of the run."""
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "finished": self.finished,
            "average_jct": self.average_jct,
            "makespan": self.makespan,
            "gpu_hours": self.gpu_hours,
            "restarts": sum(j.num_restarts for j in self.jobs),
        }

    def artifact_summary(self) -> dict[str, Any]:
        """The figures in the layout of the artifact's ``summary.json`` for one workload.

        ``{"jcts": {name: jct}, "avg": average}``; the artifact's file nests these under the
        workload's name (``"jcts": {"workload-6": {...}}, "avgs": {"workload-6": ...}``).
        """
        return {"jcts": self.jcts, "avg": self.average_jct}

    def to_frame(self) -> pd.DataFrame:
        """One row per job: submission, completion, JCT, restarts, segments, GPU-hours."""
        import pandas as pd

        rows = [
            {
                "name": j.name,
                "application": j.application,
                "submission_time": j.submission_time,
                "completion_time": j.completion_time,
                "jct": j.jct,
                "num_restarts": j.num_restarts,
                "segments": len(j.segments),
                "gpu_hours": j.attained_service / 3600.0,
                "fixed_batch": j.fixed_batch,
            }
            for j in self.jobs
        ]
        return pd.DataFrame(rows)

    def segments_frame(self) -> pd.DataFrame:
        """One row per allocation segment: job, start, end, GPUs, nodes, configurations."""
        import pandas as pd

        rows = [
            {
                "name": j.name,
                "start": s.start,
                "end": s.end,
                "num_gpus": s.num_gpus,
                "allocation": list(s.allocation),
                "configs": [list(c) for c in s.configs],
            }
            for j in self.jobs
            for s in j.segments
        ]
        return pd.DataFrame(rows, columns=["name", "start", "end", "num_gpus", "allocation",
                                           "configs"])  # fmt: skip
