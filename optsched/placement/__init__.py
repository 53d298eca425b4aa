"""Placement of training tasks on servers: instances, exact ILPs, heuristics and a validator.

Every algorithm in this package returns the same :class:`Placement` type, and one independent
validator (:func:`validate`) re-derives feasibility and every objective from the instance and the
placement alone.
"""

from __future__ import annotations

from optsched.placement.brute import brute_force, brute_force_all
from optsched.placement.exact import OBJECTIVES, PlacementSolution, build_model, solve_placement
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
    load_instance,
)
from optsched.placement.placement import (
    OBJECTIVE_NAMES,
    Placement,
    PlacementReport,
    check,
    load_placement,
    validate,
)

__all__: list[str] = [
    "HEURISTICS",
    "OBJECTIVES",
    "OBJECTIVE_NAMES",
    "Coefficient",
    "Communication",
    "HeuristicFailedError",
    "JobSpec",
    "Placement",
    "PlacementInstance",
    "PlacementReport",
    "PlacementSolution",
    "TaskSpec",
    "Traffic",
    "bin_packing_instance",
    "brute_force",
    "brute_force_all",
    "build_model",
    "check",
    "generate_instance",
    "load_instance",
    "load_placement",
    "run_heuristic",
    "solve_placement",
    "validate",
]
