r"""Declarative cvxpy twins of the allocation LPs, for the docs and for cross-checking.

Each twin states its policy the way the formulation page does (min/max over the allocation
polytope, with ``cp.min``/``cp.max``/``cp.inv_pos``), so that a reader can compare the matrix
builders of :mod:`optsched.allocation.gavel.lp` with the mathematics, and the tests can compare the
two
answers. They are not used for speed: cvxpy recompiles the problem on every call, which is what
dominates a round in Gavel at scale.

The packed twin (:func:`build_packed_twin`) is stated over *jobs*, with one pair variable per
co-locatable pair of jobs and GPU type as in Gavel's packed policies, where the matrix builder
of :mod:`optsched.allocation.gavel.packed` works over classes of interchangeable jobs: their optima
agree only if the class reduction is exact, which is what the tests check.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import POLICIES, effective_throughputs, feasible_mask
from optsched.allocation.gavel.prices import gpu_prices
from optsched.allocation.gavel.shares import isolated_throughput, proportional_throughput
from optsched.errors import InvalidInstanceError

__all__ = ["build_packed_twin", "build_twin", "solve_twin"]


def build_twin(instance: AllocationInstance, policy: str) -> tuple[Any, Any]:
    """The cvxpy problem of ``policy`` and its variable ``X``."""
    import cvxpy as cp

    if policy not in POLICIES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}")
    if policy.endswith("-packed"):
        problem, x, _ = build_packed_twin(instance, policy)
        return problem, x
    objective, aware = POLICIES[policy]
    m, k = instance.n_jobs, instance.n_types
    mask = feasible_mask(instance)
    x = cp.Variable((m, k), nonneg=True)
    sf = instance.scale_factors
    constraints = [
        cp.sum(x, axis=1) <= 1,  # job_time
        sf @ x <= instance.capacities,  # type_capacity
        cp.multiply(x, 1 - mask) == 0,  # gang_fits
    ]
    t = effective_throughputs(instance, aware)
    if objective == "max-min":
        tt = mask.astype(np.float64) if not aware else t
        p = proportional_throughput(tt, instance.capacities)
        share = cp.sum(cp.multiply(tt * (sf / (instance.weights * p))[:, None], x), axis=1)
        problem = cp.Problem(cp.Maximize(cp.min(share)), constraints)
    elif objective == "max-sum-throughput":
        problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(t, x))), constraints)
    elif objective in ("min-cost", "min-cost-slo"):
        prices = gpu_prices(instance.gpu_types, instance.prices)
        per_dollar = 3600.0 * t / np.outer(sf, prices)  # steps per dollar on each type
        if objective == "min-cost-slo":
            due = np.flatnonzero(np.isfinite(instance.deadlines) & (instance.steps > 0))
            theta = cp.sum(cp.multiply(t, x), axis=1)
            constraints += [  # slo
                theta[i] >= instance.steps[i] / instance.deadlines[i] for i in due
            ]
        problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(per_dollar, x))), constraints)
    else:
        sigma = instance.steps
        active = np.flatnonzero(sigma > 0)
        theta = cp.sum(cp.multiply(t, x), axis=1)
        if objective == "makespan":
            terms = [sigma[i] * cp.inv_pos(theta[i]) for i in active]
        else:
            q = isolated_throughput(t, sf, instance.capacities)
            since = np.array([j.time_since_start_s for j in instance.jobs])
            hist = np.array([j.isolated_time_s for j in instance.jobs])
            c = hist + sigma / q
            terms = [(since[i] + sigma[i] * cp.inv_pos(theta[i])) / c[i] for i in active]
        problem = cp.Problem(cp.Minimize(cp.max(cp.hstack(terms))), constraints)
    return problem, x


def build_packed_twin(
    instance: AllocationInstance, policy: str
) -> tuple[Any, Any, list[tuple[int, int]]]:
    """The job-level cvxpy problem of a packed policy, its ``X``, ``Y`` and the pair list."""
    import cvxpy as cp
    import scipy.sparse as sp

    from optsched.allocation.gavel.packed import co_locatable

    objective = POLICIES[policy][0]
    m, k = instance.n_jobs, instance.n_types
    mask = feasible_mask(instance)
    pairs = [
        (a, b) for a in range(m) for b in range(a + 1, m) if co_locatable(instance, a, b).any()
    ]
    ok = np.array([co_locatable(instance, a, b) for a, b in pairs]).reshape(len(pairs), k)
    x = cp.Variable((m, k), nonneg=True)
    y = cp.Variable((max(len(pairs), 1), k), nonneg=True)
    t = instance.throughputs
    sf = instance.scale_factors
    # incidence of jobs in pairs, and each job's rate in each pair row
    inc = sp.lil_array((m, max(len(pairs), 1)))
    rate = [np.zeros((max(len(pairs), 1), k)) for _ in range(m)]
    pair_sf = np.zeros(max(len(pairs), 1))
    for r, (a, b) in enumerate(pairs):
        ja, jb = instance.jobs[a], instance.jobs[b]
        assert ja.job_type is not None and jb.job_type is not None
        f = instance.pair_table[(ja.job_type, jb.job_type)]
        inc[a, r] = inc[b, r] = 1.0
        rate[a][r] = f[:, 0] * t[a] * ok[r]
        rate[b][r] = f[:, 1] * t[b] * ok[r]
        pair_sf[r] = sf[a]
    y_mask = np.zeros((max(len(pairs), 1), k))
    if pairs:
        y_mask[: len(pairs)] = ok
    constraints = [
        cp.sum(x, axis=1) + inc.tocsr() @ cp.sum(y, axis=1) <= 1,  # job_time
        sf @ x + pair_sf @ y <= instance.capacities,  # type_capacity (a pair counted once)
        cp.multiply(x, 1 - mask) == 0,  # gang_fits
        cp.multiply(y, 1 - y_mask) == 0,  # pair_fits
    ]
    theta = cp.hstack(
        [cp.sum(cp.multiply(t[i], x[i])) + cp.sum(cp.multiply(rate[i], y)) for i in range(m)]
    )
    if objective == "max-min":
        p = proportional_throughput(t, instance.capacities)
        share = cp.multiply(sf / (instance.weights * p), theta)
        problem = cp.Problem(cp.Maximize(cp.min(share)), constraints)
    elif objective == "max-sum-throughput":
        problem = cp.Problem(cp.Maximize(cp.sum(theta)), constraints)
    else:
        sigma = instance.steps
        active = np.flatnonzero(sigma > 0)
        if objective == "makespan":
            terms = [sigma[i] * cp.inv_pos(theta[i]) for i in active]
        else:
            q = isolated_throughput(t, sf, instance.capacities)
            since = np.array([j.time_since_start_s for j in instance.jobs])
            hist = np.array([j.isolated_time_s for j in instance.jobs])
            c = hist + sigma / q
            terms = [(since[i] + sigma[i] * cp.inv_pos(theta[i])) / c[i] for i in active]
        problem = cp.Problem(cp.Minimize(cp.max(cp.hstack(terms))), constraints)
    return problem, (x, y), pairs


def solve_twin(
    instance: AllocationInstance, policy: str, solver: str = "CLARABEL"
) -> tuple[float, NDArray[np.float64]]:
    """Solve the twin; return its optimal value and ``X``.

    Raises
    ------
    NotOptimalError
        The conic solver did not report ``optimal``.
    """
    from optsched.solvers import solve

    problem, x = build_twin(instance, policy)
    result = solve(problem, solver.lower())
    assert result.objective is not None
    if isinstance(x, tuple):  # packed: the singleton fractions
        x = x[0]
    return float(result.objective), np.clip(np.asarray(x.value), 0.0, 1.0)
