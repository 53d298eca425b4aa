"""The placement family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.family.registry import Family
from optsched.placement.exact import OBJECTIVES, solve
from optsched.placement.heuristics import HEURISTICS
from optsched.placement.instance import PlacementInstance, generate_instance
from optsched.placement.solution import Placement
from optsched.placement.validator import validate

__all__ = ["ALGORITHMS", "FAMILY"]


def _heuristic(name: str) -> Callable[..., Placement]:
    def run(instance: PlacementInstance, *, seed: int = 0) -> Placement:
        return HEURISTICS[name](instance, seed)

    run.__doc__ = f"The {name} heuristic (randomised ones draw from ``seed``)."
    return run


#: ``ALGORITHMS[name](instance, *, seed=0) -> Placement``: the heuristics.
ALGORITHMS: dict[str, Callable[..., Placement]] = {name: _heuristic(name) for name in HEURISTICS}


def small_instance() -> PlacementInstance:
    """Three jobs on three servers."""
    return generate_instance(3, n_servers=3, seed=1)


def _describe(instance: PlacementInstance) -> dict[str, Any]:
    return {"instance": instance.describe()}


FAMILY = Family(
    name="placement",
    package="optsched.placement",
    kind="placement-instance",
    Instance=PlacementInstance,
    Solution=Placement,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=tuple(OBJECTIVES),
    small_instance=small_instance,
    summary="which server each task of a training job runs on: ILPs named by objective",
    describe=_describe,
)
