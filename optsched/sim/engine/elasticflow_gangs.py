"""ElasticFlow's mechanism, the plans of a decision: power-of-two levels, admission, extra GPUs.

:class:`GangPlanner` holds what the plans of one run share (each job's gang levels, its rate,
the slot) and makes them: every job's plan in deadline order against what its predecessors
left (:meth:`GangPlanner.plan_all`, the admission test and the EDF baseline), then the GPUs free
now handed out one level at a time (:meth:`GangPlanner.extra`). The run
(:class:`~optsched.sim.engine.elasticflow_run.ElasticFlowSim`) decides when, and carries the
plans out. The plan of one job is :mod:`optsched.sim.engine.elasticflow_plan`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism, gang_cap
from optsched.sim.engine.elasticflow_plan import (
    FreeProfile,
    Plan,
    plan_assigned,
    plan_edf,
    plan_min_share,
)

if TYPE_CHECKING:
    from optsched.sim.world.jobs import SimJob

__all__ = ["GangPlanner"]


class GangPlanner:
    """The plans of ElasticFlow's mechanism for one run.

    Parameters
    ----------
    jobs : sequence of SimJob
        The world's jobs, by index.
    scheme : str
        The mechanism's scheduler (``"elasticflow"``, ``"edf"``, ...): EDF plans at its own gang
        rule, the others at the minimum satisfactory share.
    opts : ElasticFlowMechanism
    num_gpus : int
        The cluster's GPUs.
    rate : callable
        ``rate(i, n)``: job ``i``'s rate on ``n`` consolidated GPUs.
    counts : mapping, optional
        Job type -> the gang sizes ElasticFlow measured; a job plans only on those.

    Attributes
    ----------
    levels : list of list of int
        Each job's gang sizes: powers of two up to its cap with a positive rate (``[1]`` when
        none).
    """

    def __init__(
        self,
        jobs: Sequence[SimJob],
        scheme: str,
        opts: ElasticFlowMechanism,
        num_gpus: int,
        rate: Callable[[int, int], float],
        counts: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        self.jobs = jobs
        self.scheme = scheme
        self.opts = opts
        self.rate = rate
        self.levels: list[list[int]] = []
        for job in jobs:
            cap = gang_cap(job, scheme, num_gpus)
            lv = [1 << k for k in range(cap.bit_length())]
            measured = (counts or {}).get(job.job_type)
            if measured is not None:
                # plan only on the sizes ElasticFlow measured (its levels)
                lv = [n for n in lv if n in measured]
            lv = [n for n in lv if rate(job.index, n) > 0]
            self.levels.append(lv or [1])
        self.num_gpus = num_gpus

    def plan(self, prof: FreeProfile, i: int, t: float, left: float, gpus: int = 0) -> Plan:
        """Job ``i``'s plan for ``left`` work from ``t`` on the free GPUs ``prof``.

        ``gpus``: a gang it must hold now (the extra-GPU trial); else its scheme's rule.
        """
        job = self.jobs[i]
        lv = self.levels[i]
        d = job.deadline if job.deadline == job.deadline else math.inf
        rate = lambda n: self.rate(i, n)  # noqa: E731
        slot = self.opts.slot_seconds
        if self.scheme == "edf":
            return plan_edf(prof, t, left, d, lv, rate, slot)
        if gpus:
            return plan_assigned(prof, t, left, d, lv, rate, gpus, slot)
        return plan_min_share(prof, t, left, d, lv, rate, slot)

    def order(self, ids: Sequence[int]) -> list[int]:
        """``ids`` by deadline (none last), then arrival, then index."""

        def key(i: int) -> tuple[float, float, int]:
            d = self.jobs[i].deadline
            return (d if d == d else math.inf, self.jobs[i].arrival, i)

        return sorted(ids, key=key)

    def plan_all(
        self, ids: Sequence[int], t: float, left: Sequence[float]
    ) -> tuple[FreeProfile, dict[int, Plan], bool]:
        """Plan ``ids`` in deadline order, each against what its predecessors left.

        Returns the GPUs left free, the plans, and whether every plan meets its deadline.
        """
        prof = FreeProfile(t, self.num_gpus)
        plans: dict[int, Plan] = {}
        ok = True
        for i in self.order(ids):
            p = self.plan(prof, i, t, left[i])
            prof.add(p, -1)
            plans[i] = p
            ok = ok and p.ok
        return prof, plans, ok

    def _next_level(self, i: int, g: int) -> int | None:
        for n in self.levels[i]:
            if n > g:
                return n
        return None

    def extra(
        self,
        prof: FreeProfile,
        t: float,
        active: Sequence[int],
        plans: dict[int, Plan],
        left: Sequence[float],
    ) -> None:
        """Hand the GPUs free now out one level at a time (ElasticFlow's greedy).

        Each step raises, to its next level, a job planned to wait first, else the job whose
        plan's GPU-seconds grow the most per added GPU (the simulator's ranking, read as
        written), re-planned on that gang; ``plans`` and ``prof`` are updated in place.
        :math:`O(L A)` plans for ``L`` levels handed out over ``A`` active jobs.
        """
        free = prof.at(t)
        order = self.order(active)
        while free > 0:
            best: tuple[float, int, Plan] | None = None
            for i in order:
                p = plans[i]
                g = p.gpus_at(t)
                nxt = self._next_level(i, g)
                if nxt is None or nxt - g > free:
                    continue
                trial = prof.copy()
                trial.add(p, +1)
                q = self.plan(trial, i, t, left[i], nxt)
                m = math.inf if g == 0 else (q.gpu_time() - p.gpu_time()) / (nxt - g)
                if best is None or m > best[0]:
                    best = (m, i, q)
            if best is None:
                return
            _, i, q = best
            prof.add(plans[i], +1)
            prof.add(q, -1)
            free -= q.gpus_at(t) - plans[i].gpus_at(t)
            plans[i] = q
