"""Themis: the Partial Allocation step against brute force over every integral bundle assignment,
its truthfulness fractions, the fairness knob, the lease rho against the family's FTF objective,
the exact min-max-rho LP it can never beat, the validator, bad options, and the simulator policy."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.allocation import bid_tables, lease_rounds

from optsched import limits, sim
from optsched.allocation.gavel import (
    AllocationInstance,
    AllocationJob,
    objective_value,
    solve,
    themis,
    validate,
)
from optsched.allocation.themis import (
    lease_rho,
    partial_allocation,
    themis_round,
)
from optsched.errors import InvalidInstanceError
from optsched.sim.policies import POLICIES, Themis, make_policy
from optsched.tolerances import CAPACITY_TOL, RATIO_TOL, UTILITY_TOL, leq, within

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ARTIFACT = SHARED / "data/gavel/traces/physical_cluster/artifact_evaluation.trace"

# ---------------------------------------------------------------------------------------------
# Strategies: valid inputs by construction


# ---------------------------------------------------------------------------------------------
# Brute force


def brute_nash(
    usages: list[np.ndarray], values: list[np.ndarray], cap: list[int], skip: int = -1
) -> float:
    """max sum of log values over every integral assignment that fits (app ``skip`` left out)."""
    apps = [a for a in range(len(usages)) if a != skip]
    best = -math.inf
    for combo in itertools.product(*(range(len(usages[a])) for a in apps)):
        use = np.zeros(len(cap), dtype=np.int64)
        for a, b in zip(apps, combo, strict=True):
            use = use + usages[a][b]
        if (use <= np.array(cap)).all():
            best = max(best, sum(math.log(values[a][b]) for a, b in zip(apps, combo, strict=True)))
    return best if apps else 0.0


@settings(max_examples=60)
@given(bid_tables())
def test_partial_allocation_is_nash_optimal_and_its_fractions_match_brute_force(
    data: tuple[list[np.ndarray], list[np.ndarray], list[int]],
) -> None:
    usages, values, cap = data
    pa = partial_allocation(usages, values, cap)
    # z fits and attains the brute-force maximal Nash welfare.
    used = sum(usages[a][b] for a, b in enumerate(pa.choice))
    assert (np.asarray(used) <= np.array(cap)).all()
    chosen = sum(math.log(values[a][b]) for a, b in enumerate(pa.choice))
    best = brute_nash(usages, values, cap)
    assert within(chosen, best, UTILITY_TOL)
    assert within(pa.log_welfare, best, UTILITY_TOL)
    for a in range(len(usages)):
        without = brute_nash(usages, values, cap, skip=a)
        assert within(pa.log_welfare_without[a], without, UTILITY_TOL)
        others = chosen - math.log(values[a][pa.choice[a]])
        expected = math.exp(others - without)
        assert within(pa.fractions[a], min(1.0, expected), UTILITY_TOL)
        # Truthfulness scaling keeps a fraction of the bundle: in (0, 1].
        assert 0.0 < pa.fractions[a] <= 1.0


def test_partial_allocation_closed_form() -> None:
    """One GPU, values 3 and 2: the first app wins it and keeps (1)/(2) of it; the loser, who
    takes nothing, keeps its (empty) bundle whole."""
    pa = partial_allocation(
        [np.array([[0], [1]]), np.array([[0], [1]])],
        [np.array([1.0, 3.0]), np.array([1.0, 2.0])],
        [1],
    )
    assert pa.choice == (1, 0)
    assert pa.fractions[0] == pytest.approx(0.5)
    assert pa.fractions[1] == pytest.approx(1.0)
    # Two GPUs: no contention, both win, nobody gives anything back.
    pa = partial_allocation(
        [np.array([[0], [1]]), np.array([[0], [1]])],
        [np.array([1.0, 3.0]), np.array([1.0, 2.0])],
        [2],
    )
    assert pa.choice == (1, 1) and pa.fractions == (1.0, 1.0)


@settings(max_examples=25)
@given(lease_rounds(max_jobs=4), st.sampled_from([0.0, 0.5]))
def test_the_auction_of_a_round_matches_brute_force(inst: AllocationInstance, f: float) -> None:
    out = themis_round(inst, fairness=f)
    usages = [b.usage for b in out.bids]
    values = [b.values for b in out.bids]
    if usages:
        best = brute_nash(usages, values, list(inst.capacity))
        assert within(out.auction.log_welfare, best, UTILITY_TOL)
    for bid, b, c in zip(out.bids, out.auction.choice, out.auction.fractions, strict=True):
        assert 0.0 < c <= 1.0
        for m, j in zip(bid.jobs, bid.bundles[b], strict=True):
            if j >= 0:  # the gang on one type, for the fraction c of the lease
                assert out.allocation.fractions[m, j] == pytest.approx(c)
                assert out.allocation.fractions[m].sum() == pytest.approx(c)
            else:
                assert out.allocation.fractions[m].sum() == 0.0


# ---------------------------------------------------------------------------------------------
# rho, the knob, leftovers, the exact counterpart


def test_lease_rho_is_the_ftf_objective_when_the_lease_covers_the_job() -> None:
    """A job that finishes inside the lease on type j: its bid rho is the family's FTF objective
    of running on j alone, computed by objective_value (a different code path)."""
    job = AllocationJob(
        job_id="a",
        throughput_steps_per_s=(4.0, 1.0),
        steps_remaining=100.0,
        time_since_start_s=50.0,
        isolated_time_s=20.0,
    )
    inst = AllocationInstance(gpu_types=("v100", "k80"), capacity=(1, 1), jobs=(job,))
    none, on = lease_rho(inst, lease_s=1000.0)
    for j in range(2):
        x = np.zeros((1, 2))
        x[0, j] = 1.0
        assert on[0, j] == pytest.approx(objective_value(inst, x, "ftf"))
    # Nothing in the lease: t + L + sigma/q over c, q the isolated share's rate (1/1 of each type
    # for one job, capped to a time share of 1: half of each).
    q = 0.5 * 4.0 + 0.5 * 1.0
    assert none[0] == pytest.approx((50.0 + 1000.0 + 100.0 / q) / (20.0 + 100.0 / q))
    # A lease shorter than the job: the lease on the type, the isolated share after it.
    _, short = lease_rho(inst, lease_s=10.0)
    assert short[0, 1] == pytest.approx((50.0 + 10.0 + (100.0 - 10.0) / q) / (20.0 + 100.0 / q))


@settings(max_examples=30)
@given(lease_rounds(), st.sampled_from([0.0, 0.3, 0.8, 0.95]))
def test_themis_never_beats_the_exact_min_max_rho_and_always_validates(
    inst: AllocationInstance, f: float
) -> None:
    out = themis_round(inst, fairness=f)
    report = validate(inst, out.allocation, "ftf-perf")
    assert report.ok, report
    exact = solve(inst, "ftf-perf")
    assert exact.bound is not None and exact.objective is not None
    assert leq(exact.bound, out.max_rho, RATIO_TOL)
    assert leq(exact.objective, out.max_rho, RATIO_TOL)
    assert report.objective == out.max_rho  # the validator recomputes the same rho


@settings(max_examples=25)
@given(lease_rounds(ample=True))
def test_without_contention_every_app_gets_its_fastest_type_whole(inst: AllocationInstance) -> None:
    """Every type can hold every gang at once: at f = 0 the Nash optimum gives each job its
    fastest type (rho falls with throughput), nobody is scaled down, and the worst rho is finite
    and no better than the exact LP's."""
    out = themis_round(inst, fairness=0.0)
    active = inst.steps > 0
    assert out.auction.fractions == (1.0,) * len(out.bids)
    best = inst.throughputs.max(axis=1)
    theta = out.allocation.effective_throughput(inst.throughputs)
    assert np.allclose(theta[active], best[active])
    if active.any():
        assert math.isfinite(out.max_rho)
        exact = solve(inst, "ftf-perf")
        assert exact.bound is not None and leq(exact.bound, out.max_rho, RATIO_TOL)


@settings(max_examples=30)
@given(lease_rounds(max_jobs=6))
def test_the_knob_offers_the_worst_and_leftovers_go_to_the_rest(inst: AllocationInstance) -> None:
    by_f = {f: themis_round(inst, fairness=f) for f in (0.0, 0.5, 0.8)}
    n_apps = len(by_f[0.0].apps)
    previous: tuple[str, ...] | None = None
    for f, out in by_f.items():
        k = len(out.participants)
        assert k == (min(n_apps, max(1, math.ceil((1 - f) * n_apps - 1e-9))) if n_apps else 0)
        rho = dict(zip(out.apps, out.rho_empty, strict=True))
        rest = [a for a in out.apps if a not in out.participants]
        if out.participants and rest:
            assert min(rho[a] for a in out.participants) >= max(rho[a] for a in rest)
        if previous is not None:  # a larger f offers to a prefix of the same ranking
            assert set(out.participants) <= set(previous)
        previous = out.participants
        # Work conservation: GPU-time left on a type means no non-participant that can run there
        # has time left in the lease.
        x = out.allocation.fractions
        left = inst.capacities - inst.scale_factors @ x
        index = {j.job_id: m for m, j in enumerate(inst.jobs)}
        for j in range(inst.n_types):
            if left[j] <= CAPACITY_TOL * max(1.0, inst.capacities[j]):
                continue
            for a in rest:
                m = index[a]
                if inst.throughputs[m, j] > 0 and inst.scale_factors[m] <= left[j]:
                    assert x[m].sum() == pytest.approx(1.0)
    assert set(by_f[0.0].participants) == set(by_f[0.0].apps)


@settings(max_examples=30)
@given(lease_rounds(max_jobs=6))
def test_at_f0_no_gpu_is_left_that_a_losing_gang_could_use(inst: AllocationInstance) -> None:
    """Every runnable bundle is worth more than 1, so the Nash optimum never leaves GPUs a loser
    could run on (computed from the integral bundles, before the truthfulness fractions)."""
    out = themis_round(inst, fairness=0.0)
    unused = np.array(inst.capacity, dtype=np.int64)
    losers = []
    for bid, b in zip(out.bids, out.auction.choice, strict=True):
        unused -= bid.usage[b]
        if b == 0:
            losers.extend(bid.jobs)
    assert (unused >= 0).all()
    for m in losers:
        for j in range(inst.n_types):
            if inst.throughputs[m, j] > 0:
                assert inst.jobs[m].scale_factor > unused[j]


def test_grouped_apps_bid_with_their_slowest_job() -> None:
    jobs = tuple(
        AllocationJob(
            job_id=f"j{i}",
            throughput_steps_per_s=(2.0 + i, 1.0),
            steps_remaining=5000.0,
            time_since_start_s=100.0 * i,
        )
        for i in range(3)
    )
    inst = AllocationInstance(gpu_types=("v100", "k80"), capacity=(1, 2), jobs=jobs)
    out = themis_round(inst, fairness=0.0, apps={"j0": "u", "j1": "u"})
    assert out.apps == ("u", "j2")
    none, on = lease_rho(inst, 600.0)
    bid = out.bids[out.participants.index("u")]
    assert len(bid.bundles) == 3 * 3 - 1  # both on the single v100 does not fit
    for combo, rho in zip(bid.bundles, bid.rho, strict=True):
        want = max(on[m, j] if j >= 0 else none[m] for m, j in zip((0, 1), combo, strict=True))
        assert rho == pytest.approx(want)
    assert validate(inst, out.allocation).ok
    with pytest.raises(InvalidInstanceError) as err:
        themis_round(inst, apps={"nope": "u"})
    assert err.value.field == "apps['nope']"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"fairness": 1.0}, "fairness"),
        ({"fairness": -0.1}, "fairness"),
        ({"fairness": float("nan")}, "fairness"),
        ({"fairness": True}, "fairness"),
        ({"lease_s": 0.0}, "lease_s"),
        ({"lease_s": -600.0}, "lease_s"),
        ({"lease_s": float("inf")}, "lease_s"),
    ],
)
def test_bad_options_name_their_field(kwargs: dict[str, float], field: str) -> None:
    inst = AllocationInstance(
        gpu_types=("v100",),
        capacity=(1,),
        jobs=(AllocationJob(job_id="a", throughput_steps_per_s=(1.0,)),),
    )
    with pytest.raises(InvalidInstanceError) as err:
        themis(inst, **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field
    with pytest.raises(InvalidInstanceError) as err:
        Themis(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_auction_sizes_are_checked_against_the_budgets() -> None:
    jobs = tuple(
        AllocationJob(job_id=f"j{i}", throughput_steps_per_s=(1.0, 2.0, 3.0), steps_remaining=100.0)
        for i in range(6)
    )
    inst = AllocationInstance(gpu_types=("a", "b", "c"), capacity=(6, 6, 6), jobs=jobs)
    with limits.override(max_events=10), pytest.raises(InvalidInstanceError) as err:
        themis_round(inst, fairness=0.0)
    assert err.value.field == "apps"
    with limits.override(max_array_cells=100), pytest.raises(InvalidInstanceError) as err:
        themis_round(inst, fairness=0.0)
    assert err.value.field == "capacity"
    with pytest.raises(InvalidInstanceError) as err:
        Themis(group_by="vc")  # type: ignore[arg-type]
    assert err.value.field == "group_by"


# ---------------------------------------------------------------------------------------------
# The simulator policy


@pytest.mark.parametrize("group_by", ["job", "user"])
def test_the_policy_runs_leases_and_its_runs_validate(group_by: str) -> None:
    assert "themis" in POLICIES and isinstance(make_policy("themis"), Themis)
    world = sim.generate_instance(8, "v100=2,k80=2", seed=3)
    if group_by == "user":
        import dataclasses

        jobs = tuple(dataclasses.replace(j, user=f"u{j.index % 2}") for j in world.jobs)
        world = dataclasses.replace(world, jobs=jobs)
    policy = Themis(fairness=0.5, lease_s=300.0, group_by=group_by)  # type: ignore[arg-type]
    result = sim.simulate(world, policy)
    assert sim.validate(world, result).ok
    assert policy.leases and all(1 <= lease.participants <= lease.apps for lease in policy.leases)
    assert result.to_frame()["completion"].notna().all()


@pytest.mark.skipif(not ARTIFACT.exists(), reason="../shared (Gavel traces) is absent")
def test_compare_on_the_artifact_trace_lists_themis_beside_the_exact_ftf() -> None:
    from optsched.traces import read_trace

    cluster = sim.parse_cluster("v100=8,p100=16,k80=24")
    table = sim.compare(read_trace(str(ARTIFACT)), ["themis", "ftf-perf"], cluster=cluster)
    for name in ("themis", "ftf-perf"):
        row = table.metrics[name]
        assert row["valid"] and row["finished"] == 15
        assert math.isfinite(row["jct_mean"]) and math.isfinite(row["makespan"])
        assert math.isfinite(row["rho_max"])
