"""Plots of the communication family: a PACE iteration's timeline and a sweep's speed-ups.

Both take ``ax=`` (draw into the caller's axes) and return the Figure; neither changes the
global matplotlib backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.comm.pace.schedule import CommSchedule

__all__ = ["plot_iteration", "plot_speedup"]

_OP_COLORS = {"backward": "#9e9e9e", "update": "#f2b134", "forward": "#5b8def"}


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    from optsched.report.style import new_axes

    return new_axes(ax, figsize)


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
    from optsched.report.style import figure_style

    with figure_style():
        fig, ax = _axes(ax, (10.0, 3.2))
        _iteration_lanes(ax, schedule)
        ax.set_title(
            title
            or f"{schedule.name}: {schedule.dag.name}, iteration {schedule.iteration_time:.2f} ms "
            f"({schedule.n_calls} all-reduce calls)"
        )
    return fig


def _iteration_lanes(ax: Axes, schedule: CommSchedule) -> None:
    """The compute and channel lanes of :func:`plot_iteration`, with the legend below."""
    import matplotlib as mpl
    from matplotlib.patches import Patch

    from optsched.report.style import REFERENCE, place_legend

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
                label=f"{op} (compute)",
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
    ax.set_ylim(0, 2.0)
    ax.set_xlim(0, span * 1.01)
    ax.grid(False, axis="y")
    ax.set_xlabel("time from the start of the backward pass (ms)")
    ax.axvline(
        schedule.iteration_time,
        label=f"iteration ends ({schedule.iteration_time:.2f} ms)",
        **{**REFERENCE, "color": "#D55E00"},
    )
    # the channel's bars are one colour per call: one legend entry says what they are
    handles, labels = ax.get_legend_handles_labels()
    if len(seg):
        handles.append(Patch(facecolor=cmap(0), edgecolor="black", linewidth=0.3))
        labels.append("all-reduce segment (colour: its call; number: tensors in the call)")
    place_legend(ax, where="below", ncols=3, handles=(handles, labels))


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
    from optsched.report.style import PALETTE, REFERENCE, figure_style, place_legend

    models = [model] if model is not None else list(dict.fromkeys(frame["model"]))
    with figure_style():
        if ax is not None:
            if len(models) != 1:
                raise ValueError("plot_speedup: give model= to draw one model into ax")
            fig, ax = _axes(ax, (4.2, 3.4))
            axes = [ax]
        else:
            from matplotlib.figure import Figure

            fig = Figure(figsize=(3.6 * len(models) + 2.6, 3.6), layout="constrained")
            axes = list(fig.subplots(1, len(models), squeeze=False, sharey=True)[0])
        for a, name in zip(axes, models, strict=True):
            mine = frame[frame["model"] == name]
            for k, n in enumerate(sorted(set(mine["workers"]))):
                pts = mine[mine["workers"] == n].sort_values("bandwidth_gbps")
                color = PALETTE[k % len(PALETTE)]
                a.plot(
                    pts["bandwidth_gbps"],
                    pts["speedup_vs_best_baseline"],
                    color=color,
                    marker="o",
                    linestyle="-",
                    label=f"{n} workers, vs the best baseline",
                )
                a.plot(
                    pts["bandwidth_gbps"],
                    pts["speedup_vs_horovod"],
                    color=color,
                    marker="s",
                    markerfacecolor="white",
                    linestyle="--",
                    label=f"{n} workers, vs Horovod",
                )
            bandwidths = mine["bandwidth_gbps"].to_numpy(dtype=float)
            if (
                len(bandwidths)
                and bandwidths.min() > 0
                and bandwidths.max() / bandwidths.min() > 20
            ):
                a.set_xscale("log")  # a geometric sweep of bandwidths
                a.minorticks_off()
                ticks = sorted(set(bandwidths.tolist()))
                a.set_xticks(ticks, [f"{b:g}" for b in ticks])
            a.set_title(str(name))
            a.set_xlabel("bandwidth (Gbit/s)")
            a.axhline(1.0, label="no speed-up", **REFERENCE)
        axes[0].set_ylabel("PACE speed-up (x: baseline time / PACE time)")
        place_legend(axes[-1])
        if ax is None:
            fig.suptitle("Iteration-time speed-up of PACE over the baselines")
    return fig
