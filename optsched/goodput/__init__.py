"""The goodput world's job model: Pollux's throughput, statistical efficiency and goodput.

A job's *goodput* is its throughput (samples per second) times its statistical efficiency (what
one sample at its current batch size is worth against one at its initial batch), after Qiao et
al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning", OSDI 2021.

=======================================  ===========================================================
module                                   idea
=======================================  ===========================================================
:mod:`~optsched.goodput.throughput`      time per iteration from compute and all-reduce times
:mod:`~optsched.goodput.fit`             fitting those parameters to measured step times
:mod:`~optsched.goodput.efficiency`      statistical efficiency from the gradient noise scale
:mod:`~optsched.goodput.goodput`         goodput = throughput x efficiency
:mod:`~optsched.goodput.batch`           each job's best batch size and accumulation for an
                                         allocation
:mod:`~optsched.goodput.speedup`         a job's speedup table: best goodput on (N, K) over on one
                                         GPU
:mod:`~optsched.goodput.traces`          the artifact's per-model measurements (reader, writer)
:mod:`~optsched.goodput.workload`        the artifact's workload CSVs (reader, writer)
:mod:`~optsched.goodput.artifact`        where the artifact's folder is; all its job types and
                                         workloads
:mod:`~optsched.goodput.progress`        progress in efficiency-weighted iterations, by epoch
:mod:`~optsched.goodput.job`             one job advanced over an interval, as Pollux's simulator
                                         does
:mod:`~optsched.goodput.agent`           Pollux's per-job agent: profile, refit, batch choice
:mod:`~optsched.goodput.decision`        what a policy sees at a decision and the allocation it
                                         returns
:mod:`~optsched.goodput.cluster`         the artifact's interval loop on a cluster, any policy
:mod:`~optsched.goodput.record`          a run's record: allocation segments, JCT, makespan, GPU-
                                         hours
:mod:`~optsched.goodput.validate`        the independent validator of a run's record
:mod:`~optsched.goodput.cluster_jobs`    how each kind of job (adaptive, rigid, fixed batch) is
                                         built
:mod:`~optsched.goodput.policies`        Pollux's genetic algorithm; the artifact's Tiresias and
                                         Optimus+Oracle baselines
:mod:`~optsched.goodput.round_model`     one round of Pollux's problem: the value the GA maximizes
:mod:`~optsched.goodput.round_exact`     that round's exact optimum (a MILP over configurations)
:mod:`~optsched.goodput.round_validate`  that round's validator, one check per constraint
:mod:`~optsched.goodput.round_workload`  rounds built from the artifact's workloads and traces
:mod:`~optsched.goodput.sia_instance`    Sia's round: configurations on several GPU types
:mod:`~optsched.goodput.sia_ilp`         Sia's round ILP: exact solve (HiGHS, SCIP) and validator
=======================================  ===========================================================
"""

from __future__ import annotations

from optsched.goodput.batch import BatchChoice, BatchLimits, best_batch, split_batch
from optsched.goodput.efficiency import GradientStats, efficiency, gain, noise_scale
from optsched.goodput.fit import StepMeasurements, fit_throughput
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.throughput import ThroughputParams, iteration_time, throughput

__all__ = [
    "BatchChoice",
    "BatchLimits",
    "GoodputModel",
    "GradientStats",
    "StepMeasurements",
    "ThroughputParams",
    "best_batch",
    "efficiency",
    "fit_throughput",
    "gain",
    "iteration_time",
    "noise_scale",
    "split_batch",
    "throughput",
]
