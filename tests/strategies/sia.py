"""Hypothesis strategies of Sia's round model: tiny rounds the brute force of ``brute.sia`` can
enumerate (at most 4 jobs of at most 3 options on 1-2 GPU types), crowded enough that the
capacity rows bind, with either sign of the fairness power."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import strategies as st

from optsched.goodput.sia_instance import SiaGpuType, SiaInstance, SiaJob, SiaOption

#: Sia's simulator folder (``$OPTSCHED_SIA_SRC``); the tests that run Sia's code skip without it.
SIA_SRC = Path(
    os.environ.get("OPTSCHED_SIA_SRC", "~/.cache/optsched/sia-src/sia-simulator")
).expanduser()
#: Sia's cached runs and their recordings (``$OPTSCHED_SIA_RUNS``; ``benchmarks/bench_sia_sim.py``).
SIA_RUNS = Path(os.environ.get("OPTSCHED_SIA_RUNS", "~/.cache/optsched/sia-runs")).expanduser()

_GOODPUTS = st.sampled_from([0.0001, 0.5, 1.0, 1.37, 2.0, 3.3, 5.0, 12.5])


@st.composite
def tiny_instances(draw: st.DrawFn, *, sign: int | None = None) -> SiaInstance:
    """A round of 0-4 jobs; ``sign`` fixes the sign of ``p`` (default: either)."""
    n_types = draw(st.integers(1, 2))
    types = tuple(
        SiaGpuType(name=f"t{i}", gpus=draw(st.integers(0, 6)), gpus_per_node=4)
        for i in range(n_types)
    )
    free = {t.name: t.gpus for t in types}
    jobs = []
    for j in range(draw(st.integers(0, 4))):
        options = tuple(
            SiaOption(
                gpu_type=f"t{draw(st.integers(0, n_types - 1))}",
                gpus=draw(st.integers(1, 4)),
                goodput=draw(_GOODPUTS),
            )
            for _ in range(draw(st.integers(1, 3)))
        )
        previous = draw(st.none() | st.integers(0, len(options) - 1))
        held = options[previous] if previous is not None else None
        pinned = held is not None and free[held.gpu_type] >= held.gpus and draw(st.booleans())
        if pinned and held is not None:
            free[held.gpu_type] -= held.gpus
        jobs.append(
            SiaJob(
                name=f"j{j}",
                options=options,
                previous=previous,
                realloc_factor=draw(st.sampled_from([1.0, 0.8, 0.5, 0.0])),
                pinned=pinned,
                weight=draw(st.sampled_from([1.0, 2.0])),
            )
        )
    p_sign = sign if sign is not None else draw(st.sampled_from([-1, 1]))
    p = p_sign * draw(st.sampled_from([0.5, 1.0]))
    lambda_n = draw(st.sampled_from([1.1, 0.3] if p < 0 else [-1.1, 0.3]))
    return SiaInstance(
        gpu_types=types,
        jobs=tuple(jobs),
        p=p,
        lambda_n=lambda_n,
        decimals=draw(st.sampled_from([2, None])),
        clip=draw(st.sampled_from([3000.0, 4.0])),
    )


@st.composite
def tiny_with_choices(draw: st.DrawFn) -> tuple[SiaInstance, list[int | None]]:
    """A tiny round and any choice per job (feasible or not)."""
    inst = draw(tiny_instances())
    choices = [draw(st.none() | st.integers(0, len(job.options) - 1)) for job in inst.jobs]
    return inst, choices
