r"""The root of the matrix model's search: its LP, a start from it, reduced-cost fixing.

:func:`root_pass` runs the three steps on a built
:class:`~optsched.sim.optimum.matrix_model.MatrixModel` before the branch and bound (the
formulation page, ``docs/formulations/sim_exact.rst``, has the proofs): the LP relaxation, the
root heuristic (:func:`_fix_and_solve`, its schedule re-derived exactly by
:func:`start_from_point`) and the removal of the binaries only worse schedules set
(:func:`fix_by_reduced_cost`, on the weak-duality bound of :func:`lagrangian_bound`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.errors import ModelError, NotOptimalError
from optsched.sim.optimum.matrix_model import MatrixModel
from optsched.sim.optimum.rounds import MipStart, model_run, value_of
from optsched.solvers.matrix import LinearProgram
from optsched.tolerances import RATIO_TOL, leq

__all__ = [
    "HEURISTIC_OPTIONS",
    "fix_by_reduced_cost",
    "lagrangian_bound",
    "root_pass",
    "start_from_point",
]


#: HiGHS options of the root heuristic's MIP (:func:`_fix_and_solve`): a node budget, so that it
#: stops early without a time limit too.
HEURISTIC_OPTIONS: dict[str, Any] = {"mip_max_nodes": 500}


def lagrangian_bound(
    lp: LinearProgram, y: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    r"""A lower bound of ``lp`` (a minimisation) from any row multipliers ``y``.

    For :math:`r^{lo} \le Ax \le r^{up}`, :math:`l \le x \le u` (finite :math:`l, u`) and any
    :math:`y`, let :math:`y^+` keep the signs a finite side admits (:math:`y_i > 0` needs
    :math:`r^{lo}_i > -\infty`, :math:`y_i < 0` needs :math:`r^{up}_i < \infty`; others are set
    to 0) and :math:`d = c - A^\top y^+`. Every feasible :math:`x` has
    :math:`y^{+\top} A x \ge \beta = \sum_i \min(y^+_i r^{lo}_i, y^+_i r^{up}_i)` (the side
    its sign picks), so

    .. math:: c^\top x = y^{+\top} A x + d^\top x \ge \beta + \sum_j \min(d_j l_j, d_j u_j)
              =: z(y),

    a bound for every :math:`y` (weak duality; no optimality of :math:`y` is assumed, so a
    solver's inexact duals only loosen it). Returns :math:`z(y) + c_0`, :math:`d`, and per
    column the increase :math:`\delta_j = |d_j| (u_j - l_j)` of the bound when :math:`x_j` is
    forced to the bound its :math:`d_j` does not pick.

    Raises
    ------
    ModelError
        A column bound is infinite where its reduced cost is not zero (no finite bound).
    """
    yy = np.asarray(y, dtype=np.float64).copy()
    yy[(yy > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    yy[(yy < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    beta = float(
        np.sum(np.where(yy > 0, yy * np.where(np.isfinite(lp.row_lower), lp.row_lower, 0.0), 0.0))
        + np.sum(np.where(yy < 0, yy * np.where(np.isfinite(lp.row_upper), lp.row_upper, 0.0), 0.0))
    )
    d = lp.c - lp.a.T @ yy
    lo, up = lp.col_lower, lp.col_upper
    pos, neg = d > 0, d < 0
    if (pos & ~np.isfinite(lo)).any() or (neg & ~np.isfinite(up)).any():
        raise ModelError("a Lagrangian bound needs finite bounds where a reduced cost is not 0")
    at = np.where(pos, d * np.where(pos, lo, 0.0), 0.0) + np.where(
        neg, d * np.where(neg, up, 0.0), 0.0
    )
    width = np.where(np.isfinite(up - lo), up - lo, 0.0)
    delta = np.abs(d) * width
    return beta + float(at.sum()) + lp.offset, d, delta


def root_pass(
    model: MatrixModel,
    start: MipStart | None,
    *,
    time_limit: float | None = None,
    heuristic: bool = True,
) -> MipStart | None:
    r"""The root of the search: the LP relaxation, a start from it, and reduced-cost fixing.

    1. The LP relaxation of ``model`` is solved (within ``time_limit``; without an optimal LP
       the model is left as it is and ``start`` returned).
    2. With ``heuristic``, the jobs whose binaries are all integral in the LP (without the
       parity cuts, :func:`_guide`) keep them and the rest is solved as a MIP within a quarter
       of the time left (:func:`_fix_and_solve`); its
       schedule, re-derived exactly (:func:`start_from_point`), replaces ``start`` when it is
       better. Either is a schedule of the model, of value :math:`U`.
    3. Reduced-cost fixing against :math:`U` (:func:`fix_by_reduced_cost`).

    Returns the best start known (``None`` without one); ``model.root`` records each step.
    """
    from optsched.solvers import solve_matrix
    from optsched.solvers.result import Status

    began = time.perf_counter()
    lp = model.lp
    relaxed = _relaxation(lp)
    try:
        sol = solve_matrix(relaxed, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError:
        model.root = {"lp": "failed"}
        return start
    if sol.result.status is not Status.OPTIMAL or sol.row_dual is None or sol.x is None:
        model.root = {"lp": sol.result.status.value}
        return start
    model.root = {
        "lp_bound": float(sol.result.objective) if sol.result.objective is not None else None,
        "lp_seconds": sol.result.solve_seconds,
        "given_value": None if start is None else start.value,
    }
    best = start
    left = None if time_limit is None else time_limit - (time.perf_counter() - began)
    # a budget spent by the LP leaves the heuristic nothing: skipped, never a limit <= 0
    if heuristic and (left is None or left > 0):
        found = _fix_and_solve(
            model, _guide(model, sol.x, left), None if left is None else left / 4
        )
        model.root["heuristic_value"] = None if found is None else found.value
        if found is not None and (best is None or found.value < best.value):
            best = found
    if best is not None:
        fix_by_reduced_cost(model, relaxed, sol.row_dual, best.value)
    model.root["seconds"] = time.perf_counter() - began
    return best


def _guide(
    model: MatrixModel, point: NDArray[np.float64], time_limit: float | None
) -> NDArray[np.float64]:
    """The LP point the root heuristic rounds: that of the LP without the parity cuts.

    The parity cuts raise the bound but spread the LP point over many jobs (58 of 120
    fractional on the 120-job trace, 10 without them), which leaves the heuristic's MIP
    nearly the whole problem. Falls back to ``point`` when that LP is not solved.
    """
    from optsched.solvers import solve_matrix
    from optsched.solvers.result import Status

    lp = model.lp
    upper = lp.row_upper.copy()
    found = False
    for name, lo, hi in model.row_families:
        if name == "parity":
            upper[lo:hi] = math.inf
            found = True
    if not found:
        return point
    loose = LinearProgram(
        lp.c, lp.a, lp.row_lower, upper, lp.col_lower, lp.col_upper,
        sense="min", offset=lp.offset,
    )  # fmt: skip
    try:
        sol = solve_matrix(loose, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError:
        return point
    if sol.result.status is not Status.OPTIMAL or sol.x is None:
        return point
    return sol.x


def _relaxation(lp: LinearProgram) -> LinearProgram:
    return LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper,
        sense="min", offset=lp.offset,
    )  # fmt: skip


def _fix_and_solve(
    model: MatrixModel, point: NDArray[np.float64], time_limit: float | None
) -> MipStart | None:
    """The LP point's integral jobs kept, the others solved as a MIP: a schedule, or ``None``.

    A job is kept when every binary of it (``x`` and ``e``) is within
    :data:`~optsched.tolerances.INTEGRALITY_TOL` of an integer in the LP; its binaries are then
    fixed at those integers. Every point of the restricted MIP is a point of ``model``.
    """
    from optsched.solvers import solve_matrix
    from optsched.tolerances import INTEGRALITY_TOL

    lp = model.lp
    ints = np.asarray(lp.integrality, dtype=bool)
    full = model.full(point)
    off, nk, ne = model.offsets, model.kj.size, model.ej.size
    frac = np.abs(full - np.round(full)) > INTEGRALITY_TOL
    loose = np.zeros(len(model.world.jobs), dtype=bool)
    loose[model.kj[frac[off["x"] : off["x"] + nk]]] = True
    loose[model.ej[frac[off["e"] : off["e"] + ne]]] = True
    job_of = np.full(model.n_full, -1, dtype=np.int64)
    job_of[off["x"] : off["x"] + nk] = model.kj
    job_of[off["e"] : off["e"] + ne] = model.ej
    owner = job_of if model.cols is None else job_of[model.cols]
    fix = ints & (owner >= 0) & ~loose[np.maximum(owner, 0)]
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    lower[fix] = upper[fix] = np.clip(np.round(point[fix]), lp.col_lower[fix], lp.col_upper[fix])
    sub = LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lower, upper,
        sense="min", integrality=ints, offset=lp.offset,
    )  # fmt: skip
    try:
        # the node budget stops the heuristic without a time limit too (an exact solve has none)
        out = solve_matrix(
            sub, time_limit=time_limit, accept_feasible=True, options=HEURISTIC_OPTIONS
        )
    except NotOptimalError:
        return None
    if out.x is None:
        return None
    return start_from_point(model, out.x)


def start_from_point(model: MatrixModel, point: NDArray[np.float64]) -> MipStart | None:
    """The schedule of a (near-)integral point, re-derived exactly as a :class:`MipStart`.

    Each job's runs are read off :math:`x > 1/2` and carried out as
    :func:`~optsched.sim.optimum.exact.start_from_record` does (full rounds, the last share computed
    from the work left), so the start's value is that of the schedule itself, not the solver's
    figure. ``None`` when the runs are no schedule (two types in one round, unfinished work,
    a last run below the floor).
    """
    world, L = model.world, model.round_seconds
    x = model.full(point)
    x0 = model.offsets["x"]
    plans: list[dict[int, str]] = [{} for _ in world.jobs]
    for i in np.flatnonzero(x[x0 : x0 + model.kj.size] > 0.5):
        ji, k = int(model.kj[i]), int(model.kk[i])
        if k in plans[ji]:
            return None
        plans[ji][k] = model.type_names[int(model.kg[i])]

    class _Refused(Exception):
        pass

    def refuse(_why: str) -> _Refused:
        return _Refused()

    runs: list[tuple[tuple[int, str], ...]] = []
    shares: list[float] = []
    try:
        for j in world.jobs:
            mine, last = model_run(world, j, plans[j.index], L, model.horizon, model.eps, refuse)
            runs.append(tuple(mine))
            shares.append(last)
    except _Refused:
        return None
    done = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    value = value_of(world, done, model.objective)
    return MipStart(
        policy="root",
        runs=tuple(runs),
        last_share=tuple(shares),
        value=value,
        record_value=value,
        notes=("found at the root: the LP's integral jobs kept, the others solved",),
    )


def fix_by_reduced_cost(
    model: MatrixModel, relaxed: LinearProgram, duals: NDArray[np.float64], upper_bound: float
) -> None:
    r"""Remove the binaries that only schedules worse than ``upper_bound`` set (minimisation).

    With the Lagrangian bound :math:`z` of the LP's row duals (:func:`lagrangian_bound`), a
    binary whose reduced cost :math:`d_j > 0` (at its lower bound 0 in the bound) with
    :math:`z + d_j > U'` is 0 in every point of value at most :math:`U'`: forcing it to 1 raises
    the bound by :math:`d_j`. With :math:`U' = U` loosened by
    :data:`~optsched.tolerances.RATIO_TOL` (relative and absolute), every schedule of value at
    most :math:`U` keeps all its columns: the start of value :math:`U` and every better
    schedule, hence every optimum, are points of the reduced model. Symmetrically a binary with
    :math:`d_j < 0` and :math:`z - d_j > U'` is fixed to 1. Columns fixed to 0 are removed
    (they enter no row at 0); ``model.cols`` maps the rest.

    Raises
    ------
    ModelError
        The bound is above ``upper_bound`` (the duals or the start are wrong).
    """
    import scipy.sparse as sp

    lp = model.lp
    z, d, _delta = lagrangian_bound(relaxed, duals)
    if not leq(z, upper_bound, RATIO_TOL):
        raise ModelError(f"root bound {z:.9g} above a schedule's value {upper_bound:.9g}")
    U = upper_bound * (1 + RATIO_TOL) + RATIO_TOL * max(1.0, abs(upper_bound))
    ints = np.asarray(lp.integrality, dtype=bool)
    free = ints & (lp.col_lower < lp.col_upper)
    zero = free & (d > 0) & (z + d > U)
    one = free & (d < 0) & (z - d > U)
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    upper[zero] = 0.0
    lower[one] = 1.0
    keep = np.flatnonzero(~((upper == 0.0) & (lower == 0.0) & ints))
    model.lp = LinearProgram(
        lp.c[keep],
        sp.csc_array(lp.a[:, keep], dtype=np.float64),
        lp.row_lower,
        lp.row_upper,
        lower[keep],
        upper[keep],
        sense="min",
        integrality=ints[keep],
        offset=lp.offset,
    )
    old = model.cols if model.cols is not None else np.arange(model.n_full)
    model.cols = old[keep]
    e0, ne = model.offsets["e"], model.ej.size
    alive = np.flatnonzero(np.isin(np.arange(e0, e0 + ne), model.cols))
    kept = ints[keep]
    model.root.update(
        {
            "lagrangian_bound": z,
            "upper_bound": upper_bound,
            "fixed_to_0": int(zero.sum()),
            "fixed_to_1": int(one.sum()),
            "binaries_left": int(kept.sum() - (lower[keep] == upper[keep])[kept].sum()),
            "last_round": int(model.ek[alive].max()) if alive.size else -1,
        }
    )
