"""Sia's per-round integer program: the HiGHS optimum is the brute-force optimum, SCIP agrees,
and the validator refuses exactly the allocations the brute force calls infeasible.

The brute force (tests/brute/sia.py) enumerates every choice of one option or none per job and
recomputes each coefficient on its own; the strategies (tests/strategies/sia.py) draw rounds of
at most 4 jobs with either sign of the fairness power.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from brute.sia import feasible, optimum, value
from hypothesis import given, settings
from strategies.sia import tiny_instances, tiny_with_choices

from optsched.errors import InvalidInstanceError
from optsched.goodput.sia_ilp import SiaAllocation, build, greedy, solve, validate
from optsched.goodput.sia_instance import (
    SiaGpuType,
    SiaInstance,
    SiaJob,
    SiaOption,
    coefficients,
    generate_instance,
    realloc_factor,
    sia_configs,
)
from optsched.tolerances import SOLVER_AGREEMENT_TOL, within

pytestmark = pytest.mark.solver("highs")


@settings(max_examples=40)
@given(tiny_instances())
def test_highs_optimum_is_the_brute_force_optimum(inst: SiaInstance) -> None:
    res = solve(inst)
    best, _ = optimum(inst)
    assert res.optimal
    assert within(res.objective, best, SOLVER_AGREEMENT_TOL), (res.objective, best)
    report = validate(inst, res.solution)
    assert report.ok, report.violations
    assert within(value(inst, res.solution.choices()), best, SOLVER_AGREEMENT_TOL)
    assert res.sense == ("min" if inst.p < 0 else "max")


@settings(max_examples=40)
@given(tiny_with_choices())
def test_validator_refuses_exactly_the_infeasible_choices(case) -> None:
    inst, choices = case
    allocation = SiaAllocation.from_choices(inst, choices)
    report = validate(inst, allocation)
    assert report.ok == feasible(inst, choices)
    assert within(report.objective, value(inst, choices), 1e-12)


@settings(max_examples=25)
@given(tiny_instances())
def test_greedy_seed_is_feasible_and_never_beats_the_optimum(inst: SiaInstance) -> None:
    seed = greedy(inst)
    assert feasible(inst, seed.choices())
    best, _ = optimum(inst)
    got = value(inst, seed.choices())
    assert got >= best - 1e-9 if inst.p < 0 else got <= best + 1e-9


@pytest.mark.solver("scip")
@settings(max_examples=15)
@given(tiny_instances())
def test_scip_agrees_with_highs_on_tiny_rounds(inst: SiaInstance) -> None:
    ours, theirs = solve(inst), solve(inst, solver="scip")
    assert ours.optimal and theirs.optimal
    assert within(theirs.objective, ours.objective, SOLVER_AGREEMENT_TOL)


@pytest.mark.solver("scip")
@pytest.mark.parametrize("seed", range(4))
def test_scip_agrees_with_highs_on_generated_rounds(seed: int) -> None:
    inst = generate_instance(12, seed=seed, num_types=3)
    ours, theirs = solve(inst), solve(inst, solver="scip")
    assert ours.optimal and theirs.optimal
    assert within(theirs.objective, ours.objective, SOLVER_AGREEMENT_TOL)
    assert validate(inst, theirs.solution).ok


def _two_job_round() -> SiaInstance:
    big = SiaOption(gpu_type="a", gpus=4, nodes=1, goodput=4.0)
    small = SiaOption(gpu_type="a", gpus=1, nodes=1, goodput=1.0)
    return SiaInstance(
        gpu_types=(SiaGpuType(name="a", gpus=4, gpus_per_node=4),),
        jobs=(
            SiaJob(name="x", options=(small, big), previous=0, pinned=True),
            SiaJob(name="y", options=(small, big)),
        ),
    )


@pytest.mark.parametrize(
    ("rows", "constraint"),
    [
        (((1, 1), (0, 0)), "one_option"),
        (((1, 0), (0, 1)), "capacity"),
        (((0, 0), (1, 0)), "pinned"),
        (((2, 0), (0, 0)), "binary"),
        (((1, 0),), "shape"),
        (((1, 0, 0), (0, 0)), "shape"),
    ],
)
def test_validator_names_the_broken_constraint(rows, constraint: str) -> None:
    report = validate(_two_job_round(), SiaAllocation(x=rows))
    assert not report.ok
    assert constraint in {v.constraint for v in report.violations}


def test_solved_round_by_hand() -> None:
    # x keeps its 1 GPU (coefficient 1); y's 4-GPU option does not fit beside it, so y takes
    # 1 GPU (1.0) rather than nothing (1.1): 2.0, minimised (p = -0.5).
    inst = _two_job_round()
    res = solve(inst)
    assert res.optimal and res.objective == pytest.approx(2.0)
    assert res.solution.choices() == [0, 0]
    assert res.solution.assignment(inst) == {"x": ("a", 1, 1), "y": ("a", 1, 1)}


def test_no_jobs_is_zero() -> None:
    inst = SiaInstance(gpu_types=(SiaGpuType(name="a", gpus=8),))
    res = solve(inst)
    assert res.optimal and res.objective == 0.0 and res.solution.x == ()


def test_coefficients_scale_all_but_the_held_option_then_power_round_and_clip() -> None:
    job = SiaJob(
        name="j",
        options=(
            SiaOption(gpu_type="a", gpus=1, goodput=1.0),
            SiaOption(gpu_type="a", gpus=2, goodput=4.0),
            SiaOption(gpu_type="a", gpus=4, goodput=0.0001),
        ),
        previous=1,
        realloc_factor=0.25,
    )
    inst = SiaInstance(gpu_types=(SiaGpuType(name="a", gpus=4),), jobs=(job,), p=-0.5)
    (a,) = coefficients(inst)
    # 0.25 ** -0.5 = 2; 4 ** -0.5 = 0.5 (held: not scaled); (0.000025) ** -0.5 = 200
    assert a.tolist() == [2.0, 0.5, 200.0]
    clipped = inst.model_copy(update={"clip": 100.0})
    assert coefficients(clipped)[0].tolist() == [2.0, 0.5, 100.0]


def test_a_job_holding_nothing_is_not_scaled_by_its_realloc_factor() -> None:
    # Sia's rescaling runs only for a job with a previous configuration (sia.py).
    opts = (
        SiaOption(gpu_type="a", gpus=1, goodput=4.0),
        SiaOption(gpu_type="a", gpus=2, goodput=16.0),
    )
    job = SiaJob(name="j", options=opts, realloc_factor=0.25)
    inst = SiaInstance(gpu_types=(SiaGpuType(name="a", gpus=4),), jobs=(job,), p=-0.5)
    assert coefficients(inst)[0].tolist() == [0.5, 0.25]
    held = inst.model_copy(update={"jobs": (job.model_copy(update={"previous": 1}),)})
    assert coefficients(held)[0].tolist() == [1.0, 0.25]


def test_model_has_one_row_per_job_and_type_and_the_constant() -> None:
    inst = generate_instance(5, seed=2, num_types=2)
    lp = build(inst)
    assert lp.a.shape == (5 + 2, sum(len(j.options) for j in inst.jobs))
    assert lp.offset == pytest.approx(inst.lambda_n * 5)
    assert bool(np.all(lp.integrality))


def test_sia_configs_are_sias_tables() -> None:
    # sia.py's CONFIGS_4GPU and CONFIGS_8GPU, cut at the nodes of the evaluated cluster
    assert sia_configs(4, 6) == [(1, 1), (1, 2), (1, 4)] + [(k, 4 * k) for k in range(2, 7)]
    assert sia_configs(8, 3) == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16), (3, 24)]


def test_realloc_factor_is_pollux_s() -> None:
    assert realloc_factor(1000.0, 0, 250.0) == pytest.approx(1000 / 1250)
    assert realloc_factor(1000.0, 3, 250.0) == pytest.approx(250 / 1250)
    assert realloc_factor(1000.0, 5, 250.0) == 0.0
    assert realloc_factor(100.0, 9, 250.0) == 1.0
    with pytest.raises(InvalidInstanceError, match="restart_penalty"):
        realloc_factor(1.0, 0, 0.0)


def test_generate_instance_is_seeded() -> None:
    assert generate_instance(7, seed=5) == generate_instance(7, seed=5)
    assert generate_instance(7, seed=5) != generate_instance(7, seed=6)


def test_round_trips_through_json(tmp_path: Path) -> None:
    inst = generate_instance(6, seed=4)
    path = tmp_path / "round.json"
    inst.save(path)
    assert SiaInstance.load(path) == inst
    assert "jobs" in SiaInstance.schema()["properties"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["jobs"][0]["options"][0].update(gpu_type="zz"), "jobs[0].options[0].gpu_type"),
        (lambda d: d["jobs"][0].update(previous=99), "jobs[0].previous"),
        (lambda d: d["jobs"][0].update(pinned=True, previous=None), "jobs[0].pinned"),
        (lambda d: d["jobs"][0]["options"][0].update(goodput=0.0), "jobs[0].options[0].goodput"),
        (lambda d: d["jobs"][1].update(name=d["jobs"][0]["name"]), "jobs[1].name"),
        (lambda d: d.update(p=0.0), "p"),
        (lambda d: d["jobs"][0].update(realloc_factor=1.5), "jobs[0].realloc_factor"),
        (lambda d: d["gpu_types"][0].update(gpus=-1), "gpu_types[0].gpus"),
    ],
)
def test_bad_instances_name_the_field(change, field: str) -> None:
    data = generate_instance(3, seed=0, rigid_fraction=0.0).to_dict()
    data["jobs"][0].pop("pinned", None)
    change(data)
    with pytest.raises(InvalidInstanceError) as err:
        SiaInstance.from_dict(data)
    assert err.value.field == field


def test_pinned_jobs_beyond_a_type_are_refused() -> None:
    opt = SiaOption(gpu_type="a", gpus=3, goodput=1.0)
    jobs = tuple(SiaJob(name=f"j{i}", options=(opt,), previous=0, pinned=True) for i in range(2))
    with pytest.raises(InvalidInstanceError) as err:
        SiaInstance(gpu_types=(SiaGpuType(name="a", gpus=4),), jobs=jobs)
    assert err.value.field == "jobs.pinned"
