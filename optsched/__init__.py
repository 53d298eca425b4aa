"""optsched: exact and online optimization formulations for scheduling deep-learning training.

Every problem family is declared in one registry, :data:`optsched.FAMILIES` (name ->
:class:`optsched.family.Family`; ``optsched families`` lists them).

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

from typing import Any

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
    "FAMILIES",
    "InvalidInstanceError",
    "InvalidScheduleError",
    "ModelError",
    "NotOptimalError",
    "OptschedError",
    "SolverUnavailableError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # The registry of families (optsched.family.FAMILIES), imported on first use so that
    # ``import optsched`` stays light.
    if name == "FAMILIES":
        from optsched.family import FAMILIES

        return FAMILIES
    raise AttributeError(f"module 'optsched' has no attribute {name!r}")
