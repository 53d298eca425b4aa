r"""Reporting for the jobs (OASiS) family: tables, plots and the resumable ratio sweep.

* :func:`comparison_table` and :func:`plot_comparison`: OASiS and the baselines against the
  offline optimum (or its bounds) on one instance (the ``optsched demo`` table and figure);
* :func:`plot_schedule`: a Gantt-style chart of one :class:`~optsched.online.oasis.Schedule`, one
  row
  per job, one bar per slot with workers, labelled with the worker count;
* :func:`ratio_sweep`: OPT/ALG over seeded instances (the resumable sweep
  :func:`optsched.runs.oasis_ratio.sweep`), with :func:`sweep_summary`, :func:`sweep_table`
  (Markdown) and :func:`plot_sweep`.

Plots take ``ax=`` (a Matplotlib Axes; a new Figure is made when omitted), return the Figure
and never change the global Matplotlib backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.online.oasis.competitive import PAPER_BAND, OasisComparison
from optsched.online.oasis.engine import OnlineAlgorithm
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.schedule import Schedule
from optsched.runs.oasis_ratio import SWEEP_KIND
from optsched.runs.oasis_ratio import sweep as ratio_runs

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from optsched.report._text import TextTable

__all__ = [
    "SWEEP_KIND",
    "comparison_table",
    "plot_comparison",
    "plot_schedule",
    "plot_sweep",
    "ratio_sweep",
    "sweep_summary",
    "sweep_table",
]

Progress = Callable[[str], None]


def _fmt(value: float | None, spec: str = ".4g") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if spec == ".4g":
        # about four digits, never an exponent (a table for people)
        from optsched.report._text import plain

        return plain(value)
    return format(value, spec)


def _num(v: Any) -> float | None:
    if v is None:
        return None
    if v == "inf":
        return math.inf
    return float(v)


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    from optsched.report.style import new_axes

    return new_axes(ax, figsize)


# ------------------------------------------------------------------------------------------
# One instance: the comparison
# ------------------------------------------------------------------------------------------


def comparison_table(comparison: OasisComparison) -> TextTable:
    """A :class:`~optsched.report._text.TextTable` of ``comparison.rows()``.

    Ratios are marked ``<=`` when they are bounds; the table is a rich renderable that fits
    the console's width (split into parts rather than cut).
    """
    from optsched.report._text import TextTable

    off = comparison.offline
    if off.optimum is not None:
        title = f"offline optimum {_fmt(off.optimum)} (proven)"
    else:
        title = (
            f"offline not proven ({off.status}): OPT in [{_fmt(comparison.lower)}, "
            f"{_fmt(comparison.upper)}]"
        )
    table = TextTable(
        title,
        notes=[
            "OPT/ALG: the offline optimum over the algorithm's utility; proven: the "
            "algorithm's proven competitive ratio; D: its dual certificate (OPT <= D); s: seconds"
        ],
    )
    for col in ("algorithm", "utility", "admitted", "OPT/ALG", "proven", "D", "D/ALG", "s"):
        table.add_column(col, justify="left" if col == "algorithm" else "right")
    for row in comparison.rows():
        r = row["ratio"]
        rs = "-" if r is None else ("inf" if math.isinf(r) else f"{r:.3f}")
        if row["ratio_is_bound"] and r is not None:
            rs = "<= " + rs
        table.add_row(
            row["algorithm"],
            f"{row['utility']:.4g}",
            f"{row['admitted']}/{row['jobs']}",
            rs,
            _fmt(row["proven_bound"]),
            _fmt(row["dual_bound"]),
            _fmt(row["certified_ratio"]),
            _fmt(row["seconds"], ".2f"),
        )
    return table


def plot_comparison(comparison: OasisComparison, ax: Axes | None = None) -> Figure:
    """Bar chart of each algorithm's utility against OPT (or the range OPT is known to lie in).

    A proven optimum is a dashed line; an unproven one is a shaded band from the best
    schedule found to the best upper bound (ILP bound or OASiS dual certificate), with both
    ends drawn and labelled with their values. Each bar carries its value.

    Parameters
    ----------
    comparison : OasisComparison
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new Figure is made when omitted.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from optsched.report.style import PALETTE, REFERENCE, figure_style, place_legend

    rows = comparison.rows()
    off = comparison.offline
    inst = comparison.instance
    with figure_style():
        fig, ax = _axes(ax, (7.0, 3.8))
        names = [r["algorithm"] for r in rows]
        values = [r["utility"] for r in rows]
        bars = ax.bar(names, values, color=PALETTE[0], zorder=2)
        ax.bar_label(bars, labels=[f"{v:.4g}" for v in values], padding=2, fontsize=8)
        top = max([0.0, *values])
        if off.optimum is not None:
            ax.axhline(
                off.optimum, zorder=3, label=f"offline optimum OPT = {off.optimum:.4g}", **REFERENCE
            )
            top = max(top, off.optimum)
        else:
            low = off.incumbent if off.incumbent is not None else comparison.lower
            high = comparison.upper
            if low is not None and high is not None:
                ax.axhspan(
                    low, high, color="#999999", alpha=0.25, zorder=1, label="OPT lies in this band"
                )
            if low is not None:
                ax.axhline(
                    low,
                    zorder=3,
                    color="black",
                    linestyle=":",
                    linewidth=1.2,
                    label=f"best offline schedule found = {low:.4g}",
                )
                top = max(top, low)
            if high is not None and math.isfinite(high):
                ax.axhline(high, zorder=3, label=f"upper bound on OPT = {high:.4g}", **REFERENCE)
                top = max(top, high)
        ax.set_ylim(0, 1.12 * top if top > 0 else 1.0)
        ax.set_xlabel("algorithm")
        ax.set_ylabel("total utility (sum over jobs)")
        ax.set_title(
            f"Online algorithms against the offline optimum: {inst.n_jobs} jobs, "
            f"{inst.horizon} time slots"
        )
        ax.grid(False, axis="x")
        place_legend(ax, where="below", ncols=2)
    return fig


def plot_schedule(instance: OasisInstance, schedule: Schedule, ax: Axes | None = None) -> Figure:
    r"""Gantt-style chart of an OASiS schedule.

    One row per job (top to bottom in instance order): a tick at its arrival, one bar per slot
    in which it has workers, labelled with the number of workers in that slot, and a marker at
    its completion time. Rejected jobs have an empty row, labelled so.

    Parameters
    ----------
    instance : OasisInstance
    schedule : Schedule
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    :math:`O(\text{entries})` drawing calls.
    """
    from optsched.report.style import PALETTE, figure_style, place_legend

    n = len(schedule.jobs)
    arrivals: list[tuple[float, float]] = []
    completions: list[tuple[float, float]] = []
    drawn = False  # the first bars carry the legend entry
    with figure_style():
        fig, ax = _axes(ax, (8, max(2.4, 0.4 * n + 1.4)))
        for row, js in enumerate(schedule.jobs):
            y = n - 1 - row
            per_slot: dict[int, int] = {}
            for t, _, count in js.workers:
                per_slot[t] = per_slot.get(t, 0) + count
            if per_slot:
                ax.broken_barh(
                    [(t, 1) for t in sorted(per_slot)],
                    (y - 0.35, 0.7),
                    facecolors=PALETTE[0],
                    edgecolor="white",
                    linewidth=0.5,
                    label="_workers" if drawn else "workers in the slot (number on the bar)",
                )
                for t, count in per_slot.items():
                    ax.text(t + 0.5, y, str(count), ha="center", va="center", color="white", size=7)
                drawn = True
            if row < instance.n_jobs:
                arrivals.append((instance.jobs[row].arrival, y))
            if js.completion is not None:
                completions.append((js.completion, y))
        # one line each for every arrival and every completion: one legend entry apiece
        for points, marker, color, ms, label in (
            (arrivals, "|", "black", 12, "arrival"),
            (completions, "<", PALETTE[1], 6, "completion"),
        ):
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, linestyle="none", marker=marker, color=color, ms=ms, label=label)
        labels = [
            js.job if js.admitted else f"{js.job} (rejected)" for js in reversed(schedule.jobs)
        ]
        ax.set_yticks(range(n), labels)
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlim(0, instance.horizon)
        ax.set_xlabel("time (slots)")
        ax.grid(False, axis="y")
        ax.set_title(
            f"Schedule of {schedule.algorithm or 'a policy'}: utility "
            f"{schedule.total_utility:.4g}, {len(schedule.admitted)} of {n} jobs admitted"
        )
        place_legend(ax)
    return fig


# ------------------------------------------------------------------------------------------
# Sweeps over seeded instances
# ------------------------------------------------------------------------------------------


def ratio_sweep(
    n_instances: int,
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_jobs: int = 10,
    worker_servers: int = 3,
    ps_servers: int = 3,
    horizon: int = 10,
    scale: float = 0.05,
    priority: tuple[float, float] = (1.0, 100.0),
    time_limit: float | None = 60.0,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver: str = "highs",
    algorithm: OnlineAlgorithm | None = None,
    config: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    backend: str = "serial",
    workers: int | None = None,
) -> list[dict[str, Any]]:
    """Measure OPT/ALG on ``n_instances`` seeded instances, resumably, with a table and plot.

    The sweep is :func:`optsched.runs.oasis_ratio.sweep` (instance ``k`` is
    :func:`~optsched.online.oasis.generate_instance` with seed ``seed + k``; each finished
    instance is stored at once, whole, in ``out_dir/runs.sqlite``, a
    :class:`~optsched.runs.store.RunStore` of kind :data:`SWEEP_KIND`; a rerun skips the seeds
    already stored, and one with different parameters is refused naming the parameter). At the
    end ``out_dir/table.md`` (:func:`sweep_table`) and ``out_dir/ratio.png`` (:func:`plot_sweep`)
    are written from the records.

    Parameters
    ----------
    config : mapping, optional
        Further parameters that affect the results but are not arguments here (e.g. the
        algorithm's options such as its work accounting); recorded and compared on resume.
    progress : callable, optional
        Called with a line of text after each finished instance.
    backend, workers
        As in :func:`optsched.runs.oasis_ratio.sweep` (default: in this process, in turn).

    Returns
    -------
    list of dict
        One record per instance (seed order), including those from earlier runs.

    Raises
    ------
    InvalidInstanceError
        ``out_dir`` holds a sweep with different parameters, a corrupt record, or a parameter
        is out of range.
    """
    say = progress or (lambda _msg: None)
    result = ratio_runs(
        n_instances,
        out_dir,
        seed=seed,
        n_jobs=n_jobs,
        worker_servers=worker_servers,
        ps_servers=ps_servers,
        horizon=horizon,
        scale=scale,
        priority=priority,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver=solver,
        algorithm=algorithm,
        config=config,
        progress=lambda done, total: say(f"{done}/{total} instances measured"),
        backend=backend,
        workers=workers,
    )
    out = Path(out_dir)
    records = result.records
    (out / "table.md").write_text(sweep_table(records, result.config), encoding="utf-8")
    plot_sweep(records).savefig(out / "ratio.png", dpi=120)
    return records


def sweep_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and quantiles of the empirical ratios of a sweep."""
    import numpy as np

    proven = [r for r in records if _num(r.get("ratio")) is not None]
    ratios = np.array([_num(r["ratio"]) for r in proven], dtype=float)
    finite = ratios[np.isfinite(ratios)]
    lo, hi = PAPER_BAND
    out: dict[str, Any] = {
        "instances": len(records),
        "opt_proven": len(proven),
        "ratio_infinite": int(np.sum(~np.isfinite(ratios))),
        "theorem_applies": sum(1 for r in records if r.get("theorem_applies") is True),
        "within_proven_bound": sum(
            1 for r in records if r["holds"].get("ratio_within_proven_bound") is True
        ),
        "opt_le_dual": sum(1 for r in records if r["holds"].get("opt_le_dual") is True),
        "all_valid": all(r.get("valid", False) for r in records),
    }
    if finite.size:
        out.update(
            ratio_min=float(finite.min()),
            ratio_median=float(np.median(finite)),
            ratio_mean=float(finite.mean()),
            ratio_max=float(finite.max()),
            in_paper_band=int(np.sum((finite >= lo) & (finite <= hi))),
            below_paper_band=int(np.sum(finite < lo)),
            above_paper_band=int(np.sum(finite > hi)),
        )
    return out


def sweep_table(records: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> str:
    """Markdown: the settings, a summary and one row per instance."""
    summary = sweep_summary(records)
    lines = ["# Empirical competitive ratios", ""]
    lines += ["Settings: " + ", ".join(f"{k} = {v}" for k, v in config.items()), ""]
    lines += [f"Paper (Fig. 5): OPT/OASiS in {PAPER_BAND[0]}-{PAPER_BAND[1]}.", ""]
    lines += ["| figure | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(v) if isinstance(v, float) else v} |" for k, v in summary.items()]
    lines += ["", "| seed | ALG | OPT | OPT/ALG | 2 alpha | D/ALG | theorem applies | status |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in records:
        lines.append(
            "| {} | {} | {} | {} | {} | {} | {} | {} |".format(
                r["seed"],
                _fmt(_num(r["alg"])),
                _fmt(_num(r["opt"])),
                _fmt(_num(r["ratio"])),
                _fmt(_num(r["proven_bound"])),
                _fmt(_num(r["certified_ratio"])),
                r["theorem_applies"],
                r["offline_status"],
            )
        )
    return "\n".join(lines) + "\n"


def plot_sweep(records: Sequence[Mapping[str, Any]], axes: Sequence[Axes] | None = None) -> Figure:
    """Histogram of OPT/ALG with the paper's band, and OPT/ALG against the proven bound.

    Parameters
    ----------
    records : sequence of dict
        :func:`ratio_sweep`'s records.
    axes : pair of matplotlib.axes.Axes, optional
        Where to draw the two panels; a new Figure with two panels is made when omitted.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from optsched.report.style import PALETTE, REFERENCE, figure_style, place_legend

    with figure_style():
        if axes is None:
            from matplotlib.figure import Figure

            fig = Figure(figsize=(10, 4.2), layout="constrained")
            ax1, ax2 = fig.subplots(1, 2)
        else:
            ax1, ax2 = axes
            got = ax1.get_figure()
            assert got is not None
            fig = got  # type: ignore[assignment]
        _sweep_panels(ax1, ax2, records, PALETTE, REFERENCE)
        place_legend(ax1, where="below")
        place_legend(ax2, where="below", ncols=3)
        if axes is None:
            fig.suptitle(f"Empirical competitive ratio OPT / ALG over {len(records)} instances")
    return fig


def _sweep_panels(
    ax1: Axes,
    ax2: Axes,
    records: Sequence[Mapping[str, Any]],
    palette: Sequence[str],
    reference: Mapping[str, Any],
) -> None:
    """The histogram (left) and the ratios against the proven bound (right)."""
    import numpy as np

    pts: list[tuple[float, float | None, float | None]] = []
    for r in records:
        value = _num(r.get("ratio"))
        if value is not None and math.isfinite(value):
            pts.append((value, _num(r["proven_bound"]), _num(r["certified_ratio"])))
    if pts:
        ratios = np.array([p[0] for p in pts], dtype=float)
        # An explicit range: ratios equal up to rounding (1 and 1 + 2e-16) leave numpy no room
        # for finite-sized bins otherwise.
        lo, hi = float(min(ratios)), float(max(ratios))
        pad = max(hi - lo, 1e-6 * max(1.0, abs(hi)))
        ax1.hist(
            ratios,
            bins=min(20, max(5, len(pts) // 2)),
            range=(lo - pad / 2, hi + pad / 2),
            color=palette[0],
            edgecolor="white",
            label="instances",
        )
    ax1.axvspan(
        *PAPER_BAND, color=palette[4], alpha=0.25, zorder=0, label="the paper's range (Fig. 5)"
    )
    ax1.set_xlabel("OPT / ALG (ratio)")
    ax1.set_ylabel("instances (count)")
    ax1.set_title("Distribution of OPT / ALG")
    # the ratios lie far below the proven bound (1-2 against 10-60): an axis reaching up to
    # the bound would squash them (the identity line y = x did, on a log axis); the axis is
    # the ratios' own, and the legend says how much of the bound the largest one uses
    bounded = [(p[0], p[1], p[2]) for p in pts if p[1] is not None and p[1] > 0]
    if bounded:
        xs = np.array([p[1] for p in bounded], dtype=float)
        ys = [p[0] for p in bounded]
        ax2.plot(xs, ys, linestyle="none", marker="o", ms=4, color=palette[0], label="OPT / ALG")
        cert = [(p[1], p[2]) for p in bounded if p[2] is not None and math.isfinite(p[2])]
        if cert:
            ax2.plot(
                [c[0] for c in cert],
                [c[1] for c in cert],
                linestyle="none",
                marker="x",
                ms=5,
                color=palette[1],
                label="D / ALG (dual certificate)",
            )
        shares = [y / x for x, y in zip(xs, ys, strict=True)]
        shares += [c[1] / c[0] for c in cert]
        ax2.set_ylim(bottom=min(0.95, min(ys)))
        note = f"every ratio is at most {max(shares):.1%} of its proven bound 2 alpha"
        ax2.set_title("Measured ratios against the proven bound\n" + note, fontsize=9)
    ax2.set_xlabel("proven bound 2 alpha (ratio)")
    ax2.set_ylabel("ratio to ALG (ratio)")
    if not bounded:
        ax2.text(0.5, 0.5, "no proven ratio", ha="center", va="center", transform=ax2.transAxes)
