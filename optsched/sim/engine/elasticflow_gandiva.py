r"""ElasticFlow's Gandiva baseline: node sets per gang size, time slicing within a node set.

Read from ElasticFlow's simulator (``gandiva_sim_jobs`` and its cluster's ``gandiva_*`` and
``time_slicing_execute``), none of it copied. Every job runs on its requested gang. Servers are
grouped into *node sets*, each serving one gang size :math:`n`: :math:`\lceil n / C \rceil`
servers of :math:`C` GPUs, holding :math:`c = \lceil n/C \rceil C / n` gangs at once (its
*capacity*). A node set lists its jobs; the first :math:`\min(c, \text{jobs})` run, the others
wait their turn (time slicing: every model's memory share is 1 in ElasticFlow's table, so a set
runs at most :math:`c` jobs).

**Load of a node set** is ElasticFlow's ``util``: the jobs ever placed or dealt onto it, a count
that a finishing job does not lower (its ``time_slicing_execute`` drops finished jobs without
touching it) and that only a re-deal of the size's jobs resets. Placement, the order of a size's
sets and the choice of sets to give up all read it, so a set that served many short jobs counts
as full while it holds few (kept as ElasticFlow has it: with the jobs it holds instead, the
100-job ``n16g8`` cross-check meets 76 deadlines against ElasticFlow's 79; with ``util``, the
same 79 jobs).

**Placement of an arrival** (and of the waiting jobs when a node set was released): onto the
least loaded node set of its size when its load plus one is below :math:`c` (ElasticFlow's
strict ``util + 1 < capacity``); else onto a new node set of free servers; else onto the least
loaded set of its size anyway (over its capacity, time-sliced); else the job waits.

**Adjustment** at every decision, last (ElasticFlow adjusts first thing at the next decision, then
credits the interval to the jobs the adjustment put in front): per gang size, the demand is its
jobs times :math:`n` and its target :math:`\min(\lfloor N \cdot \text{demand}/\text{total demand}
\rfloor, \text{demand})` GPUs against the GPUs its sets occupy (both counted once, before any size
is adjusted). Below target the size gets up to :math:`\lceil \text{diff}/n \rceil` new sets from
the free servers, and its jobs are dealt anew over its sets (each to the least loaded) only when
ElasticFlow's loop variable ends positive: when the last new set was not created, or its sets span
two servers or more (its inner loop reuses the variable: for gangs of a server or less the jobs
stay where they are and the new sets stay empty, to be released). Above target it gives up
:math:`\lceil -\text{diff}/n \rceil` sets (all but one at most), least loaded first, their jobs
dealt onto the least loaded remaining set.

**A decision**: the jobs done since the last one leave their sets; a set over its
capacity rotates (its running jobs to the back) when the decision's time on the trace's clock
is a multiple of the slot (ElasticFlow's ``cur_time % 60 == 0``; the mechanism's
``clock_origin`` is the trace's first arrival); empty sets release their servers; arrivals are
placed, and the waiting jobs are tried again if a set was released. Decisions are at arrivals
(the slot rule merging those within a slot) and, once every job has arrived, every slot.

Complexity: a decision is :math:`O(J + S)` for :math:`J` jobs and :math:`S` servers, plus the
sorting of node sets by load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["GandivaSets", "NodeSet"]


@dataclass
class NodeSet:
    """Servers serving one gang size, and the jobs assigned to them (running ones first)."""

    servers: list[int]
    capacity: int
    jobs: list[int] = field(default_factory=list)
    #: jobs ever placed or dealt here since the last re-deal (ElasticFlow's ``util``, module notes)
    util: int = 0


class GandivaSets:
    """ElasticFlow's Gandiva node sets (module notes)."""

    def __init__(self, gangs: Sequence[int], num_servers: int, server_gpus: int, total: int):
        self.gangs = list(gangs)
        self.C = server_gpus
        self.N = total
        self.free: list[int] = list(range(num_servers))
        self.sets: dict[int, list[NodeSet]] = {}
        self.pending: list[int] = []

    def _servers(self, n: int) -> int:
        return -(-n // self.C)

    def _new_set(self, n: int) -> NodeSet | None:
        k = self._servers(n)
        if k > len(self.free):
            return None
        servers = [self.free.pop(0) for _ in range(k)]
        return NodeSet(servers, max(1, k * self.C // n))

    def _sort(self, n: int) -> None:
        self.sets[n].sort(key=lambda s: s.util)

    def place(self, i: int) -> bool:
        """Place job ``i`` (module notes); ``False``: it waits."""
        n = self.gangs[i]
        group = self.sets.setdefault(n, [])
        if group:
            if group[0].util + 1 < group[0].capacity:
                group[0].jobs.append(i)
                group[0].util += 1
                self._sort(n)
                return True
            # ElasticFlow puts the full set back at the end of the list, unsorted
            group.append(group.pop(0))
        fresh = self._new_set(n)
        if fresh is not None:
            fresh.jobs.append(i)
            fresh.util = 1
            group.append(fresh)
            self._sort(n)
            return True
        if group:
            group[0].jobs.append(i)
            group[0].util += 1
            self._sort(n)
            return True
        return False

    def _deal(self, n: int, jobs: list[int]) -> None:
        for i in jobs:
            self.sets[n][0].jobs.append(i)
            self.sets[n][0].util += 1
            self._sort(n)

    def adjust(self) -> None:
        """Grow or shrink each gang size's node sets toward its share (module notes)."""
        demand = {n: len([i for s in g for i in s.jobs]) * n for n, g in self.sets.items()}
        occupied = {n: sum(len(s.servers) * self.C for s in g) for n, g in self.sets.items()}
        total = sum(demand.values())
        if total == 0:
            return
        for n in sorted(self.sets):
            if demand[n] == 0:
                continue
            target = min(math.floor(demand[n] / total * self.N), demand[n])
            diff = target - occupied[n]
            if diff > 0:
                self._expand(n, math.ceil(diff / n))
            elif diff < 0:
                self._shrink(n, math.ceil(-diff / n))

    def _expand(self, n: int, count: int) -> None:
        last = 0  # ElasticFlow's loop variable, as its inner loop leaves it
        for k in range(1, count + 1):
            last = k
            fresh = self._new_set(n)
            if fresh is not None:
                self.sets[n].append(fresh)
                last = self._servers(n) - 1
        if last > 0:
            jobs = [i for s in self.sets[n] for i in s.jobs]
            for s in self.sets[n]:
                if s.jobs:
                    s.jobs.clear()
                    s.util = 0
            self._deal(n, jobs)

    def _shrink(self, n: int, count: int) -> None:
        group = self.sets[n]
        count = min(count, len(group) - 1)
        moved: list[int] = []
        for _ in range(count):
            s = group.pop(0)
            moved += s.jobs
            self.free += s.servers
        if count > 0:
            self._deal(n, moved)

    def running(self) -> dict[int, tuple[tuple[int, int, int], ...]]:
        """The jobs that run now and their GPUs ``(server, first slot, count)`` per server."""
        out: dict[int, tuple[tuple[int, int, int], ...]] = {}
        for n, group in self.sets.items():
            for s in group:
                for k, i in enumerate(s.jobs[: s.capacity]):
                    if n >= self.C:
                        out[i] = tuple((srv, 0, self.C) for srv in s.servers)
                    else:
                        out[i] = ((s.servers[0], k * n, n),)
        return out

    def decide(self, done: set[int], new: Sequence[int], rotate: bool) -> None:
        """One decision (module notes): drop ``done``, rotate, release, place, adjust.

        ElasticFlow adjusts at the start of its next decision and credits the interval just
        ended to the jobs at the front of their sets *after* that adjustment; the adjustment
        depends only on the state this decision leaves, so it is applied here, at the end, and
        the jobs it puts in front are the ones that run until the next decision.
        """
        released = False
        for n in sorted(self.sets):
            keep = []
            for s in self.sets[n]:
                if rotate and len(s.jobs) > s.capacity:
                    # the running jobs go to the back (counted before the done ones leave)
                    s.jobs = s.jobs[s.capacity :] + s.jobs[: s.capacity]
                s.jobs = [i for i in s.jobs if i not in done]
                if s.jobs:
                    keep.append(s)
                else:
                    self.free += s.servers
                    released = True
            self.sets[n] = keep
        for i in new:
            if not self.place(i):
                self.pending.append(i)
        if released:
            waiting, self.pending = self.pending, []
            for i in waiting:
                if not self.place(i):
                    self.pending.append(i)
        self.adjust()
