"""OASiS online: feasibility, the primal-dual bookkeeping, ALG <= OPT <= D and Theorem 4."""

from __future__ import annotations

import numpy as np
import pytest
from brute.oasis import exhaustive_optimum
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from strategies.oasis import roomy_instances, tiny_instances, works

from optsched.online.oasis import solve
from optsched.online.oasis.competitive import PAPER_BAND, RATIO_TOL
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.online import SMALL_DEMAND, OASiS, dual_bound
from optsched.online.oasis.oracle import best_schedule_reference
from optsched.online.oasis.prices import PriceParams, estimate_prices
from optsched.online.oasis.schedule import validate

#: Absolute slack when comparing payoffs recomputed in a different order.
PAYOFF_TOL = 1e-7


def le(a: float, b: float) -> bool:
    """``a <= b`` up to :data:`RATIO_TOL` relative (the ILP is optimal only to its gap)."""
    return a <= b + RATIO_TOL * max(1.0, abs(b))


small = tiny_instances(max_jobs=4, max_servers=2, max_horizon=5, max_chunks=3)


# ------------------------------------------------------------------------------------------
# Feasibility and bookkeeping (no solver needed)
# ------------------------------------------------------------------------------------------


@given(small, works)
def test_schedule_is_valid_and_decisions_match_payoffs(inst, work):
    run = OASiS(work=work).run(inst)
    rep = validate(inst, run.schedule)
    assert rep.ok, rep.violations
    assert run.utility == pytest.approx(rep.objective)
    for i, js in enumerate(run.schedule.jobs):
        assert js.admitted == (run.payoffs[i] > 0)
    assert len(run.decision_seconds) == inst.n_jobs
    assert run.proven_bound == pytest.approx(2 * run.alpha)
    assert run.dual_bound is not None and le(run.utility, run.dual_bound)


def _formula(used, cap, upper, lower):
    """L (U/L)^(g/c) for priced resources, 0 otherwise; written out independently."""
    out = np.zeros_like(used)
    for idx in np.ndindex(used.shape):
        s, r = idx[-2], idx[-1]
        if upper[r] > 0:
            frac = used[idx] / cap[s, r] if cap[s, r] > 0 else 0.0
            out[idx] = lower * (upper[r] / lower) ** frac
    return out


@settings(max_examples=30)
@given(small, works)
def test_replay_prices_and_decisions(inst, work):
    """Replay the run from its schedule: recompute usage and prices before each arrival with
    the plain formula, check every admitted job's payoff from its own schedule, and ask the
    reference oracle whether each rejected job really had no positive payoff."""
    run = OASiS(work=work).run(inst)
    p = run.params
    T = inst.horizon
    wused = np.zeros((T, *inst.worker_capacity.shape))
    pused = np.zeros((T, *inst.ps_capacity.shape))
    order = sorted(range(inst.n_jobs), key=lambda j: (inst.jobs[j].arrival, j))
    for i in order:
        wp = _formula(wused, inst.worker_capacity, p.upper_worker, p.lower_worker)
        pp = _formula(pused, inst.ps_capacity, p.upper_ps, p.lower_ps)
        js = run.schedule.jobs[i]
        if js.admitted:
            cost = sum(n * float(wp[t, h] @ inst.worker_demand[i]) for t, h, n in js.workers)
            cost += sum(n * float(pp[t, k] @ inst.ps_demand[i]) for t, k, n in js.ps)
            assert js.utility - cost == pytest.approx(run.payoffs[i], abs=PAYOFF_TOL)
            for t, h, n in js.workers:
                wused[t, h] += n * inst.worker_demand[i]
            for t, k, n in js.ps:
                pused[t, k] += n * inst.ps_demand[i]
        else:
            ref = best_schedule_reference(inst, i, wp, pp, wused, pused, work=work)
            assert ref.payoff <= PAYOFF_TOL
    final_w = _formula(wused, inst.worker_capacity, p.upper_worker, p.lower_worker)
    final_p = _formula(pused, inst.ps_capacity, p.upper_ps, p.lower_ps)
    assert np.allclose(run.worker_prices, final_w, rtol=1e-9)
    assert np.allclose(run.ps_prices, final_p, rtol=1e-9)


@given(small, works)
def test_online_dual_grows_by_at_most_kappa_alg(inst, work):
    """Lemma 1/2 in discrete form: D_online - D_0 <= max(1, kappa) * ALG."""
    run = OASiS(work=work, certify=False).run(inst)
    assert run.online_dual - run.initial_dual <= max(1.0, run.kappa) * run.utility + 1e-6 * max(
        1.0, run.online_dual
    )


@given(small)
def test_price_sources(inst):
    hind = OASiS().run(inst)
    # A warm-up window covering every job ends with the hindsight parameters.
    warm = OASiS(prices="warmup", warmup=max(1, inst.n_jobs)).run(inst)
    assert warm.params is not None and hind.params is not None
    assert np.allclose(warm.params.upper_worker, hind.params.upper_worker)
    assert warm.params.lower_worker == pytest.approx(hind.params.lower_worker)
    assert warm.params.source == "warmup"
    # Prices given by hand and a history both run and validate; the multiplier scales U.
    given_p = PriceParams.given(
        inst, {"gpu": 50.0, "bandwidth": 10.0}, {"bandwidth": 5.0}, 0.01, 0.01
    )
    for alg in (
        OASiS(prices=given_p),
        OASiS(prices=given_p, multiplier=2.0),
        OASiS(prices=list(inst.jobs[:1])),
        OASiS(multiplier=0.2),
        OASiS(prices="warmup", warmup=1),
    ):
        run = alg.run(inst)
        assert validate(inst, run.schedule).ok
    doubled = OASiS(prices=given_p, multiplier=2.0).run(inst).params
    assert doubled is not None and doubled.upper_worker[0] == pytest.approx(100.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="prices"):
        OASiS(prices="oracle")
    with pytest.raises(ValueError, match="multiplier"):
        OASiS(multiplier=0)
    with pytest.raises(ValueError, match="warmup"):
        OASiS(warmup=0)
    with pytest.raises(ValueError, match="work"):
        OASiS(work="epochs")
    inst = generate_instance(2, 1, 1, 4, seed=0)
    other = PriceParams(("gpu",), np.ones(1), np.ones(1), 0.1, 0.1)
    with pytest.raises(ValueError, match="resources"):
        OASiS(prices=other).run(inst)


def test_empty_instance():
    inst = generate_instance(0, 1, 1, 3, seed=0)
    run = OASiS().run(inst)
    assert run.utility == 0 and run.admitted == [] and run.dual_bound == 0.0


# ------------------------------------------------------------------------------------------
# Against the optimum
# ------------------------------------------------------------------------------------------


def _opt(inst: OasisInstance) -> float:
    res = solve(inst)
    assert res.status.value == "optimal"
    assert res.objective is not None
    return float(res.objective)


def assert_bracketed(run, opt: float) -> None:
    """ALG <= OPT <= the run's certificate, which a certifying run always has."""
    assert run.dual_bound is not None, "a certifying run must report its dual bound"
    assert le(run.utility, opt) and le(opt, run.dual_bound)


@pytest.mark.solver("highs")
@settings(max_examples=25)
@given(small, works)
def test_alg_le_opt_le_dual(inst, work):
    """ALG <= OPT <= D on every instance; OPT/ALG <= 2 alpha where Theorem 4 applies, and where
    it does not, the failing assumptions are recorded (Hypothesis events) rather than skipped."""
    run = OASiS(work=work, tighten=True).run(inst)
    opt = _opt(inst)
    assert le(run.utility, opt)
    assert run.dual_bound is not None and le(opt, run.dual_bound)
    plain = dual_bound(inst, run.worker_prices, run.ps_prices)
    assert le(opt, plain.value) and le(run.dual_bound, plain.value)
    check = run.theorem_check(opt)
    if check.applies:
        assert le(opt, run.proven_bound * run.utility)
        event("theorem applies")
    else:
        for reason in check.reasons:
            event(f"theorem does not apply: {reason.split(':')[0]}")
        note(f"theorem does not apply: {check.reasons}")
        assert check.reasons


@pytest.mark.solver("highs")
@settings(max_examples=25)
@given(roomy_instances())
def test_theorem_holds_where_it_applies(inst):
    run = OASiS(work="worker-slots", tighten=True).run(inst)
    opt = _opt(inst)
    check = run.theorem_check(opt)
    note(str(check.to_dict()))
    assert check.assumptions["small_demands"]["holds"]
    assert check.assumptions["short_chunks"]["holds"]
    assert_bracketed(run, opt)
    if opt > 0:
        # Hindsight prices, nothing clipped, OPT > 0, and eta gives D0 <= OPT/2: it applies.
        assert check.applies, check.reasons
        assert le(opt, run.proven_bound * run.utility)


@settings(max_examples=25)
@given(tiny_instances(max_jobs=2, max_servers=2, max_horizon=3), st.integers(0, 2**32 - 1))
def test_certificate_is_valid_for_any_prices(inst, seed):
    """Weak duality needs only p >= 0: random prices, checked against exhaustive search."""
    rng = np.random.default_rng(seed)
    T = inst.horizon
    wp = rng.exponential(rng.choice([0.01, 1.0, 10.0]), (T, *inst.worker_capacity.shape))
    pp = rng.exponential(rng.choice([0.01, 1.0, 10.0]), (T, *inst.ps_capacity.shape))
    opt = exhaustive_optimum(inst)
    cert = dual_bound(inst, wp, pp)
    assert le(opt, cert.value)
    tight = dual_bound(inst, wp, pp, tighten=True)
    assert le(opt, tight.value) and tight.value <= cert.value + 1e-12
    zero = dual_bound(inst, 0 * wp, 0 * pp)
    assert le(opt, zero.value)


@pytest.mark.solver("highs")
def test_theorem_check_table_on_generated_instances():
    """Generated instances mostly violate the small-demand assumption: count them openly."""
    rows = []
    for seed in range(4):
        inst = generate_instance(6, 2, 2, 6, seed=seed, scale=0.05)
        run = OASiS(tighten=True).run(inst)
        opt = _opt(inst)
        check = run.theorem_check(opt)
        rows.append((seed, check.applies, check.reasons))
        assert_bracketed(run, opt)
        if not check.applies:
            assert any(r.startswith("small_demands") for r in check.reasons)
    print(rows)  # the table shows with -s and on failure
    assert all(isinstance(a, bool) for _, a, _ in rows)
    assert SMALL_DEMAND == 0.1


# ------------------------------------------------------------------------------------------
# Regression table on the paper's Fig. 5 setting
# ------------------------------------------------------------------------------------------

#: (seed, worker servers, PS servers, lowest priority) -> (ALG, OPT) computed when the table was
#: set up (10 jobs, T = 10, scale 0.05, OASiS with hindsight prices, chunk-epochs). The paper
#: reports OPT/OASiS in 1.1-1.5 for this setting; see the docs for how ours compare.
FIG5_TABLE = {
    (0, 2, 1, 1.0): (273.405, 353.487020),
    (1, 3, 3, 25.0): (556.406, 556.405649),
    (2, 4, 4, 50.0): (616.489, 616.488932),
    (3, 6, 6, 75.0): (793.279, 793.278730),
    (4, 1, 2, 1.0): (418.860, 422.171279),
    (5, 3, 2, 25.0): (622.353, 639.825460),
    (6, 5, 4, 50.0): (592.522, 593.916534),
    (7, 2, 2, 75.0): (656.804, 675.617958),
}


@pytest.mark.solver("highs")
def test_fig5_regression_table():
    ratios = []
    lines = []
    for (seed, H, K, low), (alg_ref, opt_ref) in FIG5_TABLE.items():
        inst = generate_instance(10, H, K, 10, seed=seed, scale=0.05, priority=(low, 100.0))
        run = OASiS(tighten=True).run(inst)
        assert validate(inst, run.schedule).ok
        opt = _opt(inst)
        assert run.utility == pytest.approx(alg_ref, rel=1e-5)
        assert opt == pytest.approx(opt_ref, rel=1e-5)
        assert_bracketed(run, opt)
        ratio = opt / run.utility
        ratios.append(ratio)
        band = (
            "in"
            if PAPER_BAND[0] <= ratio <= PAPER_BAND[1]
            else ("below" if ratio < PAPER_BAND[0] else "above")
        )
        lines.append(f"seed {seed} H={H} K={K} priority>={low}: OPT/ALG {ratio:.3f} ({band})")
        assert le(ratio, run.proven_bound)
    print("\n".join(lines))  # the table shows with -s and on failure
    # The paper's band is 1.1-1.5; on these instances OASiS is at least as close to OPT.
    assert max(ratios) <= PAPER_BAND[1]
    assert float(np.median(ratios)) <= PAPER_BAND[0]


def test_estimate_matches_run_parameters():
    inst = generate_instance(5, 2, 2, 6, seed=2)
    run_params = OASiS(certify=False).run(inst).params
    est = estimate_prices(inst)
    assert run_params is not None
    assert np.array_equal(run_params.upper_worker, est.upper_worker)
    assert np.array_equal(run_params.upper_ps, est.upper_ps)
    assert run_params.lower_worker == est.lower_worker and run_params.lower_ps == est.lower_ps
