"""``optsched pace``: the JSON contract, errors, and the sweep's files."""

from __future__ import annotations

import itertools
import json

import pytest

from optsched.cli import main
from optsched.comm.pace.generate import random_profile

REL = 1e-9
POLICIES = {"fifo", "horovod", "p3", "tictac", "bytescheduler", "pace"}


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["pace", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_resnet50_contract(capsys):
    code, d = run_json(capsys, "resnet50", "--workers", "8", "--bandwidth", "10")
    assert code == 0
    times = {k: v["iteration_time"] for k, v in d["policies"].items()}
    assert set(times) == POLICIES
    assert min(times, key=times.get) == "pace" and d["fastest"] == "pace"
    assert all(t >= d["lower_bound"] * (1 - REL) for t in times.values())
    assert d["validated"] is True
    sched = d["pace_schedule"]
    assert sched["iteration_time"] == pytest.approx(times["pace"], rel=REL)
    assert sum(len(g["tensors"]) for g in sched["groups"]) == d["compute"]["tensors"]
    # Segments are time-ordered and never overlap.
    ends = [(s["start_ms"], s["end_ms"]) for s in sched["segments"]]
    assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(ends))


def test_partition_and_profile_file(capsys, tmp_path):
    profile = random_profile(5, layers=6)
    path = tmp_path / "mine.json"
    path.write_text(profile.model_dump_json(), encoding="utf-8")
    code, d = run_json(
        capsys,
        str(path),
        "--workers",
        "4",
        "--bandwidth",
        "25",
        "--partition-mb",
        "1",
        "--latency-us",
        "3",
        "--no-schedule",
    )
    assert code == 0
    assert "pace_schedule" not in d
    assert d["policies"]["bytescheduler"]["params"]["partition_mb"] == 1.0
    assert d["policies"]["p3"]["params"]["slice_mb"] == 1.0
    assert d["fastest"] == "pace"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["resnet18", "--workers", "0"], "--workers"),
        (["resnet18", "--bandwidth", "0"], "--bandwidth"),
        (["resnet18", "--bandwidth", "nan"], "--bandwidth"),
        (["resnet18", "--latency-us", "-1"], "--latency-us"),
        (["resnet18", "--partition-mb", "-2"], "--partition-mb"),
        (["resnet18", "--cycle-ms", "inf"], "--cycle-ms"),
        (["resnet18", "--order", "bfs"], "--order"),
    ],
)
def test_bad_options_exit_2_naming_the_flag(capsys, args, flag):
    # Units and names changed: options are checked by the command line (finite, in range)
    # and the error names the flag, not the library argument.
    code, d = run_json(capsys, *args)
    assert code == 2
    assert flag in d["message"]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["no_such_model"], "MODEL_OR_FILE"),
        # Valid alone, but 1 kbit/s for ResNet-50 is an absurd horizon: refused, flag named.
        (["resnet50", "--bandwidth", "1e-7"], "--bandwidth"),
        (["resnet18", "--partition-mb", "1e-9"], "--partition-mb"),
        (["resnet18", "--cycle-ms", "1e-300"], "--cycle-ms"),
    ],
)
def test_library_errors_name_the_flag(capsys, args, flag):
    code, d = run_json(capsys, *args)
    assert code == 2
    assert d["field"] == flag, d


def test_human_output_goes_to_stdout(capsys):
    assert main(["pace", "resnet18", "--workers", "4"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "lower bound" in captured.out
    assert max(len(line) for line in captured.out.splitlines()) <= 100


def test_run_writes_the_table_or_report(capsys, tmp_path):
    code, _ = run_json(capsys, "alexnet", "-o", str(tmp_path / "t.csv"))
    assert code == 0
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0].startswith("model,policy,iteration_time_ms") and len(lines) == 7
    code, _ = run_json(capsys, "alexnet", "-o", str(tmp_path / "t.txt"))
    assert code == 2


def test_generate_solve_and_validate(capsys, tmp_path):
    path = tmp_path / "inst.json"
    code, d = run_json(capsys, "generate", "--seed", "3", "-o", str(path))
    assert code == 0 and path.is_file()
    code, d = run_json(capsys, "solve", str(path), "-o", str(tmp_path / "timeline.csv"))
    assert code == 0
    assert d["status"] == "optimal" and d["gap"] == 0.0 and d["bound"] == d["objective"]
    assert (tmp_path / "timeline.csv").read_text().startswith("policy,resource,op")
    assert main(["validate", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True and report["kind"] == "comm-instance"
    code = main(["schema", "comm-instance"])
    assert code == 0 and "bandwidth_gbps" in capsys.readouterr().out


@pytest.mark.solver("highs", frontend="cvxpy")
def test_solve_with_the_lp(capsys, tmp_path):
    path = tmp_path / "inst.json"
    assert main(["pace", "generate", "--seed", "4", "--layers", "5", "-o", str(path)]) == 0
    capsys.readouterr()
    code, exact = run_json(capsys, "solve", str(path))
    code_lp, lp = run_json(capsys, "solve", str(path), "--method", "lp", "--time-limit", "3600")
    assert code == code_lp == 0
    assert lp["status"] == "optimal"
    assert lp["bound"] == pytest.approx(exact["objective"], rel=1e-6)


def test_sweep_writes_table_and_plot(capsys, tmp_path):
    out = tmp_path / "sweep.csv"
    code, d = run_json(
        capsys,
        "sweep",
        "resnet18",
        "alexnet",
        "--bandwidths",
        "1,10",
        "--workers",
        "4,8",
        "-o",
        str(out),
    )
    assert code == 0
    assert len(d["rows"]) == 8 and d["computed"] == 8
    for row in d["rows"]:
        assert row["speedup_vs_best_baseline"] >= 1 - REL
        assert row["pace"] >= row["lower_bound"] * (1 - REL)
    for key in ("csv", "markdown", "plot", "store"):
        assert (tmp_path / d["files"][key].split("/")[-1]).stat().st_size > 0
    lines = out.read_text().splitlines()
    assert len(lines) == 9 and lines[0].startswith("model,workers,bandwidth_gbps")
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    # A rerun reads every run from the store and writes the same table.
    code, again = run_json(
        capsys,
        "sweep",
        "resnet18",
        "alexnet",
        "--bandwidths",
        "1,10",
        "--workers",
        "4,8",
        "-o",
        str(out),
    )
    assert code == 0 and again["computed"] == 0 and again["rows"] == d["rows"]
    assert out.read_text().splitlines() == lines
    # Resuming with another shared parameter is refused, naming the flag.
    code, err = run_json(
        capsys,
        "sweep",
        "resnet18",
        "--bandwidths",
        "1",
        "--workers",
        "4",
        "--latency-us",
        "7",
        "-o",
        str(out),
    )
    assert code == 2 and err["field"] == "--latency-us"


def test_sweep_rejects_bad_lists(capsys, tmp_path):
    out = str(tmp_path / "s.csv")
    code, d = run_json(capsys, "sweep", "resnet18", "--bandwidths", "1,x", "-o", out)
    assert code == 2 and "--bandwidths" in d["message"]
    code, d = run_json(capsys, "sweep", "resnet18", "--workers", "2.5", "-o", out)
    assert code == 2 and "--workers" in d["message"]
    code, d = run_json(capsys, "sweep", "resnet18", "--bandwidths", "1,-2", "-o", out)
    assert code == 2 and "--bandwidths" in d["message"]
    code, d = run_json(capsys, "sweep", "resnet18", "-o", str(tmp_path / "s.json"))
    assert code == 2 and "--output" in d["message"]


def test_a_corrupt_or_forged_store_is_reported_not_trusted(capsys, tmp_path):
    import sqlite3

    out = tmp_path / "s.csv"
    args = ["sweep", "alexnet", "--bandwidths", "1,10", "--workers", "2", "-o", str(out)]
    code, d = run_json(capsys, *args)
    assert code == 0 and d["computed"] == 2
    store = out.with_suffix(".sqlite")
    with sqlite3.connect(store) as db:  # forge one record: its checksum no longer matches
        db.execute("UPDATE runs SET record = replace(record, '\"pace\":', '\"pace\":1e-9+')")
    code, d = run_json(capsys, *args)
    assert code == 2 and d["field"].startswith("runs[")
    store.write_bytes(b"not a database" * 100)
    code, d = run_json(capsys, *args)
    assert code == 2 and d["file"] == str(store)
