"""The Optimus family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from optsched.allocation.optimus.algorithms import ALGORITHMS
from optsched.allocation.optimus.generate import generate_instance
from optsched.allocation.optimus.instance import OptimusInstance
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.allocation.optimus.total_time import solve
from optsched.allocation.optimus.validate import validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> OptimusInstance:
    """Four jobs."""
    return generate_instance(4, seed=1)


FAMILY = Family(
    name="optimus",
    package="optsched.allocation.optimus",
    kind="optimus-instance",
    Instance=OptimusInstance,
    Solution=OptimusAllocation,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=("total-remaining-time",),
    small_instance=small_instance,
    summary="parameter servers and workers per job from fitted convergence and speed models",
)
