r"""Declarative cvxpy twins of the allocation LPs, for the docs and for cross-checking.

Each twin states its policy the way the formulation page does (min/max over the allocation
polytope, with ``cp.min``/``cp.max``/``cp.inv_pos``), so that a reader can compare the matrix
builders of :mod:`optsched.allocation.lp` with the mathematics, and the tests can compare the two
answers. They are not used for speed: cvxpy recompiles the problem on every call, which is what
dominates a round in Gavel at scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.instance import AllocationInstance
from optsched.allocation.lp import POLICIES, effective_throughputs, feasible_mask
from optsched.allocation.prices import gpu_prices
from optsched.allocation.shares import isolated_throughput, proportional_throughput
from optsched.errors import InvalidInstanceError

__all__ = ["build_twin", "solve_twin"]


def build_twin(instance: AllocationInstance, policy: str) -> tuple[Any, Any]:
    """The cvxpy problem of ``policy`` and its variable ``X``."""
    import cvxpy as cp

    if policy not in POLICIES:
        raise InvalidInstanceError("policy", f"unknown policy {policy!r}")
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
            since = np.array([j.time_since_start for j in instance.jobs])
            hist = np.array([j.isolated_time for j in instance.jobs])
            c = hist + sigma / q
            terms = [(since[i] + sigma[i] * cp.inv_pos(theta[i])) / c[i] for i in active]
        problem = cp.Problem(cp.Minimize(cp.max(cp.hstack(terms))), constraints)
    return problem, x


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
    return float(result.objective), np.clip(np.asarray(x.value), 0.0, 1.0)
