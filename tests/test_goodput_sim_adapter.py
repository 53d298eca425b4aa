"""The simulator's policies on the goodput world's jobs at fixed batches (sim_adapter).

Checked another way: strict FIFO and FIFO with backfilling against a hand computation (the
decisions by the rule, each job's run by :func:`~optsched.goodput.job.advance` alone); the
simulator's 2D-LAS with the goodput baseline's one threshold against the goodput ``tiresias``
baseline, job for job; every runnable policy's record through the validator.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.goodput import pollux_workloads, shipped_traces

from optsched.errors import InvalidInstanceError
from optsched.goodput.cluster import simulate
from optsched.goodput.decision import placement_of
from optsched.goodput.job import RESTART_DELAY, FixedBatch, JobState, advance
from optsched.goodput.policies import TiresiasPolicy, make_policy
from optsched.goodput.policies.optimus import iterations_after, oracle_step_time
from optsched.goodput.policies.sim_adapter import (
    REFUSED,
    PolicyNotExpressibleError,
    SimPolicyAdapter,
    refusal,
    sim_policy_names,
)
from optsched.goodput.policies.sim_world import GPU_TYPE, fixed_batch_world
from optsched.goodput.record import GoodputRun
from optsched.goodput.validate import validate
from optsched.goodput.workload import PolluxJob, PolluxWorkload, read_workload
from optsched.sim.engine.policy import Policy, PolicyDecision, SimState
from optsched.sim.policies import Tiresias, greedy_allocation
from optsched.sim.world.jobs import World
from optsched.tolerances import TIME_TOL
from tests.test_goodput_readers import DATA, needs_artifact

INTERVAL = 60.0


def slice_workload(count: int = 32, max_gpus: int | None = None) -> PolluxWorkload:
    """The first ``count`` cifar10/bert jobs of workload 6 (the job types the slice ships)."""
    jobs = [
        j
        for j in read_workload(DATA / "workload-6.csv").jobs
        if j.application in ("cifar10", "bert") and (max_gpus is None or j.num_replicas <= max_gpus)
    ]
    return PolluxWorkload(tuple(jobs[:count]))


def alone(job: PolluxJob, alloc: tuple[int, ...], start: float) -> float:
    """When ``job`` completes if it runs alone on ``alloc`` from the decision at ``start``."""
    traces = shipped_traces()[job.application]
    batcher = FixedBatch(traces.limits(), float(job.batch_size))
    placement = "".join(str(c) for c in placement_of(alloc))
    config = batcher.choose(placement)
    state = JobState(time=start, restart_left=RESTART_DELAY)
    while state.completion_time is None:
        state, config = advance(traces, state, placement, config, INTERVAL, batcher=batcher)
    return state.completion_time


def next_decision(t: float) -> float:
    """The first decision at or after ``t`` (a job done by a decision frees its GPUs there)."""
    return math.ceil(t / INTERVAL - TIME_TOL) * INTERVAL


THREE = PolluxWorkload(
    (
        PolluxJob("a", 0.0, "cifar10", 4, 2048),
        PolluxJob("b", 10.0, "cifar10", 8, 2048),
        PolluxJob("c", 20.0, "cifar10", 2, 4096),
    )
)


def run_three(policy: str) -> dict[str, tuple[float, tuple[int, ...], float]]:
    """Each job's (start, allocation, completion) under ``policy`` on 2 nodes of 4 GPUs."""
    run = simulate(THREE, SimPolicyAdapter(policy, THREE, shipped_traces()), num_nodes=2,
                   traces=shipped_traces())  # fmt: skip
    assert validate(run).ok
    out = {}
    for job in run.jobs:
        (seg,) = job.segments  # one run each: neither FIFO preempts
        assert job.completion_time is not None
        out[job.name] = (seg.start, seg.allocation, job.completion_time)
    return out


def test_strict_fifo_matches_a_hand_computation() -> None:
    a, b, c = THREE.jobs
    # a starts at the first decision; b (8 GPUs) waits for a; c waits behind b (strict)
    end_a = alone(a, (0, 0, 0, 0), 60.0)
    start_b = next_decision(end_a)
    end_b = alone(b, (0, 0, 0, 0, 1, 1, 1, 1), start_b)
    start_c = next_decision(end_b)
    end_c = alone(c, (0, 0), start_c)
    got = run_three("fifo")
    assert got == {
        "a": (60.0, (0, 0, 0, 0), end_a),
        "b": (start_b, (0, 0, 0, 0, 1, 1, 1, 1), end_b),
        "c": (start_c, (0, 0), end_c),
    }


def test_fifo_backfill_matches_a_hand_computation() -> None:
    a, b, c = THREE.jobs
    # c fits beside a at the first decision (most free node: 1); b waits for both
    end_a = alone(a, (0, 0, 0, 0), 60.0)
    end_c = alone(c, (1, 1), 60.0)
    start_b = next_decision(max(end_a, end_c))
    end_b = alone(b, (0, 0, 0, 0, 1, 1, 1, 1), start_b)
    got = run_three("fifo-backfill")
    assert got == {
        "a": (60.0, (0, 0, 0, 0), end_a),
        "b": (start_b, (0, 0, 0, 0, 1, 1, 1, 1), end_b),
        "c": (60.0, (1, 1), end_c),
    }


def assert_same_jobs(x: GoodputRun, y: GoodputRun) -> None:
    assert [(j.name, j.completion_time, j.num_restarts, j.segments) for j in x.jobs] == [
        (j.name, j.completion_time, j.num_restarts, j.segments) for j in y.jobs
    ]


def las_as_goodput_tiresias(workload: PolluxWorkload) -> SimPolicyAdapter:
    """The simulator's 2D-LAS with the goodput baseline's one threshold of 16 GPU-hours."""
    return SimPolicyAdapter(Tiresias("las", thresholds=(16 * 3600.0,)), workload, shipped_traces())


@pytest.mark.parametrize("nodes", [4, 16])
def test_las_with_one_threshold_is_the_goodput_tiresias(nodes: int) -> None:
    w = slice_workload()
    tr = shipped_traces()
    want = simulate(w, TiresiasPolicy(), num_nodes=nodes, traces=tr)
    got = simulate(w, las_as_goodput_tiresias(w), num_nodes=nodes, traces=tr)
    assert_same_jobs(want, got)
    assert validate(got).ok


@needs_artifact
def test_las_with_one_threshold_is_the_goodput_tiresias_on_workload_6() -> None:
    w = read_workload(DATA / "workload-6.csv")
    policy = SimPolicyAdapter(Tiresias("las", thresholds=(16 * 3600.0,)), w)
    want = simulate(w, TiresiasPolicy())
    got = simulate(w, policy)
    assert_same_jobs(want, got)
    assert got.average_jct == pytest.approx(3469.69375, abs=TIME_TOL)


def test_las_differs_from_the_goodput_tiresias_with_its_own_thresholds() -> None:
    # four queues from 30 GPU-minutes on: long jobs are preempted the baseline keeps running
    w = slice_workload()
    tr = shipped_traces()
    base = simulate(w, TiresiasPolicy(), num_nodes=4, traces=tr)
    las = simulate(w, SimPolicyAdapter("tiresias-las", w, tr), num_nodes=4, traces=tr)
    assert validate(las).ok
    assert las.summary()["restarts"] > base.summary()["restarts"]


def test_the_world_reads_the_oracle() -> None:
    w = slice_workload(6)
    tr = shipped_traces()
    rigid = fixed_batch_world(w, tr, 16, 4, "rigid", RESTART_DELAY)
    sized = fixed_batch_world(w, tr, 16, 4, "fixed_batch", RESTART_DELAY)
    assert [j.job_id for j in rigid.world.jobs] == [j.name for j in w.jobs]
    for spec, r, s in zip(w.jobs, rigid.world.jobs, sized.world.jobs, strict=True):
        traces = tr[spec.application]
        assert r.min_gpus == r.max_gpus == r.num_gpus == spec.num_replicas
        assert s.min_gpus == 1 and s.num_gpus == min(spec.num_replicas, s.max_gpus)
        assert s.max_gpus == min(64, int(spec.batch_size // traces.limits().min_local_bsz))
        step = oracle_step_time(traces, float(spec.batch_size), r.num_gpus, 4)
        assert rigid.world.rate(r, GPU_TYPE) == pytest.approx(1.0 / step, rel=TIME_TOL)
        last = traces.max_epochs() - 1
        assert r.work == iterations_after(traces, float(spec.batch_size), last)
        assert rigid.done(spec.name, 0) == 0.0
        e = min(3, last)
        assert rigid.done(spec.name, e) == iterations_after(traces, float(spec.batch_size), e - 1)
    assert rigid.world.restore_s == RESTART_DELAY


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("edf", "deadline"),
        ("srtf-perf-elastic", None),
        ("edf-perf-elastic", "deadline"),
        ("elasticflow", "deadline"),
        ("max-min-packed", "pair"),
        ("harmony", "colocation"),
        ("min-cost-slo", "deadline"),
        ("gavel-fifo", "mechanism"),
    ],
)
def test_refusals_name_the_policy(name: str, word: str | None) -> None:
    w = slice_workload(2)
    if word is None:
        assert refusal(name) is None
        return
    assert word in (refusal(name) or "")
    with pytest.raises(PolicyNotExpressibleError, match=rf"'{re.escape(name)}'.*{word}"):
        SimPolicyAdapter(name, w, shipped_traces())


def test_a_policy_s_own_refusal_is_asked_before_the_run() -> None:
    w = slice_workload(4)  # multi-GPU jobs: AlloX schedules single-GPU jobs only
    policy = SimPolicyAdapter("allox", w, shipped_traces())
    with pytest.raises(PolicyNotExpressibleError, match=r"'allox'.*single-GPU"):
        policy.prepare(16, 4)
    with pytest.raises(PolicyNotExpressibleError, match="'allox'"):
        simulate(w, policy, traces=shipped_traces())


def test_a_rigid_gang_larger_than_the_cluster_is_named() -> None:
    w = slice_workload(4)  # cifar10-3 asks for 16 GPUs
    with pytest.raises(InvalidInstanceError, match=r"jobs\[cifar10-3\]\.num_replicas"):
        simulate(w, SimPolicyAdapter("fifo", w, shipped_traces()), num_nodes=2,
                 traces=shipped_traces())  # fmt: skip


def test_make_policy_builds_the_adapter_on_a_workload() -> None:
    w = slice_workload(2)
    made = make_policy("srtf-elastic", w, shipped_traces())
    assert isinstance(made, SimPolicyAdapter) and made.job_kind == "fixed_batch"
    rigid = make_policy("srtf", w, shipped_traces())
    assert isinstance(rigid, SimPolicyAdapter) and rigid.job_kind == "rigid"
    assert set(REFUSED).isdisjoint(sim_policy_names())


#: Every runnable policy but AlloX (which refuses gangs) on a small loaded cluster: the
#: agnostic forms (a ``-perf`` variant decides as its agnostic form on one GPU type).
RUNNABLE = [n for n in sim_policy_names() if "-perf" not in n and n != "allox"]


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_runnable_policy_validates(name: str) -> None:
    w = slice_workload(10, max_gpus=8)
    policy = SimPolicyAdapter(name, w, shipped_traces())
    run = simulate(w, policy, num_nodes=2, traces=shipped_traces())
    report = validate(run)
    assert report.ok, report.violations[:1]
    assert run.summary()["finished"] and run.job_kind == policy.job_kind
    length = policy.policy.round_seconds
    starts = sorted({s.start for j in run.jobs for s in j.segments})
    if length is not None:
        # a round-based policy changes allocations at its first decision and on its grid
        # (a job completing between rounds leaves its GPUs idle; nothing else moves)
        later = [t for t in starts if t > starts[0]]
        assert all(abs(t / length - round(t / length)) * length < TIME_TOL for t in later), (
            length,
            later,
        )
    assert policy.calls <= len(starts) + 2 * len(w.jobs) + run.end_time / INTERVAL


def test_perf_variants_decide_as_the_agnostic_forms_on_one_type() -> None:
    w = slice_workload(10, max_gpus=8)
    for name in ("srtf", "tiresias-las-elastic"):
        perf = name.replace("-elastic", "-perf-elastic") if "elastic" in name else name + "-perf"
        x, y = (run_on(w, n, 2) for n in (name, perf))
        assert_same_jobs(x, y)


SAMPLED = ["fifo", "srtf", "tiresias-las", "themis", "max-min", "optimus", "srtf-elastic"]


def run_on(workload: PolluxWorkload, name: str, nodes: int) -> GoodputRun:
    policy = SimPolicyAdapter(name, workload, shipped_traces())
    return simulate(workload, policy, num_nodes=nodes, traces=shipped_traces())


@given(pollux_workloads(max_jobs=5, max_gpus=8), st.sampled_from(SAMPLED), st.sampled_from([2, 3]))
def test_random_runs_validate(workload: PolluxWorkload, name: str, nodes: int) -> None:
    policy = SimPolicyAdapter(name, workload, shipped_traces())
    run = simulate(workload, policy, num_nodes=nodes, traces=shipped_traces())
    assert validate(run).ok
    assert run.summary()["finished"]
    for job in run.jobs:
        cap = max(j.max_gpus for j in policy.prepare(nodes, 4).jobs if j.job_id == job.name)
        assert all(len(s.allocation) <= cap for s in job.segments)


def test_sim_compare_runs_the_simulator_s_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from optsched.cli import main

    trace = tmp_path / "slice.csv"
    slice_workload().save(trace)
    monkeypatch.setenv("OPTSCHED_POLLUX_SIMULATOR", str(DATA))  # the slice has a traces/
    args = ["sim", "compare", str(trace), "--policies", "tiresias,fifo,srtf-elastic", "--json"]
    assert main(args) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)["policies"]}
    assert set(rows) == {"tiresias", "fifo", "srtf-elastic"}
    assert all(r["valid"] and r["finished"] for r in rows.values())
    tr = shipped_traces()
    direct = simulate(slice_workload(), SimPolicyAdapter("fifo", slice_workload(), tr), traces=tr)
    assert rows["fifo"]["average_jct"] == direct.average_jct
    assert main([*args[:3], "--policies", "allox"]) == 2  # refused before any run
    assert "'allox'" in capsys.readouterr().err


def test_an_adapter_runs_again_from_scratch() -> None:
    w = slice_workload(10, max_gpus=8)
    policy = SimPolicyAdapter("tiresias-las", w, shipped_traces())
    first = simulate(w, policy, num_nodes=2, traces=shipped_traces())
    calls = policy.calls
    again = simulate(w, policy, num_nodes=2, traces=shipped_traces())
    assert_same_jobs(first, again)
    assert policy.calls == calls


class _Spy(Policy):
    """A round-based greedy policy that notes what the adapter tells it."""

    name = "spy"
    round_seconds = 300.0

    def reset(self, world: World) -> None:
        self.arrived: list[str] = []
        self.finished: list[str] = []
        self.unseen = 0

    def allocate(self, state: SimState) -> PolicyDecision:
        self.arrived += [s.job_id for s in state.arrived]
        self.finished += list(state.finished)
        self.unseen += sum(s.first_decision < 0 for s in state.active)
        return greedy_allocation(state, state.active)


def test_a_round_based_policy_hears_of_every_arrival_and_completion() -> None:
    w = slice_workload(10, max_gpus=8)  # arrivals and completions between rounds
    spy = _Spy()
    run = simulate(w, SimPolicyAdapter(spy, w, shipped_traces()), num_nodes=2,
                   traces=shipped_traces())  # fmt: skip
    assert validate(run).ok
    assert sorted(spy.arrived) == sorted(j.name for j in w.jobs)
    assert spy.unseen == 0
    last = max(s.start for j in run.jobs for s in j.segments)
    told = {j.name for j in run.jobs if j.completion_time is not None and j.completion_time < last}
    assert len(spy.finished) == len(set(spy.finished)) and told <= set(spy.finished)
