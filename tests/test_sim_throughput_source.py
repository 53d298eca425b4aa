"""Which throughput table a run uses: Gavel's shipped table, by name, by default, and stated."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.sim import parse_cluster, simulate
from optsched.sim.comparison import compare, world_from_trace
from optsched.sim.world.sources import gavel_throughputs, resolve_throughputs
from optsched.sim.world.throughputs import load_throughputs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "optsched" / "sim" / "data"
GAVEL_TRACE = ROOT / "tests" / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
ALONE = ROOT / "tests" / "data" / "gavel" / "simulation_throughputs_alone.json"


def _csv(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "0,0,1,ResNet-18,,100,,1,,\n1,5,1,ResNet-50,,200,,1,,\n"
    )
    return path


def test_gavel_table_ships_with_its_license_and_source() -> None:
    text = (DATA / "LICENSE-gavel").read_text()
    assert text.startswith("MIT License") and "Stanford Future Data Systems" in text
    assert "c4fa400" in (DATA / "SOURCE.md").read_text()
    # declared as package data, so the wheel carries the data directory
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*" in pyproject["tool"]["setuptools"]["package-data"]["optsched.sim"]


def test_gavel_table_holds_gavels_measured_alone_rates() -> None:
    table = gavel_throughputs()
    assert table.source == "gavel" and table.gpu_types == ("k80", "p100", "v100")
    assert len(table.job_types) == 26
    # the test fixture is an independent extract of the same file's alone rates
    alone = json.loads(ALONE.read_text())
    checked = 0
    for gpu, rows in alone.items():
        if gpu.endswith("_unconsolidated"):
            continue
        for key, rates in rows.items():
            job, n = key[2:-1].rsplit("', ", 1)
            assert table.rate(job, int(n), gpu) == pytest.approx(rates["null"], rel=0, abs=0)
            checked += 1
    assert checked > 100
    # the same file read as a path gives the same table, named by its path
    by_path = load_throughputs(DATA / "gavel_throughputs.json")
    assert by_path == table and by_path.source.endswith("gavel_throughputs.json")


def test_gavel_trace_defaults_to_gavels_table_other_formats_to_uniform(tmp_path: Path) -> None:
    cluster = "v100=2,k80=2"
    gavel = world_from_trace(GAVEL_TRACE, cluster)
    assert gavel.throughputs.source == "gavel"
    uniform = world_from_trace(GAVEL_TRACE, cluster, "uniform")
    assert uniform.throughputs.source == "uniform"
    assert world_from_trace(_csv(tmp_path), cluster).throughputs.source == "uniform"
    # the measured table makes k80 slower than v100; the uniform table does not
    job = gavel.jobs[0]
    assert gavel.rate(job, "k80", True) < gavel.rate(job, "v100", True)
    assert uniform.rate(uniform.jobs[0], "k80", True) == uniform.rate(uniform.jobs[0], "v100", True)
    # and the runs differ, each record naming its table
    a, b = simulate(gavel, "fifo"), simulate(uniform, "fifo")
    assert a.summary()["throughputs"] == "gavel" and b.summary()["throughputs"] == "uniform"
    assert a.end_time != b.end_time


def test_gavel_default_refuses_a_cluster_it_does_not_measure() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        world_from_trace(GAVEL_TRACE, "a100=4")
    assert err.value.field == "throughputs" and "uniform" in err.value.message
    # uniform speeds on request only
    assert world_from_trace(GAVEL_TRACE, "a100=4", "uniform").throughputs.source == "uniform"


@pytest.mark.parametrize("bad", ["gavle", "no/such/table.json", 3.0])
def test_a_wrong_table_is_refused_naming_throughputs(bad: object) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        resolve_throughputs(bad, parse_cluster("v100=2"))
    assert err.value.field == "throughputs"


def test_compare_states_its_table_and_never_ignores_one() -> None:
    result = compare(GAVEL_TRACE, ["fifo"], cluster="v100=2,k80=2")
    assert result.throughputs == "gavel" and result.to_dict()["throughputs"] == "gavel"
    assert "throughputs=gavel" in repr(result)
    with pytest.raises(InvalidInstanceError) as err:
        compare(result.world, ["fifo"], throughputs="x.json")
    assert err.value.field == "throughputs"


def test_cli_states_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = [str(GAVEL_TRACE), "--cluster", "v100=2,k80=2"]
    assert main(["sim", "run", *base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["throughputs"] == "gavel"
    assert main(["sim", "run", *base, "--throughputs", "uniform", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["throughputs"] == "uniform" and out["run"]["throughputs"] == "uniform"
    assert main(["sim", "compare", *base, "--policies", "fifo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["throughputs"] == "gavel"
    assert main(["sim", "sweep", *base, "--policies", "fifo", "--backend", "serial", "--json"]) == 0
    assert {r["throughputs"] for r in json.loads(capsys.readouterr().out)["rows"]} == {"gavel"}
    assert main(["sim", "run", *base, "--throughputs", "gavle", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--throughputs"
    assert main(["sim", "run", *base]) == 0
    assert "throughputs: gavel" in capsys.readouterr().out  # the table's title
    # refused before any run, naming the flag, on a cluster Gavel did not measure
    other = [str(GAVEL_TRACE), "--cluster", "a100=4", "--policies", "fifo", "--json"]
    for command in ("compare", "sweep"):
        assert main(["sim", command, *other]) == 2
        assert json.loads(capsys.readouterr().out)["field"] == "--throughputs"
