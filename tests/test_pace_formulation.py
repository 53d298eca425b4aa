"""The time-indexed transportation LP: optimum, integrality, total unimodularity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.pace import float_jobs, integer_jobs, partition_dags

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.exact import (
    MAX_BRUTE_SLOTS,
    brute_force_orders,
    brute_force_slots,
    exact_schedule,
    jackson_value,
)
from optsched.comm.pace.formulation import INTEGRALITY_TOL, build_lp, feasible, solve_lp
from optsched.comm.pace.fusion import pace_schedule
from optsched.profiles import load_profile

pytestmark = pytest.mark.solver("highs", frontend="cvxpy")

#: LP optima come from a solver with ~1e-7 feasibility tolerance.
LP_RTOL = 1e-6


@settings(max_examples=25)
@given(float_jobs())
def test_lp_optimum_equals_the_fast_exact_algorithm(jobs):
    r, w, q = jobs
    result = solve_lp(r, w, q)
    assert math.isclose(result.value, jackson_value(r, w, q), rel_tol=LP_RTOL, abs_tol=LP_RTOL)
    # The assignment fills every job's work within its window and respects slot capacity.
    assert np.allclose(result.x.sum(axis=1), w, atol=1e-6)
    lengths = np.diff(result.slot_bounds)
    assert np.all(result.x.sum(axis=0) <= lengths + 1e-6)


@settings(max_examples=25)
@given(integer_jobs())
def test_lp_solutions_are_integral_on_integer_data(jobs):
    r, w, q = jobs
    theta = jackson_value(r, w, q)
    assert theta == round(theta)
    ok, lp, _ = feasible(r, w, q, theta)
    assert ok
    x = np.asarray(lp.x.value)
    assert np.all(np.abs(x - np.round(x)) <= INTEGRALITY_TOL), x
    result = solve_lp(r, w, q)
    assert math.isclose(result.value, theta, abs_tol=LP_RTOL)
    assert result.is_integral()
    # Just below the optimum there is no schedule.
    assert not feasible(r, w, q, theta - 0.5)[0]


def _constraint_matrix(lp) -> np.ndarray:
    pairs = lp.pairs
    m = pairs.shape[0]
    n_jobs = int(pairs[:, 0].max()) + 1
    work = sp.csr_matrix((np.ones(m), (pairs[:, 0], np.arange(m))), shape=(n_jobs, m))
    slot = sp.csr_matrix((np.ones(m), (pairs[:, 1], np.arange(m))), shape=(lp.n_slots, m))
    return sp.vstack([work, slot]).toarray()


@settings(max_examples=25)
@given(integer_jobs(max_n=4), st.randoms(use_true_random=False))
def test_constraint_matrix_is_totally_unimodular(jobs, rnd):
    r, w, q = jobs
    theta = jackson_value(r, w, q)
    lp = build_lp(r, w, q, theta + 3.0)
    a = _constraint_matrix(lp)
    n_jobs = int(lp.pairs[:, 0].max()) + 1
    # Bipartite incidence: every column has one 1 among the job rows and one among the slot
    # rows (the sufficient condition for total unimodularity).
    assert np.all(a[:n_jobs].sum(axis=0) == 1)
    assert np.all(a[n_jobs:].sum(axis=0) == 1)
    # And the definition on square submatrices (all of them when few, else a sample).
    rows, cols = a.shape
    sizes = range(1, min(rows, cols, 4) + 1)
    count = sum(math.comb(rows, k) * math.comb(cols, k) for k in sizes)
    if count <= 400:
        subsets = [
            (ri, ci)
            for k in sizes
            for ri in itertools.combinations(range(rows), k)
            for ci in itertools.combinations(range(cols), k)
        ]
    else:
        subsets = []
        for _ in range(400):
            k = rnd.choice(list(sizes))
            subsets.append((rnd.sample(range(rows), k), rnd.sample(range(cols), k)))
    for ri, ci in subsets:
        det = round(float(np.linalg.det(a[np.ix_(ri, ci)])))
        assert det in (-1, 0, 1)


def test_lp_matches_the_exact_schedule_on_a_real_profile():
    dag = build_dag(load_profile("resnet18"))
    cost = CostModel.ring(8, 10, 5)
    for sched in (pace_schedule(dag, cost), exact_schedule(dag, cost)):
        jobs = sched.jobs
        value = max(dag.compute_ms, solve_lp(jobs.release, jobs.work, jobs.tail).value)
        assert math.isclose(value, sched.iteration_time, rel_tol=LP_RTOL)


@pytest.mark.solver("clarabel", frontend="cvxpy")
@settings(max_examples=10)
@given(float_jobs(max_n=5))
def test_second_solver_agrees(jobs):
    r, w, q = jobs
    highs = solve_lp(r, w, q).value
    clarabel = solve_lp(r, w, q, solver="clarabel").value
    assert math.isclose(highs, clarabel, rel_tol=1e-5, abs_tol=1e-5)


@settings(max_examples=30)
@given(partition_dags())
def test_lp_fast_exact_and_brute_force_agree_at_partition_granularity(case):
    dag, cost = case
    sched = exact_schedule(dag, cost)
    jobs = sched.jobs
    assert np.all(jobs.work == np.round(jobs.work))
    fast = jackson_value(jobs.release, jobs.work, jobs.tail)
    lp = solve_lp(jobs.release, jobs.work, jobs.tail)
    assert math.isclose(lp.value, fast, abs_tol=LP_RTOL)
    assert lp.is_integral()
    if jobs.work.sum() <= min(MAX_BRUTE_SLOTS, 9):
        assert brute_force_slots(jobs.release, jobs.work, jobs.tail) == fast
    if len(jobs.work) <= 7:
        assert brute_force_orders(jobs.release, jobs.work, jobs.tail) == fast
    assert sched.iteration_time == max(dag.compute_ms, fast)
