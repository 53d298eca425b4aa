"""Chronus in the simulator: admitted jobs finish by their deadlines, runs validate, and on
worlds where one MILP sees everything it meets at least as many deadlines as EDF."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies.sim import LEASE, boundary_worlds

from optsched import sim
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.results import ExactResult
from optsched.sim import World, simulate, validate
from optsched.sim.measure.metrics import deadline_metrics
from optsched.sim.policies import POLICIES, make_policy
from optsched.sim.policies.chronus import Chronus
from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

pytestmark = pytest.mark.solver("highs")


def _met_by_hand(world: World, record: sim.SimResult) -> tuple[int, int]:
    """Deadlines met and deadlines, from the record's completion times by a plain loop."""
    met = total = 0
    for job, done in zip(world.jobs, record.completion, strict=True):
        if not math.isnan(job.deadline):
            total += 1
            met += int(not math.isnan(done) and done <= job.deadline)
    return met, total


@settings(max_examples=15)
@given(boundary_worlds())
def test_chronus_meets_at_least_as_many_deadlines_as_edf_when_one_milp_sees_all(
    world: World,
) -> None:
    """Theorem. All jobs arrive at 0, deadlines lie on lease boundaries, one GPU type, rates
    ``gang`` steps/s whether consolidated or not, integral durations, no restore cost: then the
    speeds and remaining work of the first lease instance are exact, any round-based schedule
    (EDF's included) is a lease grant plan, so the jobs EDF finishes by their deadlines are a
    feasible admission of that instance, at most the MILP's optimum; and Chronus keeps every
    admission it makes (the shifted plan stays feasible), so it meets at least that many."""
    chronus = Chronus(LEASE, max_leases=8)
    a = simulate(world, chronus)
    b = simulate(world, make_policy("edf"), round_seconds=LEASE)
    assert validate(world, a).ok and validate(world, b).ok
    planned = [d for d in chronus.log if d.slo_jobs]
    # a reused plan is the last optimal MILP plan, shifted and re-validated
    assert all(
        (d.method, d.status) in (("milp", "optimal"), ("milp (reused)", "reused")) for d in planned
    )
    first = chronus.log[0]
    assert first.now == 0.0 and first.clamped == 0
    met_a, _ = _met_by_hand(world, a)
    met_b, _ = _met_by_hand(world, b)
    assert met_a >= met_b
    assert met_a >= len(first.admitted)
    event(f"chronus meets {met_a - met_b} more than edf")


def _generated(seed: int, restore: float = 0.0) -> World:
    return sim.generate_instance(
        10,
        "v100=4,k80=4",
        seed=seed,
        restore_s=restore,
        deadline_fraction=0.6,
        mean_interarrival=200.0,
        mu=6.5,
        sigma=0.8,
    )


@settings(max_examples=6)
@given(st.integers(0, 10_000), st.sampled_from([0.0, 30.0]), st.sampled_from(["milp", "greedy"]))
def test_every_admitted_job_meets_its_deadline_on_generated_worlds(
    seed: int, restore: float, mode: str
) -> None:
    world = _generated(seed, restore)
    policy = Chronus(600.0, mode=mode)  # type: ignore[arg-type]
    record = simulate(world, policy)
    report = validate(world, record)
    assert report.ok, report.violations
    completion = dict(zip([j.job_id for j in world.jobs], record.completion, strict=True))
    admitted = {job for d in policy.log for job in d.admitted}
    for job in admitted:
        assert completion[job] <= world.job(job).deadline, job
    assert not any(d.dropped for d in policy.log) or mode == "greedy"
    edf = simulate(world, make_policy("edf"), round_seconds=600.0)
    assert validate(world, edf).ok
    ours, theirs = _met_by_hand(world, record)[0], _met_by_hand(world, edf)[0]
    if ours < theirs:
        event("EDF meets more deadlines (online arrivals, deadlines inside a lease)")
    assert deadline_metrics(record)["deadlines_met"] == ours


def test_a_milp_that_stops_short_falls_back_to_the_greedy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import optsched.sim.policies.chronus as module

    def stopped(*args: object, **kwargs: object) -> ExactResult[object]:
        result = assemble(
            TerminationCondition.TIME_LIMIT,
            SolutionStatus.FEASIBLE,
            1.0,
            2.0,
            build_seconds=0.0,
            solve_seconds=0.0,
            solver="highs",
            solver_version="",
            native_status="kTimeLimit",
        )
        raise NotOptimalError(ExactResult.from_solve(result, None, sense="max"))

    monkeypatch.setattr(module, "solve", stopped)
    world = _generated(1)
    policy = Chronus(600.0)
    record = simulate(world, policy)
    assert validate(world, record).ok
    planned = [d for d in policy.log if d.slo_jobs]
    assert planned and all(d.method == "greedy (fallback: MILP feasible)" for d in planned)
    assert all(d.status == "feasible" for d in planned)
    frame = policy.log_frame()
    assert len(frame) == len(policy.log) and "method" in frame.columns


def test_deadline_metrics_by_hand_and_in_compare_rows() -> None:
    world = _generated(2)
    comparison = sim.compare(world, ["chronus", "edf"], round_seconds=600.0)
    frame = comparison.to_frame()
    for name in ("chronus", "edf"):
        record = comparison.runs[name]
        met, total = _met_by_hand(world, record)
        m = deadline_metrics(record)
        assert (m["deadlines_met"], m["deadlines"]) == (met, total)
        assert m["deadline_satisfaction"] == pytest.approx(met / total)
        jcts = [
            done - job.arrival
            for job, done in zip(world.jobs, record.completion, strict=True)
            if math.isnan(job.deadline) and not math.isnan(done)
        ]
        assert m["best_effort_jct_mean"] == pytest.approx(sum(jcts) / len(jcts))
        row = frame[frame["policy"] == name].iloc[0]
        assert row["best_effort_jct_mean"] == pytest.approx(m["best_effort_jct_mean"])
        assert bool(row["valid"])


def test_registry_and_bad_options() -> None:
    assert {"chronus", "chronus-greedy"} <= set(POLICIES)
    assert make_policy("chronus-greedy").round_seconds == 1200.0
    for kwargs, field in (
        ({"lease_s": 0.0}, "lease_s"),
        ({"mode": "exact"}, "mode"),
        ({"max_leases": 0}, "max_leases"),
        ({"time_limit": -1.0}, "time_limit"),
    ):
        with pytest.raises(InvalidInstanceError, match=field):
            Chronus(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=4)
@given(st.integers(0, 10_000))
def test_replanning_on_change_reuses_plans_and_keeps_every_admission(seed: int) -> None:
    """Short leases: most boundaries reuse the shifted plan; every admitted job still meets its
    deadline; planning every lease solves a MILP at every boundary with SLO jobs."""
    world = _generated(seed)
    fast = Chronus(60.0)
    record = simulate(world, fast)
    assert validate(world, record).ok
    completion = dict(zip([j.job_id for j in world.jobs], record.completion, strict=True))
    for job in {job for d in fast.log for job in d.admitted}:
        assert completion[job] <= world.job(job).deadline, job
    methods = [d.method for d in fast.log if d.slo_jobs]
    assert set(methods) <= {"milp", "milp (reused)"}
    solved = methods.count("milp")
    assert methods.count("milp (reused)") > 0 and solved < len(methods)
    every = Chronus(60.0, replan="lease")
    assert validate(world, simulate(world, every)).ok
    assert {d.method for d in every.log if d.slo_jobs} <= {"milp"}


def test_replan_option_is_checked() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        Chronus(60.0, replan="sometimes")  # type: ignore[arg-type]
    assert err.value.field == "replan"
