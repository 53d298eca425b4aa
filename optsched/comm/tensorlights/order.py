r"""The exact best static priority order, and Smith's rule beside it.

:func:`solve` is the family's exact entry point: it simulates coordinated strict priority under
every permutation of the jobs (the static orders) and returns the best as an
:class:`~optsched.results.ExactResult` whose solution is the simulated run in that order. It is
``optimal`` only when every one of the :math:`J!` orders was simulated; stopped by
``node_limit`` or ``time_limit`` it returns its incumbent marked ``feasible``, with a proven
lower bound (:func:`lower_bound`) and the gap to it. :func:`smith_order` is the ratio rule
[Smith1956]_,
provably optimal on the instances recognised by :func:`smith_rule_is_optimal`.

References
----------
.. [Smith1956] W. E. Smith. "Various optimizers for single-stage production." Naval Research
   Logistics Quarterly 3(1-2), 1956 (the ratio rule for :math:`1 \,\|\, \sum w_j C_j`).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np

import optsched.comm.tensorlights.kernel as _k
from optsched import limits
from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.comm.tensorlights.simulator import Engine, event_bound, layout, levels, simulate
from optsched.comm.tensorlights.solution import OBJECTIVES, Objective, SimulationResult
from optsched.comm.tensorlights.validator import validate
from optsched.errors import InvalidInstanceError
from optsched.family.exact import AlgorithmBackend, Formulation, SolveSettings
from optsched.results import ExactResult
from optsched.solvers.result import SolutionStatus, SolveResult, TerminationCondition, assemble

__all__ = ["formulation", "lower_bound", "smith_order", "smith_rule_is_optimal", "solve"]

#: Relative tolerance when comparing objective values of orders (ties go to the first order).
OBJECTIVE_RTOL = 1e-9
#: Name of the method in :attr:`ExactResult.solver`.
SOLVER_NAME = "tensorlights-enumeration"


def smith_order(
    instance: TensorLightsInstance, objective: Objective = "weighted-jct"
) -> tuple[int, ...]:
    r"""Jobs by Smith's ratio :math:`I_j \tau_j / w_j` ascending (ties by index).

    :math:`I_j \tau_j` is the job's total NIC time alone. For ``"mean-jct"`` every weight is 1
    (shortest total broadcast time first); for ``"weighted-jct"`` and ``"makespan"`` the job
    weights are used.
    """
    work = instance.alone_comm_time() * np.array([j.iterations for j in instance.jobs])
    if objective == "mean-jct":
        ratio = work
    else:
        ratio = work / np.array([j.weight for j in instance.jobs])
    return tuple(int(j) for j in np.lexsort((np.arange(instance.n_jobs), ratio)))


def smith_rule_is_optimal(instance: TensorLightsInstance, objective: Objective) -> bool:
    r"""Whether :func:`smith_order` is a proven optimal static order for ``objective``.

    True for ``"mean-jct"`` and ``"weighted-jct"`` when every job has one PS shard, all jobs
    start together, and either every compute time is 0 or every job runs one iteration after a
    common compute time.

    Notes
    -----
    Proof. Let every job start at :math:`s` and first need the NIC at :math:`r = s + c`. Under
    strict priority on a host, the most urgent job with an unfinished flow receives the whole
    NIC, and such a job never pauses: with :math:`c_j = 0` its next broadcast starts the instant
    the previous one ends, and with :math:`I_j = 1` there is no next one. So on each host the
    jobs hold the NIC one after another in priority order, and the :math:`k`-th of them
    completes at :math:`C_{\pi(k)} = r + \sum_{l \le k} I_{\pi(l)} \tau_{\pi(l)}`: this is
    :math:`1 \,\|\, \sum w_j C_j` with processing times :math:`I_j \tau_j`, minimised by Smith's
    ratio rule (an adjacent exchange of two jobs out of ratio order lowers the objective).
    Hosts do not interact because every job uses one host, and the restriction of the global
    Smith order to each host is that host's Smith order. Jitter changes how a job's own flows
    share the NIC, not when its last flow finishes. :math:`\square`
    """
    if objective not in ("mean-jct", "weighted-jct"):
        return False
    jobs = instance.jobs
    if any(len(j.ps_hosts) != 1 for j in jobs) or len({j.start_s for j in jobs}) != 1:
        return False
    if all(j.compute_time_s == 0 for j in jobs):
        return True
    return all(j.iterations == 1 for j in jobs) and len({j.compute_time_s for j in jobs}) == 1


def lower_bound(instance: TensorLightsInstance, objective: Objective) -> float:
    r"""A lower bound on ``objective`` under every policy (static orders included).

    Every iteration of job :math:`j` is a compute phase of :math:`c_j` then a broadcast whose
    shard on host :math:`h` sends :math:`n_j m_j / |S_j|` bytes at rate at most :math:`B_h`, so
    :math:`C_j - s_j \ge a_j = I_j (c_j + \tau_j)`; and host :math:`h` sends its :math:`W_h`
    bytes no earlier than the first broadcast that uses it, at rate at most :math:`B_h`. Hence
    mean JCT :math:`\ge \bar a`, weighted JCT :math:`\ge \sum_j w_j a_j / \sum_j w_j`, makespan
    :math:`\ge \max(\max_j (s_j + a_j), \max_h (\min_{j: h \in S_j} (s_j + c_j) + W_h / B_h))`.
    """
    alone = np.array([j.iterations for j in instance.jobs]) * instance.alone_iteration_time()
    if objective == "mean-jct":
        return float(alone.mean())
    if objective == "weighted-jct":
        w = np.array([j.weight for j in instance.jobs])
        return float(w @ alone / w.sum())
    starts = np.array([j.start_s for j in instance.jobs])
    best = float((starts + alone).max())
    for h, (total, host) in enumerate(zip(instance.host_bytes(), instance.hosts, strict=True)):
        users = [j.start_s + j.compute_time_s for j in instance.jobs if h in j.ps_hosts]
        if users:
            best = max(best, min(users) + total / host.bandwidth_bytes_per_s)
    return best


def _objective_value(
    objective: str,
    iter_end: np.ndarray,
    iterations: np.ndarray,
    start: np.ndarray,
    weights: np.ndarray,
) -> float:
    completion = iter_end[np.arange(len(iterations)), iterations - 1]
    if objective == "makespan":
        return float(completion.max())
    jct = completion - start
    if objective == "mean-jct":
        return float(jct.mean())
    return float(weights @ jct / weights.sum())


def solve(
    instance: TensorLightsInstance,
    objective: Objective = "mean-jct",
    *,
    node_limit: int | None = None,
    time_limit: float | None = None,
    accept_feasible: bool = False,
    engine: Engine = "numba",
    solver: str | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, object] | None = None,
    warm_start: None = None,
) -> ExactResult[SimulationResult]:
    r"""The exact best static priority order, by simulating every permutation.

    All hosts use the same global order (coordinated strict priority, no jitter). Orders are
    simulated in lexicographic order; among orders within a relative :math:`10^{-9}` of each
    other the first wins.

    Parameters
    ----------
    instance : TensorLightsInstance
    objective : {"mean-jct", "weighted-jct", "makespan"}, default "mean-jct"
    node_limit : int, optional
        Simulate at most this many orders. Below :math:`J!` the search stops short: the result
        is ``feasible`` (never ``optimal``), its incumbent the best order seen or Smith's order,
        whichever is better, its bound :func:`lower_bound`.
    time_limit : float, optional
        Seconds; past it the search stops short the same way.
    accept_feasible : bool, default False
        Return a stopped-short result instead of raising :class:`~optsched.errors.NotOptimalError`.
    solver, mip_gap, threads, solver_options, warm_start
        The common vocabulary of every family's ``solve``; the search uses no solver, so any
        value but ``None`` is refused (:func:`~optsched.family.exact.refuse_unused`).
    engine : {"numba", "python"}, default "numba"
        Kernel or plain-Python reference for the search (the returned solution is always
        simulated again with ``engine`` and a trace, and validated).

    Returns
    -------
    ExactResult of SimulationResult
        ``objective`` the best value found by the search, checked against the validated run by
        the exact-solve path (:mod:`optsched.family.exact`), ``bound`` equal to it when
        optimal; ``extra`` holds
        ``best_order``, ``worst_value`` (over the orders simulated), ``orders_evaluated``,
        ``orders_total``, ``rule_order``, ``rule_value``, ``rule_proven``, ``rule_gap`` and
        ``fair_value``.

    Raises
    ------
    InvalidInstanceError
        Unknown objective, a bad limit, or a search over the ``max_events`` budget of
        :mod:`optsched.limits` (field ``jobs``; pass ``node_limit`` or raise the budget).
    NotOptimalError
        The search stopped short and ``accept_feasible`` is false (it carries the result).
    InconsistentResultError
        The returned run fails validation or its validated objective differs from the search's.

    Notes
    -----
    Complexity :math:`O(N \cdot E (F + J + H))` for :math:`N = \min(J!, \text{node\_limit})`
    orders of :math:`E` events each (:func:`~optsched.comm.tensorlights.simulator.event_bound`);
    :math:`N E` is checked against the ``max_events`` budget before anything runs. Where
    :func:`smith_rule_is_optimal` holds the answer is also :func:`smith_order`, in
    :math:`O(J \log J)`; tests check the two agree.
    """
    from optsched.family.exact import exact_solve, refuse_unused

    refuse_unused(
        "the order search",
        solver=solver,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        warm_start=warm_start,
    )
    return exact_solve(
        formulation(instance, objective, node_limit=node_limit, engine=engine),
        solver=SOLVER_NAME,
        time_limit=time_limit,
        accept_feasible=accept_feasible,
    )


def formulation(
    instance: TensorLightsInstance,
    objective: Objective = "mean-jct",
    *,
    node_limit: int | None = None,
    engine: Engine = "numba",
) -> Formulation[SimulationResult]:
    """What :func:`~optsched.family.exact.exact_solve` needs: the order search as backend."""
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {OBJECTIVES}"
        )
    if node_limit is not None and not (
        isinstance(node_limit, (int, np.integer)) and node_limit >= 1
    ):
        raise InvalidInstanceError("node_limit", f"must be an integer >= 1, got {node_limit!r}")
    if engine not in ("numba", "python"):
        raise InvalidInstanceError("engine", f"must be 'numba' or 'python', got {engine!r}")
    n_jobs = instance.n_jobs
    total: int | None = math.factorial(n_jobs) if n_jobs <= 170 else None
    if node_limit is not None and (total is None or node_limit < total):
        planned, field = int(node_limit), "node_limit"
    elif total is None:
        raise InvalidInstanceError(
            "jobs", f"{n_jobs}! orders exceed every budget; pass node_limit to search a part"
        )
    else:
        planned, field = total, "jobs"
    per_order = event_bound(instance)
    limits.check_size(field, float(planned) * per_order, "max_events", "simulated events")
    found: dict[str, Any] = {}

    def search(settings: SolveSettings) -> tuple[SolveResult, tuple[int, ...]]:
        time_limit = settings.time_limit
        started = time.perf_counter()
        lay = layout(instance)
        weights_w = np.array([j.weight for j in instance.jobs])
        max_it = int(lay.iterations.max())
        limits.check_size("jobs", float(max_it) * len(lay.flow_bytes), "max_array_cells")
        ones = np.ones((max_it, len(lay.flow_bytes)))

        def evaluate(order: tuple[int, ...]) -> float:
            lev = levels(instance.n_hosts, order, "priority", True, 0)
            if engine == "numba":
                out = _k.simulate_kernel(
                    lay.bandwidth, lay.compute, lay.start, lay.iterations, lay.job_flow_start,
                    lay.flow_host, lay.flow_bytes, ones, lev, _k.MODE_PRIORITY, 1.0, n_jobs, 0,
                    per_order,
                )  # fmt: skip
                if not out[10]:
                    raise RuntimeError(
                        f"a simulation exceeded its proven bound of {per_order} events"
                    )
                return _objective_value(objective, out[0], lay.iterations, lay.start, weights_w)
            run = simulate(instance, "priority", order=order, engine="python", trace=False)
            return run.objective(objective)

        best_order: tuple[int, ...] = tuple(range(n_jobs))
        best = math.inf
        worst = -math.inf
        count = 0
        termination = TerminationCondition.OPTIMAL
        for perm in itertools.islice(itertools.permutations(range(n_jobs)), planned):
            if time_limit is not None and count > 0 and time.perf_counter() - started > time_limit:
                termination = TerminationCondition.TIME_LIMIT
                break
            value = evaluate(perm)
            count += 1
            if count == 1 or value < best - OBJECTIVE_RTOL * max(1.0, abs(best)):
                best, best_order = value, perm
            worst = max(worst, value)
        complete = total is not None and count == total
        if not complete and termination is TerminationCondition.OPTIMAL:
            termination = TerminationCondition.OTHER_LIMIT
        rule = smith_order(instance, objective)
        rule_value = evaluate(rule)
        if not complete and rule_value < best - OBJECTIVE_RTOL * max(1.0, abs(best)):
            best, best_order = rule_value, rule
        bound = best if complete else min(lower_bound(instance, objective), best)
        found.update(
            count=count,
            extra={
                "best_order": list(best_order),
                "best_value": best,
                "worst_value": worst,
                "orders_evaluated": count,
                "orders_total": total,
                "rule_order": list(rule),
                "rule_value": rule_value,
                "rule_proven": smith_rule_is_optimal(instance, objective),
                "rule_gap": rule_value / best - 1.0 if best > 0 else 0.0,
            },
        )
        result = assemble(
            termination,
            SolutionStatus.OPTIMAL if complete else SolutionStatus.FEASIBLE,
            best,
            bound,
            build_seconds=0.0,
            solve_seconds=time.perf_counter() - started,
            solver=SOLVER_NAME,
            solver_version="",
            native_status=termination.value,
            message=(
                f"simulated all {count} static orders"
                if complete
                else f"stopped after {count} of {total if total is not None else 'J!'} orders"
            ),
        )
        return result, best_order

    def extra(_model: Any, solution: SimulationResult | None, _r: Any) -> dict[str, Any]:
        fair = simulate(instance, "fair", engine=engine, trace=False).objective(objective)
        return {**found.get("extra", {}), "fair_value": fair}

    return Formulation(
        sense="min",
        objective_name=objective,
        build=lambda clock: AlgorithmBackend(search, SOLVER_NAME),
        # The returned run is simulated again with ``engine`` and a trace, then validated.
        extract=lambda _model, order: simulate(instance, "priority", order=order, engine=engine),
        validate=lambda run: validate(instance, run),
        objective_of=lambda _run, report: report.objectives.get(objective),
        size=lambda _model: {"jobs": n_jobs, "orders_evaluated": found.get("count", 0)},
        extra=extra,
        # Smith's order for the objective: one simulation, a point of the search space
        seed=lambda: (
            "smith-order",
            simulate(instance, "priority", order=smith_order(instance, objective), engine=engine),
        ),
    )
