r"""Reports of simulator sweeps and experiments: one self-contained HTML page and Markdown.

:func:`sweep_report` turns an :class:`~optsched.runs.experiment.ExperimentResult` (an experiment
run, or any ``sim-experiment`` / ``sim-sweep`` store read back) into a :class:`SweepReport`:

* **Summary**: per policy and group (trace, cluster, scale, load), every metric's mean and
  Student-t confidence interval across seeds (the table of
  :meth:`ExperimentResult.to_frame <optsched.runs.experiment.ExperimentResult.to_frame>`), and
  the average JCT against the load;
* **JCT CDFs**: per group, the empirical CDF of the finished jobs' JCT pooled over seeds, one
  line per policy;
* **Makespan** and **Fairness**: bars of the mean makespan and worst finish-time fairness
  :math:`\max_j \rho_j`, with their confidence intervals as error bars, and the CDF of
  :math:`\rho`;
* **Gap to the bound**: :math:`\bar J / \underline{J} - 1` against the isolated bound of the
  mean JCT (:mod:`optsched.runs.experiment`), when the runs carry it;
* **Experiment**: the experiment file's text and SHA-256.

The HTML embeds every figure as a base64 PNG and loads nothing from the network; the Markdown
refers to the same PNGs written next to it. ``optsched sim report STORE`` writes both.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.report._text import fixed, fixed_decimals, mpl_literal, plain, time_unit
from optsched.runs.experiment import GROUP_FIELDS, KEY_FIELDS, ExperimentResult

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "Section",
    "SweepReport",
    "plot_jct_vs_load",
    "plot_sweep_bars",
    "plot_sweep_cdf",
    "sweep_report",
]

#: Columns of the summary table, in order, with their titles.
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("jct_mean", "mean JCT (s)"),
    ("jct_p95", "p95 JCT (s)"),
    ("makespan", "makespan (s)"),
    ("rho_max", "worst rho"),
    ("utilization_mean", "utilization"),
    ("unfinished", "unfinished"),
    ("gap_jct_bound", "gap to bound"),
    ("gap_weighted-jct", "gap weighted JCT"),
    ("gap_makespan", "gap makespan"),
)

#: At most this many groups get their own CDF figure (the first ones, in table order).
MAX_GROUP_FIGURES = 12


@dataclass
class Section:
    """One section of a report: a title, text (Markdown-safe), tables and figures."""

    title: str
    text: str = ""
    tables: list[pd.DataFrame] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    code: str | None = None


def _plain(text: object) -> str:
    """A data string (a policy label, a trace name) as matplotlib shows it literally."""
    return mpl_literal(text)


def _md(text: object) -> str:
    """A data string made inert in Markdown: no raw HTML, no table break, no line break.

    ``<``, ``>`` and ``&`` become HTML entities (Markdown renderers pass raw HTML through, so
    an experiment named ``<script>`` would run in the page), ``|`` is escaped (a table cell),
    and line breaks become spaces (a heading or cell is one line).
    """
    out = html.escape(str(text), quote=False).replace("|", "\\|")
    return " ".join(out.splitlines())


def _fence(code: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``code`` (so it cannot end it)."""
    import re

    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _axes(ax: Axes | None) -> tuple[Figure, Axes]:
    from optsched.report.style import new_axes

    return new_axes(ax, (6.4, 3.6))


#: Words and kind of unit of every summarized metric a figure shows (``time`` metrics are in
#: seconds in the runs and drawn in the unit asked for).
METRIC_WORDS: dict[str, tuple[str, str]] = {
    "jct_mean": ("mean JCT", "time"),
    "jct_p95": ("95th-percentile JCT", "time"),
    "makespan": ("makespan", "time"),
    "jct_bound": ("isolated bound on the mean JCT", "time"),
    "rho_max": ("worst finish-time fairness max rho", "ratio"),
    "rho_mean": ("mean finish-time fairness rho", "ratio"),
    "utilization_mean": ("mean GPU utilization", "fraction"),
    "unfinished": ("unfinished jobs", "jobs"),
    "gap_jct_bound": ("mean JCT / isolated bound - 1", "fraction"),
    "gap_weighted-jct": ("total weighted JCT / certified bound - 1", "fraction"),
    "gap_makespan": ("(last completion - first arrival) / certified bound - 1", "fraction"),
}


def metric_label(metric: str, unit: str = "h") -> tuple[str, float]:
    """Axis label (with its unit) of a summarized metric and the divisor from its run units.

    >>> metric_label("makespan", "h")
    ('makespan (h)', 3600.0)
    >>> metric_label("rho_max")
    ('worst finish-time fairness max rho (ratio)', 1.0)
    """
    from optsched.report.sim import time_scale

    words, kind = METRIC_WORDS.get(metric, (metric, "as stored"))
    if kind == "time":
        scale, short = time_scale(unit)
        return f"{words} ({short})", scale
    return f"{words} ({kind})", 1.0


def _group_label(key: tuple[Any, ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(GROUP_FIELDS, key, strict=True))


def _group_plain(key: tuple[Any, ...]) -> str:
    """:func:`_group_label` for a figure (a trace name may hold ``$``)."""
    return _plain(_group_label(key))


def _groups(runs: pd.DataFrame) -> list[tuple[Any, ...]]:
    if not len(runs):
        return []
    keys = runs[list(GROUP_FIELDS)].drop_duplicates()
    return [tuple(r) for r in keys.itertuples(index=False)]


def _fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return "-" if not math.isfinite(value) else plain(float(value))
    return str(value)


#: The summary's time metrics: shown in one unit chosen once per table (:func:`time_unit`).
TIME_METRICS = frozenset({"jct_mean", "jct_p95", "makespan"})

#: What a summary cell shows (the note under every summary table). Every summarized metric
#: is a time, a count, a fraction or a gap above an optimum or a bound, so none is below 0:
#: the interval is clipped at 0 there, as the figures' error bars are.
CELL_NOTE = (
    "each cell: the mean over seeds [low, high], the 95% Student-t interval over seeds "
    "clipped at 0 (no interval with one seed)"
)


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    r"""The summary as shown: ``mean [low, high]`` strings per metric (same numbers as to_frame).

    The interval is :math:`[\max(\bar x - h, 0),\ \bar x + h]` for the half-width
    :math:`h` of the 95% Student-t interval (:data:`CELL_NOTE`): every metric is
    non-negative, so no cell shows a negative lower end (a mean that is itself below 0, a
    solver's rounding of a zero gap, keeps its unclipped interval). Every time column is in
    the one unit :func:`~optsched.report._text.time_unit` chooses from the table's time means
    (named in the headers); each column's numbers have one number of decimals and no exponent.
    """
    import pandas as pd

    times = [r.get(f"{m}_mean") for _, r in summary.iterrows() for m in TIME_METRICS]
    scale, unit = time_unit(times)
    columns: dict[str, list[str]] = {}
    for metric, title in TABLE_COLUMNS:
        if f"{metric}_mean" not in summary.columns:
            continue
        factor = scale if metric in TIME_METRICS else 1.0
        means = [_number(v) / factor for v in summary[f"{metric}_mean"]]
        cis = [_number(v) / factor for v in summary.get(f"{metric}_ci", [math.nan] * len(means))]
        decimals = fixed_decimals([*means, *cis])
        header = title.replace("(s)", f"({unit})") if metric in TIME_METRICS else title
        columns[header] = [_cell(m, c, decimals) for m, c in zip(means, cis, strict=True)]
    rows = []
    for i, (_, r) in enumerate(summary.iterrows()):
        row: dict[str, Any] = {k: r[k] for k in (*GROUP_FIELDS, "policy", "seeds")}
        row.update({title: cells[i] for title, cells in columns.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(mean: float, half: float, decimals: int) -> str:
    """``mean [low, high]``, the interval clipped at 0; the mean alone without an interval."""
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(half):
        return fixed(mean, decimals)
    low = max(mean - half, 0.0) if mean >= 0.0 else mean - half
    return f"{fixed(mean, decimals)} [{fixed(low, decimals)}, {fixed(mean + half, decimals)}]"


def _number(value: Any) -> float:
    """A summary cell as a float (NaN for a missing value)."""
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def plot_sweep_bars(
    result: ExperimentResult,
    metric: str,
    *,
    label: str | None = None,
    ax: Axes | None = None,
    unit: str = "s",
) -> Figure:
    """Mean of ``metric`` across seeds per policy, one cluster of bars per group, CI bars.

    The error bars are the 95% Student-t interval across seeds (the summary's), clipped at 0:
    every summarized metric is non-negative, and an interval of a few seeds often reaches
    below 0; the legend says so.

    Parameters
    ----------
    result : ExperimentResult
    metric : str
        A summarized run metric (:data:`~optsched.runs.experiment.SUMMARY_METRICS`).
    label : str, optional
        Axis label (default the metric in words with its unit, :func:`metric_label`).
    ax : Axes, optional
    unit : {"s", "min", "h"}
        Unit of a time metric (JCT, makespan); other metrics are drawn as stored.
    """
    words, scale = metric_label(metric, unit)
    return _bars(result.to_frame(), metric, label or words, _policies(result), ax=ax, scale=scale)


def _policies(result: ExperimentResult) -> list[str]:
    if result.policies:
        return list(result.policies)
    return sorted(result.runs["policy"].unique()) if len(result.runs) else []


def _bars(
    summary: pd.DataFrame,
    metric: str,
    label: str,
    policies: list[str],
    *,
    ax: Axes | None = None,
    scale: float = 1.0,
) -> Figure:
    """Grouped bars: one cluster of bars per group, one bar per policy, clipped CI bars."""
    from optsched.report.style import (
        INTERVAL_NOTE,
        bar_style,
        clipped_errors,
        figure_style,
        place_legend,
    )

    with figure_style():
        fig, ax = _axes(ax)
        groups = _groups(summary)
        width = 0.8 / max(len(policies), 1)
        for i, policy in enumerate(policies):
            part = summary[summary["policy"] == policy]
            means, cis = [], []
            for g in groups:
                keys = part[list(GROUP_FIELDS)].itertuples(index=False)
                hit = part[[tuple(r) == g for r in keys]]
                means.append(float(hit[f"{metric}_mean"].iloc[0]) / scale if len(hit) else math.nan)
                ci = float(hit[f"{metric}_ci"].iloc[0]) / scale if len(hit) else math.nan
                cis.append(ci if math.isfinite(ci) else 0.0)
            x = np.arange(len(groups)) + (i - (len(policies) - 1) / 2) * width
            ax.bar(
                x,
                means,
                width,
                yerr=clipped_errors(means, cis),
                capsize=3,
                error_kw={"elinewidth": 1.0, "ecolor": "#333333"},
                label=_plain(policy),
                **bar_style(i),
            )
        ax.set_xticks(
            range(len(groups)),
            [
                f"load {g[3]:g}" if len(_distinct(groups, 3)) == len(groups) else _group_plain(g)
                for g in groups
            ],
            rotation=20 if len(groups) > 3 else 0,
            ha="right" if len(groups) > 3 else "center",
        )
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0.0)
        ax.grid(False, axis="x")
        words = label.rsplit(" (", 1)[0]
        ax.set_title(f"{words[:1].upper()}{words[1:]}: mean over seeds per policy")
        place_legend(ax, title=_wrap_note(INTERVAL_NOTE))
    return fig


def _wrap_note(text: str, width: int = 28) -> str:
    """A legend title on lines of at most ``width`` characters (a long title widens the legend)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def _distinct(groups: list[tuple[Any, ...]], i: int) -> set[Any]:
    return {g[i] for g in groups}


def plot_sweep_cdf(
    result: ExperimentResult,
    *,
    kind: str = "jct",
    load: float | None = None,
    group: tuple[Any, ...] | None = None,
    ax: Axes | None = None,
) -> Figure:
    r"""Empirical CDF of the finished jobs' JCT (``kind="jct"``) or :math:`\rho` (``"rho"``).

    One line per policy, pooling the jobs of every seed of one group (trace, cluster, scale,
    load): ``group``, else the first group at ``load``, else the first group. A line ends at
    the finished fraction of the jobs (below 1 when jobs did not finish).

    Raises
    ------
    KeyError
        ``kind`` is neither ``"jct"`` nor ``"rho"``, or no group matches.
    """
    samples = {"jct": result.jcts, "rho": result.rhos}[kind]
    groups = _groups(result.runs)
    if group is None:
        hits = [g for g in groups if load is None or g[3] == load]
        if not hits:
            raise KeyError(f"no group at load {load}")
        group = hits[0]
    xlabel = "JCT (h)" if kind == "jct" else "finish-time fairness rho (ratio)"
    return _cdf_figure(
        samples,
        result.runs,
        group,
        _policies(result),
        xlabel,
        mark_one=kind == "rho",
        scale=3600.0 if kind == "jct" else 1.0,
        ax=ax,
    )


def _cdf_figure(
    samples: dict[tuple[Any, ...], list[float]],
    runs: pd.DataFrame,
    group: tuple[Any, ...],
    policies: list[str],
    xlabel: str,
    *,
    mark_one: bool = False,
    scale: float = 1.0,
    ax: Axes | None = None,
) -> Figure:
    """Empirical CDF per policy of the values pooled over the group's seeds.

    Policies with identical pooled values are drawn once, labelled ``"a = b"`` (else the
    later line hides the earlier). The x axis is logarithmic only for a long tail over more
    than a decade (:func:`~optsched.report.style.wants_log`; else a log axis wastes space).
    """
    from optsched.report.style import (
        REFERENCE,
        figure_style,
        markevery,
        merge_identical,
        place_legend,
        series,
        wrap,
    )

    items: list[tuple[str, np.ndarray, np.ndarray]] = []
    for policy in policies:
        values: list[float] = []
        total = 0
        for key, rest in _runs_of(runs, group, policy):
            values += samples.get(key, [])
            total += int(rest)
        if not values or total == 0:
            continue
        x = np.sort(np.asarray(values, dtype=float)) / scale
        # unfinished jobs have no JCT: the line ends at the finished fraction, below 1
        items.append((_plain(policy), x, np.arange(1, len(x) + 1) / total))
    with figure_style():
        fig, ax = _axes(ax)
        for i, (label, x, y) in enumerate(merge_identical(items)):
            ax.step(x, y, where="post", label=label, markevery=markevery(len(x), i), **series(i))
        if mark_one:
            ax.axvline(1.0, label="rho = 1 (fair)", **REFERENCE)
        _maybe_log(ax, [x for _, x, _ in items])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of jobs (0-1)")
        ax.set_ylim(0, 1.01)
        what = "Finish-time fairness" if mark_one else "JCT"
        ax.set_title(wrap(f"{what} of the jobs of every seed: {_group_plain(group)}", 60))
        place_legend(ax)
    return fig


def _maybe_log(ax: Axes, xs: list[np.ndarray]) -> None:
    """A log x axis for a long tail over more than a decade (else it wastes space)."""
    from optsched.report.style import log_x, wants_log

    if wants_log(np.concatenate(xs) if xs else np.array([])):
        log_x(ax)


def _runs_of(
    runs: pd.DataFrame, group: tuple[Any, ...], policy: str
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    mask = runs["policy"] == policy
    for col, value in zip(GROUP_FIELDS, group, strict=True):
        mask &= runs[col] == value
    for _, r in runs[mask].iterrows():
        yield tuple(r[k] for k in KEY_FIELDS), r.get("jobs", 0)


def plot_jct_vs_load(result: ExperimentResult, *, ax: Axes | None = None) -> Figure:
    """Average JCT (hours) against the load, mean across seeds with its CI as error bars.

    One line per policy (and per trace, cluster and scale when there are several). The
    error bars are the 95% Student-t interval over seeds, clipped at 0. When every run is at
    one load there is no load axis: the figure shows the mean JCT per policy at that load and
    says so in its title.
    """
    return _load_figure(result.to_frame(), _policies(result), ax=ax)


def _load_figure(summary: pd.DataFrame, policies: list[str], *, ax: Axes | None = None) -> Figure:
    """Average JCT against the load, one line per policy and (trace, cluster, scale)."""
    from optsched.report.style import (
        INTERVAL_NOTE,
        clipped_errors,
        figure_style,
        place_legend,
        series,
    )

    rest = [c for c in GROUP_FIELDS if c != "load"]
    many = len(summary[rest].drop_duplicates()) > 1
    loads = sorted(set(summary["load"])) if len(summary) else []
    one_load = len(loads) == 1
    count = sum(
        1
        for _, part in summary.groupby(rest, sort=True)
        for policy in policies
        if (part["policy"] == policy).any()
    )
    gaps = np.diff(np.asarray(loads, dtype=float))
    dodge = 0.25 * float(gaps.min()) / max(count, 1) if len(gaps) else 0.0
    with figure_style():
        fig, ax = _axes(ax)
        i, names = 0, []
        for key, part in summary.groupby(rest, sort=True):
            for policy in policies:
                line = part[part["policy"] == policy].sort_values("load")
                if not len(line):
                    continue
                y = line["jct_mean_mean"].to_numpy(dtype=float) / 3600.0
                ci = line["jct_mean_ci"].to_numpy(dtype=float) / 3600.0
                label = _plain(policy + (f" ({', '.join(map(str, key))})" if many else ""))
                # side by side at one load; else nudged apart so error bars do not overlap
                x = (
                    np.full(len(y), i, dtype=float)
                    if one_load
                    else line["load"].to_numpy(dtype=float) + (i - (count - 1) / 2) * dodge
                )
                ax.errorbar(x, y, yerr=clipped_errors(y, ci), capsize=3, label=label, **series(i))
                names.append(label)
                i += 1
        if one_load:
            # one load: points side by side per policy, no pretend load axis
            ax.set_xticks(
                range(i), names, rotation=20 if i > 3 else 0, ha="right" if i > 3 else "center"
            )
            ax.set_xlim(-0.6, i - 0.4)
            ax.set_title(f"Every run is at load {loads[0]:g}: no load sweep to draw")
        else:
            ax.set_xlabel("load (x the trace's arrival rate)")
            ax.set_title("Mean JCT against the load")
        ax.set_ylabel("average JCT (h)")
        ax.set_ylim(bottom=0.0)
        place_legend(ax, title=_wrap_note(INTERVAL_NOTE))
    return fig


@dataclass
class SweepReport:
    """A report of a simulator sweep: its sections, and its HTML and Markdown renderings.

    Attributes
    ----------
    result : ExperimentResult
        The runs reported.
    sections : list of Section
    """

    result: ExperimentResult
    sections: list[Section]

    @property
    def title(self) -> str:
        """The report's title (the experiment's name)."""
        return f"Simulator sweep: {self.result.name or 'runs'}"

    def to_frame(self) -> pd.DataFrame:
        """The summary table's numbers (:meth:`ExperimentResult.to_frame`)."""
        return self.result.to_frame()

    def to_html(self) -> str:
        """One self-contained HTML page (figures as base64 PNG, no external resource)."""
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(self.title)}</title>",
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}"
            "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;"
            "padding:2px 6px;text-align:right}img{max-width:100%}pre{background:#f6f6f6;"
            "padding:0.5em;overflow:auto}</style>",
            "</head><body>",
            f"<h1>{html.escape(self.title)}</h1>",
            self._body_html(),
            "</body></html>",
        ]
        return "\n".join(parts)

    def _body_html(self) -> str:
        out = []
        for section in self.sections:
            out.append(f"<section><h2>{html.escape(section.title)}</h2>")
            if section.text:
                out.append(f"<p>{html.escape(section.text)}</p>")
            for table in section.tables:
                out.append(table.to_html(index=False, escape=True, na_rep="-"))
            for caption, png in section.figures:
                data = base64.b64encode(png).decode("ascii")
                out.append(
                    f'<figure><img alt="{html.escape(caption)}" '
                    f'src="data:image/png;base64,{data}"><figcaption>'
                    f"{html.escape(caption)}</figcaption></figure>"
                )
            if section.code is not None:
                out.append(f"<pre>{html.escape(section.code)}</pre>")
            out.append("</section>")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        return f"<h3>{html.escape(self.title)}</h3>" + self._body_html()

    def figure_names(self) -> Iterator[tuple[Section, int, str]]:
        """``(section, index, file name)`` of every figure, as :meth:`write` names the PNGs."""
        for s_index, section in enumerate(self.sections):
            for f_index, _ in enumerate(section.figures):
                yield section, f_index, f"figure-{s_index}-{f_index}.png"

    def to_markdown(self, figure_dir: str = "figures") -> str:
        """Markdown text; figures are referred to as ``figure_dir/figure-S-F.png``."""
        names = {(id(s), i): n for s, i, n in self.figure_names()}
        out = [f"# {_md(self.title)}", ""]
        for section in self.sections:
            out += [f"## {_md(section.title)}", ""]
            if section.text:
                out += [_md(section.text), ""]
            for table in section.tables:
                cols = [_md(c) for c in table.columns]
                out.append("| " + " | ".join(cols) + " |")
                out.append("|" + "|".join("---" for _ in cols) + "|")
                for row in table.itertuples(index=False):
                    out.append("| " + " | ".join(_md(_fmt(v)) for v in row) + " |")
                out.append("")
            for i, (caption, _) in enumerate(section.figures):
                alt = _md(caption).replace("[", "\\[").replace("]", "\\]")
                out += [f"![{alt}]({figure_dir}/{names[(id(section), i)]})", ""]
            if section.code is not None:
                # a fence the text cannot close: inside it nothing is Markdown or HTML
                fence = _fence(section.code)
                out += [f"{fence}toml", section.code.rstrip("\n"), fence, ""]
        return "\n".join(out)

    def write(self, directory: str | Path) -> dict[str, Path]:
        """Write ``report.html``, ``report.md`` and ``figures/*.png`` under ``directory``."""
        d = Path(directory)
        (d / "figures").mkdir(parents=True, exist_ok=True)
        for section, i, name in self.figure_names():
            (d / "figures" / name).write_bytes(section.figures[i][1])
        paths = {"html": d / "report.html", "markdown": d / "report.md"}
        paths["html"].write_text(self.to_html(), encoding="utf-8")
        paths["markdown"].write_text(self.to_markdown(), encoding="utf-8")
        return paths


#: What the error bars of the report's bar charts are (appended to their captions).
_CI_CAPTION = "; error bars: 95% Student-t interval over seeds, clipped at 0"


def _bars_png(summary: pd.DataFrame, metric: str, policies: list[str]) -> bytes:
    """The report's bars of one metric (times in hours), as PNG."""
    label, scale = metric_label(metric, "h")
    return _png(_bars(summary, metric, label, policies, scale=scale))


def _cdf_png(
    result: ExperimentResult, kind: str, group: tuple[Any, ...], policies: list[str]
) -> bytes:
    """The report's JCT (hours) or rho CDF of one group, as PNG."""
    if kind == "jct":
        fig = _cdf_figure(result.jcts, result.runs, group, policies, "JCT (h)", scale=3600.0)
    else:
        xlabel = "finish-time fairness rho (ratio)"
        fig = _cdf_figure(result.rhos, result.runs, group, policies, xlabel, mark_one=True)
    return _png(fig)


def sweep_report(result: ExperimentResult | str | Path) -> SweepReport:
    """Build the report of an experiment result, or of a store given by its path.

    Raises
    ------
    InvalidInstanceError
        The store cannot be read (see :meth:`ExperimentResult.from_store`).
    """
    if not isinstance(result, ExperimentResult):
        result = ExperimentResult.from_store(result)
    runs = result.runs
    summary = result.to_frame()
    policies = result.policies or sorted(runs["policy"].unique()) if len(runs) else []
    groups = _groups(runs)[:MAX_GROUP_FIGURES]
    sections: list[Section] = []

    shown = f"{len(runs)} runs, {len(policies)} policies, {len(_groups(runs))} groups"
    summary_section = Section(
        "Summary",
        f"{shown}. {CELL_NOTE[0].upper()}{CELL_NOTE[1:]}.",
        tables=[summary_table(summary)] if len(runs) else [],
    )
    if not len(runs):
        summary_section.text = (
            "The store holds no finished run: every run was refused or none has run yet "
            "(rerun the experiment with this store to fill it)."
        )
    if len(runs):
        summary_section.figures.append(
            ("average JCT against the load", _png(_load_figure(summary, policies)))
        )
    sections.append(summary_section)

    if result.jcts:
        sections.append(
            Section(
                "JCT CDFs",
                "Empirical CDF of the finished jobs' JCT, pooled over seeds; a line ending "
                "below 1 means jobs did not finish.",
                figures=[
                    (f"JCT CDF, {_group_label(g)}", _cdf_png(result, "jct", g, policies))
                    for g in groups
                ],
            )
        )
    elif len(runs):
        sections.append(
            Section("JCT CDFs", "The runs carry no per-job JCTs (a `sim sweep` store).")
        )
    if len(runs):
        sections.append(
            Section(
                "Makespan",
                "Mean makespan per policy with its confidence interval across seeds.",
                figures=[("makespan (h)" + _CI_CAPTION, _bars_png(summary, "makespan", policies))],
            )
        )
        fairness = Section(
            "Fairness",
            "Worst finish-time fairness max rho (JCT over the JCT at a 1/N share; 1 is fair) "
            "per policy, and the CDF of rho over the finished jobs.",
            figures=[("worst rho" + _CI_CAPTION, _bars_png(summary, "rho_max", policies))],
        )
        for g in groups if result.rhos else []:
            fairness.figures.append(
                (f"rho CDF, {_group_label(g)}", _cdf_png(result, "rho", g, policies))
            )
        sections.append(fairness)
    gaps = [
        (m, title)
        for m, title in (
            ("gap_jct_bound", "mean JCT / isolated bound - 1"),
            ("gap_weighted-jct", "total weighted JCT / certified bound - 1"),
            ("gap_makespan", "(last completion - first arrival) / certified bound - 1"),
        )
        if f"{m}_mean" in summary.columns and summary[f"{m}_mean"].notna().any()
    ]
    if gaps:
        sections.append(
            Section(
                "Gap to the bound",
                "Each policy's value over a lower bound on any schedule's, minus 1 (0 is the "
                "bound itself; runs with unfinished jobs have no gap). The isolated bound is "
                "every job alone at its best rate; the certified bounds (experiment key "
                "`bounds`) are those of optsched.sim.optimum.bounds on the whole trace.",
                figures=[(title, _bars_png(summary, m, policies)) for m, title in gaps],
            )
        )
    if result.text:
        sections.append(
            Section(
                "Experiment",
                f"The experiment file (SHA-256 {result.sha256}); rerun it with "
                "`optsched sim sweep FILE.toml`.",
                code=result.text,
            )
        )
    return SweepReport(result=result, sections=sections)
