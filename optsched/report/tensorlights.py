"""Plots of TensorLights runs: job completion times under each NIC-sharing policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from optsched.errors import InvalidInstanceError

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
    from matplotlib.figure import Figure

    runs = {results.policy: results} if not isinstance(results, Mapping) else dict(results)
    if not runs:
        raise InvalidInstanceError("results", "give at least one run")
    names = next(iter(runs.values())).job_names
    if any(r.job_names != names for r in runs.values()):
        raise InvalidInstanceError("results", "every run must be of the same jobs")
    if ax is None:
        fig = Figure(figsize=(max(5.0, 0.9 * len(names) + 2), 3.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.get_figure()  # type: ignore[assignment]
    width = 0.8 / len(runs)
    x = np.arange(len(names))
    for k, (label, run) in enumerate(runs.items()):
        values = run.jct
        if normalize:
            # mean_iteration_time / alone_iteration_time == JCT / (I_j (c_j + tau_j)).
            values = run.mean_iteration_time / run.alone_iteration_time
        ax.bar(x + (k - (len(runs) - 1) / 2) * width, values, width, label=f"{label} "
               f"(mean {np.mean(values):.3g})")  # fmt: skip
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("slowdown (JCT / alone)" if normalize else "JCT (s)")
    ax.set_title("Job completion times by NIC-sharing policy")
    ax.legend(fontsize="small")
    return fig
