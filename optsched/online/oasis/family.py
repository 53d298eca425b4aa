"""The OASiS family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.family.registry import Family
from optsched.online.oasis.baselines import DRF, FIFO, RRH, DormLike
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.offline import solve
from optsched.online.oasis.online import OASiS
from optsched.online.oasis.schedule import Schedule, validate

__all__ = ["ALGORITHMS", "FAMILY"]


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


def small_instance() -> OasisInstance:
    """Four jobs, two worker and two PS servers, six slots."""
    return generate_instance(4, worker_servers=2, ps_servers=2, horizon=6, seed=1)


def _describe(instance: OasisInstance) -> dict[str, Any]:
    return {
        "jobs": instance.n_jobs,
        "horizon": instance.horizon,
        "worker_servers": len(instance.worker_servers),
        "ps_servers": len(instance.ps_servers),
    }


FAMILY = Family(
    name="oasis",
    package="optsched.online.oasis",
    kind="oasis-instance",
    Instance=OasisInstance,
    Solution=Schedule,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=("total-utility",),
    small_instance=small_instance,
    summary="which jobs run when, with how many workers and parameter servers, for utility",
    describe=_describe,
)
