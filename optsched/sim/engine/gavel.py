r"""Gavel's round mechanism, as an alternative to the engine's (``simulate(mechanism="gavel")``).

The default engine (:mod:`optsched.sim.engine.core`) carries out a fractional allocation every round
by :func:`~optsched.sim.engine.policy.carry_out`: the allocation is re-solved every round, pairs
``(job, type)`` are taken in one global priority order, the priority of a pair is
``X / (rounds on the type / rounds since arrival)``. Gavel's simulator (stanford-futuredata/gavel
at c4fa400, ``scheduler/scheduler.py``) differs in each of these points; this module reproduces
its mechanism so that optsched's policies can be run the way Gavel runs them. Under it:

**Rounds.** A round starts when the previous one has ended, and lasts ``L``
(``time_per_iteration``, 360 s) for every job placed in it, except that a job whose work is done
earlier stops then; when every job of the round stops early the round ends at the last one's
stop. Arrivals and completions take effect at the next round start (an arriving job waits for
it). With nothing running, the clock jumps to the next arrival.

**Allocation resets.** The policy's allocation ``X`` is recomputed only at a round start where an
arrival or a completion happened since the last recomputation *and* at least ``reset_interval``
(Gavel's ``minimum_time_between_allocation_resets``, 1920 s) has passed since the last reset, or
no reset has happened at a positive time yet. When all jobs have arrived and nothing ran in the
previous round, the next round start resets. A job that arrived after the last reset is not in
``X``: it may be counted in a round's walk below but is never given GPUs (the GPUs counted for
it stay idle that round), so it waits for the next reset.

**Priorities** (Gavel's ``_update_priorities``). Since the last reset each job ``m`` has
received ``t_mj`` seconds on type ``j`` (including a prior of ``L / 2`` set at the reset and at
its arrival) and the type has been used ``T_j`` seconds (the sum of the priors of the jobs active
at the reset, plus the seconds of every job run on it since). The priority of ``(m, j)`` is

.. math::

    p_{mj} = \begin{cases} 0 & m \notin X \text{ or } X_{mj} = 0 \text{ or rate}_{mj} = 0 \\
             X_{mj} \, T_j / t_{mj} & \text{otherwise.} \end{cases}

A *deficit* ``d_mj`` breaks ties: at every reset it grows by
``X^{old}_{mj} (\text{now} - \text{last reset}) - (t_{mj} - L/2)``.

**The walk** (Gavel's ``_schedule_jobs_on_workers_helper``). The GPU types are taken in Gavel's
order ``v100, p100, k80`` (other types after, in the cluster's order); for a
heterogeneity-agnostic policy the order is shuffled every round by a generator seeded with
``seed + 5`` (Gavel's ``_worker_type_shuffler``). Each type's jobs are sorted by decreasing
``(p, d, X)`` (ties: arrival order), and the per-type lists are walked one after the other: a job
is counted on the type when the type still has GPUs left for its gang, the job was not counted
already, its rate there is positive and (``gavel-fifo`` only) its priority is positive. Jobs with
zero priority thus take GPUs left over by the others (work conservation among the jobs in ``X``).

**Placement** (Gavel's ``_assign_workers_to_job``). Per type, largest gang first: a job counted
on the type it held in the previous round keeps its GPUs when they are all still free; the others
take the first free GPUs in server order. The rate of a gang is the world's rate for its
placement (consolidated or not).

**The allocation** of an allocation LP is, by default, the optimum an interior-point solver
returns (:meth:`~optsched.sim.policies.AllocationLP.interior_fractional`), as Gavel's cvxpy
solve: where the optimum is not unique (often, e.g. every job not at the max-min bottleneck),
the simplex vertex of :meth:`~optsched.sim.Policy.fractional` splits time differently.

**Pairs** (packing policies, ``gavel-gandiva``: :attr:`gavel_packing`). Every two active jobs
of the same gang size form a *combination* besides the two single jobs (Gavel's
``_populate_job_combination_metadata``); combinations have their own ``X``, priorities, deficits
and received time (starting at 0 rather than the prior, so that a pair's first reset books it a
deficit of ``L / 2``). A pair is counted when neither job was, runs on one gang at the table's
pair rates, and when one of the two is done mid-round the other goes on alone at its alone rate
for the rest of the round (Gavel's partner keeps its pair rate). Gavel dates the finished
job's completion at the end of the pair's round, which optsched's record cannot (the validator
checks that a job's work is done at its completion): the completion times as Gavel reports
them are in ``SimResult.extra["gavel_completion"]`` (equal to the record's except for such
pair members).

**Progress** counts whole steps per round as Gavel does (``int(rate L)`` steps for a job not
done, which so ends its round a fraction of a step early, and the round ends at the last
gang's end); pairs, whose two record rows must end together, and runs with ``restore_s > 0``
progress continuously instead
(:attr:`GavelMechanism.whole_steps`). A run that resumes a job which ran before (or any run, with
``restore_on_first_start``) makes no progress for its first ``restore_s``, as in the engine;
Gavel's simulator charges no restore time, so a world with ``restore_s = 0`` reproduces it.

**Time bookkeeping quirk reproduced.** The seconds a job received in a round are counted from the
*previous* round's end (Gavel's ``current_round_start_time``), which after an idle stretch (or
before the first round, from time 0) over-counts them; only the priorities read them.

Complexity: :math:`O(R (P \log P + K P + G))` for :math:`R` rounds, :math:`P` job combinations
(the :math:`A` active jobs, plus up to :math:`A^2/2` pairs for a packing policy), :math:`K` GPU
types and :math:`G` GPUs, plus the policy's work at each reset.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.bounds import default_horizon
from optsched.sim.engine.gavel_options import (
    DEFAULT_RESET_INTERVAL,
    DEFAULT_ROUND_SECONDS,
    GAVEL_TYPE_ORDER,
    GavelMechanism,
    gavel_refuses,
    is_agnostic,
)
from optsched.sim.engine.gavel_round import GavelSim
from optsched.sim.engine.policy import Policy
from optsched.sim.measure.record import SimResult

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = [
    "DEFAULT_RESET_INTERVAL",
    "DEFAULT_ROUND_SECONDS",
    "GAVEL_TYPE_ORDER",
    "GavelMechanism",
    "gavel_refuses",
    "is_agnostic",
    "simulate_gavel",
]


def event_bound(world: World, round_seconds: float, horizon: float) -> float:
    """Upper bound on the loop's iterations.

    Every iteration ends a full round (at most ``horizon / L`` of them), a round shortened by a
    completion (at most ``n``), jumps to an arrival (at most ``n``), or is one of at most three
    idle iterations before the run stops; ``n`` more for the arrival batches.
    """
    return math.floor(horizon / round_seconds) + 3.0 * len(world.jobs) + 5.0


def simulate_gavel(
    world: World,
    policy: Policy,
    *,
    round_seconds: float | None = None,
    max_time: float | None = None,
    options: GavelMechanism | None = None,
) -> SimResult:
    """Run ``policy`` on ``world`` under Gavel's mechanism (module notes).

    Parameters
    ----------
    world : World
    policy : Policy
        A policy with :meth:`~optsched.sim.Policy.fractional` (the allocation LPs,
        ``gavel-fifo``, ``gavel-gandiva``).
    round_seconds : float, optional
        Gavel's ``time_per_iteration`` (default 360 s).
    max_time : float, optional
        Horizon (default :func:`optsched.sim.engine.core.default_horizon` with the round length).
    options : GavelMechanism, optional

    Raises
    ------
    InvalidInstanceError
        ``round_seconds`` not finite or not > ``world.restore_s``; ``max_time`` not finite;
        the event bound over ``limits.max_events``; a job with a ``batch_schedule`` (field
        ``batch_schedule``).
    PolicyError
        The policy has no fractional allocation, or names an inactive job or unknown type.
    """
    opts = GavelMechanism() if options is None else options
    L = DEFAULT_ROUND_SECONDS if round_seconds is None else round_seconds
    if isinstance(L, bool) or not (isinstance(L, int | float) and math.isfinite(L) and L > 0):
        raise InvalidInstanceError("round_seconds", f"must be a finite number > 0, got {L!r}")
    if L <= world.restore_s:
        raise InvalidInstanceError(
            "round_seconds",
            f"must exceed restore_s ({world.restore_s:g}) or no job could progress in a "
            f"round, got {L:g}",
        )
    if opts.whole_steps and world.restore_s > 0:
        raise InvalidInstanceError(
            "whole_steps",
            "whole steps per round need restore_s = 0 (the gap before a round's end would "
            f"count as a new run, with its restore, every round); restore_s is {world.restore_s:g}",
        )
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        # this mechanism books a round's progress at one rate per job; batch-size phases
        # change the rate inside a round (only the engine's own mechanism carries them)
        raise InvalidInstanceError(
            "batch_schedule",
            f"Gavel's mechanism has no batch-size phases (jobs {', '.join(dynamic[:5])}); use "
            "the default mechanism, or build the world with batch_modes=False",
        )
    horizon = default_horizon(world, float(L)) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    # idle jumps to arrivals and stalled rounds add to the rounds that fit in the horizon
    horizon = float(horizon)
    why = gavel_refuses(policy)
    if why is not None:
        raise PolicyError(f"{policy.name}: {why}")
    policy.reset(world)
    bound = event_bound(world, float(L), horizon)
    limits.check_size("jobs", bound, "max_events", "events")
    sim = GavelSim(world, policy, float(L), opts)
    return sim.run(horizon, bound)
