r"""Fitting Pollux's throughput parameters to measured step times.

Pollux's agent profiles each job as it runs and refits :math:`\theta_\mathrm{sys}` (the seven
parameters of :class:`~optsched.goodput.throughput.ThroughputParams`) to the configurations it
has seen, by minimizing the root mean squared logarithmic error (RMSLE) of its predictions
(Qiao et al., OSDI'21, §3.2). A measurement of configuration :math:`i` gives the compute time of
one pass :math:`c_i` and the time of a synchronizing step :math:`y_i` (compute plus all-reduce,
as overlapped); the objective is

.. math::

   L(\theta) = \sqrt{\tfrac1n \textstyle\sum_i (\log T_\mathrm{grad}(m_i) - \log c_i)^2}
     + \sqrt{\tfrac1n \textstyle\sum_i (\log T_\mathrm{opt}(N_i, K_i, m_i) - \log y_i)^2}
     + 10^{-3} (\gamma - 1)^2
     + 10^{-2} \bigl((\beta_n / \alpha_n)^2 + (\beta_r / \alpha_r)^2\bigr),

with :math:`T_\mathrm{opt} = (T_\mathrm{grad}^\gamma + T_\mathrm{sync}^\gamma)^{1/\gamma}`, over
the box :math:`\alpha, \beta \ge 10^{-8}`, :math:`1 \le \gamma \le 10`. The two regularizers,
which the paper does not print, are those of the artifact's simulator (``simulator/goodput.py``
of petuum/adaptdl, branch ``osdi21-artifact``), reconstructed here so that the fitted
parameters are the same: a pull of :math:`\gamma` towards 1 (the smooth end of the norm, where
the :math:`\alpha, \beta` are easier to fit) and a penalty on retrogression (an optimistic model
that does not predict slow-downs it has not seen). Parameters the data cannot identify are
pinned, as the artifact pins them:

* a single atomic batch size seen: :math:`\alpha_c` is fixed at half the mean compute time;
* no measurement across nodes: :math:`\alpha_n, \beta_n` fixed at the lower bound;
* no measurement of several replicas within one node: :math:`\alpha_r, \beta_r` likewise;
* no measurement of more than two replicas: :math:`\beta_n, \beta_r` likewise.

After the fit, when no measurement spans nodes, the prior that a network link is slower than
the node's own is enforced: :math:`\alpha_n \ge 1.1\,\alpha_r`, :math:`\beta_n \ge 1.1\,\beta_r`.

The gradient of :math:`L` is analytic (:func:`objective` returns it), and the minimizer is
L-BFGS-B, as in the artifact, so both fits start from the same point, take the same kind of
steps and stop at the same kind of point.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError
from optsched.goodput.throughput import PARAM_NAMES, ThroughputParams

__all__ = [
    "LOWER",
    "StepMeasurements",
    "fit_bounds",
    "fit_throughput",
    "objective",
    "objective_floored",
]

FloatArray = npt.NDArray[np.float64]

#: The lower bound of every alpha and beta: a small slack above 0 keeps the logarithms and the
#: ratios of the regularizer finite.
LOWER = 1e-8
_GAMMA_MAX = 10.0
_START = np.array([1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.0 + 1e-3])
_REG_GAMMA = 1e-3
_REG_RETRO = 1e-2
_PRIOR = 1.1


@dataclass(frozen=True)
class StepMeasurements:
    r"""Measured step times of one job type at several configurations (one entry each).

    Parameters
    ----------
    num_nodes, num_replicas : ndarray of int
        :math:`N_i \ge 1` and :math:`K_i \ge N_i`.
    atomic_bsz : ndarray
        Per-GPU batch :math:`m_i > 0`.
    compute_time : ndarray
        Seconds of one pass without the all-reduce, :math:`c_i > 0` (step minus sync time).
    step_time : ndarray
        Seconds of a synchronizing step, :math:`y_i > 0`.
    """

    num_nodes: FloatArray
    num_replicas: FloatArray
    atomic_bsz: FloatArray
    compute_time: FloatArray
    step_time: FloatArray

    def __post_init__(self) -> None:
        n = len(self.num_nodes)
        if n == 0:
            raise InvalidInstanceError("measurements", "needs at least one measurement")
        for name in ("num_replicas", "atomic_bsz", "compute_time", "step_time"):
            if len(getattr(self, name)) != n:
                raise InvalidInstanceError(name, f"has {len(getattr(self, name))} values, not {n}")
        for name in ("atomic_bsz", "compute_time", "step_time"):
            values = getattr(self, name)
            if not np.all(np.isfinite(values)) or np.any(values <= 0):
                raise InvalidInstanceError(name, "every value must be finite and > 0")
        for name in ("num_nodes", "num_replicas"):
            values = getattr(self, name)
            if not np.all(np.isfinite(values)) or np.any(values != np.floor(values)):
                raise InvalidInstanceError(name, "every value must be a whole number")
        if np.any(self.num_nodes < 1) or np.any(self.num_replicas < self.num_nodes):
            raise InvalidInstanceError("num_replicas", "needs 1 <= num_nodes <= num_replicas")

    @classmethod
    def of(
        cls,
        num_nodes: Sequence[float] | FloatArray,
        num_replicas: Sequence[float] | FloatArray,
        atomic_bsz: Sequence[float] | FloatArray,
        compute_time: Sequence[float] | FloatArray,
        step_time: Sequence[float] | FloatArray,
    ) -> StepMeasurements:
        """Measurements from sequences (converted to float arrays)."""

        def arr(x: Sequence[float] | FloatArray) -> FloatArray:
            return np.asarray(x, dtype=np.float64).reshape(-1)

        return cls(arr(num_nodes), arr(num_replicas), arr(atomic_bsz), arr(compute_time),
                   arr(step_time))  # fmt: skip


def fit_bounds(data: StepMeasurements) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The start point and the box ``(start, lower, upper)`` of the fit, with pinned entries.

    A pinned parameter has ``lower == upper`` (and its start there): see the module notes.
    """
    start = _START.copy()
    lower = np.array([LOWER] * 6 + [1.0])
    upper = np.array([np.inf] * 6 + [_GAMMA_MAX])
    if len(np.unique(data.atomic_bsz)) == 1:
        start[0] = lower[0] = upper[0] = float(np.mean(data.compute_time)) / 2.0
    pinned: list[int] = []
    if not np.any(data.num_nodes > 1):
        pinned += [2, 3]
    if not np.any((data.num_nodes == 1) & (data.num_replicas > 1)):
        pinned += [4, 5]
    if not np.any(data.num_replicas > 2):
        pinned += [3, 5]
    for i in pinned:
        start[i] = upper[i] = lower[i]
    return start, lower, upper


def objective(theta: FloatArray, data: StepMeasurements) -> tuple[float, FloatArray]:
    r"""The fit's loss :math:`L(\theta)` and its gradient (see the module notes).

    Returns
    -------
    (float, ndarray)
        :math:`L` and :math:`\nabla L` (7 entries, in the order of :data:`PARAM_NAMES`).

    Notes
    -----
    With :math:`a_i = T_\mathrm{grad}(m_i)`, :math:`b_i = T_\mathrm{sync}(N_i, K_i)` and
    :math:`S_i = a_i^\gamma + b_i^\gamma`, :math:`\ell_i = \log S_i / \gamma` has
    :math:`\partial \ell_i / \partial a_i = a_i^{\gamma-1}/S_i`,
    :math:`\partial \ell_i / \partial b_i = b_i^{\gamma-1}/S_i` and
    :math:`\partial \ell_i / \partial\gamma
    = (a_i^\gamma \log a_i + b_i^\gamma \log b_i)/(\gamma S_i) - \ell_i/\gamma`;
    an RMS :math:`\sqrt{\bar{r^2}}` has gradient
    :math:`\overline{r\, \partial r} / \sqrt{\bar{r^2}}`.
    A single replica has :math:`b_i = 0` (no all-reduce), whose terms vanish.
    :math:`O(n)`.
    """
    ac, bc, an, bn, ar, br, g = (float(v) for v in theta)
    n = data.num_nodes
    k = data.num_replicas
    m = data.atomic_bsz
    a = ac + bc * m
    extra = np.maximum(k - 2.0, 0.0)
    across = n > 1
    within = (n == 1) & (k > 1)
    b = np.where(across, an + bn * extra, np.where(within, ar + br * extra, 0.0))
    # a^g and b^g relative to a^g, so no power overflows; log S = g log a + log(1 + (b/a)^g)
    ratio = np.where(b > 0, (b / a) ** g, 0.0)
    log_a = np.log(a)
    log_b = np.log(np.where(b > 0, b, 1.0))
    ell = log_a + np.log1p(ratio) / g
    r1 = log_a - np.log(data.compute_time)
    r2 = ell - np.log(data.step_time)
    e1 = float(np.sqrt(np.mean(r1**2)))
    e2 = float(np.sqrt(np.mean(r2**2)))
    loss = e1 + e2 + _regularizers(g, an, bn, ar, br)
    # derivatives of ell: weights of a and b in S (wa + wb = 1)
    wb = ratio / (1.0 + ratio)
    wa = 1.0 - wb
    d_ell_da = wa / a
    d_ell_db = np.where(b > 0, wb / np.where(b > 0, b, 1.0), 0.0)
    d_ell_dg = (wa * log_a + wb * log_b) / g - ell / g
    d_ell = (d_ell_da, d_ell_db, d_ell_dg)
    return loss, _gradient(theta, (r1, e1, r2, e2), (a, m), d_ell, (across, within, extra))


def objective_floored(
    theta: FloatArray, data: StepMeasurements, floor: float = LOWER
) -> tuple[float, FloatArray]:
    r"""The loss and gradient of :func:`objective` with the artifacts' floored network time.

    The artifacts' simulators (``_predict_network_time`` of Pollux's and Sia's ``goodput.py``)
    give a single replica the sync time :math:`f + f \cdot f` (:math:`f = 10^{-8}`, both
    ``np.select`` defaults) rather than none, and count the retrogression rounds as
    :math:`\max(K - 2, f)` rather than :math:`\max(K - 2, 0)`:

    .. math::

       T_\mathrm{sync}(N, K) = \alpha + \beta \max(K - 2, f),\quad
       (\alpha, \beta) = (\alpha_n, \beta_n) \text{ if } N > 1,\
       (\alpha_r, \beta_r) \text{ if } N = 1 < K,\ (f, f) \text{ if } K = 1,

    and :math:`\ell_i = \log(a_i^\gamma + b_i^\gamma) / \gamma` evaluated as written. The
    loss differs from :func:`objective`'s by :math:`O(f)`, but L-BFGS-B at Sia's ``tol=1e-5``
    follows it to different stopping points (the loss is flat along the network parameters):
    on Sia's recorded profiles of its Pollux run, the unfloored fit parts from Sia's in two
    thirds of the fits, the floored one in one in twelve (:file:`benchmarks/_sia_pollux_fit.py`).
    The gradient is that of :func:`objective`'s notes with :math:`b_i > 0` everywhere.
    :math:`O(n)`.
    """
    ac, bc, an, bn, ar, br, g = (float(v) for v in theta)
    n = data.num_nodes
    k = data.num_replicas
    m = data.atomic_bsz
    a = ac + bc * m
    across = n > 1
    within = (n == 1) & (k > 1)
    extra = np.maximum(k - 2.0, floor)
    b = (
        np.where(across, an, np.where(within, ar, floor))
        + np.where(across, bn, np.where(within, br, floor)) * extra
    )
    a_g, b_g = a**g, b**g
    s = a_g + b_g
    ell = np.log(s) / g
    r1 = np.log(a) - np.log(data.compute_time)
    r2 = ell - np.log(data.step_time)
    e1 = float(np.sqrt(np.mean(r1**2)))
    e2 = float(np.sqrt(np.mean(r2**2)))
    loss = e1 + e2 + _regularizers(g, an, bn, ar, br)
    d_ell_da = a_g / (a * s)
    d_ell_db = b_g / (b * s)
    d_ell_dg = (a_g * np.log(a) + b_g * np.log(b)) / (g * s) - ell / g
    d_ell = (d_ell_da, d_ell_db, d_ell_dg)
    return loss, _gradient(theta, (r1, e1, r2, e2), (a, m), d_ell, (across, within, extra))


def _regularizers(g: float, an: float, bn: float, ar: float, br: float) -> float:
    """The two regularizers' value (the pull of gamma to 1, the retrogression penalty)."""
    return _REG_GAMMA * (g - 1.0) ** 2 + _REG_RETRO * ((bn / an) ** 2 + (br / ar) ** 2)


@functools.cache
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _single_threaded_blas() -> Any:
    """A context in which BLAS runs on one thread (threadpoolctl's limit, undone on exit)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def fit_throughput(
    data: StepMeasurements, tol: float | None = None, *, floored: bool = False
) -> ThroughputParams:
    r"""Fit :math:`\theta_\mathrm{sys}` to measured step times (see the module notes).

    Parameters
    ----------
    data : StepMeasurements
        One or more measured configurations of one job type.
    tol : float, optional
        scipy's ``minimize(tol=...)`` (L-BFGS-B's ``ftol`` and ``gtol``); default scipy's own.
        Sia's simulator fits with ``tol=1e-5`` (its ``goodput.py``), Pollux's with the default.
    floored : bool
        Minimize :func:`objective_floored` (the artifacts' network time, floored at
        :data:`LOWER`) instead of :func:`objective`; default off, the fit of every world but
        Sia's heterogeneity-unaware Pollux.

    Returns
    -------
    ThroughputParams
        The L-BFGS-B minimizer of :math:`L` in the box, then the network prior when no
        measurement spans nodes.

    Notes
    -----
    Each iteration costs :math:`O(n)` for :math:`n` measurements; L-BFGS-B stops at scipy's
    default tolerances (the artifact's too), which the cross-check against it relies on.
    """
    from scipy.optimize import Bounds, minimize

    start, lower, upper = fit_bounds(data)
    # Seven parameters and a handful of measurements: BLAS threads only spin. Under the default
    # threading one fit took 14x the CPU time on a loaded 2-core machine (400 ms against 28).
    with _single_threaded_blas():
        result = minimize(
            objective_floored if floored else objective,
            start,
            args=(data,),
            jac=True,
            method="L-BFGS-B",
            bounds=Bounds(lower, upper, keep_feasible=True),
            tol=tol,
        )
    theta = np.clip(np.asarray(result.x, dtype=np.float64), lower, upper)
    if not np.any(data.num_nodes > 1):
        theta[2] = max(theta[2], theta[4] * _PRIOR)
        theta[3] = max(theta[3], theta[5] * _PRIOR)
    return ThroughputParams(**dict(zip(PARAM_NAMES, (float(v) for v in theta), strict=True)))


def _gradient(
    theta: FloatArray,
    residuals: tuple[FloatArray, float, FloatArray, float],
    am: tuple[FloatArray, FloatArray],
    d_ell: tuple[FloatArray, FloatArray, FloatArray],
    masks: tuple[Any, Any, FloatArray],
) -> FloatArray:
    """The gradient of the loss from its residuals and the derivatives of ``ell``.

    Shared by :func:`objective` and :func:`objective_floored`, which differ only in how they
    form ``b`` and so ``ell``'s derivatives: ``residuals = (r1, e1, r2, e2)`` the two residual
    vectors and their root mean squares, ``am = (a, m)``, ``d_ell`` the derivatives of ``ell``
    in ``a``, ``b`` and ``gamma``, ``masks = (across, within, extra)``; ``theta`` gives the
    regularizers' terms. :math:`O(n)`.
    """
    r1, e1, r2, e2 = residuals
    count = float(len(r1))
    c1 = r1 / (count * e1) if e1 > 0 else np.zeros_like(r1)
    c2 = r2 / (count * e2) if e2 > 0 else np.zeros_like(r2)
    a, m = am
    d_ell_da, d_ell_db, d_ell_dg = d_ell
    across, within, extra = masks
    _, _, an, bn, ar, br, g = (float(v) for v in theta)
    grad = np.zeros(7)
    grad[0] = np.sum(c1 / a) + np.sum(c2 * d_ell_da)
    grad[1] = np.sum(c1 * m / a) + np.sum(c2 * d_ell_da * m)
    grad[2] = np.sum(c2 * d_ell_db * across)
    grad[3] = np.sum(c2 * d_ell_db * across * extra)
    grad[4] = np.sum(c2 * d_ell_db * within)
    grad[5] = np.sum(c2 * d_ell_db * within * extra)
    grad[6] = np.sum(c2 * d_ell_dg) + 2.0 * _REG_GAMMA * (g - 1.0)
    grad[2] += -2.0 * _REG_RETRO * bn**2 / an**3
    grad[3] += 2.0 * _REG_RETRO * bn / an**2
    grad[4] += -2.0 * _REG_RETRO * br**2 / ar**3
    grad[5] += 2.0 * _REG_RETRO * br / ar**2
    return grad
