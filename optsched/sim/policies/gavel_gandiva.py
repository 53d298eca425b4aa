r"""Gavel's Gandiva allocation (``gavel-gandiva``), for Gavel's mechanism.

Gavel's ``gandiva`` policy (``scheduler/policies/gandiva.py``, ``GandivaPolicy``) is an
*allocation* over job combinations — single jobs and pairs sharing a gang — that Gavel's
mechanism (:mod:`optsched.sim.engine.gavel`, with packing) recomputes at its resets. It is
not optsched's :class:`~optsched.sim.policies.Gandiva` (time slicing with introspective
packing and migration). Its algorithm, described from reading that code:

* The policy remembers the pairs it formed (``assigned``: job -> its combination). At each
  call it first forgets every remembered combination whose job or partner is gone, every single
  job (a single combination scores 0 below), and every pair whose *normalized packed
  throughput* is below 1: the sum over all GPU types of
  :math:`r^{pair}_a / r_a + r^{pair}_b / r_b` (0 when a pair rate is 0).
* If the active jobs' gangs fit in the cluster (sum of gang sizes at most the GPUs), the
  combinations are the single jobs. Otherwise every job not in a remembered pair is listed
  (arrival order), and up to as many times as there were listed jobs, while two remain, two are
  drawn at random (``random.Random(seed).sample``); when their gang sizes agree they become a
  pair (and leave the list). Jobs left over are single combinations. The combinations are the
  remembered pairs and these.
* With :math:`M` combinations, each combination ``c`` of gang size :math:`n_c` gets
  :math:`X_{cj} = (C_j / M) / n_c` on every type ``j`` of :math:`C_j` GPUs, the row scaled down
  to sum to at most 1. Every other pair known to the mechanism gets a zero row.

Under optsched's own engine (which has no pair allocations) :meth:`fractional` gives the
single-job split of the first case for every active job.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import FractionalAllocation, Policy, SimState

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["GavelGandiva"]

Combo = tuple[int, ...]


class GavelGandiva(Policy):
    """Gavel's ``gandiva`` allocation (module notes).

    Parameters
    ----------
    seed : int
        Seed of the random pairing (Gavel's ``--seed``), default 0.
    round_seconds : float
        Round length (default Gavel's 360 s).
    """

    #: Gavel's mechanism keeps pairs of jobs (job combinations) for this policy.
    gavel_packing = True

    def __init__(self, seed: int = 0, round_seconds: float = 360.0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidInstanceError("seed", f"must be an integer, got {seed!r}")
        self.name = "gavel-gandiva"
        self.seed = seed
        self.round_seconds = float(round_seconds)
        self._rng = random.Random(seed)
        self._assigned: dict[int, tuple[Combo, int | None]] = {}

    def reset(self, world: World) -> None:
        """Forget the pairs and re-seed the generator."""
        self._rng = random.Random(self.seed)
        self._assigned = {}

    @staticmethod
    def _split(state: SimState, combos: Sequence[Combo]) -> list[dict[str, float]]:
        world = state.world
        counts = {t: world.cluster.count(t) for t in sorted(world.cluster.names)}
        m = len(combos)
        rows: list[dict[str, float]] = []
        by = {s.job.index: s for s in state.active}
        for combo in combos:
            gang = by[combo[0]].job.num_gpus
            row = {t: c / m / gang for t, c in counts.items()}
            total = sum(row.values())
            if total > 1.0:
                row = {t: v / total for t, v in row.items()}
            rows.append(row)
        return rows

    def fractional(self, state: SimState) -> FractionalAllocation:
        """The single-job split (module notes), for optsched's own engine."""
        combos = [(s.job.index,) for s in state.active]
        rows = self._split(state, combos)
        return {s.job_id: row for s, row in zip(state.active, rows, strict=True)}

    def _normalized(self, state: SimState, combo: Combo) -> float:
        if len(combo) == 1:
            return 0.0
        world = state.world
        a, b = (world.jobs[i] for i in combo)
        total = 0.0
        for t in sorted(world.cluster.names):
            pair = (world.rate(a, t, True, b), world.rate(b, t, True, a))
            if pair[0] <= 0.0 or pair[1] <= 0.0:
                return 0.0
            total += pair[0] / world.rate(a, t) + pair[1] / world.rate(b, t)
        return total

    def gavel_allocation(
        self, state: SimState, pairs: Sequence[tuple[str, ...]]
    ) -> dict[tuple[str, ...], dict[str, float]]:
        """The allocation over job combinations (module notes); ``pairs``: the known pairs."""
        world = state.world
        singles = sorted(s.job.index for s in state.active)
        active = set(singles)
        forget: list[int | None] = []
        for k, (combo, other) in self._assigned.items():
            gone = k not in active or (other is not None and other not in active)
            if gone or self._normalized(state, combo) < 1.0:
                forget.extend((k, other))
        for dropped in forget:
            if dropped is not None:
                self._assigned.pop(dropped, None)
        requested = sum(world.jobs[i].num_gpus for i in singles)
        if requested <= sum(t.count for t in world.cluster.gpu_types):
            combos: list[Combo] = [(i,) for i in singles]
        else:
            listed = [i for i in singles if i not in self._assigned]
            tries = len(listed)
            k = 0
            while len(listed) > 1 and k < tries:
                k += 1
                a, b = self._rng.sample(listed, 2)
                if world.jobs[a].num_gpus != world.jobs[b].num_gpus:
                    continue
                listed.remove(a)
                listed.remove(b)
                combo = (min(a, b), max(a, b))
                self._assigned[a] = (combo, b)
                self._assigned[b] = (combo, a)
            for i in listed:
                self._assigned[i] = ((i,), None)
            combos = sorted({combo for combo, _ in self._assigned.values()})
        rows = self._split(state, combos)
        return {
            tuple(world.jobs[i].job_id for i in combo): row
            for combo, row in zip(combos, rows, strict=True)
        }
