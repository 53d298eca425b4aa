"""The goodput world's cluster loop, its baselines and its validator, against Pollux's simulator.

``tests/data/pollux/baselines.json`` holds what Pollux's own simulator (the artifact's
``simulator/simulator.py``, unmodified, in its environment) computed for its Tiresias and
Optimus(+Oracle) baselines: on the artifact's workloads 6 and 2 (need the artifact's folder for
the four job types the slice does not ship) and on the first 32 cifar10/bert jobs of workload
6 (the slice has all it needs: always runs). Its ``source`` entries say how each was measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.goodput import pollux_workloads, shipped_traces

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.goodput.artifact import read_workload_of
from optsched.goodput.cluster import simulate
from optsched.goodput.decision import Allocation, ClusterView, GoodputPolicy, JobView
from optsched.goodput.policies import POLICIES, PolluxPolicy, TiresiasPolicy, make_policy
from optsched.goodput.policies.placement import most_free_first
from optsched.goodput.record import GoodputRun
from optsched.goodput.validate import validate
from optsched.goodput.workload import PolluxWorkload, read_workload
from optsched.tolerances import TIME_TOL
from tests.test_goodput_readers import DATA, needs_artifact

#: How far optsched's average JCT may be from the artifact's, relative: none (the runs agree
#: job by job, in whole seconds); the float slack only absorbs the mean's summation order.
JCT_MATCH_TOL = 1e-12
BASELINES = DATA / "baselines.json"
#: The shipped workload: the first 32 cifar10/bert rows of workload-6.csv.
SHIPPED_ROWS = 32


@cache
def reference() -> dict[str, Any]:
    return json.loads(BASELINES.read_text())


def shipped_workload() -> PolluxWorkload:
    w6 = read_workload(DATA / "workload-6.csv")
    rows = [j for j in w6.jobs if j.application in ("cifar10", "bert")][:SHIPPED_ROWS]
    return PolluxWorkload(tuple(rows))


def assert_matches(run: GoodputRun, want: Mapping[str, Any]) -> None:
    got_jct = {j.name: j.jct for j in run.jobs}
    diff = {k: (v, got_jct.get(k)) for k, v in want["jct"].items() if got_jct.get(k) != v}
    assert not diff, f"JCTs differ (artifact, optsched): {diff}"
    restarts = {j.name: j.num_restarts for j in run.jobs}
    assert restarts == want["num_restarts"]
    assert run.average_jct == pytest.approx(want["average_jct"], rel=JCT_MATCH_TOL)
    assert run.makespan == want["makespan"]
    assert run.end_time == want["end_time"]
    report = validate(run)
    assert report.ok, report.violations[:5]
    assert report.objective == pytest.approx(run.average_jct, rel=JCT_MATCH_TOL)


#: The deterministic baselines, matched job for job against the artifact's runs (Pollux's
#: genetic search draws from its own random stream: its runs are compared in aggregate).
DETERMINISTIC = ("optimus-oracle", "tiresias")


def fresh(name: str) -> GoodputPolicy:
    """A policy by name; Pollux with a small search, so that random runs stay quick."""
    if name == "pollux":
        return PolluxPolicy(seed=0, pop_size=8, generations=4)
    return make_policy(name)


def test_every_registered_policy_is_exercised() -> None:
    assert set(POLICIES) == {*DETERMINISTIC, "pollux"}


@pytest.mark.parametrize("policy", DETERMINISTIC)
def test_shipped_slice_matches_artifact(policy: str) -> None:
    run = simulate(shipped_workload(), make_policy(policy), traces=shipped_traces())
    assert_matches(run, reference()["shipped"]["policies"][policy])


@needs_artifact
@pytest.mark.parametrize("number", [6, 2])
@pytest.mark.parametrize("policy", DETERMINISTIC)
def test_workload_matches_artifact(policy: str, number: int) -> None:
    run = simulate(read_workload_of(number), make_policy(policy))
    assert_matches(run, reference()[f"workload-{number}"]["policies"][policy])


def held_at(run: GoodputRun, t: float) -> dict[int, int]:
    """GPUs held per node during the interval starting at ``t`` (brute force)."""
    held: dict[int, int] = {}
    for j in run.jobs:
        for s in j.segments:
            if s.start <= t < s.end:
                for n in s.allocation:
                    held[n] = held.get(n, 0) + 1
    return held


@given(pollux_workloads(), st.sampled_from(sorted(POLICIES)), st.integers(1, 2),
       st.sampled_from([2, 4]), st.sampled_from([20.0, 60.0]))  # fmt: skip
def test_random_runs_validate(
    workload: PolluxWorkload, policy: str, nodes: int, per_node: int, interval: float
) -> None:
    # a 20-s interval is shorter than the 30-s restart delay: the delay spans two intervals
    gpus = nodes * per_node
    jobs = tuple(replace(j, num_replicas=min(j.num_replicas, gpus)) for j in workload.jobs)
    run = simulate(PolluxWorkload(jobs), fresh(policy), num_nodes=nodes,
                   gpus_per_node=per_node, interval=interval, traces=shipped_traces())  # fmt: skip
    assert run.finished
    report = validate(run)
    assert report.ok, report.violations[:5]
    assert report.objective == pytest.approx(run.average_jct, rel=JCT_MATCH_TOL)
    t = 0.0
    while t < run.end_time:
        assert all(v <= per_node for v in held_at(run, t).values())
        t += run.interval
    if policy == "tiresias":  # rigid gangs: exactly the owner's GPUs
        owner = {j.name: j.num_replicas for j in jobs}
        assert all(len(s.allocation) == owner[j.name] for j in run.jobs for s in j.segments)


@pytest.fixture(scope="module")
def small_run() -> GoodputRun:
    return simulate(shipped_workload(), TiresiasPolicy(), num_nodes=4, traces=shipped_traces())


def constraints_of(run: GoodputRun) -> set[str]:
    return {v.constraint for v in validate(run).violations}


def tamper(run: GoodputRun, index: int, **changes: Any) -> GoodputRun:
    jobs = list(run.jobs)
    jobs[index] = replace(jobs[index], **changes)
    return replace(run, jobs=tuple(jobs))


def test_validator_passes_the_untampered_run(small_run: GoodputRun) -> None:
    assert validate(small_run).ok
    assert any(j.num_restarts > 0 for j in small_run.jobs)  # preemptions are exercised


def test_validator_catches_a_late_completion(small_run: GoodputRun) -> None:
    job = small_run.jobs[0]
    assert job.completion_time is not None
    bad = tamper(small_run, 0, completion_time=job.completion_time + 1)
    assert "progress" in constraints_of(bad)


def test_validator_catches_a_missing_stretch(small_run: GoodputRun) -> None:
    job = small_run.jobs[0]
    seg = job.segments[0]
    m, s, n = seg.configs[0]
    configs = ((m, s, n - 1), *seg.configs[1:]) if n > 1 else seg.configs[1:]
    bad = tamper(small_run, 0, segments=(replace(seg, configs=configs), *job.segments[1:]))
    assert "progress" in constraints_of(bad)


def test_validator_catches_a_wrong_batch(small_run: GoodputRun) -> None:
    job = small_run.jobs[0]
    seg = job.segments[0]
    m, s, n = seg.configs[0]
    one_off = replace(seg, configs=((m - 1, s, n), *seg.configs[1:]))
    # one sample less per GPU moves each epoch's end by less than the half second it is
    # rounded to: only the batch check sees it
    assert constraints_of(tamper(small_run, 0, segments=(one_off, *job.segments[1:]))) == {
        "fixed_batch"
    }
    half = replace(seg, configs=((m // 2, s, n), *seg.configs[1:]))
    bad = tamper(small_run, 0, segments=(half, *job.segments[1:]))
    assert {"fixed_batch", "progress"} <= constraints_of(bad)


def test_validator_catches_an_overfull_node(small_run: GoodputRun) -> None:
    # move the first job's GPUs onto the node of a job running beside it
    first = small_run.jobs[0].segments[0]
    other = next(j for j in small_run.jobs[1:] for s in j.segments
                 if s.start < first.end and first.start < s.end)  # fmt: skip
    node = next(s for s in other.segments if s.start < first.end and first.start < s.end)
    moved = replace(first, allocation=(node.allocation[0],) * len(first.allocation))
    bad = tamper(small_run, 0, segments=(moved, *small_run.jobs[0].segments[1:]))
    assert "node_capacity" in constraints_of(bad)


def test_validator_catches_wrong_counts(small_run: GoodputRun) -> None:
    job = small_run.jobs[0]
    restarted = tamper(small_run, 0, num_restarts=job.num_restarts + 1)
    assert "restart_count" in constraints_of(restarted)
    more = tamper(small_run, 0, attained_service=job.attained_service + 60)
    assert "attained_service" in constraints_of(more)
    early = replace(job.segments[0], start=job.submission_time - 60)
    assert "before_submission" in constraints_of(
        tamper(small_run, 0, segments=(early, *job.segments[1:]))
    )


class _Fixed:
    """A test policy returning one fixed answer."""

    name = "fixed"
    job_kind = "rigid"

    def __init__(self, answer: Mapping[str, list[int]]) -> None:
        self.answer = answer

    def allocate(self, jobs: Mapping[str, JobView], cluster: ClusterView,
                 previous: Mapping[str, Allocation]) -> dict[str, Allocation]:  # fmt: skip
        return {k: tuple(v) for k, v in self.answer.items()}


ONE_JOB = PolluxWorkload((read_workload(DATA / "workload-6.csv").jobs[0],))  # cifar10-0, 6 GPUs


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"cifar10-0": [0, 0, 0, 0, 0]}, "node 0 would hold 5 GPUs"),
        ({"cifar10-0": [0, 1, 0]}, "splits a node"),
        ({"cifar10-0": [0, 9]}, "node 9 is not in"),
        ({"cifar10-0": [0] * 4 + [1] * 3}, "exceed its max_replicas 6"),
        ({"bert-1": [0]}, "not an active job"),
    ],
)
def test_a_policy_breaking_the_rules_gets_a_typed_error(
    answer: dict[str, list[int]], words: str
) -> None:
    with pytest.raises(PolicyError, match=words) as err:
        simulate(ONE_JOB, _Fixed(answer), num_nodes=2, traces=shipped_traces())
    assert repr(next(iter(answer))) in str(err.value)


def test_bad_cluster_and_policy_names() -> None:
    with pytest.raises(InvalidInstanceError, match="gpus_per_node"):
        simulate(ONE_JOB, TiresiasPolicy(), gpus_per_node=10, traces=shipped_traces())
    with pytest.raises(InvalidInstanceError, match="unknown goodput policy"):
        make_policy("no-such-policy")
    with pytest.raises(InvalidInstanceError, match="given workload only"):
        make_policy("gandiva")  # the simulator's: made on a workload (test_goodput_sim_adapter)
    with pytest.raises(InvalidInstanceError, match="no measurements"):
        simulate(ONE_JOB, TiresiasPolicy(), traces={})


def test_most_free_first_takes_the_first_of_equal_nodes() -> None:
    free = [2, 3, 3, 1]
    assert most_free_first(free, 5, "j") == (1, 1, 1, 2, 2)
    assert free == [2, 0, 1, 1]
    assert most_free_first(free, 3, "j") == (0, 0, 2)
    with pytest.raises(PolicyError, match="'k'"):
        most_free_first(free, 2, "k")


def test_tiresias_demotes_after_the_threshold() -> None:
    policy = TiresiasPolicy(threshold=240)
    traces = shipped_traces()["cifar10"]
    base = dict(submission_time=0.0, attained_service=0.0, min_replicas=0, num_restarts=0,
                age=0.0, epoch=0, application="cifar10", traces=traces,
                speedup=lambda k, n: float(n))  # fmt: skip
    a = JobView(name="a", max_replicas=2, **base)  # type: ignore[arg-type]
    b = JobView(name="b", max_replicas=2, **base)  # type: ignore[arg-type]
    cluster = ClusterView(1, 2, 0.0)
    got = policy.allocate({"a": a}, cluster, {})
    assert got == {"a": (0, 0)}
    # a runs 60 s a decision at 2 GPUs: 120 GPU-s after one, 240 (demoted) after two
    got = policy.allocate({"a": a, "b": b}, replace(cluster, time=60.0), got)
    assert got == {"a": (0, 0)} and policy.queues == (["a", "b"], [])
    got = policy.allocate({"a": a, "b": b}, replace(cluster, time=120.0), got)
    assert got == {"b": (0, 0)} and policy.queues == (["b"], ["a"])


class _OneEach:
    """A test policy of adaptive jobs: each active job gets as many GPUs as it may, in order."""

    name = "one-each"

    def allocate(self, jobs: Mapping[str, JobView], cluster: ClusterView,
                 previous: Mapping[str, Allocation]) -> dict[str, Allocation]:  # fmt: skip
        free = [cluster.gpus_per_node] * cluster.num_nodes
        out = {}
        for name, job in jobs.items():
            assert job.speedup(1, 1) == pytest.approx(1.0)
            want = min(job.max_replicas, sum(free))
            if want:
                out[name] = most_free_first(free, want, name)
        return out


def test_adaptive_jobs_run_and_validate() -> None:
    # two bert jobs (2 epochs): few distinct configurations, so few fits of the agent's model
    jobs = tuple(j for j in shipped_workload().jobs if j.application == "bert")[:2]
    run = simulate(PolluxWorkload(jobs), _OneEach(), num_nodes=2, traces=shipped_traces())
    assert run.job_kind == "adaptive" and run.finished
    assert all(j.fixed_batch is None for j in run.jobs)
    # the agent re-chooses its batch as it learns: more than one configuration somewhere
    assert any(len(s.configs) > 1 for j in run.jobs for s in j.segments)
    report = validate(run)
    assert report.ok, report.violations[:5]
    assert abs(report.objective - run.average_jct) <= TIME_TOL


def test_sim_compare_runs_a_pollux_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from optsched.cli import main

    trace = tmp_path / "shipped.csv"
    shipped_workload().save(trace)
    monkeypatch.setenv("OPTSCHED_POLLUX_SIMULATOR", str(DATA))  # the slice has a traces/
    args = ["sim", "compare", str(trace), "--policies", "tiresias,optimus-oracle"]
    assert main([*args, "--json"]) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)["policies"]}
    for name, want in reference()["shipped"]["policies"].items():
        assert rows[name]["average_jct"] == pytest.approx(want["average_jct"], rel=JCT_MATCH_TOL)
        assert rows[name]["makespan"] == want["makespan"] and rows[name]["valid"]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "optimus-oracle" in table
    assert f"{reference()['shipped']['policies']['tiresias']['average_jct']:.2f}" in table
    assert main([*args, "--exact"]) == 2
    assert "--exact" in capsys.readouterr().err
    assert main([*args[:3], "--policies", "edf"]) == 2  # the simulator's, needs deadlines
    assert "'edf'" in capsys.readouterr().err
    assert main([*args[:3], "--policies", "no-such-policy"]) == 2
    assert "no-such-policy" in capsys.readouterr().err


def test_sim_compare_seeds_run_the_random_search_once_per_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--seeds``: Pollux once per seed and their mean, a deterministic policy once; refused
    (naming the option) on a trace that is no Pollux workload."""
    from optsched.cli import main

    trace = tmp_path / "small.csv"
    PolluxWorkload(shipped_workload().jobs[:6]).save(trace)
    monkeypatch.setenv("OPTSCHED_POLLUX_SIMULATOR", str(DATA))
    args = ["sim", "compare", str(trace), "--cluster", "4x4", "--policies", "pollux,tiresias"]
    assert main([*args, "--seeds", "0-1", "--json"]) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)["policies"]}
    assert set(rows) == {"pollux (seed 0)", "pollux (seed 1)", "pollux (mean of seeds 0,1)",
                         "tiresias"}  # fmt: skip
    mean = rows["pollux (mean of seeds 0,1)"]
    for figure in ("average_jct", "makespan", "gpu_hours"):
        want = (rows["pollux (seed 0)"][figure] + rows["pollux (seed 1)"][figure]) / 2
        assert mean[figure] == pytest.approx(want, rel=1e-12)
    assert all(r["valid"] and r["finished"] for r in rows.values())
    # seed 0 is the registered policy's own seed: the same run as without --seeds
    assert main([*args[:6], "pollux", "--json"]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["policies"]
    assert plain["average_jct"] == rows["pollux (seed 0)"]["average_jct"]
    assert main([*args, "--seeds", "0-500"]) == 2
    assert "--seeds" in capsys.readouterr().err
    other = tmp_path / "jobs.csv"
    other.write_text("job_id,arrival,num_gpus,duration\nj0,0,1,100\n")
    assert main(["sim", "compare", str(other), "--cluster", "v100=8:8", "--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "want"),
    [(None, ()), ("3", (3,)), ("0-3", (0, 1, 2, 3)), ("5, 0-2,1", (5, 0, 1, 2)), ("7-7", (7,))],
)
def test_parse_seeds(text: str | None, want: tuple[int, ...]) -> None:
    from optsched.cli.sim_goodput import parse_seeds

    assert parse_seeds(text) == want


@pytest.mark.parametrize("text", ["", "a", "-1", "3-1", "1-", "0-100", "0-99,200"])
def test_parse_seeds_refuses_naming_the_option(text: str) -> None:
    from optsched.cli.sim_goodput import parse_seeds

    with pytest.raises(InvalidInstanceError, match="--seeds"):
        parse_seeds(text)
