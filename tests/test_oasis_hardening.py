"""Jobs family: the protocol, and one regression test per class of hostile input or option."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from strategies.oasis import extreme, tiny_instances

import optsched.online.oasis as jobs
from optsched import limits
from optsched.cli import main
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.online.oasis import (
    DRF,
    FIFO,
    RRH,
    DormLike,
    OASiS,
    OasisInstance,
    Schedule,
    generate_instance,
    load_prices,
    solve,
    validate,
)
from optsched.results import ExactResult, Report
from optsched.solvers import Status
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, UTILITY_TOL, within

# An instance whose ILP stops at the first incumbent under --mip-gap 10 within a second, far
# from its bound (gap ~0.11): used wherever a solve must stop short deterministically.
GAP_INSTANCE = {"n_jobs": 12, "worker_servers": 3, "ps_servers": 3, "horizon": 12, "seed": 2028}


def _gap_instance() -> OasisInstance:
    p = GAP_INSTANCE
    return generate_instance(
        p["n_jobs"], p["worker_servers"], p["ps_servers"], p["horizon"], seed=p["seed"]
    )


def _data() -> dict:
    return generate_instance(4, 2, 2, 6, seed=0).to_dict()


# ------------------------------------------------------------------------------------------
# The family protocol
# ------------------------------------------------------------------------------------------


def test_family_exports_the_protocol() -> None:
    for name in ("OasisInstance", "generate_instance", "solve", "validate", "Schedule"):
        assert name in jobs.__all__ and hasattr(jobs, name)
    for method in ("load", "save", "schema", "from_dict"):
        assert callable(getattr(OasisInstance, method))
    assert OasisInstance.schema()["properties"]["horizon"]["type"] == "integer"


def test_instance_round_trips_through_json_and_toml(tmp_path: Path) -> None:
    inst = generate_instance(5, 2, 2, 6, seed=3)
    for suffix in (".json", ".toml"):
        path = tmp_path / f"i{suffix}"
        inst.save(path)
        assert OasisInstance.load(path) == inst
    with pytest.raises(InvalidInstanceError, match="path"):
        inst.save(tmp_path / "i.csv")
    sched = FIFO().run(inst).schedule
    for suffix in (".json", ".toml"):
        path = tmp_path / f"s{suffix}"
        sched.save(path)
        assert Schedule.load(path) == sched


@pytest.mark.solver("highs")
def test_solve_returns_an_exact_result_checked_by_the_validator() -> None:
    inst = generate_instance(5, 2, 2, 6, seed=1)
    res = solve(inst)
    assert isinstance(res, ExactResult) and res.optimal and res.sense == "max"
    assert isinstance(res.solution, Schedule)
    report = validate(inst, res.solution)
    assert isinstance(report, Report) and report.ok
    # The objective is the independent validator's value, and the bound brackets it.
    assert within(report.objective, res.objective, OBJECTIVE_AGREEMENT_TOL)
    assert report.details["job_utility"] == pytest.approx([j.utility for j in res.solution.jobs])
    assert res.bound >= res.objective * (1 - OBJECTIVE_AGREEMENT_TOL)
    relaxed = solve(inst, relax=True)
    assert relaxed.solution is None and relaxed.lp_bound == relaxed.objective == relaxed.bound
    assert relaxed.objective >= res.objective * (1 - OBJECTIVE_AGREEMENT_TOL)
    # The long-format frame holds exactly the schedule's entries.
    frame = res.to_frame()
    assert list(frame.columns) == ["job", "role", "server", "slot", "count"]
    for js in res.solution.jobs:
        rows = frame[(frame.job == js.job) & (frame.role == "worker")]
        assert rows["count"].sum() == sum(n for _, _, n in js.workers)
    assert len(repr(res)) < 300 and "<table>" in res._repr_html_()


@pytest.mark.solver("highs")
def test_a_stopped_solve_keeps_its_incumbent() -> None:
    inst = _gap_instance()
    with pytest.raises(NotOptimalError) as info:
        solve(inst, mip_gap=10)
    result = info.value.result
    assert isinstance(result, ExactResult)
    assert result.status is Status.FEASIBLE and not result.optimal and result.gap > 1e-3
    assert result.solution is not None and validate(inst, result.solution).ok
    assert result.to_dict()["solution"]["jobs"]
    accepted = solve(inst, mip_gap=10, accept_feasible=True)
    assert accepted.status is Status.FEASIBLE
    assert validate(inst, accepted.solution).objective == pytest.approx(accepted.objective)


def test_short_reprs() -> None:
    inst = generate_instance(30, 5, 5, 20, seed=0)
    run = OASiS().run(inst)
    assert len(repr(run)) < 200 and len(repr(run.schedule)) < 200 and len(repr(inst)) < 200
    assert "<table>" in run._repr_html_()
    assert run.to_frame()["count"].sum() == sum(
        n for js in run.schedule.jobs for part in (js.workers, js.ps) for _, _, n in part
    )


def test_violations_say_where() -> None:
    inst = generate_instance(4, 2, 2, 6, seed=0)
    run = FIFO().run(inst)
    i = run.admitted[0]
    js = run.schedule.jobs[i]
    t, s, n = js.workers[0]
    broken = run.schedule.model_copy(
        update={
            "jobs": tuple(
                j.model_copy(update={"workers": ((t, s, n + 1000), *j.workers[1:])})
                if k == i
                else j
                for k, j in enumerate(run.schedule.jobs)
            )
        }
    )
    report = validate(inst, broken)
    cap = [v for v in report.violations if v.constraint == "worker_cap"]
    assert cap and cap[0].where == {"job": i, "slot": t}
    assert set(report.to_frame().columns) >= {"constraint", "message", "job", "slot"}


# ------------------------------------------------------------------------------------------
# Instances: typed errors, budgets, finite representable values
# ------------------------------------------------------------------------------------------


def test_constructor_raises_invalid_instance_error() -> None:
    with pytest.raises(InvalidInstanceError, match="horizon"):
        OasisInstance(horizon="soon", resources=["bandwidth"])
    data = _data()
    with pytest.raises(InvalidInstanceError, match="colour"):
        OasisInstance(**data, colour="red")
    assert OasisInstance(**data) == OasisInstance.from_dict(data)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("horizon",), 10**9, "horizon"),
        (("jobs", 0, "chunks"), 10**9, "jobs[0].chunks"),
    ],
)
def test_sizes_over_the_budget_are_refused_before_allocation(path, value, field) -> None:
    data = _data()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InvalidInstanceError, match=r"budget max_array_cells") as info:
        OasisInstance.from_dict(data)
    assert info.value.field == field
    # The budget can be raised (nothing is allocated by validation itself).
    with limits.override(max_array_cells=10**11):
        OasisInstance.from_dict(data)


def test_model_variables_are_budgeted_before_building() -> None:
    inst = generate_instance(6, 2, 2, 8, seed=0)
    with limits.override(max_model_variables=10), pytest.raises(InvalidInstanceError) as info:
        solve(inst)
    assert info.value.field == "jobs" and "max_model_variables" in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["jobs"][0].update(epochs=10**13), "jobs[0].epochs"),
        (lambda d: d["jobs"][0].update(minibatch_s=1e308), "jobs[0].minibatch_s"),
        (lambda d: d["jobs"][0]["worker_demand"].update(gpu=5e-324), "jobs[0].worker_demand.gpu"),
        (lambda d: d["jobs"][0]["worker_demand"].update(bandwidth=5e-324), "jobs[0].worker"),
        (lambda d: d.update(slot_s=5e-324), "slot_s"),
        (lambda d: d["worker_servers"][0]["capacity"].update(cpu=1e308), "worker_servers[0]"),
        (lambda d: d["jobs"][0].update(utility={"kind": "constant", "value": 1e300}), "jobs[0]"),
    ],
)
def test_unrepresentable_values_name_the_field(mutate, field) -> None:
    data = _data()
    mutate(data)
    with pytest.raises(InvalidInstanceError) as info:
        OasisInstance.from_dict(data)
    assert info.value.field.startswith(field), info.value


def test_a_job_that_fits_on_no_server_is_rejected() -> None:
    data = _data()
    data["jobs"][1]["worker_demand"]["gpu"] = 1000.0
    with pytest.raises(InvalidInstanceError, match="fits on none") as info:
        OasisInstance.from_dict(data)
    assert info.value.field == "jobs[1].worker_demand"
    data = _data()
    data["jobs"][0]["ps_demand"]["cpu"] = 1e6
    with pytest.raises(InvalidInstanceError) as info:
        OasisInstance.from_dict(data)
    assert info.value.field == "jobs[0].ps_demand"


def test_nan_utilities_never_validate(tmp_path: Path) -> None:
    inst = generate_instance(4, 2, 2, 6, seed=0)
    sched = FIFO().run(inst).schedule
    nan = float("nan")
    forged = sched.model_copy(
        update={
            "total_utility": nan,
            "jobs": tuple(j.model_copy(update={"utility": nan}) for j in sched.jobs),
        }
    )
    report = validate(inst, forged)
    assert not report.ok
    assert {v.constraint for v in report.violations} == {"utility"}
    assert len(report.violations) == inst.n_jobs + 1
    with pytest.raises(InvalidInstanceError, match="total_utility"):
        Schedule.from_dict({**sched.to_dict(), "total_utility": nan})
    with pytest.raises(InvalidInstanceError, match=r"jobs\[0\]\.workers"):
        Schedule.from_dict(
            {
                **sched.to_dict(),
                "jobs": [{"job": "job0", "admitted": True, "workers": [[0, 0, 10**20]]}],
            }
        )


def test_tiny_slots_are_honest() -> None:
    """slot_s converts seconds into slots: with 1e-12 s slots one minibatch spans ~1e12
    slots, so no job can ever finish. Every solver says so (utility 0, everybody rejected),
    the exact solve names the jobs, and its "optimal" 0 is the validator's value."""
    data = generate_instance(5, 2, 2, 6, seed=0).to_dict()
    data["slot_s"] = 1e-12
    inst = OasisInstance.from_dict(data)
    assert all(w > 1e9 for w in inst.work_per_chunk)
    for alg in (OASiS(), FIFO(), DRF(), RRH()):
        run = alg.run(inst)
        assert run.utility == 0.0 and run.admitted == [] and validate(inst, run.schedule).ok


@pytest.mark.solver("highs")
def test_tiny_slots_exact_solve_names_the_jobs() -> None:
    data = generate_instance(5, 2, 2, 6, seed=0).to_dict()
    data["slot_s"] = 1e-12
    inst = OasisInstance.from_dict(data)
    res = solve(inst)
    assert res.optimal and res.objective == 0.0 and res.solution.admitted == []
    assert res.extra["never_completable"] == [inst.job_name(i) for i in range(inst.n_jobs)]
    assert validate(inst, res.solution).objective == 0.0


# ------------------------------------------------------------------------------------------
# Prices: what the loader accepts, the oracle accepts
# ------------------------------------------------------------------------------------------


@settings(max_examples=25)
@given(tiny_instances(), extreme, extreme, extreme, extreme)
def test_any_loadable_price_file_runs(inst, uw, up, lw, lp) -> None:
    spec = {
        "upper_worker": {"gpu": max(uw, lw), "bandwidth": max(uw, lw)},
        "upper_ps": {"cpu": max(up, lp)},
        "lower_worker": lw,
        "lower_ps": lp,
    }
    run = OASiS(prices=load_prices(spec, inst)).run(inst)
    assert validate(inst, run.schedule).ok
    assert run.dual_bound is not None and math.isfinite(run.dual_bound)
    assert run.utility <= run.dual_bound * (1 + UTILITY_TOL) + UTILITY_TOL


def test_price_files_out_of_range_are_refused_by_the_loader() -> None:
    inst = generate_instance(3, 1, 1, 4, seed=0)
    bad = {"upper_worker": {"gpu": 1e308}, "upper_ps": {}, "lower_worker": 1, "lower_ps": 1}
    with pytest.raises(InvalidInstanceError, match=r"upper_worker\.gpu"):
        load_prices(bad, inst)
    bad = {"upper_worker": {}, "upper_ps": {}, "lower_worker": 5e-324, "lower_ps": 1}
    with pytest.raises(InvalidInstanceError, match="lower_worker"):
        load_prices(bad, inst)
    ok = {"upper_worker": {"gpu": 10}, "upper_ps": {}, "lower_worker": 1, "lower_ps": 1}
    with pytest.raises(InvalidInstanceError) as info:
        OASiS(prices=load_prices(ok, inst), multiplier=1e300).run(inst)
    assert info.value.field == "multiplier"


# ------------------------------------------------------------------------------------------
# Algorithm options
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: OASiS(work="bogus"), "work"),
        (lambda: OASiS(prices="bogus"), "prices"),
        (lambda: OASiS(prices=42), "prices"),
        (lambda: OASiS(multiplier=float("nan")), "multiplier"),
        (lambda: OASiS(warmup=0), "warmup"),
        (lambda: FIFO(seed=-5), "seed"),
        (lambda: FIFO(work="epochs"), "work"),
        (lambda: RRH(alpha=2.0), "alpha"),
        (lambda: DRF(work="bogus"), "work"),
        (lambda: DormLike(time_limit=float("nan")), "time_limit"),
        (lambda: DormLike(mip_gap=float("inf")), "mip_gap"),
        (lambda: generate_instance(3, seed=-5), "seed"),
        (lambda: solve(generate_instance(2, 1, 1, 3), time_limit=-1), "time_limit"),
        (lambda: solve(generate_instance(2, 1, 1, 3), mip_gap=float("nan")), "mip_gap"),
        (lambda: solve(generate_instance(2, 1, 1, 3), solver="bogus"), "solver"),
        (lambda: solve(generate_instance(2, 1, 1, 3), solver="scs"), "solver"),
        (lambda: solve(generate_instance(2, 1, 1, 3), warm_start="x"), "warm_start"),
        (lambda: solve({"horizon": 3}), "instance"),
    ],
)
def test_bad_options_name_the_option(make, field) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        make()
    assert info.value.field == field


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    path = tmp_path / "inst.json"
    generate_instance(6, 2, 2, 8, seed=3).save(path)
    return path


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["oasis", "online", "{inst}", "--multiplier", "nan"], "--multiplier"),
        (["oasis", "check", "{inst}", "--seed", "-5"], "--seed"),
        (["oasis", "check", "{inst}", "--time-limit", "nan"], "--time-limit"),
        (["oasis", "offline", "{inst}", "--time-limit", "nan"], "--time-limit"),
        (["oasis", "offline", "{inst}", "--mip-gap", "inf"], "--mip-gap"),
        (["oasis", "offline", "{inst}", "--solver", "bogus"], "--solver"),
        (["oasis", "generate", "--seed", "-5", "-o", "{dir}/x.json"], "--seed"),
        (["oasis", "generate", "-o", "{dir}/x.csv"], "--output"),
        (["oasis", "online", "{inst}", "-o", "{dir}/s.csv"], "--output"),
        (["oasis", "online", "{inst}", "--work", "epochs"], "--work"),
        (["oasis", "ratio", "--seed", "-5", "-o", "{dir}/sweep"], "--seed"),
        (["demo", "--time-limit", "nan", "-o", "{dir}/demo"], "--time-limit"),
        (["oasis", "generate", "--jobs", "100000000", "-o", "{dir}/x.json"], "--jobs"),
        (["oasis", "generate", "--horizon", "1000000000", "-o", "{dir}/x.json"], "--horizon"),
        (["oasis", "ratio", "--horizon", "1000000000", "-o", "{dir}/sweep"], "--horizon"),
    ],
)
def test_bad_options_exit_2_naming_the_flag(instance_file, tmp_path, capsys, args, flag) -> None:
    argv = [a.format(inst=instance_file, dir=tmp_path) for a in args] + ["--json"]
    assert main(argv) == 2
    out = json.loads(capsys.readouterr().out)
    assert flag in out["message"]
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "s.csv").exists()
    # A refused sweep leaves no store behind (its config would block a corrected rerun).
    assert not (tmp_path / "sweep" / "runs.sqlite").exists()


@pytest.mark.solver("highs")
def test_offline_mip_gap_10_is_not_optimal(tmp_path, capsys) -> None:
    path = tmp_path / "gap.json"
    _gap_instance().save(path)
    sched = tmp_path / "s.json"
    assert main(["oasis", "offline", str(path), "--mip-gap", "10", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "NotOptimalError" and out["status"] == "feasible"
    assert out["termination"] == "gap_limit" and not out["optimal"]
    # The incumbent stays in the JSON, and it is a valid schedule.
    inst = OasisInstance.load(path)
    incumbent = Schedule.from_dict(out["solution"])
    assert validate(inst, incumbent).objective == pytest.approx(out["objective"])
    argv = ["oasis", "offline", str(path), "--mip-gap", "10", "--accept-feasible", "--json"]
    assert main([*argv, "-o", str(sched)]) == 0
    out = json.loads(capsys.readouterr().out)  # one line: the schedule is in the file
    assert out["status"] == "feasible" and out["gap"] > 1e-3 and out["output"] == str(sched)
    written = Schedule.load(sched)
    assert validate(inst, written).objective == pytest.approx(out["objective"])


@pytest.mark.solver("highs")
def test_check_exits_3_when_the_exact_solve_stops_short(tmp_path, capsys) -> None:
    path = tmp_path / "gap.json"
    _gap_instance().save(path)
    assert main(["oasis", "check", str(path), "--mip-gap", "10", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["offline_status"] == "feasible" and out["ratio"] is None
    assert out["ratio_upper"] is not None and out["holds"]["alg_le_opt"] is True
    argv = ["oasis", "check", str(path), "--mip-gap", "10", "--accept-feasible", "--json"]
    assert main(argv) == 0
    capsys.readouterr()


RATIO_ARGS = [
    "--jobs",
    "4",
    "--horizon",
    "5",
    "--worker-servers",
    "2",
    "--ps-servers",
    "1",
    "--seed",
    "1",
]


@pytest.mark.solver("highs")
def test_ratio_exits_3_when_an_exact_solve_stops_short(tmp_path, capsys) -> None:
    base = ["oasis", "ratio", "--instances", "1", "--jobs", "12", "--horizon", "12"]
    base += ["--seed", "2028", "--mip-gap", "10", "-o", str(tmp_path / "s"), "--json"]
    assert main(base) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["records"][0]["opt"] is None and out["records"][0]["ratio_upper"] is not None
    assert main([*base, "--accept-feasible"]) == 0


@pytest.mark.solver("highs")
def test_ratio_resume_refuses_other_options(tmp_path, capsys) -> None:
    out_dir = tmp_path / "sweep"
    argv = ["oasis", "ratio", "--instances", "1", *RATIO_ARGS, "-o", str(out_dir), "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    for extra, name in ((["--work", "worker-slots"], "work"), (["--scale", "0.1"], "scale")):
        assert main([*argv, *extra]) == 2
        out = json.loads(capsys.readouterr().out)
        assert out["field"] == f"config.{name}"


def _run_ratio(out_dir: Path, n: int) -> subprocess.Popen:
    argv = ["oasis", "ratio", "--instances", str(n), *RATIO_ARGS, "-o", str(out_dir), "--json"]
    code = "import sys; from optsched.cli import main; main(sys.argv[1:])"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _stored(out_dir: Path) -> int:
    path = out_dir / "runs.sqlite"
    if not path.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.1)
        try:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


@pytest.mark.solver("highs")
def test_ratio_killed_and_resumed_equals_an_uninterrupted_run(tmp_path) -> None:
    n = 5
    killed = tmp_path / "killed"
    proc = _run_ratio(killed, n)
    # Poll (bounded: at most 600 s) until a record is on disk, then kill without warning.
    deadline = time.monotonic() + 600
    while _stored(killed) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # The kill must land mid-run, else the resume below would have nothing to resume.
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    at_kill = _stored(killed)
    assert 1 <= at_kill < n
    resumed = _run_ratio(killed, n)
    resumed_out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0
    whole = _run_ratio(tmp_path / "whole", n)
    whole_out, _ = whole.communicate(timeout=600)
    assert whole.returncode == 0
    assert json.loads(resumed_out)["records"] == json.loads(whole_out)["records"]
    table = (killed / "table.md").read_text()
    assert table == (tmp_path / "whole" / "table.md").read_text()
    assert table.count("\n| ") >= n


# ------------------------------------------------------------------------------------------
# Plots
# ------------------------------------------------------------------------------------------


def test_schedule_plot_takes_an_axes_and_leaves_the_backend_alone(tmp_path: Path) -> None:
    import matplotlib
    from matplotlib.figure import Figure

    from optsched.report.oasis import plot_schedule

    backend = matplotlib.get_backend()
    inst = generate_instance(6, 2, 2, 8, seed=3)
    run = OASiS().run(inst)
    fig = plot_schedule(inst, run.schedule)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    # One bar per (job, slot with workers), as the schedule says.
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == sum(len({t for t, _, _ in js.workers}) for js in run.schedule.jobs)
    assert [t.get_text() for t in ax.get_yticklabels()][-1].startswith(run.schedule.jobs[0].job)
    mine = Figure()
    target = mine.add_subplot()
    assert plot_schedule(inst, run.schedule, ax=target) is mine
    mine.savefig(tmp_path / "gantt.png")
    assert (tmp_path / "gantt.png").read_bytes()[:4] == b"\x89PNG"
    assert matplotlib.get_backend() == backend


def test_the_library_never_imports_the_command_line() -> None:
    code = (
        "import sys, optsched.online.oasis, optsched.online.oasis.competitive,"
        " optsched.report.oasis;"
        "print(sorted(m for m in sys.modules if m.startswith('optsched.cli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_instance_frame_has_one_row_per_job() -> None:
    inst = generate_instance(7, 2, 2, 8, seed=2)
    frame = inst.to_frame()
    assert list(frame.job) == [inst.job_name(i) for i in range(inst.n_jobs)]
    assert frame.total_work.tolist() == pytest.approx(list(inst.total_work))
    assert (frame.total_work == frame.epochs * frame.chunks * frame.work_per_chunk).all()


def test_sweep_plot_of_ratios_equal_up_to_rounding() -> None:
    """A histogram of 1 and 1 + 2e-16 once failed with 'Too many bins for data range'."""
    from optsched.report.oasis import plot_sweep

    records = [
        {"ratio": r, "proven_bound": 2.0, "certified_ratio": 1.5} for r in (1.0, 1.0 + 2**-52)
    ]
    fig = plot_sweep(records)
    assert fig.axes


def test_model_building_counts_against_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A limit spent while building stops the build: no solver call; the stopped solve keeps
    the cheapest baseline's schedule (the seed) as its incumbent."""
    from optsched.errors import NotOptimalError
    from optsched.family import exact
    from optsched.online.oasis import generate_instance, solve

    # the seed, run first under a budget, takes no time on this clock: the build spends it
    # (a seed that spends it: tests/test_hardening_time_limits.py)
    monkeypatch.setattr(exact, "_clock", lambda: 0.0)
    inst = generate_instance(6, worker_servers=3, ps_servers=3, horizon=12, seed=2)
    with pytest.raises(NotOptimalError) as info:
        solve(inst, time_limit=1e-9)
    result = info.value.result
    assert result.status.value == "feasible" and result.native_status == "not started"
    assert result.solution is not None and "incumbent_source" in result.extra
    assert result.termination.value == "time_limit"
    assert "building the model" in result.message
