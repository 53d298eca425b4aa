"""HiGHS against SCIP on the exact model of every MILP family.

For each family, small seeded instances from its ``generate_instance`` are built into the
family's model (a :class:`~optsched.solvers.LinearProgram` or a Pyomo model), solved through the
solver layer by both solvers, and checked: both prove optimality, the two optima agree within
:data:`~optsched.tolerances.SOLVER_AGREEMENT_TOL`, and both solutions, read back by the family's
own decoding, pass the family's independent validator with the value the solver reported.

The tests work at the model level (build function, solver layer, decoding), not through the
families' ``solve``, except for ANDREAS and Optimus, whose matrices are built inside their
formulation: their ``solve`` runs with ``solver=`` the solver under test, so the family's own
decoding and validation see each solver's point.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.solvers import seeds

from optsched.solvers import Status, solve, solve_matrix
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, SOLVER_AGREEMENT_TOL, within

pytestmark = [pytest.mark.solver("highs"), pytest.mark.solver("scip")]

SOLVERS = ("highs", "scip")

#: Few examples per family: each draws a seed for the family's own generator, and each example
#: solves a MILP twice.
EXAMPLES = settings(max_examples=4)


def _agree(values: dict[str, float]) -> None:
    """Both solvers' optima agree within the solver agreement tolerance."""
    assert within(values["scip"], values["highs"], SOLVER_AGREEMENT_TOL), values


# ----- Chronus: one lease boundary (matrix MILP, build_milp) ------------------------------


def _chronus_plan(instance: Any, cols: list[tuple[str, str, int, int]], x: Any) -> Any:
    """The lease plan of a solution of ``build_milp`` (columns: a, f, then the grants)."""
    from optsched.allocation.chronus.plan import LeasePlan

    n_s, n_b = len(instance.slo_jobs), len(instance.best_effort)
    admitted = tuple(j.job_id for i, j in enumerate(instance.slo_jobs) if x[i] > 0.5)
    grants = tuple(
        (job_id, ell, instance.gpu_types[k])
        for c, (_kind, job_id, ell, k) in enumerate(cols)
        if x[n_s + n_b + c] > 0.5
    )
    return LeasePlan(admitted=admitted, grants=grants, algorithm="milp")


@EXAMPLES
@given(seed=seeds, n_slo=st.integers(3, 6), n_be=st.integers(1, 3))
def test_chronus(seed: int, n_slo: int, n_be: int) -> None:
    from optsched.allocation.chronus import generate_instance, validate
    from optsched.allocation.chronus.milp import build_milp

    instance = generate_instance(
        n_slo, n_be, leases=4, gpu_types=("v100", "k80"), gpus=(4, 2), seed=seed
    )
    lp, cols = build_milp(instance)
    values: dict[str, float] = {}
    for solver in SOLVERS:
        sol = solve_matrix(lp, solver=solver)
        assert sol.result.status is Status.OPTIMAL and sol.result.solver == solver
        assert sol.x is not None
        report = validate(instance, _chronus_plan(instance, cols, sol.x))
        assert report.ok, report.violations
        assert report.objective is not None
        assert within(report.objective, sol.result.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = report.objective
    _agree(values)


# ----- ANDREAS and Optimus: matrices built inside solve, the solver passed by name --------


def _matrix_family(
    module_name: str,
    instance: Any,
    validate: Callable[[Any, Any], Any],
) -> dict[str, float]:
    """Solve with every solver, validate each solution, check the optima agree; the optima."""
    module = importlib.import_module(module_name)
    values: dict[str, float] = {}
    for solver in SOLVERS:
        res = module.solve(instance, solver=solver)
        assert res.status is Status.OPTIMAL and res.objective is not None
        if instance.n_jobs:
            assert res.solver == solver
        report = validate(instance, res.solution)
        assert report.ok, report.violations
        assert within(report.objective, res.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = report.objective
    _agree(values)
    return values


@EXAMPLES
@given(seed=seeds, n_jobs=st.integers(3, 7))
def test_andreas(seed: int, n_jobs: int) -> None:
    from optsched.allocation.andreas import generate_instance, validate

    instance = generate_instance(n_jobs, ("v100", "k80"), nodes=2, seed=seed)
    values = _matrix_family("optsched.allocation.andreas.milp", instance, validate)
    assert within(values["scip"], values["highs"], SOLVER_AGREEMENT_TOL), values


@EXAMPLES
@given(seed=seeds, n_jobs=st.integers(3, 7), kind=st.sampled_from(["async", "sync"]))
def test_optimus(seed: int, n_jobs: int, kind: str) -> None:
    from optsched.allocation.optimus import generate_instance, validate

    instance = generate_instance(n_jobs, kind=kind, max_tasks=4, seed=seed)  # type: ignore[arg-type]
    values = _matrix_family("optsched.allocation.optimus.total_time", instance, validate)
    assert within(values["scip"], values["highs"], SOLVER_AGREEMENT_TOL), values


# ----- A-Online: the time-indexed ILP (Pyomo, build_model) --------------------------------


@EXAMPLES
@given(seed=seeds, n_jobs=st.integers(2, 4))
def test_aonline(seed: int, n_jobs: int) -> None:
    from optsched.online.aonline import generate_instance
    from optsched.online.aonline.exact import _extract, _last_slots, _trim, build_model
    from optsched.online.aonline.schedule import AonlineSchedule, validate

    instance = generate_instance(n_jobs, max_work=4, seed=seed)
    values: dict[str, float] = {}
    for solver in SOLVERS:
        built = build_model(instance, "completion")
        res = solve(built.model, solver)
        assert res.status is Status.OPTIMAL and res.objective is not None
        runs = _trim(_extract(instance, built, None), _last_slots(built))
        report = validate(instance, AonlineSchedule(runs=tuple(runs), algorithm="exact"))
        assert report.ok, report.violations
        assert within(report.objective, res.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = res.objective
    _agree(values)


# ----- OASiS: the offline ILP (Pyomo, build_model) ----------------------------------------


@EXAMPLES
@given(seed=seeds, n_jobs=st.integers(2, 5))
def test_oasis(seed: int, n_jobs: int) -> None:
    from optsched.online.oasis import generate_instance, validate
    from optsched.online.oasis.offline import build_model, extract_schedule

    instance = generate_instance(n_jobs, worker_servers=2, ps_servers=1, horizon=8, seed=seed)
    values: dict[str, float] = {}
    for solver in SOLVERS:
        model = build_model(instance)
        res = solve(model, solver)
        assert res.status is Status.OPTIMAL and res.objective is not None
        report = validate(instance, extract_schedule(model, instance))
        assert report.ok, report.violations
        assert within(float(report.objective or 0.0), res.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = res.objective
    _agree(values)


# ----- Placement: every objective's formulation (Pyomo, build_model) ----------------------


#: Per objective, a cluster where that objective is not trivially 0: GPUs filled to 3/4
#: (``fill``), jobs wider than a server where traffic counts, whole jobs sharing servers where
#: interference counts (``clwp`` places every job whole on one server).
PLACEMENT_SHAPES: dict[str, dict[str, int]] = {
    "servers": {"gpus": 4, "max_workers": 3},
    "traffic": {"gpus": 2, "max_workers": 3},
    "max-load": {"gpus": 2, "max_workers": 3},
    "interference": {"gpus": 4, "max_workers": 2},
    "clwp": {"gpus": 4, "max_workers": 2},
}


# Fixed seeds rather than drawn ones: the traffic formulations' solve time varies a hundredfold
# between seeds of the same size, and these stay well under a second.
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("objective", sorted(PLACEMENT_SHAPES))
def test_placement(seed: int, objective: str) -> None:
    from optsched.placement.exact import build_model
    from optsched.placement.instance import generate_instance
    from optsched.placement.validator import validate

    instance = generate_instance(3, racks=2, fill=0.75, seed=seed, **PLACEMENT_SHAPES[objective])
    values: dict[str, float] = {}
    for solver in SOLVERS:
        built = build_model(instance, objective)
        res = solve(built.model, solver)
        assert res.status is Status.OPTIMAL and res.objective is not None
        report = validate(instance, built.decode(), objective)
        assert report.ok, report.violations
        assert report.objective is not None
        assert within(report.objective, res.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = report.objective
    assert values["highs"] > 0  # the shape makes the objective count something
    _agree(values)


# ----- The simulator's exact round model (Pyomo, build_model) -----------------------------


@pytest.mark.parametrize("objective", ["weighted-jct", "makespan", "deadlines"])
@settings(max_examples=2)
@given(seed=seeds, n_jobs=st.integers(3, 5))
def test_sim_exact(seed: int, n_jobs: int, objective: str) -> None:
    from optsched.sim import replay_rounds, validate
    from optsched.sim.optimum.exact import build_model, objective_value
    from optsched.sim.world.generate import generate_instance

    # Short jobs (about 150 s) arriving about a minute apart, in one-minute rounds: a dozen to
    # two dozen rounds; half the jobs carry a deadline.
    world = generate_instance(
        n_jobs,
        "v100=4,k80=2",
        seed=seed,
        mu=5.0,
        sigma=0.5,
        mean_interarrival=60.0,
        deadline_fraction=0.5,
    )
    round_seconds = 60.0
    values: dict[str, float] = {}
    for solver in SOLVERS:
        built = build_model(world, round_seconds, objective)
        res = solve(built.model, solver)
        assert res.status is Status.OPTIMAL and res.objective is not None
        record = replay_rounds(world, built.plan(), round_seconds)
        assert record.all_finished
        report = validate(world, record)
        assert report.ok, report.violations
        value = objective_value(world, record, objective)
        assert within(value, res.objective, OBJECTIVE_AGREEMENT_TOL)
        values[solver] = value
    _agree(values)
