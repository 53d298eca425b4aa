r"""The exact model of one lease boundary (formulations.md §6.5) as a MILP built into HiGHS.

.. math::

    \max\ & \sum_{j \in S} a_j + \varepsilon \sum_{b \in B} w_b f_b \\
    \text{s.t. } & \sum_{j \in S} G_j x_{j\ell k} + \sum_{b \in B} G_b y_{b\ell k} \le C_{\ell k}
        && \forall \ell, k && (\texttt{capacity}) \\
    & \sum_k x_{j\ell k} \le a_j && \forall j \in S, \ell \le d_j
        && (\texttt{admitted\_only}, \texttt{one\_type\_per\_lease}) \\
    & \sum_k y_{b\ell k} \le 1 && \forall b \in B, \ell && (\texttt{one\_type\_per\_lease}) \\
    & \sum_{\ell \le d_j} \sum_k \min(s_{jk}, R_j)\, x_{j\ell k} \ge R_j a_j && \forall j \in S
        && (\texttt{finish\_by\_deadline}) \\
    & R_b f_b \le \sum_{\ell, k} \min(s_{bk}, R_b)\, y_{b\ell k} && \forall b \in B
        && (\texttt{be\_progress}) \\
    & a_j = 1 && \forall j \in S \text{ guaranteed} && (\texttt{keep\_guaranteed}) \\
    & a, x, y \in \{0, 1\},\ f \in [0, 1],

with :math:`\varepsilon = 1/(1 + \sum_b w_b)` (:attr:`LeaseInstance.epsilon`), so that the
best-effort term is worth less than one admission. The grant of job :math:`j` in lease
:math:`\ell` is :math:`n_{j\ell} = G_j \sum_k x_{j\ell k} \in \{0, G_j\}`. Variables that cannot
help are not created: :math:`x_{j\ell k}` after the deadline :math:`d_j` (progress then counts
for nothing), and every :math:`x, y` on a type where the job's speed is 0 or its gang exceeds
the lease's GPUs of that type. Capping a coefficient at :math:`R_j` does not change the
feasible :math:`(a, x)`: one lease of speed :math:`\ge R_j` finishes the job either way.

Size: :math:`(|S| + |B|) L K + |S| + |B|` columns, :math:`LK + (|S| + |B|) L + |S| + |B|` rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optsched import limits
from optsched.allocation.chronus.instance import LeaseInstance
from optsched.allocation.chronus.plan import LeasePlan
from optsched.allocation.chronus.validate import validate
from optsched.family.exact import Formulation
from optsched.results import ExactResult
from optsched.solvers import BuildClock, LinearProgram, MatrixSolution

__all__ = ["build_milp", "formulation", "seed", "solve"]

#: Name of the objective in results.
OBJECTIVE = "admitted-slo-jobs"


def _columns(instance: LeaseInstance) -> list[tuple[str, str, int, int]]:
    """Every grant variable: ``(kind, job_id, lease, type)`` (kind ``x`` or ``y``)."""
    cols: list[tuple[str, str, int, int]] = []
    for kind, jobs in (("x", instance.slo_jobs), ("y", instance.best_effort)):
        for job in jobs:
            last = job.deadline if kind == "x" else instance.n_leases - 1  # type: ignore[union-attr]
            for ell in range(last + 1):
                for k in range(instance.n_types):
                    if job.speed[k] > 0 and job.gang <= instance.capacity[ell][k]:
                        cols.append((kind, job.job_id, ell, k))
    return cols


def build_milp(instance: LeaseInstance) -> tuple[LinearProgram, list[tuple[str, str, int, int]]]:
    """The MILP above as a :class:`~optsched.solvers.LinearProgram`, and its grant columns.

    Columns: ``a`` (one per SLO job), ``f`` (one per best-effort job), then the grants in the
    order of the returned list. The size is checked against ``max_model_variables`` before any
    array is allocated.

    Raises
    ------
    InvalidInstanceError
        The model is larger than the budget.
    """
    import scipy.sparse as sp

    slo, be = instance.slo_jobs, instance.best_effort
    n_s, n_b, big_l, big_k = len(slo), len(be), instance.n_leases, instance.n_types
    limits.check_size(
        "slo_jobs",
        float(n_s + n_b) * big_l * (big_k + 1) + big_l * big_k + 2.0 * (n_s + n_b),
        "max_model_variables",
        "variables and rows",
    )
    cols = _columns(instance)
    n = n_s + n_b + len(cols)
    s_index = {j.job_id: i for i, j in enumerate(slo)}
    b_index = {b.job_id: i for i, b in enumerate(be)}
    spec = {j.job_id: j for j in (*slo, *be)}
    rows: list[int] = []
    cidx: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    # capacity rows: one per (lease, type)
    for _ in range(big_l * big_k):
        lower.append(-np.inf)
    upper.extend(float(c) for row in instance.capacity for c in row)
    r_cap = 0
    # admitted_only / one_type_per_lease rows: one per (job, lease)
    r_one = big_l * big_k
    lower.extend([-np.inf] * ((n_s + n_b) * big_l))
    upper.extend([0.0] * (n_s * big_l) + [1.0] * (n_b * big_l))
    for i in range(n_s):  # - a_j in its rows
        for ell in range(big_l):
            rows.append(r_one + i * big_l + ell)
            cidx.append(i)
            vals.append(-1.0)
    # finish_by_deadline rows, then be_progress rows
    r_fin = r_one + (n_s + n_b) * big_l
    lower.extend([0.0] * n_s)
    upper.extend([np.inf] * n_s)
    for i, j in enumerate(slo):
        rows.append(r_fin + i)
        cidx.append(i)
        vals.append(-float(j.remaining))
    r_be = r_fin + n_s
    lower.extend([-np.inf] * n_b)
    upper.extend([0.0] * n_b)
    for i, b in enumerate(be):
        rows.append(r_be + i)
        cidx.append(n_s + i)
        vals.append(float(b.remaining))
    for c, (kind, job_id, ell, k) in enumerate(cols):
        col = n_s + n_b + c
        job = spec[job_id]
        rows.append(r_cap + ell * big_k + k)
        cidx.append(col)
        vals.append(float(job.gang))
        pos = s_index[job_id] if kind == "x" else n_s + b_index[job_id]
        rows.append(r_one + pos * big_l + ell)
        cidx.append(col)
        vals.append(1.0)
        gain = float(min(job.speed[k], job.remaining))
        if kind == "x":
            rows.append(r_fin + s_index[job_id])
            vals.append(gain)
        else:
            rows.append(r_be + b_index[job_id])
            vals.append(-gain)
        cidx.append(col)
    n_rows = len(lower)
    a = sp.csc_array((np.asarray(vals), (np.asarray(rows), np.asarray(cidx))), shape=(n_rows, n))
    c_vec = np.zeros(n)
    c_vec[:n_s] = 1.0
    c_vec[n_s : n_s + n_b] = [instance.epsilon * b.weight for b in be]
    col_lower = np.zeros(n)
    col_lower[:n_s] = [1.0 if j.guaranteed else 0.0 for j in slo]
    col_upper = np.ones(n)
    integrality = np.ones(n, dtype=bool)
    integrality[n_s : n_s + n_b] = False
    lp = LinearProgram(
        c_vec,
        a,
        np.asarray(lower),
        np.asarray(upper),
        col_lower,
        col_upper,
        sense="max",
        integrality=integrality,
    )
    return lp, cols


def solve(
    instance: LeaseInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: MatrixSolution | None = None,
    accept_feasible: bool = False,
    node_limit: int | None = None,
) -> ExactResult[LeasePlan]:
    r"""Solve one lease boundary's decision exactly (the MILP of the module notes).

    Parameters
    ----------
    instance : LeaseInstance
    solver : str, default "highs"
        The model is built as matrices and handed to the matrix solver layer with this name
        (``"scip"`` where it is supported).
    time_limit, mip_gap, threads, solver_options, accept_feasible
        As for every family (:func:`optsched.family.exact.exact_solve`; model building counts
        against ``time_limit``).
    warm_start : MatrixSolution, optional
        A previous solution of the same model (its point is a MIP start).
    node_limit : int, optional
        HiGHS's branch-and-bound node limit (deterministic: how tests make it stop short);
        short for ``solver_options={"mip_max_nodes": node_limit}``.

    Returns
    -------
    ExactResult of LeasePlan
        ``objective`` is the admitted count plus :math:`\varepsilon` times the weighted
        best-effort progress, the solver's, checked against
        :func:`~optsched.allocation.chronus.validate` by the exact-solve path;
        ``extra["admitted"]`` is the admitted count.

    Raises
    ------
    NotOptimalError
        Not proven optimal (and no incumbent accepted), or infeasible: the guaranteed jobs
        cannot all finish by their deadlines (status ``infeasible``); ``error.result`` is the
        :class:`~optsched.results.ExactResult`.
    InvalidInstanceError
        An option out of range, or the model exceeds its budget.
    SolverUnavailableError
        The matrix solver layer cannot use ``solver``.

    Notes
    -----
    An incumbent that is not proven optimal may leave some progress :math:`f_b` below its cap;
    the exact-solve path polishes every incumbent (integer columns fixed, the progress
    re-optimised), so the solver's objective is the value of the plan returned.

    Examples
    --------
    >>> from optsched.allocation.chronus import generate_instance
    >>> res = solve(generate_instance(4, 2, leases=4, seed=0))
    >>> res.status.value, res.extra["admitted"] <= 4
    ('optimal', True)
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


def formulation(instance: LeaseInstance) -> Formulation[LeasePlan]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``."""
    n_s, n_b = len(instance.slo_jobs), len(instance.best_effort)

    def build(clock: BuildClock) -> tuple[LinearProgram, Any]:
        built = build_milp(instance)
        clock.check("model")
        return built

    def extract(built: tuple[LinearProgram, Any], point: MatrixSolution) -> LeasePlan:
        assert point.x is not None  # the path extracts only a solve with a point
        x, cols = point.x, built[1]
        admitted = tuple(j.job_id for i, j in enumerate(instance.slo_jobs) if x[i] > 0.5)
        grants = tuple(
            (job_id, ell, instance.gpu_types[k])
            for c, (_kind, job_id, ell, k) in enumerate(cols)
            if x[n_s + n_b + c] > 0.5
        )
        return LeasePlan(admitted=admitted, grants=grants, algorithm="milp")

    return Formulation(
        sense="max",
        objective_name=OBJECTIVE,
        build=build,
        extract=extract,
        validate=lambda plan: validate(instance, plan),
        size=lambda built: {"variables": built[0].n_variables, "constraints": built[0].n_rows},
        extra=lambda _built, plan, _result: (
            {} if plan is None else {"admitted": len(plan.admitted)}
        ),
        polish=True,
        solvable=lambda built: built[0],
        seed=lambda: seed(instance),
    )


def seed(instance: LeaseInstance) -> tuple[str, LeasePlan] | None:
    """The better plan of Chronus's greedy and EDF (each O(jobs x leases)), with its name.

    What a solve stopped by a limit keeps when the solver has no better incumbent
    (:mod:`optsched.family.exact`, *Seeding*); a plan the validator refuses (EDF may drop a
    guaranteed job) is skipped.
    """
    from optsched.allocation.chronus.algorithms import ALGORITHMS
    from optsched.family.exact import seed_from

    return seed_from(ALGORITHMS, instance, validate, "max")
