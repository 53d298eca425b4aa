"""Metrics against closed forms and direct recomputation; the plots draw."""

from __future__ import annotations

import numpy as np
import pytest
from strategies.sim import job_frame, one_gpu_world, synthetic_throughputs

from optsched.sim import ClusterSpec, GpuType, World, simulate
from optsched.sim.measure.metrics import job_metrics, run_metrics, utilization
from optsched.sim.policies import FIFO, SRTF
from optsched.tolerances import TIME_TOL, within


def test_one_job_alone_has_rho_one_and_no_wait() -> None:
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=2, gpus_per_server=2),))
    world = World.from_frame(
        job_frame([{"arrival": 4.0, "model": "A", "total_steps": 80.0, "num_gpus": 2}]),
        cluster,
        synthetic_throughputs(),
    )
    jobs = job_metrics(simulate(world, FIFO()))
    row = jobs.iloc[0]
    assert within(row["jct"], 80.0 / 4.0, TIME_TOL)
    assert row["queueing_delay"] == 0.0
    assert within(row["rho"], 1.0, TIME_TOL)
    assert within(row["isolated_jct"], row["jct"], TIME_TOL)
    assert within(row["gpu_seconds"], 2 * 20.0, TIME_TOL)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_fifo_identical_jobs_rho(n: int) -> None:
    """Job k (0-based) waits k D and sees on average N_k = sum_{i<=k} (n - i) / (k + 1) jobs.

    Its fair share of the one GPU is 1 / N_k, so rho_k = (k + 1) D / (N_k D).
    """
    d = 3.0
    jobs = job_metrics(simulate(one_gpu_world([d] * n), FIFO()))
    for k in range(n):
        nk = sum(n - i for i in range(k + 1)) / (k + 1)
        assert within(jobs["contention"][k], nk, TIME_TOL)
        assert within(jobs["rho"][k], (k + 1) / nk, TIME_TOL)
        assert within(jobs["queueing_delay"][k], k * d, TIME_TOL)


def test_run_metrics_recomputed() -> None:
    durations = [5.0, 1.0, 3.0, 8.0, 2.0]
    arrivals = [0.0, 1.0, 1.0, 2.0, 9.0]
    world = one_gpu_world(durations, arrivals)
    result = simulate(world, SRTF())
    jobs = job_metrics(result)
    m = run_metrics(result, jobs)
    jct = np.array(result.completion) - np.array(arrivals)
    assert within(m["jct_mean"], float(jct.mean()), TIME_TOL)
    assert within(m["jct_p95"], float(np.percentile(jct, 95)), TIME_TOL)
    assert within(m["gpu_hours"], sum(durations) / 3600, TIME_TOL)
    assert within(m["makespan"], max(result.completion) - 0.0, TIME_TOL)
    # the GPU is never idle while work is pending (arrivals come before the backlog clears)
    assert within(m["utilization_mean"], sum(durations) / m["makespan"], TIME_TOL)
    util = utilization(result)
    assert util["busy"].max() <= 1


def test_deadlines_met() -> None:
    world = World.from_frame(
        job_frame(
            [
                {"duration": 4.0, "deadline": 5.0},
                {"duration": 4.0, "deadline": 5.0},
                {"duration": 1.0},
            ]
        ),
        ClusterSpec(gpu_types=(GpuType(name="g", count=1, gpus_per_server=1),)),
    )
    result = simulate(world, FIFO())
    jobs = job_metrics(result)
    assert list(jobs["deadline_met"].astype(object)) == [True, False, None] or list(
        jobs["deadline_met"].fillna(False)
    ) == [True, False, False]
    m = run_metrics(result, jobs)
    assert (m["deadlines"], m["deadlines_met"]) == (2, 1)


def test_plots_return_figures() -> None:
    from matplotlib.figure import Figure

    from optsched.report.sim import plot_jct_cdf, plot_utilization

    world = one_gpu_world([5.0, 1.0, 3.0], [0.0, 1.0, 1.0])
    runs = {"fifo": simulate(world, FIFO()), "srtf": simulate(world, SRTF())}
    fig = plot_jct_cdf(runs, unit="s")
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].lines) == 2
    other = Figure()
    ax = other.add_subplot()
    assert plot_utilization(runs["fifo"], ax=ax, unit="s") is other


def test_rho_cdf_and_policy_bars_draw_what_they_are_given() -> None:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from optsched.report.sim import plot_policy_metric, plot_rho_cdf
    from optsched.sim.measure.metrics import job_metrics

    world = one_gpu_world([5.0, 1.0, 3.0], [0.0, 1.0, 1.0])
    runs = {"fifo": simulate(world, FIFO()), "srtf": simulate(world, SRTF())}
    fig = plot_rho_cdf(runs)
    lines = fig.axes[0].lines
    assert len(lines) == 3  # two runs and the rho = 1 marker
    # the step plot's x values are the sorted rho of the jobs
    rho = np.sort(job_metrics(runs["srtf"])["rho"].to_numpy(dtype=float))
    assert np.allclose(np.unique(lines[1].get_xdata()), np.unique(rho))
    table = pd.DataFrame({"policy": ["a", "b"], "jct_mean": [7200.0, 3600.0]})
    bars = plot_policy_metric(table, "jct_mean", scale=3600.0, ax=Figure().add_subplot())
    heights = [p.get_height() for p in bars.axes[0].patches]
    assert heights == [2.0, 1.0]
    with pytest.raises(KeyError, match="rho_max"):
        plot_policy_metric(table, "rho_max")


def _two_gpu_world(durations: list[float]) -> World:
    from strategies.sim import job_frame as frame

    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=2, gpus_per_server=2),))
    return World.from_frame(frame([{"arrival": 0.0, "duration": d} for d in durations]), cluster)


def test_ftf_rho_hand_computed() -> None:
    """Three 1-GPU jobs (4, 2, 2 s) at time 0 on 2 GPUs under FIFO.

    A and B start at 0, C at 2 when B ends. Active jobs: 3 on [0, 2), 2 on [2, 4).
    A: JCT 4, N = (3*2 + 2*2)/4 = 2.5, N/G = 1.25, fair = 4 * 1.25 = 5, rho = 0.8.
    B: JCT 2, N = 3, N/G = 1.5, fair = 2 * 1.5 = 3, rho = 2/3.
    C: JCT 4, N = 2.5, fair = 2 * 1.25 = 2.5, rho = 1.6.
    """
    result = simulate(_two_gpu_world([4.0, 2.0, 2.0]), FIFO())
    jobs = job_metrics(result)
    for k, (fair, rho) in enumerate([(5.0, 0.8), (3.0, 2.0 / 3.0), (2.5, 1.6)]):
        assert within(jobs["ftf_fair_jct"][k], fair, TIME_TOL), k
        assert within(jobs["ftf_rho"][k], rho, TIME_TOL), k
    m = run_metrics(result, jobs)
    assert within(m["ftf_rho_max"], 1.6, TIME_TOL)
    assert within(m["ftf_rho_mean"], (0.8 + 2.0 / 3.0 + 1.6) / 3, TIME_TOL)


def test_ftf_rho_ignores_the_gang_size_rho_does_not() -> None:
    """A 2-GPU job and a 1-GPU job, 2 s each, at 0 on 2 GPUs: FIFO runs the gang first.

    Gang: JCT 2 = T_iso, N = 2 = G, so ftf_rho = 1; its Gavel-style share is
    x = G / (N n) = 1/2 of its gang, fair-share JCT 4 and rho = 1/2.
    """
    from strategies.sim import job_frame as frame

    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=2, gpus_per_server=2),))
    rows = [
        {"arrival": 0.0, "duration": 2.0, "num_gpus": 2},
        {"arrival": 0.0, "duration": 2.0, "num_gpus": 1},
    ]
    jobs = job_metrics(simulate(World.from_frame(frame(rows), cluster), FIFO()))
    assert within(jobs["jct"][0], 2.0, TIME_TOL)
    assert within(jobs["ftf_rho"][0], 1.0, TIME_TOL)
    assert within(jobs["rho"][0], 0.5, TIME_TOL)


def test_ftf_rho_factor_clamped_at_one() -> None:
    """Fewer jobs than GPUs: the contention factor is 1, so a job that never waits has rho 1."""
    jobs = job_metrics(simulate(_two_gpu_world([3.0, 5.0]), FIFO()))
    assert np.allclose(jobs["ftf_rho"].to_numpy(dtype=float), 1.0)
