"""optsched's Tiresias and Optimus+Oracle, job for job, against the runs of Pollux's own
simulator that ``benchmarks/bench_pollux_sim.py`` keeps in its cache.

The benchmark runs the artifact's ``simulator.py`` (unmodified, in its own Python 3.8
environment) and keeps each run's ``--output`` log under a key of the workload's bytes, the
policy, the commit and the simulator folder's files. These tests read those logs (no peer is
run here) and need the artifact's ``simulator/`` folder (``OPTSCHED_POLLUX_SIMULATOR``); each
is skipped with the reason when either is absent. Workloads 6 and 2 at load 1.0 are also held in
``tests/data/pollux/baselines.json`` (``tests/test_goodput_cluster.py``); these cover the
rest of the eight workloads and the relative-load variants of workload 6.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from optsched.goodput.cluster import simulate
from optsched.goodput.policies import make_policy
from optsched.goodput.validate import validate
from optsched.goodput.workload import read_workload
from optsched.tolerances import TIME_TOL
from tests.test_goodput_cluster import JCT_MATCH_TOL
from tests.test_goodput_readers import artifact_dir

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
#: optsched's policy -> the artifact's ``--policy``.
BASELINES = {"tiresias": "tiresias", "optimus-oracle": "optimus"}
#: (workload number, relative load) of the cached runs compared here.
CASES = [(n, "1.0") for n in (1, 3, 4, 5, 7, 8)] + [(6, x) for x in ("0.5", "1.5", "2.0")]


@cache
def bench() -> ModuleType:
    # the benchmarks import their helpers by bare name, as run.py runs them from benchmarks/
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_pollux_sim", BENCH / "bench_pollux_sim.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_pollux_sim"] = module
    spec.loader.exec_module(module)
    return module


@cache
def cached_run(number: int, load: str, policy: str) -> tuple[Path, dict[str, Any]] | str:
    """The workload file and the figures of the cached artifact run, or why there are none."""
    if not (BENCH / "bench_pollux_sim.py").is_file():
        return "benchmarks/ not in this tree"
    folder = artifact_dir()
    if folder is None:
        return "Pollux's simulator folder is absent (set OPTSCHED_POLLUX_SIMULATOR)"
    b = bench()
    workload = folder / b.LOADS[load] / f"workload-{number}.csv"
    kept = b._run_dir(folder, workload, policy)
    # run.json is written last, once the run ended: without it the log may be partial
    if not (kept / "run.json").is_file() or not (kept / "log.jsonl").is_file():
        return f"no cached artifact run {kept} (make bench with the artifact runs it)"
    meta = json.loads((kept / "run.json").read_text())
    if meta.get("error"):
        return f"the cached artifact run {kept} did not finish: {meta['error']}"
    return workload, b.read_log(kept / "log.jsonl", kept / "stdout.txt")


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize(("number", "load"), CASES)
def test_baseline_matches_cached_artifact_run(name: str, number: int, load: str) -> None:
    found = cached_run(number, load, BASELINES[name])
    if isinstance(found, str):
        pytest.skip(found)
    workload, theirs = found
    run = simulate(read_workload(workload), make_policy(name), traces=workload.parent.parent)
    ours = {j.name: (j.completion_time, j.num_restarts) for j in run.jobs}
    differ = {k: (v, ours.get(k)) for k, v in theirs["jobs"].items() if ours.get(k) != v}
    assert not differ, f"(artifact, optsched) completion and restarts differ: {differ}"
    assert set(ours) == set(theirs["jobs"])
    assert run.makespan == theirs["makespan"]
    # the same allocations held over the same seconds: GPU-seconds agree but for summation order
    assert 3600 * run.gpu_hours == pytest.approx(3600 * theirs["gpu_hours"], rel=0, abs=TIME_TOL)
    assert printed_matches(theirs)
    report = validate(run)
    assert report.ok, report.violations[:5]


def printed_matches(theirs: dict[str, Any]) -> bool:
    """The log's average JCT is the one the artifact printed (the log is read right)."""
    printed = theirs["printed_avg_jct"]
    return printed is not None and printed == pytest.approx(theirs["avg_jct"], rel=JCT_MATCH_TOL)


#: Load variants of other workloads than 6, one per load, checked against the artifact's own
#: published results (all 64 workload/load/baseline combinations agree; see the guide).
PUBLISHED_CASES = [(1, "0.5"), (3, "1.5"), (8, "2.0"), (4, "1.0")]


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize(("number", "load"), PUBLISHED_CASES)
def test_baseline_matches_published_results(name: str, number: int, load: str) -> None:
    """Every job's JCT equals the one in the artifact's ``results-jobload`` summary (the runs
    its authors made for the paper's Figure 8a), shipped in the artifact's folder."""
    folder = artifact_dir()
    if folder is None:
        pytest.skip("Pollux's simulator folder is absent (set OPTSCHED_POLLUX_SIMULATOR)")
    summary = folder / "results-jobload" / f"{BASELINES[name]}-{load}" / "summary.json"
    if not summary.is_file():
        pytest.skip(f"{summary} is absent (a copy without the artifact's results)")
    published = json.loads(summary.read_text())
    want = published["jcts"][f"workload-{number}"]
    sub = "workloads" if load == "1.0" else f"workloads-{load}"
    run = simulate(read_workload(folder / sub / f"workload-{number}.csv"), make_policy(name),
                   traces=folder)  # fmt: skip
    got = run.jcts
    differ = {k: (v, got.get(k)) for k, v in want.items() if got.get(k) != v}
    assert not differ, f"(published, optsched) JCTs differ: {differ}"
    assert set(got) == set(want)
    average = published["avgs"][f"workload-{number}"]
    assert run.average_jct == pytest.approx(average, rel=JCT_MATCH_TOL)
