r"""Every placement policy on the same arrivals, and the learned policy against the exact ILP.

:func:`compare_policies` runs each policy of :data:`~optsched.harmony.policies.POLICIES` on one
arrival trace (every decision validated) and reports average JCT, makespan and each policy's
JCT ratio to ``harmony``. :func:`decision_gaps` replays the learned policy and, at every
decision, solves the snapshot's exact ``interference`` ILP
(:mod:`optsched.harmony.snapshot`): the objective ratio
:math:`\rho = f(\text{policy}) / f^\star \ge 1` per decision and the fraction of decisions
that are optimal (:math:`\rho \le 1 + \texttt{RATIO\_TOL}`).

:func:`arrivals_from_trace` turns a job trace of any format :func:`optsched.traces.read_trace`
knows into arrivals: the arrival time is kept, workers are the requested GPUs (clipped to the
world's largest job), one parameter server per two workers (at least one, at most the world's
``max_ps``), the type is the job's model (models numbered in order of appearance, modulo the
number of types), and the iterations are ``total_steps`` (else ``duration`` over the type's
standalone iteration time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.harmony.policies import POLICIES, run_policy
from optsched.harmony.world import EngineDriver, HarmonyWorld, JobArrival
from optsched.tolerances import RATIO_TOL

__all__ = ["arrivals_from_trace", "compare_policies", "decision_gaps"]


def arrivals_from_trace(world: HarmonyWorld, path: str | Path) -> tuple[JobArrival, ...]:
    """Arrivals of a trace file (see the module docstring for the mapping).

    Raises
    ------
    InvalidInstanceError
        The trace is refused by its reader, has no job, or a job has neither steps nor a
        duration (the row is named).
    """
    from optsched.sim.colocation import trace_jobs
    from optsched.traces import read_trace

    # the one trace-to-PS-job mapping, shared with the simulator's colocation worlds
    jobs = trace_jobs(
        read_trace(path).jobs,
        world.the_truth.standalone_times,
        n_types=world.n_types,
        max_workers=world.max_workers,
        max_ps=world.max_ps,
        file=str(path),
    )
    out = [
        JobArrival(i, j.arrival, j.job_type, j.workers, j.ps, j.iterations)
        for i, j in enumerate(jobs)
    ]
    return tuple(out)


def compare_policies(
    world: HarmonyWorld,
    arrivals: Sequence[JobArrival],
    policies: Sequence[str],
    *,
    params: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    time_limit: float | None = None,
) -> dict[str, Any]:
    """Run every policy on ``arrivals`` (each decision validated).

    Returns
    -------
    dict
        ``policies``: one record per policy (:meth:`PolicyRun.summary` plus ``jct_ratio``, its
        average JCT over ``harmony``'s when ``harmony`` ran, and ``valid``), and ``runs``: the
        :class:`~optsched.harmony.policies.PolicyRun` objects (not JSON; drop before printing).

    Raises
    ------
    InvalidInstanceError
        No policy, a repeated or unknown one.
    """
    names = list(policies)
    if not names:
        raise InvalidInstanceError("policies", "name at least one policy")
    if len(set(names)) != len(names):
        raise InvalidInstanceError("policies", "a policy is named twice")
    for name in names:
        if name not in POLICIES:
            raise InvalidInstanceError(
                "policies", f"unknown policy {name!r}; known: {list(POLICIES)}"
            )
    runs = {
        n: run_policy(world, arrivals, n, params=params, seed=seed, time_limit=time_limit)
        for n in names
    }
    base = float(np.mean(runs["harmony"].jct)) if "harmony" in runs else None
    records = []
    for run in runs.values():
        rec = run.summary()
        rec["jct_ratio"] = None if base is None else rec["avg_jct_s"] / base
        rec["valid"] = rec.pop("validated")
        records.append(rec)
    return {"jobs": len(arrivals), "policies": records, "runs": runs}


def decision_gaps(
    world: HarmonyWorld,
    arrivals: Sequence[JobArrival],
    params: Mapping[str, np.ndarray],
    *,
    policy: str = "harmony",
    time_limit: float | None = None,
) -> dict[str, Any]:
    """The learned (or any task-by-task) policy's objective against the ILP at every decision.

    Returns
    -------
    dict
        ``ratios`` (one per decision), ``median_ratio``, ``mean_ratio``, ``max_ratio``,
        ``fraction_optimal``, ``decisions``, and ``valid``: whether the simulator's validator
        accepts the run (:func:`optsched.sim.validate`).
    """
    from optsched.harmony.policies import place_job
    from optsched.harmony.snapshot import snapshot_instance, solve_decision, validate_decision
    from optsched.sim.validate import validate as sim_validate

    sim = EngineDriver(world, arrivals, name=policy)
    ratios = []
    rng = np.random.default_rng(0)
    while (job := sim.next_job()) is not None:
        instance = snapshot_instance(sim.state, job)
        servers = place_job(policy, sim.state, job, params=params, rng=rng)
        _, value = validate_decision(instance, servers, policy)
        _, best = solve_decision(instance, time_limit=time_limit)
        ratios.append(value / best)
        sim.commit(job, servers)
    record = sim.finish()
    r = np.array(ratios)
    return {
        "valid": sim_validate(sim.sim_world, record).ok,
        "policy": policy,
        "decisions": len(r),
        "ratios": [float(x) for x in r],
        "median_ratio": float(np.median(r)),
        "mean_ratio": float(np.mean(r)),
        "max_ratio": float(np.max(r)),
        "fraction_optimal": float(np.mean(r <= 1 + RATIO_TOL)),
    }
