r"""Heterogeneity-aware allocation policies as linear programs built straight into HiGHS.

Every policy optimises over the same polytope of time fractions (Gavel's base constraints):

.. math::

    X_{mj} \ge 0,\qquad \sum_j X_{mj} \le 1 \ \ \forall m \quad (\texttt{job\_time}),\qquad
    \sum_m s_m X_{mj} \le n_j \ \ \forall j \quad (\texttt{type\_capacity}),

with :math:`X_{mj} = 0` where job :math:`m` cannot run on type :math:`j` (zero throughput, or a
gang larger than the type has GPUs: \texttt{gang\_fits}). With
:math:`\theta_m(X) = \sum_j T_{mj} X_{mj}`:

* ``max-min`` (LAS): :math:`\max_X \min_m \theta_m(X)\, s_m / (w_m p_m)`; the epigraph variable
  :math:`v` gives the LP :math:`\max v` s.t. :math:`\theta_m(X) s_m/(w_m p_m) \ge v`
  (\texttt{fair\_share}).
* ``makespan`` (min total duration): :math:`\min_X \max_m \sigma_m / \theta_m(X)` with
  :math:`\sigma_m` steps left. Substituting :math:`z = 1/\text{makespan}` makes it the LP
  :math:`\max z` s.t. :math:`\theta_m(X) \ge \sigma_m z` (\texttt{finish\_by}): exact, where Gavel
  bisects on the makespan to 5 %. *Secondary objective.* The optimal makespan fixes only the
  bottleneck jobs; a vertex optimum typically gives every other job just
  :math:`\theta_m = \sigma_m z^*`, exactly enough to finish *at* the makespan, so short jobs
  wait for the longest, and the mean JCT suffers at no gain in makespan. A second LP
  therefore chooses, among the allocations within
  :data:`~optsched.tolerances.MAKESPAN_SECONDARY_TOL` of the optimal makespan, one that
  maximizes the total throughput-normalized progress
  :math:`\sum_m \theta_m(X) / \sigma_m` (each job's share of its remaining work done per
  second, the reciprocal of its finish-time estimate), lexicographically:

  .. math::

      \max_X \sum_{m:\,\sigma_m > 0} \frac{\theta_m(X)}{\sigma_m}
      \quad\text{s.t.}\quad \theta_m(X) \ge \sigma_m\, z^* (1 - \epsilon)\ \ \forall m,
      \quad X \in \text{base polytope},

  :math:`\epsilon` = ``MAKESPAN_SECONDARY_TOL``. Every job still finishes by the makespan; the
  capacity the bottleneck does not need goes first to the jobs with the least work left, so a
  short job finishes strictly before the makespan whenever there is room. The makespan reported
  is that of the returned allocation, the bound the first LP's.
* ``ftf`` (finish-time fairness, Themis's objective as Gavel states it):
  :math:`\min_X \max_m \rho_m(X)`, :math:`\rho_m(X) = (t_m + \sigma_m/\theta_m(X)) / c_m` with
  :math:`c_m = h_m + \sigma_m / q_m` (isolated time so far plus time left at the isolated share).
  :math:`\rho_m(X) \le r \iff \theta_m(X) \ge g_m(r) = \sigma_m / (r c_m - t_m)`, so for a fixed
  :math:`r` feasibility is an LP, and :math:`\lambda^*(r) = \max\{\lambda : \theta_m(X) \ge
  \lambda g_m(r)\}` is at least 1 exactly when :math:`r` is achievable. Written as
  :math:`\rho_m = \beta_m + \alpha_m/\theta_m` (:math:`\alpha_m = \sigma_m/c_m`,
  :math:`\beta_m = t_m/c_m \ge 0`), :math:`g_m(r) = \alpha_m/(r - \beta_m)`, and for
  :math:`r' \le r` every job has :math:`(r-\beta_m)/(r'-\beta_m) \ge r/r'`, so an allocation
  achieving :math:`r'` gives :math:`\lambda^*(r) \ge r/r'`: every LP at a level :math:`r` proves
  :math:`r^* \ge r/\lambda^*(r)`. We bracket :math:`r^* \in [L, U]` (``L`` from every job
  alone on its fastest type and from those bounds, ``U`` from the isolated allocation and
  every allocation found). The levels tried: :math:`r = U` (a Dinkelbach step), then
  :math:`r = L` (:math:`\lambda^* \ge 1` there proves :math:`L` optimal, the usual case once a
  job has waited long), then secant roots of :math:`\lambda^*(r) = 1` inside the bracket,
  bisecting when two LPs did not halve it; each LP warm-started from the previous basis.
  When no job has waited
  (:math:`\beta = 0`, Gavel's microbenchmark) :math:`\lambda^*(r)` is proportional to
  :math:`r` and the first LP closes the bracket. Jobs are grouped by
  :math:`(s_m, T_m/\alpha_m, \beta_m)`, so jobs of one type with no history form one class
  whatever their steps left. The result is proven within the bracket: optimal when
  :math:`U - L \le` :data:`~optsched.tolerances.OPTIMALITY_GAP` :math:`\cdot U`.
  *Hot path* (:data:`HOT_LEVELS`): once a job has waited the first level is :math:`L`, the
  next ones Newton's roots of :math:`\lambda^*(r) = 1` with the slope read from the LP's duals
  (:func:`_level_slope`; the secant or bisection when the root leaves the bracket or the
  safeguard asks); every LP's allocation, whatever its :math:`\lambda^*`, is a candidate for
  :math:`U` (at :math:`r = L` optimal, :math:`\lambda^*` a rounding error below 1 otherwise
  leaves the bracket open for up to a dozen more LPs); and the round's first LP starts from the
  previous round's basis carried over job by job (:func:`_carried_basis`). The same
  certificate, usually one LP per round, but a degenerate optimum may end at another
  allocation.
* ``max-sum-throughput``: :math:`\max_X \sum_m \theta_m(X)`.
* ``min-cost`` (throughput per dollar, Gavel's ``ThroughputNormalizedByCostSum``):
  :math:`\max_X \sum_{m,j} u_{mj} X_{mj}` with :math:`u_{mj} = 3600\,T_{mj}/(s_m p_j)` steps per
  dollar (:math:`p_j` US$ per GPU-hour, :mod:`optsched.allocation.gavel.prices`); ``min-cost-slo``
  adds :math:`\theta_m(X) \ge \sigma_m / d_m` for every job with a deadline :math:`d_m`
  seconds away. A round no allocation can serve raises ``NotOptimalError`` with status
  ``infeasible`` (naming the jobs that alone need more than their fastest type gives).

Heterogeneity-agnostic variants replace :math:`T` before the LP: by all ones for ``max-min``
(equal time shares, Gavel's ``MaxMinFairnessPolicy``), by each job's throughput on a reference
type for the others (Gavel uses ``v100``).

Complexity: the LP has :math:`MK + 1` columns and :math:`2M + K` rows with :math:`3MK` non-zeros,
built in :math:`O(MK)` vectorised numpy (over classes of interchangeable jobs, usually far fewer
than :math:`M`); ``ftf`` solves one LP when no job has waited and otherwise a few (2.8 per
round on average simulating the ElasticFlow trace ``cluster04``), :data:`FTF_MAX_STEPS` at most:
the bracket halves at least every three LPs, so :math:`O(\log(U_0/(L_0 \epsilon)))`.
The cost policies solve one LP; with deadlines it has :math:`|C|` more rows.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.prices import gpu_prices
from optsched.allocation.gavel.shares import (
    isolated_share,
    isolated_throughput,
    proportional_throughput,
)
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.solvers.highs import (
    BASIS_BASIC,
    BASIS_LOWER,
    BASIS_UPPER,
    LinearProgram,
    MatrixSolution,
    warm_basis,
)
from optsched.solvers.matrix import solve_matrix
from optsched.solvers.result import (
    SolutionStatus,
    SolveResult,
    Status,
    TerminationCondition,
    assemble,
)
from optsched.tolerances import MAKESPAN_SECONDARY_TOL, OPTIMALITY_GAP

__all__ = [
    "POLICIES",
    "Objective",
    "cost_coefficients",
    "effective_throughputs",
    "feasible_mask",
    "objective_value",
    "slo_rates",
    "solve_lp_policy",
]

Objective = Literal["max-min", "makespan", "ftf", "max-sum-throughput", "min-cost", "min-cost-slo"]

#: Policy name -> (objective, heterogeneity-aware?).
POLICIES: dict[str, tuple[Objective, bool]] = {
    "max-min": ("max-min", False),
    "max-min-perf": ("max-min", True),
    "makespan": ("makespan", False),
    "makespan-perf": ("makespan", True),
    "ftf": ("ftf", False),
    "ftf-perf": ("ftf", True),
    "max-sum-throughput-perf": ("max-sum-throughput", True),
    "min-cost": ("min-cost", False),
    "min-cost-perf": ("min-cost", True),
    "min-cost-slo": ("min-cost-slo", False),
    "min-cost-slo-perf": ("min-cost-slo", True),
    # space sharing: solved by optsched.allocation.gavel.packed (solve() dispatches there)
    **{f"{o}-packed": (o, True) for o in ("max-min", "makespan", "ftf", "max-sum-throughput")},
}

#: HiGHS options of every allocation LP. Presolve off: the LPs are already reduced (classes of
#: interchangeable jobs, impossible columns fixed to 0 by their bounds) and presolve found
#: nothing to remove; measured on the 2,048-job makespan LP (6,145 columns, cold) it took 406 ms
#: with presolve and 322 ms without, 0.64 ms and 0.51 ms on max-min's class LP. Warm-started
#: solves skip presolve anyway.
HIGHS_OPTIONS: dict[str, Any] = {"presolve": "off"}

#: Seconds per hour: prices are per GPU-hour, throughputs per second.
_HOUR = 3600.0

#: Whether the LPs of one ``ftf`` round after the first are the first with its last column's
#: values replaced (:meth:`~optsched.solvers.matrix.LinearProgram.with_values`) instead of
#: being built again: the same models, which the tests compare (``False`` builds each).
REUSE_LEVEL_LPS = True

#: Whether ``ftf`` takes its hot path: every level LP's allocation, not only those of levels
#: proven achievable, bounds the optimum from above (module notes). The rounds are as optimal
#: (the same certified bracket) but can stop at another allocation of a degenerate optimum, so
#: a simulation's records can differ from the plain path's (``False``, the default).
HOT_LEVELS = False

#: Bisection steps of ``ftf`` at most (each halves the bracket: 200 is far past float precision).
FTF_MAX_STEPS = 200


def feasible_mask(instance: AllocationInstance) -> NDArray[np.bool_]:
    """Where :math:`X_{mj}` may be positive: positive throughput and the gang fits the type."""
    return (instance.throughputs > 0) & (
        instance.scale_factors[:, None] <= instance.capacities[None, :]
    )


def effective_throughputs(
    instance: AllocationInstance, aware: bool, reference: int = 0
) -> NDArray[np.float64]:
    """The :math:`T` a policy optimises with (see the module docstring for agnostic variants)."""
    t = instance.throughputs
    if aware:
        return t
    ref = t[:, reference : reference + 1]
    # A job that cannot run on the reference type keeps its best throughput as its one speed.
    ref = np.where(ref > 0, ref, t.max(axis=1, keepdims=True))
    return np.broadcast_to(ref, t.shape) * feasible_mask(instance)


@dataclass(frozen=True)
class _Classes:
    """Jobs grouped into classes of interchangeable jobs.

    Jobs whose every coefficient in a policy's LP is equal are interchangeable: averaging any
    optimal allocation over a class keeps it feasible (the constraints are linear) and keeps the
    objective (a max-min of linear terms, a min-max of convex ones, or a sum), so an optimum
    exists in which a class's jobs share one row of :math:`X`. The LP is solved over classes,
    with a class of :math:`N_c` jobs counting :math:`N_c s_c X_{cj}` GPUs of type :math:`j`.
    With measured throughputs (a few dozen job types) this shrinks a round of thousands of jobs
    to a few dozen rows.
    """

    rep: NDArray[np.int64]
    inverse: NDArray[np.int64]
    counts: NDArray[np.float64]
    sf: NDArray[np.float64]
    mask: NDArray[np.bool_]
    capacities: NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.rep.size)

    def expand(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x[self.inverse]


def _unique_rows(
    table: NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    r"""``(first, inverse, counts)`` of the distinct rows of ``table`` (as ``np.unique(axis=0)``).

    One stable ``lexsort`` over the columns and a comparison of neighbours: :math:`O(n \log n)`
    vectorised, where ``np.unique(axis=0)`` sorts a structured view element by element (ten times
    slower at a few thousand rows, which made grouping the dearest step of a one-LP round).
    ``first`` holds each group's smallest row index; groups are numbered in sorted order.
    """
    n = table.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort(table.T[::-1])
    ordered = table[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=new[1:])
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, n))
    return order[starts].astype(np.int64), inverse, counts.astype(np.int64)


def _classes(instance: AllocationInstance, *keys: NDArray[np.float64]) -> _Classes:
    mask = feasible_mask(instance)
    sf = instance.scale_factors
    table = np.column_stack([sf, mask.astype(np.float64), *[np.asarray(k) for k in keys]])
    rep, inverse, counts = _unique_rows(table)
    return _Classes(
        rep=rep,
        inverse=inverse,
        counts=counts.astype(np.float64),
        sf=sf[rep],
        mask=mask[rep],
        capacities=instance.capacities,
    )


@dataclass(frozen=True)
class _Base:
    """The shared polytope over classes, as arrays ready for a LinearProgram."""

    rows: NDArray[np.int64]
    cols: NDArray[np.int64]
    vals: NDArray[np.float64]
    upper: NDArray[np.float64]
    n_rows: int
    #: Built by :func:`_base` (job rows, then type rows): lets :func:`_program` lay out the CSC
    #: arrays directly instead of sorting triplets.
    standard: bool = False


def _base(cl: _Classes) -> _Base:
    m, k = cl.n, cl.capacities.size
    idx = np.arange(m * k)
    job_rows = idx // k
    type_rows = m + idx % k
    gpus = np.repeat(cl.counts * cl.sf, k)
    rows = np.concatenate([job_rows, type_rows])
    cols = np.concatenate([idx, idx])
    vals = np.concatenate([np.ones(m * k), gpus])
    upper = cl.mask.ravel().astype(np.float64)
    return _Base(rows, cols, vals, upper, m + k, standard=True)


def _standard_csc(
    cl: _Classes,
    coef: NDArray[np.float64] | None,
    aux: NDArray[np.float64] | None,
    n_rows: int,
) -> Any:
    r"""The matrix of :func:`_program` over a standard base, laid out column by column.

    Column :math:`(c, j)` holds, in row order, the job row :math:`c`, the type row
    :math:`M + j` and (with ``coef``) the fairness row :math:`M + K + c`; the last column holds
    :math:`-\text{aux}` in the fairness rows. No triplet sort: :math:`O(MK)` array writes.
    """
    import scipy.sparse as sp

    m, k = cl.n, cl.capacities.size
    idx = np.arange(m * k)
    per = 2 if coef is None or aux is None else 3
    indices = np.empty((m * k, per), dtype=np.int32)
    data = np.empty((m * k, per))
    indices[:, 0] = idx // k
    indices[:, 1] = m + idx % k
    data[:, 0] = 1.0
    data[:, 1] = np.repeat(cl.counts * cl.sf, k)
    last_rows = np.zeros(0, dtype=np.int32)
    last_vals = np.zeros(0)
    if per == 3:
        assert coef is not None and aux is not None
        indices[:, 2] = m + k + idx // k
        data[:, 2] = coef.ravel()
        last_rows = (m + k + np.arange(m)).astype(np.int32)
        last_vals = -np.asarray(aux, dtype=np.float64)
    indptr = np.append(np.arange(0, per * m * k + 1, per), per * m * k + last_rows.size)
    return sp.csc_array(
        (
            np.concatenate([data.ravel(), last_vals]),
            np.concatenate([indices.ravel(), last_rows]),
            indptr.astype(np.int32),
        ),
        shape=(n_rows, m * k + 1),
    )


def _program(
    cl: _Classes,
    base: _Base,
    coef: NDArray[np.float64] | None,
    aux: NDArray[np.float64] | None,
    objective: NDArray[np.float64] | None = None,
    row_lower: NDArray[np.float64] | None = None,
) -> LinearProgram:
    """Base polytope + rows ``coef[c] . x_c - aux[c] v >= row_lower[c]``, maximise ``v``.

    With ``objective``, that is maximised instead and ``v`` is fixed to 0; ``row_lower``
    defaults to 0. ``coef``, ``aux``, ``objective`` and ``row_lower`` are per class (rows of the
    representatives).
    """
    import scipy.sparse as sp

    m, k = cl.n, cl.capacities.size
    n = m * k + 1
    rows, cols, vals = [base.rows], [base.cols], [base.vals]
    lower = [np.full(base.n_rows, -np.inf)]
    upper = [np.concatenate([np.ones(m), cl.capacities])]
    n_rows = base.n_rows
    if coef is not None and aux is not None:
        idx = np.arange(m * k)
        rows += [n_rows + idx // k, n_rows + np.arange(m)]
        cols += [idx, np.full(m, m * k)]
        vals += [coef.ravel(), -aux]
        lower.append(np.zeros(m) if row_lower is None else np.asarray(row_lower, dtype=float))
        upper.append(np.full(m, np.inf))
        n_rows += m
    if base.standard:
        a = _standard_csc(cl, coef, aux, n_rows)
    else:
        a = sp.csc_array(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n_rows, n),
        )
    c = np.zeros(n)
    if objective is None:
        c[-1] = 1.0
    else:
        c[: m * k] = (objective * cl.counts[:, None]).ravel()
    col_upper = np.concatenate([base.upper, [np.inf if objective is None else 0.0]])
    # Built here from finite arrays with lower <= upper on every row and column: trusted.
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


def _fractions(cl: _Classes, sol: MatrixSolution) -> NDArray[np.float64]:
    assert sol.x is not None
    k = cl.capacities.size
    x = sol.x[: cl.n * k].reshape(cl.n, k)
    return cl.expand(np.clip(x, 0.0, 1.0))


def _isolated(instance: AllocationInstance, t: NDArray[np.float64]) -> NDArray[np.float64]:
    """:math:`q_m` of ``t``: the instance's own (computed once) when ``t`` is its throughputs."""
    if t is instance.throughputs:
        return instance.isolated_throughputs
    return isolated_throughput(t, instance.scale_factors, instance.capacities)


def _ftf_terms(
    instance: AllocationInstance, t: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(sigma, t_m, c_m)`` of the jobs with steps left."""
    q = _isolated(instance, t)
    sigma = instance.steps
    since = instance.since_start
    hist = instance.isolated_times
    with np.errstate(divide="ignore"):
        c = hist + np.where(sigma > 0, sigma / np.where(q > 0, q, np.nan), 0.0)
    return sigma, since, c


def _ftf_active_terms(
    instance: AllocationInstance, t: NDArray[np.float64], active: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(t_m, sigma_m, c_m)`` of the jobs with steps left (``active``).

    They depend on the instance and ``t`` alone, and every LP of a round recomputes the
    objective of its allocation: for the instance's own throughputs they are computed once
    and kept with the instance (the same arrays, hence the same objective values).
    """
    own = t is instance.throughputs
    if own:
        kept = instance.__dict__.get(_FTF_TERMS)
        if kept is not None:
            return kept
    sig, since, c = _ftf_terms(instance, t)
    terms = (since[active], sig[active], c[active])
    if own:
        instance.__dict__[_FTF_TERMS] = terms
    return terms


#: Where :func:`_ftf_active_terms` keeps an instance's terms (beside its cached arrays).
_FTF_TERMS = "_ftf_active_terms"


def _ftf_alpha_beta(
    instance: AllocationInstance, t: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""``(alpha, beta)`` with :math:`\rho_m(X) = \beta_m + \alpha_m / \theta_m(X)`.

    :math:`\alpha_m = \sigma_m / c_m = 1 / (h_m/\sigma_m + 1/q_m)` and
    :math:`\beta_m = t_m / c_m = t_m \alpha_m / \sigma_m`, computed in this order so that jobs
    of one type with no history share bit-identical values (and fall into one class) whatever
    their steps left. Jobs with no steps left get ``alpha = 1``, ``beta = 0`` (no fairness row).
    """
    q = _isolated(instance, t)
    sigma = instance.steps
    active = sigma > 0
    safe_sigma = np.where(active, sigma, 1.0)
    with np.errstate(divide="ignore"):
        inv_q = np.where(q > 0, 1.0 / np.where(q > 0, q, 1.0), np.inf)
    alpha = np.where(active, 1.0 / (instance.isolated_times / safe_sigma + inv_q), 1.0)
    beta = np.where(active, instance.since_start * alpha / safe_sigma, 0.0)
    return alpha, beta


def cost_coefficients(instance: AllocationInstance, t: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`u_{mj} = 3600\, T_{mj} / (s_m p_j)`, steps per dollar on each type.

    Job :math:`m`'s gang of :math:`s_m` GPUs on type :math:`j` at :math:`p_j` US$ per GPU-hour
    (:mod:`optsched.allocation.gavel.prices`).
    """
    prices = gpu_prices(instance.gpu_types, instance.prices)
    return _HOUR * t / (instance.scale_factors[:, None] * prices[None, :])


def slo_rates(instance: AllocationInstance) -> NDArray[np.float64]:
    r"""The throughput each job needs to meet its deadline, :math:`\sigma_m / d_m`.

    0 without a deadline or steps left; ``inf`` for steps left and no time.
    """
    sigma, due = instance.steps, instance.deadlines
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(sigma > 0, sigma / due, 0.0)
    return np.where(np.isnan(rate), 0.0, rate)


def objective_value(
    instance: AllocationInstance,
    fractions: NDArray[np.float64],
    objective: Objective,
    aware: bool = True,
) -> float:
    r"""The objective of an allocation, computed from its definition (not from an LP).

    ``max-min``: the minimum normalised share; ``makespan``: :math:`\max_m \sigma_m/\theta_m`
    (``inf`` if a job with steps left gets nothing); ``ftf``: :math:`\max_m \rho_m`;
    ``max-sum-throughput``: :math:`\sum_m \theta_m`. All with the policy's :math:`T`.
    """
    t = effective_throughputs(instance, aware)
    if objective == "max-min" and not aware:
        t = feasible_mask(instance).astype(np.float64)
    if objective in ("min-cost", "min-cost-slo"):
        return float(np.einsum("mj,mj->", cost_coefficients(instance, t), fractions))
    return objective_from_theta(instance, t, np.einsum("mj,mj->m", t, fractions), objective)


def objective_from_theta(
    instance: AllocationInstance,
    t: NDArray[np.float64],
    theta: NDArray[np.float64],
    objective: str,
) -> float:
    """A throughput-based objective from each job's effective throughput ``theta``.

    ``t`` is the throughput table the policy sees (its equal-share and isolated references are
    computed from it). Shared by the unpacked and the packed LPs, whose ``theta`` differ only
    in the pair rows that feed it.
    """
    if objective == "max-sum-throughput":
        return float(theta.sum())
    if objective == "max-min":
        p = proportional_throughput(t, instance.capacities)
        return float(np.min(theta * instance.scale_factors / (instance.weights * p)))
    sigma = instance.steps
    active = sigma > 0
    if not active.any():
        return 0.0
    if np.any(theta[active] <= 0):
        return math.inf
    if objective == "makespan":
        return float(np.max(sigma[active] / theta[active]))
    since_a, sig_a, c_a = _ftf_active_terms(instance, t, active)
    rho = (since_a + sig_a / theta[active]) / c_a
    return float(np.max(rho))


def _result(
    termination: TerminationCondition,
    objective: float | None,
    bound: float | None,
    build: float,
    solve: float,
    solves: int,
    message: str = "",
) -> SolveResult:
    has = objective is not None and math.isfinite(objective)
    return assemble(
        termination,
        SolutionStatus.OPTIMAL
        if has and termination is TerminationCondition.OPTIMAL
        else (SolutionStatus.FEASIBLE if has else SolutionStatus.NO_SOLUTION),
        objective if has else None,
        bound,
        build_seconds=build,
        solve_seconds=solve,
        solver="highs",
        solver_version="",
        native_status=f"{solves} LP solve(s)",
        message=message,
        extra={"lp_solves": solves},
    )


def solve_lp_policy(
    instance: AllocationInstance,
    policy: str,
    *,
    time_limit: float | None = None,
    warm_start: MatrixSolution | None = None,
    threads: int | None = None,
    solver_options: Mapping[str, Any] | None = None,
) -> tuple[NDArray[np.float64], SolveResult, MatrixSolution | None]:
    """Solve one policy's LP(s); return the fractions, the result and the last LP solution.

    Parameters
    ----------
    instance : AllocationInstance
    policy : str
        A key of :data:`POLICIES`.
    time_limit : float, optional
        Seconds for the whole policy (all its LPs, building included).
    warm_start : MatrixSolution, optional
        The last LP solution of the same policy on an instance of the same shape (the previous
        round), handed to HiGHS as its starting basis.
    threads : int, optional
        HiGHS threads for every LP.
    solver_options : mapping, optional
        Native HiGHS options for every LP (over the policy's own).

    Raises
    ------
    InvalidInstanceError
        Unknown policy.
    NotOptimalError
        An LP stopped short (``error.result`` holds the :class:`SolveResult`).
    """
    native = dict(solver_options or {})
    if policy not in POLICIES:
        raise InvalidInstanceError(
            "policy", f"unknown policy {policy!r}; known: {sorted(POLICIES)}"
        )
    if policy.endswith("-packed"):
        raise InvalidInstanceError(
            "policy", f"{policy!r} is solved by optsched.allocation.gavel.solve"
        )
    objective, aware = POLICIES[policy]
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    m, k = instance.n_jobs, instance.n_types
    if m == 0:
        return np.zeros((0, k)), _result(TerminationCondition.OPTIMAL, 0.0, 0.0, 0.0, 0.0, 0), None
    t = effective_throughputs(instance, aware)

    def left() -> float | None:
        return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)

    sigma = instance.steps
    if objective in ("makespan",) and not (sigma > 0).any():
        return np.zeros((m, k)), _result(TerminationCondition.OPTIMAL, 0.0, 0.0, 0.0, 0.0, 0), None
    if objective != "ftf":
        one = _one_lp(instance, objective, aware, t, start)
        build = time.perf_counter() - start
        if objective == "makespan":
            lp, cl, scale = one.lp, one.cl, one.scale
            return _makespan_lexicographic(
                instance, t, sigma, scale, cl, lp, aware, build, left, warm_start, native, threads
            )
        sol = solve_matrix(
            one.lp,
            time_limit=left(),
            warm_start=warm_start,
            options={**HIGHS_OPTIONS, **native},
            threads=threads,
        )
        assert sol.result.objective is not None
        x = _fractions(one.cl, sol)
        value = objective_value(instance, x, objective, aware)
        bound = one.to_bound(sol.result.objective)
        stop = TerminationCondition.OPTIMAL
        return x, _result(stop, value, bound, build, sol.result.solve_seconds, 1), sol
    return _solve_ftf(instance, aware, t, start, deadline, left, warm_start, native, threads)


@dataclass(frozen=True)
class _OneLp:
    """The LP of a one-LP policy: its classes, the program, and its value -> the proven bound.

    ``scale``: the makespan LP's objective scale (the makespan's lower bound), 1 otherwise.
    """

    cl: _Classes
    lp: LinearProgram
    to_bound: Callable[[float], float]
    scale: float = 1.0


def _same(v: float) -> float:
    return v


def _one_lp(
    instance: AllocationInstance,
    objective: str,
    aware: bool,
    t: NDArray[np.float64],
    start: float,
) -> _OneLp:
    """The one LP of ``objective`` (every policy but finish-time fairness)."""
    if objective == "max-sum-throughput":
        cl = _classes(instance, t)
        return _OneLp(cl, _program(cl, _base(cl), None, None, objective=t[cl.rep]), _same)
    if objective in ("min-cost", "min-cost-slo"):
        # Throughput per dollar; with SLOs, theta_m >= sigma_m / d_m for jobs with a
        # deadline (rows with coefficient 0 for the others).
        gain = cost_coefficients(instance, t) * feasible_mask(instance)
        if objective == "min-cost":
            cl = _classes(instance, gain)
            return _OneLp(cl, _program(cl, _base(cl), None, None, objective=gain[cl.rep]), _same)
        rate = slo_rates(instance)
        _refuse_impossible_slos(instance, t, rate, start)
        cl = _classes(instance, gain, t, rate)
        has = (rate > 0)[cl.rep]
        lp = _program(
            cl,
            _base(cl),
            t[cl.rep] * has[:, None],
            np.zeros(cl.n),
            objective=gain[cl.rep],
            row_lower=rate[cl.rep],
        )
        return _OneLp(cl, lp, _same)
    if objective == "max-min":
        tt = feasible_mask(instance).astype(np.float64) if not aware else t
        p = proportional_throughput(tt, instance.capacities)
        coef = tt * (instance.scale_factors / (instance.weights * p))[:, None]
        cl = _classes(instance, coef)
        return _OneLp(cl, _program(cl, _base(cl), coef[cl.rep], np.ones(cl.n)), _same)
    # z = scale / makespan with scale the makespan's lower bound (every job alone on its
    # fastest type), so that the LP's objective is of order 1 and HiGHS's absolute
    # tolerances act as relative ones.
    sigma = instance.steps
    scale = float(np.max(sigma / np.max(t * feasible_mask(instance), axis=1)))
    cl = _classes(instance, t, sigma)

    def to_bound(v: float) -> float:
        return scale / v if v > 0 else math.inf

    return _OneLp(cl, _program(cl, _base(cl), t[cl.rep], sigma[cl.rep] / scale), to_bound, scale)


def _solve_ftf(
    instance: AllocationInstance,
    aware: bool,
    t: NDArray[np.float64],
    start: float,
    deadline: float | None,
    left: Callable[[], float | None],
    warm_start: MatrixSolution | None,
    native: dict[str, Any],
    threads: int | None,
) -> tuple[NDArray[np.float64], SolveResult, MatrixSolution | None]:
    r"""Finish-time fairness: a sequence of LPs over a proven bracket [lower, upper] of r*.

    Each LP is the fairness LP at a level :math:`r` (:meth:`_FtfSearch.level`), and its value
    :math:`\lambda(r)` narrows the bracket (:meth:`_FtfSearch.record`); the search stops when
    the bracket is within the tolerance, after :data:`FTF_MAX_STEPS` LPs, or at the deadline
    (``TIME_LIMIT``, with the best allocation found).
    """
    m, k = instance.n_jobs, instance.n_types
    active = instance.steps > 0
    if not active.any():
        build = time.perf_counter() - start
        return (
            np.zeros((m, k)),
            _result(TerminationCondition.OPTIMAL, 0.0, 0.0, build, 0.0, 0),
            None,
        )
    alpha, beta = _ftf_alpha_beta(instance, t)
    coef = t / alpha[:, None]
    cl = _classes(instance, active.astype(np.float64), coef, beta)
    base = _base(cl)
    coef_c, beta_c, active_c = coef[cl.rep], beta[cl.rep], active[cl.rep]
    build = time.perf_counter() - start
    best_alone = np.max(t * feasible_mask(instance), axis=1)
    x_best = isolated_share(instance.scale_factors, instance.capacities) * feasible_mask(instance)
    upper = objective_value(instance, x_best, "ftf", aware)
    search = _FtfSearch(
        lower=float(np.max(beta[active] + alpha[active] / best_alone[active])),
        upper=upper,
        hi=upper,
        x_best=x_best,
        waited=bool(np.any(beta[active] > 0)),
    )
    step: MatrixSolution | None = warm_start
    if HOT_LEVELS and warm_start is not None:
        step = _carried_basis(warm_start, instance, cl) or warm_start
    first_lp: LinearProgram | None = None
    for _ in range(FTF_MAX_STEPS):
        if search.closed():
            break
        if deadline is not None and time.perf_counter() >= deadline:
            stop = TerminationCondition.TIME_LIMIT
            return search.x_best, search.result(stop, build), search.last_feasible
        r = search.level()
        # r > lower > beta of every active job, so every aux coefficient is finite and > 0.
        aux = np.where(active_c, 1.0 / np.where(active_c, r - beta_c, 1.0), 0.0)
        if first_lp is None or not (REUSE_LEVEL_LPS and base.standard):
            lp = first_lp = _program(cl, base, coef_c, aux)
        else:
            # the level enters only the last column (-aux in the fairness rows), whose values
            # are the last cl.n stored ones of the standard layout (_standard_csc)
            data = first_lp.a.data.copy()
            data[data.size - cl.n :] = -np.asarray(aux, dtype=np.float64)
            lp = first_lp.with_values(data)
        step = solve_matrix(
            lp,
            time_limit=left(),
            warm_start=step,
            options={**HIGHS_OPTIONS, **native},
            threads=threads,
        )
        search.record(r, step, aux, cl, instance, aware)
    res = search.result(TerminationCondition.OPTIMAL, build)
    last_feasible = search.last_feasible
    if HOT_LEVELS and last_feasible is not None:
        # the next round's first LP starts from this basis, carried over job by job
        layout = (instance.job_ids, cl.inverse, cl.n, cl.capacities.size)
        last_feasible = dataclasses.replace(
            last_feasible, extra={**last_feasible.extra, _LAYOUT: layout}
        )
    return search.x_best, res, last_feasible


@dataclass
class _FtfSearch:
    r"""The state of finish-time fairness's search for :math:`r^*` (see :func:`_solve_ftf`).

    Levels: the first LP is a Dinkelbach step at the best level found (r = U). Every LP at a
    level r with lambda(r) >= 1 proves r* >= r / lambda(r) and gives an allocation with
    rho <= r (module notes), so a round where no job has waited (beta = 0) is solved and
    certified by its first LP. The second LP tries the lower end L itself (r* = L when the
    job whose best-alone bound is L is the bottleneck, common once jobs have waited). After
    that the next level is the secant root of lambda(r) = 1 through the last two LPs (lambda
    is linear in r for a single bottleneck job and smooth while the optimal basis stays,
    where plain Dinkelbach steps converge only linearly: 200 of them did not close a round of
    the ElasticFlow trace cluster04 that this closes in a handful), kept inside the bracket
    and never closer to its upper end than the tolerance (lambda < 1 just below U certifies
    U); a step bisects when the two LPs before it did not halve the bracket, so it at least
    halves every three LPs whatever the secant does. Every step keeps lower <= r* <= upper.
    On the hot path (HOT_LEVELS, module notes) L comes first once a job has waited, then
    Newton steps with the slope from the duals, and every LP's allocation is a candidate
    for U.

    Attributes
    ----------
    lower, upper : float
        The proven bracket of :math:`r^*`.
    hi : float
        An achievable level of r (the bracket's upper end the levels aim below).
    x_best : numpy.ndarray
        The allocation of value ``upper``.
    waited : bool
        Some active job has waited (beta > 0).
    """

    lower: float
    upper: float
    hi: float
    x_best: NDArray[np.float64]
    waited: bool
    last_feasible: MatrixSolution | None = None
    points: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    slope: float | None = None  # d lambda / d r at the last level (hot path)
    widths: list[float] = dataclasses.field(default_factory=list)  # hi - lower before each LP
    solves: int = 0
    solve_seconds: float = 0.0

    def closed(self) -> bool:
        """Whether the bracket is within the tolerance (or the LPs' own tolerance)."""
        upper, lower, hi = self.upper, self.lower, self.hi
        if math.isfinite(upper) and upper - lower <= OPTIMALITY_GAP / 10 * max(1.0, upper):
            return True
        # the LPs' own tolerance is reached; the gap reported says what is proven
        return math.isfinite(hi) and hi - lower <= OPTIMALITY_GAP / 100 * max(1.0, hi)

    def level(self) -> float:
        """The next level r to solve the fairness LP at (the class notes)."""
        lower, hi = self.lower, self.hi
        width = hi - lower if math.isfinite(hi) else math.inf
        stalled = len(self.widths) >= 2 and width > 0.5 * self.widths[-2]
        self.widths.append(width)
        if HOT_LEVELS and not self.points and self.waited:
            # the lower end first: once a job has waited, its best-alone level is usually the
            # optimum, which one LP then proves (lambda(L) >= 1, or its allocation at L)
            return lower
        if HOT_LEVELS and self.points:
            newton = _newton_level(self.points[-1], self.slope, lower, hi, bisect=stalled)
            if newton is not None:
                return newton
        return _next_level(self.points, lower, hi, bisect=stalled)

    def record(
        self,
        r: float,
        step: MatrixSolution,
        aux: NDArray[np.float64],
        cl: _Classes,
        instance: AllocationInstance,
        aware: bool,
    ) -> None:
        """Narrow the bracket by the LP ``step`` solved at level ``r``."""
        self.solves += 1
        self.solve_seconds += step.result.solve_seconds
        assert step.result.objective is not None
        lam = step.result.objective
        self.points.append((r, lam))
        if HOT_LEVELS:
            self.slope = _level_slope(step, aux, cl, lam)
        if lam >= 1.0:
            # r is achievable; the allocation found may do better than r, and no level below
            # r / lambda(r) is achievable.
            self.lower = max(self.lower, min(r / lam, self.upper))
            x = _fractions(cl, step)
            value = objective_value(instance, x, "ftf", aware)
            if value < self.upper:
                self.upper, self.x_best, self.last_feasible = value, x, step
            self.lower = min(self.lower, self.upper)
            self.hi = min(r, self.upper)
        else:
            self.lower = r
            if HOT_LEVELS:
                # Every LP's allocation lies in the polytope, so its exact objective is an
                # achievable level too. At a level r with lambda(r) a rounding error below 1
                # (r = L optimal, the LP's own arithmetic a last bit short of proving it) this
                # closes the bracket where only lower-bound updates would creep towards it
                # one secant step at a time.
                x = _fractions(cl, step)
                value = objective_value(instance, x, "ftf", aware)
                if value < self.upper:
                    self.upper, self.x_best, self.last_feasible = value, x, step
                    self.hi = min(self.hi, self.upper)

    def result(self, stop: TerminationCondition, build: float) -> SolveResult:
        """The search's result: value ``upper``, bound ``lower``."""
        return _result(stop, self.upper, self.lower, build, self.solve_seconds, self.solves)


_LAYOUT = "ftf_layout"


def _carried_basis(
    warm: MatrixSolution, instance: AllocationInstance, cl: _Classes
) -> MatrixSolution | None:
    r"""The previous round's optimal basis laid out over this round's classes.

    The rounds of a simulation share most of their jobs, but their classes (and hence the
    LP's columns and rows) shift whenever a job arrives or leaves, so the previous basis does
    not fit. Each class of this round that holds a job of the previous one takes the statuses
    of that job's class: its :math:`K` columns (basic, or nonbasic at the bound the previous
    point sits on), its ``job_time`` row and its fairness row; the type rows and :math:`v`
    keep theirs; a class with no earlier job starts with its columns at 0 and its two rows
    basic (slack). The result may have too many or too few basic variables (classes split or
    merged): HiGHS takes it as an alien basis and completes it. ``None`` when ``warm`` is not
    an ``ftf`` solution with its layout and basic variables, or has other GPU types.

    Complexity: :math:`O(MK)` array operations plus one dictionary look-up per class.
    """
    layout = warm.extra.get(_LAYOUT)
    basic = warm.extra.get("basic")
    if layout is None or basic is None or warm.x is None:
        return None
    ids, inverse, m_prev, k_prev = layout
    k = cl.capacities.size
    if k_prev != k or warm.x.size != m_prev * k + 1:
        return None
    where = dict(zip(ids, inverse.tolist(), strict=True))
    job_ids = instance.job_ids
    old = np.fromiter(
        (where.get(job_ids[i], -1) for i in cl.rep.tolist()), dtype=np.int64, count=cl.n
    )
    col_basic_prev = np.zeros(m_prev * k + 1, dtype=bool)
    row_basic_prev = np.zeros(2 * m_prev + k, dtype=bool)
    col_basic_prev[basic[basic >= 0]] = True
    row_basic_prev[-1 - basic[basic < 0]] = True
    known = old >= 0
    src = np.where(known, old, 0)
    cols = (src[:, None] * k + np.arange(k)).ravel()
    carried = np.repeat(known, k)
    col_basic = carried & col_basic_prev[cols]
    at_upper = carried & ~col_basic & cl.mask.ravel() & (warm.x[cols] >= 0.5)
    col_status = np.where(col_basic, BASIS_BASIC, np.where(at_upper, BASIS_UPPER, BASIS_LOWER))
    v_status = BASIS_BASIC if col_basic_prev[-1] else BASIS_LOWER
    # nonbasic rows sit on their one finite bound: the job and type rows' upper, the
    # fairness rows' lower
    job_basic = ~known | row_basic_prev[src]
    fair_basic = ~known | row_basic_prev[m_prev + k + src]
    type_basic = row_basic_prev[m_prev : m_prev + k]
    row_status = np.concatenate(
        [
            np.where(job_basic, BASIS_BASIC, BASIS_UPPER),
            np.where(type_basic, BASIS_BASIC, BASIS_UPPER),
            np.where(fair_basic, BASIS_BASIC, BASIS_LOWER),
        ]
    )
    return warm_basis(np.append(col_status, v_status), row_status)


def _makespan_lexicographic(
    instance: AllocationInstance,
    t: NDArray[np.float64],
    sigma: NDArray[np.float64],
    scale: float,
    cl: _Classes,
    lp: LinearProgram,
    aware: bool,
    build: float,
    left: Any,
    warm_start: MatrixSolution | None,
    native: dict[str, Any],
    threads: int | None,
) -> tuple[NDArray[np.float64], SolveResult, MatrixSolution | None]:
    """The makespan LP, then the secondary objective among its optima (module notes).

    Returns the second stage's fractions, the first stage's proven bound and the first stage's
    LP solution (the next round's warm start is for the first stage, whose shape it has).
    """
    options = {**HIGHS_OPTIONS, **native}
    first = solve_matrix(
        lp, time_limit=left(), warm_start=warm_start, options=options, threads=threads
    )
    assert first.result.objective is not None
    z = first.result.objective  # scale / makespan
    bound = scale / z if z > 0 else math.inf
    seconds = first.result.solve_seconds
    x = _fractions(cl, first)
    if z > 0:
        active = sigma[cl.rep] > 0
        # theta_m / sigma_m per class, times the makespan's scale so coefficients are O(1)
        gain = np.where(
            active[:, None], t[cl.rep] * scale / np.where(active, sigma[cl.rep], 1.0)[:, None], 0.0
        )
        floor = sigma[cl.rep] / scale * z * (1.0 - MAKESPAN_SECONDARY_TOL)
        second = solve_matrix(
            _program(cl, _base(cl), t[cl.rep], np.zeros(cl.n), objective=gain, row_lower=floor),
            time_limit=left(),
            options=options,
            threads=threads,
        )
        seconds += second.result.solve_seconds
        x = _fractions(cl, second)
    value = objective_value(instance, x, "makespan", aware)
    res = _result(TerminationCondition.OPTIMAL, value, bound, build, seconds, 2 if z > 0 else 1)
    return x, res, first


def _next_level(
    points: list[tuple[float, float]], lower: float, hi: float, *, bisect: bool
) -> float:
    """The next FTF level inside ``(lower, hi]`` (see the loop in :func:`solve_lp_policy`)."""
    if not math.isfinite(hi):
        return 2.0 * lower + 1.0  # no achievable level yet: look further out
    if not points:
        return hi  # Dinkelbach step at the best level found
    middle = 0.5 * (lower + hi)
    if bisect:
        return middle
    top = hi * (1.0 - OPTIMALITY_GAP / 20)  # lambda < 1 here certifies hi within the tolerance
    if top <= lower:
        return middle
    if len(points) < 2:
        return lower  # lambda(lower) >= 1 proves lower optimal; else it brackets r*
    (r0, l0), (r1, l1) = points[-2], points[-1]
    guess = r1 + (1.0 - l1) * (r1 - r0) / (l1 - l0) if l1 != l0 else math.nan
    if not (math.isfinite(guess) and lower < guess < hi):
        return middle
    return min(guess, top)


def _level_slope(
    step: MatrixSolution, aux: NDArray[np.float64], cl: _Classes, lam: float
) -> float | None:
    r""":math:`d\lambda^*/dr` at the level just solved, from the LP's duals (``None``: none).

    The level enters the LP only as the coefficients :math:`-a_c = -1/(r - \beta_c)` of
    :math:`\lambda` in the fairness rows. With :math:`y_c \ge 0` the rows' duals (normalised by
    :math:`\lambda`'s reduced cost, :math:`\sum_c y_c a_c = 1`), the optimum moves by
    :math:`\partial\lambda^*/\partial a_c = -y_c \lambda^*` and :math:`da_c/dr = -a_c^2`, so

    .. math::

        \frac{d\lambda^*}{dr} = \lambda^*\,\frac{\sum_c y_c a_c^2}{\sum_c y_c a_c},

    exact while the optimal basis stays (a one-sided derivative where it changes). Checked
    against finite differences in the tests.
    """
    if step.row_dual is None:
        return None
    m, k = cl.n, cl.capacities.size
    y = np.abs(step.row_dual[m + k : 2 * m + k])
    weight = float(np.dot(y, aux))
    if not weight > 0:
        return None
    slope = lam * float(np.dot(y, aux * aux)) / weight
    return slope if math.isfinite(slope) and slope > 0 else None


def _newton_level(
    point: tuple[float, float], slope: float | None, lower: float, hi: float, *, bisect: bool
) -> float | None:
    r"""The hot path's next level: Newton's root of :math:`\lambda^*(r) = 1` from the last LP.

    ``None`` (take :func:`_next_level`'s) without a slope, when the safeguard asks to bisect,
    or when the root falls outside the bracket ``(lower, hi)``; kept below ``hi`` by the
    tolerance as the secant is.
    """
    if bisect or slope is None or not math.isfinite(hi):
        return None
    r, lam = point
    guess = r + (1.0 - lam) / slope
    if not (math.isfinite(guess) and lower < guess < hi):
        return None
    top = hi * (1.0 - OPTIMALITY_GAP / 20)
    return min(guess, top) if top > lower else None


def _refuse_impossible_slos(
    instance: AllocationInstance, t: NDArray[np.float64], rate: NDArray[np.float64], start: float
) -> None:
    """Raise ``NotOptimalError`` (infeasible) naming the jobs no allocation can get in time.

    A job needing more than its best throughput (all of the round on its fastest type) cannot
    meet its deadline whatever the others do; the LP would only say "infeasible" without
    naming it.
    """
    best = np.max(t * feasible_mask(instance), axis=1)
    late = np.flatnonzero(rate > best * (1.0 + OPTIMALITY_GAP))
    if late.size == 0:
        return
    names = ", ".join(repr(instance.jobs[i].job_id) for i in late[:5])
    more = f" and {late.size - 5} more" if late.size > 5 else ""
    build = time.perf_counter() - start
    raise NotOptimalError(
        _result(
            TerminationCondition.INFEASIBLE,
            None,
            None,
            build,
            0.0,
            0,
            message=f"no allocation meets the deadline of job(s) {names}{more}: each needs more "
            "steps per second than its fastest GPU type gives",
        )
    )


def _raise_if_stopped(result: SolveResult) -> None:
    if result.status is not Status.OPTIMAL:
        raise NotOptimalError(result)
