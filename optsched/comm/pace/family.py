"""The PACE family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from typing import Any

from optsched.comm.pace.algorithms import ALGORITHMS
from optsched.comm.pace.generate import generate_instance
from optsched.comm.pace.instance import CommInstance, check_budgets
from optsched.comm.pace.schedule import CommSchedule
from optsched.comm.pace.solve import solve, validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> CommInstance:
    """A generated four-layer model."""
    return generate_instance(seed=1, layers=4)


def _describe(instance: CommInstance) -> dict[str, Any]:
    # The fusion DP's tables are the largest allocation of a solve: refuse an instance over its
    # budget here, as solve would.
    check_budgets(instance.dag.n_tensors)
    return instance.summary()


FAMILY = Family(
    name="pace",
    package="optsched.comm.pace",
    kind="comm-instance",
    Instance=CommInstance,
    Solution=CommSchedule,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=("iteration-time",),
    small_instance=small_instance,
    summary="the order and fusion of all-reduce calls in one data-parallel training iteration",
    describe=_describe,
)
