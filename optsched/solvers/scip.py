r"""The SCIP backend for sparse-matrix models (``pyscipopt``).

:func:`~optsched.solvers.matrix.solve_matrix` hands a
:class:`~optsched.solvers.matrix.LinearProgram` here when ``solver="scip"``. SCIP is an
independent branch-and-cut code (Apache 2.0 since SCIP 9), which is what makes it a useful second
opinion on every MILP optsched solves with HiGHS.

The model is built straight from the matrix: one variable per column (bounds, integrality and
objective coefficient in one call) and one linear constraint per row with all its coefficients,
read from the compressed-row form of :math:`A`, so the translation is :math:`O(\mathrm{nnz}(A))`
with one call into SCIP per row and per column. Rows with no finite side are left out (they
constrain nothing). A MILP warm start becomes a SCIP solution added before the solve (SCIP
checks it and keeps it as the first incumbent if it is feasible). Every SCIP status is mapped
through :data:`SCIP_STATUS_MAP`, which the Pyomo path reuses for SCIP's native status.

This module imports ``pyscipopt`` only inside :func:`solve_scip`, so that listing solvers never
loads it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.solvers.program import LinearProgram, MatrixSolution
from optsched.solvers.result import SolutionStatus, SolveResult, TerminationCondition, assemble

__all__ = ["SCIP_STATUS_MAP", "scip_version", "set_parameters", "solve_scip"]

TC = TerminationCondition

#: Every status ``pyscipopt.Model.getStatus()`` returns (the lower-cased members of
#: ``pyscipopt.SCIP_STATUS``) mapped onto :class:`TerminationCondition`. A test checks the map is
#: total. ``gaplimit`` is SCIP's "optimal within the requested ``limits/gap``": as for HiGHS's
#: ``kOptimal`` at its ``mip_rel_gap``, :func:`~optsched.solvers.result.assemble` turns it into
#: ``gap_limit`` when that gap is looser than optsched's optimality tolerance.
SCIP_STATUS_MAP: dict[str, TerminationCondition] = {
    "optimal": TC.OPTIMAL,
    "gaplimit": TC.OPTIMAL,
    "infeasible": TC.INFEASIBLE,
    "unbounded": TC.UNBOUNDED,
    "inforunbd": TC.INFEASIBLE_OR_UNBOUNDED,
    "timelimit": TC.TIME_LIMIT,
    "nodelimit": TC.OTHER_LIMIT,
    "totalnodelimit": TC.OTHER_LIMIT,
    "stallnodelimit": TC.OTHER_LIMIT,
    "memlimit": TC.OTHER_LIMIT,
    "sollimit": TC.OTHER_LIMIT,
    "bestsollimit": TC.OTHER_LIMIT,
    "restartlimit": TC.OTHER_LIMIT,
    "primallimit": TC.OTHER_LIMIT,
    "duallimit": TC.OTHER_LIMIT,
    "userinterrupt": TC.INTERRUPTED,
    "terminate": TC.INTERRUPTED,
    "unknown": TC.UNKNOWN,
}


def scip_version(model: Any) -> str:
    """SCIP's version as ``major.minor.tech`` (e.g. ``"10.0.2"``)."""
    return f"{model.getMajorVersion()}.{model.getMinorVersion()}.{model.getTechVersion()}"


def set_parameters(model: Any, params: dict[str, Any]) -> None:
    """Set SCIP parameters, refusing (naming it) one SCIP does not know or whose value is wrong.

    Raises
    ------
    InvalidInstanceError
        Field ``options``: an unknown parameter name (e.g. a HiGHS option passed to SCIP) or a
        value of the wrong type or out of range.
    """
    for key, value in params.items():
        try:
            model.setParam(key, value)
        except KeyError:
            raise InvalidInstanceError(
                "options",
                f"SCIP has no parameter {key!r} (SCIP parameters look like 'limits/nodes')",
            ) from None
        except (TypeError, ValueError) as exc:
            raise InvalidInstanceError("options", f"SCIP parameter {key!r}: {exc}") from None
        except Exception as exc:  # pyscipopt raises a bare Exception for a refused value
            raise InvalidInstanceError(
                "options", f"SCIP refuses parameter {key!r} = {value!r}: {exc}"
            ) from None


def _build(lp: LinearProgram, model: Any) -> list[Any]:
    """Add ``lp``'s columns and rows to an empty SCIP model; return the variables in order."""
    from pyscipopt import Expr, ExprCons
    from pyscipopt.scip import Term

    ints = lp.integrality if lp.integrality is not None else np.zeros(lp.n_variables, bool)
    lower = [None if v == -math.inf else float(v) for v in lp.col_lower.tolist()]
    upper = [None if v == math.inf else float(v) for v in lp.col_upper.tolist()]
    variables = [
        model.addVar(vtype="I" if flag else "C", lb=lo, ub=up, obj=cost)
        for flag, lo, up, cost in zip(ints.tolist(), lower, upper, lp.c.tolist(), strict=True)
    ]
    if lp.sense == "max":
        model.setMaximize()
    if lp.offset:
        model.addObjoffset(lp.offset)
    terms = np.empty(len(variables), dtype=object)
    terms[:] = [Term(v) for v in variables]
    rows = lp.a.tocsr()
    start, index, value = rows.indptr, rows.indices, rows.data.tolist()
    for i, (lo, up) in enumerate(zip(lp.row_lower.tolist(), lp.row_upper.tolist(), strict=True)):
        if lo == -math.inf and up == math.inf:
            continue
        a, b = int(start[i]), int(start[i + 1])
        expr = Expr(dict(zip(terms[index[a:b]], value[a:b], strict=True)))
        model.addCons(
            ExprCons(expr, lhs=None if lo == -math.inf else lo, rhs=None if up == math.inf else up)
        )
    return variables


def _add_start(lp: LinearProgram, model: Any, variables: list[Any], x: np.ndarray) -> bool:
    """Hand ``x`` to SCIP as a MIP start (integer columns rounded); whether SCIP kept it."""
    point = np.asarray(x, dtype=np.float64)
    if lp.integrality is not None:
        point = np.where(lp.integrality, np.round(point), point)
    sol = model.createSol()
    for var, val in zip(variables, point.tolist(), strict=True):
        model.setSolVal(sol, var, val)
    return bool(model.addSol(sol, free=True))


def solve_scip(
    lp: LinearProgram,
    *,
    time_limit: float | None,
    mip_gap: float,
    threads: int | None,
    build_seconds: float,
    options: dict[str, Any],
    warm_start: MatrixSolution | None,
) -> MatrixSolution:
    """Solve a :class:`LinearProgram` with SCIP, whatever the outcome.

    The backend of :func:`~optsched.solvers.matrix.solve_matrix`, which checks the options,
    subtracts the build time from ``time_limit`` and applies the non-optimality policy; call
    that instead.

    Parameters
    ----------
    lp : LinearProgram
    time_limit : float or None
        Seconds left; translating the matrix into SCIP counts against them too
        (``limits/time`` gets what is left after it).
    mip_gap : float
        ``limits/gap`` for a MILP.
    threads : int or None
        ``lp/threads`` (the LP solver's threads; SCIP's branch and bound is sequential).
    build_seconds : float
        Recorded in the result.
    options : dict
        SCIP parameters by name (``{"limits/nodes": 1}``), set after optsched's own so they
        override them.
    warm_start : MatrixSolution or None
        For a MILP, its point becomes SCIP's first candidate incumbent
        (``result.extra["warm_start_kept"]`` says whether SCIP found it feasible). LPs ignore
        it: SCIP takes no basis from outside.

    Returns
    -------
    MatrixSolution
        Status, objective, SCIP's dual bound and the point; no duals or basis.

    Raises
    ------
    InvalidInstanceError
        A parameter SCIP does not know or refuses (field ``options``).
    """
    import pyscipopt

    start = time.perf_counter()
    model = pyscipopt.Model()
    # Quiet: SCIP's log and warnings would otherwise reach standard output, which carries the
    # one JSON object of ``--json``.
    model.hideOutput(quiet=True)
    variables = _build(lp, model)
    params: dict[str, Any] = {}
    if time_limit is not None:
        left = time_limit - (time.perf_counter() - start)
        if left <= 0:
            return MatrixSolution(
                result=_stopped(lp, build_seconds, time.perf_counter() - start, model), x=None
            )
        params["limits/time"] = left
    if lp.is_mip:
        params["limits/gap"] = float(mip_gap)
    if threads is not None:
        params["lp/threads"] = int(threads)
    params.update(options)
    set_parameters(model, params)
    extra: dict[str, Any] = {}
    if warm_start is not None and lp.is_mip and warm_start.x is not None:
        if warm_start.x.size == lp.n_variables:
            extra["warm_start_kept"] = _add_start(lp, model, variables, warm_start.x)
    model.optimize()
    elapsed = time.perf_counter() - start

    native = str(model.getStatus())
    termination = SCIP_STATUS_MAP.get(native, TC.UNKNOWN)
    best = model.getBestSol() if model.getNSols() > 0 else None
    has_point = best is not None and termination not in (TC.INFEASIBLE, TC.UNBOUNDED)
    if termination is TC.OPTIMAL and has_point:
        solution = SolutionStatus.OPTIMAL
    elif has_point:
        solution = SolutionStatus.FEASIBLE
    else:
        solution = SolutionStatus.NO_SOLUTION
    objective = float(model.getSolObjVal(best)) if has_point else None
    dual_bound = float(model.getDualbound())
    bound = dual_bound if abs(dual_bound) < model.infinity() else None
    if lp.is_mip:
        extra["nodes"] = int(model.getNTotalNodes())
    result = assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver="scip",
        solver_version=scip_version(model),
        native_status=native,
        extra=extra,
    )
    x = None
    if result.has_solution and best is not None:
        x = np.array([model.getSolVal(best, v) for v in variables], dtype=np.float64)
    return MatrixSolution(result=result, x=x, iterations=int(model.getNLPIterations()))


def _stopped(lp: LinearProgram, build_seconds: float, spent: float, model: Any) -> SolveResult:
    """The result when translating the matrix used up the time limit."""
    return assemble(
        TC.TIME_LIMIT,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=build_seconds,
        solve_seconds=spent,
        solver="scip",
        solver_version=scip_version(model),
        native_status="not started",
        message=f"translating the {lp.n_rows}-row model into SCIP used the whole time limit",
    )
