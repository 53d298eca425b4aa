"""Readable comparison tables of the simulator: units in headers, whole names, gaps in percent.

One printer for ``optsched sim compare`` and ``optsched demo``:

* every time column is shown in one human unit chosen for that column (``s`` below two
  minutes, ``min`` below two hours, else ``h``, by the column's largest finite value), named in
  its header (``JCT mean (min)``);
* policy names are never cut (the table is as wide as it needs to be when stderr is not a
  terminal);
* ``valid`` and ``unfinished`` are always shown; the deadline column only when the trace has
  deadlines;
* gaps to the optimum are in percent (``(v - v*) / v*``), the deadline gap in jobs; a row
  outside the optimum's world shows ``-`` and says why in ``outside the optimum's world``;
* each gap column's definition is one line of the caption under the table (:data:`GAP_CAPTION`);
* the title names the throughput table the runs used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "GAP_CAPTION",
    "comparison_rows",
    "gap_caption",
    "has_deadlines",
    "print_comparison",
    "time_unit",
]

#: One line per gap column: what it measures (the caption under every table with gaps).
GAP_LINES: dict[str, str] = {
    "makespan": "makespan = last completion - first arrival (the trace's clock cancels)",
    "gap": "gap X (%) = (v - v*) / v*, v* the proven optimum of the round world the policy ran "
    "in (same grid, no wake-up, no shared GPU, no resized gang); '-' outside it",
    "certified": "certified gap X (%) = (v - b) / b, b the certified lower bound valid for "
    "every schedule the simulator can carry out: at most that far from optimal",
    "deadlines": "gap deadlines (jobs) = deadlines the optimum (or bound) meets minus the policy's",
}
#: The caption of a table with both kinds of gap.
GAP_CAPTION = "\n".join(GAP_LINES[k] for k in ("makespan", "gap", "certified"))


def gap_caption(objectives: Sequence[str], bounded: Sequence[str]) -> str:
    """The caption lines for the gap columns shown (empty when there is none)."""
    if not objectives and not bounded:
        return ""
    keys = ["makespan"]
    keys += ["gap"] if objectives else []
    keys += ["certified"] if bounded else []
    keys += ["deadlines"] if "deadlines" in (*objectives, *bounded) else []
    return "\n".join(GAP_LINES[k] for k in keys)


#: (seconds per unit, unit name), from the largest.
_UNITS: tuple[tuple[float, str], ...] = ((3600.0, "h"), (60.0, "min"), (1.0, "s"))

#: Time columns of a comparison row: key, header.
_TIME_COLUMNS: tuple[tuple[str, str], ...] = (
    ("jct_mean", "JCT mean"),
    ("jct_median", "JCT median"),
    ("jct_p95", "JCT p95"),
    ("jct_p99", "JCT p99"),
    ("makespan", "makespan"),
)


def time_unit(values: Sequence[float]) -> tuple[float, str]:
    """The unit for a column of seconds: ``s`` below 120 s, ``min`` below 2 h, else ``h``."""
    finite = [abs(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    top = max(finite, default=0.0)
    if top >= 2 * 3600.0:
        return _UNITS[0]
    if top >= 120.0:
        return _UNITS[1]
    return _UNITS[2]


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def comparison_rows(
    rows: Sequence[dict[str, Any]],
    objectives: Sequence[str],
    *,
    deadlines: bool,
    bounded: Sequence[str] = (),
) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells of a comparison (rows as :meth:`Comparison.to_frame` gives).

    Parameters
    ----------
    rows : sequence of dict
        One per policy (and exact optimum).
    objectives : sequence of str
        The objectives with an exact optimum (their gap columns are shown).
    deadlines : bool
        Show the deadlines-met column (the trace has deadlines).
    bounded : sequence of str
        The objectives with a certified bound (their ``bound_gap_`` columns are shown).
    """
    headers = ["policy"]
    columns: list[list[str]] = [[str(r.get("policy", "")) for r in rows]]
    for key, title in _TIME_COLUMNS:
        values = [r.get(key, math.nan) for r in rows]
        scale, unit = time_unit(values)
        headers.append(f"{title} ({unit})")
        columns.append([_num(v / scale if isinstance(v, int | float) else v) for v in values])
    headers.append("worst slowdown (x)")
    columns.append([_num(r.get("rho_max")) for r in rows])
    if any("ftf_rho_max" in r for r in rows):
        headers.append("worst FTF slowdown (x)")
        columns.append([_num(r.get("ftf_rho_max")) for r in rows])
    headers.append("GPU-hours")
    columns.append([_num(r.get("gpu_hours")) for r in rows])
    if deadlines:
        headers.append("deadlines met")
        columns.append([f"{_num(r.get('deadlines_met'))}/{_num(r.get('deadlines'))}" for r in rows])
        if any("deadlines_declined" in r for r in rows):
            # ElasticFlow's count beside it: a declined job is missed (metrics module notes)
            for key, title in (
                ("deadlines_met_admitted", "met, declined = missed"),
                ("deadlines_declined", "declined"),
                ("deadlines_late", "late"),
            ):
                headers.append(title)
                columns.append([_num(r.get(key)) for r in rows])
    headers.append("unfinished")
    columns.append([_num(r.get("unfinished")) for r in rows])
    headers.append("valid")
    columns.append([_num(r.get("valid")) if "valid" in r else "-" for r in rows])
    for o in objectives:
        key = f"gap_{o}"
        if o == "deadlines":
            headers.append("gap deadlines (jobs)")
            columns.append([_num(r.get(key)) for r in rows])
        else:
            headers.append(f"gap {o} (%)")
            columns.append(
                [
                    "-"
                    if not isinstance(r.get(key), int | float) or math.isnan(r[key])
                    else f"{100 * r[key]:+.1f}"
                    for r in rows
                ]
            )
    for o in bounded:
        key = f"bound_gap_{o}"
        if o == "deadlines":
            headers.append("certified gap deadlines (jobs)")
            columns.append([_num(r.get(key)) for r in rows])
        else:
            headers.append(f"certified gap {o} (%)")
            columns.append(
                [
                    "-"
                    if not isinstance(r.get(key), int | float) or math.isnan(r[key])
                    else f"{100 * r[key]:.1f}"
                    for r in rows
                ]
            )
    # why a row has no gap to the optimum: it ran outside the optimum's world
    notes = [str(r.get("outside") or "") for r in rows]
    if objectives and any(notes):
        headers.append("outside the optimum's world")
        columns.append(notes)
    cells = [list(row) for row in zip(*columns, strict=True)] if rows else []
    return headers, cells


def has_deadlines(world: Any) -> bool:
    """Whether any job of the world has a deadline (the deadline columns are shown then)."""
    return any(j.deadline is not None and math.isfinite(j.deadline) for j in world.jobs)


def print_comparison(
    rows: Sequence[dict[str, Any]],
    objectives: Sequence[str],
    *,
    title: str,
    deadlines: bool,
    bounded: Sequence[str] = (),
) -> None:
    """Print the comparison on stderr, never cutting a column (see the module notes)."""
    from rich.console import Console
    from rich.table import Table

    from optsched.cli.common import err_console

    headers, cells = comparison_rows(rows, objectives, deadlines=deadlines, bounded=bounded)
    caption = gap_caption(objectives, bounded)
    table = Table(title=title, caption=caption or None, caption_justify="left")
    for h in headers:
        # the policy's name folds on a narrow terminal rather than being cut
        table.add_column(
            h,
            justify="left" if h in ("policy", "outside the optimum's world") else "right",
            no_wrap=h != "policy",
            overflow="fold" if h == "policy" else "ellipsis",
        )
    for row in cells:
        table.add_row(*row)
    # as wide as the table needs when stderr is not a terminal; a terminal keeps its width
    need = sum(max([len(h), *(len(c[k]) for c in cells)]) + 3 for k, h in enumerate(headers)) + 1
    width = err_console.width if err_console.is_terminal else max(err_console.width, need)
    Console(stderr=True, width=width, highlight=False).print(table)
