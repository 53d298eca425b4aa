"""The Gavel family (one round's allocation) as a declared :class:`~optsched.family.Family`."""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.gavel.exact import solve
from optsched.allocation.gavel.generate import generate_instance
from optsched.allocation.gavel.instance import AllocationInstance
from optsched.allocation.gavel.lp import POLICIES
from optsched.allocation.gavel.solution import Allocation
from optsched.allocation.gavel.validate import validate
from optsched.allocation.themis import themis
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def _themis(instance: AllocationInstance, *, seed: int = 0) -> Allocation:
    """Themis's partial-allocation auction over one lease (deterministic: ``seed`` unused)."""
    return themis(instance)


#: ``ALGORITHMS[name](instance, *, seed=0) -> Allocation``: the heuristics of the family.
ALGORITHMS: dict[str, Callable[..., Allocation]] = {"themis": _themis}


def small_instance() -> AllocationInstance:
    """Six jobs on the generator's default cluster."""
    return generate_instance(6, seed=1)


FAMILY = Family(
    name="gavel",
    package="optsched.allocation.gavel",
    kind="allocation-instance",
    Instance=AllocationInstance,
    Solution=Allocation,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    # The objectives of the round LPs; a policy (``solve(instance, policy)``) is an objective
    # with a throughput view (``-perf``: heterogeneity-aware; ``-packed``: space sharing).
    objectives=tuple(dict.fromkeys(objective for objective, _ in POLICIES.values())),
    small_instance=small_instance,
    summary="what share of each GPU type each job gets in one round (Gavel's policies, Themis)",
)
