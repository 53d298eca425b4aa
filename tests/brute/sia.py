"""Brute force for Sia's round model: every choice of one option or none per job.

Shares no code with the model, its coefficients or the validator: the coefficient of an option
is recomputed here from the goodput, the re-allocation factor, the power, the rounding and the
clip, and feasibility from the GPUs of each type and the pinned jobs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from optsched.goodput.sia_instance import SiaInstance


def coefficient(inst: SiaInstance, j: int, o: int) -> float:
    """Job ``j``'s objective coefficient on option ``o``."""
    job = inst.jobs[j]
    moved = job.previous is not None and o != job.previous
    g = job.options[o].goodput * (job.realloc_factor if moved else 1.0)
    value = math.inf if g == 0 and inst.p < 0 else g**inst.p
    if inst.decimals is not None and math.isfinite(value):
        value = float(np.round(value, inst.decimals))
    return min(value, inst.clip)


def feasible(inst: SiaInstance, choices: tuple[int | None, ...] | list[int | None]) -> bool:
    """Whether giving job ``j`` option ``choices[j]`` respects every type's GPUs and pins."""
    used = {t.name: 0 for t in inst.gpu_types}
    for job, c in zip(inst.jobs, choices, strict=True):
        if job.pinned and c != job.previous:
            return False
        if c is not None:
            used[job.options[c].gpu_type] += job.options[c].gpus
    return all(used[t.name] <= t.gpus for t in inst.gpu_types)


def value(inst: SiaInstance, choices: tuple[int | None, ...] | list[int | None]) -> float:
    """Sia's objective of ``choices``."""
    total = 0.0
    for j, c in enumerate(choices):
        if c is None:
            total += inst.lambda_n
        else:
            total += inst.jobs[j].weight * coefficient(inst, j, c)
    return total


def optimum(inst: SiaInstance) -> tuple[float, tuple[int | None, ...]]:
    """The best objective over every feasible choice (min for p < 0, max for p > 0)."""
    best: tuple[float, tuple[int | None, ...]] | None = None
    spaces = [[None, *range(len(job.options))] for job in inst.jobs]
    for choices in itertools.product(*spaces):
        if not feasible(inst, choices):
            continue
        v = value(inst, choices)
        better = best is None or (v < best[0] if inst.p < 0 else v > best[0])
        if better:
            best = (v, choices)
    assert best is not None, "the all-unallocated choice with pins kept is always feasible"
    return best
