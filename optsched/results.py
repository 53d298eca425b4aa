"""Results shared by every family: the exact result and the validator's report.

* :class:`ExactResult` is what every family's exact ``solve(instance, ...)`` returns: the numeric
  objective of the returned solution, the summary status, the best proven bound, the gap, the LP
  bound where known, timings, solver identity, and the solution itself, **also when the solver
  stopped short** (then ``status`` is not ``optimal`` and :attr:`ExactResult.optimal` is false).
* :class:`Report` is what every family's ``validate(instance, solution)`` returns: ``ok`` and a
  list of typed :class:`Violation` records, with the objective recomputed from the instance and
  the solution alone.

Both are plain frozen records with ``to_dict()`` (JSON-ready) and ``to_frame()`` (pandas), a short
``repr`` and an HTML view for notebooks. They know nothing of any family.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from optsched.errors import InvalidScheduleError, NotOptimalError
from optsched.solvers.result import SolveResult, Status, TerminationCondition

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ExactResult", "Report", "Sense", "Violation"]

S = TypeVar("S")
Sense = Literal["min", "max"]


def _fmt(value: float | None) -> str:
    return "None" if value is None else f"{value:.6g}"


@dataclass(frozen=True, repr=False)
class ExactResult(Generic[S]):
    """The outcome of a family's exact ``solve``.

    Attributes
    ----------
    solution : S or None
        The returned solution (the family's Solution type), ``None`` only when the solver found
        no feasible point (or for a relaxation that has no integral solution).
    objective : float or None
        Objective value of ``solution`` (for an LP relaxation, the LP value).
    status : Status
        ``optimal`` only when optimality is proven within
        :data:`~optsched.tolerances.OPTIMALITY_GAP`, whatever gap or limit the caller passed.
    termination : TerminationCondition
        Why the solver stopped.
    bound : float or None
        Best proven bound on the optimum (a lower bound when minimising, an upper bound when
        maximising).
    gap : float or None
        Relative gap between ``objective`` and ``bound``.
    sense : {"min", "max"}
        Direction of the objective.
    objective_name : str
        Which objective was optimised (families with several name them).
    lp_bound : float or None
        Value of the LP relaxation, where computed.
    build_seconds, solve_seconds : float
        Model building (Python) and solver time.
    solver, solver_version, native_status, message : str
        The solver's identity and its own words.
    size : dict of str to int
        Model size (variables, constraints, ...).
    extra : dict
        Family-specific figures (JSON-ready).
    """

    solution: S | None
    objective: float | None
    status: Status
    termination: TerminationCondition
    bound: float | None
    gap: float | None
    sense: Sense = "min"
    objective_name: str = ""
    lp_bound: float | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    solver: str = ""
    solver_version: str = ""
    native_status: str = ""
    message: str = ""
    size: Mapping[str, int] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_solve(
        cls,
        solve: SolveResult,
        solution: S | None,
        *,
        sense: Sense,
        objective_name: str = "",
        lp_bound: float | None = None,
        size: Mapping[str, int] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ExactResult[S]:
        """Wrap the solver layer's :class:`~optsched.solvers.result.SolveResult`.

        Parameters
        ----------
        solve : SolveResult
        solution : S or None
            The solution extracted from the model.
        sense : {"min", "max"}
        objective_name : str
        lp_bound, size, extra
            See the attributes.

        Notes
        -----
        The record only copies figures: whether ``solution`` is feasible and the solver's
        objective is its value is decided before, once, by the exact-solve path
        (:func:`optsched.family.exact.exact_solve`, whose trust rule is
        :func:`optsched.family.exact.check_agreement`).
        """
        return cls(
            solution=solution,
            objective=solve.objective,
            status=solve.status,
            termination=solve.termination,
            bound=solve.bound,
            gap=solve.gap,
            sense=sense,
            objective_name=objective_name,
            lp_bound=lp_bound,
            build_seconds=solve.build_seconds,
            solve_seconds=solve.solve_seconds,
            solver=solve.solver,
            solver_version=solve.solver_version,
            native_status=solve.native_status,
            message=solve.message,
            size=dict(size or {}),
            extra=dict(extra or {}),
        )

    # -- queries --------------------------------------------------------------------------

    @property
    def optimal(self) -> bool:
        """Whether optimality was proven (within optsched's own tolerance)."""
        return self.status is Status.OPTIMAL

    @property
    def has_solution(self) -> bool:
        """Whether a solution (optimal or incumbent) is attached."""
        return self.solution is not None

    def require(self, accept_feasible: bool = False) -> ExactResult[S]:
        """Return ``self`` if optimal (or a feasible incumbent accepted), else raise.

        Raises
        ------
        NotOptimalError
            Carrying this result, incumbent included.
        """
        if self.optimal:
            return self
        if accept_feasible and self.status is Status.FEASIBLE and self.solution is not None:
            return self
        raise NotOptimalError(self)

    # -- output ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping: every figure, and ``solution`` (its own ``to_dict()``)."""
        sol: Any = self.solution
        if sol is not None and hasattr(sol, "to_dict"):
            sol = sol.to_dict()
        return {
            "status": self.status.value,
            "optimal": self.optimal,
            "objective_name": self.objective_name,
            "sense": self.sense,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "lp_bound": self.lp_bound,
            "termination": self.termination.value,
            "build_seconds": self.build_seconds,
            "solve_seconds": self.solve_seconds,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "native_status": self.native_status,
            "message": self.message,
            "size": dict(self.size),
            **{k: v for k, v in self.extra.items() if k not in ("solution",)},
            "solution": sol,
        }

    def summary(self) -> dict[str, Any]:
        """The one-row summary (no solution)."""
        out = self.to_dict()
        out.pop("solution")
        out.pop("size")
        return out

    def to_frame(self) -> pd.DataFrame:
        """The solution's rows (its own ``to_frame()``), or the one-row summary without one."""
        import pandas as pd

        sol: Any = self.solution
        if sol is not None and hasattr(sol, "to_frame"):
            frame: pd.DataFrame = sol.to_frame()
            return frame
        return pd.DataFrame([self.summary()])

    def __repr__(self) -> str:
        name = f" {self.objective_name}" if self.objective_name else ""
        return (
            f"ExactResult({self.status.value}{name} objective={_fmt(self.objective)} "
            f"bound={_fmt(self.bound)} gap={_fmt(self.gap)} solver={self.solver!r} "
            f"solve_seconds={self.solve_seconds:.3g} solution={type(self.solution).__name__})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.summary().items()
            if v not in (None, "", {})
        )
        return f"<table><caption>ExactResult</caption>{rows}</table>"


@dataclass(frozen=True)
class Violation:
    """One violated constraint, found by a family's independent validator.

    Attributes
    ----------
    constraint : str
        Stable constraint name, as in the family's formulation page (e.g. ``"worker_capacity"``).
    message : str
        What is wrong, in words, with the numbers.
    where : mapping
        Where it is violated: the indices of the constraint (``{"job": 3, "slot": 5}``).
    amount : float or None
        By how much, in the constraint's unit, where that is a number.
    """

    constraint: str
    message: str
    where: Mapping[str, Any] = field(default_factory=dict)
    amount: float | None = None

    def __str__(self) -> str:
        return f"[{self.constraint}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "constraint": self.constraint,
            "message": self.message,
            "where": dict(self.where),
            "amount": self.amount,
        }


@dataclass(repr=False)
class Report:
    """What a family's ``validate(instance, solution)`` found.

    Attributes
    ----------
    violations : list of Violation
        Every violated constraint (empty when the solution is feasible and its reported figures
        are right).
    objective : float or None
        The solution's objective, recomputed from the instance and the solution alone.
    objectives : dict of str to float or None
        Every objective the family defines, recomputed, where it has several.
    details : dict
        Family-specific recomputed figures (loads, per-job values), JSON-ready.
    """

    violations: list[Violation] = field(default_factory=list)
    objective: float | None = None
    objectives: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether nothing is violated."""
        return not self.violations

    def raise_if_invalid(self) -> None:
        """Raise :class:`~optsched.errors.InvalidScheduleError` listing the violations."""
        if self.violations:
            raise InvalidScheduleError(self.violations)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``valid`` is ``ok``)."""
        return {
            "valid": self.ok,
            "objective": self.objective,
            "objectives": dict(self.objectives),
            "violations": [v.to_dict() for v in self.violations],
            **self.details,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per violation: constraint, message, amount and every ``where`` key."""
        import pandas as pd

        rows = [
            {"constraint": v.constraint, "message": v.message, "amount": v.amount, **v.where}
            for v in self.violations
        ]
        return pd.DataFrame(rows, columns=None if rows else ["constraint", "message", "amount"])

    def __repr__(self) -> str:
        head = "ok" if self.ok else f"{len(self.violations)} violation(s)"
        first = f", first: {self.violations[0]}" if self.violations else ""
        return f"Report({head}, objective={_fmt(self.objective)}{first})"

    def _repr_html_(self) -> str:
        if self.ok:
            return f"<p>Report: <b>ok</b>, objective {_fmt(self.objective)}</p>"
        items = "".join(f"<li>{html.escape(str(v))}</li>" for v in self.violations[:50])
        more = f"<li>... {len(self.violations) - 50} more</li>" if len(self.violations) > 50 else ""
        return f"<p>Report: <b>{len(self.violations)} violation(s)</b></p><ul>{items}{more}</ul>"
