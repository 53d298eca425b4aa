"""Heterogeneity-aware allocation policies of one scheduling round (Gavel class).

The family follows the protocol of every optsched family: :class:`AllocationInstance` (with
``load``/``save``/``schema``), :func:`generate_instance`, :func:`solve` returning an
:class:`~optsched.results.ExactResult` of an :class:`Allocation`, and :func:`validate` returning
a :class:`~optsched.results.Report`. The LPs are built as sparse matrices straight into HiGHS
(:mod:`optsched.allocation.gavel.lp`); declarative cvxpy twins
(:mod:`optsched.allocation.gavel.twin`) state
the same models for the docs and the cross-checks. The space-sharing ("packed") policies, with
pair rows for jobs sharing a gang of GPUs, are in :mod:`optsched.allocation.gavel.packed`.
:func:`themis` is Themis's partial-allocation auction over one lease
(:mod:`optsched.allocation.themis`), a heuristic returning the same :class:`Allocation`, beside
its exact counterpart ``solve(instance, "ftf-perf")``.
"""

from __future__ import annotations

from optsched.allocation.gavel.exact import formulation, solve
from optsched.allocation.gavel.family import ALGORITHMS, FAMILY
from optsched.allocation.gavel.generate import generate_instance
from optsched.allocation.gavel.instance import (
    AllocationInstance,
    AllocationJob,
    PairThroughput,
    instance_schema,
    load_instance,
)
from optsched.allocation.gavel.lp import POLICIES, objective_value
from optsched.allocation.gavel.packed import (
    PACKED_POLICIES,
    packed_objective_value,
)
from optsched.allocation.gavel.solution import Allocation
from optsched.allocation.gavel.validate import validate
from optsched.allocation.themis import themis

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "PACKED_POLICIES",
    "POLICIES",
    "Allocation",
    "AllocationInstance",
    "AllocationJob",
    "PairThroughput",
    "formulation",
    "generate_instance",
    "instance_schema",
    "load_instance",
    "objective_value",
    "packed_objective_value",
    "solve",
    "themis",
    "validate",
]
