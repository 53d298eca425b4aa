"""The oasis family's heuristics and algorithms under one calling convention.

``ALGORITHMS[name](instance, *, seed=0)`` returns the family's solution type. The table
lives apart from the family's declaration
(:mod:`optsched.online.oasis.family`), which imports the exact
``solve``, so that the exact solve can seed itself with these heuristics without importing
its own declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.online.oasis.baselines import DRF, FIFO, RRH, DormLike
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.online import OASiS
from optsched.online.oasis.schedule import Schedule

__all__ = ["ALGORITHMS"]


def _runner(make: Callable[[int], Any]) -> Callable[..., Schedule]:
    def run(instance: OasisInstance, *, seed: int = 0) -> Schedule:
        schedule: Schedule = make(seed).run(instance).schedule
        return schedule

    run.__doc__ = "Run the algorithm on the slot engine; return its schedule."
    return run


#: The online algorithm and the baselines with default settings, one calling convention:
#: ``ALGORITHMS[name](instance, *, seed=0) -> Schedule``. FIFO and RRH draw their fixed worker
#: counts from ``seed``; OASiS, DRF and Dorm-like are deterministic.
ALGORITHMS: dict[str, Callable[..., Schedule]] = {
    "oasis": _runner(lambda seed: OASiS()),
    "fifo": _runner(lambda seed: FIFO(seed=seed)),
    "drf": _runner(lambda seed: DRF()),
    "rrh": _runner(lambda seed: RRH(seed=seed)),
    "dorm": _runner(lambda seed: DormLike()),
}
