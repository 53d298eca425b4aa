"""Cluster job scheduling: the OASiS family.

Instances (:mod:`~optsched.jobs.instance`), the Schedule type and its independent validator
(:mod:`~optsched.jobs.schedule`), the exact offline ILP (:mod:`~optsched.jobs.offline`), seeded
generators (:mod:`~optsched.jobs.generate`), the OASiS online primal-dual algorithm and the
baselines.
"""

from optsched.jobs.baselines import DRF, FIFO, RRH, DormLike
from optsched.jobs.engine import OnlineAlgorithm, OnlineRun, SlotEngine
from optsched.jobs.instance import Job, OasisInstance, Server, load_instance
from optsched.jobs.online import OASiS, OasisResult, dual_bound
from optsched.jobs.oracle import best_schedule
from optsched.jobs.prices import PriceParams, estimate_prices
from optsched.jobs.schedule import (
    JobSchedule,
    Schedule,
    ValidationReport,
    Violation,
    build_schedule,
    load_schedule,
    validate,
)

__all__ = [
    "DRF",
    "FIFO",
    "RRH",
    "DormLike",
    "Job",
    "JobSchedule",
    "OASiS",
    "OasisInstance",
    "OasisResult",
    "OnlineAlgorithm",
    "OnlineRun",
    "PriceParams",
    "Schedule",
    "Server",
    "SlotEngine",
    "ValidationReport",
    "Violation",
    "best_schedule",
    "build_schedule",
    "dual_bound",
    "estimate_prices",
    "load_instance",
    "load_schedule",
    "validate",
]
