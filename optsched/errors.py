"""Typed errors raised by optsched.

Every error optsched raises on purpose derives from :class:`OptschedError`, so callers can catch
the library's errors without catching programming mistakes. The CLI maps them onto exit codes
(DESIGN §2.2): :class:`InvalidInstanceError` exits 2, :class:`NotOptimalError` exits 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optsched.solvers.result import SolveResult

__all__ = [
    "InvalidInstanceError",
    "InvalidScheduleError",
    "ModelError",
    "NotOptimalError",
    "OptschedError",
    "SolverUnavailableError",
]


class OptschedError(Exception):
    """Base class of every error optsched raises deliberately."""


class InvalidInstanceError(OptschedError, ValueError):
    """Problem data failed validation.

    Parameters
    ----------
    field : str
        Dotted/indexed path of the offending field, e.g. ``"jobs[3].epochs"``.
    message : str
        What is wrong, e.g. ``"must be >= 1, got 0"``.
    errors : list of tuple of str, optional
        Every ``(field, message)`` found, when validation reports several at once. The first one
        is ``(field, message)``.

    Notes
    -----
    ``str(error)`` starts with the field path, so command-line users see which field to fix.
    """

    def __init__(
        self, field: str, message: str, errors: list[tuple[str, str]] | None = None
    ) -> None:
        self.field = field
        self.message = message
        self.errors = errors if errors else [(field, message)]
        text = f"{field}: {message}" if field else message
        if len(self.errors) > 1:
            text += f" (and {len(self.errors) - 1} more: " + "; ".join(
                f"{f}: {m}" for f, m in self.errors[1:4]
            )
            text += ", ..." if len(self.errors) > 4 else ""
            text += ")"
        super().__init__(text)


class InvalidScheduleError(OptschedError, ValueError):
    """A schedule violates its instance's constraints (see the family's ``validate``).

    Parameters
    ----------
    violations : list
        The violations found by the independent validator.
    """

    def __init__(self, violations: list[Any]) -> None:
        self.violations = list(violations)
        head = "; ".join(str(v) for v in self.violations[:3])
        more = f" (+{len(self.violations) - 3} more)" if len(self.violations) > 3 else ""
        super().__init__(f"schedule is infeasible: {head}{more}")


class ModelError(OptschedError, ValueError):
    """A model cannot be handed to the chosen backend (e.g. integers to an LP-only solver)."""


class SolverUnavailableError(OptschedError, RuntimeError):
    """The requested solver is not installed; the message says how to install it."""


class NotOptimalError(OptschedError, RuntimeError):
    """The solver stopped without proving optimality and the caller did not accept that.

    Parameters
    ----------
    result : SolveResult
        The full result (status, incumbent objective if any, bound, gap, timings).
    """

    def __init__(self, result: SolveResult) -> None:
        self.result = result
        extra = ""
        if result.objective is not None:
            extra = f", incumbent {result.objective:.6g}"
        if result.bound is not None:
            extra += f", bound {result.bound:.6g}"
        super().__init__(
            f"solver {result.solver!r} stopped with status {result.status.value!r}"
            f" (termination: {result.termination.value}){extra}; pass accept_feasible=True"
            " to use a feasible incumbent"
        )
