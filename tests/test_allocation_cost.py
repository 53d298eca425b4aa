"""Cost and SLO allocation policies: against the cvxpy twin, the validator's ``slo`` check, a
closed form, and infeasible deadlines reported as infeasible (never an allocation)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.allocation import rounds_with_deadlines

from optsched.allocation.gavel import (
    AllocationInstance,
    AllocationJob,
    generate_instance,
    solve,
    validate,
)
from optsched.allocation.gavel.prices import GPU_PRICES_PER_HOUR
from optsched.allocation.gavel.twin import build_twin, solve_twin
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.solvers.result import Status
from optsched.tolerances import OPTIMALITY_GAP, leq, within

pytestmark = pytest.mark.solver("highs")

COST_POLICIES = ["min-cost", "min-cost-perf", "min-cost-slo", "min-cost-slo-perf"]
TWIN_TOL = 1e-4  # the conic twin's accuracy (see tests/test_allocation.py)


def _twin_infeasible(inst: AllocationInstance, policy: str) -> bool:
    problem, _ = build_twin(inst, policy)
    problem.solve(solver="CLARABEL")
    return problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE)


@given(inst=rounds_with_deadlines(), policy=st.sampled_from(COST_POLICIES))
@settings(max_examples=25)
def test_cost_lp_equals_its_twin_or_both_are_infeasible(
    inst: AllocationInstance, policy: str
) -> None:
    try:
        res = solve(inst, policy)
    except NotOptimalError as err:
        assert err.result.status is Status.INFEASIBLE
        assert err.result.solution is None
        assert _twin_infeasible(inst, policy)
        return
    report = validate(inst, res.solution, policy)
    assert report.ok, report.violations
    assert within(report.objective, res.objective, OPTIMALITY_GAP)
    twin, _ = solve_twin(inst, policy)
    assert within(res.objective, twin, TWIN_TOL)
    assert leq(twin, res.objective, OPTIMALITY_GAP)


def test_cost_picks_the_most_steps_per_dollar() -> None:
    """One single-GPU job, GPUs free: all its time on argmax_j T_j / p_j (closed form)."""
    job = AllocationJob(job_id="a", throughput_steps_per_s=(10.0, 6.0, 1.0))
    inst = AllocationInstance(gpu_types=("v100", "p100", "k80"), capacity=(1, 1, 1), jobs=[job])
    prices = np.array([GPU_PRICES_PER_HOUR[n] for n in inst.gpu_types])
    res = solve(inst, "min-cost-perf")
    best = int(np.argmax(np.array(job.throughput_steps_per_s) / prices))
    assert best == 1  # P100: 6 / 1.46 > 10 / 2.48 > 1 / 0.45
    assert np.allclose(res.solution.fractions[0], np.eye(3)[best], atol=1e-9)
    assert within(res.objective, 3600 * 6.0 / 1.46, OPTIMALITY_GAP)
    # Agnostic: it believes it runs at its V100 speed everywhere, so the cheapest type wins.
    agnostic = solve(inst, "min-cost")
    assert np.allclose(agnostic.solution.fractions[0], [0.0, 0.0, 1.0], atol=1e-9)


def test_deadlines_move_work_to_faster_gpus() -> None:
    """The SLO forces a job off its cheapest type onto enough V100 time to finish in time."""
    job = AllocationJob(
        job_id="a",
        throughput_steps_per_s=(10.0, 6.0, 1.0),
        steps_remaining=7200.0,
        time_to_deadline_s=900.0,
    )
    inst = AllocationInstance(gpu_types=("v100", "p100", "k80"), capacity=(1, 1, 1), jobs=[job])
    res = solve(inst, "min-cost-slo-perf")
    x = res.solution.fractions[0]
    assert float(np.dot(job.throughput_steps_per_s, x)) >= 8.0 * (1 - 1e-9)  # 7200 steps in 900 s
    assert validate(inst, res.solution, "min-cost-slo-perf").ok
    twin, _ = solve_twin(inst, "min-cost-slo-perf")
    assert within(res.objective, twin, TWIN_TOL)
    # Without the SLO the same round stays on the P100 and misses the deadline.
    free = solve(inst, "min-cost-perf")
    assert [
        v.constraint for v in validate(inst, free.solution, "min-cost-slo-perf").violations
    ] == ["slo"]


def test_a_deadline_no_gpu_can_meet_is_reported_infeasible_naming_the_job() -> None:
    jobs = [
        AllocationJob(job_id="ok", throughput_steps_per_s=(2.0,), steps_remaining=10.0),
        AllocationJob(
            job_id="late",
            throughput_steps_per_s=(2.0,),
            steps_remaining=1000.0,
            time_to_deadline_s=10,
        ),
    ]
    inst = AllocationInstance(gpu_types=("v100",), capacity=(2,), jobs=jobs)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, "min-cost-slo-perf")
    assert err.value.result.status is Status.INFEASIBLE
    assert err.value.result.solution is None
    assert "'late'" in err.value.result.message
    with pytest.raises(NotOptimalError):
        solve(inst, "min-cost-slo-perf", accept_feasible=True)  # nothing to accept


def test_deadlines_that_only_clash_are_reported_infeasible() -> None:
    """Each job alone could finish in time; both on one GPU cannot (HiGHS proves it)."""
    jobs = [
        AllocationJob(
            job_id=f"j{i}",
            throughput_steps_per_s=(1.0,),
            steps_remaining=60.0,
            time_to_deadline_s=100,
        )
        for i in range(2)
    ]
    inst = AllocationInstance(gpu_types=("v100",), capacity=(1,), jobs=jobs)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, "min-cost-slo-perf")
    assert err.value.result.status is Status.INFEASIBLE
    assert _twin_infeasible(inst, "min-cost-slo-perf")
    # The same round without deadlines is solved.
    assert solve(inst, "min-cost-perf").optimal


def test_generated_slo_rounds_are_solved_and_valid() -> None:
    inst = generate_instance(64, seed=3, slo_fraction=0.25, multi_gpu=True)
    assert np.isfinite(inst.deadlines).sum() > 0
    base = generate_instance(64, seed=3, multi_gpu=True)
    assert [j.throughput_steps_per_s for j in inst.jobs] == [
        j.throughput_steps_per_s for j in base.jobs
    ]
    res = solve(inst, "min-cost-slo-perf")
    assert validate(inst, res.solution, "min-cost-slo-perf").ok
    assert leq(res.objective, solve(inst, "min-cost-perf").objective, OPTIMALITY_GAP)


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"gpu_types": ["v100", "h200"], "capacity": [1, 1]}, "prices"),
        ({"prices": [1.0, 2.0]}, "prices"),
        ({"prices": [0.0]}, "prices[0]"),
        (
            {
                "jobs": [
                    {"job_id": "a", "throughput_steps_per_s": [1.0], "time_to_deadline_s": -1.0}
                ]
            },
            "jobs",
        ),
    ],
)
def test_bad_prices_and_deadlines_name_the_field(update: dict, field: str) -> None:
    data = {
        "gpu_types": ["v100"],
        "capacity": [1],
        "jobs": [{"job_id": "a", "throughput_steps_per_s": [1.0]}],
    }
    data.update(update)
    if len(data["gpu_types"]) == 2:
        data["jobs"] = [{"job_id": "a", "throughput_steps_per_s": [1.0, 1.0]}]
    with pytest.raises(InvalidInstanceError) as err:
        solve(AllocationInstance.from_dict(data), "min-cost-perf")
    assert err.value.field.startswith(field)
