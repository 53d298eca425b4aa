"""Figures of learned placement: learning curve, per-decision ratio to the true optimum, JCTs.

Each function takes ``ax=`` (a new Figure is made when omitted) and returns the Figure; the
guide page :doc:`/guide/harmony` draws its figures with them from the shipped model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_gap_histogram", "plot_jct_cdfs", "plot_learning_curve"]


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    from optsched.report.style import new_axes

    return new_axes(ax, size)


def plot_learning_curve(
    curve: Sequence[Mapping[str, float]], *, ax: Axes | None = None, window: int = 10
) -> Figure:
    """Episode return per update (and its moving average), with the true average JCT.

    Two panels would halve each; the JCT shares the x axis on a second y axis instead, each
    series with its own colour, marker and entry in the one legend.

    Parameters
    ----------
    curve : sequence of mapping
        :attr:`optsched.harmony.agent.TrainResult.curve` (or ``meta["curve"]`` of a checkpoint).
    window : int, default 10
        Moving-average width (episodes differ in their traces, so single points are noisy).
    """
    from optsched.report.style import figure_style, markevery, place_legend, series

    it = np.array([p["iteration"] for p in curve])
    reward = np.array([p["reward"] for p in curve])
    jct = np.array([p["avg_jct_s"] for p in curve])
    w = max(1, min(window, len(reward)))
    smooth = np.convolve(reward, np.ones(w) / w, mode="valid")
    jsmooth = np.convolve(jct, np.ones(w) / w, mode="valid")
    first, second = series(0), series(1)
    with figure_style():
        fig, ax = _axes(ax, (7.0, 3.6))
        ax.plot(
            it,
            reward,
            color=first["color"],
            alpha=0.3,
            lw=0.8,
            marker=".",
            ms=3,
            label="episode return, per update",
        )
        ax.plot(
            it[w - 1 :],
            smooth,
            lw=2,
            markevery=markevery(len(smooth), 0),
            label=f"episode return, mean of {w} updates",
            **first,
        )
        ax.set_xlabel("policy update (count)")
        ax.set_ylabel("episode return (reward)", color=first["color"])
        twin = ax.twinx()
        twin.spines["right"].set_visible(True)
        twin.grid(False)
        twin.plot(
            it[w - 1 :],
            jsmooth,
            lw=2,
            markevery=markevery(len(jsmooth), 1),
            label=f"average JCT in the true world, mean of {w} updates",
            **second,
        )
        twin.set_ylabel("average JCT (s)", color=second["color"])
        ax.set_title("Learning curve of the placement policy")
        # one legend for both y axes, outside them
        handles, names = ax.get_legend_handles_labels()
        more, more_names = twin.get_legend_handles_labels()
        place_legend(ax, where="below", ncols=2, handles=(handles + more, names + more_names))
    return fig


def plot_gap_histogram(ratios: Sequence[float], *, ax: Axes | None = None) -> Figure:
    """Histogram of the per-decision ratio of the policy's true cost to the exact optimum."""
    from optsched.report.style import PALETTE, REFERENCE, figure_style, place_legend

    r = np.asarray(ratios, dtype=np.float64)
    top = max(1.05, float(r.max()) if r.size else 1.05)
    with figure_style():
        fig, ax = _axes(ax, (6.4, 3.4))
        ax.hist(
            r,
            bins=list(np.linspace(1.0, top, 21)),
            color=PALETTE[2],
            edgecolor="white",
            label="decisions",
        )
        if r.size:
            ax.axvline(float(np.median(r)), label=f"median {np.median(r):.3f}", **REFERENCE)
        ax.set_xlabel("true cost / exact true optimum of the decision (ratio)")
        ax.set_ylabel("decisions (count)")
        ax.set_title(
            f"Per-decision ratio to the true optimum ({np.mean(r <= 1 + 1e-6):.0%} optimal)"
            if r.size
            else "Per-decision ratio to the true optimum (no decision)"
        )
        ax.grid(False, axis="x")
        place_legend(ax)
    return fig


def plot_jct_cdfs(jcts: Mapping[str, Any], *, ax: Axes | None = None) -> Figure:
    """Empirical CDF of the job completion times of every policy.

    Policies with identical JCTs share one line, labelled with every name; the time axis is
    logarithmic for a long tail over more than a decade.
    """
    from optsched.report.style import (
        figure_style,
        log_x,
        markevery,
        merge_identical,
        place_legend,
        series,
        wants_log,
    )

    items = []
    for name, values in jcts.items():
        v = np.sort(np.asarray(values, dtype=np.float64))
        if v.size:
            items.append((str(name), v, np.arange(1, len(v) + 1) / len(v)))
    with figure_style():
        fig, ax = _axes(ax, (7.0, 3.8))
        for i, (label, x, y) in enumerate(merge_identical(items)):
            ax.step(x, y, where="post", label=label, markevery=markevery(len(x), i), **series(i))
        if wants_log(np.concatenate([x for _, x, _ in items]) if items else np.array([])):
            log_x(ax)
        ax.set_xlabel("job completion time (s)")
        ax.set_ylabel("fraction of jobs (0-1)")
        ax.set_ylim(0, 1.01)
        ax.set_title("Job completion times on the same arrivals")
        place_legend(ax)
    return fig
