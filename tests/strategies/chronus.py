"""Hypothesis strategies of the Chronus (lease admission) family: tiny lease instances the
brute force of ``brute.chronus`` can enumerate, and unit single-machine cases."""

from __future__ import annotations

from brute.chronus import feasible
from hypothesis import strategies as st

from optsched.allocation.chronus import (
    BestEffortJob,
    LeaseInstance,
    SLOJob,
)


@st.composite
def tiny_instances(draw: st.DrawFn) -> LeaseInstance:
    """At most 4 SLO jobs, 3 leases, 2 types, gangs of 1-2 GPUs, 0-3 GPUs per lease and type:
    small enough for the brute force, crowded enough that admission matters."""
    types = draw(st.sampled_from([("v100",), ("v100", "k80")]))
    k = len(types)
    leases = draw(st.integers(1, 3))
    capacity = tuple(tuple(draw(st.integers(0, 3)) for _ in types) for _ in range(leases))

    def speed() -> tuple[int, ...]:
        values = [draw(st.integers(0, 4)) for _ in range(k)]
        values[draw(st.integers(0, k - 1))] = draw(st.integers(1, 4))
        return tuple(values)

    slo = [
        SLOJob(
            job_id=f"s{i}",
            gang=draw(st.integers(1, 2)),
            remaining=draw(st.integers(1, 8)),
            speed=speed(),
            deadline=draw(st.integers(0, leases - 1)),
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    be = [
        BestEffortJob(
            job_id=f"b{i}",
            gang=draw(st.integers(1, 2)),
            remaining=draw(st.integers(1, 8)),
            speed=speed(),
            weight=draw(st.sampled_from([1.0, 2.5])),
        )
        for i in range(draw(st.integers(0, 2)))
    ]
    inst = LeaseInstance(
        gpu_types=types, capacity=capacity, slo_jobs=tuple(slo), best_effort=tuple(be)
    )
    # guarantees only where they can be kept: a subset of a feasible admission (brute force)
    keep = draw(st.lists(st.booleans(), min_size=len(slo), max_size=len(slo)))
    chosen = [j for j, flag in zip(slo, keep, strict=True) if flag]
    if chosen and feasible(inst, chosen):
        slo = [j.model_copy(update={"guaranteed": flag}) for j, flag in zip(slo, keep, strict=True)]
        inst = LeaseInstance(
            gpu_types=types, capacity=capacity, slo_jobs=tuple(slo), best_effort=tuple(be)
        )
    return inst


@st.composite
def unit_single_machine(draw: st.DrawFn) -> LeaseInstance:
    leases = draw(st.integers(1, 5))
    capacity = tuple((draw(st.integers(0, 1)),) for _ in range(leases))
    n = draw(st.integers(1, 4))
    jobs = [
        SLOJob(
            job_id=f"j{i}",
            gang=1,
            remaining=draw(st.integers(1, 12)),
            speed=(draw(st.integers(1, 4)),),
            deadline=draw(st.integers(0, leases - 1)),
        )
        for i in range(n)
    ]
    return LeaseInstance(gpu_types=("v100",), capacity=capacity, slo_jobs=tuple(jobs))
