"""Sia's heterogeneity-unaware Pollux baseline in the heterogeneous goodput world.

The tiny world has two GPU types of different node sizes (two nodes of 2 "fast" GPUs, two nodes
of 4 "slow" ones, the slow type's step times doubled), so that the policy's virtual nodes split
each slow node in two.
"""

from __future__ import annotations

from functools import cache

import pytest
from test_goodput_hetero import tiny_apps, workload

from optsched.errors import InvalidInstanceError
from optsched.goodput.hetero.apps import GpuType
from optsched.goodput.hetero.pollux_unaware import PolluxUnaware, _drop, virtual_nodes
from optsched.goodput.hetero.replay import MergedProfileBatcher
from optsched.goodput.hetero.validate import validate
from optsched.goodput.hetero.world import HeteroRun, simulate_hetero

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
