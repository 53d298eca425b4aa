r"""A job's speedup: its best goodput on an allocation over its best goodput on one GPU.

Pollux's scheduler compares allocations by each job's *speedup* (Qiao et al., OSDI'21, §4.2,
Eq. 13):

.. math::

   \mathrm{SPEEDUP}(N, K) = \frac{\max_{m, s} \mathrm{GOODPUT}(N, K, m, s)}
                                 {\max_{m, s} \mathrm{GOODPUT}(1, 1, m, s)},
   \qquad \mathrm{SPEEDUP}(0, 0) = 0,

each maximum being the job's own batch choice (:func:`~optsched.goodput.batch.best_batch`,
with gradient accumulation, as the artifact's scheduler asks for it). A speedup table over the
allocations a policy may consider is the input of both Pollux's genetic algorithm and of an
exact model over the same configurations.
"""

from __future__ import annotations

from collections.abc import Iterable

from optsched.errors import InvalidInstanceError
from optsched.goodput.batch import BatchLimits, best_batch, best_goodputs
from optsched.goodput.goodput import GoodputModel

__all__ = ["SpeedupTable"]


class SpeedupTable:
    r"""Memoized :math:`\mathrm{SPEEDUP}(N, K)` of one job's current goodput model.

    Parameters
    ----------
    model : GoodputModel
        The job's model (fitted parameters, current gradient statistics).
    limits : BatchLimits
        Its batch limits.
    accumulation : bool
        Whether the batch choice may accumulate gradients (the artifact's scheduler: yes).

    Notes
    -----
    Each new :math:`(N, K)` costs one :func:`~optsched.goodput.batch.best_batch`
    (:math:`O(c)` for ``c`` candidate batches); a repeated one is a dictionary look-up.
    """

    def __init__(self, model: GoodputModel, limits: BatchLimits, *, accumulation: bool = True):
        self.model = model
        self.limits = limits
        self.accumulation = accumulation
        self._cache: dict[tuple[int, int], float] = {}
        self.base = best_batch(model, limits, 1, 1, accumulation=accumulation).goodput
        if not self.base > 0:
            raise InvalidInstanceError(
                "limits", "no batch within the limits runs on one GPU (its goodput is 0)"
            )

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        r""":math:`\mathrm{SPEEDUP}(N, K)`; 0 for no GPUs."""
        if num_nodes == 0 and num_replicas == 0:
            return 0.0
        key = (num_nodes, num_replicas)
        hit = self._cache.get(key)
        if hit is None:
            choice = best_batch(self.model, self.limits, num_nodes, num_replicas,
                                accumulation=self.accumulation)  # fmt: skip
            hit = self._cache[key] = choice.goodput / self.base
        return hit

    def many(self, pairs: Iterable[tuple[int, int]]) -> list[float]:
        r""":math:`\mathrm{SPEEDUP}(N, K)` of each ``(num_nodes, num_replicas)`` pair.

        The pairs not yet known are computed together
        (:func:`~optsched.goodput.batch.best_goodputs`); the values are those of
        :meth:`__call__`.
        """
        pairs = [(int(k), int(n)) for k, n in pairs]
        todo = [p for p in dict.fromkeys(pairs) if p != (0, 0) and p not in self._cache]
        if todo:
            nodes, replicas = [k for k, _ in todo], [n for _, n in todo]
            values = best_goodputs(
                self.model, self.limits, nodes, replicas, accumulation=self.accumulation
            )
            for key, value in zip(todo, values.tolist(), strict=True):
                self._cache[key] = value / self.base
        return [self(k, n) for k, n in pairs]
