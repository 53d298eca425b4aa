"""``optsched tensorlights``: one JSON object on stdout, numbers equal to the library's."""

from __future__ import annotations

import json

import pytest

from optsched.cli import main
from optsched.comm.tensorlights import (
    TensorLightsInstance,
    generate_instance,
    simulate,
    smith_order,
    solve,
)

load_instance = TensorLightsInstance.load


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def instance_file(tmp_path):
    path = tmp_path / "nic.json"
    generate_instance(2, 4, max_shards=2, seed=3, iterations=(3, 6)).save(path)
    return path


def test_generate_writes_a_valid_instance(capsys, tmp_path):
    path = tmp_path / "gen.toml"
    code, out, err = run(
        capsys, "tensorlights", "generate", "--hosts", "3", "--jobs", "5", "--seed", "7", "-o",
        str(path),
    )  # fmt: skip
    assert code == 0 and out == "" and "wrote" in err
    assert load_instance(path) == generate_instance(3, 5, seed=7)
    code, out, _ = run(capsys, "validate", str(path), "--json")
    assert code == 0
    assert json.loads(out)["kind"] == "tensorlights-instance"


@pytest.mark.parametrize("policy", ["fair", "priority", "rotate", "one-green"])
def test_simulate_json_matches_the_library(capsys, instance_file, policy):
    code, out, _ = run(
        capsys, "tensorlights", "simulate", str(instance_file), "--policy", policy,
        "--jitter", "0.2", "--seed", "4", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    expected = simulate(load_instance(instance_file), policy, jitter=0.2, seed=4)
    assert data["policy"] == policy
    assert data["mean_jct"] == pytest.approx(expected.mean_jct)
    assert [j["jct"] for j in data["jobs"]] == pytest.approx(list(expected.jct))
    assert data["instance"] == {"jobs": 4, "hosts": 2}


def test_simulate_generated_with_order_and_period(capsys):
    code, out, _ = run(
        capsys, "tensorlights", "simulate", "--generate", "--hosts", "1", "--jobs", "3",
        "--policy", "rotate", "--order", "2,0,1", "--period", "0.5", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    expected = simulate(
        generate_instance(1, 3, seed=0), "rotate", order=[2, 0, 1], rotation_period=0.5
    )
    assert data["order"] == [2, 0, 1] and data["rotation_period"] == 0.5
    assert data["makespan"] == pytest.approx(expected.makespan)


def test_simulate_human_output_goes_to_stdout(capsys, instance_file):
    code, out, err = run(capsys, "tensorlights", "simulate", str(instance_file))
    assert code == 0 and err == ""
    assert "mean JCT" in out


def test_compare_runs_every_policy(capsys, instance_file):
    code, out, _ = run(capsys, "tensorlights", "compare", str(instance_file), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data["policies"]) == {"fair", "priority", "rotate", "one-green"}
    inst = load_instance(instance_file)
    prio = simulate(inst, "priority", order=smith_order(inst, "mean-jct"))
    assert data["policies"]["priority"]["mean_jct"] == pytest.approx(prio.mean_jct)
    code, out, err = run(capsys, "tensorlights", "compare", str(instance_file))
    assert code == 0 and err == "" and "one-green" in out


def test_best_order_json_matches_the_library(capsys, instance_file):
    code, out, _ = run(
        capsys, "tensorlights", "best-order", str(instance_file), "--objective", "makespan",
        "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    expected = solve(load_instance(instance_file), "makespan")
    assert data["status"] == "optimal"
    assert data["objective"] == data["best_value"] == pytest.approx(expected.objective)
    assert data["best_order"] == expected.extra["best_order"]
    assert data["orders_evaluated"] == 24
    assert len(data["best_order_names"]) == 4
    code, out, err = run(capsys, "tensorlights", "best-order", str(instance_file))
    assert code == 0 and err == "" and "Smith" in out


def test_exactly_one_instance_source(capsys, instance_file):
    code, out, _ = run(capsys, "tensorlights", "simulate", "--json")
    assert code == 2 and json.loads(out)["error"] == "UsageError"
    code, _, _ = run(capsys, "tensorlights", "simulate", str(instance_file), "--generate")
    assert code == 2


def test_invalid_input_exits_2_naming_the_field(capsys, tmp_path, instance_file):
    bad = json.loads(instance_file.read_text())
    bad["jobs"][0]["ps_hosts"] = [9]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    code, out, _ = run(capsys, "tensorlights", "simulate", str(path), "--json")
    assert code == 2
    assert json.loads(out)["field"] == "jobs[0].ps_hosts[0]"
    code, out, _ = run(
        capsys, "tensorlights", "simulate", str(instance_file), "--policy", "priority",
        "--order", "0,1", "--json",
    )  # fmt: skip
    assert code == 2 and json.loads(out)["field"] == "--order"
    code, out, _ = run(
        capsys, "tensorlights", "simulate", str(instance_file), "--order", "a,b", "--json"
    )
    assert code == 2 and "--order" in json.loads(out)["message"]


def test_schema_is_published(capsys):
    code, out, _ = run(capsys, "schema", "tensorlights-instance")
    assert code == 0
    assert "ps_hosts" in json.dumps(json.loads(out))


def test_bandwidth_is_in_gbit_per_second(capsys, tmp_path):
    path = tmp_path / "g.json"
    code, _, _ = run(
        capsys, "tensorlights", "generate", "--hosts", "1", "--jobs", "2", "--bandwidth", "40",
        "--iterations", "3,5", "--workers", "4", "-o", str(path),
    )  # fmt: skip
    assert code == 0
    inst = load_instance(path)
    assert [h.bandwidth_bytes_per_s for h in inst.hosts] == [40 * 1e9 / 8]
    assert inst == generate_instance(1, 2, bandwidth=5e9, iterations=(3, 5), workers=(4, 4))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["generate", "--generate", "-o", "x.csv"], "--output"),
        (["simulate", "--generate", "--iterations", "5,2"], "--iterations"),
        (["simulate", "--generate", "--workers", "1,2,3"], "--workers"),
        (["simulate", "--generate", "--bandwidth", "nan"], "--bandwidth"),
        (["simulate", "--generate", "--bandwidth", "0"], "--bandwidth"),
        (["simulate", "--generate", "--seed", "-5"], "--seed"),
        (["simulate", "--generate", "--jitter", "1"], "--jitter"),
        (["simulate", "--generate", "--algorithm", "rotate", "--period", "inf"], "--period"),
        (["simulate", "--generate", "--algorithm", "rotate", "--period", "1e-300"], "--period"),
        (["simulate", "--generate", "--algorithm", "fair", "--order", "0,1,2,3"], "--order"),
        (["simulate", "--generate", "--algorithm", "bogus"], "--algorithm"),
        (["best-order", "--generate", "--node-limit", "0"], "--node-limit"),
        (["best-order", "--generate", "--time-limit", "nan"], "--time-limit"),
        (["compare", "--generate", "-o", "plot.txt"], "--output"),
    ],
)
def test_bad_options_exit_2_naming_the_flag(capsys, tmp_path, args, flag):
    code, out, _ = run(capsys, "tensorlights", *args, "--json")
    assert code == 2
    data = json.loads(out)
    assert flag in data.get("field", "") or flag in data["message"]


@pytest.mark.parametrize(
    "args",
    [
        # Traffic so slow the horizon passes 1e12 s: refused on jobs[1].message_bytes.
        ["simulate", "--generate", "--bandwidth", "1e-300"],
        ["generate", "--generate", "--bandwidth", "1e-300", "-o", "gen.json"],
        # Traffic so fast a broadcast takes under the simulator's resolution.
        ["simulate", "--generate", "--bandwidth", "1e300"],
        # Broadcasts so short the horizon, set by the compute phases (jobs[2].compute_time_s,
        # whose flag is --iterations), spans too many of them: the flag typed is named.
        ["simulate", "--generate", "--bandwidth", "1e9"],
    ],
)
def test_generated_instance_refusals_name_the_option(capsys, tmp_path, monkeypatch, args):
    """A generated instance refused on its own fields names the flag the user gave."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "tensorlights", *args, "--json")
    assert code == 2
    data = json.loads(out)
    assert data["field"] == "--bandwidth", data
    assert data["message"].startswith("--bandwidth: the generated instance is refused (jobs[")
    assert data["message"].endswith("; adjust --bandwidth or --iterations")


def test_stopped_search_exits_3_with_its_incumbent(capsys):
    args = ["tensorlights", "best-order", "--generate", "--jobs", "5", "--node-limit", "3"]
    code, out, _ = run(capsys, *args, "--json")
    assert code == 3
    data = json.loads(out)
    assert data["status"] == "feasible" and data["optimal"] is False
    assert data["orders_evaluated"] == 3 and len(data["best_order"]) == 5
    assert data["solution"]["order"] == data["best_order"]
    assert data["bound"] <= data["objective"]
    code, out, _ = run(capsys, *args, "--accept-feasible", "--json")
    assert code == 0 and json.loads(out)["status"] == "feasible"


def test_smith_algorithm_and_compare_plot(capsys, instance_file, tmp_path):
    code, out, _ = run(
        capsys, "tensorlights", "simulate", str(instance_file), "--algorithm", "smith", "--json"
    )
    assert code == 0
    data = json.loads(out)
    inst = load_instance(instance_file)
    assert data["order"] == list(smith_order(inst, "mean-jct")) and data["valid"] is True
    plot = tmp_path / "jct.png"
    code, _, err = run(capsys, "tensorlights", "compare", str(instance_file), "-o", str(plot))
    assert code == 0 and plot.stat().st_size > 0 and "wrote" in err
