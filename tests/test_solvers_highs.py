"""The HiGHS matrix backend: checked against cvxpy (Clarabel, an interior-point solver) on random
LPs, against brute force on small MILPs, and on known statuses."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from strategies.solvers import bounded_lps

from optsched import limits
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.solvers import Status, TerminationCondition
from optsched.solvers.highs import HIGHS_STATUS_MAP, LinearProgram
from optsched.solvers.matrix import solve_matrix
from optsched.solvers.result import SolutionStatus, assemble
from optsched.tolerances import CAPACITY_TOL, OPTIMALITY_GAP, within

pytestmark = pytest.mark.solver("highs")


def _cvxpy_value(lp: LinearProgram) -> float:
    import cvxpy as cp

    x = cp.Variable(lp.n_variables)
    cons = [x >= lp.col_lower, x <= lp.col_upper]
    if lp.n_rows:
        cons.append(lp.a.toarray() @ x <= lp.row_upper)
    obj = cp.Minimize(lp.c @ x) if lp.sense == "min" else cp.Maximize(lp.c @ x)
    prob = cp.Problem(obj, cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


@given(bounded_lps())
def test_random_lps_match_an_interior_point_solver(lp: LinearProgram) -> None:
    sol = solve_matrix(lp)
    assert sol.result.status is Status.OPTIMAL
    assert sol.x is not None
    assert lp.max_violation(sol.x) <= CAPACITY_TOL * 10
    assert within(lp.objective_value(sol.x), sol.result.objective, OPTIMALITY_GAP)
    assert within(sol.result.objective, _cvxpy_value(lp), 1e-5)


@given(bounded_lps())
def test_lp_duals_certify_optimality(lp: LinearProgram) -> None:
    """Weak duality made tight: the Lagrangian with HiGHS's duals equals the objective."""
    sol = solve_matrix(lp)
    assert sol.row_dual is not None and sol.col_dual is not None and sol.x is not None
    # Reduced costs: c - A^T y = z (HiGHS's sign convention for both senses).
    reduced = lp.c - lp.a.T @ sol.row_dual
    assert np.allclose(reduced, sol.col_dual, atol=1e-7)
    # Complementary slackness: each dual is non-zero only at an active bound.
    ax = lp.a @ sol.x
    for y, v, up in zip(sol.row_dual, ax, lp.row_upper, strict=True):
        assert abs(y) < 1e-7 or abs(v - up) < 1e-6


def test_small_milp_equals_brute_force() -> None:
    rng = np.random.default_rng(5)
    for _ in range(15):
        n, m = 3, 2
        c = rng.integers(-4, 5, n).astype(float)
        a = rng.integers(0, 4, (m, n)).astype(float)
        ub = rng.integers(3, 8, m).astype(float)
        lp = LinearProgram(
            c, a, np.full(m, -np.inf), ub, 0, 3, sense="max", integrality=np.ones(n, bool)
        )
        best = max(
            float(c @ np.array(p))
            for p in itertools.product(range(4), repeat=n)
            if np.all(a @ np.array(p) <= ub)
        )
        sol = solve_matrix(lp)
        assert sol.result.status is Status.OPTIMAL
        assert within(sol.result.objective, best, OPTIMALITY_GAP)


def test_infeasible_and_unbounded_are_named() -> None:
    infeasible = LinearProgram([1.0, 1.0], [[1.0, 1.0]], [3.0], [np.inf], 0.0, 1.0)
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(infeasible)
    assert err.value.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    unbounded = LinearProgram([1.0], [[1.0]], [0.0], [np.inf], 0.0, np.inf, sense="max")
    with pytest.raises(NotOptimalError) as err:
        solve_matrix(unbounded)
    assert err.value.result.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


def test_warm_start_resumes_from_the_basis() -> None:
    rng = np.random.default_rng(1)
    n, m = 30, 20
    a = rng.uniform(0, 1, (m, n))
    lp = LinearProgram(
        rng.uniform(1, 2, n), a, -np.inf, rng.uniform(5, 10, m), sense="max", col_upper=1.0
    )
    cold = solve_matrix(lp)
    assert cold.iterations > 0
    warm = solve_matrix(lp, warm_start=cold)
    assert warm.iterations == 0
    assert within(warm.result.objective, cold.result.objective, OPTIMALITY_GAP)


def test_status_map_is_total() -> None:
    import highspy  # a hard dependency: its absence is a failure, not a skip

    assert set(highspy.HighsModelStatus.__members__) == set(HIGHS_STATUS_MAP)


def test_a_gap_looser_than_the_tolerance_is_not_optimal() -> None:
    res = assemble(
        TerminationCondition.OPTIMAL,
        SolutionStatus.OPTIMAL,
        90.0,
        100.0,
        build_seconds=0,
        solve_seconds=0,
        solver="x",
        solver_version="",
        native_status="",
    )
    assert res.status is Status.FEASIBLE
    assert res.termination is TerminationCondition.GAP_LIMIT
    tight = assemble(
        TerminationCondition.OPTIMAL,
        SolutionStatus.OPTIMAL,
        100.0,
        100.0 + 1e-8,
        build_seconds=0,
        solve_seconds=0,
        solver="x",
        solver_version="",
        native_status="",
    )
    assert tight.status is Status.OPTIMAL


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"c": [np.nan]}, "c[0]"),
        ({"row_lower": [3.0]}, "row_lower[0]"),
        ({"c": [1.0, 2.0]}, "a"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict, field: str) -> None:
    args = {"c": [1.0], "a": [[1.0]], "row_lower": [0.0], "row_upper": [1.0]}
    args.update(kwargs)
    with pytest.raises(InvalidInstanceError) as err:
        LinearProgram(**args)
    assert err.value.field == field


def test_model_size_is_refused_before_building() -> None:
    with limits.override(max_model_variables=10), pytest.raises(InvalidInstanceError) as err:
        LinearProgram(np.ones(20), np.zeros((1, 20)), [0.0], [1.0])
    assert "max_model_variables" in str(err.value)


def test_options_are_checked() -> None:
    lp = LinearProgram([1.0], [[1.0]], [0.0], [1.0])
    for bad in ({"time_limit": float("nan")}, {"time_limit": -1.0}, {"mip_gap": float("inf")}):
        with pytest.raises(InvalidInstanceError):
            solve_matrix(lp, **bad)


def test_nothing_reaches_standard_output() -> None:
    code = (
        "import numpy as np; from optsched.solvers.highs import LinearProgram; "
        "from optsched.solvers.matrix import solve_matrix; "
        "solve_matrix(LinearProgram([1.0], np.ones((1, 1)), [1.0], [2.0]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == ""
