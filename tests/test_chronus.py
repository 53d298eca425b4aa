"""The chronus family: the MILP admits exactly what can finish, the heuristics never more.

Every admission count is checked against brute force over all admission subsets with an exact
feasibility check over every lease-grant vector (tests/brute/chronus.py); every plan goes
through the independent validator.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from brute.chronus import feasible, max_admitted
from hypothesis import event, given, settings
from strategies.chronus import tiny_instances, unit_single_machine

from optsched.allocation.chronus import (
    BestEffortJob,
    ChronusGreedy,
    EDFBaseline,
    LeaseInstance,
    LeasePlan,
    SLOJob,
    edf_feasible,
    generate_instance,
    solve,
    validate,
)
from optsched.errors import InvalidInstanceError, NotOptimalError, SolverUnavailableError
from optsched.solvers import Status

pytestmark = pytest.mark.solver("highs")


@settings(max_examples=30)
@given(tiny_instances())
def test_milp_admits_exactly_the_brute_force_maximum(inst: LeaseInstance) -> None:
    res = solve(inst)
    assert res.optimal
    assert res.extra["admitted"] == max_admitted(inst)
    report = validate(inst, res.solution)
    assert report.ok, report.violations  # every admitted job finishes by its deadline
    assert feasible(inst, [j for j in inst.slo_jobs if j.job_id in res.solution.admitted])
    greedy = ChronusGreedy().run(inst)
    greedy_report = validate(inst, greedy)
    assert greedy_report.ok, greedy_report.violations
    assert len(greedy.admitted) <= res.extra["admitted"]
    event(f"greedy admits {res.extra['admitted'] - len(greedy.admitted)} fewer than the MILP")
    event(f"MILP admits {res.extra['admitted']} of {len(inst.slo_jobs)}")
    edf = EDFBaseline().run(inst)
    edf_report = validate(inst, edf)
    assert len(edf.admitted) <= res.extra["admitted"]
    if edf_report.ok:
        assert edf_report.objective is not None and res.objective is not None
        assert edf_report.objective <= res.objective + 1e-6
    else:  # only a guaranteed job EDF misses can break its plan
        assert {v.constraint for v in edf_report.violations} == {"keep_guaranteed"}
        event("EDF misses a guaranteed job")


@settings(max_examples=40)
@given(unit_single_machine())
def test_edf_feasibility_is_exact_for_unit_gangs_on_one_gpu(inst: LeaseInstance) -> None:
    """Jackson's rule: with at most one GPU per lease and unit gangs, EDF packs every set that
    fits. Checked on every subset of the jobs."""
    import itertools

    jobs = inst.slo_jobs
    for size in range(1, len(jobs) + 1):
        for subset in itertools.combinations(jobs, size):
            assert edf_feasible(inst, subset) == feasible(inst, subset)


def test_edf_is_not_exact_with_two_gpus_and_the_milp_is() -> None:
    jobs = (
        SLOJob(job_id="short1", gang=1, remaining=1, speed=(1,), deadline=1),
        SLOJob(job_id="short2", gang=1, remaining=1, speed=(1,), deadline=1),
        SLOJob(job_id="long", gang=1, remaining=3, speed=(1,), deadline=2),
    )
    inst = LeaseInstance(gpu_types=("v100",), capacity=((2,),) * 3, slo_jobs=jobs)
    assert feasible(inst, jobs) and not edf_feasible(inst, jobs)
    assert solve(inst).extra["admitted"] == 3
    assert len(ChronusGreedy().run(inst).admitted) == 2


def _inst() -> LeaseInstance:
    return LeaseInstance(
        gpu_types=("v100", "k80"),
        capacity=((2, 1), (2, 1)),
        slo_jobs=(
            SLOJob(job_id="a", gang=2, remaining=10, speed=(5, 0), deadline=1, guaranteed=True),
            SLOJob(job_id="b", gang=1, remaining=3, speed=(3, 1), deadline=0),
        ),
        best_effort=(BestEffortJob(job_id="c", gang=1, remaining=4, speed=(2, 1)),),
    )


def test_the_optimum_of_a_hand_instance() -> None:
    inst = _inst()
    res = solve(inst)
    # a needs both V100s in both leases; b can only run on the k80 (1 step < 3): not admitted;
    # c gets the k80 in both leases: 2 of its 4 steps.
    assert res.solution is not None and res.solution.admitted == ("a",)
    assert res.objective == pytest.approx(1 + 0.5 * inst.epsilon)
    assert validate(inst, res.solution).objectives["best-effort"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("plan", "constraint"),
    [
        (LeasePlan(("a", "zz"), (("a", 0, "v100"), ("a", 1, "v100"))), "admission"),
        (LeasePlan(("a",), (("a", 0, "v100"),)), "finish_by_deadline"),
        (LeasePlan((), ()), "keep_guaranteed"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("b", 0, "v100"))), "capacity"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("b", 0, "k80"))), "admitted_only"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("x", 0, "k80"))), "known_job"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("c", 0, "h100"))), "known_type"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("c", 2, "k80"))), "lease_range"),
        (LeasePlan(("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("a", 1, "k80"))), "runs_on_type"),
        (
            LeasePlan(
                ("a",), (("a", 0, "v100"), ("a", 1, "v100"), ("c", 0, "k80"), ("c", 0, "k80"))
            ),
            "one_type_per_lease",
        ),
    ],
)
def test_the_validator_catches_each_broken_plan(plan: LeasePlan, constraint: str) -> None:
    report = validate(_inst(), plan)
    assert constraint in {v.constraint for v in report.violations}, report.violations


def test_a_guarantee_that_cannot_be_kept_is_reported_infeasible() -> None:
    inst = LeaseInstance(
        gpu_types=("v100",),
        capacity=((1,),),
        slo_jobs=(
            SLOJob(job_id="a", gang=1, remaining=5, speed=(2,), deadline=0, guaranteed=True),
        ),
    )
    with pytest.raises(NotOptimalError) as err:
        solve(inst)
    assert err.value.result.status is Status.INFEASIBLE
    assert err.value.result.solution is None


def test_a_solve_stopped_short_says_so() -> None:
    inst = generate_instance(12, 4, leases=6, gpu_types=("v100", "k80"), gpus=4, seed=0)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, node_limit=1)
    result = err.value.result
    # One node (a work budget, the same on every machine) finds an incumbent but no proof.
    assert not result.optimal and result.status is Status.FEASIBLE
    assert result.solution is not None  # an incumbent is never lost, and it is valid
    assert validate(inst, result.solution).ok
    accepted = solve(inst, node_limit=1, accept_feasible=True)
    assert accepted.status is Status.FEASIBLE
    assert accepted.solution == result.solution


def test_round_trip_and_bad_input(tmp_path: Path) -> None:
    inst = generate_instance(3, 2, leases=3, gpu_types=("v100", "k80"), seed=5)
    path = tmp_path / "lease.json"
    inst.save(path)
    assert LeaseInstance.load(path) == inst
    data = inst.to_dict()
    data["slo_jobs"][1]["deadline"] = 3
    with pytest.raises(InvalidInstanceError, match=r"slo_jobs\[1\]\.deadline"):
        LeaseInstance.from_dict(data)
    data = inst.to_dict()
    data["best_effort"][0]["speed"] = [1]
    with pytest.raises(InvalidInstanceError, match=r"best_effort\[0\]\.speed"):
        LeaseInstance.from_dict(data)
    data = inst.to_dict()
    data["best_effort"][0]["job_id"] = data["slo_jobs"][0]["job_id"]
    with pytest.raises(InvalidInstanceError, match=r"best_effort\[0\]\.job_id"):
        LeaseInstance.from_dict(data)
    data = inst.to_dict()
    data["capacity"][0] = [1]
    with pytest.raises(InvalidInstanceError, match=r"capacity\[0\]"):
        LeaseInstance.from_dict(data)
    # The matrix solver layer refuses a solver it cannot use, with its typed error.
    with pytest.raises(SolverUnavailableError, match="cbc"):
        solve(inst, solver="cbc")
    assert len(repr(inst)) < 200 and len(repr(solve(inst))) < 400


def test_the_schema_is_published_and_matches_the_files(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import jsonschema

    from optsched.allocation.chronus import instance_schema
    from optsched.cli import main

    assert main(["schema", "chronus-instance"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == instance_schema()
    jsonschema.validate(generate_instance(3, 2, guaranteed_fraction=0.5, seed=1).to_dict(), schema)
