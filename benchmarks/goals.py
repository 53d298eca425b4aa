"""The speed and quality goals of the benchmarks, read back from one run's result files.

Every benchmark writes its headline figures into its ``summary`` (see ``run.py``). This module
holds the goals set for them in one table, :data:`GOALS`, and :func:`goal_table` turns the
result files of an output directory into one row per goal: the measured value, the goal, whether
it is met and, where it is not, the remaining factor (how many times the figure must still
shrink, or grow, to meet it). A goal whose benchmark did not run, or whose figure is absent,
says so instead of guessing.

A goal stated as "proven in N s" is judged by CPU seconds (the process's, every thread
counted), never by wall time, which the load of a shared machine inflates: a wall-clock limit
once made the same exact model prove 100 jobs at load 4.5 and stop at a 93% gap at load 16.

Usage: ``python benchmarks/goals.py [DIR]`` prints the table of ``DIR`` (default
``benchmarks/results/latest``); ``run.py`` writes it as ``goals.md`` and ``goals.json`` after
every run.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

Summary = Mapping[str, Any]


@dataclass(frozen=True)
class Goal:
    """One goal: ``value <= target`` (``at_most``) or ``value >= target`` on a benchmark figure."""

    measure: str
    bench: str
    figure: Callable[[Summary], float | None]
    target: float
    at_most: bool = True
    unit: str = ""
    #: How to get the figure when the default run does not measure it.
    absent: str = ""

    def judge(self, value: float) -> tuple[bool, float]:
        """Whether ``value`` meets the goal, and the remaining factor (1 when met)."""
        if self.at_most:
            met = value <= self.target
            factor = value / self.target if self.target > 0 else math.inf
        else:
            met = value >= self.target
            factor = self.target / value if value > 0 else math.inf
        return met, (1.0 if met else factor)


def key(name: str) -> Callable[[Summary], float | None]:
    """The summary figure ``name`` (``None`` when absent or not a number)."""

    def get(summary: Summary) -> float | None:
        value = summary.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    return get


def matching(
    pattern: str, reduce: Callable[[list[float]], float] = max
) -> Callable[[Summary], float | None]:
    """``reduce`` over every numeric summary figure whose key matches ``pattern`` (a regex)."""
    rx = re.compile(pattern)

    def get(summary: Summary) -> float | None:
        values = [
            float(v)
            for k, v in summary.items()
            if rx.search(k) and isinstance(v, int | float) and not isinstance(v, bool)
        ]
        return reduce(values) if values else None

    return get


def listed(name: str, index: int) -> Callable[[Summary], float | None]:
    """Item ``index`` of a figure written as a comma-separated list (``"2.11, 4.77"``)."""

    def get(summary: Summary) -> float | None:
        value = summary.get(name)
        if not isinstance(value, str):
            return None
        parts = [p.strip() for p in value.split(",")]
        try:
            return float(parts[index])
        except (IndexError, ValueError):
            return None

    return get


def whole_trace(name: str, policy: str) -> Callable[[Summary], float | None]:
    """Figure ``name`` only from a run over the whole trace (which writes the goal's key)."""

    def get(summary: Summary) -> float | None:
        if f"{policy}: goal, whole trace (s, quiet 2-core machine)" not in summary:
            return None
        return key(name)(summary)

    return get


def least_speedup(name: str) -> Callable[[Summary], float | None]:
    """The least CPU-time speed-up of a per-policy verdict map (``{"p": "met (14.0x); ..."}``).

    ``bench_gavel_sim`` writes one verdict per policy, wall time first and CPU time after the
    ``;``; the CPU figure is the one a loaded machine does not distort. Policies whose reference
    run stopped (``n/a``) are left out.
    """
    rx = re.compile(r"([0-9.]+)x")

    def get(summary: Summary) -> float | None:
        verdicts = summary.get(name)
        if not isinstance(verdicts, Mapping):
            return None
        values = []
        for text in verdicts.values():
            cpu = str(text).split(";")[-1]
            found = rx.search(cpu)
            if found and "n/a" not in cpu:
                # "met (Nx)" or "Nx: Mx to go": the first figure is the speed-up either way
                values.append(float(found.group(1)))
        return min(values) if values else None

    return get


#: The goals, in the order the table prints them.
GOALS: tuple[Goal, ...] = (
    Goal(
        "OASiS online, mean ms per decision (1,000 jobs)",
        "oasis_online",
        key("mean ms per decision (1000 jobs)"),
        1.0,
        unit="ms",
    ),
    Goal(
        "OASiS online, growth exponent in T (linear: <= 1)",
        "oasis_online",
        matching(r"^growth exponent of ms per decision, T = \d+ to \d+$"),
        1.0,
    ),
    Goal(
        "PACE exact + fusion, ResNet-152",
        "pace_exact",
        key("PACE schedule on the largest profile (ms)"),
        10.0,
        unit="ms",
    ),
    Goal(
        "PACE at ~1,500 tensors",
        "pace_exact",
        matching(r"^PACE schedule on the synthetic"),
        50.0,
        unit="ms",
    ),
    Goal(
        "placement servers, 250-item bin packing, slowest proven solve, CPU seconds",
        "placement",
        matching(r"^servers 250 tasks: slowest proven solve, CPU s"),
        5.0,
        unit="CPU s",
        absent="a result file from before CPU budgets has the wall-clock figure only",
    ),
    Goal(
        "Chronus, 260-job trace, 60 s leases",
        "sim_chronus",
        key("full trace seconds (replan on change)"),
        60.0,
        unit="s",
    ),
    Goal(
        "cluster04 (15,802 jobs) under ftf-perf, CPU seconds (fast round path, HOT_LEVELS on)",
        "sim_allocation",
        whole_trace("ftf-perf: CPU (s), fast round path", "ftf-perf"),
        120.0,
        unit="s",
        absent="measured by bench_sim_allocation.py --full --ratio-only",
    ),
    Goal(
        "69,351-job replay, SRTF / FIFO CPU time",
        "sim",
        key("srtf / fifo CPU time, all traces"),
        2.0,
    ),
    Goal(
        "69,351-job replay, Tiresias-LAS / FIFO CPU time",
        "sim",
        key("tiresias-las / fifo CPU time, all traces"),
        2.0,
    ),
    Goal(
        "replay, 4x the trace / 1x, CPU time (worst policy)",
        "sim",
        matching(r"CPU time 4x / 1x$"),
        4.4,
    ),
    Goal(
        "whole sim run (validation, metrics) vs Gavel's simulator, 951 jobs, least speed-up (CPU)",
        "gavel_sim",
        least_speedup("speed goal (>= 10x) on msr-ed69ec-951, wall; CPU"),
        10.0,
        at_most=False,
        unit="x",
    ),
    Goal(
        "goodput cluster vs Pollux's README avg JCT (workload 6), largest deviation",
        "pollux_sim",
        key("largest deviation from the README's avg JCT, optsched (%)"),
        5.0,
        unit="%",
    ),
    Goal(
        "goodput cluster vs Pollux's own simulator run (workload 6), Pollux, mean of seeds 0-3",
        "pollux_sim",
        key("pollux (mean of seeds 0-3), workload 6, load 1.0: largest |avg JCT diff| (%)"),
        2.0,
        unit="%",
    ),
    Goal(
        "Sia's own simulator, policies in the loop within 2 % on every figure (Sia + 2 baselines)",
        "sia_sim",
        key("policies in the loop with every figure within 2 %"),
        3.0,
        at_most=False,
    ),
    Goal(
        "certified gap, best policy to the bound, worst size (load 0.8)",
        "sim_bounds",
        matching(r"^gap_best_policy_\d+_jobs_pct$"),
        10.0,
        unit="%",
    ),
    Goal(
        "certified bound on 1,000 jobs",
        "sim_bounds",
        key("bound_seconds_1000_jobs"),
        60.0,
        unit="s",
    ),
    Goal(
        "exact model, largest trace proven optimal in 60 CPU s",
        "sim_exact",
        key("largest trace proven optimal within 60 CPU s (jobs)"),
        100.0,
        at_most=False,
        unit="jobs",
        absent="a result file from before CPU budgets has the wall-clock figure only",
    ),
    Goal(
        "Harmony, training the shipped model (CPU)",
        "harmony",
        key("training_cpu_s (reward net + policy, shipped settings)"),
        600.0,
        unit="s",
    ),
    Goal(
        "Harmony, inference per decision (CPU)",
        "harmony",
        key("inference_cpu_ms per decision (harmony)"),
        5.0,
        unit="ms",
    ),
    Goal(
        "Harmony, mean true cost / exact true optimum, non-trivial decisions",
        "harmony",
        key("harmony ratio to true optimum, non-trivial"),
        1.10,
    ),
    Goal(
        "Harmony, avg JCT of the best heuristic / harmony, training world (25% lower: >= 1.333)",
        "harmony",
        key("training world: best heuristic / harmony avg JCT"),
        1.0 / 0.75,
        at_most=False,
    ),
    Goal(
        "import optsched.sim, CPU seconds (fresh interpreter, bytecode cached)",
        "import",
        key("import optsched.sim: CPU s (median)"),
        0.5,
        unit="CPU s",
    ),
)


def _load(out: Path) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for path in sorted(out.glob("*.json")):
        if path.name == "goals.json":
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            # benchmarks name themselves with or without the file's "bench_" prefix
            results[data["name"].removeprefix("bench_")] = data
    return results


def goal_table(out: Path, goals: tuple[Goal, ...] = GOALS) -> list[dict[str, Any]]:
    """One row per goal from the result files in ``out``."""
    results = _load(out)
    rows = []
    for goal in goals:
        row: dict[str, Any] = {
            "measure": goal.measure,
            "benchmark": f"bench_{goal.bench}",
            "goal": f"{'<=' if goal.at_most else '>='} {goal.target:g} {goal.unit}".strip(),
        }
        result = results.get(goal.bench)
        value = None if result is None else goal.figure(result.get("summary") or {})
        if value is None:
            row.update(
                value=None,
                met=None,
                remaining_factor=None,
                status=("not run" if result is None else "figure absent")
                + (f" ({goal.absent})" if goal.absent else ""),
            )
        else:
            met, factor = goal.judge(value)
            row.update(
                value=value,
                met=met,
                remaining_factor=factor,
                status=("met" if met else f"not met, {factor:.3g}x to go")
                + (" (quick sizes)" if result and result.get("quick") else ""),
            )
        rows.append(row)
    return rows


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """The goal table as a Markdown section."""
    lines = [
        "## Goals",
        "",
        "Each figure is read from this run's result file of its benchmark; the remaining factor "
        "is how many times the figure must still shrink (or grow) to meet its goal.",
        "",
        "| measure | benchmark | value | goal | status |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        value = "" if r["value"] is None else f"{r['value']:.4g}"
        lines.append(
            f"| {r['measure']} | {r['benchmark']} | {value} | {r['goal']} | {r['status']} |"
        )
    return "\n".join(lines) + "\n"


def write(out: Path) -> str:
    """Write ``goals.json`` and ``goals.md`` into ``out``; the Markdown is returned."""
    rows = goal_table(out)
    (out / "goals.json").write_text(json.dumps(rows, indent=2) + "\n")
    md = to_markdown(rows)
    (out / "goals.md").write_text(md)
    return md


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "latest"
    print(to_markdown(goal_table(target)))
