"""The OASiS family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from typing import Any

from optsched.family.registry import Family
from optsched.online.oasis.algorithms import ALGORITHMS
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.offline import solve
from optsched.online.oasis.schedule import Schedule, validate

__all__ = ["ALGORITHMS", "FAMILY"]


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
