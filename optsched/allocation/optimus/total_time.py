r"""The exact allocation for the same models: minimum total remaining time, as a MILP.

.. math::

    \min_{y}\ \sum_j \sum_{(p, w) \in K_j} \frac{Q_j}{f_j(p, w)}\, y_{jpw}
    \quad\text{s.t.}\quad
    \sum_{(p, w) \in K_j} y_{jpw} = 1\ \ \forall j\ (\texttt{one\_choice}),\qquad
    \sum_j \sum_{(p, w) \in K_j} (s_j^r p + d_j^r w)\, y_{jpw} \le C^r\ \ \forall r\
    (\texttt{capacity}),\qquad y_{jpw} \in \{0, 1\},

with :math:`K_j = \{1..\bar P_j\} \times \{1..\bar W_j\}`. One binary per (job, PS count, worker
count): every integral allocation is exactly one 0/1 point of this model and vice versa, and the
objective of that point *is* the allocation's total remaining time, evaluated at the integers. So
the MILP's optimum is the optimum of the integer program itself, whatever the shape of
:math:`f_j` (no concavity or piecewise-linear approximation is needed; Optimus's speed models are
not concave in :math:`(p, w)` jointly anyway). HiGHS proves it within
:data:`~optsched.tolerances.OPTIMALITY_GAP`.

Choices dominated within a job are removed before building (a choice that costs at least as much
of every resource as another and saves no time is never needed in an optimum), which keeps the
model small without changing its optimum. Size: at most :math:`\sum_j \bar P_j \bar W_j` columns
and :math:`J + R` rows, checked against ``max_model_variables`` before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.allocation.optimus.instance import OptimusInstance
from optsched.allocation.optimus.models import speed
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.family.exact import AlgorithmBackend, Formulation
from optsched.results import ExactResult
from optsched.solvers import BuildClock, LinearProgram, MatrixSolution
from optsched.tolerances import FIT_TOL

__all__ = ["choices", "formulation", "seed", "solve"]


def choices(
    instance: OptimusInstance, j: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Job ``j``'s undominated choices: ``(ps, workers, remaining time, resource use)``.

    A choice is dropped when another uses no more of any resource and takes no longer
    (ties kept once). Complexity :math:`O(K^2 R)` for :math:`K` choices.
    """
    job = instance.jobs[j]
    pp, ww = np.meshgrid(
        np.arange(1, job.max_ps + 1), np.arange(1, job.max_workers + 1), indexing="ij"
    )
    p, w = pp.ravel(), ww.ravel()
    cost = job.remaining / speed(job.speed_kind, job.theta, p, w, job.batch)
    use = np.outer(p, job.ps_demand) + np.outer(w, job.worker_demand)
    # Every choice fits alone in the capacity left by the other jobs' minimum, or is useless.
    others = instance.capacities - sum(
        (
            np.asarray(o.ps_demand) + np.asarray(o.worker_demand)
            for i, o in enumerate(instance.jobs)
            if i != j
        ),
        start=np.zeros(instance.capacities.size),
    )
    keep = np.all(use <= others[None, :] + FIT_TOL * np.maximum(1.0, others), axis=1)
    p, w, cost, use = p[keep], w[keep], cost[keep], use[keep]
    # Dominance: in order of (time, total use), a choice is dropped when an earlier one uses at
    # most as much of everything. Dominance is transitive, so "dominated by an earlier choice"
    # equals "dominated by an earlier kept choice": one vectorised K x K x R comparison.
    order = np.lexsort((use.sum(axis=1), cost))
    u = use[order]
    k = u.shape[0]
    limits.check_size(f"jobs[{j}].max_workers", float(k) * k * u.shape[1], "max_array_cells")
    covers = np.all(u[None, :, :] <= u[:, None, :], axis=2)  # covers[a, b]: b uses <= a
    dominated = np.any(np.tril(covers, k=-1), axis=1)
    sel = np.sort(order[~dominated])
    return p[sel], w[sel], cost[sel], use[sel]


def solve(
    instance: OptimusInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: MatrixSolution | None = None,
    accept_feasible: bool = False,
    node_limit: int | None = None,
) -> ExactResult[OptimusAllocation]:
    """The allocation of least total remaining time (the MILP of the module notes).

    Parameters
    ----------
    instance : OptimusInstance
    solver : str, default "highs"
        The MILP is built as sparse matrices (:class:`~optsched.solvers.LinearProgram`) and
        handed to the matrix solver layer with this name (``"scip"`` where it is supported).
    time_limit, mip_gap, threads, solver_options, accept_feasible
        As for every family's ``solve`` (:func:`optsched.family.exact.exact_solve`).
    warm_start : MatrixSolution, optional
        A previous solution of the same model (its point is a MIP start).
    node_limit : int, optional
        Branch-and-bound nodes allowed (deterministic; to make a solve stop short in tests);
        short for ``solver_options={"mip_max_nodes": node_limit}``.

    Returns
    -------
    ExactResult of OptimusAllocation
        ``objective`` the total remaining time (seconds), the solver's, checked against the
        validator by the exact-solve path.

    Raises
    ------
    NotOptimalError
        Not proven optimal and not accepted; carries the result with its incumbent.
    InvalidInstanceError
        The model would exceed ``max_model_variables``; an option out of range.
    SolverUnavailableError
        The matrix solver layer cannot use ``solver``.

    Examples
    --------
    >>> from optsched.allocation.optimus import generate_instance, marginal_gain, validate
    >>> inst = generate_instance(4, seed=0)
    >>> res = solve(inst)
    >>> res.optimal, res.objective <= validate(inst, marginal_gain(inst)).objective
    (True, True)
    """
    from optsched.family.exact import exact_solve, native_options

    limit = {} if node_limit is None else {"mip_max_nodes": int(node_limit)}
    native = native_options(solver_options, **limit)
    return exact_solve(
        formulation(instance),
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=native,
        warm_start=warm_start,
        accept_feasible=accept_feasible,
    )


@dataclass(frozen=True)
class _Built:
    """The matrix model and what maps its columns back to (job, ps, workers)."""

    lp: LinearProgram | AlgorithmBackend
    owner: NDArray[np.int64]
    ps: NDArray[np.int64]
    workers: NDArray[np.int64]


def formulation(instance: OptimusInstance) -> Formulation[OptimusAllocation]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``."""
    from optsched.allocation.optimus.validate import validate
    from optsched.family.exact import closed_form

    job_ids = tuple(j.job_id for j in instance.jobs)

    def build(clock: BuildClock) -> _Built:
        none = np.zeros(0, dtype=np.int64)
        if instance.n_jobs == 0:  # nothing to allocate: the empty allocation, proven optimal
            return _Built(closed_form(0.0, None, name="no jobs"), none, none, none)
        size = sum(float(j.max_ps) * j.max_workers for j in instance.jobs)
        limits.check_size("jobs", size, "max_model_variables", "(job, ps, workers) choices")
        per_job = [choices(instance, j) for j in range(instance.n_jobs)]
        clock.check("choices")
        counts = [c[0].size for c in per_job]
        n = int(sum(counts))
        owner = np.repeat(np.arange(instance.n_jobs), counts)
        cost = np.concatenate([c[2] for c in per_job]) if n else np.zeros(0)
        use = np.vstack([c[3] for c in per_job]) if n else np.zeros((0, len(instance.resources)))
        import scipy.sparse as sp

        r = use.shape[1]
        cols = np.arange(n)
        rows = np.concatenate([owner, *(instance.n_jobs + np.full(n, k) for k in range(r))])
        vals = np.concatenate([np.ones(n), *(use[:, k] for k in range(r))])
        a = sp.csc_array(
            (vals, (rows, np.concatenate([cols] * (r + 1)))), shape=(instance.n_jobs + r, n)
        )
        lower = np.concatenate([np.ones(instance.n_jobs), np.full(r, -np.inf)])
        upper = np.concatenate([np.ones(instance.n_jobs), instance.capacities])
        lp = LinearProgram(
            cost, a, lower, upper, 0.0, 1.0, sense="min", integrality=np.ones(n, dtype=bool)
        )
        ps = np.concatenate([c[0] for c in per_job])
        workers = np.concatenate([c[1] for c in per_job])
        return _Built(lp, owner, ps, workers)

    def extract(built: _Built, point: MatrixSolution | None) -> OptimusAllocation:
        ps = np.zeros(instance.n_jobs, dtype=np.int64)
        workers = np.zeros(instance.n_jobs, dtype=np.int64)
        if point is not None and point.x is not None:
            chosen = point.x > 0.5
            ps[built.owner[chosen]] = built.ps[chosen]
            workers[built.owner[chosen]] = built.workers[chosen]
        return OptimusAllocation(
            job_ids=job_ids,
            ps=tuple(int(v) for v in ps),
            workers=tuple(int(v) for v in workers),
            algorithm="milp",
        )

    def size(built: _Built) -> dict[str, int]:
        if isinstance(built.lp, AlgorithmBackend):
            return {"variables": 0, "constraints": 0}
        return {"variables": built.lp.n_variables, "constraints": built.lp.n_rows}

    return Formulation(
        sense="min",
        objective_name="total-remaining-time",
        build=build,
        extract=extract,
        validate=lambda allocation: validate(instance, allocation),
        size=size,
        extra=lambda built, *_: {"choices": int(built.owner.size)},
        solvable=lambda built: built.lp,
        seed=lambda: seed(instance),
    )


def seed(instance: OptimusInstance) -> tuple[str, OptimusAllocation] | None:
    """Optimus's marginal-gain allocation, with its name, if valid.

    What a solve stopped by a limit keeps when the solver has no better incumbent
    (:mod:`optsched.family.exact`, *Seeding*).
    """
    from optsched.allocation.optimus.algorithms import ALGORITHMS
    from optsched.allocation.optimus.validate import validate
    from optsched.family.exact import seed_from

    return seed_from(ALGORITHMS, instance, validate, "min")
