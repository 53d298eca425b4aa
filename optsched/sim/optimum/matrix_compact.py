r"""Compact schedules: the rounds a one-round job can end in within some optimum.

A schedule is compact when no one-round job could run in an earlier round with room for it
(:func:`compact_last_rounds` has the proof that some optimum is compact and the bound on the
rounds it implies). The matrix model builds only those rounds (:func:`compact_stops`) and makes a
start compact before it checks it (:func:`compact_start`).
"""

from __future__ import annotations

import dataclasses
import math

from optsched.sim.optimum.rounds import (
    MipStart,
    earliest_round,
    one_round_jobs,
    types_for,
    value_of,
)
from optsched.sim.world.jobs import World

__all__ = [
    "compact_last_rounds",
    "compact_start",
    "compact_stops",
    "compaction_applies",
    "max_runs",
    "single_types",
]


def compact_stops(
    world: World, L: float, eps: float, first: list[int], stop: list[int]
) -> list[int]:
    """``stop`` lowered to one past each job's :func:`compact_last_rounds` (at least one round)."""
    out = list(stop)
    for ji, last in enumerate(compact_last_rounds(world, L, eps)):
        if last is not None:
            out[ji] = max(first[ji] + 1, min(out[ji], last + 1))
    return out


def compaction_applies(world: World, objective: str) -> bool:
    """Whether moving a job earlier never worsens ``objective`` (:func:`compact_last_rounds`)."""
    if objective == "makespan":
        return True
    return objective == "weighted-jct" and all(j.weight >= 0 for j in world.jobs)


def max_runs(world: World, L: float) -> list[int]:
    r"""Per job, at most how many runs it has: :math:`\lfloor 1 / \min_g c_{jg} \rfloor + 1`.

    Runs before the last are full rounds of at least :math:`\min_g c_{jg}` each and do less
    than the whole work (the last run adds :math:`\varepsilon c > 0`).
    """
    out = []
    for j in world.jobs:
        slowest = min(world.rate(j, g, True) for g in types_for(world, j)) * L / j.work
        out.append(math.floor(1.0 / slowest) + 1)
    return out


def single_types(world: World, L: float, eps: float, ji: int) -> list[str]:
    r"""The types a one-round job's run can be on: :math:`1 / c_{jg} \ge \varepsilon`."""
    j = world.jobs[ji]
    return [g for g in types_for(world, j) if j.work / (world.rate(j, g, True) * L) >= eps]


def compact_last_rounds(world: World, round_seconds: float, eps: float) -> list[int | None]:
    r"""Per job, the last round it ends in within a *compact* schedule (``None``: no bound).

    A schedule is compact when no one-round job (:func:`~optsched.sim.optimum.exact.one_round_jobs`)
    ending in round :math:`k^*` could run instead in an earlier round :math:`k \in [k_j, k^*)`
    on a type :math:`g` it runs on (:math:`1/c_{jg} \ge \varepsilon`) with :math:`n_j` GPUs
    free there. Moving such a job there is a schedule of the model again (its only run, the
    same share of the same type's rate) and ends it at :math:`k + 1/c_{jg} < k + 1 \le k^* <
    T_j`, so it changes no other job and lowers the total :math:`\sum_j T_j`; as the
    schedules are finitely many, moves from any schedule reach a compact one, no worse in
    ``weighted-jct`` (weights :math:`\ge 0`) or ``makespan``. Some optimum is therefore
    compact, and sorting interchangeable jobs keeps a schedule compact (the condition is the
    same for identical jobs).

    In a compact schedule every round :math:`k \in [k_j, k^*)` has fewer than :math:`n_j` free
    GPUs on every such type, so the other jobs hold at least
    :math:`B_j = \sum_g (C_g - n_j + 1)` GPUs of those types in each of these
    :math:`k^* - k_j` rounds; they hold at most :math:`Q_j = \sum_{i \ne j} n_i R_i` GPU-rounds
    of them in all, with :math:`R_i` the most runs job :math:`i` can have
    (:math:`\lfloor 1/\min_g c_{ig} \rfloor + 1`). Hence
    :math:`k^* \le k_j + \lfloor Q_j / B_j \rfloor`.
    """
    L = round_seconds
    runs = max_runs(world, L)
    out: list[int | None] = [None] * len(world.jobs)
    count = {t.name: t.count for t in world.cluster.gpu_types}
    for ji in one_round_jobs(world, L):
        j = world.jobs[ji]
        types = single_types(world, L, eps, ji)
        if not types:
            continue
        busy = sum(count[g] - j.num_gpus + 1 for g in types)
        mine = set(types)
        held = sum(
            i.num_gpus * runs[i.index]
            for i in world.jobs
            if i.index != ji and mine.intersection(types_for(world, i))
        )
        out[ji] = earliest_round(j.arrival, L) + held // busy
    return out


def compact_start(
    world: World, round_seconds: float, start: MipStart, eps: float, objective: str
) -> MipStart:
    """``start`` made compact (:func:`compact_last_rounds`): one-round jobs moved earlier.

    Repeatedly moves the one-round job of latest completion that has a free earlier slot to
    the slot that ends it first, until no job has one; every move lowers the job's completion
    and changes no other, so the value never rises. The moves are listed in ``notes``.
    """
    L = round_seconds
    count = {t.name: t.count for t in world.cluster.gpu_types}
    runs = [list(r) for r in start.runs]
    shares = list(start.last_share)
    used: dict[tuple[int, str], int] = {}
    for j in world.jobs:
        for k, g in runs[j.index]:
            used[k, g] = used.get((k, g), 0) + j.num_gpus
    single = one_round_jobs(world, L)
    types = {ji: single_types(world, L, eps, ji) for ji in single}
    moved = 0
    changed = True
    while changed:
        changed = False
        for ji in sorted(single, key=lambda i: -(runs[i][-1][0] + shares[i])):
            j = world.jobs[ji]
            k, g = runs[ji][-1]
            best: tuple[float, int, str] | None = None
            for q in range(earliest_round(j.arrival, L), k):
                for h in types[ji]:
                    if count[h] - used.get((q, h), 0) >= j.num_gpus:
                        t = q + j.work / (world.rate(j, h, True) * L)
                        if best is None or t < best[0]:
                            best = (t, q, h)
                if best is not None:
                    break  # the earliest round with a free slot ends the job first
            if best is None:
                continue
            _, q, h = best
            used[k, g] -= j.num_gpus
            used[q, h] = used.get((q, h), 0) + j.num_gpus
            runs[ji] = [(q, h)]
            shares[ji] = j.work / (world.rate(j, h, True) * L)
            moved += 1
            changed = True
    if not moved:
        return start
    done = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    return dataclasses.replace(
        start,
        runs=tuple(tuple(r) for r in runs),
        last_share=tuple(shares),
        value=value_of(world, done, objective),
        notes=(*start.notes, f"{moved} one-round job(s) moved to an earlier free slot"),
    )
