"""The placement gap table, as a table and as a heat map.

:func:`gap_table` pivots a :class:`~optsched.placement.PlacementComparison` into one row per
heuristic and one column per objective (the relative gap to the exact reference);
:func:`plot_gap_table` draws it as a heat map with the values written in the cells. Plots take
``ax=``, return the Figure and never change the global Matplotlib backend.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.placement import PlacementComparison

__all__ = ["gap_table", "plot_gap_table"]


def gap_table(comparison: PlacementComparison) -> pd.DataFrame:
    """Relative gaps, one row per heuristic and one column per objective.

    A cell is ``NaN`` where the heuristic failed or the objective does not apply; ``inf`` where
    the optimum is 0 and the heuristic's value is not. The frame's ``attrs["reference"]`` says
    per objective what the gap is measured against (``optimum`` or ``bound``).
    """
    frame = comparison.to_frame()
    table = frame.pivot(index="heuristic", columns="objective", values="gap")
    table = table.reindex(index=comparison.heuristics, columns=comparison.objectives)
    table = table.astype(float)
    table.attrs["reference"] = dict(comparison.reference)
    return table


def _label(gap: float) -> str:
    if math.isnan(gap):
        return "-"
    if math.isinf(gap):
        return "vs 0"
    return f"{100 * gap:+.0f}%"


def plot_gap_table(
    comparison: PlacementComparison, *, ax: Axes | None = None, cap: float = 2.0
) -> Figure:
    """Heat map of :func:`gap_table`: darker is further from the exact reference.

    Parameters
    ----------
    comparison : PlacementComparison
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new Figure is made when omitted.
    cap : float, default 2.0
        Gaps above this (200%) get the darkest colour; the cell text shows the true value.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from optsched.report.style import figure_style, new_axes

    table = gap_table(comparison)
    with figure_style():
        figure, ax = new_axes(ax, (1.4 * len(table.columns) + 3.0, 0.45 * len(table) + 1.5))
        values = np.clip(np.nan_to_num(table.to_numpy(), nan=np.nan, posinf=cap), 0.0, cap)
        masked = np.ma.masked_invalid(values)
        image = ax.imshow(masked, cmap="Oranges", vmin=0.0, vmax=cap, aspect="auto")
        for i in range(table.shape[0]):
            for j in range(table.shape[1]):
                gap = float(table.iat[i, j])
                dark = not math.isnan(gap) and min(gap, cap) > 0.6 * cap
                ax.text(
                    j, i, _label(gap), ha="center", va="center", color="white" if dark else "black"
                )
        reference = table.attrs["reference"]
        ax.set_xticks(
            range(table.shape[1]),
            [f"{o}\n({reference.get(o, '')})" for o in table.columns],
        )
        ax.set_yticks(range(table.shape[0]), list(table.index))
        ax.grid(False)
        ax.set_xlabel("objective (gap measured against)")
        ax.set_ylabel("heuristic")
        ax.set_title("Placement heuristics: gap to the exact reference")
        colorbar = figure.colorbar(image, ax=ax, fraction=0.04)
        colorbar.set_label(f"relative gap (fraction; {cap:g} and above darkest)")
    return figure
