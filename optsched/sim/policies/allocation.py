r"""Gavel-class allocation policies in the simulator: an exact LP every round, carried out.

Every round of :attr:`round_seconds` the policy builds the round's
:class:`~optsched.allocation.AllocationInstance` from the simulation state (each active job's
rate on each GPU type for its whole gang, its gang size, weight, steps left and history) and
solves the policy's LP exactly (:func:`optsched.allocation.solve`, sparse matrices straight into
HiGHS, warm-started from the previous round's basis). The time fractions :math:`X_{mj}` are then
carried out by the simulator's round mechanism (:func:`~optsched.sim.carry_out`: priority
:math:`X_{mj}` over the share of rounds received on type :math:`j`).

A round whose LP is not proven optimal raises :class:`~optsched.errors.NotOptimalError`: the
simulation stops rather than run an allocation nobody checked. Every solve's status, objective
and time is kept in :attr:`AllocationLP.solves`.

Finish-time fairness needs each job's isolated-share history :math:`h_m`; as in Gavel's
policy it accumulates, round by round, the time the progress a job made would have taken at its
isolated share (:math:`\Delta\text{steps} / q_m` with :math:`q_m` the isolated throughput of the
previous round).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optsched.allocation import POLICIES as LP_POLICIES
from optsched.allocation import AllocationInstance, AllocationJob, PairThroughput, solve
from optsched.allocation.shares import isolated_throughput
from optsched.errors import InvalidInstanceError
from optsched.results import ExactResult
from optsched.sim.policy import FractionalAllocation, JobState, Policy, SimState

if TYPE_CHECKING:
    from optsched.sim.world import World

__all__ = ["DEFAULT_ROUND_SECONDS", "AllocationLP", "RoundSolve"]

#: Gavel's round length (6 minutes).
DEFAULT_ROUND_SECONDS = 360.0


@dataclass(frozen=True)
class RoundSolve:
    """One round's LP: when, how many jobs, status, objective, bound, seconds, LPs solved."""

    now: float
    jobs: int
    status: str
    objective: float | None
    bound: float | None
    seconds: float
    lp_solves: int


class AllocationLP(Policy):
    """An allocation LP of :mod:`optsched.allocation` as a round-based simulator policy.

    Parameters
    ----------
    policy : str
        A key of :data:`optsched.allocation.POLICIES` (``max-min``, ``max-min-perf``, ``ftf``,
        ``ftf-perf``, ``makespan``, ``makespan-perf``, ``max-sum-throughput-perf``).
    round_seconds : float
        Round length (default Gavel's 360 s).
    """

    def __init__(self, policy: str, round_seconds: float = DEFAULT_ROUND_SECONDS) -> None:
        if policy not in LP_POLICIES:
            raise InvalidInstanceError(
                "policy", f"unknown allocation policy {policy!r}; known: {sorted(LP_POLICIES)}"
            )
        if not (math.isfinite(round_seconds) and round_seconds > 0):
            raise InvalidInstanceError("round_seconds", f"must be > 0, got {round_seconds!r}")
        self.name = policy
        self.policy = policy
        self.round_seconds = float(round_seconds)
        self.solves: list[RoundSolve] = []
        self._warm: Any = None
        self._history: dict[str, float] = {}
        self._previous: dict[str, tuple[float, float]] = {}

    def reset(self, world: World) -> None:
        """Forget the previous run (solves, warm start, isolated-share history)."""
        self.solves = []
        self._warm = None
        self._history = {}
        self._previous = {}

    def fractional(self, state: SimState) -> FractionalAllocation:
        """The round's exact allocation (see the module notes)."""
        solved = self.solve_round(state)
        if solved is None:
            return {}
        instance, result = solved
        assert result.solution is not None
        types = instance.gpu_types
        fractions = result.solution.fractions
        return {
            job.job_id: {
                name: float(fractions[i, j]) for j, name in enumerate(types) if fractions[i, j] > 0
            }
            for i, job in enumerate(instance.jobs)
        }

    def job_type(self, state: SimState, s: JobState) -> str | None:
        """The job's co-location class in the round's instance (``None``: never shares)."""
        return None

    def pair_throughputs(
        self, state: SimState, jobs: list[AllocationJob]
    ) -> tuple[PairThroughput, ...]:
        """The round's pair table (none: the unpacked policies)."""
        return ()

    def solve_round(self, state: SimState) -> tuple[AllocationInstance, ExactResult[Any]] | None:
        """Build the round's instance and solve it (recorded in :attr:`solves`).

        ``None`` when no active job can run anywhere.
        """
        world = state.world
        types = world.cluster.names
        capacity = tuple(world.cluster.type(name).count for name in types)
        jobs = []
        for s in state.active:
            rates = tuple(state.rate(s, name) for name in types)
            if not any(r > 0 and s.job.num_gpus <= c for r, c in zip(rates, capacity, strict=True)):
                continue  # it can run nowhere: the LP has nothing to give it
            left = max(s.job.work - s.done, 0.0)
            job_id = s.job.job_id
            if job_id in self._previous:  # Gavel's isolated-time bookkeeping (module notes)
                before, q = self._previous[job_id]
                if q > 0:
                    self._history[job_id] = self._history.get(job_id, 0.0) + (before - left) / q
            jobs.append(
                AllocationJob(
                    job_id=job_id,
                    throughput=rates,
                    scale_factor=s.job.num_gpus,
                    weight=s.job.weight,
                    steps_remaining=left,
                    time_since_start=max(state.now - s.job.arrival, 0.0),
                    isolated_time=self._history.get(job_id, 0.0),
                    job_type=self.job_type(state, s),
                )
            )
        if not jobs:
            return None
        instance = AllocationInstance(
            gpu_types=types,
            capacity=capacity,
            jobs=tuple(jobs),
            pair_throughputs=self.pair_throughputs(state, jobs),
        )
        start = time.perf_counter()
        result = solve(instance, self.policy, warm_start=self._warm)
        self.solves.append(
            RoundSolve(
                now=state.now,
                jobs=len(jobs),
                status=result.status.value,
                objective=result.objective,
                bound=result.bound,
                seconds=time.perf_counter() - start,
                lp_solves=int(result.extra.get("lp_solves", 0)),
            )
        )
        self._warm = result.extra.get("lp")
        shares = isolated_throughput(
            instance.throughputs, instance.scale_factors, instance.capacities
        )
        self._previous = {
            job.job_id: (job.steps_remaining, float(shares[i]))
            for i, job in enumerate(instance.jobs)
        }
        return instance, result
