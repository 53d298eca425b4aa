r"""Placement policies over time and the run of one policy on one arrival trace.

Every policy places the tasks of the job at the head of the queue, one server per task
(workers first, then parameter servers), among the servers the action mask allows
(:meth:`~optsched.harmony.world.ClusterState.mask`), except ``ilp``, which solves the snapshot
ILP of the whole job at once:

================ ==========================================================================
name             rule for each task
================ ==========================================================================
``harmony``      the trained policy network's most probable server (greedy inference)
``first-fit``    the lowest-numbered valid server
``load-balance`` the valid server with the most free GPUs, then CPUs (spreads load)
``tetris``       the valid server maximising the alignment
                 :math:`\langle d/C, f_h/C\rangle` of demand and free capacity (Tetris)
``random``       a uniformly random valid server (seeded)
``ilp``          the exact ``interference`` ILP of the snapshot (greedy per arrival)
================ ==========================================================================

:func:`run_policy` runs one policy on one trace on the simulator's engine in its colocation
mode (:class:`~optsched.harmony.world.EngineDriver`), validates every decision with the
placement validator (recording its ILP objective) and the whole run with the simulator's
validator (:func:`optsched.sim.validate`), and reports the simulator's run metrics.
The same rules run as simulator policies (:mod:`optsched.sim.policies.placement`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.errors import InconsistentResultError, InvalidInstanceError
from optsched.harmony.network import features, forward
from optsched.harmony.world import ClusterState, EngineDriver, HarmonyWorld, JobArrival

__all__ = ["POLICIES", "PolicyRun", "place_job", "run_policy"]

#: Policy names :func:`run_policy` knows.
POLICIES = ("harmony", "first-fit", "load-balance", "tetris", "random", "ilp")


def _choose(
    name: str,
    state: ClusterState,
    demand: np.ndarray,
    mask: np.ndarray,
    rng: np.random.Generator,
) -> int:
    valid = np.flatnonzero(mask)
    if name == "first-fit":
        return int(valid[0])
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
) -> list[int]:
    """Servers for every task of ``job`` by a task-by-task policy (not ``ilp``).

    ``state`` is left unchanged (a copy is placed into).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    work = state.copy()
    demands = job.demands()
    placed: list[int] = []
    for k, d in enumerate(demands):
        mask = work.mask(demands, k)
        if name == "harmony":
            if params is None:
                raise InvalidInstanceError("params", "the harmony policy needs trained weights")
            server, jobf = features(work, job, k, placed)
            p, _ = forward(params, server, jobf, mask)
            h = int(np.argmax(p))
        else:
            h = _choose(name, work, d, mask, rng)
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
        ILP objective of every decision (the validator's), in decision order.
    decision_s : list of float
        Wall time of every decision (s).
    placements : dict of int to list of int
        Servers of every job's tasks.
    metrics : dict
        The simulator's run metrics of the record (:func:`optsched.sim.run_metrics`).
    """

    policy: str
    jct: np.ndarray
    makespan: float
    objectives: list[float] = field(default_factory=list)
    decision_s: list[float] = field(default_factory=list)
    placements: dict[int, list[int]] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures: average JCT, makespan, decisions, mean decision time.

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
            "mean_objective": float(np.mean(self.objectives)) if self.objectives else None,
            "decisions": len(self.decision_s),
            "mean_decision_ms": 1e3 * float(np.mean(self.decision_s)) if self.decision_s else 0.0,
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
        record its ILP objective (``ilp`` is validated by the exact-solve path as well).
    time_limit : float, optional
        Per-solve limit of ``ilp``.

    Raises
    ------
    InvalidInstanceError
        Unknown policy, or ``harmony`` without weights.
    InconsistentResultError
        A decision fails the placement validator, or the run the simulator's validator.
    """
    from optsched.harmony.snapshot import snapshot_instance, solve_decision, validate_decision
    from optsched.sim.metrics import job_metrics, run_metrics
    from optsched.sim.validate import validate as sim_validate

    if policy not in POLICIES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}; known: {list(POLICIES)}")
    if policy == "harmony" and params is None:
        raise InvalidInstanceError("params", "the harmony policy needs trained weights")
    sim = EngineDriver(world, arrivals, name=policy)
    rng = np.random.default_rng(seed)
    run = PolicyRun(policy, np.array([]), 0.0)
    while (job := sim.next_job()) is not None:
        instance = snapshot_instance(sim.state, job) if (validate or policy == "ilp") else None
        start = time.perf_counter()
        if policy == "ilp":
            assert instance is not None
            servers, _ = solve_decision(instance, time_limit=time_limit)
        else:
            servers = place_job(policy, sim.state, job, params=params, rng=rng)
        run.decision_s.append(time.perf_counter() - start)
        if instance is not None and validate:
            _, objective = validate_decision(instance, servers, policy)
            run.objectives.append(objective)
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
