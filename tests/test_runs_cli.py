"""The sweep commands on worker processes give the records of the serial sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.cli import main

RATIO = ["oasis", "ratio", "--instances", "3", "--jobs", "4", "--horizon", "5"]
RATIO += ["--worker-servers", "2", "--ps-servers", "1", "--seed", "4", "--json"]


@pytest.mark.solver("highs")
def test_ratio_on_two_processes_equals_the_serial_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*RATIO, "-o", str(tmp_path / "serial")]) == 0
    serial = json.loads(capsys.readouterr().out)
    assert main([*RATIO, "-o", str(tmp_path / "par"), "--workers", "2"]) == 0
    parallel = json.loads(capsys.readouterr().out)
    assert parallel["records"] == serial["records"]
    assert [r["seed"] for r in parallel["records"]] == [4, 5, 6]
    table = (tmp_path / "par" / "table.md").read_text(encoding="utf-8")
    assert table == (tmp_path / "serial" / "table.md").read_text(encoding="utf-8")
    assert main([*RATIO, "-o", str(tmp_path / "par"), "--workers", "0"]) == 2
    assert "--workers" in json.loads(capsys.readouterr().out)["message"]


def test_sim_sweep_names_a_bad_worker_count(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sim", "sweep", "synthetic:3", "--cluster", "v100=2", "--policies", "fifo", "--json"]
    assert main([*args, "-j", "0"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--n-jobs"
    assert main([*args, "--backend", "serial"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1
