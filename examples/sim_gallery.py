"""The figures of a simulator study: JCT CDFs, average JCT against load, fairness CDF.

A small study declared in code (the same fields as an experiment file,
``examples/experiments/*.toml``): four policies (FIFO, SRTF, Tiresias-LAS and Gavel's max-min
fairness LP) on a generated trace of 16 jobs, on a cluster of 8 V100 and 8 P100 GPUs, with three
seeds at three loads (the arrival rate times 0.5, 1 and 2). It prints the per-policy summary
(means and 95% confidence intervals across seeds) and draws the figures Gavel's notebooks show:
the JCT CDF at the trace's load, the average JCT against the load, and the CDF of finish-time
fairness :math:`\\rho`. ``optsched sim report STORE`` writes the same figures as a report.

Run: python examples/sim_gallery.py
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from optsched.report.sweep import plot_jct_vs_load, plot_sweep_cdf
from optsched.runs.experiment import Experiment, run_experiment

experiment = Experiment(
    name="gallery",
    traces=["synthetic:16"],
    clusters=["v100=8,p100=8"],
    policies=["fifo", "srtf", "tiresias-las", "max-min"],
    seeds=[0, 1, 2],
    loads=[0.5, 1.0, 2.0],
    round_seconds=360.0,
)
result = run_experiment(experiment, backend="serial")

summary = result.to_frame()
columns = ["load", "policy", "jct_mean_mean", "jct_mean_ci", "rho_max_mean", "makespan_mean"]
print(summary[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}"))

fig, ax = plt.subplots()
plot_sweep_cdf(result, kind="jct", load=1.0, ax=ax)
ax.set_title("JCT CDF at the trace's load (3 seeds pooled)")

fig, ax = plt.subplots()
plot_jct_vs_load(result, ax=ax)
ax.set_title("average JCT against the load (mean and 95% CI over seeds)")

fig, ax = plt.subplots()
plot_sweep_cdf(result, kind="rho", load=2.0, ax=ax)
ax.set_title("finish-time fairness at twice the load")

if __name__ == "__main__" and plt.get_backend().lower() != "agg":
    plt.show()
