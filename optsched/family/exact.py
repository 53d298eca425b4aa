r"""The one exact-solve path every family's ``solve`` goes through, and its one trust rule.

A family states *what* to solve; :func:`exact_solve` owns *how* a solve becomes a result the
library stands behind:

1. **options** -- ``time_limit``, ``mip_gap``, ``threads``, ``solver``, ``solver_options``,
   ``warm_start`` and ``accept_feasible`` are checked once (:func:`check_solve_options`), the
   offending one named;
2. **build clock** -- the family's ``build`` runs against a
   :class:`~optsched.solvers.BuildClock`: model building counts against ``time_limit``;
3. **solve** -- the model goes to its backend: a Pyomo model or a cvxpy problem to
   :func:`optsched.solvers.solve`, a :class:`~optsched.solvers.LinearProgram` to
   :func:`optsched.solvers.solve_matrix`, an :class:`AlgorithmBackend` (closed-form or combinatorial
   families, multi-stage procedures) to its own ``run``; the incumbent is always taken, so a
   solve that stops short keeps it;
4. **incumbent** -- the family's ``extract`` reads it back as the family's Solution;
5. **validate** -- the family's independent ``validate`` re-derives feasibility and the
   objective from the instance and the solution alone; an infeasible incumbent is an error;
6. **trust rule** -- :func:`check_agreement`: the solver's objective :math:`z_s` and the
   validator's :math:`z_v` must satisfy

   .. math:: |z_s - z_v| \le \tau \max(1, |z_v|), \qquad
             \tau = \mathtt{OBJECTIVE\_AGREEMENT\_TOL},

   the same rule for both senses and for every incumbent, proven optimal or not; otherwise
   :class:`~optsched.errors.InconsistentResultError`, never a success. The objective reported
   is the solver's, once it agrees: it is never replaced by the recomputed one;
7. **require** -- a result not proven optimal raises :class:`~optsched.errors.NotOptimalError`
   carrying the full :class:`~optsched.results.ExactResult` (incumbent included), unless the
   caller passed ``accept_feasible=True`` and there is a validated incumbent.

Seeding
-------
A budget that runs out must still return the best point known. A family whose fastest
heuristic is cheap declares it as ``seed``. When the solve stops at a limit (time, nodes,
iterations; never when the model is proven infeasible) before proving optimality, the seed is
run once, checked by the family's validator like any incumbent, and kept when the solver has
no incumbent or a worse one: the result is then ``feasible`` with the seed as its solution,
the validator's value as its objective (the heuristic reports no value of its own to agree
with) and the solver's bound, if any, as its bound; ``extra["incumbent_source"]`` names the
heuristic. This holds as well when the budget was spent before the model was built or the
solver started. A seed better than a proven bound (beyond
:data:`~optsched.tolerances.OBJECTIVE_AGREEMENT_TOL`) is an
:class:`~optsched.errors.InconsistentResultError`. With a time limit and a family
``set_start``, the seed is also handed to the solver as its MIP start when the caller passed
no ``warm_start``; it then runs before the build, and its time is taken from the budget (a
seed that spends it stops the solve before the build, with the seed as its incumbent).

Polishing
---------
A MILP solver's objective is exact only for the continuous part it optimised: an incumbent
found by a heuristic may leave slack in a variable the objective reads (a makespan above the
last completion, a completion indicator after the last active slot, a capped progress below its
cap), and binaries that sit a feasibility tolerance off 0/1 shift an objective with large
coefficients. A family whose objective has such variables declares ``polish``: the
incumbent's decision variables are then fixed at their rounded values and the model is solved
again over the rest, by the same solver, for every incumbent. The objective of that solve is
the solver's objective of the point returned, and it is what the trust rule checks. Rounding
alone can fix a point that is no solution (a binary a tolerance off 1 that let the incumbent
do a tolerance less work); a family that knows what its rounded decisions carry out declares
``repair``, and the decisions fixed are then those of that solution, feasible by construction.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from optsched.errors import InconsistentResultError, InvalidInstanceError, NotOptimalError
from optsched.results import ExactResult, Report, Sense
from optsched.solvers import BuildClock, check_options
from optsched.solvers.deadline import clip
from optsched.solvers.result import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    relative_gap,
)
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

__all__ = [
    "AlgorithmBackend",
    "Formulation",
    "SolveSettings",
    "best_seed",
    "check_agreement",
    "check_solve_options",
    "closed_form",
    "exact_solve",
    "native_options",
    "refuse_unused",
]

S = TypeVar("S")


@dataclass(frozen=True)
class SolveSettings:
    """The checked options of one exact solve, as handed to an :class:`AlgorithmBackend`.

    Attributes
    ----------
    solver : str
        Solver name (``"highs"`` by default).
    time_limit : float or None
        Seconds left for the solve itself (model building already subtracted).
    mip_gap : float or None
    threads : int or None
    solver_options : dict
        Native solver options, passed through.
    warm_start : object or None
        The family's warm start (a Solution, a previous LP solution...).
    """

    solver: str = "highs"
    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    solver_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    warm_start: Any = None


@dataclass(frozen=True)
class AlgorithmBackend:
    """A backend that is not a solver: a closed-form or combinatorial algorithm, or a procedure.

    ``run(settings)`` returns ``(result, payload)``: a
    :class:`~optsched.solvers.SolveResult` (status, the algorithm's own objective, bound,
    timings; see :func:`~optsched.solvers.result.assemble`) and whatever the family's
    ``extract`` reads the solution from (``None`` without a point). It may raise
    :class:`~optsched.errors.NotOptimalError` carrying a ``SolveResult`` when it finds no point.

    Attributes
    ----------
    run : callable
        ``run(settings: SolveSettings) -> tuple[SolveResult, Any]``.
    name : str
        What the result's ``solver`` says when the algorithm does not name itself.
    """

    run: Callable[[SolveSettings], tuple[SolveResult, Any]]
    name: str = "algorithm"


def closed_form(
    objective: float, payload: Any = None, *, name: str, message: str = ""
) -> AlgorithmBackend:
    """An :class:`AlgorithmBackend` whose answer is known in closed form and optimal (e.g. no jobs).

    Its result is ``optimal`` with ``bound == objective``; the payload still goes through the
    family's ``extract``, validator and the trust rule like any other solve.

    Examples
    --------
    >>> result, payload = closed_form(0.0, "empty", name="no jobs").run(SolveSettings())
    >>> result.status.value, result.objective, payload
    ('optimal', 0.0, 'empty')
    """
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    def run(settings: SolveSettings) -> tuple[SolveResult, Any]:
        result = assemble(
            TerminationCondition.OPTIMAL,
            SolutionStatus.OPTIMAL,
            float(objective),
            float(objective),
            build_seconds=0.0,
            solve_seconds=0.0,
            solver=name,
            solver_version="",
            native_status="closed form",
            message=message,
        )
        return result, payload

    return AlgorithmBackend(run, name)


def best_seed(
    candidates: Mapping[str, Callable[[], S]],
    validate: Callable[[S], Report],
    sense: Sense,
    objective_of: Callable[[S, Report], float | None] | None = None,
) -> tuple[str, S] | None:
    """The best valid point of a family's cheap heuristics, with its name: a ``seed``.

    Each candidate runs once, in order; one that raises
    :class:`~optsched.errors.HeuristicFailedError` (no room, no admissible point), whose point
    the validator refuses, or that has no finite value for the objective, is skipped. Ties keep the
    earlier candidate. ``None`` when none is left.

    Examples
    --------
    >>> from optsched.results import Report
    >>> best_seed({"a": lambda: 3.0, "b": lambda: 2.0}, lambda x: Report(objective=x), "min")
    ('b', 2.0)
    """
    from optsched.errors import HeuristicFailedError

    best: tuple[float, str, S] | None = None
    for name, run in candidates.items():
        try:
            point = run()
        except HeuristicFailedError:
            continue
        report = validate(point)
        value = (objective_of or _report_objective)(point, report) if report.ok else None
        if value is None or not math.isfinite(value):
            continue  # no value for this objective (an infinite makespan is no incumbent)
        if best is None or _improves(sense, float(value), best[0]):
            best = (float(value), name, point)
    return None if best is None else (best[1], best[2])


def seed_from(
    algorithms: Mapping[str, Callable[..., S]],
    instance: Any,
    validate: Callable[[Any, S], Report],
    sense: Sense,
    names: Sequence[str] | None = None,
) -> tuple[str, S] | None:
    """:func:`best_seed` over a family's ``ALGORITHMS`` table run on ``instance``.

    ``algorithms[name](instance)`` for each of ``names`` (default: every entry, in order), each
    point checked by ``validate(instance, point)``.

    Examples
    --------
    >>> from optsched.results import Report
    >>> table = {"double": lambda x: 2 * x, "same": lambda x: x}
    >>> seed_from(table, 3.0, lambda _, y: Report(objective=y), "min")
    ('same', 3.0)
    """
    import functools

    chosen = list(algorithms) if names is None else list(names)
    return best_seed(
        {name: functools.partial(algorithms[name], instance) for name in chosen},
        lambda point: validate(instance, point),
        sense,
    )


def refuse_unused(backend: str, **options: Any) -> None:
    """Refuse solver options an algorithmic backend has no use for, naming the option.

    Families without a solver take the common vocabulary of every ``solve`` (so one call
    works for every family), but an option that would change nothing is an error, not a
    silent no-op.

    Raises
    ------
    InvalidInstanceError
        The first option that is not ``None``.

    Examples
    --------
    >>> refuse_unused("enumeration", mip_gap=None, threads=None)
    >>> refuse_unused("enumeration", threads=2)
    Traceback (most recent call last):
    ...
    optsched.errors.InvalidInstanceError: threads: enumeration uses no solver ...
    """
    for name, value in options.items():
        if value is not None:
            raise InvalidInstanceError(
                name, f"{backend} uses no solver that takes this option; got {value!r}"
            )


def _report_objective(solution: Any, report: Report) -> float | None:
    return report.objective


@dataclass(frozen=True)
class Formulation(Generic[S]):
    """What a family supplies to :func:`exact_solve`: the rest is the path's.

    Attributes
    ----------
    sense : {"min", "max"}
    objective_name : str
    build : callable
        ``build(clock) -> model``: a Pyomo model, a cvxpy problem, a
        :class:`~optsched.solvers.LinearProgram` or an :class:`AlgorithmBackend`. It calls
        ``clock.check(stage)`` between stages so that a time limit stops a long build.
    extract : callable
        ``extract(model, point) -> Solution or None``: the incumbent as the family's Solution.
        ``point`` is the :class:`~optsched.solvers.MatrixSolution` for a matrix model, the
        payload for an :class:`AlgorithmBackend`, ``None`` for Pyomo/cvxpy (the values are loaded in
        the model). ``None`` only for a relaxation (``mip=False``), which has no integral
        solution to check.
    validate : callable
        ``validate(solution) -> Report``: the family's independent validator, bound to the
        instance.
    objective_of : callable, optional
        ``objective_of(solution, report) -> float or None``: the validator's value of the
        optimised objective (default ``report.objective``).
    lp_bound : callable, optional
        ``lp_bound(model, result) -> float or None`` with the solver layer's
        :class:`~optsched.solvers.SolveResult`; called once the solve is over, with or without
        an incumbent.
    extra : callable or mapping, optional
        ``extra(model, solution, result) -> mapping`` of family figures, or a fixed mapping.
    size : callable or mapping, optional
        ``size(model) -> mapping`` of model sizes, or a fixed mapping.
    polish : bool or sequence of str
        Re-solve with the incumbent's decision variables fixed (module notes): ``True`` fixes
        every integer variable (every integer column of a matrix model), a sequence fixes the
        variables of the named Pyomo components.
    repair : callable, optional
        ``repair(model, point)``: the incumbent's decisions re-derived as an exact point of the
        model, before ``polish`` rounds and fixes them. A solver accepts integrality within a
        tolerance, so rounding alone may fix a point no schedule has (a job run for a round
        short of full by the tolerance, its work then finished by a floor-sized last run);
        the family knows the schedule the rounded decisions carry out. It returns the column
        values to round instead of the point's (matrix model) or writes them into the model's
        variables (Pyomo model, any return value); ``None`` when it has no repair, and the
        plain rounding stands.
    set_start : callable, optional
        ``set_start(model, warm_start)``: write a warm start into a Pyomo model's variables
        (handed to the solver as a MIP start). Matrix models take a
        :class:`~optsched.solvers.MatrixSolution` as their warm start directly.
    mip : bool
        Whether ``mip_gap`` applies and a Solution is required (``False`` for a relaxation,
        which gets the solver's default gap and may return no Solution).
    solvable : callable, optional
        ``solvable(built) -> model`` when ``build`` returns a family record holding the model
        (``extract``, ``lp_bound``, ``extra`` and ``size`` then receive the record).
    seed : callable, optional
        ``seed() -> (name, solution) or None``: the family's fastest heuristic (a greedy
        pass, linear or near-linear in the instance), ``None`` when it finds no point. A solve
        that stops at a limit keeps the better of the solver's incumbent and the seed's,
        validated like any incumbent (module notes, *Seeding*); with a time limit and a
        ``set_start`` it is also the MIP start when the caller gave none.
    """

    sense: Sense
    objective_name: str
    build: Callable[[BuildClock], Any]
    extract: Callable[[Any, Any], S | None]
    validate: Callable[[S], Report]
    objective_of: Callable[[S, Report], float | None] = _report_objective
    lp_bound: Callable[[Any, SolveResult], float | None] | None = None
    extra: Callable[[Any, S | None, SolveResult], Mapping[str, Any]] | Mapping[str, Any] | None = (
        None
    )
    size: Callable[[Any], Mapping[str, int]] | Mapping[str, int] | None = None
    polish: bool | Sequence[str] = False
    repair: Callable[[Any, Any], Any] | None = None
    set_start: Callable[[Any, Any], None] | None = None
    mip: bool = True
    solvable: Callable[[Any], Any] | None = None
    seed: Callable[[], tuple[str, S] | None] | None = None


# -- the one trust rule -------------------------------------------------------------------


def check_agreement(
    solver_objective: float | None,
    recomputed: float | None,
    sense: Sense,
    *,
    what: str = "",
) -> None:
    r"""The trust rule: the solver's objective must equal the validator's recomputation.

    Passes when :math:`|z_s - z_v| \le \tau \max(1, |z_v|)` with
    :math:`\tau` = :data:`~optsched.tolerances.OBJECTIVE_AGREEMENT_TOL`, for either sense and
    whether or not optimality was proven: a solver that overstates *or* understates the value
    of the point it returns is equally wrong about it.

    Parameters
    ----------
    solver_objective : float or None
        The objective the solver (or algorithm) reports for its point.
    recomputed : float or None
        The value the family's independent validator recomputes for the same point.
    sense : {"min", "max"}
        Named in the message (which side is better), never in the rule.
    what : str
        Prefix of the message (the family and objective).

    Raises
    ------
    InconsistentResultError
        Either value is missing or not a number, or they disagree.

    Examples
    --------
    >>> check_agreement(10.0, 10.0 + 1e-6, "min")
    >>> check_agreement(10.0, 10.1, "max")
    Traceback (most recent call last):
    ...
    optsched.errors.InconsistentResultError: the solver reports objective 10.0 (max) but ...
    """
    if sense not in ("min", "max"):
        raise InvalidInstanceError("sense", f"must be 'min' or 'max', got {sense!r}")
    head = f"{what}: " if what else ""
    if solver_objective is None or recomputed is None:
        raise InconsistentResultError(
            f"{head}an incumbent needs both the solver's objective and the validator's, got "
            f"{solver_objective!r} and {recomputed!r}"
        )
    if not within(float(solver_objective), float(recomputed), OBJECTIVE_AGREEMENT_TOL):
        better = "higher" if sense == "max" else "lower"
        claimed = float(solver_objective) - float(recomputed)
        side = (
            better
            if (claimed > 0) == (sense == "max")
            else ("lower" if better == "higher" else "higher")
        )
        raise InconsistentResultError(
            f"{head}the solver reports objective {solver_objective!r} ({sense}) but the "
            f"returned solution's value, recomputed by the independent validator, is "
            f"{recomputed!r}: the solver's is {side} by {abs(claimed):.6g}, beyond the "
            f"relative tolerance OBJECTIVE_AGREEMENT_TOL = {OBJECTIVE_AGREEMENT_TOL:g}"
        )


# -- options ------------------------------------------------------------------------------


def check_solve_options(
    *,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    solver: Any,
    solver_options: Any,
    accept_feasible: Any,
) -> dict[str, Any]:
    """Check the shared options of every exact ``solve``; return ``solver_options`` as a dict.

    Raises
    ------
    InvalidInstanceError
        ``time_limit``/``mip_gap``/``threads`` out of range (see
        :func:`~optsched.solvers.check_options`), ``solver`` not a non-empty string,
        ``solver_options`` not a mapping with string keys, ``accept_feasible`` not a bool.
    """
    check_options(time_limit, mip_gap, threads)
    if not isinstance(solver, str) or not solver:
        raise InvalidInstanceError("solver", f"must be a solver name, got {solver!r}")
    native = native_options(solver_options)
    if not isinstance(accept_feasible, bool):
        raise InvalidInstanceError(
            "accept_feasible", f"must be True or False, got {accept_feasible!r}"
        )
    return native


def native_options(solver_options: Any, **more: Any) -> dict[str, Any]:
    """``solver_options`` as a fresh dict, checked, with ``more`` (a family's own) added.

    Raises
    ------
    InvalidInstanceError
        ``solver_options`` is not ``None`` or a mapping with string keys.

    Examples
    --------
    >>> native_options({"presolve": "off"}, mip_max_nodes=1)
    {'presolve': 'off', 'mip_max_nodes': 1}
    """
    if solver_options is None:
        native: dict[str, Any] = {}
    elif isinstance(solver_options, Mapping) and all(isinstance(k, str) for k in solver_options):
        native = dict(solver_options)
    else:
        raise InvalidInstanceError(
            "solver_options", f"must be a mapping of option names to values, got {solver_options!r}"
        )
    native.update(more)
    return native


# -- the path -----------------------------------------------------------------------------


def exact_solve(
    formulation: Formulation[S],
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
    warm_start: Any = None,
    accept_feasible: bool = False,
) -> ExactResult[S]:
    """Solve a family's formulation exactly and return the validated, trusted result.

    Parameters
    ----------
    formulation : Formulation
        What the family supplies (build, extract, validate, sense, objective name...).
    solver : str, default "highs"
        Passed to the solver layer as is; a solver the layer cannot use for this model raises
        its typed error (:class:`~optsched.errors.SolverUnavailableError`).
    time_limit : float, optional
        Seconds, model building (and a seed run as the MIP start) included.
    mip_gap : float, optional
        Relative gap at which the solver may stop (default
        :data:`~optsched.solvers.DEFAULT_MIP_GAP`); a solve stopped at a gap looser than
        :data:`~optsched.tolerances.OPTIMALITY_GAP` is ``feasible``, never ``optimal``.
    threads : int, optional
        Solver threads.
    solver_options : mapping, optional
        Native solver options, passed through (e.g. HiGHS's ``{"mip_max_nodes": 1}``).
    warm_start : optional
        A start: a Solution for Pyomo families (written by ``formulation.set_start``), a
        :class:`~optsched.solvers.MatrixSolution` for matrix families, whatever an
        :class:`AlgorithmBackend` accepts.
    accept_feasible : bool, default False
        Return a validated incumbent whose optimality is not proven instead of raising.

    Returns
    -------
    ExactResult
        ``objective`` the solver's, checked against the validator by :func:`check_agreement`.

    Raises
    ------
    NotOptimalError
        Optimality not proven and not accepted, or no point at all; ``error.result`` is the
        :class:`~optsched.results.ExactResult` (incumbent, bound, ``lp_bound`` included).
    InconsistentResultError
        The incumbent fails the validator, or the solver's objective disagrees with it.
    InvalidInstanceError
        An option out of range (named).
    """
    native = check_solve_options(
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver=solver,
        solver_options=solver_options,
        accept_feasible=accept_feasible,
    )
    # A command's deadline (reading the input, earlier solves) leaves this solve what is left.
    time_limit = clip(time_limit)
    seeded = _Seed(formulation)
    if time_limit is not None and time_limit <= 0:
        # Nothing left: stop now with what is cheap to know (never an error about the option).
        from optsched.solvers.result import stopped_while_building

        spent = stopped_while_building(
            solver, 0.0, "the command's time limit was spent before the build"
        )
        return _stopped(formulation, None, spent, seeded, accept_feasible)
    if (
        time_limit is not None
        and warm_start is None
        and formulation.set_start is not None
        and formulation.seed is not None
    ):
        # Under a budget the seed is also the solver's MIP start; its time is the budget's too
        # (on 2,000 OASiS jobs the baselines take half as long as the build)
        started = _clock()
        got = seeded.get()
        warm_start = None if got is None else got[1]
        time_limit -= _clock() - started
        if time_limit <= 0:
            from optsched.solvers.result import stopped_while_building

            spent = stopped_while_building(
                solver, 0.0, "the time limit was spent by the heuristics that seed the solve"
            )
            return _stopped(formulation, None, spent, seeded, accept_feasible)
    clock = BuildClock(time_limit, solver)
    try:
        model = formulation.build(clock)
    except NotOptimalError as exc:
        return _stopped(formulation, None, _as_solve_result(exc), seeded, accept_feasible)
    build_seconds = clock.elapsed
    settings = SolveSettings(
        solver=solver,
        time_limit=None if time_limit is None else time_limit - build_seconds,
        mip_gap=mip_gap if formulation.mip else None,
        threads=threads,
        solver_options=native,
        warm_start=warm_start,
    )
    target = model if formulation.solvable is None else formulation.solvable(model)
    try:
        result, point = _run(target, formulation, settings, build_seconds)
    except NotOptimalError as exc:
        return _stopped(formulation, model, _as_solve_result(exc), seeded, accept_feasible)
    if not result.has_solution:
        return _stopped(formulation, model, result, seeded, accept_feasible)
    if formulation.polish:
        try:
            result, point = _polish(target, formulation, settings, result, point, model)
        except NotOptimalError as exc:
            # The deadline ran out while polishing: the solver's incumbent is left unchecked
            # (its objective is not yet that of the decoded point); its bound still holds.
            cut = dataclasses.replace(
                result,
                termination=TerminationCondition.TIME_LIMIT,
                solution_status=SolutionStatus.NO_SOLUTION,
                objective=None,
                gap=None,
                message=_exc_message(exc),
            )
            return _stopped(formulation, model, cut, seeded, accept_feasible)
    solution = formulation.extract(model, point)
    what = formulation.objective_name
    if solution is None and formulation.mip:
        # Only a relaxation (``mip=False``) may have a point without a Solution to check.
        raise InconsistentResultError(f"{what}: the solver returned a point but no solution")
    if solution is not None:
        report = formulation.validate(solution)
        if not report.ok:
            more = f" (and {len(report.violations) - 1} more)" if len(report.violations) > 1 else ""
            raise InconsistentResultError(
                f"{what}: the solver's solution fails the independent validator: "
                f"{report.violations[0]}{more}"
            )
        recomputed = formulation.objective_of(solution, report)
        check_agreement(result.objective, recomputed, formulation.sense, what=what)
        if not result.is_optimal and result.termination in _STOPS:
            better = _seeded_incumbent(formulation, result, seeded)
            if better is not None and _improves(formulation.sense, better[0], result.objective):
                return _seeded_result(formulation, model, result, better, accept_feasible)
    exact = _wrap(formulation, model, result, solution)
    return exact.require(accept_feasible)


#: Terminations at which a solve stopped short of a proof without proving anything about the
#: model: a seed may stand in for (or beat) the solver's incumbent.
_STOPS = frozenset(
    {
        TerminationCondition.TIME_LIMIT,
        TerminationCondition.ITERATION_LIMIT,
        TerminationCondition.OTHER_LIMIT,
        TerminationCondition.INTERRUPTED,
    }
)


def _clock() -> float:
    """Seconds on the clock the budget is counted with (the build's, ``time.perf_counter``)."""
    return time.perf_counter()


class _Seed:
    """The formulation's seed, run at most once (it may be wanted twice: start and fallback)."""

    def __init__(self, formulation: Formulation[Any]) -> None:
        self._formulation = formulation
        self._done = False
        self._value: tuple[str, Any] | None = None

    def get(self) -> tuple[str, Any] | None:
        if not self._done:
            self._done = True
            if self._formulation.seed is not None:
                from optsched.errors import HeuristicFailedError

                try:
                    self._value = self._formulation.seed()
                except HeuristicFailedError:
                    # the greedy pass found no room: there is no cheap point to keep
                    self._value = None
        return self._value


def _exc_message(exc: NotOptimalError) -> str:
    result = getattr(exc, "result", None)
    return str(getattr(result, "message", "") or exc)


def _improves(sense: Sense, value: float, incumbent: float | None) -> bool:
    """Whether ``value`` is strictly better than ``incumbent`` beyond the agreement tolerance."""
    if incumbent is None:
        return True
    if within(value, incumbent, OBJECTIVE_AGREEMENT_TOL):
        return False
    return value < incumbent if sense == "min" else value > incumbent


def _seeded_incumbent(
    formulation: Formulation[S], result: SolveResult, seeded: _Seed
) -> tuple[float, str, S] | None:
    """The seed, validated, as ``(value, name, solution)``; ``None`` without one.

    Raises
    ------
    InconsistentResultError
        The seed fails the validator, or its value beats the solver's proven bound.
    """
    got = seeded.get()
    if got is None:
        return None
    name, solution = got
    what = formulation.objective_name
    report = formulation.validate(solution)
    if not report.ok:
        raise InconsistentResultError(
            f"{what}: the heuristic {name!r} seeding the solve returned a point that fails "
            f"the independent validator: {report.violations[0]}"
        )
    value = formulation.objective_of(solution, report)
    if value is None:
        return None  # the heuristic's point has no value for this objective
    bound = result.bound
    if bound is not None and _improves(formulation.sense, float(value), bound):
        raise InconsistentResultError(
            f"{what}: the heuristic {name!r} reaches {value!r}, better than the solver's "
            f"proven bound {bound!r} ({formulation.sense})"
        )
    return float(value), name, solution


def _seeded_result(
    formulation: Formulation[S],
    model: Any,
    result: SolveResult,
    seed: tuple[float, str, S],
    accept_feasible: bool,
) -> ExactResult[S]:
    """The stopped solve with the seed as its incumbent (module notes, *Seeding*)."""
    value, name, solution = seed
    note = f"incumbent from the heuristic {name!r}" + (
        " (the solver had none)" if not result.has_solution else " (better than the solver's)"
    )
    seeded = dataclasses.replace(
        result,
        solution_status=SolutionStatus.FEASIBLE,
        objective=value,
        gap=relative_gap(value, result.bound),
        message=f"{result.message}; {note}" if result.message else note,
    )
    exact = _wrap(formulation, model, seeded, solution)
    exact = dataclasses.replace(exact, extra={**exact.extra, "incumbent_source": name})
    return exact.require(accept_feasible)


def _stopped(
    formulation: Formulation[S],
    model: Any,
    result: SolveResult,
    seeded: _Seed,
    accept_feasible: bool,
) -> ExactResult[S]:
    """A solve that found no point: the seed as its incumbent at a limit, else raise.

    Raises
    ------
    NotOptimalError
        Always, unless a seed stands in and ``accept_feasible`` accepts it.
    """
    if result.termination in _STOPS:
        seed = _seeded_incumbent(formulation, result, seeded)
        if seed is not None:
            return _seeded_result(formulation, model, result, seed, accept_feasible)
    raise NotOptimalError(_no_point(formulation, model, result))


# -- internals ----------------------------------------------------------------------------


def _as_solve_result(exc: NotOptimalError) -> SolveResult:
    if isinstance(exc.result, SolveResult):
        return exc.result
    raise exc  # pragma: no cover - the solver layer raises with its own record


def _mapping(value: Any, model: Any, *args: Any) -> dict[str, Any]:
    """A fixed mapping, or a callable's on the built model (nothing before the build)."""
    if value is None:
        return {}
    if callable(value):
        return {} if model is None else dict(value(model, *args))
    return dict(value)


def _wrap(
    formulation: Formulation[S], model: Any, result: SolveResult, solution: S | None
) -> ExactResult[S]:
    lp = formulation.lp_bound(model, result) if formulation.lp_bound and model is not None else None
    return ExactResult.from_solve(
        result,
        solution,
        sense=formulation.sense,
        objective_name=formulation.objective_name,
        lp_bound=lp,
        size=_mapping(formulation.size, model),
        extra=_mapping(formulation.extra, model, solution, result),
    )


def _no_point(formulation: Formulation[S], model: Any, result: SolveResult) -> ExactResult[S]:
    """The result of a solve that found no point: the status, never a solution."""
    return _wrap(formulation, model, dataclasses.replace(result, objective=None), None)


def _run(
    model: Any, formulation: Formulation[S], settings: SolveSettings, build_seconds: float
) -> tuple[SolveResult, Any]:
    """Hand ``model`` to its backend, always taking the incumbent; return (result, point)."""
    from optsched.solvers import LinearProgram

    if isinstance(model, AlgorithmBackend):
        started = time.perf_counter()
        result, payload = model.run(settings)
        # An algorithm that does not time itself is timed here; the build is the path's.
        return (
            dataclasses.replace(
                result,
                build_seconds=build_seconds + result.build_seconds,
                solve_seconds=result.solve_seconds or time.perf_counter() - started,
                solver=result.solver or model.name,
            ),
            payload,
        )
    if settings.time_limit is not None and settings.time_limit <= 0:
        from optsched.solvers.result import stopped_while_building

        raise NotOptimalError(
            stopped_while_building(
                settings.solver, build_seconds, "building the model used the whole time limit"
            )
        )
    # The solver layer subtracts the build time from the limit itself.
    limit = None if settings.time_limit is None else settings.time_limit + build_seconds
    if isinstance(model, LinearProgram):
        sol = _solve_matrix(
            model,
            settings,
            time_limit=limit,
            build_seconds=build_seconds,
            warm_start=settings.warm_start,
        )
        return sol.result, sol
    from optsched.solvers import solve as solve_model

    start = settings.warm_start is not None and formulation.set_start is not None
    if start:
        assert formulation.set_start is not None
        formulation.set_start(model, settings.warm_start)  # the solvable model itself
    result = solve_model(
        model,
        settings.solver,
        time_limit=limit,
        mip_gap=settings.mip_gap,
        threads=settings.threads,
        accept_feasible=True,
        build_seconds=build_seconds,
        options=dict(settings.solver_options) or None,
        warm_start=start,
    )
    return result, None


def _solve_matrix(
    lp: Any,
    settings: SolveSettings,
    *,
    time_limit: float | None,
    build_seconds: float,
    warm_start: Any,
    mip_gap: float | None = None,
    use_gap: bool = True,
) -> Any:
    """:func:`~optsched.solvers.solve_matrix` with the path's settings, ``solver`` passed on."""
    from optsched.solvers import MatrixSolution, solve_matrix

    return solve_matrix(
        lp,
        time_limit=time_limit,
        mip_gap=settings.mip_gap if use_gap else mip_gap,
        threads=settings.threads,
        accept_feasible=True,
        build_seconds=build_seconds,
        options=dict(settings.solver_options) or None,
        warm_start=warm_start if isinstance(warm_start, MatrixSolution) else None,
        solver=settings.solver,
    )


def _polish(
    model: Any,
    formulation: Formulation[S],
    settings: SolveSettings,
    result: SolveResult,
    point: Any,
    built: Any = None,
) -> tuple[SolveResult, Any]:
    """Re-solve with the incumbent's decision variables fixed (module notes).

    ``built`` is what the formulation built (``model`` is its solvable part), for
    ``formulation.repair``.
    """
    from optsched.solvers import LinearProgram

    if isinstance(model, LinearProgram):
        values = None
        if formulation.repair is not None and point is not None and point.x is not None:
            values = formulation.repair(built, point)
        polished_point = _polish_matrix(model, settings, point, values)
        polished = polished_point.result
    elif isinstance(model, AlgorithmBackend) or not type(model).__module__.startswith("pyomo"):
        return result, point  # only Pyomo and matrix models have variables to fix
    else:
        if formulation.repair is not None:
            formulation.repair(built, point)
        polished_point = point
        polished = _polish_pyomo(model, formulation, settings)
    objective = polished.objective
    return (
        dataclasses.replace(
            result,
            objective=objective,
            gap=relative_gap(objective, result.bound),
            solve_seconds=result.solve_seconds + polished.solve_seconds,
        ),
        polished_point,
    )


def _polish_pyomo(model: Any, formulation: Formulation[S], settings: SolveSettings) -> SolveResult:
    import pyomo.environ as pyo

    from optsched.solvers import solve as solve_model

    if formulation.polish is True:
        chosen = [
            v
            for v in model.component_data_objects(pyo.Var, active=True)
            if (v.is_integer() or v.is_binary()) and not v.fixed
        ]
    else:
        chosen = [
            v
            for name in formulation.polish  # type: ignore[union-attr]
            for v in getattr(model, name).values()
            if not v.fixed
        ]
    fixed = []
    for var in chosen:
        if var.value is not None:
            var.fix(round(var.value) if var.is_integer() or var.is_binary() else var.value)
            fixed.append(var)
    try:
        # No native options: a limit meant for the search (a node limit) must not stop the
        # polishing solve, which has little or nothing left to branch on.
        # A command's deadline bounds this solve too (it re-translates the whole model); once
        # it is spent the polish stops now, never handing the solver a limit <= 0.
        left = clip(None)
        if left is not None and left <= 0:
            from optsched.solvers.result import stopped_while_building

            raise NotOptimalError(
                stopped_while_building(
                    settings.solver, 0.0, "the time limit was spent before polishing the incumbent"
                )
            )
        return solve_model(model, settings.solver, threads=settings.threads, time_limit=left)
    except NotOptimalError as exc:
        if exc.result.termination is TerminationCondition.TIME_LIMIT:
            raise  # stopped short by the time limit, not an infeasible incumbent
        raise InconsistentResultError(
            f"{formulation.objective_name}: the incumbent's decision variables, rounded and "
            f"fixed, are not a feasible point of the model ({exc})"
        ) from None
    finally:
        for var in fixed:
            var.unfix()


def _polish_matrix(lp: Any, settings: SolveSettings, point: Any, values: Any = None) -> Any:
    """``point`` re-solved with its integer columns (or those of ``values``) rounded and fixed."""
    import numpy as np

    from optsched.solvers import LinearProgram

    if not lp.is_mip or point is None or point.x is None:
        return point
    integer = np.asarray(lp.integrality, dtype=bool)
    rounded = np.round(point.x if values is None else values)
    lower = np.where(integer, rounded, lp.col_lower)
    upper = np.where(integer, rounded, lp.col_upper)
    fixed = LinearProgram(
        lp.c,
        lp.a,
        lp.row_lower,
        lp.row_upper,
        lower,
        upper,
        sense=lp.sense,
        offset=lp.offset,
    )
    try:
        out = _solve_matrix(
            fixed,
            dataclasses.replace(settings, solver_options={}),
            time_limit=None,
            build_seconds=0.0,
            warm_start=None,
            use_gap=False,
        )
    except NotOptimalError as exc:
        raise InconsistentResultError(
            f"the incumbent's integer columns, rounded and fixed, are not a feasible point of "
            f"the model ({exc})"
        ) from None
    if not out.result.is_optimal or out.x is None:
        raise InconsistentResultError(
            "the incumbent's integer columns, rounded and fixed, leave no optimal point"
        )
    return out
