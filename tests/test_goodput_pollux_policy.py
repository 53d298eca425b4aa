"""Pollux's policy: its operators, its NSGA-II, and its answers against the exact round optimum."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import ClusterView
from optsched.goodput.policies.pollux import (
    PolluxPolicy,
    _crossover,
    _mutate,
    _repair,
    search,
)
from optsched.goodput.policies.pollux_nsga import crowding_distance, non_dominated_fronts
from optsched.goodput.round_exact import _start_vector, build_model, canonical, solve
from optsched.goodput.round_model import RoundInstance, fitness, generate_instance
from optsched.goodput.round_validate import validate
from optsched.goodput.round_workload import RoundSampler, replay_rounds
from optsched.goodput.traces import read_model_traces
from optsched.goodput.workload import PolluxWorkload, read_workload
from optsched.tolerances import CAPACITY_TOL, OBJECTIVE_AGREEMENT_TOL, RATIO_TOL, leq, within
from tests.brute.goodput_round import best_round
from tests.strategies.goodput_round import any_states, tiny_rounds

DATA = Path(__file__).parent / "data" / "pollux"
#: A search small enough for property tests.
SMALL = {"pop_size": 20, "generations": 15}


@settings(max_examples=40)
@given(tiny_rounds(max_jobs=4, max_nodes=3), st.data())
def test_repair_makes_any_state_feasible(instance: RoundInstance, data: st.DataObject) -> None:
    states = data.draw(any_states(instance, count=16))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    repaired = _repair(instance, states, rng)
    for s in repaired:
        assert validate(instance, s).ok, validate(instance, s).violations
    # a feasible state is its own repair
    again = _repair(instance, repaired, rng)
    assert np.array_equal(again, repaired)


@settings(max_examples=20)
@given(tiny_rounds(max_jobs=3, max_nodes=3), st.integers(0, 2**31 - 1))
def test_ga_is_feasible_and_never_above_the_optimum(instance: RoundInstance, seed: int) -> None:
    result = search(instance, rng=np.random.default_rng(seed), **SMALL)
    report = validate(instance, result.state)
    assert report.ok, report.violations
    assert report.objective is not None
    assert within(result.fitness, report.objective, OBJECTIVE_AGREEMENT_TOL)
    optimum, _ = best_round(instance)
    assert leq(result.fitness, optimum, RATIO_TOL)
    exact = solve(instance)
    assert leq(result.fitness, exact.objective, RATIO_TOL)
    assert validate(instance, exact.state).ok
    # the GA's allocation is a point of the MILP (with the symmetry cuts: once its
    # interchangeable nodes are ordered), whose objective there is the GA's value
    for symmetry in (False, True):
        model = build_model(instance, symmetry=symmetry)
        point = _start_vector(model, instance, result.state)
        assert point is not None and point.x is not None
        rows = model.lp.a @ point.x
        assert (rows >= model.lp.row_lower - CAPACITY_TOL).all()
        assert (rows <= model.lp.row_upper + CAPACITY_TOL).all()
        value = instance.mean_of(float(model.lp.c @ point.x))
        assert within(value, result.fitness, OBJECTIVE_AGREEMENT_TOL)
    same = validate(instance, canonical(instance, result.state)).objective
    assert same is not None and within(same, result.fitness, OBJECTIVE_AGREEMENT_TOL)


def test_ga_finds_the_optimum_of_small_rounds() -> None:
    # with the artifact's settings the search solves 3-job rounds of 2 nodes outright
    found = 0
    for seed in range(3):
        instance = generate_instance(3, num_nodes=2, gpus_per_node=4, seed=seed)
        result = search(instance, rng=np.random.default_rng(seed))
        optimum, _ = best_round(instance)
        found += within(result.fitness, optimum, OBJECTIVE_AGREEMENT_TOL)
    assert found == 3


def test_search_is_deterministic_for_a_seed() -> None:
    instance = generate_instance(8, num_nodes=4, gpus_per_node=4, seed=2)
    a = search(instance, rng=np.random.default_rng(7), **SMALL)
    b = search(instance, rng=np.random.default_rng(7), **SMALL)
    assert np.array_equal(a.state, b.state) and np.array_equal(a.front, b.front)


def test_crossover_swaps_leading_rows() -> None:
    rng = np.random.default_rng(0)
    p0 = np.zeros((50, 5, 3), dtype=np.int64)
    p1 = np.ones((50, 5, 3), dtype=np.int64)
    c0, c1 = _crossover(p0, p1, rng)
    assert np.array_equal(c0 + c1, np.ones_like(p0))
    for child in c0:
        rows = child[:, 0].tolist()
        cut = rows.count(1)
        assert rows == [1] * cut + [0] * (5 - cut) and cut < 5


def test_mutation_stays_in_range_and_grows_about_two_jobs_per_free_node() -> None:
    instance = generate_instance(10, num_nodes=4, gpus_per_node=4, seed=1)
    states = np.zeros((400, 10, 4), dtype=np.int64)
    mutated = _mutate(instance, states, np.random.default_rng(3))
    assert mutated.min() >= 0 and mutated.max() <= instance.gpus_per_node
    # from empty states no job is on any node: only q1 = 1/J applies, so each node sees one
    # raised entry per state on average (raised to a uniform count in [0, G]), except rows
    # reset to the previous allocation
    raised = (mutated > 0) & (instance.previous[None] == 0)
    per_node = raised.sum(axis=1).mean()
    assert 0.5 < per_node < 1.2


def test_non_dominated_fronts_by_definition() -> None:
    rng = np.random.default_rng(5)
    f = rng.integers(0, 6, size=(40, 2)).astype(float)
    fronts = non_dominated_fronts(f)
    assert sorted(np.concatenate(fronts).tolist()) == list(range(40))
    rank = {int(i): r for r, front in enumerate(fronts) for i in front}
    for i, k in itertools.product(range(40), repeat=2):
        if np.all(f[i] <= f[k]) and np.any(f[i] < f[k]):
            assert rank[i] < rank[k]
    for front in fronts:
        for i, k in itertools.product(front, repeat=2):
            assert not (np.all(f[i] <= f[k]) and np.any(f[i] < f[k]))


def test_crowding_distance_by_hand() -> None:
    # pymoo 0.4.2's rule: a repeated point gets 0, the first occurrence the distance; the
    # extremes of each objective infinite; an objective of range 0 adds nothing, not even to
    # its extremes
    f = np.array([[0, 3], [1, 2], [0, 3], [3, 0], [2, 1]], dtype=float)
    # unique points 0, 1, 3, 4; each objective's gaps are 1/3 of its range 3
    want = np.array([np.inf, 2 / 3, 0.0, np.inf, 2 / 3])
    assert np.allclose(crowding_distance(f), want, rtol=0, atol=1e-15)
    assert np.array_equal(crowding_distance(np.ones((3, 2))), np.zeros(3))
    assert np.array_equal(crowding_distance(np.ones((2, 2))), np.full(2, np.inf))
    line = np.array([[0, 5], [1, 5], [2, 5]], dtype=float)
    assert np.array_equal(crowding_distance(line), np.array([np.inf, 0.5, np.inf]))
    # many copies of one point and one other: only the first copy and the other are extreme
    tied = np.array([[0, 1]] * 5 + [[1, 0]] + [[0, 1]] * 3, dtype=float)
    assert np.array_equal(np.flatnonzero(np.isinf(crowding_distance(tied))), [0, 5])
    assert not crowding_distance(tied)[[1, 2, 3, 4, 6, 7, 8]].any()


def test_later_fronts_in_pymoos_order() -> None:
    # a later front lists its points in the order the previous front releases them: by the
    # position there of their last dominator, then by index (pymoo's fast_non_dominated_sort)
    f = np.array([[6, 1], [1, 6], [0, 5], [5, 0], [6, 6], [7, 0.5]], dtype=float)
    fronts = non_dominated_fronts(f)
    assert fronts[0].tolist() == [2, 3]
    # 1 is dominated by 2 (position 0); 0 and 5 by 3 (position 1)
    assert fronts[1].tolist() == [1, 0, 5]
    assert fronts[2].tolist() == [4]


@settings(max_examples=15)
@given(st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_a_tied_choice_is_kept_from_search_to_search(jobs: int, seed: int) -> None:
    # pymoo's tie rules: of the states tied at the best M, the first keeps an infinite crowding
    # distance and its copies 0, so searches carried from one to the next on the same round
    # keep taking it while the best M stays; only a front of copies of one objective vector
    # (every distance 0) is cut in random order
    # (a state of the same M and a better utility dominates the choice: a new choice)
    instance = generate_instance(jobs, num_nodes=6, seed=seed)
    rng = np.random.default_rng(seed)
    front, last, last_f = None, None, None
    for _ in range(4):
        result = search(instance, front, rng=rng, pop_size=30, generations=15)
        front = result.front
        chosen_f = result.values[np.argmin(result.values[:, 0])]
        distinct = len({tuple(v) for v in result.values.tolist()})
        if last is not None and np.array_equal(chosen_f, last_f) and distinct > 1:
            assert np.array_equal(result.state, last.state)
        last, last_f = result, chosen_f


def test_policy_rejects_bad_settings() -> None:
    with pytest.raises(InvalidInstanceError, match="pop_size"):
        PolluxPolicy(pop_size=0)
    with pytest.raises(InvalidInstanceError, match="generations"):
        PolluxPolicy(generations=0)
    with pytest.raises(InvalidInstanceError, match="max_matings"):
        PolluxPolicy(max_matings=0)


def _shipped_workload() -> tuple[PolluxWorkload, dict]:
    types = {name: read_model_traces(DATA / "traces" / name) for name in ("bert", "cifar10")}
    full = read_workload(DATA / "workload-6.csv")
    jobs = tuple(j for j in full.jobs if j.application in types)
    return PolluxWorkload(jobs), types


@pytest.mark.solver("highs")
def test_policy_on_workload_rounds() -> None:
    workload, types = _shipped_workload()
    sampler = RoundSampler(types, num_nodes=4, gpus_per_node=4)
    views, cluster = sampler.round(workload, 8, seed=3)
    policy = PolluxPolicy(seed=3, **SMALL)
    views, cluster, prev = replay_rounds(policy, views, cluster, 2)
    assert isinstance(cluster, ClusterView) and cluster.time > 0
    # the population is carried: the next search starts from the last front, by job name
    carried = policy._initial(policy.last_round)  # type: ignore[arg-type]
    assert carried.shape[0] == len(policy.last_search.front)  # type: ignore[union-attr]
    alloc = policy.allocate(views, cluster, prev)
    instance = policy.last_round
    assert instance is not None and policy.last_search is not None
    used = np.zeros(cluster.num_nodes, dtype=int)
    for name, nodes in alloc.items():
        assert list(nodes) == sorted(nodes) and name in views
        for n in nodes:
            used[n] += 1
    assert (used <= cluster.gpus_per_node).all()
    state = policy.last_search.state
    report = validate(instance, state)
    assert report.ok, report.violations
    assert within(float(fitness(instance, state[None])[0]), policy.last_search.fitness,
                  OBJECTIVE_AGREEMENT_TOL)  # fmt: skip
    exact = solve(instance, warm_start=state, node_limit=200)
    assert validate(instance, exact.state).ok
    assert leq(policy.last_search.fitness, exact.objective, RATIO_TOL)
    assert exact.bound is None or leq(exact.objective, exact.bound, RATIO_TOL)


def test_policy_is_deterministic_for_a_seed() -> None:
    workload, types = _shipped_workload()
    sampler = RoundSampler(types, num_nodes=2, gpus_per_node=4)
    views, cluster = sampler.round(workload, 5, seed=1)
    runs = []
    for _ in range(2):
        policy = PolluxPolicy(seed=9, **SMALL)
        runs.append(replay_rounds(policy, views, cluster, 2)[2])
    assert runs[0] == runs[1]
    assert policy.allocate({}, cluster, {}) == {}
