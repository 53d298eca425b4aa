r"""The DAG of one training iteration, seen by one worker (all workers are symmetric).

Nodes (``kind`` attribute):

* ``"B"`` backward op of a layer (current iteration), releasing the layer's gradients;
* ``"A"`` all-reduce of one gradient tensor (runs on the communication channel);
* ``"U"`` optimizer update of one tensor (optional; on the compute stream);
* ``"F"`` forward op of a layer (next iteration), consuming the layer's parameters.

Edges: ``B -> A`` (the gradient exists), ``A -> U -> F`` (the parameter is reduced and updated
before the forward op reads it), the model's data edges among ``F`` ops and, reversed, among
``B`` ops, and ``stream`` edges that fix the order of the single compute stream.

Compute model [R]. One compute stream runs the ops in a fixed order: backward in the reverse of
the forward execution order, then, for every layer in forward execution order, the updates of
the tensors it is the first to read followed by its forward op. The forward execution order is a
topological order of the model DAG: the profile's order by default (definition order, as eager
frameworks run it), ``"kahn"`` (a first-in-first-out ready queue, as a graph executor runs a
DAG), or any topological order given explicitly. Backward compute does not depend on
communication, so gradient ``j`` is released at a fixed time :math:`r_j`; and once tensor ``j``
is reduced at :math:`C_j`, the stream needs at least the tail :math:`q_j` (the compute from its
first consumer's updates to the end) to finish. Hence the iteration time of any communication
schedule is

.. math::

    \Phi = \max\Bigl(R + T,\; \max_j (C_j + q_j)\Bigr),

with :math:`R` the backward time and :math:`T` the forward-plus-update time. Releases fall and
tails fall along the execution order, so the tensors' windows are nested: the tensor released
last is needed first.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optsched.comm.pace.cost import MB
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import networkx as nx

    from optsched.profiles import Profile

__all__ = ["IterationDAG", "build_dag", "execution_order"]


def execution_order(profile: Profile, order: str | Sequence[str] | None = None) -> list[int]:
    """Forward execution order of ``profile``'s layers, as profile indices.

    Parameters
    ----------
    profile : Profile
    order : {"profile", "kahn"} or sequence of str, optional
        ``None``/``"profile"``: the profile's order. ``"kahn"``: Kahn's algorithm with a
        first-in-first-out ready queue seeded in profile order. A sequence: those layer names,
        which must be a topological order of the model DAG naming every layer once.

    Returns
    -------
    list of int

    Raises
    ------
    InvalidInstanceError
        An unknown order name, an unknown or repeated layer, a missing layer, or a layer placed
        before one of its inputs (the field is ``order[i]``).
    """
    n = len(profile.layers)
    index = {layer.name: i for i, layer in enumerate(profile.layers)}
    inputs = [[index[s] for s in profile.layer_inputs(i)] for i in range(n)]
    if order is None or (isinstance(order, str) and order == "profile"):
        return list(range(n))
    if isinstance(order, str):
        if order != "kahn":
            raise InvalidInstanceError(
                "order", f"must be 'profile', 'kahn' or a list of layer names, got {order!r}"
            )
        indegree = [len(x) for x in inputs]
        succ: list[list[int]] = [[] for _ in range(n)]
        for i, srcs in enumerate(inputs):
            for s in srcs:
                succ[s].append(i)
        ready = deque(i for i in range(n) if indegree[i] == 0)
        out: list[int] = []
        while ready:
            v = ready.popleft()
            out.append(v)
            for w in succ[v]:
                indegree[w] -= 1
                if indegree[w] == 0:
                    ready.append(w)
        return out
    if not isinstance(order, Sequence) or not all(isinstance(x, str) for x in order):
        raise InvalidInstanceError(
            "order", f"must be 'profile', 'kahn' or a list of layer names, got {order!r}"
        )
    names = list(order)
    seen: set[int] = set()
    out = []
    for k, name in enumerate(names):
        if name not in index:
            raise InvalidInstanceError(f"order[{k}]", f"unknown layer {name!r}")
        i = index[name]
        if i in seen:
            raise InvalidInstanceError(f"order[{k}]", f"layer {name!r} appears twice")
        for s in inputs[i]:
            if s not in seen:
                raise InvalidInstanceError(
                    f"order[{k}]",
                    f"layer {name!r} runs before its input {profile.layers[s].name!r}",
                )
        seen.add(i)
        out.append(i)
    if len(out) != n:
        missing = next(layer.name for i, layer in enumerate(profile.layers) if i not in seen)
        raise InvalidInstanceError("order", f"misses layer {missing!r} (and must name all {n})")
    return out


@dataclass(frozen=True, eq=False)
class IterationDAG:
    """One training iteration on one compute stream and one communication channel.

    Build it with :func:`build_dag`. Arrays over layers are indexed by **execution position**
    ``p`` (0 = first forward op); arrays over tensors are in **consumption order** (the order in
    which the next forward pass first reads them, ties in declaration order), which is the
    priority order of the exact schedule.

    Attributes
    ----------
    name : str
        Model name.
    layers : tuple of str
        Layer names in execution order.
    forward_ms, backward_ms, update_ms : ndarray
        Per execution position: forward and backward time, and the optimizer updates that run
        just before the forward op (of the tensors it reads first).
    inputs : tuple of tuple of int
        Execution positions of each layer's inputs.
    tensors : tuple of str
        Tensor names in consumption order.
    tensor_bytes : ndarray
        Gradient bytes per tensor.
    tensor_position : ndarray of int
        Execution position of each tensor's layer (its producer in backward and first consumer
        in forward).
    tensor_declared : ndarray of int
        Each tensor's index in the profile's declaration order (the "layer index" that P3 and
        ByteScheduler use as priority).
    tensor_update_ms : ndarray
        Optimizer update time per tensor.
    """

    name: str
    layers: tuple[str, ...]
    forward_ms: NDArray[np.float64]
    backward_ms: NDArray[np.float64]
    update_ms: NDArray[np.float64]
    inputs: tuple[tuple[int, ...], ...]
    tensors: tuple[str, ...]
    tensor_bytes: NDArray[np.float64]
    tensor_position: NDArray[np.int64]
    tensor_declared: NDArray[np.int64]
    tensor_update_ms: NDArray[np.float64]
    meta: dict[str, object] = field(default_factory=dict)

    # -- derived timing ---------------------------------------------------------------------

    @property
    def n_tensors(self) -> int:
        """Number of gradient tensors."""
        return len(self.tensors)

    @cached_property
    def backward_end(self) -> NDArray[np.float64]:
        """End of each layer's backward op (by execution position); backward starts at 0."""
        # Backward runs in reverse execution order: the op at position p ends after every
        # op at positions >= p.
        return np.cumsum(self.backward_ms[::-1])[::-1].copy()

    @cached_property
    def with_updates(self) -> bool:
        """Whether the stream runs update ops (some update time is positive)."""
        return bool(np.any(self.tensor_update_ms > 0))

    @cached_property
    def stream_ops(self) -> tuple[tuple[str, int], ...]:
        """Ops of the stream after the backward pass, in order.

        Each is ``("U", tensor)`` or ``("F", position)``; update ops appear only when some
        update time is positive.
        """
        ops: list[tuple[str, int]] = []
        j = 0
        n = self.n_tensors
        for p in range(len(self.layers)):
            while j < n and self.tensor_position[j] == p:
                if self.with_updates:
                    ops.append(("U", j))
                j += 1
            ops.append(("F", p))
        return tuple(ops)

    @cached_property
    def stream_durations(self) -> NDArray[np.float64]:
        """Duration of each op of :attr:`stream_ops`."""
        return np.array(
            [
                self.tensor_update_ms[i] if kind == "U" else self.forward_ms[i]
                for kind, i in self.stream_ops
            ],
            dtype=np.float64,
        )

    @cached_property
    def stream_tail(self) -> NDArray[np.float64]:
        """Compute from each op of :attr:`stream_ops` to the end of the forward pass."""
        d = self.stream_durations
        return np.cumsum(d[::-1])[::-1].copy()

    @cached_property
    def release(self) -> NDArray[np.float64]:
        """Release time :math:`r_j` of each tensor's gradient (ms)."""
        return self.backward_end[self.tensor_position].copy()

    @cached_property
    def tail(self) -> NDArray[np.float64]:
        """Tail :math:`q_j`: compute that must follow tensor ``j``'s all-reduce (ms).

        From the tensor's own update op (or, without updates, its consumer's forward op) to
        the end of the forward pass.
        """
        q = np.zeros(self.n_tensors)
        forward_op = {}
        for k, (kind, i) in enumerate(self.stream_ops):
            if kind == "U":
                q[i] = self.stream_tail[k]
            else:
                forward_op[i] = k
        if not self.with_updates:
            q = self.stream_tail[[forward_op[int(p)] for p in self.tensor_position]]
        return np.asarray(q, dtype=np.float64).copy()

    @property
    def backward_total(self) -> float:
        """Backward compute time (ms); forward may not start before it."""
        return math.fsum(self.backward_ms)

    @property
    def forward_total(self) -> float:
        """Forward plus update compute time (ms)."""
        return math.fsum(self.forward_ms) + math.fsum(self.update_ms)

    @property
    def compute_ms(self) -> float:
        """Iteration time with free communication: backward + updates + forward."""
        return self.backward_total + self.forward_total

    @property
    def total_bytes(self) -> float:
        """Bytes all-reduced per iteration."""
        return float(self.tensor_bytes.sum())

    # -- evaluation -------------------------------------------------------------------------

    def stream_schedule(self, completion: ArrayLike) -> NDArray[np.float64]:
        """Start and end of each op of :attr:`stream_ops` given tensor completions.

        An update op waits for its tensor's all-reduce, a forward op for all of its layer's
        tensors, and every op for the previous one; the first waits for the backward pass.

        Parameters
        ----------
        completion : array_like
            All-reduce completion time of each tensor (consumption order).

        Returns
        -------
        ndarray of shape (n_ops, 2)
            ``[start, end]`` per op.
        """
        c = np.asarray(completion, dtype=np.float64)
        ready_layer = np.zeros(len(self.layers))
        if c.size:
            np.maximum.at(ready_layer, self.tensor_position, c)
        ops = self.stream_ops
        dur = self.stream_durations
        out = np.empty((len(ops), 2))
        t = self.backward_total
        for k, (kind, i) in enumerate(ops):
            ready = c[i] if kind == "U" else ready_layer[i]
            start = max(t, ready)
            t = start + dur[k]
            out[k] = (start, t)
        return out

    def iteration_time(self, completion: ArrayLike) -> float:
        """Iteration time given tensor completions (end of the last forward op)."""
        if len(self.layers) == 0:
            return 0.0
        return float(self.stream_schedule(completion)[-1, 1])

    # -- the networkx view ------------------------------------------------------------------

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The iteration DAG as a :class:`networkx.DiGraph`.

        Node keys are ``(kind, name)``; attributes ``kind``, ``duration`` (ms; ``None`` for
        all-reduce nodes, whose time the schedule decides), ``position`` and, for ``A``/``U``
        nodes, ``tensor`` (index in consumption order). Edge attribute ``kind`` is ``"grad"``,
        ``"param"``, ``"data"`` or ``"stream"``.
        """
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        for p, layer in enumerate(self.layers):
            g.add_node(("B", layer), kind="B", duration=float(self.backward_ms[p]), position=p)
            g.add_node(("F", layer), kind="F", duration=float(self.forward_ms[p]), position=p)
        for p, srcs in enumerate(self.inputs):
            for s in srcs:
                g.add_edge(("F", self.layers[s]), ("F", self.layers[p]), kind="data")
                g.add_edge(("B", self.layers[p]), ("B", self.layers[s]), kind="data")
        # The stream: B in reverse execution order, then per layer its updates and forward.
        stream: list[tuple[str, str]] = [("B", layer) for layer in reversed(self.layers)]
        with_updates = self.with_updates
        for j, tname in enumerate(self.tensors):
            p = int(self.tensor_position[j])
            layer = self.layers[p]
            g.add_node(("A", tname), kind="A", duration=None, position=p, tensor=j)
            g.add_edge(("B", layer), ("A", tname), kind="grad")
            if with_updates:
                g.add_node(
                    ("U", tname),
                    kind="U",
                    duration=float(self.tensor_update_ms[j]),
                    position=p,
                    tensor=j,
                )
                g.add_edge(("A", tname), ("U", tname), kind="param")
                g.add_edge(("U", tname), ("F", layer), kind="param")
            else:
                g.add_edge(("A", tname), ("F", layer), kind="param")
        for kind, i in self.stream_ops:
            stream.append(("U", self.tensors[i]) if kind == "U" else ("F", self.layers[i]))
        for u, v in itertools.pairwise(stream):
            if not g.has_edge(u, v):
                g.add_edge(u, v, kind="stream")
        return g

    def graph_makespan(self, completion: ArrayLike) -> float:
        """Iteration time by a longest-path pass over :attr:`graph`.

        An independent evaluation of :meth:`iteration_time`: every node starts when all its
        predecessors have ended; an all-reduce node ends at its completion time.

        Raises
        ------
        ValueError
            A completion precedes the release of its gradient.
        """
        import networkx as nx

        c = np.asarray(completion, dtype=np.float64)
        g = self.graph
        end: dict[object, float] = {}
        for v in nx.topological_sort(g):
            data = g.nodes[v]
            start = max((end[u] for u in g.predecessors(v)), default=0.0)
            if data["kind"] == "A":
                done = float(c[data["tensor"]])
                if done < start - 1e-9 * max(1.0, abs(start)):
                    raise ValueError(f"tensor {v[1]!r} completes at {done} before its gradient")
                end[v] = done
            else:
                end[v] = start + float(data["duration"])
        return max(end.values(), default=0.0)

    def summary(self) -> dict[str, object]:
        """JSON-ready figures of the compute side."""
        return {
            "layers": len(self.layers),
            "tensors": self.n_tensors,
            "total_bytes": self.total_bytes,
            "backward_ms": self.backward_total,
            "forward_ms": math.fsum(self.forward_ms),
            "update_ms": math.fsum(self.update_ms),
            "compute_ms": self.compute_ms,
            **self.meta,
        }


def build_dag(
    profile: Profile,
    *,
    order: str | Sequence[str] | None = None,
    update_ms_per_mb: float = 0.0,
) -> IterationDAG:
    """Build the iteration DAG of ``profile``.

    Parameters
    ----------
    profile : Profile
        Layers, tensors and compute times.
    order : {"profile", "kahn"} or sequence of str, optional
        Forward execution order (see :func:`execution_order`).
    update_ms_per_mb : float, default 0
        Optimizer update time per MB (10^6 bytes) of parameters; 0 leaves the updates out.

    Returns
    -------
    IterationDAG

    Raises
    ------
    InvalidInstanceError
        A bad ``order`` or a negative ``update_ms_per_mb``.

    Notes
    -----
    Complexity :math:`O(L + n)` for ``L`` layers and ``n`` tensors (the networkx graph is
    built lazily).
    """
    if not (
        not isinstance(update_ms_per_mb, bool)
        and isinstance(update_ms_per_mb, (int, float))
        and math.isfinite(update_ms_per_mb)
        and update_ms_per_mb >= 0
    ):
        raise InvalidInstanceError(
            "update_ms_per_mb", f"must be a finite number >= 0, got {update_ms_per_mb!r}"
        )
    exec_order = execution_order(profile, order)
    position_of = {i: p for p, i in enumerate(exec_order)}
    index = {layer.name: i for i, layer in enumerate(profile.layers)}
    declared: dict[str, int] = {t.name: k for k, t in enumerate(profile.tensors)}
    layers = tuple(profile.layers[i].name for i in exec_order)
    forward = np.array([profile.layers[i].forward_ms for i in exec_order], dtype=np.float64)
    backward = np.array([profile.layers[i].backward_ms for i in exec_order], dtype=np.float64)
    inputs = tuple(
        tuple(position_of[index[s]] for s in profile.layer_inputs(i)) for i in exec_order
    )
    names: list[str] = []
    sizes: list[float] = []
    positions: list[int] = []
    decl: list[int] = []
    for p, i in enumerate(exec_order):
        for t in profile.layers[i].tensors:
            names.append(t.name)
            sizes.append(float(t.params * profile.dtype_bytes))
            positions.append(p)
            decl.append(declared[t.name])
    tensor_bytes = np.array(sizes, dtype=np.float64)
    tensor_update = tensor_bytes / MB * float(update_ms_per_mb)
    update = np.zeros(len(layers))
    np.add.at(update, np.array(positions, dtype=np.int64), tensor_update)
    return IterationDAG(
        name=profile.name,
        layers=layers,
        forward_ms=forward,
        backward_ms=backward,
        update_ms=update,
        inputs=inputs,
        tensors=tuple(names),
        tensor_bytes=tensor_bytes,
        tensor_position=np.array(positions, dtype=np.int64),
        tensor_declared=np.array(decl, dtype=np.int64),
        tensor_update_ms=tensor_update,
        meta={
            "model": profile.name,
            "order": order if isinstance(order, str) or order is None else "custom",
            "update_ms_per_mb": float(update_ms_per_mb),
        },
    )
