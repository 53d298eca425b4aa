"""Solver outcomes on two axes, plus the result record every backend returns.

:class:`TerminationCondition` says *why* the solver stopped, :class:`SolutionStatus` says *what
the returned point is*, and :class:`Status` is the one-word summary users and the CLI branch on.
Every backend maps each of its native codes onto these enums through a total dictionary whose
default is ``UNKNOWN``/``ERROR``, so no native status is ever passed through unmapped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "SolutionStatus",
    "SolveResult",
    "Status",
    "TerminationCondition",
    "assemble",
    "stopped_while_building",
]


class TerminationCondition(StrEnum):
    """Why the solver stopped."""

    OPTIMAL = "optimal"
    """Optimality proven within the requested gap."""
    TIME_LIMIT = "time_limit"
    """The wall-clock limit was reached."""
    ITERATION_LIMIT = "iteration_limit"
    """An iteration (simplex/IPM) limit was reached."""
    OTHER_LIMIT = "other_limit"
    """Another limit: solution count, node count, objective bound/target, memory."""
    GAP_LIMIT = "gap_limit"
    """The solver stopped at a relative gap looser than optsched's optimality tolerance
    (:data:`~optsched.tolerances.OPTIMALITY_GAP`), e.g. a user-passed ``mip_gap``: the point is
    feasible, not proven optimal."""
    INTERRUPTED = "interrupted"
    """Interrupted by the user or a callback."""
    INFEASIBLE = "infeasible"
    """Proven infeasible."""
    UNBOUNDED = "unbounded"
    """Proven unbounded."""
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    """Proven infeasible or unbounded, without saying which (e.g. by presolve)."""
    NUMERICAL_ERROR = "numerical_error"
    """Stopped on numerical trouble."""
    ERROR = "error"
    """The solver failed (load, model, presolve, postsolve or licence error)."""
    UNKNOWN = "unknown"
    """The solver did not say why it stopped."""


class SolutionStatus(StrEnum):
    """What the point returned with the result is."""

    OPTIMAL = "optimal"
    """A proven optimal point."""
    FEASIBLE = "feasible"
    """A feasible point (incumbent) whose optimality is not proven."""
    NO_SOLUTION = "no_solution"
    """No usable point."""


class Status(StrEnum):
    """One-word summary of a solve, as printed by the CLI (``"status"`` key)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    """A limit was reached with an incumbent."""
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    LIMIT_NO_SOLUTION = "limit_no_solution"
    """A limit was reached before any feasible point was found."""
    ERROR = "error"


_LIMITS = {
    TerminationCondition.GAP_LIMIT,
    TerminationCondition.TIME_LIMIT,
    TerminationCondition.ITERATION_LIMIT,
    TerminationCondition.OTHER_LIMIT,
    TerminationCondition.INTERRUPTED,
}


def summarize(termination: TerminationCondition, solution: SolutionStatus) -> Status:
    """Collapse the two axes onto the summary :class:`Status`.

    Parameters
    ----------
    termination : TerminationCondition
    solution : SolutionStatus

    Returns
    -------
    Status
    """
    if solution is SolutionStatus.OPTIMAL or (
        termination is TerminationCondition.OPTIMAL and solution is not SolutionStatus.NO_SOLUTION
    ):
        return Status.OPTIMAL
    if termination is TerminationCondition.INFEASIBLE:
        return Status.INFEASIBLE
    if termination is TerminationCondition.UNBOUNDED:
        return Status.UNBOUNDED
    if termination is TerminationCondition.INFEASIBLE_OR_UNBOUNDED:
        return Status.INFEASIBLE_OR_UNBOUNDED
    if solution is SolutionStatus.FEASIBLE:
        return Status.FEASIBLE
    if termination in _LIMITS:
        return Status.LIMIT_NO_SOLUTION
    return Status.ERROR


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    r"""Relative optimality gap :math:`|b - z| / \max(|z|, 10^{-9})`.

    Returns ``0.0`` when both are equal (including both zero) and ``None`` when either is missing
    or infinite.
    """
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    diff = abs(bound - objective)
    if diff == 0.0:
        return 0.0
    return diff / max(abs(objective), 1e-9)


@dataclass(frozen=True)
class SolveResult:
    """What one solve produced.

    Attributes
    ----------
    termination : TerminationCondition
        Why the solver stopped.
    solution_status : SolutionStatus
        What the loaded point is.
    objective : float or None
        Objective of the returned point (``None`` when there is none).
    bound : float or None
        Best proven bound on the optimum (an upper bound when maximising).
    gap : float or None
        Relative gap between ``objective`` and ``bound``.
    build_seconds : float
        Time spent building the model in Python (before the solver is called).
    solve_seconds : float
        Wall time of the solver call (including the translation into the solver's format).
    solver : str
        Solver name as requested (e.g. ``"highs"``).
    solver_version : str
        Version reported by the solver.
    native_status : str
        The solver's own status code, for diagnosis.
    message : str
        Anything else the backend wants the user to know.
    """

    termination: TerminationCondition
    solution_status: SolutionStatus
    objective: float | None
    bound: float | None
    gap: float | None
    build_seconds: float
    solve_seconds: float
    solver: str
    solver_version: str
    native_status: str = ""
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        """The summary status (see :class:`Status`)."""
        return summarize(self.termination, self.solution_status)

    @property
    def has_solution(self) -> bool:
        """Whether a point (optimal or feasible) was loaded."""
        return self.solution_status is not SolutionStatus.NO_SOLUTION

    @property
    def is_optimal(self) -> bool:
        """Whether optimality was proven."""
        return self.status is Status.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (enum members become their string values)."""
        return {
            "status": self.status.value,
            "termination": self.termination.value,
            "solution_status": self.solution_status.value,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "build_seconds": self.build_seconds,
            "solve_seconds": self.solve_seconds,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "native_status": self.native_status,
            "message": self.message,
        }


def assemble(
    termination: TerminationCondition,
    solution: SolutionStatus,
    objective: float | None,
    bound: float | None,
    *,
    build_seconds: float,
    solve_seconds: float,
    solver: str,
    solver_version: str,
    native_status: str,
    message: str = "",
    extra: dict[str, Any] | None = None,
) -> SolveResult:
    """Build a :class:`SolveResult` the same way for every backend.

    An optimal point with no reported bound gets its objective as bound; the gap is derived.
    A solver's "optimal" whose bound is farther from its objective than
    :data:`~optsched.tolerances.OPTIMALITY_GAP` (it stopped at a looser requested gap) becomes
    :attr:`TerminationCondition.GAP_LIMIT` with a feasible point: "optimal" always means proven
    within optsched's own tolerance.
    """
    from optsched.tolerances import OPTIMALITY_GAP, within

    if termination is TerminationCondition.OPTIMAL and objective is not None and bound is None:
        bound = objective
    if (
        termination is TerminationCondition.OPTIMAL
        and objective is not None
        and bound is not None
        and not within(objective, bound, OPTIMALITY_GAP)
    ):
        termination = TerminationCondition.GAP_LIMIT
        if solution is SolutionStatus.OPTIMAL:
            solution = SolutionStatus.FEASIBLE
        gap_note = (
            f"stopped at relative gap {relative_gap(objective, bound):.3g}, looser than the "
            f"optimality tolerance {OPTIMALITY_GAP:g}"
        )
        message = f"{message}; {gap_note}" if message else gap_note
    return SolveResult(
        termination=termination,
        solution_status=solution,
        objective=objective,
        bound=bound,
        gap=relative_gap(objective, bound),
        build_seconds=build_seconds,
        solve_seconds=solve_seconds,
        solver=solver,
        solver_version=solver_version,
        native_status=native_status,
        message=message,
        extra=dict(extra or {}),
    )


def stopped_while_building(solver: str, build_seconds: float, message: str) -> SolveResult:
    """The result of a solve whose time limit ran out before the solver was called.

    Status ``limit_no_solution`` with termination ``time_limit``: what a solver stopped by its
    limit before finding a point reports, so callers treat both the same.
    """
    return assemble(
        TerminationCondition.TIME_LIMIT,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=build_seconds,
        solve_seconds=0.0,
        solver=solver,
        solver_version="",
        native_status="not started",
        message=message,
    )
