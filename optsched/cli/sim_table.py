"""Readable comparison tables of the simulator: one time unit, whole names, gaps in percent.

One printer for ``optsched sim compare`` and ``optsched demo``:

* every time column (JCT mean, median, p95, p99, makespan) is shown in one human unit chosen
  once for the table (``s`` below two minutes, ``min`` below two hours, else ``h``, by the
  largest finite time of the table), named in each header (``JCT mean (h)``);
* numbers have fixed decimals chosen once per column (about four significant digits on its
  largest value), never an exponent;
* policy names are never cut (they wrap within the table's width);
* ``valid`` and ``unfinished`` are always shown; the deadline column only when the trace has
  deadlines;
* gaps to the optimum are in percent (``(v - v*) / v*``), the deadline gap in jobs; a row
  outside the optimum's world shows ``-`` and says why in ``outside the optimum's world``;
* each gap column's definition is one line of the notes under the table (:data:`GAP_CAPTION`),
  with the certified bounds and any work skipped for lack of time;
* the title names the throughput table the runs used;
* the table fits 100 columns (split into parts repeating the policy column), or is one line
  per row with ``--wide`` (:func:`optsched.cli.common.emit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from optsched.cli import common
from optsched.report._text import UNIT_WORDS, TextTable, fixed, fixed_decimals, time_unit

__all__ = [
    "GAP_CAPTION",
    "SIM_UNITS",
    "UNIT_WORDS",
    "comparison_rows",
    "comparison_table",
    "gap_caption",
    "has_deadlines",
    "objective_text",
    "print_comparison",
    "table_time_unit",
    "time_unit",
    "units_map",
    "with_units",
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


#: Time columns of a comparison row: key, header.
_TIME_COLUMNS: tuple[tuple[str, str], ...] = (
    ("jct_mean", "JCT mean"),
    ("jct_median", "JCT median"),
    ("jct_p95", "JCT p95"),
    ("jct_p99", "JCT p99"),
    ("makespan", "makespan"),
)


#: The unit of every quantity a simulator JSON document holds (``sim run``, ``compare``,
#: ``sweep``, experiments), by field name: the ``units`` map of each such document names the
#: fields it holds (the keys themselves are those of the stores, unchanged).
SIM_UNITS: dict[str, str] = {
    **dict.fromkeys(
        (
            "jct_mean",
            "jct_median",
            "jct_p95",
            "jct_p99",
            "weighted_jct_mean",
            "makespan",
            "best_effort_jct_mean",
            "queueing_delay_mean",
            "spread_gang_seconds",
            "spread_gang_seconds_with_room",
            "round_seconds",
            "exact_round_seconds",
            "restore_s",
            "obj_makespan",
        ),
        "s",
    ),
    "obj_weighted-jct": "s (sum over jobs of weight x JCT)",
    "obj_deadlines": "jobs",
    "gpu_hours": "GPU-h",
    "energy_kwh": "kWh",
    **dict.fromkeys(("rho_max", "rho_mean", "ftf_rho_max", "ftf_rho_mean"), "ratio"),
    **dict.fromkeys(("utilization_mean", "deadlines_met_fraction"), "fraction"),
    **dict.fromkeys(("deadlines", "deadlines_met", "finished", "unfinished", "jobs"), "jobs"),
    "gap_*": "fraction of the optimum (jobs for deadlines)",
    "bound_gap_*": "fraction of the bound (jobs for deadlines)",
    "bounds.*.value": "s (weighted-jct: weighted sum; deadlines: jobs)",
    "bounds.*.seconds": "s",
    "run.end_time": "s",
    **dict.fromkeys(("run.events", "run.decisions", "run.intervals"), "count"),
    "run.zero_rate_grants": "GPUs",
    "bounds.*.candidates.*": "s (weighted-jct: weighted sum; deadlines: jobs)",
    **dict.fromkeys(("wakeups", "events", "violations", "runs"), "count"),
    **dict.fromkeys(("cluster_scale", "load"), "ratio"),
    "seed": "seed (integer)",
    # the exact solves (sim compare --exact): values in their objective's unit, solver facts
    **dict.fromkeys(
        (
            "exact.*.objective",
            "exact.*.bound",
            "exact.*.lp_bound",
            "exact.*.warm_start.*",
            "exact.*.root.*_value",
            "exact.*.root.*_bound",
            "exact_starts.*.value",
        ),
        "s (weighted-jct: weighted sum; deadlines: jobs)",
    ),
    "exact.*.gap": "fraction (the solver's relative gap)",
    **dict.fromkeys(
        ("exact.*.build_seconds", "exact.*.solve_seconds", "exact.*.root.*seconds"),
        "s (wall clock)",
    ),
    **dict.fromkeys(("exact.*.rounds", "exact.*.model_rounds"), "rounds"),
    "exact.*.root.last_round": "round index",
    **dict.fromkeys(
        ("exact.*.root.binaries_left", "exact.*.root.fixed_to_0", "exact.*.root.fixed_to_1"),
        "binary variables",
    ),
}


def units_map(document: Any) -> dict[str, str]:
    """The :data:`SIM_UNITS` entries of the fields ``document`` holds, at any depth.

    >>> units_map({"policies": [{"jct_mean": 1.0, "gap_makespan": 0.1}], "bounds": {}})
    {'gap_*': 'fraction of the optimum (jobs for deadlines)', 'jct_mean': 's'}
    """
    return common.units_map(document, SIM_UNITS)


def with_units(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its ``units`` map (the fields it holds and their units) added."""
    return common.with_units(document, SIM_UNITS)


def table_time_unit(rows: Sequence[dict[str, Any]]) -> tuple[float, str]:
    """The one time unit of a comparison table: :func:`time_unit` of all its times."""
    return time_unit([r.get(key, math.nan) for r in rows for key, _ in _TIME_COLUMNS])


def objective_text(objective: str, value: Any, unit: tuple[float, str]) -> str:
    """An objective's value for people: jobs for ``deadlines``, else time in ``unit``.

    >>> objective_text("makespan", 9000.0, (3600.0, "h"))
    '2.500 h'
    >>> objective_text("deadlines", 3.0, (1.0, "s"))
    '3 jobs'
    """
    if not _is_number(value) or math.isnan(value):
        return "-"
    if objective == "deadlines":
        return f"{fixed(value, 0)} jobs"
    scale, name = unit
    return f"{fixed(value / scale, 3)} {name}"


def _num(value: Any, decimals: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return fixed(value, decimals)
    return str(value)


def _column(values: Sequence[Any], scale: float = 1.0) -> list[str]:
    """A numeric column with one number of decimals for every cell."""
    scaled = [v / scale if _is_number(v) else v for v in values]
    decimals = fixed_decimals(scaled)
    return [_num(float(v) if _is_number(v) else v, decimals) for v in scaled]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def comparison_rows(
    rows: Sequence[dict[str, Any]],
    objectives: Sequence[str],
    *,
    deadlines: bool,
    bounded: Sequence[str] = (),
) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells of a comparison (rows as :meth:`Comparison.to_frame` gives).

    Every time column is in the one unit :func:`time_unit` chooses from the largest time of
    the table (named in each header).

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
    scale, unit = table_time_unit(rows)
    for key, title in _TIME_COLUMNS:
        headers.append(f"{title} ({unit})")
        columns.append(_column([r.get(key, math.nan) for r in rows], scale))
    headers.append("worst slowdown (x)")
    columns.append(_column([r.get("rho_max") for r in rows]))
    if any("ftf_rho_max" in r for r in rows):
        headers.append("worst FTF slowdown (x)")
        columns.append(_column([r.get("ftf_rho_max") for r in rows]))
    headers.append("GPU-hours")
    columns.append(_column([r.get("gpu_hours") for r in rows]))
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
    for prefix, label, sign, keys in (
        ("gap_", "gap", "+", objectives),
        ("bound_gap_", "certified gap", "", bounded),
    ):
        for o in keys:
            key = f"{prefix}{o}"
            if o == "deadlines":
                headers.append(f"{label} deadlines (jobs)")
                columns.append([_num(r.get(key)) for r in rows])
                continue
            headers.append(f"{label} {o} (%)")
            columns.append(
                [
                    "-"
                    if not _is_number(r.get(key)) or math.isnan(r[key])
                    else f"{100 * r[key]:{sign}.1f}"
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


def comparison_table(
    rows: Sequence[dict[str, Any]],
    objectives: Sequence[str],
    *,
    title: str,
    deadlines: bool,
    bounded: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> TextTable:
    """The comparison as a :class:`TextTable`: the gap definitions, then ``notes``, under it."""
    headers, cells = comparison_rows(rows, objectives, deadlines=deadlines, bounded=bounded)
    caption = gap_caption(objectives, bounded)
    table = TextTable(title, notes=[*(caption.splitlines() if caption else []), *notes])
    for h in headers:
        text = h in ("policy", "outside the optimum's world")
        table.add_column(h, justify="left" if text else "right", wrap=text)
    for row in cells:
        table.add_row(*row)
    return table


def print_comparison(
    rows: Sequence[dict[str, Any]],
    objectives: Sequence[str],
    *,
    title: str,
    deadlines: bool,
    bounded: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> None:
    """Print the comparison on stdout within 100 columns (every column with ``--wide``)."""
    from optsched.cli.common import emit

    emit(
        comparison_table(
            rows, objectives, title=title, deadlines=deadlines, bounded=bounded, notes=notes
        )
    )
