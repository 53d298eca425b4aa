"""Exact placement ILPs against brute force, with and without symmetry breaking; LP bounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from strategies.placement import tiny_instances

from optsched.errors import InvalidInstanceError, ModelError, NotOptimalError
from optsched.placement import (
    PlacementInstance,
    bin_packing_instance,
    brute_force_all,
    build_model,
    generate_instance,
    solve,
    validate,
)
from optsched.placement.arcflow import arcflow_graph
from optsched.placement.exact import lp_relaxation_bound
from optsched.placement.servers import servers_lower_bound
from optsched.solvers import Status, TerminationCondition
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, OPTIMALITY_GAP

pytestmark = pytest.mark.solver("highs")

#: Optimal values must agree to this (relative, floor 1).
VALUE_TOL = OBJECTIVE_AGREEMENT_TOL
#: HiGHS stops after its first improving solution: a deterministic "stopped short".
FIRST_SOLUTION = {"mip_max_improving_sols": 1}
SERVER_LEVEL = ("servers", "traffic", "max-load", "interference", "clwp")


def _exact(instance: PlacementInstance, objective: str, **options) -> float | None:
    """Optimal value, or None when the instance has no feasible placement for it."""
    try:
        return solve(instance, objective, **options).objective
    except NotOptimalError as exc:
        assert exc.result.status is Status.INFEASIBLE, exc
        return None
    except ModelError as exc:
        assert "infeasible" in str(exc), exc
        return None


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= VALUE_TOL * max(1.0, abs(b))


@settings(max_examples=25)
@given(tiny_instances())
def test_server_level_objectives_equal_brute_force(instance):
    brute = brute_force_all(instance, SERVER_LEVEL)
    for objective in SERVER_LEVEL:
        expected = None if brute[objective] is None else brute[objective][0]
        for symmetry in ("solver", "constraints", "none"):
            got = _exact(instance, objective, symmetry=symmetry)
            assert _same(got, expected), (objective, symmetry, got, expected)


@settings(max_examples=15)
@given(tiny_instances())
def test_both_servers_formulations_equal_brute_force(instance):
    brute = brute_force_all(instance, ["servers"])["servers"]
    expected = None if brute is None else brute[0]
    for formulation in ("arcflow", "assignment"):
        for bounds in (True, False):
            got = _exact(
                instance, "servers", formulation=formulation, bounds=bounds, symmetry="constraints"
            )
            assert _same(got, expected), (formulation, bounds, got, expected)


@settings(max_examples=12)
@given(tiny_instances(max_tasks=4, max_servers=2, gpu_level=True))
def test_nlwp_equals_brute_force(instance):
    brute = brute_force_all(instance, ["nlwp"])["nlwp"]
    expected = None if brute is None else brute[0]
    for symmetry in ("solver", "constraints"):
        got = _exact(instance, "nlwp", symmetry=symmetry)
        assert _same(got, expected), (symmetry, got, expected)


@settings(max_examples=10)
@given(tiny_instances())
def test_lp_relaxation_bounds_the_optimum(instance):
    for objective in SERVER_LEVEL:
        try:
            built = build_model(instance, objective)
        except ModelError:
            continue  # clwp with a job that fits whole on no server
        optimum = _exact(instance, objective)
        bound = lp_relaxation_bound(built)
        if optimum is None:
            continue
        assert bound is not None
        assert bound <= optimum + VALUE_TOL * max(1.0, abs(optimum)), (objective, bound, optimum)


def test_identical_servers_symmetry_keeps_the_optimum_on_a_larger_case():
    # Beyond brute force: symmetry breaking must not change the optimum of any objective.
    instance = generate_instance(5, n_servers=4, gpus=4, seed=11)
    for objective in ("servers", "traffic", "max-load", "interference", "clwp"):
        values = [
            solve(instance, objective, symmetry=mode).objective
            for mode in ("solver", "constraints", "none")
        ]
        assert max(values) - min(values) <= VALUE_TOL * max(1.0, abs(values[0])), objective


@pytest.mark.parametrize("objective", ["servers", "traffic", "max-load", "interference", "nlwp"])
def test_a_job_split_over_identical_servers_survives_symmetry_breaking(objective):
    # Two one-GPU servers, one job with two one-GPU workers: it must span both servers, which
    # then host the same job; ordering them by lowest job index would wrongly exclude this.
    instance = PlacementInstance.from_dict(
        {
            "cluster": {
                "servers": [{"name": f"s{h}", "capacity": {"gpu": 1, "cpu": 4}} for h in range(2)]
            },
            "jobs": [
                {
                    "name": "j",
                    "spread_penalty_s": 0.5,
                    "tasks": [{"name": "w", "count": 2, "demand": {"gpu": 1, "cpu": 1}}],
                    "communication": {"pattern": "ring", "volume_gbit": 1.0},
                }
            ],
        }
    )
    expected = brute_force_all(instance, [objective])[objective]
    assert expected is not None
    for mode in ("solver", "constraints", "none"):
        assert _same(_exact(instance, objective, symmetry=mode), expected[0]), mode


def test_clwp_equals_job_atomic_harmony_with_unit_weights():
    # With every job on one server, Harmony's objective is sum(t0) + CLWP's objective when
    # weights are 1 and no server is spanned twice: a second way to compute the CLWP optimum.
    instance = generate_instance(4, n_servers=3, gpus=8, seed=3)
    data = instance.to_dict()
    for job in data["jobs"]:
        job["weight"] = 1.0
        job["spread_penalty_s"] = 100.0  # splitting a job never pays
    instance = PlacementInstance.from_dict(data)
    clwp = solve(instance, "clwp").objective
    harmony = solve(instance, "interference")
    assert validate(instance, harmony.solution).objectives["clwp"] is not None
    t0 = sum(job.standalone_time_s for job in instance.jobs)
    assert abs(harmony.objective - (t0 + clwp)) <= VALUE_TOL * max(1.0, harmony.objective)


def test_hundred_task_bin_packing_is_proven_optimal():
    instance = bin_packing_instance(100, seed=0)
    solution = solve(instance, "servers")
    assert solution.optimal and solution.extra["formulation"] == "certificate"
    arcflow = solve(instance, "servers", formulation="arcflow")
    assert arcflow.optimal and arcflow.objective == solution.objective
    # Certificate independent of the solver: the trivial bound ceil(sum / capacity).
    trivial = math.ceil(instance.demand.sum() / instance.capacity[0, 0])
    assert servers_lower_bound(instance) == trivial
    assert solution.objective == trivial
    assert validate(instance, solution.solution).ok


def test_a_solve_stopped_short_keeps_its_incumbent_bound_and_lp_bound():
    # HiGHS stops at its first improving solution (a solution limit, not a clock): the result
    # is feasible, not optimal, and carries the incumbent placement and both bounds.
    instance = bin_packing_instance(60, seed=1)
    options = {"formulation": "assignment", "solver_options": FIRST_SOLUTION}
    with pytest.raises(NotOptimalError) as info:
        solve(instance, "servers", **options)
    result = info.value.result
    assert result.status is Status.FEASIBLE and not result.optimal
    assert result.solution is not None and validate(instance, result.solution).ok
    assert result.objective == validate(instance, result.solution).objectives["servers"]
    lp = result.lp_bound
    assert lp is not None and lp <= servers_lower_bound(instance) + VALUE_TOL
    assert result.bound is not None and result.bound <= result.objective
    accepted = solve(instance, "servers", accept_feasible=True, **options)
    assert accepted.status is Status.FEASIBLE
    assert accepted.solution == result.solution  # the same incumbent, not a re-solve's
    assert accepted.lp_bound is not None and accepted.lp_bound <= accepted.objective


@pytest.mark.parametrize("objective", ["servers", "interference"])
def test_a_loose_mip_gap_is_never_reported_optimal(objective):
    # mip_gap=10 lets the solver stop at its first incumbent: unless the bound proves that
    # incumbent optimal (gap within OPTIMALITY_GAP), the status is feasible, termination
    # gap_limit, and the solve raises unless the caller accepts it.
    instance = generate_instance(6, n_servers=4, gpus=4, seed=5)
    options = {"mip_gap": 10.0, "symmetry": "none"}
    try:
        result = solve(instance, objective, **options)
    except NotOptimalError as exc:
        assert exc.result.status is Status.FEASIBLE
        assert exc.result.termination is TerminationCondition.GAP_LIMIT
        assert exc.result.solution is not None
        accepted = solve(instance, objective, accept_feasible=True, **options)
        assert not accepted.optimal
    else:
        assert result.gap is not None and result.gap <= OPTIMALITY_GAP


def test_arcflow_graph_paths_are_exactly_the_feasible_contents():
    # One resource, capacity 10, sizes 6, 4, 3 with multiplicities 1, 2, 2.
    import numpy as np

    types = np.array([[6.0], [4.0], [3.0]])
    nodes, arcs = arcflow_graph(np.array([10.0]), types, [1, 2, 2])
    assert all(n[0] <= 10 for n in nodes)
    # Enumerate source paths' multisets by depth-first search and compare with brute force.
    out: dict[int, list[tuple[int, int]]] = {}
    for tail, head, k in arcs:
        out.setdefault(tail, []).append((head, k))
    seen = set()

    def walk(node: int, content: tuple[int, ...]) -> None:
        seen.add(tuple(sorted(content)))
        for head, k in out.get(node, []):
            walk(head, (*content, k))

    walk(0, ())
    feasible = {
        tuple(sorted([0] * a + [1] * b + [2] * c))
        for a in range(2)
        for b in range(3)
        for c in range(3)
        if 6 * a + 4 * b + 3 * c <= 10
    }
    assert feasible <= seen
    assert all(sum(types[k, 0] for k in content) <= 10 for content in seen)


def test_arcflow_is_refused_beyond_its_size_limit():
    import numpy as np

    assert arcflow_graph(np.array([100.0]), np.array([[1.0]]), [100], max_arcs=10) is None
    instance = bin_packing_instance(5, seed=0)
    with pytest.raises(InvalidInstanceError) as info:
        build_model(instance, "fastest")
    assert info.value.field == "objective"
    with pytest.raises(ValueError, match="symmetry"):
        build_model(instance, "traffic", symmetry="sometimes")
