"""Plots of TensorLights runs: job completion times under each NIC-sharing policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.report._text import mpl_literal

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.comm.tensorlights import SimulationResult

__all__ = ["plot_jct"]


def plot_jct(
    results: Mapping[str, SimulationResult] | SimulationResult,
    *,
    ax: Axes | None = None,
    normalize: bool = False,
) -> Figure:
    r"""Grouped bars of every job's completion time (JCT), one bar per policy.

    Parameters
    ----------
    results : mapping of label to SimulationResult, or one SimulationResult
        Runs of the same instance (same jobs in the same order).
    ax : matplotlib Axes, optional
        Where to draw; a new Figure is made when omitted. The global backend is never changed.
    normalize : bool, default False
        Plot JCT divided by the job's standalone time :math:`I_j (c_j + \tau_j)` (its slowdown)
        instead of seconds.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InvalidInstanceError
        No runs, or runs of different job sets (field ``results``).
    """
    from optsched.report.style import bar_style, figure_style, new_axes, place_legend

    runs = {results.policy: results} if not isinstance(results, Mapping) else dict(results)
    if not runs:
        raise InvalidInstanceError("results", "give at least one run")
    names = next(iter(runs.values())).job_names
    if any(r.job_names != names for r in runs.values()):
        raise InvalidInstanceError("results", "every run must be of the same jobs")
    with figure_style():
        fig, ax = new_axes(ax, (max(6.0, 0.9 * len(names) + 3.5), 3.6))
        width = 0.8 / len(runs)
        x = np.arange(len(names))
        for k, (label, run) in enumerate(runs.items()):
            values = run.jct
            if normalize:
                # mean_iteration_time / alone_iteration_time == JCT / (I_j (c_j + tau_j)).
                values = run.mean_iteration_time / run.alone_iteration_time
            ax.bar(
                x + (k - (len(runs) - 1) / 2) * width,
                values,
                width,
                label=f"{mpl_literal(label)} (mean {np.mean(values):.3g})",
                **bar_style(k),
            )
        ax.set_xticks(x, [mpl_literal(n) for n in names], rotation=30, ha="right")
        ax.set_xlabel("job")
        ax.set_ylabel("slowdown: JCT / JCT alone (ratio)" if normalize else "JCT (s)")
        ax.set_ylim(bottom=0.0)
        ax.grid(False, axis="x")
        ax.set_title("Job completion times by NIC-sharing policy")
        place_legend(ax, title="policy (mean over jobs)")
    return fig
