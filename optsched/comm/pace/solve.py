r"""The family's exact entry point and validator: :func:`solve` and :func:`validate`.

:func:`solve` computes PACE's schedule of one iteration exactly: the fusion DP picks the best
contiguous grouping of the tensors (:func:`~optsched.comm.pace.fusion.optimal_fusion`), and
Jackson's
preemptive largest-tail-first rule schedules the groups optimally
(:func:`~optsched.comm.pace.exact.exact_schedule`). Both are exact combinatorial algorithms, so the
result's bound equals its objective and its gap is 0. With ``method="lp"`` the optimum of the
groups' schedule is instead *proven* by the totally unimodular transportation LP
(:func:`~optsched.comm.pace.formulation.solve_lp`) through a solver: the LP's status, bound and
timings flow into the result, and a solve stopped short is reported as such.

:func:`validate` re-checks any :class:`~optsched.comm.pace.schedule.CommSchedule` (from ``solve`` or
from a policy) against the instance, sharing no code with the simulator or the exact algorithm,
and recomputes the iteration time as the longest path of the iteration DAG.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from optsched.comm.pace.exact import exact_schedule
from optsched.comm.pace.fusion import optimal_fusion
from optsched.comm.pace.instance import CommInstance, check_budgets
from optsched.comm.pace.policies import Pace
from optsched.comm.pace.schedule import CommSchedule, segments_array
from optsched.comm.pace.simulate import IterationTrace, lower_bound, overlap_fraction
from optsched.comm.pace.validator import check_trace
from optsched.comm.pace.validator import instance as same_instance
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.family.exact import AlgorithmBackend, Formulation, SolveSettings
from optsched.results import ExactResult, Report
from optsched.solvers.result import SolutionStatus, SolveResult, TerminationCondition, assemble

__all__ = ["SEEDS", "Method", "formulation", "seed", "solve", "validate", "validate_files"]

Method = Literal["exact", "lp"]


def _exact_schedule(instance: CommInstance) -> tuple[CommSchedule, dict[str, float]]:
    dag, cost = instance.dag, instance.cost
    fusion = optimal_fusion(
        dag,
        cost,
        max_group_mb=instance.max_group_mb,
        max_group_tensors=instance.max_group_tensors,
    )
    sched = exact_schedule(dag, cost, fusion.groups)
    policy = Pace(max_group_mb=instance.max_group_mb, max_group_tensors=instance.max_group_tensors)
    plan = policy.plan_from_groups(dag, fusion.groups)
    g = len(fusion.groups)
    # Call c carries group c: its first segment starts it, its completion ends it.
    call_start = np.full(g, math.inf)
    for group, start, _ in sched.segments:
        call_start[group] = min(call_start[group], start)
    call_start[~np.isfinite(call_start)] = sched.completion[~np.isfinite(call_start)]
    # A call of no channel time (one worker: free all-reduces) still happens, at its
    # completion: record it as an empty segment, as the simulator does.
    busy = {group for group, _, _ in sched.segments}
    empty = [(c, float(sched.completion[c]), float(sched.completion[c])) for c in range(g)]
    everything = sched.segments + [seg for seg in empty if seg[0] not in busy]
    segments = segments_array(sorted(everything, key=lambda seg: (seg[1], seg[2])))
    stream = dag.stream_schedule(sched.tensor_completion)
    trace = IterationTrace(
        piece_call=np.arange(g, dtype=np.int64),
        call_start=call_start,
        call_end=sched.completion.copy(),
        call_bytes=sched.jobs.nbytes.copy(),
        segments=segments,
        tensor_completion=sched.tensor_completion.copy(),
        stream=stream,
        iteration_time=float(stream[-1, 1]) if len(stream) else 0.0,
        overlap=overlap_fraction(dag, segments, stream),
    )
    schedule = CommSchedule(
        "pace",
        trace.iteration_time,
        lower_bound(dag, cost),
        trace.overlap,
        policy.params(),
        trace,
        plan,
        dag,
    )
    return schedule, {"closed_form": sched.iteration_time, "groups": float(g)}


def solve(
    instance: CommInstance,
    *,
    method: Method = "exact",
    solver: str = "highs",
    time_limit: float | None = None,
    accept_feasible: bool = False,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: None = None,
) -> ExactResult[CommSchedule]:
    r"""PACE's optimal schedule of one iteration: fusion DP, then Jackson's preemptive rule.

    Parameters
    ----------
    instance : CommInstance
    method : {"exact", "lp"}, default "exact"
        ``"exact"``: the combinatorial algorithms alone (bound = objective, gap 0).
        ``"lp"``: the optimum of the DP's groups proven by the transportation LP through
        ``solver`` (its status flows into the result).
    solver : str, default "highs"
        LP solver for ``method="lp"`` (any cvxpy LP solver optsched knows).
    time_limit : float, optional
        Seconds for ``method="lp"`` (model building included).
    accept_feasible : bool, default False
        Return instead of raising when the LP stopped short (the result then carries no
        proven optimum).
    mip_gap, threads, solver_options, warm_start
        The common vocabulary of every family's ``solve``; neither method takes them, so any
        value but ``None`` is refused (:func:`~optsched.family.exact.refuse_unused`).

    Returns
    -------
    ExactResult of CommSchedule
        ``objective`` is the iteration time (ms) of the algorithm, checked against the
        independent validator by the exact-solve path (:mod:`optsched.family.exact`);
        ``solution`` the schedule (policy
        ``"pace"``); ``extra`` holds the lower bound and the number of fused groups.

    Raises
    ------
    InvalidInstanceError
        A bad option (named) or an instance over a size budget.
    NotOptimalError
        ``method="lp"`` stopped short and ``accept_feasible`` is false; carries the result.
    InconsistentResultError
        The validator's recomputed iteration time disagrees with the algorithm's.

    Notes
    -----
    :math:`O(n^3)` for the fusion DP over ``n`` tensors (refused beyond the size budgets of
    :func:`~optsched.comm.pace.instance.check_budgets`) and :math:`O(n \log n)` for the schedule.

    Examples
    --------
    >>> from optsched.comm.pace import CommInstance, solve
    >>> result = solve(CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10))
    >>> result.status.value, result.gap, result.solution.name
    ('optimal', 0.0, 'pace')
    """
    from optsched.family.exact import exact_solve, refuse_unused

    refuse_unused(
        f"PACE's {method!r} method",
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        warm_start=warm_start,
    )
    return exact_solve(
        formulation(instance, method=method),
        solver=solver,
        time_limit=time_limit,
        accept_feasible=accept_feasible,
    )


def formulation(instance: CommInstance, *, method: Method = "exact") -> Formulation[CommSchedule]:
    """What :func:`~optsched.family.exact.exact_solve` needs: the exact algorithms as backend.

    ``"exact"``: the fusion DP and Jackson's rule, optimal by construction (bound = objective).
    ``"lp"``: the same schedule, its optimum proven by the transportation LP, whose status
    decides the result's.
    """
    if method not in ("exact", "lp"):
        raise InvalidInstanceError("method", f"must be 'exact' or 'lp', got {method!r}")
    dag = instance.dag
    found: dict[str, Any] = {}

    def run(settings: SolveSettings) -> tuple[SolveResult, CommSchedule]:
        start = time.perf_counter()
        check_budgets(dag.n_tensors, lp=method == "lp")
        schedule, info = _exact_schedule(instance)
        found["groups"] = int(info["groups"])
        value = schedule.iteration_time
        build = time.perf_counter() - start
        if method == "exact":
            result = assemble(
                TerminationCondition.OPTIMAL,
                SolutionStatus.OPTIMAL,
                value,
                value,
                build_seconds=build,
                solve_seconds=time.perf_counter() - start - build,
                solver="fusion-dp+jackson",
                solver_version="",
                native_status="exact",
                message="exact combinatorial algorithms (fusion DP, Jackson's preemptive rule)",
            )
            return result, schedule
        return _prove_with_lp(instance, schedule, settings, start, found), schedule

    def size(_model: Any) -> dict[str, int]:
        out = {
            "tensors": dag.n_tensors,
            "groups": found.get("groups", 0),
            "layers": len(dag.layers),
        }
        return {**out, **found.get("lp_size", {})}

    return Formulation(
        sense="min",
        objective_name="iteration-time",
        build=lambda clock: AlgorithmBackend(run, "fusion-dp+jackson"),
        extract=lambda _model, schedule: schedule,
        validate=lambda schedule: validate(instance, schedule),
        lp_bound=lambda _model, _result: found.get("lp_bound"),
        size=size,
        extra=lambda _model, schedule, _result: {
            "lower_bound": None if schedule is None else schedule.lower_bound,
            "groups": found.get("groups", 0),
            "method": method,
            **({"lp_solves": found["lp_solves"]} if "lp_solves" in found else {}),
        },
        seed=lambda: seed(instance),
    )


#: The policies that seed a solve (module ``family``): TicTac's order (one topological pass)
#: and PACE's own schedule, the fusion DP and Jackson's rule, milliseconds at ResNet-152 size.
SEEDS = ("tictac", "pace")


def seed(instance: CommInstance) -> tuple[str, CommSchedule] | None:
    """The best schedule of the :data:`SEEDS` policies, with its name.

    What a solve keeps when its budget was spent before the algorithms ran
    (:mod:`optsched.family.exact`, *Seeding*).
    """
    from optsched.comm.pace.algorithms import ALGORITHMS
    from optsched.family.exact import seed_from

    return seed_from(ALGORITHMS, instance, validate, "min", SEEDS)


def _prove_with_lp(
    instance: CommInstance,
    schedule: CommSchedule,
    settings: SolveSettings,
    start: float,
    found: dict[str, Any],
) -> SolveResult:
    """The schedule's result with its optimum proven (or not) by the transportation LP."""
    from optsched.comm.pace.exact import group_jobs
    from optsched.comm.pace.formulation import solve_lp

    dag, cost = instance.dag, instance.cost
    groups = tuple((int(a), int(b)) for a, b in _groups_of(schedule))
    jobs = group_jobs(dag, cost, groups)
    remaining = None
    if settings.time_limit is not None:
        # At least a moment for the LP, so a tiny limit reports a stopped LP, not no attempt.
        remaining = max(settings.time_limit - (time.perf_counter() - start), 1e-3)
    value = schedule.iteration_time
    try:
        lp = solve_lp(
            jobs.release, jobs.work, jobs.tail, solver=settings.solver, time_limit=remaining
        )
    except NotOptimalError as exc:
        stopped = exc.result
        # The schedule is a feasible point whatever the LP did; only its proof is missing.
        return assemble(
            stopped.termination,
            SolutionStatus.FEASIBLE,
            value,
            None,
            build_seconds=0.0,
            solve_seconds=time.perf_counter() - start,
            solver=settings.solver,
            solver_version="",
            native_status=getattr(stopped, "native_status", ""),
            message="the LP proving the optimum stopped short; the schedule is not proven optimal",
        )
    bound = max(dag.compute_ms, lp.value)
    last = lp.solves[-1]
    found["lp_bound"] = bound
    found["lp_solves"] = len(lp.solves)
    found["lp_size"] = {"lp_variables": int(lp.lp.pairs.shape[0]), "lp_slots": lp.lp.n_slots}
    # An optimum is claimed only when the LP's bound meets the schedule's value within
    # OPTIMALITY_GAP (assemble reports a wider gap as a feasible point at gap_limit).
    return assemble(
        TerminationCondition.OPTIMAL,
        SolutionStatus.OPTIMAL,
        value,
        bound,
        build_seconds=sum(s.build_seconds for s in lp.solves),
        solve_seconds=sum(s.solve_seconds for s in lp.solves),
        solver=settings.solver,
        solver_version=last.solver_version,
        native_status=last.native_status,
        message=f"transportation LP proof ({len(lp.solves)} LP solves)",
    )


def _groups_of(schedule: CommSchedule) -> list[tuple[int, int]]:
    plan = schedule.plan
    out: list[tuple[int, int]] = []
    for piece in range(plan.n_pieces):
        members = plan.member_tensor[plan.member_piece == piece]
        out.append((int(members.min()), int(members.max()) + 1))
    return out


def validate(instance: CommInstance, solution: CommSchedule) -> Report:
    """Check ``solution`` against ``instance`` with the independent validator.

    Parameters
    ----------
    instance : CommInstance
    solution : CommSchedule
        From :func:`solve` or any policy.

    Returns
    -------
    Report
        ``ok`` when every rule holds: ``instance`` (the schedule is of this instance's
        iteration; nothing else is checked when it is not), then every constraint of
        :data:`optsched.comm.pace.validator.CONSTRAINTS` by
        :func:`~optsched.comm.pace.validator.check_trace`; ``objective`` is the iteration time
        recomputed as the longest path of the iteration DAG.
    """
    wrong = same_instance(instance.dag, solution.dag)
    if wrong:
        return Report(wrong)
    return check_trace(instance.dag, instance.cost, solution.plan, solution.trace)


def validate_files(instance_path: str | Path, schedule_path: str | Path | None) -> dict[str, Any]:
    """Check a comm-instance file (what ``optsched validate`` runs for ``kind = comm-instance``).

    The instance is loaded through the guarded loader, its profile resolved, its iteration DAG
    built and its horizon and fusion-DP sizes checked against the budgets: whatever passes
    can be solved and simulated.

    Raises
    ------
    InvalidInstanceError
        The instance is invalid (the field is named), or a schedule file was given: schedules
        of this family are Python objects, checked with :func:`validate`.
    """
    if schedule_path is not None:
        raise InvalidInstanceError(
            "schedule",
            "comm-instance schedules are checked in Python with optsched.comm.pace.validate; "
            "give the instance alone",
        )
    instance = CommInstance.load(instance_path)
    check_budgets(instance.dag.n_tensors)
    summary = instance.summary()
    return {
        "valid": True,
        "kind": "comm-instance",
        **summary,
        "lines": [
            f"{instance}: {summary['tensors']} tensors, horizon {summary['horizon_ms']:.6g} ms"
        ],
    }
