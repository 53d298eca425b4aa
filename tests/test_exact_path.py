"""The one exact-solve path (optsched.family.exact): its trust rule, and every family through it.

Every family's ``solve`` must reach :func:`~optsched.family.exact.exact_solve`, so a wrong
objective planted in any family (in its validation hook, or in the solver's result) raises the
same :class:`~optsched.errors.InconsistentResultError` from the same rule,
:func:`~optsched.family.exact.check_agreement`.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.errors import InconsistentResultError, InvalidInstanceError, NotOptimalError
from optsched.family import exact as exact_path
from optsched.family.exact import (
    check_agreement,
    check_solve_options,
    closed_form,
    refuse_unused,
)
from optsched.results import ExactResult
from optsched.solvers.result import Status, TerminationCondition
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

# -- every family's exact solve, in one place -------------------------------------------------


def _sim_world() -> Any:
    from strategies.sim import job_frame, synthetic_throughputs

    from optsched.sim import ClusterSpec, GpuType, World

    rows = [
        {"arrival": float(a), "model": m, "duration": d, "weight": w, "deadline": a + 1.5 * d}
        for a, m, d, w in [(0, "A", 17.0, 1.0), (0, "B", 9.0, 2.0), (1, "A", 23.0, 1.0)]
    ]
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="fast", count=1, gpus_per_server=1),
            GpuType(name="slow", count=2, gpus_per_server=2),
        )
    )
    return World.from_frame(job_frame(rows), cluster, synthetic_throughputs())


@dataclass(frozen=True)
class Case:
    """One family's exact solve: its module (with ``formulation``) and a call on a small input."""

    family: str
    module: str
    call: Callable[..., ExactResult[Any]]
    validate: Callable[[Any], Any]

    def __str__(self) -> str:
        return self.family


def _cases() -> list[Case]:
    from optsched.allocation import andreas, chronus, gavel, optimus
    from optsched.comm import pace, tensorlights
    from optsched.online import aonline, oasis
    from optsched.placement import exact as placement_exact
    from optsched.placement import generate_instance as placement_instance
    from optsched.placement import validate as placement_validate
    from optsched.sim import validate as sim_validate
    from optsched.sim.optimum import exact as sim_exact

    o_inst = oasis.generate_instance(3, worker_servers=1, ps_servers=1, horizon=4, seed=1)
    a_inst = aonline.generate_instance(3, seed=1)
    p_inst = placement_instance(3, n_servers=3, gpus=4, seed=3)
    op_inst = optimus.generate_instance(4, seed=0)
    g_inst = gavel.generate_instance(6, seed=0)
    c_inst = chronus.generate_instance(4, 2, leases=4, seed=0)
    an_inst = andreas.generate_instance(4, seed=0)
    t_inst = tensorlights.generate_instance(2, 3, seed=0)
    pc_inst = pace.CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10)
    world = _sim_world()
    return [
        Case(
            "oasis",
            "optsched.online.oasis.offline",
            lambda **kw: oasis.solve(o_inst, **kw),
            lambda s: oasis.validate(o_inst, s),
        ),
        Case(
            "aonline",
            "optsched.online.aonline.offline",
            lambda **kw: aonline.solve(a_inst, **kw),
            lambda s: aonline.validate(a_inst, s),
        ),
        Case(
            "placement",
            "optsched.placement.exact",
            lambda **kw: placement_exact.solve(p_inst, "traffic", **kw),
            lambda s: placement_validate(p_inst, s, "traffic"),
        ),
        Case(
            "optimus",
            "optsched.allocation.optimus.total_time",
            lambda **kw: optimus.solve(op_inst, **kw),
            lambda s: optimus.validate(op_inst, s),
        ),
        Case(
            "gavel",
            "optsched.allocation.gavel.exact",
            lambda **kw: gavel.solve(g_inst, "max-min-perf", **kw),
            lambda s: gavel.validate(g_inst, s, "max-min-perf"),
        ),
        Case(
            "chronus",
            "optsched.allocation.chronus.milp",
            lambda **kw: chronus.solve(c_inst, **kw),
            lambda s: chronus.validate(c_inst, s),
        ),
        Case(
            "andreas",
            "optsched.allocation.andreas.milp",
            lambda **kw: andreas.solve(an_inst, **kw),
            lambda s: andreas.validate(an_inst, s),
        ),
        Case(
            "tensorlights",
            "optsched.comm.tensorlights.order",
            lambda **kw: tensorlights.solve(t_inst, "mean-jct", **kw),
            lambda s: tensorlights.validate(t_inst, s),
        ),
        Case(
            "pace",
            "optsched.comm.pace.solve",
            lambda **kw: pace.solve(pc_inst, **kw),
            lambda s: pace.validate(pc_inst, s),
        ),
        Case(
            "sim",
            "optsched.sim.optimum.exact",
            lambda **kw: sim_exact.solve(world, 8.0, "weighted-jct", matrix=False, **kw),
            lambda s: sim_validate(world, s),
        ),
        Case(
            "sim-matrix",
            "optsched.sim.optimum.exact_matrix",
            lambda **kw: sim_exact.solve(world, 8.0, "weighted-jct", **kw),
            lambda s: sim_validate(world, s),
        ),
    ]


CASES = _cases()


def _raised_by_the_rule(error: BaseException) -> bool:
    """Whether ``error`` was raised inside :func:`check_agreement` of the one path."""
    frames = traceback.extract_tb(error.__traceback__)
    return frames[-1].name == "check_agreement" and frames[-1].filename == exact_path.__file__


# -- every family goes through the one path ----------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_family_solves_through_the_path_and_validates(case: Case) -> None:
    res = case.call()
    assert res.optimal and res.solution is not None
    report = case.validate(res.solution)
    assert report.ok


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_wrong_recomputed_objective_is_the_same_error_in_every_family(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plant a validator value off by far more than the tolerance, in the family's hook."""
    module = importlib.import_module(case.module)
    original = module.formulation

    def planted(*args: Any, **kwargs: Any) -> Any:
        formulation = original(*args, **kwargs)
        honest = formulation.objective_of

        def off(solution: Any, report: Any) -> float:
            value = honest(solution, report)
            assert value is not None
            return value + 1000.0 * OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(value)) + 1.0

        return dataclasses.replace(formulation, objective_of=off)

    monkeypatch.setattr(module, "formulation", planted)
    with pytest.raises(InconsistentResultError, match="the solver reports objective") as info:
        case.call()
    assert _raised_by_the_rule(info.value)
    assert "OBJECTIVE_AGREEMENT_TOL" in str(info.value)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_wrong_solver_objective_is_the_same_error_in_every_family(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plant the solver's (or algorithm's) objective off by far more than the tolerance."""
    run, polish = exact_path._run, exact_path._polish

    def off(result: Any) -> Any:
        value = result.objective
        assert value is not None
        wrong = value - 1000.0 * OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(value)) - 1.0
        return dataclasses.replace(result, objective=wrong)

    def planted_run(*args: Any, **kwargs: Any) -> Any:
        result, point = run(*args, **kwargs)
        return off(result), point

    def planted_polish(*args: Any, **kwargs: Any) -> Any:
        result, point = polish(*args, **kwargs)
        return off(result), point

    monkeypatch.setattr(exact_path, "_run", planted_run)
    monkeypatch.setattr(exact_path, "_polish", planted_polish)
    with pytest.raises(InconsistentResultError, match="the solver reports objective") as info:
        case.call()
    assert _raised_by_the_rule(info.value)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_an_invalid_incumbent_is_an_error_in_every_family(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optsched.results import Report, Violation

    module = importlib.import_module(case.module)
    original = module.formulation

    def planted(*args: Any, **kwargs: Any) -> Any:
        formulation = original(*args, **kwargs)
        return dataclasses.replace(
            formulation, validate=lambda s: Report([Violation("planted", "broken on purpose")])
        )

    monkeypatch.setattr(module, "formulation", planted)
    with pytest.raises(InconsistentResultError, match="fails the independent validator"):
        case.call()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_objective_reported_is_the_solvers_never_the_recomputed(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recomputed value within the tolerance is accepted but never replaces the solver's."""
    honest = case.call()
    module = importlib.import_module(case.module)
    original = module.formulation

    def planted(*args: Any, **kwargs: Any) -> Any:
        formulation = original(*args, **kwargs)
        inner = formulation.objective_of

        def near(solution: Any, report: Any) -> float:
            value = inner(solution, report)
            assert value is not None
            return value + 0.4 * OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(value))

        return dataclasses.replace(formulation, objective_of=near)

    monkeypatch.setattr(module, "formulation", planted)
    res = case.call()
    assert res.objective is not None and honest.objective is not None
    assert within(res.objective, honest.objective, OBJECTIVE_AGREEMENT_TOL)
    planted_value = case.validate(res.solution).objective
    if planted_value is not None and math.isfinite(planted_value):
        # the reported objective is not the recomputed value shifted by the plant
        shifted = planted_value + 0.4 * OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(planted_value))
        assert res.objective != shifted


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_family_takes_the_common_vocabulary(case: Case) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        case.call(solver_options=["not", "a", "mapping"])
    assert info.value.field == "solver_options"
    with pytest.raises(InvalidInstanceError) as info:
        case.call(time_limit=-1.0)
    assert info.value.field == "time_limit"
    with pytest.raises(InvalidInstanceError) as info:
        case.call(threads=0)
    assert info.value.field == "threads"


# -- accepting an incumbent, stopping short ----------------------------------------------------


def test_accept_feasible_returns_a_validated_incumbent_of_a_milp() -> None:
    from optsched.online.oasis import generate_instance, solve, validate
    from optsched.online.oasis.online import OASiS

    # One node leaves this instance's gap at about 5% (HiGHS is deterministic).
    inst = generate_instance(12, 3, 3, 12, seed=2025)
    start = OASiS().run(inst).schedule
    # A node limit, not a time limit, so the outcome does not depend on the machine's speed.
    opts = {"mip_max_nodes": 1}
    with pytest.raises(NotOptimalError) as info:
        solve(inst, warm_start=start, solver_options=opts)
    res = solve(inst, warm_start=start, solver_options=opts, accept_feasible=True)
    assert res.status is Status.FEASIBLE and not res.optimal
    assert info.value.result.status is Status.FEASIBLE
    assert res.solution is not None
    report = validate(inst, res.solution)
    assert report.ok and report.objective is not None and res.objective is not None
    assert within(res.objective, report.objective, OBJECTIVE_AGREEMENT_TOL)


def test_accept_feasible_returns_a_validated_incumbent_of_a_search() -> None:
    from optsched.comm import tensorlights

    inst = tensorlights.generate_instance(2, 4, seed=1)
    res = tensorlights.solve(inst, node_limit=2, accept_feasible=True)
    assert res.status is Status.FEASIBLE and not res.optimal
    assert res.solution is not None and res.objective is not None
    report = tensorlights.validate(inst, res.solution)
    assert report.ok
    assert within(res.objective, report.objectives["mean-jct"], OBJECTIVE_AGREEMENT_TOL)


def test_a_time_limited_search_raises_carrying_its_incumbent() -> None:
    """A limit far below one simulation stops the search after its first order."""
    from optsched.comm import tensorlights

    inst = tensorlights.generate_instance(2, 4, seed=1)
    with pytest.raises(NotOptimalError) as info:
        tensorlights.solve(inst, time_limit=1e-12)
    result = info.value.result
    assert isinstance(result, ExactResult)
    assert result.termination is TerminationCondition.TIME_LIMIT
    assert result.status is Status.FEASIBLE and result.solution is not None
    assert tensorlights.validate(inst, result.solution).ok


def test_a_time_limited_milp_raises_carrying_an_exact_result() -> None:
    """A limit spent before the build's first stage: no solver point, still the family's
    result, whose incumbent is the family's seed (validated)."""
    from optsched.online.oasis import generate_instance, solve, validate

    inst = generate_instance(3, worker_servers=1, ps_servers=1, horizon=4, seed=1)
    with pytest.raises(NotOptimalError) as info:
        solve(inst, time_limit=1e-12)
    result = info.value.result
    assert isinstance(result, ExactResult)
    assert result.status is Status.FEASIBLE and result.solution is not None
    assert validate(inst, result.solution).ok and result.bound is None
    assert result.extra["incumbent_source"] in ("fifo", "drf", "rrh")
    assert result.termination is TerminationCondition.TIME_LIMIT
    assert result.objective_name == "total-utility" and result.sense == "max"


def test_optimus_does_not_swallow_a_stopped_solve() -> None:
    from optsched.allocation import optimus

    inst = optimus.generate_instance(10, seed=0)
    with pytest.raises(NotOptimalError) as info:
        optimus.solve(inst, node_limit=0)
    result = info.value.result
    assert isinstance(result, ExactResult) and not result.optimal
    # the solver had no point: the stopped solve keeps the marginal-gain seed, validated
    assert result.extra["incumbent_source"] == "marginal-gain"
    assert optimus.validate(inst, result.solution).ok


def test_a_milp_family_passes_another_solver_to_the_solver_layer() -> None:
    """``solver=`` reaches the solver layer, whose typed error names a solver it cannot use."""
    from optsched.allocation import chronus
    from optsched.errors import SolverUnavailableError

    inst = chronus.generate_instance(3, 2, leases=3, seed=0)
    with pytest.raises(SolverUnavailableError, match="glpk"):
        chronus.solve(inst, solver="glpk")


# -- the trust rule itself ---------------------------------------------------------------------


@pytest.mark.parametrize("sense", ["min", "max"])
@pytest.mark.parametrize("value", [0.0, 1e-3, 1.0, -7.5, 1e6, -3e9])
def test_the_rule_accepts_agreement_within_the_tolerance(sense: str, value: float) -> None:
    slack = OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(value))
    for solver in (value, value + 0.99 * slack, value - 0.99 * slack):
        check_agreement(solver, value, sense)  # type: ignore[arg-type]


@pytest.mark.parametrize("sense", ["min", "max"])
@pytest.mark.parametrize("value", [0.0, 1e-3, 1.0, -7.5, 1e6, -3e9])
def test_the_rule_refuses_disagreement_beyond_the_tolerance(sense: str, value: float) -> None:
    """Overstating and understating are equally wrong, whatever the sense."""
    slack = OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(value))
    for solver in (value + 1.01 * slack, value - 1.01 * slack):
        with pytest.raises(InconsistentResultError) as info:
            check_agreement(solver, value, sense)  # type: ignore[arg-type]
        assert f"({sense})" in str(info.value) and repr(value) in str(info.value)


@pytest.mark.parametrize("sense", ["min", "max"])
def test_the_rule_names_which_side_the_solver_errs_on(sense: str) -> None:
    better = "higher" if sense == "max" else "lower"
    worse = "lower" if sense == "max" else "higher"
    with pytest.raises(InconsistentResultError, match=f"the solver's is {better}"):
        check_agreement(11.0 if sense == "max" else 9.0, 10.0, sense)  # type: ignore[arg-type]
    with pytest.raises(InconsistentResultError, match=f"the solver's is {worse}"):
        check_agreement(9.0 if sense == "max" else 11.0, 10.0, sense)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("solver", "recomputed"),
    [(None, 1.0), (1.0, None), (math.nan, 1.0), (1.0, math.nan), (math.inf, 1.0)],
)
def test_the_rule_refuses_missing_or_non_numbers(
    solver: float | None, recomputed: float | None
) -> None:
    with pytest.raises(InconsistentResultError):
        check_agreement(solver, recomputed, "min")


def test_the_rule_accepts_equal_infinities() -> None:
    """A makespan of a job that gets nothing is infinite by definition for both sides."""
    check_agreement(math.inf, math.inf, "min")


def test_the_rule_refuses_an_unknown_sense() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        check_agreement(1.0, 1.0, "up")  # type: ignore[arg-type]
    assert info.value.field == "sense"


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.sampled_from(["min", "max"]),
)
def test_the_rule_is_the_named_tolerance(x: float, sense: str) -> None:
    scale = max(1.0, abs(x))
    check_agreement(x + 0.5 * OBJECTIVE_AGREEMENT_TOL * scale, x, sense)  # type: ignore[arg-type]
    with pytest.raises(InconsistentResultError):
        check_agreement(x + 2 * OBJECTIVE_AGREEMENT_TOL * scale, x, sense)  # type: ignore[arg-type]


# -- options and helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"solver": ""}, "solver"),
        ({"solver": 3}, "solver"),
        ({"solver_options": {1: 2}}, "solver_options"),
        ({"solver_options": "mip_max_nodes=1"}, "solver_options"),
        ({"accept_feasible": "yes"}, "accept_feasible"),
        ({"mip_gap": -0.1}, "mip_gap"),
        ({"time_limit": math.inf}, "time_limit"),
        ({"threads": True}, "threads"),
    ],
)
def test_options_are_refused_by_name(kwargs: dict[str, Any], field: str) -> None:
    options: dict[str, Any] = {
        "time_limit": None,
        "mip_gap": None,
        "threads": None,
        "solver": "highs",
        "solver_options": None,
        "accept_feasible": False,
    }
    options.update(kwargs)
    with pytest.raises(InvalidInstanceError) as info:
        check_solve_options(**options)
    assert info.value.field == field


def test_options_come_back_as_a_fresh_dict() -> None:
    native = {"mip_max_nodes": 1}
    out = check_solve_options(
        time_limit=None,
        mip_gap=None,
        threads=None,
        solver="highs",
        solver_options=native,
        accept_feasible=False,
    )
    assert out == native and out is not native


def test_an_algorithmic_family_refuses_solver_options_it_cannot_use() -> None:
    from optsched.comm import pace

    inst = pace.CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10)
    for name, value in (("mip_gap", 0.1), ("threads", 2), ("solver_options", {"a": 1})):
        with pytest.raises(InvalidInstanceError) as info:
            pace.solve(inst, **{name: value})
        assert info.value.field == name
    refuse_unused("x", threads=None)


def test_a_closed_form_answer_is_proven_and_still_validated() -> None:
    from optsched.family.exact import Formulation, exact_solve
    from optsched.results import Report

    seen: list[Any] = []

    def check(solution: Any) -> Report:
        seen.append(solution)
        return Report(objective=2.5)

    formulation: Formulation[str] = Formulation(
        sense="max",
        objective_name="value",
        build=lambda clock: closed_form(2.5, "answer", name="formula"),
        extract=lambda _model, payload: payload,
        validate=check,
    )
    res = exact_solve(formulation)
    assert res.optimal and res.objective == 2.5 and res.bound == 2.5 and res.gap == 0.0
    assert res.solution == "answer" and seen == ["answer"] and res.solver == "formula"
    wrong = dataclasses.replace(formulation, validate=lambda s: Report(objective=3.0))
    with pytest.raises(InconsistentResultError):
        exact_solve(wrong)


#: The families whose exact model is a Pyomo MILP, and those built as matrices.
PYOMO_MILP = ("oasis", "aonline", "placement", "sim")
MATRIX_MILP = ("optimus", "chronus", "andreas")


@pytest.mark.solver("scip")
@pytest.mark.parametrize("case", [c for c in CASES if c.family in PYOMO_MILP], ids=str)
def test_a_pyomo_milp_family_solves_with_scip_like_with_highs(case: Case) -> None:
    highs, scip = case.call(), case.call(solver="scip")
    assert scip.optimal and scip.solver == "scip"
    assert highs.objective is not None and scip.objective is not None
    assert within(scip.objective, highs.objective, OBJECTIVE_AGREEMENT_TOL)


@pytest.mark.parametrize("case", [c for c in CASES if c.family in MATRIX_MILP], ids=str)
def test_a_matrix_milp_family_passes_scip_to_the_matrix_layer(case: Case) -> None:
    """The matrix layer either solves with SCIP or refuses it with its typed error."""
    from optsched.errors import SolverUnavailableError

    highs = case.call()
    try:
        scip = case.call(solver="scip")
    except SolverUnavailableError as err:
        assert "scip" in str(err)
        return
    assert scip.optimal and scip.objective is not None and highs.objective is not None
    assert within(scip.objective, highs.objective, OBJECTIVE_AGREEMENT_TOL)
