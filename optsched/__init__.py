"""optsched: exact and online optimization formulations for scheduling deep-learning training.

Subpackages
-----------
solvers
    One ``solve`` for Pyomo models and cvxpy problems, with mapped statuses.
jobs
    Cluster job scheduling (OASiS family): instances, exact offline ILP, online primal-dual.
comm
    Communication scheduling in a training iteration (PACE family).
placement
    Placement ILPs and heuristics.
optimus
    Optimus: fitted convergence and speed models, marginal-gain allocation, exact MILP.
aonline
    Online gang scheduling on heterogeneous GPU pools (Aonline): exact ILP, doubling intervals.
andreas
    ANDREAS: energy cost plus weighted tardiness per scheduling point (MILP, randomised greedy).
chronus
    Lease-based deadline scheduling (Chronus): SLO admission and lease grants as a MILP.
"""

from optsched._version import __version__
from optsched.errors import (
    InvalidInstanceError,
    InvalidScheduleError,
    ModelError,
    NotOptimalError,
    OptschedError,
    SolverUnavailableError,
)

__all__ = [
    "InvalidInstanceError",
    "InvalidScheduleError",
    "ModelError",
    "NotOptimalError",
    "OptschedError",
    "SolverUnavailableError",
    "__version__",
]
