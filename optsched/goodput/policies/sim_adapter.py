r"""The simulator's policies on the goodput world's jobs at fixed batches.

:class:`SimPolicyAdapter` is a :class:`~optsched.goodput.decision.GoodputPolicy` that runs a
policy of :mod:`optsched.sim.policies` (``fifo``, ``srtf``, ``tiresias-las``, ``themis``,
Gavel's allocations, ...) on a Pollux workload, so that the simulator's policies and the goodput
world's (``tiresias``, ``optimus-oracle``, ``pollux``) are compared on one world: the same jobs,
the same measured step times, the same 60-s decisions, restart delays and records, checked by
the same validator (:func:`~optsched.goodput.validate.validate`).

**The world the policy sees.** :func:`~optsched.goodput.policies.sim_world.fixed_batch_world`:
every job at its owner's batch, its work and rates in iterations at that batch, one GPU type
of ``num_nodes`` servers of ``gpus_per_node`` GPUs. The job kind is ``"rigid"`` (the owner's
gang, as the goodput ``tiresias`` baseline runs) for a policy of fixed gangs, and
``"fixed_batch"`` (any gang from 1 to the batch's bound, as ``optimus-oracle`` runs) for a
policy that sizes gangs (:data:`ELASTIC_SIM_POLICIES`, the ``-elastic`` variants).

**At each decision of the goodput world** (every ``interval`` seconds), the adapter

1. brings its :class:`~optsched.sim.JobState`\ s up to date: ``attained_service`` is the goodput
   job's (GPU-seconds held, restart delays included, as in both worlds), ``done`` is read off
   the job's epoch (:meth:`FixedBatchWorld.done
   <optsched.goodput.policies.sim_world.FixedBatchWorld.done>`), ``executed_seconds`` adds the
   interval when the job held GPUs through it; jobs no longer active are *finished*, new ones
   *arrived*;
2. asks the policy for a decision only at the simulator's decision points, moved to the next
   decision of the goodput world: an event-driven policy at an arrival, a completion or its
   ``wake_at`` (Tiresias's demotions); a round-based policy (``round_seconds = L``) at the first
   decision with active jobs, then once a round, the first decision at or after each multiple
   of ``L``. Between them every job keeps its GPUs (a completed job's stay idle). The policy
   is told of every arrival and completion since its last decision (``arrived``,
   ``finished``), as the engine tells it;
3. carries the decision out as the simulator's engine admits it: the grants in order, each
   admitted while the cluster has its gang's GPUs free by count (``blocking``: the walk stops at
   the first that does not fit; ``keep_running``: the running jobs but those in ``stop`` keep
   theirs first); a running job not admitted loses its GPUs;
4. places the admitted jobs on nodes: explicit placements (the simulator's servers are the
   goodput world's nodes) first, then the jobs granted the gang size they hold, which keep their
   GPUs, then the others in grant order, most free node first
   (:func:`~optsched.goodput.policies.placement.most_free_first`, the goodput baselines' rule).
   The simulator's engine places best fit instead and re-consolidates spread gangs: here a gang
   stays where it started, as in the goodput baselines.

The goodput world then restarts every job whose allocation changed (its restart delay) and
advances the jobs at their *measured* step times on the placement they got.

**What cannot be expressed** is refused, naming the policy, with a
:class:`PolicyNotExpressibleError` (:func:`refusal`, :data:`REFUSED`): policies built on
deadlines (a Pollux workload has none), on space sharing (no pair rates are measured), on
parameter-server placement (the colocation mode) or on Gavel's mechanism, and any policy whose
own :meth:`~optsched.sim.engine.policy.Policy.refuses` turns the world down (AlloX: single-GPU
jobs only). The ``-perf`` variants run, and decide as their agnostic forms on the one GPU type.

Cost per decision: :math:`O(J)` for the states plus the policy's decision plus
:math:`O(G \cdot n)` placement for :math:`G` GPUs and :math:`n` nodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.goodput.decision import Allocation, ClusterView, JobView
from optsched.goodput.job import RESTART_DELAY
from optsched.goodput.policies.placement import free_gpus, keep_known, most_free_first
from optsched.goodput.policies.sim_world import GPU_TYPE, FixedBatchWorld, fixed_batch_world
from optsched.goodput.traces import ModelTraces
from optsched.goodput.workload import PolluxWorkload
from optsched.sim.engine.policy import (
    Grant,
    GrantPlacement,
    JobState,
    Policy,
    PolicyDecision,
    SimState,
)
from optsched.sim.world.jobs import World
from optsched.tolerances import TIME_TOL

__all__ = [
    "ELASTIC_SIM_POLICIES",
    "REFUSED",
    "PolicyNotExpressibleError",
    "SimPolicyAdapter",
    "refusal",
    "sim_policy_names",
]

#: Simulator policies that cannot run on the goodput world, with the reason (module notes).
REFUSED: dict[str, str] = {
    "edf": "orders jobs by deadline, and a Pollux workload has none",
    "elasticflow": "admits jobs by their deadlines, and a Pollux workload has none",
    "chronus": "schedules deadline jobs by leases, and a Pollux workload has no deadlines",
    "chronus-greedy": "schedules deadline jobs by leases, and a Pollux workload has no deadlines",
    "aonline": "bids for deadline jobs' utility, and a Pollux workload has no deadlines",
    "aonline-strict": "bids for deadline jobs' utility, and a Pollux workload has no deadlines",
    "andreas": "trades deadline tardiness against energy, and a Pollux workload has no deadlines",
    "gavel-fifo": "is Gavel's allocation for Gavel's own mechanism (mechanism='gavel')",
    "gavel-gandiva": "is Gavel's allocation for Gavel's own mechanism (mechanism='gavel')",
    "smith-gang": "is the exact model's gang rule, not an online policy",
    "min-cost": "buys throughput by the dollar per GPU type, and the goodput world's one GPU type "
    "has no price",
    "min-cost-slo": "meets deadline SLOs at least cost, and a Pollux workload has no deadlines "
    "nor GPU prices",
}
#: Name endings refused with their reason (space sharing: no pair rates are measured).
_REFUSED_SUFFIXES: dict[str, str] = {
    "-packed": "space-shares GPUs between pairs of jobs, and the goodput world measures no "
    "pair rates",
}

#: Simulator policies that size gangs: their jobs are ``fixed_batch`` (module notes).
ELASTIC_SIM_POLICIES: frozenset[str] = frozenset({"optimus"})


class PolicyNotExpressibleError(InvalidInstanceError):
    """A simulator policy that cannot run on the goodput world (the message names it)."""


def _base_name(name: str) -> str:
    core = name[: -len("-elastic")] if name.endswith("-elastic") else name
    return core[: -len("-perf")] if core.endswith("-perf") else core


def refusal(name: str) -> str | None:
    """Why the simulator policy ``name`` cannot run on the goodput world (``None``: it can).

    Only the names' reasons (:data:`REFUSED`); a policy's own
    :meth:`~optsched.sim.engine.policy.Policy.refuses` is asked once its world is built.
    """
    from optsched.sim.policies import PLACEMENT_POLICIES

    if name in PLACEMENT_POLICIES:
        return "places parameter servers on a colocation world, which the goodput world is not"
    for end, why in _REFUSED_SUFFIXES.items():
        if name.endswith(end):
            return why
    return REFUSED.get(name) or REFUSED.get(_base_name(name))


def sim_policy_names() -> tuple[str, ...]:
    """The built-in simulator policies (``"all"``'s and the ``-elastic`` ones) not refused."""
    from optsched.sim.policies import ELASTIC_POLICIES, POLICIES

    return tuple(n for n in (*POLICIES, *ELASTIC_POLICIES) if refusal(n) is None)


def _load_traces(
    workload: PolluxWorkload, traces: Mapping[str, ModelTraces] | str | Path | None
) -> dict[str, ModelTraces]:
    """The job types' measurements, read as :func:`~optsched.goodput.cluster.simulate` does."""
    from optsched.goodput.traces import read_model_traces

    if traces is None or isinstance(traces, (str, Path)):
        from optsched.goodput.artifact import simulator_dir

        root = simulator_dir(traces) / "traces"
        return {a: read_model_traces(root / a) for a in workload.applications}
    missing = [a for a in workload.applications if a not in traces]
    if missing:
        raise InvalidInstanceError(
            "traces", f"no measurements for the job type(s) {', '.join(missing)}"
        )
    return {a: traces[a] for a in workload.applications}


def _placement(alloc: Allocation) -> GrantPlacement | None:
    if not alloc:
        return None
    counts: dict[int, int] = {}
    for node in alloc:
        counts[node] = counts.get(node, 0) + 1
    return GrantPlacement(GPU_TYPE, tuple(sorted(counts.items())))


class SimPolicyAdapter:
    """A simulator policy as a goodput policy (module notes); one instance per workload.

    Parameters
    ----------
    policy : str or Policy
        A simulator policy's registered name (:func:`optsched.sim.policies.make_policy`) or
        instance.
    workload : PolluxWorkload
        The jobs the runs will have (the simulator's policies see every job's static
        description from the start: its world).
    traces : mapping of str to ModelTraces, or path, optional
        The job types' measurements, as :func:`~optsched.goodput.cluster.simulate` takes them
        (it must be given the same).
    job_kind : {"rigid", "fixed_batch"}, optional
        Default: ``fixed_batch`` for a policy sizing gangs (``-elastic``,
        :data:`ELASTIC_SIM_POLICIES`), else ``rigid``.
    restart_delay : float
        The cluster's restart delay, the simulator world's restore cost.

    Raises
    ------
    PolicyNotExpressibleError
        The policy cannot run on the goodput world (naming it and why).
    """

    def __init__(
        self,
        policy: str | Policy,
        workload: PolluxWorkload,
        traces: Mapping[str, ModelTraces] | str | Path | None = None,
        *,
        job_kind: str | None = None,
        restart_delay: float = RESTART_DELAY,
    ) -> None:
        from optsched.sim.policies import make_policy

        name = policy if isinstance(policy, str) else policy.name
        why = refusal(name)
        if why is not None:
            raise PolicyNotExpressibleError(
                "policy", f"{name!r} cannot run on the goodput world: {why}"
            )
        self.policy = make_policy(policy)
        self.name = self.policy.name
        if job_kind is None:
            sizes = name.endswith("-elastic") or _base_name(name) in ELASTIC_SIM_POLICIES
            job_kind = "fixed_batch" if sizes else "rigid"
        if job_kind not in ("rigid", "fixed_batch"):
            raise InvalidInstanceError(
                "job_kind", f"must be 'rigid' or 'fixed_batch', got {job_kind!r}"
            )
        self.job_kind = job_kind
        self.workload = workload
        self.traces = _load_traces(workload, traces)
        self.restart_delay = float(restart_delay)
        self._view: FixedBatchWorld | None = None
        self._view_shape: tuple[int, int] | None = None
        self._shape: tuple[int, int] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the run (before a new one); the policy is reset at the first decision."""
        self._shape = None
        self._states: dict[str, JobState] = {}
        self._seen: set[str] = set()
        # arrivals and completions since the policy's last decision (a round-based policy is
        # told of them at its next round, as the engine tells it)
        self._arrived: list[str] = []
        self._finished: list[str] = []
        self._last_time = math.nan
        self._decisions = 0
        self._wake = math.inf
        self._next_round = -math.inf
        self.calls = 0  #: decisions the simulator's policy took in the run

    def prepare(self, num_nodes: int, gpus_per_node: int) -> World:
        """The simulator's world on that cluster, built now (a run reuses it).

        Raises
        ------
        PolicyNotExpressibleError
            The policy's own :meth:`~optsched.sim.engine.policy.Policy.refuses` turns the
            world down (naming the policy and why).
        InvalidInstanceError
            A job the world cannot hold (:func:`~.sim_world.fixed_batch_world`).
        """
        shape = (num_nodes, gpus_per_node)
        if self._view is None or self._view_shape != shape:
            self._view = fixed_batch_world(
                self.workload, self.traces, num_nodes, gpus_per_node, self.job_kind,
                self.restart_delay,
            )  # fmt: skip
            self._view_shape = shape
        world = self._view.world
        why = self.policy.refuses(world)
        if why is not None:
            raise PolicyNotExpressibleError(
                "policy", f"{self.name!r} cannot run on the goodput world: {why}"
            )
        return world

    def _start(self, cluster: ClusterView) -> None:
        world = self.prepare(cluster.num_nodes, cluster.gpus_per_node)
        self.policy.reset(world)
        self._shape = (cluster.num_nodes, cluster.gpus_per_node)
        self._states = {j.job_id: JobState(job=j) for j in world.jobs}

    def _due(self, now: float, arrived: bool, finished: bool) -> bool:
        """Whether the simulator would decide now (module notes, step 2)."""
        length = self.policy.round_seconds
        if length is not None:
            return now + TIME_TOL >= self._next_round
        return self._decisions == 0 or arrived or finished or now + TIME_TOL >= self._wake

    def allocate(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        previous: Mapping[str, Allocation],
    ) -> dict[str, Allocation]:
        """The allocations (module notes)."""
        if self._shape != (cluster.num_nodes, cluster.gpus_per_node):
            if self._shape is not None:
                raise PolicyError(f"{self.name}: the cluster changed shape during a run")
            self._start(cluster)
        view = self._view
        assert view is not None
        now = float(cluster.time)
        unknown = [k for k in jobs if k not in self._states]
        if unknown:
            raise PolicyError(
                f"{self.name}: job {unknown[0]!r} is not in the workload the policy was given"
            )
        held = keep_known(previous, jobs)
        elapsed = 0.0 if math.isnan(self._last_time) else now - self._last_time
        self._last_time = now
        arrived = [k for k in jobs if k not in self._seen]
        # in the world's order (a set's order would vary with the process's hash seed)
        finished = sorted((k for k in self._seen if k not in jobs), key=view.index.__getitem__)
        self._seen = set(jobs)
        self._arrived += arrived
        self._finished += finished
        for name, job in jobs.items():
            st = self._states[name]
            st.attained_service = job.attained_service
            st.done = view.done(name, job.epoch)
            if held.get(name):
                st.executed_seconds += elapsed
        for name in finished:
            st = self._states[name]
            st.placement = None
        if not self._due(now, bool(arrived), bool(finished)):
            return held
        arrived, finished = self._arrived, self._finished
        self._arrived, self._finished = [], []
        return self._decide(jobs, cluster, held, arrived, finished, now)

    def _decide(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        held: Mapping[str, Allocation],
        arrived: list[str],
        finished: list[str],
        now: float,
    ) -> dict[str, Allocation]:
        """Ask the policy, carry its decision out, and update the states (steps 2-4)."""
        assert self._view is not None
        world = self._view.world
        index = self._view.index
        active = tuple(self._states[k] for k in sorted(jobs, key=index.__getitem__))
        running = tuple(s for s in active if s.placement is not None)
        new = tuple(self._states[k] for k in sorted(arrived, key=index.__getitem__))
        for st in new:
            st.first_decision = self._decisions
        length = self.policy.round_seconds
        state = SimState(now, world, active, self._decisions, length, running, new,
                         tuple(finished))  # fmt: skip
        decision = self.policy.allocate(state)
        self._decisions += 1
        self.calls += 1
        if length is not None:
            self._next_round = (math.floor((now + TIME_TOL) / length) + 1) * length
        self._wake = math.inf if decision.wake_at is None else float(decision.wake_at)
        result = carry_out_on_nodes(decision, state, held, cluster, self.name)
        for st in active:
            name = st.job_id
            before, after = held.get(name, ()), result.get(name, ())
            if before != after:
                if before:
                    st.preemptions += 1
                    st.last_stop = now
                if after:
                    st.last_start = now
                st.placement = _placement(after)
            if after:
                st.rounds_received[GPU_TYPE] = st.rounds_received.get(GPU_TYPE, 0) + 1
        return result


def _admitted(decision: PolicyDecision, state: SimState, total: int, name: str) -> list[Grant]:
    """The grants the engine admits, in order (module notes, step 3); kept jobs first."""
    by_id = {s.job_id: s for s in state.active}
    stop = set(decision.stop or ())
    grants: list[Grant] = []
    free = total
    granted: set[str] = set()
    if decision.keep_running:
        for kept in state.running:
            if kept.job_id not in stop:
                assert kept.placement is not None
                free -= kept.placement.num_gpus
                granted.add(kept.job_id)
                grants.append(Grant(job=kept.job_id, gpu_type=GPU_TYPE,
                                    num_gpus=kept.placement.num_gpus))  # fmt: skip
    for g in decision.grants:
        s = by_id.get(g.job)
        if s is None:
            raise PolicyError(f"{name}: granted job {g.job!r}, which is not active")
        if g.job in granted:
            if decision.keep_running and decision.stop is None:
                raise PolicyError(f"{name}: keep_running grants the running job {g.job!r}")
            continue
        if g.gpu_type != GPU_TYPE:
            raise PolicyError(f"{name}: job {g.job!r} granted GPU type {g.gpu_type!r}")
        if g.share_with is not None:
            raise PolicyError(
                f"{name}: job {g.job!r} shares GPUs with {g.share_with!r}, which the goodput "
                "world cannot express"
            )
        n = s.job.num_gpus if g.num_gpus is None else g.num_gpus
        if not s.job.min_gpus <= n <= s.job.max_gpus:
            raise PolicyError(
                f"{name}: job {g.job!r} granted {n} GPUs, outside "
                f"{s.job.min_gpus}..{s.job.max_gpus}"
            )
        if n > free:
            if decision.blocking:
                break
            continue
        free -= n
        granted.add(g.job)
        grants.append(Grant(job=g.job, gpu_type=GPU_TYPE, placement=g.placement, num_gpus=n))
    return grants


def carry_out_on_nodes(
    decision: PolicyDecision,
    state: SimState,
    held: Mapping[str, Allocation],
    cluster: ClusterView,
    name: str,
) -> dict[str, Allocation]:
    """The goodput allocations of a simulator decision (module notes, steps 3 and 4).

    Raises
    ------
    PolicyError
        Naming the policy and the job: a grant of an inactive job, of another GPU type, of
        shared GPUs, of a gang size outside the job's bounds, or an explicit placement on GPUs
        not free.
    """
    admitted = _admitted(decision, state, cluster.num_gpus, name)
    out: dict[str, Allocation] = {}
    free = [cluster.gpus_per_node] * cluster.num_nodes
    for g in admitted:
        if g.placement is None:
            continue
        nodes: list[int] = []
        for server, count in g.placement.servers:
            if not 0 <= server < cluster.num_nodes or free[server] < count:
                raise PolicyError(
                    f"{name}: job {g.job!r} placed on server {server}, which has not "
                    f"{count} GPUs free"
                )
            free[server] -= count
            nodes.extend([server] * count)
        out[g.job] = tuple(nodes)
    for g in admitted:
        keep = held.get(g.job, ())
        if g.job not in out and keep and len(keep) == g.num_gpus:
            if _take(free, keep):
                out[g.job] = keep
    rest = [g for g in admitted if g.job not in out]
    free = free_gpus(cluster, out.values())
    for g in rest:
        assert g.num_gpus is not None
        out[g.job] = most_free_first(free, g.num_gpus, g.job)
    return out


def _take(free: list[int], alloc: Allocation) -> bool:
    """Take ``alloc``'s GPUs from ``free`` when all are free (in place); whether it could."""
    need: dict[int, int] = {}
    for node in alloc:
        need[node] = need.get(node, 0) + 1
    if any(free[node] < k for node, k in need.items()):
        return False
    for node, k in need.items():
        free[node] -= k
    return True
