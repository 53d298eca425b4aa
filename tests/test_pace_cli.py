"""``optsched pace``: the JSON contract, errors, and the sweep's files."""

from __future__ import annotations

import itertools
import json

import pytest

from optsched.cli import main
from optsched.comm.generate import random_profile

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
    ("args", "field"),
    [
        (["resnet18", "--workers", "0"], "workers"),
        (["resnet18", "--bandwidth", "0"], "bandwidth_gbps"),
        (["resnet18", "--latency-us", "-1"], "latency_us"),
        (["resnet18", "--partition-mb", "-2"], "p3.slice_mb"),
        (["resnet18", "--order", "bfs"], "order"),
        (["no_such_model"], "model"),
    ],
)
def test_bad_input_exits_2_naming_the_field(capsys, args, field):
    code, d = run_json(capsys, *args)
    assert code == 2
    assert d["field"] == field


def test_human_output_goes_to_stderr(capsys):
    assert main(["pace", "resnet18", "--workers", "4"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "lower bound" in captured.err


def test_sweep_writes_table_and_plot(capsys, tmp_path):
    code, d = run_json(
        capsys,
        "sweep",
        "resnet18",
        "alexnet",
        "--bandwidths",
        "1,10",
        "--workers",
        "4,8",
        "--out",
        str(tmp_path),
    )
    assert code == 0
    assert len(d["rows"]) == 8
    for row in d["rows"]:
        assert row["speedup_vs_best_baseline"] >= 1 - REL
        assert row["pace"] >= row["lower_bound"] * (1 - REL)
    for key in ("csv", "markdown", "plot"):
        assert (tmp_path / d["files"][key].split("/")[-1]).stat().st_size > 0
    lines = (tmp_path / "pace_sweep.csv").read_text().splitlines()
    assert len(lines) == 9 and lines[0].startswith("model,workers,bandwidth_gbps")
    assert (tmp_path / "pace_sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_rejects_bad_lists(capsys, tmp_path):
    code, d = run_json(capsys, "sweep", "resnet18", "--bandwidths", "1,x", "--out", str(tmp_path))
    assert code == 2 and d["field"] == "bandwidths"
    code, d = run_json(capsys, "sweep", "resnet18", "--workers", "2.5", "--out", str(tmp_path))
    assert code == 2 and d["field"] == "workers"
