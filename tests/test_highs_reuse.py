"""A reused HiGHS object ends every solve as a new one would, whatever ran on it before.

:data:`optsched.solvers.highs.REUSE_HIGHS` keeps one cleared ``Highs`` per thread for LPs.
``Highs.clear`` resets the model, the solution, the basis and every option, but not the run
clock that ``time_limit`` is checked against: without
:func:`~optsched.solvers.highs.run_clock_offset`, a limit smaller than the time of all earlier
runs stopped the next solve before its first iteration, and
:func:`optsched.sim.optimum.bounds.bound`
then fell back, silently, to a weaker relaxation. The tests here load the reused object with a
long run first (a run that stops at its own time limit, so the clock it leaves does not depend
on the machine's speed), then check that limited solves are still the solves they would be in
a new process.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from strategies.solvers import bounded_lps

from optsched import sim
from optsched.errors import NotOptimalError
from optsched.sim.optimum.bounds import bound
from optsched.solvers import highs as highs_module
from optsched.solvers.highs import LinearProgram, run_clock_offset
from optsched.solvers.matrix import solve_matrix
from optsched.solvers.result import TerminationCondition

pytestmark = pytest.mark.solver("highs")

#: Seconds of run clock left on the reused object before the limited solves. The limited solves
#: get less than this, far more than they need (milliseconds of work each).
LOADED_SECONDS = 2.0
LIMIT_SECONDS = 1.5


def _long_lp() -> LinearProgram:
    """An LP the simplex needs tens of seconds for (it is stopped at its time limit)."""
    n, m = 3000, 2000
    a = sp.random(m, n, density=0.01, random_state=0, format="csc")
    return LinearProgram(-np.ones(n), a, np.full(m, -np.inf), np.ones(m), 0.0, 1.0)


def _reused() -> object:
    h = getattr(highs_module._reusable, "highs", None)
    assert h is not None, "no LP has been solved on this thread's reusable object yet"
    return h


def _load_the_clock() -> None:
    """Run the reused object for LOADED_SECONDS of its own clock (once: the clock only grows)."""
    h = getattr(highs_module._reusable, "highs", None)
    if h is not None and run_clock_offset(h) >= LOADED_SECONDS:
        return
    with pytest.raises(NotOptimalError) as stopped:
        solve_matrix(_long_lp(), time_limit=LOADED_SECONDS)
    assert stopped.value.result.termination is TerminationCondition.TIME_LIMIT
    assert run_clock_offset(_reused()) >= LOADED_SECONDS


def _tiny_lp() -> LinearProgram:
    a = np.array([[1.0, 2.0], [3.0, 1.0]])
    return LinearProgram(np.array([-1.0, -1.0]), a, np.full(2, -np.inf), np.array([4.0, 6.0]))


@pytest.fixture
def reused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(highs_module, "REUSE_HIGHS", True)


@pytest.mark.usefixtures("reused")
def test_a_time_limit_counts_only_its_own_solve_after_a_long_run() -> None:
    _load_the_clock()
    sol = solve_matrix(_tiny_lp(), time_limit=LIMIT_SECONDS)
    assert sol.result.termination is TerminationCondition.OPTIMAL
    assert sol.result.objective == pytest.approx(-2.8)


@pytest.mark.usefixtures("reused")
def test_a_time_limit_given_as_an_option_counts_only_its_own_solve() -> None:
    _load_the_clock()
    sol = solve_matrix(_tiny_lp(), options={"time_limit": LIMIT_SECONDS})
    assert sol.result.termination is TerminationCondition.OPTIMAL


@pytest.mark.usefixtures("reused")
def test_a_bound_after_a_long_run_is_the_bound_of_a_new_process() -> None:
    world = sim.generate_instance(12, "v100=2,k80=2", seed=3)
    first = bound(world, "weighted-jct")  # no limit: the reference
    assert first.complete and first.method == "interval-lp"
    _load_the_clock()
    again = bound(world, "weighted-jct", time_limit=LIMIT_SECONDS)
    assert again.complete, again.notes
    assert again.method == first.method
    assert again.value == pytest.approx(first.value, rel=1e-9)


def _others() -> st.SearchStrategy[list[tuple[LinearProgram, dict[str, object]]]]:
    """Earlier solves, each with options that would change the next one's outcome if kept."""
    options = st.sampled_from(
        [
            {},
            {"simplex_iteration_limit": 0},
            {"presolve": "off"},
            {"solver": "ipm"},
            {"time_limit": 1e-6},
            {"objective_bound": -1e9},
            {"primal_feasibility_tolerance": 1e-3},
        ]
    )
    return st.lists(st.tuples(bounded_lps(), options), max_size=4)


@given(target=bounded_lps(), others=_others(), warm=st.booleans())
def test_a_solve_ends_as_on_a_new_object_after_any_other_solves(
    target: LinearProgram, others: list[tuple[LinearProgram, dict[str, object]]], warm: bool
) -> None:
    saved = highs_module.REUSE_HIGHS
    try:
        highs_module.REUSE_HIGHS = False
        fresh = solve_matrix(target, accept_feasible=True)
        highs_module.REUSE_HIGHS = True
        previous = None
        for lp, opts in others:
            try:
                previous = solve_matrix(lp, options=dict(opts), accept_feasible=True)
            except NotOptimalError:
                previous = None
        # a warm start from a model of another size is not used, and nothing else carries over
        start = None
        if warm and previous is not None and previous.x is not None:
            start = previous if previous.x.size != target.n_variables else None
        reused = solve_matrix(target, accept_feasible=True, warm_start=start, time_limit=60.0)
    finally:
        highs_module.REUSE_HIGHS = saved
    assert reused.result.termination is fresh.result.termination
    assert reused.result.objective == pytest.approx(fresh.result.objective, rel=1e-9, abs=1e-9)
    if start is None:
        # nothing carried over: the very same simplex path
        assert reused.iterations == fresh.iterations


@pytest.mark.usefixtures("reused")
@pytest.mark.parametrize("policy", ["max-min-perf", "ftf-perf", "max-sum-throughput-perf"])
def test_an_allocation_lp_after_a_long_run_is_the_lp_of_a_new_process(policy: str) -> None:
    from optsched.allocation import gavel

    instance = gavel.generate_instance(8, seed=1)
    first = gavel.solve(instance, policy)
    _load_the_clock()
    again = gavel.solve(instance, policy, time_limit=LIMIT_SECONDS)
    assert again.status == first.status
    assert again.objective == pytest.approx(first.objective, rel=1e-9, abs=1e-12)
