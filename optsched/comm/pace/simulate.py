"""Event simulator of one training iteration: a compute stream and a communication channel.

Every policy runs through :func:`simulate`, so every comparison uses the same compute model
(:class:`~optsched.comm.pace.dag.IterationDAG`) and the same cost model
(:class:`~optsched.comm.pace.cost.CostModel`). A policy is reduced to a :class:`ChannelPlan`: the
pieces it sends (whole tensors, partitions or fused groups), their priorities and the channel
discipline (preemptive or atomic calls, fusion, cycle, credit window). The channel itself is the
Numba kernel :func:`~optsched.comm.pace.kernels.channel_kernel` (or its Python reference).

Backward compute never waits for communication, so the simulation runs in three stages:
releases from the backward pass, the channel, then the forward pass given the tensors'
completion times. :func:`~optsched.comm.pace.validator.check_trace` (in its own module) re-checks
a trace from the raw arrays and re-derives the iteration time from the networkx DAG, sharing no
code with the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.exact import horn_value
from optsched.comm.pace.kernels import channel_kernel, channel_reference
from optsched.errors import InvalidInstanceError
from optsched.tolerances import WORK_TOL

__all__ = [
    "BYTES_RTOL",
    "ChannelPlan",
    "IterationTrace",
    "lower_bound",
    "overlap_fraction",
    "simulate",
]

#: Relative tolerance on byte totals (sums of partition sizes): the library's work tolerance.
BYTES_RTOL = WORK_TOL

if TYPE_CHECKING:
    import pandas as pd

Engine = Literal["numba", "python"]


@dataclass(frozen=True, eq=False)
class ChannelPlan:
    """What a policy sends and how the channel serves it.

    Attributes
    ----------
    piece_release : ndarray
        Earliest time each piece may be sent: the release of its latest member tensor.
    piece_bytes : ndarray
        Bytes per piece.
    piece_priority : ndarray
        Priority (smaller first; ties by piece index).
    member_piece, member_tensor, member_bytes : ndarray
        Incidence of pieces and tensors: piece ``member_piece[m]`` carries
        ``member_bytes[m]`` bytes of tensor ``member_tensor[m]`` (consumption order).
    preemptive : bool
        Calls may be paused and resumed at no cost.
    fuse_limit : float
        Bytes up to which ready pieces are fused into one call (0: no fusion).
    cycle : float
        Admission only at multiples of ``cycle`` ms (0: at every event).
    window : float
        Bytes admitted to the channel queue and not yet finished (0: one call at a time).
    """

    piece_release: NDArray[np.float64]
    piece_bytes: NDArray[np.float64]
    piece_priority: NDArray[np.float64]
    member_piece: NDArray[np.int64]
    member_tensor: NDArray[np.int64]
    member_bytes: NDArray[np.float64]
    preemptive: bool = False
    fuse_limit: float = 0.0
    cycle: float = 0.0
    window: float = 0.0

    @classmethod
    def from_groups(
        cls,
        dag: IterationDAG,
        groups: list[list[tuple[int, float]]],
        priority: NDArray[np.float64],
        **discipline: float | bool,
    ) -> ChannelPlan:
        """Build a plan from pieces given as lists of ``(tensor, bytes)``."""
        mp: list[int] = []
        mt: list[int] = []
        mb: list[float] = []
        rel = np.empty(len(groups))
        size = np.empty(len(groups))
        for k, members in enumerate(groups):
            rel[k] = max(float(dag.release[t]) for t, _ in members)
            size[k] = math.fsum(b for _, b in members)
            for t, b in members:
                mp.append(k)
                mt.append(t)
                mb.append(b)
        return cls(
            piece_release=rel,
            piece_bytes=size,
            piece_priority=np.asarray(priority, dtype=np.float64),
            member_piece=np.array(mp, dtype=np.int64),
            member_tensor=np.array(mt, dtype=np.int64),
            member_bytes=np.array(mb, dtype=np.float64),
            **discipline,  # type: ignore[arg-type]
        )

    @property
    def n_pieces(self) -> int:
        """Number of pieces."""
        return int(self.piece_bytes.size)


@dataclass(frozen=True, eq=False)
class IterationTrace:
    """Everything one simulated iteration did.

    Attributes
    ----------
    piece_call : ndarray of int
        The call that carried each piece.
    call_start, call_end, call_bytes : ndarray
        Per call (in admission order): first start, completion, bytes.
    segments : ndarray of shape (s, 3)
        Channel busy intervals ``(call, start, end)`` in time order.
    tensor_completion : ndarray
        All-reduce completion time of each tensor.
    stream : ndarray of shape (n_ops, 2)
        Start and end of each op of the stream after backward
        (:attr:`~optsched.comm.pace.dag.IterationDAG.stream_ops`).
    iteration_time : float
        End of the last forward op (ms).
    overlap : float
        Fraction of channel busy time that overlaps compute (1 when the channel is idle).
    """

    piece_call: NDArray[np.int64]
    call_start: NDArray[np.float64]
    call_end: NDArray[np.float64]
    call_bytes: NDArray[np.float64]
    segments: NDArray[np.float64]
    tensor_completion: NDArray[np.float64]
    stream: NDArray[np.float64]
    iteration_time: float
    overlap: float
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def n_calls(self) -> int:
        """Number of all-reduce calls."""
        return int(self.call_start.size)

    def to_frame(self) -> pd.DataFrame:
        """Channel segments in long format: ``call``, ``start_ms``, ``end_ms`` (time order).

        :meth:`optsched.comm.pace.CommSchedule.to_frame` adds tensor and layer names and the compute
        ops.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "call": self.segments[:, 0].astype(np.int64),
                "start_ms": self.segments[:, 1],
                "end_ms": self.segments[:, 2],
            }
        )

    @property
    def comm_busy_ms(self) -> float:
        """Total channel busy time."""
        if self.segments.size == 0:
            return 0.0
        return float(np.sum(self.segments[:, 2] - self.segments[:, 1]))


def _intervals_overlap(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Total length of the intersection of two sorted lists of disjoint intervals."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo = max(a[i, 0], b[j, 0])
        hi = min(a[i, 1], b[j, 1])
        if hi > lo:
            total += hi - lo
        if a[i, 1] <= b[j, 1]:
            i += 1
        else:
            j += 1
    return total


def overlap_fraction(
    dag: IterationDAG, segments: NDArray[np.float64], stream: NDArray[np.float64]
) -> float:
    """Fraction of channel busy time during which the compute stream is busy.

    Parameters
    ----------
    dag : IterationDAG
    segments : ndarray of shape (s, 3)
        Channel busy intervals ``(call, start, end)``.
    stream : ndarray of shape (n_ops, 2)
        Stream op intervals after the backward pass.

    Returns
    -------
    float
        In [0, 1]; 1 when the channel never works.
    """
    if segments.size == 0:
        return 1.0
    comm = segments[:, 1:3]
    comm = comm[np.argsort(comm[:, 0], kind="stable")]
    busy = comm[:, 1] - comm[:, 0]
    total = float(busy.sum())
    if total <= 0:
        return 1.0
    compute = np.vstack([np.array([[0.0, dag.backward_total]]), stream.reshape(-1, 2)])
    compute = compute[compute[:, 1] > compute[:, 0]]
    return min(1.0, _intervals_overlap(comm, compute) / total)


def lower_bound(dag: IterationDAG, cost: CostModel) -> float:
    r"""A lower bound on the iteration time of **every** schedule of every policy.

    .. math::

        \max\Bigl(\Phi_0,\; \max_{i,k}\bigl(r_i + a + \beta W_{ik} + q_k\bigr)\Bigr),

    where :math:`W_{ik}` is the bytes of the tensors released no earlier than tensor ``i``
    whose tail is at least tensor ``k``'s. Every byte of that set is sent after :math:`r_i` by
    at least one call (which costs at least :math:`a`), and whichever of them finishes last is
    followed by at least :math:`q_k` of compute. It is the optimum of the fluid relaxation with
    free preemption, free partitioning and a single call's overhead.
    """
    if dag.n_tensors == 0:
        return dag.compute_ms
    value = horn_value(dag.release, cost.beta_ms_per_byte * dag.tensor_bytes, dag.tail)
    return max(dag.compute_ms, value + cost.alpha_ms)


def simulate(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, *, engine: Engine = "numba"
) -> IterationTrace:
    r"""Run one iteration of ``plan`` on ``dag`` with ``cost``.

    Parameters
    ----------
    dag : IterationDAG
    cost : CostModel
    plan : ChannelPlan
    engine : {"numba", "python"}, default "numba"
        The channel kernel or its plain-Python reference (identical results).

    Returns
    -------
    IterationTrace

    Raises
    ------
    InvalidInstanceError
        An unknown engine or a plan whose pieces do not cover the tensors.

    Notes
    -----
    :math:`O(P \log P + L)` for ``P`` pieces and ``L`` layers.
    """
    if engine not in ("numba", "python"):
        raise InvalidInstanceError("engine", f"must be 'numba' or 'python', got {engine!r}")
    n = dag.n_tensors
    covered = np.bincount(plan.member_tensor, weights=plan.member_bytes, minlength=n)
    if n and not np.allclose(covered, dag.tensor_bytes, rtol=WORK_TOL, atol=0.0):
        bad = int(np.argmax(np.abs(covered - dag.tensor_bytes)))
        raise InvalidInstanceError(
            f"plan.tensors[{bad}]",
            f"pieces carry {covered[bad]} of the tensor's {dag.tensor_bytes[bad]} bytes",
        )
    run = channel_kernel if engine == "numba" else channel_reference
    (
        piece_call,
        piece_end,
        call_start,
        call_end,
        call_bytes,
        _nc,
        seg_call,
        seg_start,
        seg_end,
        _ns,
    ) = run(
        np.ascontiguousarray(plan.piece_release, dtype=np.float64),
        np.ascontiguousarray(plan.piece_bytes, dtype=np.float64),
        np.ascontiguousarray(plan.piece_priority, dtype=np.float64),
        float(cost.alpha_ms),
        float(cost.beta_ms_per_byte),
        bool(plan.preemptive),
        float(plan.fuse_limit),
        float(plan.cycle),
        float(plan.window),
    )
    completion = np.zeros(n)
    if plan.member_piece.size:
        np.maximum.at(completion, plan.member_tensor, piece_end[plan.member_piece])
    stream = dag.stream_schedule(completion)
    segments = np.column_stack([seg_call.astype(np.float64), seg_start, seg_end]).reshape(-1, 3)
    iteration = float(stream[-1, 1]) if len(stream) else 0.0
    return IterationTrace(
        piece_call=np.asarray(piece_call),
        call_start=np.asarray(call_start),
        call_end=np.asarray(call_end),
        call_bytes=np.asarray(call_bytes),
        segments=segments,
        tensor_completion=completion,
        stream=stream,
        iteration_time=iteration,
        overlap=overlap_fraction(dag, segments, stream),
    )
