"""Best static priority order: brute force vs Smith's rule, and where the rule fails."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.placement.tensorlights import (
    TensorLightsInstance,
    best_static_order,
    generate_instance,
    simulate,
    smith_order,
    smith_rule_is_optimal,
)

#: Relative tolerance between objective values computed two ways.
OBJ_RTOL = 1e-9


def make(hosts: list[float], jobs: list[dict]) -> TensorLightsInstance:
    return TensorLightsInstance.from_dict(
        {"hosts": [{"bandwidth": b} for b in hosts], "jobs": jobs}
    )


def job(m, n, c, iters, host=0, w=1.0, start=0.0):
    return {
        "workers": n,
        "message_bytes": float(m),
        "compute_time": float(c),
        "iterations": iters,
        "ps_hosts": [host],
        "weight": float(w),
        "start": float(start),
    }


@st.composite
def smith_instances(draw, one_iteration: bool = False):
    """Instances where Smith's rule is proven optimal: one PS shard per job, a common start, and
    either no compute at all or one iteration after a common compute time."""
    n_hosts = draw(st.integers(1, 2))
    hosts = [float(draw(st.sampled_from([1, 2, 3]))) for _ in range(n_hosts)]
    c = float(draw(st.integers(0, 3))) if one_iteration else 0.0
    start = float(draw(st.integers(0, 2)))
    jobs = [
        job(
            m=draw(st.integers(1, 6)),
            n=draw(st.integers(1, 3)),
            c=c,
            iters=1 if one_iteration else draw(st.integers(1, 3)),
            host=draw(st.integers(0, n_hosts - 1)),
            w=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
            start=start,
        )
        for _ in range(draw(st.integers(1, 5)))
    ]
    return make(hosts, jobs)


def sequential_objective(inst: TensorLightsInstance, order, objective: str) -> float:
    """Closed form when the rule applies: per host, jobs hold the NIC one after another."""
    tau = inst.alone_comm_time()
    done = {}
    clock = {h: inst.jobs[0].start + inst.jobs[0].compute_time for h in range(inst.n_hosts)}
    for j in order:
        h = inst.jobs[j].ps_hosts[0]
        clock[h] += inst.jobs[j].iterations * tau[j]
        done[j] = clock[h]
    jct = np.array([done[j] - inst.jobs[j].start for j in range(inst.n_jobs)])
    if objective == "mean-jct":
        return float(jct.mean())
    w = np.array([j.weight for j in inst.jobs])
    return float(w @ jct / w.sum())


@settings(max_examples=30)
@given(
    inst=st.booleans().flatmap(lambda one: smith_instances(one_iteration=one)),
    objective=st.sampled_from(["mean-jct", "weighted-jct"]),
)
def test_smith_rule_equals_brute_force_where_proven(inst, objective):
    assert smith_rule_is_optimal(inst, objective)
    search = best_static_order(inst, objective)
    assert search.rule_proven
    assert search.rule_value == pytest.approx(search.best_value, rel=OBJ_RTOL)
    # The simulated value of every order matches the sequential closed form.
    assert search.rule_value == pytest.approx(
        sequential_objective(inst, search.rule_order, objective), rel=OBJ_RTOL
    )
    assert search.best_value == pytest.approx(
        sequential_objective(inst, search.best_order, objective), rel=OBJ_RTOL
    )


@settings(max_examples=15)
@given(inst=smith_instances(), objective=st.sampled_from(["mean-jct", "weighted-jct"]))
def test_brute_force_finds_the_minimum_over_all_orders(inst, objective):
    """Independent enumeration through the public simulate() (Python engine)."""
    values = {
        perm: simulate(inst, "priority", order=perm, engine="python").objective(objective)
        for perm in itertools.permutations(range(inst.n_jobs))
    }
    search = best_static_order(inst, objective)
    assert search.best_value == pytest.approx(min(values.values()), rel=OBJ_RTOL)
    assert search.worst_value == pytest.approx(max(values.values()), rel=OBJ_RTOL)
    assert values[search.best_order] == pytest.approx(search.best_value, rel=OBJ_RTOL)
    assert search.n_orders == len(values)


def test_brute_force_engines_agree():
    inst = generate_instance(2, 4, max_shards=2, seed=5, iterations=(2, 5))
    for objective in ("mean-jct", "weighted-jct", "makespan"):
        a = best_static_order(inst, objective)
        b = best_static_order(inst, objective, engine="python")
        assert a.best_order == b.best_order
        assert a.best_value == pytest.approx(b.best_value, rel=OBJ_RTOL)
        assert a.rule_value == pytest.approx(b.rule_value, rel=OBJ_RTOL)


def test_rule_fails_with_unequal_compute_times():
    """A: tau = 3 after c = 3; B: tau = 4 at once. Smith sends A first (3 < 4): B gets [0, 3),
    A preempts for [3, 6), B ends at 7, mean 6.5. B first: B [0, 4), A [4, 7), mean 5.5."""
    inst = make([1.0], [job(3, 1, 3, 1), job(4, 1, 0, 1)])
    assert not smith_rule_is_optimal(inst, "mean-jct")
    search = best_static_order(inst, "mean-jct")
    assert search.rule_order == (0, 1)
    assert search.rule_value == pytest.approx(6.5)
    assert search.best_order == (1, 0)
    assert search.best_value == pytest.approx(5.5)


def test_rule_fails_with_compute_gaps_between_iterations():
    """Common c = 3. A: tau = 2, one iteration (work 2); B: tau = 1, three iterations (work 3).
    Smith: A first, A done at 5, B at 14 (mean 9.5). B first: B's compute gaps let A finish
    at 6 while B still ends at 12 (mean 9)."""
    inst = make([1.0], [job(2, 1, 3, 1), job(1, 1, 3, 3)])
    assert not smith_rule_is_optimal(inst, "mean-jct")
    search = best_static_order(inst, "mean-jct")
    assert search.rule_order == (0, 1)
    assert search.rule_value == pytest.approx(9.5)
    assert search.best_order == (1, 0)
    assert search.best_value == pytest.approx(9.0)


def test_priority_beats_fair_sharing_for_mean_jct_on_one_nic():
    """Saturating jobs on one NIC: fair sharing is processor sharing, whose mean completion is
    at least SPT's (the optimum of 1||sum C_j)."""
    inst = make([1.0], [job(m, 1, 0, 1) for m in (1, 2, 3, 4)])
    search = best_static_order(inst, "mean-jct")
    # SPT: 1, 3, 6, 10 -> 5. PS: 4, 7, 9, 10 -> 7.5.
    assert search.best_value == pytest.approx(5.0)
    assert search.fair_value == pytest.approx(7.5)
    assert search.worst_value == pytest.approx((4 + 7 + 9 + 10) / 4)


def test_smith_order_uses_weights_only_for_weighted_objective():
    inst = make([1.0], [job(2, 1, 0, 1, w=10.0), job(1, 1, 0, 1, w=1.0)])
    assert smith_order(inst, "mean-jct") == (1, 0)
    assert smith_order(inst, "weighted-jct") == (0, 1)


def test_rule_not_claimed_for_makespan_or_shards():
    inst = make([1.0, 1.0], [job(1, 1, 0, 1), job(1, 1, 0, 1)])
    assert not smith_rule_is_optimal(inst, "makespan")
    data = inst.to_dict()
    data["jobs"][0]["ps_hosts"] = [0, 1]
    assert not smith_rule_is_optimal(TensorLightsInstance.from_dict(data), "mean-jct")


def test_search_refuses_too_many_jobs_and_unknown_objectives():
    inst = generate_instance(1, 4, seed=0)
    with pytest.raises(InvalidInstanceError) as err:
        best_static_order(inst, max_jobs=3)
    assert err.value.field == "jobs"
    with pytest.raises(InvalidInstanceError) as err:
        best_static_order(inst, "throughput")  # type: ignore[arg-type]
    assert err.value.field == "objective"


def test_search_result_is_json_ready():
    search = best_static_order(generate_instance(1, 3, seed=1), "weighted-jct")
    data = search.to_dict()
    assert data["n_orders"] == 6
    assert data["rule_gap"] >= -OBJ_RTOL
    assert data["best_value"] <= data["worst_value"]
