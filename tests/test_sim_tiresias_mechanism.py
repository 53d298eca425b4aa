"""The Tiresias simulator's mechanism (``simulate(mechanism="tiresias")``): hand cases, an
independent event loop, the shipped cluster-10 trace against the simulator's own numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.engine.elasticflow_dlas import DLAS_LIMITS, DlasQueues
from optsched.sim.engine.tiresias_options import TiresiasMechanism
from optsched.sim.engine.tiresias_run import whole_seconds
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs

# n steps/s on n GPUs: a job of d seconds on its gang n has n * d steps
LIN = ScalingCurve((1, 2, 4, 8), (1.0, 2.0, 4.0, 8.0))
# ../shared beside the checkout (or beside the directory holding a work tree)
SHARED = next(
    (
        p / "shared" / "data" / "elasticflow"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "data" / "elasticflow").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "elasticflow",
)
needs_shared = pytest.mark.skipif(
    not (SHARED / "cluster10.csv").is_file(), reason="../shared/data/elasticflow is absent"
)


def _world(rows: list[tuple[str, int, int, int]], count: int = 4, server: int = 4) -> World:
    """Jobs ``(id, gang, arrival, seconds)`` on ``count`` GPUs, servers of ``server``."""
    profiles = ScalingProfiles(gpu_type="a100", curves={("lin", 64): LIN})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=server),))
    frame = job_frame(
        [
            {
                "job_id": j,
                "model": "lin",
                "batch_size": 64,
                "num_gpus": g,
                "arrival": a,
                "total_steps": g * d,
            }
            for j, g, a, d in rows
        ]
    )
    return World.from_frame(frame, cluster, table)


def _run(world: World, **opts: object) -> list[float]:
    res = simulate(world, "tiresias-las", mechanism=TiresiasMechanism(**opts))  # type: ignore[arg-type]
    validate(res.world, res).raise_if_invalid()
    return res.completion


def test_a_running_job_keeps_its_place_ahead_of_an_earlier_waiting_one() -> None:
    """4 GPUs; A (2 GPUs, 100 s), B (3, 100 s), C (2, 900 s) at 0, in that order. At 0 A runs,
    B does not fit beside it, C does: queue 0 becomes [A, C, B]. At 100 A is done and C, running,
    stays ahead of B, which does not fit beside it: B waits until C ends at 900 and runs to
    1000. In order of arrival (the default tiresias-las) B would take the GPUs at 100."""
    world = _world([("A", 2, 0, 100), ("B", 3, 0, 100), ("C", 2, 0, 900)])
    assert _run(world) == [100.0, 1000.0, 900.0]
    # by arrival (the knob): B takes the GPUs at 100, C, preempted after 100 s, ends at 1000
    assert _run(world, queue_order="arrival") == [100.0, 200.0, 1000.0]
    default = simulate(world, "tiresias-las")
    assert default.completion[1] == pytest.approx(200.0)


@pytest.mark.parametrize(("division", "b_end", "a_end"), [("floor", 1287.0, 3100.0),
                                                          ("ceil", 1288.0, 3100.0)])  # fmt: skip
def test_demotion_at_the_predicted_jump(division: str, b_end: float, a_end: float) -> None:
    """4 GPUs; A (4 GPUs, 3000 s) at 0, B (4 GPUs, 100 s) at 500. A's service crosses 3250
    GPU-seconds at 812.5, but from B's arrival the next event is the predicted jump 500 +
    (3250 - 500) / 4 = 500 + 687.5 (wall seconds from a GPU-second limit): 1187 under Python
    2.7's integer division, 1188 rounded up. A is demoted there, B runs for 100 s, A resumes
    with 3000 - 1187 (or 1188) seconds left: done at 3100 either way."""
    world = _world([("A", 4, 0, 3000), ("B", 4, 500, 100)])
    assert _run(world, jump_division=division) == [a_end, b_end]


def test_a_jump_that_finds_the_limit_not_reached_predicts_again() -> None:
    """4 GPUs; A (4 GPUs, 5000 s) alone from 0; B (4 GPUs, 10 s) at 1000. From 0 the jump is
    at 3250 // 4 = 812, where A has 4 x 812 = 3248 < 3250 GPU-seconds: no demotion, the next
    jump at 812 + (3250 - 812) // 4 = 1421. B's arrival at 1000 comes first, and there A
    (4000 >= 3250) is demoted: B runs 1000-1010."""
    world = _world([("A", 4, 0, 5000), ("B", 4, 1000, 10)])
    assert _run(world) == [5010.0, 1010.0]


def test_promotion_sends_a_starved_job_back_to_queue_zero() -> None:
    """1 GPU. A (5000 s) at 0 is demoted at 3250 and keeps running; B (1200 s) at 3300 preempts
    it; D (3000 s) arrives at 4000. Without promotion B runs to 4500, then D (queue 0) to 7500,
    then A (queue 1) to 9200. Knob 0.1: A, having run 3300 s, is due back at 3300 + int(0.1 x
    3300) = 3630, to the end of queue 0 behind the running B and ahead of D, which enters at
    4000: at 4500 A runs its 1700 s left to 6200, D to 9200. Knob 0.5: due at 4950, when D runs
    (it took the GPU at 4500): A goes behind it, and the ends are those without promotion."""
    world = _world([("A", 1, 0, 5000), ("B", 1, 3300, 1200), ("D", 1, 4000, 3000)], 1, 1)
    assert _run(world) == [9200.0, 4500.0, 7500.0]
    assert _run(world, promote_knob=0.1) == [6200.0, 4500.0, 9200.0]
    assert _run(world, promote_knob=0.5) == [9200.0, 4500.0, 7500.0]


def test_a_horizon_cuts_the_run_with_a_valid_record() -> None:
    """The running-first case cut at 500: A done, C has run 500 of its 900 s, B waits."""
    world = _world([("A", 2, 0, 100), ("B", 3, 0, 100), ("C", 2, 0, 900)])
    res = simulate(world, "tiresias-las", mechanism="tiresias", max_time=500.0)
    validate(res.world, res).raise_if_invalid()
    assert res.status == "truncated" and res.end_time == 500.0
    assert res.completion[0] == 100.0 and math.isnan(res.completion[1])
    assert math.isnan(res.completion[2])


def test_whole_seconds_truncates_but_for_float_noise() -> None:
    assert whole_seconds(4935.999999999999) == 4936
    assert whole_seconds(4935.6) == 4935
    assert whole_seconds(0.4) == 1


def test_refusals() -> None:
    world = _world([("A", 1, 0, 10)])
    with pytest.raises(PolicyError, match="tiresias-las"):
        simulate(world, "fifo", mechanism="tiresias")
    with pytest.raises(InvalidInstanceError, match="limits"):
        TiresiasMechanism(limits=(7200.0, 3250.0))
    with pytest.raises(InvalidInstanceError, match="promote_knob"):
        TiresiasMechanism(promote_knob=0)
    with pytest.raises(InvalidInstanceError, match="queue_order"):
        TiresiasMechanism(queue_order="fifo")
    with pytest.raises(InvalidInstanceError, match="jump_division"):
        TiresiasMechanism(jump_division="round")
    import dataclasses

    with pytest.raises(InvalidInstanceError, match="restore_s"):
        simulate(dataclasses.replace(world, restore_s=5.0), "tiresias-las", mechanism="tiresias")


def test_dlas_queues_take_their_limits() -> None:
    """``DlasQueues`` with the default limits is ElasticFlow's; other limits move the
    demotion."""
    for limits, queue in ((DLAS_LIMITS, 1), ((5000.0, 9000.0), 0)):
        q = DlasQueues([2], 4, limits)
        q.add([0])
        q.decide()
        q.account(0, 2000.0)
        q.decide()
        assert q.qid[0] == queue


# -- an independent event loop, written from run_sim.py's dlas_sim_jobs as read ---------------


Jobs = list[tuple[int, int, int]]
State = list[dict[str, int | bool]]


def _ref_update(
    st_: State, jobs: Jobs, queues: list[list[int]], runnable: list[int], t: int,
    knob: float | None, limits: tuple[int, ...],
) -> None:  # fmt: skip
    """Every runnable job's counts at event ``t``: demotion, promotion."""
    for i in runnable:
        s = st_[i]
        dt = t - s["chk"]
        s["chk"] = t
        if s["run"]:
            s["ex"] += dt
            s["tot"] += dt
            if s["q"] < len(limits) and s["ex"] * jobs[i][0] >= limits[s["q"]]:
                queues[s["q"]].remove(i)
                s["q"] += 1
                queues[s["q"]].append(i)
        else:
            if s["ex"] > 0:
                s["wait"] += dt
            if knob and s["q"] > 0 and s["tot"] > 0 and s["ex"] > 0:
                if s["wait"] >= int(s["ex"] * knob):
                    s["ex"] = s["wait"] = 0
                    queues[s["q"]].remove(i)
                    s["q"] = 0
                    queues[0].append(i)


def _ref_walk(
    st_: State, jobs: Jobs, queues: list[list[int]], runnable: list[int], t: int, total: int,
    knob: float | None, limits: tuple[int, ...],
) -> tuple[float, list[int], float]:  # fmt: skip
    """The walk, the re-order, and the next end event and jump."""
    free = total
    for queue in queues:
        for i in queue:
            st_[i]["run"] = jobs[i][0] <= free
            free -= jobs[i][0] if st_[i]["run"] else 0
    for k, queue in enumerate(queues):
        queues[k] = [i for i in queue if st_[i]["run"]] + [i for i in queue if not st_[i]["run"]]
    running = [i for i in runnable if st_[i]["run"]]
    end_t = min((t + jobs[i][2] - st_[i]["tot"] for i in running), default=math.inf)
    ends = [i for i in running if t + jobs[i][2] - st_[i]["tot"] == end_t]
    jump = math.inf
    for i in runnable:
        s = st_[i]
        if s["run"] and s["q"] < len(limits):
            jump = min(jump, t + (limits[s["q"]] - s["ex"]) // jobs[i][0])
        elif not s["run"] and knob and s["q"] > 0 and s["tot"] > 0 and s["ex"] > 0:
            diff = int(s["ex"] * knob - s["wait"])
            if diff > 0:
                jump = min(jump, t + diff)
    return end_t, ends, jump


def _reference(
    jobs: list[tuple[int, int, int]], total: int, knob: float | None, limits: tuple[int, ...]
) -> list[int]:
    """Completion times of ``(gang, arrival, seconds)`` jobs (whole seconds, floor jumps)."""
    n = len(jobs)
    st_ = [
        {"q": 0, "ex": 0, "tot": 0, "wait": 0, "run": False, "chk": a, "end": -1}
        for _, a, _ in jobs
    ]
    queues: list[list[int]] = [[] for _ in range(len(limits) + 1)]
    runnable: list[int] = []
    arrivals = sorted({a for _, a, _ in jobs})
    jump: float = math.inf
    ends: list[int] = []  # (the simulator keeps only the earliest end event)
    end_t: float = math.inf
    while arrivals or runnable:
        start_t = arrivals[0] if arrivals else math.inf
        t = min(start_t, end_t)
        if t > jump:
            t, done, new = jump, [], []
        else:
            done = ends if end_t == t else []
            new = [i for i in range(n) if jobs[i][1] == t] if start_t == t else []
            if new:
                arrivals.pop(0)
        for i in done:
            st_[i]["end"] = t
            runnable.remove(i)
            queues[st_[i]["q"]].remove(i)
        for i in new:
            runnable.append(i)
            queues[0].append(i)
        _ref_update(st_, jobs, queues, runnable, t, knob, limits)
        end_t, ends, jump = _ref_walk(st_, jobs, queues, runnable, t, total, knob, limits)
    return [s["end"] for s in st_]


_JOB = st.tuples(st.sampled_from([1, 2, 4]), st.integers(0, 3000), st.integers(1, 4000))


@given(
    jobs=st.lists(_JOB, min_size=1, max_size=7),
    knob=st.sampled_from([None, 0.5, 1.0, 4.0]),
    limits=st.sampled_from([(3250, 7200), (500, 2000), (1000,)]),
)
def test_matches_an_independent_event_loop(
    jobs: list[tuple[int, int, int]], knob: float | None, limits: tuple[int, ...]
) -> None:
    jobs = sorted(jobs, key=lambda j: j[1])  # a world's rows come in order of arrival
    world = _world([(f"j{k}", g, a, d) for k, (g, a, d) in enumerate(jobs)], count=4, server=2)
    got = _run(world, promote_knob=knob, limits=tuple(float(x) for x in limits))
    assert got == [float(e) for e in _reference(jobs, 4, knob, limits)]


# -- the shipped cluster-10 trace, against the Tiresias simulator's own run ---------------------


@needs_shared
@pytest.mark.parametrize(
    ("knob", "mean_jct", "met"),
    # measured with the Tiresias simulator (959f9b0, Python 2.7.18, --scheme=count) on
    # cluster10.csv converted by benchmarks/bench_tiresias_sim.py, n2g8 (16 GPUs):
    # dlas-gpu, dlas-gpu-1 and dlas-gpu-4
    [(None, 56975.15, 89), (1.0, 73633.21153846153, 61), (4.0, 69679.93461538461, 77)],
)
def test_cluster10_16_matches_the_simulators_run(
    knob: float | None, mean_jct: float, met: int
) -> None:
    from optsched.sim import job_metrics, parse_cluster
    from optsched.sim.comparison import world_from_trace
    from optsched.traces import read_trace

    world = world_from_trace(read_trace(SHARED / "cluster10.csv"), parse_cluster("a100=16:8"))
    res = simulate(world, "tiresias-las", mechanism=TiresiasMechanism(promote_knob=knob))
    validate(res.world, res).raise_if_invalid()
    jct = [c - j.arrival for c, j in zip(res.completion, world.jobs, strict=True)]
    assert sum(jct) / len(jct) == pytest.approx(mean_jct, rel=1e-12)
    assert int(job_metrics(res)["deadline_met"].sum()) == met


# -- the command line ----------------------------------------------------------------------------

TIRESIAS_TRACE = (
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    "0,2,0,100,vgg19,100,0\n1,3,0,100,vgg19,100,0\n2,2,0,900,vgg19,900,0\n"
)


def test_cli_runs_and_compares_under_the_mechanism(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The running-first hand case as a Tiresias trace: ``sim run`` gives its mean JCT
    ((100 + 1000 + 900) / 3), ``sim compare`` runs, another policy is refused (exit 2)."""
    import json

    from optsched.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text(TIRESIAS_TRACE)
    base = ["sim", "run", str(trace), "--cluster", "v100=4:4", "--mechanism", "tiresias"]
    assert main([*base, "--policy", "tiresias-las", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and out["metrics"]["jct_mean"] == pytest.approx(2000 / 3)
    assert main([*base, "--policy", "fifo", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--mechanism"
    compare = ["sim", "compare", str(trace), "--cluster", "v100=4:4", "--mechanism", "tiresias"]
    assert main([*compare, "--policies", "tiresias-las"]) == 0
