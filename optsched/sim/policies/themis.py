r"""Themis in the simulator: a partial-allocation auction at every lease.

Every lease of :attr:`Themis.round_seconds` (default ten minutes) the policy builds the round's
:class:`~optsched.allocation.gavel.AllocationInstance` from the simulation state with the same
translation as the exact allocation policies
(:func:`~optsched.sim.policies.allocation.allocation_jobs`: each active job's rate on each GPU
type for its whole gang, its gang size, weight, steps left, seconds since arrival and
isolated-time history) and runs one lease of the
mechanism, :func:`optsched.allocation.themis.themis_round`: the :math:`1 - f` worst apps by
finish-time fairness bid, the Partial Allocation mechanism decides, leftovers go to the others.
The lease's time fractions are carried out by the simulator's round mechanism
(:func:`~optsched.sim.carry_out`), as for the exact ``ftf-perf`` LP beside it, so the two differ
only in the allocation they ask for.

The isolated-time history :math:`h_m` is kept as for the exact policies
(:mod:`optsched.sim.policies.allocation`): round by round, the time the progress a job made would
have taken at its isolated share.

Apps are jobs (``group_by="job"``) or the jobs of one trace ``user`` (``group_by="user"``; jobs
with no user are apps of their own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from optsched.allocation.gavel import AllocationInstance
from optsched.allocation.themis import (
    DEFAULT_FAIRNESS,
    DEFAULT_LEASE_SECONDS,
    check_options,
    themis_round,
)
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import FractionalAllocation, Policy, SimState
from optsched.sim.policies.allocation import IsolatedTime, allocation_jobs, as_fractions

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["Themis", "ThemisLease"]

GroupBy = Literal["job", "user"]


@dataclass(frozen=True)
class ThemisLease:
    """One lease: when, how many apps and participants, and the allocation's worst rho."""

    now: float
    apps: int
    participants: int
    max_rho: float


class Themis(Policy):
    r"""Themis's lease-based partial-allocation auctions (Mahajan et al., NSDI 2020).

    Parameters
    ----------
    fairness : float
        The knob :math:`f \in [0, 1)`: each lease offers the GPUs to the :math:`1 - f` worst apps
        by finish-time fairness (default 0.8).
    lease_s : float
        Lease length in seconds (> 0; default 600). It is the policy's round length.
    group_by : {"job", "user"}
        What an app is.

    Raises
    ------
    InvalidInstanceError
        A bad option, naming ``fairness``, ``lease_s`` or ``group_by``.
    """

    def __init__(
        self,
        fairness: float = DEFAULT_FAIRNESS,
        lease_s: float = DEFAULT_LEASE_SECONDS,
        group_by: GroupBy = "job",
    ) -> None:
        check_options(fairness, lease_s)
        if group_by not in ("job", "user"):
            raise InvalidInstanceError("group_by", f"must be 'job' or 'user', got {group_by!r}")
        self.name = "themis"
        self.fairness = float(fairness)
        self.round_seconds = float(lease_s)
        self.group_by: GroupBy = group_by
        self.leases: list[ThemisLease] = []
        self._isolated = IsolatedTime()

    def reset(self, world: World) -> None:
        """Forget the previous run (leases, isolated-time history)."""
        self.leases = []
        self._isolated = IsolatedTime()

    def fractional(self, state: SimState) -> FractionalAllocation:
        """The lease's allocation (see the module notes)."""
        round_jobs = allocation_jobs(state, self._isolated)
        types, capacity, jobs = round_jobs.gpu_types, round_jobs.capacity, round_jobs.jobs
        users: dict[str, str] = {}
        if self.group_by == "user":
            users = {s.job.job_id: s.job.user for s in round_jobs.states if s.job.user}
        if not jobs:
            return {}
        instance = AllocationInstance(gpu_types=types, capacity=capacity, jobs=jobs)
        # The lease the mechanism prices is the one the simulator runs (it may override it).
        lease = state.round_seconds or self.round_seconds or DEFAULT_LEASE_SECONDS
        outcome = themis_round(
            instance,
            fairness=self.fairness,
            lease_s=lease,
            apps=users if self.group_by == "user" else None,
        )
        self.leases.append(
            ThemisLease(
                now=state.now,
                apps=len(outcome.apps),
                participants=len(outcome.participants),
                max_rho=outcome.max_rho,
            )
        )
        self._isolated.record(instance)
        return as_fractions(instance, outcome.allocation.fractions)

    def __repr__(self) -> str:
        return (
            f"Themis(fairness={self.fairness:g}, lease_s={self.round_seconds:g}, "
            f"group_by={self.group_by!r})"
        )
