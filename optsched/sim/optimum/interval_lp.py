r"""The interval LP of the weighted-JCT bound, on a dyadic grid, certified by its dual point.

The relaxation and its proof are in :mod:`optsched.sim.optimum.bounds`' notes (*interval LP*)
and on its formulation page (``docs/formulations/sim_bounds.rst``): time is cut into dyadic
blocks per job (:func:`blocks`, :func:`dyadic_layout`), the LP's rows are work, capacity of
every dyadic interval, own rate, mean busy time and the in-block spread
(:func:`interval_lp`), and the value used is the weak-duality bound of the solver's dual point
(:func:`dual_bound`), valid whatever the point is. :mod:`~optsched.sim.optimum.bounds` cuts a
large world into parts and sums their LPs.

Complexity: :math:`O(n B G)` columns for :math:`n` jobs of :math:`B` blocks each on :math:`G`
types, :math:`B` chosen to keep the LP near :data:`LP_TARGET_COLUMNS` columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.sim.optimum.job_limits import JobLimits
from optsched.tolerances import BOUND_SAFETY

__all__ = [
    "LP_MAX_LEVELS",
    "LP_MAX_PER_LEVEL",
    "LP_MIN_BLOCKS",
    "LP_MIN_PER_LEVEL",
    "LP_TANGENTS",
    "LP_TARGET_COLUMNS",
    "blocks",
    "dual_bound",
    "dyadic_layout",
    "interval_lp",
    "rescaled",
]

#: Columns each part's interval LP aims at (intervals are chosen to keep it near this size).
LP_TARGET_COLUMNS = 150_000
#: Most levels of the interval LP's dyadic grid (``2**levels`` fine intervals).
LP_MAX_LEVELS = 14
#: Blocks of each level per job in the interval LP: its resolution, relative to a job's wait.
LP_MIN_PER_LEVEL, LP_MAX_PER_LEVEL = 2, 8
#: Fewest blocks a job gets in the interval LP before its tail (whatever the budget).
LP_MIN_BLOCKS = 12
#: Tangent points of the in-block spread rows, as fractions of the most of a job a block holds
#: (one row per point and block; at 1, a block run through at full rate is counted exactly).
LP_TANGENTS: tuple[float, ...] = (1.0,)


def blocks(first: int, levels: int, per_level: int) -> list[tuple[int, int]]:
    """A job's blocks ``(level, index)`` from fine interval ``first`` to the horizon.

    ``per_level`` blocks of each level, then one more if needed to align on the next level's
    boundary, then the next level: block lengths grow geometrically with the distance from the
    job's arrival, so the loss of the mean-busy row (a block's start for its whole work) is a
    fraction of about ``1 / per_level`` of the job's wait.
    """
    out: list[tuple[int, int]] = []
    total = 1 << levels
    pos, level = first, 0
    while pos < total:
        size = 1 << level
        for _ in range(per_level):
            if pos >= total:
                break
            out.append((level, pos >> level))
            pos += size
        if level == levels:
            continue
        if pos < total and (pos >> level) & 1:
            out.append((level, pos >> level))
            pos += size
        level += 1
    return out


def dyadic_layout(
    lim: JobLimits, horizon: float, columns: int = LP_TARGET_COLUMNS
) -> tuple[int, int, float, float]:
    """``(levels, per_level, start, fine_width)`` of the interval LP, sized to ``columns``."""
    n = lim.area.shape[0]
    start = float(lim.arrival.min())
    span = max(horizon - start, float(lim.own_seconds.max()), 1e-9)
    # fine intervals about a quarter of the median job's shortest running time
    fine = max(float(np.median(lim.own_seconds)) / 4.0, span / (1 << LP_MAX_LEVELS))
    levels = max(1, min(LP_MAX_LEVELS, math.ceil(math.log2(span / fine))))
    types = max(1.0, float(np.isfinite(lim.area).sum()) / max(n, 1))
    per_level = int(columns // max(1.0, n * types * (levels + 1)))
    per_level = max(LP_MIN_PER_LEVEL, min(LP_MAX_PER_LEVEL, per_level))
    return levels, per_level, start, span / (1 << levels)


def rescaled(lim: JobLimits, origin: float, unit: float) -> JobLimits:
    """``lim`` with times measured in ``unit`` seconds from ``origin``."""
    import dataclasses

    return dataclasses.replace(
        lim,
        arrival=(lim.arrival - origin) / unit,
        deadline=(lim.deadline - origin) / unit,
        own_seconds=lim.own_seconds / unit,
        type_seconds=lim.type_seconds / unit,
        area=lim.area / unit,
        best_area=lim.best_area / unit,
    )


@dataclass
class _Blocks:
    """The interval LP's blocks: each job's, in its own time (see :func:`interval_lp`)."""

    job: NDArray[np.int64]
    level: NDArray[np.int64]
    index: NDArray[np.int64]
    start: NDArray[np.float64]
    own: NDArray[np.float64]
    tail: NDArray[np.float64]


def _job_blocks(
    lim: JobLimits, levels: int, per_level: int, t_start: float, fine: float, columns: int
) -> _Blocks:
    """Every job's blocks (:func:`blocks`) up to its budget, and where its tail starts."""
    n = lim.type_seconds.shape[0]
    total = 1 << levels
    h = t_start + total * fine
    runnable = np.isfinite(lim.area)
    bj: list[int] = []
    bl: list[int] = []
    bi: list[int] = []
    # each job's blocks stop after a budget; the rest of its work falls in its tail, which
    # starts where its last block ends (a later tail is as valid, only weaker)
    types = max(1.0, float(runnable.sum()) / max(n, 1))
    budget = max(LP_MIN_BLOCKS, int(columns // max(1.0, n * types)))
    tail = np.full(n, h)
    for j in range(n):
        first = min(int((lim.arrival[j] - t_start) // fine), total)
        mine = blocks(first, levels, per_level)
        if len(mine) > budget:
            mine = mine[:budget]
            level, index = mine[-1]
            tail[j] = t_start + ((index + 1) << level) * fine
        for level, index in mine:
            bj.append(j)
            bl.append(level)
            bi.append(index)
    blk_job = np.asarray(bj, dtype=np.int64)
    blk_level = np.asarray(bl, dtype=np.int64)
    blk_index = np.asarray(bi, dtype=np.int64)
    blk_lo = t_start + (blk_index << blk_level) * fine
    blk_hi = t_start + ((blk_index + 1) << blk_level) * fine
    blk_start = np.maximum(blk_lo, lim.arrival[blk_job])
    blk_own = np.maximum(blk_hi - blk_start, 0.0)
    return _Blocks(blk_job, blk_level, blk_index, blk_start, blk_own, tail)


@dataclass
class _Program:
    """The interval LP's data, and where the rows its dual repair touches start."""

    cost: NDArray[np.float64]
    a: Any
    row_lo: NDArray[np.float64]
    row_up: NDArray[np.float64]
    col_lo: NDArray[np.float64]
    col_up: NDArray[np.float64]
    offset: float
    mb: int
    tan_base: int
    ncols: int


def _interval_program(
    lim: JobLimits,
    blk: _Blocks,
    levels: int,
    fine: float,
    tangents: tuple[float, ...],
) -> _Program:
    """The rows ``work``, ``capacity``, ``own_rate``, ``mean_busy`` and ``spread`` (module notes).

    Columns: :math:`z` per (block, runnable type), then :math:`t_j`, :math:`C_j` and, with
    ``tangents``, :math:`q_b` per block.
    """
    import scipy.sparse as sp

    n, big_g = lim.type_seconds.shape
    total = 1 << levels
    nb = len(blk.job)
    # one column per (block, runnable type)
    kb, gz = np.nonzero(np.isfinite(lim.area)[blk.job])
    jz = blk.job[kb]
    nz = len(jz)
    t0, c0, q0 = nz, nz + n, nz + 2 * n
    ncols = nz + 2 * n + (nb if tangents else 0)
    # dyadic node numbering: level l's nodes after all finer levels' nodes
    level_offset = np.concatenate([[0], np.cumsum([total >> lv for lv in range(levels + 1)])])
    nodes = int(level_offset[-1])
    rows_r: list[NDArray[np.int64]] = []
    rows_c: list[NDArray[np.int64]] = []
    rows_v: list[NDArray[np.float64]] = []
    lo: list[NDArray[np.float64]] = []
    up: list[NDArray[np.float64]] = []
    r = 0
    # work: sum z + t = 1
    rows_r += [jz + r, np.arange(n) + r]
    rows_c += [np.arange(nz), t0 + np.arange(n)]
    rows_v += [np.ones(nz), np.ones(n)]
    lo.append(np.ones(n))
    up.append(np.ones(n))
    r += n
    # capacity of every dyadic node and type: a block counts in its node and all ancestors
    area = lim.area[jz, gz]
    for up_level in range(levels + 1):
        idx = np.flatnonzero(blk.level[kb] <= up_level)
        node = blk.index[kb][idx] >> (up_level - blk.level[kb][idx])
        rows_r.append(r + gz[idx] * nodes + level_offset[up_level] + node)
        rows_c.append(idx)
        rows_v.append(area[idx])
    widths = np.concatenate(
        [np.full(total >> lv, float(1 << lv) * fine) for lv in range(levels + 1)]
    )
    lo.append(np.full(big_g * nodes, -np.inf))
    up.append((lim.share_factor[:, None] * lim.capacity[:, None] * widths[None, :]).ravel())
    r += big_g * nodes
    # own rate per block: one gang at a time
    rows_r.append(r + kb)
    rows_c.append(np.arange(nz))
    rows_v.append(lim.type_seconds[jz, gz])
    lo.append(np.full(nb, -np.inf))
    up.append(blk.own)
    r += nb
    # mean busy: C_j - sum start z - sum q - H t >= P_j / 2
    mb = r
    rows_r += [mb + jz, mb + np.arange(n), mb + np.arange(n)]
    rows_c += [np.arange(nz), t0 + np.arange(n), c0 + np.arange(n)]
    rows_v += [-blk.start[kb], -blk.tail, np.ones(n)]
    lo.append(lim.own_seconds / 2.0)
    up.append(np.full(n, np.inf))
    r += n
    # in-block spread: q_b >= P_j alpha (Z_b - alpha / 2), a tangent of P_j Z_b^2 / 2 (the
    # least mean-busy excess over the block's start of a fraction Z_b done at rate <= 1/P_j)
    tan_base = r
    p_blk = lim.own_seconds[blk.job]
    # a zero-length job (P_j = 0) gets rows q >= 0: nothing to add
    u_blk = np.where(p_blk > 0, np.minimum(1.0, blk.own / np.where(p_blk > 0, p_blk, 1.0)), 1.0)
    if tangents:
        rows_r.append(mb + blk.job)
        rows_c.append(q0 + np.arange(nb))
        rows_v.append(-np.ones(nb))
        for frac in tangents:
            alpha = frac * u_blk
            rows_r += [r + kb, r + np.arange(nb)]
            rows_c += [np.arange(nz), q0 + np.arange(nb)]
            rows_v += [-p_blk[kb] * alpha[kb], np.ones(nb)]
            lo.append(-p_blk * alpha * alpha / 2.0)
            up.append(np.full(nb, np.inf))
            r += nb
    a = sp.csc_array(
        (np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
        shape=(r, ncols),
    )
    cost = np.zeros(ncols)
    cost[c0:q0] = lim.weight
    col_lo = np.zeros(ncols)
    col_up = np.ones(ncols)
    col_lo[c0:q0] = lim.arrival + lim.own_seconds
    col_up[c0:] = np.inf
    row_lo, row_up = np.concatenate(lo), np.concatenate(up)
    offset = -float(lim.weight @ lim.arrival)
    return _Program(cost, a, row_lo, row_up, col_lo, col_up, offset, mb, tan_base, ncols)


def _feasible_duals(
    y: NDArray[np.float64],
    lim: JobLimits,
    blk: _Blocks,
    prog: _Program,
    tangents: tuple[float, ...],
) -> NDArray[np.float64]:
    """The LP's row duals ``y`` (a copy), moved so that :func:`dual_bound` is finite.

    No reduced cost may press on an infinite column bound (:math:`C_j` and :math:`q_b` are
    unbounded above).
    """
    n, nb, mb, tan_base = len(lim.weight), len(blk.job), prog.mb, prog.tan_base
    y = y.copy()
    # the mean-busy row is the only one holding C_j: keep its multiplier in [0, w_j], so that
    # C_j's reduced cost is >= 0 and its infinite upper bound costs nothing
    y[mb : mb + n] = np.clip(y[mb : mb + n], 0.0, lim.weight)
    if tangents:
        # q_b's reduced cost y_mb - sum of its tangent multipliers must stay >= 0 (q is
        # unbounded above): scale the tangent multipliers of each block down to fit
        k = len(tangents)
        ty = np.maximum(y[tan_base : tan_base + k * nb].reshape(k, nb), 0.0)
        held = ty.sum(axis=0)
        # shaved so that rounding in the sum cannot leave a reduced cost a hair below 0
        room = y[mb + blk.job] * (1.0 - 1e-12)
        scale = np.where(held > room, room / np.where(held > 0, held, 1.0), 1.0)
        y[tan_base : tan_base + k * nb] = (ty * scale[None, :]).ravel()
    return y


def interval_lp(
    lim: JobLimits,
    horizon: float,
    time_limit: float | None,
    solver: str,
    tangents: tuple[float, ...] = LP_TANGENTS,
    columns: int = LP_TARGET_COLUMNS,
) -> tuple[float, str]:
    """The interval LP's certified bound (see the bounds' module notes) and a note.

    The intervals are dyadic blocks of a fine grid over ``[min arrival, horizon)``; each job
    has its own blocks (:func:`blocks`), and the capacity row of every dyadic interval holds
    the blocks inside it — valid for every schedule, since the work done inside a dyadic
    interval fits its capacity. The steps: the grid (:func:`dyadic_layout`), the jobs' blocks
    (:func:`_job_blocks`), the program (:func:`_interval_program`), and the bound of the
    solver's dual point made feasible (:func:`_feasible_duals`, :func:`dual_bound`).
    """
    from optsched.solvers.matrix import LinearProgram, solve_matrix

    # time in units of the median job's shortest running time, relative to the first
    # arrival: keeps the LP's coefficients near 1 (HiGHS's tolerances are absolute)
    unit = max(float(np.median(lim.own_seconds)), 1e-9)
    origin = float(lim.arrival.min())
    lim = rescaled(lim, origin, unit)
    horizon = (horizon - origin) / unit
    levels, per_level, t_start, fine = dyadic_layout(lim, horizon, columns)
    blk = _job_blocks(lim, levels, per_level, t_start, fine, columns)
    prog = _interval_program(lim, blk, levels, fine, tangents)
    try:
        lp = LinearProgram(
            prog.cost, prog.a, prog.row_lo, prog.row_up, prog.col_lo, prog.col_up,
            offset=prog.offset,
        )  # fmt: skip
    except InvalidInstanceError as err:
        # over the model-size budget: the closed forms stand
        return -math.inf, f"interval LP: skipped, {err}"
    try:
        sol = solve_matrix(lp, solver=solver, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError as err:
        return -math.inf, f"interval LP: {err}"
    if sol.row_dual is None:
        return -math.inf, "interval LP: the solver returned no dual point"
    y = _feasible_duals(sol.row_dual, lim, blk, prog, tangents)
    # back to seconds: sum w (C - a) scales with the unit; the origin cancels in C - a
    value = dual_bound(lp, y) * unit
    total = 1 << levels
    note = (
        f"interval LP: {total} fine intervals of {fine * unit:.6g} s to "
        f"{origin + (t_start + total * fine) * unit:.6g} s, "
        f"{per_level} blocks per level, {prog.ncols} columns"
    )
    return value, note


def dual_bound(lp: Any, y: NDArray[np.float64]) -> float:
    r"""Weak-duality bound of a minimization LP from any row multipliers ``y``.

    Each multiplier is clipped to the sign its finite row sides allow (a free row gets 0); the
    bound is then :math:`\sum_i y_i b_i + \sum_j \min_{x_j \in [l_j, u_j]} d_j x_j + c_0`
    with :math:`d = c - A^\top y` and :math:`b_i` the row side :math:`y_i` presses on, which is
    at most the LP's optimum whatever ``y`` is (``-inf`` when a reduced cost presses on an
    infinite column bound). The result is shaved by :data:`~optsched.tolerances.BOUND_SAFETY`
    (relative) against the rounding of this sum.
    """
    lower_ok = np.isfinite(lp.row_lower)
    upper_ok = np.isfinite(lp.row_upper)
    y = np.where(lower_ok, y, np.minimum(y, 0.0))
    y = np.where(upper_ok, y, np.maximum(y, 0.0))
    y = np.where(lower_ok | upper_ok, y, 0.0)
    rows = np.where(y > 0, y * np.where(lower_ok, lp.row_lower, 0.0), 0.0)
    rows = rows + np.where(y < 0, y * np.where(upper_ok, lp.row_upper, 0.0), 0.0)
    d = lp.c - lp.a.T @ y
    pos, neg = d > 0, d < 0
    if np.any(pos & ~np.isfinite(lp.col_lower)) or np.any(neg & ~np.isfinite(lp.col_upper)):
        return -math.inf
    cols = np.where(pos, d * np.where(pos, lp.col_lower, 0.0), 0.0)
    cols = cols + np.where(neg, d * np.where(neg, lp.col_upper, 0.0), 0.0)
    value = float(rows.sum() + cols.sum() + lp.offset)
    return value - BOUND_SAFETY * max(1.0, abs(value))
