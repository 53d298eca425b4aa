r"""ANDREAS's randomised greedy with restarts.

One *restart* builds a plan job by job:

1. **Order by due-date pressure.** The pressure of job :math:`j` is its slack
   :math:`s_j = d_j - t_0 - \min_c t_{jc}` (infinite without a due date); ties go to the larger
   weight, then to the earlier job. Restart 0 takes the jobs in this order; every later restart
   draws the next job uniformly among the ``candidates`` most pressing ones still unplaced (a
   restricted candidate list, as in GRASP), so urgent jobs tend to come first but every order
   can occur.
2. **Best-fit configuration.** Among the job's configurations that fit the GPUs still free, take
   the cheapest decision cost :math:`\kappa_{jc}` (ties: fewer GPUs, then node type order);
   later restarts draw uniformly among the ``candidates`` cheapest that fit. A configuration
   costing more than postponing is never taken; when none is left, the job is postponed. The
   configuration is placed best fit: on the node with the fewest free GPUs that holds it (a
   multi-node configuration on the lowest-numbered wholly free nodes).

The best plan over ``restarts`` restarts is kept (ties keep the earlier). One
``numpy.random.default_rng(seed)`` stream feeds the restarts in order, so a run of ``R``
restarts repeats the first ``R`` restarts of any longer run with the same seed: more restarts
are never worse.

Complexity: :math:`O(R \cdot (J \log J + J K + \sum_c N_{\tau(c)}))` for :math:`R` restarts,
:math:`J` jobs, :math:`K` the candidate-list length; ``restarts`` is bounded by
:data:`MAX_RESTARTS`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from optsched.allocation.andreas.costs import decision_costs
from optsched.allocation.andreas.instance import AndreasInstance
from optsched.allocation.andreas.plan import AndreasPlan, Assignment
from optsched.errors import InvalidInstanceError

__all__ = ["MAX_RESTARTS", "GreedyRun", "RandomizedGreedy"]

#: Largest accepted ``restarts`` (each restart is one pass over the jobs).
MAX_RESTARTS = 100_000


@dataclass(frozen=True)
class GreedyRun:
    """The result of :meth:`RandomizedGreedy.run`.

    Attributes
    ----------
    plan : AndreasPlan
        The best plan found (the same type the MILP returns).
    objective : float
        Its total cost, as the greedy computed it (the validator recomputes it).
    restarts : int
        Restarts run.
    best_restart : int
        The restart that found ``plan`` (0 is the deterministic pressure order).
    history : tuple of float
        Cost of each restart's plan.
    seconds : float
    algorithm : str
    """

    plan: AndreasPlan
    objective: float
    restarts: int
    best_restart: int
    history: tuple[float, ...]
    seconds: float
    algorithm: str = "andreas-greedy"

    @property
    def schedule(self) -> AndreasPlan:
        """The plan (the name every family's run record uses)."""
        return self.plan

    def __repr__(self) -> str:
        return (
            f"GreedyRun(objective={self.objective:.6g}, restarts={self.restarts}, "
            f"best_restart={self.best_restart}, {self.plan!r})"
        )


class RandomizedGreedy:
    """ANDREAS's randomised greedy with restarts (see the module notes).

    Parameters
    ----------
    restarts : int
        Restarts, in ``[1, MAX_RESTARTS]`` (default 64).
    seed : int
        Seed of the one random stream.
    candidates : int
        Length of the restricted candidate list (1: every restart is the pressure order).

    Examples
    --------
    >>> from optsched.allocation.andreas import generate_instance, validate
    >>> inst = generate_instance(6, seed=2)
    >>> run = RandomizedGreedy(restarts=16, seed=0).run(inst)
    >>> validate(inst, run.plan).ok
    True
    """

    def __init__(self, restarts: int = 64, *, seed: int = 0, candidates: int = 3) -> None:
        if isinstance(restarts, bool) or not isinstance(restarts, int):
            raise InvalidInstanceError("restarts", f"must be an integer, got {restarts!r}")
        if not 1 <= restarts <= MAX_RESTARTS:
            raise InvalidInstanceError(
                "restarts", f"must be in [1, {MAX_RESTARTS}], got {restarts}"
            )
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidInstanceError("candidates", f"must be an integer >= 1, got {candidates!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")
        self.restarts = restarts
        self.seed = seed
        self.candidates = candidates

    def run(self, instance: AndreasInstance) -> GreedyRun:
        """Run the restarts on ``instance``; return the best plan."""
        start = time.perf_counter()
        costs = decision_costs(instance)
        types = instance.node_types
        n = instance.n_jobs
        free0 = [np.array([t.free(k) for k in range(t.nodes)], dtype=np.int64) for t in types]
        slack = np.array(
            [
                math.inf
                if job.due_s is None
                else job.due_s - instance.now_s - min(c.runtime_s for c in job.configurations)
                for job in instance.jobs
            ]
        )
        weight = np.array([job.weight for job in instance.jobs])
        pressure = sorted(range(n), key=lambda j: (slack[j], -weight[j], j))
        # Per job, its configurations by (cost, GPUs, node type): the first that fits is taken.
        ranked = [
            sorted(
                range(int(costs.first[j]), int(costs.first[j + 1])),
                key=lambda k: (costs.run[k], costs.gpus[k], costs.node_type[k], k),
            )
            for j in range(n)
        ]
        rng = np.random.default_rng(self.seed)
        width = self.candidates
        best: tuple[float, list[tuple[int, int, tuple[int, ...]]]] | None = None
        best_restart = 0
        history: list[float] = []
        for r in range(self.restarts):
            order = pressure if r == 0 else self._draw(pressure, rng)
            free = [f.copy() for f in free0]
            total = 0.0
            chosen: list[tuple[int, int, tuple[int, ...]]] = []
            for j in order:
                fits: list[tuple[int, tuple[int, ...]]] = []
                for k in ranked[j]:
                    if costs.run[k] > costs.postpone[j] or len(fits) == width:
                        break  # every later configuration costs more than waiting
                    kind = int(costs.node_type[k])
                    nodes = _fit(free[kind], int(costs.per_node[k]), int(costs.nodes[k]))
                    if nodes is not None:
                        fits.append((k, nodes))
                pick = 0 if r == 0 or len(fits) < 2 else int(rng.integers(len(fits)))
                placed = fits[pick] if fits else None
                if placed is None:
                    total += float(costs.postpone[j])
                    continue
                k, nodes = placed
                free[costs.node_type[k]][list(nodes)] -= costs.per_node[k]
                total += float(costs.run[k])
                chosen.append((j, k, nodes))
            history.append(total)
            if best is None or total < best[0]:
                best, best_restart = (total, chosen), r
        assert best is not None
        run_jobs = {j for j, _, _ in best[1]}
        assignments = tuple(
            Assignment(
                job=instance.jobs[j].job_id,
                node_type=types[int(costs.node_type[k])].name,
                gpus=int(costs.gpus[k]),
                nodes=nodes,
            )
            for j, k, nodes in sorted(best[1])
        )
        postponed = tuple(job.job_id for j, job in enumerate(instance.jobs) if j not in run_jobs)
        return GreedyRun(
            plan=AndreasPlan(assignments, postponed, method="greedy"),
            objective=best[0],
            restarts=self.restarts,
            best_restart=best_restart,
            history=tuple(history),
            seconds=time.perf_counter() - start,
        )

    def _draw(self, pressure: list[int], rng: np.random.Generator) -> list[int]:
        """An order drawn from the restricted candidate lists over ``pressure``."""
        left = list(pressure)
        order: list[int] = []
        while left:  # one job leaves per pass: len(pressure) passes
            pick = int(rng.integers(min(self.candidates, len(left))))
            order.append(left.pop(pick))
        return order

    def __repr__(self) -> str:
        return (
            f"RandomizedGreedy(restarts={self.restarts}, seed={self.seed}, "
            f"candidates={self.candidates})"
        )


def _fit(free: np.ndarray, per_node: int, nodes: int) -> tuple[int, ...] | None:
    """Best-fit nodes for a configuration, or ``None`` when it does not fit."""
    if nodes == 1:
        room = np.flatnonzero(free >= per_node)
        if room.size == 0:
            return None
        return (int(room[np.argmin(free[room])]),)
    whole = np.flatnonzero(free >= per_node)  # per_node is the node size here
    if whole.size < nodes:
        return None
    return tuple(int(v) for v in whole[:nodes])
