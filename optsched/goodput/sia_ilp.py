r"""Sia's per-round integer program, solved exactly: :func:`solve`, :func:`validate`.

Sia (SOSP 2023) chooses every round at most one configuration per job (a GPU type, nodes and
GPUs) so as to optimise the sum over jobs of their powered, normalised goodputs, with a fixed
value :math:`\lambda_n` for a job left without GPUs, within the GPUs of every type. With
:math:`x_{jo} \in \{0, 1\}` for job :math:`j` on option :math:`o` and the coefficients
:math:`a_{jo}` of :func:`~optsched.goodput.sia_instance.coefficients`:

.. math::

    \operatorname{opt}_{x}\ \sum_j \sum_o w_j a_{jo} x_{jo}
        + \lambda_n \Big(|J| - \sum_j \sum_o x_{jo}\Big)
    \quad\text{s.t.}\quad
    \sum_o x_{jo} \le 1\ \forall j,\qquad
    \sum_j \sum_{o:\,t(o) = t} k_{o} x_{jo} \le C_t\ \forall t,\qquad
    x_{j,\mathrm{prev}_j} = 1\ \forall j \text{ pinned},

minimised when :math:`p < 0` and maximised when :math:`p > 0` (docs page
``formulations/sia_ilp``). The model is a :class:`~optsched.solvers.LinearProgram` (one binary
column per job and option, one row per job and per GPU type) solved by HiGHS or SCIP through
the family's exact path (:func:`optsched.family.exact.exact_solve`), so the result is an
:class:`~optsched.results.ExactResult` whose objective the independent :func:`validate` has
recomputed. Size: :math:`\sum_j |O_j|` columns, :math:`|J| + |T|` rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from optsched._validation import Frozen
from optsched.errors import InconsistentResultError, InvalidInstanceError, NotOptimalError
from optsched.family.exact import Formulation
from optsched.goodput.sia_cbc import solve_round
from optsched.goodput.sia_instance import SiaInstance, coefficients
from optsched.results import ExactResult, Report, Violation
from optsched.solvers.result import Status, TerminationCondition
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, OPTIMALITY_GAP

__all__ = [
    "CONSTRAINTS",
    "DEFAULT_MIP_GAP",
    "SiaAllocation",
    "build",
    "formulation",
    "gpus_used",
    "greedy",
    "objective_value",
    "solve",
    "solve_cbc",
    "validate",
]

#: Relative MIP gap requested by default: tight enough that "optimal" is the optimum the brute
#: force finds on objectives with fractional coefficients (HiGHS's own default is 1e-4).
DEFAULT_MIP_GAP = 1e-9


class SiaAllocation(Frozen):
    """A round's decision: per job, a 0/1 vector over its options.

    Attributes
    ----------
    x : tuple of tuple of int
        ``x[j][o]`` is 1 when job ``j`` runs on its option ``o`` (at most one 1 per job for a
        feasible allocation; :func:`validate` checks).
    """

    x: tuple[tuple[int, ...], ...] = ()

    @classmethod
    def from_choices(cls, instance: SiaInstance, choices: Sequence[int | None]) -> SiaAllocation:
        """The allocation giving job ``j`` its option ``choices[j]`` (``None``: nothing).

        Raises
        ------
        InvalidInstanceError
            ``choices`` does not have one entry per job, or an entry is no option of its job.
        """
        if len(choices) != len(instance.jobs):
            raise InvalidInstanceError(
                "choices", f"needs one entry per job ({len(instance.jobs)}), got {len(choices)}"
            )
        rows = []
        for j, (job, c) in enumerate(zip(instance.jobs, choices, strict=True)):
            if c is not None and not 0 <= c < len(job.options):
                raise InvalidInstanceError(
                    f"choices[{j}]", f"must be None or < {len(job.options)}, got {c}"
                )
            rows.append(tuple(int(o == c) for o in range(len(job.options))))
        return cls(x=tuple(rows))

    def choices(self) -> list[int | None]:
        """Per job, the index of its first chosen option, ``None`` when it has none."""
        return [next((o for o, v in enumerate(row) if v), None) for row in self.x]

    def assignment(self, instance: SiaInstance) -> dict[str, tuple[str, int, int] | None]:
        """Job name to ``(gpu_type, nodes, gpus)`` of its chosen option, or ``None``."""
        out: dict[str, tuple[str, int, int] | None] = {}
        for job, c in zip(instance.jobs, self.choices(), strict=False):
            opt = job.options[c] if c is not None else None
            out[job.name] = None if opt is None else (opt.gpu_type, opt.nodes, opt.gpus)
        return out


def objective_value(instance: SiaInstance, allocation: SiaAllocation) -> float:
    r"""Sia's objective of ``allocation``: :math:`\sum w_j a_{jo} x_{jo} + \lambda_n(|J| - \sum x)`.

    Recomputed from the instance alone (the coefficients by
    :func:`~optsched.goodput.sia_instance.coefficients`); the allocation must have the
    instance's shape.
    """
    total = 0.0
    allocated = 0
    for job, a, row in zip(instance.jobs, coefficients(instance), allocation.x, strict=True):
        for o, v in enumerate(row):
            if v:
                total += job.weight * float(a[o]) * v
                allocated += v
    return total + instance.lambda_n * (len(instance.jobs) - allocated)


def _rows(instance: SiaInstance, solution: SiaAllocation) -> bool:
    """Whether the allocation has one row per job and one entry per option of each."""
    return len(solution.x) == len(instance.jobs) and all(
        len(row) == len(job.options) for job, row in zip(instance.jobs, solution.x, strict=True)
    )


def shape(instance: SiaInstance, solution: SiaAllocation) -> list[Violation]:
    """``shape``: one row per job, one entry per option of that job."""
    if len(solution.x) != len(instance.jobs):
        return [
            Violation(
                "shape",
                f"{len(solution.x)} rows for {len(instance.jobs)} jobs",
                {},
                float(abs(len(solution.x) - len(instance.jobs))),
            )
        ]
    return [
        Violation(
            "shape",
            f"job {job.name!r} has {len(job.options)} options, its row {len(row)} entries",
            {"job": j},
        )
        for j, (job, row) in enumerate(zip(instance.jobs, solution.x, strict=True))
        if len(row) != len(job.options)
    ]


def binary(instance: SiaInstance, solution: SiaAllocation) -> list[Violation]:
    """``binary``: every entry is 0 or 1."""
    return [
        Violation("binary", f"x[{j}][{o}] = {v}, not 0 or 1", {"job": j, "option": o})
        for j, row in enumerate(solution.x)
        for o, v in enumerate(row)
        if v not in (0, 1)
    ]


def one_option(instance: SiaInstance, solution: SiaAllocation) -> list[Violation]:
    """``one_option``: at most one nonzero entry per job."""
    out = []
    for j, (job, row) in enumerate(zip(instance.jobs, solution.x, strict=True)):
        held = sum(1 for v in row if v != 0)
        if held > 1:
            out.append(
                Violation(
                    "one_option", f"job {job.name!r} holds {held} options", {"job": j}, held - 1.0
                )
            )
    return out


def capacity(instance: SiaInstance, solution: SiaAllocation) -> list[Violation]:
    """``capacity``: the GPUs of the options held (entries equal to 1) fit each type."""
    used = gpus_used(instance, solution)
    return [
        Violation(
            "capacity",
            f"{used[t.name]} GPUs of type {t.name!r} allocated, {t.gpus} exist",
            {"gpu_type": t.name},
            float(used[t.name] - t.gpus),
        )
        for t in instance.gpu_types
        if used[t.name] > t.gpus
    ]


def pinned(instance: SiaInstance, solution: SiaAllocation) -> list[Violation]:
    """``pinned``: a pinned job holds its previous option."""
    return [
        Violation(
            "pinned",
            f"job {job.name!r} is pinned to option {job.previous} but does not hold it",
            {"job": j, "option": job.previous},
        )
        for j, (job, row) in enumerate(zip(instance.jobs, solution.x, strict=True))
        if job.pinned and job.previous is not None and row[job.previous] != 1
    ]


def gpus_used(instance: SiaInstance, solution: SiaAllocation) -> dict[str, int]:
    """GPUs of each type the allocation's options (entries equal to 1) take."""
    used = dict.fromkeys(instance.type_names, 0)
    for job, row in zip(instance.jobs, solution.x, strict=True):
        for o, v in enumerate(row):
            if v == 1:
                used[job.options[o].gpu_type] += job.options[o].gpus
    return used


#: Every constraint of the round by its name on the docs page (``formulations/sia_ilp``).
CONSTRAINTS: dict[str, Callable[[SiaInstance, SiaAllocation], list[Violation]]] = {
    "shape": shape,
    "binary": binary,
    "one_option": one_option,
    "capacity": capacity,
    "pinned": pinned,
}


def validate(instance: SiaInstance, solution: SiaAllocation) -> Report:
    """Check an allocation against every constraint of the round; recompute its objective.

    Every check of :data:`CONSTRAINTS` runs when the allocation has the instance's shape (only
    ``shape`` otherwise, and no objective then). The objective is
    :func:`objective_value`, recomputed from the instance and the allocation alone.
    """
    if not _rows(instance, solution):
        return Report(violations=shape(instance, solution))
    violations = [v for check in CONSTRAINTS.values() for v in check(instance, solution)]
    return Report(
        violations=violations,
        objective=objective_value(instance, solution),
        details={"gpus_used": gpus_used(instance, solution)},
    )


def build(instance: SiaInstance) -> Any:
    r"""The round's model as a :class:`~optsched.solvers.LinearProgram`.

    Columns job-major (job ``j``'s options consecutive), rows: one ``one_option`` row per job,
    then one ``capacity`` row per GPU type; pinned columns have lower bound 1. The objective
    carries :math:`w_j a_{jo} - \lambda_n` per column and the constant :math:`\lambda_n |J|`.
    """
    import scipy.sparse as sp

    from optsched.solvers import LinearProgram

    a = coefficients(instance)
    types = {name: i for i, name in enumerate(instance.type_names)}
    n_jobs = len(instance.jobs)
    cost: list[float] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    col = 0
    for j, (job, coef) in enumerate(zip(instance.jobs, a, strict=True)):
        for o, opt in enumerate(job.options):
            cost.append(job.weight * float(coef[o]) - instance.lambda_n)
            rows += [j, n_jobs + types[opt.gpu_type]]
            cols += [col, col]
            vals += [1.0, float(opt.gpus)]
            lower.append(1.0 if job.pinned and o == job.previous else 0.0)
            col += 1
    matrix = sp.csc_array(
        (np.array(vals), (np.array(rows), np.array(cols))), shape=(n_jobs + len(types), col)
    )
    row_upper = [1.0] * n_jobs + [float(t.gpus) for t in instance.gpu_types]
    return LinearProgram(
        np.array(cost),
        matrix,
        np.full(n_jobs + len(types), -np.inf),
        np.array(row_upper),
        np.array(lower),
        np.ones(col),
        sense=instance.sense,  # type: ignore[arg-type]
        integrality=np.ones(col, dtype=bool),
        offset=instance.lambda_n * n_jobs,
    )


def _decode(instance: SiaInstance, x: Any) -> SiaAllocation:
    values = np.rint(np.asarray(x, dtype=float)).astype(int)
    rows = []
    start = 0
    for job in instance.jobs:
        rows.append(tuple(int(v) for v in values[start : start + len(job.options)]))
        start += len(job.options)
    return SiaAllocation(x=tuple(rows))


def greedy(instance: SiaInstance) -> SiaAllocation:
    r"""A feasible allocation in one pass: pinned jobs first, then each job's best fitting option.

    A job takes the option with the best coefficient that still fits (better than
    :math:`\lambda_n`, by the objective's sense), in the instance's job order. It is the seed
    of a solve stopped at a limit. :math:`O(\sum_j |O_j|)`.
    """
    a = coefficients(instance)
    free = {t.name: t.gpus for t in instance.gpu_types}
    choice: list[int | None] = [None] * len(instance.jobs)
    for j, job in enumerate(instance.jobs):
        if job.pinned and job.previous is not None:
            choice[j] = job.previous
            free[job.options[job.previous].gpu_type] -= job.options[job.previous].gpus
    sign = 1.0 if instance.sense == "min" else -1.0
    for j, job in enumerate(instance.jobs):
        if choice[j] is not None:
            continue
        best: tuple[float, int] | None = None
        for o, opt in enumerate(job.options):
            value = sign * (job.weight * float(a[j][o]) - instance.lambda_n)
            if opt.gpus <= free[opt.gpu_type] and value < 0 and (best is None or value < best[0]):
                best = (value, o)
        if best is not None:
            choice[j] = best[1]
            free[job.options[best[1]].gpu_type] -= job.options[best[1]].gpus
    return SiaAllocation.from_choices(instance, choice)


def formulation(instance: SiaInstance) -> Formulation[SiaAllocation]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve the round."""
    from optsched.family.exact import best_seed, closed_form

    def build_model(clock: Any) -> Any:
        if not instance.jobs:
            return closed_form(0.0, SiaAllocation(), name="no jobs")
        lp = build(instance)
        clock.check("model")
        return lp

    def extract(_model: Any, point: Any) -> SiaAllocation | None:
        if isinstance(point, SiaAllocation):
            return point
        if point is None or point.x is None:
            return None
        return _decode(instance, point.x)

    def size(model: Any) -> dict[str, int]:
        if not instance.jobs:
            return {"variables": 0, "constraints": 0}
        return {"variables": int(model.a.shape[1]), "constraints": int(model.a.shape[0])}

    return Formulation(
        sense=instance.sense,  # type: ignore[arg-type]
        objective_name="sia",
        build=build_model,
        extract=extract,
        validate=lambda allocation: validate(instance, allocation),
        size=size,
        polish=True,
        seed=lambda: best_seed(
            {"greedy": lambda: greedy(instance)},
            lambda allocation: validate(instance, allocation),
            instance.sense,  # type: ignore[arg-type]
        ),
    )


def solve(
    instance: SiaInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
    accept_feasible: bool = False,
) -> ExactResult[SiaAllocation]:
    """Solve Sia's round exactly; return the validated allocation.

    Parameters
    ----------
    instance : SiaInstance
    solver : {"highs", "scip", "cbc"}, default "highs"
        A matrix backend of :func:`optsched.solvers.solve_matrix`, or ``"cbc"``: CBC through
        cvxpy on the problem stated as Sia's policy states it
        (:func:`solve_cbc`; ``solver_options`` do not apply).
    time_limit : float, optional
        Seconds, model building included.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default :data:`DEFAULT_MIP_GAP`).
    threads : int, optional
    solver_options : mapping, optional
        Native solver options, passed through.
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising.

    Returns
    -------
    ExactResult of SiaAllocation
        ``objective`` Sia's objective of the allocation (minimised for :math:`p < 0`,
        maximised for :math:`p > 0`), ``bound`` and ``gap`` the solver's.

    Raises
    ------
    NotOptimalError
        Optimality not proven and not accepted.
    InconsistentResultError
        The allocation fails :func:`validate` or its objective disagrees with the solver's.
    SolverUnavailableError
        ``solver`` is no matrix backend or is not installed.

    Examples
    --------
    >>> from optsched.goodput.sia_instance import generate_instance
    >>> inst = generate_instance(6, seed=3)
    >>> res = solve(inst)
    >>> res.status.value, validate(inst, res.solution).ok
    ('optimal', True)
    """
    if solver == "cbc":
        return solve_cbc(
            instance,
            mip_gap=DEFAULT_MIP_GAP if mip_gap is None else mip_gap,
            threads=threads,
            accept_feasible=accept_feasible,
        )
    from optsched.family.exact import exact_solve

    return exact_solve(
        formulation(instance),
        solver=solver,
        time_limit=time_limit,
        mip_gap=DEFAULT_MIP_GAP if mip_gap is None else mip_gap,
        threads=threads,
        solver_options=solver_options,
        accept_feasible=accept_feasible,
    )


def solve_cbc(
    instance: SiaInstance,
    *,
    coefficients_override: Sequence[Any] | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    accept_feasible: bool = False,
) -> ExactResult[SiaAllocation]:
    """Solve the round with CBC through cvxpy, stated as Sia's policy states it; validate it.

    The problem is :func:`optsched.goodput.sia_cbc.solve_round`'s (Sia's cvxpy statement).

    Parameters
    ----------
    instance : SiaInstance
    coefficients_override : sequence of arrays, optional
        Each job's objective coefficients in place of
        :func:`~optsched.goodput.sia_instance.coefficients` (the heterogeneous world passes
        Sia's single-precision matrix, so that CBC sees Sia's very numbers).
    mip_gap : float, optional
        Relative gap (default :data:`DEFAULT_MIP_GAP`; Sia's is
        :data:`~optsched.goodput.sia_cbc.SIA_GAP`).
    threads : int, optional
        CBC's ``numberThreads``.
    accept_feasible : bool, default False
        Return the allocation when the gap lets CBC stop short of a proven optimum (a gap above
        :data:`~optsched.tolerances.OPTIMALITY_GAP`) instead of raising.

    Returns
    -------
    ExactResult of SiaAllocation
        ``objective`` the allocation's value under the coefficients used; ``status``
        ``optimal`` only at a gap within ``OPTIMALITY_GAP``, else ``feasible``.

    Raises
    ------
    SolverUnavailableError
        cvxpy or cylp (CBC) is not installed.
    NotOptimalError
        The gap is looser than ``OPTIMALITY_GAP`` and ``accept_feasible`` is false.
    InconsistentResultError
        The allocation fails :func:`validate`, or its recomputed objective disagrees with CBC's.
    """
    gap = DEFAULT_MIP_GAP if mip_gap is None else mip_gap
    a = list(coefficients(instance) if coefficients_override is None else coefficients_override)
    if not instance.jobs:
        return ExactResult(SiaAllocation(), 0.0, Status.OPTIMAL, TerminationCondition.OPTIMAL,
                           0.0, 0.0, sense=instance.sense,  # type: ignore[arg-type]
                           objective_name="sia", solver="cbc")  # fmt: skip
    answer = solve_round(instance, a, mip_gap=gap, threads=threads)
    allocation = SiaAllocation.from_choices(instance, answer.choices)
    report = validate(instance, allocation)
    if not report.ok:
        raise InconsistentResultError(f"CBC's allocation is infeasible: {report.violations[:3]}")
    held = [(j, c) for j, c in enumerate(answer.choices) if c is not None]
    objective = sum(instance.jobs[j].weight * float(a[j][c]) for j, c in held)
    objective += instance.lambda_n * (len(instance.jobs) - len(held))
    if abs(objective - answer.value) > OBJECTIVE_AGREEMENT_TOL * max(1.0, abs(objective)):
        raise InconsistentResultError(
            f"CBC reports objective {answer.value}, its allocation recomputes to {objective}"
        )
    proven = gap <= OPTIMALITY_GAP
    result: ExactResult[SiaAllocation] = ExactResult(
        allocation, objective,
        Status.OPTIMAL if proven else Status.FEASIBLE,
        TerminationCondition.OPTIMAL if proven else TerminationCondition.GAP_LIMIT,
        objective if proven else None, 0.0 if proven else None,
        sense=instance.sense,  # type: ignore[arg-type]
        objective_name="sia", build_seconds=answer.build_seconds,
        solve_seconds=answer.solve_seconds, solver="cbc", native_status=answer.status,
        size={"variables": answer.variables, "blocks": answer.blocks},
        extra={"gpus_used": gpus_used(instance, allocation)},
    )  # fmt: skip
    if not proven and not accept_feasible:
        raise NotOptimalError(result)
    return result
