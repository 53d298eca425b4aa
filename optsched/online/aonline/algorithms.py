"""The aonline family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.online.aonline.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.online import aonline
from optsched.online.aonline.schedule import AonlineSchedule

__all__ = ["ALGORITHMS"]


def _aonline(instance: AonlineInstance, *, seed: int = 0) -> AonlineSchedule:
    """Aonline with OASiS's primal-dual packing (deterministic: ``seed`` is not used)."""
    return aonline(instance)


#: ``ALGORITHMS[name](instance, *, seed=0) -> AonlineSchedule``.
ALGORITHMS: dict[str, Callable[..., AonlineSchedule]] = {"aonline": _aonline}
