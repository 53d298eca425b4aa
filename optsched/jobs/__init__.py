"""Cluster job scheduling: the OASiS family.

Instances (:mod:`~optsched.jobs.instance`), the Schedule type and its independent validator
(:mod:`~optsched.jobs.schedule`), the exact offline ILP (:mod:`~optsched.jobs.offline`), seeded
generators (:mod:`~optsched.jobs.generate`), the OASiS online primal-dual algorithm and the
baselines.
"""

from optsched.jobs.instance import Job, OasisInstance, Server, load_instance
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
    "Job",
    "JobSchedule",
    "OasisInstance",
    "Schedule",
    "Server",
    "ValidationReport",
    "Violation",
    "build_schedule",
    "load_instance",
    "load_schedule",
    "validate",
]
