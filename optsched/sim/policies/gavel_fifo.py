r"""Gavel's heterogeneity-agnostic FIFO allocation (``gavel-fifo``), for Gavel's mechanism.

Gavel's ``fifo`` policy (``scheduler/policies/fifo.py``, ``FIFOPolicy`` in its ``base`` mode) is
not the FIFO queue of :class:`~optsched.sim.policies.FIFO`: it is an *allocation* ``X`` that
Gavel's mechanism (:mod:`optsched.sim.engine.gavel`) recomputes at its resets and carries out
by priority. This class reproduces its algorithm, described here from reading that code:

* The policy remembers one GPU type per admitted job across calls (``assigned``).
* A call first walks the admitted jobs by arrival: a job still active holds its gang's GPUs of
  its type (``available[type] -= gang``); for a job that has completed, the head of the queue of
  unadmitted jobs (arrival order) is admitted on the completed job's type when that type has
  its gang available (as counted so far) and a positive rate for it; the completed job is
  forgotten.
* The types with GPUs available (by count) are then listed in name order, and while unadmitted
  jobs and listed types remain, the head of the queue is taken: if no listed type has its gang
  available the call stops; otherwise a listed type with room is drawn at random (seeded
  generator), but the job is admitted on the **last listed type** (``v100`` while it is
  listed) whatever was drawn, when its rate there is positive — in Gavel the drawn index is
  never turned back into a type, and the variable holding the type still holds the last
  element of the loop that listed the candidates. That type's count is decreased and, when it
  reaches exactly zero, the *drawn* type is removed from the list. When the drawn type was the
  last one, the next jobs go to the type before it; otherwise the last type's count goes below
  zero, never reaches zero again, and every later job is admitted on it. Which of the two
  happens depends on the seed.
* ``X[m][type] = 1`` for the admitted jobs, an empty row for the others.

Under Gavel's mechanism jobs of zero priority are skipped for this policy only
(:attr:`skips_zero_priority`), so with ``X`` one-hot every job runs only on the type it was
admitted on, and the jobs admitted on a type share it round by round by the time each
received (Gavel's priorities). With a single GPU type the draw has one
candidate and the policy is strict FIFO with head-of-line blocking.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import FractionalAllocation, Policy, SimState

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["GavelFIFO"]


class GavelFIFO(Policy):
    """Gavel's ``fifo`` allocation (module notes).

    Parameters
    ----------
    seed : int
        Seed of the random type draws (Gavel's ``--seed``), default 0.
    round_seconds : float
        Round length (default Gavel's 360 s).
    """

    #: Gavel's mechanism skips jobs of zero priority for its FIFO policies.
    skips_zero_priority = True

    def __init__(self, seed: int = 0, round_seconds: float = 360.0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidInstanceError("seed", f"must be an integer, got {seed!r}")
        self.name = "gavel-fifo"
        self.seed = seed
        self.round_seconds = float(round_seconds)
        self._rng = random.Random(seed)
        self._assigned: dict[int, str] = {}

    def reset(self, world: World) -> None:
        """Forget the admitted jobs and re-seed the generator."""
        self._rng = random.Random(self.seed)
        self._assigned = {}

    def fractional(self, state: SimState) -> FractionalAllocation:
        """The allocation of the module notes."""
        world = state.world
        names = sorted(world.cluster.names)
        available = {t: world.cluster.count(t) for t in names}
        by_index = {s.job.index: s for s in state.active}
        queue = [k for k in sorted(by_index) if k not in self._assigned]
        for k in sorted(self._assigned):
            gpu_type = self._assigned[k]
            if k in by_index:
                available[gpu_type] -= by_index[k].job.num_gpus
                continue
            if queue:
                head = by_index[queue[0]]
                if head.job.num_gpus <= available[gpu_type] and state.rate(head, gpu_type) > 0.0:
                    queue.pop(0)
                    self._assigned[head.job.index] = gpu_type
                    available[gpu_type] -= head.job.num_gpus
            del self._assigned[k]
        listed = [t for t in names if available[t] > 0]
        while queue and listed:
            head = by_index[queue.pop(0)]
            target = listed[-1]
            need = head.job.num_gpus
            room = [k for k, t in enumerate(listed) if available[t] >= need]
            if not room:
                break
            drawn = room[self._rng.randrange(len(room))]
            if state.rate(head, target) > 0.0:
                self._assigned[head.job.index] = target
                available[target] -= need
                if available[target] == 0:
                    listed.pop(drawn)
        return {
            s.job_id: ({self._assigned[s.job.index]: 1.0} if s.job.index in self._assigned else {})
            for s in state.active
        }
