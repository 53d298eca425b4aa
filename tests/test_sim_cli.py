"""``optsched sim``: metrics on a normalized CSV, field-named errors, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.cli import main

HEADER = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"


def _trace(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + body)
    return path


_capsys: list[pytest.CaptureFixture[str]] = []


@pytest.fixture(autouse=True)
def _capture(capsys: pytest.CaptureFixture[str]) -> None:
    _capsys[:] = [capsys]


def _run(*args: str) -> tuple[int, dict[str, object]]:
    code = main(["sim", *args, "--json"])
    out, _ = _capsys[0].readouterr()
    return code, json.loads(out)


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias-las", "gandiva"])
def test_run_prints_metrics(tmp_path: Path, policy: str) -> None:
    trace = _trace(tmp_path, "a,0,1,resnet50,,100,64,1,,u\nb,5,2,,,50,,1,200,u\nc,5,1,,,10,,2,,v\n")
    code, out = _run("run", str(trace), "--cluster", "v100=2", "--policy", policy)
    assert code == 0
    assert out["valid"] is True
    metrics = out["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["finished"] == 3 and metrics["jct_mean"] > 0


def test_run_writes_job_metrics(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "a,0,1,,,10,,1,,u\n")
    out = tmp_path / "jobs.csv"
    assert main(["sim", "run", str(trace), "--cluster", "g=1", "-o", str(out)]) == 0
    assert "jct" in out.read_text().splitlines()[0]


@pytest.mark.parametrize(
    ("body", "args", "field"),
    [
        ("a,0,x,,,10,,1,,u\n", ["--cluster", "v100=2"], "num_gpus"),
        ("a,0,4,,,10,,1,,u\n", ["--cluster", "v100=2"], "num_gpus"),
        ("a,0,1,,,10,,1,,u\n", ["--cluster", "v100"], "--cluster[0]"),
        ("a,0,1,,,10,,1,,u\n", ["--cluster", "v100=2", "--policy", "nope"], "--policy"),
        (
            "a,0,1,,,10,,1,,u\n",
            ["--cluster", "v100=2", "--restore-seconds", "-1"],
            "--restore-seconds",
        ),
        (
            "a,0,1,,,10,,1,,u\n",
            ["--cluster", "v100=2", "--restore-seconds", "5", "--round-seconds", "2"],
            "--round-seconds",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_field(
    tmp_path: Path, body: str, args: list[str], field: str
) -> None:
    code, out = _run("run", str(_trace(tmp_path, body)), *args)
    assert code == 2
    assert out["field"] == field


def test_bad_row_names_the_line(tmp_path: Path) -> None:
    code, out = _run(
        "run", str(_trace(tmp_path, "a,0,1,,,10,,1,,u\nb,-3,1,,,10,,1,,u\n")), "--cluster", "g=1"
    )
    assert code == 2
    assert (out["field"], out["row"]) == ("arrival", 3)


def test_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,arrival\na,0\n")
    code, out = _run("run", str(path), "--cluster", "g=1")
    assert code == 2 and out["field"] == "num_gpus"


def test_policies_lists_names() -> None:
    code, out = _run("policies")
    assert code == 0 and "tiresias-las" in out["policies"]  # type: ignore[operator]


def test_a_run_with_unfinished_jobs_exits_3_with_its_metrics(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "a,0,1,,,2,,1,,u\nb,0,1,,,10,,1,,u\n")
    code, out = _run("run", str(trace), "--cluster", "g=1", "--policy", "fifo", "--max-time", "5")
    assert code == 3
    assert out["valid"] is True and out["status"] == "truncated" and out["unfinished"] == 1
    metrics = out["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["unfinished"] == 1 and metrics["finished"] == 1


def test_a_run_with_unfinished_jobs_still_prints_its_table(tmp_path: Path) -> None:
    trace = _trace(tmp_path, "a,0,1,,,10,,1,,u\n")
    code = main(["sim", "run", str(trace), "--cluster", "g=1", "--max-time", "5"])
    out, err = _capsys[0].readouterr()
    assert code == 3
    # the table is the result (stdout); the warning a diagnostic (stderr)
    assert "jct_mean" in out and "did not finish" in err


@pytest.mark.parametrize(("flag", "jct"), [([], 10.0), (["--restore-on-first-start"], 15.0)])
def test_restore_on_first_start(tmp_path: Path, flag: list[str], jct: float) -> None:
    trace = _trace(tmp_path, "a,0,1,,,10,,1,,u\n")
    code, out = _run("run", str(trace), "--cluster", "g=1", "--restore-seconds", "5", *flag)
    assert code == 0 and out["valid"] is True
    assert out["restore_on_first_start"] is bool(flag)
    metrics = out["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["jct_mean"] == pytest.approx(jct)
