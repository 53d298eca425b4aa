r"""Aonline: the doubling-interval reduction from weighted completion time to interval packing.

The slots are cut into the intervals :math:`I_0 = [0, 1)` and
:math:`I_k = [2^{k-1}, 2^k)` for :math:`k \ge 1` (Hall, Schulz, Shmoys and Wein's framework).
At the start :math:`b_k` of each interval the algorithm takes the pending jobs (arrived by
:math:`b_k`, not finished), solves the packing problem "the heaviest set of them that can finish
within :math:`I_k`" and runs the chosen jobs' schedules in :math:`I_k`; a job arriving inside an
interval waits for the next boundary. The packing step is OASiS's primal-dual
(:func:`~optsched.online.aonline.packing.pack_primal_dual`, ``packing="primal-dual"``) or, as a
reference, the exact ILP (:func:`~optsched.online.aonline.exact.pack_exact`, ``packing="exact"``).

**Bound.** With an exact packing the reduction is 4-competitive for
:math:`\sum_j w_j C_j` (the formulation page proves it for these intervals). Aonline's paper
states :math:`4\alpha` for an :math:`\alpha`-approximate packing;
:attr:`AonlineSchedule.bound_factor <optsched.online.aonline.AonlineSchedule.bound_factor>` is that
figure with :math:`\alpha` the largest packing ratio over the intervals.

**Termination.** Once every job has arrived and the interval is at least the longest
:math:`p_j` (fewest slots alone), each interval finishes at least one job: the first packable
job offered sees only the initial prices :math:`L` and pays at most :math:`L n_j p_j \le w_j/4`.
So the loop runs at most :math:`\lceil\log_2(A+1)\rceil + \lceil\log_2(p_{\max}+1)\rceil + n + 3`
intervals (:math:`A` the last arrival), which is checked.
"""

from __future__ import annotations

import math
from typing import Literal

from optsched.errors import InvalidInstanceError, ModelError
from optsched.online.aonline.exact import Packing, pack_exact
from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.packing import PrimalDualPacking, pack_primal_dual
from optsched.online.aonline.schedule import AonlineSchedule, IntervalRecord, Run

__all__ = ["aonline", "interval_bounds", "max_intervals"]

PackingName = Literal["primal-dual", "exact"]


def interval_bounds(k: int) -> tuple[int, int]:
    """``(start, length)`` of interval ``k``: ``(0, 1)``, then ``(2^(k-1), 2^(k-1))``."""
    if k < 0:
        raise InvalidInstanceError("k", f"must be >= 0, got {k}")
    if k == 0:
        return 0, 1
    return 2 ** (k - 1), 2 ** (k - 1)


def max_intervals(instance: AonlineInstance) -> int:
    """The proven bound on the number of intervals (module notes)."""
    if instance.n_jobs == 0:
        return 0
    last = max(job.arrival for job in instance.jobs)
    longest = max(instance.min_slots(j) for j in range(instance.n_jobs))
    return math.ceil(math.log2(last + 1)) + math.ceil(math.log2(longest + 1)) + instance.n_jobs + 3


def aonline(
    instance: AonlineInstance,
    *,
    packing: PackingName = "primal-dual",
    solver: str = "highs",
) -> AonlineSchedule:
    """Run Aonline on ``instance`` (see the module notes).

    Parameters
    ----------
    instance : AonlineInstance
    packing : {"primal-dual", "exact"}, default "primal-dual"
        The packing step: OASiS's primal-dual (the algorithm) or the exact ILP (the reduction's
        reference, needs ``solver``).
    solver : str, default "highs"
        For ``packing="exact"``.

    Returns
    -------
    AonlineSchedule
        ``algorithm`` ``"aonline"`` or ``"aonline-exact"``; ``intervals`` records every interval
        (pending and chosen jobs, weight, ratio, prices' ``L`` and ``U``, dual objective).

    Raises
    ------
    InvalidInstanceError
        Unknown ``packing``.
    ModelError
        The interval count exceeds :func:`max_intervals` (a bug, never expected).

    Examples
    --------
    >>> from optsched.online.aonline import aonline, generate_instance, validate
    >>> inst = generate_instance(4, seed=2)
    >>> validate(inst, aonline(inst)).ok
    True
    """
    if packing not in ("primal-dual", "exact"):
        raise InvalidInstanceError("packing", f"must be 'primal-dual' or 'exact', got {packing!r}")
    done: set[int] = set()
    runs: list[Run] = []
    records: list[IntervalRecord] = []
    limit = max_intervals(instance)
    k = 0
    while len(done) < instance.n_jobs:
        if k >= limit:
            raise ModelError(f"aonline: more than {limit} intervals without finishing every job")
        start, length = interval_bounds(k)
        pending = [
            j for j, job in enumerate(instance.jobs) if j not in done and job.arrival <= start
        ]
        result: Packing | None
        if packing == "exact":
            result = pack_exact(instance, pending, start, length, solver=solver)
        else:
            result = pack_primal_dual(instance, pending, start, length)
        if result is not None:
            runs.extend(result.runs)
            done.update(result.chosen)
        pd = result if isinstance(result, PrimalDualPacking) else None
        records.append(
            IntervalRecord(
                start=start,
                length=length,
                pending=tuple(pending),
                chosen=() if result is None else result.chosen,
                weight=0.0 if result is None else result.weight,
                alpha=None if pd is None else pd.alpha,
                upper=None if pd is None else pd.upper,
                lower=None if pd is None else pd.lower,
                dual=None if pd is None else pd.dual,
            )
        )
        k += 1
    name = "aonline" if packing == "primal-dual" else "aonline-exact"
    return AonlineSchedule(
        runs=tuple(sorted(runs, key=lambda r: (r.slot, r.job))),
        algorithm=name,
        intervals=tuple(records),
    )
