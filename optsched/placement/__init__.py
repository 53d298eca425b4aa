"""Placement of training tasks on servers: instances, exact ILPs, heuristics and a validator.

Every algorithm in this package returns the same :class:`Placement` type, and one independent
validator (:func:`validate`) re-derives feasibility and every objective from the instance and the
placement alone.
"""

from __future__ import annotations

from optsched.placement.brute import brute_force, brute_force_all
from optsched.placement.compare import Comparison, compare
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
from optsched.placement.interference import (
    CoLocationRegressor,
    InterferenceTruth,
    MatrixCompletion,
    MeanBaseline,
    compare_predictors,
    generate_interference_truth,
    interference_matrix,
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
    "CoLocationRegressor",
    "Coefficient",
    "Communication",
    "Comparison",
    "HeuristicFailedError",
    "InterferenceTruth",
    "JobSpec",
    "MatrixCompletion",
    "MeanBaseline",
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
    "compare",
    "compare_predictors",
    "generate_instance",
    "generate_interference_truth",
    "interference_matrix",
    "load_instance",
    "load_placement",
    "run_heuristic",
    "solve_placement",
    "validate",
]
