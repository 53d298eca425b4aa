"""The Solution type of the communication family: one scheduled iteration.

Every policy (FIFO, Horovod, P3, TicTac, ByteScheduler, PACE) and the exact ``solve`` return a
:class:`CommSchedule`: what was sent (:class:`~optsched.comm.pace.simulate.ChannelPlan`), when
(:class:`~optsched.comm.pace.simulate.IterationTrace`), and the resulting iteration time. Its
:meth:`CommSchedule.to_frame` is the long-format timeline (one row per channel segment and
tensor carried, and one per compute op) that :func:`optsched.report.pace.plot_iteration` draws.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.simulate import ChannelPlan, IterationTrace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FRAME_COLUMNS", "CommSchedule"]

#: Columns of :meth:`CommSchedule.to_frame`.
FRAME_COLUMNS = (
    "policy",
    "resource",
    "op",
    "call",
    "tensor",
    "layer",
    "bytes",
    "start_ms",
    "end_ms",
)


@dataclass(frozen=True, eq=False, repr=False)
class CommSchedule:
    """One iteration scheduled by a policy or by the exact algorithm.

    Attributes
    ----------
    name : str
        Policy key (``"fifo"``, ``"horovod"``, ``"p3"``, ``"tictac"``, ``"bytescheduler"``,
        ``"pace"``).
    iteration_time : float
        End of the last forward op (ms): the objective.
    lower_bound : float
        :func:`~optsched.comm.pace.simulate.lower_bound` of the instance (ms).
    overlap : float
        Fraction of channel busy time overlapped with compute.
    params : dict
        The policy's settings (after tuning).
    trace : IterationTrace
        Channel segments, call times, tensor completions and the compute stream.
    plan : ChannelPlan
        The pieces sent and the channel discipline.
    dag : IterationDAG
        The iteration the schedule is for (names of tensors and layers).
    tuning : list of dict
        Every setting tried by a tuned policy (ByteScheduler), with its iteration time.
    """

    name: str
    iteration_time: float
    lower_bound: float
    overlap: float
    params: dict[str, object]
    trace: IterationTrace
    plan: ChannelPlan
    dag: IterationDAG
    tuning: list[dict[str, float]] = field(default_factory=list)

    @property
    def n_calls(self) -> int:
        """All-reduce calls issued."""
        return self.trace.n_calls

    @property
    def objective(self) -> float:
        """The iteration time (ms), under the protocol's name."""
        return self.iteration_time

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (no timeline; see :meth:`to_frame`)."""
        out: dict[str, object] = {
            "policy": self.name,
            "iteration_time": self.iteration_time,
            "lower_bound": self.lower_bound,
            "gap_to_lower_bound": self.iteration_time / self.lower_bound - 1.0
            if self.lower_bound > 0
            else 0.0,
            "overlap": self.overlap,
            "calls": self.n_calls,
            "comm_busy_ms": self.trace.comm_busy_ms,
            "params": self.params,
        }
        if self.tuning:
            out["tuning_points"] = len(self.tuning)
        return out

    def timeline(self) -> list[dict[str, Any]]:
        """The rows of :meth:`to_frame` as plain dicts."""
        dag, plan, trace = self.dag, self.plan, self.trace
        rows: list[dict[str, Any]] = []
        # Members (tensor, bytes) of each call, in plan order.
        members: dict[int, list[tuple[int, float]]] = {}
        for m in range(plan.member_piece.size):
            call = int(trace.piece_call[plan.member_piece[m]])
            members.setdefault(call, []).append(
                (int(plan.member_tensor[m]), float(plan.member_bytes[m]))
            )
        for call_f, start, end in trace.segments:
            call = int(call_f)
            for tensor, nbytes in members.get(call, []):
                rows.append(
                    {
                        "policy": self.name,
                        "resource": "channel",
                        "op": "allreduce",
                        "call": call,
                        "tensor": dag.tensors[tensor],
                        "layer": dag.layers[int(dag.tensor_position[tensor])],
                        "bytes": nbytes,
                        "start_ms": float(start),
                        "end_ms": float(end),
                    }
                )
        ends = dag.backward_end
        for p in range(len(dag.layers) - 1, -1, -1):
            rows.append(
                {
                    "policy": self.name,
                    "resource": "compute",
                    "op": "backward",
                    "call": None,
                    "tensor": None,
                    "layer": dag.layers[p],
                    "bytes": None,
                    "start_ms": float(ends[p] - dag.backward_ms[p]),
                    "end_ms": float(ends[p]),
                }
            )
        for k, (kind, i) in enumerate(dag.stream_ops):
            rows.append(
                {
                    "policy": self.name,
                    "resource": "compute",
                    "op": "update" if kind == "U" else "forward",
                    "call": None,
                    "tensor": dag.tensors[i] if kind == "U" else None,
                    "layer": dag.layers[int(dag.tensor_position[i])]
                    if kind == "U"
                    else (dag.layers[i]),
                    "bytes": None,
                    "start_ms": float(trace.stream[k, 0]),
                    "end_ms": float(trace.stream[k, 1]),
                }
            )
        return rows

    def to_frame(self) -> pd.DataFrame:
        """Long-format timeline: one row per (channel segment, tensor carried) and per op.

        Columns are :data:`FRAME_COLUMNS`: ``resource`` is ``"channel"`` or ``"compute"``;
        ``op`` is ``"allreduce"``, ``"backward"``, ``"update"`` or ``"forward"``; ``call`` is
        the all-reduce call (a preempted call has several segments); ``bytes`` is the part of
        the tensor the call carries; times are in ms from the start of the backward pass.
        """
        import pandas as pd

        return pd.DataFrame(self.timeline(), columns=list(FRAME_COLUMNS))

    def __repr__(self) -> str:
        return (
            f"CommSchedule({self.name} iteration_time={self.iteration_time:.6g} ms, "
            f"calls={self.n_calls}, lower_bound={self.lower_bound:.6g})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.to_dict().items()
        )
        return f"<table><caption>CommSchedule</caption>{rows}</table>"


def segments_array(segments: list[tuple[int, float, float]]) -> np.ndarray:
    """``(call, start, end)`` tuples as an ``(s, 3)`` float array."""
    return np.array(segments, dtype=np.float64).reshape(-1, 3)
