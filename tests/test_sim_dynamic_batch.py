"""Shockwave's dynamic jobs: batch-size schedules read from the trace, simulated phase by phase.

The expected completion times below are computed by hand from the documented rules
(``optsched.sim.world.batch_schedule``): an epoch at batch size ``b`` is ``ceil(D / b)`` steps, it
runs
at the table's steps/s of the ``(batch size b)`` variant, and progress is counted in steps at
the initial batch size.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
from pathlib import Path

import pytest

from optsched.errors import InvalidInstanceError
from optsched.sim import (
    World,
    job_metrics,
    load_throughputs,
    parse_cluster,
    simulate,
    validate,
)
from optsched.sim.engine.core import event_bound
from optsched.sim.policies import make_policy
from optsched.sim.world.batch_schedule import (
    accordion_batches,
    derive_schedule,
    gns_batches,
    phase_factor,
)
from optsched.sim.world.throughputs import throughputs_from_dict
from optsched.traces import read_trace

DATA = Path(__file__).resolve().parent / "data"
SLICE = DATA / "traces" / "shockwave" / "reproduce_120_head30.trace"
MIRROR = Path("/work/.mirror/uw-mad-dash+shockwave/repo")
FULL = (
    "scheduler/traces/reproduce/"
    "120_0.2_5_100_40_25_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace"
)

# steps/s of one V100 per batch-size variant: small numbers so that the arithmetic is by hand
RATES = {
    "LM (batch size 20)": 20.0,
    "LM (batch size 80)": 10.0,
    "ResNet-18 (batch size 32)": 50.0,
    "ResNet-18 (batch size 64)": 30.0,
    "ResNet-18 (batch size 128)": 20.0,
    "ResNet-18 (batch size 256)": 12.0,
    "Transformer (batch size 64)": 5.0,
}


def _table() -> object:
    v100 = {f"('{jt}', 1)": {"null": r} for jt, r in RATES.items()}
    return throughputs_from_dict({"v100": v100})


# Job 0, LM at 20, accordion. D = 59675, S(20) = ceil(59675 / 20) = 2984, S(80) = 746.
# total_steps = 19 * 2984 + 1000 = 57696 -> E = 20 epochs; epochs 0-9 critical (head),
# e <= 0.3 * 20 = 6 also small; epochs 10-19 at 80 (the largest LM variant).
LM_STEPS = 19 * 2984 + 1000
LM_END0 = 10 * 2984  # 29840
LM_R0 = 20.0
LM_R1 = 10.0 * 2984 / 746  # steps/s at 80 times base steps per step at 80 = 40
# Job 1, ResNet-18 at 32, gns. D = 50000, S(32) = 1563, S(64) = 782, S(128) = 391.
# total_steps = 44 * 1563 + 500 = 69272 -> E = 45; 32 for e < 20, 64 for 20..39, 128 for 40..44.
RN_STEPS = 44 * 1563 + 500
RN_END = (20 * 1563, 40 * 1563)  # 31260, 62520
RN_R = (50.0, 30.0 * 1563 / 782, 20.0 * 1563 / 391)


def _line(job_type: str, steps: int, mode: str, duration: float, arrival: float) -> str:
    # the 12 fields: job_type, command, working_directory, num_steps_arg, needs_data_dir,
    # total_steps, scale_factor, mode, priority_weight, SLO, duration, arrival_time
    fields = [job_type, "python3 main.py", "wd", "--steps", "1", str(steps), "1", mode, "1",
              "-1", repr(duration), repr(arrival)]  # fmt: skip
    return "\t".join(fields)


def _two_jobs(tmp_path: Path, modes: tuple[str, str] = ("accordion", "gns")) -> Path:
    # durations chosen so that the duration calibration is 1 (steps / base rate)
    path = tmp_path / "two.trace"
    path.write_text(
        _line("LM (batch size 20)", LM_STEPS, modes[0], LM_STEPS / LM_R0, 0.0)
        + "\n"
        + _line("ResNet-18 (batch size 32)", RN_STEPS, modes[1], RN_STEPS / RN_R[0], 0.0)
        + "\n"
    )
    return path


def _world(path: Path, *, batch_modes: bool = True, restore_s: float = 0.0) -> World:
    return World.from_frame(
        read_trace(path).jobs,
        parse_cluster("v100=1"),
        _table(),  # type: ignore[arg-type]
        batch_modes=batch_modes,
        restore_s=restore_s,
    )


# -- the schedules the reader derives ----------------------------------------------------------


def test_the_reader_gives_each_mode_its_schedule(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    lm, rn = world.jobs
    assert lm.scale == pytest.approx(1.0) and rn.scale == pytest.approx(1.0)
    assert lm.batch_schedule is not None and rn.batch_schedule is not None
    assert lm.batch_schedule.mode == "accordion" and rn.batch_schedule.mode == "gns"
    got = [(p.batch_size, p.epochs, p.end, p.job_type) for p in lm.batch_schedule.phases]
    assert got == [
        (20, 10, LM_END0, "LM (batch size 20)"),
        (80, 10, float(LM_STEPS), "LM (batch size 80)"),
    ]
    got = [(p.batch_size, p.epochs, p.end) for p in rn.batch_schedule.phases]
    assert got == [(32, 20, RN_END[0]), (64, 20, RN_END[1]), (128, 5, float(RN_STEPS))]
    static = _world(_two_jobs(tmp_path, ("static", "static")))
    assert all(j.batch_schedule is None for j in static.jobs)


def test_models_without_a_rule_and_jobs_at_the_cap_stay_static(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    path.write_text(
        _line("Transformer (batch size 64)", 90_000, "accordion", 18_000.0, 0.0)
        + "\n"
        + _line("ResNet-18 (batch size 256)", 90_000, "gns", 7_500.0, 1.0)
        + "\n"
    )
    assert all(j.batch_schedule is None for j in _world(path).jobs)


def test_the_rules_per_epoch() -> None:
    # accordion, ResNet-50: every 30 epochs a decay, 10 critical epochs after it; 30 % small
    got = accordion_batches("ResNet-50", 32, 70, 128)
    small = [e for e, b in enumerate(got) if b == 32]
    assert small == list(range(22)) + list(range(30, 40)) + list(range(60, 70))
    # ResNet-18: decays at 150 and 250
    got = accordion_batches("ResNet-18", 64, 300, 256)
    assert got[90] == 64 and got[91] == 256 and got[149] == 256  # e <= 0.3 * 300 small
    assert got[150:160] == [64] * 10 and got[160] == 256 and got[250:260] == [64] * 10
    # gns: doubling at 20, 40, 60 ... up to the cap
    got = gns_batches("LM", 5, 100, 80)
    assert got[:20] == [5] * 20 and got[20:40] == [10] * 20 and got[40] == 20
    assert got[60] == 40 and got[80:] == [80] * 20
    assert gns_batches("ResNet-50", 32, 100, 128) == [32] * 100  # first growth at 100
    assert gns_batches("Transformer", 32, 50, 128) == [32] * 50


def test_an_unknown_mode_is_refused_naming_the_column(tmp_path: Path) -> None:
    frame = read_trace(_two_jobs(tmp_path)).jobs
    frame.loc[1, "batch_mode"] = "elastic"
    with pytest.raises(InvalidInstanceError) as info:
        World.from_frame(frame, parse_cluster("v100=1"), _table())  # type: ignore[arg-type]
    assert info.value.field == "batch_mode" and info.value.row == 2
    with pytest.raises(InvalidInstanceError):
        derive_schedule("elastic", "LM (batch size 20)", 20.0, 1e5, _table())  # type: ignore[arg-type]


def test_the_phase_factor_is_epoch_time_at_each_batch_size(tmp_path: Path) -> None:
    lm = _world(_two_jobs(tmp_path)).jobs[0]
    assert lm.batch_schedule is not None
    tp = _table()
    assert phase_factor(tp, lm.batch_schedule, 0, "v100", 1) == 1.0  # type: ignore[arg-type]
    assert phase_factor(tp, lm.batch_schedule, 1, "v100", 1) == pytest.approx(2.0)  # type: ignore[arg-type]


# -- simulation: hand-computed completions, phase boundaries inside rounds ----------------


def test_two_dynamic_jobs_complete_when_computed_by_hand(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    L = 360.0
    result = simulate(world, make_policy("fifo"), round_seconds=L)
    # job 0 alone from 0: 29840 base steps at 20/s (boundary at 1492 s, inside round 4), then
    # 27856 at 40/s
    boundary0 = LM_END0 / LM_R0
    assert boundary0 == pytest.approx(1492.0) and 1492.0 % L != 0
    c0 = boundary0 + (LM_STEPS - LM_END0) / LM_R1
    assert c0 == pytest.approx(2188.4)
    # job 1 waits for the round after job 0's completion: 7 * 360 = 2520
    start1 = 7 * L
    b1 = start1 + RN_END[0] / RN_R[0]  # 3145.2, inside round 8
    b2 = b1 + (RN_END[1] - RN_END[0]) / RN_R[1]  # 3666.53, inside round 10
    c1 = b2 + (RN_STEPS - RN_END[1]) / RN_R[2]
    assert (b1 % L) > 0 and (b2 % L) > 0
    assert result.completion[0] == pytest.approx(c0, rel=1e-12)
    assert result.completion[1] == pytest.approx(c1, rel=1e-12)
    assert result.first_start[1] == start1
    report = validate(world, result)
    assert report.ok, report.violations
    # the boundaries are no decision points: decisions only at the rounds
    static = simulate(_world(_two_jobs(tmp_path), batch_modes=False), make_policy("fifo"),
                      round_seconds=L)  # fmt: skip
    assert static.completion[0] == pytest.approx(LM_STEPS / LM_R0)


def test_event_driven_and_restore_cost(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path), restore_s=30.0)
    result = simulate(world, make_policy("fifo"), round_seconds=None)
    c0 = LM_END0 / LM_R0 + (LM_STEPS - LM_END0) / LM_R1
    c1 = (
        c0
        + RN_END[0] / RN_R[0]
        + (RN_END[1] - RN_END[0]) / RN_R[1]
        + (RN_STEPS - RN_END[1]) / RN_R[2]
    )  # first starts pay no restore: job 1 starts at job 0's completion
    assert result.completion == pytest.approx([c0, c1], rel=1e-12)
    assert validate(world, result).ok


def test_the_validator_recomputes_phases_and_catches_a_static_reading(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    result = simulate(world, make_policy("fifo"), round_seconds=360.0)
    assert validate(world, result).ok
    # the same record judged as if the jobs were static: their work is not done at completion
    static = _world(_two_jobs(tmp_path), batch_modes=False)
    bad = validate(static, dataclasses.replace(result, world=static))
    assert {v.constraint for v in bad.violations} == {"work_done"}
    # a completion moved by a second is caught
    moved = list(result.completion)
    moved[1] += 1.0
    bad = validate(world, dataclasses.replace(result, completion=moved))
    assert any(v.constraint == "work_done" for v in bad.violations)


def test_a_preempted_dynamic_job_resumes_in_its_later_phase(tmp_path: Path) -> None:
    # LAS on one GPU: job 0 runs [0, 1800) (its boundary at 1492 inside), job 1 (less service)
    # then runs whole, job 0 resumes at the next round in phase 1 after the restore
    world = _world(_two_jobs(tmp_path), restore_s=20.0)
    result = simulate(world, make_policy("tiresias-las"), round_seconds=300.0)
    rows = list(zip(result.intervals["job_id"], result.intervals["start"], strict=True))
    assert [(j, s) for j, s in rows] == [("0", 0.0), ("1", 1800.0), ("0", 3300.0)]
    done0 = LM_END0 + (1800.0 - LM_END0 / LM_R0) * LM_R1  # 42160 base steps at the preemption
    c1 = 1800.0 + RN_END[0] / RN_R[0] + (RN_END[1] - RN_END[0]) / RN_R[1]
    c1 += (RN_STEPS - RN_END[1]) / RN_R[2]
    c0 = 3300.0 + 20.0 + (LM_STEPS - done0) / LM_R1
    assert result.completion == pytest.approx([c0, c1], rel=1e-12)
    report = validate(world, result)
    assert report.ok, report.violations


def test_static_jobs_take_the_old_path(tmp_path: Path) -> None:
    dynamic = _world(_two_jobs(tmp_path, ("static", "gns")))
    without = _world(_two_jobs(tmp_path, ("static", "gns")), batch_modes=False)
    assert dynamic.jobs[0] == without.jobs[0]  # the static job: identical record
    assert event_bound(without, 360.0, 1e4, 0) == 2 * 2 + 28 + 0 + 1
    assert event_bound(dynamic, 360.0, 1e4, 0) == 2 * 2 + 28 + 0 + 1 + 2
    r_dyn = simulate(dynamic, make_policy("fifo"), round_seconds=360.0)
    r_old = simulate(without, make_policy("fifo"), round_seconds=360.0)
    # job 0 runs first in both: the same completion, bit for bit, and the same segments
    assert r_dyn.completion[0] == r_old.completion[0] == LM_STEPS / LM_R0
    assert r_dyn.completion[1] < r_old.completion[1]  # growing batches run faster here


def test_metrics_and_world_file_see_the_phases(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    result = simulate(world, make_policy("fifo"), round_seconds=360.0)
    frame = job_metrics(result)
    iso = LM_END0 / LM_R0 + (LM_STEPS - LM_END0) / LM_R1
    assert frame["isolated_jct"][0] == pytest.approx(iso)
    assert world.isolated_seconds(world.jobs[0]) == pytest.approx(iso)
    path = tmp_path / "world.json"
    world.save(path)
    again = World.load(path)
    assert again == world
    assert again.jobs[1].batch_schedule == world.jobs[1].batch_schedule


def test_a_world_file_with_a_bad_schedule_is_refused(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    data = world.to_dict()
    data["jobs"][0]["batch_schedule"]["phases"][1]["end"] = 1.0
    with pytest.raises(InvalidInstanceError) as info:
        World.from_dict(data)
    assert info.value.field == "jobs[0].batch_schedule.phases[1].end"


# -- a real Shockwave trace ------------------------------------------------------------------


def _full_trace(tmp_path: Path) -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"Shockwave's repository snapshot is absent ({MIRROR}); the slice is used")
    out = subprocess.run(
        ["git", f"--git-dir={MIRROR}", "show", f"HEAD:{FULL}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip(f"the trace is not in the snapshot: {out.stderr.strip()[:200]}")
    path = tmp_path / "shockwave_120.trace"
    path.write_text(out.stdout)
    return path


@pytest.mark.parametrize("which", ["slice", "full"])
def test_a_real_shockwave_trace_runs_and_validates(tmp_path: Path, which: str) -> None:
    path = SLICE if which == "slice" else _full_trace(tmp_path)
    table = load_throughputs(DATA / "gavel" / "simulation_throughputs_alone.json")
    trace = read_trace(path)
    world = World.from_frame(trace.jobs, parse_cluster("v100=32"), table)
    dynamic = [j for j in world.jobs if j.batch_schedule is not None]
    modes = {trace.jobs["batch_mode"][j.index] for j in dynamic}
    assert modes == {"accordion", "gns"}
    result = simulate(world, make_policy("tiresias-las"), round_seconds=360.0)
    assert not result.truncated and all(not math.isnan(c) for c in result.completion)
    report = validate(world, result)
    assert report.ok, report.violations[:3]
    # the static reading of the same trace: accordion and gns jobs speed up here
    static = World.from_frame(trace.jobs, parse_cluster("v100=32"), table, batch_modes=False)
    slower = simulate(static, make_policy("tiresias-las"), round_seconds=360.0)
    sped = [j.index for j in dynamic]
    assert sum(result.completion[k] - slower.completion[k] for k in sped) < 0


_ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` from a clone's root; one level further up from a worktree nested beside clones
_SHARED = next(
    (p / "shared" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared").is_dir()),
    _ROOT.parent / "shared",
)
GAVEL = _SHARED / "data" / "gavel"


@pytest.mark.skipif(
    not (GAVEL / "simulation_throughputs.json").is_file(),
    reason="Gavel's full table (with pair rates) is absent",
)
@pytest.mark.parametrize("policy", ["gandiva", "max-min-packed", "srtf-perf"])
def test_shared_heterogeneous_runs_of_the_slice_validate(policy: str) -> None:
    # three GPU types, a restore cost, and (gandiva, packed) pairs sharing GPUs
    table = load_throughputs(GAVEL / "simulation_throughputs.json")
    world = World.from_frame(
        read_trace(SLICE).jobs, parse_cluster("v100=4,p100=4,k80=4"), table, restore_s=10.0
    )
    result = simulate(world, make_policy(policy), round_seconds=360.0)
    report = validate(world, result)
    assert report.ok, report.violations[:3]
    assert report.details["unfinished"] == 0


# -- the bounds and the exact model -----------------------------------------------------------


def test_bounds_stay_below_what_the_simulator_achieves_with_phases(tmp_path: Path) -> None:
    from optsched.sim.optimum.bounds import bounds

    world = _world(_two_jobs(tmp_path))
    # the best schedule of one GPU: both jobs alone in turn, the shorter first
    alone = [world.isolated_seconds(j) for j in world.jobs]
    best_wjct = min(alone) * 2 + max(alone)
    got = bounds(world, ("weighted-jct", "makespan"))
    assert got["weighted-jct"].value <= best_wjct * (1 + 1e-9)
    assert got["makespan"].value <= sum(alone) * (1 + 1e-9)
    # and the shrunk work is what makes them valid: the static reading's bound is above
    static = bounds(_world(_two_jobs(tmp_path), batch_modes=False), ("makespan",))
    assert static["makespan"].value > sum(alone)


def test_the_exact_model_refuses_phases(tmp_path: Path) -> None:
    from optsched.sim.optimum.exact import solve

    with pytest.raises(InvalidInstanceError) as info:
        solve(_world(_two_jobs(tmp_path)), 360.0)
    assert info.value.field == "batch_schedule"


def test_unmeasured_batch_sizes_keep_samples_per_second() -> None:
    # LM measured at 20 and 80 on v100, only at 20 on k80; GNS from 20 goes 20 -> 40 -> 80
    lm20, lm80 = "('LM (batch size 20)', 1)", "('LM (batch size 80)', 1)"
    data = {
        "v100": {lm20: {"null": 20.0}, lm80: {"null": 10.0}},
        "k80": {lm20: {"null": 4.0}},
    }
    tp = throughputs_from_dict(data)
    work = 70 * 2984.0  # 70 epochs at 20: 20 at 20, 20 at 40, 30 at 80
    schedule = derive_schedule("gns", "LM (batch size 20)", 20.0, work, tp)
    assert schedule is not None
    assert [(p.batch_size, p.epochs, p.variant_batch) for p in schedule.phases] == [
        (20, 20, 20),
        (40, 20, 20),  # 40 is unmeasured: nearest variants 20 and 80 tie, the smaller wins
        (80, 30, 80),
    ]
    s20, s40, s80 = 2984, math.ceil(59675 / 40), 746
    # 40 runs at 20's samples/s: 400 samples/s = 10 steps/s of 40, epochs of s40 steps
    assert phase_factor(tp, schedule, 1, "v100", 1) == pytest.approx((10.0 * s20 / s40) / 20.0)
    assert phase_factor(tp, schedule, 2, "v100", 1) == pytest.approx((10.0 * s20 / s80) / 20.0)
    # no 80 on k80: it keeps the base variant's 80 samples/s, i.e. 1 step/s of 80
    assert phase_factor(tp, schedule, 2, "k80", 1) == pytest.approx((1.0 * s20 / s80) / 4.0)


def test_gavels_mechanism_refuses_phases(tmp_path: Path) -> None:
    world = _world(_two_jobs(tmp_path))
    with pytest.raises(InvalidInstanceError) as info:
        simulate(world, make_policy("max-min"), round_seconds=360.0, mechanism="gavel")
    assert info.value.field == "batch_schedule"
    static = _world(_two_jobs(tmp_path), batch_modes=False)
    result = simulate(static, make_policy("max-min"), round_seconds=360.0, mechanism="gavel")
    assert validate(static, result).ok


def test_sim_run_simulates_the_phases_unless_told_static(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from optsched.cli import main

    table = tmp_path / "table.json"
    table.write_text(json.dumps({"v100": {f"('{jt}', 1)": {"null": r} for jt, r in RATES.items()}}))
    args = ["sim", "run", str(_two_jobs(tmp_path)), "--cluster", "v100=1", "--policy", "fifo"]
    args += ["--throughputs", str(table), "--round-seconds", "360", "--json"]
    capsys.readouterr()
    assert main(args) == 0
    dynamic = json.loads(capsys.readouterr().out)
    assert main([*args, "--static-batches"]) == 0
    static = json.loads(capsys.readouterr().out)
    c0 = LM_END0 / LM_R0 + (LM_STEPS - LM_END0) / LM_R1
    c1 = 7 * 360.0 + RN_END[0] / RN_R[0] + (RN_END[1] - RN_END[0]) / RN_R[1]
    c1 += (RN_STEPS - RN_END[1]) / RN_R[2]
    assert dynamic["valid"] and static["valid"]
    assert dynamic["metrics"]["jct_mean"] == pytest.approx((c0 + c1) / 2)
    s0 = LM_STEPS / LM_R0  # 2884.8, then job 1 from the round at 2880 + 360 = 3240
    s1 = 9 * 360.0 + RN_STEPS / RN_R[0]
    assert static["metrics"]["jct_mean"] == pytest.approx((s0 + s1) / 2)
