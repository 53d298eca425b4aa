"""The ANDREAS family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.andreas.generate import generate_instance
from optsched.allocation.andreas.greedy import RandomizedGreedy
from optsched.allocation.andreas.instance import AndreasInstance
from optsched.allocation.andreas.milp import solve
from optsched.allocation.andreas.plan import AndreasPlan
from optsched.allocation.andreas.validate import validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def _greedy(instance: AndreasInstance, *, seed: int = 0) -> AndreasPlan:
    """ANDREAS's randomised greedy with its default restarts, drawing from ``seed``."""
    return RandomizedGreedy(seed=seed).run(instance).plan


#: ``ALGORITHMS[name](instance, *, seed=0) -> AndreasPlan``.
ALGORITHMS: dict[str, Callable[..., AndreasPlan]] = {"randomized-greedy": _greedy}


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
