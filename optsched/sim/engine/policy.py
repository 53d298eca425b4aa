r"""The one interface every scheduling policy implements, and what it sees and returns.

At every *decision point* the simulator calls :meth:`Policy.allocate` with a :class:`SimState`
(the clock, the world, the active jobs with their progress and attained service, the current
placements) and receives an :class:`PolicyDecision`: an ordered list of :class:`Grant`\ s, highest
priority first, each asking that one job run on its whole gang of one GPU type until the next
decision point. Decision points are

* **round-based** (``round_seconds = L`` set): at the times ``k L`` of the world's clock
  (``k = 0, 1, ...``; rounds with no active job skipped), and only then (arrivals wait for the
  next round; GPUs freed by a completion stay idle until it), plus any time the policy asks for
  with :attr:`PolicyDecision.wake_at`. The grid is the world's, from its ``t = 0``: a world built
  from a trace has its clock started at the first arrival (:meth:`World.rebased
  <optsched.sim.World.rebased>`), so there the first round starts with the first job; a world
  built by hand whose first job arrives at 45 s with ``L = 60`` first decides at 60. The
  engine, the validator's ``work_conserving`` check and the exact model
  (``docs/formulations/sim_exact.rst``) all index rounds so;
* **event-driven** (``round_seconds=None``): at every arrival and completion, plus the policy's
  ``wake_at`` times (Tiresias's queue demotions and starvation promotions).

A lease of ``L`` seconds (Themis, Chronus) is a round of ``L`` seconds.

The engine carries out an allocation in two passes. **Admission** walks the grants in order and
admits each whose GPU type still has ``num_gpus`` GPUs free by count (a space-sharing grant needs
none); with ``PolicyDecision.blocking`` it stops at the first that does not fit (strict FIFO),
otherwise it skips it (backfilling). **Placement** then puts explicit placements first, then
jobs keeping their current GPUs (no migration), then the rest, largest gang first, each on the
fewest servers it can use (best fit: the server with the fewest free GPUs that holds the whole
gang; for a gang larger than a server, whole servers), and, when fragmentation leaves no
consolidated room, spread over the servers with the most free GPUs (at the unconsolidated rate)
unless the grant requires consolidation, in which case it waits. A gang kept spread is
re-placed on the fewest servers whenever they have room for it whole (also under
``keep_running``): gangs re-consolidate as in Gavel, at the restore cost of a migration. A grant
with ``share_with`` runs on exactly the GPUs of that other job (same type and gang size), at the
measured pair rates. A grant onto a type where the job's rate is 0 is dropped (the job waits).

A grant may size an elastic job's gang (``Grant.num_gpus`` within the job's ``min_gpus`` and
``max_gpus``, see :meth:`World.elastic <optsched.sim.World.elastic>`); admission and placement
then count that size, and a running job granted another size is restarted on a new gang.

Round-based policies may instead implement :meth:`Policy.fractional`, returning a
:class:`FractionalAllocation` ``X[job][gpu_type]`` (time fractions, Gavel's allocation matrix);
the default :meth:`Policy.allocate` then carries it out by Gavel's priority rule
(:func:`carry_out`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from optsched.sim.world.jobs import SimJob, World

__all__ = [
    "FractionalAllocation",
    "Grant",
    "GrantPlacement",
    "JobState",
    "Policy",
    "PolicyDecision",
    "SimState",
    "carry_out",
]

Consolidation = Literal["prefer", "require"]
#: ``X[job_id][gpu_type]``: fraction of wall time the job should run on that type.
FractionalAllocation = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class GrantPlacement:
    """Where a gang runs: one GPU type, ``(server, gpus)`` per server used (sorted by server).

    Servers are numbered per GPU type from 0 (see :class:`~optsched.sim.ClusterSpec`).
    """

    gpu_type: str
    servers: tuple[tuple[int, int], ...]

    @property
    def num_gpus(self) -> int:
        """GPUs of the gang."""
        servers = self.servers
        if len(servers) == 1:  # the common case, read for every running job at every decision
            return servers[0][1]
        return sum(g for _, g in servers)

    def consolidated(self, gpus_per_server: int) -> bool:
        """Whether it uses the fewest servers possible, ``ceil(num_gpus / gpus_per_server)``."""
        return len(self.servers) <= -(-self.num_gpus // gpus_per_server)


@dataclass(frozen=True, slots=True)
class Grant:
    """Run one job on one GPU type until the next decision point.

    Attributes
    ----------
    job : str
        Job id (an active job).
    gpu_type : str
        GPU type; the whole gang is of this type.
    placement : GrantPlacement or None
        Explicit servers (must be free); ``None`` lets the engine place it.
    share_with : str or None
        Run on exactly the GPUs of this other granted job (space sharing, pair rates).
    consolidate : {"prefer", "require"}
        ``require``: wait rather than spread over more servers than needed.
    num_gpus : int or None
        Gang size of this grant (elastic jobs: within the job's ``min_gpus..max_gpus``);
        ``None`` is the job's requested ``num_gpus``. A running job granted another size is
        stopped and restarted on the new gang (a preemption, with the restore cost).
    ps_servers : tuple of int
        The colocation mode (:mod:`optsched.sim.world.colocation`): the server of each of the job's
        parameter servers (one entry per PS; servers of the world's one GPU type). Empty: the
        engine places them (each on the server with the most free CPUs, lowest index first).
        Ignored outside that mode.
    """

    job: str
    gpu_type: str
    placement: GrantPlacement | None = None
    share_with: str | None = None
    consolidate: Consolidation = "prefer"
    num_gpus: int | None = None
    ps_servers: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """A policy's decision: grants in priority order.

    Attributes
    ----------
    grants : tuple of Grant
    blocking : bool
        Stop admitting at the first grant that does not fit (no backfilling).
    wake_at : float or None
        Ask for an extra decision point at this time (must be later than now).
    keep_running : bool
        Every job running now keeps its GPUs (and partner) and ``grants`` only lists jobs to
        start: the incremental form of "keep everything, add these", in time independent of
        the number of running jobs. Grants of running jobs are then an error (unless ``stop``
        is given).
    stop : tuple of str or None
        With ``keep_running``: the running jobs that stop now. ``grants`` may then also list
        running jobs, which are placed as the full form places them (they keep their GPUs
        when they can, a spread gang moves onto fewer servers when they have room); every
        other running job keeps its GPUs. The incremental form of a decision that preempts
        some jobs: the same placement as the full form (every kept job granted, in order)
        when the running jobs left out of ``grants`` are consolidated gangs. Shared pairs
        cannot be stopped or granted this way.
    """

    grants: tuple[Grant, ...] = ()
    blocking: bool = False
    wake_at: float | None = None
    keep_running: bool = False
    stop: tuple[str, ...] | None = None


@dataclass(slots=True)
class JobState:
    """A job as the policy sees it (the engine updates it; policies must not change it).

    Attributes
    ----------
    job : SimJob
        The static description (work, gang size, type, weight, deadline).
    done : float
        Steps completed.
    attained_service : float
        GPU-seconds received (gang size x wall seconds placed, restore time included): Tiresias's
        2D attained service.
    executed_seconds : float
        Wall seconds placed on GPUs.
    rounds_received : dict of str to int
        Decision periods in which it was placed, per GPU type (Gavel's "rounds received").
    placement : GrantPlacement or None
        Where it runs now (None: waiting).
    partner : str or None
        The job sharing its GPUs now.
    last_start, last_stop : float
        Start of its current/last run and end of its last run (NaN when never).
    preemptions : int
        Times it was stopped before completion or moved.
    first_decision : int
        Index of the first decision point it was active at (-1 before it arrives);
        :meth:`SimState.decisions_seen` counts from it.
    queue : int
        A policy-owned slot (e.g. Tiresias's queue index); the engine never reads it.
    ps_servers : tuple of int
        The colocation mode (:mod:`optsched.sim.world.colocation`): the servers of its parameter
        servers while it runs (empty otherwise).
    """

    job: SimJob
    done: float = 0.0
    attained_service: float = 0.0
    executed_seconds: float = 0.0
    rounds_received: dict[str, int] = field(default_factory=dict)
    placement: GrantPlacement | None = None
    partner: str | None = None
    last_start: float = math.nan
    last_stop: float = math.nan
    preemptions: int = 0
    first_decision: int = -1
    queue: int = 0
    ps_servers: tuple[int, ...] = ()

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self.job.job_id

    @property
    def remaining(self) -> float:
        """Steps left."""
        return max(0.0, self.job.work - self.done)

    @property
    def running(self) -> bool:
        """Whether it holds GPUs now."""
        return self.placement is not None


@dataclass(frozen=True, slots=True)
class SimState:
    """What a policy sees at a decision point.

    Attributes
    ----------
    now : float
        Seconds.
    world : World
    active : tuple of JobState
        Arrived, unfinished jobs, in arrival order.
    round_index : int
        Index of this decision point (0-based).
    round_seconds : float or None
        The round length (None: event-driven).
    running : tuple of JobState
        The active jobs holding GPUs when the decision is taken (placed at the previous one).
    arrived : tuple of JobState
        Jobs that became active since the previous decision point.
    finished : tuple of str
        Ids of jobs that completed since the previous decision point.

    ``running``, ``arrived`` and ``finished`` let a policy keep its own queues incrementally,
    in time independent of the number of waiting jobs.
    """

    now: float
    world: World
    active: tuple[JobState, ...]
    round_index: int
    round_seconds: float | None
    running: tuple[JobState, ...] = ()
    arrived: tuple[JobState, ...] = ()
    finished: tuple[str, ...] = ()

    def decisions_seen(self, s: JobState) -> int:
        """Decision points ``s`` has been active at, this one included."""
        return self.round_index - s.first_decision + 1 if s.first_decision >= 0 else 0

    def rate(
        self,
        state: JobState,
        gpu_type: str,
        consolidated: bool = True,
        num_gpus: int | None = None,
    ) -> float:
        """Steps/s of the job alone on a gang of ``num_gpus`` (default its own) of ``gpu_type``."""
        return self.world.rate(state.job, gpu_type, consolidated, num_gpus=num_gpus)

    def capacity(self, gpu_type: str) -> int:
        """GPUs of ``gpu_type``."""
        return self.world.cluster.count(gpu_type)


class Policy:
    """Base class of every scheduling policy.

    Subclasses override :meth:`allocate` (queueing and event-driven policies) or
    :meth:`fractional` (round-based allocation policies, carried out by :func:`carry_out`).

    Attributes
    ----------
    name : str
        Registry name (``fifo``, ``tiresias-las``, ...).
    round_seconds : float or None
        The policy's round/lease length (None: event-driven); :func:`optsched.sim.simulate`
        may override it.
    work_conserving : bool
        The policy claims that at each of its decision points no GPU stays idle while an
        active job that could use it waits (by GPU count, on a type where the job's rate is
        positive). The engine records the claim and the validator checks it (constraint
        ``work_conserving`` of :mod:`optsched.sim.measure.validate`). Default ``False``.
    lazy_progress : bool
        The policy reads the progress (``done``, ``attained_service``, ``executed_seconds``)
        of few jobs at a decision: the engine then brings a job's progress up to date when it
        is read rather than every running job's at every decision point. The values read are
        the same either way (a speed hint only). Default ``False``.
    """

    name: str = "policy"
    round_seconds: float | None = None
    work_conserving: bool = False
    lazy_progress: bool = False

    def reset(self, world: World) -> None:
        """Called once before a simulation starts (clear per-run memory here)."""

    def plain_progress(self) -> None:
        """Called by :func:`~optsched.sim.simulate` after :meth:`reset` when its progress is plain.

        That is: the event-driven engine carries out this policy's own decisions, in a world
        without colocation or batch phases, so that from one decision point ``t'`` to the next
        ``t`` every running job's ``attained_service`` grows by exactly ``gpus * (t - t')``
        (the engine's sum, bit for bit, eager or lazy; restore time included) and changes
        nowhere else. A policy may then form that sum itself rather than read it (2D-LAS's
        compiled walk does). Never called when decisions come from elsewhere
        (:func:`~optsched.sim.simulate_steps`, other mechanisms, other worlds). Default:
        nothing.
        """

    def refuses(self, world: World) -> str | None:
        """Why this policy cannot run ``world`` (``None``: it can).

        A policy whose model excludes some worlds (AlloX schedules single-GPU jobs only) says
        so here, so that "every policy" comparisons leave it out with the reason instead of
        failing; its :meth:`reset` refuses such a world with a typed error.
        """
        return None

    def allocate(self, state: SimState) -> PolicyDecision:
        """Decide who runs where until the next decision point."""
        x = self.fractional(state)
        if x is None:
            raise NotImplementedError(
                f"{type(self).__name__} implements neither allocate nor fractional"
            )
        return carry_out(state, x)

    def fractional(self, state: SimState) -> FractionalAllocation | None:
        """Gavel-style time fractions ``X[job][gpu_type]`` (``None``: not a fractional policy)."""
        return None

    def run_facts(self) -> dict[str, Any]:
        """Facts of the last run that its record keeps in ``SimResult.extra`` (default none)."""
        return {}

    def max_wakeups(self, world: World) -> int:
        """Upper bound on the ``wake_at`` requests of one run on ``world`` (default none).

        The engine counts events against ``limits.max_events`` before running and stops a
        policy that asks for more wake-ups than it declared.
        """
        return 0

    def __repr__(self) -> str:
        rs = (
            "event-driven"
            if self.round_seconds is None
            else f"round_seconds={self.round_seconds:g}"
        )
        return f"{type(self).__name__}({self.name!r}, {rs})"


def carry_out(state: SimState, x: FractionalAllocation) -> PolicyDecision:
    r"""Gavel's round mechanism: grant (job, type) pairs by priority ``X / received share``.

    For job ``m`` and type ``j`` with ``X_mj > 0`` the priority is
    ``X_mj / (rounds_received_mj / rounds_active_m)``, where ``rounds_active_m`` counts the
    decision points the job has been active at, this one included — infinite when the job has
    not yet run on ``j``. Pairs are taken in decreasing priority (ties: larger ``X``, then
    earlier arrival, then type order), each job on at most one type, a pair whose type has no
    longer room for the job's gang being passed over for the job's next pair (as Gavel's
    scheduler does). **Leftover GPUs** then go to the jobs with no share this round (a zero
    ``X`` everywhere, or whose pairs found no room), as in Gavel: running jobs first (on their
    current type when it has room, so that they are not preempted needlessly), then waiting
    jobs by arrival, each on the first type in the cluster's order with room and a positive
    rate. No GPU is then left idle while an active job could use it (by count): the policies
    carried out this way are work-conserving (:attr:`Policy.work_conserving`).

    Complexity: :math:`O(P \log P + A \log A + A K)` for :math:`P` positive entries of ``X``,
    :math:`A` active jobs and :math:`K` GPU types.
    """
    names = state.world.cluster.names
    order = {t: k for k, t in enumerate(names)}
    by_id = {s.job.job_id: s for s in state.active}
    round_index = state.round_index
    inf = math.inf
    keys: list[tuple[float, float, float, int, str, str, int]] = []
    append = keys.append
    for jid, row in x.items():
        s = by_id.get(jid)
        if s is None:
            continue
        received_by_type = s.rounds_received
        # state.decisions_seen(s), at least 1
        first = s.first_decision
        active = max(1, round_index - first + 1 if first >= 0 else 0)
        job = s.job
        for gpu_type, value in row.items():
            if not (value > 0) or gpu_type not in order:
                continue
            share = received_by_type.get(gpu_type, 0) / active
            prio = inf if share <= 0 else value / share
            # the gang size rides along last: (job, type) is unique, so it is never compared
            append((-prio, -value, job.arrival, order[gpu_type], jid, gpu_type, job.num_gpus))
    keys.sort()
    free = {t.name: t.count for t in state.world.cluster.gpu_types}
    # GPUs left: once none is, no gang (at least one GPU each) can be granted any more
    room: float = sum(free.values())
    if any(s.job.num_gpus < 1 for s in state.active):
        room = math.inf  # not a valid world's job; nothing is cut short then
    grants: list[Grant] = []
    taken: set[str] = set()
    for key in keys:
        if room <= 0:
            break
        jid, gpu_type, n = key[4], key[5], key[6]
        if jid not in taken and free[gpu_type] >= n:
            taken.add(jid)
            free[gpu_type] -= n
            room -= n
            grants.append(Grant(job=jid, gpu_type=gpu_type))
    if room <= 0:
        return PolicyDecision(grants=tuple(grants))
    left = [s for s in state.active if s.job.job_id not in taken]
    left.sort(key=lambda s: (s.placement is None, s.job.arrival, s.job.index))
    for s in left:
        if room <= 0:
            break
        n = s.job.num_gpus
        current = s.placement.gpu_type if s.placement is not None else None
        candidates = ([current] if current is not None else []) + list(names)
        for gpu_type in candidates:
            if free[gpu_type] >= n and state.rate(s, gpu_type) > 0:
                free[gpu_type] -= n
                room -= n
                grants.append(Grant(job=s.job_id, gpu_type=gpu_type))
                break
    return PolicyDecision(grants=tuple(grants))
