"""Communication-scheduling policies, all run through the same simulator and cost model.

Each policy turns the iteration DAG into a :class:`~optsched.comm.pace.simulate.ChannelPlan`: the
pieces it sends, their priorities and the channel discipline.

``fifo``
    Tensors in readiness (release) order, one call each, not preemptive.
``horovod``
    FIFO plus tensor fusion: at every cycle tick the ready tensors are fused, in readiness
    order, into calls of at most the fusion threshold [S: Horovod docs, "Tensor Fusion";
    defaults 64 MB / 5 ms are [M]].
``p3``
    Tensors sliced into fixed-size pieces, sent one at a time by layer index (closer to the
    input first); preemption at slice boundaries [S: P3, MLSys'19].
``tictac``
    Whole tensors, one at a time, in the order the forward pass consumes them; not preemptive
    [S: TicTac, MLSys'19].
``bytescheduler``
    Partitions sent by layer-index priority while the bytes in flight stay within a credit;
    partition size and credit tuned by a search over a grid [S: ByteScheduler, SOSP'19, and
    its docs; it tunes with Bayesian optimisation, we search the whole grid].
``pace``
    The fusion DP's groups under the optimal preemptive schedule [R: reconstruction of PACE,
    INFOCOM'20; see the formulation page].

Why PACE can be no slower than any baseline here: every baseline's schedule is a sequence of
atomic calls, each carrying whole tensors (FIFO, TicTac, Horovod) or a slice of one tensor
(P3, ByteScheduler). For slices, the single preemptable call per tensor of PACE's unfused
grouping needs less channel time and can be preempted anywhere, so its optimal schedule
finishes every tensor no later. Horovod's groups are contiguous in readiness order, hence in
consumption order, and within the fusion limit, so they are one of the groupings the fusion
DP optimises over. The optimal preemptive schedule of a grouping is no worse than any schedule
of it. The premise is that of the PACE model: a preempted all-reduce resumes at no cost.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from numpy.typing import NDArray

from optsched.comm.pace.cost import MB, CostModel, number
from optsched.comm.pace.dag import IterationDAG
from optsched.comm.pace.fusion import optimal_fusion
from optsched.comm.pace.schedule import CommSchedule
from optsched.comm.pace.simulate import ChannelPlan, Engine, lower_bound, simulate
from optsched.errors import InvalidInstanceError
from optsched.limits import check_size

if TYPE_CHECKING:
    from optsched.comm.pace.instance import CommInstance

__all__ = [
    "BYTESCHEDULER_CREDITS",
    "BYTESCHEDULER_PARTITIONS_MB",
    "FIFO",
    "P3",
    "PIECE_CELLS",
    "POLICIES",
    "ByteScheduler",
    "CommPolicy",
    "Horovod",
    "Pace",
    "TicTac",
    "default_policies",
    "run_policy",
]

#: Partition sizes (MB) ByteScheduler's tuner searches.
BYTESCHEDULER_PARTITIONS_MB: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: Credits, in partitions, ByteScheduler's tuner searches.
BYTESCHEDULER_CREDITS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)


def _positive(value: float, field_name: str) -> float:
    value = number(value, field_name)
    if not (math.isfinite(value) and value > 0):
        raise InvalidInstanceError(field_name, f"must be a finite number > 0, got {value!r}")
    return value


def _rank(*keys: NDArray) -> NDArray[np.float64]:
    """Dense rank by lexicographic keys (last key most significant, as in np.lexsort)."""
    order = np.lexsort(keys)
    rank = np.empty(order.size)
    rank[order] = np.arange(order.size)
    return rank


def _whole_tensors(dag: IterationDAG) -> list[list[tuple[int, float]]]:
    return [[(j, float(dag.tensor_bytes[j]))] for j in range(dag.n_tensors)]


def _release_rank(dag: IterationDAG) -> NDArray[np.float64]:
    # Readiness order; gradients of one layer appear in reverse declaration order (backward
    # walks the layer backwards), i.e. by decreasing consumption index.
    idx = np.arange(dag.n_tensors)
    return _rank(-idx, dag.release)


#: Cost of one piece of a plan, in 8-byte cells: the Python objects of the piece list, the
#: plan's arrays and the validator's per-piece work. The slicing budget counts
#: ``pieces * PIECE_CELLS`` against ``max_array_cells`` (by default about 390,000 pieces per
#: plan), so a tensor sliced into absurdly many partitions is refused before it is sliced.
PIECE_CELLS = 256


def _slices(
    dag: IterationDAG, slice_bytes: float, field_name: str = "partition_mb"
) -> tuple[list[list[tuple[int, float]]], list[int], list[int]]:
    # The loop below runs once per slice: bound the count before building anything.
    counts = np.maximum(np.ceil(dag.tensor_bytes / slice_bytes), 1.0)
    check_size(field_name, float(counts.sum()) * PIECE_CELLS, "max_array_cells", "cells of slices")
    pieces: list[list[tuple[int, float]]] = []
    tensor: list[int] = []
    index: list[int] = []
    for j in range(dag.n_tensors):
        size = float(dag.tensor_bytes[j])
        m = max(1, math.ceil(size / slice_bytes))
        for k in range(m):
            # The last piece takes the rest; a tensor in one piece is whole (with a slice size
            # past float range, slice_bytes * 0 would be NaN).
            part = slice_bytes if k < m - 1 else size - slice_bytes * (m - 1) if m > 1 else size
            pieces.append([(j, part)])
            tensor.append(j)
            index.append(k)
    return pieces, tensor, index


class CommPolicy(ABC):
    """A communication-scheduling policy: builds a channel plan for a DAG and cost model."""

    name: ClassVar[str]

    @abstractmethod
    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        """What to send and how."""

    def params(self) -> dict[str, object]:
        """Settings, JSON-ready."""
        return {}

    def run(self, dag: IterationDAG, cost: CostModel, *, engine: Engine = "numba") -> CommSchedule:
        """Simulate one iteration of ``dag`` under ``cost`` (the lower-level entry point)."""
        plan = self.plan(dag, cost)
        trace = simulate(dag, cost, plan, engine=engine)
        return CommSchedule(
            self.name,
            trace.iteration_time,
            lower_bound(dag, cost),
            trace.overlap,
            self.params(),
            trace,
            plan,
            dag,
        )

    def __call__(self, instance: CommInstance, *, engine: Engine = "numba") -> CommSchedule:
        """Schedule one iteration of ``instance`` (the family's calling convention).

        Examples
        --------
        >>> from optsched.comm.pace import FIFO, CommInstance
        >>> FIFO()(CommInstance(profile="alexnet")).name
        'fifo'
        """
        return self.run(instance.dag, instance.cost, engine=engine)


@dataclass(frozen=True)
class FIFO(CommPolicy):
    """Whole tensors in readiness order, one call at a time (framework default, no fusion)."""

    name: ClassVar[str] = "fifo"

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        return ChannelPlan.from_groups(dag, _whole_tensors(dag), _release_rank(dag))


@dataclass(frozen=True)
class Horovod(CommPolicy):
    """Readiness order with tensor fusion at every cycle.

    Parameters
    ----------
    threshold_mb : float, default 64
        ``HOROVOD_FUSION_THRESHOLD``: a fused call carries at most this many MB (10^6 bytes;
        Horovod's own default is 64 MiB = 67.108864 MB); a larger tensor travels alone.
    cycle_ms : float, default 5
        ``HOROVOD_CYCLE_TIME``: ready tensors are collected and launched every cycle.
    """

    threshold_mb: float = 64.0
    cycle_ms: float = 5.0
    name: ClassVar[str] = "horovod"

    def __post_init__(self) -> None:
        _positive(self.threshold_mb, "horovod.threshold_mb")
        _positive(self.cycle_ms, "horovod.cycle_ms")

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        # The simulator counts cycle ticks in float64: keep every tick index below 2^52 so
        # that tick times are exact and the loop's jumps land on them.
        horizon = (
            dag.compute_ms + dag.n_tensors * cost.alpha_ms + cost.beta_ms_per_byte * dag.total_bytes
        )
        if horizon / self.cycle_ms > 2.0**52:
            raise InvalidInstanceError(
                "horovod.cycle_ms",
                f"{self.cycle_ms:g} ms is too fine for an iteration of up to {horizon:.6g} ms "
                "(more than 2^52 cycles)",
            )
        return ChannelPlan.from_groups(
            dag,
            _whole_tensors(dag),
            _release_rank(dag),
            fuse_limit=self.threshold_mb * MB,
            cycle=self.cycle_ms,
            window=math.inf,
        )

    def params(self) -> dict[str, object]:
        return {"threshold_mb": self.threshold_mb, "cycle_ms": self.cycle_ms}


@dataclass(frozen=True)
class P3(CommPolicy):
    """Priority-based parameter propagation: slices by layer index, one at a time.

    Parameters
    ----------
    slice_mb : float, default 4
        Slice size in MB (10^6 bytes) [R: the reference's default partition].
    """

    slice_mb: float = 4.0
    name: ClassVar[str] = "p3"

    def __post_init__(self) -> None:
        _positive(self.slice_mb, "p3.slice_mb")

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        pieces, tensor, index = _slices(dag, self.slice_mb * MB, "p3.slice_mb")
        declared = dag.tensor_declared[np.array(tensor, dtype=np.int64)]
        prio = _rank(np.array(index, dtype=np.float64), declared.astype(np.float64))
        return ChannelPlan.from_groups(dag, pieces, prio)

    def params(self) -> dict[str, object]:
        return {"slice_mb": self.slice_mb}


@dataclass(frozen=True)
class TicTac(CommPolicy):
    """Whole tensors in consumption order of the forward DAG, one call at a time."""

    name: ClassVar[str] = "tictac"

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        return ChannelPlan.from_groups(
            dag, _whole_tensors(dag), np.arange(dag.n_tensors, dtype=np.float64)
        )


@dataclass(frozen=True)
class ByteScheduler(CommPolicy):
    """Layer-index priority, partitions and a credit window, auto-tuned.

    Parameters
    ----------
    partition_mb : float, optional
        Partition size in MB (10^6 bytes); ``None`` tunes it over
        :data:`BYTESCHEDULER_PARTITIONS_MB`.
    credit : float, optional
        Credit in partitions (bytes in flight / partition size); ``None`` tunes it over
        :data:`BYTESCHEDULER_CREDITS` (credit tuning is on by default in ByteScheduler).
    """

    partition_mb: float | None = None
    credit: float | None = None
    name: ClassVar[str] = "bytescheduler"

    def __post_init__(self) -> None:
        if self.partition_mb is not None:
            _positive(self.partition_mb, "bytescheduler.partition_mb")
        if self.credit is not None and _positive(self.credit, "bytescheduler.credit") < 1:
            raise InvalidInstanceError("bytescheduler.credit", "must be >= 1 partition")

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        if self.partition_mb is None or self.credit is None:
            raise InvalidInstanceError(
                "bytescheduler", "plan() needs a fixed partition and credit; run() tunes them"
            )
        part = self.partition_mb * MB
        pieces, tensor, index = _slices(dag, part, "bytescheduler.partition_mb")
        declared = dag.tensor_declared[np.array(tensor, dtype=np.int64)]
        prio = _rank(np.array(index, dtype=np.float64), declared.astype(np.float64))
        return ChannelPlan.from_groups(dag, pieces, prio, window=self.credit * part)

    def params(self) -> dict[str, object]:
        return {"partition_mb": self.partition_mb, "credit": self.credit}

    def run(self, dag: IterationDAG, cost: CostModel, *, engine: Engine = "numba") -> CommSchedule:
        parts = (
            (self.partition_mb,) if self.partition_mb is not None else BYTESCHEDULER_PARTITIONS_MB
        )
        credits = (self.credit,) if self.credit is not None else BYTESCHEDULER_CREDITS
        best: CommSchedule | None = None
        tried: list[dict[str, float]] = []
        for p in parts:
            for c in credits:
                result = CommPolicy.run(ByteScheduler(p, c), dag, cost, engine=engine)
                tried.append(
                    {"partition_mb": p, "credit": c, "iteration_time": result.iteration_time}
                )
                if best is None or result.iteration_time < best.iteration_time:
                    best = result
        assert best is not None
        return CommSchedule(
            self.name,
            best.iteration_time,
            best.lower_bound,
            best.overlap,
            {**best.params, "tuned": self.partition_mb is None or self.credit is None},
            best.trace,
            best.plan,
            dag,
            tried,
        )


@dataclass(frozen=True)
class Pace(CommPolicy):
    """PACE: fusion DP plus the optimal preemptive schedule.

    Parameters
    ----------
    max_group_mb : float or None, default 64
        Fusion buffer: a group of two or more tensors carries at most this many MB (10^6
        bytes). Give it the
        same value as Horovod's threshold to compare on equal terms.
    max_group_tensors : int, optional
        Limit on tensors per group.
    """

    max_group_mb: float | None = 64.0
    max_group_tensors: int | None = None
    name: ClassVar[str] = "pace"

    def __post_init__(self) -> None:
        if self.max_group_mb is not None:
            _positive(self.max_group_mb, "pace.max_group_mb")
        t = self.max_group_tensors
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise InvalidInstanceError(
                "pace.max_group_tensors", f"must be an integer >= 1, got {t!r}"
            )

    def groups(self, dag: IterationDAG, cost: CostModel) -> tuple[tuple[int, int], ...]:
        """The fused groups (ranges in consumption order)."""
        return optimal_fusion(
            dag, cost, max_group_mb=self.max_group_mb, max_group_tensors=self.max_group_tensors
        ).groups

    def plan(self, dag: IterationDAG, cost: CostModel) -> ChannelPlan:
        return self.plan_from_groups(dag, self.groups(dag, cost))

    @staticmethod
    def plan_from_groups(dag: IterationDAG, groups: tuple[tuple[int, int], ...]) -> ChannelPlan:
        """The preemptive plan sending each group as one call, in group order of priority."""
        pieces = [[(j, float(dag.tensor_bytes[j])) for j in range(a, b)] for a, b in groups]
        # Groups are in consumption order and their tails do not increase along it, so the
        # group index is Jackson's largest-tail-first priority.
        return ChannelPlan.from_groups(
            dag, pieces, np.arange(len(groups), dtype=np.float64), preemptive=True
        )

    def params(self) -> dict[str, object]:
        return {"max_group_mb": self.max_group_mb, "max_group_tensors": self.max_group_tensors}


POLICIES: dict[str, type[CommPolicy]] = {
    cls.name: cls for cls in (FIFO, Horovod, P3, TicTac, ByteScheduler, Pace)
}


def default_policies(
    *,
    partition_mb: float | None = None,
    fusion_mb: float = 64.0,
    cycle_ms: float = 5.0,
) -> list[CommPolicy]:
    """The six policies, configured on equal terms.

    Parameters
    ----------
    partition_mb : float, optional
        Partition (slice) size of P3 and ByteScheduler; ``None`` = P3's default and
        ByteScheduler's tuned size.
    fusion_mb : float, default 64
        Horovod's fusion threshold and PACE's fusion buffer.
    cycle_ms : float, default 5
        Horovod's cycle time.
    """
    return [
        FIFO(),
        Horovod(threshold_mb=fusion_mb, cycle_ms=cycle_ms),
        P3() if partition_mb is None else P3(slice_mb=partition_mb),
        TicTac(),
        ByteScheduler(partition_mb=partition_mb),
        Pace(max_group_mb=fusion_mb),
    ]


def run_policy(
    policy: CommPolicy | str, instance: CommInstance, *, engine: Engine = "numba"
) -> CommSchedule:
    """Run a policy (an object or a name from :data:`POLICIES` with default settings).

    Raises
    ------
    InvalidInstanceError
        An unknown policy name (field ``policy``).
    """
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise InvalidInstanceError(
                "policy", f"unknown policy {policy!r}; known: {sorted(POLICIES)}"
            )
        policy = POLICIES[policy]()
    return policy(instance, engine=engine)
