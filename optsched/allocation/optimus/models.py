r"""Optimus's two performance models: the convergence curve and the training speed.

**Convergence** (Peng et al., EuroSys 2018; the public scheduler's ``estimator.py``): the training
loss after :math:`k` steps follows

.. math::

    \ell(k) = \frac{1}{\beta_0 k + \beta_1} + \beta_2,\qquad \beta \ge 0.

The job counts as converged at the first step :math:`k` at which the loss drops by less than a
threshold :math:`\delta` over the next :math:`\Delta` steps,
:math:`\ell(k) - \ell(k + \Delta) < \delta`. With :math:`u = \beta_0 k + \beta_1` the drop is
:math:`\beta_0\Delta / (u (u + \beta_0 \Delta))`, strictly decreasing in :math:`k`, so the step is
found in closed form from the positive root of :math:`u(u + \beta_0\Delta) = \beta_0\Delta/\delta`
(:func:`convergence_step`).

**Speed** (steps per second of a job with :math:`p` parameter servers and :math:`w` workers; the
coefficients :math:`\theta \ge 0`):

=============== =============================================================================
kind            model
=============== =============================================================================
``async``       :math:`f(p, w) = w / (\theta_0 + \theta_1 w/p + \theta_2 w + \theta_3 p)`: each
                worker's step takes compute :math:`\theta_0`, transfer to its share of the
                PSs :math:`\theta_1 w/p`, and overheads growing with the task counts
``sync``        :math:`f(p, w) = 1 / (\theta_0 M/w + \theta_1 + \theta_2 w/p + \theta_3 w +
                \theta_4 p)` with :math:`M` the global batch size
``colocated``   :math:`f(w) = 1 / (\theta_0 / w + \theta_1 + \theta_2 w)`: ``sync`` with one PS
                on every worker's machine (:math:`p = w`, coefficients merged, :math:`M`
                folded into :math:`\theta_0`); the form the simulator fits to GPU throughputs
=============== =============================================================================

All three are linear in :math:`\theta` once written as the *step time* (seconds per step of one
worker for ``async``, per global step for ``sync`` and ``colocated``), which is what
:func:`step_design` returns and what the fit (:mod:`optsched.allocation.optimus.fit`) exploits.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "N_THETA",
    "SpeedKind",
    "convergence_step",
    "loss_curve",
    "speed",
    "step_design",
]

SpeedKind = Literal["async", "sync", "colocated"]

#: Number of coefficients of each speed model.
N_THETA: dict[str, int] = {"async": 4, "sync": 5, "colocated": 3}


def loss_curve(beta: ArrayLike, steps: ArrayLike) -> NDArray[np.float64]:
    r""":math:`\ell(k) = 1/(\beta_0 k + \beta_1) + \beta_2` at each step.

    ``inf`` where the denominator is 0.
    """
    b = np.asarray(beta, dtype=np.float64)
    k = np.asarray(steps, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return 1.0 / (b[0] * k + b[1]) + b[2]


def convergence_step(beta: ArrayLike, threshold: float, window: float) -> float:
    r"""The first integral step :math:`k \ge 0` with :math:`\ell(k) - \ell(k+\Delta) < \delta`.

    Parameters
    ----------
    beta : array_like, shape (3,)
        :math:`(\beta_0, \beta_1, \beta_2)`, nonnegative.
    threshold : float
        :math:`\delta > 0`.
    window : float
        :math:`\Delta > 0` steps.

    Returns
    -------
    float
        The step (an integer value); 0 when the curve is flat (:math:`\beta_0 = 0`).

    Notes
    -----
    The drop :math:`\beta_0\Delta/(u(u+\beta_0\Delta))` with :math:`u = \beta_0 k + \beta_1` is
    below :math:`\delta` exactly when :math:`u > u^* = (-\beta_0\Delta +
    \sqrt{(\beta_0\Delta)^2 + 4\beta_0\Delta/\delta})/2`, i.e. :math:`k > (u^* - \beta_1)/\beta_0`.
    Complexity :math:`O(1)`.
    """
    b0, b1 = float(np.asarray(beta)[0]), float(np.asarray(beta)[1])
    if b0 <= 0:
        return 0.0
    a = b0 * window
    u_star = (-a + math.sqrt(a * a + 4.0 * a / threshold)) / 2.0
    k_real = (u_star - b1) / b0
    if k_real < 0:
        return 0.0
    return float(math.floor(k_real) + 1)


def step_design(
    kind: SpeedKind, ps: ArrayLike, workers: ArrayLike, batch: float = 1.0
) -> NDArray[np.float64]:
    r"""Rows :math:`x(p, w)` with step time :math:`x(p, w)^\top\theta`, shape (points, N_THETA).

    ``async``: :math:`(1, w/p, w, p)`; ``sync``: :math:`(M/w, 1, w/p, w, p)`; ``colocated``:
    :math:`(1/w, 1, w)` (``ps`` ignored).
    """
    p = np.asarray(ps, dtype=np.float64).ravel()
    w = np.asarray(workers, dtype=np.float64).ravel()
    one = np.ones_like(w)
    if kind == "async":
        return np.column_stack([one, w / p, w, p])
    if kind == "sync":
        return np.column_stack([batch / w, one, w / p, w, p])
    return np.column_stack([1.0 / w, one, w])


def speed(
    kind: SpeedKind, theta: ArrayLike, ps: ArrayLike, workers: ArrayLike, batch: float = 1.0
) -> NDArray[np.float64]:
    r""":math:`f(p, w)` in steps per second (``inf`` where the step time is 0).

    For ``async`` a step is one worker's mini-batch (the job advances :math:`w` of them per step
    time); for ``sync`` and ``colocated`` a step is one global step.
    """
    t = step_design(kind, ps, workers, batch) @ np.asarray(theta, dtype=np.float64)
    w = np.asarray(workers, dtype=np.float64).ravel()
    with np.errstate(divide="ignore"):
        per_step = np.where(t > 0, 1.0 / t, np.inf)
    return w * per_step if kind == "async" else per_step
