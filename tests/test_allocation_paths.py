"""The fast paths of the allocation LPs against the slow ones they replace: grouping rows by a
lexsort against ``np.unique``, the column-by-column CSC layout against sorted triplets, and
finish-time fairness's one-LP certificate (no job has waited) and Dinkelbach lower bound against
the declarative cvxpy twin."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies.allocation import waited_rounds

from optsched.allocation.gavel import AllocationInstance, AllocationJob, solve, validate
from optsched.allocation.gavel.lp import _base, _classes, _ftf_alpha_beta, _program, _unique_rows
from optsched.allocation.gavel.twin import solve_twin
from optsched.tolerances import OPTIMALITY_GAP, leq, within

pytestmark = pytest.mark.solver("highs")

TWIN_TOL = 1e-4  # the conic twin's accuracy (see tests/test_allocation.py)


@given(
    rows=st.lists(
        st.lists(st.sampled_from([0.0, 1.0, 2.5, -3.0]), min_size=3, max_size=3),
        min_size=0,
        max_size=30,
    )
)
def test_unique_rows_matches_numpy(rows: list[list[float]]) -> None:
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    first, inverse, counts = _unique_rows(table)
    if not rows:
        assert first.size == inverse.size == counts.size == 0
        return
    _, ref_first, ref_inverse, ref_counts = np.unique(
        table, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    assert first.tolist() == ref_first.tolist()
    assert inverse.tolist() == ref_inverse.ravel().tolist()
    assert counts.tolist() == ref_counts.tolist()
    assert np.array_equal(table[first][inverse], table)


@given(inst=waited_rounds(waited=True))
@settings(max_examples=15)
def test_direct_csc_layout_equals_sorted_triplets(inst: AllocationInstance) -> None:
    cl = _classes(inst, inst.throughputs)
    base = _base(cl)
    coef = inst.throughputs[cl.rep] * 1.5
    aux = np.linspace(0.5, 2.0, cl.n)
    for c, a in ((coef, aux), (None, None)):
        fast = _program(cl, base, c, a)
        slow = _program(cl, dataclasses.replace(base, standard=False), c, a)
        assert np.array_equal(fast.a.toarray(), slow.a.toarray())
        assert np.array_equal(fast.row_upper, slow.row_upper)


@given(inst=waited_rounds(waited=False))
@settings(max_examples=12)
def test_ftf_with_no_waiting_is_certified_by_one_lp(inst: AllocationInstance) -> None:
    """t_m = 0 for all: lambda(r) scales with r, so the first LP closes the bracket."""
    assume((inst.steps > 0).any())
    res = solve(inst, "ftf-perf")
    assert res.optimal and res.extra["lp_solves"] <= 1  # 0 when the first bracket is closed
    assert validate(inst, res.solution, "ftf-perf").ok
    twin, _ = solve_twin(inst, "ftf-perf")
    assert within(res.objective, twin, TWIN_TOL)
    assert leq(res.objective, twin, OPTIMALITY_GAP)


@given(inst=waited_rounds(waited=True), policy=st.sampled_from(["ftf-perf", "ftf"]))
@settings(max_examples=12)
def test_ftf_lower_bound_never_exceeds_the_optimum(inst: AllocationInstance, policy: str) -> None:
    """The Dinkelbach bound r / lambda(r) is proven: it never passes the twin's optimum."""
    assume((inst.steps > 0).any())
    res = solve(inst, policy)
    twin, _ = solve_twin(inst, policy)
    assert res.bound is not None
    assert leq(res.bound, twin, TWIN_TOL)
    assert leq(res.bound, res.objective, OPTIMALITY_GAP)
    assert within(res.objective, twin, TWIN_TOL)


def test_ftf_bottleneck_at_the_lower_end_is_certified_in_two_lps() -> None:
    """A round of the ElasticFlow trace cluster04 under ftf-perf (as the simulator built it):
    a job that has waited long bounds r* by its best-alone rho, the bracket's lower end.
    Dinkelbach steps approach that level only geometrically (they hit the 200-step cap with a
    gap of 8e-6 here); testing the lower end certifies it with the second LP."""
    inst = AllocationInstance.load(Path(__file__).parent / "data" / "ftf_cluster04_round.json")
    res = solve(inst, "ftf-perf")
    assert res.optimal and res.extra["lp_solves"] <= 2
    t, alpha_beta = inst.throughputs, _ftf_alpha_beta(inst, inst.throughputs)
    alone = np.max(alpha_beta[1] + alpha_beta[0] / t.max(axis=1))
    assert within(res.objective, float(alone), OPTIMALITY_GAP)
    twin, _ = solve_twin(inst, "ftf-perf")
    assert within(res.objective, twin, TWIN_TOL)
    assert leq(res.objective, twin, OPTIMALITY_GAP)


@given(inst=waited_rounds(waited=True))
@settings(max_examples=10)
def test_ftf_level_search_stays_short(inst: AllocationInstance) -> None:
    """The safeguarded secant halves the bracket at least every three LPs: far below the cap."""
    assume((inst.steps > 0).any())
    res = solve(inst, "ftf-perf")
    assert res.optimal and res.extra["lp_solves"] <= 40


def test_model_copy_does_not_carry_cached_arrays() -> None:
    inst = AllocationInstance(
        gpu_types=("v100",),
        capacity=(2,),
        jobs=[AllocationJob(job_id=f"j{i}", throughput_steps_per_s=(1.0 + i,)) for i in range(3)],
    )
    assert inst.throughputs.shape == (3, 1)
    fewer = inst.model_copy(update={"jobs": inst.jobs[:2]})
    assert fewer.throughputs.tolist() == [[1.0], [2.0]]
    assert fewer.job_ids == ("j0", "j1")


def test_agnostic_ftf_round_of_a_gavel_trace_is_certified() -> None:
    """A round of the agnostic ``ftf`` policy on 40 jobs of Gavel's msr trace (16 active) once
    ran out of steps at a gap of 7e-4; its level search must certify it, and the cvxpy twin
    agree."""
    inst = AllocationInstance.load(Path(__file__).parent / "data" / "ftf_msr_round_agnostic.json")
    res = solve(inst, "ftf")
    assert res.optimal and res.extra["lp_solves"] < 50
    twin, _ = solve_twin(inst, "ftf")
    assert within(res.objective, twin, TWIN_TOL)
    assert leq(res.objective, twin, OPTIMALITY_GAP)
