"""Chronus: lease-based deadline scheduling of one lease boundary (formulations.md §6.5).

The family follows the protocol of every optsched family: :class:`LeaseInstance` (with
``load``/``save``/``schema``), :func:`generate_instance`, :func:`solve` (the exact admission and
lease-grant MILP, matrices straight into HiGHS) returning an
:class:`~optsched.results.ExactResult` of a :class:`LeasePlan`, the heuristics
:class:`ChronusGreedy` (Chronus's greedy admission with EDF packing) and :class:`EDFBaseline`
returning the same :class:`LeasePlan`, and :func:`validate` returning a
:class:`~optsched.results.Report`. The simulator runs it lease by lease as the policy
``chronus`` (:mod:`optsched.sim.policies.chronus`).
"""

from __future__ import annotations

from optsched.allocation.chronus.family import ALGORITHMS, FAMILY
from optsched.allocation.chronus.generate import generate_instance
from optsched.allocation.chronus.heuristics import (
    HEURISTICS,
    ChronusGreedy,
    EDFBaseline,
    edf_feasible,
    edf_pack,
    fill_best_effort,
)
from optsched.allocation.chronus.instance import (
    BestEffortJob,
    LeaseInstance,
    SLOJob,
    instance_schema,
    load_instance,
)
from optsched.allocation.chronus.milp import build_milp, solve
from optsched.allocation.chronus.plan import LeasePlan
from optsched.allocation.chronus.validate import validate

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "HEURISTICS",
    "BestEffortJob",
    "ChronusGreedy",
    "EDFBaseline",
    "LeaseInstance",
    "LeasePlan",
    "SLOJob",
    "build_milp",
    "edf_feasible",
    "edf_pack",
    "fill_best_effort",
    "generate_instance",
    "instance_schema",
    "load_instance",
    "solve",
    "validate",
]
