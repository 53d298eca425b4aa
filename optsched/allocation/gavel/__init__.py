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

from typing import TYPE_CHECKING

from optsched._lazy import attach
from optsched.allocation.gavel.lp import POLICIES, objective_value
from optsched.allocation.gavel.validate import validate

if TYPE_CHECKING:
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
    from optsched.allocation.gavel.packed import (
        PACKED_POLICIES,
        packed_objective_value,
    )
    from optsched.allocation.gavel.solution import Allocation
    from optsched.allocation.themis import themis

#: The exact model, the family, the generator, the packed LPs and Themis load on first use, so
#: that the simulator's LP policies (which read :data:`POLICIES`) import only the LP module.
__getattr__, __dir__ = attach(
    __name__,
    {
        "formulation": "optsched.allocation.gavel.exact",
        "solve": "optsched.allocation.gavel.exact",
        "ALGORITHMS": "optsched.allocation.gavel.family",
        "FAMILY": "optsched.allocation.gavel.family",
        "generate_instance": "optsched.allocation.gavel.generate",
        "AllocationInstance": "optsched.allocation.gavel.instance",
        "AllocationJob": "optsched.allocation.gavel.instance",
        "PairThroughput": "optsched.allocation.gavel.instance",
        "instance_schema": "optsched.allocation.gavel.instance",
        "load_instance": "optsched.allocation.gavel.instance",
        "PACKED_POLICIES": "optsched.allocation.gavel.packed",
        "packed_objective_value": "optsched.allocation.gavel.packed",
        "Allocation": "optsched.allocation.gavel.solution",
        "themis": "optsched.allocation.themis",
    },
)


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
