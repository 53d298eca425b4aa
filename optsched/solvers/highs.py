r"""The HiGHS backend for sparse-matrix models (``highspy``).

:func:`~optsched.solvers.matrix.solve_matrix` hands a
:class:`~optsched.solvers.matrix.LinearProgram` here when ``solver="highs"`` (the default).
This module is the only one in optsched that imports ``highspy``. It maps every HiGHS model
status onto :class:`~optsched.solvers.result.TerminationCondition` (the same total map the Pyomo
backend uses), returns the primal point and, for LPs, the row and column duals and the basis, and
takes a previous solution's basis as a warm start (HiGHS then resumes the simplex from it, which
is what makes a sequence of similar LPs cheap).

``LinearProgram`` and ``MatrixSolution`` (:mod:`optsched.solvers.program`) are re-exported
here, where they were first defined.

Complexity: building is :math:`O(\mathrm{nnz}(A))` array copies; the solve is HiGHS's.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np

from optsched.solvers.program import LinearProgram, MatrixSolution
from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

__all__ = [
    "HIGHS_MIP_SAFE_OPTIONS",
    "HIGHS_STATUS_MAP",
    "LinearProgram",
    "MatrixSolution",
    "reset_thread_pool",
    "run_clock_offset",
    "solve_highs",
    "warm_basis",
]

TC = TerminationCondition

#: Every native HiGHS model status (``highspy.HighsModelStatus``) mapped onto
#: :class:`TerminationCondition`. A test checks the map is total.
HIGHS_STATUS_MAP: dict[str, TerminationCondition] = {
    "kNotset": TC.UNKNOWN,
    "kLoadError": TC.ERROR,
    "kModelError": TC.ERROR,
    "kPresolveError": TC.ERROR,
    "kSolveError": TC.NUMERICAL_ERROR,
    "kPostsolveError": TC.NUMERICAL_ERROR,
    "kModelEmpty": TC.OPTIMAL,
    "kOptimal": TC.OPTIMAL,
    "kInfeasible": TC.INFEASIBLE,
    "kUnboundedOrInfeasible": TC.INFEASIBLE_OR_UNBOUNDED,
    "kUnbounded": TC.UNBOUNDED,
    "kObjectiveBound": TC.OTHER_LIMIT,
    "kObjectiveTarget": TC.OTHER_LIMIT,
    "kTimeLimit": TC.TIME_LIMIT,
    "kIterationLimit": TC.ITERATION_LIMIT,
    "kUnknown": TC.UNKNOWN,
    "kSolutionLimit": TC.OTHER_LIMIT,
    "kInterrupt": TC.INTERRUPTED,
    "kMemoryLimit": TC.OTHER_LIMIT,
    "kHighsInterrupt": TC.INTERRUPTED,
}

#: HiGHS 1.12-1.15.1 MIP presolve returned a wrong "optimal" on an OASiS model (the regression
#: test in tests/test_oasis_offline.py); switching off presolve rules 12 and 13 (aggregator,
#: parallel rows/columns) avoids it. Applied to every MIP unless the caller overrides it.
HIGHS_MIP_SAFE_OPTIONS: dict[str, Any] = {"presolve_rule_off": (1 << 12) | (1 << 13)}

_banner_done = False


def _new_highs() -> Any:
    """A silent ``highspy.Highs``.

    HiGHS prints a banner on standard output (file descriptor 1, below Python's ``sys.stdout``)
    when the first instance of a process is made, before any option can switch logging off; that
    would break the one-JSON-object contract of ``--json``. The first construction therefore
    runs with descriptor 1 pointed at the null device.
    """
    global _banner_done
    import os
    import sys

    import highspy

    if _banner_done:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _banner_done = True
    h.setOptionValue("output_flag", False)
    return h


#: Whether LPs solved without a ``threads`` option reuse one cleared ``Highs`` object per
#: thread instead of making a new one each (a round-based simulation solves thousands of small
#: LPs, and making the object costs about as much as converting the model), and are handed to
#: it as arrays in one call (:func:`_pass_model`). ``False`` makes a new one every time and fills
#: a ``HighsLp``, which the tests compare the fast path against.
REUSE_HIGHS = True

_reusable = threading.local()


def _highs_for(lp: LinearProgram, threads: int | None) -> Any:
    """A silent ``Highs`` with default options and no model, for ``lp``.

    LPs without a ``threads`` option get this thread's reusable instance, cleared
    (``Highs.clear``: model, solution, basis and every option back to its default), so that it
    behaves as a new one; MILPs and runs that size the thread pool get a new instance. The one
    thing ``clear`` keeps, the run clock, is offset in every time limit
    (:func:`run_clock_offset`); ``tests/test_highs_reuse.py`` checks that a solve on the reused
    instance, after any other solves, ends as it does on a new one.
    """
    if not REUSE_HIGHS or threads is not None or lp.is_mip:
        return _new_highs()
    h = getattr(_reusable, "highs", None)
    if h is None:
        h = _new_highs()
        _reusable.highs = h
        return h
    h.clear()
    h.setOptionValue("output_flag", False)
    return h


def reset_thread_pool() -> None:
    """Let the next HiGHS run start its thread pool with its own ``threads`` option.

    HiGHS keeps one thread pool per process, sized by the first run; a later run asking for a
    different number of threads fails with an error status instead of solving. Resetting the
    pool (waiting for its workers) before a run that sets ``threads`` avoids that.
    """
    import highspy

    highspy.Highs.resetGlobalScheduler(True)


def _highs_lp(lp: LinearProgram) -> Any:
    import highspy

    model = highspy.HighsLp()
    model.num_col_ = lp.n_variables
    model.num_row_ = lp.n_rows
    model.col_cost_ = lp.c
    model.col_lower_ = lp.col_lower
    model.col_upper_ = lp.col_upper
    model.row_lower_ = lp.row_lower
    model.row_upper_ = lp.row_upper
    model.offset_ = lp.offset
    model.sense_ = highspy.ObjSense.kMaximize if lp.sense == "max" else highspy.ObjSense.kMinimize
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = lp.n_variables
    model.a_matrix_.num_row_ = lp.n_rows
    model.a_matrix_.start_ = lp.a.indptr.astype(np.int32)
    model.a_matrix_.index_ = lp.a.indices.astype(np.int32)
    model.a_matrix_.value_ = lp.a.data
    if lp.is_mip:
        assert lp.integrality is not None
        kinds = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
            for flag in lp.integrality
        ]
        model.integrality_ = kinds
    return model


def _pass_model(h: Any, lp: LinearProgram) -> None:
    """Hand ``lp`` to ``h``: an LP as arrays in one call, a MILP through a ``HighsLp``.

    Filling a ``highspy.HighsLp`` field by field costs several times the one-call form, which
    matters when thousands of small LPs are solved. The one-call form takes an integrality
    array, here all continuous: HiGHS solves the model as the same LP. Should HiGHS refuse the
    arrays, the ``HighsLp`` form is used, which reports what it refuses.
    """
    import highspy

    if REUSE_HIGHS and not lp.is_mip:
        status = h.passModel(
            lp.n_variables,
            lp.n_rows,
            int(lp.a.nnz),
            int(highspy.MatrixFormat.kColwise),
            int(highspy.ObjSense.kMaximize if lp.sense == "max" else highspy.ObjSense.kMinimize),
            lp.offset,
            lp.c,
            lp.col_lower,
            lp.col_upper,
            lp.row_lower,
            lp.row_upper,
            # the same int32 arrays, copied only when they are not int32 already
            np.asarray(lp.a.indptr, dtype=np.int32),
            np.asarray(lp.a.indices, dtype=np.int32),
            lp.a.data,
            np.zeros(lp.n_variables, dtype=np.int32),  # every column continuous
        )
        if status != highspy.HighsStatus.kError:
            return
    h.passModel(_highs_lp(lp))


def solve_highs(
    lp: LinearProgram,
    *,
    time_limit: float | None,
    mip_gap: float,
    threads: int | None,
    build_seconds: float,
    options: dict[str, Any],
    warm_start: MatrixSolution | None,
) -> MatrixSolution:
    """Solve a :class:`LinearProgram` with HiGHS, whatever the outcome.

    The backend of :func:`~optsched.solvers.matrix.solve_matrix`, which checks the options,
    subtracts the build time from ``time_limit`` and applies the non-optimality policy; call
    that instead.

    Parameters
    ----------
    lp : LinearProgram
    time_limit : float or None
        Seconds left for HiGHS.
    mip_gap : float
        ``mip_rel_gap`` for a MILP.
    threads : int or None
    build_seconds : float
        Recorded in the result.
    options : dict
        HiGHS options, applied after :data:`HIGHS_MIP_SAFE_OPTIONS` (MILPs) so they override it.
    warm_start : MatrixSolution or None
        A MILP gets its point as a MIP start, an LP its basis.

    Returns
    -------
    MatrixSolution
        Status, objective, bound, the point (when there is one), duals and basis (LPs).

    Raises
    ------
    InvalidInstanceError
        An option HiGHS does not know or whose value it refuses.
    """
    import highspy

    h = _highs_for(lp, threads)
    h.setOptionValue("random_seed", 0)
    if threads is not None:
        h.setOptionValue("threads", int(threads))
        reset_thread_pool()
    merged: dict[str, Any] = {}
    if lp.is_mip:
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        merged.update(HIGHS_MIP_SAFE_OPTIONS)
    merged.update(options)
    limit = merged.pop("time_limit", time_limit)
    for key, value in merged.items():
        _set_option(h, key, value)
    if limit is not None:
        _set_time_limit(h, limit)
    start = time.perf_counter()
    _pass_model(h, lp)
    if warm_start is not None:
        if lp.is_mip and warm_start.x is not None and warm_start.x.size == lp.n_variables:
            sol = highspy.HighsSolution()
            sol.col_value = list(warm_start.x)
            sol.value_valid = True
            h.setSolution(sol)
        elif warm_start.basis is not None and _warm_columns(warm_start) == lp.n_variables:
            h.setBasis(warm_start.basis)
    h.run()
    elapsed = time.perf_counter() - start

    status = h.getModelStatus()
    native = h.modelStatusToString(status) if hasattr(h, "modelStatusToString") else str(status)
    name = getattr(status, "name", str(status).split(".")[-1])
    termination = HIGHS_STATUS_MAP.get(name, TC.UNKNOWN)
    info = h.getInfo()
    has_point = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
    if name == "kModelEmpty":
        # No columns: HiGHS reports no point, but the empty point is the only one, optimal
        # when every (empty) row admits 0 and infeasible otherwise.
        return _empty_model(lp, build_seconds, time.perf_counter() - start, str(h.version()))
    if termination is TC.OPTIMAL and has_point:
        solution = SolutionStatus.OPTIMAL
    elif has_point and termination not in (TC.INFEASIBLE, TC.UNBOUNDED):
        solution = SolutionStatus.FEASIBLE
    else:
        solution = SolutionStatus.NO_SOLUTION
    objective = float(info.objective_function_value) if has_point else None
    bound: float | None = None
    if lp.is_mip:
        dual_bound = float(info.mip_dual_bound)
        bound = dual_bound if math.isfinite(dual_bound) else None
    result = assemble(
        termination,
        solution,
        objective,
        bound,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver="highs",
        solver_version=str(h.version()),
        native_status=str(native),
        extra={"nodes": int(info.mip_node_count)} if lp.is_mip else {},
    )
    x = row_dual = col_dual = None
    basis = None
    extra: dict[str, Any] = {}
    if result.has_solution:
        sol = h.getSolution()
        x = np.asarray(sol.col_value, dtype=np.float64)
        if not lp.is_mip and sol.dual_valid:
            row_dual = np.asarray(sol.row_dual, dtype=np.float64)
            col_dual = np.asarray(sol.col_dual, dtype=np.float64)
        if not lp.is_mip:
            basis = h.getBasis()
            if termination is TC.OPTIMAL and _has_factor(lp, merged):
                # which variables are basic (column j as j, row i as -1 - i), as one array:
                # reading the statuses out of ``basis`` makes a Python object per variable
                ok, basic = h.getBasicVariables()
                if ok == highspy.HighsStatus.kOk:
                    extra = {"basic": np.asarray(basic, dtype=np.int64)}
    return MatrixSolution(
        result=result,
        x=x,
        row_dual=row_dual,
        col_dual=col_dual,
        basis=basis,
        iterations=int(info.simplex_iteration_count),
        extra=extra,
    )


def _has_factor(lp: LinearProgram, options: dict[str, Any]) -> bool:
    """Whether HiGHS ended the LP with the simplex's factored basis, to read its basic variables.

    Only for an LP with rows and non-zeros solved without presolve: HiGHS solves a model
    without non-zeros without the simplex (and then crashes when asked for its basic
    variables), and a presolved one ends on a basis rebuilt by postsolve.
    """
    return lp.n_rows > 0 and int(lp.a.nnz) > 0 and options.get("presolve") == "off"


def _warm_columns(warm_start: MatrixSolution) -> int | None:
    """The number of columns of the model a warm start's basis is for."""
    if warm_start.x is not None:
        return int(warm_start.x.size)
    columns = warm_start.extra.get("basis_columns")
    return None if columns is None else int(columns)


#: HiGHS's basis status codes (``highspy.HighsBasisStatus``) as :func:`warm_basis` takes them.
BASIS_LOWER, BASIS_BASIC, BASIS_UPPER = 0, 1, 2


def warm_basis(col_status: Any, row_status: Any) -> MatrixSolution:
    """A warm start holding only a basis, given as status codes per column and row.

    Codes: :data:`BASIS_LOWER`, :data:`BASIS_BASIC`, :data:`BASIS_UPPER` (nonbasic at the lower
    bound, basic, nonbasic at the upper bound). The basis is handed to HiGHS as an *alien* one:
    it need not have exactly one basic variable per row nor be nonsingular, HiGHS completes it
    (with slack columns) before the simplex starts. Meant for a model built from a previous
    one's basis, the columns and rows that carry over keeping their status.

    Returns
    -------
    MatrixSolution
        No point and no status of its own (``result`` says ``unknown``); only ``basis`` and
        ``extra["basis_columns"]`` are read by :func:`solve_highs`.
    """
    import highspy

    codes = list(highspy.HighsBasisStatus.__members__.values())
    by_value = {int(code): code for code in codes}
    table = [by_value[i] for i in (BASIS_LOWER, BASIS_BASIC, BASIS_UPPER)]
    cols = np.asarray(col_status, dtype=np.int64)
    rows = np.asarray(row_status, dtype=np.int64)
    basis = highspy.HighsBasis()
    basis.col_status = [table[v] for v in cols.tolist()]
    basis.row_status = [table[v] for v in rows.tolist()]
    basis.alien = True
    basis.valid = True
    result = assemble(
        TC.UNKNOWN,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="highs",
        solver_version="",
        native_status="basis only",
    )
    return MatrixSolution(result=result, x=None, basis=basis, extra={"basis_columns": cols.size})


def _empty_model(
    lp: LinearProgram, build_seconds: float, elapsed: float, version: str
) -> MatrixSolution:
    """The outcome of a model without columns, decided from its row bounds alone."""
    x = np.zeros(0)
    feasible = lp.max_violation(x) == 0.0
    result = assemble(
        TC.OPTIMAL if feasible else TC.INFEASIBLE,
        SolutionStatus.OPTIMAL if feasible else SolutionStatus.NO_SOLUTION,
        lp.offset if feasible else None,
        lp.offset if feasible else None,
        build_seconds=build_seconds,
        solve_seconds=elapsed,
        solver="highs",
        solver_version=version,
        native_status="kModelEmpty",
    )
    return MatrixSolution(result=result, x=x if feasible else None)


def run_clock_offset(h: Any) -> float:
    """Seconds already on ``h``'s run clock, which its ``time_limit`` is checked against.

    HiGHS compares ``time_limit`` with a run clock that ``Highs.clear`` does not zero and that
    highspy gives no way to zero: a reused object (:data:`REUSE_HIGHS`) carries the time of
    every earlier run, and a limit smaller than that stopped the next solve before its first
    iteration. Adding this offset to every limit makes a reused object keep the same time as
    a new one (whose offset is 0). Iteration limits need no offset: HiGHS counts them per run.
    """
    return float(h.getRunTime())


def _set_time_limit(h: Any, seconds: Any) -> None:
    """Give the next run of ``h`` ``seconds`` of its own, whatever ran on ``h`` before."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        _set_option(h, "time_limit", seconds)  # refused there, naming the option
        return
    if math.isfinite(value):
        value += run_clock_offset(h)
    _set_option(h, "time_limit", value)


def _set_option(h: Any, key: str, value: Any) -> None:
    """Set one HiGHS option, refusing (naming it) one HiGHS does not know or accept."""
    import highspy

    from optsched.errors import InvalidInstanceError

    try:
        status = h.setOptionValue(key, value)
    except (TypeError, ValueError) as exc:
        raise InvalidInstanceError("options", f"HiGHS option {key!r}: {exc}") from None
    if status == highspy.HighsStatus.kError:
        raise InvalidInstanceError(
            "options", f"HiGHS refuses option {key!r} = {value!r} (unknown name or bad value)"
        )
