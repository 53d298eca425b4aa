r"""The event-driven simulator that carries out a :class:`~optsched.sim.Policy` on a world.

**Time and decision points.** Event-driven (``round_seconds=None``): decisions at every arrival,
every completion and every ``wake_at`` the policy asks for. Round-based (``round_seconds = L``):
decisions at the times ``k L`` (``k = 0, 1, ...``; rounds with no active job are skipped) and at
the policy's ``wake_at`` times, never at arrivals or completions: an arriving job waits for the
next round, and GPUs a job frees mid-round stay idle until it.

**Between decision points** every placed job progresses at its rate (alone or paired, consolidated
or not; see :meth:`World.rate <optsched.sim.World.rate>`), except during the first
``restore_s`` of a *run* that resumes a job which had run before (a run is a stretch of time
on one unchanged placement), and of every job's first run when the world has
``restore_on_first_start``. When a job's work is done it completes at that exact time and
frees its GPUs; a job sharing its GPUs continues alone, at its alone rate, in the same run.

**Batch-size phases.** A job with a ``batch_schedule`` (Shockwave's dynamic jobs,
:mod:`optsched.sim.world.batch_schedule`) runs at the rate of the phase its progress is in
(:meth:`World.rate <optsched.sim.World.rate>` with ``phase``); the end of its current phase is an
event like a completion, at which its rate changes inside the run (and the round): no decision
point, no new record segment, no restore. A job without a schedule takes none of these steps.

**Placement** (see :mod:`optsched.sim.engine.policy`): at every decision point a running gang spread
over more servers than it needs moves onto the fewest servers as soon as they have room for it
whole (Gavel's behaviour; a migration, charged the restore cost), and keeps its spread servers
only otherwise. A grant of a job onto a GPU type where its rate is 0 (or a spread placement
where the table's unconsolidated rate is 0) is dropped, whichever policy made it, and counted in
``SimResult.extra["zero_rate_grants"]``: no job holds GPUs it cannot progress on.

**Bounds.** With ``n`` jobs, ``R = floor(horizon / L) + 1`` rounds and ``W`` the policy's declared
wake-ups, every loop iteration consumes an arrival batch, a completion, a round or a wake-up, so
the loop runs at most ``2 n + R + W + 1 + P`` times (``P``: the batch-phase boundaries of
the dynamic jobs, each crossed once); that bound is checked against
``limits.max_events`` before anything runs. The horizon (``max_time``) defaults to the last arrival
plus twice the sum, over jobs, of the job's time alone on its slowest type and gang size (an
elastic job's from ``min_gpus`` to ``max_gpus``; slowed by
``L / (L - restore)`` in rounds), plus ``restore_s`` per possible event, plus ``n + 2``
rounds (a job finishing mid-round leaves its GPUs idle until the round ends); a run cut short
there says so (``SimResult.truncated``).

Complexity: :math:`O(E (A \log A + S))` for :math:`E` events, :math:`A` active jobs and :math:`S`
servers, plus the policy's own work. The free servers are kept across decisions, bucketed by free
GPUs, so a decision under ``keep_running`` (or its ``stop`` form) places the jobs it starts in
:math:`O(g + \log S)` each (``g`` GPUs per server) with no pass over the servers; a policy with
``lazy_progress`` has the running jobs' progress brought up to date when read (replaying the
decision points it missed, with the same arithmetic) instead of at every decision point.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Generator
from typing import Literal

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim.engine.bounds import default_horizon, event_bound, excluded_type_notes
from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism
from optsched.sim.engine.gavel import DEFAULT_ROUND_SECONDS as GAVEL_ROUND_SECONDS
from optsched.sim.engine.gavel import GavelMechanism, simulate_gavel
from optsched.sim.engine.loop import Engine
from optsched.sim.engine.policy import Policy, PolicyDecision, SimState
from optsched.sim.engine.tiresias_options import TiresiasMechanism
from optsched.sim.measure.record import SimResult
from optsched.sim.world.jobs import World

__all__ = [
    "default_horizon",
    "event_bound",
    "excluded_type_notes",
    "simulate",
    "simulate_steps",
]

_POLICY_ROUND: Literal["policy"] = "policy"


def simulate(
    world: World,
    policy: Policy | str,
    *,
    round_seconds: float | Literal["policy"] | None = _POLICY_ROUND,
    max_time: float | None = None,
    restore_on_first_start: bool | None = None,
    mechanism: str | GavelMechanism | ElasticFlowMechanism | TiresiasMechanism = "optsched",
) -> SimResult:
    """Run ``policy`` on ``world``.

    Parameters
    ----------
    world : World
    policy : Policy or str
        A policy object, or a registered name (:func:`optsched.sim.policies.policy_names`).
    round_seconds : float or None, optional
        Round/lease length; ``None`` is event-driven; by default the policy's own.
    max_time : float, optional
        Horizon (default :func:`default_horizon`).
    restore_on_first_start : bool, optional
        Override :attr:`World.restore_on_first_start <optsched.sim.World>` for this run: charge
        the restore cost on every job's first start too (the reference semantics of
        Gavel-derived simulators). The record's world carries the value used.
    mechanism : {"optsched", "gavel", "elasticflow", "tiresias"} or options, optional
        How a round is carried out. ``"optsched"`` (default): this engine, re-solving every
        round and carrying a fractional allocation out by :func:`~optsched.sim.carry_out`
        (kept as the default: it decides every round from the current state, and existing
        runs keep their results). ``"gavel"`` or a
        :class:`~optsched.sim.engine.gavel.GavelMechanism` (its options): Gavel's own
        mechanism (:mod:`optsched.sim.engine.gavel`: resets on arrival/completion at most
        every 1920 s, per-type queues, Gavel's priorities), round length by default 360 s.
        ``"elasticflow"`` or an
        :class:`~optsched.sim.engine.elasticflow.ElasticFlowMechanism`: ElasticFlow's
        simulator's mechanism (:mod:`optsched.sim.engine.elasticflow`: admission at arrival
        by minimum satisfactory share, power-of-two gangs, buddy placement, its overhead
        model, decisions at least ``slot_seconds`` apart) for ``elasticflow``, ``edf``,
        ``tiresias-las`` (its DLAS-GPU), ``gandiva`` (its time slicing) and ``themis`` (its
        finish-time-fairness program every slot);
        ``round_seconds`` is then ignored (the slot is the mechanism's option).
        ``"tiresias"`` or a :class:`~optsched.sim.engine.tiresias_options.TiresiasMechanism`:
        the Tiresias simulator's ``dlas-gpu`` (:mod:`optsched.sim.engine.tiresias_run`).

    Returns
    -------
    SimResult

    Raises
    ------
    InvalidInstanceError
        ``round_seconds`` not > ``world.restore_s`` or not finite, ``max_time`` not
        finite, or the event bound over ``limits.max_events``; ``world`` not a World (a trace
        goes through :func:`~optsched.sim.comparison.world_from_trace`), ``policy`` neither a
        Policy nor a registered name; Gavel's mechanism on a world in the colocation mode.
    PolicyError
        The policy granted an unknown/inactive job, an unknown GPU type, a job twice, an
        impossible placement or pairing, or more wake-ups than it declared.
    """
    from optsched.sim.policies import make_policy

    if not isinstance(world, World):
        raise InvalidInstanceError(
            "world",
            f"must be a World, got {type(world).__name__}; build one from a trace with "
            "world_from_trace(trace, cluster, throughputs) or World.from_frame",
        )
    policy = make_policy(policy, field="policy")
    peer = _run_peer(world, policy, mechanism, restore_on_first_start, max_time)
    if peer is not None:
        return peer
    gavel = _gavel_options(mechanism)
    if restore_on_first_start is not None:
        if not isinstance(restore_on_first_start, bool):
            raise InvalidInstanceError(
                "restore_on_first_start", f"must be a bool, got {restore_on_first_start!r}"
            )
        if restore_on_first_start != world.restore_on_first_start:
            world = dataclasses.replace(world, restore_on_first_start=restore_on_first_start)
    rs = policy.round_seconds if round_seconds == _POLICY_ROUND else round_seconds
    if rs is not None:
        # a round far outside the stated range (1e300 s) leaves times whose sums lose every
        # digit of a job's work: refused before the run, not after its validator rejects it
        limits.check_range("round_seconds", rs, "round_seconds")
    if gavel is not None and world.colocation is not None:
        raise InvalidInstanceError(
            "mechanism", "Gavel's mechanism has no colocation mode; run the world with 'optsched'"
        )
    if gavel is not None:
        if round_seconds is None:
            raise InvalidInstanceError(
                "round_seconds", "Gavel's mechanism runs in rounds; None (event-driven) is refused"
            )
        return simulate_gavel(
            world,
            policy,
            round_seconds=rs if rs is not None else GAVEL_ROUND_SECONDS,
            max_time=max_time,
            options=gavel,
        )
    return _run_engine(world, policy, rs, max_time)


def _run_engine(
    world: World, policy: Policy, rs: float | None, max_time: float | None
) -> SimResult:
    """:func:`simulate` under the engine's own mechanism, ``rs`` the round length (checked)."""
    if rs is not None:
        if rs <= world.restore_s:
            raise InvalidInstanceError(
                "round_seconds",
                f"must exceed restore_s ({world.restore_s:g}) or no job could "
                f"progress in a round, got {rs:g}",
            )
    if max_time is not None:
        limits.check_range("max_time", max_time, "max_time")
    horizon = default_horizon(world, rs) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    policy.reset(world)
    wake_budget = policy.max_wakeups(world)
    bound = event_bound(world, rs, horizon, wake_budget)
    limits.check_size("jobs", bound, "max_events", "events")
    engine = Engine(world, policy, rs, float(horizon), wake_budget, bound)
    if (
        rs is None
        and world.colocation is None
        and all(j.batch_schedule is None for j in world.jobs)
    ):
        # the service grows by gpus x step between decision points, and nowhere else
        policy.plain_progress()
    return engine.run()


def _run_peer(
    world: World,
    policy: Policy,
    mechanism: object,
    restore_on_first_start: bool | None,
    max_time: float | None,
) -> SimResult | None:
    """:func:`simulate` under a peer simulator's mechanism (``None``: not one of them).

    ElasticFlow's (its own overhead) or the Tiresias simulator's (no restart cost); neither
    charges the world's restore cost.
    """
    if mechanism == "elasticflow" or isinstance(mechanism, ElasticFlowMechanism):
        from optsched.sim.engine.elasticflow import simulate_elasticflow

        if restore_on_first_start:
            raise InvalidInstanceError(
                "restore_on_first_start", "ElasticFlow's mechanism charges its own overhead"
            )
        opts = mechanism if isinstance(mechanism, ElasticFlowMechanism) else None
        return simulate_elasticflow(world, policy, max_time=max_time, options=opts)
    if mechanism == "tiresias" or isinstance(mechanism, TiresiasMechanism):
        from optsched.sim.engine.tiresias_run import simulate_tiresias

        if restore_on_first_start:
            raise InvalidInstanceError(
                "restore_on_first_start", "the Tiresias simulator charges no restart cost"
            )
        tiresias = mechanism if isinstance(mechanism, TiresiasMechanism) else None
        return simulate_tiresias(world, policy, max_time=max_time, options=tiresias)
    return None


def _gavel_options(mechanism: object) -> GavelMechanism | None:
    """``None`` for the engine's own mechanism, else the Gavel mechanism's options."""
    if isinstance(mechanism, GavelMechanism):
        return mechanism
    if mechanism == "gavel":
        return GavelMechanism()
    if mechanism == "optsched":
        return None
    raise InvalidInstanceError(
        "mechanism",
        "must be 'optsched', 'gavel', 'elasticflow', 'tiresias', a GavelMechanism, an "
        f"ElasticFlowMechanism or a TiresiasMechanism, got {mechanism!r}",
    )


def simulate_steps(
    world: World, policy: Policy, *, max_time: float | None = None
) -> Generator[SimState, PolicyDecision, SimResult]:
    """The event-driven engine driven from outside: a generator of decision points.

    Each ``next``/``send`` advances to the next decision point and yields its
    :class:`~optsched.sim.SimState`; ``send`` the :class:`~optsched.sim.PolicyDecision` taken
    there (as :meth:`Policy.allocate <optsched.sim.Policy.allocate>` would return it). The
    generator's return value (``StopIteration.value``) is the :class:`~optsched.sim.SimResult`,
    the same record :func:`simulate` makes when ``policy.allocate`` takes those decisions.

    Parameters
    ----------
    world : World
    policy : Policy
        Names the record and declares its wake-ups (:meth:`Policy.max_wakeups`); its
        :meth:`~optsched.sim.Policy.reset` is called, its ``allocate`` never.
    max_time : float, optional
        Horizon (default :func:`default_horizon`).

    Raises
    ------
    InvalidInstanceError
        ``world`` not a World, ``policy`` not a Policy, a bad ``max_time``, or the event bound
        over ``limits.max_events``.
    """
    if not isinstance(world, World):
        raise InvalidInstanceError("world", f"must be a World, got {type(world).__name__}")
    if not isinstance(policy, Policy):
        raise InvalidInstanceError("policy", f"must be a Policy, got {type(policy).__name__}")
    horizon = default_horizon(world, None) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    policy.reset(world)
    wake_budget = policy.max_wakeups(world)
    bound = event_bound(world, None, horizon, wake_budget)
    limits.check_size("jobs", bound, "max_events", "events")
    return Engine(world, policy, None, float(horizon), wake_budget, bound).steps()
