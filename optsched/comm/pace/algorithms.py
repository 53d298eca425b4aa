"""The pace family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.comm.pace.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.comm.pace.instance import CommInstance
from optsched.comm.pace.policies import POLICIES
from optsched.comm.pace.schedule import CommSchedule

__all__ = ["ALGORITHMS"]


def _policy(name: str) -> Callable[..., CommSchedule]:
    def run(instance: CommInstance, *, seed: int = 0) -> CommSchedule:
        # The policies are deterministic: ``seed`` is accepted for the one calling convention.
        return POLICIES[name]()(instance)

    run.__doc__ = f"The {name} policy with default settings on the event simulator."
    return run


#: The policies with default settings: ``ALGORITHMS[name](instance, *, seed=0) -> CommSchedule``.
ALGORITHMS: dict[str, Callable[..., CommSchedule]] = {name: _policy(name) for name in POLICIES}
