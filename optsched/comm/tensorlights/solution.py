r"""The one Solution type of the TensorLights family: a simulated run and its NIC trace.

Every policy (fair sharing, static priority, rotations, Smith's order) and the exact order
search return a :class:`SimulationResult`; :func:`optsched.comm.tensorlights.validate` checks one
against its instance from the recorded :class:`NicTrace` and the reported times alone.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OBJECTIVES", "NicTrace", "Objective", "SimulationResult"]

Objective = Literal["mean-jct", "weighted-jct", "makespan"]
#: The objectives of the family (all minimised).
OBJECTIVES: tuple[str, ...] = ("mean-jct", "weighted-jct", "makespan")


@dataclass(frozen=True, eq=False, repr=False)
class NicTrace:
    """Piecewise-constant NIC usage recorded by the simulator.

    Segment :math:`k` spans ``[times[k], times[k + 1])``; during it job :math:`j`'s flows on
    host :math:`h` are sent at total rate ``job_rate[k, j, h]``, host :math:`h` sends at total
    rate ``used[k, h]`` and ``active[k, h]`` says whether it had an unfinished flow.

    Attributes
    ----------
    times : float64 (K + 1,)
    used : float64 (K, H)
    active : bool (K, H)
    bandwidth : float64 (H,)
    job_rate : float64 (K, J, H)
    job_names, host_names : tuple of str
    """

    times: np.ndarray
    used: np.ndarray
    active: np.ndarray
    bandwidth: np.ndarray
    job_rate: np.ndarray
    job_names: tuple[str, ...] = ()
    host_names: tuple[str, ...] = ()

    @property
    def n_segments(self) -> int:
        """Number of recorded segments :math:`K`."""
        return int(len(self.times) - 1) if len(self.times) else 0

    def to_frame(self, by: Literal["host", "job"] = "host") -> pd.DataFrame:
        """Interval rows in long format.

        Parameters
        ----------
        by : {"host", "job"}, default "host"
            ``"host"``: one row per (segment, host) with ``start``, ``end``, ``host``, ``rate``
            (bytes/s), ``capacity`` and ``active``. ``"job"``: one row per (segment, job, host)
            with a positive rate: ``start``, ``end``, ``job``, ``host``, ``rate``.
        """
        import pandas as pd

        k = self.n_segments
        hosts = self.host_names or tuple(f"host{h}" for h in range(self.used.shape[1]))
        if by == "host":
            grid_seg, grid_host = np.meshgrid(np.arange(k), np.arange(len(hosts)), indexing="ij")
            segs, host_idx = grid_seg.ravel(), grid_host.ravel()
            return pd.DataFrame(
                {
                    "segment": segs,
                    "start": self.times[:-1][segs] if k else np.zeros(0),
                    "end": self.times[1:][segs] if k else np.zeros(0),
                    "host": np.array(hosts, dtype=object)[host_idx],
                    "rate": self.used.ravel(),
                    "capacity": self.bandwidth[host_idx],
                    "active": self.active.ravel(),
                }
            )
        if by != "job":
            raise InvalidInstanceError("by", f"must be 'host' or 'job', got {by!r}")
        jobs = self.job_names or tuple(f"job{j}" for j in range(self.job_rate.shape[1]))
        seg, j, h = np.nonzero(self.job_rate > 0)
        return pd.DataFrame(
            {
                "segment": seg,
                "start": self.times[:-1][seg],
                "end": self.times[1:][seg],
                "job": np.array(jobs, dtype=object)[j],
                "host": np.array(hosts, dtype=object)[h],
                "rate": self.job_rate[seg, j, h],
            }
        )

    def __repr__(self) -> str:
        end = float(self.times[-1]) if len(self.times) else 0.0
        hosts = len(self.bandwidth)
        return f"NicTrace({self.n_segments} segments, {hosts} hosts, until {end:.6g} s)"

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


@dataclass(frozen=True, eq=False, repr=False)
class SimulationResult:
    r"""What a run measured (the family's Solution type).

    Per job :math:`j` (arrays of length :math:`J`): ``completion`` :math:`C_j` (end of the last
    iteration), ``jct`` :math:`C_j - s_j`, ``mean_iteration_time`` :math:`(C_j - s_j)/I_j`,
    ``iteration_time_std`` (population standard deviation of the iteration durations),
    ``alone_iteration_time`` :math:`c_j + \tau_j`, ``mean_comm_time`` (broadcast phase),
    ``straggler_spread_mean`` / ``straggler_spread_max`` (over iterations, of the spread
    :math:`\max_w a_w - \min_w a_w` of the times :math:`a_w` at which worker :math:`w` holds the
    whole update, i.e. its last shard's flow finished) and ``worker_wait_mean`` (mean over
    iterations and workers of :math:`\max_{w'} a_{w'} - a_w`, the time a worker idles waiting for
    the straggler). Per host: ``nic_utilization`` (bytes sent / :math:`B_h \cdot` makespan) and
    ``nic_busy_fraction`` (time with an unfinished flow / makespan). Raw times:
    ``iteration_end`` and ``comm_start`` (shape :math:`J \times \max_j I_j`, NaN past
    :math:`I_j`), ``flow_finish`` (iterations :math:`\times` flows; flows of job :math:`j` are
    contiguous, shard by shard then worker by worker). ``trace`` is the :class:`NicTrace` the
    validator checks (``None`` when the run was made without it).
    """

    policy: str
    order: tuple[int, ...] | None
    rotation_period: float | None
    coordinated: bool
    jitter: float
    job_names: tuple[str, ...]
    host_names: tuple[str, ...]
    completion: np.ndarray
    jct: np.ndarray
    weights: np.ndarray
    mean_iteration_time: np.ndarray
    iteration_time_std: np.ndarray
    alone_iteration_time: np.ndarray
    mean_comm_time: np.ndarray
    straggler_spread_mean: np.ndarray
    straggler_spread_max: np.ndarray
    worker_wait_mean: np.ndarray
    nic_utilization: np.ndarray
    nic_busy_fraction: np.ndarray
    iteration_end: np.ndarray
    comm_start: np.ndarray
    flow_finish: np.ndarray
    n_events: int
    trace: NicTrace | None = None

    @property
    def makespan(self) -> float:
        r""":math:`\max_j C_j` (time origin 0)."""
        return float(self.completion.max())

    @property
    def mean_jct(self) -> float:
        """Mean JCT over jobs."""
        return float(self.jct.mean())

    @property
    def weighted_jct(self) -> float:
        r""":math:`\sum_j w_j (C_j - s_j) / \sum_j w_j`."""
        return float(self.weights @ self.jct / self.weights.sum())

    def objective(self, name: Objective) -> float:
        """Value of ``"mean-jct"``, ``"weighted-jct"`` or ``"makespan"``."""
        if name == "mean-jct":
            return self.mean_jct
        if name == "weighted-jct":
            return self.weighted_jct
        if name == "makespan":
            return self.makespan
        raise InvalidInstanceError("objective", f"unknown objective {name!r}; known: {OBJECTIVES}")

    def job_rows(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per job."""
        return [
            {
                "job": self.job_names[j],
                "completion": float(self.completion[j]),
                "jct": float(self.jct[j]),
                "mean_iteration_time": float(self.mean_iteration_time[j]),
                "alone_iteration_time": float(self.alone_iteration_time[j]),
                "slowdown": float(self.mean_iteration_time[j] / self.alone_iteration_time[j]),
                "iteration_time_std": float(self.iteration_time_std[j]),
                "mean_comm_time": float(self.mean_comm_time[j]),
                "straggler_spread_mean": float(self.straggler_spread_mean[j]),
                "straggler_spread_max": float(self.straggler_spread_max[j]),
                "worker_wait_mean": float(self.worker_wait_mean[j]),
            }
            for j in range(len(self.job_names))
        ]

    def to_frame(self) -> pd.DataFrame:
        """One row per job (the columns of :meth:`job_rows`, plus ``policy``)."""
        import pandas as pd

        frame = pd.DataFrame(self.job_rows())
        frame.insert(0, "policy", self.policy)
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no raw per-flow times)."""
        return {
            "policy": self.policy,
            "order": list(self.order) if self.order is not None else None,
            "rotation_period": self.rotation_period,
            "coordinated": self.coordinated,
            "jitter": self.jitter,
            "makespan": self.makespan,
            "mean_jct": self.mean_jct,
            "weighted_jct": self.weighted_jct,
            "mean_straggler_spread": float(self.straggler_spread_mean.mean()),
            "jobs": self.job_rows(),
            "hosts": [
                {
                    "host": self.host_names[h],
                    "nic_utilization": float(self.nic_utilization[h]),
                    "nic_busy_fraction": float(self.nic_busy_fraction[h]),
                }
                for h in range(len(self.host_names))
            ],
            "events": self.n_events,
        }

    def __repr__(self) -> str:
        order = "" if self.order is None else f" order={list(self.order)}"
        return (
            f"SimulationResult({self.policy}{order}: {len(self.job_names)} jobs, "
            f"mean JCT {self.mean_jct:.6g} s, makespan {self.makespan:.6g} s, "
            f"{self.n_events} events)"
        )

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{c}</th>" for c in ("job", "JCT (s)", "iteration (s)", "alone (s)", "slowdown")
        )
        rows = "".join(
            f"<tr><td>{html.escape(r['job'])}</td><td>{r['jct']:.4g}</td>"
            f"<td>{r['mean_iteration_time']:.4g}</td><td>{r['alone_iteration_time']:.4g}</td>"
            f"<td>{r['slowdown']:.3g}x</td></tr>"
            for r in self.job_rows()[:50]
        )
        caption = html.escape(repr(self))
        return f"<table><caption>{caption}</caption><tr>{head}</tr>{rows}</table>"
