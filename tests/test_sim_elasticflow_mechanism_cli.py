"""``--mechanism elasticflow`` on the command line, the ``--elastic`` clamp, where rounds fall."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from strategies.sim import job_frame

from optsched.cli import main
from optsched.sim import ClusterSpec, GpuType, SimResult, World, simulate, validate
from optsched.sim.comparison import world_from_trace
from optsched.traces import read_trace

EF_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
# bert at batch 128 on A100 (ElasticFlow's measured points, GPUs 1..64)
BERT = "global_batch_size,1,2,4,8,16,32,64\n128,3.57,5.68,8.45,9.99,10.77,10.71,9.44\n"


def _ef_inputs(tmp_path: Path) -> tuple[Path, Path]:
    profiles = tmp_path / "throughputs_A100"
    profiles.mkdir()
    (profiles / "bert.csv").write_text(BERT)
    trace = tmp_path / "c.csv"
    # A: 3000 iterations by +1000 s (fine on a few GPUs); B: 10000 by +60 s (impossible)
    trace.write_text(
        EF_HEADER
        + "A,2266647,3000,bert,2267647,128,16,600\n"
        + "B,2266700,10000,bert,2266760,128,16,900\n"
    )
    return trace, profiles


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_sim_run_mechanism_elasticflow_declines_and_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, profiles = _ef_inputs(tmp_path)
    base = ["sim", "run", str(trace), "--cluster", "a100=16:8", "--throughputs", str(profiles)]
    code, out = _json(capsys, *base, "--policy", "elasticflow", "--mechanism", "elasticflow")
    # B is declined: not an unfinished run (exit 0), and ElasticFlow's count says missed
    assert code == 0 and out["valid"] is True
    m = out["metrics"]
    assert isinstance(m, dict)
    assert (m["deadlines"], m["deadlines_met_admitted"], m["deadlines_declined"]) == (2, 1, 1)
    code, out = _json(capsys, *base, "--policy", "fifo", "--mechanism", "elasticflow")
    assert code == 2 and out["field"] == "--mechanism"


def test_sim_compare_mechanism_elasticflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, profiles = _ef_inputs(tmp_path)
    code = main(
        [
            "sim",
            "compare",
            str(trace),
            "--cluster",
            "a100=16:8",
            "--throughputs",
            str(profiles),
            "--policies",
            "elasticflow,edf",
            "--mechanism",
            "elasticflow-no-overhead",
        ]
    )
    captured = capsys.readouterr()
    text = captured.out + captured.err  # the table goes to stderr
    assert code == 0
    assert "declined" in text and "late" in text


def test_elastic_factor_above_the_cluster_is_clamped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, profiles = _ef_inputs(tmp_path)
    code = main(
        [
            "sim",
            "run",
            str(trace),
            "--cluster",
            "a100=16:8",
            "--throughputs",
            str(profiles),
            "--policy",
            "edf-elastic",
            "--elastic",
            "64",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "clamped to 16" in captured.err
    assert json.loads(captured.out)["valid"] is True


# --- where rounds fall ---------------------------------------------------------------------


def _hand_world(arrival: float) -> World:
    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=1, gpus_per_server=1),))
    frame = job_frame([{"job_id": "a", "arrival": arrival, "duration": 30.0}])
    return World.from_frame(frame, cluster)


def test_rounds_fall_on_the_worlds_grid_from_zero() -> None:
    """One story: decisions at k L of the world's clock. A hand-built world whose job arrives
    at 45 s (L = 60) first decides at 60, and the validator reads the same grid: a record
    starting the job at 120 while the GPU sat free at 60 is flagged by a work-conserving
    claim; the engine's own record (start at 60) is not."""
    world = _hand_world(45.0)
    res = simulate(world, "fifo-backfill", round_seconds=60.0)
    assert res.first_start == [60.0] and res.completion == [90.0]
    assert res.extra["work_conserving"] is True
    validate(world, res).raise_if_invalid()
    late = SimResult(
        world=world,
        policy="fifo-backfill",
        round_seconds=60.0,
        intervals={
            "job_id": ["a"],
            "gpu_type": ["gpu"],
            "server": [0],
            "gpus": [1],
            "start": [120.0],
            "end": [150.0],
            "shared_with": [""],
            "ps_servers": [""],
        },
        completion=[150.0],
        first_start=[120.0],
        end_time=150.0,
        extra={"work_conserving": True},
    )
    report = validate(world, late)
    assert [v.constraint for v in report.violations] == ["work_conserving"]


def test_a_trace_world_starts_its_rounds_with_the_first_job(tmp_path: Path) -> None:
    """A trace's world is rebased: cluster 10's first job (arrival 2,266,647 s) starts at once
    on an empty cluster, not at the next multiple of 60 s of the trace's clock."""
    trace = tmp_path / "c.csv"
    trace.write_text(EF_HEADER + "A,2266647,3000,bert,2267647,128,1,600\n")
    world = world_from_trace(read_trace(trace), "gpu=1", "uniform")
    assert world.jobs[0].arrival == 0.0
    res = simulate(world, "fifo", round_seconds=60.0)
    assert res.first_start == [0.0] and not math.isnan(res.completion[0])
