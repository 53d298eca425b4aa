"""OASiS price functions: equations (22)-(26), the zero-demand rule, estimates and files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given
from strategies.oasis import tiny_instances

from optsched.errors import InvalidInstanceError
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.oracle import best_schedule
from optsched.online.oasis.prices import (
    L_FLOOR,
    PriceParams,
    estimate_prices,
    load_prices,
    price_schema,
)

REL = 1e-12


def _job(arrival, epochs, chunks, utility, wd, sd):
    return {
        "arrival": arrival,
        "epochs": epochs,
        "chunks": chunks,
        "minibatches": 1,
        "minibatch_s": 1.0,  # w = 1 worker-slot per chunk-epoch with 1-second slots
        "gradient_mb": 0.0,
        "worker_demand": wd,
        "ps_demand": sd,
        "utility": utility,
    }


def _hand() -> OasisInstance:
    return OasisInstance.from_dict(
        {
            "horizon": 4,
            "slot_s": 1.0,
            "resources": ["gpu", "bandwidth"],
            "worker_servers": [{"capacity": {"gpu": 4, "bandwidth": 10}}],
            "ps_servers": [{"capacity": {"gpu": 0, "bandwidth": 20}}],
            "jobs": [
                _job(
                    0,
                    1,
                    2,
                    {"kind": "constant", "value": 8},
                    {"gpu": 1, "bandwidth": 1},
                    {"bandwidth": 2},
                ),
                _job(
                    1,
                    2,
                    1,
                    {"kind": "linear", "value": 6, "slope": 1},
                    {"gpu": 2, "bandwidth": 0.5},
                    {"bandwidth": 1},
                ),
            ],
        }
    )


def test_formulas_by_hand():
    """Job A: W = 2, shortest duration 1, f = 8. Job B: W = 2, shortest 2, f(2) = 5, f(3) = 4.

    U1 = (max(8/1, 5/2), max(8/1, 5/0.5)) = (8, 10); U2 = (0 (no PS GPU demand), max(8/2, 5/1)).
    eta1 = max(1, 4*14/(2*2), 4*14/(2*2.5)) = 14, L1 = min(8/4, 4/5)/(4*14) = 0.8/56.
    eta2 = max(1, 4*20/(2*2), 4*20/(2*1)) = 40, L2 = min(8/4, 4/2)/(4*40) = 1/80.
    """
    p = estimate_prices(_hand())
    assert p.upper_worker == pytest.approx([8.0, 10.0], rel=REL)
    assert p.upper_ps == pytest.approx([0.0, 5.0], rel=REL)
    assert p.eta_worker == pytest.approx(14.0, rel=REL)
    assert p.eta_ps == pytest.approx(40.0, rel=REL)
    assert p.lower_worker == pytest.approx(0.8 / 56, rel=REL)
    assert p.lower_ps == pytest.approx(1 / 80, rel=REL)
    assert p.alpha == pytest.approx(math.log(10 / (0.8 / 56)), rel=REL)
    assert p.proven_bound == pytest.approx(2 * p.alpha)
    assert not p.clipped and p.source == "hindsight"
    # D0 = T (L1 * (4 + 10) + L2 * 20): the PS GPU is not priced.
    assert p.initial_dual(_hand()) == pytest.approx(4 * (0.8 / 56 * 14 + 20 / 80), rel=REL)


def test_price_function_endpoints_and_monotonicity():
    inst = _hand()
    p = estimate_prices(inst)
    cap = inst.worker_capacity
    for frac in (0.0, 0.25, 0.5, 1.0):
        prices = p.worker_prices(frac * cap[None], cap)[0, 0]
        expected = p.lower_worker * (p.upper_worker / p.lower_worker) ** frac
        assert prices == pytest.approx(expected, rel=1e-12)
    assert p.worker_prices(0 * cap, cap)[0] == pytest.approx([p.lower_worker] * 2)
    assert p.worker_prices(cap, cap)[0] == pytest.approx(p.upper_worker)
    grid = np.linspace(0, 1, 11)[:, None, None] * cap[None]
    prices = p.worker_prices(grid, cap)[:, 0, :]
    assert np.all(np.diff(prices, axis=0) >= 0)
    # Unpriced resources (no PS demands a GPU) cost nothing; zero capacity keeps L.
    ps = p.ps_prices(inst.ps_capacity[None] * 0.5, inst.ps_capacity)
    assert ps[0, 0, 0] == 0.0 and ps[0, 0, 1] > p.lower_ps


def test_multiplier_and_clipping():
    inst = _hand()
    p = estimate_prices(inst)
    q = estimate_prices(inst, multiplier=3.0)
    assert q.upper_worker == pytest.approx(3 * p.upper_worker)
    assert q.alpha == pytest.approx(p.alpha + math.log(3))
    tiny = p.scaled(1e-9)
    assert np.all(tiny.upper_worker[tiny.upper_worker > 0] >= tiny.lower_worker)
    assert tiny.clipped
    with pytest.raises(InvalidInstanceError, match="multiplier"):
        p.scaled(0.0)
    # A job worth nothing at the horizon would make L = 0 and alpha infinite: L is clipped.
    data = inst.model_dump(mode="json")
    data["jobs"][1]["utility"] = {"kind": "step", "value": 6, "deadline": 2, "late_value": 0}
    clipped = estimate_prices(OasisInstance.from_dict(data))
    assert clipped.clipped
    top = max(clipped.upper_worker.max(), clipped.upper_ps.max())
    assert clipped.lower_worker == pytest.approx(L_FLOOR * top)
    assert clipped.alpha == pytest.approx(-math.log(L_FLOOR), rel=1e-9)


def test_history_estimates_use_the_given_jobs():
    inst = _hand()
    only_a = estimate_prices(inst, inst.jobs[:1])
    assert only_a.source == "history"
    assert only_a.upper_worker == pytest.approx([8.0, 8.0])
    assert estimate_prices(inst, inst).upper_worker == pytest.approx([8.0, 10.0])
    empty = estimate_prices(inst, [])
    assert not np.any(empty.upper_worker) and empty.alpha == 1.0


def test_given_prices_validate_fields(tmp_path):
    inst = _hand()
    p = PriceParams.given(inst, {"gpu": 5.0}, {"bandwidth": 2.0}, 0.1, 0.2)
    assert p.upper_worker.tolist() == [5.0, 0.0] and p.upper_ps.tolist() == [0.0, 2.0]
    with pytest.raises(InvalidInstanceError) as err:
        PriceParams.given(inst, {"tpu": 5.0}, {}, 0.1, 0.2)
    assert err.value.field == "upper_worker.tpu"
    with pytest.raises(InvalidInstanceError) as err:
        PriceParams.given(inst, {"gpu": 0.05}, {}, 0.1, 0.2)
    assert err.value.field == "upper_worker.gpu"
    with pytest.raises(InvalidInstanceError) as err:
        PriceParams.given(inst, {}, {}, 0.1, -1.0)
    assert err.value.field == "lower_ps"
    f = tmp_path / "prices.json"
    f.write_text(json.dumps(p.to_dict() | {"lower_worker": 0.1}))
    with pytest.raises(InvalidInstanceError):  # extra keys (alpha, source...) are refused
        load_prices(f, inst)
    f.write_text(
        json.dumps(
            {"upper_worker": {"gpu": 5}, "upper_ps": {}, "lower_worker": 0.1, "lower_ps": 0.2}
        )
    )
    assert load_prices(f, inst).upper_worker.tolist() == [5.0, 0.0]
    f.write_text(
        json.dumps({"upper_worker": {}, "upper_ps": {}, "lower_worker": 0, "lower_ps": 0.2})
    )
    with pytest.raises(InvalidInstanceError, match="lower_worker"):
        load_prices(f, inst)
    assert set(price_schema()["required"]) == {
        "upper_worker",
        "upper_ps",
        "lower_worker",
        "lower_ps",
    }


@given(tiny_instances(max_jobs=3))
def test_initial_dual_is_at_most_half_of_any_jobs_latest_utility(inst):
    """The eta condition: D0 <= f_j(T - a_j) / 2 for every job j (when L is not clipped)."""
    p = estimate_prices(inst)
    assume(not p.clipped)
    d0 = p.initial_dual(inst)
    for j in inst.jobs:
        latest = j.utility(float(inst.horizon - j.arrival))
        assert d0 <= latest / 2 * (1 + 1e-9)


@given(tiny_instances(max_jobs=3))
def test_full_price_makes_every_schedule_worthless(inst):
    """Appendix A (iii): at price U^r any schedule pays at least f_i(shortest) for one worker."""
    p = estimate_prices(inst)
    T = inst.horizon
    wp = np.broadcast_to(
        p.worker_prices(inst.worker_capacity, inst.worker_capacity),
        (T, *inst.worker_capacity.shape),
    ).copy()
    pp = np.zeros((T, *inst.ps_capacity.shape))
    for i in range(inst.n_jobs):
        for work in ("chunks", "worker-slots"):
            res = best_schedule(inst, i, wp, pp, work=work)
            assert res.payoff <= 1e-9 * max(1.0, res.utility)


@given(tiny_instances(max_jobs=3))
def test_idle_price_leaves_half_the_utility(inst):
    """Appendix A (i): on an idle cluster a schedulable job keeps >= f_i(T - a_i) / 2.

    With ``work="worker-slots"`` a schedule finishing by the horizon uses at most ceil(W_i)
    worker-slots and as many PSs, so its cost is at most f_i(T - a_i)(1/(4 eta1) + 1/(4 eta2)).
    """
    p = estimate_prices(inst)
    assume(not p.clipped)  # the bound is proved for unclipped prices only
    T = inst.horizon
    wp = p.worker_prices(np.zeros((T, *inst.worker_capacity.shape)), inst.worker_capacity)
    pp = p.ps_prices(np.zeros((T, *inst.ps_capacity.shape)), inst.ps_capacity)
    for i, job in enumerate(inst.jobs):
        res = best_schedule(inst, i, wp, pp, work="worker-slots")
        free = best_schedule(inst, i, 0 * wp, 0 * pp, work="worker-slots")
        # Prices never make a job unschedulable: only the capacities and the horizon do.
        assert res.feasible == free.feasible
        if free.feasible:
            latest = job.utility(float(T - job.arrival))
            assert res.payoff >= latest / 2 - 1e-9 * max(1.0, latest)
