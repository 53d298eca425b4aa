"""Simulator fidelity: gangs re-consolidate, no job is starved, type order never matters."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from strategies.sim import job_frame, synthetic_table, synthetic_throughputs

from optsched.errors import InvalidInstanceError
from optsched.sim import (
    ClusterSpec,
    GpuType,
    Grant,
    Policy,
    PolicyDecision,
    SimState,
    World,
    parse_cluster,
    simulate,
    validate,
)
from optsched.sim.measure.metrics import jct_cdf, job_metrics, run_metrics, spread_gang_seconds
from optsched.sim.policies import FIFO, make_policy
from optsched.sim.world.throughputs import throughputs_from_dict
from optsched.tolerances import TIME_TOL, within

GAVEL = Path(__file__).resolve().parents[2] / "shared" / "data" / "gavel"


def _slow_cluster(servers: int = 2) -> ClusterSpec:
    return ClusterSpec(gpu_types=(GpuType(name="slow", count=8 * servers, gpus_per_server=8),))


def _gangs(result: Any, job: str) -> list[tuple[float, float, tuple[tuple[int, int], ...]]]:
    """The job's segments as ``(start, end, ((server, gpus), ...))``."""
    cols = result.intervals
    segs: dict[tuple[float, float], list[tuple[int, int]]] = {}
    for j, server, gpus, start, end in zip(
        cols["job_id"], cols["server"], cols["gpus"], cols["start"], cols["end"], strict=True
    ):
        if j == job:
            segs.setdefault((start, end), []).append((server, gpus))
    return sorted((s, e, tuple(sorted(p))) for (s, e), p in segs.items())


class GrantAll(Policy):
    """Grants every active job its own type, every decision (never the incremental form)."""

    name = "grant-all"

    def allocate(self, state: SimState) -> PolicyDecision:
        return PolicyDecision(
            grants=tuple(Grant(job=s.job_id, gpu_type="slow") for s in state.active)
        )


# -- 1. spread gangs re-consolidate ------------------------------------------------------------


def _fragmenting_world(restore: float) -> World:
    # a and b (6 GPUs each) fill most of both 8-GPU servers; c (4 GPUs) only fits as 2 + 2
    rows = [
        {"job_id": "a", "model": "A", "num_gpus": 6, "total_steps": 60.0},
        {"job_id": "b", "model": "A", "num_gpus": 6, "total_steps": 60.0},
        {"job_id": "c", "model": "A", "num_gpus": 4, "total_steps": 40.0},
    ]
    return World.from_frame(
        job_frame(rows), _slow_cluster(), synthetic_throughputs(), restore_s=restore
    )


@pytest.mark.parametrize("policy", [FIFO(), GrantAll()], ids=["keep-running", "grant-all"])
@pytest.mark.parametrize("restore", [0.0, 1.0])
def test_spread_gang_reconsolidates_when_the_others_leave(policy: Policy, restore: float) -> None:
    world = _fragmenting_world(restore)
    result = simulate(world, policy)
    assert validate(world, result).ok
    # a, b: rate 6 (model A, speed 1, 6 GPUs) -> done at 10. c: spread at 0.8 x 4 = 3.2 steps/s
    # for 10 s (32 steps), then moved onto one server (restore) at 4 steps/s for the last 8
    assert _gangs(result, "c") == [
        (0.0, 10.0, ((0, 2), (1, 2))),
        (10.0, 12.0 + restore, ((0, 4),)),
    ]
    assert within(result.completion[2], 12.0 + restore, TIME_TOL)
    total, with_room = spread_gang_seconds(result)
    assert total == pytest.approx(10.0) and with_room == 0.0
    metrics = run_metrics(result)
    assert metrics["spread_gang_seconds_with_room"] == 0.0


def test_lone_gang_on_an_empty_cluster_is_consolidated_for_its_whole_life() -> None:
    rows = [
        {"job_id": "x", "model": "A", "num_gpus": 4, "total_steps": 40.0},
        {"job_id": "y", "model": "A", "num_gpus": 8, "arrival": 1.0, "total_steps": 8.0},
        {"job_id": "z", "model": "A", "num_gpus": 8, "arrival": 1.0, "total_steps": 16.0},
    ]
    world = World.from_frame(job_frame(rows), _slow_cluster(), synthetic_throughputs())
    for policy in ("fifo", "srtf", "tiresias-las", "fifo-backfill"):
        result = simulate(world, make_policy(policy))
        assert validate(world, result).ok
        for start, end, servers in _gangs(result, "x"):
            assert len(servers) == 1, (policy, start, end, servers)
        assert spread_gang_seconds(result) == (0.0, 0.0)


def test_a_round_policy_moves_a_spread_gang_at_the_next_round() -> None:
    world = _fragmenting_world(0.0)
    result = simulate(world, FIFO(round_seconds=4.0))
    assert validate(world, result).ok
    # a, b finish at 10 mid-round; c keeps its spread gang until the round at 12, then moves:
    # 3.2 x 12 = 38.4 steps, 1.6 left at 4 steps/s
    gangs = _gangs(result, "c")
    assert [(s, g) for s, _, g in gangs] == [(0.0, ((0, 2), (1, 2))), (12.0, ((0, 4),))]
    assert gangs[0][1] == 12.0 and within(gangs[1][1], 12.4, TIME_TOL)
    assert spread_gang_seconds(result)[1] == 0.0


@pytest.mark.parametrize("first", [False, True])
def test_restore_on_first_start_charges_the_first_run(first: bool) -> None:
    rows = [{"job_id": "x", "model": "A", "num_gpus": 4, "total_steps": 40.0, "arrival": 2.0}]
    world = World.from_frame(
        job_frame(rows), _slow_cluster(), synthetic_throughputs(), restore_s=3.0
    )
    result = simulate(world, FIFO(), restore_on_first_start=first)
    assert result.world.restore_on_first_start is first
    assert validate(result.world, result).ok
    assert within(result.completion[0], 2.0 + 10.0 + (3.0 if first else 0.0), TIME_TOL)
    # the validator re-integrates with the same rule: the other world's rule rejects it
    other = World.from_frame(
        job_frame(rows),
        _slow_cluster(),
        synthetic_throughputs(),
        restore_s=3.0,
        restore_on_first_start=not first,
    )
    assert not validate(other, result).ok


def test_restore_on_first_start_round_trips_the_world_file(tmp_path: Path) -> None:
    world = World.from_frame(
        job_frame([{"model": "A", "total_steps": 4.0}]),
        _slow_cluster(),
        synthetic_throughputs(),
        restore_s=1.0,
        restore_on_first_start=True,
    )
    world.save(tmp_path / "w.json")
    assert World.load(tmp_path / "w.json") == world


# -- 2. no job silently starved ----------------------------------------------------------------


def _zero_b_on_slow() -> dict[str, Any]:
    """The synthetic table with job type B unable to run on ``slow`` (rate 0 at 2 GPUs)."""
    data = synthetic_table()
    for key in ("slow", "slow_unconsolidated"):
        data[key]["('B', 2)"]["null"] = 0.0
    return data


def _starving_world() -> World:
    tp = throughputs_from_dict(_zero_b_on_slow(), reference="fast")
    cluster = parse_cluster("slow=2:2,fast=2:2")
    rows = [
        {"job_id": "a", "model": "A", "num_gpus": 2, "total_steps": 20.0},
        {"job_id": "b", "model": "B", "num_gpus": 2, "total_steps": 30.0, "arrival": 1.0},
    ]
    return World.from_frame(job_frame(rows), cluster, tp)


@pytest.mark.parametrize("policy", ["fifo", "fifo-backfill", "srtf", "tiresias-las", "max-min"])
def test_no_job_is_placed_where_its_rate_is_zero(policy: str) -> None:
    world = _starving_world()
    result = simulate(world, make_policy(policy))
    assert validate(world, result).ok
    assert result.status == "finished" and result.unfinished == 0
    frame = result.intervals_frame()
    assert not ((frame["job_id"] == "b") & (frame["gpu_type"] == "slow")).any()
    assert any("slow excluded for 1 job(s)" in n for n in result.notes)


def test_fifo_closed_form_when_the_free_type_cannot_run_the_job() -> None:
    world = _starving_world()
    result = simulate(world, FIFO())
    # a on fast at 2 x 2 = 4 steps/s: 5 s; b waits for fast (slow gives it 0), 6 steps/s: 5 s
    assert within(result.completion[0], 5.0, TIME_TOL)
    assert within(result.completion[1], 10.0, TIME_TOL)


class ZeroRateGrants(Policy):
    """Always grants every job the slow type, where B cannot run."""

    name = "zero-rate"

    def allocate(self, state: SimState) -> PolicyDecision:
        return PolicyDecision(
            grants=tuple(Grant(job=s.job_id, gpu_type="slow") for s in state.active)
        )


def test_the_engine_drops_a_zero_rate_grant_and_says_the_run_did_not_finish() -> None:
    world = _starving_world()
    result = simulate(world, ZeroRateGrants())
    assert result.extra["zero_rate_grants"] >= 1
    frame = result.intervals_frame()
    assert not (frame["job_id"] == "b").any()
    assert result.status == "unfinished" and result.unfinished == 1
    assert result.summary()["unfinished"] == 1
    metrics = run_metrics(result)
    assert metrics["unfinished"] == 1 and metrics["finished"] == 1
    assert metrics["jct_mean"] == pytest.approx(result.completion[0])
    _, fraction = jct_cdf(result)
    assert fraction[-1] == pytest.approx(0.5)
    from optsched.report.sim import plot_jct_cdf

    fig = plot_jct_cdf([result], unit="s")
    assert max(fig.axes[0].lines[0].get_ydata()) == pytest.approx(0.5)


def test_a_job_that_runs_nowhere_is_refused_at_load() -> None:
    tp = throughputs_from_dict(_zero_b_on_slow(), reference="fast")
    rows = [{"job_id": "starved", "model": "B", "num_gpus": 2, "total_steps": 30.0}]
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(job_frame(rows), parse_cluster("slow=4"), tp)
    assert err.value.field == "model" and "starved" in err.value.message
    assert "slow" in err.value.message
    good = World.from_frame(job_frame(rows), parse_cluster("slow=4,fast=2"), tp)
    with pytest.raises(InvalidInstanceError) as err:
        World(cluster=parse_cluster("slow=4"), throughputs=tp, jobs=good.jobs)
    assert err.value.field == "jobs[0].job_type" and "starved" in err.value.message


@pytest.mark.parametrize(
    ("value", "entry"),
    [(-1.0, "slow.('A', 1).null"), (math.nan, "slow.('A', 1).null"), ("x", "slow.('A', 1).null")],
)
def test_a_bad_rate_is_refused_naming_the_entry(value: Any, entry: str) -> None:
    data = synthetic_table()
    data["slow"]["('A', 1)"]["null"] = value
    with pytest.raises(InvalidInstanceError) as err:
        throughputs_from_dict(data, reference="fast")
    assert err.value.field == entry


def test_an_all_zero_table_is_refused_naming_the_type() -> None:
    data = synthetic_table()
    for entry in data["slow"].values():
        entry["null"] = 0.0
    with pytest.raises(InvalidInstanceError) as err:
        throughputs_from_dict(data, reference="fast")
    assert err.value.field == "slow"


def test_a_cluster_type_missing_from_the_table_is_refused() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(
            job_frame([{"model": "A", "total_steps": 1.0}]),
            parse_cluster("fast=2,tpu=4"),
            synthetic_throughputs(),
        )
    assert err.value.field == "cluster" and "tpu" in err.value.message


@pytest.mark.skipif(not GAVEL.is_dir(), reason="Gavel's public data (../shared/data/gavel) absent")
@pytest.mark.parametrize("cluster", ["v100=2,p100=2,k80=2", "k80=2,p100=2,v100=2"])
@pytest.mark.parametrize("policy", ["fifo", "tiresias-las"])
def test_gavel_resnet50_batch128_never_lands_on_k80(policy: str, cluster: str) -> None:
    from optsched.sim import load_throughputs

    tp = load_throughputs(GAVEL / "simulation_throughputs.json")
    rows = [
        {"job_id": "v", "model": "ResNet-18 (batch size 64)", "num_gpus": 2, "duration": 3600.0},
        {"job_id": "p", "model": "ResNet-18 (batch size 64)", "num_gpus": 2, "duration": 3600.0},
        {
            "job_id": "r50",
            "model": "ResNet-50 (batch size 128)",
            "num_gpus": 2,
            "duration": 1800.0,
            "arrival": 10.0,
        },
    ]
    # v and p take v100 and p100; before the fix both policies parked r50 on the free K80s,
    # where its rate is 0, for good: it never finished and the run ended without saying so
    world = World.from_frame(job_frame(rows), parse_cluster(cluster), tp)
    result = simulate(world, make_policy(policy))
    assert validate(world, result).ok
    assert result.status == "finished"
    frame = result.intervals_frame()
    assert not ((frame["job_id"] == "r50") & (frame["gpu_type"] == "k80")).any()
    assert not math.isnan(result.completion[2])


# -- 3. the order of the GPU types never matters -----------------------------------------------


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias-las", "max-min", "ftf", "gandiva"])
def test_permuting_the_cluster_string_gives_identical_records(policy: str) -> None:
    rows = [
        {"model": "A" if k % 2 else "B", "num_gpus": 1 + k % 3, "total_steps": 10.0 + 7 * k}
        | {"arrival": float(k)}
        for k in range(8)
    ]
    records = []
    for text in ("fast=4:2,slow=4:2", "slow=4:2,fast=4:2"):
        world = World.from_frame(job_frame(rows), parse_cluster(text), synthetic_throughputs())
        assert world.cluster.names == ("fast", "slow")
        result = simulate(world, make_policy(policy))
        assert validate(world, result).ok
        records.append((result.intervals, result.completion, job_metrics(result)))
    assert records[0][:2] == records[1][:2]
    pd.testing.assert_frame_equal(records[0][2], records[1][2])


def test_the_uniform_table_reference_does_not_depend_on_the_order() -> None:
    from optsched.sim import Throughputs

    assert Throughputs.uniform(("b", "a")).reference == "a"
    assert Throughputs.uniform({"b": 2.0, "a": 1.0}).reference == "b"
    # equally fast Gavel types: Gavel's own order, whatever order they are listed in
    for names in (("k80", "p100", "v100"), ("p100", "v100", "k80")):
        table = Throughputs.uniform(names)
        assert table.reference == "v100"
        world = World.from_frame(
            job_frame([{"duration": 5.0}]),
            parse_cluster(",".join(f"{n}=2" for n in names)),
            table,
        )
        assert world.cluster.names == ("v100", "p100", "k80")


# -- 4./5. the validator's named constraints ---------------------------------------------------


def _record(world: World, rows: list[tuple[str, str, int, int, float, float]], **kw: Any):
    from optsched.sim import SimResult
    from optsched.sim.measure.record import add_interval, empty_intervals

    table = empty_intervals()
    for job, gt, server, gpus, start, end in rows:
        add_interval(table, job, gt, ((server, gpus),), start, end)
    n = len(world.jobs)
    return SimResult(
        world=world,
        policy="hand",
        round_seconds=kw.pop("round_seconds", None),
        intervals=table,
        completion=kw.pop("completion", [math.nan] * n),
        first_start=kw.pop("first_start", [math.nan] * n),
        end_time=kw.pop("end_time", 100.0),
        **kw,
    )


def _names(report: Any) -> set[str]:
    return {v.constraint for v in report.violations}


@pytest.mark.parametrize(
    ("round_seconds", "end", "stalled"),
    [(None, 50.0, True), (360.0, 300.0, False), (360.0, 500.0, True)],
)
def test_no_progress_catches_a_job_parked_where_its_rate_is_zero(
    round_seconds: float | None, end: float, stalled: bool
) -> None:
    world = _starving_world()
    # b (index 1) sits on slow, where its rate is 0, from its arrival to the end of the run
    record = _record(
        world,
        [("b", "slow", 0, 2, 1.0, end)],
        round_seconds=round_seconds,
        first_start=[math.nan, 1.0],
        end_time=end,
    )
    report = validate(world, record)
    assert ("no_progress" in _names(report)) is stalled


def test_work_conserving_is_checked_for_a_policy_that_claims_it() -> None:
    cluster = parse_cluster("fast=4:4")
    rows = [
        {"job_id": "a", "model": "A", "num_gpus": 2, "total_steps": 40.0},
        {"job_id": "b", "model": "A", "num_gpus": 4, "total_steps": 40.0, "arrival": 1.0},
        {"job_id": "c", "model": "A", "num_gpus": 1, "total_steps": 4.0, "arrival": 2.0},
    ]
    world = World.from_frame(job_frame(rows), cluster, synthetic_throughputs())
    strict = simulate(world, FIFO())
    # strict FIFO: c waits behind b while 2 GPUs idle; FIFO does not claim conservation
    assert strict.extra["work_conserving"] is False and validate(world, strict).ok
    strict.extra["work_conserving"] = True
    assert "work_conserving" in _names(validate(world, strict))
    backfill = simulate(world, make_policy("fifo-backfill"))
    assert backfill.extra["work_conserving"] is True and validate(world, backfill).ok


@pytest.mark.parametrize(
    "policy", ["fifo-backfill", "sjf", "srtf", "edf", "tiresias-las", "max-min", "ftf-perf"]
)
def test_the_policies_that_claim_work_conservation_keep_it(policy: str) -> None:
    rows = [
        {"model": "AB"[k % 2], "num_gpus": (1, 2, 4)[k % 3], "total_steps": 30.0 + 11 * (k % 5)}
        | {"arrival": 3.0 * k}
        for k in range(12)
    ]
    world = World.from_frame(job_frame(rows), parse_cluster("fast=4:4,slow=4:2"), _synthetic())
    result = simulate(world, make_policy(policy))
    assert result.extra["work_conserving"] is True
    report = validate(world, result)
    assert report.ok, report.violations[:3]


def _synthetic() -> Any:
    return synthetic_throughputs()


# -- 6. a round LP a hair from optimal does not stop the run ------------------------------------


def _round_result(gap: float | None, status: str = "feasible") -> Any:
    import threading

    from optsched.results import ExactResult
    from optsched.solvers.result import Status, TerminationCondition

    return ExactResult(
        solution=object(),
        objective=1.0,
        status=Status(status),
        termination=TerminationCondition.OTHER_LIMIT,
        bound=1.0,
        gap=gap,
        objective_name="ftf",
        # a solver object that can be neither copied nor pickled, as HiGHS's basis
        extra={"lp": threading.Lock(), "lp_solves": 3},
    )


def test_a_round_within_the_gap_tolerance_is_carried_out() -> None:
    from optsched.sim.policies.allocation import accept_round
    from optsched.tolerances import ROUND_LP_GAP

    result = _round_result(ROUND_LP_GAP / 2)
    assert accept_round(result) is result


@pytest.mark.parametrize("gap", [0.05, None])
def test_a_round_beyond_it_stops_with_a_json_safe_error_naming_real_options(
    gap: float | None,
) -> None:
    import json

    from optsched._json import dumps
    from optsched.cli import _error_payload
    from optsched.errors import NotOptimalError, RoundNotOptimalError
    from optsched.sim.policies.allocation import accept_round

    with pytest.raises(RoundNotOptimalError) as err:
        accept_round(_round_result(gap))
    assert isinstance(err.value, NotOptimalError)
    message = str(err.value)
    assert "--accept-feasible" not in message and "ROUND_LP_GAP" in message
    assert "--policy" in message and "--round-seconds" in message
    payload = json.loads(dumps(_error_payload(err.value)))
    assert payload["error"] == "RoundNotOptimalError" and payload["gap"] == gap


def test_json_never_deep_copies_a_solver_object() -> None:
    import json

    from optsched._json import dumps

    text = dumps(_round_result(0.003))
    assert json.loads(text)["lp_solves"] == 3


# -- the command line says why it fails ----------------------------------------------------------


def _csv(tmp_path: Path) -> Path:
    header = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    path = tmp_path / "trace.csv"
    path.write_text(header + "a,0,1,,,10,,1,,u\nb,1,1,,,5,,1,,u\n", encoding="utf-8")
    return path


def test_compare_prints_unfinished_counts_and_names_a_rejected_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import json

    from optsched.cli import main

    # the module (the package exports the function under the same name)
    validate_module = importlib.import_module("optsched.sim.measure.validate")

    trace = str(_csv(tmp_path))
    code = main(["sim", "compare", trace, "--cluster", "g=1", "--policies", "fifo,srtf", "--json"])
    out, _ = capsys.readouterr()
    rows = json.loads(out)["policies"]
    assert code == 0 and [r["unfinished"] for r in rows] == [0, 0]
    assert all(r["status"] == "finished" and r["violation"] == "" for r in rows)

    from optsched.results import Violation

    def made_up(instance: Any, solution: Any) -> list[Violation]:
        return [Violation("made_up", "a constraint this test adds, which every record violates")]

    monkeypatch.setattr(
        validate_module, "CONSTRAINTS", {**validate_module.CONSTRAINTS, "made_up": made_up}
    )
    code = main(["sim", "compare", trace, "--cluster", "g=1", "--policies", "fifo"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "fifo: record rejected by the validator" in err and "made_up" in err
