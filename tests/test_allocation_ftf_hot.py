"""Finish-time fairness's hot path (:data:`optsched.allocation.gavel.lp.HOT_LEVELS`).

The hot path tries the bracket's lower end first, bounds the optimum from above by every level
LP's allocation and starts each round's first LP from the previous round's basis carried over
job by job. A degenerate optimum can then be met at another allocation, so the checks are on
what must not change: every round is certified optimal, its objective equals the plain path's
(cold) solve of the same round within the two brackets' tolerance, its allocation passes the
independent validator, and it agrees with the declarative conic twin as the plain path does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from strategies.allocation import lp_rounds, waited_rounds

from optsched import sim
from optsched.allocation.gavel import AllocationInstance, solve, validate
from optsched.allocation.gavel import lp as lp_module
from optsched.allocation.gavel.twin import solve_twin
from optsched.sim.policies import AllocationLP
from optsched.solvers.highs import (
    BASIS_BASIC,
    BASIS_LOWER,
    BASIS_UPPER,
    LinearProgram,
    warm_basis,
)
from optsched.solvers.matrix import solve_matrix
from optsched.tolerances import OPTIMALITY_GAP, SOLVER_AGREEMENT_TOL, leq, within

pytestmark = pytest.mark.solver("highs")

#: As in tests/test_allocation.py: the conic twin's own accuracy.
TWIN_TOL = 1e-4


def _solve(inst: AllocationInstance, policy: str, hot: bool, warm: Any = None) -> Any:
    saved = lp_module.HOT_LEVELS
    lp_module.HOT_LEVELS = hot
    try:
        return solve(inst, policy, warm_start=warm)
    finally:
        lp_module.HOT_LEVELS = saved


def check_agree(inst: AllocationInstance, policy: str, hot_res: Any) -> None:
    """``hot_res`` is certified, valid, and has the cold solve's objective."""
    cold = _solve(inst, policy, hot=False)
    assert hot_res.optimal and cold.optimal
    report = validate(inst, hot_res.solution, policy)
    assert report.ok, report.violations
    assert within(report.objective, hot_res.objective, OPTIMALITY_GAP)
    # both brackets hold r* within OPTIMALITY_GAP: the two objectives within twice that
    assert within(hot_res.objective, cold.objective, SOLVER_AGREEMENT_TOL)
    assert hot_res.bound is not None and cold.bound is not None
    assert leq(hot_res.bound, cold.objective, OPTIMALITY_GAP)
    assert leq(cold.bound, hot_res.objective, OPTIMALITY_GAP)


@pytest.mark.parametrize("policy", ["ftf-perf", "ftf"])
@given(inst=waited_rounds(waited=True))
@settings(max_examples=25)
def test_hot_levels_give_the_cold_objective_on_waited_rounds(
    policy: str, inst: AllocationInstance
) -> None:
    assume((inst.steps > 0).any())
    check_agree(inst, policy, _solve(inst, policy, hot=True))


@given(inst=lp_rounds())
@settings(max_examples=25)
def test_hot_levels_agree_with_the_twin(inst: AllocationInstance) -> None:
    """The Gavel-style cross-check of tests/test_allocation.py, on the hot path."""
    assume((inst.steps > 0).any())
    res = _solve(inst, "ftf-perf", hot=True)
    check_agree(inst, "ftf-perf", res)
    twin, _ = solve_twin(inst, "ftf-perf")
    assert within(res.objective, twin, TWIN_TOL)
    assert leq(res.objective, twin, OPTIMALITY_GAP)
    assert res.bound is not None and leq(res.bound, twin, TWIN_TOL)


@given(inst=waited_rounds(waited=True))
@settings(max_examples=15)
def test_a_round_started_from_its_own_basis_needs_no_pivot(inst: AllocationInstance) -> None:
    """The basis carried over to the same round is optimal at once: no simplex iteration.

    And a round started from another round's basis (jobs dropped: classes gone, rows and
    columns shifted) is still solved to the cold objective.
    """
    assume((inst.steps > 0).any())
    first = _solve(inst, "ftf-perf", hot=True)
    lp = first.extra["lp"]
    assume(lp is not None and first.extra["lp_solves"] == 1)
    assert lp.extra[lp_module._LAYOUT][0] == inst.job_ids
    again = _solve(inst, "ftf-perf", hot=True, warm=lp)
    assert again.extra["lp"].iterations == 0
    assert within(again.objective, first.objective, OPTIMALITY_GAP)
    fewer = inst.model_copy(update={"jobs": inst.jobs[1:]})
    assume((fewer.steps > 0).any())
    check_agree(fewer, "ftf-perf", _solve(fewer, "ftf-perf", hot=True, warm=lp))


def test_an_alien_basis_is_completed() -> None:
    """Too few basic variables, then too many: HiGHS completes either and reaches the optimum."""
    lp = LinearProgram(
        [1.0, 2.0, 0.5],
        np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]),
        [-np.inf, -np.inf],
        [3.0, 2.0],
        0.0,
        [2.0, 2.0, 2.0],
        sense="max",
    )
    cold = solve_matrix(lp)
    assert cold.result.objective is not None
    for cols, rows in (
        ([BASIS_LOWER, BASIS_LOWER, BASIS_LOWER], [BASIS_BASIC, BASIS_UPPER]),
        ([BASIS_BASIC, BASIS_BASIC, BASIS_BASIC], [BASIS_BASIC, BASIS_BASIC]),
    ):
        warm = warm_basis(np.array(cols), np.array(rows))
        assert warm.extra["basis_columns"] == 3
        sol = solve_matrix(lp, warm_start=warm)
        assert sol.result.objective is not None
        assert within(sol.result.objective, cold.result.objective, OPTIMALITY_GAP)


def test_a_simulation_on_the_hot_path_is_valid_and_each_round_optimal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every round of a run with a backlog: certified, and its objective the cold solve's."""
    world = sim.generate_instance(40, "v100=4,p100=4,k80=4", seed=2)
    rounds: list[tuple[AllocationInstance, Any]] = []

    class Kept(AllocationLP):
        def solve_round(self, state: sim.SimState) -> Any:
            out = super().solve_round(state)
            if out is not None:
                rounds.append(out)
            return out

    monkeypatch.setattr(lp_module, "HOT_LEVELS", True)
    policy = Kept("ftf-perf")
    result = sim.simulate(world, policy)
    assert sim.validate(world, result).ok
    assert len(rounds) > 5
    carried = sum(1 for _, res in rounds if res.extra["lp"] is not None)
    assert carried > 0  # rounds handed a basis to the next
    for inst, res in rounds:
        check_agree(inst, "ftf-perf", res)


def _classes_of(inst: AllocationInstance) -> Any:
    """The ``ftf-perf`` classes of a round, as :func:`solve_lp_policy` forms them."""
    t = inst.throughputs
    alpha, beta = lp_module._ftf_alpha_beta(inst, t)
    active = (inst.steps > 0).astype(np.float64)
    return lp_module._classes(inst, active, t / alpha[:, None], beta)


def _codes(statuses: Any, fixed: Any = None) -> list[int]:
    """Status codes; with ``fixed`` (columns whose bounds are equal), a nonbasic fixed column
    as -1 (at its lower bound or its upper one: the same point, HiGHS says either)."""
    codes = [int(s) for s in statuses]
    if fixed is not None:
        codes = [-1 if f and c != BASIS_BASIC else c for c, f in zip(codes, fixed, strict=True)]
    return codes


@given(inst=waited_rounds(waited=True))
@settings(max_examples=20)
def test_the_carried_basis_is_the_previous_one_class_by_class(inst: AllocationInstance) -> None:
    """Statuses carried to the same round are HiGHS's own; with the first class's jobs gone,
    every other class keeps its job's statuses and the type rows and ``v`` keep theirs."""
    assume((inst.steps > 0).any())
    res = _solve(inst, "ftf-perf", hot=True)
    lp = res.extra["lp"]
    assume(lp is not None)
    cl = _classes_of(inst)
    m, k = cl.n, cl.capacities.size
    fixed = [*(~cl.mask.ravel()).tolist(), False]
    cols, rows = _codes(lp.basis.col_status, fixed), _codes(lp.basis.row_status)
    same = lp_module._carried_basis(lp, inst, cl)
    assert same is not None
    assert _codes(same.basis.col_status, fixed) == cols
    assert _codes(same.basis.row_status) == rows
    gone = set(np.flatnonzero(cl.inverse == 0).tolist())
    assume(len(gone) < inst.n_jobs)
    rest = inst.model_copy(update={"jobs": [j for i, j in enumerate(inst.jobs) if i not in gone]})
    assume((rest.steps > 0).any())
    new = _classes_of(rest)
    carried = lp_module._carried_basis(lp, rest, new)
    assert carried is not None
    n = new.n
    new_fixed = [*(~new.mask.ravel()).tolist(), False]
    new_cols = _codes(carried.basis.col_status, new_fixed)
    new_rows = _codes(carried.basis.row_status)
    assert len(new_cols) == n * k + 1 and len(new_rows) == 2 * n + k
    where = {job_id: int(c) for job_id, c in zip(inst.job_ids, cl.inverse, strict=True)}
    for c in range(n):
        old = where[rest.job_ids[int(new.rep[c])]]
        assert old != 0
        assert new_cols[c * k : (c + 1) * k] == cols[old * k : (old + 1) * k]
        assert new_rows[c] == rows[old]
        assert new_rows[n + k + c] == rows[m + k + old]
    assert new_rows[n : n + k] == rows[m : m + k]
    assert new_cols[-1] == cols[-1]


@pytest.mark.parametrize("policy", ["ftf", "ftf-perf"])
def test_hot_runs_keep_the_simulators_invariants(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/test_sim_fidelity.py's checks on the hot path: the order of the GPU types in the
    cluster string changes no record, and the run stays work-conserving and valid."""
    from strategies.sim import job_frame, synthetic_throughputs

    from optsched.sim.policies import make_policy

    monkeypatch.setattr(lp_module, "HOT_LEVELS", True)
    rows = [
        {"model": "AB"[k % 2], "num_gpus": (1, 2, 4)[k % 3], "total_steps": 30.0 + 11 * (k % 5)}
        | {"arrival": 3.0 * k}
        for k in range(12)
    ]
    records = []
    for text in ("fast=4:4,slow=4:2", "slow=4:2,fast=4:4"):
        world = sim.World.from_frame(
            job_frame(rows), sim.parse_cluster(text), synthetic_throughputs()
        )
        result = sim.simulate(world, make_policy(policy))
        assert result.extra["work_conserving"] is True
        report = sim.validate(world, result)
        assert report.ok, report.violations[:3]
        records.append((result.intervals, result.completion))
    assert records[0] == records[1]


def test_a_bottleneck_at_the_lower_end_is_closed_by_one_lp() -> None:
    """A round of cluster04 (as the simulator built it, 196 jobs) whose optimum is the lower
    end L: the plain path's LP at L returns lambda a rounding error below 1, so it only raises
    L and creeps towards it by secant steps (a dozen LPs); the hot path's first LP is at L
    and its allocation closes the bracket at once, at least as good."""
    from pathlib import Path

    inst = AllocationInstance.load(
        Path(__file__).parent / "data" / "ftf_cluster04_round_creep.json"
    )
    plain = _solve(inst, "ftf-perf", hot=False)
    hot = _solve(inst, "ftf-perf", hot=True)
    assert plain.extra["lp_solves"] >= 10
    assert hot.extra["lp_solves"] == 1
    check_agree(inst, "ftf-perf", hot)
    assert leq(hot.objective, plain.objective, 0.0)
    t = inst.throughputs
    alpha, beta = lp_module._ftf_alpha_beta(inst, t)
    active = inst.steps > 0
    # L: every job with steps left alone on its fastest type
    alone = float(np.max((beta + alpha / t.max(axis=1))[active]))
    assert within(hot.objective, alone, OPTIMALITY_GAP)


def _level_lp(inst: AllocationInstance, r: float) -> tuple[Any, Any, Any]:
    """The ``ftf-perf`` LP of ``inst`` at level ``r``, solved cold: (solution, aux, classes)."""
    t = inst.throughputs
    alpha, beta = lp_module._ftf_alpha_beta(inst, t)
    active = inst.steps > 0
    cl = _classes_of(inst)
    coef = (t / alpha[:, None])[cl.rep]
    beta_c, active_c = beta[cl.rep], active[cl.rep]
    aux = np.where(active_c, 1.0 / np.where(active_c, r - beta_c, 1.0), 0.0)
    lp = lp_module._program(cl, lp_module._base(cl), coef, aux)
    return solve_matrix(lp, options=dict(lp_module.HIGHS_OPTIONS)), aux, cl


def test_the_level_slope_from_the_duals_is_the_finite_difference() -> None:
    """d lambda / d r from the fairness rows' duals against a forward difference of two LPs,
    at the lower end and on both sides of the optimum of a cluster04 round whose bottleneck is
    not the lower end."""
    from pathlib import Path

    inst = AllocationInstance.load(
        Path(__file__).parent / "data" / "ftf_cluster04_round_newton.json"
    )
    res = _solve(inst, "ftf-perf", hot=False)
    assert res.bound is not None
    t = inst.throughputs
    alpha, beta = lp_module._ftf_alpha_beta(inst, t)
    active = inst.steps > 0
    lower = float(np.max((beta + alpha / t.max(axis=1))[active]))
    assert lower < res.bound * (1 - 1e-4)  # the lower end is not the optimum here
    for r in (lower, res.objective * (1 - 1e-3), res.objective * (1 + 1e-2)):
        sol, aux, cl = _level_lp(inst, r)
        lam = sol.result.objective
        slope = lp_module._level_slope(sol, aux, cl, lam)
        h = r * 1e-7
        ahead, _, _ = _level_lp(inst, r + h)
        difference = (ahead.result.objective - lam) / h
        assert slope is not None and slope > 0
        assert within(slope, difference, 1e-3)


def test_newton_levels_close_a_round_in_fewer_lps() -> None:
    """The same round: the plain path's secant takes 8 LPs or more, Newton's steps from the
    lower end (where lambda < 1) at most 6, to the same certified objective."""
    from pathlib import Path

    inst = AllocationInstance.load(
        Path(__file__).parent / "data" / "ftf_cluster04_round_newton.json"
    )
    plain = _solve(inst, "ftf-perf", hot=False)
    hot = _solve(inst, "ftf-perf", hot=True)
    assert plain.extra["lp_solves"] >= 8
    assert hot.extra["lp_solves"] <= 6
    check_agree(inst, "ftf-perf", hot)
