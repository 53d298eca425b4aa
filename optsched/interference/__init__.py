r"""Interference predictors: a synthetic ground truth, matrix completion and co-location regression.

Co-located training jobs slow each other down through shared resources (GPU compute, memory
bandwidth, the PCIe bus, the host NIC). The placement family's interference-aware objectives
(``interference``, ``clwp``, ``nlwp``) take a pairwise coefficient matrix :math:`\kappa` whose
entry :math:`\kappa_{ab} \ge 0` is the slowdown job :math:`a` suffers per server it shares with
job :math:`b`. This package produces :math:`\kappa` from data the way the interference-aware
parallelization paper [G1]_ does, with two predictors, and scores them against a known truth:

========================== ========================================================================
module                     one idea
========================== ========================================================================
:mod:`~.truth`             seeded job types with latent resource profiles and an explicit slowdown
                           function (:class:`InterferenceTruth`), and simulated measurements
:mod:`~.baseline`          global, row, column and additive means (:class:`MeanBaseline`), and
                           :func:`prediction_errors`
:mod:`~.completion`        low-rank non-negative matrix completion (:class:`MatrixCompletion`, the
                           IASP idea, collaborative filtering)
:mod:`~.regression`        slowdown regressed on profiled features of a job and its co-runners
                           (:class:`CoLocationRegressor`, the IAPP idea)
:mod:`~.coefficients`      type slowdowns to the placement coefficients
                           (:func:`interference_matrix`)
:mod:`~.comparison`        every predictor on the held-out entries of one truth
                           (:func:`compare_predictors`)
========================== ========================================================================

The learning is done by scikit-learn, an optional dependency (``pip install 'optsched[ml]'``),
imported only when a learned predictor is fitted; the truth, the baselines and the coefficients
need only NumPy.

References
----------
.. [G1] X. Geng, H. Zhang, Z. Zhao, H. Ma. "Interference-aware parallelization for deep learning
   workload in GPU cluster." Cluster Computing 23, 2020. doi:10.1007/s10586-019-03037-6
"""

from __future__ import annotations

from optsched.interference.baseline import MeanBaseline, prediction_errors
from optsched.interference.coefficients import interference_matrix
from optsched.interference.comparison import PredictorScore, PredictorScores, compare_predictors
from optsched.interference.completion import COMPLETION_TOL, MatrixCompletion
from optsched.interference.regression import CoLocationRegressor, colocation_features
from optsched.interference.truth import (
    DEFAULT_OVERFLOW,
    DEFAULT_WEIGHTS,
    RESOURCES,
    CoLocationSamples,
    InterferenceTruth,
    generate_interference_truth,
)

__all__ = [
    "COMPLETION_TOL",
    "DEFAULT_OVERFLOW",
    "DEFAULT_WEIGHTS",
    "RESOURCES",
    "CoLocationRegressor",
    "CoLocationSamples",
    "InterferenceTruth",
    "MatrixCompletion",
    "MeanBaseline",
    "PredictorScore",
    "PredictorScores",
    "colocation_features",
    "compare_predictors",
    "generate_interference_truth",
    "interference_matrix",
    "prediction_errors",
]
