r"""Aonline: online gang scheduling on heterogeneous GPU pools, min total weighted completion time.

The family protocol (see "Anatomy of a family" in the docs):

* instance type :class:`AonlineInstance` (``load``/``save``/``schema``/``from_dict``) with
  :class:`GpuPool` and :class:`AonlineJob`;
* :func:`generate_instance` (seeded);
* the exact entry point :func:`solve` (the time-indexed ILP of :math:`\min \sum_j w_j C_j`)
  returning :class:`~optsched.results.ExactResult` of :class:`AonlineSchedule`;
* the online algorithm :func:`aonline` (doubling intervals, OASiS's primal-dual packing with the
  per-pool oracle :func:`best_schedule`), returning the same :class:`AonlineSchedule`;
* :func:`validate` ``(instance, schedule) -> Report``, the independent validator.

The simulator runs the same algorithm as the policy ``aonline``
(:mod:`optsched.sim.policies.aonline`).
"""

from optsched.online.aonline.exact import Packing, pack_exact
from optsched.online.aonline.family import ALGORITHMS, FAMILY
from optsched.online.aonline.generate import generate_instance
from optsched.online.aonline.instance import AonlineInstance, AonlineJob, GpuPool
from optsched.online.aonline.offline import OBJECTIVE_NAME, solve
from optsched.online.aonline.online import aonline, interval_bounds, max_intervals
from optsched.online.aonline.packing import (
    SMALL_DEMAND_FRACTION,
    PackingOracleResult,
    PriceState,
    PrimalDualPacking,
    assumptions,
    best_schedule,
    pack_primal_dual,
    price_parameters,
)
from optsched.online.aonline.schedule import AonlineSchedule, IntervalRecord, Run, validate
from optsched.results import ExactResult, Report, Violation

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "OBJECTIVE_NAME",
    "SMALL_DEMAND_FRACTION",
    "AonlineInstance",
    "AonlineJob",
    "AonlineSchedule",
    "ExactResult",
    "GpuPool",
    "IntervalRecord",
    "Packing",
    "PackingOracleResult",
    "PriceState",
    "PrimalDualPacking",
    "Report",
    "Run",
    "Violation",
    "aonline",
    "assumptions",
    "best_schedule",
    "generate_instance",
    "interval_bounds",
    "max_intervals",
    "pack_exact",
    "pack_primal_dual",
    "price_parameters",
    "solve",
    "validate",
]
