"""The ANDREAS family: the MILP against brute force, the greedy against the MILP, the validator.

Every optimum is checked against an enumeration of all plans (each job postponed or run in each
of its configurations on each possible set of nodes), costed by the independent validator.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from strategies.andreas import tiny_instances

from optsched.allocation.andreas import (
    AndreasInstance,
    AndreasJob,
    AndreasPlan,
    Assignment,
    Configuration,
    NodeType,
    RandomizedGreedy,
    generate_instance,
    solve,
    validate,
)
from optsched.errors import InvalidInstanceError
from optsched.power import JOULES_PER_KWH, gpu_power
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, leq, within

pytestmark = pytest.mark.solver("highs")


def brute_force(instance: AndreasInstance) -> float:
    """The least cost over every plan the validator accepts."""
    types = {t.name: t for t in instance.node_types}
    choices = []
    for job in instance.jobs:
        options: list[Assignment | None] = [None]
        for c in job.configurations:
            t = types[c.node_type]
            need = 1 if c.gpus <= t.gpus_per_server else c.gpus // t.gpus_per_server
            for nodes in itertools.combinations(range(t.nodes), need):
                options.append(Assignment(job.job_id, c.node_type, c.gpus, nodes))
        choices.append(options)
    best = float("inf")
    for pick in itertools.product(*choices):
        plan = AndreasPlan(
            tuple(a for a in pick if a is not None),
            tuple(j.job_id for j, a in zip(instance.jobs, pick, strict=True) if a is None),
        )
        report = validate(instance, plan)
        if report.ok:
            assert report.objective is not None
            best = min(best, report.objective)
    return best


@settings(max_examples=25)
@given(tiny_instances())
def test_milp_optimum_equals_brute_force(instance: AndreasInstance) -> None:
    result = solve(instance)
    assert result.optimal and result.solution is not None
    report = validate(instance, result.solution)
    assert report.ok, report.violations
    assert within(report.objective, result.objective, OBJECTIVE_AGREEMENT_TOL)
    assert within(result.objective, brute_force(instance), OBJECTIVE_AGREEMENT_TOL)


@settings(max_examples=25)
@given(tiny_instances())
def test_greedy_is_valid_and_never_beats_the_milp(instance: AndreasInstance) -> None:
    optimum = solve(instance).objective
    assert optimum is not None
    run = RandomizedGreedy(restarts=8, seed=3).run(instance)
    report = validate(instance, run.plan)
    assert report.ok, report.violations
    assert within(report.objective, run.objective, OBJECTIVE_AGREEMENT_TOL)
    assert leq(optimum, run.objective, OBJECTIVE_AGREEMENT_TOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_restarts_are_never_worse(seed: int) -> None:
    inst = generate_instance(8, seed=seed)
    runs = [RandomizedGreedy(restarts=r, seed=seed).run(inst) for r in (1, 5, 25, 125)]
    for short, long in itertools.pairwise(runs):
        assert long.history[: short.restarts] == short.history  # the same seed stream
        assert long.objective <= short.objective
    optimum = solve(inst).objective
    assert optimum is not None and leq(optimum, runs[-1].objective, OBJECTIVE_AGREEMENT_TOL)
    assert runs[-1].objective < runs[0].objective  # restarts do find better plans here


def test_greedy_is_deterministic_for_a_seed() -> None:
    inst = generate_instance(6, seed=4)
    a = RandomizedGreedy(restarts=20, seed=9).run(inst)
    b = RandomizedGreedy(restarts=20, seed=9).run(inst)
    assert a.plan == b.plan and a.history == b.history


def _one_job(**job: object) -> AndreasInstance:
    return AndreasInstance(
        now_s=100.0,
        period_s=600.0,
        energy_price_per_kwh=0.25,
        node_types=[
            NodeType(name="v", gpu_type="v100", gpus_per_server=2, nodes=2, power_watts=300.0),
            NodeType(name="k", gpu_type="k80", gpus_per_server=4, nodes=1, power_watts=150.0),
        ],
        jobs=[
            AndreasJob(
                job_id="a",
                configurations=[
                    Configuration(node_type="v", gpus=1, runtime_s=3600.0),
                    Configuration(node_type="v", gpus=4, runtime_s=1200.0),
                    Configuration(node_type="k", gpus=4, runtime_s=5000.0),
                ],
                **job,  # type: ignore[arg-type]
            )
        ],
    )


def test_costs_in_closed_form() -> None:
    inst = _one_job(due_s=2000.0, weight=0.01)
    # v100 x1: 300 W * 3600 s = 0.3 kWh -> 0.075; completion 3700 -> 1700 s late -> 17.
    run = AndreasPlan((Assignment("a", "v", 1, (1,)),))
    report = validate(inst, run)
    assert report.ok
    assert within(report.objectives["energy"], 0.075, OBJECTIVE_AGREEMENT_TOL)
    assert within(report.objectives["tardiness"], 17.0, OBJECTIVE_AGREEMENT_TOL)
    assert within(report.details["energy_kwh"], 0.3, OBJECTIVE_AGREEMENT_TOL)
    # postponed: energy at best min(0.075, 4*300*1200 = 0.4 kWh -> 0.1, 4*150*5000 -> 0.2083)
    # completion 100 + 600 + 5000 (slowest) -> 3700 s late.
    wait = validate(inst, AndreasPlan((), ("a",)))
    assert within(wait.objectives["energy"], 0.075, OBJECTIVE_AGREEMENT_TOL)
    assert within(wait.objectives["tardiness"], 37.0, OBJECTIVE_AGREEMENT_TOL)
    # the optimum: v100 x4 on both nodes, 0.1 + 0 tardiness (done at 1300 < 2000)
    res = solve(inst)
    assert res.solution is not None
    assert res.solution.assignments == (Assignment("a", "v", 4, (0, 1)),)
    assert within(res.objective, 0.1, OBJECTIVE_AGREEMENT_TOL)
    none = inst.model_copy(update={"postponed_energy": "none"})
    wait_none = validate(none, AndreasPlan((), ("a",)))
    assert wait_none.objectives["energy"] == 0.0


def test_validator_catches_each_broken_plan_kind() -> None:
    inst = generate_instance(3, nodes=1, gpus_per_server=4, seed=0)
    a, b, c = (j.job_id for j in inst.jobs)
    cases = {
        "node_capacity": AndreasPlan(
            (Assignment(a, "v100", 4, (0,)), Assignment(b, "v100", 1, (0,))), (c,)
        ),
        "unknown_config": AndreasPlan((Assignment(a, "v100", 3, (0,)),), (b, c)),
        "duplicate_job": AndreasPlan((Assignment(a, "v100", 1, (0,)),), (a, b, c)),
        "missing_job": AndreasPlan((), (a, b)),
        "unknown_job": AndreasPlan((), (a, b, c, "ghost")),
        "node_index": AndreasPlan((Assignment(a, "v100", 1, (5,)),), (b, c)),
        "nodes_per_config": AndreasPlan((Assignment(a, "v100", 1, (0, 0)),), (b, c)),
    }
    for name, plan in cases.items():
        report = validate(inst, plan)
        assert [v.constraint for v in report.violations] == [name], (name, report.violations)
    assert validate(inst, AndreasPlan((), (a, b, c))).ok


def test_busy_gpus_are_respected() -> None:
    inst = generate_instance(4, nodes=1, gpus_per_server=4, seed=1)
    busy = inst.model_copy(
        update={
            "node_types": tuple(t.model_copy(update={"unavailable": (3,)}) for t in inst.node_types)
        }
    )
    for plan in (solve(busy).solution, RandomizedGreedy(restarts=4).run(busy).plan):
        assert plan is not None and validate(busy, plan).ok
        assert all(a.gpus == 1 for a in plan.assignments)


def test_plan_frame_repr_and_roundtrip(tmp_path: Path) -> None:
    inst = generate_instance(5, seed=3)
    res = solve(inst)
    frame = res.to_frame()
    assert set(frame["job"]) == {j.job_id for j in inst.jobs}
    assert len(repr(res)) < 400 and len(repr(res.solution)) < 200 and len(repr(inst)) < 200
    path = tmp_path / "inst.toml"
    inst.save(path)
    assert AndreasInstance.load(path) == inst


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"node_types": []}, "node_types"),
        (
            {
                "node_types": [
                    {
                        "name": "v",
                        "gpu_type": "v100",
                        "gpus_per_server": 4,
                        "nodes": 1,
                        "power_watts": 300.0,
                    }
                ],
                "jobs": [
                    {
                        "job_id": "a",
                        "configurations": [{"node_type": "v", "gpus": 6, "runtime_s": 10.0}],
                    }
                ],
            },
            "jobs[0].configurations[0].gpus",
        ),
        (
            {
                "node_types": [
                    {
                        "name": "v",
                        "gpu_type": "v100",
                        "gpus_per_server": 4,
                        "nodes": 1,
                        "power_watts": 300.0,
                    }
                ],
                "jobs": [
                    {
                        "job_id": "a",
                        "configurations": [{"node_type": "x", "gpus": 1, "runtime_s": 10.0}],
                    }
                ],
            },
            "jobs[0].configurations[0].node_type",
        ),
        (
            {
                "node_types": [
                    {
                        "name": "v",
                        "gpu_type": "v100",
                        "gpus_per_server": 4,
                        "nodes": 2,
                        "power_watts": 300.0,
                        "unavailable": [1],
                    }
                ],
            },
            "unavailable",
        ),
        (
            {
                "node_types": [
                    {
                        "name": "v",
                        "gpu_type": "v100",
                        "gpus_per_server": 4,
                        "nodes": 1,
                        "power_watts": 300.0,
                    }
                ],
                "energy_price_per_kwh": -1.0,
            },
            "energy_price_per_kwh",
        ),
    ],
)
def test_bad_instances_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        AndreasInstance.from_dict(data)
    assert field in str(err.value)


def test_bad_greedy_options_name_the_field() -> None:
    for kwargs, field in (
        ({"restarts": 0}, "restarts"),
        ({"restarts": 10**9}, "restarts"),
        ({"candidates": 0}, "candidates"),
        ({"seed": -1}, "seed"),
    ):
        with pytest.raises(InvalidInstanceError, match=field):
            RandomizedGreedy(**kwargs)  # type: ignore[arg-type]


def test_power_table() -> None:
    assert gpu_power("V100") == 300.0 and gpu_power("p100") == 250.0 and gpu_power("k80") == 150.0
    assert JOULES_PER_KWH == 3600.0 * 1000.0
    with pytest.raises(InvalidInstanceError, match="gpu_type"):
        gpu_power("tpu")
    assert gpu_power("tpu", {"tpu": 200.0}) == 200.0


def test_a_solve_stopped_before_the_solver_ran_carries_its_result() -> None:
    from optsched.errors import NotOptimalError
    from optsched.results import ExactResult

    inst = generate_instance(4, seed=0)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, time_limit=1e-9)  # building alone takes longer
    result = err.value.result
    assert isinstance(result, ExactResult) and not result.optimal
    # the solver never ran: the stopped solve keeps the randomised greedy's plan, validated
    assert result.extra["incumbent_source"] == "randomized-greedy"
    assert result.solution is not None and validate(inst, result.solution).ok
