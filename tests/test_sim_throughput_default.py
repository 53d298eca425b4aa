"""The default throughput table follows the trace's content, not its file format.

A Gavel trace and the normalized CSV ``trace convert`` writes from it hold the same jobs (Gavel
job types with step counts): by default both run on Gavel's measured table and give identical
job completion times, through ``world_from_trace`` + ``simulate``, through ``optsched sim run``
and through an experiment file. An experiment file names a table as the command line does
(``throughputs = "gavel"``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.experiment import run_experiment
from optsched.sim import simulate
from optsched.sim.comparison import world_from_trace
from optsched.sim.measure.metrics import job_metrics
from optsched.sim.policies import make_policy
from optsched.sim.world.sources import default_table_name, names_gavel_jobs
from optsched.traces import read_trace
from optsched.traces.convert import convert_trace

DATA = Path(__file__).resolve().parent / "data" / "traces"
GAVEL_TRACES = [
    DATA / "gavel" / "physical_cluster_small_test.trace",
    DATA / "gavel" / "msr_seed0_0e4a51_head40.trace",
    DATA / "shockwave" / "reproduce_120_head30.trace",
]
CLUSTER = "v100=8"


def _jcts(path: Path) -> tuple[str, dict[str, float]]:
    world = world_from_trace(read_trace(path), CLUSTER)
    record = simulate(world, make_policy("fifo"))
    jobs = job_metrics(record)
    return world.throughputs.source, dict(zip(jobs["job_id"], jobs["jct"], strict=True))


@pytest.mark.parametrize("source", GAVEL_TRACES, ids=lambda p: p.name)
def test_converted_gavel_trace_runs_on_gavel_table(source: Path, tmp_path: Path) -> None:
    converted = tmp_path / "jobs.csv"
    convert_trace(source, converted)
    assert read_trace(converted).format == "optsched"
    table, expected = _jcts(source)
    table_csv, got = _jcts(converted)
    assert table == table_csv == "gavel"
    assert got == expected  # the same jobs on the same speeds: the same numbers, bit for bit


def _cli(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> dict[str, object]:
    args = ["sim", "run", str(path), "--cluster", CLUSTER, "--policy", "fifo", "--json"]
    code = main([*args, *extra])
    out = capsys.readouterr().out
    assert code == 0
    payload: dict[str, object] = json.loads(out)
    return payload


def test_cli_gives_a_gavel_trace_and_its_csv_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = GAVEL_TRACES[0]
    converted = tmp_path / "jobs.csv"
    assert main(["trace", "convert", str(source), str(converted)]) == 0
    capsys.readouterr()
    a, b = _cli(capsys, source), _cli(capsys, converted)
    assert a["throughputs"] == b["throughputs"] == "gavel"
    assert a["metrics"] == b["metrics"]
    # and the uniform table stays available on request, with other numbers
    uniform = _cli(capsys, converted, "--throughputs", "uniform")
    assert uniform["throughputs"] == "uniform"
    assert uniform["metrics"]["jct_mean"] != b["metrics"]["jct_mean"]  # type: ignore[index]


def test_a_table_of_other_jobs_stays_uniform(tmp_path: Path) -> None:
    frame = read_trace(GAVEL_TRACES[0]).jobs
    assert names_gavel_jobs(frame)
    other = frame.copy()
    other.loc[0, "model"] = "my-model"  # not one of Gavel's job types
    assert not names_gavel_jobs(other)
    assert default_table_name("optsched", other) == "uniform"
    odd = frame.copy()
    odd.loc[0, "batch_size"] = 100.0  # Gavel measured no such batch size
    assert not names_gavel_jobs(odd)
    no_steps = frame.copy()
    no_steps.loc[0, "total_steps"] = np.nan
    no_steps.loc[0, "duration"] = 60.0
    assert not names_gavel_jobs(no_steps)
    assert not names_gavel_jobs(frame.iloc[:0])
    # the file format still decides for Gavel's own format
    assert default_table_name("gavel", other) == "gavel"


def _experiment(tmp_path: Path, trace: Path, throughputs: str | None) -> Path:
    line = "" if throughputs is None else f'throughputs = "{throughputs}"\n'
    path = tmp_path / "exp.toml"
    path.write_text(
        f'name = "gavel-default"\ntraces = ["{trace.name}"]\nclusters = ["{CLUSTER}"]\n'
        f'policies = ["fifo"]\nseeds = [0]\nloads = [1.0]\n{line}',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("throughputs", [None, "gavel"])
def test_experiment_file_agrees_with_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], throughputs: str | None
) -> None:
    trace = tmp_path / "jobs.csv"
    convert_trace(GAVEL_TRACES[0], trace)
    result = run_experiment(_experiment(tmp_path, trace, throughputs), n_jobs=1)
    (row,) = result.runs.to_dict("records")
    assert row["throughputs"] == "gavel"
    named = () if throughputs is None else ("--throughputs", "gavel")
    cli = _cli(capsys, GAVEL_TRACES[0], *named)
    assert row["jct_mean"] == cli["metrics"]["jct_mean"]  # type: ignore[index]
    assert row["makespan"] == cli["metrics"]["makespan"]  # type: ignore[index]


def test_experiment_file_names_uniform_as_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    convert_trace(GAVEL_TRACES[0], trace)
    result = run_experiment(_experiment(tmp_path, trace, "uniform"), n_jobs=1)
    (row,) = result.runs.to_dict("records")
    cli = _cli(capsys, trace, "--throughputs", "uniform")
    assert row["throughputs"] == "uniform"
    assert row["jct_mean"] == cli["metrics"]["jct_mean"]  # type: ignore[index]


def test_experiment_refuses_a_table_the_cluster_outgrows(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    convert_trace(GAVEL_TRACES[0], trace)
    path = _experiment(tmp_path, trace, "gavel")
    path.write_text(path.read_text().replace(CLUSTER, "a100=8"), encoding="utf-8")
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(path, n_jobs=1)
    assert info.value.field == "throughputs"
