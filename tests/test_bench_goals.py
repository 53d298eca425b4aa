"""The benchmark goal table: figures read back from result files, met or the factor to go."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

GOALS_FILE = Path(__file__).resolve().parent.parent / "benchmarks" / "goals.py"
pytestmark = pytest.mark.skipif(not GOALS_FILE.exists(), reason="benchmarks/ not in this tree")


def _goals():
    spec = importlib.util.spec_from_file_location("bench_goals_under_test", GOALS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _write(out: Path, name: str, summary: dict, quick: bool = False) -> None:
    (out / f"{name}.json").write_text(
        json.dumps({"name": name, "summary": summary, "quick": quick})
    )


def test_met_and_remaining_factor(tmp_path: Path) -> None:
    g = _goals()
    goals = (
        g.Goal("a", "x", g.key("t"), 2.0, unit="s"),
        g.Goal("b", "y", g.key("t"), 10.0, at_most=False),
        g.Goal("c", "z", g.key("t"), 1.0),
        g.Goal("d", "x", g.key("absent"), 1.0),
        g.Goal("e", "x", g.listed("pair", 1), 4.4),
        g.Goal("f", "x", g.matching(r"^speed-up .* jobs$", min), 3.0, at_most=False),
    )
    _write(
        tmp_path,
        "bench_x",
        {"t": 3.0, "pair": "2.11, 4.77", "speed-up 10 jobs": 5.0, "speed-up 20 jobs": 1.5},
    )
    _write(tmp_path, "y", {"t": 4.0}, quick=True)
    rows = {r["measure"]: r for r in g.goal_table(tmp_path, goals)}
    assert rows["a"]["met"] is False and rows["a"]["remaining_factor"] == pytest.approx(1.5)
    assert rows["b"]["met"] is False and rows["b"]["remaining_factor"] == pytest.approx(2.5)
    assert "quick sizes" in rows["b"]["status"]
    assert rows["c"]["status"] == "not run" and rows["c"]["value"] is None
    assert rows["d"]["status"] == "figure absent"
    assert rows["e"]["value"] == pytest.approx(4.77) and not rows["e"]["met"]
    assert rows["f"]["value"] == pytest.approx(1.5) and rows["f"]["remaining_factor"] == 2.0
    _write(tmp_path, "bench_x", {"t": 1.0, "pair": "2, 4", "speed-up 1 jobs": 3.0})
    rows = {r["measure"]: r for r in g.goal_table(tmp_path, goals)}
    assert rows["a"]["met"] and rows["a"]["remaining_factor"] == 1.0
    assert rows["e"]["met"] and rows["f"]["met"]


def test_booleans_and_text_are_no_figures(tmp_path: Path) -> None:
    g = _goals()
    goals = (g.Goal("a", "x", g.key("flag"), 1.0), g.Goal("b", "x", g.key("text"), 1.0))
    _write(tmp_path, "x", {"flag": True, "text": "1.0"})
    assert [r["status"] for r in g.goal_table(tmp_path, goals)] == ["figure absent"] * 2


def test_write_gives_markdown_and_json(tmp_path: Path) -> None:
    g = _goals()
    _write(tmp_path, "bench_oasis_online", {"mean ms per decision (1000 jobs)": 0.5})
    md = g.write(tmp_path)
    assert "| OASiS online, mean ms per decision (1,000 jobs) |" in md
    rows = json.loads((tmp_path / "goals.json").read_text())
    assert rows[0]["met"] is True and len(rows) == len(g.GOALS)
    # the goal table itself is not read back as a benchmark result
    assert g.goal_table(tmp_path)[0]["value"] == 0.5


def test_least_speedup_reads_the_cpu_verdicts(tmp_path: Path) -> None:
    g = _goals()
    goal = g.Goal("s", "x", g.least_speedup("v"), 10.0, at_most=False)
    verdicts = {"a": "met (72.1x); met (18.9x)", "b": "met (40x); met (14.0x)", "c": "n/a; n/a"}
    _write(tmp_path, "x", {"v": verdicts})
    (row,) = g.goal_table(tmp_path, (goal,))
    assert row["value"] == pytest.approx(14.0) and row["met"]
    verdicts["b"] = "met (12.0x); 8.0x: 1.25x to go"
    _write(tmp_path, "x", {"v": verdicts})
    (row,) = g.goal_table(tmp_path, (goal,))
    assert row["value"] == pytest.approx(8.0) and row["met"] is False
