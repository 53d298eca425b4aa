r"""Space-sharing allocation LPs in the simulator: pair rows carried out as shared gangs.

:class:`PackedAllocationLP` is :class:`~optsched.sim.policies.AllocationLP` with the round's
instance extended by each job's co-location class (its throughput-table job type and gang size)
and the normalised pair throughputs of the classes present (the table's pair rate over the rate
alone, per GPU type; a pair is offered only where both measured pair rates are positive, so the
engine's pair rate is the one the LP used). Its packed LP (:mod:`optsched.allocation.gavel.packed`)
returns singleton fractions :math:`X_{mj}` and pair fractions :math:`Y_{pj}`.

**Round mechanism** (Gavel's, extended to pairs). Every row — a job alone on type :math:`j`, or
a pair sharing a gang of type :math:`j` — has the priority

.. math::

    \pi = \frac{X}{\text{rounds the row received} / \text{rounds its jobs were all active}}

(infinite for a row that has not run yet). Rows are taken in decreasing priority (ties: larger
fraction, earlier arrival, type order) while the type has GPUs left by count and none of the
row's jobs is taken; a pair row becomes a :class:`~optsched.sim.Grant` for its first job
(consolidated: the pair rates are measured on consolidated gangs) and a ``share_with`` grant for
the second. Rounds received are counted from what ran: at each decision point, every running
job with a partner credits its pair row on its GPU type, every other running job its singleton
row.

Complexity per round: the LP, plus :math:`O(R \log R)` for :math:`R` positive rows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from optsched.allocation.gavel import PACKED_POLICIES, AllocationJob, PairThroughput
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Grant, JobState, PolicyDecision, SimState
from optsched.sim.policies.allocation import DEFAULT_ROUND_SECONDS, AllocationLP
from optsched.sim.world.throughputs import GENERIC

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["PackedAllocationLP"]


def _key(job_type: str, n: int) -> str:
    return f"('{job_type}', {n})"


class PackedAllocationLP(AllocationLP):
    """A packed allocation LP as a round-based simulator policy (see the module notes).

    Parameters
    ----------
    policy : str
        A key of :data:`optsched.allocation.gavel.PACKED_POLICIES` (``max-min-packed``,
        ``ftf-packed``, ``makespan-packed``, ``max-sum-throughput-packed``).
    round_seconds : float
        Round length (default Gavel's 360 s).
    """

    #: pairs wait for consolidated GPUs and leftover GPUs are not handed out
    work_conserving = False

    def __init__(self, policy: str, round_seconds: float = DEFAULT_ROUND_SECONDS) -> None:
        if policy not in PACKED_POLICIES:
            raise InvalidInstanceError(
                "policy", f"unknown packed policy {policy!r}; known: {sorted(PACKED_POLICIES)}"
            )
        super().__init__(policy, round_seconds)
        self._rounds: dict[tuple[str, str, str], int] = {}
        self._classes: dict[str, tuple[str, int]] = {}

    def reset(self, world: World) -> None:
        """Forget the previous run (also the rounds each row received)."""
        super().reset(world)
        self._rounds = {}
        self._classes = {}

    def job_type(self, state: SimState, s: JobState) -> str | None:
        """``"('<job type>', <gang size>)"`` for a measured job type; generic jobs never share."""
        if s.job.job_type == GENERIC:
            return None
        key = _key(s.job.job_type, s.job.num_gpus)
        self._classes[key] = (s.job.job_type, s.job.num_gpus)
        return key

    def pair_throughputs(
        self, state: SimState, jobs: list[AllocationJob]
    ) -> tuple[PairThroughput, ...]:
        """Normalised pair throughputs of every two classes among ``jobs``.

        Only pairs with measured positive rates on some GPU type are listed.
        """
        table = state.world.throughputs
        types = state.world.cluster.names
        keys = sorted({j.job_type for j in jobs if j.job_type is not None})
        out: list[PairThroughput] = []
        for ia, ka in enumerate(keys):
            a, n = self._classes[ka]
            for kb in keys[ia:]:
                b, nb = self._classes[kb]
                if nb != n:
                    continue
                factors = []
                for g in types:
                    pair = table.pair_rates(a, b, n, g)
                    alone_a, alone_b = table.rate(a, n, g), table.rate(b, n, g)
                    if pair is None or alone_a <= 0 or alone_b <= 0:
                        factors.append((0.0, 0.0))
                        continue
                    fa, fb = pair[0] / alone_a, pair[1] / alone_b
                    if ka == kb:  # one class: the same factor on both sides (the smaller)
                        fa = fb = min(fa, fb)
                    factors.append((fa, fb))
                if any(fa > 0 and fb > 0 for fa, fb in factors):
                    out.append(PairThroughput(job_types=(ka, kb), normalized=tuple(factors)))
        return tuple(out)

    def _credit(self, state: SimState) -> None:
        """Count the rows that ran in the round that just ended (see the module notes)."""
        for s in state.running:
            if s.placement is None:
                continue
            gpu = s.placement.gpu_type
            if s.partner is None:
                key = (s.job_id, "", gpu)
            elif s.job_id < s.partner:
                key = (s.job_id, s.partner, gpu)
            else:
                continue  # the pair is credited once, from its first job
            self._rounds[key] = self._rounds.get(key, 0) + 1

    def allocate(self, state: SimState) -> PolicyDecision:
        """Solve the round's packed LP and carry it out by priority (module notes)."""
        self._credit(state)
        solved = self.solve_round(state)
        if solved is None:
            return PolicyDecision()
        instance, result = solved
        alloc = result.solution
        assert alloc is not None
        by_id = {s.job_id: s for s in state.active}
        order = {t: k for k, t in enumerate(instance.gpu_types)}
        ids = [j.job_id for j in instance.jobs]
        rows: list[tuple[float, float, float, int, str, str, str]] = []

        def add(a: str, b: str, gpu: str, value: float) -> None:
            sa = by_id[a]
            seen = max(1, state.decisions_seen(sa))
            arrival = sa.job.arrival
            if b:
                sb = by_id[b]
                seen = max(1, min(seen, state.decisions_seen(sb)))
                arrival = max(arrival, sb.job.arrival)
            received = self._rounds.get((a, b, gpu), 0) / seen
            prio = math.inf if received <= 0 else value / received
            rows.append((-prio, -value, arrival, order[gpu], a, b, gpu))

        for i, row in enumerate(alloc.fractions):
            for j, value in enumerate(row):
                if value > 0:
                    add(ids[i], "", instance.gpu_types[j], float(value))
        for (p, q), row in zip(alloc.pairs, alloc.pair_fractions, strict=True):
            a, b = sorted((ids[int(p)], ids[int(q)]))
            for j, value in enumerate(row):
                if value > 0:
                    add(a, b, instance.gpu_types[j], float(value))
        rows.sort()
        free = {name: state.capacity(name) for name in instance.gpu_types}
        taken: set[str] = set()
        grants: list[Grant] = []
        for *_, a, b, gpu in rows:
            need = by_id[a].job.num_gpus
            if a in taken or (b and b in taken) or free[gpu] < need:
                continue
            free[gpu] -= need
            taken.add(a)
            if b:
                taken.add(b)
                grants.append(Grant(job=a, gpu_type=gpu, consolidate="require"))
                grants.append(Grant(job=b, gpu_type=gpu, share_with=a))
            else:
                grants.append(Grant(job=a, gpu_type=gpu))
        return PolicyDecision(grants=tuple(grants))
