"""The TensorLights family's Hypothesis strategies and instance builders (one definition each)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from optsched.comm.tensorlights import POLICIES, TensorLightsInstance

#: Relative tolerance on simulated times (the simulation is exact up to rounding).
TIME_RTOL = 1e-9
#: Absolute slack on times near zero.
TIME_ATOL = 1e-9


def make(hosts: list[float], jobs: list[dict[str, Any]]) -> TensorLightsInstance:
    """An instance from host bandwidths and job dicts (see :func:`job`)."""
    return TensorLightsInstance.from_dict(
        {"hosts": [{"bandwidth_bytes_per_s": b} for b in hosts], "jobs": jobs}
    )


def job(
    m: float,
    n: int,
    c: float,
    iters: int,
    hosts: tuple[int, ...] | list[int] = (0,),
    start: float = 0.0,
    w: float = 1.0,
) -> dict[str, Any]:
    """One job as plain data: message bytes, workers, compute time, iterations, PS hosts."""
    return {
        "workers": n,
        "message_bytes": float(m),
        "compute_time_s": float(c),
        "iterations": iters,
        "ps_hosts": list(hosts),
        "start_s": float(start),
        "weight": float(w),
    }


def close(a: Any, b: Any) -> bool:
    """Times equal up to the simulation's rounding (NaN equals NaN)."""
    return bool(np.allclose(a, b, rtol=TIME_RTOL, atol=TIME_ATOL, equal_nan=True))


@st.composite
def instances(
    draw: st.DrawFn, max_hosts: int = 3, max_jobs: int = 4, max_shards: int = 2
) -> TensorLightsInstance:
    """Small instances with integer-valued data, so that simultaneous events are common."""
    n_hosts = draw(st.integers(1, max_hosts))
    hosts = [float(draw(st.sampled_from([1, 2, 4]))) for _ in range(n_hosts)]
    jobs = []
    for _ in range(draw(st.integers(1, max_jobs))):
        k = draw(st.integers(1, min(max_shards, n_hosts)))
        ps = draw(st.permutations(range(n_hosts)))[:k]
        jobs.append(
            job(
                m=float(draw(st.integers(1, 6))),
                n=draw(st.integers(1, 3)),
                c=float(draw(st.integers(0, 3))),
                iters=draw(st.integers(1, 3)),
                hosts=sorted(ps),
                start=float(draw(st.integers(0, 2))),
            )
        )
    return make(hosts, jobs)


@st.composite
def smith_instances(draw: st.DrawFn, one_iteration: bool = False) -> TensorLightsInstance:
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
            hosts=(draw(st.integers(0, n_hosts - 1)),),
            w=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
            start=start,
        )
        for _ in range(draw(st.integers(1, 5)))
    ]
    return make(hosts, jobs)


#: Every NIC-sharing policy of the simulator.
policies = st.sampled_from(POLICIES)
