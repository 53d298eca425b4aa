r"""Independent check of one iteration's communication schedule, one function per constraint.

:func:`check_trace` re-checks a simulated (or exact) iteration from the raw arrays of its
:class:`~optsched.comm.pace.simulate.IterationTrace` and
:class:`~optsched.comm.pace.simulate.ChannelPlan`
and re-derives the iteration time as the longest path of the networkx DAG; it shares no code
with the simulator or the exact algorithm. Each constraint of the formulation page is one
function named as there, and :data:`CONSTRAINTS` maps every name to its function:

``finite``
    every time is a finite number (checked first: nothing else is checked when it fails);
``tensor_bytes``
    every tensor's bytes are carried exactly;
``unsent``
    every piece is sent;
``release``
    no call runs before every gradient it carries exists (nor completes a tensor before it);
``channel_capacity``
    one call at a time on the channel;
``segment``
    no segment ends before it starts;
``call_time``
    each call gets exactly :math:`a + \beta \cdot \text{bytes}` of channel time;
``atomic_call``
    an atomic (non-preemptive) call is never interrupted;
``fusion``
    no call carries several pieces without fusion;
``completion``
    each tensor completes when its last piece does;
``stream_capacity``, ``op_duration``
    the compute stream runs one op at a time, each for its duration;
``update_after_allreduce``, ``forward_after_allreduce``
    no op reads a parameter before its all-reduce ends;
``iteration_time``
    the reported time equals the longest path of the DAG given the completions.

:func:`~optsched.comm.pace.validate` adds ``instance`` (the schedule is one of this instance's
iteration), checked by :func:`instance` before all of these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.results import Report, Violation
from optsched.tolerances import TIME_TOL, WORK_TOL, within

if TYPE_CHECKING:
    from optsched.comm.pace.cost import CostModel
    from optsched.comm.pace.dag import IterationDAG
    from optsched.comm.pace.simulate import ChannelPlan, IterationTrace

__all__ = ["CONSTRAINTS", "check_trace", "instance"]

#: One constraint's check: ``(dag, cost, plan, trace) -> violations``.
TraceCheck = Callable[
    ["IterationDAG", "CostModel", "ChannelPlan", "IterationTrace"], list[Violation]
]


def _v(constraint: str, message: str, amount: float | None = None, **where: Any) -> Violation:
    return Violation(constraint, message, where, amount)


def _tol(trace: IterationTrace) -> float:
    """Absolute time tolerance: :data:`~optsched.tolerances.TIME_TOL` of the iteration (>= 1)."""
    return TIME_TOL * max(1.0, trace.iteration_time)


def instance(expected: IterationDAG, given: IterationDAG) -> list[Violation]:
    """``instance``: the schedule is of this iteration (the same tensors and their bytes)."""
    if given.tensors == expected.tensors and np.array_equal(
        given.tensor_bytes, expected.tensor_bytes
    ):
        return []
    return [
        _v(
            "instance",
            f"the schedule is for {given.name!r} ({given.n_tensors} tensors), not this "
            f"instance's {expected.name!r} ({expected.n_tensors} tensors)",
        )
    ]


def finite(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``finite``: every time of the trace is a finite number."""
    arrays = {
        "segments": trace.segments,
        "stream": trace.stream,
        "tensor_completion": trace.tensor_completion,
        "call_start": trace.call_start,
        "call_end": trace.call_end,
    }
    out = [
        _v("finite", f"trace.{name} holds a non-finite value", array=name)
        for name, arr in arrays.items()
        if arr.size and not np.all(np.isfinite(arr))
    ]
    if not math.isfinite(trace.iteration_time):
        out.append(_v("finite", f"iteration time {trace.iteration_time} is not finite"))
    return out


def tensor_bytes(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``tensor_bytes``: the plan's pieces carry every tensor's bytes exactly."""
    carried = np.zeros(dag.n_tensors)
    np.add.at(carried, plan.member_tensor, plan.member_bytes)
    return [
        _v(
            "tensor_bytes",
            f"tensor {dag.tensors[j]!r}: {carried[j]} of {dag.tensor_bytes[j]} bytes",
            float(carried[j] - dag.tensor_bytes[j]),
            tensor=dag.tensors[j],
        )
        for j in range(dag.n_tensors)
        if not within(float(carried[j]), float(dag.tensor_bytes[j]), WORK_TOL)
    ]


def unsent(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``unsent``: every piece is carried by a call."""
    missing = int(np.sum(trace.piece_call < 0))
    return [_v("unsent", f"{missing} pieces were never sent")] if missing else []


def _call_needs(
    dag: IterationDAG, plan: ChannelPlan, trace: IterationTrace
) -> tuple[np.ndarray, np.ndarray]:
    """Per call: the release of its latest gradient, and the bytes it carries."""
    need = np.zeros(trace.n_calls)
    bytes_of_call = np.zeros(trace.n_calls)
    for m in range(plan.member_piece.size):
        c = int(trace.piece_call[plan.member_piece[m]])
        if c >= 0:
            need[c] = max(need[c], float(dag.release[plan.member_tensor[m]]))
            bytes_of_call[c] += plan.member_bytes[m]
    return need, bytes_of_call


def _segments(trace: IterationTrace) -> list[tuple[int, float, float, float]]:
    """``(call, start, end, latest end before it)`` of every segment, in order of start."""
    seg = trace.segments
    order = np.argsort(seg[:, 1], kind="stable") if seg.size else np.zeros(0, dtype=np.int64)
    out = []
    prev_end = -math.inf
    for k in order:
        c, s, e = int(seg[k, 0]), float(seg[k, 1]), float(seg[k, 2])
        out.append((c, s, e, prev_end))
        prev_end = max(prev_end, e)
    return out


def _stream_fits(dag: IterationDAG, trace: IterationTrace) -> bool:
    """Whether the trace's stream has one (start, end) row per op of the DAG's stream."""
    return bool(trace.stream.shape == (len(dag.stream_ops), 2))


def _graph_release(dag: IterationDAG, trace: IterationTrace) -> list[Violation]:
    """The DAG's own refusal of the completions: a tensor completing before its gradient."""
    if not _stream_fits(dag, trace):
        return []
    try:
        dag.graph_makespan(trace.tensor_completion)
    except ValueError as exc:
        return [_v("release", str(exc))]
    return []


def release(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``release``: no call runs before every gradient it carries exists."""
    need, _ = _call_needs(dag, plan, trace)
    tol = _tol(trace)
    out = [
        _v(
            "release",
            f"call {c} starts at {s} before its gradients exist at {need[c]}",
            need[c] - s,
            call=c,
        )
        for c, s, _, _ in _segments(trace)
        if s < need[c] - tol
    ]
    return out + _graph_release(dag, trace)


def channel_capacity(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``channel_capacity``: no segment starts before every earlier one has ended."""
    tol = _tol(trace)
    return [
        _v("channel_capacity", f"call {c} starts at {s} before {prev}", prev - s, call=c)
        for c, s, _, prev in _segments(trace)
        if s < prev - tol
    ]


def segment(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``segment``: no segment ends before it starts."""
    tol = _tol(trace)
    return [
        _v("segment", f"call {c} has a negative segment [{s}, {e}]", s - e, call=c)
        for c, s, e, _ in _segments(trace)
        if e < s - tol
    ]


def _call_times(trace: IterationTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call: channel time received, number of segments, and end of its last segment."""
    busy = np.zeros(trace.n_calls)
    count = np.zeros(trace.n_calls, dtype=np.int64)
    last_end = np.zeros(trace.n_calls)
    for c, s, e, _ in _segments(trace):
        busy[c] += e - s
        count[c] += 1
        last_end[c] = max(last_end[c], e)
    return busy, count, last_end


def call_time(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    r"""``call_time``: each call gets exactly :math:`a + \beta \cdot \text{bytes}` of channel."""
    _, bytes_of_call = _call_needs(dag, plan, trace)
    busy, _, _ = _call_times(trace)
    want = cost.alpha_ms + cost.beta_ms_per_byte * bytes_of_call
    tol = _tol(trace)
    return [
        _v(
            "call_time",
            f"call {c} got {busy[c]} ms of channel time, needs {want[c]}",
            float(busy[c] - want[c]),
            call=c,
        )
        for c in range(trace.n_calls)
        if not (abs(busy[c] - want[c]) <= tol or within(float(busy[c]), float(want[c]), WORK_TOL))
    ]


def atomic_call(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``atomic_call``: without preemption, every call runs in one segment."""
    if plan.preemptive:
        return []
    _, count, _ = _call_times(trace)
    return [
        _v("atomic_call", f"atomic call {c} was interrupted", call=c)
        for c in range(trace.n_calls)
        if count[c] > 1
    ]


def fusion(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``fusion``: a call carries several pieces only when the plan fuses."""
    if plan.fuse_limit > 0:
        return []
    pieces = np.bincount(trace.piece_call[trace.piece_call >= 0], minlength=trace.n_calls)
    return [
        _v("fusion", f"call {c} fuses pieces without fusion", call=c)
        for c in range(trace.n_calls)
        if pieces[c] > 1
    ]


def _tensor_done(dag: IterationDAG, plan: ChannelPlan, trace: IterationTrace) -> np.ndarray:
    """Each tensor's all-reduce completion: the end of the last call carrying a piece of it."""
    _, _, last_end = _call_times(trace)
    done = np.zeros(dag.n_tensors)
    for m in range(plan.member_piece.size):
        c = int(trace.piece_call[plan.member_piece[m]])
        t = int(plan.member_tensor[m])
        if c >= 0:
            done[t] = max(done[t], last_end[c])
    return done


def completion(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``completion``: each tensor's reported completion is the end of its last piece."""
    done = _tensor_done(dag, plan, trace)
    if not dag.n_tensors or np.allclose(done, trace.tensor_completion, rtol=0, atol=_tol(trace)):
        return []
    j = int(np.argmax(np.abs(done - trace.tensor_completion)))
    return [
        _v(
            "completion",
            f"tensor {dag.tensors[j]!r} completes at {trace.tensor_completion[j]} but its last "
            f"piece ends at {done[j]}",
            float(trace.tensor_completion[j] - done[j]),
            tensor=dag.tensors[j],
        )
    ]


def _ops(
    dag: IterationDAG, trace: IterationTrace
) -> list[tuple[str, int, str, float, float, float]]:
    """``(kind, index, name, start, end, end of the op before)`` of every op after backward."""
    out = []
    previous = dag.backward_total
    for k, (kind, i) in enumerate(dag.stream_ops):
        s, e = float(trace.stream[k, 0]), float(trace.stream[k, 1])
        out.append((kind, i, dag.tensors[i] if kind == "U" else dag.layers[i], s, e, previous))
        previous = e
    return out


def stream_capacity(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``stream_capacity``: an op starts only when the op before it (or backward) has ended."""
    if not _stream_fits(dag, trace):
        return []
    tol = _tol(trace)
    return [
        _v(
            "stream_capacity",
            f"op {kind}:{name!r} starts at {s} while the stream is busy",
            prev - s,
            op=f"{kind}:{name}",
        )
        for kind, _, name, s, _, prev in _ops(dag, trace)
        if s < prev - tol
    ]


def op_duration(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``op_duration``: one stream row per op, each op running for exactly its duration."""
    if not _stream_fits(dag, trace):
        message = f"the stream has {trace.stream.shape[0]} ops, the DAG {len(dag.stream_ops)}"
        return [_v("op_duration", message)]
    tol = _tol(trace)
    out = []
    for kind, i, name, s, e, _ in _ops(dag, trace):
        want = dag.tensor_update_ms[i] if kind == "U" else dag.forward_ms[i]
        if abs((e - s) - want) > tol:
            message = f"op {kind}:{name!r} has the wrong duration"
            out.append(_v("op_duration", message, (e - s) - want, op=f"{kind}:{name}"))
    return out


def update_after_allreduce(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``update_after_allreduce``: a tensor's update starts after its all-reduce ends."""
    if not _stream_fits(dag, trace):
        return []
    done = _tensor_done(dag, plan, trace)
    tol = _tol(trace)
    return [
        _v(
            "update_after_allreduce",
            f"update of {name!r} starts at {s} before its all-reduce ends",
            done[i] - s,
            tensor=name,
        )
        for kind, i, name, s, _, _ in _ops(dag, trace)
        if kind == "U" and s < done[i] - tol
    ]


def forward_after_allreduce(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``forward_after_allreduce``: a layer's forward op starts after its parameters arrive."""
    if not _stream_fits(dag, trace):
        return []
    done = _tensor_done(dag, plan, trace)
    tol = _tol(trace)
    first_forward = {i: s for kind, i, _, s, _, _ in reversed(_ops(dag, trace)) if kind == "F"}
    out = []
    for j in range(dag.n_tensors):
        p = int(dag.tensor_position[j])
        start = first_forward.get(p, math.inf)
        if start < done[j] - tol:
            out.append(
                _v(
                    "forward_after_allreduce",
                    f"forward op {dag.layers[p]!r} starts at {start} before parameter "
                    f"{dag.tensors[j]!r} arrives at {done[j]}",
                    done[j] - start,
                    tensor=dag.tensors[j],
                )
            )
    return out


def _longest_path(dag: IterationDAG, trace: IterationTrace) -> float | None:
    """The iteration time as the DAG's longest path given the completions.

    ``None`` where the stream does not fit or the DAG refuses the completions (reported as
    ``op_duration`` and ``release``).
    """
    if not _stream_fits(dag, trace):
        return None
    try:
        return dag.graph_makespan(trace.tensor_completion)
    except ValueError:
        return None


def iteration_time(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> list[Violation]:
    """``iteration_time``: the reported time is the longest path of the iteration DAG."""
    recomputed = _longest_path(dag, trace)
    if recomputed is None or abs(recomputed - trace.iteration_time) <= _tol(trace):
        return []
    return [
        _v(
            "iteration_time",
            f"iteration time {trace.iteration_time} != DAG longest path {recomputed}",
            trace.iteration_time - recomputed,
        )
    ]


#: Every constraint :func:`check_trace` checks, by its name on the formulation page, in check
#: order (``instance``, checked by :func:`~optsched.comm.pace.validate` first, is not a trace's).
CONSTRAINTS: dict[str, TraceCheck] = {
    "finite": finite,
    "tensor_bytes": tensor_bytes,
    "unsent": unsent,
    "release": release,
    "channel_capacity": channel_capacity,
    "segment": segment,
    "call_time": call_time,
    "atomic_call": atomic_call,
    "fusion": fusion,
    "completion": completion,
    "stream_capacity": stream_capacity,
    "op_duration": op_duration,
    "update_after_allreduce": update_after_allreduce,
    "forward_after_allreduce": forward_after_allreduce,
    "iteration_time": iteration_time,
}


def check_trace(
    dag: IterationDAG, cost: CostModel, plan: ChannelPlan, trace: IterationTrace
) -> Report:
    r"""Check a trace against the model's rules, independently of the simulator.

    Checks every constraint of :data:`CONSTRAINTS` (see the module docstring); when a time is
    not finite, only ``finite`` is reported.

    Parameters
    ----------
    dag, cost, plan, trace
        The inputs and output of one :func:`~optsched.comm.pace.simulate.simulate` run (or of
        the exact schedule).

    Returns
    -------
    Report
        ``objective`` is the iteration time recomputed as the DAG's longest path (``None`` when
        the trace's times are not finite, its stream does not fit the DAG, or the DAG refuses
        its completions).

    Notes
    -----
    :math:`O(P + S \log S + L + n)` per constraint for ``P`` plan members, ``S`` segments,
    ``L`` layers and ``n`` tensors, plus the networkx longest path.
    """
    out = finite(dag, cost, plan, trace)
    if out:
        return Report(out, objective=None)
    for name, check in CONSTRAINTS.items():
        if name != "finite":
            out += check(dag, cost, plan, trace)
    return Report(
        out,
        objective=_longest_path(dag, trace),
        details={"iteration_time": trace.iteration_time},
    )
