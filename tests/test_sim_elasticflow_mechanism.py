"""ElasticFlow's mechanism (``simulate(mechanism="elasticflow")``): plans, admission, records."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.engine.elasticflow import ElasticFlowMechanism, buddy_place
from optsched.sim.engine.elasticflow_options import overhead_seconds
from optsched.sim.engine.elasticflow_plan import FreeProfile, Plan, plan_min_share
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import TIME_TOL

# "lin": n steps/s on n GPUs up to 8; "sub": 10, 18, 24 steps/s on 1, 2, 4 GPUs, flat beyond
LIN = ScalingCurve((1, 2, 4, 8), (1.0, 2.0, 4.0, 8.0))
SUB = ScalingCurve((1, 2, 4), (10.0, 18.0, 24.0))


def _world(rows: list[dict[str, object]], count: int = 8) -> World:
    profiles = ScalingProfiles(gpu_type="a100", curves={("lin", 64): LIN, ("sub", 64): SUB})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=8),))
    frame = job_frame([{"batch_size": 64, "num_gpus": 1, **r} for r in rows])
    return World.from_frame(frame, cluster, table)


def _segments(result: object, job: str) -> list[tuple[float, float, int]]:
    frame = result.intervals_frame()  # type: ignore[attr-defined]
    rows = frame[frame["job_id"] == job]
    out: dict[tuple[float, float], int] = {}
    for r in rows.itertuples():
        out[(r.start, r.end)] = out.get((r.start, r.end), 0) + int(r.gpus)
    return sorted((s, e, g) for (s, e), g in out.items())


def test_hand_case_admission_overhead_and_slot() -> None:
    """A: 600 steps by 1000 on a linear job, 8 GPUs; B arrives at 30 needing 100 s on 8 GPUs
    by 100 (impossible). A's share is 1 GPU, the free 7 go to it level by level (GPU time
    unchanged, marginal 0) up to 8; overhead 2 + 2 (log2 8 + 1) = 10 s, so it runs from 10.
    B's arrival is within a slot of 0 with A's completion (85) pending: decided at 60, where B
    is declined; A (200 steps left) keeps its cached GPUs: 2 s overhead, done at 62 + 25."""
    world = _world(
        [
            {"job_id": "A", "model": "lin", "total_steps": 600, "deadline": 1000},
            {"job_id": "B", "model": "lin", "total_steps": 800, "arrival": 30, "deadline": 100},
        ]
    )
    res = simulate(world, "elasticflow", mechanism="elasticflow")
    validate(res.world, res).raise_if_invalid()
    assert res.extra["declined_jobs"] == ["B"]
    assert _segments(res, "A") == [(10.0, 60.0, 8), (62.0, 87.0, 8)]
    assert res.completion[0] == pytest.approx(87.0)
    assert math.isnan(res.completion[1])
    # without the overhead: 75 s on 8 GPUs from 0, one segment
    off = simulate(world, "elasticflow", mechanism=ElasticFlowMechanism(overhead=False))
    assert _segments(off, "A") == [(0.0, 75.0, 8)]
    assert off.extra["declined_jobs"] == ["B"]


def test_min_share_plans_as_late_as_possible() -> None:
    """4 GPUs free until 100, then 1: 300 steps by 200 at n steps/s. One GPU: 100 steps in
    [100, 200) + 100 in [0, 100) = 200 < 300; two GPUs: 100 after 100 (fit(2, 1) = 1), then
    200 in [0, 100) reaches 300 at the piece starting at 0: the share is 2 from 0."""
    prof = FreeProfile(0.0, 4)
    prof.add(Plan([(100.0, 3)], 1000.0, True), -1)
    plan = plan_min_share(prof, 0.0, 300.0, 200.0, [1, 2, 4], lambda n: float(n))
    assert plan.pieces == [(0.0, 2), (100.0, 1)]
    assert plan.end == 200.0 and plan.ok
    # one GPU from the last piece (from 100) is enough by 300: the job waits until then (the
    # walk back stops at a piece's start, not at the last possible second)
    prof = FreeProfile(0.0, 4)
    prof.add(Plan([(100.0, 2)], 1000.0, True), -1)
    late = plan_min_share(prof, 0.0, 100.0, 300.0, [1, 2, 4], lambda n: float(n))
    assert late.pieces == [(0.0, 0), (100.0, 1)] and late.end == 200.0


def test_overhead_model() -> None:
    assert overhead_seconds(8, 16, restart=False, cached=True) == 2.0
    assert overhead_seconds(8, 16, restart=False, cached=False) == 10.0
    assert overhead_seconds(1, 256, restart=True, cached=False) == 7.0 + 47.0 + 2.0


def test_buddy_place_aligned_blocks() -> None:
    place = buddy_place([(0, 2), (1, 8), (2, 4), (3, 1), (4, 1)], [8, 8])
    assert place[1] == ((0, 0, 8),)
    assert place[2] == ((1, 0, 4),)
    assert place[0] == ((1, 4, 2),)
    assert {place[3], place[4]} == {((1, 6, 1),), ((1, 7, 1),)}


def test_refusals() -> None:
    world = _world([{"model": "lin", "total_steps": 10, "deadline": 100}])
    with pytest.raises(PolicyError):
        simulate(world, "fifo", mechanism="elasticflow")
    import dataclasses

    with pytest.raises(InvalidInstanceError) as err:
        simulate(dataclasses.replace(world, restore_s=5.0), "edf", mechanism="elasticflow")
    assert err.value.field == "restore_s"
    with pytest.raises(InvalidInstanceError):
        ElasticFlowMechanism(slot_seconds=0)


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, object]]:
    n = draw(st.integers(1, 7))
    rows = []
    for k in range(n):
        arrival = draw(st.integers(0, 400))
        steps = draw(st.integers(1, 4000))
        model = draw(st.sampled_from(["lin", "sub"]))
        slack = draw(st.integers(1, 1500))
        rows.append(
            {
                "job_id": f"j{k}",
                "model": model,
                "arrival": arrival,
                "total_steps": steps,
                "deadline": arrival + slack,
                "num_gpus": draw(st.sampled_from([1, 2, 4, 8])),
            }
        )
    rows.sort(key=lambda r: r["arrival"])  # type: ignore[arg-type, return-value]
    return rows


@given(
    _rows(),
    st.sampled_from(["elasticflow", "edf", "tiresias-las", "gandiva", "themis"]),
    st.booleans(),
    st.sampled_from([8, 16, 24]),
)
def test_records_valid_gangs_powers_of_two(
    rows: list[dict[str, object]], policy: str, overhead: bool, count: int
) -> None:
    world = _world(rows, count=count)
    res = simulate(world, policy, mechanism=ElasticFlowMechanism(overhead=overhead))
    validate(res.world, res).raise_if_invalid()
    gangs = res.intervals_frame().groupby(["job_id", "start"])["gpus"].sum()
    for (job_id, _), g in gangs.items():
        if policy in ("tiresias-las", "gandiva", "themis"):
            assert g == world.jobs[[j.job_id for j in world.jobs].index(job_id)].num_gpus
        else:
            assert g & (g - 1) == 0
    declined = set(res.extra["declined_jobs"])
    ids = [j.job_id for j in world.jobs]
    for job_id, (at, end) in res.extra["admission"].items():
        job = world.jobs[ids.index(job_id)]
        # an admitted job's plan at its admission meets its deadline
        assert end <= job.deadline and at >= job.arrival
    for i, job in enumerate(world.jobs):
        if job.job_id in declined:
            assert math.isnan(res.completion[i])
            assert job.job_id not in res.extra["admission"]
        else:
            assert not math.isnan(res.completion[i])
        if policy != "elasticflow":
            assert not declined
        if policy == "elasticflow" and not overhead and job.job_id not in declined:
            # plans round ends up to whole seconds, progress does not: no overhead, no lateness
            # the plans did not count on, so an admitted job meets its deadline
            assert res.completion[i] <= job.deadline + TIME_TOL


def test_metrics_count_declined_as_missed_beside_outcome() -> None:
    """ElasticFlow's count (declined = missed) beside optsched's (finished by the deadline)."""
    from optsched.sim.measure.metrics import deadline_metrics, run_metrics

    world = _world(
        [
            {"job_id": "A", "model": "lin", "total_steps": 600, "deadline": 1000},
            {"job_id": "B", "model": "lin", "total_steps": 800, "arrival": 30, "deadline": 100},
        ]
    )
    res = simulate(world, "elasticflow", mechanism="elasticflow")
    d = deadline_metrics(res)
    assert (d["deadlines"], d["deadlines_met"], d["deadlines_met_admitted"]) == (2, 1, 1)
    assert (d["deadlines_declined"], d["deadlines_late"]) == (1, 0)
    m = run_metrics(res)
    assert m["deadlines_met_fraction_admitted"] == 0.5 and m["deadlines_declined"] == 1
    # optsched's own policy declines on its 60 s grid (deadline 100 counts as 60) a job needing
    # 90 s, then runs it as the lowest class: it finishes at 90, in time. optsched's count
    # says met, ElasticFlow's says missed.
    one = _world([{"job_id": "C", "model": "lin", "total_steps": 90, "deadline": 100}])
    res = simulate(one, "elasticflow")
    assert res.extra["declined_jobs"] == ["C"] and res.completion[0] <= 100
    d = deadline_metrics(res)
    assert (d["deadlines_met"], d["deadlines_met_admitted"], d["deadlines_declined"]) == (1, 0, 1)
    # no deadlines: run_metrics carries no admission keys
    plain = _world([{"job_id": "D", "model": "lin", "total_steps": 10}])
    assert "deadlines_declined" not in run_metrics(simulate(plain, "fifo"))


def test_dlas_demotes_by_gpu_time_and_preempts() -> None:
    """DLAS-GPU on 8 GPUs. A (8 GPUs, 8000 steps at 8/s) runs alone from 0; B (4 GPUs, 100 s)
    arrives at 300 into queue 0 behind A, which holds all 8 GPUs and has 8 x 300 = 2400 < 3250
    GPU-seconds: B waits. The next demotion event is ElasticFlow's formula, 300 + ceil((3250 -
    300) / 8) = 669 (its limit in GPU-seconds, the executed time in seconds: A's GPU time had
    crossed 3250 at 407). At 669 A is demoted to queue 1, B (queue 0) runs first and A, not
    fitting beside it, is preempted; B ends at 769, where A resumes with 8000 - 8 x 669 = 2648
    steps left: 331 s, done at 1100."""
    world = _world(
        [
            {"job_id": "A", "model": "lin", "total_steps": 8000, "num_gpus": 8},
            {"job_id": "B", "model": "lin", "total_steps": 400, "arrival": 300, "num_gpus": 4},
        ]
    )
    res = simulate(world, "tiresias-las", mechanism=ElasticFlowMechanism(overhead=False))
    validate(res.world, res).raise_if_invalid()
    assert _segments(res, "A") == [(0.0, 669.0, 8), (769.0, 1100.0, 8)]
    assert _segments(res, "B") == [(669.0, 769.0, 4)]
    assert res.completion == [1100.0, 769.0]


@pytest.mark.parametrize(
    ("origin", "completion"),
    [
        # every decision (0, 60, 120, ...) is on the trace's 60 s grid: the set rotates
        (0.0, [100.0, 260.0, 160.0]),
        # cluster 10's clock (first arrival 2,266,647 = 27 mod 60): no decision rotates
        (27.0, [100.0, 200.0, 220.0]),
    ],
)
def test_gandiva_time_slices_a_node_set(origin: float, completion: list[float]) -> None:
    """Three 4-GPU jobs at 0 on one 8-GPU server: one node set of capacity 2 (B and C join
    the full set: no free server), A and B run. No arrival is left after 0, so no overhead.
    origin 0: at 60 the set rotates (C, A run; A done at 100), at 120 again (B, C; C done at
    160), then B alone (done at 260). origin 27: A and B run, A done at 100, C replaces it at
    120 (done at 220), B done at 200."""
    world = _world(
        [
            {"job_id": "A", "model": "lin", "total_steps": 400, "num_gpus": 4},
            {"job_id": "B", "model": "lin", "total_steps": 800, "num_gpus": 4},
            {"job_id": "C", "model": "lin", "total_steps": 400, "num_gpus": 4},
        ]
    )
    res = simulate(world, "gandiva", mechanism=ElasticFlowMechanism(clock_origin=origin))
    validate(res.world, res).raise_if_invalid()
    assert res.completion == completion


def test_gandiva_counts_a_node_sets_load_as_elasticflow_does() -> None:
    """A set's load is the jobs ever placed on it (ElasticFlow's ``util``), not those it holds:
    after seven 1-GPU jobs passed through a one-server set, the eighth opens a new set although
    only one job is left on the first."""
    from optsched.sim.engine.elasticflow_gandiva import GandivaSets

    sets = GandivaSets([1] * 8, num_servers=2, server_gpus=8, total=16)
    assert all(sets.place(i) for i in range(7))
    (first,) = sets.sets[1]
    assert first.jobs == list(range(7)) and first.util == 7 and first.capacity == 8
    first.jobs = [6]  # six finished: they leave the set, its util stays
    assert sets.place(7)
    assert len(sets.sets[1]) == 2 and [s.jobs for s in sets.sets[1]] == [[7], [6]]
