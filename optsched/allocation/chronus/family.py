"""The Chronus family as a declared :class:`~optsched.family.Family` (see the registry)."""

from __future__ import annotations

from optsched.allocation.chronus.algorithms import ALGORITHMS
from optsched.allocation.chronus.generate import generate_instance
from optsched.allocation.chronus.instance import LeaseInstance
from optsched.allocation.chronus.milp import solve
from optsched.allocation.chronus.plan import LeasePlan
from optsched.allocation.chronus.validate import validate
from optsched.family.registry import Family

__all__ = ["ALGORITHMS", "FAMILY"]


def small_instance() -> LeaseInstance:
    """Four SLO jobs (one guaranteed) and two best-effort jobs over four leases.

    The seed is one where plain EDF, which has no admission control and may drop a guaranteed
    job, happens to keep it: every algorithm's plan is then feasible.
    """
    return generate_instance(4, 2, leases=4, guaranteed_fraction=0.5, seed=3)


FAMILY = Family(
    name="chronus",
    package="optsched.allocation.chronus",
    kind="chronus-instance",
    Instance=LeaseInstance,
    Solution=LeasePlan,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    # The MILP admits as many SLO jobs as meet their deadlines, then (weighted by a small
    # epsilon) serves best-effort work.
    objectives=("admitted-slo-jobs",),
    small_instance=small_instance,
    summary="SLO admission and GPU leases at one lease boundary (deadline scheduling)",
)
