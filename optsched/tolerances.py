"""Every named float tolerance optsched compares with, in one place.

A comparison of floats anywhere in the library or its tests uses one of these names, never a
literal, so that a reader can see (and a reviewer can question) each slack once. Relative
tolerances are applied as ``tol * max(1, |reference|)`` by :func:`within` and :func:`leq`.
"""

from __future__ import annotations

import math

__all__ = [
    "BOUND_SAFETY",
    "CAPACITY_TOL",
    "FIT_RECOVERY_TOL",
    "FIT_TOL",
    "INTEGRALITY_TOL",
    "MAKESPAN_SECONDARY_TOL",
    "OBJECTIVE_AGREEMENT_TOL",
    "OPTIMALITY_GAP",
    "RATIO_TOL",
    "ROUND_LP_GAP",
    "SOLVER_AGREEMENT_TOL",
    "TIME_TOL",
    "UTILITY_TOL",
    "WORK_TOL",
    "leq",
    "within",
]

#: Relative gap within which optsched calls a solve *optimal*, whatever gap the user passed: a
#: solve that stopped at a looser user gap is reported as ``feasible`` with its gap. Exact solves
#: ask their solver for a gap of at most this (HiGHS's own default, 1e-4, is looser).
OPTIMALITY_GAP = 1e-6
#: Relative slack between a solver's objective and the independent validator's recomputation of
#: the returned solution; a larger difference is an error, never a success.
OBJECTIVE_AGREEMENT_TOL = 1e-6
#: Relative slack between the optima two solvers (HiGHS and SCIP) prove for the same model: each
#: is within :data:`OPTIMALITY_GAP` of the true optimum, so the two are within twice that of
#: each other.
SOLVER_AGREEMENT_TOL = 2 * OPTIMALITY_GAP
#: Slack on work sums (chunks, worker-slots), so that ``ceil(3 * 0.1) == 1``.
WORK_TOL = 1e-9
#: Slack on resource capacities when validating (above the solvers' feasibility tolerance 1e-7).
CAPACITY_TOL = 1e-7
#: Slack on recomputed utilities and objective values.
UTILITY_TOL = 1e-7
#: Slack when fitting a demand into residual capacity (tighter than :data:`CAPACITY_TOL`, so
#: whatever an engine fits also validates). Relative to the time, also the slack within which two
#: simulated instants are one: a completion due that close to a decision point happens at it
#: (the simulator), and the state at a decision point is read through no wider a window (the
#: validator's ``work_conserving``).
FIT_TOL = 1e-9
#: Relative distance within which a model fitted to noise-free points generated from planted
#: parameters must recover them (Optimus's speed and convergence fits): the least-squares solver
#: stops at 1e-14 relative change, and the worst conditioning of the tested designs loses about
#: seven more digits.
FIT_RECOVERY_TOL = 1e-6
#: Slack on claims ``ALG <= OPT``, ``OPT <= D`` and ``OPT/ALG <= bound``.
RATIO_TOL = 1e-6
#: Distance from an integer below which an LP value counts as integral.
INTEGRALITY_TOL = 1e-6
#: Slack on simulated times in seconds (event times, completions, intervals).
TIME_TOL = 1e-6
#: Relative slack on the optimal makespan kept by the makespan LP's second stage (the secondary
#: objective among makespan-optimal allocations, :mod:`optsched.allocation.gavel.lp`): a tenth
#: of :data:`OPTIMALITY_GAP`, so the allocation it returns is still proven optimal.
MAKESPAN_SECONDARY_TOL = OPTIMALITY_GAP / 10
#: Relative gap within which the simulator carries out a round's allocation LP that stopped
#: short of proven optimality (a bisection ending a hair from the optimum: ``ftf-packed`` ends
#: some rounds 0.1-0.5% away). The allocation is re-solved every round anyway; the run records
#: every such round with its gap (``SimResult.extra["round_lp_gaps"]``) and this tolerance. A
#: round further from optimal stops the run.
ROUND_LP_GAP = 1e-2

#: Relative amount a bound computed from an LP's dual point is moved towards safety (down for a
#: lower bound, up for an upper bound): the rounding of the weak-duality sum over up to millions
#: of terms, with room to spare.
BOUND_SAFETY = 1e-9


def within(a: float, b: float, tol: float) -> bool:
    """Whether ``|a - b| <= tol * max(1, |b|)`` (false for NaN)."""
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(b))


def leq(a: float, b: float, tol: float) -> bool:
    """Whether ``a <= b + tol * max(1, |b|)`` (false for NaN)."""
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(b):
        return b > 0 or a == b
    return a <= b + tol * max(1.0, abs(b))
