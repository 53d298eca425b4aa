"""The communication family follows the protocol: instance, solve, policies, validate, frames."""

from __future__ import annotations

import json
import math

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from strategies.pace import instances

import optsched.comm.pace as comm
from optsched.comm.pace import (
    FIFO,
    POLICIES,
    CommInstance,
    CommSchedule,
    Pace,
    PolicyComparison,
    compare,
    generate_instance,
    solve,
    validate,
)
from optsched.comm.pace.exact import exact_schedule
from optsched.comm.pace.fusion import optimal_fusion
from optsched.comm.pace.schedule import FRAME_COLUMNS
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.results import ExactResult
from optsched.runs.pace_sweep import SWEEP_KIND, sweep, sweep_config
from optsched.runs.store import RunStore
from optsched.solvers.result import SolutionStatus, SolveResult, Status, TerminationCondition

REL = 1e-9


def test_the_package_exports_the_protocol():
    for name in (
        "CommInstance",
        "generate_instance",
        "solve",
        "validate",
        "CommSchedule",
        "PolicyComparison",
        "FIFO",
        "Horovod",
        "P3",
        "TicTac",
        "ByteScheduler",
        "Pace",
    ):
        assert name in comm.__all__ and hasattr(comm, name), name
    for method in ("load", "save", "schema", "from_dict"):
        assert callable(getattr(CommInstance, method))
    # Distinct names from the other families' classes.
    assert not hasattr(comm, "Comparison") and not hasattr(comm, "Fifo")


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_instances_round_trip_through_files(tmp_path, suffix):
    inst = generate_instance(seed=7, layers=5)
    path = tmp_path / f"inst{suffix}"
    inst.save(path)
    back = CommInstance.load(path)
    assert back == inst
    assert solve(back).objective == solve(inst).objective
    assert set(CommInstance.schema()["properties"]) >= {"profile", "workers", "bandwidth_gbps"}


def test_a_relative_profile_path_is_taken_from_the_instance_folder(tmp_path):
    sub = tmp_path / "a"
    sub.mkdir()
    generate_instance(seed=2).resolved_profile.save(sub / "p.json")
    (sub / "inst.json").write_text(json.dumps({"profile": "p.json", "workers": 4}))
    inst = CommInstance.load(sub / "inst.json")
    assert inst.resolved_profile.name == "random2"


def test_generation_is_seeded():
    a = generate_instance(seed=11).model_dump_json()
    assert a == generate_instance(seed=11).model_dump_json()
    assert a != generate_instance(seed=12).model_dump_json()
    with pytest.raises(InvalidInstanceError) as err:
        generate_instance(seed=-5)
    assert err.value.field == "seed"


@settings(max_examples=25)
@given(instances())
def test_solve_is_the_simulated_pace_and_the_closed_form(inst):
    result = solve(inst)
    assert isinstance(result, ExactResult) and isinstance(result.solution, CommSchedule)
    assert result.status is Status.OPTIMAL and result.optimal
    assert result.bound == result.objective and result.gap == 0.0
    # Three independent computations of the same optimum: the combinatorial schedule, the
    # simulator running PACE's plan, and Horn's closed form over the DP's groups.
    simulated = Pace()(inst).iteration_time
    fusion = optimal_fusion(inst.dag, inst.cost)
    closed = max(inst.dag.compute_ms, fusion.value)
    assert math.isclose(result.objective, simulated, rel_tol=REL, abs_tol=REL)
    assert math.isclose(result.objective, closed, rel_tol=REL, abs_tol=REL)
    groups = exact_schedule(inst.dag, inst.cost, fusion.groups)
    assert math.isclose(result.objective, groups.iteration_time, rel_tol=REL, abs_tol=REL)
    report = validate(inst, result.solution)
    assert report.ok and math.isclose(report.objective, result.objective, rel_tol=REL)
    assert result.solution.lower_bound <= result.objective * (1 + REL)


@settings(max_examples=15)
@given(instances(max_layers=8))
def test_every_policy_returns_a_valid_schedule_no_faster_than_pace(inst):
    best = solve(inst).objective
    for name, cls in POLICIES.items():
        sched = cls()(inst)
        assert isinstance(sched, CommSchedule) and sched.name == name
        report = validate(inst, sched)
        assert report.ok, (name, report.violations)
        assert math.isclose(report.objective, sched.iteration_time, rel_tol=1e-9, abs_tol=1e-9)
        assert sched.iteration_time >= best * (1 - REL), name
        frame = sched.to_frame()
        assert list(frame.columns) == list(FRAME_COLUMNS)
        # Channel rows carry each tensor's bytes exactly once per call.
        channel = frame[frame["resource"] == "channel"].drop_duplicates(["call", "tensor"])
        carried = channel.groupby("tensor")["bytes"].sum()
        for j, tensor in enumerate(inst.dag.tensors):
            assert math.isclose(carried[tensor], inst.dag.tensor_bytes[j], rel_tol=1e-12)
        compute = frame[frame["resource"] == "compute"]
        assert len(compute) == len(inst.dag.layers) + len(inst.dag.stream_ops)
        assert frame["end_ms"].max() == pytest.approx(sched.iteration_time, rel=REL)
        segs = sched.trace.to_frame()
        assert len(segs) == len(sched.trace.segments)
        assert (segs["end_ms"] - segs["start_ms"]).sum() == pytest.approx(
            sched.trace.comm_busy_ms, rel=REL, abs=REL
        )


def test_validate_rejects_a_schedule_of_another_iteration():
    a, b = generate_instance(seed=1), generate_instance(seed=2)
    report = validate(b, FIFO()(a))
    assert not report.ok and report.violations[0].constraint == "instance"


def test_bad_solve_options_are_named():
    inst = generate_instance(seed=1)
    for kwargs, field in (
        ({"method": "bogus"}, "method"),
        ({"time_limit": -1}, "time_limit"),
        ({"time_limit": math.nan}, "time_limit"),
    ):
        with pytest.raises(InvalidInstanceError) as err:
            solve(inst, **kwargs)
        assert err.value.field == field


@pytest.mark.solver("highs", frontend="cvxpy")
@settings(max_examples=8)
@given(instances(max_layers=5))
def test_the_lp_proves_the_optimum(inst):
    exact = solve(inst)
    lp = solve(inst, method="lp")
    assert lp.status is Status.OPTIMAL and lp.solver == "highs"
    assert lp.bound == pytest.approx(exact.objective, rel=1e-6)
    assert lp.lp_bound == lp.bound and lp.objective == exact.objective


def test_an_lp_stopped_short_flows_through(monkeypatch):
    import optsched.comm.pace.formulation as formulation

    stopped = SolveResult(
        TerminationCondition.TIME_LIMIT,
        SolutionStatus.FEASIBLE,
        None,
        None,
        None,
        0.0,
        1.0,
        "highs",
        "test",
    )

    def stop(*args: object, **kwargs: object) -> None:
        raise NotOptimalError(stopped)

    monkeypatch.setattr(formulation, "solve_lp", stop)
    inst = generate_instance(seed=3)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, method="lp")
    result = err.value.result
    assert isinstance(result, ExactResult) and not result.optimal
    assert result.solution is not None and result.bound is None
    assert result.termination is TerminationCondition.TIME_LIMIT
    kept = solve(inst, method="lp", accept_feasible=True)
    assert kept.status is Status.FEASIBLE and kept.solution is not None


def test_compare_takes_an_instance_and_exports_a_frame():
    inst = CommInstance(profile="resnet18", workers=4, bandwidth_gbps=25, latency_us=3)
    a = compare(inst)
    b = compare("resnet18", 4, 25, 3)
    assert isinstance(a, PolicyComparison)
    assert a.iteration_times == b.iteration_times
    frame = a.to_frame()
    assert set(frame["policy"]) == set(POLICIES)
    pace = frame.set_index("policy").loc["pace"]
    assert pace["ratio_to_pace"] == 1.0
    assert pace["iteration_time_ms"] == pytest.approx(solve(inst).objective, rel=REL)
    assert "PolicyComparison" in repr(a) and len(repr(a)) < 300
    assert a.settings["mb_bytes"] == 10**6


def test_plots_take_ax_and_leave_the_backend_alone():
    from matplotlib.figure import Figure

    from optsched.report.pace import plot_iteration, plot_speedup

    backend = matplotlib.get_backend()
    sched = solve(generate_instance(seed=4)).solution
    fig = plot_iteration(sched)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    mine = Figure()
    ax = mine.add_subplot()
    assert plot_iteration(sched, ax=ax) is mine
    # One bar per channel segment plus the compute ops.
    assert len(ax.collections) >= len(sched.trace.segments)
    frame = sweep(["alexnet"], [1.0, 10.0], [2, 4]).to_frame()
    assert isinstance(plot_speedup(frame), Figure)
    assert matplotlib.get_backend() == backend


def test_sweep_resumes_from_its_store(tmp_path):
    params = {
        "latency_us": 5.0,
        "partition_mb": None,
        "overhead_us": 0.0,
        "fusion_mb": 64.0,
        "cycle_ms": 5.0,
        "order": "profile",
        "update_ms_per_mb": 0.0,
    }
    path = tmp_path / "s.sqlite"
    with RunStore(path, kind=SWEEP_KIND, config=sweep_config(**params)) as store:
        first = sweep(["alexnet"], [1.0, 10.0], [2], store=store, **params)
    with RunStore(path, kind=SWEEP_KIND, config=sweep_config(**params)) as store:
        again = sweep(["alexnet"], [1.0, 10.0, 40.0], [2], store=store, **params)
    assert first.computed == 2 and again.computed == 1
    assert again.rows[:2] == first.rows
    plain = sweep(["alexnet"], [1.0, 10.0, 40.0], [2], **params)
    assert plain.rows == again.rows
    assert list(plain.to_frame()["bandwidth_gbps"]) == [1.0, 10.0, 40.0]
    other = {**params, "overhead_us": 3.0}
    with pytest.raises(InvalidInstanceError) as err:
        RunStore(path, kind=SWEEP_KIND, config=sweep_config(**other))
    assert err.value.field == "config.overhead_us"
    assert np.isfinite(plain.to_frame()["pace"]).all()


def test_reprs_are_short_and_notebooks_get_html():
    from optsched.profiles import load_profile

    assert repr(load_profile("bert_large")).startswith("Profile('bert_large', ")
    inst = CommInstance(profile="bert_large")
    result = solve(inst)
    for obj in (load_profile("bert_large"), inst, result, result.solution, compare(inst)):
        assert len(repr(obj)) < 300, type(obj).__name__
    for obj in (inst, result, result.solution, compare(inst)):
        assert obj._repr_html_().startswith("<")
