"""Hypothesis strategies of the Optimus family: valid instances and planted models by
construction."""

from __future__ import annotations

from hypothesis import strategies as st

from optsched.allocation.optimus import (
    OptimusInstance,
    OptimusJob,
)
from optsched.allocation.optimus.models import N_THETA

KINDS = ("async", "sync", "colocated")


@st.composite
def thetas(draw: st.DrawFn, kind: str) -> tuple[float, ...]:
    """Planted speed coefficients: a positive compute term, the others 0 or of its order."""
    n = N_THETA[kind]
    first = draw(st.floats(0.05, 1.0))
    rest = [draw(st.one_of(st.just(0.0), st.floats(0.001, 0.5))) for _ in range(n - 1)]
    return (first, *rest)


@st.composite
def tiny_instances(
    draw: st.DrawFn,
    *,
    max_jobs: int = 3,
    max_tasks: int = 3,
    kinds: tuple[str, ...] = KINDS,
    one_resource_unit_workers: bool = False,
) -> OptimusInstance:
    """Instances small enough for brute force over every integral allocation.

    With ``one_resource_unit_workers`` every job has ``max_ps = 1`` and every worker demands the
    same vector: the case where the greedy is proven optimal.
    """
    r = 1 if one_resource_unit_workers else draw(st.integers(1, 2))
    n = draw(st.integers(1, max_jobs))
    jobs = []
    need = [0.0] * r
    common = tuple(float(draw(st.integers(1, 2))) for _ in range(r))
    for i in range(n):
        kind = draw(st.sampled_from(kinds))
        theta = draw(thetas(kind))
        if one_resource_unit_workers:
            worker = common
            ps = tuple(float(draw(st.integers(0, 2))) for _ in range(r))
            max_ps = 1
        else:
            worker = tuple(float(draw(st.integers(0, 3))) for _ in range(r))
            ps = tuple(float(draw(st.integers(0, 3))) for _ in range(r))
            max_ps = 1 if kind == "colocated" else draw(st.integers(1, max_tasks))
        if kind == "colocated":
            ps = (0.0,) * r
        need = [a + b + c for a, b, c in zip(need, worker, ps, strict=True)]
        jobs.append(
            OptimusJob(
                job_id=f"j{i}",
                remaining_steps=float(draw(st.sampled_from([100, 1_000, 5_000, 20_000]))),
                speed_kind=kind,  # type: ignore[arg-type]
                theta=theta,
                batch=float(draw(st.sampled_from([1, 16, 64]))),
                worker_demand=worker,
                ps_demand=ps,
                max_workers=draw(st.integers(1, max_tasks)),
                max_ps=max_ps,
            )
        )
    capacity = tuple(need[k] + draw(st.integers(0, 8)) for k in range(r))
    return OptimusInstance(
        resources=tuple(f"r{k}" for k in range(r)), capacity=capacity, jobs=tuple(jobs)
    )


@st.composite
def betas(draw: st.DrawFn) -> tuple[tuple[float, float, float], float]:
    """Planted (beta, last step): the curve falls by a factor 2-50 of its 1/(.) term over the
    observed steps, so that all three coefficients show in the data."""
    b1 = draw(st.floats(0.2, 5.0))
    horizon = draw(st.sampled_from([100.0, 1_000.0, 50_000.0]))
    fall = draw(st.floats(2.0, 50.0))
    b0 = fall * b1 / horizon
    b2 = draw(st.one_of(st.just(0.0), st.floats(0.01, 2.0)))
    return (b0, b1, b2), horizon
