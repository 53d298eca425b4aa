"""The independent validator: every policy's run passes; every kind of broken run is caught."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.tensorlights import instances, job, make

from optsched.comm.tensorlights import ALGORITHMS, SimulationResult, run, simulate, validate


@settings(max_examples=40)
@given(
    inst=instances(),
    algorithm=st.sampled_from(sorted(ALGORITHMS)),
    jitter=st.sampled_from([0.0, 0.3]),
    engine=st.sampled_from(["numba", "python"]),
)
def test_every_policy_run_validates_with_its_objectives(inst, algorithm, jitter, engine):
    res = run(inst, algorithm, jitter=jitter, engine=engine, seed=2)
    report = validate(inst, res)
    assert report.ok, report.violations
    assert report.objectives["mean-jct"] == pytest.approx(res.mean_jct, rel=1e-12)
    assert report.objectives["weighted-jct"] == pytest.approx(res.weighted_jct, rel=1e-12)
    assert report.objectives["makespan"] == pytest.approx(res.makespan, rel=1e-12)
    assert report.objective == report.objectives["mean-jct"]


def _base() -> tuple:
    """Two hosts; job 0 (shard on host 0) computes between broadcasts, job 1 has two shards."""
    inst = make(
        [1.0, 2.0],
        [job(2.0, 2, 1.0, 3, hosts=(0,)), job(3.0, 1, 0.5, 2, hosts=(0, 1)), job(1.0, 1, 0, 2)],
    )
    res = simulate(inst, "rotate", rotation_period=0.7)
    assert validate(inst, res).ok
    return inst, res


def _with_trace(res: SimulationResult, **changes: np.ndarray) -> SimulationResult:
    assert res.trace is not None
    return dataclasses.replace(res, trace=dataclasses.replace(res.trace, **changes))


def _constraints(inst, res) -> set[str]:
    report = validate(inst, res)
    assert not report.ok
    return {v.constraint for v in report.violations}


def _busy_segment(res: SimulationResult, j: int, h: int) -> int:
    return int(np.nonzero(res.trace.job_rate[:, j, h] > 0)[0][0])


def test_over_capacity_is_caught():
    inst, res = _base()
    rate, used = res.trace.job_rate.copy(), res.trace.used.copy()
    s = _busy_segment(res, 0, 0)
    rate[s, 0, 0] *= 2
    used[s, 0] = rate[s, :, 0].sum()
    assert "nic_capacity" in _constraints(inst, _with_trace(res, job_rate=rate, used=used))


def test_host_totals_that_are_not_the_sum_of_job_rates_are_caught():
    inst, res = _base()
    used = res.trace.used.copy()
    used[0, 0] += 0.5
    assert _constraints(inst, _with_trace(res, used=used)) == {"host_total"}


def test_sending_from_a_host_without_a_shard_is_caught():
    inst, res = _base()
    rate = res.trace.job_rate.copy()
    s = _busy_segment(res, 0, 0)
    rate[s, 0, 1], rate[s, 0, 0] = rate[s, 0, 0], 0.0
    assert "wrong_host" in _constraints(inst, _with_trace(res, job_rate=rate))


def test_sending_during_a_compute_phase_is_caught():
    inst, res = _base()
    times = res.trace.times
    # A segment inside job 0's first compute phase [0, 1): job 0 must not send there.
    s = int(np.nonzero(times[1:] <= 1.0)[0][0])
    rate = res.trace.job_rate.copy()
    rate[s, 0, 0] = 1e-3
    assert "idle_sending" in _constraints(inst, _with_trace(res, job_rate=rate))


def test_an_idle_host_with_unfinished_flows_is_caught():
    inst, res = _base()
    rate, used = res.trace.job_rate.copy(), res.trace.used.copy()
    s = _busy_segment(res, 0, 0)
    rate[s, :, 0] *= 0.5  # host 0 sends at half rate although a flow is unfinished
    used[s, 0] = rate[s, :, 0].sum()
    found = _constraints(inst, _with_trace(res, job_rate=rate, used=used))
    assert "work_conservation" in found


def test_missing_bytes_are_caught():
    inst, res = _base()
    rate = res.trace.job_rate.copy()
    rate[:, 1, 1] *= 0.5  # job 1's shard on host 1 sends half its bytes
    assert "broadcast_bytes" in _constraints(inst, _with_trace(res, job_rate=rate))


def test_a_broadcast_starting_early_is_caught():
    inst, res = _base()
    starts = res.comm_start.copy()
    starts[0, 1] -= 0.25
    assert "compute_phase" in _constraints(inst, dataclasses.replace(res, comm_start=starts))


def test_flows_ending_after_their_iteration_are_caught():
    inst, res = _base()
    finish = res.flow_finish.copy()
    finish[0, 0] = res.iteration_end[0, 0] + 1.0
    assert "flow_finish" in _constraints(inst, dataclasses.replace(res, flow_finish=finish))


def test_an_iteration_ending_after_its_last_flow_is_caught():
    inst, res = _base()
    finish = res.flow_finish.copy()
    finish[0, 0:2] -= 0.1  # both flows of job 0's first broadcast end 0.1 s before it does
    assert "flow_finish" in _constraints(inst, dataclasses.replace(res, flow_finish=finish))


def test_wrong_reported_completions_and_objectives_are_caught():
    inst, res = _base()
    completion = res.completion.copy()
    completion[2] += 1.0
    assert "completion" in _constraints(inst, dataclasses.replace(res, completion=completion))
    jct = res.jct.copy()
    jct[1] -= 0.5
    assert "completion" in _constraints(inst, dataclasses.replace(res, jct=jct))


def test_time_running_backwards_and_negative_rates_are_caught():
    inst, res = _base()
    times = res.trace.times.copy()
    times[2], times[3] = times[3], times[2]
    assert "trace_times" in _constraints(inst, _with_trace(res, times=times))
    rate = res.trace.job_rate.copy()
    rate[0, 0, 0] = -1.0
    assert "rate_sign" in _constraints(inst, _with_trace(res, job_rate=rate))
    rate[0, 0, 0] = np.nan
    assert "rate_sign" in _constraints(inst, _with_trace(res, job_rate=rate))


def test_a_run_without_trace_or_of_another_instance_is_caught():
    inst, res = _base()
    assert _constraints(inst, dataclasses.replace(res, trace=None)) == {"trace"}
    other = make([1.0], [job(1.0, 1, 0.0, 1)])
    assert _constraints(other, res) == {"shape"}


def test_report_is_json_ready_and_reprs_are_short():
    inst, res = _base()
    report = validate(inst, res)
    data = report.to_dict()
    assert data["valid"] is True and len(data["completion"]) == inst.n_jobs
    assert len(repr(res)) < 200 and len(repr(res.trace)) < 100 and len(repr(inst)) < 80
    assert "<table>" in res._repr_html_() and "TensorLightsInstance" in inst._repr_html_()
    assert "NicTrace" in res.trace._repr_html_()


def test_frames():
    inst, res = _base()
    jobs = res.to_frame()
    assert list(jobs["job"]) == list(inst.job_names())
    assert jobs["jct"].to_numpy() == pytest.approx(res.jct)
    hosts = res.trace.to_frame()
    assert len(hosts) == res.trace.n_segments * inst.n_hosts
    # Bytes per host, from the interval rows, equal what the instance owes.
    sent = (hosts["rate"] * (hosts["end"] - hosts["start"])).groupby(hosts["host"]).sum()
    assert sent.to_numpy() == pytest.approx(inst.host_bytes(), rel=1e-9)
    per_job = res.trace.to_frame(by="job")
    assert set(per_job.columns) == {"segment", "start", "end", "job", "host", "rate"}
    by_job = (per_job["rate"] * (per_job["end"] - per_job["start"])).groupby(per_job["job"]).sum()
    owed = [j.iterations * j.workers * j.message_bytes for j in inst.jobs]
    assert by_job[list(inst.job_names())].to_numpy() == pytest.approx(owed, rel=1e-9)
