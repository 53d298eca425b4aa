"""The Aonline family: exact model vs brute force, oracle vs exhaustive placements, the packing
step vs the exact packing, the online schedule vs the validator and the competitive bounds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from brute.aonline import (
    brute_min_wct,
    brute_oracle_cost,
    brute_packing,
    placements,
)
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies.aonline import tiny_instances

from optsched.errors import InvalidInstanceError
from optsched.online.aonline import (
    AonlineInstance,
    AonlineJob,
    AonlineSchedule,
    GpuPool,
    PriceState,
    Run,
    aonline,
    assumptions,
    best_schedule,
    generate_instance,
    interval_bounds,
    pack_exact,
    pack_primal_dual,
    solve,
    validate,
)
from optsched.tolerances import RATIO_TOL, UTILITY_TOL, leq, within

POOLS = (
    GpuPool(name="a", count=4, gpus_per_server=2),
    GpuPool(name="b", count=2, gpus_per_server=2),
)


def _job(**kw: object) -> AonlineJob:
    base: dict[str, object] = {"work": 2, "rates": {"a": 1}}
    base.update(kw)
    return AonlineJob(**base)  # type: ignore[arg-type]


# -- instance --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"pools": [], "jobs": []}, "pools"),
        ({"pools": [{"name": "a", "count": 2, "gpus_per_server": 2}] * 2}, "pools"),
        (
            {
                "pools": [{"name": "a", "count": 2, "gpus_per_server": 2}],
                "jobs": [{"work": 1, "rates": {"z": 1}}],
            },
            "jobs[0].rates.z",
        ),
        (
            {
                "pools": [{"name": "a", "count": 4, "gpus_per_server": 2}],
                "jobs": [{"work": 1, "gpus": 2, "rates": {"a": 1}, "spread_rates": {"a": 2}}],
            },
            "jobs[0].spread_rates.a",
        ),
        (
            {
                "pools": [{"name": "a", "count": 2, "gpus_per_server": 2}],
                "jobs": [{"work": 1, "gpus": 3, "rates": {"a": 1}}],
            },
            "jobs[0].rates",
        ),
        (
            {
                "pools": [{"name": "a", "count": 2, "gpus_per_server": 2}],
                "jobs": [{"work": 0, "rates": {"a": 1}}],
            },
            "jobs[0].work",
        ),
        (
            {
                "pools": [{"name": "a", "count": 2, "gpus_per_server": 2}],
                "jobs": [{"work": 1, "weight": -1, "rates": {"a": 1}}],
            },
            "jobs[0].weight",
        ),
    ],
)
def test_bad_instances_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        AonlineInstance.from_dict(data)
    assert err.value.field == field


def test_rates_single_server_and_spread() -> None:
    inst = AonlineInstance(
        pools=POOLS,
        jobs=(
            _job(gpus=2, rates={"a": 3, "b": 4}),
            _job(gpus=3, rates={"a": 4}),
            _job(gpus=2, rates={"a": 4}, spread_rates={"a": 3}),
        ),
        spread_penalty=0.5,
    )
    assert inst.rate(0, "a", True) == 3 and inst.rate(0, "a", False) == 1  # floor(0.5 * 3)
    assert inst.rate(0, "b", False) == 0  # one server: nothing to spread over
    assert inst.rate(1, "a", True) == 0 and inst.rate(1, "a", False) == 2  # 3 GPUs > a server
    assert inst.rate(2, "a", False) == 3
    assert inst.min_slots(0) == 1 and inst.min_slots(1) == 1


def test_round_trip_and_repr(tmp_path: Path) -> None:
    inst = generate_instance(3, seed=4)
    for name in ("i.json", "i.toml"):
        inst.save(tmp_path / name)
        assert AonlineInstance.load(tmp_path / name) == inst
    assert "3 jobs" in repr(inst) and len(inst.to_frame()) == 3 * len(inst.pools)


# -- validator -------------------------------------------------------------------------------


def _inst() -> AonlineInstance:
    return AonlineInstance(
        pools=POOLS,
        jobs=(_job(arrival=1, gpus=2, work=2, rates={"a": 1}), _job(gpus=1, rates={"a": 2})),
    )


def test_validator_accepts_and_recomputes() -> None:
    inst = _inst()
    sched = AonlineSchedule(
        runs=(
            Run(slot=0, job=1, pool="a", servers=((0, 1),)),
            Run(slot=1, job=0, pool="a", servers=((0, 2),)),
            Run(slot=2, job=0, pool="a", servers=((1, 2),)),
        )
    )
    report = validate(inst, sched)
    assert report.ok, report.violations
    assert report.objective == 1.0 * 3 + 1.0 * 1
    assert report.details["completion"] == [3, 1]


@pytest.mark.parametrize(
    ("runs", "constraint"),
    [
        ((Run(slot=0, job=0, pool="a", servers=((0, 2),)),), "arrival"),
        ((Run(slot=1, job=0, pool="a", servers=((0, 1),)),), "gang_size"),
        ((Run(slot=1, job=0, pool="z", servers=((0, 2),)),), "unknown_pool"),
        ((Run(slot=1, job=0, pool="a", servers=((7, 2),)),), "unknown_server"),
        ((Run(slot=1, job=5, pool="a", servers=((0, 2),)),), "unknown_job"),
        ((Run(slot=1, job=0, pool="b", servers=((0, 2),)),), "no_rate"),
        (
            (
                Run(slot=1, job=0, pool="a", servers=((0, 2),)),
                Run(slot=1, job=1, pool="a", servers=((0, 1),)),
            ),
            "server_capacity",
        ),
        (
            (
                Run(slot=1, job=0, pool="a", servers=((0, 2),)),
                Run(slot=1, job=0, pool="a", servers=((1, 2),)),
            ),
            "one_run",
        ),
        ((Run(slot=1, job=0, pool="a", servers=((0, 2),)),), "work"),
        # spread at floor(0.5 * 1) = 0 units: no progress
        ((Run(slot=1, job=0, pool="a", servers=((0, 1), (1, 1))),), "no_rate"),
    ],
)
def test_validator_names_each_violation(runs: tuple[Run, ...], constraint: str) -> None:
    report = validate(_inst(), AonlineSchedule(runs=runs))
    assert constraint in {v.constraint for v in report.violations}


# -- exact model -----------------------------------------------------------------------------


@pytest.mark.solver("highs")
@settings(max_examples=12)
@given(tiny_instances(max_jobs=3, max_arrival=2, max_work=3))
def test_exact_equals_brute_force(inst: AonlineInstance) -> None:
    res = solve(inst)
    assert res.optimal
    assert validate(inst, res.solution).ok
    assert within(res.objective, brute_min_wct(inst), UTILITY_TOL)


@pytest.mark.solver("highs")
def test_exact_stopped_short_says_so() -> None:
    from optsched.errors import NotOptimalError

    inst = generate_instance(6, seed=3, max_work=8)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, solver_options={"mip_max_nodes": 0, "mip_heuristic_effort": 0.0})
    assert not err.value.result.optimal


# -- oracle ----------------------------------------------------------------------------------


@settings(max_examples=30)
@given(tiny_instances(max_jobs=2, max_work=4), st.data())
def test_oracle_matches_exhaustive_placements(inst: AonlineInstance, data: st.DataObject) -> None:
    """Random committed usage and the OASiS prices: the oracle's cost is the cheapest over
    every placement sequence, and its schedule costs what it says and finishes in time."""
    start, length = data.draw(st.sampled_from([(0, 1), (1, 1), (2, 2), (4, 4)]))
    state = PriceState.empty(
        inst, start, length, lower=0.1, upper=data.draw(st.sampled_from([1.0, 50.0]))
    )
    for k in range(length):
        for g, p in enumerate(inst.pools):
            for s in range(p.num_servers):
                state.used[(k, g, s)] = data.draw(st.integers(0, p.server_capacity(s)))
    every = sum(
        state.price(k, g, s) * p.server_capacity(s)
        for k in range(length)
        for g, p in enumerate(inst.pools)
        for s in range(p.num_servers)
    )
    assert within(state.dual_resources(), every, UTILITY_TOL)
    j = data.draw(st.integers(0, inst.n_jobs - 1))
    res = best_schedule(inst, j, state)
    ref = brute_oracle_cost(inst, j, state)
    if math.isinf(ref):
        assert not res.feasible
        return
    assert res.feasible and within(res.cost, ref, UTILITY_TOL)
    assert within(res.payoff, inst.jobs[j].weight - ref, UTILITY_TOL)
    done = 0
    for r in res.runs:
        assert start <= r.slot < start + length and r.slot >= inst.jobs[j].arrival
        g = inst.pool_index[r.pool]
        assert all(state.free(r.slot - start, g, s) >= n for s, n in r.servers)
        done += inst.rate(j, r.pool, r.consolidated)
    assert done >= inst.jobs[j].work


# -- packing ---------------------------------------------------------------------------------


@pytest.mark.solver("highs")
@settings(max_examples=15)
@given(tiny_instances(max_jobs=3, max_arrival=0, max_work=4), st.sampled_from([1, 2, 4]))
def test_packing_primal_dual_within_alpha_of_exact(inst: AonlineInstance, length: int) -> None:
    jobs = list(range(inst.n_jobs))
    exact = pack_exact(inst, jobs, 0, length)
    assert within(exact.weight, brute_packing(inst, jobs, 0, length), UTILITY_TOL)
    sched = AonlineSchedule(runs=exact.runs)
    assert not any(v.constraint == "server_capacity" for v in validate(inst, sched).violations)
    pd = pack_primal_dual(inst, jobs, 0, length)
    if pd is None:
        assert exact.weight == 0.0
        return
    assert leq(pd.weight, exact.weight, RATIO_TOL)
    assert leq(exact.weight, pd.alpha * pd.weight, RATIO_TOL)
    # the chosen jobs really finish in the interval, within capacity
    report = validate(inst, AonlineSchedule(runs=pd.runs))
    work = {v.where.get("job") for v in report.violations if v.constraint == "work"}
    assert not (set(pd.chosen) & work)
    assert not [v for v in report.violations if v.constraint != "work"]
    if assumptions(inst)["unit_gangs"]:
        # every blocked placement touches a full server priced at U >= w_j: the dual is feasible
        assert leq(exact.weight, pd.dual, RATIO_TOL)


# -- online ----------------------------------------------------------------------------------


def test_interval_bounds_double() -> None:
    assert [interval_bounds(k) for k in range(5)] == [(0, 1), (1, 1), (2, 2), (4, 4), (8, 8)]
    with pytest.raises(InvalidInstanceError):
        interval_bounds(-1)


@pytest.mark.solver("highs")
@settings(max_examples=15)
@given(tiny_instances(max_jobs=3, max_arrival=3, max_work=4))
def test_online_bounds(inst: AonlineInstance) -> None:
    """ALG >= OPT always; ALG <= 4 OPT with the exact packing (proven); ALG <= 4 alpha OPT
    with the primal-dual packing where the analysis' assumptions hold (else an event)."""
    opt = solve(inst).objective
    assert opt is not None
    for packing in ("primal-dual", "exact"):
        sched = aonline(inst, packing=packing)  # type: ignore[arg-type]
        report = validate(inst, sched)
        assert report.ok, report.violations
        value = report.objective
        assert value is not None and leq(opt, value, RATIO_TOL)
        # every interval's chosen jobs finish inside it
        for iv in sched.intervals:
            for j in iv.chosen:
                c = report.details["completion"][j]
                assert iv.start < c <= iv.start + iv.length
        if packing == "exact":
            assert sched.alpha == 1.0
            assert leq(value, 4.0 * opt, RATIO_TOL)
        else:
            met = assumptions(inst)
            if met["small_demands"]:
                assert leq(value, sched.bound_factor * opt, RATIO_TOL)
            else:
                event("4-alpha not checked: a gang above half a server (not small demands)")


def test_online_on_generated_instances() -> None:
    for seed in range(3):
        inst = generate_instance(6, seed=seed, max_arrival=6)
        sched = aonline(inst)
        assert validate(inst, sched).ok
        assert all(iv.alpha is None or iv.alpha >= 2.0 for iv in sched.intervals)
        assert "aonline" in repr(sched) and len(sched.to_frame()) >= len(sched.runs)


def test_unknown_packing_is_refused() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        aonline(generate_instance(2, seed=1), packing="greedy")  # type: ignore[arg-type]
    assert err.value.field == "packing"


def test_placements_helper_is_exhaustive() -> None:
    inst = AonlineInstance(pools=POOLS, jobs=(_job(gpus=2, rates={"a": 2, "b": 2}),))
    pls = placements(inst, 0)
    # a: two whole servers + spread 1+1 (rate 1); b: its one server
    assert sorted((g, s) for g, s, _ in pls) == sorted(
        [(0, ((0, 2),)), (0, ((1, 2),)), (0, ((0, 1), (1, 1))), (1, ((0, 2),))]
    )
    assert np.isfinite(brute_min_wct(inst))


def test_the_model_has_the_constraints_the_formulation_page_names() -> None:
    from optsched.online.aonline.exact import build_model

    page = (
        Path(__file__).resolve().parents[1] / "docs" / "formulations" / "aonline.rst"
    ).read_text(encoding="utf-8")
    built = build_model(generate_instance(3, seed=1))
    names = {c.name for c in built.model.component_objects()}
    for name in (
        "one_run",
        "spread_gang",
        "server_capacity",
        "one_last",
        "no_run_after_last",
        "last_runs",
        "work",
        "objective",
    ):
        assert name in names and f"``{name}``" in page


def test_empty_instance_and_absurd_sizes() -> None:
    empty = AonlineInstance(pools=POOLS, jobs=())
    assert solve(empty).objective == 0.0 and validate(empty, aonline(empty)).objective == 0.0
    big = AonlineInstance(pools=POOLS, jobs=(_job(work=10**6, rates={"a": 1}),))
    with pytest.raises(InvalidInstanceError) as err:
        aonline(big)  # refused before the oracle's table is allocated
    assert err.value.field == "jobs[0]"
    with pytest.raises(InvalidInstanceError):
        solve(big)  # the model's variable budget
