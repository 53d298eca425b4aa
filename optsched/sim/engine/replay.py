r"""Turn a per-round allocation (for example an exact model's) into a checked simulation record.

:func:`replay_rounds` carries out a given schedule of the round-based world: in round ``k``
(the time ``[k L, (k + 1) L)``) the jobs listed for that round run on the GPU types (or explicit
placements) given, with every rule of the simulator (gangs, placement, restore cost, completion
at the exact time the work is done, GPUs freed mid-round staying idle). The result is a
:class:`~optsched.sim.SimResult` that :func:`~optsched.sim.validate` checks like any other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.core import simulate
from optsched.sim.engine.policy import Grant, GrantPlacement, Policy, PolicyDecision, SimState
from optsched.sim.measure.record import SimResult
from optsched.sim.world.jobs import World
from optsched.tolerances import TIME_TOL

__all__ = ["FixedRounds", "replay_rounds"]

RoundPlan = Mapping[str, "str | GrantPlacement"]


class FixedRounds(Policy):
    """A policy that plays back ``rounds[k]`` (job id -> GPU type or GrantPlacement) in round ``k``.

    Jobs not active in a round (not arrived yet, or finished) are left out; a job listed in a
    round that does not fit (by count or, with a GrantPlacement, by server) is an error of the plan
    (:class:`~optsched.errors.PolicyError`).
    """

    name = "replay"

    def __init__(self, rounds: Sequence[RoundPlan], round_seconds: float) -> None:
        self.rounds = list(rounds)
        self.round_seconds = round_seconds

    def allocate(self, state: SimState) -> PolicyDecision:
        """The plan of the current round."""
        assert self.round_seconds is not None
        k = math.floor(state.now / self.round_seconds + TIME_TOL)
        plan = self.rounds[k] if 0 <= k < len(self.rounds) else {}
        active = {s.job_id for s in state.active}
        grants = []
        used: dict[str, int] = {}
        by_id = {s.job_id: s for s in state.active}
        for job, where in plan.items():
            if job not in active:
                continue
            gpu_type = where.gpu_type if isinstance(where, GrantPlacement) else where
            used[gpu_type] = used.get(gpu_type, 0) + by_id[job].job.num_gpus
            if used[gpu_type] > state.capacity(gpu_type):
                raise PolicyError(
                    f"round {k}: the plan puts {used[gpu_type]} GPUs on {gpu_type!r}, which has "
                    f"{state.capacity(gpu_type)}"
                )
            if isinstance(where, GrantPlacement):
                grants.append(Grant(job=job, gpu_type=where.gpu_type, placement=where))
            else:
                grants.append(Grant(job=job, gpu_type=where))
        return PolicyDecision(grants=tuple(grants), blocking=True)


def replay_rounds(
    world: World,
    rounds: Sequence[RoundPlan],
    round_seconds: float,
    *,
    name: str = "replay",
) -> SimResult:
    """Simulate the given per-round plan (see the module notes).

    The horizon is ``len(rounds) * round_seconds``: jobs unfinished by then are reported
    unfinished (``SimResult.truncated``).
    """
    if not isinstance(round_seconds, int | float) or not math.isfinite(round_seconds):
        raise InvalidInstanceError(
            "round_seconds", f"must be a finite number, got {round_seconds!r}"
        )
    policy = FixedRounds(rounds, float(round_seconds))
    policy.name = name
    return simulate(world, policy, max_time=len(rounds) * float(round_seconds))
