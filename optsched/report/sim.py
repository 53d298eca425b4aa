"""Plots of simulation runs: JCT and fairness CDFs, utilization, one metric per policy.

Each function takes ``ax=`` (a Matplotlib Axes; a new Figure is made when omitted), returns the
Figure, and never changes the global Matplotlib backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from optsched.report._text import mpl_literal

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.sim.measure.record import SimResult

__all__ = ["plot_jct_cdf", "plot_policy_metric", "plot_rho_cdf", "plot_utilization", "time_scale"]


#: Seconds per time unit, under every spelling the plots accept.
_UNIT_SECONDS: dict[str, tuple[float, str]] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), (1.0, "s")),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), (60.0, "min")),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), (3600.0, "h")),
}


def time_scale(unit: str) -> tuple[float, str]:
    """Seconds per ``unit`` and its short name (``"hours"`` -> ``(3600.0, "h")``).

    Raises
    ------
    InvalidInstanceError
        An unknown unit, naming ``unit`` and the accepted ones.
    """
    from optsched.errors import InvalidInstanceError

    if not isinstance(unit, str) or unit.strip().lower() not in _UNIT_SECONDS:
        raise InvalidInstanceError(
            "unit", f"must be one of s, min, h (or their words), got {unit!r}"
        )
    return _UNIT_SECONDS[unit.strip().lower()]


def _axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        fig = ax.get_figure()
        assert fig is not None
        return fig, ax  # type: ignore[return-value]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.6), layout="constrained")
    return fig, fig.add_subplot()


def plot_jct_cdf(
    results: Mapping[str, SimResult] | Sequence[SimResult],
    *,
    ax: Axes | None = None,
    log: bool = True,
    unit: str = "h",
) -> Figure:
    """Empirical CDF of the JCT as a fraction of all jobs, one line per run.

    Unfinished jobs have no JCT: a run's line ends at ``finished / jobs``, below 1 when jobs
    did not finish (:func:`optsched.sim.measure.metrics.jct_cdf`).

    Parameters
    ----------
    results : mapping of label to SimResult, or sequence of SimResult (labelled by policy)
    ax : Axes, optional
    log : bool
        Logarithmic JCT axis.
    unit : {"s", "min", "h"}
    """
    from optsched.sim.measure.metrics import jct_cdf

    scale, unit = time_scale(unit)
    # a policy's name is data (a plug-in registers any name): drawn literally, never as math
    items = (
        results.items()
        if isinstance(results, Mapping)
        else [(mpl_literal(r.policy), r) for r in results]
    )
    fig, axes = _axes(ax)
    for label, result in items:
        jct, y = jct_cdf(result)
        if len(jct) == 0:
            continue
        axes.step(jct / scale, y, where="post", label=label)
    if log:
        axes.set_xscale("log")
    axes.set_xlabel(f"JCT ({unit})")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.01)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    return fig


def plot_utilization(
    result: SimResult, *, ax: Axes | None = None, unit: str = "h", stacked: bool = True
) -> Figure:
    """Busy GPUs over time per GPU type (a step plot), with the total capacity as a line."""
    from optsched.sim.measure.metrics import utilization

    scale, unit = time_scale(unit)
    frame = utilization(result)
    fig, axes = _axes(ax)
    times = np.unique(frame["time"].to_numpy())
    bottom = np.zeros(len(times))
    for gpu_type, part in frame.groupby("gpu_type", sort=False):
        idx = np.searchsorted(part["time"].to_numpy(), times, side="right") - 1
        busy = part["busy"].to_numpy()[np.clip(idx, 0, len(part) - 1)].astype(float)
        top = bottom + busy if stacked else busy
        axes.fill_between(
            times / scale,
            bottom if stacked else 0,
            top,
            step="post",
            alpha=0.6,
            label=str(gpu_type),
        )
        if stacked:
            bottom = top
    capacity = result.world.cluster.total_gpus
    axes.axhline(capacity, color="black", linewidth=0.8, linestyle="--", label="capacity")
    axes.set_xlabel(f"time ({unit})")
    axes.set_ylabel("busy GPUs")
    axes.set_title(mpl_literal(result.policy))
    axes.legend(loc="upper right", fontsize="small")
    return fig


def plot_rho_cdf(
    results: Mapping[str, SimResult] | Sequence[SimResult],
    *,
    ax: Axes | None = None,
    log: bool = True,
) -> Figure:
    r"""Empirical CDF of the finished jobs' finish-time fairness :math:`\rho`, one line per run.

    :math:`\rho` is as in :func:`optsched.sim.measure.metrics.job_metrics` (JCT over the JCT at the
    job's fair share); a dashed line marks :math:`\rho = 1`, the fair outcome.
    """
    from optsched.sim.measure.metrics import job_metrics

    # a policy's name is data (a plug-in registers any name): drawn literally, never as math
    items = (
        results.items()
        if isinstance(results, Mapping)
        else [(mpl_literal(r.policy), r) for r in results]
    )
    fig, axes = _axes(ax)
    for label, result in items:
        rho = job_metrics(result)["rho"].to_numpy(dtype=float)
        rho = np.sort(rho[np.isfinite(rho)])
        if len(rho) == 0:
            continue
        y = np.arange(1, len(rho) + 1) / len(rho)
        axes.step(rho, y, where="post", label=label)
    axes.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    if log:
        axes.set_xscale("log")
    axes.set_xlabel(r"finish-time fairness $\rho$")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.01)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    return fig


def plot_policy_metric(
    table: pd.DataFrame,
    metric: str,
    *,
    ax: Axes | None = None,
    label: str | None = None,
    scale: float = 1.0,
) -> Figure:
    """One bar per policy for one metric column of a comparison table.

    Parameters
    ----------
    table : DataFrame
        One row per policy with a ``policy`` column (``Comparison.to_frame()``, or rows of a
        sweep), and the ``metric`` column.
    metric : str
        Column to show (``jct_mean``, ``rho_max``, ``deadlines_met``, ...).
    label : str, optional
        Axis label (default the column name).
    scale : float
        Divide the values by this (3600 for seconds to hours).
    """
    if "policy" not in table.columns or metric not in table.columns:
        raise KeyError(f"the table needs the columns 'policy' and {metric!r}")
    fig, axes = _axes(ax)
    names = [str(p) for p in table["policy"]]
    values = table[metric].to_numpy(dtype=float) / scale
    axes.bar(range(len(names)), values, color="C0")
    axes.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize="small")
    axes.set_ylabel(label or metric)
    axes.grid(True, axis="y", alpha=0.3)
    return fig
