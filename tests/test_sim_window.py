"""The steady-state window (Gavel's -s/-e): metrics over the jobs of arrival index [start, end)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from strategies.sim import one_gpu_world

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.sim import simulate
from optsched.sim.comparison import compare
from optsched.sim.measure.metrics import job_metrics, parse_window, run_metrics
from optsched.sim.policies import FIFO
from optsched.tolerances import TIME_TOL, within

DURATIONS = [1.0, 2.0, 3.0, 4.0]


def test_window_keeps_the_jobs_of_its_arrival_indices() -> None:
    """FIFO on one GPU, all at 0: completions 1, 3, 6, 10. Window [1, 3) keeps jobs 1 and 2."""
    result = simulate(one_gpu_world(DURATIONS), FIFO())
    whole = run_metrics(result)
    m = run_metrics(result, window=(1, 3))
    assert m["jobs"] == 2 and m["finished"] == 2 and m["window"] == [1, 3]
    assert within(m["jct_mean"], (3.0 + 6.0) / 2, TIME_TOL)
    assert within(m["makespan"], 6.0 - 0.0, TIME_TOL)
    assert within(m["queueing_delay_mean"], (1.0 + 3.0) / 2, TIME_TOL)
    assert within(m["gpu_hours"], (2.0 + 3.0) / 3600, TIME_TOL)
    jobs = job_metrics(result)
    assert within(m["rho_max"], float(jobs["rho"][1:3].max()), TIME_TOL)
    assert within(m["ftf_rho_max"], float(jobs["ftf_rho"][1:3].max()), TIME_TOL)
    # the cluster figures stay whole-run
    assert within(m["utilization_mean"], whole["utilization_mean"], TIME_TOL)
    assert "window" not in whole and whole["jobs"] == 4
    # an open end runs to the last job
    tail = run_metrics(result, window=(2, None))
    assert tail["jobs"] == 2 and within(tail["jct_mean"], (6.0 + 10.0) / 2, TIME_TOL)
    # the whole range is the unwindowed run
    full = run_metrics(result, window=(0, 4))
    assert within(full["jct_mean"], whole["jct_mean"], TIME_TOL)


@pytest.mark.parametrize(
    ("text", "expected"), [("1:3", (1, 3)), ("5:", (5, None)), (":2", (0, 2)), (" 0:9 ", (0, 9))]
)
def test_parse_window(text: str, expected: tuple[int, int | None]) -> None:
    assert parse_window(text) == expected


@pytest.mark.parametrize("text", ["3", "1:2:3", "a:b", "3:3", "4:2", "-1:2", "1.5:3"])
def test_parse_window_refuses_naming_the_field(text: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        parse_window(text, field="--window")
    assert err.value.field == "--window"


def test_a_window_past_the_last_job_is_refused() -> None:
    result = simulate(one_gpu_world(DURATIONS), FIFO())
    for bad in ((4, None), (2, 1), (True, 3)):
        with pytest.raises(InvalidInstanceError) as err:
            run_metrics(result, window=bad)  # type: ignore[arg-type]
        assert err.value.field == "window"


def test_compare_with_a_window() -> None:
    world = one_gpu_world(DURATIONS)
    comp = compare(world, ["fifo", "srtf"], window=(1, 3))
    frame = comp.to_frame()
    assert list(frame["finished"]) == [2, 2]
    assert comp.to_dict()["window"] == [1, 3]
    assert np.allclose(frame["jct_mean"].to_numpy(dtype=float), [4.5, 4.5])


def test_cli_run_compare_and_sweep_take_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    trace = tmp_path / "t.csv"
    trace.write_text(header + "".join(f"j{k},0,1,,,{d},,1,,u\n" for k, d in enumerate(DURATIONS)))
    base = [str(trace), "--cluster", "g=1", "--window", "1:3", "--json"]
    assert main(["sim", "run", *base, "--policy", "fifo"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["window"] == [1, 3] and out["metrics"]["jobs"] == 2
    assert within(out["metrics"]["jct_mean"], 4.5, TIME_TOL)
    # both fairness measures are printed, distinctly named (one GPU: ftf_rho = JCT / (T_iso N))
    assert {"rho_max", "ftf_rho_max", "ftf_rho_mean"} <= set(out["metrics"])
    assert main(["sim", "compare", *base, "--policies", "fifo"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["window"] == [1, 3] and out["policies"][0]["finished"] == 2
    assert isinstance(out["policies"][0]["ftf_rho_max"], float)
    code = main(["sim", "sweep", *base, "--policies", "fifo", "--backend", "serial"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"][0]["jobs"] == 2 and out["rows"][0]["window"] == [1, 3]
    # a window past the trace names the flag
    assert main(["sim", "run", str(trace), "--cluster", "g=1", "--window", "7:", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--window"
