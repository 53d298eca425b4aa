"""The replay benchmark states each speed goal as met or by the factor still to gain."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sim.py"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_sim_goals", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_goals_met_and_missed() -> None:
    bench = _bench()
    totals = {"fifo": [10, 10.0], "srtf": [10, 19.0], "tiresias-las": [10, 30.0]}
    scaling = {"fifo": [1.0, 2.0, 4.0], "srtf": [1.0, 2.1, 5.5]}
    out = bench.goals(totals, scaling, 4)  # type: ignore[attr-defined]
    assert out["goal: srtf within 2x FIFO's time"] == "met (1.90 <= 2)"
    assert out["goal: tiresias-las within 2x FIFO's time"] == (
        "NOT met (3.00 > 2: 1.50x still to gain)"
    )
    assert out["goal: fifo 4x the trace within 4.4x the time"] == "met (4.00 <= 4.4)"
    assert out["goal: srtf 4x the trace within 4.4x the time"] == (
        "NOT met (5.50 > 4.4: 1.25x still to gain)"
    )
    assert not any("fifo within" in k for k in out)


def test_the_quick_run_scales_the_goal() -> None:
    out = _bench().goals({"fifo": [1, 1.0]}, {"fifo": [1.0, 2.3]}, 2)  # type: ignore[attr-defined]
    assert out == {
        "goal: fifo 2x the trace within 2.2x the time": "NOT met (2.30 > 2.2: 1.05x still to gain)"
    }


def test_each_policy_keeps_its_least_cpu_run_of_interleaved_rounds() -> None:
    """``_best_rows``: the rounds run every policy in turn; a row is its policy's fastest run."""
    bench = _bench()
    calls: list[str] = []
    cpu = {"fifo": [3.0, 1.0, 2.0], "srtf": [5.0, 6.0, 4.0], "tiresias-las": [7.0, 8.0, 9.0]}

    def replay(label: str, frame: object, gpus: int, copies: int, policy: str) -> list[object]:
        k = sum(p == policy for p in calls)
        calls.append(policy)
        return [label, copies, 10, gpus, policy, cpu[policy][k] + 0.5, cpu[policy][k], k]

    bench._replay = replay  # type: ignore[attr-defined]
    rows = bench._best_rows("c", None, 8, 1, 3)  # type: ignore[attr-defined]
    assert calls == list(bench.POLICIES) * 3  # type: ignore[attr-defined]
    assert [(r[4], r[6], r[7]) for r in rows] == [
        ("fifo", 1.0, 1),
        ("srtf", 4.0, 2),
        ("tiresias-las", 7.0, 0),
    ]


def test_work_ratios_put_each_policy_per_unit_of_its_work() -> None:
    """``work_ratios``: a policy with twice FIFO's events and time costs as FIFO per event."""
    bench = _bench()
    cpu = {"fifo": 4.0, "srtf": 8.0, "tiresias-las": 10.0}
    work = {"fifo": [100, 50], "srtf": [100, 60], "tiresias-las": [200, 125]}
    out = bench.work_ratios(cpu, work)  # type: ignore[attr-defined]
    assert out == {
        "srtf / fifo events, all traces": 1.0,
        "srtf / fifo run starts, all traces": 1.2,
        "srtf / fifo CPU time per event": 2.0,
        "srtf / fifo CPU time per run start": round(2.0 / 1.2, 3),
        "tiresias-las / fifo events, all traces": 2.0,
        "tiresias-las / fifo run starts, all traces": 2.5,
        "tiresias-las / fifo CPU time per event": 1.25,
        "tiresias-las / fifo CPU time per run start": 1.0,
    }
    # no FIFO row (or no work in it): nothing to divide by
    assert bench.work_ratios({"srtf": 1.0}, {"srtf": [1, 1]}) == {}  # type: ignore[attr-defined]
    assert bench.work_ratios(cpu, {**work, "fifo": [0, 0]}) == {}  # type: ignore[attr-defined]
