r"""ElasticFlow's mechanism, beside the engine's (``simulate(mechanism="elasticflow")``).

The default engine decides on its round grid (multiples of ``round_seconds`` from 0) and lets
each policy choose any gang size within a job's bounds. ElasticFlow's simulator
(pkusys/ElasticFlow, ``ElasticFlow/scheduler/scheduler.py``, read for its semantics, none of it
copied; the guide page ``docs/guide/elasticflow_mechanism.rst`` gives the reading) runs its
schedulers differently; this module carries its mechanism out so that a cluster-10 run can be
compared with it job for job. Under it:

**Decision points.** The first decision is at the first arrival. The next is at the earliest
pending event (an arrival, a running job's completion, a planned change of a job's gang); when
that event is within one *slot* (``slot_seconds``, 60 s) of the last decision and another
event is pending, the decision is taken one slot after the last one instead, with every event
due by then. So decisions are at least a slot apart, arrivals are decided at their instant
when the cluster has been quiet for a slot, and GPUs a job frees wait for the next decision.

**The** ``elasticflow`` **scheduler.** At a decision with arrivals, every admitted job and the
arrivals are planned from scratch in deadline order, each by its *minimum satisfactory share*
(:func:`~optsched.sim.engine.elasticflow_plan.plan_min_share`: the smallest power-of-two gang
whose as-late-as-possible plan meets the deadline given what the jobs before it were promised)
against what its predecessors left. If any plan misses its deadline, every arrival of the
decision is *declined* (dropped: it never runs, and counts as missed); otherwise they are
admitted. The admitted jobs are then planned anew the same way, and the GPUs free now are
handed out one level (the next power of two) at a time: to a job planned to wait first, then to
the job whose plan's GPU-seconds grow the most per added GPU (the simulator's ranking, read as
written), re-planned from its new gang, until no job's next level fits. A job runs its plan's
gang now.

**The** ``edf`` **scheduler** (ElasticFlow's EDF). No admission. Every active job is planned
in deadline order with a base gang of ``min(64, batch size)`` GPUs (whatever the trace
requests), or the largest power of two that is free where the base is not; it runs its plan's
gang now. Its decisions take no planned changes as events.

**The** ``tiresias-las``, ``gandiva`` **and** ``themis`` **schedulers** are ElasticFlow's
DLAS-GPU (:mod:`~optsched.sim.engine.elasticflow_dlas`), Gandiva
(:mod:`~optsched.sim.engine.elasticflow_gandiva`) and Themis
(:mod:`~optsched.sim.engine.elasticflow_themis`: a decision every slot, no overhead), on the
jobs' requested gangs.

**Gangs** are powers of two, capped per model for ``elasticflow`` (ElasticFlow's
``get_max_gpu`` A100 caps, :func:`~optsched.sim.engine.elasticflow_options.gang_cap`) and at
``min(64, batch)`` for ``edf``, never above the cluster. The record's world is the given one with
every job's gang bounds widened to ``[1, cap]`` (a gang may be any level), which the validator
checks gangs against.

**Placement** is buddy allocation, recomputed at every decision
(:func:`~optsched.sim.engine.elasticflow_run.buddy_place`): largest gang first, whole servers for
a gang of a server or more, an aligned block on the fullest server with one otherwise.

**Overhead** (:attr:`ElasticFlowMechanism.overhead`; none for ``edf``, as ElasticFlow's EDF;
DLAS-GPU to the jobs it starts or resumes and, at restart decisions, to every running job;
Gandiva uncached at every decision while arrivals remain).
Under ``elasticflow``, at every decision every running job makes no progress for
:func:`~optsched.sim.engine.elasticflow_options.overhead_seconds` (2 s, 7 s on 256 GPUs or
more; plus :math:`2(\log_2 n + 1)` when its GPU set is new since the last restart; plus 27 s,
47 s on 256 GPUs or more, at every 60th decision, a restart, which empties the set of known GPU
sets). The record leaves that stretch out of the job's segment (its GPUs are shown free then,
and the validator's work check holds exactly); ``SimResult.extra["overhead_gpu_seconds"]``
sums it. The world's own ``restore_s`` must be 0: this model replaces it.

**Progress** is continuous at the world's rate of the gang (consolidated when on the fewest
servers); a job completes when its work is done (ElasticFlow's plans round ends up to whole
seconds; the progress does not). Under ``elasticflow`` with
:attr:`ElasticFlowMechanism.stop_at_plan_end` (the default) a job runs no further than its
plan's end before the next decision, as ElasticFlow's simulator advances it, so the work its
overhead displaced waits (a job with less work left than its overhead's worth stalls); its end
event is the plan's end on the slot grid plus the overhead, where it runs until done; a planned
change is an event only before the next arrival and every running job's grid end.

Complexity: per decision :math:`O(J K P)` for the plans of :math:`J` active jobs with
:math:`K` levels over a profile of :math:`P` pieces, times the :math:`O(J K)` steps of the
hand-out of free GPUs for ``elasticflow`` (each re-prices every job), plus the placement.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.bounds import default_horizon
from optsched.sim.engine.elasticflow_options import (
    DEFAULT_SLOT_SECONDS,
    EF_POLICIES,
    ElasticFlowMechanism,
    elasticflow_refuses,
    gang_cap,
    scheme_of,
)
from optsched.sim.engine.elasticflow_run import ElasticFlowSim, buddy_place
from optsched.sim.world.throughputs import Throughputs

if TYPE_CHECKING:
    from optsched.sim.engine.policy import Policy
    from optsched.sim.measure.record import SimResult
    from optsched.sim.world.jobs import World

__all__ = [
    "DEFAULT_SLOT_SECONDS",
    "EF_POLICIES",
    "ElasticFlowMechanism",
    "buddy_place",
    "elasticflow_refuses",
    "elasticflow_world",
    "simulate_elasticflow",
]


def elasticflow_world(world: World, scheme: str, measured: bool = False) -> World:
    """``world`` with every job's gang bounds ``[1, cap]`` (the scheme's cap, module notes).

    With ``measured`` and a table of scaling profiles, the table holds the measured rates at
    the measured GPU counts instead of the profiles' concave envelopes.
    """
    n = sum(t.count for t in world.cluster.gpu_types)
    jobs = tuple(
        dataclasses.replace(j, min_gpus=1, max_gpus=max(j.num_gpus, gang_cap(j, scheme, n)))
        for j in world.jobs
    )
    table = world.throughputs
    if measured and table.curves:
        alone: dict[tuple[str, bool], dict[tuple[str, int], float]] = {}
        for (g, jt), curve in table.curves.items():
            tab = alone.setdefault((g, True), {})
            for c, r in zip(curve.counts, curve.rates, strict=True):
                tab[(jt, c)] = r
        table = Throughputs(
            alone=alone,
            pairs={},
            generic_speed=table.generic_speed,
            reference=table.reference,
            source=f"{table.source} (measured rates)",
        )
    return dataclasses.replace(world, jobs=jobs, throughputs=table)


def measured_counts(world: World) -> dict[str, tuple[int, ...]]:
    """The measured GPU counts of each job type of ``world``'s scaling profiles (one type)."""
    (gt,) = world.cluster.gpu_types
    return {jt: c.counts for (g, jt), c in world.throughputs.curves.items() if g == gt.name}


def _chronus_horizon(world: World) -> float:
    """The default horizon under Chronus.

    Its decisions are on a 240 s grid, and it may hold an accepted job back until the leases
    before its deadline.
    """
    from optsched.sim.engine.elasticflow_chronus import LEASE_SECONDS

    due = [j.deadline for j in world.jobs if math.isfinite(j.deadline)]
    lease = float(LEASE_SECONDS)
    return max([default_horizon(world, lease), *due]) + 2.0 * lease


def simulate_elasticflow(
    world: World,
    policy: Policy,
    *,
    max_time: float | None = None,
    options: ElasticFlowMechanism | None = None,
) -> SimResult:
    """Run ``policy`` on ``world`` under ElasticFlow's mechanism (module notes).

    Parameters
    ----------
    world : World
        One GPU type, ``restore_s = 0``, no batch-size phases, no colocation mode.
    policy : Policy
        ``elasticflow``, ``edf`` / ``edf-elastic`` (ElasticFlow's EDF), ``tiresias-las`` (its
        DLAS-GPU, :mod:`~optsched.sim.engine.elasticflow_dlas`), ``gandiva`` (its Gandiva,
        :mod:`~optsched.sim.engine.elasticflow_gandiva`) or ``themis`` (its Themis,
        :mod:`~optsched.sim.engine.elasticflow_themis`).
    max_time : float, optional
        Horizon (default :func:`~optsched.sim.engine.bounds.default_horizon` of the widened
        world with the slot length).
    options : ElasticFlowMechanism, optional

    Raises
    ------
    InvalidInstanceError
        A world of several GPU types (``cluster``), ``restore_s > 0``, batch-size phases, a
        colocation mode, ``max_time`` not finite, or the decision bound over
        ``limits.max_events``.
    PolicyError
        A policy without a counterpart in ElasticFlow's simulator.
    """
    opts = ElasticFlowMechanism() if options is None else options
    why = elasticflow_refuses(policy)
    if why is not None:
        raise PolicyError(f"{policy.name}: {why}")
    if len(world.cluster.gpu_types) != 1:
        raise InvalidInstanceError(
            "cluster", "ElasticFlow's mechanism runs on one GPU type (its cluster is of one)"
        )
    if world.restore_s > 0:
        raise InvalidInstanceError(
            "restore_s",
            "ElasticFlow's mechanism charges its own overhead model; build the world with "
            f"restore_s = 0 (got {world.restore_s:g})",
        )
    if world.colocation is not None:
        raise InvalidInstanceError("mechanism", "ElasticFlow's mechanism has no colocation mode")
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        raise InvalidInstanceError(
            "batch_schedule",
            f"ElasticFlow's mechanism has no batch-size phases (jobs {', '.join(dynamic[:5])}); "
            "build the world with batch_modes=False",
        )
    scheme = scheme_of(policy)
    assert scheme is not None
    wide = elasticflow_world(world, scheme, opts.measured_rates)
    horizon = default_horizon(wide, opts.slot_seconds) if max_time is None else max_time
    if max_time is None and scheme == "chronus":
        horizon = _chronus_horizon(wide)
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    # decisions are a slot apart but for the last few; every job adds at most an arrival, a
    # completion and (elasticflow) a few planned changes between two slots
    bound = math.floor(float(horizon) / opts.slot_seconds) + 3.0 * len(world.jobs) + 5.0
    limits.check_size("jobs", bound, "max_events", "events")
    policy.reset(wide)
    sim = ElasticFlowSim(wide, scheme, opts, measured_counts(world))
    result = sim.run(float(horizon), bound)
    result.policy = policy.name
    return result
