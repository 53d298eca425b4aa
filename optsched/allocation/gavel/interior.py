r"""The allocation policies' interior-point optima, built straight into Clarabel.

Gavel solves its policies with cvxpy and an interior-point solver; where the optimum is not
unique, the point such a solver returns is (up to its stopping tolerance) the *analytic centre*
of the optimal face: the limit of the central path, the point of the face maximising
:math:`\sum_i \log s_i` over the slacks :math:`s_i` of the inequalities (and the cones' barriers)
that are not tight on the whole face. That point depends on the *set of inequalities* the
problem is stated with (each counted once, up to a positive scaling of a row), not on the
variables' order, on the rows' order, on equalities, or on which modelling layer wrote them.
:func:`interior_allocation` therefore states the very inequalities cvxpy's canonicalisation
of the declarative twin (:func:`optsched.allocation.gavel.twin.build_twin`) hands to Clarabel,
as sparse matrices, and calls Clarabel's Python API directly: the same point, without
cvxpy's compilation, which dominates a round at a few hundred jobs. The twin stays the reference
(the tests compare the two).

The standard form is :math:`\min c^\top z` s.t. :math:`Az + s = b`, :math:`s \in K`. The variables
are :math:`X_{mj}` for the *feasible* entries only (positive throughput, gang fits: the twin's
equality ``gang_fits`` fixes the others at 0, identically on the optimal face, so they do not
move the analytic centre), then the epigraph variable and, for ``ftf``/``makespan``, one
:math:`u_m \ge 1/\theta_m(X)` per job with steps left. Inequalities (the non-negative cone):

* :math:`-X_{mj} \le 0` (the twin's ``nonneg`` variable attribute);
* :math:`\sum_j X_{mj} \le 1` (``job_time``), :math:`\sum_m s_m X_{mj} \le n_j`
  (``type_capacity``);
* ``max-min``: :math:`v - a_m^\top X_m \le 0` for every job (cvxpy's epigraph of ``cp.min``),
  objective :math:`-v`;
* ``ftf``: :math:`(t_m + \sigma_m u_m)/c_m - v \le 0`; ``makespan``:
  :math:`\sigma_m u_m - v \le 0` (the epigraph of ``cp.max``), objective :math:`v`; and per
  such job the second-order cone :math:`(\theta_m + u_m,\ \theta_m - u_m,\ 2) \in
  \mathcal{Q}^3`, i.e. :math:`\theta_m u_m \ge 1` (cvxpy's cone for ``inv_pos``);
* ``min-cost-slo``: :math:`\sigma_m / d_m - \theta_m(X) \le 0` for each job due.

The coefficients are those of the twin (:func:`twin_coefficients`). The linear policies
(``max-min``, ``max-sum-throughput``, ``min-cost``) and the makespan search's feasibility
problems go further: their data are laid out exactly as cvxpy lays them out (variables, rows,
cones in cvxpy's order, zero entries dropped), so that Clarabel returns the twin's point to the
last digit, which matters where Gavel's walk breaks ties on those digits.

:func:`gavel_makespan_interior` does the same for Gavel's makespan *search*
(:mod:`optsched.sim.policies.gavel_makespan`): bisection over feasibility problems whose
constant objective makes the solver return the analytic centre of the feasible set. The
bisection only asks, at each midpoint :math:`T`, whether :math:`T \ge T^*` (the least feasible
makespan, one exact HiGHS LP over the same constraints: :func:`least_makespan`), so
its course is computed from :math:`T^*` and only its last feasible problem is solved by Clarabel;
a midpoint within :data:`NEAR_LEAST` (relative) of :math:`T^*`, where the interior-point answer
can differ (a thin feasible set), is decided by solving that feasibility problem itself.

Complexity: one Clarabel solve of :math:`O(MK)` variables and non-zeros per call (the
factorisations are of the same size as the twin's); building the matrices is :math:`O(MK)`
vectorised numpy. The makespan search adds one HiGHS LP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import POLICIES, effective_throughputs, feasible_mask
from optsched.allocation.gavel.prices import gpu_prices
from optsched.allocation.gavel.shares import isolated_throughput, proportional_throughput
from optsched.errors import InvalidInstanceError, NotOptimalError

__all__ = [
    "TwinCoefficients",
    "gavel_makespan_interior",
    "interior_allocation",
    "least_makespan",
    "twin_coefficients",
]


@dataclass(frozen=True)
class TwinCoefficients:
    r"""The numbers of one policy's twin, per job and type (see the module notes).

    Attributes
    ----------
    objective : str
        The policy's objective (a value of :data:`~optsched.allocation.gavel.lp.POLICIES`).
    mask : ndarray of bool, shape (M, K)
        Feasible entries.
    theta : ndarray, shape (M, K)
        The throughputs :math:`T` the policy's :math:`\theta_m(X)` is taken with.
    linear : ndarray, shape (M, K)
        ``max-min``: the share coefficients :math:`a_{mj}`; ``max-sum-throughput``,
        ``min-cost*``: the objective's (maximised) coefficients; otherwise zeros.
    due : ndarray of int
        ``min-cost-slo``: the jobs with a deadline and steps left.
    rate_floor : ndarray, shape (len(due),)
        ``min-cost-slo``: :math:`\sigma_m / d_m` of those jobs.
    active : ndarray of int
        ``ftf``/``makespan``: the jobs with steps left.
    scale : ndarray, shape (len(active),)
        :math:`\sigma_m / c_m` (``ftf``) or :math:`\sigma_m` (``makespan``).
    offset : ndarray, shape (len(active),)
        :math:`t_m / c_m` (``ftf``) or zeros.
    """

    objective: str
    mask: NDArray[np.bool_]
    theta: NDArray[np.float64]
    linear: NDArray[np.float64]
    due: NDArray[np.intp]
    rate_floor: NDArray[np.float64]
    active: NDArray[np.intp]
    scale: NDArray[np.float64]
    offset: NDArray[np.float64]


def twin_coefficients(instance: AllocationInstance, policy: str) -> TwinCoefficients:
    """The coefficients :func:`~optsched.allocation.gavel.twin.build_twin` states ``policy`` with.

    Raises
    ------
    InvalidInstanceError
        ``policy`` unknown or a packed policy (field ``policy``).
    """
    if policy not in POLICIES or policy.endswith("-packed"):
        raise InvalidInstanceError("policy", f"no direct interior form for policy {policy!r}")
    objective, aware = POLICIES[policy]
    m, k = instance.n_jobs, instance.n_types
    mask = feasible_mask(instance)
    sf = instance.scale_factors
    t = np.asarray(effective_throughputs(instance, aware), dtype=np.float64)
    linear = np.zeros((m, k))
    none = np.zeros(0, dtype=np.intp)
    due, rate_floor, active = none, np.zeros(0), none
    scale, offset = np.zeros(0), np.zeros(0)
    if objective == "max-min":
        tt = mask.astype(np.float64) if not aware else t
        p = proportional_throughput(tt, instance.capacities)
        with np.errstate(divide="ignore", invalid="ignore"):
            linear = tt * (sf / (instance.weights * p))[:, None]
    elif objective == "max-sum-throughput":
        linear = t
    elif objective in ("min-cost", "min-cost-slo"):
        prices = gpu_prices(instance.gpu_types, instance.prices)
        linear = 3600.0 * t / np.outer(sf, prices)
        if objective == "min-cost-slo":
            due = np.flatnonzero(np.isfinite(instance.deadlines) & (instance.steps > 0))
            rate_floor = instance.steps[due] / instance.deadlines[due]
    else:
        sigma = instance.steps
        active = np.flatnonzero(sigma > 0)
        if objective == "makespan":
            scale, offset = sigma[active], np.zeros(active.size)
        else:
            # the instance's own arrays where they are the same numbers (kept with it: the
            # round's history update reads q again)
            q = (
                instance.isolated_throughputs
                if aware
                else isolated_throughput(t, sf, instance.capacities)
            )
            since, hist = instance.since_start, instance.isolated_times
            c = (hist + sigma / q)[active]
            scale, offset = sigma[active] / c, since[active] / c
    return TwinCoefficients(objective, mask, t, linear, due, rate_floor, active, scale, offset)


def _stopped(message: str) -> NotOptimalError:
    """The error of a problem Clarabel (or the twin's definition) did not solve to optimality."""
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    result = assemble(
        TerminationCondition.UNKNOWN,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="clarabel",
        solver_version="",
        native_status=message,
        message=message,
    )
    return NotOptimalError(result)


def _solve(
    q: NDArray[np.float64],
    a: sp.csc_matrix,
    b: NDArray[np.float64],
    n_nonneg: int,
    n_soc: int,
    n_zero: int = 0,
) -> tuple[str, NDArray[np.float64]]:
    """Clarabel on ``min q'z, Az + s = b``, ``s`` in (0^n_zero, nonneg^n_nonneg, Q^3 x n_soc)."""
    import clarabel

    n = q.size
    empty = np.zeros(0, dtype=np.int64)
    p = sp.csc_matrix((np.zeros(0), empty, np.zeros(n + 1, dtype=np.int64)), shape=(n, n))
    cones: list[Any] = [clarabel.ZeroConeT(n_zero)] if n_zero else []
    cones += [clarabel.NonnegativeConeT(n_nonneg)]
    cones += [clarabel.SecondOrderConeT(3) for _ in range(n_soc)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solver = clarabel.DefaultSolver(p, q, a, b, cones, settings)
    sol = solver.solve()
    return str(sol.status), np.asarray(sol.x, dtype=np.float64)


#: Rows of the constraint matrix as triplets: (row, column, value, number of rows).
_Block = tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64], int]


def _block(matrix: Any) -> _Block:
    """A scipy sparse block as triplets."""
    coo = sp.coo_array(matrix)
    return coo.row, coo.col, coo.data, coo.shape[0]


def _stack(blocks: list[_Block], n: int) -> sp.csc_matrix:
    """The blocks one below the other, as one CSC matrix of ``n`` columns.

    The compressed arrays are built directly (no entry repeats a (row, column) of another):
    entries sorted by column, then row.
    """
    rows, cols, vals = [], [], []
    at = 0
    for r, c, v, height in blocks:
        rows.append(np.asarray(r, dtype=np.int64) + at)
        cols.append(np.asarray(c, dtype=np.int64))
        vals.append(np.asarray(v, dtype=np.float64))
        at += height
    row, col, val = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((row, col))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=n), out=indptr[1:])
    return sp.csc_matrix((val[order], row[order], indptr), shape=(at, n))


def _base_rows(
    mask: NDArray[np.bool_], sf: NDArray[np.float64], cap: NDArray[np.float64], extra_cols: int
) -> tuple[_Block, NDArray[np.float64], NDArray[np.intp], NDArray[np.intp]]:
    """``-X <= 0``, ``job_time``, ``type_capacity`` over the feasible entries (module notes)."""
    m, k = mask.shape
    rows_m, cols_k = np.nonzero(mask)
    n_x = rows_m.size
    e = np.arange(n_x)
    r = np.concatenate([e, n_x + rows_m, n_x + m + cols_k])
    c = np.concatenate([e, e, e])
    v = np.concatenate([-np.ones(n_x), np.ones(n_x), sf[rows_m]])
    b = np.concatenate([np.zeros(n_x), np.ones(m), cap])
    return (r, c, v, n_x + m + k), b, rows_m, cols_k


def _theta_rows(
    theta: NDArray[np.float64],
    rows_m: NDArray[np.intp],
    cols_k: NDArray[np.intp],
    jobs: NDArray[np.intp],
    n_cols: int,
) -> sp.csr_array:
    r""":math:`\theta_m(X)` of each job in ``jobs``, one row each, over the feasible entries."""
    where = np.full(theta.shape[0], -1, dtype=np.intp)
    where[jobs] = np.arange(jobs.size)
    pick = where[rows_m] >= 0
    e = np.flatnonzero(pick)
    vals = theta[rows_m[e], cols_k[e]]
    return sp.csr_array((vals, (where[rows_m[e]], e)), shape=(jobs.size, n_cols))


def _soc_rows(
    co: TwinCoefficients,
    rows_m: NDArray[np.intp],
    cols_k: NDArray[np.intp],
    u_cols: NDArray[np.intp],
) -> _Block:
    r"""The second-order cones :math:`(\theta_i + u_i, \theta_i - u_i, 2) \in \mathcal{Q}^3`.

    One per job with steps left, as rows of :math:`A` (:math:`s = b - Az`): rows :math:`3i`,
    :math:`3i + 1`, :math:`3i + 2` hold :math:`-(\theta_i + u_i)`, :math:`-(\theta_i - u_i)`
    and nothing.

    Built as triplets: the entries of :math:`\theta` that are exactly zero are not stored (as
    sparse sums drop them), so the matrix is the one the twin's sparse algebra gives, entry for
    entry. :math:`O(\text{nnz})`.
    """
    n_u = co.active.size
    where = np.full(co.theta.shape[0], -1, dtype=np.intp)
    where[co.active] = np.arange(n_u)
    e = np.flatnonzero(where[rows_m] >= 0)
    theta = co.theta[rows_m[e], cols_k[e]]
    keep = theta != 0.0
    e, theta = e[keep], theta[keep]
    job = 3 * where[rows_m[e]]
    cone = 3 * np.arange(n_u)
    r = np.concatenate([job, cone, job + 1, cone + 1])
    c = np.concatenate([e, u_cols, e, u_cols])
    v = np.concatenate([-theta, -np.ones(n_u), -theta, np.ones(n_u)])
    return r, c, v, 3 * n_u


def interior_allocation(instance: AllocationInstance, policy: str) -> NDArray[np.float64]:
    """``X`` as Clarabel returns it on the twin of ``policy`` (module notes), clipped to [0, 1].

    Parameters
    ----------
    instance : AllocationInstance
    policy : str
        A key of :data:`~optsched.allocation.gavel.lp.POLICIES`, not packed.

    Raises
    ------
    InvalidInstanceError
        A packed or unknown policy.
    NotOptimalError
        Clarabel did not report ``Solved`` (or the twin is not defined: no job has steps left
        for ``ftf``/``makespan``, a job with no share anywhere for ``max-min``).
    """
    co = twin_coefficients(instance, policy)
    if co.objective in ("max-min", "max-sum-throughput", "min-cost"):
        return _linear_as_cvxpy(co, instance, policy)
    m, k = co.mask.shape
    sf = instance.scale_factors
    n_x = int(co.mask.sum())
    obj = co.objective
    epi = obj in ("max-min", "ftf", "makespan")
    n_u = co.active.size
    n = n_x + (1 if epi else 0) + n_u
    base, b_base, rows_m, cols_k = _base_rows(co.mask, sf, instance.capacities, n - n_x)
    blocks: list[_Block] = [base]
    rhs = [b_base]
    q = np.zeros(n)
    n_soc = 0
    if obj == "max-min":
        if not np.all(np.isfinite(co.linear)):
            raise _stopped("max-min: a job has no proportional share")
        # v - a_m'X_m <= 0: -a on each feasible entry of its job's row, 1 in v's column
        r = np.concatenate([rows_m, np.arange(m)])
        c = np.concatenate([np.arange(n_x), np.full(m, n_x)])
        v = np.concatenate([-co.linear[rows_m, cols_k], np.ones(m)])
        blocks.append((r, c, v, m))
        rhs.append(np.zeros(m))
        q[n_x] = -1.0
    elif obj in ("max-sum-throughput", "min-cost", "min-cost-slo"):
        q[:n_x] = -co.linear[rows_m, cols_k]
        if co.due.size:
            theta = _theta_rows(co.theta, rows_m, cols_k, co.due, n)
            blocks.append(_block(-theta))  # floor - theta <= 0
            rhs.append(-co.rate_floor)
    else:
        if n_u == 0:
            raise _stopped(f"{obj}: no job has steps left")
        a_rows = np.arange(n_u)
        u_cols = n_x + 1 + a_rows
        # (offset + scale u) - v <= 0
        r = np.concatenate([a_rows, a_rows])
        c = np.concatenate([u_cols, np.full(n_u, n_x)])
        blocks.append((r, c, np.concatenate([co.scale, -np.ones(n_u)]), n_u))
        rhs.append(-co.offset)
        q[n_x] = 1.0
        blocks.append(_soc_rows(co, rows_m, cols_k, u_cols))
        rhs.append(np.tile([0.0, 0.0, 2.0], n_u))
        n_soc = n_u
    a = _stack(blocks, n)
    b = np.concatenate(rhs)
    status, z = _solve(q, a, b, b.size - 3 * n_soc, n_soc)
    if status != "Solved":
        raise _stopped(f"Clarabel stopped with status {status} on {policy}")
    x = np.zeros((m, k))
    x[rows_m, cols_k] = z[:n_x]
    return np.clip(x, 0.0, 1.0)


def _linear_as_cvxpy(
    co: TwinCoefficients, instance: AllocationInstance, policy: str
) -> NDArray[np.float64]:
    r"""The linear twins (``max-min``, ``max-sum-throughput``, ``min-cost``) as cvxpy states them.

    The twin's data exactly as cvxpy hands it to Clarabel, so that the point is the same to the
    last digit (ties in Gavel's walk follow those digits). cvxpy's order: the variables the
    epigraph's :math:`t = -\min_m a_m^\top X_m` (``max-min`` only) then :math:`X` column by
    column (type-major); the rows the equality ``gang_fits`` (one per entry, all-zero where the
    entry is feasible: the zero cone), then :math:`-X \le 0`, the epigraph's
    :math:`-t - a_m^\top X_m \le 0`, ``job_time``, ``type_capacity``. Entries that are
    exactly zero are not stored.
    """
    m, k = co.mask.shape
    n_e = m * k
    e = np.arange(n_e)
    job, typ = e % m, e // m  # column-major: entry e is X[e % m, e // m]
    masked = ~co.mask[job, typ]
    epi = co.objective == "max-min"
    off = 1 if epi else 0
    n = off + n_e
    sf = instance.scale_factors
    blocks: list[_Block] = []
    fixed = np.flatnonzero(masked)
    blocks.append((fixed, off + fixed, np.ones(fixed.size), n_e))  # gang_fits
    blocks.append((e, off + e, -np.ones(n_e), n_e))  # -X <= 0
    rhs = [np.zeros(n_e), np.zeros(n_e)]
    q = np.zeros(n)
    if epi:
        if not np.all(np.isfinite(co.linear)):
            raise _stopped("max-min: a job has no proportional share")
        coef = co.linear[job, typ]
        keep = np.flatnonzero(coef != 0.0)
        r = np.concatenate([np.arange(m), job[keep]])
        c = np.concatenate([np.zeros(m, dtype=np.intp), off + keep])
        blocks.append((r, c, np.concatenate([-np.ones(m), -coef[keep]]), m))
        rhs.append(np.zeros(m))
        q[0] = 1.0
    else:
        q[:] = -co.linear[job, typ]
    blocks.append((job, off + e, np.ones(n_e), m))  # job_time
    rhs.append(np.ones(m))
    weights = sf[job]
    keep = np.flatnonzero(weights != 0.0)
    blocks.append((typ[keep], off + keep, weights[keep], k))  # type_capacity
    rhs.append(np.asarray(instance.capacities, dtype=np.float64))
    a = _stack(blocks, n)
    b = np.concatenate(rhs)
    status, z = _solve(q, a, b, b.size - n_e, 0, n_zero=n_e)
    if status != "Solved":
        raise _stopped(f"Clarabel stopped with status {status} on {policy}")
    x = z[off:].reshape(k, m).T
    return np.clip(x, 0.0, 1.0)


#: Gavel's makespan search: its first interval (seconds), its stopping ratio, and the widenings
#: tried (as :mod:`optsched.sim.policies.gavel_makespan`).
SEARCH_T_MIN, SEARCH_T_MAX, SEARCH_RATIO, SEARCH_WIDENINGS = 100.0, 1_000_000.0, 1.05, 12
#: A midpoint within this relative distance of the least makespan is decided by the
#: interior-point solver itself, as in Gavel's search: where the feasible set is that thin, its
#: answer (stopping tolerances about 1e-8, slow progress on a nearly empty set) may differ from
#: the exact LP's. Costs a solve in a few searches.
NEAR_LEAST = 1e-3


def _makespan_data(
    instance: AllocationInstance, aware: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Rates (the agnostic form: the first type's on every type) and steps left."""
    rates = np.asarray(instance.throughputs, dtype=np.float64)
    if not aware:
        rates = np.repeat(rates[:, :1], rates.shape[1], axis=1)
    return rates, np.asarray(instance.steps, dtype=np.float64)


def _feasibility_point(
    rates: NDArray[np.float64],
    sf: NDArray[np.float64],
    cap: NDArray[np.float64],
    left: NDArray[np.float64],
    horizon: float,
) -> NDArray[np.float64] | None:
    r"""Clarabel's point of Gavel's feasibility problem at ``horizon`` (``None``: not solved).

    Every entry of ``X`` is a variable (Gavel's problem has no mask); inequalities
    :math:`-X \le 0`, ``type_capacity``, ``job_time`` and :math:`S_m/T - r_m^\top X_m \le 0`;
    a constant objective.
    """
    m, k = rates.shape
    n = m * k
    e = np.arange(n)
    # in cvxpy's order (as the linear twins): X column by column, rows as the constraints are
    # listed, entries that are exactly zero not stored
    job, typ = e % m, e // m
    weights, speed = sf[job], rates[job, typ]
    w_keep, s_keep = np.flatnonzero(weights != 0.0), np.flatnonzero(speed != 0.0)
    blocks: list[_Block] = [
        (e, e, -np.ones(n), n),
        (typ[w_keep], w_keep, weights[w_keep], k),
        (job, e, np.ones(n), m),
        (job[s_keep], s_keep, -speed[s_keep], m),
    ]
    a = _stack(blocks, n)
    b = np.concatenate([np.zeros(n), cap, np.ones(m), -left / horizon])
    status, z = _solve(np.zeros(n), a, b, b.size, 0)
    if status != "Solved":
        return None
    return z.reshape(k, m).T


def least_makespan(instance: AllocationInstance, aware: bool) -> float:
    r"""The least :math:`T` at which Gavel's feasibility problem is feasible (one HiGHS LP).

    :math:`1/T^* = \max z` s.t. :math:`r_m^\top X_m \ge S_m z`, ``job_time``, ``type_capacity``,
    :math:`X \ge 0`; ``0.0`` when no job has steps left, ``inf`` when some job with steps left
    has no positive rate.

    *Scaling.* :math:`z` is about :math:`10^{-6}` for jobs of :math:`10^8` steps, the order of
    HiGHS's own tolerances, at which it stops short of the optimum (measured: :math:`T^*` 3.5%
    too high). The LP is therefore stated in :math:`u = z T_0`, with :math:`T_0 = \max_m S_m /
    \max_j r_{mj}` (every job alone on its fastest type, a lower bound of :math:`T^*`, so that
    :math:`u \le 1`), and each job's row divided by :math:`S_m / T_0`:
    :math:`(T_0/S_m)\, r_m^\top X_m \ge u`; then :math:`T^* = T_0 / u^*`.
    """
    from optsched.solvers.matrix import LinearProgram, solve_matrix

    rates, left = _makespan_data(instance, aware)
    due = left > 0
    if not np.any(due):
        return 0.0
    fastest = rates.max(axis=1)
    if np.any(fastest[due] <= 0.0):
        return math.inf
    t0 = float((left[due] / fastest[due]).max())
    m, k = rates.shape
    n = m * k
    e = np.arange(n)
    job, typ = e // k, e % k
    sf = instance.scale_factors
    # job rows with steps left: -(T0 / S_m) r_m'X_m + u <= 0 (the others always hold)
    weight = np.where(due, t0 / np.where(due, left, 1.0), 0.0)
    r = np.concatenate([typ, k + job, k + m + job, k + m + np.arange(m)])
    c = np.concatenate([e, e, e, np.full(m, n)])
    v = np.concatenate([sf[job], np.ones(n), -(rates * weight[:, None]).ravel(), due * 1.0])
    a = _stack([(r, c, v, k + 2 * m)], n + 1)
    b = np.concatenate([instance.capacities, np.ones(m), np.zeros(m)])
    cost = np.zeros(n + 1)
    cost[n] = 1.0
    lp = LinearProgram(
        cost,
        sp.csc_array(a),
        np.full(b.size, -np.inf),
        b,
        np.zeros(n + 1),
        np.full(n + 1, np.inf),
        sense="max",
        trusted=True,
    )
    sol = solve_matrix(lp, options={"presolve": "off"})
    if sol.x is None:
        raise _stopped(f"the least-makespan LP stopped: {sol.result.status.value}")
    res_x = sol.x
    u = float(res_x[n])
    return math.inf if u <= 0.0 else t0 / u


def gavel_makespan_interior(
    instance: AllocationInstance, aware: bool, *, reference: bool = False
) -> NDArray[np.float64] | None:
    """The allocation Gavel's makespan search returns, as Clarabel's point (module notes).

    The same search as :func:`optsched.sim.policies.gavel_makespan.gavel_makespan_allocation`
    (intervals, ratio, widenings), with each feasibility problem built directly. By default the
    search's course is decided by :func:`least_makespan` and only its last feasible problem (and
    any midpoint within :data:`NEAR_LEAST` of :math:`T^*`) is solved; ``reference=True`` solves
    every midpoint, as Gavel.

    Returns
    -------
    ndarray of shape (M, K), clipped to [0, 1], or ``None`` when no interval held a feasible
    problem.
    """
    rates, left = _makespan_data(instance, aware)
    sf = np.asarray(instance.scale_factors, dtype=np.float64)
    cap = np.asarray(instance.capacities, dtype=np.float64)
    star = math.nan if reference else least_makespan(instance, aware)
    found: dict[float, NDArray[np.float64] | None] = {}

    def point(horizon: float) -> NDArray[np.float64] | None:
        if horizon not in found:
            found[horizon] = _feasibility_point(rates, sf, cap, left, horizon)
        return found[horizon]

    def feasible(horizon: float) -> bool:
        if math.isnan(star) or abs(horizon - star) <= NEAR_LEAST * star:
            return point(horizon) is not None
        return horizon > star

    lo, hi, top = SEARCH_T_MIN, SEARCH_T_MAX, SEARCH_T_MAX
    best: float | None = None
    for _ in range(SEARCH_WIDENINGS):
        while SEARCH_RATIO * lo < hi:
            mid = (lo + hi) / 2.0
            if feasible(mid):
                best, hi = mid, mid
            else:
                lo = mid
        if best is not None:
            x = point(best)
            if x is None:
                # the interior-point solver refused a problem the LP found feasible: the
                # search as Gavel runs it decides
                return (
                    None if reference else gavel_makespan_interior(instance, aware, reference=True)
                )
            return np.clip(x, 0.0, 1.0)
        lo, hi, top = top, top * 10.0, top * 10.0
    return None
