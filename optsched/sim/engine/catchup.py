r"""The lazy-progress catch-up: a job's progress replayed over the decision points it missed.

Under lazy progress (:mod:`optsched.sim.engine.progress`) a running job's ``done``,
``attained_service`` and ``executed_seconds`` are brought up to date when read, by replaying,
with the arithmetic of the eager update at every decision point, the decision points
``t_k > prev`` it missed: for each step :math:`\Delta = t_k - t_{k-1}` (the first from
``prev``), while restore time :math:`o` is left

.. math::

    d \leftarrow \min(W, d + r \max(0, \Delta - o)), \quad o \leftarrow \max(0, o - \Delta),
    \quad a \leftarrow a + g \Delta, \quad e \leftarrow e + \Delta,

and without restore time left :math:`d \leftarrow d + r \Delta` (clamped to the work :math:`W`
once at the end: every increment is :math:`\ge 0`, so the running sum, once at or above the
work, stays there), for rate :math:`r` and :math:`g` GPUs. The steps after the first are the gaps
between decision points, recorded once and shared by every catch-up.

Two implementations give the same values bit for bit (the tests check them against each other
and against the eager update on random worlds):

* :func:`catch_up`, plain Python (with array accumulations over long stretches): the reference;
* :func:`catch_up_kernel`, the same loop (:func:`catch_up_loop`) compiled by Numba (no
  ``fastmath``: the same IEEE operations in the same order, no contraction into fused
  multiply-adds), which the engine switches to once a run has replayed :data:`KERNEL_STEPS`
  steps, so that short runs never load Numba (it is imported on first use).

**Cost** (Tiresias-LAS on ElasticFlow's cluster04, 15,802 jobs: 160,814 catch-ups over 6.85
million steps, 43 per catch-up): 3.35 us per 43-step catch-up in Python, 0.55 us compiled (the
call; the engine keeps float64 copies of the times and gaps for it), 0.22 CPU s to load the
cached kernel once per process, and 0.14 s to import Numba first. The catch-up is short on
average: much of its time is the engine's work around it (finding the first step, reading and
writing the job's state), which the kernel does not remove.

Complexity: :math:`O(s)` for :math:`s` steps replayed (the engine finds the first one by
bisection, :math:`O(\log K)` for :math:`K` decision points so far).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "KERNEL_STEPS",
    "VECTOR_STEPS",
    "catch_up",
    "catch_up_kernel",
    "catch_up_loop",
    "loaded_kernel",
]

#: A catch-up over at least this many missed decision points runs as array accumulations in
#: :func:`catch_up` (below it, the plain loop over the shared gaps is the faster).
VECTOR_STEPS = 96

#: The engine catches up with the compiled kernel once a run has replayed this many steps in
#: Python (about 0.08 us each, 0.5 CPU s in all: what importing Numba, about 0.14 s, and
#: loading the cached kernel, 0.22-0.45 s, cost together, since ``import optsched.sim`` loads no
#: Numba), or
#: from its start when an earlier run of the process loaded it. As in ski rental, a run so pays
#: at most twice what the better of the two choices would have cost it, and short runs never
#: load Numba.
KERNEL_STEPS = 6_000_000

#: ``(done, attained, executed, synced, overhead)`` after a catch-up.
Progress = tuple[float, float, float, float, float]


def catch_up(
    times: list[float],
    gaps: array[float],
    k: int,
    prev: float,
    overhead: float,
    done: float,
    attained: float,
    executed: float,
    work: float,
    rate: float,
    gpus: int,
) -> Progress:
    """Replay the decision points of ``times`` after ``prev`` (module notes): the reference.

    Parameters
    ----------
    times : list of float
        The decision points so far, increasing; ``gaps[k] = times[k] - times[k - 1]``
        (``gaps[0]`` unused).
    gaps : array of float
    k : int
        The first decision point after ``prev`` (``bisect_right(times, prev)``).
    prev, overhead : float
        The time the job's progress was last brought up to date and its restore seconds
        left then.
    done, attained, executed : float
        Its progress, attained service and executed seconds at ``prev``.
    work, rate : float
        Its work and its rate on its run.
    gpus : int
        Its run's GPUs.

    Returns
    -------
    tuple of float
        ``(done, attained, executed, synced, overhead)`` at the last decision point (``synced``
        is ``prev`` when there is none after it).
    """
    n = len(times)
    while overhead > 0 and k < n:
        t = times[k]
        k += 1
        dt = t - prev
        if dt <= 0:
            continue
        eff = max(0.0, dt - overhead)
        overhead = max(0.0, overhead - dt)
        done = min(work, done + rate * eff)
        attained += gpus * dt
        executed += dt
        prev = t
    if n - k >= VECTOR_STEPS:
        # the same steps as array accumulations, bit for bit: ``np.add.accumulate`` adds
        # left to right as the loop does (no pairwise summation), a zero step adds 0.0
        # (the loop skips it: the same value), and since every increment is >= 0 the
        # running sums never decrease, so ``min(work, .)`` at every step clamps the last
        # sum alike
        # (rows: done, attained, executed; column 0 the start, then each step's increment)
        acc = np.empty((3, n - k + 1))
        acc[:, 0] = (done, attained, executed)
        dts = acc[2, 1:]
        dts[1:] = gaps[k + 1 :]
        dts[0] = times[k] - prev
        np.multiply(dts, rate, out=acc[0, 1:])
        np.multiply(dts, gpus, out=acc[1, 1:])
        x, attained, executed = np.add.accumulate(acc, axis=1)[:, -1].tolist()
        done = x if x < work else work
        prev = times[-1]
    elif k < n:
        # the same steps without restore time left: the first from ``prev`` (a decision
        # point, or the time of a completion or phase boundary), then over the shared gaps
        # between decision points (``t - prev`` of the step by step loop, bit for bit; a
        # zero gap adds 0.0, the value the loop's skip keeps)
        x = times[k] - prev
        done += rate * x
        attained += gpus * x
        executed += x
        for x in gaps[k + 1 :]:
            done += rate * x
            attained += gpus * x
            executed += x
        done = done if done < work else work
        prev = times[-1]
    return done, attained, executed, prev, overhead


def catch_up_loop(
    times: Any,
    gaps: Any,
    n: int,
    k: int,
    prev: float,
    overhead: float,
    done: float,
    attained: float,
    executed: float,
    work: float,
    rate: float,
    gpus: int,
) -> Progress:
    """:func:`catch_up` as one loop over float64 arrays: the kernel's source (plain Python too).

    ``times`` and ``gaps`` as in :func:`catch_up`, their first ``n`` entries set.

    ``max(0, x)`` and ``min(work, x)`` are spelled as Python's builtins decide them (the first
    argument unless the second is strictly larger, resp. smaller), so that the compiled loop
    takes the same branch on every value.
    """
    while overhead > 0 and k < n:
        t = times[k]
        k += 1
        dt = t - prev
        if dt <= 0:
            continue
        eff = dt - overhead
        if not eff > 0.0:
            eff = 0.0
        left = overhead - dt
        overhead = left if left > 0.0 else 0.0
        x = done + rate * eff
        done = x if x < work else work
        attained += gpus * dt
        executed += dt
        prev = t
    if k < n:
        x = times[k] - prev
        done += rate * x
        attained += gpus * x
        executed += x
        for j in range(k + 1, n):
            x = gaps[j]
            done += rate * x
            attained += gpus * x
            executed += x
        done = done if done < work else work
        prev = times[n - 1]
    return done, attained, executed, prev, overhead


_KERNEL: list[Callable[..., Progress]] = []


def loaded_kernel() -> Callable[..., Progress] | None:
    """The compiled kernel if this process has loaded it already, else ``None``."""
    return _KERNEL[0] if _KERNEL else None


def catch_up_kernel() -> Callable[..., Progress]:
    """:func:`catch_up_loop` compiled by Numba (imported and compiled, or loaded, on first use).

    Call it with ``times`` and ``gaps`` as float64 arrays, ``n``, ``k`` and ``gpus`` ints and
    every other argument a float.
    """
    if not _KERNEL:
        import numba  # lazy: ``import optsched.sim`` does not load Numba

        _KERNEL.append(numba.njit(cache=True, nogil=True)(catch_up_loop))
    return _KERNEL[0]
