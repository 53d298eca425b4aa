r"""The exact offline OASiS problem as a Pyomo MILP.

The paper's program (1)-(13) (Bao et al., INFOCOM 2018, §III) maximises total utility
:math:`\sum_i x_i f_i(\hat t_i - a_i)` where the completion slot :math:`\hat t_i` is defined by
constraint (8), "the last slot with workers", which is not linear. We linearise it with
completion indicators :math:`c_{it} \in \{0,1\}` ("job :math:`i` finishes at the end of slot
:math:`t`"), the standard time-indexed reformulation (formulations.md §1.11 item 13):

.. math::

    \begin{aligned}
    \max \quad & \sum_i \sum_{t \ge a_i} f_i(t + 1 - a_i)\, c_{it} \\
    \text{s.t.} \quad
    & \textstyle\sum_{t \ge a_i} c_{it} = x_i
        && \forall i                                    && \mathtt{one\_completion} \\
    & \textstyle\sum_{t}\sum_h y_{iht} \ge W_i\, x_i
        && \forall i                                    && \mathtt{work\_requirement}\ (2) \\
    & \textstyle\sum_h y_{iht} \le N_i \sum_{t' \ge t} c_{it'}
        && \forall i, t \ge a_i                         && \mathtt{worker\_cap}\ (3) \\
    & \textstyle\sum_i w_i^r\, y_{iht} \le c_h^r
        && \forall t, h, r                              && \mathtt{worker\_capacity}\ (4) \\
    & \textstyle\sum_i s_i^r\, z_{ikt} \le c_k^r
        && \forall t, k, r                              && \mathtt{ps\_capacity}\ (5) \\
    & \textstyle b_i \sum_h y_{iht} \le B_i \sum_k z_{ikt}
        && \forall i, t \ge a_i                         && \mathtt{ps\_bandwidth}\ (6) \\
    & \textstyle\sum_k z_{ikt} \le \sum_h y_{iht}
        && \forall i, t \ge a_i                         && \mathtt{ps\_count}\ (7)
    \end{aligned}

with :math:`y, z \in \mathbb{Z}_{\ge 0}` and :math:`x, c` binary. Variables exist only for
:math:`t \ge a_i` (constraints (9)-(10) hold by construction). Because :math:`f_i` is
non-increasing, an optimal solution puts :math:`c_{it}` on the true last active slot, so the
objective equals the utility the independent validator recomputes; ``worker_cap`` with the
suffix sum forbids work after the chosen completion and implies (3).

Variable upper bounds are tightened to what fits on one empty server
(:meth:`OasisInstance.max_workers`), which shrinks the branch-and-bound tree without cutting
any feasible point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.jobs.instance import OasisInstance
from optsched.jobs.schedule import Schedule, build_schedule
from optsched.solvers import SolveResult, Status, solve
from optsched.solvers.result import relative_gap

__all__ = ["CONSTRAINT_NAMES", "OfflineResult", "build_model", "solve_offline"]

#: The constraint families of the model, as named in the code and in the docs.
CONSTRAINT_NAMES = (
    "one_completion",
    "work_requirement",
    "worker_cap",
    "worker_capacity",
    "ps_capacity",
    "ps_bandwidth",
    "ps_count",
)

#: Default relative MIP gap: tighter than HiGHS's 1e-4 so "optimal" means optimal for the
#: comparisons optsched makes against online algorithms and brute force.
DEFAULT_MIP_GAP = 1e-7


@dataclass(frozen=True)
class OfflineResult:
    """Outcome of :func:`solve_offline`.

    Attributes
    ----------
    schedule : Schedule or None
        The schedule (``None`` for the LP relaxation or when no point was found).
    objective : float or None
        Total utility of the returned point (the LP value when ``relaxed``).
    bound : float or None
        Proven upper bound on the optimum.
    gap : float or None
        Relative gap between objective and bound.
    status : Status
        Summary status.
    relaxed : bool
        Whether this is the LP relaxation.
    result : SolveResult
        The solver layer's full result (timings, solver, native status).
    """

    schedule: Schedule | None
    objective: float | None
    bound: float | None
    gap: float | None
    status: Status
    relaxed: bool
    result: SolveResult

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (the CLI's ``--json`` output)."""
        out = self.result.to_dict()
        out.update(
            status=self.status.value,
            objective=self.objective,
            bound=self.bound,
            gap=self.gap,
            relaxed=self.relaxed,
            schedule=self.schedule.to_dict() if self.schedule is not None else None,
        )
        return out


def build_model(instance: OasisInstance, *, relax: bool = False) -> Any:
    r"""Build the Pyomo model of the offline problem.

    Parameters
    ----------
    instance : OasisInstance
    relax : bool, default False
        Declare every variable continuous (the LP relaxation).

    Returns
    -------
    pyomo.environ.ConcreteModel
        With variables ``x[i]``, ``c[i, t]``, ``y[i, t, h]``, ``z[i, t, k]`` and one
        ``Constraint`` component per name in :data:`CONSTRAINT_NAMES`.

    Notes
    -----
    Size: :math:`O(\sum_i (T - a_i)(H + K))` variables and
    :math:`O(I T + T (H + K) R)` constraints.
    """
    import pyomo.environ as pyo

    m = pyo.ConcreteModel(name="oasis_offline")
    T, H, K = instance.horizon, len(instance.worker_servers), len(instance.ps_servers)
    jobs = range(instance.n_jobs)
    slots = {i: range(instance.jobs[i].arrival, T) for i in jobs}
    ub_y = {(i, h): instance.max_workers(i, h) for i in jobs for h in range(H)}
    ub_z = {(i, k): instance.max_ps(i, k) for i in jobs for k in range(K)}
    int_dom = pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers
    bin_dom = pyo.UnitInterval if relax else pyo.Binary

    m.JOBS = pyo.Set(initialize=list(jobs), ordered=True)
    m.IT = pyo.Set(dimen=2, initialize=[(i, t) for i in jobs for t in slots[i]], ordered=True)
    m.ITH = pyo.Set(
        dimen=3,
        initialize=[(i, t, h) for i in jobs for t in slots[i] for h in range(H) if ub_y[i, h] > 0],
        ordered=True,
    )
    m.ITK = pyo.Set(
        dimen=3,
        initialize=[(i, t, k) for i in jobs for t in slots[i] for k in range(K) if ub_z[i, k] > 0],
        ordered=True,
    )
    m.x = pyo.Var(m.JOBS, domain=bin_dom)
    m.c = pyo.Var(m.IT, domain=bin_dom)
    m.y = pyo.Var(m.ITH, domain=int_dom, bounds=lambda _m, i, t, h: (0, ub_y[i, h]))
    m.z = pyo.Var(m.ITK, domain=int_dom, bounds=lambda _m, i, t, k: (0, ub_z[i, k]))

    # Index helpers: which (server) variables exist per (job, slot), and per (slot, server).
    y_of: dict[tuple[int, int], list[int]] = {}
    for i, t, h in m.ITH:
        y_of.setdefault((i, t), []).append(h)
    z_of: dict[tuple[int, int], list[int]] = {}
    for i, t, k in m.ITK:
        z_of.setdefault((i, t), []).append(k)

    util = instance.utility_tables
    m.objective = pyo.Objective(
        expr=sum(float(util[i, t]) * m.c[i, t] for i, t in m.IT), sense=pyo.maximize
    )
    _one_completion(m, instance, slots)
    _work_requirement(m, instance, slots, y_of)
    _worker_cap(m, instance, slots, y_of)
    _worker_capacity(m, instance, slots, y_of)
    _ps_capacity(m, instance, slots, z_of)
    _ps_bandwidth(m, instance, y_of, z_of)
    _ps_count(m, y_of, z_of)
    return m


def _one_completion(m: Any, inst: OasisInstance, slots: dict[int, range]) -> None:
    """``one_completion``: an admitted job completes in exactly one slot."""
    import pyomo.environ as pyo

    m.one_completion = pyo.Constraint(
        m.JOBS, rule=lambda _m, i: sum(m.c[i, t] for t in slots[i]) == m.x[i]
    )


def _work_requirement(m: Any, inst: OasisInstance, slots: dict[int, range], y_of: dict) -> None:
    """``work_requirement`` (2): enough worker-slots for :math:`E_i N_i` chunk-epochs."""
    import pyomo.environ as pyo

    need = inst.total_work

    def rule(_m: Any, i: int) -> Any:
        terms = [m.y[i, t, h] for t in slots[i] for h in y_of.get((i, t), ())]
        if not terms:
            return m.x[i] == 0  # no server can host a worker: never admitted
        # At least one worker-slot even for a job with no work: a job completes at the end of
        # its last slot with workers (DESIGN §2.3), so an admitted job needs one.
        return sum(terms) >= max(float(need[i]), 1.0) * m.x[i]

    m.work_requirement = pyo.Constraint(m.JOBS, rule=rule)


def _worker_cap(m: Any, inst: OasisInstance, slots: dict[int, range], y_of: dict) -> None:
    """``worker_cap`` (3): at most :math:`N_i` workers, and none after the completion slot."""
    import pyomo.environ as pyo

    def rule(_m: Any, i: int, t: int) -> Any:
        hs = y_of.get((i, t), ())
        if not hs:
            return pyo.Constraint.Skip
        later = sum(m.c[i, u] for u in range(t, inst.horizon))
        return sum(m.y[i, t, h] for h in hs) <= inst.jobs[i].chunks * later

    m.worker_cap = pyo.Constraint(m.IT, rule=rule)


def _capacity(
    m: Any,
    demand: np.ndarray,
    capacity: np.ndarray,
    var: Any,
    index: Any,
) -> dict[tuple[int, int, int], Any]:
    r"""Collect :math:`\sum_i d_i^r v_{i t s} \le C_s^r` terms per (slot, server, resource)."""
    terms: dict[tuple[int, int], list[tuple[int, Any]]] = {}
    for i, t, s in index:
        terms.setdefault((t, s), []).append((i, var[i, t, s]))
    rows = {}
    for (t, s), items in terms.items():
        for r in range(capacity.shape[1]):
            expr_terms = [(float(demand[i, r]), v) for i, v in items if demand[i, r] > 0]
            if not expr_terms:
                continue
            # Rows with no positive demand are left out (they cannot be violated).
            rows[(t, s, r)] = (expr_terms, float(capacity[s, r]))
    return rows


def _add_capacity(m: Any, name: str, rows: dict) -> None:
    import pyomo.environ as pyo

    keys = sorted(rows)
    setattr(m, f"{name}_index", pyo.Set(dimen=3, initialize=keys, ordered=True))
    index = getattr(m, f"{name}_index")
    setattr(
        m,
        name,
        pyo.Constraint(
            index,
            rule=lambda _m, t, s, r: sum(d * v for d, v in rows[t, s, r][0]) <= rows[t, s, r][1],
        ),
    )


def _worker_capacity(m: Any, inst: OasisInstance, slots: dict, y_of: dict) -> None:
    """``worker_capacity`` (4): per worker server, slot and resource."""
    _add_capacity(
        m, "worker_capacity", _capacity(m, inst.worker_demand, inst.worker_capacity, m.y, m.ITH)
    )


def _ps_capacity(m: Any, inst: OasisInstance, slots: dict, z_of: dict) -> None:
    """``ps_capacity`` (5): per PS server, slot and resource."""
    _add_capacity(m, "ps_capacity", _capacity(m, inst.ps_demand, inst.ps_capacity, m.z, m.ITK))


def _ps_bandwidth(m: Any, inst: OasisInstance, y_of: dict, z_of: dict) -> None:
    """``ps_bandwidth`` (6): the PSs' bandwidth covers the workers' bandwidth."""
    import pyomo.environ as pyo

    def rule(_m: Any, i: int, t: int) -> Any:
        hs, ks = y_of.get((i, t), ()), z_of.get((i, t), ())
        if not hs:
            return pyo.Constraint.Skip
        job = inst.jobs[i]
        return job.b * sum(m.y[i, t, h] for h in hs) <= job.B * sum(m.z[i, t, k] for k in ks)

    m.ps_bandwidth = pyo.Constraint(m.IT, rule=rule)


def _ps_count(m: Any, y_of: dict, z_of: dict) -> None:
    """``ps_count`` (7): no more PSs than workers."""
    import pyomo.environ as pyo

    def rule(_m: Any, i: int, t: int) -> Any:
        ks = z_of.get((i, t), ())
        if not ks:
            return pyo.Constraint.Skip
        hs = y_of.get((i, t), ())
        return sum(m.z[i, t, k] for k in ks) <= sum(m.y[i, t, h] for h in hs)

    m.ps_count = pyo.Constraint(m.IT, rule=rule)


def set_start(m: Any, instance: OasisInstance, schedule: Schedule) -> None:
    """Write a feasible schedule into the model's variables (a MIP start).

    Raises
    ------
    InvalidScheduleError
        The schedule fails the independent validator (a start must be feasible).
    """
    from optsched.jobs.schedule import validate

    validate(instance, schedule).raise_if_invalid()
    for var in (m.x, m.c, m.y, m.z):
        for v in var.values():
            v.set_value(0, skip_validation=True)
    for i, js in enumerate(schedule.jobs):
        if not js.admitted or js.completion is None:
            continue
        m.x[i].set_value(1)
        m.c[i, js.completion - 1].set_value(1)
        for t, h, n in js.workers:
            m.y[i, t, h].set_value(n)
        for t, k, n in js.ps:
            m.z[i, t, k].set_value(n)


def extract_schedule(m: Any, instance: OasisInstance, algorithm: str = "offline-ilp") -> Schedule:
    """Read an integral solution of :func:`build_model` back as a :class:`Schedule`."""
    deployments: list[Any] = []
    workers: dict[int, list[tuple[int, int, int]]] = {}
    ps: dict[int, list[tuple[int, int, int]]] = {}
    for (i, t, h), var in m.y.items():
        v = var.value
        if v is not None and v > 0.5:
            workers.setdefault(i, []).append((t, h, round(v)))
    for (i, t, k), var in m.z.items():
        v = var.value
        if v is not None and v > 0.5:
            ps.setdefault(i, []).append((t, k, round(v)))
    for i in range(instance.n_jobs):
        admitted = (m.x[i].value or 0.0) > 0.5
        deployments.append((workers.get(i, []), ps.get(i, [])) if admitted else None)
    return build_schedule(instance, deployments, algorithm=algorithm)


def solve_offline(
    instance: OasisInstance,
    solver: str = "highs",
    *,
    time_limit: float | None = None,
    mip_gap: float | None = DEFAULT_MIP_GAP,
    relax: bool = False,
    accept_feasible: bool = False,
    threads: int | None = None,
    initial: Schedule | None = None,
) -> OfflineResult:
    """Solve the offline OASiS problem exactly (or its LP relaxation).

    Parameters
    ----------
    instance : OasisInstance
    solver : str, default "highs"
        Any MILP solver of :func:`optsched.solvers.available_solvers`.
    time_limit : float, optional
        Seconds; past it the solver stops with its incumbent and bound.
    mip_gap : float, default 1e-7
        Relative gap at which the solver may declare optimality.
    relax : bool, default False
        Solve the LP relaxation instead: its value is an upper bound on the optimum, usable for
        instances too big to solve exactly. No schedule is returned.
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver (``status`` is then ``feasible``)
        instead of raising.
    threads : int, optional
        Solver threads.
    initial : Schedule, optional
        A feasible schedule (e.g. from OASiS) handed to HiGHS as a MIP start, so a time-limited
        solve never reports less than it. It must pass :func:`~optsched.jobs.validate`.

    Returns
    -------
    OfflineResult

    Raises
    ------
    NotOptimalError
        Optimality not proven and no incumbent accepted (``error.result`` carries the bound).
    SolverUnavailableError
        The solver is not installed.

    Notes
    -----
    NP-hard in general (it contains multi-dimensional knapsack). Practical to optimality for
    roughly 10-20 jobs, 10-20 slots and a few servers; see the benchmark for measured sizes.

    Examples
    --------
    >>> from optsched.jobs.generate import generate_instance
    >>> inst = generate_instance(3, worker_servers=1, ps_servers=1, horizon=4, seed=1)
    >>> res = solve_offline(inst)
    >>> res.status.value
    'optimal'
    """
    import pyomo.environ  # noqa: F401 - imported before the clock so build time is model time

    start = time.perf_counter()
    model = build_model(instance, relax=relax)
    build_seconds = time.perf_counter() - start
    if initial is not None and not relax:
        set_start(model, instance, initial)
    result = solve(
        model,
        solver,
        time_limit=time_limit,
        mip_gap=None if relax else mip_gap,
        threads=threads,
        accept_feasible=accept_feasible,
        build_seconds=build_seconds,
        warmstart=initial is not None and not relax,
    )
    schedule = None
    objective = result.objective
    bound = result.bound
    gap = result.gap
    if result.has_solution and not relax:
        schedule = extract_schedule(model, instance)
        # For an incumbent the completion indicator may sit after a job's last active slot,
        # which undercounts; the schedule's own utility (what the validator recomputes) is the
        # true value of the point, never lower, and equal at the optimum.
        objective = max(objective or 0.0, schedule.total_utility)
        gap = relative_gap(objective, bound)
    if relax and result.objective is not None:
        bound = result.objective
    return OfflineResult(
        schedule=schedule,
        objective=objective,
        bound=bound,
        gap=gap,
        status=result.status,
        relaxed=relax,
        result=result,
    )
