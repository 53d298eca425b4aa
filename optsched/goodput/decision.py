r"""What a goodput-world policy sees at a decision, and what it returns.

The goodput world's cluster has ``num_nodes`` identical nodes of ``gpus_per_node`` GPUs. Every
``interval`` seconds (60 s in Pollux's simulator) the cluster advances each job, then asks its
policy for an allocation of every active job. A policy sees each job as a :class:`JobView` (what
the artifact's simulator hands its policies as ``JobInfo``: the job's speedup function, service,
replica bounds, restarts and age, plus the oracle fields the Optimus+Oracle baseline reads) and
the cluster as a :class:`ClusterView`.

An **allocation** is a tuple with one node index per GPU, each node's GPUs together
(``(0, 0, 3)`` is two GPUs on node 0 and one on node 3); the empty tuple means no GPUs. The
order of the nodes is the order of the job's *placement* (:func:`placement_of`), which the
measured step times depend on (placement ``142`` is not ``124``, up to rotation): the
artifact's baselines list nodes in the order they take them (``(3, 3, 3, 3, 0, 1)``); a policy
with no reason to choose lists them in increasing order. A policy returns a mapping
from job name to allocation for the jobs it runs; a job left out gets no GPUs. The cluster
restarts a job (a restart delay, its batch re-chosen) exactly when its allocation differs from
the previous one, as the artifact's simulator does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from optsched.goodput.traces import ModelTraces

__all__ = ["Allocation", "ClusterView", "GoodputPolicy", "JobView", "SpeedupFn", "placement_of"]

#: One node index per GPU, each node's GPUs together, nodes in placement order; ``()`` for none.
Allocation = tuple[int, ...]

#: :math:`\mathrm{SPEEDUP}(K, N)`: the job's goodput on ``N`` GPUs over ``K`` nodes relative to
#: its goodput on one GPU (:class:`~optsched.goodput.speedup.SpeedupTable`).
SpeedupFn = Callable[[int, int], float]


@dataclass(frozen=True)
class JobView:
    """One active job as a policy sees it at a decision.

    Attributes
    ----------
    name : str
        The workload's job name (unique).
    submission_time : float
        Seconds from the start of the workload.
    attained_service : float
        GPU-seconds allocated so far (restart delays included, as the artifact counts them).
    min_replicas, max_replicas : int
        Bounds on the job's GPU count; ``max_replicas >= max(1, min_replicas)``.
    num_restarts : int
        Reallocations after the first allocation.
    age : float
        Seconds since submission.
    epoch : int
        The epoch the job is in.
    application : str
        The job type (a folder of the artifact's ``traces/``).
    traces : ModelTraces
        The job type's measurements: the **oracle** an Optimus+Oracle policy may read. Goodput
        policies must use ``speedup`` only.
    speedup : SpeedupFn
        The job's current speedup function (its agent's model; ``lambda K, N: N`` before the job
        has a fitted model, as in the artifact).
    target_batch_size : int or None
        The fixed-batch baselines' global batch; ``None`` when the batch adapts.
    target_num_replicas : int or None
        The owner's requested GPU count (the rigid baselines' gang); ``None`` when adaptive.
    """

    name: str
    submission_time: float
    attained_service: float
    min_replicas: int
    max_replicas: int
    num_restarts: int
    age: float
    epoch: int
    application: str
    traces: ModelTraces
    speedup: SpeedupFn
    target_batch_size: int | None = None
    target_num_replicas: int | None = None


@dataclass(frozen=True)
class ClusterView:
    """The cluster at a decision: ``num_nodes`` nodes of ``gpus_per_node`` GPUs at ``time`` s."""

    num_nodes: int
    gpus_per_node: int
    time: float

    @property
    def num_gpus(self) -> int:
        """All GPUs of the cluster."""
        return self.num_nodes * self.gpus_per_node


class GoodputPolicy(Protocol):
    """A policy of the goodput world.

    ``jobs`` lists the active jobs in workload order (the order the artifact's simulator hands
    them over, which its policies' tie-breaks depend on); ``previous`` holds the allocations of
    the last decision for jobs still active.
    """

    name: str

    def allocate(
        self,
        jobs: Mapping[str, JobView],
        cluster: ClusterView,
        previous: Mapping[str, Allocation],
    ) -> dict[str, Allocation]:
        """Return the allocation of every job that gets GPUs (see the module docstring)."""
        ...


def placement_of(allocation: Allocation) -> tuple[int, ...]:
    """GPUs per node used, in order of first appearance: ``(0, 0, 3) -> (2, 1)``.

    This is the artifact's *placement* (the shape the throughput model reads); ``()`` for none.
    """
    counts: dict[int, int] = {}
    for node in allocation:
        counts[node] = counts.get(node, 0) + 1
    return tuple(counts.values())
