r"""Placement policies over time and the run of one policy on one arrival trace.

Every policy places the tasks of the job at the head of the queue, one server per task
(workers first, then parameter servers), among the servers the action mask allows
(:meth:`~optsched.harmony.world.ClusterState.mask`), except ``pairwise-ilp`` and
``true-exact``, which solve for the whole job at once:

======================= ===================================================================
name                    rule for each task
======================= ===================================================================
``harmony``             the trained policy network's most probable server (greedy inference)
``interference-greedy`` the valid server adding the least *true* slowdown: 0 on a server
                        already holding the job, else :math:`c_h + \lambda`
                        (:func:`~optsched.harmony.exact.server_costs`; reads the ground truth)
``consolidate-first``   a valid server already holding the job (lowest index), else the one
                        with the fewest other jobs (ties: lowest index); reads no truth
``first-fit``           the lowest-numbered valid server
``load-balance``        the valid server with the most free GPUs, then CPUs (spreads load)
``tetris``              the valid server maximising the alignment
                        :math:`\langle d/C, f_h/C\rangle` of demand and free capacity (Tetris)
``random``              a uniformly random valid server (seeded)
``pairwise-ilp``        the exact optimum of the *pairwise approximation*: the snapshot's
                        ``interference`` ILP (:mod:`optsched.harmony.snapshot`), per arrival
``true-exact``          the exact optimum of the *true* group-slowdown cost of the decision
                        (:func:`~optsched.harmony.exact.solve_exact`), per arrival
======================= ===================================================================

``pairwise-ilp`` and ``true-exact`` are myopic: each is optimal for its own decision, not over a
trace. ``interference-greedy``, ``pairwise-ilp`` and ``true-exact`` read the ground truth (an
oracle the learned policy does not have: it learns from a reward network).

:func:`run_policy` runs one policy on one trace on the simulator's engine in its colocation
mode (:class:`~optsched.harmony.world.EngineDriver`), validates every decision with the
placement validator (recording its ILP objective) and the whole run with the simulator's
validator (:func:`optsched.sim.validate`), and reports the simulator's run metrics.
The same rules run as simulator policies (:mod:`optsched.harmony.sim_policies`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.errors import InconsistentResultError, InvalidInstanceError
from optsched.harmony.network import features, forward, predicted_costs, predictor
from optsched.harmony.world import ClusterState, EngineDriver, HarmonyWorld, JobArrival

__all__ = ["POLICIES", "PolicyRun", "place_job", "run_policy"]

#: Policy names :func:`run_policy` knows.
POLICIES = (
    "harmony",
    "interference-greedy",
    "consolidate-first",
    "first-fit",
    "load-balance",
    "tetris",
    "random",
    "pairwise-ilp",
    "true-exact",
)

#: The policies that solve for a whole job at once (not task by task).
WHOLE_JOB = ("pairwise-ilp", "true-exact")


def _choose(
    name: str,
    state: ClusterState,
    demand: np.ndarray,
    mask: np.ndarray,
    rng: np.random.Generator,
    *,
    job: JobArrival,
    costs: np.ndarray | None = None,
) -> int:
    valid = np.flatnonzero(mask)
    if name == "first-fit":
        return int(valid[0])
    if name in ("interference-greedy", "consolidate-first"):
        holding = [h for h in valid if job.id in state.members[h]]
        if holding:
            # no added interference and no added spread: the job is already there
            return int(holding[0])
        if name == "consolidate-first":
            others = np.array([len(state.members[h]) for h in valid])
            return int(valid[int(np.argmin(others))])
        assert costs is not None
        return int(valid[int(np.argmin(costs[valid]))])
    cap = state.world.capacity
    if name == "load-balance":
        free = state.free[valid] / cap[valid]
        # Most free GPUs first, then most free CPUs; ties to the lowest index (stable sort).
        order = np.lexsort((-free[:, 1], -free[:, 0]))
        return int(valid[order[0]])
    if name == "tetris":
        score = (state.free[valid] / cap[valid]) @ (demand / cap[0])
        return int(valid[int(np.argmax(score))])
    if name == "random":
        return int(rng.choice(valid))
    raise InvalidInstanceError("policy", f"unknown policy {name!r}; known: {list(POLICIES)}")


def place_job(
    name: str,
    state: ClusterState,
    job: JobArrival,
    *,
    params: Mapping[str, np.ndarray] | None = None,
    rng: np.random.Generator | None = None,
    time_limit: float | None = None,
) -> list[int]:
    """Servers for every task of ``job`` by any policy of :data:`POLICIES`.

    ``state`` is left unchanged (a copy is placed into).

    Raises
    ------
    InvalidInstanceError
        Unknown policy, or ``harmony`` without weights.
    """
    if name == "pairwise-ilp":
        from optsched.harmony.snapshot import snapshot_instance, solve_decision

        servers, _ = solve_decision(snapshot_instance(state, job), time_limit=time_limit)
        return [int(h) for h in servers]
    if name == "true-exact":
        from optsched.harmony.exact import solve_exact

        return solve_exact(state, job).servers
    rng = np.random.default_rng(0) if rng is None else rng
    costs = None
    if name == "interference-greedy":
        from optsched.harmony.exact import server_costs

        costs = server_costs(state, job)
    if name == "harmony":
        if params is None:
            raise InvalidInstanceError("params", "the harmony policy needs trained weights")
        slowdown = predictor(params, state.world.n_types)
        if slowdown is not None:
            # the policy's own reward network, not the truth: the same for every task
            costs = predicted_costs(state, job, slowdown)
    work = state.copy()
    demands = job.demands()
    placed: list[int] = []
    for k, d in enumerate(demands):
        mask = work.mask(demands, k)
        if name == "harmony":
            assert params is not None
            server, jobf = features(work, job, k, placed, costs=costs)
            p, _ = forward(params, server, jobf, mask)
            h = int(np.argmax(p))
        else:
            h = _choose(name, work, d, mask, rng, job=job, costs=costs)
        work.place_task(job, d, h)
        placed.append(h)
    return placed


@dataclass
class PolicyRun:
    """One policy on one trace: every decision and the completion times.

    Attributes
    ----------
    policy : str
    jct : numpy.ndarray
        Completion minus arrival per job (s), in arrival order.
    makespan : float
    objectives : list of float
        The *pairwise-approximation* objective of every decision (the placement validator's
        ``interference`` objective of the snapshot), in decision order.
    true_costs : list of float
        The true cost of every decision (:func:`~optsched.harmony.exact.true_cost`).
    decision_s : list of float
        CPU time of every decision (s; process CPU time, not wall).
    placements : dict of int to list of int
        Servers of every job's tasks.
    metrics : dict
        The simulator's run metrics of the record (:func:`optsched.sim.run_metrics`).
    """

    policy: str
    jct: np.ndarray
    makespan: float
    objectives: list[float] = field(default_factory=list)
    true_costs: list[float] = field(default_factory=list)
    decision_s: list[float] = field(default_factory=list)
    placements: dict[int, list[int]] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures: average JCT, makespan, decisions, mean decision CPU time.

        With the simulator's run metrics of the record (``metrics``), also the median and
        95th-percentile JCT (``jct_median_s``, ``jct_p95_s``).
        """
        extra = {
            f"{k}_s": float(self.metrics[k]) for k in ("jct_median", "jct_p95") if k in self.metrics
        }
        return {
            "policy": self.policy,
            "jobs": len(self.jct),
            "avg_jct_s": float(np.mean(self.jct)),
            "makespan_s": float(self.makespan),
            "mean_pairwise_objective": (
                float(np.mean(self.objectives)) if self.objectives else None
            ),
            "mean_true_cost": float(np.mean(self.true_costs)) if self.true_costs else None,
            "decisions": len(self.decision_s),
            "mean_decision_cpu_ms": (
                1e3 * float(np.mean(self.decision_s)) if self.decision_s else 0.0
            ),
            "validated": len(self.objectives) == len(self.decision_s),
            **extra,
        }


def run_policy(
    world: HarmonyWorld,
    arrivals: Sequence[JobArrival],
    policy: str,
    *,
    params: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    validate: bool = True,
    time_limit: float | None = None,
) -> PolicyRun:
    """Run ``policy`` on ``arrivals``; validate every decision unless told not to.

    Parameters
    ----------
    world : HarmonyWorld
    arrivals : sequence of JobArrival
    policy : str
        One of :data:`POLICIES`.
    params : mapping, optional
        Network weights for ``harmony`` (:func:`optsched.harmony.load_model`).
    seed : int, default 0
        Seed of ``random``.
    validate : bool, default True
        Check every decision with :func:`~optsched.harmony.snapshot.validate_decision` and
        record its pairwise-approximation objective and its true cost.
    time_limit : float, optional
        Per-solve limit of ``pairwise-ilp``.

    Raises
    ------
    InvalidInstanceError
        Unknown policy, or ``harmony`` without weights.
    InconsistentResultError
        A decision fails the placement validator, or the run the simulator's validator.
    """
    from optsched.harmony.exact import true_cost
    from optsched.harmony.snapshot import snapshot_instance, validate_decision
    from optsched.sim.measure.metrics import job_metrics, run_metrics
    from optsched.sim.measure.validate import validate as sim_validate

    if policy not in POLICIES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}; known: {list(POLICIES)}")
    if policy == "harmony" and params is None:
        raise InvalidInstanceError("params", "the harmony policy needs trained weights")
    sim = EngineDriver(world, arrivals, name=policy)
    rng = np.random.default_rng(seed)
    run = PolicyRun(policy, np.array([]), 0.0)
    while (job := sim.next_job()) is not None:
        start = time.process_time()
        servers = place_job(policy, sim.state, job, params=params, rng=rng, time_limit=time_limit)
        run.decision_s.append(time.process_time() - start)
        if validate:
            _, objective = validate_decision(snapshot_instance(sim.state, job), servers, policy)
            run.objectives.append(objective)
            run.true_costs.append(true_cost(sim.state, job, servers))
        sim.commit(job, servers)
    record = sim.finish()
    report = sim_validate(sim.sim_world, record)
    if not report.ok:
        raise InconsistentResultError(
            f"{policy}: the simulator's validator rejects the run: {report.violations[0]}"
        )
    run.jct = sim.jcts()
    run.makespan = sim.makespan()
    run.placements = dict(sim.placements)
    run.metrics = run_metrics(record, job_metrics(record))
    return run
