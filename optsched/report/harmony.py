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
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        ax = fig.add_subplot()
    figure = ax.get_figure()
    assert figure is not None
    return figure, ax  # type: ignore[return-value]


def plot_learning_curve(
    curve: Sequence[Mapping[str, float]], *, ax: Axes | None = None, window: int = 10
) -> Figure:
    """Episode return per update (and its moving average), with the true average JCT.

    Parameters
    ----------
    curve : sequence of mapping
        :attr:`optsched.harmony.agent.TrainResult.curve` (or ``meta["curve"]`` of a checkpoint).
    window : int, default 10
        Moving-average width (episodes differ in their traces, so single points are noisy).
    """
    fig, ax = _axes(ax, (7.0, 3.6))
    it = np.array([p["iteration"] for p in curve])
    reward = np.array([p["reward"] for p in curve])
    jct = np.array([p["avg_jct_s"] for p in curve])
    w = max(1, min(window, len(reward)))
    smooth = np.convolve(reward, np.ones(w) / w, mode="valid")
    ax.plot(it, reward, color="tab:blue", alpha=0.3, lw=1)
    ax.plot(it[w - 1 :], smooth, color="tab:blue", lw=2, label="episode return (training reward)")
    ax.set_xlabel("policy update")
    ax.set_ylabel("episode return", color="tab:blue")
    twin = ax.twinx()
    jsmooth = np.convolve(jct, np.ones(w) / w, mode="valid")
    twin.plot(it[w - 1 :], jsmooth, color="tab:red", lw=2, label="average JCT, true world")
    twin.set_ylabel("average JCT (s)", color="tab:red")
    ax.set_title("learning curve (moving average of the batch's episodes)")
    return fig


def plot_gap_histogram(ratios: Sequence[float], *, ax: Axes | None = None) -> Figure:
    """Histogram of the per-decision ratio of the policy's true cost to the exact optimum."""
    fig, ax = _axes(ax, (6.0, 3.4))
    r = np.asarray(ratios, dtype=np.float64)
    top = max(1.05, float(r.max()) if r.size else 1.05)
    ax.hist(r, bins=list(np.linspace(1.0, top, 21)), color="tab:green", edgecolor="white")
    ax.axvline(float(np.median(r)), color="black", ls="--", label=f"median {np.median(r):.3f}")
    ax.set_xlabel("true cost / exact true optimum of the decision")
    ax.set_ylabel("decisions")
    ax.set_title(f"per-decision ratio to the true optimum ({np.mean(r <= 1 + 1e-6):.0%} optimal)")
    ax.legend()
    return fig


def plot_jct_cdfs(jcts: Mapping[str, Any], *, ax: Axes | None = None) -> Figure:
    """Empirical CDF of the job completion times of every policy (log-scaled time)."""
    fig, ax = _axes(ax, (7.0, 3.8))
    for name, values in jcts.items():
        v = np.sort(np.asarray(values, dtype=np.float64))
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT distribution on the same arrivals")
    ax.legend(fontsize="small")
    return fig
