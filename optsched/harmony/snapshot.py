r"""One placement decision as a :class:`~optsched.placement.PlacementInstance`: pairwise ILP.

At a decision the world is frozen into a snapshot instance: every server with its *free*
capacity and, as ``residents``, the type of every job present on it (once per job); the arriving
job with its workers and parameter servers; and type coefficients

.. math:: \hat y_{ab} = S_{ab} + S_{ba}

from the ground truth's pairwise slowdowns. The ``interference`` objective of the placement
ILP (:mod:`optsched.placement.interference`) then charges a placement
:math:`1 + \sum_{h \in S} \sum_{b \in \mathrm{res}(h)} (S_{ab} + S_{ba}) + \lambda(|S| - 1)`:
the new job's standalone time (1, as a unit), what it suffers from and inflicts on each resident
to first order, and its spread. [R] The symmetrisation is optsched's: the ILP's residents are
types, not jobs, so what the newcomer inflicts on them is carried by the same coefficient.

:func:`solve_decision` solves that ILP exactly: the optimum of the *pairwise approximation*
(policy ``pairwise-ilp``), not of the true cost, which charges the superadditive group slowdown
:math:`S_a(B)` per server and is solved exactly by :mod:`optsched.harmony.exact`; the two agree
on servers holding at most one other job. :func:`validate_decision` checks any policy's
placement with the independent validator (feasibility) and returns its pairwise objective.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optsched.cluster import Cluster, Server
from optsched.errors import InconsistentResultError
from optsched.harmony.world import ClusterState, JobArrival
from optsched.placement import JobSpec, Placement, PlacementInstance, TaskSpec, solve, validate

__all__ = ["snapshot_instance", "solve_decision", "validate_decision"]


def _type_name(t: int) -> str:
    return f"type{t}"


def snapshot_instance(state: ClusterState, job: JobArrival) -> PlacementInstance:
    """The placement instance of one decision (see the module docstring).

    Parameters
    ----------
    state : ClusterState
        The cluster just before the decision.
    job : JobArrival
        The job to place.

    Returns
    -------
    PlacementInstance
        Tasks in :meth:`JobArrival.demands` order (workers ``w*`` then parameter servers
        ``ps*``), servers ``s0..`` in the world's order.
    """
    world = state.world
    servers = []
    present: set[int] = {job.job_type}
    for h in range(world.n_servers):
        residents = tuple(_type_name(state.types[j]) for j in sorted(state.members[h]))
        present |= {state.types[j] for j in state.members[h]}
        free = np.maximum(state.free[h], 0.0)
        servers.append(
            Server(
                name=f"s{h}",
                capacity={"gpu": float(round(free[0])), "cpu": float(free[1])},
                residents=residents,
            )
        )
    tasks = (
        [TaskSpec(name="w", role="worker", count=job.n_workers, demand={"gpu": 1.0, "cpu": 2.0})]
        if job.n_workers
        else []
    )
    if job.n_ps:
        tasks.append(TaskSpec(name="ps", role="ps", count=job.n_ps, demand={"cpu": 4.0}))
    spec = JobSpec(
        name=f"j{job.id}",
        type=_type_name(job.job_type),
        standalone_time_s=1.0,
        spread_penalty_s=world.spread_penalty,
        tasks=tuple(tasks),
    )
    types = sorted(present)
    pair = world.the_truth.pairwise_slowdowns()[np.ix_(types, types)]
    instance = PlacementInstance(cluster=Cluster(servers=tuple(servers)), jobs=(spec,))
    return instance.with_type_interference([_type_name(t) for t in types], pair + pair.T)


def validate_decision(
    instance: PlacementInstance, servers: Sequence[int], method: str
) -> tuple[Placement, float]:
    """Check one decision with the placement validator and return its pairwise objective.

    Raises
    ------
    InconsistentResultError
        The placement violates a constraint (a defect of the policy or of the world: never
        expected, never ignored).
    """
    placement = Placement.from_indices(instance, [int(h) for h in servers], method=method)
    report = validate(instance, placement, "interference")
    if report.violations:
        raise InconsistentResultError(
            f"{method} placed job {instance.jobs[0].name} infeasibly: {report.violations[0]}"
        )
    assert report.objective is not None
    return placement, float(report.objective)


def solve_decision(
    instance: PlacementInstance, *, time_limit: float | None = None
) -> tuple[list[int], float]:
    """The exact optimum of the pairwise ``interference`` ILP of one snapshot.

    An approximation of the true cost (:mod:`optsched.harmony.exact`). Returns the server of
    every task and the pairwise objective.
    """
    result = solve(instance, "interference", time_limit=time_limit)
    assert result.solution is not None and result.objective is not None
    return result.solution.server_indices(instance), float(result.objective)
