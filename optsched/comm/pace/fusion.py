r"""Tensor fusion (PACE's module 2): which tensors to all-reduce together.

A fused group :math:`G` is one all-reduce call: it is released when its last member's gradient
exists, takes :math:`a + \beta \sum_{j \in G} s_j` on the channel, and must finish before
its most urgent member's consumer. Fusing saves :math:`(|G| - 1)\,a` but delays the urgent
members.

Groups are contiguous in consumption order. On one compute stream releases and tails both fall
along that order, so the groups' windows are nested and Horn's condition reduces to one
inequality per group. If group :math:`g` (counting from the most urgent) starts at tensor
:math:`i` and ends at tensor :math:`k`, the optimal preemptive schedule of a grouping has value

.. math::

    \max_g \bigl( r_i + q_i + g\,a + \beta\,B_k \bigr),
    \qquad B_k = \sum_{j \le k} s_j,

so the dynamic program over (tensors covered, groups used)

.. math::

    V[k, g] = \min_{i < k} \max\bigl( V[i, g-1],\; r_i + q_i + g\,a + \beta\,B_{k-1} \bigr)

finds the best contiguous grouping exactly, in :math:`O(n^2 G)` time for :math:`n` tensors
and at most :math:`G \le n` groups (fewer with a byte limit).

Provenance [R]: the reference's DP (§2.5) keeps one state per prefix and calls the exact
schedule as an oracle, which makes it a heuristic. Adding the group count to the state makes it
exact for contiguous groupings under one compute stream;
:func:`~optsched.comm.pace.kernels.fusion_reference` is that DP with the exact schedule as its
oracle, and tests check both against a brute force over every contiguous grouping.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from optsched.comm.pace.cost import MB, CostModel, number
from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.exact import ExactSchedule, exact_schedule
from optsched.comm.pace.kernels import fusion_kernel, fusion_kernel_full
from optsched.errors import InvalidInstanceError

__all__ = [
    "Fusion",
    "no_fusion",
    "optimal_fusion",
    "pace_schedule",
    "threshold_fusion",
]


@dataclass(frozen=True)
class Fusion:
    r"""A grouping of tensors into fused all-reduce calls.

    Attributes
    ----------
    groups : tuple of (int, int)
        ``[start, stop)`` ranges in consumption order.
    value : float
        :math:`\max_j (C_j + q_j)` of the optimal preemptive schedule of these groups (ms).
    method : str
        ``"none"``, ``"threshold"`` or ``"dp"``.
    """

    groups: tuple[tuple[int, int], ...]
    value: float
    method: str

    @property
    def n_groups(self) -> int:
        """Number of all-reduce calls."""
        return len(self.groups)


def _limits(max_bytes: float | None, max_tensors: int | None, n: int) -> tuple[float, int]:
    mb = math.inf if max_bytes is None else number(max_bytes, "max_group_mb")
    if not mb > 0 or math.isnan(mb):
        raise InvalidInstanceError("max_group_mb", f"must be > 0, got {max_bytes!r}")
    if max_tensors is not None and (
        isinstance(max_tensors, bool) or not isinstance(max_tensors, (int, np.integer))
    ):
        raise InvalidInstanceError("max_group_tensors", f"must be an integer, got {max_tensors!r}")
    mt = n if max_tensors is None else int(max_tensors)
    if mt < 1:
        raise InvalidInstanceError("max_group_tensors", f"must be >= 1, got {max_tensors!r}")
    return mb, max(mt, 1)


def _value(dag: IterationDAG, cost: CostModel, groups: Sequence[tuple[int, int]]) -> float:
    sched = exact_schedule(dag, cost, groups)
    return float(np.max(sched.completion + sched.jobs.tail)) if groups else -math.inf


def no_fusion(dag: IterationDAG, cost: CostModel) -> Fusion:
    """One call per tensor."""
    groups = tuple((j, j + 1) for j in range(dag.n_tensors))
    return Fusion(groups, _value(dag, cost, groups), "none")


def threshold_fusion(dag: IterationDAG, cost: CostModel, threshold_mb: float = 64.0) -> Fusion:
    """Horovod-style static fusion: fill groups up to ``threshold_mb`` MB (10^6 bytes).

    Tensors are taken in release order (the reverse of consumption order) and appended to the
    current group while it stays within the threshold; a tensor larger than the threshold
    travels alone. This is the grouping Horovod would form if every tensor were ready at one
    fusion cycle; the simulator's Horovod policy forms its groups from what is ready at each
    cycle instead.
    """
    if not number(threshold_mb, "threshold_mb") > 0:
        raise InvalidInstanceError("threshold_mb", f"must be > 0, got {threshold_mb!r}")
    limit = threshold_mb * MB
    size = dag.tensor_bytes
    n = dag.n_tensors
    groups_rev: list[tuple[int, int]] = []
    stop = n
    while stop > 0:
        start = stop - 1
        total = size[start]
        while start > 0 and total + size[start - 1] <= limit:
            start -= 1
            total += size[start]
        groups_rev.append((start, stop))
        stop = start
    groups = tuple(reversed(groups_rev))
    return Fusion(groups, _value(dag, cost, groups), "threshold")


def optimal_fusion(
    dag: IterationDAG,
    cost: CostModel,
    *,
    max_group_mb: float | None = None,
    max_group_tensors: int | None = None,
    kernel: Literal["pruned", "full"] = "pruned",
) -> Fusion:
    """Best contiguous grouping for the optimal preemptive schedule (exact DP).

    Parameters
    ----------
    dag : IterationDAG
    cost : CostModel
    max_group_mb : float, optional
        Size limit in MB (10^6 bytes) of a group of two or more tensors (a fusion buffer); a
        single tensor larger
        than it still travels alone. ``None`` = no limit.
    max_group_tensors : int, optional
        Limit on tensors per group.
    kernel : {"pruned", "full"}, default "pruned"
        :func:`~optsched.comm.pace.kernels.fusion_kernel` (the DP over the states that can
        still matter) or :func:`~optsched.comm.pace.kernels.fusion_kernel_full` (every state,
        the previous version, kept so benchmarks can time both). Both return the same
        grouping, bit for bit.

    Returns
    -------
    Fusion
        The grouping and the value of its optimal schedule.

    Raises
    ------
    InvalidInstanceError
        A non-positive limit, or an unknown ``kernel``.

    Notes
    -----
    Exact over contiguous groupings in consumption order (module notes);
    :math:`O(n^2 G)` in the worst case with :math:`G` the number of groups a prefix may use
    (the pruned kernel keeps far fewer states on real profiles: see its notes). The full
    kernel's three nested loops run at most :math:`n(n+1)(n+2)/6` inner steps over two
    :math:`(n+1)^2` tables, which :func:`~optsched.comm.pace.instance.check_budgets` checks against
    the ``max_events`` and ``max_array_cells`` budgets before allocating (field ``profile``).
    """
    if kernel not in ("pruned", "full"):
        raise InvalidInstanceError("kernel", f"must be 'pruned' or 'full', got {kernel!r}")
    n = dag.n_tensors
    max_bytes, max_tensors = _limits(
        None if max_group_mb is None else max_group_mb * MB, max_group_tensors, n
    )
    if n == 0:
        return Fusion((), -math.inf, "dp")
    from optsched.comm.pace.instance import check_budgets

    check_budgets(n)
    h = dag.release + dag.tail
    prefix = np.concatenate([[0.0], np.cumsum(dag.tensor_bytes)])
    dp = fusion_kernel if kernel == "pruned" else fusion_kernel_full
    value, starts = dp(
        h.astype(np.float64),
        prefix,
        float(cost.alpha_ms),
        float(cost.beta_ms_per_byte),
        float(max_bytes),
        int(max_tensors),
    )
    bounds = [*(int(s) for s in starts), n]
    groups = tuple((a, b) for a, b in itertools.pairwise(bounds))
    return Fusion(groups, float(value), "dp")


def pace_schedule(
    dag: IterationDAG,
    cost: CostModel,
    *,
    max_group_mb: float | None = 64.0,
    max_group_tensors: int | None = None,
) -> ExactSchedule:
    """PACE: the fusion DP followed by the optimal preemptive schedule of its groups.

    Parameters
    ----------
    dag : IterationDAG
    cost : CostModel
    max_group_mb : float or None, default 64
        Fusion buffer size (as Horovod's default threshold); ``None`` = unlimited.
    max_group_tensors : int, optional
        Limit on tensors per group.

    Returns
    -------
    ExactSchedule
    """
    fusion = optimal_fusion(
        dag, cost, max_group_mb=max_group_mb, max_group_tensors=max_group_tensors
    )
    return exact_schedule(dag, cost, fusion.groups)


def groups_of_starts(starts: NDArray[np.int64], n: int) -> tuple[tuple[int, int], ...]:
    """Ranges from group start indices."""
    bounds = [*(int(s) for s in starts), n]
    return tuple((a, b) for a, b in itertools.pairwise(bounds))
