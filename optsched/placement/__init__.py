"""Placement of training tasks on servers: instances, exact ILPs, heuristics and a validator.

The placement family, in the shape every family has:

================================ ================================================================
name                             what
================================ ================================================================
:class:`PlacementInstance`       the cluster, the jobs and their tasks, traffic and interference
                                 (``load``/``save``/``schema``/``from_dict``)
:func:`generate_instance`        a seeded synthetic training-cluster instance
                                 (:func:`bin_packing_instance`: a bin-packing-shaped one)
:func:`solve`                    the exact ILP of one objective (:data:`OBJECTIVES`), returning an
                                 :class:`~optsched.results.ExactResult` of a :class:`Placement`
:data:`HEURISTICS`               heuristics, each ``heuristic(instance, seed) -> Placement``
:func:`brute_force`              the optimum of a tiny instance by enumeration
:func:`validate`                 the independent validator, returning a
                                 :class:`~optsched.results.Report` with every objective
:func:`compare`                  every heuristic against the exact optimum: the gap table
                                 (:class:`PlacementComparison`)
================================ ================================================================

The ILPs live in modules named after their objective (:mod:`~optsched.placement.servers`,
:mod:`~optsched.placement.traffic` for ``traffic`` and ``max-load``,
:mod:`~optsched.placement.interference`, :mod:`~optsched.placement.clwp`,
:mod:`~optsched.placement.nlwp`). The interference *predictors* that produce the coefficients
are their own package, :mod:`optsched.interference`.
"""

from __future__ import annotations

from optsched.placement.brute import brute_force, brute_force_all
from optsched.placement.compare import GapCell, PlacementComparison, compare
from optsched.placement.exact import OBJECTIVES, build_model, solve
from optsched.placement.family import ALGORITHMS, FAMILY
from optsched.placement.heuristics import HEURISTICS, HeuristicFailedError, run_heuristic
from optsched.placement.instance import (
    Coefficient,
    Communication,
    JobSpec,
    PlacementInstance,
    TaskSpec,
    Traffic,
    bin_packing_instance,
    generate_instance,
)
from optsched.placement.solution import Placement
from optsched.placement.validator import OBJECTIVE_NAMES, check, validate

__all__: list[str] = [
    "ALGORITHMS",
    "FAMILY",
    "HEURISTICS",
    "OBJECTIVES",
    "OBJECTIVE_NAMES",
    "Coefficient",
    "Communication",
    "GapCell",
    "HeuristicFailedError",
    "JobSpec",
    "Placement",
    "PlacementComparison",
    "PlacementInstance",
    "TaskSpec",
    "Traffic",
    "bin_packing_instance",
    "brute_force",
    "brute_force_all",
    "build_model",
    "check",
    "compare",
    "generate_instance",
    "run_heuristic",
    "solve",
    "validate",
]
