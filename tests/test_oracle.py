"""The OASiS dual oracle: Numba kernel vs the paper-literal reference vs brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from strategies.oasis import priced

from optsched.errors import InvalidInstanceError
from optsched.online.oasis.engine import FIT_TOL, work_units
from optsched.online.oasis.instance import OasisInstance, ceil_work
from optsched.online.oasis.oracle import (
    MAX_DP_CELLS,
    OracleResult,
    best_schedule,
    best_schedule_reference,
)
from optsched.online.oasis.schedule import build_schedule, validate

#: Payoffs agree to this absolute tolerance (float sums in different orders).
PAYOFF_TOL = 1e-9


def assert_same_result(a: OracleResult, b: OracleResult) -> None:
    if math.isinf(a.payoff) or math.isinf(b.payoff):
        assert a.payoff == b.payoff
        return
    assert a.payoff == pytest.approx(b.payoff, abs=PAYOFF_TOL)
    assert a.cost == pytest.approx(b.cost, abs=PAYOFF_TOL)
    assert a.completion == b.completion


@settings(max_examples=150)
@given(priced())
def test_kernel_matches_reference(case):
    inst, wp, pp, wu, pu, work = case
    assert_same_result(
        best_schedule(inst, 0, wp, pp, wu, pu, work=work),
        best_schedule_reference(inst, 0, wp, pp, wu, pu, work=work),
    )


@given(priced())
def test_floor_keeps_positive_payoffs_exact(case):
    inst, wp, pp, wu, pu, work = case
    full = best_schedule(inst, 0, wp, pp, wu, pu, work=work)
    floored = best_schedule(inst, 0, wp, pp, wu, pu, work=work, floor=0.0)
    if full.payoff > 0:
        assert_same_result(full, floored)
    else:
        assert floored.payoff <= 0 or math.isinf(floored.payoff)
    ref = best_schedule_reference(inst, 0, wp, pp, wu, pu, work=work, floor=0.0)
    assert max(0.0, floored.payoff) == pytest.approx(max(0.0, ref.payoff), abs=PAYOFF_TOL)


def _room(cap: np.ndarray, used: np.ndarray | None, demand: np.ndarray, t: int, s: int) -> int:
    best = 10**9
    for r in range(cap.shape[1]):
        if demand[r] > 0:
            free = cap[s, r] - (0.0 if used is None else used[t, s, r])
            best = min(
                best, math.floor(free / demand[r] + FIT_TOL * max(1.0, abs(free / demand[r])))
            )
    return max(0, best)


def _brute_force(inst: OasisInstance, wp, pp, wu, pu, work: str) -> float:
    """Max payoff by exhaustive search: every per-slot count vector, every placement."""
    job = inst.jobs[0]
    a, T, N = job.arrival, inst.horizon, job.chunks
    H, K = len(inst.worker_servers), len(inst.ps_servers)
    w = job.work_per_chunk(inst.slot_s)
    wd, sd = inst.worker_demand[0], inst.ps_demand[0]

    def mincost(t: int, n: int) -> float:
        """Cheapest placement of n workers and any valid number of PSs, by enumeration."""
        if n == 0:
            return 0.0
        wr = [min(N, _room(inst.worker_capacity, wu, wd, t, h)) for h in range(H)]
        pr = [min(N, _room(inst.ps_capacity, pu, sd, t, k)) for k in range(K)]
        best = math.inf
        for y in itertools.product(*(range(r + 1) for r in wr)):
            if sum(y) != n:
                continue
            cy = sum(y[h] * float(wp[t, h] @ wd) for h in range(H))
            for z in itertools.product(*(range(r + 1) for r in pr)):
                m = sum(z)
                if m > n or job.b * n > job.B * m:
                    continue
                best = min(best, cy + sum(z[k] * float(pp[t, k] @ sd) for k in range(K)))
        return best

    if work == "chunks":
        need = job.chunk_epochs

        def units(n: int) -> int:
            return max(
                [d for d in range(need + 1) if (0 if d == 0 else max(1, ceil_work(d * w))) <= n]
            )
    else:
        need = max(1, ceil_work(job.chunk_epochs * w))

        def units(n: int) -> int:
            return n

    slots = list(range(a, T))
    table = {(t, n): mincost(t, n) for t in slots for n in range(N + 1)}
    best = -math.inf
    for counts in itertools.product(range(N + 1), repeat=len(slots)):
        if sum(units(n) for n in counts) < need or not any(counts):
            continue
        cost = sum(table[(t, n)] for t, n in zip(slots, counts, strict=True))
        if math.isinf(cost):
            continue
        last = max(t for t, n in zip(slots, counts, strict=True) if n > 0)
        best = max(best, job.utility(float(last + 1 - a)) - cost)
    return best


@settings(max_examples=60)
@given(priced(max_servers=2, max_horizon=3, max_chunks=3))
def test_payoff_is_the_true_maximum(case):
    inst, wp, pp, wu, pu, work = case
    res = best_schedule(inst, 0, wp, pp, wu, pu, work=work)
    brute = _brute_force(inst, wp, pp, wu, pu, work)
    if math.isinf(brute):
        assert math.isinf(res.payoff)
    else:
        assert res.payoff == pytest.approx(brute, abs=PAYOFF_TOL)


@given(priced())
def test_schedule_is_feasible_and_costed(case):
    """The returned deployment fits the residual capacities, satisfies the job's rules and
    costs what the oracle says, recomputed from scratch."""
    inst, wp, pp, wu, pu, work = case
    res = best_schedule(inst, 0, wp, pp, wu, pu, work=work)
    assume(res.feasible)
    sched = build_schedule(inst, [(res.workers, res.ps)])
    rep = validate(inst, sched)
    assert rep.ok, rep.violations
    assert res.completion == sched.jobs[0].completion
    cost = sum(n * float(wp[t, h] @ inst.worker_demand[0]) for t, h, n in res.workers)
    cost += sum(n * float(pp[t, k] @ inst.ps_demand[0]) for t, k, n in res.ps)
    assert res.cost == pytest.approx(cost, abs=PAYOFF_TOL)
    assert res.payoff == pytest.approx(sched.jobs[0].utility - cost, abs=PAYOFF_TOL)
    for t, h, n in res.workers:
        assert n <= _room(inst.worker_capacity, wu, inst.worker_demand[0], t, h)
    for t, k, n in res.ps:
        assert n <= _room(inst.ps_capacity, pu, inst.ps_demand[0], t, k)
    if work == "chunks":
        w = inst.work_per_chunk[0]
        per_slot: dict[int, int] = {}
        for t, _, n in res.workers:
            per_slot[t] = per_slot.get(t, 0) + n
        u = work_units(inst, 0, "chunks")
        assert sum(int(u.per_workers[n]) for n in per_slot.values()) >= inst.jobs[0].chunk_epochs
        assert all(n <= inst.jobs[0].chunks for n in per_slot.values())
        assert w >= 0


def _hand_instance() -> OasisInstance:
    return OasisInstance.from_dict(
        {
            "horizon": 3,
            "slot_s": 1.0,
            "resources": ["cpu", "bandwidth"],
            "worker_servers": [
                {"capacity": {"cpu": 2, "bandwidth": 10}},
                {"capacity": {"cpu": 2, "bandwidth": 10}},
            ],
            "ps_servers": [{"capacity": {"cpu": 4, "bandwidth": 10}}],
            "jobs": [
                {
                    "arrival": 0,
                    "epochs": 1,
                    "chunks": 2,
                    "minibatches": 1,
                    "minibatch_s": 1.0,
                    "gradient_mb": 0.0,
                    "worker_demand": {"cpu": 1, "bandwidth": 1},
                    "ps_demand": {"cpu": 1, "bandwidth": 2},
                    "utility": {"kind": "linear", "value": 10, "slope": 4},
                }
            ],
        }
    )


def test_hand_computed_example():
    """f = 10, 6, 2 for durations 1, 2, 3; two worker-slots of work; one PS per <= 2 workers.

    Worker unit costs (h0, h1) per slot: (4, 4.5), (1, 5), (0.5, 0.5); a PS costs 1; each
    worker server holds two workers. Deadline 0: 4 + 4 + 1 = 9 (payoff 1). Deadline 1: both
    workers on h0 in slot 1, 1 + 1 + 1 = 3 (payoff 3). Deadline 2: 0.5 + 0.5 + 1 = 2
    (payoff 0). Best: payoff 3.
    """
    inst = _hand_instance()
    wp = np.zeros((3, 2, 2))
    wp[:, :, 0] = [[4, 4.5], [1, 5], [0.5, 0.5]]
    pp = np.zeros((3, 1, 2))
    pp[:, :, 0] = 1.0
    for fn in (best_schedule, best_schedule_reference):
        res = fn(inst, 0, wp, pp)
        assert res.payoff == pytest.approx(3.0)
        assert res.completion == 2
        assert res.workers == ((1, 0, 2),)
        assert res.ps == ((1, 0, 1),)
    # With h0 full in slot 1, deadline 1 costs at least 4 + 1 + 5 + 1 = 11 > 6, so the best is
    # deadline 0 (payoff 1).
    used = np.zeros((3, 2, 2))
    used[1, 0, 0] = 2.0
    res = best_schedule(inst, 0, wp, pp, used, None)
    ref = best_schedule_reference(inst, 0, wp, pp, used, None)
    assert_same_result(res, ref)
    assert res.payoff == pytest.approx(1.0)
    assert res.completion == 1


def test_infeasible_job_has_no_schedule():
    inst = _hand_instance()
    wp = np.zeros((3, 2, 2))
    pp = np.zeros((3, 1, 2))
    full = np.zeros((3, 2, 2))
    full[:, :, 0] = 2.0  # every worker server's CPUs are taken
    for fn in (best_schedule, best_schedule_reference):
        res = fn(inst, 0, wp, pp, full, None)
        assert not res.feasible and res.payoff == -math.inf


def test_bad_inputs_are_rejected():
    inst = _hand_instance()
    wp = np.zeros((3, 2, 2))
    pp = np.zeros((3, 1, 2))
    with pytest.raises(InvalidInstanceError, match="worker_prices: must have shape"):
        best_schedule(inst, 0, wp[:2], pp)
    with pytest.raises(ValueError, match=">= 0"):
        best_schedule(inst, 0, -1 - wp, pp)
    with pytest.raises(InvalidInstanceError, match="work: must be one of"):
        best_schedule(inst, 0, wp, pp, work="epochs")
    with pytest.raises(InvalidInstanceError, match="units: were computed"):
        best_schedule(inst, 0, wp, pp, units=work_units(inst, 0, "worker-slots"))
    with pytest.raises(InvalidInstanceError, match="job index 3 out of range"):
        best_schedule(inst, 3, wp, pp)


def test_oversized_dp_is_refused_with_the_job_named():
    data = _hand_instance().model_dump(mode="json")
    data["horizon"] = 100
    data["jobs"][0]["epochs"] = MAX_DP_CELLS // 100
    data["jobs"][0]["minibatch_s"] = 1e-9
    inst = OasisInstance.from_dict(data)
    wp = np.zeros((100, 2, 2))
    pp = np.zeros((100, 1, 2))
    with pytest.raises(InvalidInstanceError, match=r"jobs\[0\].*worker-slots"):
        best_schedule(inst, 0, wp, pp)
    # Counted in worker-slots the same job is tiny.
    assert best_schedule(inst, 0, wp, pp, work="worker-slots").feasible
