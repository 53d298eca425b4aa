"""The andreas family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.allocation.andreas.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.andreas.greedy import RandomizedGreedy
from optsched.allocation.andreas.instance import AndreasInstance
from optsched.allocation.andreas.plan import AndreasPlan

__all__ = ["ALGORITHMS"]


def _greedy(instance: AndreasInstance, *, seed: int = 0) -> AndreasPlan:
    """ANDREAS's randomised greedy with its default restarts, drawing from ``seed``."""
    return RandomizedGreedy(seed=seed).run(instance).plan


#: ``ALGORITHMS[name](instance, *, seed=0) -> AndreasPlan``.
ALGORITHMS: dict[str, Callable[..., AndreasPlan]] = {"randomized-greedy": _greedy}
