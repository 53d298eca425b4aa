"""Typed errors raised by optsched.

Every error optsched raises on purpose derives from :class:`OptschedError`, so callers can catch
the library's errors without catching programming mistakes. The CLI maps them onto exit codes
(DESIGN §2.2): :class:`InvalidInstanceError` exits 2, :class:`NotOptimalError` exits 3.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = [
    "CapacityExceededError",
    "HeuristicFailedError",
    "InconsistentResultError",
    "InvalidInstanceError",
    "InvalidScheduleError",
    "MissingExtraError",
    "ModelError",
    "NotOptimalError",
    "OptschedError",
    "PolicyError",
    "RoundNotOptimalError",
    "SolverUnavailableError",
    "StoppedResult",
]


class OptschedError(Exception):
    """Base class of every error optsched raises deliberately."""


class InvalidInstanceError(OptschedError, ValueError):
    """Problem data (a file, an option, an argument) failed validation.

    Parameters
    ----------
    field : str
        Dotted/indexed path of the offending field, e.g. ``"jobs[3].epochs"``; for a trace, the
        column; ``"<file>"`` when the file itself is refused.
    message : str
        What is wrong, e.g. ``"must be >= 1, got 0"``.
    errors : list of tuple of str, optional
        Every ``(field, message)`` found, when validation reports several at once. The first one
        is ``(field, message)``.
    file : str, optional
        The file the data came from, when it came from one.
    row : int, optional
        The 1-based row (line) of that file, for tabular files.

    Notes
    -----
    ``str(error)`` starts with the file and row (when known) and the field path, so command-line
    users see which field to fix: ``trace.csv: row 17: num_gpu: must be >= 1, got 0``.
    """

    def __init__(
        self,
        field: str,
        message: str,
        errors: list[tuple[str, str]] | None = None,
        *,
        file: str | None = None,
        row: int | None = None,
    ) -> None:
        self.field = field
        self.message = message
        self.errors = errors if errors else [(field, message)]
        self.file = file
        self.row = row
        text = f"{field}: {message}" if field and field != "<file>" else message
        if row is not None and field != "<file>":
            text = f"row {row}: {text}"
        if file is not None and not message.startswith(file):
            text = f"{file}: {text}"
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


class InconsistentResultError(OptschedError, RuntimeError):
    """A solver's answer disagrees with the independent recomputation of its own solution.

    Raised instead of returning a result whose objective the validator does not reproduce: an
    exact library never reports such a result as a success.
    """


class ModelError(OptschedError, ValueError):
    """A model cannot be handed to the chosen backend (e.g. integers to an LP-only solver)."""


class SolverUnavailableError(OptschedError, RuntimeError):
    """The requested solver is not installed; the message says how to install it."""


class StoppedResult(Protocol):
    """What :class:`NotOptimalError` reads of a result.

    Both :class:`~optsched.solvers.result.SolveResult` and
    :class:`~optsched.results.ExactResult` have it; naming them here would make this module,
    which every other one imports, import them in turn.
    """

    @property
    def solver(self) -> str: ...

    @property
    def status(self) -> Any: ...

    @property
    def termination(self) -> Any: ...

    @property
    def objective(self) -> float | None: ...

    @property
    def bound(self) -> float | None: ...

    @property
    def gap(self) -> float | None: ...


class NotOptimalError(OptschedError, RuntimeError):
    """The solver stopped without proving optimality and the caller did not accept that.

    Parameters
    ----------
    result : SolveResult or ExactResult
        The full result (status, incumbent objective and solution if any, bound, gap, timings);
        a family's exact ``solve`` raises with its :class:`~optsched.results.ExactResult`, so
        the incumbent is never lost.
    """

    def __init__(self, result: StoppedResult) -> None:
        # Any: callers read the family's own fields (the solution, extra) of what they raised
        self.result: Any = result
        extra = ""
        if result.objective is not None:
            extra = f", incumbent {result.objective:.6g}"
            source = (getattr(result, "extra", None) or {}).get("incumbent_source")
            if source:
                # a stopped solve keeps the family's greedy seed (optsched.family.exact)
                extra += f" (from the heuristic {source!r})"
        if result.bound is not None:
            extra += f", bound {result.bound:.6g}"
        if result.gap is not None:
            extra += f", gap {result.gap:.3g}"
        super().__init__(
            f"solver {result.solver!r} stopped with status {result.status.value!r}"
            f" (termination: {result.termination.value}){extra}; accept a feasible incumbent"
            " to use it (--accept-feasible on the command line, accept_feasible=True in Python)"
        )


class PolicyError(OptschedError, RuntimeError):
    """A policy returned an allocation the world cannot carry out (a bug in the policy)."""


class RoundNotOptimalError(NotOptimalError):
    """A simulated round's optimization stopped further from optimal than the simulator accepts.

    Carries the round's result like :class:`NotOptimalError` (its solver objects left out, so
    that it serializes), with advice naming what a user can change instead of
    ``--accept-feasible``, which ``optsched sim`` does not have.
    """

    def __init__(self, result: Any, message: str) -> None:
        self.result = result
        RuntimeError.__init__(self, message)


class CapacityExceededError(OptschedError, RuntimeError):
    """An algorithm tried to commit more than a server's capacity (a bug, never expected)."""


class HeuristicFailedError(OptschedError, RuntimeError):
    """A heuristic found no server with room for some task (it does not backtrack)."""


class MissingExtraError(OptschedError, ImportError):
    """An optional dependency of the interference predictors is not installed."""
