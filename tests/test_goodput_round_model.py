"""A round of Pollux's problem: its value, its validator and its exact MILP.

The MILP's optimum is checked against exhaustive enumeration (``tests/brute/goodput_round.py``),
its solutions against the independent validator, and the vectorized value the genetic algorithm
uses against the validator's plain loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import ClusterView, JobView
from optsched.goodput.round_exact import solve
from optsched.goodput.round_model import (
    RoundInstance,
    RoundJob,
    allocation_matrix,
    build_round,
    configurations,
    fitness,
    generate_instance,
    matrix_allocations,
    restart_factor,
)
from optsched.goodput.round_validate import CONSTRAINTS, validate
from optsched.solvers.result import Status
from optsched.tolerances import (
    OBJECTIVE_AGREEMENT_TOL,
    OPTIMALITY_GAP,
    SOLVER_AGREEMENT_TOL,
    within,
)
from tests.brute.goodput_round import best_round
from tests.strategies.goodput_round import any_states, tiny_rounds
from tests.test_validator_constraints import documented_names

pytestmark = pytest.mark.solver("highs")


@settings(max_examples=30)
@given(tiny_rounds())
def test_exact_matches_enumeration(instance: RoundInstance) -> None:
    sol = solve(instance)
    assert sol.status is Status.OPTIMAL
    brute, _ = best_round(instance)
    assert within(sol.objective, brute, SOLVER_AGREEMENT_TOL), (sol.objective, brute)
    report = validate(instance, sol.state)
    assert report.ok, report.violations
    assert report.objective is not None
    assert within(report.objective, sol.objective, OBJECTIVE_AGREEMENT_TOL)


@settings(max_examples=15)
@given(tiny_rounds(max_jobs=3, max_nodes=3, max_gpus=2))
def test_symmetry_cuts_keep_the_optimum(instance: RoundInstance) -> None:
    with_cuts = solve(instance, symmetry=True)
    without = solve(instance, symmetry=False)
    assert within(with_cuts.objective, without.objective, SOLVER_AGREEMENT_TOL)


@settings(max_examples=20)
@given(tiny_rounds(), st.data())
def test_vectorized_value_agrees_with_the_validator(
    instance: RoundInstance, data: st.DataObject
) -> None:
    _, state = best_round(instance)
    states = [state, np.zeros_like(state)]
    if all(instance.jobs[j].previous for j in range(instance.num_jobs)):
        states.append(instance.previous)
    for s in states:
        report = validate(instance, s)
        if report.ok:
            assert report.objective is not None
            assert within(float(fitness(instance, s[None])[0]), report.objective,
                          OBJECTIVE_AGREEMENT_TOL)  # fmt: skip
    garbage = data.draw(any_states(instance))
    for s in garbage:
        report = validate(instance, s)
        assert report.ok == (report.objective is not None)


def test_warm_start_does_not_change_the_optimum() -> None:
    instance = generate_instance(6, num_nodes=3, gpus_per_node=4, seed=3)
    cold = solve(instance)
    warm = solve(instance, warm_start=np.zeros((6, 3), dtype=np.int64))
    assert within(cold.objective, warm.objective, SOLVER_AGREEMENT_TOL)


@pytest.mark.parametrize("node_limit", [0, 1])
def test_node_limit_always_returns_an_allocation(node_limit: int) -> None:
    # the allocation giving no job GPUs is the default start: even a solve stopped before its
    # root returns a feasible allocation, with its bound when HiGHS has one
    instance = generate_instance(12, num_nodes=4, gpus_per_node=4, seed=5)
    sol = solve(instance, node_limit=node_limit)
    assert sol.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert validate(instance, sol.state).ok
    if sol.bound is not None:
        assert sol.bound >= sol.objective * (1 - OBJECTIVE_AGREEMENT_TOL)
    if sol.status is Status.OPTIMAL:
        assert sol.gap is not None and sol.gap <= OPTIMALITY_GAP


def test_keep_beats_an_equal_move() -> None:
    # one job, its previous allocation on node 0 and a strong restart penalty: moving the same
    # GPUs to node 1 is worth less than keeping them
    job = RoundJob("a", min_replicas=0, max_replicas=2, restart_factor=0.5, previous=[2, 0],
                   speedup={(1, 1): 1.0, (1, 2): 2.0, (2, 2): 1.5})  # fmt: skip
    instance = RoundInstance(2, 2, [job])
    sol = solve(instance)
    assert sol.state.tolist() == [[2, 0]]
    moved = validate(instance, np.array([[0, 2]])).objective
    assert moved is not None and moved < sol.objective


def test_interference_is_enforced() -> None:
    # two jobs that each want both nodes: only one may span them
    table = {(1, 1): 1.0, (1, 2): 1.2, (2, 2): 4.0}
    jobs = [RoundJob(n, min_replicas=0, max_replicas=2, restart_factor=1.0, previous=[0, 0],
                     speedup=table) for n in ("a", "b")]  # fmt: skip
    instance = RoundInstance(2, 2, jobs)
    sol = solve(instance)
    spanning = [int(np.count_nonzero(row)) >= 2 for row in sol.state]
    assert sum(spanning) <= 1
    assert validate(instance, np.array([[1, 1], [1, 1]])).violations[0].constraint == "interference"


def test_constraints_are_named_functions_listed_on_the_page() -> None:
    from optsched.goodput import round_validate

    for name, function in CONSTRAINTS.items():
        assert function.__name__ == name and getattr(round_validate, name) is function
        assert function.__doc__ and f"``{name}``" in function.__doc__
    assert set(CONSTRAINTS) == documented_names("goodput_round.rst")


def test_each_constraint_broken_alone_is_reported_by_name() -> None:
    table = {(k, n): float(n) / k for n in range(1, 5) for k in range(1, min(n, 3) + 1)}

    def job(name: str, lo: int, hi: int) -> RoundJob:
        return RoundJob(name, min_replicas=lo, max_replicas=hi, restart_factor=1.0,
                        previous=[0, 0, 0], speedup=table)  # fmt: skip

    instance = RoundInstance(3, 2, [job("a", 2, 3), job("b", 0, 4)], max_job_nodes=2)
    valid = np.array([[2, 0, 0], [0, 1, 1]])
    broken = {
        "shape": np.array([[2, 0, 0]]),
        "gpu_range": np.array([[2, 0, 0], [0, 1, 0.5]]),
        "node_capacity": np.array([[2, 0, 0], [1, 0, 0]]),
        "interference": np.array([[1, 1, 0], [0, 1, 1]]),
        "max_replicas": np.array([[2, 2, 0], [0, 0, 0]]),
        "min_replicas": np.array([[1, 0, 0], [0, 1, 1]]),
        "max_job_nodes": np.array([[0, 0, 0], [1, 1, 1]]),
    }
    assert set(broken) == set(CONSTRAINTS)
    assert validate(instance, valid).ok
    for name, solution in broken.items():
        found = {v.constraint for v in validate(instance, solution).violations}
        assert found == {name}, (name, found)


def test_max_job_nodes_is_checked() -> None:
    table = {(k, n): float(n) for n in range(1, 4) for k in range(1, n + 1)}
    job = RoundJob("a", min_replicas=0, max_replicas=3, restart_factor=1.0, previous=[0, 0, 0],
                   speedup=table)  # fmt: skip
    instance = RoundInstance(3, 1, [job], max_job_nodes=2)
    report = validate(instance, np.array([[1, 1, 1]]))
    assert [v.constraint for v in report.violations] == ["max_job_nodes"]
    assert max(k for k, _ in configurations(instance, 0)) == 2


def test_save_load_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    instance = generate_instance(4, num_nodes=2, gpus_per_node=3, seed=11).complete()
    path = tmp_path / "round.json"
    instance.save(path)
    back = RoundInstance.load(path)
    assert back.to_dict() == instance.to_dict()
    assert within(solve(back).objective, solve(instance).objective, SOLVER_AGREEMENT_TOL)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_nodes": 0}, "num_nodes"),
        ({"gpus_per_node": 0}, "gpus_per_node"),
        ({"p": 0.0}, "p"),
        ({"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_rounds_name_the_field(kwargs: dict[str, float], field: str) -> None:
    job = RoundJob("a", min_replicas=0, max_replicas=1, restart_factor=1.0, previous=[0, 0])
    args = {"num_nodes": 2, "gpus_per_node": 2, **kwargs}
    with pytest.raises(InvalidInstanceError) as err:
        RoundInstance(int(args.pop("num_nodes")), int(args.pop("gpus_per_node")), [job], **args)
    assert err.value.field == field


def test_bad_jobs_name_the_field() -> None:
    with pytest.raises(InvalidInstanceError, match="restart_factor"):
        RoundJob("a", min_replicas=0, max_replicas=1, restart_factor=1.5, previous=[0])
    with pytest.raises(InvalidInstanceError, match="max_replicas"):
        RoundJob("a", min_replicas=2, max_replicas=1, restart_factor=1.0, previous=[0])
    job = RoundJob("a", min_replicas=0, max_replicas=1, restart_factor=1.0, previous=[0])
    with pytest.raises(InvalidInstanceError, match="previous"):
        RoundInstance(2, 2, [job])
    with pytest.raises(InvalidInstanceError, match="kind"):
        RoundInstance.from_dict({"kind": "other"})
    data = generate_instance(2, seed=0).to_dict()
    del data["jobs"][1]["max_replicas"]
    with pytest.raises(InvalidInstanceError) as err:
        RoundInstance.from_dict(data)
    assert err.value.field == "max_replicas"
    data = generate_instance(2, seed=0).to_dict()
    data["jobs"][0]["speedup"][0][2] = -1.0
    with pytest.raises(InvalidInstanceError, match="speedup"):
        RoundInstance.from_dict(data)
    with pytest.raises(InvalidInstanceError, match="node_limit"):
        solve(generate_instance(2, seed=0), node_limit=-1)
    with pytest.raises(InvalidInstanceError, match="speedup"):
        RoundInstance(1, 1, [job]).term(0, 1, 1, restart=False)


def test_restart_factor_is_the_artifacts() -> None:
    assert restart_factor(0.0, 0) == 0.0
    assert restart_factor(90.0, 1) == pytest.approx(60.0 / 120.0)
    assert restart_factor(30.0, 2) == 0.0


def _view(name: str, service: float, submitted: float, speedup: object) -> JobView:
    return JobView(name=name, submission_time=submitted, attained_service=service,
                   min_replicas=0, max_replicas=8, num_restarts=1, age=120.0, epoch=0,
                   application="cifar10", traces=None,  # type: ignore[arg-type]
                   speedup=speedup)  # type: ignore[arg-type]  # fmt: skip


def test_build_round_orders_and_rebases_as_the_artifact() -> None:
    def linear(k: int, n: int) -> float:
        return float(n)

    def sublinear(k: int, n: int) -> float:
        return float(n) ** 0.5 / k

    jobs = {
        "late": _view("late", 50.0, 10.0, linear),
        "early": _view("early", 50.0, 5.0, sublinear),
        "served": _view("served", 10.0, 20.0, linear),
    }
    cluster = ClusterView(num_nodes=2, gpus_per_node=4, time=130.0)
    instance = build_round(jobs, cluster, {"late": (0, 0, 1)})
    assert [j.name for j in instance.jobs] == ["served", "early", "late"]
    fair = 3  # ceil(8 / 3) GPUs on one node
    assert instance.jobs[0].value(1, 6) == pytest.approx(6 / fair)
    assert instance.jobs[1].value(2, 4) == pytest.approx((4**0.5 / 2) / fair**0.5)
    assert instance.jobs[2].previous == (2, 1)
    assert instance.jobs[2].restart_factor == pytest.approx(restart_factor(120.0, 1))
    allocs = matrix_allocations(instance, instance.previous)
    assert allocs == {"late": (0, 0, 1)}
    assert allocation_matrix(instance, allocs).tolist() == instance.previous.tolist()
