"""``optsched trace info`` / ``convert``: one JSON object on stdout, exit 2 naming file/row/column,
and a summary checked against counts computed independently from the file."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.traces import read_trace

DATA = Path(__file__).resolve().parent / "data" / "traces"
_ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p / "shared" / "data" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared").is_dir()),
    _ROOT.parent / "shared" / "data",
)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _independent(path: Path) -> tuple[int, Counter[str], float]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    demand = Counter(r["num_gpu"] for r in rows)
    gpu_hours = sum(int(r["num_gpu"]) * float(r["duration"]) for r in rows) / 3600
    return len(rows), demand, gpu_hours


def test_info_json_on_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "elasticflow" / "cluster10_head40.csv"
    code, out, _ = _run(capsys, "trace", "info", str(path), "--json")
    assert code == 0
    report = json.loads(out)
    n, demand, gpu_hours = _independent(path)
    assert report["jobs"] == n == 40
    assert report["gpu_demand"] == dict(sorted(demand.items(), key=lambda kv: int(kv[0])))
    assert report["gpu_hours"] == pytest.approx(gpu_hours, rel=1e-12)
    with open(path, newline="") as fh:
        times = [float(r["submission_time"]) for r in csv.DictReader(fh)]
    assert report["span"] == max(times) - min(times)
    assert report["columns"]["num_gpus"]["max"] == max(int(k) for k in demand)
    with open(path, newline="") as fh:
        models = {r["model_name"] for r in csv.DictReader(fh)}
    assert report["columns"]["model"]["distinct"] == len(models)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the shared trace data ({SHARED}) is not present")
def test_info_cluster10_reports_260_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    path = SHARED / "elasticflow" / "cluster10.csv"
    code, out, _ = _run(capsys, "trace", "info", str(path), "--json")
    assert code == 0
    report = json.loads(out)
    n, demand, gpu_hours = _independent(path)
    assert report["jobs"] == n == 260
    assert sum(report["gpu_demand"].values()) == sum(demand.values())
    assert report["gpu_hours"] == pytest.approx(gpu_hours, rel=1e-12)


def test_info_human_output_goes_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "trace", "info", str(DATA / "schema" / "helios_cluster_log.csv"))
    assert code == 0 and err == ""
    assert "3 jobs" in out and "skipped 1 rows: gpu_num 0" in out


def test_bad_row_exits_2_naming_file_row_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = (DATA / "elasticflow" / "cluster10_head40.csv").read_text().splitlines()
    parts = lines[7].split(",")
    parts[6] = "-4"  # num_gpu
    lines[7] = ",".join(parts)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    code, out, err = _run(capsys, "trace", "info", str(bad), "--json")
    assert code == 2
    payload = json.loads(out)
    assert payload["file"] == str(bad) and payload["row"] == 8 and payload["field"] == "num_gpu"
    code, out, err = _run(capsys, "trace", "info", str(bad))
    assert code == 2 and "row 8: num_gpu" in err and out == ""


def test_convert_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = DATA / "gavel" / "physical_cluster_small_test.trace"
    out_path = tmp_path / "small.csv"
    code, out, _ = _run(capsys, "trace", "convert", str(src), str(out_path), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["jobs"] == 20 and report["format"] == "gavel"
    assert read_trace(out_path).equals(read_trace(src))
    code, out, _ = _run(capsys, "trace", "info", str(out_path), "--json")
    assert json.loads(out)["format"] == "optsched"


def test_convert_refuses_other_extension_and_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = DATA / "schema" / "tiresias_jobs.csv"
    code, _, _ = _run(capsys, "trace", "convert", str(src), str(tmp_path / "x.json"))
    assert code == 2 and not (tmp_path / "x.json").exists()
    code, out, _ = _run(
        capsys, "trace", "convert", str(src), str(tmp_path / "x.csv"), "--format", "zzz", "--json"
    )
    assert code == 2 and json.loads(out)["field"] == "format"


def test_pai_job_with_tasks_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text((DATA / "schema" / "pai_job_table.csv").read_text())
    code, out, _ = _run(capsys, "trace", "info", str(jobs), "--json")
    assert code == 2 and json.loads(out)["field"] == "tasks"
    tasks = DATA / "schema" / "pai_task_table.csv"
    code, out, _ = _run(capsys, "trace", "info", str(jobs), "--tasks", str(tasks), "--json")
    assert code == 0 and json.loads(out)["jobs"] == 3
