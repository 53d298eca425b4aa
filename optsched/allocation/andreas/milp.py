r"""The exact ANDREAS decision: a MILP over discretised (job, node type, GPUs) choices.

Variables (all binary): :math:`x_{jc}` job :math:`j` runs now in configuration :math:`c`;
:math:`z_j` job :math:`j` is postponed; :math:`y_{jcn}` configuration :math:`c` of job :math:`j`
uses node :math:`n` of its node type :math:`\tau(c)`.

.. math::

    \min\ & \sum_j \Big(\sum_{c \in C_j} \kappa_{jc} x_{jc} + \kappa_{j\varnothing} z_j\Big) \\
    \text{s.t.}\ & \sum_{c \in C_j} x_{jc} + z_j = 1 && \forall j
        && (\texttt{assign}) \\
    & \sum_{n} y_{jcn} = m_c\, x_{jc} && \forall j, c && (\texttt{nodes\_per\_config}) \\
    & \sum_{j, c:\ \tau(c) = \tau} u_c\, y_{jcn} \le F_{\tau n} && \forall \tau, n
        && (\texttt{node\_capacity}) \\
    & \sum_{j, c:\ \tau(c) = \tau} g_c\, x_{jc} \le \sum_n F_{\tau n} && \forall \tau
        && (\texttt{type\_capacity, implied})

with :math:`\kappa` the decision costs (:mod:`optsched.allocation.andreas.costs`), :math:`m_c` the
nodes
a configuration takes (1, or :math:`g_c / G_\tau` whole nodes), :math:`u_c = \min(g_c, G_\tau)`
the GPUs it takes on each, :math:`F_{\tau n} = G_\tau - U_{\tau n}` the free GPUs of a node.
:math:`y_{jcn}` is fixed to 0 where :math:`u_c > F_{\tau n}`. The implied aggregate row only
tightens the LP relaxation.

Size: :math:`C + J + \sum_c N_{\tau(c)}` columns and :math:`J + C + \sum_\tau N_\tau + T` rows,
checked against ``max_model_variables`` before any array is built; the matrix goes straight to
HiGHS (:func:`optsched.solvers.highs.solve_matrix`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched import limits
from optsched.allocation.andreas.costs import decision_costs
from optsched.allocation.andreas.instance import AndreasInstance
from optsched.allocation.andreas.plan import AndreasPlan, Assignment
from optsched.allocation.andreas.validate import validate
from optsched.family.exact import AlgorithmBackend, Formulation
from optsched.results import ExactResult, Report
from optsched.solvers import BuildClock, LinearProgram, MatrixSolution

__all__ = ["formulation", "seed", "solve"]


def solve(
    instance: AndreasInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: MatrixSolution | None = None,
    accept_feasible: bool = False,
) -> ExactResult[AndreasPlan]:
    """Solve one scheduling point exactly (the MILP of the module notes).

    Parameters
    ----------
    instance : AndreasInstance
    solver : str, default "highs"
        The matrix is handed to the matrix solver layer with this name (``"scip"`` where it
        is supported).
    time_limit, mip_gap, threads, solver_options, accept_feasible
        As for every family's ``solve`` (:func:`optsched.family.exact.exact_solve`; model
        building counts against ``time_limit``).
    warm_start : MatrixSolution, optional
        A previous solution of the same model (its point is a MIP start).

    Returns
    -------
    ExactResult of AndreasPlan
        ``objective`` is the plan's total cost, the solver's, checked against :func:`validate`
        by the exact-solve path; ``extra["energy"]``/``extra["tardiness"]`` split it.

    Raises
    ------
    InvalidInstanceError
        A model over the ``max_model_variables`` budget, or an option out of range.
    SolverUnavailableError
        The matrix solver layer cannot use ``solver``.
    NotOptimalError
        Not proven optimal and not accepted; ``error.result`` is the ExactResult with the
        incumbent plan when the solver had one.

    Examples
    --------
    >>> from optsched.allocation.andreas import generate_instance
    >>> res = solve(generate_instance(4, seed=0))
    >>> res.status.value, res.solution.method
    ('optimal', 'milp')
    """
    from optsched.family.exact import exact_solve

    return exact_solve(
        formulation(instance),
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        warm_start=warm_start,
        accept_feasible=accept_feasible,
    )


@dataclass(frozen=True)
class _Built:
    """The matrix model and what maps its columns back to assignments."""

    lp: LinearProgram | AlgorithmBackend
    costs: Any
    y_cfg: np.ndarray
    y_node: np.ndarray
    y_col: np.ndarray


def formulation(instance: AndreasInstance) -> Formulation[AndreasPlan]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``."""
    from functools import partial

    report_of: dict[str, Any] = {}

    def check(plan: AndreasPlan) -> Report:
        report_of["report"] = report = validate(instance, plan)
        return report

    def extra(_built: _Built, plan: AndreasPlan | None, _result: Any) -> dict[str, Any]:
        report = report_of.get("report")
        return {} if plan is None or report is None else dict(report.objectives)

    return Formulation(
        sense="min",
        objective_name="energy-plus-tardiness",
        build=partial(_build, instance),
        extract=partial(_extract, instance),
        validate=check,
        extra=extra,
        solvable=lambda built: built.lp,
        seed=lambda: seed(instance),
    )


def _build(instance: AndreasInstance, clock: BuildClock) -> _Built:
    """The MILP of ``instance`` (the module notes), within the model-size budget."""
    from optsched.family.exact import closed_form

    types = instance.node_types
    costs = decision_costs(instance)
    n_jobs, n_cfg = instance.n_jobs, int(costs.run.size)
    node_counts = np.array([t.nodes for t in types], dtype=np.int64)
    n_y = int(node_counts[costs.node_type].sum()) if n_cfg else 0
    n_nodes = int(node_counts.sum())
    limits.check_size(
        "jobs",
        float(n_cfg + n_jobs + n_y) + float(n_jobs + n_cfg + n_nodes + len(types)),
        "max_model_variables",
        "variables and rows",
    )
    none = np.zeros(0, dtype=np.int64)
    if n_jobs == 0:  # nothing to schedule: the empty plan, proven optimal
        return _Built(closed_form(0.0, None, name="no jobs"), costs, none, none, none)
    return _milp(instance, costs, node_counts, n_y, n_nodes, clock)


def _milp(
    instance: AndreasInstance,
    costs: Any,
    node_counts: np.ndarray,
    n_y: int,
    n_nodes: int,
    clock: BuildClock,
) -> _Built:
    """The matrix, its bounds and costs: one block of rows per constraint of the module notes."""
    import scipy.sparse as sp

    types = instance.node_types
    n_jobs, n_cfg = instance.n_jobs, int(costs.run.size)
    # Columns: x (n_cfg) | z (n_jobs) | y (n_y, grouped by configuration, node order).
    free = [np.array([t.free(n) for n in range(t.nodes)], dtype=np.int64) for t in types]
    node_row0 = np.concatenate([[0], np.cumsum(node_counts)])  # first capacity row of a type
    y_cfg = np.repeat(np.arange(n_cfg), node_counts[costs.node_type])
    y_node = np.concatenate(
        [np.arange(node_counts[costs.node_type[k]]) for k in range(n_cfg)]
    ).astype(np.int64)
    y_type = costs.node_type[y_cfg]
    y_col = n_cfg + n_jobs + np.arange(n_y)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    # assign: rows 0..n_jobs-1
    rows += [costs.job, np.arange(n_jobs)]
    cols += [np.arange(n_cfg), n_cfg + np.arange(n_jobs)]
    vals += [np.ones(n_cfg), np.ones(n_jobs)]
    # nodes_per_config: rows n_jobs + k
    r0 = n_jobs
    rows += [r0 + np.arange(n_cfg), r0 + y_cfg]
    cols += [np.arange(n_cfg), y_col]
    vals += [-costs.nodes.astype(np.float64), np.ones(n_y)]
    # node_capacity: rows r1 + (first node row of the type) + node
    r1 = r0 + n_cfg
    rows.append(r1 + node_row0[y_type] + y_node)
    cols.append(y_col)
    vals.append(costs.per_node[y_cfg].astype(np.float64))
    # type_capacity (implied): rows r2 + type
    r2 = r1 + n_nodes
    rows.append(r2 + costs.node_type)
    cols.append(np.arange(n_cfg))
    vals.append(costs.gpus.astype(np.float64))
    n_rows = r2 + len(types)
    n_cols = n_cfg + n_jobs + n_y
    a = sp.csc_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_rows, n_cols),
    )
    cap = np.concatenate(free) if n_nodes else np.zeros(0)
    type_cap = np.array([float(f.sum()) for f in free])
    row_lower = np.concatenate(
        [
            np.ones(n_jobs),
            np.zeros(n_cfg),
            np.full(n_nodes, -np.inf),
            np.full(len(types), -np.inf),
        ]
    )
    row_upper = np.concatenate([np.ones(n_jobs), np.zeros(n_cfg), cap, type_cap])
    y_fits = costs.per_node[y_cfg] <= np.concatenate(free)[node_row0[y_type] + y_node]
    col_upper = np.concatenate([np.ones(n_cfg + n_jobs), y_fits.astype(np.float64)])
    c = np.concatenate([costs.run, costs.postpone, np.zeros(n_y)])
    lp = LinearProgram(
        c,
        a,
        row_lower,
        row_upper,
        0.0,
        col_upper,
        sense="min",
        integrality=np.ones(n_cols, bool),
    )
    clock.check("model")
    return _Built(lp, costs, y_cfg, y_node, y_col)


def _extract(instance: AndreasInstance, built: _Built, point: MatrixSolution | None) -> AndreasPlan:
    """The plan a MILP point describes (no point: the empty plan)."""
    types = instance.node_types
    if point is None or point.x is None:
        return AndreasPlan((), (), method="milp")
    x, costs = point.x, built.costs
    assignments: list[Assignment] = []
    postponed: list[str] = []
    for j, job in enumerate(instance.jobs):
        chosen = [k for k in range(costs.first[j], costs.first[j + 1]) if x[k] > 0.5]
        if not chosen:
            postponed.append(job.job_id)
            continue
        k = chosen[0]
        used = built.y_node[(built.y_cfg == k) & (x[built.y_col] > 0.5)]
        assignments.append(
            Assignment(
                job=job.job_id,
                node_type=types[int(costs.node_type[k])].name,
                gpus=int(costs.gpus[k]),
                nodes=tuple(int(n) for n in used),
            )
        )
    return AndreasPlan(tuple(assignments), tuple(postponed), method="milp")


def seed(instance: AndreasInstance) -> tuple[str, AndreasPlan] | None:
    """ANDREAS's randomised greedy (default restarts, seed 0), with its name, if valid.

    What a solve stopped by a limit keeps when the solver has no better incumbent
    (:mod:`optsched.family.exact`, *Seeding*).
    """
    from optsched.allocation.andreas.algorithms import ALGORITHMS
    from optsched.family.exact import seed_from

    return seed_from(ALGORITHMS, instance, validate, "min")
