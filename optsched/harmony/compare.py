r"""Every placement policy on the same arrivals, and every policy against the true optimum.

:func:`compare_policies` runs each policy of :data:`~optsched.harmony.policies.POLICIES` on one
arrival trace (every decision validated) and reports average JCT, makespan and each policy's
JCT ratio to ``harmony``. :func:`decision_gaps` replays one policy's trace and, at every
decision, solves the exact optimum of the decision's *true* group-slowdown cost
(:mod:`optsched.harmony.exact`) and scores every policy's placement of the same job on the
same cluster: the ratio :math:`\rho = f(\text{policy}) / f^\star \ge 1` per decision and the
fraction of decisions that are optimal (:math:`\rho \le 1 + \texttt{RATIO\_TOL}`), over all
decisions and over the non-trivial ones (those where not every valid placement is optimal
by construction).

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
    from optsched.sim.world.colocation import trace_jobs
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


def _ratio_stats(ratios: np.ndarray) -> dict[str, Any]:
    if len(ratios) == 0:
        return {"decisions": 0, "mean": None, "median": None, "max": None,
                "fraction_optimal": None}  # fmt: skip
    return {
        "decisions": len(ratios),
        "mean": float(np.mean(ratios)),
        "median": float(np.median(ratios)),
        "max": float(np.max(ratios)),
        "fraction_optimal": float(np.mean(ratios <= 1 + RATIO_TOL)),
    }


def decision_gaps(
    world: HarmonyWorld,
    arrivals: Sequence[JobArrival],
    params: Mapping[str, np.ndarray] | None,
    *,
    policies: Sequence[str] = ("harmony",),
    driver: str = "harmony",
    seed: int = 0,
    time_limit: float | None = None,
) -> dict[str, Any]:
    r"""Every policy's true cost against the exact true optimum, decision by decision.

    The trace is run by ``driver`` (the learned policy by default); at each of its decisions
    the exact true optimum :math:`f^\star` is solved (:func:`~optsched.harmony.exact.solve_exact`)
    and every policy of ``policies`` is asked where it would place the same job on the same
    cluster; its placement is checked by the placement validator and scored by its true cost
    :math:`f` (:func:`~optsched.harmony.exact.true_cost`), giving :math:`\rho = f / f^\star
    \ge 1`. All policies are judged on the same decisions, and the decisions are classed as
    trivial (``lone``, ``forced``) or non-trivial (``open``) as in :mod:`optsched.harmony.exact`.

    Returns
    -------
    dict
        ``decisions``, ``kinds`` (one per decision), ``trivial`` (counts of ``lone``,
        ``forced``, ``open``), ``valid`` (the simulator's validator accepts the driver's run),
        and ``policies``: per policy ``ratios`` (one per decision), ``all`` and
        ``nontrivial`` (``decisions``, ``mean``, ``median``, ``max``, ``fraction_optimal``).

    Raises
    ------
    InvalidInstanceError
        An unknown policy, or ``harmony`` without weights.
    """
    from optsched.harmony.exact import solve_exact, true_cost
    from optsched.harmony.policies import place_job
    from optsched.harmony.snapshot import snapshot_instance, validate_decision
    from optsched.sim.measure.validate import validate as sim_validate

    names = list(policies)
    for name in [driver, *names]:
        if name not in POLICIES:
            raise InvalidInstanceError(
                "policies", f"unknown policy {name!r}; known: {list(POLICIES)}"
            )
    sim = EngineDriver(world, arrivals, name=driver)
    rngs = {n: np.random.default_rng(seed) for n in {driver, *names}}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    kinds: list[str] = []
    while (job := sim.next_job()) is not None:
        exact = solve_exact(sim.state, job)
        kinds.append(exact.kind)
        instance = snapshot_instance(sim.state, job)
        chosen: dict[str, list[int]] = {}
        for name in dict.fromkeys([*names, driver]):
            servers = place_job(
                name, sim.state, job, params=params, rng=rngs[name], time_limit=time_limit
            )
            validate_decision(instance, servers, name)
            chosen[name] = servers
            if name in ratios:
                ratios[name].append(true_cost(sim.state, job, servers) / exact.objective)
        sim.commit(job, chosen[driver])
    record = sim.finish()
    open_ = np.array([k == "open" for k in kinds], dtype=bool)
    out: dict[str, Any] = {
        "valid": sim_validate(sim.sim_world, record).ok,
        "driver": driver,
        "decisions": len(kinds),
        "kinds": kinds,
        "trivial": {k: kinds.count(k) for k in ("lone", "forced", "open")},
        "policies": {},
    }
    for name, values in ratios.items():
        r = np.array(values)
        out["policies"][name] = {
            "ratios": [float(x) for x in r],
            "all": _ratio_stats(r),
            "nontrivial": _ratio_stats(r[open_]) if len(r) else _ratio_stats(r),
        }
    return out
