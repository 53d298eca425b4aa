"""Placement results as frames, short reprs, and the gap table as a table and a figure."""

from __future__ import annotations

import math

import matplotlib
import pandas as pd
import pytest

from optsched.placement import (
    Placement,
    PlacementInstance,
    compare,
    generate_instance,
    run_heuristic,
    solve,
    validate,
)
from optsched.report.placement import gap_table, plot_gap_table


@pytest.fixture(scope="module")
def inst() -> PlacementInstance:
    return generate_instance(3, n_servers=2, gpus=4, seed=9)


def test_placement_frame_is_long_format_one_row_per_task(inst):
    placed = run_heuristic("nlwp-greedy", inst)  # assigns GPUs too
    frame = placed.to_frame()
    assert list(frame.columns) == ["job", "task", "server", "gpu"]
    assert len(frame) == len(inst.tasks)
    for row in frame.itertuples():
        task_id = f"{row.job}/{row.task}"
        assert placed.assignment[task_id] == row.server
        expected = (placed.gpus or {}).get(task_id)
        assert (pd.isna(row.gpu) and expected is None) or row.gpu == expected
    # Counts per server, computed from the frame and from the assignment.
    counts = frame.groupby("server").size().to_dict()
    for server, n in counts.items():
        assert n == sum(1 for s in placed.assignment.values() if s == server)


def test_instance_frame_and_short_reprs(inst):
    frame = inst.to_frame()
    assert len(frame) == len(inst.tasks) and {"job", "task", "role", "gpu"} <= set(frame.columns)
    assert frame["gpu"].sum() == pytest.approx(inst.demand[:, 0].sum())
    assert repr(inst) == "PlacementInstance('synthetic-3-seed9': 2 servers, 3 jobs, 10 tasks)"
    assert "servers" in inst._repr_html_()
    placed = Placement(assignment={"a/w": "s0", "b/w": "s0"}, method="m")
    assert repr(placed) == "Placement(2 tasks on 1 servers, method='m')"
    assert "<table>" in placed._repr_html_()


@pytest.mark.solver("highs")
def test_exact_result_frame_report_and_repr(inst):
    result = solve(inst, "traffic")
    assert result.objective_name == "traffic" and isinstance(result.objective, float)
    frame = result.to_frame()
    assert len(frame) == len(inst.tasks)
    assert len(repr(result)) < 200 and "traffic" in repr(result)
    report = validate(inst, result.solution)
    assert report.objective == result.objective  # the objective named by the method "ilp:..."
    assert validate(inst, result.solution, "servers").objective == report.objectives["servers"]
    assert report.to_frame().empty and report.ok


@pytest.mark.solver("highs")
def test_gap_table_and_its_figure(inst):
    comparison = compare(
        inst, objectives=["servers", "traffic"], heuristics=["first-fit", "consolidate-first"]
    )
    table = gap_table(comparison)
    assert list(table.index) == ["first-fit", "consolidate-first"]
    assert list(table.columns) == ["servers", "traffic"]
    for h in table.index:
        for o in table.columns:
            gap = comparison.cell(h, o).gap
            got = table.loc[h, o]
            assert (gap is None and math.isnan(got)) or got == gap
    assert table.attrs["reference"] == {"servers": "optimum", "traffic": "optimum"}
    backend = matplotlib.get_backend()
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert plot_gap_table(comparison, ax=ax) is fig
    texts = {t.get_text() for t in ax.texts}
    assert len(texts) >= 1 and all(t == "-" or t.endswith("%") or t == "vs 0" for t in texts)
    assert isinstance(plot_gap_table(comparison), Figure)
    assert matplotlib.get_backend() == backend
    assert "<table" in comparison._repr_html_()
