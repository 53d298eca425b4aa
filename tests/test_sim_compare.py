"""``optsched.sim.compare`` and ``optsched sim compare``: metrics and gaps to the optimum."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from strategies.sim import job_frame, synthetic_throughputs

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.comparison import METRIC_COLUMNS, auto_round_seconds, compare
from optsched.sim.optimum.exact import default_rounds
from optsched.sim.policies import POLICIES, make_policy
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

_ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` from a clone's root (a checkout one level deeper looks one level further up)
SHARED = next(
    (p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if p.is_dir()),
    _ROOT.parent / "shared",
)
GAVEL = SHARED / "data" / "gavel"
PHYSICAL = GAVEL / "traces" / "physical_cluster" / "artifact_evaluation.trace"
needs_gavel = pytest.mark.skipif(
    not PHYSICAL.is_file(), reason=f"the Gavel traces are not at {PHYSICAL}"
)


def _world() -> World:
    rows = [
        {"arrival": 0.0, "model": "A", "duration": 9.0, "weight": 1.0, "deadline": 12.0},
        {"arrival": 0.0, "model": "B", "duration": 4.0, "weight": 2.0, "deadline": 6.0},
        {"arrival": 3.0, "model": "A", "num_gpus": 2, "duration": 6.0, "deadline": 30.0},
        {"arrival": 5.0, "model": "B", "duration": 2.0, "weight": 3.0, "deadline": 9.0},
        {"arrival": 6.0, "model": "A", "duration": 5.0, "weight": 1.0},
    ]
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=2, gpus_per_server=2),
            GpuType(name="slow", count=2, gpus_per_server=2),
        )
    )
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs())


@pytest.mark.solver("highs")
def test_gaps_are_recomputed_from_each_record() -> None:
    world = _world()
    names = ["fifo", "sjf", "srtf", "edf", "tiresias-las", "gandiva"]
    result = compare(world, names, exact=True, round_seconds=3.0)
    frame = result.to_frame()
    assert list(frame["policy"][: len(names)]) == names
    assert set(METRIC_COLUMNS) <= set(frame.columns)
    assert bool(frame["valid"].all())
    opt = {o: r.objective for o, r in result.exact.items()}
    assert all(r.optimal for r in result.exact.values())
    for name in names:
        # rerun the policy independently, in the same round world
        record = simulate(world, make_policy(name), round_seconds=3.0)
        report = validate(world, record)
        assert report.ok
        row = frame[frame["policy"] == name].iloc[0]
        in_round_world = not row["wakeups"] and not row["shared"]
        assert bool(row["like_for_like"]) == in_round_world
        if not in_round_world:
            # beyond the model's world: no gap to its optimum, and the row says why
            assert row["outside"] in ("wakes mid-round", "shares GPUs")
            assert all(math.isnan(row[f"gap_{o}"]) for o in opt)
            continue
        wjct = report.objective
        assert wjct is not None and opt["weighted-jct"] is not None
        assert within(
            row["gap_weighted-jct"], (wjct - opt["weighted-jct"]) / opt["weighted-jct"], 1e-9
        )
        span = report.objectives["makespan"]  # the first job arrives at 0
        assert span is not None and opt["makespan"] is not None
        assert within(row["gap_makespan"], (span - opt["makespan"]) / opt["makespan"], 1e-9)
        met = sum(
            1
            for j, c in zip(world.jobs, record.completion, strict=True)
            if not math.isnan(j.deadline) and c <= j.deadline + 1e-6
        )
        assert opt["deadlines"] is not None
        assert row["gap_deadlines"] == pytest.approx(opt["deadlines"] - met)
        if max(record.completion) <= default_rounds(world, 3.0) * 3.0:
            assert row["gap_weighted-jct"] >= -OBJECTIVE_AGREEMENT_TOL
            assert row["gap_makespan"] >= -OBJECTIVE_AGREEMENT_TOL
            assert row["gap_deadlines"] >= 0
    for o in opt:
        exact_row = frame[frame["policy"] == f"exact-{o}"].iloc[0]
        assert abs(exact_row[f"gap_{o}"]) <= OBJECTIVE_AGREEMENT_TOL
    assert result.to_dict()["exact"]["weighted-jct"]["optimal"] is True


def test_compare_without_exact_and_refusals() -> None:
    world = _world()
    result = compare(world, ["fifo", "srtf"])
    frame = result.to_frame()
    assert len(frame) == 2 and not any(c.startswith("gap_") for c in frame.columns)
    for bad, field in (([], "policies"), (["fifo", "fifo"], "policies"), (["nope"], "policies")):
        with pytest.raises(InvalidInstanceError) as err:
            compare(world, bad)
        assert err.value.field == field
    with pytest.raises(InvalidInstanceError) as err:
        compare(world, ["fifo"], exact=True, objectives=["speed"])
    assert err.value.field == "objectives"
    with pytest.raises(InvalidInstanceError) as err:
        compare(job_frame([{"duration": 1.0}]), ["fifo"])
    assert err.value.field == "cluster"


def test_auto_round_seconds_gives_about_24_rounds() -> None:
    world = _world()
    L = auto_round_seconds(world)
    assert L % 60 == 0 and L >= 60
    # the serial schedule of these short jobs fits in one minute-round
    assert default_rounds(world, L) <= 24 + 1


# -- the command line ------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["sim", "compare", *args, "--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


@needs_gavel
def test_cli_on_a_gavel_physical_cluster_trace(capsys: pytest.CaptureFixture[str]) -> None:
    # by default every registered policy
    code, out = _cli(
        capsys,
        str(PHYSICAL),
        "--cluster",
        "v100=8,p100=16,k80=24",
        "--throughputs",
        str(GAVEL / "simulation_throughputs.json"),
    )
    assert code == 0
    rows = out["policies"]
    assert isinstance(rows, list)
    # the trace has multi-GPU jobs: AlloX (single-GPU jobs only) is left out, with its reason
    assert [r["policy"] for r in rows] == [p for p in POLICIES if p != "allox"]
    assert "single-GPU" in out["left_out"]["allox"]
    for r in rows:
        assert r["valid"] is True and r["finished"] == 15
        for key in ("jct_mean", "jct_median", "jct_p95", "jct_p99", "makespan", "rho_max"):
            assert isinstance(r[key], float) and r[key] > 0
        assert r["deadlines_met"] == 0 and r["gpu_hours"] > 0


@needs_gavel
@pytest.mark.solver("highs")
def test_cli_shows_every_policys_gap_on_a_six_job_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    six = tmp_path / "six.trace"
    with PHYSICAL.open(encoding="utf-8") as fh:
        six.write_text("".join(fh.readlines()[:6]), encoding="utf-8")
    args = [
        str(six),
        "--cluster",
        "v100=1,p100=1,k80=2:2",
        "--policies",
        "fifo,srtf,tiresias-las",
        "--throughputs",
        str(GAVEL / "simulation_throughputs.json"),
        "--exact",
        "--objectives",
        "weighted-jct,makespan",
    ]
    code, out = _cli(capsys, *args)
    assert code == 0
    exact = out["exact"]
    assert isinstance(exact, dict) and exact["weighted-jct"]["status"] == "optimal"
    rows = out["policies"]
    assert isinstance(rows, list) and len(rows) == 3 + 2
    # without --round-seconds the policies keep their own round length: all three are
    # event-driven, so the optimum is of another world and no row gets a gap to it
    assert out["exact_round_seconds"] is not None and out["round_seconds"] == "policy"
    assert str(out["exact_grid"]).startswith("another world")
    for r in rows[:3]:
        assert r["gap_weighted-jct"] is None and r["gap_makespan"] is None
        assert r["outside"].startswith("event-driven") and not r["like_for_like"]
    for r in rows[3:]:
        assert r["outside"] == "optimum of another world"
    # a limit no model can be built within: the solve stops short, exit 3
    code, out = _cli(capsys, *args, "--time-limit", "1e-9")
    assert code == 3 and out["error"] == "NotOptimalError"


def test_cli_names_the_bad_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "a,0,1,,,10,,1,,u\n",
        encoding="utf-8",
    )
    code, out = _cli(capsys, str(trace), "--cluster", "v100=2", "--policies", "fifo,nope")
    assert code == 2 and out["field"] == "--policies"
    code, out = _cli(capsys, str(trace), "--cluster", "v100=2", "--policies", "fifo,,srtf")
    assert code == 2 and out["field"] == "--policies"


@pytest.mark.solver("highs")
def test_policy_rows_identical_with_and_without_exact() -> None:
    """Adding the optimum solves it on the policies' grid and leaves every policy's run alone."""
    world = _world()
    names = ["fifo", "srtf", "max-min"]
    plain = compare(world, names).to_frame()
    with_opt = compare(world, names, exact=True, objectives=["makespan"])
    frame = with_opt.to_frame()
    # the one round-based policy's grid (max-min's 360 s), small enough for the budget
    grid = 360.0
    assert with_opt.round_seconds == "policy" and with_opt.exact_round_seconds == grid
    assert with_opt.exact_grid == "policies"
    assert with_opt.to_dict()["exact_round_seconds"] == grid
    assert with_opt.exact["makespan"].extra["round_seconds"] == grid
    # each policy ran with its own round length: event-driven or max-min's 360 s
    assert list(frame["round_seconds"][:2].isna()) == [True, True]
    assert frame["round_seconds"][2] == grid
    assert list(frame["same_grid"]) == [False, False, True, True]
    assert list(frame["like_for_like"]) == [False, False, True, True]
    assert math.isnan(frame["gap_makespan"][0]) and frame["gap_makespan"][2] >= 0
    policy_rows = frame.iloc[: len(names)][list(plain.columns)].reset_index(drop=True)
    pd.testing.assert_frame_equal(policy_rows, plain)
