r"""Fitting Optimus's models to observations by bounded least squares.

The solver is :func:`scipy.optimize.least_squares` (trust-region reflective, bounds
:math:`\ge 0`).

**Speed** (:func:`fit_speed`). Each observation is :math:`(p_i, w_i, t_i)`: PSs, workers and the
measured step time. Every speed model of :mod:`optsched.allocation.optimus.models` is linear in
:math:`\theta` as a step time, :math:`t(p, w) = x(p, w)^\top\theta`, so the fit minimises the
*relative* residuals

.. math::

    \min_{\theta \ge 0}\ \sum_i \big( (x_i^\top \theta - t_i) / t_i \big)^2,

a bounded linear least-squares problem (convex; its minimiser is unique when the design
:math:`X` has full column rank, which is checked: the fit refuses points that cannot determine
:math:`\theta`). Relative residuals weigh a 10 ms step and a 1 s step alike. Optimus fits the
speed itself with ``curve_fit``; on noise-free points both recover the same :math:`\theta`.

**Convergence** (:func:`fit_convergence`). Observations :math:`(k_i, \ell_i)`, minimise

.. math::

    \min_{\beta \ge 0}\ \sum_i \omega_i^2 \big(\ell(k_i; \beta) - \ell_i\big)^2,

non-convex in :math:`\beta`. With :math:`c = \beta_0/\beta_1` and :math:`A = 1/\beta_1` the
curve is :math:`\beta_2 + A/(1 + ck)`, linear in :math:`(A, \beta_2) \ge 0` for a fixed shape
:math:`c`; a log grid of :math:`c` with a two-column nonnegative least squares at each point
(variable projection) seeds ``least_squares`` (trust-region reflective, bounds
:math:`\beta \ge 0`), which refines the best few seeds; the best result is kept. The weights
are Optimus's: the points, in step order, are cut into three segments and each segment's
:math:`\sigma` is a quarter of the previous one's (:math:`\omega = 1, 4, 16`), so recent points
count more.

Both return the coefficients with the residuals, the cost and the root mean square error.
Complexity: :math:`O(n\,N\!\_\theta^2)` per iteration for :math:`n` points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.allocation.optimus.models import N_THETA, SpeedKind, loss_curve, step_design
from optsched.errors import InvalidInstanceError

__all__ = [
    "MIN_CONVERGENCE_POINTS",
    "ConvergenceFit",
    "SpeedFit",
    "fit_convergence",
    "fit_speed",
]

#: Fewest distinct steps :func:`fit_convergence` accepts (one per coefficient).
MIN_CONVERGENCE_POINTS = 3
#: Points of the shape scan that seeds the convergence fit, over c = beta_0/beta_1 (steps scaled
#: to [0, 1]) from 10^_SHAPE_MIN (almost linear) to 10^_SHAPE_MAX (a drop within the first
#: 10^-5 of the steps).
_SCAN = 91
_SHAPE_MIN = -4.0
_SHAPE_MAX = 5.0
#: least_squares stops when a step changes the cost or x by less than this (relative): far below
#: the tolerances the tests ask of a recovered parameter.
_LSQ_TOL = 1e-14
#: Seeds of the convergence fit refined by least_squares (the problem is not convex).
_STARTS = 6
#: Lower bound on the scaled beta_1 (the loss at step 0 must be finite).
_BETA1_FLOOR = 1e-12
#: Function evaluations allowed to least_squares (its iterations are bounded by this).
_MAX_NFEV = 2000


@dataclass(frozen=True)
class SpeedFit:
    r"""A fitted speed model.

    Attributes
    ----------
    kind : {"async", "sync", "colocated"}
    theta : tuple of float
        The coefficients (nonnegative).
    batch : float
        :math:`M` of the ``sync`` model (1 otherwise).
    residuals : ndarray
        Relative residuals :math:`(x_i^\top\theta - t_i)/t_i` at the points.
    cost : float
        Half the sum of squared residuals (``least_squares``'s cost).
    """

    kind: SpeedKind
    theta: tuple[float, ...]
    batch: float
    residuals: NDArray[np.float64]
    cost: float

    @property
    def rmse(self) -> float:
        """Root mean square relative residual."""
        return float(np.sqrt(np.mean(self.residuals**2))) if self.residuals.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "kind": self.kind,
            "theta": list(self.theta),
            "batch": self.batch,
            "cost": self.cost,
            "rmse": self.rmse,
        }

    def __repr__(self) -> str:
        theta = ", ".join(f"{v:.4g}" for v in self.theta)
        return f"SpeedFit({self.kind}, theta=({theta}), rmse={self.rmse:.3g})"


@dataclass(frozen=True)
class ConvergenceFit:
    r"""A fitted convergence curve :math:`\ell(k) = 1/(\beta_0 k + \beta_1) + \beta_2`.

    Attributes
    ----------
    beta : tuple of float
        :math:`(\beta_0, \beta_1, \beta_2)`, nonnegative.
    residuals : ndarray
        Unweighted residuals :math:`\ell(k_i) - \ell_i`.
    cost : float
        Half the sum of squared *weighted* residuals (what was minimised).
    """

    beta: tuple[float, float, float]
    residuals: NDArray[np.float64]
    cost: float

    @property
    def rmse(self) -> float:
        """Root mean square residual (loss units)."""
        return float(np.sqrt(np.mean(self.residuals**2))) if self.residuals.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"beta": list(self.beta), "cost": self.cost, "rmse": self.rmse}

    def __repr__(self) -> str:
        beta = ", ".join(f"{v:.4g}" for v in self.beta)
        return f"ConvergenceFit(beta=({beta}), rmse={self.rmse:.3g})"


def _rows(points: Sequence[Sequence[float]], width: int, names: tuple[str, ...]) -> NDArray[Any]:
    """The points as a float array, every entry finite, or a field-named error."""
    from optsched import limits

    if isinstance(points, (str, bytes)) or not hasattr(points, "__len__"):
        raise InvalidInstanceError("points", "must be a sequence of tuples")
    limits.check_size("points", float(len(points)) * width, "max_array_cells")
    out = np.empty((len(points), width), dtype=np.float64)
    for i, point in enumerate(points):
        if isinstance(point, (str, bytes)) or not hasattr(point, "__len__") or len(point) != width:
            raise InvalidInstanceError(f"points[{i}]", f"must be a tuple {names}")
        for j, name in enumerate(names):
            value = point[j]
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise InvalidInstanceError(
                    f"points[{i}].{name}", f"must be a number, got {value!r}"
                )
            if not math.isfinite(float(value)):
                raise InvalidInstanceError(f"points[{i}].{name}", f"must be finite, got {value}")
            out[i, j] = float(value)
    return out


def fit_speed(
    points: Sequence[Sequence[float]], kind: SpeedKind = "async", *, batch: float = 1.0
) -> SpeedFit:
    """Fit a speed model to measured ``(ps, workers, step_seconds)`` points.

    Parameters
    ----------
    points : sequence of (ps, workers, step_seconds)
        Integers ``ps >= 1`` (ignored for ``colocated``) and ``workers >= 1``, and the measured
        seconds of one step (per worker for ``async``, per global step otherwise), ``> 0``.
    kind : {"async", "sync", "colocated"}
    batch : float
        Global batch size :math:`M` (``sync`` only).

    Returns
    -------
    SpeedFit

    Raises
    ------
    InvalidInstanceError
        Unknown ``kind``; fewer points than coefficients; a count not an integer >= 1, a time
        not finite and > 0; points that do not determine the coefficients (rank-deficient
        design: e.g. every point with the same ``w/p``).

    Examples
    --------
    >>> pts = [(p, w, 0.1 + 0.05 * w / p + 0.01 * w + 0.002 * p)
    ...        for p, w in [(1, 1), (1, 2), (2, 2), (2, 4), (4, 2), (1, 4)]]
    >>> [round(v, 6) for v in fit_speed(pts, "async").theta]
    [0.1, 0.05, 0.01, 0.002]
    """
    from scipy.optimize import least_squares

    if kind not in N_THETA:
        raise InvalidInstanceError("kind", f"must be one of {sorted(N_THETA)}, got {kind!r}")
    if not (math.isfinite(batch) and batch > 0):
        raise InvalidInstanceError("batch", f"must be a finite number > 0, got {batch!r}")
    n = N_THETA[kind]
    data = _rows(points, 3, ("ps", "workers", "step_seconds"))
    if data.shape[0] < n:
        raise InvalidInstanceError(
            "points", f"the {kind} model has {n} coefficients; got {data.shape[0]} point(s)"
        )
    for i, (p, w, t) in enumerate(data):
        for name, v in (("ps", p), ("workers", w)):
            if v < 1 or v != math.floor(v):
                raise InvalidInstanceError(
                    f"points[{i}].{name}", f"must be an integer >= 1, got {v}"
                )
        if t <= 0:
            raise InvalidInstanceError(f"points[{i}].step_seconds", f"must be > 0, got {t}")
    x = step_design(kind, data[:, 0], data[:, 1], batch)
    t = data[:, 2]
    a = x / t[:, None]  # relative residual = a @ theta - 1
    if np.linalg.matrix_rank(a) < n:
        raise InvalidInstanceError(
            "points",
            f"do not determine the {n} coefficients of the {kind} model (rank-deficient design); "
            "measure more distinct (ps, workers) combinations",
        )
    # Start from the unconstrained solution clipped to the bounds (exact when it is feasible).
    start = np.clip(np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0], 0.0, None)
    res = least_squares(
        lambda th: a @ th - 1.0,
        start,
        jac=lambda th: a,
        bounds=(0.0, np.inf),
        method="trf",
        x_scale="jac",
        ftol=_LSQ_TOL,
        xtol=_LSQ_TOL,
        gtol=_LSQ_TOL,
        max_nfev=_MAX_NFEV,
    )
    theta = np.clip(res.x, 0.0, None)
    return SpeedFit(
        kind=kind,
        theta=tuple(float(v) for v in theta),
        batch=float(batch),
        residuals=a @ theta - 1.0,
        cost=float(0.5 * np.sum((a @ theta - 1.0) ** 2)),
    )


def optimus_weights(n: int) -> NDArray[np.float64]:
    """Optimus's weights of ``n`` points in step order: 1, 4, 16 over three equal segments."""
    segment = np.minimum((3 * np.arange(n)) // max(n, 1), 2)
    return np.asarray(4.0**segment, dtype=np.float64)


def fit_convergence(points: Sequence[Sequence[float]], *, weighted: bool = True) -> ConvergenceFit:
    r"""Fit :math:`\ell(k) = 1/(\beta_0 k + \beta_1) + \beta_2` to ``(step, loss)`` points.

    Parameters
    ----------
    points : sequence of (step, loss)
        Steps finite and ``>= 0`` (at least three distinct), losses finite and ``> 0`` (the
        model with :math:`\beta \ge 0` is positive).
    weighted : bool
        Optimus's weights (later points count more, see the module notes); else uniform.

    Returns
    -------
    ConvergenceFit

    Raises
    ------
    InvalidInstanceError
        Too few distinct steps, a NaN/infinite value, a negative step, a nonpositive loss.

    Examples
    --------
    >>> pts = [(k, 1.0 / (0.01 * k + 0.5) + 0.2) for k in range(0, 500, 25)]
    >>> [round(v, 6) for v in fit_convergence(pts).beta]
    [0.01, 0.5, 0.2]
    """
    from scipy.optimize import least_squares, nnls

    data = _rows(points, 2, ("step", "loss"))
    for i, (k, loss) in enumerate(data):
        if k < 0:
            raise InvalidInstanceError(f"points[{i}].step", f"must be >= 0, got {k}")
        if loss <= 0:
            raise InvalidInstanceError(f"points[{i}].loss", f"must be > 0, got {loss}")
    if np.unique(data[:, 0]).size < MIN_CONVERGENCE_POINTS:
        raise InvalidInstanceError(
            "points",
            f"need at least {MIN_CONVERGENCE_POINTS} distinct steps, got "
            f"{np.unique(data[:, 0]).size}",
        )
    data = data[np.argsort(data[:, 0], kind="stable")]
    k, loss = data[:, 0], data[:, 1]
    omega = optimus_weights(k.size) if weighted else np.ones(k.size)
    # Scale so that the coefficients are of order 1 for the solver: steps by the largest step,
    # losses by the largest loss. beta_0 then comes back divided by the step scale.
    ks = float(k.max()) if k.max() > 0 else 1.0
    ls = float(loss.max())
    kn, ln = k / ks, loss / ls

    def residuals(b: NDArray[np.float64]) -> NDArray[np.float64]:
        return omega * (1.0 / (b[0] * kn + b[1]) + b[2] - ln)

    def jacobian(b: NDArray[np.float64]) -> NDArray[np.float64]:
        d = -1.0 / (b[0] * kn + b[1]) ** 2
        return np.column_stack([omega * d * kn, omega * d, omega])

    # Seeds by variable projection: with c = beta_0 / beta_1 and A = 1 / beta_1 the curve is
    # l = beta_2 + A / (1 + c k), linear in (A, beta_2) >= 0 for a fixed shape c. A log grid of
    # c with a two-column nonnegative least squares at each point maps the one nonlinear
    # direction; the best few points seed the bounded refinement of all three coefficients.
    seeds: list[tuple[float, NDArray[np.float64]]] = []
    for c in np.logspace(_SHAPE_MIN, _SHAPE_MAX, _SCAN):
        g = 1.0 / (1.0 + c * kn)
        coef, _ = nnls(np.column_stack([omega * g, omega]), omega * ln)
        if coef[0] <= 0:
            continue  # a flat curve: no finite beta_1
        b = np.array([c / coef[0], 1.0 / coef[0], coef[1]])
        seeds.append((float(np.sum(residuals(b) ** 2)), b))
    if not seeds:  # every shape fits best flat: start from the flattest real curve
        seeds.append((math.inf, np.array([0.0, 1.0 / max(float(ln.max()), 1e-12), 0.0])))
    seeds.sort(key=lambda item: item[0])
    best: tuple[float, NDArray[np.float64]] | None = None
    for _, seed in seeds[:_STARTS]:
        res = least_squares(
            residuals,
            seed,
            jac=jacobian,
            bounds=([0.0, _BETA1_FLOOR, 0.0], [np.inf, np.inf, np.inf]),
            method="trf",
            ftol=_LSQ_TOL,
            xtol=_LSQ_TOL,
            gtol=_LSQ_TOL,
            max_nfev=_MAX_NFEV,
        )
        if best is None or res.cost < best[0]:
            best = (float(res.cost), res.x)
    assert best is not None
    b = best[1]
    # Undo the scaling: l = ls * (1/(b0 k/ks + b1) + b2) = 1/((b0/(ls ks)) k + b1/ls) + ls b2.
    beta = (float(b[0] / (ls * ks)), float(b[1] / ls), float(b[2] * ls))
    fitted = loss_curve(beta, k)
    return ConvergenceFit(
        beta=beta,
        residuals=fitted - loss,
        cost=float(0.5 * np.sum((omega * (fitted - loss)) ** 2)),
    )
