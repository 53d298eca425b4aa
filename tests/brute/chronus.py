"""Brute force for the chronus family: exact feasibility by enumerating lease grants.

Shares no code with the MILP, the heuristics or the validator. A set of SLO jobs is feasible
when some choice, per job and per lease up to its deadline, of "no GPUs" or "its gang on one
type" finishes every job within the GPUs of every lease; the search goes job by job over every
grant vector that finishes the job, keeping the GPUs left.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from optsched.allocation.chronus import LeaseInstance, SLOJob


def _vectors(inst: LeaseInstance, job: SLOJob) -> list[tuple[int | None, ...]]:
    choices: list[int | None] = [None, *range(inst.n_types)]
    out = []
    for vec in itertools.product(choices, repeat=job.deadline + 1):
        steps = sum(job.speed[k] for k in vec if k is not None)
        if steps >= job.remaining and all(k is None or job.speed[k] > 0 for k in vec):
            out.append(vec)
    return out


def feasible(inst: LeaseInstance, jobs: Iterable[SLOJob]) -> bool:
    """Whether every job of ``jobs`` can finish by its deadline together."""
    todo = list(jobs)
    cands = [_vectors(inst, j) for j in todo]
    free = [list(row) for row in inst.capacity]

    def place(i: int) -> bool:
        if i == len(todo):
            return True
        job = todo[i]
        for vec in cands[i]:
            if all(k is None or free[ell][k] >= job.gang for ell, k in enumerate(vec)):
                for ell, k in enumerate(vec):
                    if k is not None:
                        free[ell][k] -= job.gang
                ok = place(i + 1)
                for ell, k in enumerate(vec):
                    if k is not None:
                        free[ell][k] += job.gang
                if ok:
                    return True
        return False

    return place(0)


def max_admitted(inst: LeaseInstance) -> int | None:
    """Most SLO jobs admissible together with every guaranteed one (None: none feasible)."""
    must = [j for j in inst.slo_jobs if j.guaranteed]
    rest = [j for j in inst.slo_jobs if not j.guaranteed]
    for size in range(len(rest), -1, -1):
        for extra in itertools.combinations(rest, size):
            if feasible(inst, [*must, *extra]):
                return len(must) + size
    return None
