r"""Elastic gangs for the order policies: one allocation step shared by all of them.

An *elastic* job (:attr:`SimJob.elastic <optsched.sim.SimJob.elastic>`, made by
:meth:`World.elastic <optsched.sim.World.elastic>` or a world file's ``min_gpus``/``max_gpus``)
may run on any gang size :math:`n \in [n^{min}_j, n^{max}_j]`, at the rate :math:`r_j(n)` of the
throughput table (for ElasticFlow's scaling profiles, the concave interpolant of
:mod:`optsched.sim.world.elasticflow_profiles`: flat beyond the largest measured count). An order
policy
(FIFO, SJF, SRTF, EDF, Tiresias) built with ``elastic=True`` keeps its order and changes only the
sizes it grants, in two passes over that order (:func:`elastic_sizes`):

With the *useful size* of a range, the smallest gang reaching the largest rate of the range,

.. math:: u_j(a, c) = \min\{m \in [a, c] : r_j(m) = r_j(c)\},

1. **Admit, shrinking to fit.** Walk the jobs in the policy's order; job :math:`j` takes a GPU
   type with at least :math:`n^{min}_j` GPUs free (the policy's own type rule) and the gang
   :math:`n_j = u_j(n^{min}_j, \min(n^{req}_j, F_t))`: its requested size or what is left of the
   type (:math:`F_t` free GPUs), so that a job that would have waited for its whole gang starts
   smaller, and no more than adds throughput (a request beyond the largest measured count of a
   profile is cut to it). A job with no type holding :math:`n^{min}_j` GPUs is skipped (a
   blocking policy, strict FIFO, stops there).
2. **Grow in order.** Walk the admitted jobs again in the same order; each grows to
   :math:`u_j(n_j, \min(n^{max}_j, n_j + F_t))`, the most GPUs that still add throughput:
   GPUs that would add none are left for the jobs after it.

The highest-priority job thus gets the most GPUs it can use, as its priority says; a rigid world
(:math:`n^{min} = n^{max} = n^{req}`) gives exactly the rigid policy's grants. Non-preemptive
policies (FIFO, SJF) never resize a running job (a resize is a restart): running jobs keep their
gangs and only the jobs started at the decision are sized. Every decision sorts the candidates in
full (the reference walk of :class:`~optsched.sim.policies.OrderPolicy`),
:math:`O(A \log A + A K + \sum_j n^{max}_j)` for :math:`A` candidates and :math:`K` GPU types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optsched.sim.engine.policy import JobState, SimState

__all__ = ["elastic_sizes", "useful_size"]


def useful_size(state: SimState, s: JobState, gpu_type: str, low: int, cap: int) -> int:
    r"""Smallest gang in ``[low, cap]`` with the rate of ``cap`` GPUs (``low`` when ``cap <= low``).

    The rate is non-decreasing in the gang for the profile interpolant and for Gavel's tables
    (linear beyond the measured counts), so the scan down from ``cap`` stops at the first drop.
    Complexity: :math:`O(cap - low)` rate look-ups at most.
    """
    if cap <= low:
        return low
    top = state.rate(s, gpu_type, num_gpus=cap)
    m = cap
    while m > low and state.rate(s, gpu_type, num_gpus=m - 1) >= top:
        m -= 1
    return m


def elastic_sizes(
    state: SimState,
    order: Sequence[JobState],
    free: dict[str, int],
    choose: Callable[[JobState, dict[str, int]], str | None],
    *,
    blocking: bool = False,
) -> list[tuple[JobState, str, int]]:
    """The two passes of the module notes: ``(job, GPU type, gang)`` per admitted job, in order.

    Parameters
    ----------
    state : SimState
    order : sequence of JobState
        The candidates, highest priority first.
    free : dict
        Free GPUs per type (updated in place).
    choose : callable
        ``choose(job, free)``: the GPU type the policy picks for a job among those with at least
        ``min_gpus`` free and a positive rate there (``None``: no room).
    blocking : bool
        Stop at the first job with no room.
    """
    admitted: list[tuple[JobState, str, int]] = []
    for s in order:
        t = choose(s, free)
        if t is None:
            if blocking:
                break
            continue
        n = useful_size(state, s, t, s.job.min_gpus, min(s.job.num_gpus, free[t]))
        free[t] -= n
        admitted.append((s, t, n))
    out: list[tuple[JobState, str, int]] = []
    for s, t, n in admitted:
        cap = min(s.job.max_gpus, n + free[t])
        m = useful_size(state, s, t, n, cap)
        free[t] -= m - n
        out.append((s, t, m))
    return out
