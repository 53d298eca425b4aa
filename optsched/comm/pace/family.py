"""The PACE family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.comm.pace.generate import generate_instance
from optsched.comm.pace.instance import CommInstance, check_budgets
from optsched.comm.pace.policies import POLICIES
from optsched.comm.pace.schedule import CommSchedule
from optsched.comm.pace.solve import solve, validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def _policy(name: str) -> Callable[..., CommSchedule]:
    def run(instance: CommInstance, *, seed: int = 0) -> CommSchedule:
        # The policies are deterministic: ``seed`` is accepted for the one calling convention.
        return POLICIES[name]()(instance)

    run.__doc__ = f"The {name} policy with default settings on the event simulator."
    return run


#: The policies with default settings: ``ALGORITHMS[name](instance, *, seed=0) -> CommSchedule``.
ALGORITHMS: dict[str, Callable[..., CommSchedule]] = {name: _policy(name) for name in POLICIES}


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
