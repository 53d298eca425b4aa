"""The matrix path on every backend: dispatch, SCIP's backend, statuses, options and warm starts.

Every backend is checked against brute force on small random MILPs (with equality rows, free
rows, negative bounds, offsets and both senses); SCIP's own behaviour (status map, limits,
parameters, MIP starts, quiet output) is checked directly, and so is the CLI's answer to a
solver that is not installed.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from strategies.solvers import small_milps

from optsched.errors import InvalidInstanceError, NotOptimalError, SolverUnavailableError
from optsched.solvers import (
    MATRIX_SOLVERS,
    SOLVERS,
    LinearProgram,
    MatrixSolution,
    Status,
    TerminationCondition,
    available_solvers,
    solve,
    solve_matrix,
)
from optsched.tolerances import CAPACITY_TOL, OPTIMALITY_GAP, within

MATRIX = available_solvers("matrix")


def _brute_force(lp: LinearProgram) -> float | None:
    """The optimum over every integer point of the box (``None`` when none is feasible)."""
    ranges = [
        range(int(lo), int(up) + 1) for lo, up in zip(lp.col_lower, lp.col_upper, strict=True)
    ]
    values = [
        lp.objective_value(p)
        for p in itertools.product(*ranges)
        if lp.max_violation(np.array(p, dtype=float)) == 0.0
    ]
    if not values:
        return None
    return max(values) if lp.sense == "max" else min(values)


@pytest.mark.parametrize("solver", MATRIX)
@settings(max_examples=30)
@given(lp=small_milps())
def test_small_milps_equal_brute_force(solver: str, lp: LinearProgram) -> None:
    best = _brute_force(lp)
    if best is None:
        with pytest.raises(NotOptimalError) as err:
            solve_matrix(lp, solver=solver)
        assert err.value.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
        return
    sol = solve_matrix(lp, solver=solver)
    assert sol.result.status is Status.OPTIMAL and sol.x is not None
    assert within(sol.result.objective, best, OPTIMALITY_GAP)
    assert lp.max_violation(sol.x) <= CAPACITY_TOL
    assert within(lp.objective_value(sol.x), best, OPTIMALITY_GAP)
    assert sol.result.bound is not None and within(sol.result.bound, best, OPTIMALITY_GAP)


@pytest.mark.parametrize("solver", MATRIX)
def test_an_lp_with_a_known_optimum(solver: str) -> None:
    # max 3x + 2y s.t. x + y <= 4, x + 3y <= 6, x <= 3: x = 3, y = 1, objective 11.
    lp = LinearProgram(
        [3.0, 2.0], [[1.0, 1.0], [1.0, 3.0]], -np.inf, [4.0, 6.0], 0.0, [3.0, np.inf], sense="max"
    )
    sol = solve_matrix(lp, solver=solver, threads=1)
    assert sol.result.status is Status.OPTIMAL and sol.result.solver == solver
    assert sol.x is not None and np.allclose(sol.x, [3.0, 1.0], atol=CAPACITY_TOL)
    assert within(sol.result.objective, 11.0, OPTIMALITY_GAP)


@pytest.mark.parametrize("solver", MATRIX)
def test_infeasible_and_unbounded_are_named(solver: str) -> None:
    infeasible = LinearProgram([1.0, 1.0], [[1.0, 1.0]], [3.0], [np.inf], 0.0, 1.0)
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(infeasible, solver=solver, accept_feasible=True)
    assert err.value.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert not err.value.result.has_solution
    unbounded = LinearProgram([1.0], [[1.0]], [0.0], [np.inf], 0.0, np.inf, sense="max")
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(unbounded, solver=solver)
    assert err.value.result.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


@pytest.mark.parametrize("solver", MATRIX)
def test_a_model_without_columns(solver: str) -> None:
    empty = LinearProgram(np.zeros(0), np.zeros((0, 0)), [], [], offset=2.0)
    sol = solve_matrix(empty, solver=solver)
    assert sol.result.status is Status.OPTIMAL and sol.result.objective == 2.0
    impossible = LinearProgram(np.zeros(0), np.zeros((1, 0)), [1.0], [2.0])
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(impossible, solver=solver)
    assert err.value.result.status is Status.INFEASIBLE


def _knapsack(n: int = 60) -> LinearProgram:
    """A 3-constraint 0/1 knapsack that takes SCIP many nodes (its optimum is 1816)."""
    rng = np.random.default_rng(0)
    w = rng.integers(20, 100, (3, n)).astype(float)
    v = rng.integers(20, 100, n).astype(float)
    return LinearProgram(
        v, w, -np.inf, w.sum(axis=1) // 3, 0.0, 1.0, sense="max", integrality=np.ones(n, bool)
    )


@pytest.mark.solver("scip")
def test_scip_status_map_is_total() -> None:
    from pyscipopt import SCIP_STATUS

    from optsched.solvers.scip import SCIP_STATUS_MAP

    native = {name.lower() for name in dir(SCIP_STATUS) if not name.startswith("_")}
    assert native and native <= set(SCIP_STATUS_MAP)


@pytest.mark.solver("scip")
def test_scip_limit_with_incumbent_is_feasible_not_optimal() -> None:
    # Stopping at the first solution found is a deterministic "limit with an incumbent".
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(_knapsack(), solver="scip", options={"limits/solutions": 1})
    res = err.value.result
    assert res.status is Status.FEASIBLE and res.native_status == "sollimit"
    assert res.termination is TerminationCondition.OTHER_LIMIT
    accepted = solve_matrix(
        _knapsack(), solver="scip", solver_options={"limits/solutions": 1}, accept_feasible=True
    )
    assert accepted.result.status is Status.FEASIBLE and accepted.x is not None
    assert _knapsack().max_violation(accepted.x) <= CAPACITY_TOL
    # Stopped before the root LP, SCIP may have no finite bound yet; one it has is valid.
    bound = accepted.result.bound
    assert bound is None or bound >= accepted.result.objective


@pytest.mark.solver("scip")
def test_scip_mip_start_is_the_first_incumbent() -> None:
    lp = _knapsack()
    start = np.zeros(lp.n_variables)
    start[:3] = 1.0  # feasible, far from optimal
    assert lp.max_violation(start) == 0.0
    previous = solve_matrix(lp, solver="scip")
    given_start = MatrixSolution(result=previous.result, x=start)
    # With the solution limit at 1, SCIP stops at its first incumbent: the start.
    sol = solve_matrix(
        lp,
        solver="scip",
        options={"limits/solutions": 1},
        warm_start=given_start,
        accept_feasible=True,
    )
    assert sol.result.extra["warm_start_kept"] is True
    assert sol.result.objective == lp.objective_value(start)
    # A HiGHS optimum handed to SCIP is kept and stays optimal.
    highs = solve_matrix(lp, solver="highs")
    again = solve_matrix(lp, solver="scip", warm_start=highs)
    assert again.result.extra["warm_start_kept"] is True
    assert within(again.result.objective, highs.result.objective, OPTIMALITY_GAP)


@pytest.mark.solver("scip")
def test_scip_time_limit_spent_while_building() -> None:
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(_knapsack(), solver="scip", time_limit=1.0, build_seconds=2.0)
    res = err.value.result
    assert res.status is Status.LIMIT_NO_SOLUTION and res.solver == "scip"
    assert res.termination is TerminationCondition.TIME_LIMIT


@pytest.mark.parametrize("solver", MATRIX)
def test_a_vanishing_time_limit_is_never_optimal(solver: str) -> None:
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(_knapsack(), solver=solver, time_limit=1e-6)
    res = err.value.result
    assert res.termination is TerminationCondition.TIME_LIMIT
    assert res.status in (Status.LIMIT_NO_SOLUTION, Status.FEASIBLE)


@pytest.mark.parametrize(
    ("solver", "option"), [("scip", {"mip_max_nodes": 1}), ("highs", {"limits/nodes": 1})]
)
def test_an_option_the_solver_does_not_know_names_the_field(solver: str, option: dict) -> None:
    if solver not in MATRIX:
        pytest.skip(f"solver {solver!r} is not installed")
    with pytest.raises(InvalidInstanceError) as err:
        solve_matrix(_knapsack(), solver=solver, options=option)
    assert err.value.field == "options" and next(iter(option)) in str(err.value)


def test_options_and_solver_options_are_one_argument() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        solve_matrix(_knapsack(), options={}, solver_options={})
    assert err.value.field == "solver_options"


@pytest.mark.parametrize("name", ["gurobi", "clarabel", "appsi_highs"])
def test_a_solver_without_a_matrix_backend_is_refused_by_name(name: str) -> None:
    with pytest.raises(SolverUnavailableError, match=f"'{name}' cannot solve matrix"):
        solve_matrix(_knapsack(), solver=name)


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from optsched.solvers import registry

    monkeypatch.setattr(registry, "_present", lambda name: False)
    with pytest.raises(SolverUnavailableError, match=r"'scip' is not installed.*optsched\[scip\]"):
        solve_matrix(_knapsack(), solver="scip")


def test_the_registry_lists_the_matrix_path() -> None:
    assert set(MATRIX_SOLVERS) == {n for n, i in SOLVERS.items() if "matrix" in i.frontends}
    assert set(MATRIX) <= set(MATRIX_SOLVERS)
    assert {"pyomo", "cvxpy", "matrix"} <= set(SOLVERS["scip"].frontends)


@pytest.mark.solver("scip")
def test_scip_prints_nothing_on_standard_output() -> None:
    code = (
        "import numpy as np; from optsched.solvers import LinearProgram, solve_matrix; "
        "lp = LinearProgram([1.0, 2.0], np.ones((1, 2)), [1.0], [2.0], integrality=[1, 1]); "
        "solve_matrix(lp, solver='scip'); solve_matrix(lp, solver='scip', time_limit=5)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == ""


# ----- the Pyomo path to SCIP -------------------------------------------------------------


def _pyomo_knapsack(n: int = 60):  # type: ignore[no-untyped-def]
    import pyomo.environ as pyo

    lp = _knapsack(n)
    w = lp.a.toarray()
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    m.c = pyo.Constraint(
        range(3), rule=lambda m, r: sum(w[r, i] * m.x[i] for i in range(n)) <= lp.row_upper[r]
    )
    m.obj = pyo.Objective(expr=sum(lp.c[i] * m.x[i] for i in range(n)), sense=pyo.maximize)
    return m


@pytest.mark.solver("scip")
def test_pyomo_scip_reads_scips_own_status_and_version() -> None:
    m = _pyomo_knapsack()
    with pytest.raises(NotOptimalError) as err:
        solve(m, "scip", options={"limits/solutions": 1})
    res = err.value.result
    assert res.native_status == "sollimit"
    assert res.termination is TerminationCondition.OTHER_LIMIT  # Pyomo says "unknown"
    assert res.status is Status.FEASIBLE
    import pyscipopt

    model = pyscipopt.Model()
    assert res.solver_version.startswith(f"{model.getMajorVersion()}.")


@pytest.mark.solver("scip")
def test_pyomo_scip_warm_start() -> None:
    m = _pyomo_knapsack()
    for i in m.x:
        m.x[i].value = 1.0 if i < 3 else 0.0
    start_value = float(_knapsack().c[:3].sum())
    res = solve(m, "scip", options={"limits/solutions": 1}, warm_start=True, accept_feasible=True)
    assert res.message == "warm-started"
    assert res.objective == start_value
    # Without values for the integers there is no start, and the result says so.
    m.x[0].value = None
    res = solve(m, "scip", options={"limits/solutions": 1}, warm_start=True, accept_feasible=True)
    assert "skipped" in res.message


@pytest.mark.solver("scip")
def test_pyomo_scip_unknown_parameter_names_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        solve(_pyomo_knapsack(5), "scip", options={"mip_max_nodes": 1})
    assert err.value.field == "options"


# ----- the command line -------------------------------------------------------------------


def test_cli_exits_2_when_the_solver_is_not_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from optsched.cli import main
    from optsched.placement.instance import generate_instance
    from optsched.solvers import registry

    path = tmp_path / "inst.json"
    generate_instance(2, n_servers=2, gpus=4, seed=0).save(path)
    monkeypatch.setattr(registry, "_present", lambda name: name != "scip")
    code = main(["placement", "solve", str(path), "--solver", "scip", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    assert out["error"] == "SolverUnavailableError" and out["field"] == "--solver"
    assert "'scip'" in out["message"]


@pytest.mark.solver("highs")
@pytest.mark.parametrize("solver", ["highs", "appsi_highs"])
def test_highs_threads_after_an_earlier_run(solver: str) -> None:
    """HiGHS sizes one thread pool per process; asking for other threads later must still solve."""
    import pyomo.environ as pyo

    def model() -> pyo.ConcreteModel:
        m = pyo.ConcreteModel()
        m.x = pyo.Var(bounds=(0, 4), domain=pyo.Integers)
        m.o = pyo.Objective(expr=m.x, sense=pyo.maximize)
        return m

    assert solve(model(), solver).objective == 4.0
    for threads in (1, 2):
        assert solve(model(), solver, threads=threads).objective == 4.0


def test_cli_solvers_lists_the_paths_of_each_solver(capsys: pytest.CaptureFixture[str]) -> None:
    from optsched.cli import main

    assert main(["solvers", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["solvers"]}
    assert set(rows) == set(SOLVERS)
    for name, info in SOLVERS.items():
        assert rows[name]["frontends"] == list(info.frontends)
    assert "matrix" in rows["highs"]["frontends"] and "matrix" in rows["scip"]["frontends"]
    assert "matrix" not in rows["cbc"]["frontends"]
