"""Sia's heterogeneity-unaware Pollux baseline in the heterogeneous goodput world.

The tiny world has two GPU types of different node sizes (two nodes of 2 "fast" GPUs, two nodes
of 4 "slow" ones, the slow type's step times doubled), so that the policy's virtual nodes split
each slow node in two.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from strategies.sia import SIA_RUNS
from test_goodput_hetero import tiny_apps, workload

from optsched.errors import InvalidInstanceError
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements, fit_throughput, objective, objective_floored
from optsched.goodput.hetero.apps import GpuType
from optsched.goodput.hetero.pollux_unaware import PolluxUnaware, _drop, virtual_nodes
from optsched.goodput.hetero.replay import MergedProfileBatcher
from optsched.goodput.hetero.validate import validate
from optsched.goodput.hetero.world import HeteroRun, simulate_hetero
from optsched.goodput.throughput import PARAM_NAMES, ThroughputParams

TWO = (GpuType("fast", 2, 2), GpuType("slow", 2, 4))
JOBS = workload(
    ("cifar10-0", 0.0, "cifar10", 4, 2048),
    ("bert-1", 30.0, "bert", 2, 384),
    ("cifar10-2", 100.0, "cifar10", 8, 4096),
    ("cifar10-3", 400.0, "cifar10", 2, 2048),
)


def _run(seed: int) -> HeteroRun:
    policy = PolluxUnaware(seed=seed, pop_size=16, generations=8)
    return simulate_hetero(JOBS, policy, tiny_apps(), gpu_types=TWO, interval=60.0)


@cache
def run0() -> HeteroRun:
    return _run(0)


def test_virtual_nodes_split_larger_nodes() -> None:
    g, vmap = virtual_nodes(TWO)
    assert g == 2
    assert vmap == [("fast", 0), ("fast", 1), ("slow", 0), ("slow", 0), ("slow", 1), ("slow", 1)]
    with pytest.raises(InvalidInstanceError, match="gpus_per_node"):
        virtual_nodes((GpuType("a", 1, 4), GpuType("b", 1, 6)))


def test_mapping_back_keeps_the_majority_type_and_breaks_ties_by_priority() -> None:
    vmap = [("aws", 0), ("rtx", 0), ("rtx", 0), ("dgx-ext", 0)]
    rank = {"dgx-ext": 0, "rtx": 3, "aws": 4}
    assert _drop((0, 1, 1, 2), vmap, rank) == (1, 1, 2)  # rtx holds 3 of 4
    assert _drop((0, 0, 3, 3), vmap, rank) == (3, 3)  # 2 aws, 2 dgx-ext: dgx-ext first
    # three-way tie: only the first two (aws, rtx) are compared, dgx-ext is not considered
    assert _drop((0, 1, 3), vmap, rank) == (1,)
    assert _drop((1, 2), vmap, rank) == (1, 2)  # one type: unchanged


def test_runs_to_completion_validator_clean_one_type_per_job() -> None:
    run = run0()
    assert run.complete
    report = validate(run)
    assert report.ok, report.violations[:3]
    assert any(len(n) > 2 for _, a in run.decisions for _, n in a.values()), (
        "some decision should use more than one virtual node's GPUs"
    )
    for _, allocs in run.decisions:
        assert sum(len(n) for _, n in allocs.values()) <= sum(t.num_gpus for t in TWO)


def test_a_seed_fixes_the_run() -> None:
    again = _run(0)
    assert again.decisions == run0().decisions
    assert [j.completion_time for j in again.jobs] == [j.completion_time for j in run0().jobs]


def test_jobs_keep_one_merged_model() -> None:
    policy = PolluxUnaware()
    assert isinstance(policy.batcher(JOBS.jobs[0], tiny_apps()["cifar10"]), MergedProfileBatcher)


# -- the merged model's fit: the artifacts' floored network time ---------------------------------

#: Finite differences of a smooth loss at a relative step of 1e-6 agree with its exact gradient to
#: about 1e-9 relative; 1e-5 leaves room for the cancellation in the gamma term.
FD_TOL = 1e-5
#: Relative distance within which two runs of L-BFGS-B on the same loss, one with autograd's
#: gradient (Sia's) and one with the analytic one (optsched's), count as stopping at the same
#: point: the gradients differ in the last bits, which moves a stop by up to ~1e-3 relative on
#: the flat network parameters (the measured worst on ImageNet's fits: 6e-4).
SAME_STOP_TOL = 1e-2
#: Sia's recorded fits (``benchmarks/_sia_pollux_fit.py`` on its Pollux run's log).
SIA_FITS = SIA_RUNS / "pollux-fits" / "fits.json"
needs_fits = pytest.mark.skipif(
    not SIA_FITS.is_file(), reason=f"Sia's recorded Pollux fits not at {SIA_FITS}"
)


def _profile() -> StepMeasurements:
    rows = [(1, 1, 64), (1, 2, 60), (1, 4, 32), (1, 4, 90), (2, 8, 48), (3, 16, 40)]
    n, k, m = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    compute = 0.05 + 0.002 * m
    return StepMeasurements.of(n, k, m, compute, compute + 0.01 * (n > 1) + 0.004 * (k > 1))


def test_floored_objective_gradient_matches_central_differences() -> None:
    data = _profile()
    theta = np.array([0.03, 0.002, 0.1, 0.003, 0.02, 0.002, 1.7])
    _, grad = objective_floored(theta, data)
    for i in range(7):
        h = 1e-6 * theta[i]
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        fd = (objective_floored(up, data)[0] - objective_floored(down, data)[0]) / (2 * h)
        assert abs(grad[i] - fd) <= FD_TOL * max(1.0, abs(fd)), (i, grad[i], fd)
    # the floors move the loss by O(1e-8) only
    assert abs(objective_floored(theta, data)[0] - objective(theta, data)[0]) <= 1e-6


def _as_vector(p: ThroughputParams) -> np.ndarray:
    return np.array([getattr(p, k) for k in PARAM_NAMES])


@needs_fits
def test_merged_fit_stops_where_sias_does() -> None:
    """Each of the ImageNet job's 22 refits in Sia's run, replayed point by point."""
    events = json.loads(SIA_FITS.read_text())["fits"]["imagenet-64"]
    agent = MergedProfileBatcher({})
    stats = GradientStats(1.0, 1.0)
    unfloored: dict[float, float] = {}
    for ev in events:
        nodes, gpus, bsz, step, sync = ev["profile"][-1]
        assert [nodes, gpus, bsz] == ev["key"]
        placement = tuple(gpus // nodes + (i < gpus % nodes) for i in range(nodes))
        agent.observe("any", placement, bsz, step, sync, stats)
        ours, theirs = _as_vector(agent.params["*"]), np.array(ev["params"])
        assert np.allclose(ours, theirs, rtol=SAME_STOP_TOL, atol=1e-9), (ev["time"], ours, theirs)
        p = np.array(ev["profile"])
        data = StepMeasurements.of(p[:, 0], p[:, 1], p[:, 2], p[:, 3] - p[:, 4], p[:, 3])
        plain = _as_vector(fit_throughput(data, tol=agent.tol))
        unfloored[ev["time"]] = float(np.max(np.abs(plain - theirs) / np.abs(theirs)))
    # without the floors the fit stops elsewhere: the first fit over two nodes (20,050 s, 8 RTX
    # GPUs) has alpha_n half of Sia's (0.022 against 0.044)
    assert unfloored[20050.0] > 0.3, unfloored
