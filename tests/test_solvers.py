"""The solver layer: a known-answer LP/MILP set on every available backend, status mapping."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pyomo.environ as pyo
import pytest

from optsched.errors import ModelError, NotOptimalError, SolverUnavailableError
from optsched.solvers import Status, TerminationCondition, available_solvers, solve
from optsched.solvers.cvxpy import CVXPY_STATUS_MAP
from optsched.solvers.pyomo import (
    APPSI_TERMINATION_MAP,
    HIGHS_STATUS_MAP,
    LEGACY_TERMINATION_MAP,
    PYOMO_TERMINATION_MAP,
)
from optsched.solvers.registry import SOLVERS
from optsched.solvers.result import SolutionStatus, relative_gap, summarize

#: Objective tolerance for known answers (absolute, these optima are O(10)).
OBJ_TOL = 1e-6

PYOMO_MIP = [s for s in available_solvers("pyomo", mip=True)]
PYOMO_MIP = [*PYOMO_MIP, "appsi_highs"] if "highs" in PYOMO_MIP else PYOMO_MIP
CVXPY_LP = available_solvers("cvxpy")
CVXPY_MIP = [s for s in CVXPY_LP if SOLVERS[s].mip]


# ----- known-answer problems (Pyomo) --------------------------------------------------------


def lp_optimal() -> tuple[Any, float]:
    # max 3x + 2y s.t. x + y <= 4, x + 3y <= 6, x <= 3 -> x = 3, y = 1, objective 11.
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeReals)
    m.y = pyo.Var(domain=pyo.NonNegativeReals)
    m.c1 = pyo.Constraint(expr=m.x + m.y <= 4)
    m.c2 = pyo.Constraint(expr=m.x + 3 * m.y <= 6)
    m.c3 = pyo.Constraint(expr=m.x <= 3)
    m.obj = pyo.Objective(expr=3 * m.x + 2 * m.y, sense=pyo.maximize)
    return m, 11.0


def mip_optimal() -> tuple[Any, float]:
    # max 5a + 4b + 3c s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, integers
    # in [0, 3]: the optimum is 13 (a = 2, b = 0, c = 1), checked by enumeration below.
    m = pyo.ConcreteModel()
    m.v = pyo.Var(["a", "b", "c"], domain=pyo.NonNegativeIntegers, bounds=(0, 3))
    a, b, c = m.v["a"], m.v["b"], m.v["c"]
    m.c1 = pyo.Constraint(expr=2 * a + 3 * b + c <= 5)
    m.c2 = pyo.Constraint(expr=4 * a + b + 2 * c <= 11)
    m.c3 = pyo.Constraint(expr=3 * a + 4 * b + 2 * c <= 8)
    m.obj = pyo.Objective(expr=5 * a + 4 * b + 3 * c, sense=pyo.maximize)
    return m, 13.0


def test_mip_known_answer_by_enumeration() -> None:
    best = max(
        5 * a + 4 * b + 3 * c
        for a in range(4)
        for b in range(4)
        for c in range(4)
        if 2 * a + 3 * b + c <= 5 and 4 * a + b + 2 * c <= 11 and 3 * a + 4 * b + 2 * c <= 8
    )
    assert best == mip_optimal()[1]


def infeasible() -> Any:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers)
    m.c = pyo.Constraint(expr=m.x <= -1)
    m.obj = pyo.Objective(expr=m.x)
    return m


def unbounded() -> Any:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeReals)
    m.y = pyo.Var(domain=pyo.NonNegativeReals)
    m.c = pyo.Constraint(expr=m.x - m.y <= 1)
    m.obj = pyo.Objective(expr=m.x + m.y, sense=pyo.maximize)
    return m


def hard_knapsack(n: int = 60) -> Any:
    rng = np.random.default_rng(0)
    w = rng.integers(20, 100, (3, n))
    v = rng.integers(20, 100, n)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    m.c = pyo.Constraint(
        range(3),
        rule=lambda m, r: sum(int(w[r, i]) * m.x[i] for i in range(n)) <= int(w[r].sum() // 3),
    )
    m.obj = pyo.Objective(expr=sum(int(v[i]) * m.x[i] for i in range(n)), sense=pyo.maximize)
    return m


@pytest.mark.parametrize("solver", PYOMO_MIP)
@pytest.mark.parametrize("problem", [lp_optimal, mip_optimal])
def test_pyomo_optimal(solver: str, problem: Callable[[], tuple[Any, float]]) -> None:
    model, expected = problem()
    res = solve(model, solver)
    assert res.status is Status.OPTIMAL and res.is_optimal and res.has_solution
    assert res.objective == pytest.approx(expected, abs=OBJ_TOL)
    assert res.bound == pytest.approx(expected, abs=OBJ_TOL)
    assert res.gap == pytest.approx(0.0, abs=OBJ_TOL)
    # The solution is loaded into the model and achieves the objective.
    assert pyo.value(model.obj) == pytest.approx(expected, abs=OBJ_TOL)
    assert res.solver == solver and res.solver_version


@pytest.mark.parametrize("solver", PYOMO_MIP)
def test_pyomo_infeasible_raises_with_result(solver: str) -> None:
    with pytest.raises(NotOptimalError) as info:
        solve(infeasible(), solver)
    assert info.value.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert not info.value.result.has_solution
    # accept_feasible does not turn "no solution" into a usable answer.
    with pytest.raises(NotOptimalError):
        solve(infeasible(), solver, accept_feasible=True)


@pytest.mark.parametrize("solver", PYOMO_MIP)
def test_pyomo_unbounded(solver: str) -> None:
    with pytest.raises(NotOptimalError) as info:
        solve(unbounded(), solver)
    assert info.value.result.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


@pytest.mark.skipif("highs" not in PYOMO_MIP, reason="HiGHS (highspy) is not installed")
def test_limit_with_incumbent_is_feasible_not_optimal() -> None:
    # Stopping at the first improving solution is a deterministic "limit with incumbent".
    opts = {"mip_max_improving_sols": 1}
    with pytest.raises(NotOptimalError) as info:
        solve(hard_knapsack(), "highs", options=opts)
    res = info.value.result
    assert res.status is Status.FEASIBLE and res.objective is not None
    assert res.bound is not None and res.bound >= res.objective - OBJ_TOL and res.gap > 0
    accepted = solve(hard_knapsack(), "highs", options=opts, accept_feasible=True)
    assert accepted.status is Status.FEASIBLE
    assert accepted.termination is TerminationCondition.OTHER_LIMIT


@pytest.mark.skipif("highs" not in PYOMO_MIP, reason="HiGHS (highspy) is not installed")
def test_time_limit_status() -> None:
    # A vanishing time limit stops before any incumbent: never reported as optimal.
    with pytest.raises(NotOptimalError) as info:
        solve(hard_knapsack(), "highs", time_limit=1e-6)
    res = info.value.result
    assert res.termination is TerminationCondition.TIME_LIMIT
    assert res.status in (Status.LIMIT_NO_SOLUTION, Status.FEASIBLE)


@pytest.mark.skipif("highs" not in PYOMO_MIP, reason="HiGHS (highspy) is not installed")
def test_highs_presolve_regression() -> None:
    # An OASiS model on which HiGHS 1.12-1.15.1 MIP presolve reports 0.3775 as optimal; the
    # optimum 0.5 (two workers in the first slot) is checked by hand in the comment below.
    from optsched.online.oasis import OasisInstance
    from optsched.online.oasis.offline import solve_offline

    inst = OasisInstance.model_validate(
        {
            "horizon": 2,
            "slot_s": 1.0,
            "resources": ["gpu", "cpu", "bandwidth"],
            "worker_servers": [
                {"capacity": {"gpu": 0.0, "cpu": 2.0, "bandwidth": 6.0}},
                {"capacity": {"gpu": 0.0, "cpu": 1.0, "bandwidth": 3.0}},
            ],
            "ps_servers": [{"capacity": {"gpu": 0.0, "cpu": 2.0, "bandwidth": 12.0}}],
            "jobs": [
                {
                    "arrival": 0,
                    "epochs": 1,
                    "chunks": 2,
                    "minibatches": 1,
                    "minibatch_s": 0.5931928428513653,
                    "gradient_mb": 0.0,
                    "worker_demand": {"cpu": 1.0, "bandwidth": 3.0},
                    "ps_demand": {"cpu": 1.0, "bandwidth": 6.0},
                    "utility": {
                        "kind": "sigmoid",
                        "priority": 1.0,
                        "steepness": 0.5,
                        "target": 1.0,
                    },
                }
            ],
        }
    )
    # Work 1.19 worker-slots, N = 2: two workers on server 0 in slot 0 (cpu 2, bandwidth 6) and
    # one PS (B = 6 >= 2 * 3) finish it in one slot: utility 1 / (1 + e^0) = 0.5.
    for solver in ("highs", "appsi_highs"):
        assert solve_offline(inst, solver).objective == pytest.approx(0.5, abs=OBJ_TOL)


# ----- cvxpy backend ---------------------------------------------------------------------


def cvx_lp() -> tuple[Any, float]:
    import cvxpy as cp

    x = cp.Variable(2, nonneg=True)
    prob = cp.Problem(
        cp.Maximize(3 * x[0] + 2 * x[1]), [cp.sum(x) <= 4, x[0] + 3 * x[1] <= 6, x[0] <= 3]
    )
    return prob, 11.0


@pytest.mark.parametrize("solver", CVXPY_LP)
def test_cvxpy_lp(solver: str) -> None:
    prob, expected = cvx_lp()
    res = solve(prob, solver)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(expected, abs=1e-4)  # interior-point accuracy


@pytest.mark.parametrize("solver", CVXPY_MIP)
def test_cvxpy_mip_and_failures(solver: str) -> None:
    import cvxpy as cp

    v = cp.Variable(3, integer=True)
    a, b, c = v[0], v[1], v[2]
    prob = cp.Problem(
        cp.Maximize(5 * a + 4 * b + 3 * c),
        [
            2 * a + 3 * b + c <= 5,
            4 * a + b + 2 * c <= 11,
            3 * a + 4 * b + 2 * c <= 8,
            v >= 0,
            v <= 3,
        ],
    )
    assert solve(prob, solver).objective == pytest.approx(13.0, abs=OBJ_TOL)
    x = cp.Variable(integer=True)
    with pytest.raises(NotOptimalError) as info:
        solve(cp.Problem(cp.Minimize(x), [x >= 1, x <= 0]), solver)
    assert info.value.result.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    y = cp.Variable()
    with pytest.raises(NotOptimalError) as info:
        solve(cp.Problem(cp.Maximize(y), [y >= 0]), solver)
    assert info.value.result.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


# ----- status maps and registry ----------------------------------------------------------


def test_every_native_highs_status_is_mapped() -> None:
    import highspy  # a hard dependency: its absence is a failure, not a skip

    assert set(highspy.HighsModelStatus.__members__) == set(HIGHS_STATUS_MAP)


def test_every_pyomo_termination_is_mapped() -> None:
    from pyomo.contrib.solver.common.results import TerminationCondition as TC
    from pyomo.opt import TerminationCondition as LegacyTC

    assert set(TC.__members__) <= set(PYOMO_TERMINATION_MAP)
    assert set(LegacyTC.__members__) <= set(LEGACY_TERMINATION_MAP)
    from pyomo.contrib.appsi.base import TerminationCondition as AppsiTC

    assert set(AppsiTC.__members__) <= set(APPSI_TERMINATION_MAP)


def test_every_cvxpy_status_is_mapped() -> None:
    import cvxpy.settings as s

    statuses = {
        s.OPTIMAL,
        s.OPTIMAL_INACCURATE,
        s.INFEASIBLE,
        s.INFEASIBLE_INACCURATE,
        s.UNBOUNDED,
        s.UNBOUNDED_INACCURATE,
        s.INFEASIBLE_OR_UNBOUNDED,
        s.USER_LIMIT,
        s.SOLVER_ERROR,
    }
    assert statuses <= set(CVXPY_STATUS_MAP)


@pytest.mark.parametrize("termination", list(TerminationCondition))
@pytest.mark.parametrize("solution", list(SolutionStatus))
def test_summary_status_is_total_and_never_optimal_without_a_point(
    termination: TerminationCondition, solution: SolutionStatus
) -> None:
    status = summarize(termination, solution)
    assert isinstance(status, Status)
    if solution is SolutionStatus.NO_SOLUTION:
        assert status is not Status.OPTIMAL and status is not Status.FEASIBLE


def test_relative_gap() -> None:
    assert relative_gap(10.0, 10.0) == 0.0
    assert relative_gap(10.0, 11.0) == pytest.approx(0.1)
    assert relative_gap(None, 1.0) is None and relative_gap(1.0, float("inf")) is None


def test_available_solvers_imports_nothing_heavy() -> None:
    code = (
        "import sys; from optsched.solvers import available_solvers; available_solvers(); "
        "heavy = [m for m in ('highspy', 'pyomo', 'cvxpy') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_missing_or_wrong_solver_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from optsched.solvers import registry

    model, _ = lp_optimal()
    # A known solver whose package is absent says how to install it.
    monkeypatch.setattr(registry, "_present", lambda name: False)
    with pytest.raises(SolverUnavailableError, match="pip install"):
        solve(model, "highs")
    monkeypatch.undo()
    # An LP-only conic solver cannot take a Pyomo model.
    with pytest.raises(SolverUnavailableError, match="cannot solve pyomo"):
        solve(model, "clarabel")
    with pytest.raises(ModelError):
        solve(object())


@pytest.mark.solver("highs")
def test_mip_start_path_keeps_native_options() -> None:
    """A MIP start goes through appsi; native options must still reach HiGHS (they were dropped)."""
    import pyomo.environ as pyo

    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    m.y = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    m.c = pyo.Constraint(expr=3 * m.x + 5 * m.y <= 17)
    m.o = pyo.Objective(expr=4 * m.x + 6 * m.y, sense=pyo.maximize)
    m.x.value, m.y.value = 0, 0
    # No branching and no presolve: HiGHS must stop at the start, far from the optimum 22.
    with pytest.raises(NotOptimalError) as info:
        solve(m, "highs", warm_start=True, options={"mip_max_nodes": 0, "presolve": "off"})
    assert info.value.result.objective == 0


def test_solver_options_keep_options_declared_below() -> None:
    import click
    from click.testing import CliRunner

    from optsched.cli.common import json_option, solver_options

    @click.command()
    @solver_options()
    @click.option("--workers", default=3)
    @json_option
    def cmd(solver_opts, workers: int, as_json: bool) -> None:  # type: ignore[no-untyped-def]
        click.echo(f"{solver_opts.solver} {solver_opts.time_limit} {workers} {as_json}")

    out = CliRunner().invoke(cmd, ["--workers", "5", "--json", "--time-limit", "2"])
    assert out.exit_code == 0, out.output
    assert out.output.split() == ["highs", "2.0", "5", "True"]
    bad = CliRunner().invoke(cmd, ["--time-limit", "nan"])
    assert bad.exit_code == 2 and "--time-limit" in bad.output
