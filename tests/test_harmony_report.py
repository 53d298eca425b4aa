"""The Harmony figures draw what they are given."""

from __future__ import annotations

import numpy as np

from optsched.harmony import load_model
from optsched.report.harmony import plot_gap_histogram, plot_jct_cdfs, plot_learning_curve


def test_learning_curve_of_the_shipped_model() -> None:
    _, meta = load_model()
    fig = plot_learning_curve(meta["curve"])
    ax = fig.axes[0]
    raw = ax.lines[0].get_ydata()
    assert len(raw) == len(meta["curve"]) == meta["training"]["iterations"]
    # The moving average ends at the mean of the last ten returns.
    last = np.mean([p["reward"] for p in meta["curve"][-10:]])
    assert np.isclose(ax.lines[1].get_ydata()[-1], last)


def test_gap_histogram_counts_every_decision() -> None:
    ratios = [1.0, 1.0, 1.2, 1.5]
    fig = plot_gap_histogram(ratios)
    assert sum(p.get_height() for p in fig.axes[0].patches) == len(ratios)


def test_jct_cdfs_one_step_per_policy() -> None:
    fig = plot_jct_cdfs({"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0]})
    lines = fig.axes[0].lines
    assert len(lines) == 2
    assert lines[1].get_ydata()[-1] == 1.0
