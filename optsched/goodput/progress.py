r"""How a job of the goodput world progresses, read from its type's measurements.

A job's progress :math:`P` is counted in :math:`M_0`-iterations: iterations at its initial
batch, each later iteration at batch :math:`M` counting as :math:`G(M)` of them
(:func:`~optsched.goodput.efficiency.gain`). At a configuration held for :math:`\Delta t`
seconds,

.. math::

   \Delta P = \frac{G_e(M)\,\Delta t}
   {T_\mathrm{step}(p, m) + s\,(T_\mathrm{step}(p, m) - T_\mathrm{sync}(p, m))}
   = \frac{\mathrm{GOODPUT}}{M_0}\,\Delta t,

where :math:`p` is the placement, :math:`T_\mathrm{step}` and :math:`T_\mathrm{sync}` are the
*measured* step and all-reduce times (:func:`measured_step_time`), and :math:`G_e` uses the
gradient statistics of the job's current epoch :math:`e`. The epoch is read off the validation
runs: epoch :math:`e` ends at progress :math:`P_e = \min_M \mathrm{progress}_M[e-1]` (the
earliest any measured batch got there, :func:`progress_at_epoch`), and a job at progress
:math:`P` is in epoch :math:`\max_M |\{e: \mathrm{progress}_M[e] \le P\}|`
(:func:`epoch_at_progress`); it is done after epoch ``max_epochs - 1``, at progress
:math:`P_\mathrm{max\_epochs}`. The statistics at a batch between two measured ones are
interpolated linearly in the batch (:func:`gradient_stats`), as the artifact's simulator does
(Qiao et al., OSDI'21, §5.3 "Simulator construction").

The measured times of a placement that was measured are interpolated linearly in the per-GPU
batch; those of an unmeasured placement linearly (Delaunay, over ``(num_nodes, num_replicas,
local_bsz)``) among the means of the measured placements with the same counts and the
``scalability.csv`` points. Placements are compared up to rotation (``"13"`` is ``"31"``), and
more than 16 nodes count as 16 (the largest measured).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements
from optsched.goodput.traces import ModelTraces

__all__ = [
    "MAX_INTERPOLATED_NODES",
    "epoch_at_progress",
    "gradient_stats",
    "measured_step_time",
    "measurements",
    "normalize_placement",
    "progress_at_epoch",
    "progress_rate",
]

#: Nodes beyond which an unmeasured placement is read as this many (the traces' largest).
MAX_INTERPOLATED_NODES = 16


def measurements(traces: ModelTraces) -> StepMeasurements:
    """Every ``placements.csv`` row as a fitting point (compute time = step - sync time)."""
    return StepMeasurements.of(
        traces.num_nodes,
        traces.num_replicas,
        traces.local_bsz,
        traces.step_time - traces.sync_time,
        traces.step_time,
    )


def epoch_at_progress(traces: ModelTraces, progress: float) -> int:
    """The epoch a job at ``progress`` is in (see the module notes)."""
    return max(
        int(np.searchsorted(run.progress, progress, side="right"))
        for run in traces.validation.values()
    )


def progress_at_epoch(traces: ModelTraces, epoch: int) -> float:
    """Progress at which ``epoch`` starts: 0 for epoch 0, else the earliest end of ``epoch - 1``."""
    if epoch < 0:
        raise InvalidInstanceError("epoch", f"must be >= 0, got {epoch}")
    if epoch == 0:
        return 0.0
    runs = traces.validation.values()
    if any(epoch > len(run) for run in runs):
        raise InvalidInstanceError("epoch", f"{epoch} is past a validation run's last epoch")
    return float(min(run.progress[epoch - 1] for run in runs))


def _bracket(traces: ModelTraces, batch_size: float) -> tuple[int, int]:
    sizes = list(traces.validation)
    if not sizes[0] <= batch_size <= sizes[-1]:
        raise InvalidInstanceError(
            "batch_size", f"{batch_size:g} is outside the validated range [{sizes[0]}, {sizes[-1]}]"
        )
    lower = max(b for b in sizes if b <= batch_size)
    upper = min(b for b in sizes if b >= batch_size)
    return lower, upper


def gradient_stats(traces: ModelTraces, batch_size: float, epoch: int) -> GradientStats:
    """Gradient statistics of ``epoch`` at global batch ``batch_size`` (linear in the batch)."""
    lower, upper = _bracket(traces, batch_size)
    lo, hi = traces.validation[lower], traces.validation[upper]
    if not 0 <= epoch < min(len(lo), len(hi)):
        raise InvalidInstanceError("epoch", f"{epoch} is outside the validation runs")
    if lower == upper:
        return GradientStats(float(lo.grad_sqr[epoch]), float(lo.grad_var[epoch]))
    # ((b - l) * upper + (h - b) * lower) / (h - l): the two-point form the artifact evaluates
    sqr = (
        (batch_size - lower) * hi.grad_sqr[epoch] + (upper - batch_size) * lo.grad_sqr[epoch]
    ) / (upper - lower)
    var = (
        (batch_size - lower) * hi.grad_var[epoch] + (upper - batch_size) * lo.grad_var[epoch]
    ) / (upper - lower)
    return GradientStats(float(sqr), float(var))


def normalize_placement(placement: tuple[int, ...] | str) -> str:
    """The placement's lexicographically smallest rotation without empty nodes, as digits."""
    parts = tuple(int(d) for d in placement) if isinstance(placement, str) else tuple(placement)
    parts = tuple(p for p in parts if p)
    if not parts or any(p < 0 or p > 9 for p in parts):
        raise InvalidInstanceError("placement", f"must be 1-9 GPUs on each node, got {placement}")
    best = min(parts[i:] + parts[:i] for i in range(len(parts)))
    return "".join(str(p) for p in best)


#: Interpolators built per traces object: id -> (weak reference, interpolators).
_CACHE: dict[int, tuple[weakref.ref[ModelTraces], tuple[dict[str, Any], Any, dict[Any, Any]]]] = {}


def _interpolators(traces: ModelTraces) -> tuple[dict[str, Any], Any, dict[Any, Any]]:
    hit = _CACHE.get(id(traces))
    if hit is not None and hit[0]() is traces:
        return hit[1]
    built = _build_interpolators(traces)
    _CACHE[id(traces)] = (weakref.ref(traces), built)
    return built


def _build_interpolators(traces: ModelTraces) -> tuple[dict[str, Any], Any, dict[Any, Any]]:
    from scipy.interpolate import LinearNDInterpolator

    by_placement: dict[str, list[int]] = {}
    for i, p in enumerate(traces.placement):
        by_placement.setdefault(p, []).append(i)
    exact = {}
    for p, idx in by_placement.items():
        order = np.argsort(traces.local_bsz[idx], kind="stable")
        rows = np.asarray(idx)[order]
        exact[p] = (traces.local_bsz[rows], traces.step_time[rows], traces.sync_time[rows])
    # means of the measured points with equal (nodes, replicas, local_bsz), sorted by key,
    # then the scalability points in file order
    keys = np.stack([traces.num_nodes, traces.num_replicas, traces.local_bsz], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    step = np.bincount(inverse, traces.step_time) / np.bincount(inverse)
    sync = np.bincount(inverse, traces.sync_time) / np.bincount(inverse)
    scal = traces.scalability
    points = np.concatenate(
        [uniq, np.stack([scal["num_nodes"], scal["num_replicas"], scal["local_bsz"]], axis=1)]
    )
    values = np.concatenate(
        [np.stack([step, sync], axis=1), np.stack([scal["step_time"], scal["sync_time"]], axis=1)]
    )
    # the last dict memoizes the N-d interpolation (about 2 ms a call) by its query point
    return exact, LinearNDInterpolator(points, values), {}


def measured_step_time(
    traces: ModelTraces, placement: tuple[int, ...] | str, local_bsz: float
) -> tuple[float, float]:
    """Measured ``(step_time, sync_time)`` of a placement at per-GPU batch ``local_bsz``.

    Raises
    ------
    InvalidInstanceError
        When the configuration lies outside what the measurements cover.
    """
    key = normalize_placement(placement)
    exact, nd, memo = _interpolators(traces)
    if key in exact:
        xs, step, sync = exact[key]
        if not xs[0] <= local_bsz <= xs[-1]:
            raise InvalidInstanceError(
                "local_bsz", f"{local_bsz:g} is outside the measured [{xs[0]:g}, {xs[-1]:g}] "
                f"of placement {key}"
            )  # fmt: skip
        return float(np.interp(local_bsz, xs, step)), float(np.interp(local_bsz, xs, sync))
    nodes = min(len(key), MAX_INTERPOLATED_NODES)
    replicas = sum(int(d) for d in key)
    point = (nodes, replicas, float(local_bsz))
    hit = memo.get(point)
    if hit is None:
        out = np.asarray(nd(list(point)))[0]
        hit = memo[point] = (float(out[0]), float(out[1]))
    if not (math.isfinite(hit[0]) and math.isfinite(hit[1])):
        raise InvalidInstanceError(
            "placement", f"{key} at local_bsz {local_bsz:g} is outside the measurements"
        )
    return hit


def progress_rate(
    traces: ModelTraces,
    placement: tuple[int, ...] | str,
    atomic_bsz: int,
    accum_steps: int,
    epoch: int,
) -> float:
    r"""Progress per second at a configuration held in epoch ``epoch`` (module notes).

    :math:`G_e(M) / (T_\mathrm{step} + s(T_\mathrm{step} - T_\mathrm{sync}))`.

    With :math:`M = K m (s + 1)` for the placement's :math:`K` GPUs (module notes).
    """
    from optsched.goodput.efficiency import gain

    key = normalize_placement(placement)
    replicas = sum(int(d) for d in key)
    batch = replicas * atomic_bsz * (accum_steps + 1)
    step, sync = measured_step_time(traces, key, atomic_bsz)
    stats = gradient_stats(traces, batch, epoch)
    g = float(gain(stats, float(min(traces.validation)), batch))
    return g / (step + accum_steps * (step - sync))
