"""Hostile placement inputs: absurd sizes and numbers are refused, field-named, before allocation.

Regression tests for each class of defect: a task ``count: 10**7`` (the validator once took
3.7 GB expanding it), numbers so large that sums overflow or the solver's infinity is reached,
a server ``nic_load_gbit`` so large that decoding the solved max-load model failed, and a loose
``mip_gap`` reported as optimal. And the contract behind them: whatever the instance validator
accepts solves to a finite objective the independent validator reproduces.
"""

from __future__ import annotations

import copy
import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, note, settings
from strategies.placement import extreme_instances

from optsched import limits
from optsched.cli import main
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.placement import (
    PlacementInstance,
    brute_force_all,
    run_heuristic,
    solve,
    validate,
)
from optsched.placement.instance import MAX_VALUE
from optsched.solvers import Status
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

BASE: dict[str, Any] = {
    "kind": "placement-instance",
    "cluster": {"servers": [{"name": f"s{h}", "capacity": {"gpu": 2, "cpu": 8}} for h in range(3)]},
    "jobs": [
        {
            "name": "a",
            "tasks": [{"name": "w", "count": 2, "demand": {"gpu": 1, "cpu": 1}}],
            "communication": {"pattern": "ring", "volume_gbit": 1.0},
        }
    ],
}

#: Peak Python memory a refused instance may cost (the refusal happens on the counts).
REFUSAL_BYTES = 20 * 2**20


def _with(path: str, value: Any) -> dict[str, Any]:
    """A copy of BASE with the field at ``path`` (dotted, [i] for lists) set to ``value``."""
    data = copy.deepcopy(BASE)
    node: Any = data
    parts = path.replace("[", ".").replace("]", "").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    node[int(last) if last.isdigit() else last] = value
    return data


def _refused(data: dict[str, Any]) -> InvalidInstanceError:
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInstanceError) as info:
            PlacementInstance.from_dict(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < REFUSAL_BYTES, peak
    return info.value


def test_ten_million_tasks_are_refused_before_expansion():
    error = _refused(_with("jobs[0].tasks[0].count", 10**7))
    assert error.field == "jobs[0].tasks[0].count"
    assert "max_model_variables" in str(error)


def test_an_absurd_count_is_refused_by_its_type():
    error = _refused(_with("jobs[0].tasks[0].count", 10**40))
    assert error.field == "jobs[0].tasks[0].count" and "<=" in error.message


def test_quadratic_parameter_server_traffic_is_refused_before_expansion():
    data = _with(
        "jobs[0].tasks",
        [
            {"name": "w", "count": 3000, "demand": {"cpu": 0}},
            {"name": "ps", "role": "ps", "count": 3000, "demand": {"cpu": 0}},
        ],
    )
    data["jobs"][0]["communication"] = {"pattern": "ps", "volume_gbit": 1.0}
    error = _refused(data)
    assert error.field == "jobs[0].communication" and "flows" in str(error)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("jobs[0].tasks[0].demand.cpu", 1e308),
        ("jobs[0].communication.volume_gbit", 1e300),
        ("jobs[0].standalone_time_s", 1e10),
        ("cluster.servers[0].capacity.cpu", 1e308),
        ("cluster.servers[0].nic_load_gbit", 1e300),
        ("cluster.servers[1].nic_bandwidth_gbps", 1e-300),
        ("cluster.servers[2].gpu_bandwidth_gbps", 1e300),
        ("jobs[0].weight", math.nan),
        ("jobs[0].spread_penalty_s", math.inf),
    ],
)
def test_numbers_outside_the_models_range_are_refused_naming_the_field(path, value):
    error = _refused(_with(path, value))
    assert error.field == path, str(error)


def test_a_cluster_of_a_billion_gpus_is_refused():
    error = _refused(_with("cluster.servers[0].capacity.gpu", 1e9))
    assert error.field == "cluster.servers" and "GPUs" in str(error)


def test_a_model_over_the_variable_budget_is_refused_before_it_is_built():
    instance = PlacementInstance.from_dict(BASE)
    with limits.override(max_model_variables=5), pytest.raises(InvalidInstanceError) as info:
        solve(instance, "traffic")
    assert "max_model_variables" in str(info.value)


@pytest.mark.solver("highs")
@pytest.mark.parametrize("load", [1e6, MAX_VALUE])
def test_a_huge_background_nic_load_still_decodes(load):
    # Once, nic_load_gbit = 1e300 made every binary of the solved max-load model read below the
    # decoding threshold (an IndexError). Such loads are now refused, and decoding takes the
    # largest binary of each assignment row, so the largest accepted load decodes and
    # validates.
    data = _with("cluster.servers[0].nic_load_gbit", load)
    instance = PlacementInstance.from_dict(data)
    result = solve(instance, "max-load")
    assert result.optimal and validate(instance, result.solution).ok
    # The loaded NIC dominates (background over the default 10 Gbit/s).
    assert within(result.objective, load / 10.0, OBJECTIVE_AGREEMENT_TOL)


def test_hostile_files_exit_2_naming_the_field(tmp_path, capsys):
    for path, value in (
        ("jobs[0].tasks[0].count", 10**7),
        ("cluster.servers[0].nic_load_gbit", 1e300),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(_with(path, value)))
        for args in (["placement", "solve", str(bad)], ["validate", str(bad)]):
            code = main([*args, "--json"])
            out, _ = capsys.readouterr()
            assert code == 2, args
            assert json.loads(out)["field"] == path


#: The instance of a failing non-derandomised draw (link-load coefficients volume / bandwidth
#: of 1e9 against a background load of 7000 s): HiGHS once called its max-load model
#: infeasible, though every task fits on one server at load 7000.
HUGE_LINK_COEFFICIENT = {
    "kind": "placement-instance",
    "cluster": {
        "servers": [
            {
                "name": f"s{h}",
                "capacity": {"gpu": 0.0, "cpu": 1e-09},
                "nic_bandwidth_gbps": 0.001,
                "nic_load_gbit": 7.0 if h == 2 else 0.0,
                "gpu_bandwidth_gbps": 0.001,
            }
            for h in range(3)
        ]
    },
    "jobs": [
        {
            "name": "j0",
            "weight": 0.0,
            "standalone_time_s": 0.0,
            "tasks": [{"name": "w", "count": 2, "demand": {"cpu": 0.0}}],
            "communication": {"pattern": "ring", "volume_gbit": 1e6},
        }
    ],
}


#: Found by unseeded runs of the test below: ``max-load`` at the accepted extremes stopped with
#: HiGHS's ``numerical_error`` (flow coefficients 1e12), at twice the optimum under HiGHS's
#: absolute gap (every load near 1e-6), and with a background load read as 0.
MAX_LOAD_AT_EXTREMES = json.loads(
    (Path(__file__).parent / "data" / "placement_max_load_extremes.json").read_text()
)


@pytest.mark.solver("highs")
@settings(max_examples=20)
@given(extreme_instances())
@example(PlacementInstance.from_dict(HUGE_LINK_COEFFICIENT))
@example(PlacementInstance.from_dict(MAX_LOAD_AT_EXTREMES[0]))
@example(PlacementInstance.from_dict(MAX_LOAD_AT_EXTREMES[1]))
@example(PlacementInstance.from_dict(MAX_LOAD_AT_EXTREMES[2]))
def test_whatever_validates_solves_to_a_finite_agreed_objective(instance):
    """Numbers at the accepted limits never overflow, NaN or break decoding.

    ``solve`` itself raises when the solver's objective and the validator's recomputation
    disagree; the optimum is also checked against brute force.
    """
    note(json.dumps(instance.to_dict()))
    objectives = ("servers", "traffic", "max-load", "interference")
    brute = brute_force_all(instance, objectives)
    for objective in objectives:
        try:
            result = solve(instance, objective)
        except NotOptimalError as exc:
            assert exc.result.status is Status.INFEASIBLE, exc
            assert brute[objective] is None
            continue
        assert result.objective is not None and math.isfinite(result.objective)
        report = validate(instance, result.solution)
        # The objective reported is the solver's; the validator's agrees within the tolerance.
        recomputed = report.objectives[objective]
        assert report.ok and recomputed is not None
        assert within(recomputed, result.objective, OBJECTIVE_AGREEMENT_TOL), objective
        expected = brute[objective]
        assert expected is not None
        assert within(result.objective, expected[0], OBJECTIVE_AGREEMENT_TOL), objective
    for name in ("first-fit", "best-fit-decreasing"):
        try:
            placed = run_heuristic(name, instance)
        except Exception as exc:  # a heuristic may find no room; never anything else
            assert type(exc).__name__ == "HeuristicFailedError", exc
            continue
        values = validate(instance, placed).objectives
        assert all(v is None or math.isfinite(v) for v in values.values())


_MAX_LOAD_EXTREME = {
    "kind": "placement-instance",
    "cluster": {
        "servers": [
            {
                "name": f"s{i}",
                "capacity": {"gpu": 0.0, "cpu": 1e-09},
                "nic_bandwidth_gbps": 0.001,
                "nic_load_gbit": load,
                "gpu_bandwidth_gbps": 0.001,
            }
            for i, load in enumerate((0.0, 0.0, 7.0))
        ],
        "racks": [],
    },
    "jobs": [
        {
            "name": "j0",
            "type": "A",
            "tasks": [{"name": "w", "role": "worker", "count": 1, "demand": {"cpu": 0.0}}],
        },
        {
            "name": "j1",
            "type": "A",
            "tasks": [{"name": "w", "role": "worker", "count": 2, "demand": {"cpu": 0.0}}],
            "communication": {"pattern": "ring", "volume_gbit": 1000000.0},
        },
    ],
}


@pytest.mark.solver("highs")
@pytest.mark.parametrize("data", [_MAX_LOAD_EXTREME, HUGE_LINK_COEFFICIENT])
def test_max_load_extreme_coefficients_stay_feasible(data):
    """Link-load coefficients of 1e9: the optimum is the background load, 7 / 0.001.

    HiGHS once called these max-load models infeasible; the model now measures the load in
    units of its largest coefficient (``optsched.placement.traffic``).
    """
    instance = PlacementInstance.from_dict(data)
    assert brute_force_all(instance, ("max-load",))["max-load"] is not None
    result = solve(instance, "max-load")
    assert within(result.objective, 7000.0, OBJECTIVE_AGREEMENT_TOL)
