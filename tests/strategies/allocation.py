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

from optsched.allocation.gavel import AllocationInstance, AllocationJob, PairThroughput

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
