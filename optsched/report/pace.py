"""Plots of the communication family: a PACE iteration's timeline and a sweep's speed-ups.

Both take ``ax=`` (draw into the caller's axes) and return the Figure; neither changes the
global matplotlib backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.comm.pace.schedule import CommSchedule

__all__ = ["plot_iteration", "plot_speedup"]

_OP_COLORS = {"backward": "#9e9e9e", "update": "#f2b134", "forward": "#5b8def"}


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        fig: Any = ax.figure
        return fig, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.add_subplot()


def plot_iteration(
    schedule: CommSchedule, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Gantt chart of one iteration: the compute stream and the communication channel.

    The compute lane shows the backward ops (grey), then the updates and forward ops; the
    channel lane shows every all-reduce segment, one colour per call (a preempted call shows
    as several bars of one colour, labelled with its number of tensors).

    Parameters
    ----------
    schedule : CommSchedule
        From :func:`optsched.comm.pace.solve` (``.solution``) or any policy.
    ax : matplotlib Axes, optional
        Draw here; a new Figure is made otherwise.
    title : str, optional
        Defaults to the policy, model and iteration time.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib as mpl

    own = ax is None
    fig, ax = _axes(ax, (10.0, 3.0))
    frame = schedule.to_frame()
    compute = frame[frame["resource"] == "compute"]
    for op, color in _OP_COLORS.items():
        part = compute[compute["op"] == op]
        if len(part):
            ax.broken_barh(
                list(zip(part["start_ms"], part["end_ms"] - part["start_ms"], strict=True)),
                (1.1, 0.8),
                facecolors=color,
                edgecolor="white",
                linewidth=0.3,
                label=op,
            )
    seg = schedule.trace.segments
    cmap = mpl.colormaps["tab20"]
    plan, trace = schedule.plan, schedule.trace
    tensors_per_call: dict[int, int] = {}
    for m in range(plan.member_piece.size):
        c = int(trace.piece_call[plan.member_piece[m]])
        tensors_per_call[c] = tensors_per_call.get(c, 0) + 1
    span = max(schedule.iteration_time, 1e-12)
    for call_f, start, end in seg:
        call = int(call_f)
        ax.broken_barh(
            [(float(start), float(end - start))],
            (0.1, 0.8),
            facecolors=cmap(call % 20),
            edgecolor="black",
            linewidth=0.3,
        )
        if (end - start) > 0.04 * span:
            ax.text(
                (start + end) / 2,
                0.5,
                f"{tensors_per_call.get(call, 0)}",
                ha="center",
                va="center",
                fontsize=7,
            )
    ax.set_yticks([0.5, 1.5], ["channel", "compute"])
    ax.set_ylim(0, 2.5)  # the band above the compute lane holds the legend
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel("time from the start of the backward pass (ms)")
    ax.axvline(schedule.iteration_time, color="red", linewidth=0.8)
    ax.legend(loc="upper left", fontsize="small", ncol=3, frameon=False)
    ax.set_title(
        title
        or f"{schedule.name}: {schedule.dag.name}, iteration {schedule.iteration_time:.2f} ms "
        f"({schedule.n_calls} calls; bar labels: tensors per call)"
    )
    if own:
        fig.tight_layout()
    return fig


def plot_speedup(
    frame: pd.DataFrame, *, model: str | None = None, ax: Axes | None = None
) -> Figure:
    """PACE's speed-up over the best baseline (solid) and Horovod (dashed) vs bandwidth.

    Parameters
    ----------
    frame : pandas.DataFrame
        :meth:`optsched.runs.pace_sweep.PaceSweep.to_frame` (columns ``model``, ``workers``,
        ``bandwidth_gbps``, ``speedup_vs_best_baseline``, ``speedup_vs_horovod``).
    model : str, optional
        Plot this model only; without ``ax`` and ``model`` every model gets its own panel.
    ax : matplotlib Axes, optional
        Draw here (requires one model: ``model`` or a frame of one model).

    Returns
    -------
    matplotlib.figure.Figure
    """
    models = [model] if model is not None else list(dict.fromkeys(frame["model"]))
    if ax is not None:
        if len(models) != 1:
            raise ValueError("plot_speedup: give model= to draw one model into ax")
        fig, ax = _axes(ax, (4.2, 3.4))
        axes = [ax]
    else:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4.2 * len(models), 3.4))
        axes = list(fig.subplots(1, len(models), squeeze=False, sharey=True)[0])
    for a, name in zip(axes, models, strict=True):
        mine = frame[frame["model"] == name]
        for n in sorted(set(mine["workers"])):
            pts = mine[mine["workers"] == n].sort_values("bandwidth_gbps")
            (line,) = a.plot(
                pts["bandwidth_gbps"],
                pts["speedup_vs_best_baseline"],
                marker="o",
                label=f"{n} workers",
            )
            a.plot(
                pts["bandwidth_gbps"],
                pts["speedup_vs_horovod"],
                linestyle="--",
                color=line.get_color(),
                alpha=0.6,
            )
        a.set_xscale("log")
        a.set_title(str(name))
        a.set_xlabel("bandwidth (Gbit/s)")
        a.axhline(1.0, color="grey", linewidth=0.8)
        a.grid(True, alpha=0.3)
    axes[0].set_ylabel("PACE speed-up")
    axes[-1].legend(fontsize="small")
    if ax is None:
        fig.suptitle(
            "iteration time of the baseline / PACE (solid: best baseline; dashed: Horovod)"
        )
        fig.tight_layout()
    return fig
