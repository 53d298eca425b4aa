"""Exact placement ILPs against brute force, with and without symmetry breaking; LP bounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import ModelError, NotOptimalError
from optsched.placement import (
    PlacementInstance,
    bin_packing_instance,
    brute_force_all,
    build_model,
    generate_instance,
    solve_placement,
    validate,
)
from optsched.placement.consolidation import arcflow_graph, servers_lower_bound
from optsched.placement.exact import lp_relaxation_bound
from optsched.solvers import available_solvers

pytestmark = pytest.mark.skipif(
    "highs" not in available_solvers(frontend="pyomo", mip=True), reason="HiGHS is not installed"
)

#: Optimal values must agree to this (relative, floor 1).
VALUE_TOL = 1e-6
SERVER_LEVEL = ("servers", "traffic", "max-load", "interference", "clwp")


@st.composite
def tiny_instances(draw, max_tasks: int = 5, max_servers: int = 3, gpu_level: bool = False):
    """Valid tiny instances by construction, often with interchangeable servers."""
    n_servers = draw(st.integers(1 if gpu_level else 2, max_servers))
    racks = not gpu_level and n_servers >= 2 and draw(st.booleans())
    servers: list[dict] = []
    for h in range(n_servers):
        if servers and draw(st.booleans()):
            server = {**servers[-1], "name": f"s{h}"}  # interchangeable with the previous one
        else:
            server = {
                "name": f"s{h}",
                "capacity": {
                    "gpu": float(draw(st.integers(1, 2))),
                    "cpu": float(draw(st.integers(3, 8))),
                },
                "nic_bandwidth": float(draw(st.sampled_from([10, 25]))),
                "nic_load": float(draw(st.sampled_from([0, 0, 0.5]))),
                "gpu_bandwidth": float(draw(st.sampled_from([16, 64]))),
                "residents": draw(st.sampled_from([[], [], ["A"]])),
            }
            if gpu_level and server["capacity"]["gpu"] == 2 and draw(st.booleans()):
                server["gpu_links"] = [{"a": 0, "b": 1, "bandwidth": 128.0}]
        if racks:
            server = {**server, "rack": f"r{h % 2}"}
        servers.append(server)
    cluster: dict = {"servers": servers}
    if racks:
        cluster["racks"] = [
            {"name": "r0", "uplink_bandwidth": float(draw(st.sampled_from([5, 10])))},
            {
                "name": "r1",
                "uplink_bandwidth": 5.0,
                "uplink_load": float(draw(st.sampled_from([0, 1]))),
            },
        ]
    jobs = []
    budget = max_tasks
    n_jobs = draw(st.integers(1, 3))
    for j in range(n_jobs):
        if budget <= 0:
            break
        workers = draw(st.integers(1, min(2, budget)))
        budget -= workers
        share = draw(st.sampled_from([0.5, 1.0]))
        job: dict = {
            "name": f"j{j}",
            "type": draw(st.sampled_from(["A", "B"])),
            "weight": float(draw(st.integers(1, 2))),
            "standalone_time": 1.0,
            "spread_penalty": float(draw(st.sampled_from([0, 0.2]))),
            "tasks": [
                {
                    "name": "w",
                    "count": workers,
                    "demand": {"gpu": share, "cpu": float(draw(st.integers(1, 3)))},
                }
            ],
        }
        pattern = draw(st.sampled_from(["ps", "ring", "none"]))
        if pattern == "ps" and budget >= 1:
            budget -= 1
            job["tasks"].append({"name": "ps", "role": "ps", "demand": {"cpu": 1.0}})
            job["communication"] = {"pattern": "ps", "volume": float(draw(st.integers(1, 4)))}
        elif pattern == "ring" and workers >= 2:
            job["communication"] = {"pattern": "ring", "volume": float(draw(st.integers(1, 4)))}
        jobs.append(job)
    names = [j["name"] for j in jobs]
    coefficients = []
    for a in names:
        for b in names:
            value = draw(st.sampled_from([0, 0, 0.1, 0.3])) if a != b else 0
            if value:
                coefficients.append({"a": a, "b": b, "coefficient": float(value)})
    types = {j["type"] for j in jobs} | {r for s in servers for r in s.get("residents", [])}
    typed = [
        {"a": a, "b": b, "coefficient": 0.05 * (1 + (a == b))}
        for a in sorted(types)
        for b in sorted(types)
        if draw(st.booleans())
    ]
    data = {
        "cluster": cluster,
        "jobs": jobs,
        "interference": coefficients,
        "type_interference": typed,
        "comm_weight": float(draw(st.sampled_from([0.5, 1.0]))),
    }
    return PlacementInstance.from_dict(data)


def _exact(instance: PlacementInstance, objective: str, **options) -> float | None:
    """Optimal value, or None when the instance has no feasible placement for it."""
    try:
        return solve_placement(instance, objective, **options).value
    except NotOptimalError as exc:
        assert exc.result.status.value == "infeasible", exc
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
            solve_placement(instance, objective, symmetry=mode).value
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
                    "spread_penalty": 0.5,
                    "tasks": [{"name": "w", "count": 2, "demand": {"gpu": 1, "cpu": 1}}],
                    "communication": {"pattern": "ring", "volume": 1.0},
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
        job["spread_penalty"] = 100.0  # splitting a job never pays
    instance = PlacementInstance.from_dict(data)
    clwp = solve_placement(instance, "clwp").value
    harmony = solve_placement(instance, "interference")
    assert validate(instance, harmony.placement).objectives["clwp"] is not None
    t0 = sum(job.standalone_time for job in instance.jobs)
    assert abs(harmony.value - (t0 + clwp)) <= VALUE_TOL * max(1.0, harmony.value)


def test_hundred_task_bin_packing_is_proven_optimal():
    instance = bin_packing_instance(100, seed=0)
    solution = solve_placement(instance, "servers")
    assert solution.optimal and solution.formulation == "arcflow"
    # Certificate independent of the solver: the trivial bound ceil(sum / capacity).
    trivial = math.ceil(instance.demand.sum() / instance.capacity[0, 0])
    assert servers_lower_bound(instance) == trivial
    assert solution.value == trivial
    assert validate(instance, solution.placement).valid


def test_time_limit_reports_incumbent_bound_and_lp_bound():
    # The assignment formulation without bounds cannot close this gap in a fraction of a second.
    instance = bin_packing_instance(60, seed=1)
    with pytest.raises(NotOptimalError) as info:
        solve_placement(instance, "servers", formulation="assignment", bounds=False, time_limit=0.5)
    result = info.value.result
    lp = result.extra["lp_bound"]
    assert lp is not None and lp <= servers_lower_bound(instance) + VALUE_TOL
    try:
        accepted = solve_placement(
            instance, "servers", formulation="assignment", time_limit=0.5, accept_feasible=True
        )
    except NotOptimalError as exc:
        # No incumbent within the limit: still never a silent answer, and the LP bound is there.
        assert exc.result.status.value == "limit_no_solution"
        assert exc.result.extra["lp_bound"] is not None
        return
    if not accepted.optimal:
        assert accepted.result.status.value == "feasible"
        assert accepted.lp_bound is not None
        assert accepted.lp_bound <= accepted.value
        assert accepted.bound is not None and accepted.bound <= accepted.value
    assert validate(instance, accepted.placement).valid


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
    with pytest.raises(KeyError):
        build_model(instance, "fastest")
    with pytest.raises(ValueError, match="symmetry"):
        build_model(instance, "traffic", symmetry="sometimes")
