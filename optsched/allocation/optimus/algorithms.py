"""The optimus family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.allocation.optimus.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.optimus.greedy import marginal_gain
from optsched.allocation.optimus.instance import OptimusInstance
from optsched.allocation.optimus.solution import OptimusAllocation

__all__ = ["ALGORITHMS"]


def _marginal_gain(instance: OptimusInstance, *, seed: int = 0) -> OptimusAllocation:
    """Optimus's marginal-gain allocation (deterministic: ``seed`` is not used)."""
    return marginal_gain(instance)


#: ``ALGORITHMS[name](instance, *, seed=0) -> OptimusAllocation``.
ALGORITHMS: dict[str, Callable[..., OptimusAllocation]] = {"marginal-gain": _marginal_gain}
