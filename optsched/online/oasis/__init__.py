"""Cluster job scheduling: the OASiS family.

The family protocol (see "Anatomy of a family" in the docs):

* instance type :class:`OasisInstance` (``load``/``save``/``schema``/``from_dict``), with
  :class:`Job` and :class:`OasisServer`;
* :func:`generate_instance` (seeded);
* the exact entry point :func:`solve` (the offline ILP) returning
  :class:`~optsched.results.ExactResult` of :class:`Schedule`;
* online algorithms with one calling convention, ``algorithm.run(instance) -> OnlineRun``
  whose ``schedule`` is a :class:`Schedule`: :class:`OASiS` and the baselines :class:`FIFO`,
  :class:`DRF`, :class:`RRH`, :class:`DormLike`;
* :func:`validate` ``(instance, schedule) -> Report``, the independent validator.

Competitive-ratio measurement lives in :mod:`optsched.online.oasis.competitive`; the resumable
sweep of ratios in :mod:`optsched.runs.oasis_ratio`; tables and plots in
:mod:`optsched.report.oasis`.
"""

from optsched.online.oasis.baselines import DRF, FIFO, RRH, DormLike, baseline_algorithms
from optsched.online.oasis.engine import OnlineAlgorithm, OnlineRun, SlotEngine
from optsched.online.oasis.family import ALGORITHMS, FAMILY
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.instance import Job, OasisInstance, OasisServer, load_instance
from optsched.online.oasis.offline import solve
from optsched.online.oasis.online import OASiS, OasisResult, dual_bound
from optsched.online.oasis.oracle import best_schedule
from optsched.online.oasis.prices import PriceParams, estimate_prices, load_prices
from optsched.online.oasis.schedule import (
    JobSchedule,
    Schedule,
    build_schedule,
    load_schedule,
    validate,
)
from optsched.results import ExactResult, Report, Violation

__all__ = [
    "ALGORITHMS",
    "DRF",
    "FAMILY",
    "FIFO",
    "RRH",
    "DormLike",
    "ExactResult",
    "Job",
    "JobSchedule",
    "OASiS",
    "OasisInstance",
    "OasisResult",
    "OasisServer",
    "OnlineAlgorithm",
    "OnlineRun",
    "PriceParams",
    "Report",
    "Schedule",
    "SlotEngine",
    "Violation",
    "baseline_algorithms",
    "best_schedule",
    "build_schedule",
    "dual_bound",
    "estimate_prices",
    "generate_instance",
    "load_instance",
    "load_prices",
    "load_schedule",
    "solve",
    "validate",
]
