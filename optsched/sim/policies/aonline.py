r"""Aonline as a round-based simulator policy: doubling intervals, primal-dual packing.

Rounds of :attr:`round_seconds` are counted from time 0 (round :math:`k` starts at :math:`kL`,
as in the simulator's round mechanism and its exact model). The rounds are cut into the
intervals :math:`[0, 1)`, :math:`[1, 2)`, :math:`[2, 4)`, :math:`[4, 8)`, ... At the first
decision point of an interval the policy builds the packing problem of
:mod:`optsched.online.aonline.packing` from the active jobs and runs OASiS's primal-dual on it; the
chosen jobs get explicit placements, round by round, for the rest of the interval, and nothing
else runs (Aonline's mechanism: unchosen jobs wait for the next boundary).

**The world seen as an Aonline instance.** A pool per GPU type (its GPUs and GPUs per server);
for an active job with :math:`R` steps left, the unit of work is
:math:`u = \rho_{\min} L / M` steps with :math:`\rho_{\min}` its slowest positive rate
(steps/s, consolidated or not, over the types) and :math:`M` = :data:`SUB_ROUND_UNITS`; its work
is :math:`\lceil R / u \rceil` units, its rate on type :math:`g` on one server
:math:`\lfloor \rho_g L / u \rfloor` and spread :math:`\lfloor \tilde\rho_g L / u \rfloor`
(:meth:`World.rate <optsched.sim.World.rate>` with ``consolidated`` true or false). Rounding
down rates and up work makes the plan conservative: a chosen job finishes within its interval
in the simulator too, unless preemption costs (``restore_s``) eat into its rounds; then it
is simply pending at the next boundary.

Every packing step is kept in :attr:`AonlinePolicy.packings` (round, interval, pending and
chosen jobs, weight, the ratio :math:`\alpha`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.online.aonline import AonlineInstance, AonlineJob, GpuPool, pack_primal_dual
from optsched.sim.engine.policy import Grant, GrantPlacement, Policy, PolicyDecision, SimState
from optsched.tolerances import TIME_TOL, WORK_TOL

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["DEFAULT_ROUND_SECONDS", "SUB_ROUND_UNITS", "AonlinePolicy", "PackingStep"]

#: Default round length (s).
DEFAULT_ROUND_SECONDS = 360.0
#: Units of work per round of a job on its slowest type (the resolution of the plan).
SUB_ROUND_UNITS = 4


@dataclass(frozen=True)
class PackingStep:
    """One packing step: at round ``round``, interval ``[start, end)``, what it chose."""

    round: int
    start: int
    end: int
    pending: tuple[str, ...]
    chosen: tuple[str, ...]
    weight: float
    alpha: float | None


def interval_of(k: int) -> tuple[int, int]:
    """The doubling interval ``[start, end)`` (in rounds) holding round ``k >= 0``."""
    if k <= 0:
        return 0, 1
    start = 1 << (k.bit_length() - 1)
    return start, 2 * start


class AonlinePolicy(Policy):
    """Aonline in the simulator (see the module notes).

    Parameters
    ----------
    round_seconds : float
        Round length (default :data:`DEFAULT_ROUND_SECONDS`).
    backfill : bool, default True
        Let unchosen jobs use the GPUs the plan leaves idle in a round (by Smith's rule,
        weight times best rate over steps left, on their fastest type with room by count),
        after the plan's grants, so they never displace a chosen job (registry name
        ``aonline``); ``False`` is the paper's mechanism alone (``aonline-strict``).
    """

    name = "aonline"

    def __init__(
        self, round_seconds: float = DEFAULT_ROUND_SECONDS, *, backfill: bool = True
    ) -> None:
        if not (
            isinstance(round_seconds, int | float)
            and math.isfinite(round_seconds)
            and round_seconds > 0
        ):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds!r}")
        self.round_seconds = float(round_seconds)
        self.backfill = bool(backfill)
        self.name = "aonline" if self.backfill else "aonline-strict"
        self.packings: list[PackingStep] = []
        self._plan: dict[int, dict[str, GrantPlacement]] = {}
        self._end = 0

    def reset(self, world: World) -> None:
        """Forget the previous run's plan and packings."""
        self.packings = []
        self._plan = {}
        self._end = 0

    def allocate(self, state: SimState) -> PolicyDecision:
        """Pack at an interval's first decision point, then carry out the plan's round."""
        if state.round_seconds is None:
            raise InvalidInstanceError(
                "round_seconds", "aonline is round-based: simulate it with a round length"
            )
        L = float(state.round_seconds)
        k = max(0, math.floor(state.now / L + TIME_TOL))
        if k >= self._end:
            _, end = interval_of(k)
            self._end = end
            self._plan = self._pack(state, k, end - k, L)
        active = {s.job_id: s for s in state.active}
        planned = self._plan.get(k, {})
        grants = [
            Grant(job=jid, gpu_type=p.gpu_type, placement=p)
            for jid, p in sorted(planned.items())
            if jid in active
        ]
        if self.backfill:
            grants.extend(self._backfill(state, [g for g in grants], planned))
        return PolicyDecision(grants=tuple(grants))

    def _backfill(
        self, state: SimState, grants: list[Grant], planned: dict[str, GrantPlacement]
    ) -> list[Grant]:
        """Grants for unplanned jobs on the GPUs the plan leaves free (by count)."""
        world = state.world
        free = {t.name: t.count for t in world.cluster.gpu_types}
        for g in grants:
            free[g.gpu_type] -= planned[g.job].num_gpus
        waiting = []
        for s in state.active:
            if s.job_id in planned:
                continue
            best = max(world.rate(s.job, t, True) for t in world.cluster.names)
            if best > 0 and s.remaining > 0:
                waiting.append((-s.job.weight * best / s.remaining, s.job.index, s))
        out: list[Grant] = []
        for _, _, s in sorted(waiting):
            types = sorted(
                (t for t in world.cluster.names if free[t] >= s.job.num_gpus),
                key=lambda t: -world.rate(s.job, t, True),
            )
            if types and world.rate(s.job, types[0], True) > 0:
                free[types[0]] -= s.job.num_gpus
                out.append(Grant(job=s.job_id, gpu_type=types[0]))
        return out

    def _pack(
        self, state: SimState, k: int, length: int, L: float
    ) -> dict[int, dict[str, GrantPlacement]]:
        world = state.world
        active = list(state.active)
        if not active:
            return {}
        pools = tuple(
            GpuPool(name=t.name, count=t.count, gpus_per_server=t.gpus_per_server)
            for t in world.cluster.gpu_types
        )
        jobs: list[AonlineJob] = []
        members: list[str] = []
        for s in active:
            per = {
                (t, c): world.rate(s.job, t, c) * L
                for t in world.cluster.names
                for c in (True, False)
            }
            slowest = min((v for v in per.values() if v > 0), default=0.0)
            if slowest <= 0:
                raise InvalidInstanceError("world", f"job {s.job_id!r} has no positive rate")
            unit = slowest / SUB_ROUND_UNITS
            work = max(1, math.ceil(s.remaining / unit - WORK_TOL))
            rates = {t: math.floor(per[(t, True)] / unit + WORK_TOL) for t in world.cluster.names}
            spread = {
                t: min(rates[t], math.floor(per[(t, False)] / unit + WORK_TOL))
                for t in world.cluster.names
            }
            if work > length * max([*rates.values(), *spread.values()]):
                continue  # cannot finish within the interval whatever the placement
            check_size("aonline plan", length * work, "max_array_cells", "cells")
            members.append(s.job_id)
            jobs.append(
                AonlineJob(
                    weight=s.job.weight,
                    work=work,
                    gpus=s.job.num_gpus,
                    rates=rates,
                    spread_rates=spread,
                )
            )
        if not jobs:
            self.packings.append(
                PackingStep(
                    k, interval_of(k)[0], k + length, tuple(a.job_id for a in active), (), 0.0, None
                )
            )
            return {}
        instance = AonlineInstance(pools=pools, jobs=tuple(jobs))
        result = pack_primal_dual(instance, list(range(len(jobs))), 0, length)
        plan: dict[int, dict[str, GrantPlacement]] = {}
        if result is not None:
            for r in result.runs:
                jid = members[r.job]
                plan.setdefault(k + r.slot, {})[jid] = GrantPlacement(
                    r.pool, tuple(sorted(r.servers))
                )
        self.packings.append(
            PackingStep(
                round=k,
                start=interval_of(k)[0],
                end=k + length,
                pending=tuple(s.job_id for s in active),
                chosen=() if result is None else tuple(members[j] for j in result.chosen),
                weight=0.0 if result is None else result.weight,
                alpha=None if result is None else result.alpha,
            )
        )
        return plan
