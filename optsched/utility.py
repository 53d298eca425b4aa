r"""Utility of a job as a function of its duration (completion time minus arrival).

Every utility is non-negative and non-increasing in the duration :math:`d \ge 1` (slots), as the
OASiS model requires (Bao et al. 2018, §III). A job that is not admitted gets utility 0.

=========== ===================================================== ============================
kind        :math:`f(d)`                                          parameters
=========== ===================================================== ============================
sigmoid     :math:`\gamma_1 / (1 + e^{\gamma_2 (d - \gamma_3)})`   priority, steepness, target
linear      :math:`\max(0, v - s\,(d - 1))`                       value, slope
step        :math:`v` if :math:`d \le D`, else :math:`v_{late}`   value, deadline, late_value
constant    :math:`v`                                             value
=========== ===================================================== ============================

The sigmoid is the paper's (§V-A): :math:`\gamma_1` is the job's priority, :math:`\gamma_3` its
target completion time and :math:`\gamma_2` its time sensitivity (0: insensitive; 0.01-1:
sensitive; 4-6: critical).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from optsched._validation import Frozen

__all__ = ["Constant", "Linear", "Sigmoid", "Step", "Utility", "utility_table"]

NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Base(Frozen):
    def __call__(self, duration: float) -> float:
        """Utility of one duration."""
        return float(self.evaluate(np.asarray([duration], dtype=np.float64))[0])

    def evaluate(self, durations: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Vectorised utility of an array of durations."""
        raise NotImplementedError

    @property
    def max_value(self) -> float:
        """Supremum of the utility (its value at duration 1)."""
        return float(self(1.0))


class Sigmoid(_Base):
    r"""Sigmoid utility :math:`\gamma_1 / (1 + \exp(\gamma_2 (d - \gamma_3)))`."""

    kind: Literal["sigmoid"] = "sigmoid"
    priority: NonNeg = Field(description="gamma_1: the job's priority (utility scale).")
    steepness: NonNeg = Field(description="gamma_2: time sensitivity (0 = insensitive).")
    target: NonNeg = Field(description="gamma_3: target duration in slots.")

    def evaluate(self, durations: np.ndarray) -> np.ndarray:
        z = np.clip(
            self.steepness * (np.asarray(durations, dtype=np.float64) - self.target), -700, 700
        )
        return self.priority / (1.0 + np.exp(z))


class Linear(_Base):
    r"""Linear decay :math:`\max(0, v - s (d - 1))`."""

    kind: Literal["linear"] = "linear"
    value: NonNeg = Field(description="Utility at duration 1.")
    slope: NonNeg = Field(description="Utility lost per extra slot.")

    def evaluate(self, durations: np.ndarray) -> np.ndarray:
        d = np.asarray(durations, dtype=np.float64)
        return np.maximum(0.0, self.value - self.slope * (d - 1.0))


class Step(_Base):
    r"""Deadline utility: :math:`v` up to ``deadline`` slots, ``late_value`` after."""

    kind: Literal["step"] = "step"
    value: NonNeg = Field(description="Utility when the duration is at most the deadline.")
    deadline: Annotated[int, Field(ge=1)] = Field(description="Largest on-time duration (slots).")
    late_value: NonNeg = Field(default=0.0, description="Utility after the deadline.")

    @model_validator(mode="after")
    def _monotone(self) -> Step:
        if self.late_value > self.value:
            raise ValueError(
                f"late_value ({self.late_value}) must not exceed value ({self.value}): "
                "utilities are non-increasing in duration"
            )
        return self

    def evaluate(self, durations: np.ndarray) -> np.ndarray:
        d = np.asarray(durations, dtype=np.float64)
        return np.where(d <= self.deadline, self.value, self.late_value)


class Constant(_Base):
    """Time-insensitive utility ``value``."""

    kind: Literal["constant"] = "constant"
    value: NonNeg

    def evaluate(self, durations: np.ndarray) -> np.ndarray:
        return np.full(np.shape(durations), self.value, dtype=np.float64)


Utility = Annotated[Sigmoid | Linear | Step | Constant, Field(discriminator="kind")]
"""Any utility function (a pydantic discriminated union on ``kind``)."""


def utility_table(utility: _Base, arrival: int, horizon: int) -> np.ndarray:
    r"""Utility of completing at the end of each slot ``t`` in ``0..horizon-1``.

    Entry ``t`` is :math:`f(t + 1 - a)` for :math:`t \ge a` and 0 before the arrival ``a``
    (DESIGN §2.3: a job whose last slot is ``t`` completes at ``t + 1``).

    Returns
    -------
    numpy.ndarray of float64, shape (horizon,)
    """
    out = np.zeros(horizon, dtype=np.float64)
    if arrival < horizon:
        durations = np.arange(1, horizon - arrival + 1, dtype=np.float64)
        out[arrival:] = utility.evaluate(durations)
    return out
