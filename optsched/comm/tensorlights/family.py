"""The TensorLights family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from typing import Any

from optsched.comm.tensorlights.generate import generate_instance
from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.comm.tensorlights.order import solve
from optsched.comm.tensorlights.policies import ALGORITHMS
from optsched.comm.tensorlights.solution import OBJECTIVES, SimulationResult
from optsched.comm.tensorlights.validator import validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> TensorLightsInstance:
    """Three jobs on two hosts."""
    return generate_instance(2, 3, seed=1)


def _describe(instance: TensorLightsInstance) -> dict[str, Any]:
    return {"jobs": instance.n_jobs, "hosts": instance.n_hosts}


# ALGORITHMS (the policies) already follow the one convention: policy(instance, *, seed=0).
FAMILY = Family(
    name="tensorlights",
    package="optsched.comm.tensorlights",
    kind="tensorlights-instance",
    Instance=TensorLightsInstance,
    Solution=SimulationResult,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=OBJECTIVES,
    small_instance=small_instance,
    summary="NIC priorities of co-located parameter servers, in a fluid simulator",
    describe=_describe,
)
