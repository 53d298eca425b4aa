"""Gavel's round mechanism (``simulate(..., mechanism="gavel")``) on hand-computed cases."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim import ClusterSpec, GpuType, Policy, SimState, World, simulate, validate
from optsched.sim.engine.gavel import GavelMechanism, is_agnostic
from optsched.sim.engine.policy import JobState
from optsched.sim.policies import GavelFIFO, GavelGandiva, make_policy
from optsched.sim.world.throughputs import throughputs_from_dict
from tests.strategies.sim import job_frame, worlds

#: Job type A: 2 steps/s on a v100, 1 on a p100 (one GPU; n GPUs: n times that); two A jobs
#: sharing a gang run at 0.8 of that each.
TABLE: dict[str, Any] = {
    gpu: {
        f"('A', {n})": {"null": speed * n, f"('A', {n})": [0.8 * speed * n, 0.8 * speed * n]}
        for n in (1, 2, 4)
    }
    for gpu, speed in (("v100", 2.0), ("p100", 1.0), ("k80", 0.5))
}


def world(rows: list[dict[str, Any]], **counts: int) -> World:
    """Jobs of type A (``duration``: seconds alone on a v100) on 1-GPU servers."""
    cluster = ClusterSpec(
        gpu_types=tuple(GpuType(name=n, count=c, gpus_per_server=1) for n, c in counts.items())
    )
    table = throughputs_from_dict(TABLE, reference="v100")
    return World.from_frame(job_frame([{"model": "A", **r} for r in rows]), cluster, table)


class Fixed(Policy):
    """A fixed allocation: ``X[job]`` from a table (jobs not in it: an empty row)."""

    def __init__(self, x: Mapping[str, Mapping[str, float]], name: str = "fixed-perf") -> None:
        self.name = name
        self.round_seconds = 10.0
        self.x = x
        self.calls: list[float] = []

    def fractional(self, state: SimState) -> dict[str, dict[str, float]]:
        self.calls.append(state.now)
        return {s.job_id: dict(self.x.get(s.job_id, {})) for s in state.active}


def segments(result: Any, job: str) -> list[tuple[str, float, float]]:
    iv = result.intervals
    return sorted(
        (iv["gpu_type"][k], iv["start"][k], iv["end"][k])
        for k in range(len(iv["job_id"]))
        if iv["job_id"][k] == job
    )


def run(w: World, policy: Policy, **opts: Any) -> Any:
    round_seconds = opts.pop("round_seconds", 10.0)
    result = simulate(w, policy, mechanism=GavelMechanism(**opts), round_seconds=round_seconds)
    report = validate(result.world, result)
    assert report.ok, report.violations[:3]
    return result


def test_arrival_between_resets_waits_for_the_next_reset() -> None:
    # reset at 5 (first arrival); j1 arrives at 20, is added at the round start 25, but the
    # next reset is only at 105 (>= 100 s after 5): rounds 25..95 count its GPU and leave it idle
    w = world([{"arrival": 5.0, "duration": 1000.0}, {"arrival": 20.0, "duration": 30.0}], v100=2)
    everyone = {"j0": {"v100": 1.0}, "j1": {"v100": 1.0}}
    result = run(w, Fixed(everyone), reset_interval=100.0)
    assert result.extra["reset_times"][:2] == [5.0, 105.0]
    assert result.first_start[1] == 105.0
    assert result.completion[1] == pytest.approx(135.0)
    assert result.completion[0] == pytest.approx(1005.0)
    assert result.extra["reserved_idle_gpu_rounds"] == 8  # rounds at 25, 35, ..., 95


def test_minimum_interval_between_resets_is_honoured() -> None:
    rows = [{"arrival": a, "duration": 10_000.0} for a in (5.0, 20.0, 50.0, 130.0)]
    w = world(rows, v100=4)
    x = {f"j{k}": {"v100": 1.0} for k in range(4)}
    policy = Fixed(x)
    result = run(w, policy, reset_interval=100.0)
    # 5: first; 105: arrivals at 20 and 50; 205: arrival at 130 (added at 135 < 205)
    assert result.extra["reset_times"][:3] == [5.0, 105.0, 205.0]
    assert policy.calls[:3] == [5.0, 105.0, 205.0]
    times = result.extra["reset_times"]
    assert all(b - a >= 100.0 for a, b in itertools.pairwise(times))


def test_zero_share_job_takes_leftover_gpus() -> None:
    w = world([{"duration": 100.0}, {"duration": 100.0}], v100=2)
    result = run(w, Fixed({"j0": {"v100": 1.0}}))  # j1: zero share everywhere
    # no GPU idle while a runnable job waits: both run from 0 to the end
    assert segments(result, "j0") == [("v100", 0.0, 100.0)]
    assert segments(result, "j1") == [("v100", 0.0, 100.0)]


def test_per_type_walk_in_gavel_order_places_zero_priorities_first_on_v100() -> None:
    # j0's share is on the p100, but the v100 queue is walked first: there both jobs have
    # priority 0, ties by arrival, so j0 is counted on the v100 and j1 takes the p100; when j0
    # is done (20 s), j1 is first in the v100 queue and moves there (20 of its 40 steps left
    # at 2 steps/s: done at 30)
    w = world([{"duration": 20.0}, {"duration": 20.0}], p100=1, v100=1)
    result = run(w, Fixed({"j0": {"p100": 1.0}}), round_seconds=10.0)
    assert segments(result, "j0") == [("v100", 0.0, 20.0)]
    assert segments(result, "j1") == [("p100", 0.0, 20.0), ("v100", 20.0, 30.0)]


def test_priorities_with_the_prior_of_half_a_round() -> None:
    # one v100, X = 0.75 / 0.25, rounds of 360 s, priors of 180 s (T = 360 at the reset):
    # round 1: p0 = 0.75 / (180/360) = 1.5 > p1 = 0.5          -> j0
    # round 2: p0 = 0.75 / (540/720) = 1.0 = p1 = 0.25/(180/720) -> tie, deficits 0, X: j0
    # round 3: p0 = 0.75 / (900/1080) = 0.9 < p1 = 0.25/(180/1080) = 1.5 -> j1
    # (without the prior j1's priority would be infinite and it would run in round 2)
    w = world([{"duration": 5000.0}, {"duration": 5000.0}], v100=1)
    x = {"j0": {"v100": 0.75}, "j1": {"v100": 0.25}}
    result = run(w, Fixed(x), round_seconds=360.0, reset_interval=1e9)
    j0, j1 = segments(result, "j0"), segments(result, "j1")
    assert j0[0] == ("v100", 0.0, 720.0)
    assert j1[0] == ("v100", 720.0, 1080.0)


def test_equal_shares_alternate_round_by_round() -> None:
    w = world([{"duration": 5000.0}, {"duration": 5000.0}], v100=1)
    x = {"j0": {"v100": 0.5}, "j1": {"v100": 0.5}}
    result = run(w, Fixed(x), round_seconds=360.0, reset_interval=1e9)
    assert segments(result, "j0")[:2] == [("v100", 0.0, 360.0), ("v100", 720.0, 1080.0)]
    assert segments(result, "j1")[:2] == [("v100", 360.0, 720.0), ("v100", 1080.0, 1440.0)]


def test_gavel_fifo_single_type_is_strict_fifo() -> None:
    # X one-hot for the head only; zero priorities are skipped for FIFO, so j1 and j2 wait
    # for the resets at the completions (interval 0)
    w = world([{"duration": 25.0}, {"duration": 15.0}, {"duration": 10.0}], v100=1)
    result = run(w, GavelFIFO(), reset_interval=0.0)
    assert result.completion == pytest.approx([25.0, 40.0, 50.0])
    assert result.extra["reset_times"] == [0.0, 25.0, 40.0]


def test_gavel_fifo_with_the_default_interval_waits_for_idle_reset() -> None:
    # reset at 0 and (last reset at 0) at 25; at 40 the interval has not passed, j2 has
    # priority 0 and nothing runs: the cluster is idle with every job arrived, so Gavel
    # forces a reset at once
    w = world([{"duration": 25.0}, {"duration": 15.0}, {"duration": 10.0}], v100=1)
    result = run(w, GavelFIFO(), round_seconds=360.0)
    assert result.completion == pytest.approx([25.0, 40.0, 50.0])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_gavel_fifo_jobs_stay_on_their_admitted_type(seed: int) -> None:
    w = world([{"duration": 30.0}] * 4, p100=2, v100=1, k80=2)
    result = run(w, GavelFIFO(seed=seed), seed=seed)
    assert result.all_finished
    iv = result.intervals
    for job in ("j0", "j1", "j2", "j3"):
        assert (
            len({iv["gpu_type"][k] for k in range(len(iv["job_id"])) if iv["job_id"][k] == job})
            == 1
        )
    # j0 is admitted on the last listed type, the v100, whatever the draw
    assert segments(result, "j0")[0][0] == "v100"


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_gavel_fifo_allocation_by_hand(seed: int) -> None:
    # listed types [p100, v100]; j0 goes to the last listed (v100), whose count hits 0, and the
    # drawn type leaves the list: drawn v100 (index 1) -> j1 goes to the p100 and j2 waits;
    # drawn p100 (index 0) -> only the full v100 is listed, no room: j1 and j2 wait
    w = world([{"duration": 30.0}] * 3, p100=1, v100=1)
    policy = GavelFIFO(seed=seed)
    policy.reset(w)
    active = tuple(JobState(job=j) for j in w.jobs)
    state = SimState(now=0.0, world=w, active=active, round_index=0, round_seconds=10.0)
    x = policy.fractional(state)
    drawn = random.Random(seed).randrange(2)
    assert x["j0"] == {"v100": 1.0}
    assert x["j1"] == ({"p100": 1.0} if drawn == 1 else {})
    assert x["j2"] == {}


def gandiva_state(w: World) -> SimState:
    active = tuple(JobState(job=j) for j in w.jobs)
    return SimState(now=0.0, world=w, active=active, round_index=0, round_seconds=360.0)


def test_gavel_gandiva_splits_the_cluster_when_jobs_fit() -> None:
    # 2 one-GPU jobs on 2 GPUs: no packing; X = (C_j / M) / gang = 1/2 on each type
    w = world([{"duration": 100.0}, {"duration": 100.0}], p100=1, v100=1)
    policy = GavelGandiva()
    policy.reset(w)
    x = policy.gavel_allocation(gandiva_state(w), [("j0", "j1")])
    assert x == {("j0",): {"p100": 0.5, "v100": 0.5}, ("j1",): {"p100": 0.5, "v100": 0.5}}


def test_gavel_gandiva_packs_when_oversubscribed() -> None:
    # 3 jobs, 1 GPU: random.Random(0).sample([0, 1, 2], 2) == [1, 2] pairs j1 and j2 (their
    # normalized packed throughput 0.8 + 0.8 >= 1); M = 2 combinations, X = 1/2 each
    w = world([{"duration": 10_000.0}] * 3, v100=1)
    policy = GavelGandiva(seed=0)
    policy.reset(w)
    x = policy.gavel_allocation(gandiva_state(w), [("j0", "j1"), ("j0", "j2"), ("j1", "j2")])
    assert x == {("j0",): {"v100": 0.5}, ("j1", "j2"): {"v100": 0.5}}
    # under the mechanism (T = 6 x 180 at the reset: the six combinations' priors); a pair's
    # time starts at 0 when it is formed, so the reset books it a deficit of +180 (Gavel's
    # _populate_job_combination_metadata), which breaks the ties in its favour:
    # round 1: (j0) and (j1, j2) tie at 0.5 / (180/1080) = 3; deficits 0 < 180 -> the pair
    # round 2: pair 0.5 / (540/1440) = 1.33 < j0 0.5 / (180/1440) = 4 -> j0
    # round 3: both 0.5 / (540/1800) -> tie, the pair's deficit again -> the pair
    result = run(w, GavelGandiva(seed=0), round_seconds=360.0, reset_interval=1e9)
    assert segments(result, "j0")[0] == ("v100", 360.0, 720.0)
    assert segments(result, "j1")[:2] == [("v100", 0.0, 360.0), ("v100", 720.0, 1080.0)]
    assert segments(result, "j2")[:2] == [("v100", 0.0, 360.0), ("v100", 720.0, 1080.0)]
    shared = {
        (result.intervals["job_id"][k], result.intervals["shared_with"][k])
        for k in range(len(result.intervals["job_id"]))
        if result.intervals["start"][k] == 0.0
    }
    assert shared == {("j1", "j2"), ("j2", "j1")}


def test_agnostic_policies_shuffle_types() -> None:
    assert is_agnostic(make_policy("max-min"))
    assert not is_agnostic(make_policy("max-min-perf"))
    assert is_agnostic(make_policy("gavel-fifo"))


def test_bad_options_are_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        GavelMechanism(reset_interval=-1.0)
    assert err.value.field == "reset_interval"
    w = world([{"duration": 10.0}], v100=1)
    with pytest.raises(InvalidInstanceError) as err:
        simulate(w, make_policy("max-min-perf"), mechanism="nope")
    assert err.value.field == "mechanism"
    with pytest.raises(InvalidInstanceError) as err:
        simulate(w, make_policy("max-min-perf"), mechanism="gavel", round_seconds=None)
    assert err.value.field == "round_seconds"
    with pytest.raises(PolicyError):
        simulate(w, make_policy("fifo"), mechanism="gavel")


def test_default_mechanism_is_unchanged() -> None:
    w = world([{"duration": 100.0}, {"arrival": 50.0, "duration": 100.0}], v100=1, p100=1)
    a = simulate(w, make_policy("max-min-perf"))
    b = simulate(w, make_policy("max-min-perf"), mechanism="optsched")
    assert a.completion == b.completion
    assert "mechanism" not in a.extra


@settings(deadline=None, max_examples=30)
@given(
    worlds(max_jobs=6), st.sampled_from(["max-min-perf", "max-min", "gavel-fifo", "gavel-gandiva"])
)
def test_validator_passes_on_random_worlds(w: World, name: str) -> None:
    result = simulate(w, make_policy(name), mechanism="gavel", round_seconds=10.0)
    report = validate(result.world, result)
    assert report.ok, report.violations[:3]
    assert result.extra["mechanism"] == "gavel"
    assert all(
        math.isnan(c) or c >= j.arrival for c, j in zip(result.completion, w.jobs, strict=True)
    )


def test_interior_allocation_is_feasible_and_as_good_as_the_vertex() -> None:
    # three jobs on 1 v100 + 1 p100: every job's max-min share is 2/3 of its fair share at the
    # optimum, reached by both the simplex vertex and the interior point
    w = world([{"duration": 100.0}] * 3, p100=1, v100=1)
    active = tuple(JobState(job=j) for j in w.jobs)
    state = SimState(now=0.0, world=w, active=active, round_index=0, round_seconds=360.0)
    vertex = make_policy("max-min-perf")
    interior = make_policy("max-min-perf")
    vertex.reset(w)
    interior.reset(w)
    xv = vertex.fractional(state)
    xi = interior.interior_fractional(state)  # type: ignore[attr-defined]
    for x in (xv, xi):
        assert all(sum(row.values()) <= 1.0 + 1e-6 for row in x.values())
        for t in ("v100", "p100"):
            assert sum(row.get(t, 0.0) for row in x.values()) <= 1.0 + 1e-6
    speed = {"v100": 2.0, "p100": 1.0}
    worst_v = min(sum(speed[t] * v for t, v in row.items()) for row in xv.values())
    worst_i = min(sum(speed[t] * v for t, v in row.items()) for row in xi.values())
    assert worst_i == pytest.approx(worst_v, rel=1e-4)
    # and the mechanism takes either, by its option
    for flag in (True, False):
        result = run(w, make_policy("max-min-perf"), interior=flag, round_seconds=360.0)
        assert result.all_finished


def test_whole_steps_leave_a_gap_before_each_round_end() -> None:
    # 9 s rounds: j1 (2 steps/s) makes 18 steps in 9 s and sets the round's end; j0 (scaled to
    # 0.5 step/s) makes int(4.5) = 4 steps in 8 s and then holds its GPU idle for 1 s. Late in
    # time (t ~ 2e6, where 1 s is within the relative time tolerance) the gaps must stay gaps
    t0 = 2_000_000.0
    rows = [
        {"arrival": t0, "duration": 30.0, "total_steps": 15.0},
        {"arrival": t0, "duration": 10_000.0},
    ]
    w = world(rows, v100=2)
    assert w.rate(w.jobs[0], "v100") == pytest.approx(0.5)
    x = {"j0": {"v100": 1.0}, "j1": {"v100": 1.0}}
    result = run(w, Fixed(x), round_seconds=9.0)
    # 4 + 4 + 4 steps, then the last 3 in 6 s
    expected = [(0.0, 8.0), (9.0, 17.0), (18.0, 26.0), (27.0, 33.0)]
    got = [(round(s - t0, 6), round(e - t0, 6)) for _, s, e in segments(result, "j0")]
    assert got == expected
    assert result.completion[0] == pytest.approx(t0 + 33.0)


def test_gavel_makespan_search_is_within_five_percent() -> None:
    # one job of 1000 steps at 2 steps/s on a v100, 1 step/s on a p100, one GPU of each: a
    # job's time fractions sum to at most 1, so the best makespan is 500 s (the v100 alone);
    # the search stops with a T at most 5% above, and its allocation finishes within that T
    from optsched.allocation.gavel import AllocationInstance, AllocationJob
    from optsched.sim.policies.gavel_makespan import gavel_makespan_allocation

    job = AllocationJob(
        job_id="j0",
        throughput_steps_per_s=(2.0, 1.0),
        scale_factor=1,
        weight=1.0,
        steps_remaining=1000.0,
        time_since_start_s=0.0,
    )
    instance = AllocationInstance(gpu_types=("v100", "p100"), capacity=(1, 1), jobs=(job,))
    x = gavel_makespan_allocation(instance, aware=True)
    assert x is not None
    assert x.sum() <= 1.0 + 1e-6
    speed = 2.0 * x[0, 0] + 1.0 * x[0, 1]
    assert 1000.0 / speed <= 500.0 * 1.05 + 1e-3
    # agnostic: every type at the first type's rate (2 steps/s)
    xa = gavel_makespan_allocation(instance, aware=False)
    assert xa is not None
    assert 1000.0 / (2.0 * xa[0].sum()) <= 500.0 * 1.05 + 1e-3


def test_pair_member_done_mid_round_is_dated_by_gavel_at_the_pair_end() -> None:
    # j1 and j2 share the v100 first (seed 0 pairs them; their deficit wins the tie): j1's 200
    # steps at the pair rate 1.6 take 125 s; j2 goes on alone for the rest of the round.
    # Gavel reports j1 done when the pair's round ends: j2's int(1.6 * 360) = 576 steps, 360 s
    rows = [{"duration": 10_000.0}, {"duration": 100.0}, {"duration": 10_000.0}]
    w = world(rows, v100=1)
    result = run(w, GavelGandiva(seed=0), round_seconds=360.0, reset_interval=1e9)
    assert result.completion[1] == pytest.approx(125.0)
    assert result.extra["gavel_completion"][1] == pytest.approx(360.0)
    assert result.extra["gavel_completion"][0] == result.completion[0]
    assert segments(result, "j2")[:2] == [("v100", 0.0, 125.0), ("v100", 125.0, 360.0)]


CLI_HEADER = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"


def test_cli_run_and_compare_take_the_mechanism(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from optsched.cli import main

    trace = tmp_path / "trace.csv"
    trace.write_text(CLI_HEADER + "a,0,1,,,100,,1,,u\nb,5,1,,,50,,1,,u\nc,700,1,,,10,,1,,u\n")
    code = main(["sim", "run", str(trace), "--cluster", "v100=1", "--policy", "gavel-fifo",
                 "--mechanism", "gavel", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["valid"] is True and out["mechanism"] == "gavel"
    # single type, strict FIFO: a [0, 100]; b waits for the reset at 100 (the last reset was
    # at time 0) and runs [100, 150]; c arrives at 700 < 100 + 1920, waits one idle iteration,
    # and with every job arrived and nothing running the reset is forced: [700, 710]
    assert out["metrics"]["makespan"] == pytest.approx(710.0)
    code = main(["sim", "run", str(trace), "--cluster", "v100=1", "--reset-interval", "10",
                 "--json"])  # fmt: skip
    assert code == 2
    assert "--reset-interval" in capsys.readouterr().out
    code = main(["sim", "compare", str(trace), "--cluster", "v100=1", "--policies",
                 "max-min-perf,gavel-fifo", "--mechanism", "gavel", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {r["policy"] for r in out["policies"]} == {"max-min-perf", "gavel-fifo"}


def test_a_gang_moved_within_its_server_runs_on_without_restore() -> None:
    """Gavel's walk may hand a job other GPUs of the same server in the next round (here the
    2-GPU gang takes the first ones): the run goes on, as the record and the validator see it
    (a run is its GPU type and servers), so no restore is charged (found by Hypothesis)."""
    cluster = ClusterSpec(gpu_types=(GpuType(name="v100", count=3, gpus_per_server=4),))
    table = throughputs_from_dict(TABLE, reference="v100")
    rows = [
        {"model": "A", "duration": 1.0},
        {"model": "A", "duration": 12.5},
        {"model": "A", "duration": 1.0, "num_gpus": 2},
    ]
    w = World.from_frame(job_frame(rows), cluster, table, restore_s=0.5)
    result = simulate(w, make_policy("max-min-perf"), mechanism="gavel", round_seconds=10.0)
    report = validate(result.world, result)
    assert report.ok, report.violations[:3]
    runs = result.intervals_frame().query("job_id == 'j1'")
    assert set(runs.server) == {0} and runs.end.max() > 10.0  # two rounds on one server
    assert result.completion[1] == pytest.approx(12.5, abs=1e-9)  # 12.5 s alone, no restore
