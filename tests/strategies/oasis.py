"""Hypothesis strategies of the jobs (OASiS) family: valid inputs by construction.

The one definition of every OASiS strategy; test modules import from here. Every job's worker
fits on at least one worker server and its PS on at least one PS server (instances that break
this are refused by validation), while other servers may be too small for it.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.prices import MAX_PRICE, MIN_PRICE

RES = ("gpu", "cpu", "bandwidth")


@st.composite
def utilities(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["sigmoid", "linear", "step", "constant"]))
    value = draw(st.floats(0.5, 100.0))
    if kind == "sigmoid":
        return {
            "kind": kind,
            "priority": value,
            "steepness": draw(st.sampled_from([0.0, 0.5, 5.0])),
            "target": draw(st.floats(1.0, 5.0)),
        }
    if kind == "linear":
        return {"kind": kind, "value": value, "slope": draw(st.floats(0.0, value / 3))}
    if kind == "step":
        return {
            "kind": kind,
            "value": value,
            "deadline": draw(st.integers(1, 4)),
            "late_value": draw(st.floats(0.0, value)),
        }
    return {"kind": kind, "value": value}


@st.composite
def tiny_instances(
    draw: st.DrawFn,
    max_jobs: int = 2,
    max_servers: int = 2,
    max_horizon: int = 4,
    max_chunks: int = 3,
) -> OasisInstance:
    """Instances small enough for exhaustive enumeration (and a sub-second ILP)."""
    horizon = draw(st.integers(1, max_horizon))
    H = draw(st.integers(1, max_servers))
    K = draw(st.integers(1, max_servers))
    workers = [
        {
            "capacity": {
                "gpu": float(draw(st.integers(0, 4))),
                "cpu": float(draw(st.integers(1, 8))),
                "bandwidth": float(draw(st.integers(2, 20))),
            }
        }
        for _ in range(H)
    ]
    pss = [
        {
            "capacity": {
                "gpu": 0.0,
                "cpu": float(draw(st.integers(1, 8))),
                "bandwidth": float(draw(st.integers(5, 40))),
            }
        }
        for _ in range(K)
    ]
    jobs = []
    for _ in range(draw(st.integers(1, max_jobs))):
        # The job's worker fits on worker server h and its PS on PS server k, by construction.
        wcap = workers[draw(st.integers(0, H - 1))]["capacity"]
        pcap = pss[draw(st.integers(0, K - 1))]["capacity"]
        b = draw(st.floats(0.5, min(5.0, wcap["bandwidth"])))
        jobs.append(
            {
                "arrival": draw(st.integers(0, horizon - 1)),
                "epochs": draw(st.integers(1, 2)),
                "chunks": draw(st.integers(1, max_chunks)),
                "minibatches": draw(st.integers(1, 4)),
                # Keep minibatch times in slot units that give 1-6 worker-slots of work.
                "minibatch_s": draw(st.floats(0.05, 0.6)),
                "gradient_mb": draw(st.floats(0.0, 5.0)),
                "worker_demand": {
                    "gpu": float(draw(st.integers(0, int(min(2, wcap["gpu"]))))),
                    "cpu": float(draw(st.integers(1, int(min(4, wcap["cpu"]))))),
                    "bandwidth": b,
                },
                "ps_demand": {
                    "cpu": float(draw(st.integers(1, int(min(4, pcap["cpu"]))))),
                    "bandwidth": draw(st.floats(b, min(3 * b, pcap["bandwidth"]))),
                },
                "utility": draw(utilities()),
            }
        )
    return OasisInstance.from_dict(
        {
            "horizon": horizon,
            "slot_s": 1.0,
            "resources": list(RES),
            "worker_servers": workers,
            "ps_servers": pss,
            "jobs": jobs,
        }
    )


works = st.sampled_from(["chunks", "worker-slots"])


@st.composite
def roomy_instances(draw: st.DrawFn) -> OasisInstance:
    """Instances built to satisfy Theorem 4's assumptions: every demand is at most a tenth of
    every capacity, utilities stay positive up to the horizon (L is not clipped), and several
    jobs compete for one worker server."""
    horizon = draw(st.integers(2, 5))
    jobs = []
    for _ in range(draw(st.integers(1, 5))):
        b = draw(st.floats(1.0, 5.0))
        kind = draw(st.sampled_from(["constant", "linear", "sigmoid"]))
        value = draw(st.floats(1.0, 100.0))
        if kind == "constant":
            util = {"kind": kind, "value": value}
        elif kind == "linear":
            util = {
                "kind": kind,
                "value": value,
                "slope": draw(st.floats(0, value / (2 * horizon))),
            }
        else:
            util = {
                "kind": kind,
                "priority": value,
                "steepness": draw(st.floats(0, 0.5)),
                "target": draw(st.floats(1, horizon)),
            }
        jobs.append(
            {
                "arrival": draw(st.integers(0, horizon - 1)),
                "epochs": draw(st.integers(1, 3)),
                "chunks": draw(st.integers(1, 6)),
                "minibatches": 1,
                "minibatch_s": draw(st.floats(0.3, 1.5)),
                "gradient_mb": 0.0,
                "worker_demand": {"gpu": float(draw(st.integers(1, 4))), "bandwidth": b},
                "ps_demand": {"bandwidth": draw(st.floats(b, 3 * b))},
                "utility": util,
            }
        )
    cap = draw(st.sampled_from([40.0, 60.0]))
    return OasisInstance.from_dict(
        {
            "horizon": horizon,
            "slot_s": 1.0,
            "resources": ["gpu", "bandwidth"],
            "worker_servers": [{"capacity": {"gpu": cap, "bandwidth": 150.0}}],
            "ps_servers": [{"capacity": {"gpu": 0.0, "bandwidth": 450.0}}],
            "jobs": jobs,
        }
    )


extreme = st.sampled_from([MIN_PRICE, 1.0, MAX_PRICE])


@st.composite
def priced(draw: st.DrawFn, max_servers: int = 3, max_horizon: int = 5, max_chunks: int = 4):
    """A one-job instance with random prices and random committed usage."""
    inst = draw(
        tiny_instances(
            max_jobs=1, max_servers=max_servers, max_horizon=max_horizon, max_chunks=max_chunks
        )
    )
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    T = inst.horizon
    wshape = (T, *inst.worker_capacity.shape)
    pshape = (T, *inst.ps_capacity.shape)
    # Prices: sometimes all equal (ties everywhere), sometimes spread over magnitudes.
    kind = draw(st.sampled_from(["flat", "uniform", "lognormal", "zero"]))
    if kind == "flat":
        wp, pp = np.full(wshape, 0.7), np.full(pshape, 0.3)
    elif kind == "uniform":
        wp, pp = rng.uniform(0, 3, wshape), rng.uniform(0, 3, pshape)
    elif kind == "lognormal":
        wp, pp = rng.lognormal(0, 2, wshape), rng.lognormal(0, 2, pshape)
    else:
        wp, pp = np.zeros(wshape), np.zeros(pshape)
    busy = draw(st.booleans())
    wu = rng.uniform(0, 1, wshape) * inst.worker_capacity if busy else None
    pu = rng.uniform(0, 1, pshape) * inst.ps_capacity if busy else None
    work = draw(st.sampled_from(["chunks", "worker-slots"]))
    return inst, wp, pp, wu, pu, work


@st.composite
def kernel_inputs(draw: st.DrawFn) -> tuple:
    """Raw kernel arguments: costs with ties or spread, rooms, work and utility tables."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    S = draw(st.integers(1, 25))
    H = draw(st.integers(1, 4))
    K = draw(st.integers(1, 4))
    N = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["integer", "uniform", "lognormal", "flat", "zero"]))
    if kind == "integer":
        uc_w = rng.integers(0, 4, (S, H)).astype(float)
        uc_p = rng.integers(0, 4, (S, K)).astype(float)
    elif kind == "uniform":
        uc_w, uc_p = rng.uniform(0, 3, (S, H)), rng.uniform(0, 3, (S, K))
    elif kind == "lognormal":
        uc_w, uc_p = rng.lognormal(0, 2, (S, H)), rng.lognormal(0, 2, (S, K))
    elif kind == "flat":
        uc_w, uc_p = np.full((S, H), 0.5), np.full((S, K), 0.25)
    else:
        uc_w, uc_p = np.zeros((S, H)), np.zeros((S, K))
    room_w = rng.integers(0, N + 1, (S, H))
    room_p = rng.integers(0, 3, (S, K))
    if draw(st.booleans()):
        # Runs of identical slots (as over idle stretches of the horizon).
        for t in range(1, S):
            if rng.random() < 0.6:
                uc_w[t], uc_p[t], room_w[t], room_p[t] = (
                    uc_w[t - 1],
                    uc_p[t - 1],
                    room_w[t - 1],
                    room_p[t - 1],
                )
    demand = draw(st.integers(1, 30))
    steps = rng.integers(0, 4, N)
    q = np.minimum(np.concatenate([[0], np.cumsum(steps)]), demand).astype(np.int64)
    ratio = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    mreq = np.ceil(ratio * np.arange(N + 1) - 1e-12).astype(np.int64)
    utility = draw(st.sampled_from(["integer", "decaying", "constant"]))
    if utility == "integer":
        ftab = np.sort(rng.integers(-2, 40, S))[::-1].astype(float)
    elif utility == "decaying":
        ftab = 50.0 * np.exp(-rng.uniform(0, 1) * np.arange(S))
    else:
        ftab = np.full(S, float(rng.uniform(0, 60)))
    floor = draw(st.sampled_from([-math.inf, 0.0, 5.0]))
    return uc_w, room_w, uc_p, room_p, q, mreq, int(demand), ftab, float(floor)


@st.composite
def deployments(draw: st.DrawFn):
    """An instance, some committed usage, and a deployment that may or may not fit."""
    inst = draw(tiny_instances(max_jobs=2, max_servers=3, max_horizon=5, max_chunks=4))
    T = inst.horizon
    H, K = inst.worker_capacity.shape[0], inst.ps_capacity.shape[0]
    cell = st.tuples(st.integers(0, T - 1), st.integers(0, H - 1), st.integers(0, 3))
    pcell = st.tuples(st.integers(0, T - 1), st.integers(0, K - 1), st.integers(0, 3))
    before = draw(st.lists(cell, max_size=4)), draw(st.lists(pcell, max_size=4))
    after = draw(st.lists(cell, max_size=8)), draw(st.lists(pcell, max_size=8))
    return inst, before, after
