"""Hypothesis strategies for the allocation family: one scheduling round, valid by construction.

Every job can run on the type with the most GPUs (its throughput there is made positive) and its
gang fits there. Each field is drawn from the choices given, or left at the instance's default
when its choices are ``None``, so each test asks for exactly the variety it checks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from optsched.allocation.gavel import (
    AllocationInstance,
    AllocationJob,
    PairThroughput,
)

__all__ = ["PAIR_FACTORS", "packed_rounds", "rounds"]

#: Normalized pair throughputs drawn for the packed rounds (0: the pair cannot share there).
PAIR_FACTORS = (0.0, 0.4, 0.7, 1.0)


@st.composite
def rounds(
    draw: st.DrawFn,
    *,
    max_types: int = 3,
    capacity: tuple[int, int] = (1, 4),
    max_jobs: int = 6,
    throughputs: Sequence[float] = (0.0, 0.5, 1.0, 2.5, 4.0),
    max_scale: int | None = None,
    weights: Sequence[float] | None = None,
    steps: Sequence[float] = (0.0, 10.0, 100.0, 1000.0),
    since: Sequence[float] | None = None,
    isolated: Sequence[float] | None = None,
    deadlines: Sequence[float | None] | None = None,
    job_types: Sequence[str | None] | None = None,
    prices: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
) -> AllocationInstance:
    """A round of 1..``max_types`` GPU types and 1..``max_jobs`` jobs.

    ``max_scale`` caps the gang size (default: the largest type's GPUs); ``names`` are the GPU
    type names (default ``g0, g1, ...``).
    """
    k = draw(st.integers(1, max_types))
    cap = tuple(draw(st.lists(st.integers(*capacity), min_size=k, max_size=k)))
    best = int(np.argmax(cap))
    top = cap[best] if max_scale is None else min(max_scale, cap[best])
    jobs = []
    for i in range(draw(st.integers(1, max_jobs))):
        thr = draw(st.lists(st.sampled_from(list(throughputs)), min_size=k, max_size=k))
        if thr[best] == 0:
            thr[best] = 1.0
        fields: dict[str, Any] = {
            "job_id": f"j{i}",
            "throughput_steps_per_s": tuple(thr),
            "scale_factor": draw(st.integers(1, top)),
        }
        for name, choices in (
            ("weight", weights),
            ("steps_remaining", steps),
            ("time_since_start_s", since),
            ("isolated_time_s", isolated),
            ("time_to_deadline_s", deadlines),
            ("job_type", job_types),
        ):
            if choices is not None:
                fields[name] = draw(st.sampled_from(list(choices)))
        jobs.append(AllocationJob(**fields))
    extra: dict[str, Any] = {}
    if prices is not None:
        extra["prices"] = tuple(
            draw(st.lists(st.sampled_from(list(prices)), min_size=k, max_size=k))
        )
    gpu_types = tuple(names[:k]) if names is not None else tuple(f"g{j}" for j in range(k))
    return AllocationInstance(gpu_types=gpu_types, capacity=cap, jobs=jobs, **extra)


@st.composite
def packed_rounds(draw: st.DrawFn, max_jobs: int = 6) -> AllocationInstance:
    """Rounds with co-location classes A/B/C (or none) and a random pair table of them."""
    base = draw(
        rounds(
            max_types=2,
            capacity=(1, 3),
            max_jobs=max_jobs,
            throughputs=(0.0, 1.0, 2.5, 4.0),
            max_scale=2,
            weights=(1.0, 2.0),
            steps=(0.0, 10.0, 100.0),
            since=(0.0, 5.0),
            job_types=("A", "B", "C", None),
        )
    )
    k = base.n_types
    pairs = []
    for a, b in itertools.combinations_with_replacement("ABC", 2):
        if draw(st.booleans()):
            f = [
                (draw(st.sampled_from(PAIR_FACTORS)), draw(st.sampled_from(PAIR_FACTORS)))
                for _ in range(k)
            ]
            if a == b:
                f = [(x, x) for x, _ in f]
            pairs.append(PairThroughput(job_types=(a, b), normalized=tuple(f)))
    return AllocationInstance(
        gpu_types=base.gpu_types, capacity=base.capacity, jobs=base.jobs, pair_throughputs=pairs
    )


@st.composite
def bid_tables(draw: st.DrawFn) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """Bid tables of a tiny offer: 1-2 types of 0-3 GPUs, 1-4 apps of 1-4 bundles each
    (bundle 0 empty, value 1; the others use at least one GPU, value >= 1)."""
    k = draw(st.integers(1, 2))
    cap = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    usages, values = [], []
    for _ in range(draw(st.integers(1, 4))):
        rows = [[0] * k]
        vals = [1.0]
        for _ in range(draw(st.integers(0, 3))):
            use = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
            if sum(use) == 0:
                use[0] = 1
            rows.append(use)
            vals.append(draw(st.sampled_from([1.0, 1.25, 1.5, 2.0, 3.0, 7.5])))
        usages.append(np.array(rows, dtype=np.int64))
        values.append(np.array(vals))
    return usages, values, cap


@st.composite
def lease_rounds(draw: st.DrawFn, max_jobs: int = 5, ample: bool = False) -> AllocationInstance:
    """Rounds whose every job can run somewhere; ``ample``: every type holds every gang."""
    k = draw(st.integers(1, 3))
    jobs = []
    n = draw(st.integers(1, max_jobs))
    sfs = [draw(st.sampled_from([1, 1, 2])) for _ in range(n)]
    if ample:
        cap = [sum(sfs)] * k
    else:
        cap = draw(st.lists(st.integers(2, 4), min_size=k, max_size=k))
    for i in range(n):
        thr = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0]), min_size=k, max_size=k))
        if not any(thr):
            thr[draw(st.integers(0, k - 1))] = 1.0
        jobs.append(
            AllocationJob(
                job_id=f"j{i}",
                throughput_steps_per_s=tuple(thr),
                scale_factor=sfs[i],
                steps_remaining=draw(st.sampled_from([0.0, 100.0, 2000.0, 50000.0])),
                time_since_start_s=draw(st.sampled_from([0.0, 60.0, 3000.0])),
                isolated_time_s=draw(st.sampled_from([0.0, 30.0])),
            )
        )
    return AllocationInstance(gpu_types=tuple(f"g{j}" for j in range(k)), capacity=cap, jobs=jobs)


def lp_rounds(max_jobs: int = 6) -> st.SearchStrategy[AllocationInstance]:
    """Valid rounds by construction: every job has a type it can run on and fits."""
    return rounds(
        max_jobs=max_jobs,
        weights=(0.5, 1.0, 2.0),
        since=(0.0, 5.0, 50.0),
        isolated=(0.0, 3.0),
        prices=(0.45, 1.46, 2.48),
    )


def rounds_with_deadlines() -> st.SearchStrategy[AllocationInstance]:
    """Valid rounds by construction, some jobs with deadlines (feasible or not)."""
    return rounds(
        capacity=(1, 3),
        steps=(0.0, 100.0, 1000.0),
        deadlines=(None, None, 200.0, 1000.0, 5000.0),
        names=("v100", "p100", "k80"),
    )


def waited_rounds(waited: bool) -> st.SearchStrategy[AllocationInstance]:
    """Valid rounds by construction; ``waited=False`` gives every job t_m = 0."""
    return rounds(
        max_jobs=7,
        since=(0.0, 5.0, 50.0) if waited else None,
        isolated=(0.0, 3.0, 40.0),
    )
