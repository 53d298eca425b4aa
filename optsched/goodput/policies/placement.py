r"""Most-free-node-first placement, the baselines' of Pollux's simulator.

The artifact's Tiresias and Optimus place a job's ``k`` GPUs one node at a time: take the node
with the most free GPUs (the first such node in index order: ``Counter.most_common(1)`` returns
the first of equal counts, and the counter holds the nodes in index order), take
``min(free, still needed)`` of its GPUs, repeat. The allocation lists the nodes in the order
taken, which is the placement's order (what the throughput look-up reads).

:math:`O(k \cdot n)` for ``n`` nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from optsched.errors import PolicyError
from optsched.goodput.decision import Allocation, ClusterView

__all__ = ["free_gpus", "keep_known", "most_free_first"]


def free_gpus(cluster: ClusterView, held: Iterable[Allocation]) -> list[int]:
    """Free GPUs per node once the allocations ``held`` are taken out."""
    free = [cluster.gpus_per_node] * cluster.num_nodes
    for alloc in held:
        for node in alloc:
            free[node] -= 1
    return free


def most_free_first(free: list[int], count: int, job: str) -> Allocation:
    """Take ``count`` GPUs from ``free`` (updated in place), most free node first.

    Raises
    ------
    PolicyError
        When the cluster has fewer than ``count`` free GPUs (naming ``job``).
    """
    taken: list[int] = []
    while len(taken) < count:
        best = max(range(len(free)), key=free.__getitem__, default=None)
        if best is None or free[best] <= 0:
            raise PolicyError(f"job {job!r}: {count} GPUs asked, the cluster has too few free")
        num = min(free[best], count - len(taken))
        taken.extend([best] * num)
        free[best] -= num
    return tuple(taken)


def keep_known(previous: Mapping[str, Allocation], jobs: Iterable[str]) -> dict[str, Allocation]:
    """The previous allocations of the jobs still active."""
    names = set(jobs)
    return {k: tuple(v) for k, v in previous.items() if k in names}
