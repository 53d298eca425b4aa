"""One round's allocation solved exactly: :func:`solve`, the family's exact entry point.

The policies are sequences of LPs built as matrices (:mod:`optsched.allocation.gavel.lp`, the
packed ones in :mod:`optsched.allocation.gavel.packed`); this module runs one through the
family's shared exact path (:class:`~optsched.family.exact.Formulation`) so that it returns an
:class:`~optsched.results.ExactResult` like every other family.
"""

from __future__ import annotations

from typing import Any

from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import POLICIES, solve_lp_policy
from optsched.allocation.gavel.packed import PACKED_POLICIES, solve_packed_policy
from optsched.allocation.gavel.solution import Allocation
from optsched.allocation.gavel.validate import validate
from optsched.family.exact import Formulation
from optsched.results import ExactResult
from optsched.solvers.result import SolveResult

__all__ = ["formulation", "seed", "solve"]

_SENSE = {
    "max-min": "max",
    "max-sum-throughput": "max",
    "makespan": "min",
    "ftf": "min",
    "min-cost": "max",
    "min-cost-slo": "max",
}


def solve(
    instance: AllocationInstance,
    policy: str = "max-min-perf",
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: Any = None,
    accept_feasible: bool = False,
) -> ExactResult[Allocation]:
    """Solve one round's allocation exactly.

    Parameters
    ----------
    instance : AllocationInstance
    policy : str
        A key of :data:`POLICIES`: ``max-min``/``max-min-perf`` (LAS), ``makespan``/
        ``makespan-perf``, ``ftf``/``ftf-perf`` (finish-time fairness),
        ``max-sum-throughput-perf``, ``min-cost``/``min-cost-perf`` (throughput per dollar),
        ``min-cost-slo``/``min-cost-slo-perf`` (the same with each job's deadline as a
        throughput lower bound), and the space-sharing forms ``max-min-packed``,
        ``makespan-packed``, ``ftf-packed``, ``max-sum-throughput-packed``
        (:data:`PACKED_POLICIES`; the allocation then has pair rows).
    solver : {"highs"}
        The policies are sequences of LPs solved by HiGHS through the matrix layer; another
        name raises :class:`~optsched.errors.SolverUnavailableError`.
    time_limit : float, optional
        Seconds for the whole policy, model building included.
    mip_gap : float, optional
        Checked like every family's; the policies are LPs, which have no MIP gap.
    threads : int, optional
        HiGHS threads for every LP.
    solver_options : dict, optional
        Native HiGHS options for every LP.
    warm_start : optional
        ``result.extra["lp"]`` of the previous round's result for the same policy and shape.
    accept_feasible : bool
        Return an allocation whose optimality is not proven instead of raising.

    Returns
    -------
    ExactResult of Allocation
        ``objective`` is the policy's objective of the returned allocation as the procedure
        computed it, checked against :func:`validate` by the exact-solve path
        (:mod:`optsched.family.exact`); ``bound`` the proven bound; ``extra["lp"]`` the last
        LP solution (for warm starts) and ``extra["lp_solves"]`` how many LPs were solved.

    Raises
    ------
    NotOptimalError
        Not proven optimal and not accepted; carries the result with its allocation (none when
        the round is infeasible, e.g. deadlines no allocation meets: status ``infeasible``).
    InconsistentResultError
        The allocation fails the validator or its recomputed objective disagrees.
    InvalidInstanceError
        Unknown policy, or a cost policy on a GPU type without a known price (``prices``).

    Examples
    --------
    >>> from optsched.allocation.gavel import generate_instance, solve, validate
    >>> res = solve(generate_instance(8, seed=0), "max-min-perf")
    >>> res.status.value, validate(generate_instance(8, seed=0), res.solution).ok
    ('optimal', True)
    """
    from optsched.family.exact import exact_solve

    return exact_solve(
        formulation(instance, policy),
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        warm_start=warm_start,
        accept_feasible=accept_feasible,
    )


def formulation(instance: AllocationInstance, policy: str) -> Formulation[Allocation]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve one policy's round.

    The backend is an :class:`~optsched.family.exact.AlgorithmBackend`: the policy's procedure (one
    LP, or the finish-time-fairness sequence of LPs) reports the objective of its allocation
    and its proven bound.
    """
    from optsched.errors import InvalidInstanceError, SolverUnavailableError
    from optsched.family.exact import AlgorithmBackend, SolveSettings

    if policy in PACKED_POLICIES:
        objective = PACKED_POLICIES[policy]
    elif policy in POLICIES:
        objective = POLICIES[policy][0]
    else:
        raise InvalidInstanceError(
            "policy", f"unknown policy {policy!r}; known: {sorted({*POLICIES, *PACKED_POLICIES})}"
        )
    lp_of: dict[str, Any] = {}

    def run(settings: SolveSettings) -> tuple[SolveResult, Allocation]:
        if settings.solver != "highs":
            raise SolverUnavailableError(
                f"solver {settings.solver!r}: the allocation policies solve their LPs with 'highs'"
            )
        common: dict[str, Any] = dict(
            time_limit=settings.time_limit,
            warm_start=settings.warm_start,
            threads=settings.threads,
            solver_options=settings.solver_options,
        )
        if policy in PACKED_POLICIES:
            allocation, result, lp = solve_packed_policy(instance, policy, **common)
        else:
            x, result, lp = solve_lp_policy(instance, policy, **common)
            allocation = Allocation(
                job_ids=instance.job_ids,
                gpu_types=instance.gpu_types,
                fractions=x,
                policy=policy,
            )
        lp_of["lp"] = lp
        return result, allocation

    return Formulation(
        sense=_SENSE[objective],  # type: ignore[arg-type]
        objective_name=objective,
        build=lambda clock: AlgorithmBackend(run, "highs"),
        extract=lambda _algorithm, allocation: allocation,
        validate=lambda allocation: validate(instance, allocation, policy),
        extra=lambda _a, _s, result: {
            "lp_solves": result.extra.get("lp_solves", 0),
            "lp": lp_of.get("lp"),
        },
        seed=lambda: seed(instance, policy),
    )


def seed(instance: AllocationInstance, policy: str) -> tuple[str, Allocation] | None:
    """Themis's allocation (one pass over the jobs) with its name, if finitely scored.

    The validator must score it finitely for ``policy``: an allocation that leaves a job
    without throughput has an infinite makespan and is no incumbent. What a policy's solve
    keeps when a limit stops its LPs without a point (:mod:`optsched.family.exact`,
    *Seeding*).
    """
    import functools

    from optsched.allocation.themis import themis
    from optsched.family.exact import best_seed

    sense = _SENSE[PACKED_POLICIES[policy] if policy in PACKED_POLICIES else POLICIES[policy][0]]
    return best_seed(
        {"themis": functools.partial(themis, instance)},
        lambda allocation: validate(instance, allocation, policy),
        sense,  # type: ignore[arg-type]
    )
