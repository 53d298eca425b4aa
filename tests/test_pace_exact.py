"""The exact preemptive schedule against its closed form and two brute forces."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.pace import dag_cases, float_jobs, integer_jobs

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import build_dag
from optsched.comm.pace.exact import (
    brute_force_orders,
    brute_force_slots,
    edf_feasible,
    exact_schedule,
    group_jobs,
    horn_value,
    jackson_value,
    priority_schedule,
)
from optsched.comm.pace.generate import random_profile
from optsched.errors import InvalidInstanceError

REL = 1e-9


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=REL)


@given(float_jobs())
def test_jackson_equals_closed_form_and_every_priority_order(jobs):
    r, w, q = jobs
    value = jackson_value(r, w, q)
    assert close(value, horn_value(r, w, q))
    assert close(value, brute_force_orders(r, w, q))


@settings(max_examples=30)
@given(integer_jobs())
def test_jackson_equals_brute_force_at_partition_granularity(jobs):
    # Every unit-slot schedule (one partition per slot) is enumerated.
    r, w, q = jobs
    value = jackson_value(r, w, q)
    assert value == brute_force_slots(r, w, q)
    assert value == brute_force_orders(r, w, q)
    # Integral data: Jackson's rule preempts and completes only at integer times.
    completion, segments = priority_schedule(r, w, -q)
    assert np.all(completion == np.round(completion))
    assert all(s == round(s) and e == round(e) for _, s, e in segments)


@given(float_jobs())
def test_edf_decides_the_optimum(jobs):
    r, w, q = jobs
    theta = jackson_value(r, w, q)
    assert edf_feasible(r, w, theta - q)
    delta = 1e-6 * max(1.0, theta)
    assert not edf_feasible(r, w, theta - delta - q)


@given(float_jobs(), st.randoms(use_true_random=False))
def test_priority_schedule_is_a_valid_preemptive_schedule(jobs, rnd):
    r, w, _ = jobs
    prio = np.array([rnd.random() for _ in r])
    completion, segments = priority_schedule(r, w, prio)
    got = np.zeros(r.size)
    prev = -math.inf
    for j, s, e in segments:
        assert s >= r[j] - 1e-12 and e > s
        assert s >= prev - 1e-12
        prev = e
        got[j] += e - s
    assert np.allclose(got, w, rtol=1e-9)
    for j in range(r.size):
        assert close(completion[j], max(e for k, _, e in segments if k == j))


def test_known_answer():
    # Job 0: long, released first, short tail; job 1 arrives at 2, urgent.
    r, w, q = np.array([0.0, 2.0]), np.array([5.0, 1.0]), np.array([0.0, 10.0])
    completion, segments = priority_schedule(r, w, -q)
    assert segments == [(0, 0.0, 2.0), (1, 2.0, 3.0), (0, 3.0, 6.0)]
    assert completion.tolist() == [6.0, 3.0]
    assert jackson_value(r, w, q) == 13.0  # job 1 done at 3, plus tail 10
    # Non-preemptive FIFO would give max(5 + 0, 6 + 10) = 16.


@given(dag_cases(max_layers=8))
def test_exact_schedule_on_a_dag(case):
    dag, cost = case
    sched = exact_schedule(dag, cost)
    # The iteration time is the stream recurrence and the DAG's longest path.
    assert close(sched.iteration_time, dag.iteration_time(sched.tensor_completion))
    assert close(sched.iteration_time, dag.graph_makespan(sched.tensor_completion))
    jobs = sched.jobs
    assert close(
        sched.iteration_time, max(dag.compute_ms, horn_value(jobs.release, jobs.work, jobs.tail))
    )
    if dag.n_tensors <= 7:
        best = brute_force_orders(jobs.release, jobs.work, jobs.tail)
        assert close(sched.iteration_time, max(dag.compute_ms, best))


def test_group_jobs_validation():
    dag = build_dag(random_profile(3, layers=4))
    cost = CostModel(0.1, 1e-6)
    n = dag.n_tensors
    jobs = group_jobs(dag, cost, [(0, n)])
    assert jobs.nbytes[0] == dag.total_bytes
    assert jobs.work[0] == pytest.approx(0.1 + 1e-6 * dag.total_bytes)
    with pytest.raises(InvalidInstanceError) as err:
        group_jobs(dag, cost, [(1, n)])
    assert err.value.field == "groups[0]"
    with pytest.raises(InvalidInstanceError) as err:
        group_jobs(dag, cost, [(0, n - 1)] if n > 1 else [(0, 0)])
    assert err.value.field.startswith("groups")


def test_brute_force_limits_and_input_checks():
    with pytest.raises(InvalidInstanceError):
        brute_force_orders(np.zeros(9), np.ones(9), np.zeros(9))
    with pytest.raises(InvalidInstanceError, match="integer"):
        brute_force_slots([0.5], [1], [0])
    with pytest.raises(InvalidInstanceError, match="at most"):
        brute_force_slots([0], [40], [0])
    with pytest.raises(InvalidInstanceError, match="same length"):
        jackson_value([0, 1], [1], [0])
    with pytest.raises(InvalidInstanceError) as err:
        jackson_value([0], [-1], [0])
    assert err.value.field == "work"
