"""The simulator against closed forms and brute force."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st
from strategies.sim import job_frame, one_gpu_world, synthetic_throughputs, worlds

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim import (
    ClusterSpec,
    GpuType,
    GrantPlacement,
    Policy,
    PolicyDecision,
    SimState,
    World,
    default_horizon,
    event_bound,
    parse_cluster,
    replay_rounds,
    simulate,
    validate,
)
from optsched.sim.policies import FIFO, POLICIES, SRTF, Gandiva, Tiresias, make_policy
from optsched.tolerances import TIME_TOL, within


def _mean_jct(result) -> float:
    jobs = result.world.jobs
    return sum(c - j.arrival for j, c in zip(jobs, result.completion, strict=True)) / len(jobs)


# -- one job alone ------------------------------------------------------------------------


@pytest.mark.parametrize("gpu", ["fast", "slow"])
@pytest.mark.parametrize("gang", [1, 2, 4])
def test_one_job_alone_takes_work_over_rate(gpu: str, gang: int) -> None:
    tp = synthetic_throughputs()
    cluster = ClusterSpec(gpu_types=(GpuType(name=gpu, count=8, gpus_per_server=4),))
    world = World.from_frame(
        job_frame([{"arrival": 3.0, "model": "B", "total_steps": 90.0, "num_gpus": gang}]),
        cluster,
        tp,
    )
    result = simulate(world, FIFO())
    # the table's rate, written out: base 1.5 x speed x gang
    rate = 1.5 * {"fast": 2.0, "slow": 1.0}[gpu] * gang
    assert within(result.completion[0], 3.0 + 90.0 / rate, TIME_TOL)
    assert validate(world, result).ok


def test_duration_only_job_takes_its_duration_on_the_reference_type() -> None:
    tp = synthetic_throughputs()
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=4, gpus_per_server=4),))
    world = World.from_frame(
        job_frame([{"model": "A", "duration": 17.0, "num_gpus": 2}]), cluster, tp
    )
    assert within(simulate(world, FIFO()).completion[0], 17.0, TIME_TOL)


def test_steps_and_duration_keep_the_duration_and_the_table_speedup() -> None:
    tp = synthetic_throughputs()
    cluster = ClusterSpec(gpu_types=(GpuType(name="slow", count=4, gpus_per_server=4),))
    world = World.from_frame(
        job_frame([{"model": "A", "duration": 10.0, "total_steps": 500.0}]), cluster, tp
    )
    # 10 s on "fast" (the reference); "slow" is half as fast in the table
    assert within(simulate(world, FIFO()).completion[0], 20.0, TIME_TOL)


# -- N identical jobs: FIFO vs round-robin time slicing -----------------------------------


@pytest.mark.parametrize("n", [1, 2, 5])
def test_fifo_identical_jobs(n: int) -> None:
    world = one_gpu_world([4.0] * n)
    result = simulate(world, FIFO())
    assert [round(c, 9) for c in result.completion] == [4.0 * (k + 1) for k in range(n)]
    assert within(_mean_jct(result), 4.0 * (n + 1) / 2, TIME_TOL)


@pytest.mark.parametrize(("n", "m", "restore"), [(2, 3, 0.0), (4, 2, 0.0), (3, 4, 0.25)])
def test_round_robin_identical_jobs(n: int, m: int, restore: float) -> None:
    """Quantum L, n jobs of m quanta; each resume costs ``restore`` of its quantum.

    Job i (0-based) completes at ((m - 1) n + i + 1) L, so the mean JCT is
    ((m - 1) n + (n + 1) / 2) L, against FIFO's (n + 1) / 2 * m L (with no restore cost).
    """
    quantum = 2.0
    work = quantum + (m - 1) * (quantum - restore)
    world = one_gpu_world([work] * n, restore=restore)
    result = simulate(world, Gandiva(round_seconds=quantum, packing=False))
    expected = [((m - 1) * n + i + 1) * quantum for i in range(n)]
    assert all(within(c, e, TIME_TOL) for c, e in zip(result.completion, expected, strict=True))
    assert within(_mean_jct(result), ((m - 1) * n + (n + 1) / 2) * quantum, TIME_TOL)
    assert validate(world, result).ok


# -- SRTF against brute force on one GPU --------------------------------------------------


def _best_order_mean(durations: list[float], arrivals: list[float]) -> float:
    best = math.inf
    for order in itertools.permutations(range(len(durations))):
        t = total = 0.0
        for k in order:
            t = max(t, arrivals[k]) + durations[k]
            total += t - arrivals[k]
        best = min(best, total / len(durations))
    return best


@given(st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_srtf_equals_the_best_order_when_all_arrive_together(sizes: list[int]) -> None:
    durations = [float(s) for s in sizes]
    world = one_gpu_world(durations)
    result = simulate(world, SRTF())
    assert within(_mean_jct(result), _best_order_mean(durations, [0.0] * len(sizes)), TIME_TOL)


@given(st.lists(st.tuples(st.integers(0, 10), st.integers(1, 9)), min_size=1, max_size=6))
def test_srtf_never_worse_than_any_order_with_arrivals(jobs: list[tuple[int, int]]) -> None:
    jobs = sorted(jobs)
    arrivals = [float(a) for a, _ in jobs]
    durations = [float(d) for _, d in jobs]
    world = one_gpu_world(durations, arrivals)
    result = simulate(world, SRTF())
    assert validate(world, result).ok
    assert _mean_jct(result) <= _best_order_mean(durations, arrivals) + TIME_TOL


@given(
    st.lists(st.tuples(st.integers(0, 10), st.integers(1, 9)), min_size=1, max_size=5),
    st.sampled_from(POLICIES),
)
def test_no_policy_beats_srtf_on_one_gpu(jobs: list[tuple[int, int]], name: str) -> None:
    jobs = sorted(jobs)
    world = one_gpu_world([float(d) for _, d in jobs], [float(a) for a, _ in jobs])
    srtf = _mean_jct(simulate(world, SRTF()))
    result = simulate(world, make_policy(name))
    assert result.all_finished
    assert validate(world, result).ok
    assert srtf <= _mean_jct(result) + TIME_TOL * max(1.0, srtf)


# -- every policy on random worlds ---------------------------------------------------------


#: A world random search found (``make props``): one 2-GPU gang, which AlloX refuses.
_GANG_WORLD = World.from_frame(
    job_frame([{"job_id": "j0", "num_gpus": 2, "model": "A", "duration": 4.0}]),
    parse_cluster("fast=2"),
    synthetic_throughputs(),
)


@given(worlds(), st.sampled_from(POLICIES))
@example(_GANG_WORLD, "allox")
def test_every_policy_run_validates(world: World, name: str) -> None:
    refused = make_policy(name).refuses(world)
    if refused is not None:
        # a policy that declares a world out of its scope refuses it with the field named
        event("policy refuses the world")
        with pytest.raises(InvalidInstanceError) as info:
            simulate(world, make_policy(name))
        assert info.value.field.startswith("jobs[") and refused in str(info.value)
        return
    result = simulate(world, make_policy(name))
    report = validate(world, result)
    assert report.ok, report.violations[:3]
    assert result.all_finished
    assert result.events <= event_bound(
        world,
        result.round_seconds,
        default_horizon(world, result.round_seconds),
        make_policy(name).max_wakeups(world),
    )


@given(worlds(max_jobs=5), st.sampled_from([None, 1.0, 5.0]))
def test_rounds_or_events_srtf_validates(world: World, rounds: float | None) -> None:
    if rounds is not None and rounds <= world.restore_s:
        rounds = world.restore_s + 1.0
    result = simulate(world, SRTF(), round_seconds=rounds)
    assert validate(world, result).ok
    assert result.all_finished


# -- mechanisms ------------------------------------------------------------------------------


def test_tiresias_las_demotes_at_thresholds() -> None:
    world = one_gpu_world([100.0, 20.0], [0.0, 5.0])
    result = simulate(world, Tiresias("las", thresholds=(10.0,)))
    # A runs 0-10 and is demoted; B runs 10-20 and is demoted; FIFO in the low queue: A, then B
    assert [round(c, 9) for c in result.completion] == [110.0, 120.0]
    assert validate(world, result).ok


def test_tiresias_promote_knob_lets_a_starving_job_back() -> None:
    world = one_gpu_world([100.0, 50.0, 50.0], [0.0, 0.0, 30.0])
    plain = simulate(world, Tiresias("las", thresholds=(10.0,)))
    promoted = simulate(world, Tiresias("las", thresholds=(10.0,), promote_knob=1.0))
    assert validate(world, promoted).ok
    assert plain.completion != promoted.completion


def test_gandiva_packs_good_pairs_and_reverts_bad_ones() -> None:
    tp = synthetic_throughputs()
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=1, gpus_per_server=1),))
    good = World.from_frame(
        job_frame([{"model": "A", "duration": 10.0}, {"model": "A", "duration": 10.0}]), cluster, tp
    )
    gandiva = Gandiva(round_seconds=1.0)
    result = simulate(good, gandiva)
    assert validate(good, result).ok
    assert any(result.intervals["shared_with"])
    # packed at 0.8 of the alone rate each: both finish at 10 / 0.8
    assert all(within(c, 12.5, TIME_TOL) for c in result.completion)
    bad = World.from_frame(
        job_frame([{"model": "B", "duration": 10.0}, {"model": "B", "duration": 10.0}]), cluster, tp
    )
    gandiva = Gandiva(round_seconds=1.0)
    result = simulate(bad, gandiva)
    assert validate(bad, result).ok
    assert gandiva.reverted == 1
    shared_until = max(
        e
        for e, s in zip(result.intervals["end"], result.intervals["shared_with"], strict=True)
        if s
    )
    assert shared_until == 1.0  # one round packed, then reverted for good


def test_spread_gang_runs_at_the_unconsolidated_rate() -> None:
    tp = synthetic_throughputs()
    cluster = ClusterSpec(gpu_types=(GpuType(name="fast", count=4, gpus_per_server=2),))
    world = World.from_frame(
        job_frame(
            [
                {"model": "A", "total_steps": 100.0, "num_gpus": 1},
                {"arrival": 0.0, "model": "A", "total_steps": 100.0, "num_gpus": 1},
                {"arrival": 1.0, "model": "A", "total_steps": 40.0, "num_gpus": 2},
            ]
        ),
        cluster,
        tp,
    )

    class Spread(Policy):
        name = "spread"

        def allocate(self, state: SimState) -> PolicyDecision:
            from optsched.sim import Grant

            grants = []
            for s in state.active:
                if s.job.num_gpus == 1:
                    server = 0 if s.job_id == "j0" else 1
                    grants.append(Grant(s.job_id, "fast", GrantPlacement("fast", ((server, 1),))))
                else:
                    grants.append(Grant(s.job_id, "fast"))
            return PolicyDecision(tuple(grants))

    result = simulate(world, Spread())
    assert validate(world, result).ok
    # the 2-GPU job can only be spread over both servers: 0.8 x 2 x 2.0 steps/s
    assert within(result.completion[2], 1.0 + 40.0 / (0.8 * 2 * 2.0), TIME_TOL)


def test_fractional_policy_alternates_by_gavel_priority() -> None:
    world = one_gpu_world([3.0, 3.0])

    class Half(Policy):
        name = "half"
        round_seconds = 1.0

        def fractional(self, state: SimState):  # type: ignore[no-untyped-def]
            return {s.job_id: {"gpu": 0.5} for s in state.active}

    result = simulate(world, Half())
    assert validate(world, result).ok
    starts = sorted(zip(result.intervals["start"], result.intervals["job_id"], strict=True))
    assert [j for _, j in starts] == ["j0", "j1"] * 3
    assert result.completion == [5.0, 6.0]


# -- replay and errors -----------------------------------------------------------------------


def test_replay_rounds_is_validated() -> None:
    world = one_gpu_world([1.5, 1.0], [0.0, 0.5], restore=0.25)
    result = replay_rounds(world, [{"j0": "gpu"}, {"j1": "gpu"}, {"j0": "gpu"}], 1.0)
    assert validate(world, result).ok
    assert result.completion == [2.75, 2.0]


def test_replay_rejects_an_over_full_round() -> None:
    world = one_gpu_world([1.0, 1.0])
    with pytest.raises(PolicyError):
        replay_rounds(
            world,
            [{"j0": GrantPlacement("gpu", ((0, 1),)), "j1": GrantPlacement("gpu", ((0, 1),))}],
            1.0,
        )


def test_event_budget_is_checked_before_running() -> None:
    world = one_gpu_world([1.0] * 5)
    with limits.override(max_events=3), pytest.raises(InvalidInstanceError) as err:
        simulate(world, FIFO())
    assert err.value.field == "jobs"


def test_round_must_exceed_restore() -> None:
    world = one_gpu_world([1.0], restore=2.0)
    with pytest.raises(InvalidInstanceError) as err:
        simulate(world, FIFO(), round_seconds=1.0)
    assert err.value.field == "round_seconds"


def test_horizon_truncates_and_says_so() -> None:
    world = one_gpu_world([10.0, 10.0])
    result = simulate(world, FIFO(), max_time=15.0)
    assert result.truncated
    assert result.completion[0] == 10.0 and math.isnan(result.completion[1])
    assert validate(world, result).ok


def test_policy_errors_are_typed() -> None:
    world = one_gpu_world([1.0])

    class Bad(Policy):
        name = "bad"

        def allocate(self, state: SimState) -> PolicyDecision:
            from optsched.sim import Grant

            return PolicyDecision((Grant("nope", "gpu"),))

    with pytest.raises(PolicyError):
        simulate(world, Bad())


def test_gandiva_migrates_to_defragment() -> None:
    cluster = ClusterSpec(gpu_types=(GpuType(name="g", count=4, gpus_per_server=2),))
    rows = [
        {"arrival": 0.0, "duration": 100.0},  # j0 and j1 fill server 0
        {"arrival": 0.0, "duration": 3.0},
        {"arrival": 0.0, "duration": 100.0},  # j2 and j3 fill server 1
        {"arrival": 0.0, "duration": 3.0},
        {"arrival": 5.0, "duration": 10.0, "num_gpus": 2},  # finds one free GPU per server
    ]
    world = World.from_frame(job_frame(rows), cluster)
    gandiva = Gandiva(round_seconds=1.0, packing=False)
    result = simulate(world, gandiva)
    assert validate(world, result).ok
    assert gandiva.migrations >= 1
    frame = result.intervals_frame()
    gang = frame[frame["job_id"] == "j4"]
    assert gang.groupby("start")["server"].nunique().max() == 1  # consolidated after migrating
    assert within(result.completion[4], 15.0, TIME_TOL)
    plain = Gandiva(round_seconds=1.0, packing=False, migration=False)
    spread = simulate(world, plain).intervals_frame()
    assert spread[spread["job_id"] == "j4"].groupby("start")["server"].nunique().max() == 2


def test_keep_running_adds_jobs_and_refuses_regrants() -> None:
    from optsched.sim import Grant

    world = one_gpu_world([2.0, 2.0], [0.0, 1.0])
    cluster2 = ClusterSpec(gpu_types=(GpuType(name="gpu", count=2, gpus_per_server=2),))
    world2 = World(cluster=cluster2, throughputs=world.throughputs, jobs=world.jobs)

    class Add(Policy):
        name = "add"

        def allocate(self, state: SimState) -> PolicyDecision:
            new = tuple(Grant(s.job_id, "gpu") for s in state.arrived)
            return PolicyDecision(new, keep_running=True)

    result = simulate(world2, Add())
    assert validate(world2, result).ok
    assert result.completion == [2.0, 3.0]

    class Regrant(Policy):
        name = "regrant"

        def allocate(self, state: SimState) -> PolicyDecision:
            return PolicyDecision(
                tuple(Grant(s.job_id, "gpu") for s in state.active), keep_running=True
            )

    with pytest.raises(PolicyError):
        simulate(world2, Regrant())
