"""The ANDREAS family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from optsched.allocation.andreas.algorithms import ALGORITHMS
from optsched.allocation.andreas.generate import generate_instance
from optsched.allocation.andreas.instance import AndreasInstance
from optsched.allocation.andreas.milp import solve
from optsched.allocation.andreas.plan import AndreasPlan
from optsched.allocation.andreas.validate import validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> AndreasInstance:
    """Five jobs."""
    return generate_instance(5, seed=1)


FAMILY = Family(
    name="andreas",
    package="optsched.allocation.andreas",
    kind="andreas-instance",
    Instance=AndreasInstance,
    Solution=AndreasPlan,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=("energy-plus-tardiness",),
    small_instance=small_instance,
    summary="node type and GPU count per job at one scheduling point: energy plus tardiness",
)
