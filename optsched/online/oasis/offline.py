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

import dataclasses
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.family.exact import Formulation
from optsched.limits import check_size
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.schedule import Schedule, build_schedule, validate
from optsched.results import ExactResult
from optsched.solvers import DEFAULT_MIP_GAP, BuildClock, SolveResult, Status
from optsched.tolerances import WORK_TOL, leq

__all__ = [
    "CONSTRAINT_NAMES",
    "DEFAULT_MIP_GAP",
    "OBJECTIVE_NAME",
    "POLISH",
    "SEEDS",
    "build_model",
    "can_complete",
    "formulation",
    "seed",
    "solve",
    "solve_offline",
]

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

#: The objective's name in :class:`~optsched.results.ExactResult`.
OBJECTIVE_NAME = "total-utility"


def can_complete(instance: OasisInstance, i: int) -> bool:
    r"""Whether job ``i`` can possibly receive its work :math:`W_i` before the horizon.

    At most :math:`\min(N_i, \sum_h \text{max\_workers}(i, h))` workers run per slot for
    :math:`T - a_i` slots; a job needing more worker-slots (e.g. because ``slot_s`` is so
    short that one minibatch spans millions of slots) can never be admitted. Fixing its
    :math:`x_i = 0` cuts no feasible point and keeps huge coefficients out of the model.
    """
    job = instance.jobs[i]
    per_slot = min(
        job.chunks, sum(instance.max_workers(i, h) for h in range(len(instance.worker_servers)))
    )
    capacity = float(per_slot) * (instance.horizon - job.arrival)
    need = max(float(instance.total_work[i]), 1.0)
    return per_slot > 0 and leq(need, capacity, WORK_TOL)


def build_model(
    instance: OasisInstance, *, relax: bool = False, clock: BuildClock | None = None
) -> Any:
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

    T, H, K = instance.horizon, len(instance.worker_servers), len(instance.ps_servers)
    jobs = range(instance.n_jobs)
    # Size before building: x, c, y and z variables (the constraint rows are of the same order).
    n_vars = sum(float(T - instance.jobs[i].arrival) * (1 + H + K) + 1 for i in jobs)
    check_size("jobs", n_vars, "max_model_variables", what="model variables")
    m = pyo.ConcreteModel(name="oasis_offline")
    # A job that can never complete gets no slots: x_i = 0 by work_requirement.
    slots = {
        i: range(instance.jobs[i].arrival, T) if can_complete(instance, i) else range(0)
        for i in jobs
    }
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
    _tick(clock, "variables")

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
    _tick(clock, "one_completion")
    _work_requirement(m, instance, slots, y_of)
    _tick(clock, "work_requirement")
    _worker_cap(m, instance, slots, y_of)
    _tick(clock, "worker_cap")
    _worker_capacity(m, instance, slots, y_of)
    _tick(clock, "worker_capacity")
    _ps_capacity(m, instance, slots, z_of)
    _tick(clock, "ps_capacity")
    _ps_bandwidth(m, instance, y_of, z_of)
    _tick(clock, "ps_bandwidth")
    _ps_count(m, y_of, z_of)
    return m


def _tick(clock: BuildClock | None, stage: str) -> None:
    if clock is not None:
        clock.check(stage)


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
    from optsched.online.oasis.schedule import validate

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


def solve(
    instance: OasisInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: Schedule | None = None,
    accept_feasible: bool = False,
    relax: bool = False,
) -> ExactResult[Schedule]:
    """Solve the offline OASiS problem exactly (or its LP relaxation).

    Parameters
    ----------
    instance : OasisInstance
    solver : str, default "highs"
        Any MILP solver of :func:`optsched.solvers.available_solvers` (e.g. ``"scip"``).
    time_limit : float, optional
        Seconds, model building included; past it the solver stops with its incumbent and
        bound. Under a limit the best cheap baseline (:func:`seed`) is the MIP start when no
        ``warm_start`` is given, and the incumbent kept when the solver has none or a worse one.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default
        :data:`~optsched.solvers.DEFAULT_MIP_GAP`). A solve stopped at a gap looser than
        :data:`~optsched.tolerances.OPTIMALITY_GAP` is ``feasible``, never ``optimal``.
    threads : int, optional
        Solver threads.
    solver_options : dict, optional
        Solver-specific options passed through (e.g. ``{"mip_max_nodes": 1}`` for HiGHS, a
        deterministic way to stop short).
    warm_start : Schedule, optional
        A feasible schedule (e.g. from OASiS) handed to the solver as a MIP start, so a
        time-limited solve never reports less than it. It must pass
        :func:`~optsched.online.oasis.validate`.
    accept_feasible : bool, default False
        Return a feasible incumbent when a limit stops the solver instead of raising.
    relax : bool, default False
        Solve the LP relaxation instead: ``objective`` (and ``bound``, ``lp_bound``) is its
        value, an upper bound on the optimum, and ``solution`` is ``None``.

    Returns
    -------
    ExactResult of Schedule
        ``objective`` is the solver's total utility of the schedule, checked against the
        independent validator by the exact-solve path (:mod:`optsched.family.exact`;
        ``objective_name`` ``"total-utility"``, ``sense`` ``"max"``); ``bound`` the best
        proven upper bound on the optimum. ``extra["never_completable"]`` names the jobs that
        no schedule can finish within the horizon (see :func:`can_complete`; e.g. every job
        when ``slot_s`` is far shorter than one minibatch), which are rejected.

    Raises
    ------
    NotOptimalError
        Optimality not proven and no incumbent accepted; ``error.result`` is the
        :class:`~optsched.results.ExactResult`, incumbent schedule (if any) included.
    InconsistentResultError
        The solver's schedule fails the validator or its value disagrees with the solver's.
    SolverUnavailableError
        The solver is not installed.
    InvalidInstanceError
        An option is out of range, or the model would exceed the variable budget.

    Notes
    -----
    NP-hard in general (it contains multi-dimensional knapsack). Practical to optimality for
    roughly 10-20 jobs, 10-20 slots and a few servers; see the benchmark for measured sizes.
    An incumbent's completion indicators may sit after a job's last active slot (which
    undercounts its utility); the path's polishing step re-solves with the admissions and
    workers fixed (:data:`POLISH`), so the solver's value is that of the schedule returned.

    Examples
    --------
    >>> from optsched.online.oasis import generate_instance
    >>> inst = generate_instance(3, worker_servers=1, ps_servers=1, horizon=4, seed=1)
    >>> res = solve(inst)
    >>> res.status.value, res.objective == res.solution.total_utility
    ('optimal', True)
    """
    from optsched.family.exact import exact_solve

    _check_arguments(instance, solver, warm_start)
    exact = exact_solve(
        formulation(instance, relax=relax),
        solver=solver.lower(),
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        warm_start=None if relax else warm_start,
        accept_feasible=accept_feasible,
    )
    if relax and exact.lp_bound is not None:
        return dataclasses.replace(exact, bound=exact.lp_bound)
    return exact


#: The variables fixed when an incumbent is polished (the completion indicators stay free).
POLISH = ("x", "y", "z")


def formulation(instance: OasisInstance, *, relax: bool = False) -> Formulation[Schedule]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``."""
    import pyomo.environ  # noqa: F401 - imported before the clock so build time is model time

    size = {"jobs": instance.n_jobs, "horizon": instance.horizon}
    # Jobs no schedule can complete (say why they are rejected, instead of rejecting silently).
    never = [instance.job_name(i) for i in range(instance.n_jobs) if not can_complete(instance, i)]

    def lp_bound(model: Any, result: SolveResult) -> float | None:
        return result.objective if relax and result.status is Status.OPTIMAL else None

    return Formulation(
        sense="max",
        objective_name=OBJECTIVE_NAME,
        # Building counts against the time limit: the clock stops it between stages.
        build=lambda clock: build_model(instance, relax=relax, clock=clock),
        extract=lambda model, _point: None if relax else extract_schedule(model, instance),
        validate=lambda schedule: validate(instance, schedule),
        lp_bound=lp_bound,
        size=size,
        extra={"relaxed": relax, "never_completable": never},
        polish=() if relax else POLISH,
        set_start=lambda model, schedule: set_start(model, instance, schedule),
        mip=not relax,
        seed=None if relax else lambda: seed(instance),
    )


#: The baselines that seed a solve (module ``baselines``): one greedy pass over the slots each,
#: milliseconds where the OASiS algorithm itself takes about a second on 20 jobs.
SEEDS = ("fifo", "drf", "rrh")


def seed(instance: OasisInstance) -> tuple[str, Schedule] | None:
    """The best schedule of the cheap baselines (:data:`SEEDS`), with its name.

    Under a time limit it is the solver's MIP start when no ``warm_start`` is given, and a solve
    stopped at a limit keeps it when the solver's incumbent is worse or missing
    (:mod:`optsched.family.exact`, *Seeding*). ``None`` when no baseline admits a job.
    """
    from optsched.family.exact import seed_from
    from optsched.online.oasis.algorithms import ALGORITHMS

    return seed_from(ALGORITHMS, instance, validate, "max", SEEDS)


def _check_arguments(instance: Any, solver: Any, warm_start: Any) -> None:
    """Refuse bad arguments before the model is built, naming the argument."""
    from optsched.solvers import SOLVERS

    if not isinstance(instance, OasisInstance):
        raise InvalidInstanceError(
            "instance", f"must be an OasisInstance, got {type(instance).__name__}"
        )
    # The model is a Pyomo MILP (its LP relaxation needs no integer support).
    known = sorted(n for n, info in SOLVERS.items() if "pyomo" in info.frontends and info.mip)
    if not isinstance(solver, str) or solver.lower() not in known:
        raise InvalidInstanceError(
            "solver", f"unknown MILP solver {solver!r}; known: {', '.join(known)}"
        )
    if warm_start is not None and not isinstance(warm_start, Schedule):
        raise InvalidInstanceError(
            "warm_start", f"must be a Schedule or None, got {type(warm_start).__name__}"
        )


def solve_offline(
    instance: OasisInstance, solver: str = "highs", **options: Any
) -> ExactResult[Schedule]:
    """Compatibility name of :func:`solve` (``solver`` may be passed by position)."""
    return solve(instance, solver=solver, **options)
