"""Best static priority order: brute force vs Smith's rule, and where the rule fails."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.tensorlights import job as _job
from strategies.tensorlights import make, smith_instances

from optsched import limits
from optsched._json import dumps
from optsched.comm.tensorlights import (
    TensorLightsInstance,
    event_bound,
    generate_instance,
    lower_bound,
    simulate,
    smith_order,
    smith_rule_is_optimal,
    solve,
    validate,
)
from optsched.errors import InvalidInstanceError, NotOptimalError

#: Relative tolerance between objective values computed two ways.
OBJ_RTOL = 1e-9


def job(m, n, c, iters, host=0, w=1.0, start=0.0):
    return _job(m, n, c, iters, hosts=(host,), start=start, w=w)


def search_of(inst, objective="mean-jct", **options) -> SimpleNamespace:
    """The exact result's figures under short names (the solution's order is the best order)."""
    res = solve(inst, objective, **options)
    assert res.optimal and res.bound == res.objective and res.gap == 0.0
    assert res.solution is not None and res.solution.order == tuple(res.extra["best_order"])
    return SimpleNamespace(
        best_order=tuple(res.extra["best_order"]),
        best_value=res.objective,
        worst_value=res.extra["worst_value"],
        n_orders=res.extra["orders_evaluated"],
        rule_order=tuple(res.extra["rule_order"]),
        rule_value=res.extra["rule_value"],
        rule_proven=res.extra["rule_proven"],
        fair_value=res.extra["fair_value"],
        result=res,
    )


def sequential_objective(inst: TensorLightsInstance, order, objective: str) -> float:
    """Closed form when the rule applies: per host, jobs hold the NIC one after another."""
    tau = inst.alone_comm_time()
    done = {}
    clock = {h: inst.jobs[0].start_s + inst.jobs[0].compute_time_s for h in range(inst.n_hosts)}
    for j in order:
        h = inst.jobs[j].ps_hosts[0]
        clock[h] += inst.jobs[j].iterations * tau[j]
        done[j] = clock[h]
    jct = np.array([done[j] - inst.jobs[j].start_s for j in range(inst.n_jobs)])
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
    search = search_of(inst, objective)
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
    search = search_of(inst, objective)
    assert search.best_value == pytest.approx(min(values.values()), rel=OBJ_RTOL)
    assert search.worst_value == pytest.approx(max(values.values()), rel=OBJ_RTOL)
    assert values[search.best_order] == pytest.approx(search.best_value, rel=OBJ_RTOL)
    assert search.n_orders == len(values)


def test_brute_force_engines_agree():
    inst = generate_instance(2, 4, max_shards=2, seed=5, iterations=(2, 5))
    for objective in ("mean-jct", "weighted-jct", "makespan"):
        a = search_of(inst, objective)
        b = search_of(inst, objective, engine="python")
        assert a.best_order == b.best_order
        assert a.best_value == pytest.approx(b.best_value, rel=OBJ_RTOL)
        assert a.rule_value == pytest.approx(b.rule_value, rel=OBJ_RTOL)


def test_rule_fails_with_unequal_compute_times():
    """A: tau = 3 after c = 3; B: tau = 4 at once. Smith sends A first (3 < 4): B gets [0, 3),
    A preempts for [3, 6), B ends at 7, mean 6.5. B first: B [0, 4), A [4, 7), mean 5.5."""
    inst = make([1.0], [job(3, 1, 3, 1), job(4, 1, 0, 1)])
    assert not smith_rule_is_optimal(inst, "mean-jct")
    search = search_of(inst, "mean-jct")
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
    search = search_of(inst, "mean-jct")
    assert search.rule_order == (0, 1)
    assert search.rule_value == pytest.approx(9.5)
    assert search.best_order == (1, 0)
    assert search.best_value == pytest.approx(9.0)


def test_priority_beats_fair_sharing_for_mean_jct_on_one_nic():
    """Saturating jobs on one NIC: fair sharing is processor sharing, whose mean completion is
    at least SPT's (the optimum of 1||sum C_j)."""
    inst = make([1.0], [job(m, 1, 0, 1) for m in (1, 2, 3, 4)])
    search = search_of(inst, "mean-jct")
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


def test_search_refuses_a_budget_overrun_and_unknown_objectives():
    inst = generate_instance(1, 4, seed=0)
    with limits.override(max_events=10 * event_bound(inst)):
        with pytest.raises(InvalidInstanceError) as err:
            solve(inst)  # 24 orders > 10 simulations' worth of events
        assert err.value.field == "jobs"
        with pytest.raises(InvalidInstanceError) as err:
            solve(inst, node_limit=11, accept_feasible=True)
        assert err.value.field == "node_limit"
        assert solve(inst, node_limit=10, accept_feasible=True).extra["orders_evaluated"] == 10
    with pytest.raises(InvalidInstanceError) as err:
        solve(inst, "throughput")  # type: ignore[arg-type]
    assert err.value.field == "objective"
    for bad in ({"node_limit": 0}, {"time_limit": float("nan")}, {"engine": "fortran"}):
        with pytest.raises(InvalidInstanceError) as err:
            solve(inst, **bad)
        assert err.value.field == next(iter(bad))


def test_search_result_is_json_ready():
    res = solve(generate_instance(1, 3, seed=1), "weighted-jct")
    data = json.loads(dumps(res.to_dict()))
    assert data["status"] == "optimal" and data["objective_name"] == "weighted-jct"
    assert data["orders_evaluated"] == data["orders_total"] == 6
    assert data["rule_gap"] >= -OBJ_RTOL
    assert data["best_value"] <= data["worst_value"]
    assert data["solution"]["order"] == data["best_order"]
    assert len(repr(res)) < 300 and "<table>" in res._repr_html_()
    assert list(res.to_frame()["job"]) == list(generate_instance(1, 3, seed=1).job_names())


# ---------------------------------------------------------------------------------------------
# Stopping short: never optimal, incumbent kept, bound proven
# ---------------------------------------------------------------------------------------------


@settings(max_examples=15)
@given(inst=smith_instances(), objective=st.sampled_from(["mean-jct", "weighted-jct", "makespan"]))
def test_lower_bound_is_below_every_order_and_policy(inst, objective):
    bound = lower_bound(inst, objective)
    for perm in itertools.permutations(range(inst.n_jobs)):
        value = simulate(inst, "priority", order=perm, trace=False).objective(objective)
        assert bound <= value * (1 + OBJ_RTOL)
    for policy in ("fair", "rotate", "one-green"):
        assert bound <= simulate(inst, policy, trace=False).objective(objective) * (1 + OBJ_RTOL)


def test_stopped_search_is_feasible_with_its_incumbent_and_raises_unless_accepted():
    inst = generate_instance(1, 5, seed=2, iterations=(2, 6))
    full = solve(inst)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, node_limit=7)
    stopped = err.value.result
    assert stopped.status.value == "feasible" and not stopped.optimal
    assert stopped.termination.value == "other_limit"
    assert stopped.extra["orders_evaluated"] == 7 and stopped.extra["orders_total"] == 120
    assert stopped.solution is not None and validate(inst, stopped.solution).ok
    # The incumbent is a real order's value, never better than the optimum; the bound is below.
    assert stopped.objective >= full.objective * (1 - OBJ_RTOL)
    assert stopped.bound <= full.objective * (1 + OBJ_RTOL)
    assert stopped.gap == pytest.approx((stopped.objective - stopped.bound) / stopped.objective)
    # The incumbent is the best of the first 7 lexicographic orders or Smith's order.
    firsts = list(itertools.islice(itertools.permutations(range(5)), 7))
    candidates = [*firsts, smith_order(inst, "mean-jct")]
    values = [simulate(inst, "priority", order=p, trace=False).mean_jct for p in candidates]
    assert stopped.objective == pytest.approx(min(values), rel=OBJ_RTOL)
    accepted = solve(inst, node_limit=7, accept_feasible=True)
    assert accepted.objective == stopped.objective
    # A limit at or above J! covers every order: optimal.
    assert solve(inst, node_limit=120).optimal
