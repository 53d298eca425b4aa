"""The shared result records: ``ExactResult``, ``Report`` and ``Violation``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

from optsched._json import dumps
from optsched.errors import InvalidScheduleError, NotOptimalError
from optsched.results import ExactResult, Report, Violation
from optsched.solvers.result import SolutionStatus, SolveResult, Status, TerminationCondition


def _solve(
    termination: TerminationCondition = TerminationCondition.OPTIMAL,
    solution: SolutionStatus = SolutionStatus.OPTIMAL,
    objective: float | None = 10.0,
    bound: float | None = 10.0,
    gap: float | None = 0.0,
) -> SolveResult:
    return SolveResult(
        termination=termination,
        solution_status=solution,
        objective=objective,
        bound=bound,
        gap=gap,
        build_seconds=0.25,
        solve_seconds=1.5,
        solver="highs",
        solver_version="1.0",
        native_status="kOptimal",
        message="m",
    )


@dataclass(frozen=True)
class _Sol:
    rows: tuple[tuple[str, int], ...] = (("j0", 1), ("j1", 2))

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [list(r) for r in self.rows]}

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["job", "count"])


STOPPED = _solve(
    TerminationCondition.TIME_LIMIT, SolutionStatus.FEASIBLE, objective=12.0, bound=10.0, gap=0.2
)
GAP_STOPPED = _solve(
    TerminationCondition.GAP_LIMIT, SolutionStatus.FEASIBLE, objective=12.0, bound=10.0, gap=0.2
)
NOTHING = _solve(
    TerminationCondition.TIME_LIMIT, SolutionStatus.NO_SOLUTION, objective=None, bound=5.0, gap=None
)
INFEASIBLE = _solve(
    TerminationCondition.INFEASIBLE,
    SolutionStatus.NO_SOLUTION,
    objective=None,
    bound=None,
    gap=None,
)


def test_from_solve_copies_every_figure() -> None:
    res = ExactResult.from_solve(
        _solve(),
        _Sol(),
        sense="max",
        objective_name="utility",
        lp_bound=11.0,
        size={"variables": 7},
        extra={"admitted": 2},
    )
    assert res.status is Status.OPTIMAL and res.optimal and res.has_solution
    assert (res.objective, res.bound, res.gap, res.lp_bound) == (10.0, 10.0, 0.0, 11.0)
    assert (res.build_seconds, res.solve_seconds) == (0.25, 1.5)
    assert (res.solver, res.solver_version, res.native_status, res.message) == (
        "highs",
        "1.0",
        "kOptimal",
        "m",
    )
    assert res.termination is TerminationCondition.OPTIMAL
    assert res.sense == "max" and res.objective_name == "utility"
    assert dict(res.size) == {"variables": 7} and dict(res.extra) == {"admitted": 2}


def test_require_returns_an_optimal_result() -> None:
    res = ExactResult.from_solve(_solve(), _Sol(), sense="min")
    assert res.require() is res
    assert res.require(accept_feasible=True) is res


@pytest.mark.parametrize("solve", [STOPPED, GAP_STOPPED], ids=["time", "gap"])
def test_require_refuses_a_stopped_solve_unless_accepted(solve: SolveResult) -> None:
    res = ExactResult.from_solve(solve, _Sol(), sense="min")
    assert res.status is Status.FEASIBLE and not res.optimal
    with pytest.raises(NotOptimalError) as info:
        res.require()
    assert info.value.result is res
    assert info.value.result.solution == _Sol()  # the incumbent is carried, never lost
    assert "incumbent 12" in str(info.value) and "--accept-feasible" in str(info.value)
    assert res.require(accept_feasible=True) is res


@pytest.mark.parametrize("solve", [NOTHING, INFEASIBLE], ids=["no-solution", "infeasible"])
def test_require_refuses_a_result_without_solution_even_if_accepted(solve: SolveResult) -> None:
    res = ExactResult.from_solve(solve, None, sense="min")
    for accept in (False, True):
        with pytest.raises(NotOptimalError) as info:
            res.require(accept_feasible=accept)
        assert info.value.result is res


def test_feasible_status_without_a_solution_is_refused() -> None:
    res = ExactResult.from_solve(STOPPED, None, sense="min")
    with pytest.raises(NotOptimalError):
        res.require(accept_feasible=True)


def test_to_dict_is_json_ready_and_complete() -> None:
    res = ExactResult.from_solve(
        STOPPED, _Sol(), sense="min", objective_name="jct", size={"vars": 3}, extra={"k": 1}
    )
    d = res.to_dict()
    assert d["status"] == "feasible" and d["optimal"] is False
    assert d["termination"] == "time_limit"
    assert (d["objective"], d["bound"], d["gap"]) == (12.0, 10.0, 0.2)
    assert d["solution"] == {"rows": [["j0", 1], ["j1", 2]]}
    assert d["size"] == {"vars": 3} and d["k"] == 1
    assert json.loads(dumps(d)) == d
    summary = res.summary()
    assert "solution" not in summary and "size" not in summary and summary["k"] == 1


def test_extra_cannot_replace_the_solution() -> None:
    res = ExactResult.from_solve(_solve(), _Sol(), sense="min", extra={"solution": "forged"})
    assert res.to_dict()["solution"] == _Sol().to_dict()


def test_to_frame_is_the_solution_rows_or_the_summary() -> None:
    with_rows = ExactResult.from_solve(_solve(), _Sol(), sense="min").to_frame()
    assert list(with_rows.columns) == ["job", "count"] and len(with_rows) == 2
    summary = ExactResult.from_solve(NOTHING, None, sense="min").to_frame()
    assert len(summary) == 1
    assert summary.loc[0, "status"] == "limit_no_solution"


def test_repr_is_short_and_html_is_escaped() -> None:
    big = _Sol(rows=tuple((f"j{i}", i) for i in range(10_000)))
    res = ExactResult.from_solve(_solve(), big, sense="min", objective_name="<b>x</b>")
    text = repr(res)
    assert len(text) < 300
    assert "optimal" in text and "objective=10" in text and "_Sol" in text
    html = res._repr_html_()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


# ------------------------------------------------------------------------------------------
# Report and Violation
# ------------------------------------------------------------------------------------------


def test_violation_to_dict_and_str() -> None:
    v = Violation("worker_capacity", "server 2 slot 3 uses 9 > 8", {"server": 2, "slot": 3}, 1.0)
    assert str(v) == "[worker_capacity] server 2 slot 3 uses 9 > 8"
    assert v.to_dict() == {
        "constraint": "worker_capacity",
        "message": "server 2 slot 3 uses 9 > 8",
        "where": {"server": 2, "slot": 3},
        "amount": 1.0,
    }


def test_report_ok() -> None:
    rep = Report(objective=3.5, objectives={"a": 3.5, "b": None}, details={"loads": [1, 2]})
    assert rep.ok
    rep.raise_if_invalid()
    assert rep.to_dict() == {
        "valid": True,
        "objective": 3.5,
        "objectives": {"a": 3.5, "b": None},
        "violations": [],
        "loads": [1, 2],
    }
    frame = rep.to_frame()
    assert len(frame) == 0 and list(frame.columns) == ["constraint", "message", "amount"]
    assert repr(rep) == "Report(ok, objective=3.5)"
    assert "ok" in rep._repr_html_()


def test_report_with_violations() -> None:
    vs = [
        Violation("capacity", "too much", {"server": i, "slot": 0}, float(i)) for i in range(60)
    ] + [Violation("deadline", "<late>", {"job": 1})]
    rep = Report(violations=vs)
    assert not rep.ok
    with pytest.raises(InvalidScheduleError) as info:
        rep.raise_if_invalid()
    assert info.value.violations == vs
    assert "(+58 more)" in str(info.value)
    d = rep.to_dict()
    assert d["valid"] is False and len(d["violations"]) == 61
    assert json.loads(dumps(d)) == d
    frame = rep.to_frame()
    assert len(frame) == 61
    assert {"constraint", "message", "amount", "server", "slot", "job"} <= set(frame.columns)
    assert frame.loc[60, "job"] == 1 and pd.isna(frame.loc[60, "server"])
    assert repr(rep).startswith("Report(61 violation(s)")
    html = rep._repr_html_()
    assert "11 more" in html and "<late>" not in html
