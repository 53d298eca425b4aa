"""Event simulator of one training iteration: a compute stream and a communication channel.

Every policy runs through :func:`simulate`, so every comparison uses the same compute model
(:class:`~optsched.comm.pace.dag.IterationDAG`) and the same cost model
(:class:`~optsched.comm.pace.cost.CostModel`). A policy is reduced to a :class:`ChannelPlan`: the
pieces it sends (whole tensors, partitions or fused groups), their priorities and the channel
discipline (preemptive or atomic calls, fusion, cycle, credit window). The channel itself is the
Numba kernel :func:`~optsched.comm.pace.kernels.channel_kernel` (or its Python reference).

Backward compute never waits for communication, so the simulation runs in three stages:
releases from the backward pass, the channel, then the forward pass given the tensors'
completion times. :func:`check_trace` re-checks a trace from the raw arrays and re-derives
the iteration time from the networkx DAG, sharing no code with the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from optsched.comm.pace.cost import CostModel
from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.exact import horn_value
from optsched.comm.pace.kernels import channel_kernel, channel_reference
from optsched.errors import InvalidInstanceError
from optsched.results import Report, Violation
from optsched.tolerances import TIME_TOL, WORK_TOL, within

__all__ = [
    "BYTES_RTOL",
    "ChannelPlan",
    "Trace",
    "check_trace",
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
class Trace:
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
) -> Trace:
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
    Trace

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
    return Trace(
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


def check_trace(dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: Trace) -> Report:
    r"""Check a trace against the model's rules, independently of the simulator.

    Constraints (the ``constraint`` names of the violations): ``finite`` (every time is a
    finite number), ``tensor_bytes`` (every tensor's bytes are carried exactly), ``unsent``
    (every piece is sent), ``release`` (no call runs before every gradient it carries exists),
    ``channel_capacity`` (one call at a time), ``segment`` (no negative segment), ``call_time``
    (each call gets exactly ``a + beta * bytes`` of channel time), ``atomic_call`` (atomic calls
    are never interrupted), ``fusion`` (no fused call without fusion), ``completion`` (each
    tensor completes when its last piece does), ``stream_capacity`` and ``op_duration`` (the
    compute stream runs one op at a time for its duration), ``update_after_allreduce`` and
    ``forward_after_allreduce`` (no op reads a parameter before its all-reduce ends) and
    ``iteration_time`` (the reported time equals the longest path of the networkx DAG given
    the completions).

    Parameters
    ----------
    dag, cost, plan, trace
        The inputs and output of one :func:`simulate` run (or of the exact schedule).

    Returns
    -------
    Report
        ``objective`` is the iteration time recomputed as the DAG's longest path.

    Notes
    -----
    :math:`O(P + S \log S + L + n)` for ``P`` plan members, ``S`` segments, ``L`` layers and
    ``n`` tensors, plus the networkx longest path.
    """
    out: list[Violation] = []

    def bad(constraint: str, message: str, amount: float | None = None, **where: Any) -> None:
        out.append(Violation(constraint, message, where, amount))

    arrays = {
        "segments": trace.segments,
        "stream": trace.stream,
        "tensor_completion": trace.tensor_completion,
        "call_start": trace.call_start,
        "call_end": trace.call_end,
    }
    for name, arr in arrays.items():
        if arr.size and not np.all(np.isfinite(arr)):
            bad("finite", f"trace.{name} holds a non-finite value", array=name)
    if not math.isfinite(trace.iteration_time):
        bad("finite", f"iteration time {trace.iteration_time} is not finite")
    if out:
        return Report(out, objective=None)
    scale = max(1.0, trace.iteration_time)
    tol = TIME_TOL * scale
    n = dag.n_tensors
    carried = np.zeros(n)
    np.add.at(carried, plan.member_tensor, plan.member_bytes)
    for j in range(n):
        if not within(float(carried[j]), float(dag.tensor_bytes[j]), WORK_TOL):
            bad(
                "tensor_bytes",
                f"tensor {dag.tensors[j]!r}: {carried[j]} of {dag.tensor_bytes[j]} bytes",
                float(carried[j] - dag.tensor_bytes[j]),
                tensor=dag.tensors[j],
            )
    call_of_piece = trace.piece_call
    n_calls = trace.n_calls
    need = np.zeros(n_calls)
    bytes_of_call = np.zeros(n_calls)
    if np.any(call_of_piece < 0):
        bad("unsent", f"{int(np.sum(call_of_piece < 0))} pieces were never sent")
    for m in range(plan.member_piece.size):
        c = int(call_of_piece[plan.member_piece[m]])
        if c < 0:
            continue
        t = int(plan.member_tensor[m])
        need[c] = max(need[c], float(dag.release[t]))
        bytes_of_call[c] += plan.member_bytes[m]
    seg = trace.segments
    order = np.argsort(seg[:, 1], kind="stable") if seg.size else np.zeros(0, dtype=np.int64)
    prev_end = -math.inf
    busy = np.zeros(n_calls)
    pieces_per_call = np.bincount(call_of_piece[call_of_piece >= 0], minlength=n_calls)
    segs_per_call = np.zeros(n_calls, dtype=np.int64)
    last_end = np.zeros(n_calls)
    for k in order:
        c, s, e = int(seg[k, 0]), float(seg[k, 1]), float(seg[k, 2])
        if s < prev_end - tol:
            bad(
                "channel_capacity",
                f"call {c} starts at {s} before {prev_end}",
                prev_end - s,
                call=c,
            )
        if s < need[c] - tol:
            bad(
                "release",
                f"call {c} starts at {s} before its gradients exist at {need[c]}",
                need[c] - s,
                call=c,
            )
        if e < s - tol:
            bad("segment", f"call {c} has a negative segment [{s}, {e}]", s - e, call=c)
        prev_end = max(prev_end, e)
        busy[c] += e - s
        segs_per_call[c] += 1
        last_end[c] = max(last_end[c], e)
    for c in range(n_calls):
        want = cost.alpha_ms + cost.beta_ms_per_byte * bytes_of_call[c]
        if not (abs(busy[c] - want) <= tol or within(float(busy[c]), float(want), WORK_TOL)):
            bad(
                "call_time",
                f"call {c} got {busy[c]} ms of channel time, needs {want}",
                float(busy[c] - want),
                call=c,
            )
        if not plan.preemptive and segs_per_call[c] > 1:
            bad("atomic_call", f"atomic call {c} was interrupted", call=c)
        if pieces_per_call[c] > 1 and plan.fuse_limit <= 0:
            bad("fusion", f"call {c} fuses pieces without fusion", call=c)
    tensor_done = np.zeros(n)
    for m in range(plan.member_piece.size):
        c = int(call_of_piece[plan.member_piece[m]])
        t = int(plan.member_tensor[m])
        if c >= 0:
            tensor_done[t] = max(tensor_done[t], last_end[c])
    if n and not np.allclose(tensor_done, trace.tensor_completion, rtol=0, atol=tol):
        j = int(np.argmax(np.abs(tensor_done - trace.tensor_completion)))
        bad(
            "completion",
            f"tensor {dag.tensors[j]!r} completes at {trace.tensor_completion[j]} but its last "
            f"piece ends at {tensor_done[j]}",
            float(trace.tensor_completion[j] - tensor_done[j]),
            tensor=dag.tensors[j],
        )
    ops = dag.stream_ops
    sched = trace.stream
    if sched.shape != (len(ops), 2):
        bad("op_duration", f"the stream has {sched.shape[0]} ops, the DAG {len(ops)}")
        return Report(out, objective=None)
    t_prev = dag.backward_total
    first_forward = {}
    for k, (kind, i) in enumerate(ops):
        s, e = float(sched[k, 0]), float(sched[k, 1])
        name = dag.tensors[i] if kind == "U" else dag.layers[i]
        if s < t_prev - tol:
            bad(
                "stream_capacity",
                f"op {kind}:{name!r} starts at {s} while the stream is busy",
                t_prev - s,
                op=f"{kind}:{name}",
            )
        want = dag.tensor_update_ms[i] if kind == "U" else dag.forward_ms[i]
        if abs((e - s) - want) > tol:
            bad(
                "op_duration",
                f"op {kind}:{name!r} has the wrong duration",
                (e - s) - want,
                op=f"{kind}:{name}",
            )
        if kind == "U" and s < tensor_done[i] - tol:
            bad(
                "update_after_allreduce",
                f"update of {name!r} starts at {s} before its all-reduce ends",
                tensor_done[i] - s,
                tensor=name,
            )
        if kind == "F":
            first_forward[i] = s
        t_prev = e
    for j in range(n):
        p = int(dag.tensor_position[j])
        if first_forward.get(p, math.inf) < tensor_done[j] - tol:
            bad(
                "forward_after_allreduce",
                f"forward op {dag.layers[p]!r} starts at {first_forward[p]} before parameter "
                f"{dag.tensors[j]!r} arrives at {tensor_done[j]}",
                tensor_done[j] - first_forward[p],
                tensor=dag.tensors[j],
            )
    recomputed: float | None = None
    try:
        recomputed = dag.graph_makespan(trace.tensor_completion)
        if abs(recomputed - trace.iteration_time) > tol:
            bad(
                "iteration_time",
                f"iteration time {trace.iteration_time} != DAG longest path {recomputed}",
                trace.iteration_time - recomputed,
            )
    except ValueError as exc:
        bad("release", str(exc))
    return Report(out, objective=recomputed, details={"iteration_time": trace.iteration_time})
