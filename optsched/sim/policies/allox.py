r"""AlloX: minimum total completion time on heterogeneous GPUs by min-cost matching.

Source: Le, Sun, Zhang, Xu, Zhang, Zhang, "AlloX: Compute Allocation in Hybrid Clusters",
EuroSys 2020 [S], implemented from the paper's description; the choices it leaves open are
marked [R].

**The matching [S].** Jobs wait in a queue; each free GPU runs one job at a time. A job :math:`i`
takes :math:`p_{ig} = \text{remaining steps}_i / \text{rate}_{ig}` seconds on a GPU of type
:math:`g`. On one GPU, the job that runs :math:`k`-th from last delays itself and the
:math:`k - 1` jobs after it, so it contributes :math:`k\,p_{ig}` to the total completion time.
The schedule of least total completion time (of the queued jobs, counted from now) is therefore
a minimum-cost assignment of jobs to *positions* :math:`(g, \ell, k)` (GPU :math:`\ell` of type
:math:`g`, :math:`k`-th from last) with cost :math:`k\,p_{ig}` (Horn 1973; Bruno, Coffman and
Sethi 1974: exact for :math:`R\,\|\,\sum C_j`, unrelated parallel machines):

.. math::

   \min \sum_{i} \sum_{g, \ell, k} k\, p_{ig}\, x_{i g \ell k}
   \quad\text{s.t.}\quad \sum_{g,\ell,k} x_{i g \ell k} = 1 \;\; \forall i, \qquad
   \sum_i x_{i g \ell k} \le 1 \;\; \forall g, \ell, k, \qquad x \in \{0, 1\}.

Each GPU then starts the job in its highest position (the first of its sequence).

**Size of the matrix [R].** Positions on one GPU are filled from :math:`k = 1` up in an optimum
(a job at position :math:`k` above an empty :math:`k - 1` moves down and costs less), and the GPUs
of one type are balanced (moving the top job of a GPU with two more jobs than another of its
type costs no more), so a type with :math:`G_g` free GPUs needs positions up to
:math:`\lceil m / G_g \rceil` on at most :math:`\min(G_g, m)` GPUs: at most
:math:`\sum_g (m + G_g)` columns for :math:`m` queued jobs, solved by
:func:`scipy.optimize.linear_sum_assignment` in :math:`O(m^2 \cdot \text{columns})`.

**When [R].** At every arrival and completion (event-driven), non-preemptively: running jobs
keep their GPUs (the paper's jobs run to completion) and only the free GPUs are matched.

**Fairness knob [S].** Only the :math:`\lceil \alpha\,m \rceil` longest-waiting queued jobs (but
at least as many as there are free GPUs) enter the matching; :math:`\alpha = 1` minimises total
completion time, smaller :math:`\alpha` bounds how long a job can be passed over.

**Gangs [S].** AlloX places single-GPU jobs; a world with a multi-GPU job is refused at
:meth:`AlloX.reset`, naming the job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Grant, JobState, Policy, PolicyDecision, SimState
from optsched.sim.world.jobs import World

__all__ = ["AlloX", "allox_sequences"]


def allox_sequences(
    times: NDArray[np.float64], gpus: Sequence[int]
) -> tuple[list[list[list[int]]], float]:
    r"""Minimum total completion time of jobs on free GPUs of several types (AlloX's matching).

    Parameters
    ----------
    times : ndarray, shape (m, T)
        ``times[i, g]`` seconds job ``i`` takes on one GPU of type ``g``; ``inf`` where it
        cannot run there. Every job must have a finite time on some type with GPUs.
    gpus : sequence of int, length T
        Free GPUs of each type.

    Returns
    -------
    sequences : list
        ``sequences[g][l]`` the jobs of GPU ``l`` of type ``g`` in run order (first runs now).
    total : float
        Their total completion time :math:`\sum_i C_i`, from now.

    Raises
    ------
    InvalidInstanceError
        A job runs nowhere (``times``) or a GPU count is negative (``gpus``).

    Notes
    -----
    Exact for :math:`R\,\|\,\sum C_j` by the assignment argument in the module docstring.

    >>> seqs, total = allox_sequences(np.array([[1.0, 3.0], [2.0, 1.0], [4.0, 8.0]]), [1, 1])
    >>> seqs, total
    ([[[0, 2]], [[1]]], 7.0)
    """
    m, n_types = times.shape
    if len(gpus) != n_types or any(g < 0 for g in gpus):
        raise InvalidInstanceError("gpus", f"must be {n_types} counts >= 0, got {list(gpus)}")
    sequences: list[list[list[int]]] = [[[] for _ in range(min(g, m))] for g in gpus]
    if m == 0:
        return sequences, 0.0
    usable = np.isfinite(times) & (np.asarray(gpus) > 0)[None, :]
    stuck = np.flatnonzero(~usable.any(axis=1))
    if stuck.size:
        raise InvalidInstanceError("times", f"job {int(stuck[0])} can run on no free GPU type")
    columns: list[tuple[int, int, int]] = []  # (type, gpu, position k from last)
    for g, count in enumerate(gpus):
        if count <= 0 or not usable[:, g].any():
            continue
        copies = min(count, m)
        for k in range(1, math.ceil(m / count) + 1):
            columns.extend((g, ell, k) for ell in range(copies))
    col_type = np.array([c[0] for c in columns])
    col_k = np.array([c[2] for c in columns], dtype=float)
    cost = times[:, col_type] * col_k[None, :]
    # linear_sum_assignment refuses infinite costs that make it look infeasible; a cost above
    # any feasible assignment's total keeps the forbidden cells out of every optimum
    finite = cost[np.isfinite(cost)]
    big = (float(finite.sum()) + 1.0) * 2.0
    cost = np.where(np.isfinite(cost), cost, big)
    rows, cols = linear_sum_assignment(cost)
    placed: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i, c in zip(rows.tolist(), cols.tolist(), strict=True):
        g, ell, k = columns[c]
        placed.setdefault((g, ell), []).append((k, i))
    total = 0.0
    for (g, ell), jobs in placed.items():
        jobs.sort(reverse=True)  # highest position first: it runs first
        clock = 0.0
        for _, i in jobs:
            clock += float(times[i, g])
            total += clock
            sequences[g][ell].append(i)
    return sequences, total


class AlloX(Policy):
    """AlloX's min-cost matching of queued jobs to free GPUs, at every arrival and completion.

    Parameters
    ----------
    alpha : float
        Fraction of the queue (longest waiting first) that enters the matching, in (0, 1].
    """

    name = "allox"

    def __init__(self, *, alpha: float = 1.0) -> None:
        if not (isinstance(alpha, (int, float)) and 0 < alpha <= 1):
            raise InvalidInstanceError("alpha", f"must be in (0, 1], got {alpha!r}")
        self.alpha = float(alpha)

    def refuses(self, world: World) -> str | None:
        """The first multi-GPU job, named: AlloX schedules single-GPU jobs."""
        gang = _first_gang(world)
        if gang is None:
            return None
        job = world.jobs[gang]
        return f"AlloX schedules single-GPU jobs; job {job.job_id!r} asks for {job.num_gpus} GPUs"

    def reset(self, world: World) -> None:
        """Refuse gangs (see :meth:`refuses`), naming the job."""
        reason = self.refuses(world)
        if reason is not None:
            raise InvalidInstanceError(f"jobs[{_first_gang(world)}].num_gpus", reason)

    def allocate(self, state: SimState) -> PolicyDecision:
        """Match the queue to the GPUs no running job holds; start each GPU's first job."""
        names = state.world.cluster.names
        free = {t: state.capacity(t) for t in names}
        for s in state.running:
            if s.placement is not None and not (s.partner is not None and s.partner < s.job_id):
                free[s.placement.gpu_type] -= s.job.num_gpus
        queue = sorted(
            (s for s in state.active if not s.running), key=lambda s: (s.job.arrival, s.job_id)
        )
        n_free = sum(free.values())
        if not queue or n_free <= 0:
            return PolicyDecision(keep_running=True)
        take = min(len(queue), max(math.ceil(self.alpha * len(queue)), n_free))
        candidates = [s for s in queue[:take] if _runs_somewhere(state, s, names, free)]
        if not candidates:
            return PolicyDecision(keep_running=True)
        times = np.array([[_seconds(state, s, t) for t in names] for s in candidates])
        sequences, _ = allox_sequences(times, [free[t] for t in names])
        grants = [
            Grant(job=candidates[seq[0]].job_id, gpu_type=names[g], num_gpus=1)
            for g, per_gpu in enumerate(sequences)
            for seq in per_gpu
            if seq
        ]
        return PolicyDecision(grants=tuple(grants), keep_running=True)


def _first_gang(world: World) -> int | None:
    return next((k for k, job in enumerate(world.jobs) if job.num_gpus != 1), None)


def _seconds(state: SimState, s: JobState, gpu_type: str) -> float:
    rate = state.rate(s, gpu_type)
    return s.remaining / rate if rate > 0 and math.isfinite(rate) else math.inf


def _runs_somewhere(
    state: SimState, s: JobState, names: Sequence[str], free: dict[str, int]
) -> bool:
    return any(free[t] > 0 and math.isfinite(_seconds(state, s, t)) for t in names)
