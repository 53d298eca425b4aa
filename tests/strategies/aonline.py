"""Hypothesis strategies of the A-online family: tiny instances the brute force of
``brute.aonline`` can enumerate."""

from __future__ import annotations

from hypothesis import strategies as st

from optsched.online.aonline import AonlineInstance, AonlineJob, GpuPool


@st.composite
def tiny_instances(
    draw: st.DrawFn,
    max_jobs: int = 3,
    max_arrival: int = 2,
    max_work: int = 4,
    unit_gangs: bool | None = None,
) -> AonlineInstance:
    """Valid tiny instances by construction: the first pool holds a server every gang fits on."""
    big = draw(st.sampled_from([2, 4]))
    pools = [GpuPool(name="a", count=big, gpus_per_server=big)]
    if draw(st.booleans()):
        pools.append(GpuPool(name="b", count=draw(st.sampled_from([2, 3, 4])), gpus_per_server=2))
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for _ in range(n):
        gpus = 1 if unit_gangs else draw(st.integers(1, 2))
        rates = {"a": draw(st.integers(1, 3))}
        if len(pools) > 1:
            rates["b"] = draw(st.integers(0, 3))
        jobs.append(
            AonlineJob(
                arrival=draw(st.integers(0, max_arrival)),
                weight=float(draw(st.integers(1, 5))),
                work=draw(st.integers(1, max_work)),
                gpus=gpus,
                rates=rates,
            )
        )
    sigma = draw(st.sampled_from([0.5, 1.0]))
    return AonlineInstance(pools=tuple(pools), jobs=tuple(jobs), spread_penalty=sigma)
