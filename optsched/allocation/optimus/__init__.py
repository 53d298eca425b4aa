r"""Optimus (Peng et al., EuroSys 2018): fitted models, marginal-gain allocation, exact MILP.

Fitted performance models and the allocation of PSs and workers, beside the exact allocation
for the same models.

The family follows the protocol of every optsched family: :class:`OptimusInstance` (with
``load``/``save``/``schema``), :func:`generate_instance`, :func:`solve` (the exact MILP, an
:class:`~optsched.results.ExactResult` of an :class:`OptimusAllocation`), the published
marginal-gain heuristic (:class:`MarginalGain`, :func:`marginal_gain`) returning the same type,
and :func:`validate` returning a :class:`~optsched.results.Report`. The models are fitted from
observations by :func:`fit_convergence` and :func:`fit_speed` (bounded least squares).
"""

from __future__ import annotations

from typing import Any

from optsched.allocation.optimus.family import ALGORITHMS, FAMILY
from optsched.allocation.optimus.fit import ConvergenceFit, SpeedFit, fit_convergence, fit_speed
from optsched.allocation.optimus.generate import generate_instance
from optsched.allocation.optimus.greedy import MarginalGain, marginal_gain
from optsched.allocation.optimus.instance import ConvergenceSpec, OptimusInstance, OptimusJob
from optsched.allocation.optimus.models import convergence_step, loss_curve, speed
from optsched.allocation.optimus.solution import OptimusAllocation
from optsched.allocation.optimus.total_time import solve
from optsched.allocation.optimus.validate import validate

__all__ = [
    "ALGORITHMS",
    "FAMILY",
    "ConvergenceFit",
    "ConvergenceSpec",
    "MarginalGain",
    "OptimusAllocation",
    "OptimusInstance",
    "OptimusJob",
    "SpeedFit",
    "convergence_step",
    "fit_convergence",
    "fit_speed",
    "generate_instance",
    "instance_schema",
    "loss_curve",
    "marginal_gain",
    "solve",
    "speed",
    "validate",
]


def instance_schema() -> dict[str, Any]:
    """JSON Schema of the optimus-instance format."""
    return OptimusInstance.schema()
