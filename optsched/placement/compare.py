r"""Heuristics measured against the optimum: the gap table.

For each objective, :func:`compare` solves the instance exactly
(:func:`~optsched.placement.solve`), runs every heuristic, scores each heuristic placement
with the independent validator, and reports its relative gap

.. math:: \mathrm{gap} = \frac{f(\text{heuristic}) - f^\star}{|f^\star|}

(0 when both are 0, infinite when only :math:`f^\star` is). When a time limit stops the exact
solve, :math:`f^\star` is replaced by the solver's proven lower bound and the gap is an upper
bound on the true gap (``reference = "bound"``).

Some cells do not apply: ``clwp`` is only defined for placements that keep every job on one
server, ``nlwp`` only for placements that assign GPUs; a heuristic that finds no room reports
``failed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optsched.errors import HeuristicFailedError, InvalidInstanceError, ModelError, NotOptimalError
from optsched.placement.exact import OBJECTIVES, solve
from optsched.placement.heuristics import HEURISTICS
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.placement.validator import validate
from optsched.results import ExactResult
from optsched.solvers.result import Status
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, within

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_OBJECTIVES", "GapCell", "PlacementComparison", "compare", "relative_gap"]

#: Objectives compared by default (``nlwp`` is opt-in: its exact model grows quickly).
DEFAULT_OBJECTIVES: tuple[str, ...] = ("servers", "traffic", "max-load", "interference", "clwp")


def relative_gap(value: float, reference: float) -> float:
    """``(value - reference) / |reference|``; 0 when equal within tolerance, inf over a zero."""
    if within(value, reference, OBJECTIVE_AGREEMENT_TOL):
        return 0.0
    if reference == 0.0:
        return math.inf
    return (value - reference) / abs(reference)


@dataclass
class GapCell:
    """One heuristic on one objective.

    Attributes
    ----------
    heuristic, objective : str
    value : float or None
        The heuristic placement's objective (``None`` when ``note`` says why).
    gap : float or None
        Relative gap to the reference (optimum or bound).
    note : str
        ``""``, ``"failed"`` (no room found), ``"n/a"`` (objective undefined for this
        placement), or ``"invalid"`` (the validator rejected it; never expected).
    """

    heuristic: str
    objective: str
    value: float | None
    gap: float | None
    note: str = ""


@dataclass(repr=False)
class PlacementComparison:
    """The gap table of :func:`compare`.

    Attributes
    ----------
    objectives : list of str
    heuristics : list of str
    optimum : dict of str to float or None
        The reference value per objective (optimum, or bound when not proven).
    reference : dict of str to str
        ``"optimum"``, ``"bound"``, or the reason there is none (``"infeasible"``,
        ``"limit_no_solution"``...).
    solutions : dict of str to ExactResult
        The exact solves that returned a placement (optimal or incumbent).
    cells : list of GapCell
    """

    objectives: list[str]
    heuristics: list[str]
    optimum: dict[str, float | None] = field(default_factory=dict)
    reference: dict[str, str] = field(default_factory=dict)
    solutions: dict[str, ExactResult[Placement]] = field(default_factory=dict)
    cells: list[GapCell] = field(default_factory=list)

    def cell(self, heuristic: str, objective: str) -> GapCell:
        """The cell of one heuristic and objective."""
        return next(c for c in self.cells if c.heuristic == heuristic and c.objective == objective)

    @property
    def stopped_short(self) -> list[str]:
        """Objectives whose exact solve stopped before proving optimality (or infeasibility)."""
        proven = ("optimum", "infeasible")
        return [o for o in self.objectives if self.reference.get(o) not in proven]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``optimum``, ``reference``, ``solve_seconds``, a row per heuristic."""
        rows = []
        for h in self.heuristics:
            row: dict[str, Any] = {"heuristic": h}
            for o in self.objectives:
                c = self.cell(h, o)
                row[o] = {"value": c.value, "gap": c.gap, "note": c.note}
            rows.append(row)
        return {
            "objectives": list(self.objectives),
            "optimum": dict(self.optimum),
            "reference": dict(self.reference),
            "optimal": not self.stopped_short,
            "solve_seconds": {o: s.solve_seconds for o, s in self.solutions.items()},
            "rows": rows,
        }

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per heuristic and objective.

        Columns ``heuristic``, ``objective``, ``value``, ``gap``, ``note``, ``reference`` (the
        exact value compared with) and ``reference_kind`` (``optimum``, ``bound``...).
        """
        import pandas as pd

        rows = [
            {
                "heuristic": c.heuristic,
                "objective": c.objective,
                "value": c.value,
                "gap": c.gap,
                "note": c.note,
                "reference": self.optimum.get(c.objective),
                "reference_kind": self.reference.get(c.objective, ""),
            }
            for c in self.cells
        ]
        columns = ["heuristic", "objective", "value", "gap", "note", "reference", "reference_kind"]
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        short = f", stopped short: {self.stopped_short}" if self.stopped_short else ""
        return (
            f"PlacementComparison({len(self.heuristics)} heuristics x "
            f"{len(self.objectives)} objectives{short})"
        )

    def _repr_html_(self) -> str:
        frame = self.to_frame().pivot(index="heuristic", columns="objective", values="gap")
        html: str = frame.to_html(float_format=lambda g: f"{100 * g:+.1f}%", na_rep="-")
        return html


def compare(
    instance: PlacementInstance,
    objectives: Sequence[str] | None = None,
    heuristics: Sequence[str] | None = None,
    *,
    time_limit: float | None = None,
    solver: str = "highs",
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> PlacementComparison:
    """Compare heuristics with the exact optimum on each objective.

    Parameters
    ----------
    instance : PlacementInstance
    objectives : sequence of str, optional
        Default :data:`DEFAULT_OBJECTIVES`.
    heuristics : sequence of str, optional
        Names in :data:`~optsched.placement.heuristics.HEURISTICS` (default all).
    time_limit : float, optional
        Per exact solve; a solve stopped by it is compared against its proven bound.
    solver, mip_gap, threads, solver_options
        Passed to every exact :func:`~optsched.placement.solve`.
    seed : int
        Seed of the ``random`` heuristic.

    Returns
    -------
    PlacementComparison
        Its :attr:`~PlacementComparison.stopped_short` lists the objectives whose exact solve
        stopped short (their gaps are measured against the bound, upper bounds on the truth).

    Raises
    ------
    InvalidInstanceError
        Unknown objective (field ``objectives``) or heuristic name (field ``heuristics``).
    """
    objs = list(DEFAULT_OBJECTIVES if objectives is None else objectives)
    names = list(HEURISTICS if heuristics is None else heuristics)
    for i, name in enumerate(names):
        if name not in HEURISTICS:
            raise InvalidInstanceError(
                f"heuristics[{i}]", f"unknown heuristic {name!r}; known: {sorted(HEURISTICS)}"
            )
    for i, objective in enumerate(objs):
        if objective not in OBJECTIVES:
            raise InvalidInstanceError(
                f"objectives[{i}]", f"unknown objective {objective!r}; known: {sorted(OBJECTIVES)}"
            )
    out = PlacementComparison(objectives=objs, heuristics=names)
    for objective in objs:
        try:
            solution = solve(
                instance,
                objective,
                solver=solver,
                time_limit=time_limit,
                mip_gap=mip_gap,
                threads=threads,
                solver_options=solver_options,
                accept_feasible=True,
            )
        except NotOptimalError as exc:
            status = exc.result.status
            out.optimum[objective] = exc.result.bound
            if status is Status.INFEASIBLE:
                out.reference[objective] = "infeasible"
            else:
                out.reference[objective] = status.value if exc.result.bound is None else "bound"
            continue
        except ModelError as exc:
            if "infeasible" not in str(exc):
                raise
            out.optimum[objective] = None
            out.reference[objective] = "infeasible"
            continue
        out.solutions[objective] = solution
        if solution.optimal:
            out.optimum[objective] = solution.objective
            out.reference[objective] = "optimum"
        else:
            out.optimum[objective] = solution.bound
            out.reference[objective] = "bound"
    for name in names:
        try:
            placement = HEURISTICS[name](instance, seed)
        except (HeuristicFailedError, ModelError):
            out.cells += [GapCell(name, o, None, None, "failed") for o in objs]
            continue
        report = validate(instance, placement)
        for objective in objs:
            value = report.objectives.get(objective)
            if not report.ok:
                out.cells.append(GapCell(name, objective, None, None, "invalid"))
            elif value is None:
                out.cells.append(GapCell(name, objective, None, None, "n/a"))
            else:
                ref = out.optimum.get(objective)
                gap = relative_gap(value, ref) if ref is not None else None
                out.cells.append(GapCell(name, objective, value, gap))
    return out
