r"""Gavel's way of solving its makespan policies (``min_total_duration``), for Gavel's mechanism.

Gavel's ``min_total_duration`` policies do not solve the makespan LP: they search the makespan
``T`` by bisection and return the allocation of the last *feasibility* problem found feasible
(``scheduler/policies/min_total_duration.py``). Described from reading that code:

* the feasibility problem at ``T``: :math:`X \ge 0`, :math:`\sum_m n_m X_{mj} \le C_j`,
  :math:`\sum_j X_{mj} \le 1` and :math:`\sum_j r_{mj} X_{mj} \ge S_m / T` for every job ``m``
  (``S_m`` its steps left, ``r_mj`` its rate on type ``j``; the agnostic form takes the
  reference type's rate on every type), with a constant objective, so that the point returned
  is whatever the interior-point solver stops at;
* the search starts on :math:`[100, 10^6]` s and halves the interval while
  :math:`1.05 \, T_{min} < T_{max}`, keeping the last feasible allocation; if none was feasible
  it moves to :math:`[10^6, 10^7]`, then :math:`[10^7, 10^8]`, and so on.

The makespan so found is within 5% of the optimum (an interval of ratio 1.05), and the time split
is the solver's point, not an optimum; :class:`~optsched.sim.policies.AllocationLP` with Gavel's
mechanism uses this for ``makespan`` and ``makespan-perf``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.gavel.instance import AllocationInstance

__all__ = ["gavel_makespan_allocation"]

#: The first interval of Gavel's search (seconds) and its stopping ratio.
T_MIN, T_MAX, RATIO = 100.0, 1_000_000.0, 1.05
#: Intervals tried before giving up (up to 1e6 * 10**12 s).
MAX_WIDENINGS = 12


def _feasible(
    rates: NDArray[np.float64],
    instance: AllocationInstance,
    left: NDArray[np.float64],
    horizon: float,
    solver: str,
) -> NDArray[np.float64] | None:
    import cvxpy as cp

    m, k = rates.shape
    x = cp.Variable((m, k))
    sf = np.asarray(instance.scale_factors, dtype=np.float64)
    constraints = [
        x >= 0,
        sf @ x <= np.asarray(instance.capacities, dtype=np.float64),
        cp.sum(x, axis=1) <= 1,
        cp.sum(cp.multiply(rates, x), axis=1) >= left / horizon,
    ]
    problem = cp.Problem(cp.Maximize(1), constraints)
    try:
        problem.solve(solver=solver.upper())
    except cp.error.SolverError:
        return None
    if problem.status != "optimal" or x.value is None:
        return None
    return np.asarray(x.value, dtype=np.float64)


def gavel_makespan_allocation(
    instance: AllocationInstance, aware: bool, solver: str = "CLARABEL"
) -> NDArray[np.float64] | None:
    """The allocation Gavel's makespan search returns (module notes); ``None`` if none.

    Parameters
    ----------
    instance : AllocationInstance
    aware : bool
        Heterogeneity-aware (``makespan-perf``) or agnostic (``makespan``: every type at the
        first type's rate, the reference type of a canonical cluster).
    solver : str
        The conic solver (Clarabel by default; Gavel's default is ECOS).
    """
    rates = np.array([j.throughput_steps_per_s for j in instance.jobs], dtype=np.float64)
    if not aware:
        rates = np.repeat(rates[:, :1], rates.shape[1], axis=1)
    left = np.array([j.steps_remaining for j in instance.jobs], dtype=np.float64)
    lo, hi, top = T_MIN, T_MAX, T_MAX
    best: Any = None
    for _ in range(MAX_WIDENINGS):
        while RATIO * lo < hi:
            mid = (lo + hi) / 2.0
            x = _feasible(rates, instance, left, mid, solver)
            if x is not None:
                best, hi = x, mid
            else:
                lo = mid
        if best is not None:
            return np.clip(best, 0.0, 1.0)
        lo, hi, top = top, top * 10.0, top * 10.0
    return None
