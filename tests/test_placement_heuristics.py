"""Heuristics: always valid, never better than the optimum, and their defining rules by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import HeuristicFailedError, InvalidInstanceError
from optsched.placement import (
    HEURISTICS,
    PlacementInstance,
    bin_packing_instance,
    generate_instance,
    run_heuristic,
    solve,
    validate,
)
from optsched.placement.compare import compare, relative_gap
from optsched.tolerances import RATIO_TOL

#: A heuristic value may undercut the optimum by at most this (relative, floor 1).
VALUE_TOL = RATIO_TOL


def _one_resource(sizes: list[float], capacity: float, servers: int) -> PlacementInstance:
    return PlacementInstance.from_dict(
        {
            "cluster": {
                "servers": [
                    {"name": f"s{h}", "capacity": {"mem": capacity}} for h in range(servers)
                ]
            },
            "jobs": [
                {"name": f"j{i}", "tasks": [{"name": "t", "demand": {"mem": s}}]}
                for i, s in enumerate(sizes)
            ],
        }
    )


def _servers(instance: PlacementInstance, name: str) -> list[int]:
    return run_heuristic(name, instance).server_indices(instance)


def test_first_fit_round_robin_and_best_fit_decreasing_by_hand():
    inst = _one_resource([4, 3, 5, 2, 6], capacity=10, servers=3)
    # First-fit: 4->s0, 3->s0, 5->s1, 2->s0, 6->s2.
    assert _servers(inst, "first-fit") == [0, 0, 1, 0, 2]
    # Round-robin: 4->s0, 3->s1, 5->s2, 2->s0, 6->s1 (s1 has 7 free).
    assert _servers(inst, "round-robin") == [0, 1, 2, 0, 1]
    # BFD: 6->s0, 5->s1, 4->s0 (fills it), 3->s1 (leaves 2), 2->s1 (fills it).
    assert _servers(inst, "best-fit-decreasing") == [0, 1, 1, 1, 0]


def test_consolidate_first_keeps_jobs_whole_when_possible():
    inst = generate_instance(5, n_servers=4, gpus=8, seed=2)
    placement = run_heuristic("consolidate-first", inst)
    report = validate(inst, placement)
    assert report.ok and report.objectives["clwp"] is not None  # every job on one server
    assert report.objectives["traffic"] == 0.0


def test_random_is_reproducible_for_a_seed():
    inst = generate_instance(6, n_servers=4, seed=1)
    assert run_heuristic("random", inst, seed=7) == run_heuristic("random", inst, seed=7)


def test_nlwp_greedy_assigns_a_gpu_to_every_gpu_task():
    inst = generate_instance(3, n_servers=2, gpus=4, seed=4)
    placement = run_heuristic("nlwp-greedy", inst)
    report = validate(inst, placement)
    assert report.ok, report.violations
    gpu_tasks = {t.id for i, t in enumerate(inst.tasks) if inst.demand[i, 0] > 0}
    assert set(placement.gpus or {}) == gpu_tasks
    assert report.objectives["nlwp"] is not None


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_heuristic_fails_loudly_without_room(name):
    inst = _one_resource([6, 6, 6], capacity=10, servers=2)
    with pytest.raises(HeuristicFailedError):
        run_heuristic(name, inst)


def test_relative_gap():
    assert relative_gap(3.0, 2.0) == 0.5
    assert relative_gap(2.0, 2.0 + 1e-12) == 0.0
    assert relative_gap(0.0, 0.0) == 0.0
    assert math.isinf(relative_gap(1.0, 0.0))


@pytest.mark.solver("highs")
@settings(max_examples=10)
@given(st.integers(2, 4), st.integers(2, 3), st.integers(0, 10_000))
def test_no_heuristic_beats_the_optimum_and_all_are_valid(n_jobs, n_servers, seed):
    inst = generate_instance(n_jobs, n_servers=n_servers, gpus=4, racks=1 + seed % 2, seed=seed)
    result = compare(inst, seed=seed)
    for name in HEURISTICS:
        try:
            placement = run_heuristic(name, inst, seed)
        except HeuristicFailedError:
            assert all(result.cell(name, o).note == "failed" for o in result.objectives)
            continue
        assert validate(inst, placement).ok
        for objective in result.objectives:
            cell = result.cell(name, objective)
            assert cell.note in ("", "n/a"), (name, objective, cell)
            optimum = result.optimum[objective]
            if cell.value is None or optimum is None:
                continue
            assert result.reference[objective] == "optimum"
            assert cell.value >= optimum - VALUE_TOL * max(1.0, abs(optimum)), (name, objective)
            assert cell.gap is not None and cell.gap >= 0.0


@pytest.mark.solver("highs")
def test_nlwp_greedy_never_beats_the_nlwp_optimum():
    compared = 0
    for seed in range(6):
        inst = generate_instance(2, n_servers=2, gpus=2, max_workers=2, seed=seed)
        try:
            greedy = validate(inst, run_heuristic("nlwp-greedy", inst)).objectives["nlwp"]
        except HeuristicFailedError:
            continue
        optimum = solve(inst, "nlwp").objective
        assert greedy is not None and greedy >= optimum - VALUE_TOL * max(1.0, optimum)
        compared += 1
    assert compared >= 3


@pytest.mark.solver("highs")
def test_best_fit_decreasing_within_its_worst_case_bound():
    # BFD uses at most 11/9 OPT + 6/9 bins (Dosa 2007); the ILP provides OPT.
    for seed in range(3):
        inst = bin_packing_instance(30, seed=seed)
        optimum = solve(inst, "servers").objective
        used = validate(inst, run_heuristic("best-fit-decreasing", inst)).objectives["servers"]
        assert optimum <= used <= 11 / 9 * optimum + 6 / 9


@pytest.mark.solver("highs")
def test_compare_table_shape_and_json():
    inst = generate_instance(3, n_servers=2, gpus=4, seed=9)
    result = compare(inst, objectives=["servers", "traffic"], heuristics=["first-fit", "random"])
    data = result.to_dict()
    assert data["objectives"] == ["servers", "traffic"]
    assert [row["heuristic"] for row in data["rows"]] == ["first-fit", "random"]
    assert set(data["reference"].values()) == {"optimum"}
    with pytest.raises(InvalidInstanceError) as info:
        compare(inst, heuristics=["annealing"])
    assert info.value.field == "heuristics[0]"
    with pytest.raises(InvalidInstanceError) as info:
        compare(inst, objectives=["servers", "fastest"])
    assert info.value.field == "objectives[1]"
    frame = result.to_frame()
    assert len(frame) == 4 and set(frame["reference_kind"]) == {"optimum"}
    for row in frame.itertuples():
        assert row.value == result.cell(row.heuristic, row.objective).value
    assert repr(result) == "PlacementComparison(2 heuristics x 2 objectives)"
