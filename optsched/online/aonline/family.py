"""The Aonline family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from typing import Any

from optsched.family.registry import Family
from optsched.online.aonline.algorithms import ALGORITHMS
from optsched.online.aonline.generate import generate_instance
from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.offline import solve
from optsched.online.aonline.schedule import AonlineSchedule, validate

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> AonlineInstance:
    """Four jobs on the generator's default pools."""
    return generate_instance(4, seed=1)


def _describe(instance: AonlineInstance) -> dict[str, Any]:
    return {"jobs": instance.n_jobs, "pools": len(instance.pools)}


FAMILY = Family(
    name="aonline",
    package="optsched.online.aonline",
    kind="aonline-instance",
    Instance=AonlineInstance,
    Solution=AonlineSchedule,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=("weighted-completion",),
    small_instance=small_instance,
    summary="online gang scheduling on heterogeneous GPU pools, min total weighted completion",
    describe=_describe,
)
