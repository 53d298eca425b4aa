r"""ANDREAS in the simulator: energy cost plus weighted tardiness, decided at every event.

**When it decides.** Event-driven, as in the paper: at every arrival and every completion
(``round_seconds=None``; a round length may be given instead). Between events nothing changes
that the model sees (queued jobs, free GPUs), so deciding more often would repeat the same
decision; deciding less often (rounds) leaves freed GPUs idle until the round ends.

**What it decides.** Jobs that hold GPUs keep them (no preemption, no migration:
:attr:`~optsched.sim.PolicyDecision.keep_running`); the queued jobs form an
:class:`~optsched.allocation.andreas.AndreasInstance` over the GPUs still free, and the randomised
greedy
with restarts (:class:`~optsched.allocation.andreas.RandomizedGreedy`, ANDREAS's own mechanism)
chooses, for
each, a (GPU type, GPU count) or to wait. Each run is granted on exactly the servers the plan
chose (an explicit :class:`~optsched.sim.GrantPlacement`).

The instance, from the simulation state:

* one node type per GPU type, a node per server (``gpus_per_server`` GPUs; the GPUs a smaller
  last server lacks, and those held by running jobs, are *unavailable*), the power per GPU from
  ``power=`` or :data:`optsched.power.GPU_POWER_WATTS`, and ``unknown_watts`` (250 W, the
  table's median) for a type in neither, so that the policy runs on any cluster (the energy
  metric, which must not guess, reports NaN there);
* per queued job, a configuration per GPU type where it has a positive rate and its gang fits the
  empty cluster (on one server, or on whole servers): the predicted runtime is its remaining
  steps over the throughput table's rate on that many GPUs, plus ``restore_s`` when it
  has run before; one configuration per GPU count from the job's ``min_gpus`` to its
  ``max_gpus`` (its own gang size alone unless the world is elastic,
  :meth:`World.elastic <optsched.sim.World.elastic>`), granted with ``Grant.num_gpus``;
* its due date: the trace's deadline, or, without one, ``arrival + due_factor x`` its isolated
  time on its fastest type (``due_factor=None``: no due date, never tardy);
* its tardiness weight: the job's weight times ``tardiness_cost`` (currency per second late).

**Progress.** Postponing is charged the least energy the job needs anyway
(``postponed_energy="min"``), so on a cluster with every GPU free the first job the greedy
considers always runs (its cheapest configuration costs no more than waiting), and a waiting
job is always followed by a later event: a decision never leaves the cluster idle with jobs
queued, and no wake-up is needed. A job whose gang fits no server layout of any type (for
example 6 GPUs on 4-GPU servers) is outside the model; it is granted after the plan's jobs,
on its fastest type, and the engine places it as it places any job.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optsched.allocation.andreas import (
    AndreasInstance,
    AndreasJob,
    Configuration,
    NodeType,
    RandomizedGreedy,
    validate,
)
from optsched.errors import InvalidInstanceError
from optsched.power import gpu_power
from optsched.sim.engine.policy import Grant, GrantPlacement, Policy, PolicyDecision, SimState
from optsched.tolerances import TIME_TOL

if TYPE_CHECKING:
    from optsched.sim.world.cluster import GpuType
    from optsched.sim.world.jobs import World

__all__ = ["Andreas", "AndreasDecision"]


@dataclass(frozen=True)
class AndreasDecision:
    """One decision point: when, jobs queued, jobs started, the plan's cost, seconds taken."""

    now: float
    queued: int
    started: int
    cost: float
    seconds: float


def _positive(name: str, value: float, *, zero: bool = False) -> float:
    ok = math.isfinite(value) and (value >= 0 if zero else value > 0)
    if not ok:
        raise InvalidInstanceError(name, f"must be a finite number {'>=' if zero else '>'} 0")
    return float(value)


class Andreas(Policy):
    """ANDREAS as an event-driven simulator policy (see the module notes).

    Parameters
    ----------
    restarts : int
        Restarts of the greedy per decision (default 64).
    seed : int
        Seed of the greedy's random stream (the same at every decision: deterministic runs).
    candidates : int
        The greedy's candidate-list length.
    energy_price : float
        Currency per kWh (default 0.2).
    tardiness_cost : float
        Currency per second of tardiness of a job of weight 1 (default 1e-4: 0.36 per hour,
        the energy cost of about six V100-hours at the default price).
    period : float
        :math:`H`, seconds: a postponed job is estimated to start ``period`` later.
    due_factor : float or None
        Due date of a job without a deadline: arrival plus ``due_factor`` times its isolated
        time on its fastest type (default 2); ``None``: no due date.
    power : mapping, optional
        Watts per GPU by type, overriding :data:`optsched.power.GPU_POWER_WATTS`.
    unknown_watts : float or None
        Watts per GPU of a type in neither table (default 250); ``None`` refuses such a type.
    round_seconds : float, optional
        Decide every ``round_seconds`` instead of at events.
    """

    name = "andreas"

    def __init__(
        self,
        *,
        restarts: int = 64,
        seed: int = 0,
        candidates: int = 3,
        energy_price: float = 0.2,
        tardiness_cost: float = 1e-4,
        period: float = 600.0,
        due_factor: float | None = 2.0,
        power: Mapping[str, float] | None = None,
        unknown_watts: float | None = 250.0,
        round_seconds: float | None = None,
    ) -> None:
        self.greedy = RandomizedGreedy(restarts, seed=seed, candidates=candidates)
        self.energy_price = _positive("energy_price", energy_price, zero=True)
        self.tardiness_cost = _positive("tardiness_cost", tardiness_cost, zero=True)
        self.period = _positive("period", period)
        self.due_factor = None if due_factor is None else _positive("due_factor", due_factor)
        self.power = dict(power or {})
        self.unknown_watts = (
            None if unknown_watts is None else _positive("unknown_watts", unknown_watts)
        )
        self.round_seconds = (
            None if round_seconds is None else _positive("round_seconds", round_seconds)
        )
        self.decisions: list[AndreasDecision] = []

    def reset(self, world: World) -> None:
        """Forget the previous run's decisions; check every GPU type has a power figure."""
        self.decisions = []
        for name in world.cluster.names:
            self.watts(name)

    def watts(self, gpu_type: str) -> float:
        """Power of one GPU of ``gpu_type`` the policy assumes (see the module notes).

        Raises
        ------
        InvalidInstanceError
            The type is in neither table and ``unknown_watts`` is ``None`` (naming ``power``).
        """
        try:
            return gpu_power(gpu_type, self.power, field="power")
        except InvalidInstanceError:
            if self.unknown_watts is None:
                raise
            return self.unknown_watts

    def instance(self, state: SimState) -> tuple[AndreasInstance, list[str]]:
        """The scheduling point of ``state``, and the queued jobs outside the model."""
        world = state.world
        busy: dict[str, dict[int, int]] = {}
        for s in state.active:
            if s.placement is not None:
                per = busy.setdefault(s.placement.gpu_type, {})
                for server, gpus in s.placement.servers:
                    per[server] = per.get(server, 0) + gpus
        node_types = []
        for t in world.cluster.gpu_types:
            used = busy.get(t.name, {})
            unavailable = tuple(
                t.gpus_per_server - t.server_capacity(n) + used.get(n, 0)
                for n in range(t.num_servers)
            )
            node_types.append(
                NodeType(
                    name=t.name,
                    gpu_type=t.name,
                    gpus_per_server=t.gpus_per_server,
                    nodes=t.num_servers,
                    power_watts=self.watts(t.name),
                    unavailable=unavailable if any(unavailable) else (),
                )
            )
        jobs: list[AndreasJob] = []
        outside: list[str] = []
        for s in state.active:
            if s.placement is not None:
                continue
            job = s.job
            restore = world.restore_s if s.executed_seconds > 0 else 0.0
            configs = []
            for t in world.cluster.gpu_types:
                for g in range(job.min_gpus, job.max_gpus + 1):  # at most the largest type's count
                    if not _fits_empty(g, t.gpus_per_server, t):
                        continue
                    rate = state.rate(s, t.name, num_gpus=g)
                    if rate > 0:
                        # a job within TIME_TOL of its end still needs a positive runtime
                        runtime = max(restore + s.remaining / rate, TIME_TOL)
                        configs.append(Configuration(node_type=t.name, gpus=g, runtime_s=runtime))
            if not configs:
                outside.append(job.job_id)
                continue
            due: float | None
            if not math.isnan(job.deadline):
                due = job.deadline
            elif self.due_factor is not None:
                alone = world.isolated_seconds(job)
                due = job.arrival + self.due_factor * alone if math.isfinite(alone) else None
            else:
                due = None
            jobs.append(
                AndreasJob(
                    job_id=job.job_id,
                    due_s=None if due is None else max(due, 0.0),
                    weight=job.weight * self.tardiness_cost,
                    configurations=tuple(configs),
                )
            )
        inst = AndreasInstance(
            now_s=state.now,
            period_s=self.period,
            energy_price_per_kwh=self.energy_price,
            postponed_energy="min",
            node_types=tuple(node_types),
            jobs=tuple(jobs),
        )
        return inst, outside

    def allocate(self, state: SimState) -> PolicyDecision:
        """Run the greedy on the queued jobs; grant the chosen runs on their servers."""
        start = time.perf_counter()
        inst, outside = self.instance(state)
        grants: list[Grant] = []
        cost = 0.0
        if inst.jobs:
            run = self.greedy.run(inst)
            report = validate(inst, run.plan)
            report.raise_if_invalid()  # a plan the model rejects is never carried out
            cost = float(report.objective or 0.0)
            for a in run.plan.assignments:
                size = inst.node_type(a.node_type).gpus_per_server
                per = a.gpus if a.gpus <= size else size
                grants.append(
                    Grant(
                        job=a.job,
                        gpu_type=a.node_type,
                        placement=GrantPlacement(
                            a.node_type, tuple((n, per) for n in sorted(a.nodes))
                        ),
                        num_gpus=a.gpus,
                    )
                )
        for job_id in outside:
            s = next(x for x in state.active if x.job_id == job_id)
            # only types that hold the whole gang and run it (ties: the canonical type order)
            rates = {t: state.rate(s, t) for t in state.world.runnable_types(s.job)}
            if rates:
                best = max(rates, key=lambda t: rates[t])
                grants.append(Grant(job=job_id, gpu_type=best))
        self.decisions.append(
            AndreasDecision(
                now=state.now,
                queued=len(inst.jobs) + len(outside),
                started=len(grants),
                cost=cost,
                seconds=time.perf_counter() - start,
            )
        )
        return PolicyDecision(grants=tuple(grants), keep_running=True)


def _fits_empty(gpus: int, size: int, gpu_type: GpuType) -> bool:
    """Whether a gang of ``gpus`` fits the type's servers when all are free (model's layout)."""
    servers = [gpu_type.server_capacity(n) for n in range(gpu_type.num_servers)]
    if gpus <= size:
        return any(c >= gpus for c in servers)
    return gpus % size == 0 and sum(c == size for c in servers) >= gpus // size
