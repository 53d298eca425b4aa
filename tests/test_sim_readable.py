"""Readable simulator output: one time unit per table, whole names, percent gaps, no exponents,
progress n/N + ETA."""

from __future__ import annotations

import io
import math

import pytest

from optsched.cli.sim_table import comparison_rows, time_unit
from optsched.runs.sim_sweep import sweep_progress


@pytest.mark.parametrize(
    ("values", "unit"),
    [([5.0, 119.0], "s"), ([119.0, 120.0], "min"), ([7199.0], "min"), ([7200.0, 3.0], "h")],
)
def test_time_unit_by_the_columns_largest_value(values: list[float], unit: str) -> None:
    assert time_unit([*values, math.nan])[1] == unit


def _row(name: str, jct: float, **extra: object) -> dict[str, object]:
    row: dict[str, object] = {
        "policy": name,
        "jct_mean": jct,
        "jct_median": jct,
        "jct_p95": jct,
        "jct_p99": jct,
        "makespan": 2 * jct,
        "rho_max": 1.5,
        "gpu_hours": 0.5,
        "deadlines": 2,
        "deadlines_met": 1,
        "unfinished": 0,
        "valid": True,
    }
    row.update(extra)
    return row


def test_comparison_rows_units_names_gaps_and_deadlines() -> None:
    long = "max-sum-throughput-packed-with-a-very-long-plug-in-name"
    rows = [_row(long, 600.0, **{"gap_weighted-jct": 0.125}), _row("fifo", 300.0)]
    rows[1]["gap_weighted-jct"] = 0.0
    headers, cells = comparison_rows(rows, ["weighted-jct"], deadlines=False)
    assert headers[1] == "JCT mean (min)" and "makespan (min)" in headers
    assert "deadlines met" not in headers
    assert {"valid", "unfinished", "gap weighted-jct (%)"} <= set(headers)
    assert cells[0][0] == long  # never cut
    # fixed decimals chosen once per column (about four digits on its largest value)
    assert cells[0][1] == "10.00" and cells[1][1] == "5.00"
    assert cells[0][headers.index("gap weighted-jct (%)")] == "+12.5"
    headers, cells = comparison_rows(rows, [], deadlines=True)
    assert cells[0][headers.index("deadlines met")] == "1/2"


def test_progress_prints_one_line_per_run_with_n_of_n_and_eta() -> None:
    out = io.StringIO()
    with sweep_progress("sim sweep", stream=out, terminal=False) as update:
        update(1, 4)  # one run already stored
        update(2, 4)
        update(4, 4)
    lines = out.getvalue().splitlines()
    assert lines[0] == "sim sweep: 1/4 runs already stored"
    assert lines[1].startswith("sim sweep: 2/4 runs done, elapsed ")
    assert " ETA " in lines[1] and lines[2].endswith("ETA 0:00:00")
    with sweep_progress("x", show=False) as update:
        assert update is None


def test_one_time_unit_per_table_and_no_exponent() -> None:
    # a JCT of 90 s beside a makespan of 3 h: one unit (h) for every time column, stated in
    # each header; a 745,500 s makespan is 207.1 h, never 7.455e+05
    rows = [_row("fifo", 90.0, makespan=3 * 3600.0), _row("srtf", 60.0, makespan=745_500.0)]
    headers, cells = comparison_rows(rows, [], deadlines=False)
    times = [h for h in headers if h.startswith(("JCT", "makespan"))]
    assert len(times) == 5 and all(h.endswith("(h)") for h in times)
    span = headers.index("makespan (h)")
    assert [c[span] for c in cells] == ["3.0", "207.1"]
    assert not any("e+" in cell or "e-" in cell for row in cells for cell in row[1:])
