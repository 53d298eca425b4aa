r"""One look for every figure optsched draws, and the checks a reviewer would make by eye.

Every plotting function of :mod:`optsched.report` (and the figures of ``optsched demo``) draws
inside :func:`figure_style` and takes each series' look from :func:`series`, so the figures
share one font (DejaVu Sans, shipped with Matplotlib: the same glyphs on every machine), one
colour-blind-safe palette (Okabe and Ito's, without its yellow, which is too light on white),
and a marker and line style per series: the first 140 series all differ (in colour, marker
or dash, mostly in all three), and stay distinguishable in greyscale print.

The helpers encode the rules the figures follow:

* :func:`clipped_errors`: a confidence interval of a metric that cannot be negative is drawn
  no lower than 0 (a Student-t interval over a few seeds often reaches below);
* :func:`place_legend`: the legend sits outside the axes, so it never covers data;
* :func:`merge_identical`: series with identical data are drawn once, labelled with every
  name (``"fifo = sjf"``), so no series hides under another;
* :func:`figure_problems`: what a reviewer checks, by measuring the drawn figure: a unit on
  every numeric axis label, a label and a marker on every series, no error bar below zero, no
  legend over data, no two labelled series with the same data.

Matplotlib is imported inside the functions only (``import optsched.report.style`` is cheap).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

__all__ = [
    "INTERVAL_NOTE",
    "LINESTYLES",
    "MARKERS",
    "PALETTE",
    "REFERENCE",
    "clipped_errors",
    "figure_problems",
    "figure_style",
    "log_x",
    "merge_identical",
    "new_axes",
    "place_legend",
    "rc_params",
    "series",
    "wants_log",
    "wrap",
]

#: Okabe & Ito's colour-blind-safe palette (blue, vermillion, bluish green, reddish purple,
#: orange, sky blue, black); their yellow is left out, too light on a white page.
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
)
#: Markers cycled with the colours (10 of them: coprime with 7 colours and 4 dashes).
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "<", "*", ">")
#: Dash patterns cycled with the colours.
LINESTYLES: tuple[str, ...] = ("-", "--", "-.", ":")
#: The look of a reference line (an optimum, a bound, the capacity, rho = 1).
REFERENCE: dict[str, Any] = {
    "color": "#555555",
    "linestyle": (0, (5, 2)),
    "linewidth": 1.0,
    "marker": "none",  # the property cycle's markers are for data, not for a reference
}
#: The interval every error bar of a non-negative metric shows (stated in its legend).
INTERVAL_NOTE = "error bars: 95% Student-t interval over seeds, clipped at 0"

#: Markers per line at most on a dense line (a CDF of hundreds of jobs).
_MARKS_PER_LINE = 8
#: Tolerance (in data units, relative) below which two series count as identical.
_SAME = 1e-9
#: An axis label carries its unit (or dimension) in parentheses: "JCT (h)", "ratio (x)".
_UNIT = re.compile(r"\(([^()]+)\)\s*$")


def rc_params() -> dict[str, Any]:
    """The Matplotlib rcParams of the style (fonts, sizes, grid, property cycle)."""
    from cycler import cycler

    n = 20
    return {
        "font.family": "DejaVu Sans",
        "mathtext.fontset": "dejavusans",
        "font.size": 9.0,
        "axes.titlesize": 10.0,
        "axes.labelsize": 9.0,
        "legend.fontsize": 8.0,
        "legend.title_fontsize": 8.0,
        "legend.frameon": False,
        "xtick.labelsize": 8.0,
        "ytick.labelsize": 8.0,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "grid.linewidth": 0.6,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.formatter.useoffset": False,
        "axes.formatter.limits": (-4, 6),
        "lines.linewidth": 1.5,
        "lines.markersize": 5.0,
        "errorbar.capsize": 3.0,
        "image.cmap": "cividis",
        "axes.prop_cycle": cycler(
            color=[PALETTE[i % len(PALETTE)] for i in range(n)],
            marker=[MARKERS[i % len(MARKERS)] for i in range(n)],
            linestyle=[LINESTYLES[i % len(LINESTYLES)] for i in range(n)],
        ),
        "svg.hashsalt": "optsched",
    }


@contextlib.contextmanager
def figure_style() -> Iterator[None]:
    """Draw inside this to get the style's fonts, sizes and grid (Matplotlib ``rc_context``)."""
    import matplotlib as mpl

    # rc_context's stub types its keys as a Literal of every rcParam name
    with mpl.rc_context(cast(Any, rc_params())):
        yield


def series(i: int) -> dict[str, Any]:
    r"""Colour, marker and line style of the ``i``-th series (as keyword arguments of ``plot``).

    Colours repeat every 7 series, markers every 10 and dashes every 4: the first
    :math:`\\operatorname{lcm}(7, 10, 4) = 140` series all look different.
    """
    return {
        "color": PALETTE[i % len(PALETTE)],
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
    }


def bar_style(i: int) -> dict[str, Any]:
    """Fill colour and hatch of the ``i``-th bar series (hatches tell bars apart in greyscale)."""
    hatches = ("", "//", "..", "xx", "\\\\", "--", "++", "oo")
    return {
        "color": PALETTE[i % len(PALETTE)],
        "hatch": hatches[i % len(hatches)],
        "edgecolor": "white",
        "linewidth": 0.5,
    }


def markevery(n: int, i: int) -> int | tuple[int, int]:
    """Markers on a line of ``n`` points: about :data:`_MARKS_PER_LINE`, offset by series ``i``.

    The offset keeps markers of overlapping lines apart.
    """
    if n <= _MARKS_PER_LINE:
        return 1
    step = max(1, n // _MARKS_PER_LINE)
    return (i * step // 3 % step, step)


def wrap(text: str, width: int = 70) -> str:
    """``text`` on lines of at most ``width`` characters (titles and legend titles)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def wants_log(values: Sequence[float] | np.ndarray) -> bool:
    """Whether a log axis shows ``values`` better than a linear one.

    A log axis pays when the values span more than a decade *and* a linear one would squash
    most of them at its left end (the median in the lowest 15% of the range: a long tail, as
    JCTs and finish-time fairness have); otherwise it only wastes space.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size < 2 or v.max() / v.min() <= 10.0:
        return False
    return bool((np.median(v) - v.min()) / (v.max() - v.min()) < 0.15)


def log_x(ax: Axes) -> None:
    """A logarithmic x axis with plain tick labels (``0.1, 1, 10``, not ``10^0``)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def new_axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    """``ax`` and its figure, or a new constrained-layout Figure of ``size`` inches.

    A Figure made directly (not through pyplot) needs no backend and leaves pyplot alone.
    """
    if ax is not None:
        fig = ax.get_figure()
        assert fig is not None
        return fig, ax  # type: ignore[return-value]
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def place_legend(
    ax: Axes,
    *,
    title: str | None = None,
    where: str = "right",
    ncols: int = 1,
    handles: tuple[list[Any], list[str]] | None = None,
) -> Legend | None:
    """The axes' legend outside the axes (right of it, or below), never over the data.

    A figure without a layout engine gets constrained layout, so the legend is kept inside
    the saved image. Nothing is drawn when no artist is labelled. ``handles`` gives the
    entries (handles, labels) instead of the labelled artists of ``ax``.
    """
    items, labels = handles if handles is not None else ax.get_legend_handles_labels()
    if not items:
        return None
    if where == "below":
        from matplotlib.transforms import ScaledTranslation

        # below the tick labels and the x label, whatever the axes' height: an offset in
        # points (ticks 3.5 + pad 3.5 + 8 pt labels + labelpad 4 + a 9 pt label, with leading)
        drop = 38.0 if ax.get_xlabel() else 22.0
        owner: Any = ax.get_figure()
        anchor = ax.transAxes + ScaledTranslation(0.0, -drop / 72.0, owner.dpi_scale_trans)
        legend = ax.legend(
            items,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            bbox_transform=anchor,
            ncols=ncols,
            title=title,
            borderaxespad=0.0,
        )
    else:
        legend = ax.legend(
            items,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            ncols=ncols,
            title=title,
            borderaxespad=0.0,
        )
    legend.set_alignment("left")
    fig: Any = ax.get_figure()
    # a SubFigure has no layout engine of its own: its root Figure's lays it out
    root = fig if hasattr(fig, "get_layout_engine") else getattr(fig, "figure", None)
    if root is not None and root.get_layout_engine() is None:
        root.set_layout_engine("constrained")
    return legend


def clipped_errors(
    mean: Sequence[float] | np.ndarray, half: Sequence[float] | np.ndarray, floor: float = 0.0
) -> np.ndarray:
    r"""Asymmetric error-bar lengths of ``mean ± half`` with the lower end kept ``>= floor``.

    Returns the ``(2, n)`` array ``errorbar``/``bar`` take as ``yerr``: the lower length is
    :math:`\bar x - \max(\bar x - h, f)`, the upper :math:`h` (NaN half-widths draw none).
    A metric that cannot be below ``floor`` (a time, a count, a ratio to a lower bound) gets no
    interval below it; the legend says the interval was clipped (:data:`INTERVAL_NOTE`).
    """
    m = np.asarray(mean, dtype=float)
    h = np.nan_to_num(np.asarray(half, dtype=float), nan=0.0)
    h = np.maximum(h, 0.0)
    low = np.where(np.isfinite(m), m - np.maximum(m - h, floor), 0.0)
    return np.vstack([np.maximum(low, 0.0), np.where(np.isfinite(m), h, 0.0)])


def merge_identical(
    items: Sequence[tuple[str, np.ndarray, np.ndarray]],
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Series with identical data drawn once, under the joint label ``"a = b"``.

    Two policies with the same JCT of every job give the same CDF; drawn twice, the second
    hides the first. Order follows the first occurrence.
    """
    out: list[tuple[list[str], np.ndarray, np.ndarray]] = []
    for label, x, y in items:
        xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        for names, ox, oy in out:
            if _same(ox, xs) and _same(oy, ys):
                names.append(label)
                break
        else:
            out.append(([label], xs, ys))
    return [(" = ".join(names), x, y) for names, x, y in out]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    scale = max(1.0, float(np.nanmax(np.abs(a))) if a.size else 1.0)
    return bool(np.allclose(a, b, rtol=_SAME, atol=_SAME * scale, equal_nan=True))


# ------------------------------------------------------------------------------------------
# What a reviewer checks, measured on the drawn figure
# ------------------------------------------------------------------------------------------


def figure_problems(fig: Figure, *, non_negative: bool = True) -> list[str]:
    """Every rule of the style the drawn ``fig`` breaks, one sentence each (empty: none).

    The figure is drawn (Agg) and measured in display coordinates:

    * a numeric axis (not one of category names) has a label ending in its unit or dimension
      in parentheses ("JCT (h)", "fraction of jobs (0-1)");
    * every line of data (more than two points) has a label and a marker; a reference line
      (``axhline``, two points) has a label;
    * no two labelled lines have the same data (one would hide the other);
    * with ``non_negative``, no error bar reaches below 0;
    * not every series at one x value (a load axis with one load);
    * no legend's box meets the box of a line, bar, error bar or filled area.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    out: list[str] = []
    for k, ax in enumerate(fig.get_axes()):
        if not ax.get_visible() or not ax.axison:
            continue
        name = f"axes {k} ({ax.get_title() or ax.get_ylabel() or 'untitled'})"
        out += _axis_problems(ax, name)
        out += _line_problems(ax, name)
        if non_negative:
            out += _errorbar_problems(ax, name)
        out += _one_x_problems(ax, name)
        out += _legend_problems(ax, name, renderer)
    return out


#: A tick label that is a number ("0.5", "-2", "1e-01", "10^{2}" once math markup is dropped).
_NUMBER = re.compile(r"[-+]?[\d.,]*\d[\d.,]*(?:[eE][-+]?\d+)?")


def _numeric(axis: Any) -> bool:
    """An axis whose tick labels are numbers (not category names such as policies)."""
    texts = [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
    if not texts:
        return False
    for text in texts:
        plain = text.replace("\N{MINUS SIGN}", "-").replace("\\mathdefault", "")
        plain = re.sub(r"[${}\s]", "", plain).replace("^", "e").replace("10e", "1e")
        if not _NUMBER.fullmatch(plain):
            return False
    return True


def _axis_problems(ax: Axes, name: str) -> list[str]:
    out = []
    shared_x = [a for a in ax.get_shared_x_axes().get_siblings(ax) if a is not ax]
    for which, axis, label in (("x", ax.xaxis, ax.get_xlabel()), ("y", ax.yaxis, ax.get_ylabel())):
        if not axis.get_visible() or not _numeric(axis):
            continue
        if not label and which == "x" and any(a.get_xlabel() for a in shared_x):
            continue  # a twin shares its x axis (and its label) with the first axes
        if (
            not label
            and which == "y"
            and any(a.get_ylabel() for a in ax.get_shared_y_axes().get_siblings(ax))
        ):
            continue  # panels side by side share one y label
        if not _UNIT.search(label):
            out.append(f"{name}: the {which} axis label {label!r} names no unit in parentheses")
    return out


def _data_lines(ax: Axes) -> list[Any]:
    inner = set()
    for container in ax.containers:
        for part in container.get_children():
            inner.add(id(part))
    return [ln for ln in ax.get_lines() if id(ln) not in inner and ln.get_visible()]


def _line_problems(ax: Axes, name: str) -> list[str]:
    out = []
    seen: list[tuple[str, np.ndarray, np.ndarray]] = []
    for line in _data_lines(ax):
        label = str(line.get_label())
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        reference = len(x) <= 2
        if label.startswith("_"):
            out.append(f"{name}: a line of {len(x)} points has no label")
            continue
        if not reference and line.get_marker() in (None, "", " ", "None", "none"):
            out.append(f"{name}: the line {label!r} has no marker")
        for other, ox, oy in seen:
            if not reference and _same(ox, x) and _same(oy, y):
                out.append(f"{name}: the lines {other!r} and {label!r} coincide (one is hidden)")
        seen.append((label, x, y))
    return out


def _errorbar_problems(ax: Axes, name: str) -> list[str]:
    from matplotlib.container import BarContainer, ErrorbarContainer

    owner = {
        id(c.errorbar): c.get_label()
        for c in ax.containers
        if isinstance(c, BarContainer) and getattr(c, "errorbar", None) is not None
    }
    out = []
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        label = owner.get(id(container), container.get_label())
        for col in container.lines[2]:
            lows = [float(np.min(np.asarray(seg)[:, 1])) for seg in col.get_segments() if len(seg)]
            if lows and min(lows) < 0.0:
                out.append(f"{name}: {label!r} has an error bar down to {min(lows):.4g} (< 0)")
    return out


def _one_x_problems(ax: Axes, name: str) -> list[str]:
    """Several series of points all at one x: an axis drawn for a sweep that did not vary."""
    from matplotlib.container import ErrorbarContainer

    xs: list[float] = []
    count = 0
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer) and container.lines[0] is not None:
            xs += list(np.asarray(container.lines[0].get_xdata(), dtype=float))
            count += 1
    for line in _data_lines(ax):
        if len(line.get_xdata()) > 2 and not str(line.get_label()).startswith("_"):
            xs += list(np.asarray(line.get_xdata(), dtype=float))
            count += 1
    if count >= 2 and len(set(xs)) == 1:
        return [f"{name}: every series is at the one x value {xs[0]:g} (nothing varies along x)"]
    return []


def _legend_problems(ax: Axes, name: str, renderer: Any) -> list[str]:
    legend = ax.get_legend()
    if legend is None or not legend.get_visible():
        return []
    box = legend.get_window_extent(renderer)
    out = []
    artists: list[Any] = [*_data_lines(ax), *ax.patches, *ax.collections]
    for container in ax.containers:
        artists += [a for a in container.get_children() if a.get_visible()]
    for artist in artists:
        if not artist.get_visible() or artist is ax.patch:
            continue
        if _spans_axes(artist, ax, renderer):
            continue  # a reference line or band across the whole axes meets anything inside
        try:
            other = artist.get_window_extent(renderer)
        except (TypeError, ValueError, RuntimeError, NotImplementedError):
            continue
        if other.width <= 0 and other.height <= 0:
            continue
        if box.overlaps(other):
            label = str(artist.get_label())
            what = label if not label.startswith("_") else type(artist).__name__
            out.append(f"{name}: the legend covers {what!r}")
    return out


def _spans_axes(artist: Any, ax: Axes, renderer: Any) -> bool:
    """An ``axhline``/``axvline``/``axvspan``: not in data coordinates, across the whole axes."""
    if artist.get_transform() is ax.transData:
        return False
    try:
        mine = artist.get_window_extent(renderer)
    except (TypeError, ValueError, RuntimeError, NotImplementedError):
        return False
    frame = ax.get_window_extent(renderer)
    return bool(mine.width >= 0.99 * frame.width or mine.height >= 0.99 * frame.height)
