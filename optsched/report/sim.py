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
    from optsched.report.style import new_axes

    return new_axes(ax, (6.4, 3.6))


def _labelled(
    results: Mapping[str, SimResult] | Sequence[SimResult],
) -> list[tuple[str, SimResult]]:
    # a policy's name is data (a plug-in registers any name): drawn literally, never as math
    if isinstance(results, Mapping):
        return list(results.items())
    return [(mpl_literal(r.policy), r) for r in results]


def _cdf_lines(
    axes: Axes, items: list[tuple[str, np.ndarray, np.ndarray]], *, log: bool | None
) -> None:
    """One step line per series (identical series once, under a joint label), log x if asked.

    ``log=None`` chooses (:func:`~optsched.report.style.wants_log`): logarithmic for a long
    tail over more than a decade.
    """
    from optsched.report.style import log_x, markevery, merge_identical, series, wants_log

    for i, (label, x, y) in enumerate(merge_identical(items)):
        axes.step(x, y, where="post", label=label, markevery=markevery(len(x), i), **series(i))
    values = np.concatenate([x for _, x, _ in items]) if items else np.array([])
    if log or (log is None and wants_log(values)):
        log_x(axes)


def plot_jct_cdf(
    results: Mapping[str, SimResult] | Sequence[SimResult],
    *,
    ax: Axes | None = None,
    log: bool | None = None,
    unit: str = "h",
    title: str | None = None,
) -> Figure:
    """Empirical CDF of the JCT as a fraction of all jobs, one line per run.

    Unfinished jobs have no JCT: a run's line ends at ``finished / jobs``, below 1 when jobs
    did not finish (:func:`optsched.sim.measure.metrics.jct_cdf`). Runs whose JCTs are all
    equal draw one line labelled with every name (``"fifo = sjf"``), so none hides another.

    Parameters
    ----------
    results : mapping of label to SimResult, or sequence of SimResult (labelled by policy)
    ax : Axes, optional
    log : bool, optional
        Logarithmic JCT axis; by default for a long tail over more than a decade
        (:func:`~optsched.report.style.wants_log`).
    unit : {"s", "min", "h"}
    title : str, optional
        Default: "Job completion times".
    """
    from optsched.report.style import figure_style, place_legend
    from optsched.sim.measure.metrics import jct_cdf

    scale, unit = time_scale(unit)
    items = []
    for label, result in _labelled(results):
        jct, y = jct_cdf(result)
        if len(jct):
            items.append((label, np.asarray(jct, dtype=float) / scale, np.asarray(y)))
    with figure_style():
        fig, axes = _axes(ax)
        _cdf_lines(axes, items, log=log)
        axes.set_xlabel(f"JCT ({unit})")
        axes.set_ylabel("fraction of jobs (0-1)")
        axes.set_ylim(0, 1.01)
        axes.set_title(title or "Job completion times")
        place_legend(axes)
    return fig


def plot_utilization(
    result: SimResult, *, ax: Axes | None = None, unit: str = "h", stacked: bool = True
) -> Figure:
    """Busy GPUs over time per GPU type (a step plot), with the total capacity as a line."""
    from optsched.report.style import PALETTE, REFERENCE, figure_style, place_legend
    from optsched.sim.measure.metrics import utilization

    scale, unit = time_scale(unit)
    frame = utilization(result)
    hatches = ("", "//", "..", "xx", "\\\\")
    with figure_style():
        fig, axes = _axes(ax)
        times = np.unique(frame["time"].to_numpy())
        bottom = np.zeros(len(times))
        for i, (gpu_type, part) in enumerate(frame.groupby("gpu_type", sort=False)):
            idx = np.searchsorted(part["time"].to_numpy(), times, side="right") - 1
            busy = part["busy"].to_numpy()[np.clip(idx, 0, len(part) - 1)].astype(float)
            top = bottom + busy if stacked else busy
            axes.fill_between(
                times / scale,
                bottom if stacked else 0,
                top,
                step="post",
                alpha=0.6 if stacked else 0.35,
                color=PALETTE[i % len(PALETTE)],
                hatch=hatches[i % len(hatches)],
                label=f"{gpu_type} busy",
            )
            if stacked:
                bottom = top
        capacity = result.world.cluster.total_gpus
        axes.axhline(capacity, label=f"capacity ({capacity} GPUs)", **REFERENCE)
        axes.set_xlabel(f"time ({unit})")
        axes.set_ylabel("busy GPUs (count)")
        axes.set_ylim(0, capacity * 1.05)
        axes.set_title(f"GPUs in use under {mpl_literal(result.policy)}")
        place_legend(axes)
    return fig


def plot_rho_cdf(
    results: Mapping[str, SimResult] | Sequence[SimResult],
    *,
    ax: Axes | None = None,
    log: bool | None = None,
) -> Figure:
    r"""Empirical CDF of the finished jobs' finish-time fairness :math:`\rho`, one line per run.

    :math:`\rho` is as in :func:`optsched.sim.measure.metrics.job_metrics` (JCT over the JCT at the
    job's fair share); a dashed line marks :math:`\rho = 1`, the fair outcome. ``log`` as in
    :func:`plot_jct_cdf`.
    """
    from optsched.report.style import REFERENCE, figure_style, place_legend
    from optsched.sim.measure.metrics import job_metrics

    items = []
    for label, result in _labelled(results):
        rho = job_metrics(result)["rho"].to_numpy(dtype=float)
        rho = np.sort(rho[np.isfinite(rho)])
        if len(rho):
            items.append((label, rho, np.arange(1, len(rho) + 1) / len(rho)))
    with figure_style():
        fig, axes = _axes(ax)
        _cdf_lines(axes, items, log=log)
        axes.axvline(1.0, label="rho = 1 (fair)", **REFERENCE)
        axes.set_xlabel("finish-time fairness rho (ratio)")
        axes.set_ylabel("fraction of finished jobs (0-1)")
        axes.set_ylim(0, 1.01)
        axes.set_title("Finish-time fairness (rho <= 1 is fair)")
        place_legend(axes)
    return fig


def plot_policy_metric(
    table: pd.DataFrame,
    metric: str,
    *,
    ax: Axes | None = None,
    label: str | None = None,
    scale: float = 1.0,
    title: str | None = None,
) -> Figure:
    """One bar per policy for one metric column of a comparison table, each bar with its value.

    Parameters
    ----------
    table : DataFrame
        One row per policy with a ``policy`` column (``Comparison.to_frame()``, or rows of a
        sweep), and the ``metric`` column.
    metric : str
        Column to show (``jct_mean``, ``rho_max``, ``deadlines_met``, ...).
    label : str, optional
        Axis label (default the column name); end it with the unit in parentheses.
    scale : float
        Divide the values by this (3600 for seconds to hours).
    title : str, optional
        Default: the label without its unit, "per policy".
    """
    from optsched.report.style import PALETTE, figure_style

    if "policy" not in table.columns or metric not in table.columns:
        raise KeyError(f"the table needs the columns 'policy' and {metric!r}")
    with figure_style():
        fig, axes = _axes(ax)
        names = [mpl_literal(p) for p in table["policy"]]
        values = table[metric].to_numpy(dtype=float) / scale
        bars = axes.bar(range(len(names)), values, color=PALETTE[0])
        axes.bar_label(bars, labels=[f"{v:.3g}" for v in values], padding=2, fontsize=7)
        axes.set_xticks(range(len(names)), names, rotation=35, ha="right")
        axes.set_ylabel(label or metric)
        axes.grid(False, axis="x")
        axes.set_title(title or f"{(label or metric).rsplit(' (', 1)[0]} per policy")
    return fig
