"""Exhaustive references for the Aonline family (tiny inputs only) and its Hypothesis strategy.

Every function here enumerates *every* placement of every job in every slot (each server a gang
fits on, every split of a spread gang over a pool's servers), with no cheapest-first argument and
no ILP: an answer computed another way than the family's models, oracle and packing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from functools import cache

from optsched.online.aonline import AonlineInstance, PriceState

Placement = tuple[int, tuple[tuple[int, int], ...], int]  # (pool, servers, progress)


def placements(instance: AonlineInstance, j: int) -> list[Placement]:
    """Every placement of job ``j``'s gang with its progress per slot (rate > 0 only)."""
    job = instance.jobs[j]
    out: list[Placement] = []
    for g, p in enumerate(instance.pools):
        caps = [p.server_capacity(s) for s in range(p.num_servers)]
        for split in itertools.product(*(range(min(c, job.gpus) + 1) for c in caps)):
            if sum(split) != job.gpus:
                continue
            servers = tuple((s, n) for s, n in enumerate(split) if n > 0)
            single = len(servers) == 1
            rate = job.rates.get(p.name, 0)
            if not single:
                rate = (
                    job.spread_rates.get(p.name, 0)
                    if job.spread_rates is not None
                    else math.floor(instance.spread_penalty * rate)
                )
            if rate > 0:
                out.append((g, servers, rate))
    return out


def _configs(
    instance: AonlineInstance,
    jobs: Sequence[int],
    free: dict[tuple[int, int], int],
) -> Iterator[tuple[tuple[int, int], ...]]:
    """Every assignment of the ``jobs`` to (placement index or -1 idle) that fits ``free``."""
    if not jobs:
        yield ()
        return
    j, rest = jobs[0], jobs[1:]
    for tail in _configs(instance, rest, free):
        yield ((j, -1), *tail)
    for k, (g, servers, _) in enumerate(placements(instance, j)):
        if all(free[(g, s)] >= n for s, n in servers):
            for s, n in servers:
                free[(g, s)] -= n
            for tail in _configs(instance, rest, free):
                yield ((j, k), *tail)
            for s, n in servers:
                free[(g, s)] += n


def _full(instance: AonlineInstance) -> dict[tuple[int, int], int]:
    return {
        (g, s): p.server_capacity(s)
        for g, p in enumerate(instance.pools)
        for s in range(p.num_servers)
    }


def brute_min_wct(instance: AonlineInstance) -> float:
    """The minimum total weighted completion time, by DP over (slot, progress of every job)."""
    n = instance.n_jobs
    horizon = max(instance.completion_bounds()) if n else 0
    prog_of = [[pl[2] for pl in placements(instance, j)] for j in range(n)]

    @cache
    def best(t: int, done: tuple[int, ...]) -> float:
        if all(done[j] >= instance.jobs[j].work for j in range(n)):
            return 0.0
        if t >= horizon:
            return math.inf
        active = [
            j for j in range(n) if done[j] < instance.jobs[j].work and instance.jobs[j].arrival <= t
        ]
        out = math.inf
        for cfg in _configs(instance, active, _full(instance)):
            nxt = list(done)
            cost = 0.0
            for j, k in cfg:
                if k >= 0:
                    nxt[j] = min(instance.jobs[j].work, nxt[j] + prog_of[j][k])
                    if nxt[j] >= instance.jobs[j].work:
                        cost += instance.jobs[j].weight * (t + 1)
            out = min(out, cost + best(t + 1, tuple(nxt)))
        return out

    return best(0, (0,) * n)


def brute_packing(instance: AonlineInstance, jobs: Sequence[int], start: int, length: int) -> float:
    """The heaviest subset of ``jobs`` that can finish within ``[start, start + length)``."""
    members = sorted(jobs)
    prog_of = {j: [pl[2] for pl in placements(instance, j)] for j in members}

    @cache
    def best(t: int, done: tuple[int, ...]) -> float:
        if t >= start + length:
            return float(
                sum(
                    instance.jobs[j].weight
                    for j, d in zip(members, done, strict=True)
                    if d >= instance.jobs[j].work
                )
            )
        active = [
            j
            for j, d in zip(members, done, strict=True)
            if d < instance.jobs[j].work and instance.jobs[j].arrival <= t
        ]
        out = -math.inf
        for cfg in _configs(instance, active, _full(instance)):
            nxt = dict(zip(members, done, strict=True))
            for j, k in cfg:
                if k >= 0:
                    nxt[j] = min(instance.jobs[j].work, nxt[j] + prog_of[j][k])
            out = max(out, best(t + 1, tuple(nxt[j] for j in members)))
        return out

    return best(start, (0,) * len(members))


def brute_oracle_cost(instance: AonlineInstance, j: int, prices: PriceState) -> float:
    """Cheapest schedule of job ``j`` finishing in the interval: every placement, every slot."""
    job = instance.jobs[j]
    pls = placements(instance, j)
    first = max(prices.start, job.arrival) - prices.start
    cost = [0.0] + [math.inf] * job.work
    for k in range(first, prices.length):
        new = list(cost)
        for g, servers, q in pls:
            if any(prices.free(k, g, s) < m for s, m in servers):
                continue
            c = sum(m * prices.price(k, g, s) for s, m in servers)
            for d in range(job.work + 1):
                if cost[d] < math.inf:
                    nd = min(job.work, d + q)
                    new[nd] = min(new[nd], cost[d] + c)
        cost = new
    return cost[job.work]
