"""ANDREAS: energy cost plus weighted tardiness at one scheduling point (Filippini et al., 2021).

The family follows the protocol of every optsched family: :class:`AndreasInstance` (with
``load``/``save``/``schema``), :func:`generate_instance`, the exact :func:`solve` (a MILP over
discretised (job, node type, GPU count) choices, straight into HiGHS) returning an
:class:`~optsched.results.ExactResult` of an :class:`AndreasPlan`, the paper's randomised greedy
with restarts (:class:`RandomizedGreedy`, whose run's ``plan`` is the same type), and
:func:`validate` returning a :class:`~optsched.results.Report` with the cost recomputed.
The simulator runs it as the policy ``andreas`` (:mod:`optsched.sim.policies.andreas`).
"""

from __future__ import annotations

from typing import Any

from optsched.allocation.andreas.costs import DecisionCosts, decision_costs
from optsched.allocation.andreas.family import ALGORITHMS, FAMILY
from optsched.allocation.andreas.generate import generate_instance
from optsched.allocation.andreas.greedy import MAX_RESTARTS, GreedyRun, RandomizedGreedy
from optsched.allocation.andreas.instance import (
    AndreasInstance,
    AndreasJob,
    Configuration,
    NodeType,
    nodes_needed,
)
from optsched.allocation.andreas.milp import solve
from optsched.allocation.andreas.plan import AndreasPlan, Assignment
from optsched.allocation.andreas.validate import decision_cost, validate

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "MAX_RESTARTS",
    "AndreasInstance",
    "AndreasJob",
    "AndreasPlan",
    "Assignment",
    "Configuration",
    "DecisionCosts",
    "GreedyRun",
    "NodeType",
    "RandomizedGreedy",
    "decision_cost",
    "decision_costs",
    "generate_instance",
    "instance_schema",
    "load_instance",
    "nodes_needed",
    "solve",
    "validate",
]


def load_instance(path: str) -> AndreasInstance:
    """Read an ANDREAS instance (JSON or TOML) through the guarded loader."""
    return AndreasInstance.load(path)


def instance_schema() -> dict[str, Any]:
    """JSON Schema of the andreas-instance format."""
    return AndreasInstance.schema()
