"""``optsched placement``: JSON contracts, exit codes, field-named errors, validate and schema."""

from __future__ import annotations

import json

import pytest

from optsched.cli import main
from optsched.placement import (
    Placement,
    PlacementInstance,
    bin_packing_instance,
    generate_instance,
    solve,
    validate,
)
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, RATIO_TOL, leq, within


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.json"
    generate_instance(4, n_servers=3, gpus=4, racks=2, seed=3).save(path)
    return path


def _run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.solver("highs")
@pytest.mark.parametrize("objective", ["servers", "traffic", "max-load", "interference", "clwp"])
def test_solve_json_contract(capsys, small, objective):
    code, out, _ = _run(
        capsys, ["placement", "solve", str(small), "--objective", objective, "--json"]
    )
    assert code == 0
    data = json.loads(out)  # exactly one JSON object on stdout
    assert {"status", "optimal", "objective", "objective_name", "bound", "solution"} <= data.keys()
    assert data["status"] == "optimal" and data["optimal"] is True
    assert data["objective_name"] == objective
    instance = PlacementInstance.load(small)
    report = validate(instance, Placement(assignment=data["solution"]["assignment"]))
    assert report.ok
    assert within(report.objectives[objective], data["objective"], OBJECTIVE_AGREEMENT_TOL)
    # The library gives the same optimum.
    assert within(solve(instance, objective).objective, data["objective"], OBJECTIVE_AGREEMENT_TOL)


@pytest.mark.solver("highs")
def test_solve_human_output_goes_to_stdout(capsys, small, tmp_path):
    out_file = tmp_path / "placement.json"
    code, out, err = _run(capsys, ["placement", "solve", str(small), "-o", str(out_file)])
    assert code == 0 and err == ""
    assert "servers" in out and "optimal" in out
    # --json with -o: one line naming the file and the solve's figures, not the file again
    code, out, _ = _run(capsys, ["placement", "solve", str(small), "-o", str(out_file), "--json"])
    line = json.loads(out)
    assert code == 0 and len(out.strip().splitlines()) == 1 and "solution" not in line
    assert line["output"] == str(out_file) and line["status"] == "optimal"
    assert line["objective"] >= 1 and "assignment" in json.loads(out_file.read_text())
    code, out, err = _run(capsys, ["validate", str(small), str(out_file), "--json"])
    assert code == 0 and json.loads(out)["valid"] is True


@pytest.mark.solver("highs")
def test_solve_report_feeds_validate_and_a_broken_placement_exits_2(capsys, small, tmp_path):
    code, out, _ = _run(capsys, ["placement", "solve", str(small), "--json"])
    report = tmp_path / "report.json"
    report.write_text(out)
    code, out, _ = _run(capsys, ["validate", str(small), str(report), "--json"])
    assert code == 0 and json.loads(out)["objectives"]["servers"] is not None
    broken = json.loads(report.read_text())
    first = next(iter(broken["solution"]["assignment"]))
    broken["solution"]["assignment"][first] = "nowhere"
    report.write_text(json.dumps(broken))
    code, out, _ = _run(capsys, ["validate", str(small), str(report), "--json"])
    assert code == 2
    violations = json.loads(out)["violations"]
    assert any("unknown server 'nowhere'" in v["message"] for v in violations)
    assert {v["constraint"] for v in violations} == {"task_assignment"}


@pytest.mark.solver("highs")
def test_a_solve_stopped_short_exits_3_with_its_incumbent(capsys, tmp_path):
    # A solution limit (not the clock) stops HiGHS at its first incumbent: exit 3, and the JSON
    # holds the incumbent placement, marked not optimal, with the bound and the LP bound.
    path = tmp_path / "bp.json"
    bin_packing_instance(60, seed=1).save(path)
    args = ["placement", "solve", str(path), "--formulation", "assignment"]
    args += ["--solver-option", "mip_max_improving_sols=1"]
    out_file = tmp_path / "incumbent.json"
    code, out, err = _run(capsys, [*args, "--json", "-o", str(out_file)])
    assert code == 3 and "not optimal" in err
    data = json.loads(out)
    assert data["status"] == "feasible" and data["optimal"] is False
    assert data["lp_bound"] is not None and data["bound"] is not None
    instance = PlacementInstance.load(path)
    incumbent = Placement.from_dict(data["solution"])
    report = validate(instance, incumbent)
    assert report.ok and report.objectives["servers"] == data["objective"]
    assert data["bound"] <= data["objective"]
    # The incumbent is written too, and the JSON of the solve loads as a placement.
    assert Placement.load(out_file) == incumbent
    report_file = tmp_path / "report.json"
    report_file.write_text(out)
    assert Placement.load(report_file) == incumbent
    # Accepting it exits 0 with the same incumbent (no re-solve to a different one).
    code, out, _ = _run(capsys, [*args, "--accept-feasible", "--json"])
    assert code == 0
    accepted = json.loads(out)
    assert accepted["status"] == "feasible"
    assert accepted["solution"]["assignment"] == data["solution"]["assignment"]


@pytest.mark.solver("highs")
def test_compare_exits_3_when_an_exact_solve_stops_short(capsys, tmp_path):
    path = tmp_path / "bp.json"
    bin_packing_instance(40, seed=1).save(path)
    args = ["placement", "compare", str(path), "--objective", "servers"]
    args += [
        "--solver-option",
        "mip_max_improving_sols=1",
        "--solver-option",
        "mip_heuristic_effort=0",
    ]
    code, out, err = _run(capsys, [*args, "--json"])
    data = json.loads(out)
    # HiGHS counts improving solutions, not seconds: with heuristics off, its first incumbent
    # of this instance is never proven optimal, on any machine.
    assert data["reference"]["servers"] == "bound", data["reference"]
    assert code == 3 and data["optimal"] is False and "stopped short" in err
    assert data["reference"]["servers"] == "bound"
    code, out, _ = _run(capsys, [*args, "--accept-feasible", "--json"])
    assert code == 0


@pytest.mark.parametrize(
    ("option", "flag"),
    [
        (["--time-limit", "nan"], "--time-limit"),
        (["--time-limit", "-1"], "--time-limit"),
        (["--mip-gap", "inf"], "--mip-gap"),
        (["--threads", "0"], "--threads"),
        (["--solver", "nosuchsolver"], "--solver"),
        (["--solver-option", "novalue"], "--solver-option"),
        (["--objective", "fastest"], "--objective"),
    ],
)
def test_bad_options_exit_2_naming_the_flag(capsys, small, option, flag):
    code, out, err = _run(capsys, ["placement", "solve", str(small), *option, "--json"])
    assert code == 2
    assert flag in json.loads(out)["message"] and flag in err


@pytest.mark.solver("highs")
def test_compare_prints_the_gap_table(capsys, small):
    code, out, err = _run(capsys, ["placement", "compare", str(small)])
    assert code == 0 and err == ""
    for name in ("best-fit-decreasing", "round-robin", "consolidate-first", "exact"):
        assert name in out
    assert max(len(line) for line in out.splitlines()) <= 100
    code, out, _ = _run(
        capsys, ["placement", "compare", str(small), "--objective", "traffic", "--json"]
    )
    data = json.loads(out)
    assert code == 0 and data["optimal"] is True
    assert data["objectives"] == ["traffic"]
    assert {row["heuristic"] for row in data["rows"]} >= {"first-fit", "random"}
    optimum = data["optimum"]["traffic"]
    for row in data["rows"]:
        cell = row["traffic"]
        if cell["value"] is not None:
            assert leq(optimum, cell["value"], RATIO_TOL)


def test_heuristic_command(capsys, small):
    code, out, _ = _run(
        capsys, ["placement", "heuristic", str(small), "--name", "first-fit", "--json"]
    )
    assert code == 0
    data = json.loads(out)
    assert data["valid"] is True and data["objectives"]["servers"] >= 1


def test_generate_writes_loadable_files(capsys, tmp_path):
    path = tmp_path / "g.toml"
    code, _, err = _run(
        capsys, ["placement", "generate", "--jobs", "3", "--racks", "2", "-o", str(path)]
    )
    assert code == 0 and "wrote" in err
    assert len(PlacementInstance.load(path).jobs) == 3
    code, _, _ = _run(capsys, ["placement", "generate", "-o", str(path)])
    assert code == 2


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda d: d["jobs"][0]["tasks"][0]["demand"].update(gpu=99),
            "jobs[0].tasks[0].demand.gpu",
        ),
        (lambda d: d["cluster"]["servers"][0].pop("capacity"), "cluster.servers[0].capacity"),
        (lambda d: d["jobs"][1].update(name="j0"), "jobs[1].name"),
        (
            lambda d: d.update(interference=[{"a": "j0", "b": "nope", "coefficient": 1}]),
            "interference[0].b",
        ),
    ],
)
def test_invalid_files_exit_2_naming_the_field(capsys, small, tmp_path, mutate, field):
    data = json.loads(small.read_text())
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    for args in (
        ["placement", "solve", str(bad)],
        ["placement", "compare", str(bad)],
        ["validate", str(bad)],
    ):
        code, out, err = _run(capsys, [*args, "--json"])
        assert code == 2, args
        payload = json.loads(out)
        assert payload["field"] == field
        assert field in err


def test_unreadable_and_unknown_objective_exit_2(capsys, tmp_path):
    code, out, _ = _run(capsys, ["placement", "solve", str(tmp_path / "missing.json"), "--json"])
    assert code == 2 and json.loads(out)["field"] == "<file>"
    path = tmp_path / "x.json"
    bin_packing_instance(3).save(path)
    code, _, _ = _run(capsys, ["placement", "solve", str(path), "--objective", "fastest"])
    assert code == 2


def test_schema_commands(capsys):
    code, out, _ = _run(capsys, ["schema", "placement-instance"])
    assert code == 0 and json.loads(out)["title"] == "optsched placement instance"
    code, out, _ = _run(capsys, ["schema", "placement"])
    assert code == 0 and "assignment" in json.loads(out)["properties"]
