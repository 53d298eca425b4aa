"""ElasticFlow's A100 profiles shipped with optsched: the bytes of its repository, in the wheel,
and the default table of ElasticFlow's traces."""

from __future__ import annotations

import glob
import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.experiment import DEFAULT_THROUGHPUTS_RULE, KIND, run_experiment
from optsched.runs.store import RunStore
from optsched.sim import parse_cluster
from optsched.sim.world.elasticflow_profiles import load_scaling_profiles
from optsched.sim.world.sources import (
    ELASTICFLOW,
    TABLE_NAMES,
    default_table_name,
    elasticflow_profiles,
    elasticflow_throughputs,
    names_elasticflow_jobs,
    resolve_throughputs,
)
from optsched.traces import read_trace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "optsched" / "sim" / "data"
SHIPPED = DATA / "elasticflow_a100"
SLICE = ROOT / "tests" / "data" / "traces" / "elasticflow" / "cluster10_head40.csv"
#: ElasticFlow's repository as a bare mirror beside the checkout, at the commit shipped.
MIRROR = next(
    (
        p / ".mirror" / "pkusys+ElasticFlow" / "repo"
        for p in ROOT.parents
        if (p / ".mirror" / "pkusys+ElasticFlow" / "repo").is_dir()
    ),
    None,
)
COMMIT = "04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0"
UPSTREAM = "ElasticFlow/scheduler/throughputs_A100"
needs_mirror = pytest.mark.skipif(
    MIRROR is None, reason="ElasticFlow's repository (.mirror/pkusys+ElasticFlow/repo) is absent"
)


def _git(*args: str) -> bytes:
    assert MIRROR is not None
    return subprocess.run(
        ["git", f"--git-dir={MIRROR}", *args], check=True, capture_output=True
    ).stdout


@needs_mirror
def test_the_shipped_files_are_the_repositorys_at_the_commit(tmp_path: Path) -> None:
    """Byte for byte, file for file; the licence too; and read, the same numbers."""
    names = _git("ls-tree", "--name-only", f"{COMMIT}:{UPSTREAM}").decode().split()
    assert sorted(names) == sorted(p.name for p in SHIPPED.glob("*.csv"))
    for name in names:
        upstream = _git("show", f"{COMMIT}:{UPSTREAM}/{name}")
        assert (SHIPPED / name).read_bytes() == upstream, name
        (tmp_path / name).write_bytes(upstream)
    assert (DATA / "LICENCE-elasticflow").read_bytes() == _git("show", f"{COMMIT}:LICENCE")
    # read from the repository's files, the profiles are the shipped ones, curve for curve
    theirs = load_scaling_profiles(tmp_path, gpu_type="a100")
    ours = elasticflow_profiles()
    assert dict(ours.curves) == dict(theirs.curves)
    assert len(ours.curves) == 17
    # and the table built from them rates every job type alike at every count
    from optsched.sim.world.throughputs import Throughputs

    table = Throughputs.from_scaling_profiles([theirs], reference="a100")
    shipped = elasticflow_throughputs()
    assert shipped == table and shipped.source == "elasticflow"
    for job_type in table.job_types:
        for n in range(1, 130):
            assert shipped.rate(job_type, n, "a100") == table.rate(job_type, n, "a100")


def test_the_notice_names_the_source_and_commit() -> None:
    notice = (DATA / "NOTICE-elasticflow").read_text(encoding="utf-8")
    assert "github.com/pkusys/ElasticFlow" in notice and COMMIT in notice
    assert UPSTREAM in notice and "LICENCE-elasticflow" in notice
    assert "Apache License, Version 2.0" in (DATA / "LICENCE-elasticflow").read_text()
    assert "ElasticFlow" in (DATA / "SOURCE.md").read_text(encoding="utf-8")


def test_the_wheel_takes_every_shipped_data_file() -> None:
    """Every file under ``optsched/sim/data`` (the profiles' folder included) matches a
    package-data pattern, as setuptools expands them (files only, no recursion into folders)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["optsched.sim"]
    package = ROOT / "optsched" / "sim"
    taken = {
        Path(f).resolve()
        for pattern in patterns
        for f in glob.glob(str(package / pattern), recursive=True)
        if Path(f).is_file()
    }
    files = {p.resolve() for p in DATA.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files - taken == set()
    assert {SHIPPED / "gpt2.csv", DATA / "NOTICE-elasticflow"} <= taken


def test_an_elasticflow_trace_defaults_to_the_shipped_profiles() -> None:
    trace = read_trace(SLICE)
    assert names_elasticflow_jobs(trace)
    assert default_table_name(trace.format, trace) == ELASTICFLOW
    table = resolve_throughputs(
        None, parse_cluster("a100=16:8"), trace_format=trace.format, jobs=trace
    )
    assert table.source == ELASTICFLOW and table.gpu_types == ("a100",)
    # named the same way
    assert ELASTICFLOW in TABLE_NAMES
    named = resolve_throughputs("elasticflow", parse_cluster("a100=8"))
    assert named == table
    # a cluster of another type is refused, naming the field, not simulated at uniform speeds
    with pytest.raises(InvalidInstanceError) as info:
        resolve_throughputs(None, parse_cluster("v100=16"), trace_format=trace.format, jobs=trace)
    assert info.value.field == "throughputs" and "ElasticFlow's A100 profiles" in info.value.message
    assert resolve_throughputs("uniform", parse_cluster("v100=16")).source == "uniform"


def test_jobs_outside_the_profiles_keep_uniform_speeds() -> None:
    frame = read_trace(SLICE).jobs
    assert default_table_name(None, frame) == ELASTICFLOW
    other = frame.copy()
    other.loc[other.index[0], "model"] = "yolov3"  # profiled on T4 only
    assert not names_elasticflow_jobs(other) and default_table_name(None, other) == "uniform"
    steps = frame.copy()
    steps["total_steps"] = float("nan")  # the raw form: no step counts
    assert default_table_name("elasticflow", steps) == "uniform"
    batch = frame.copy()
    batch.loc[batch.index[3], "batch_size"] = float("nan")
    assert default_table_name("elasticflow", batch) == "uniform"
    assert default_table_name("elasticflow", frame.iloc[:0]) == "uniform"


def test_the_cli_runs_an_elasticflow_trace_on_the_shipped_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["sim", "run", str(SLICE), "--cluster", "a100=16:8", "--policy", "edf", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["throughputs"] == ELASTICFLOW
    args = ["sim", "run", str(SLICE), "--cluster", "a100=16:8", "--policy", "edf", "--json"]
    code = main([*args, "--throughputs", "elasticflow"])
    named = json.loads(capsys.readouterr().out)
    assert code == 0 and named["metrics"] == out["metrics"]


def test_a_store_made_under_the_gavel_only_default_is_refused(tmp_path: Path) -> None:
    """A store whose rule chose Gavel's table or uniform speeds (ElasticFlow traces at uniform
    speeds) must not resume under the rule that gives them ElasticFlow's profiles."""
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "small"\ntraces = ["synthetic:4"]\nclusters = ["v100=8"]\npolicies = ["fifo"]\n'
        'seeds = [0]\nloads = [1.0]\n\n[outputs]\nstore = "out/runs.sqlite"\n',
        encoding="utf-8",
    )
    run_experiment(path, backend="serial")
    with RunStore.open_existing(tmp_path / "out" / "runs.sqlite", kind=KIND) as store:
        config = dict(store.config)
    assert config["default_throughputs"] == DEFAULT_THROUGHPUTS_RULE
    assert "ElasticFlow" in DEFAULT_THROUGHPUTS_RULE
    config["default_throughputs"] = "by content: Gavel's table for Gavel job types with step counts"
    old = tmp_path / "old.sqlite"
    with RunStore(old, kind=KIND, config=config):
        pass
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(path, store=old, backend="serial")
    assert info.value.field == "config.default_throughputs"


def test_the_profiles_name_their_files_not_the_install_location() -> None:
    files = elasticflow_profiles().files
    assert files == tuple(f"elasticflow_a100/{p.name}" for p in sorted(SHIPPED.glob("*.csv")))
    assert not any(str(ROOT) in f for f in files)


def test_the_converted_csv_keeps_the_default(tmp_path: Path) -> None:
    """`trace convert` keeps model, batch size and steps: the same table by default."""
    out = tmp_path / "c10.csv"
    assert main(["trace", "convert", str(SLICE), str(out)]) == 0
    converted = read_trace(out)
    assert converted.format != "elasticflow"
    assert default_table_name(converted.format, converted) == ELASTICFLOW
