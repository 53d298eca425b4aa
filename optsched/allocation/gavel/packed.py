r"""Space-sharing ("packed") allocation policies as linear programs built straight into HiGHS.

Gavel's packed policies let two jobs share the same gang of GPUs at their measured pair rates.
Besides the singleton fractions :math:`X_{mj}` there is a pair fraction :math:`Y_{pj} \ge 0` for
every co-locatable pair :math:`p = \{m, m'\}` and GPU type :math:`j`. A pair is co-locatable on
:math:`j` (\texttt{pair\_fits}) when both jobs have a co-location class
(:attr:`~optsched.allocation.gavel.AllocationJob.job_type`), the same scale factor :math:`s`, may
run
alone on :math:`j`, and the instance's pair table gives both positive normalised throughputs
:math:`f^{m|m'}_j, f^{m'|m}_j` there. With

.. math::

    \theta_m(X, Y) = \sum_j T_{mj} X_{mj} + \sum_{p \ni m} \sum_j f^{m|p}_j T_{mj} Y_{pj}

the constraints are

.. math::

    \sum_j X_{mj} + \sum_{p \ni m} \sum_j Y_{pj} \le 1 \ \ \forall m \quad (\texttt{job\_time}),
    \qquad
    \sum_m s_m X_{mj} + \sum_p s_p Y_{pj} \le n_j \ \ \forall j \quad (\texttt{type\_capacity}),

a pair counted once against its type's GPUs. The objectives are those of
:mod:`optsched.allocation.gavel.lp` with :math:`\theta_m(X, Y)` in place of :math:`\theta_m(X)` (the
shares :math:`p_m, q_m` they normalise by stay those of the jobs alone, as in Gavel):
``max-min-packed`` (Gavel's ``max_min_fairness_packed``), ``makespan-packed``, ``ftf-packed``
and ``max-sum-throughput-packed``, all heterogeneity-aware. Without pairs each is its ``-perf``
policy; with pairs its feasible set contains the unpacked one (:math:`Y = 0`), so the packed
max-min and max-sum optima are never worse.

**Solved over classes.** Jobs with equal coefficients (scale factor, where they may run, the
policy's per-job terms, co-location class) are interchangeable: averaging an optimum over the
permutations of each class keeps it feasible and optimal, so an optimum exists whose pair
fractions depend only on the two jobs' classes. The LP therefore has, per pair of classes
:math:`e = (c, d)` and type :math:`j`, one variable :math:`P_{ej}` (the pairs' total time, scaled
as :math:`P_{ej} = \mu_e u_{ej}` with :math:`\mu_e = \min(N_c, N_d)` so that columns are of order
one); a job of class :math:`c` spends :math:`P_{ej} / N_c` of the round paired with class
:math:`d` (:math:`2 P_{ej} / N_c` when :math:`d = c`). Gavel's inputs (a few dozen job types)
give an LP of a few hundred columns where Gavel's has :math:`3 M (M+1) / 2`.

**Back to jobs.** A class-pair total is split over concrete job pairs with a sparse pattern
that gives every job its exact share: the north-west-corner rule between the two classes
(at most :math:`N_c + N_d - 1` pairs), a perfect matching of an even class with itself, a cycle
of an odd one. The allocation returned is therefore feasible and has the LP's objective, which
:func:`packed_objective_value` recomputes from the job-level definition.

Complexity: the LP has :math:`CK + QK + 1` columns for :math:`C` classes and :math:`Q` class pairs
(:math:`O((C + Q) K)` rows and non-zeros), built in :math:`O(M K + Q K)` numpy; the job-level
allocation has :math:`O(M + Q)` pair rows per type pattern.

References: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020 (§3.1 space sharing).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import (
    FTF_MAX_STEPS,
    Objective,
    _Classes,
    _classes,
    _ftf_terms,
    _result,
    feasible_mask,
    objective_from_theta,
)
from optsched.allocation.gavel.shares import isolated_share, proportional_throughput
from optsched.allocation.gavel.solution import Allocation
from optsched.errors import InvalidInstanceError
from optsched.solvers.highs import LinearProgram, MatrixSolution
from optsched.solvers.matrix import solve_matrix
from optsched.solvers.result import SolveResult, TerminationCondition
from optsched.tolerances import OPTIMALITY_GAP

__all__ = [
    "PACKED_POLICIES",
    "co_locatable",
    "packed_objective_value",
    "pair_rates",
    "solve_packed_policy",
]

#: Packed policy name -> objective (all heterogeneity-aware).
PACKED_POLICIES: dict[str, Objective] = {
    "max-min-packed": "max-min",
    "makespan-packed": "makespan",
    "ftf-packed": "ftf",
    "max-sum-throughput-packed": "max-sum-throughput",
}


def co_locatable(instance: AllocationInstance, a: int, b: int) -> NDArray[np.bool_]:
    """Per GPU type, whether jobs ``a`` and ``b`` may share a gang (see ``pair_fits`` above)."""
    ja, jb = instance.jobs[a], instance.jobs[b]
    k = instance.n_types
    if a == b or ja.job_type is None or jb.job_type is None or ja.scale_factor != jb.scale_factor:
        return np.zeros(k, dtype=bool)
    f = instance.pair_table.get((ja.job_type, jb.job_type))
    if f is None:
        return np.zeros(k, dtype=bool)
    mask = feasible_mask(instance)
    return mask[a] & mask[b] & (f[:, 0] > 0) & (f[:, 1] > 0)


def pair_rates(instance: AllocationInstance, pairs: NDArray[np.int64]) -> NDArray[np.float64]:
    """Steps/s of each job of each pair row on each type.

    Shape (pairs, types, 2); 0 where the pair cannot share that type.
    """
    t = instance.throughputs
    k = instance.n_types
    out = np.zeros((pairs.shape[0], k, 2))
    if pairs.shape[0] == 0:
        return out
    mask = feasible_mask(instance)
    jobs = instance.jobs
    a, b = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    # one factor array per distinct (class, class) of the rows; zeros where no entry
    index: dict[tuple[str | None, str | None], int] = {}
    tables = [np.zeros((k, 2))]
    rows = np.zeros(a.size, dtype=np.int64)
    for r in range(a.size):
        key = (jobs[a[r]].job_type, jobs[b[r]].job_type)
        i = index.get(key)
        if i is None:
            ta, tb = key
            f = None if ta is None or tb is None else instance.pair_table.get((ta, tb))
            i = index[key] = len(tables) if f is not None else 0
            if f is not None:
                tables.append(f)
        rows[r] = i
    f_rows = np.stack(tables)[rows]  # (pairs, K, 2)
    sf = instance.scale_factors
    ok = (
        (a != b)[:, None]
        & (sf[a] == sf[b])[:, None]
        & mask[a]
        & mask[b]
        & (f_rows[:, :, 0] > 0)
        & (f_rows[:, :, 1] > 0)
    )
    out[:, :, 0] = np.where(ok, f_rows[:, :, 0] * t[a], 0.0)
    out[:, :, 1] = np.where(ok, f_rows[:, :, 1] * t[b], 0.0)
    return out


def packed_objective_value(
    instance: AllocationInstance, allocation: Allocation, objective: Objective
) -> float:
    r"""The objective of a (packed) allocation from its job-level definition.

    :math:`\theta_m(X, Y)` as in the module docstring; then ``max-min``:
    :math:`\min_m \theta_m s_m / (w_m p_m)`; ``makespan``: :math:`\max_m \sigma_m / \theta_m`;
    ``ftf``: :math:`\max_m \rho_m`; ``max-sum-throughput``: :math:`\sum_m \theta_m`.
    """
    t = instance.throughputs
    theta = allocation.effective_throughput(t, pair_rates(instance, allocation.pairs))
    return _from_theta(instance, theta, objective)


def _from_theta(instance: AllocationInstance, theta: NDArray[np.float64], objective: str) -> float:
    # the packed policies are heterogeneity-aware: the references come from the measured table
    return objective_from_theta(instance, instance.throughputs, theta, objective)


@dataclass(frozen=True)
class _Packed:
    """The class-level packed polytope (see the module docstring).

    Columns: ``C*K`` singleton fractions, then one column per allowed (class pair, type), then
    the epigraph variable. ``theta`` maps the first ``n_cols`` columns to each class's
    throughput; ``time`` to each class's share of the round; ``gpus`` to each type's GPUs.
    """

    cl: _Classes
    k: int
    pair_classes: NDArray[np.int64]  # (E, 2) class indices c <= d
    pair_col_e: NDArray[np.int64]  # per pair column: its class pair
    pair_col_j: NDArray[np.int64]  # per pair column: its GPU type
    mu: NDArray[np.float64]  # (E,) column scale
    theta: Any  # scipy csr (C, n_cols)
    time: Any  # scipy csr (C, n_cols)
    gpus: Any  # scipy csr (K, n_cols)
    upper: NDArray[np.float64]  # column upper bounds (n_cols,)
    best: NDArray[np.float64]  # per class: fastest rate per unit of time, alone or in a pair

    @property
    def n_cols(self) -> int:
        return int(self.upper.size)


def _job_type_codes(instance: AllocationInstance) -> tuple[NDArray[np.float64], list[str]]:
    names = sorted({j.job_type for j in instance.jobs if j.job_type is not None})
    code = {n: i for i, n in enumerate(names)}
    values = [-1.0 if j.job_type is None else float(code[j.job_type]) for j in instance.jobs]
    return np.array(values), names


def _build(instance: AllocationInstance, *keys: NDArray[np.float64]) -> _Packed:
    import scipy.sparse as sp

    codes, names = _job_type_codes(instance)
    cl = _classes(instance, codes, *keys)
    c_n, k = cl.n, instance.n_types
    t = instance.throughputs[cl.rep]
    class_code = codes[cl.rep].astype(np.int64)
    by_code: dict[int, NDArray[np.int64]] = {
        i: np.flatnonzero(class_code == i) for i in range(len(names))
    }
    table = instance.pair_table
    blocks: list[NDArray[np.int64]] = []
    factors: list[NDArray[np.float64]] = []  # per class pair: (K, 2)
    candidates = 0.0  # class pairs considered so far, checked before their arrays exist
    for ia, a in enumerate(names):
        for ib in range(ia, len(names)):
            f = table.get((a, names[ib]))
            if f is None or not ((f[:, 0] > 0) & (f[:, 1] > 0)).any():
                continue
            ca, cb = by_code[ia], by_code[ib]
            if ca.size == 0 or cb.size == 0:
                continue
            candidates += float(ca.size) * float(cb.size)
            limits.check_size(
                "pair_throughputs", candidates * k, "max_model_variables", "pair columns"
            )
            grid_c, grid_d = np.meshgrid(ca, cb, indexing="ij")
            cc, dd = grid_c.ravel(), grid_d.ravel()
            keep = cl.sf[cc] == cl.sf[dd]
            if ia == ib:
                keep &= (cc < dd) | ((cc == dd) & (cl.counts[cc] >= 2))
            cc, dd = cc[keep], dd[keep]
            lo, hi = np.minimum(cc, dd), np.maximum(cc, dd)
            flip = cc > dd  # store (lo, hi) with the factor columns in that order
            blocks.append(np.column_stack([lo, hi]))
            fe = np.broadcast_to(f, (cc.size, k, 2)).copy()
            fe[flip] = fe[flip][:, :, ::-1]
            factors.append(fe)
    pc = np.concatenate(blocks) if blocks else np.zeros((0, 2), dtype=np.int64)
    fe_all = np.concatenate(factors) if factors else np.zeros((0, k, 2))
    ok = cl.mask[pc[:, 0]] & cl.mask[pc[:, 1]] & (fe_all[:, :, 0] > 0) & (fe_all[:, :, 1] > 0)
    has = ok.any(axis=1)
    pc, fe_all, ok = pc[has], fe_all[has], ok[has]
    limits.check_size(
        "pair_throughputs", float(ok.sum()) + c_n * k, "max_model_variables", "LP columns"
    )
    e_idx, j_idx = np.nonzero(ok)
    n_single = c_n * k
    n_pair = e_idx.size
    n_cols = n_single + n_pair
    counts = cl.counts
    same = pc[:, 0] == pc[:, 1]
    mu = np.where(same, counts[pc[:, 0]], np.minimum(counts[pc[:, 0]], counts[pc[:, 1]]))
    # singleton parts
    idx = np.arange(n_single)
    s_class, s_type = idx // k, idx % k
    th_rows, th_cols, th_vals = [s_class], [idx], [t.ravel()]
    tm_rows, tm_cols, tm_vals = [s_class], [idx], [np.ones(n_single)]
    gp_rows, gp_cols, gp_vals = [s_type], [idx], [np.repeat(counts * cl.sf, k)]
    # pair parts: column q = n_single + r for allowed entry r = (e_idx[r], j_idx[r])
    cols = n_single + np.arange(n_pair)
    for side in (0, 1):
        cls_ = pc[e_idx, side]
        # a class paired with itself gets both sides' time: 2 P / N_c, split over the two sides
        share = mu[e_idx] / counts[cls_]
        th_rows.append(cls_)
        th_cols.append(cols)
        th_vals.append(t[cls_, j_idx] * fe_all[e_idx, j_idx, side] * share)
        tm_rows.append(cls_)
        tm_cols.append(cols)
        tm_vals.append(share)
    best = (t * cl.mask).max(axis=1)
    for side in (0, 1):
        cls_ = pc[e_idx, side]
        np.maximum.at(best, cls_, t[cls_, j_idx] * fe_all[e_idx, j_idx, side])
    gp_rows.append(j_idx)
    gp_cols.append(cols)
    gp_vals.append(cl.sf[pc[e_idx, 0]] * mu[e_idx])

    def mat(rows: list[Any], cols_: list[Any], vals: list[Any], n: int) -> Any:
        return sp.csr_array(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols_))),
            shape=(n, n_cols),
        )

    upper = np.concatenate([cl.mask.ravel().astype(np.float64), np.full(n_pair, np.inf)])
    return _Packed(
        cl=cl,
        k=k,
        pair_classes=pc,
        pair_col_e=e_idx,
        pair_col_j=j_idx,
        mu=mu,
        theta=mat(th_rows, th_cols, th_vals, c_n),
        time=mat(tm_rows, tm_cols, tm_vals, c_n),
        gpus=mat(gp_rows, gp_cols, gp_vals, k),
        upper=upper,
        best=best,
    )


def _program(
    pk: _Packed,
    coef: NDArray[np.float64] | None,
    aux: NDArray[np.float64] | None,
    objective: NDArray[np.float64] | None = None,
) -> LinearProgram:
    """Packed polytope + rows ``coef[c] * theta_c - aux[c] v >= 0``, maximise ``v``.

    With ``objective``, maximise that linear function of the columns instead.
    """
    import scipy.sparse as sp

    c_n, n = pk.cl.n, pk.n_cols
    v_col = sp.csr_array((c_n + pk.k, 1))
    blocks = [[pk.time, v_col[:c_n]], [pk.gpus, v_col[c_n:]]]
    lower = [np.full(c_n + pk.k, -np.inf)]
    upper = [np.concatenate([np.ones(c_n), pk.cl.capacities])]
    if coef is not None and aux is not None:
        scaled = sp.diags_array(coef) @ pk.theta
        blocks.append([scaled, sp.csr_array(-aux.reshape(-1, 1))])
        lower.append(np.zeros(c_n))
        upper.append(np.full(c_n, np.inf))
    a = sp.block_array(blocks, format="csc")
    c = np.zeros(n + 1)
    if objective is None:
        c[-1] = 1.0
    else:
        c[:n] = objective
    col_upper = np.concatenate([pk.upper, [np.inf if objective is None else 0.0]])
    # Built here as a float CSC matrix: the one-pass checks of a trusted model apply.
    return LinearProgram(
        c,
        a,
        np.concatenate(lower),
        np.concatenate(upper),
        0.0,
        col_upper,
        sense="max",
        trusted=True,
    )


def _pattern_cross(na: int, nb: int) -> list[tuple[int, int, float]]:
    """North-west-corner transport between two classes of ``na`` and ``nb`` jobs.

    Rows have supply ``1/na``, columns demand ``1/nb`` (total 1): at most ``na + nb - 1``
    positive cells. Exact in rationals: row ``i`` covers ``[i/na, (i+1)/na)``, column ``l``
    covers ``[l/nb, (l+1)/nb)``; a cell is their overlap. The loop advances ``i`` or ``l``
    every step, so it runs at most ``na + nb`` times.
    """
    out: list[tuple[int, int, float]] = []
    i = l_ = 0
    while i < na and l_ < nb:
        lo = max(i * nb, l_ * na)
        hi = min((i + 1) * nb, (l_ + 1) * na)
        if hi > lo:
            out.append((i, l_, (hi - lo) / (na * nb)))
        if (i + 1) * nb <= (l_ + 1) * na:
            i += 1
        else:
            l_ += 1
    return out


def _pattern_self(n: int) -> list[tuple[int, int, float]]:
    """Pairs within one class of ``n >= 2`` jobs.

    Weights sum to 1, every job in weight ``2/n``: a perfect matching when ``n`` is even, the
    cycle when it is odd.
    """
    if n % 2 == 0:
        return [(2 * i, 2 * i + 1, 2.0 / n) for i in range(n // 2)]
    return [(i, (i + 1) % n, 1.0 / n) for i in range(n)]


def _to_jobs(
    instance: AllocationInstance, pk: _Packed, sol: MatrixSolution
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Job-level singleton fractions and pair rows of a class-level LP solution."""
    assert sol.x is not None
    cl, k = pk.cl, pk.k
    x = np.clip(sol.x[: cl.n * k].reshape(cl.n, k), 0.0, 1.0)
    fractions = cl.expand(x)
    u = np.clip(sol.x[cl.n * k : pk.n_cols], 0.0, None)
    total = np.zeros((pk.pair_classes.shape[0], k))  # P_ej, pair time of class pair e on j
    np.add.at(total, (pk.pair_col_e, pk.pair_col_j), u * pk.mu[pk.pair_col_e])
    members = [np.flatnonzero(cl.inverse == c) for c in range(cl.n)]
    rows: dict[tuple[int, int], NDArray[np.float64]] = {}
    for e in np.flatnonzero(total.max(axis=1, initial=0.0) > 0):
        c, d = (int(v) for v in pk.pair_classes[e])
        jc, jd = members[c], members[d]
        if c == d:
            pattern = [(int(jc[a]), int(jc[b]), w) for a, b, w in _pattern_self(jc.size)]
        else:
            pattern = [(int(jc[a]), int(jd[b]), w) for a, b, w in _pattern_cross(jc.size, jd.size)]
        for a, b, w in pattern:
            key = (min(a, b), max(a, b))
            row = rows.setdefault(key, np.zeros(k))
            row += w * total[e]
    if not rows:
        return fractions, np.zeros((0, 2), dtype=np.int64), np.zeros((0, k))
    keys = sorted(rows)
    return (
        fractions,
        np.array(keys, dtype=np.int64),
        np.array([rows[key] for key in keys], dtype=np.float64),
    )


def solve_packed_policy(
    instance: AllocationInstance,
    policy: str,
    *,
    time_limit: float | None = None,
    warm_start: MatrixSolution | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
) -> tuple[Allocation, SolveResult, MatrixSolution | None]:
    """Solve one packed policy's LP(s); return the allocation, the result and the last LP.

    Parameters
    ----------
    instance : AllocationInstance
        With :attr:`~AllocationInstance.pair_throughputs` and job classes (without them the
        policy is its unpacked ``-perf`` form).
    policy : str
        A key of :data:`PACKED_POLICIES`.
    time_limit : float, optional
        Seconds for the whole policy (all its LPs, building included).
    warm_start : MatrixSolution, optional
        The last LP solution of the same policy on an instance of the same shape.
    threads : int, optional
        HiGHS threads for every LP.
    solver_options : mapping, optional
        Native HiGHS options for every LP.

    Raises
    ------
    InvalidInstanceError
        Unknown policy.
    NotOptimalError
        An LP stopped short (``error.result`` holds the :class:`SolveResult`).
    """
    native = dict(solver_options or {})
    if policy not in PACKED_POLICIES:
        raise InvalidInstanceError(
            "policy", f"unknown packed policy {policy!r}; known: {sorted(PACKED_POLICIES)}"
        )
    objective = PACKED_POLICIES[policy]
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    m, k = instance.n_jobs, instance.n_types
    job_ids = tuple(j.job_id for j in instance.jobs)

    def allocation(
        x: NDArray[np.float64],
        pairs: NDArray[np.int64] | None = None,
        y: NDArray[np.float64] | None = None,
    ) -> Allocation:
        return Allocation(
            job_ids=job_ids,
            gpu_types=instance.gpu_types,
            fractions=x,
            policy=policy,
            pairs=np.zeros((0, 2), dtype=np.int64) if pairs is None else pairs,
            pair_fractions=np.zeros((0, k)) if y is None else y,
        )

    def left() -> float | None:
        return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)

    zero = _result(TerminationCondition.OPTIMAL, 0.0, 0.0, 0.0, 0.0, 0)
    if m == 0:
        return allocation(np.zeros((0, k))), zero, None
    t = instance.throughputs
    sigma = instance.steps
    if objective in ("makespan", "ftf") and not (sigma > 0).any():
        return allocation(np.zeros((m, k))), zero, None

    if objective != "ftf":
        if objective == "max-sum-throughput":
            pk = _build(instance, t)
            lp = _program(pk, None, None, objective=pk.cl.counts @ pk.theta)

            def to_bound(v: float) -> float:
                return v

        elif objective == "max-min":
            p = proportional_throughput(t, instance.capacities)
            share = instance.scale_factors / (instance.weights * p)
            pk = _build(instance, t, share)
            lp = _program(pk, share[pk.cl.rep], np.ones(pk.cl.n))

            def to_bound(v: float) -> float:
                return v

        else:
            # z = scale / makespan, scale the makespan's lower bound (see lp.py).
            pk = _build(instance, t, sigma)
            scale = float(np.max(sigma / _best_rate(instance, pk)))
            lp = _program(pk, np.ones(pk.cl.n), sigma[pk.cl.rep] / scale)

            def to_bound(v: float) -> float:
                return scale / v if v > 0 else math.inf

        build = time.perf_counter() - start
        sol = solve_matrix(
            lp, time_limit=left(), warm_start=warm_start, options=native or None, threads=threads
        )
        assert sol.result.objective is not None
        alloc = allocation(*_to_jobs(instance, pk, sol))
        value = packed_objective_value(instance, alloc, objective)
        bound = to_bound(sol.result.objective)
        res = _result(
            TerminationCondition.OPTIMAL, value, bound, build, sol.result.solve_seconds, 1
        )
        return alloc, res, sol
    return _solve_ftf(instance, policy, start, left, warm_start, allocation, native, threads)


def _best_rate(instance: AllocationInstance, pk: _Packed) -> NDArray[np.float64]:
    r"""An upper bound on each job's :math:`\theta_m`.

    Its time share is at most 1: its fastest rate alone or in a pair.
    """
    return pk.cl.expand(pk.best)


def _solve_ftf(
    instance: AllocationInstance,
    policy: str,
    start: float,
    left: Callable[[], float | None],
    warm_start: MatrixSolution | None,
    allocation: Callable[..., Allocation],
    native: dict[str, Any],
    threads: int | None,
) -> tuple[Allocation, SolveResult, MatrixSolution | None]:
    """Finish-time fairness over the packed polytope.

    The bracket-and-descend sequence of :mod:`optsched.allocation.gavel.lp` (every step keeps
    ``lower <= r* <= upper``).
    """
    t = instance.throughputs
    sigma = instance.steps
    m = instance.n_jobs
    _, since, c = _ftf_terms(instance, t)
    active = sigma > 0
    pk = _build(instance, t, sigma, since, np.nan_to_num(c, nan=-1.0))
    build = time.perf_counter() - start
    best_rate = _best_rate(instance, pk)
    lower = float(np.max((since[active] + sigma[active] / best_rate[active]) / c[active]))
    x0 = isolated_share(instance.scale_factors, instance.capacities) * feasible_mask(instance)
    best: Allocation = allocation(x0)
    upper = packed_objective_value(instance, best, "ftf")
    hi = upper
    solve_seconds, solves = 0.0, 0
    step: MatrixSolution | None = warm_start
    last_feasible: MatrixSolution | None = None
    descend = math.isfinite(upper)
    ones = np.ones(pk.cl.n)
    for _ in range(FTF_MAX_STEPS):
        if math.isfinite(upper) and upper - lower <= OPTIMALITY_GAP / 10 * max(1.0, upper):
            break
        if math.isfinite(hi) and hi - lower <= OPTIMALITY_GAP / 100 * max(1.0, hi):
            break
        remaining = left()
        if remaining is not None and remaining <= 1e-3:
            stop = TerminationCondition.TIME_LIMIT
            return best, _result(stop, upper, lower, build, solve_seconds, solves), last_feasible
        if not math.isfinite(hi):
            r = 2.0 * lower + 1.0
        elif descend:
            r = hi
        else:
            r = max(0.5 * (lower + hi), hi * (1.0 - OPTIMALITY_GAP / 20))
        g = np.zeros(m)
        g[active] = sigma[active] / (r * c[active] - since[active])
        lp = _program(pk, ones, g[pk.cl.rep])
        step = solve_matrix(
            lp, time_limit=left(), warm_start=step, options=native or None, threads=threads
        )
        solves += 1
        solve_seconds += step.result.solve_seconds
        assert step.result.objective is not None
        if step.result.objective >= 1.0:
            alloc = allocation(*_to_jobs(instance, pk, step))
            value = packed_objective_value(instance, alloc, "ftf")
            improved = value < upper * (1.0 - OPTIMALITY_GAP / 20)
            if value < upper:
                upper, best, last_feasible = value, alloc, step
            hi = min(r, upper)
            descend = improved
        else:
            lower = r
            descend = False
    res = _result(TerminationCondition.OPTIMAL, upper, lower, build, solve_seconds, solves)
    return best, res, last_feasible
