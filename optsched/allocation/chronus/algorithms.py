"""The chronus family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.allocation.chronus.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.chronus.heuristics import HEURISTICS
from optsched.allocation.chronus.instance import LeaseInstance
from optsched.allocation.chronus.plan import LeasePlan

__all__ = ["ALGORITHMS"]


def _heuristic(name: str) -> Callable[..., LeasePlan]:
    def run(instance: LeaseInstance, *, seed: int = 0) -> LeasePlan:
        # Both heuristics are deterministic: ``seed`` is accepted for the one convention.
        return HEURISTICS[name]().run(instance)

    run.__doc__ = f"The {name} heuristic's lease plan."
    return run


#: ``ALGORITHMS[name](instance, *, seed=0) -> LeasePlan``: Chronus's greedy and plain EDF.
ALGORITHMS: dict[str, Callable[..., LeasePlan]] = {name: _heuristic(name) for name in HEURISTICS}
