"""Allocation LPs: against their declarative cvxpy twins (a conic solver), a brute-force grid on
tiny rounds, closed forms, and the independent validator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given
from strategies.allocation import lp_rounds

from optsched.allocation.gavel import (
    POLICIES,
    Allocation,
    AllocationInstance,
    AllocationJob,
    generate_instance,
    objective_value,
    solve,
    validate,
)
from optsched.allocation.gavel.twin import solve_twin
from optsched.errors import InvalidInstanceError
from optsched.tolerances import OPTIMALITY_GAP, leq, within

pytestmark = pytest.mark.solver("highs")

#: The conic twin (Clarabel through inv_pos/max cones) stops at about 1e-5 relative accuracy on
#: these rounds; the simplex LP's optimum is exact up to 1e-9. So the LP must never be worse than
#: the twin beyond the LP's own tolerance, and the two must agree within the twin's accuracy.
TWIN_TOL = 1e-4

#: Objectives maximised (the others are minimised).
MAXIMISED = ("max-min", "max-sum-throughput", "min-cost", "min-cost-slo")


@pytest.mark.parametrize("policy", sorted(POLICIES))
@given(inst=lp_rounds())
def test_matrix_lp_equals_its_declarative_twin(policy: str, inst: AllocationInstance) -> None:
    objective = POLICIES[policy][0]
    # With no steps the twin has no term to optimise (the LP's 0 is checked below).
    assume(objective not in ("makespan", "ftf") or (inst.steps > 0).any())
    res = solve(inst, policy)
    assert res.optimal
    report = validate(inst, res.solution, policy)
    assert report.ok, report.violations
    assert within(report.objective, res.objective, OPTIMALITY_GAP)
    twin, _ = solve_twin(inst, policy)
    assert within(res.objective, twin, TWIN_TOL)
    if objective in MAXIMISED:
        assert leq(twin, res.objective, OPTIMALITY_GAP)
    else:
        assert leq(res.objective, twin, OPTIMALITY_GAP)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_no_grid_point_beats_the_lp(policy: str) -> None:
    """Two jobs, two types: every allocation on a 0.1 grid is no better than the LP's."""
    inst = AllocationInstance(
        gpu_types=("fast", "slow"),
        capacity=(1, 1),
        prices=(2.48, 0.45),
        jobs=[
            AllocationJob(job_id="a", throughput_steps_per_s=(4.0, 1.0), steps_remaining=100.0),
            AllocationJob(
                job_id="b",
                throughput_steps_per_s=(3.0, 2.0),
                steps_remaining=60.0,
                time_since_start_s=10.0,
            ),
        ],
    )
    objective, aware = POLICIES[policy]
    res = solve(inst, policy)
    grid = np.round(np.arange(0, 1.01, 0.1), 10)
    maximise = objective in MAXIMISED
    for a0, a1, b0, b1 in itertools.product(grid, repeat=4):
        x = np.array([[a0, a1], [b0, b1]])
        if x[0].sum() > 1 or x[1].sum() > 1 or x[:, 0].sum() > 1 or x[:, 1].sum() > 1:
            continue
        value = objective_value(inst, x, objective, aware)
        if maximise:
            assert leq(value, res.objective, OPTIMALITY_GAP)
        else:
            assert leq(res.objective, value, OPTIMALITY_GAP)


def test_identical_jobs_share_equally() -> None:
    """M identical single-GPU jobs on n < M GPUs: max-min gives each n/M of the round."""
    jobs = [AllocationJob(job_id=f"j{i}", throughput_steps_per_s=(2.0,)) for i in range(5)]
    inst = AllocationInstance(gpu_types=("v100",), capacity=(2,), jobs=jobs)
    res = solve(inst, "max-min-perf")
    assert np.allclose(res.solution.fractions[:, 0], 2 / 5, atol=1e-7)


def test_makespan_closed_form_on_one_type() -> None:
    """One type, single-GPU jobs: the makespan is max(sum(work)/n, max(work))."""
    work = [30.0, 10.0, 20.0]
    jobs = [
        AllocationJob(job_id=f"j{i}", throughput_steps_per_s=(1.0,), steps_remaining=w)
        for i, w in enumerate(work)
    ]
    for n in (1, 2, 3):
        inst = AllocationInstance(gpu_types=("v100",), capacity=(n,), jobs=jobs)
        res = solve(inst, "makespan-perf")
        assert within(res.objective, max(sum(work) / n, max(work)), OPTIMALITY_GAP)


def test_ftf_reports_a_proven_bracket() -> None:
    inst = generate_instance(30, seed=2, multi_gpu=True)
    res = solve(inst, "ftf-perf")
    assert res.optimal
    assert res.bound is not None and res.bound <= res.objective
    assert res.gap is not None and res.gap <= OPTIMALITY_GAP


def test_warm_start_gives_the_same_answer() -> None:
    inst = generate_instance(40, seed=4)
    cold = solve(inst, "max-min-perf")
    warm = solve(inst, "max-min-perf", warm_start=cold.extra["lp"])
    assert within(warm.objective, cold.objective, OPTIMALITY_GAP)
    assert warm.extra["lp"].iterations <= cold.extra["lp"].iterations


def test_validator_names_each_broken_constraint() -> None:
    inst = AllocationInstance(
        gpu_types=("a", "b"),
        capacity=(1, 1),
        jobs=[
            AllocationJob(job_id="x", throughput_steps_per_s=(1.0, 0.0)),
            AllocationJob(job_id="y", throughput_steps_per_s=(1.0, 1.0)),
        ],
    )

    def names(fr: list[list[float]]) -> set[str]:
        alloc = Allocation(("x", "y"), ("a", "b"), np.array(fr))
        return {v.constraint for v in validate(inst, alloc).violations}

    assert names([[0.5, 0.0], [0.5, 0.5]]) == set()
    assert names([[-0.1, 0.0], [0.0, 0.0]]) == {"nonnegative"}
    assert names([[0.0, 0.3], [0.0, 0.0]]) == {"gang_fits"}
    assert names([[0.0, 0.0], [0.8, 0.8]]) == {"job_time"}
    assert names([[0.7, 0.0], [0.7, 0.0]]) == {"type_capacity"}


@pytest.mark.parametrize(
    ("jobs", "field"),
    [
        ([{"job_id": "a", "throughput_steps_per_s": [0.0]}], "jobs[0].throughput_steps_per_s"),
        (
            [{"job_id": "a", "throughput_steps_per_s": [1.0], "scale_factor": 4}],
            "jobs[0].scale_factor",
        ),
        (
            [
                {"job_id": "a", "throughput_steps_per_s": [1.0]},
                {"job_id": "a", "throughput_steps_per_s": [1.0]},
            ],
            "jobs[1].job_id",
        ),
        ([{"job_id": "a", "throughput_steps_per_s": [1.0, 2.0]}], "jobs[0].throughput_steps_per_s"),
        (
            [{"job_id": "a", "throughput_steps_per_s": [1.0], "weight": float("nan")}],
            "jobs[0].weight",
        ),
    ],
)
def test_bad_rounds_name_the_field(jobs: list[dict], field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        AllocationInstance.from_dict({"gpu_types": ["v100"], "capacity": [2], "jobs": jobs})
    assert err.value.field.startswith(field)


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        solve(generate_instance(2, seed=0), "bogus")
    assert err.value.field == "policy"


def test_round_trip_through_a_file(tmp_path) -> None:
    inst = generate_instance(5, seed=7, multi_gpu=True)
    inst.save(tmp_path / "round.json")
    assert AllocationInstance.load(tmp_path / "round.json") == inst
