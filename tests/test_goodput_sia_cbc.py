"""Sia's round on CBC through cvxpy, stated as Sia's policy states it (sia_ilp.solve_cbc).

CBC's optimum is HiGHS's (and so the brute force's, tests/test_goodput_sia_ilp.py) on random
rounds; without cvxpy's CBC the backend raises a typed error naming the solver; the
heterogeneous world's Sia policy hands its rounds to it when asked. The CBC tests skip without
cylp (``pip install cylp``).
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from strategies.sia import tiny_instances

from optsched.errors import NotOptimalError, SolverUnavailableError
from optsched.goodput.sia_cbc import SIA_GAP, cbc_available
from optsched.goodput.sia_ilp import solve, solve_cbc, validate
from optsched.goodput.sia_instance import SiaInstance, generate_instance
from optsched.tolerances import SOLVER_AGREEMENT_TOL, within

needs_cbc = pytest.mark.skipif(
    not cbc_available(), reason="CBC through cvxpy is not installed (pip install cylp)"
)


@needs_cbc
@settings(max_examples=25)
@given(tiny_instances())
def test_cbc_optimum_is_the_highs_optimum(inst: SiaInstance) -> None:
    highs, cbc = solve(inst), solve(inst, solver="cbc")
    assert cbc.status.value == "optimal" and cbc.solver == "cbc"
    assert validate(inst, cbc.solution).ok
    assert within(cbc.objective, highs.objective, SOLVER_AGREEMENT_TOL)


@needs_cbc
@pytest.mark.parametrize("seed", range(6))
def test_cbc_on_generated_rounds_with_pinned_and_rigid_jobs(seed: int) -> None:
    """Rounds of 12 jobs, two GPU types, some rigid jobs (their own option blocks), some pinned."""
    inst = generate_instance(12, seed=seed, num_types=2, rigid_fraction=0.3)
    cbc = solve(inst, solver="cbc")
    assert validate(inst, cbc.solution).ok
    assert within(cbc.objective, solve(inst).objective, SOLVER_AGREEMENT_TOL)


@needs_cbc
def test_sias_gap_is_not_called_optimal() -> None:
    """At Sia's 1e-4 gap CBC may stop short of the optimum: a feasible result, or an error."""
    inst = generate_instance(8, seed=1)
    with pytest.raises(NotOptimalError):
        solve_cbc(inst, mip_gap=SIA_GAP)
    res = solve_cbc(inst, mip_gap=SIA_GAP, accept_feasible=True)
    assert res.status.value == "feasible" and validate(inst, res.solution).ok


def test_without_cbc_a_typed_error_names_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    cp = pytest.importorskip("cvxpy")
    monkeypatch.setattr(cp, "installed_solvers", lambda: ["HIGHS"])
    assert not cbc_available()
    with pytest.raises(SolverUnavailableError, match=r"'cbc'.*cylp"):
        solve(generate_instance(3, seed=0), solver="cbc")


def test_without_cvxpy_a_typed_error_names_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # makes `import cvxpy` fail
    assert not cbc_available()
    with pytest.raises(SolverUnavailableError, match=r"'cbc'.*cvxpy"):
        solve(generate_instance(3, seed=0), solver="cbc")
