"""TensorLights NIC simulator: Numba kernel vs its plain-Python reference, and the order search.

For generated instances (``optsched.comm.tensorlights.generate_instance``) of growing size
this times one full simulation by the compiled kernel and by the reference, both called on the
same arrays (best of several runs), and checks that they return the same iteration end times.
The last rows time the exhaustive best-static-order search (J! simulations): the kernel runs it
in full, the reference's time is its measured per-order time multiplied by J! (running it in
full would take minutes to hours; ``(est.)`` marks those cells).

Columns
-------
- ``flows``: PS-to-worker flows (one per shard and worker); ``events``: simulated events.
- ``kernel (ms)`` / ``reference (ms)``: wall time of one simulation (or of the whole search).
- ``speed-up``: reference / kernel, measured in this run.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from optsched.comm.tensorlights import event_bound, generate_instance, solve
from optsched.comm.tensorlights import kernel as k
from optsched.comm.tensorlights.reference import simulate_reference
from optsched.comm.tensorlights.simulator import layout, levels

#: (hosts, jobs, max shards, iterations range, policy, jitter)
CASES = [
    (1, 4, 1, (10, 20), "fair", 0.0),
    (2, 6, 2, (20, 40), "priority", 0.0),
    (3, 8, 2, (30, 60), "rotate", 0.0),
    (4, 12, 3, (40, 80), "fair", 0.2),
    (4, 16, 3, (50, 100), "one-green", 0.2),
]
QUICK_CASES = CASES[:3]
SEARCH_JOBS = [6, 7, 8]
QUICK_SEARCH_JOBS = [6]
SEED = 0
#: Relative tolerance between kernel and reference end times.
AGREE_RTOL = 1e-9


def _best_of(fn: Any, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _args(inst: Any, policy: str, jitter: float) -> tuple[Any, ...]:
    lay = layout(inst)
    lev = levels(inst.n_hosts, tuple(range(inst.n_jobs)), policy, True, SEED)
    shape = (int(lay.iterations.max()), len(lay.flow_bytes))
    rng = np.random.default_rng(SEED)
    weights = rng.uniform(1 - jitter, 1 + jitter, shape) if jitter else np.ones(shape)
    mode = {"fair": 0, "priority": 1, "rotate": 2, "one-green": 3}[policy]
    period = float(np.median(inst.alone_iteration_time()))
    bound = event_bound(inst, period if policy in ("rotate", "one-green") else None)
    return (
        lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start, lay.flow_host,
        lay.flow_bytes, weights, lev, mode, period, inst.n_jobs,
    ), bound  # fmt: skip


def run(quick: bool = False) -> dict[str, Any]:
    rows: list[list[Any]] = []
    warm, warm_bound = _args(generate_instance(1, 2, seed=SEED, iterations=(2, 3)), "rotate", 0.1)
    start = time.perf_counter()
    k.simulate_kernel(*warm, 0, warm_bound)
    first_call = time.perf_counter() - start
    speedups = []
    for hosts, jobs, shards, iters, policy, jitter in QUICK_CASES if quick else CASES:
        inst = generate_instance(
            hosts, jobs, max_shards=shards, iterations=iters, seed=SEED, workers=(2, 16)
        )
        args, bound = _args(inst, policy, jitter)
        out = k.simulate_kernel(*args, 0, bound)
        ref = simulate_reference(*args, bound)
        for (j, i), value in ref.iter_end.items():
            if not math.isclose(out[0][j, i], value, rel_tol=AGREE_RTOL):
                raise AssertionError(f"kernel and reference disagree on job {j} iteration {i}")
        t_kernel = _best_of(lambda a=args, b=bound: k.simulate_kernel(*a, 0, b), 5)
        t_ref = _best_of(lambda a=args, b=bound: simulate_reference(*a, b), 1 if quick else 2)
        speedups.append(t_ref / t_kernel)
        rows.append(
            [
                f"simulate {policy}" + (f" jitter {jitter}" if jitter else ""),
                jobs,
                hosts,
                len(args[6]),
                int(out[5]),
                1000 * t_kernel,
                1000 * t_ref,
                t_ref / t_kernel,
            ]
        )
    for jobs in QUICK_SEARCH_JOBS if quick else SEARCH_JOBS:
        inst = generate_instance(1, jobs, seed=SEED, iterations=(5, 15))
        t_kernel = _best_of(lambda i=inst: solve(i), 1)
        args, bound = _args(inst, "priority", 0.0)
        per_order = _best_of(lambda a=args, b=bound: simulate_reference(*a, b), 3)
        t_ref = per_order * math.factorial(jobs)
        rows.append(
            [
                f"best-order {math.factorial(jobs)} orders (reference est.)",
                jobs,
                1,
                len(args[6]),
                int(k.simulate_kernel(*args, 0, bound)[5]),
                1000 * t_kernel,
                1000 * t_ref,
                t_ref / t_kernel,
            ]
        )
    return {
        "name": "bench_tensorlights",
        "title": "TensorLights fluid simulator: Numba kernel vs Python reference",
        "description": (
            "One full simulation of a generated instance (best of 5 kernel runs, best of 2 "
            "reference runs) and the exhaustive static-order search. Kernel and reference "
            "results are checked equal before timing."
        ),
        "columns": [
            "case",
            "jobs",
            "hosts",
            "flows",
            "events",
            "kernel (ms)",
            "reference (ms)",
            "speed-up",
        ],
        "rows": rows,
        "summary": {
            "median simulate speed-up": float(np.median(speedups)),
            "first kernel call incl. JIT/cache load (s)": first_call,
        },
        "notes": [
            "Search rows: the kernel time is the whole search (including Python-side order "
            "handling); the reference time is its per-order time times J!.",
        ],
    }
