r"""Each job's local choice of batch size and gradient accumulation for a given allocation.

Given the GPUs a job holds (:math:`K` replicas on :math:`N` nodes), Pollux's agent picks the
global batch :math:`M` and its split into an atomic per-GPU batch :math:`m` and accumulation
steps :math:`s` that maximize the job's goodput (Qiao et al., OSDI'21, §3.1, Eq. 12):

.. math::

   \max_{M,\, m,\, s}\; \mathrm{GOODPUT}(N, K, m, s)
   \quad\text{s.t.}\quad M = K m (s + 1),\;
   M_0 \le M \le M_\mathrm{max},\; m_\mathrm{min} \le m \le m_\mathrm{max}.

As the artifact does, :math:`M` is searched over a geometric grid of ``candidates`` values from
:math:`\max(M_0, K m_\mathrm{min})` to :math:`M_\mathrm{max}` (50 in the artifact); each is
split with the fewest accumulation steps that keep the atomic batch within the GPU's limit,

.. math::

   s = \lceil M / (K m_\mathrm{max}) \rceil - 1, \qquad m = \lceil M / (K (s + 1)) \rceil,

except that a single replica training above :math:`M_0` accumulates at least once (the
gradient-noise estimate needs two atomic batches per step). A candidate whose :math:`m` falls
outside :math:`[m_\mathrm{min}, m_\mathrm{max}]` scores 0; the first best candidate is taken.
When :math:`K m_\mathrm{min} > M_\mathrm{max}` no batch within the limits exists: the grid then
runs from :math:`K m_\mathrm{min}` down to :math:`M_\mathrm{max}` (every candidate above the
maximum), as the artifact's does, and the choice is flagged ``within_limits=False``.

Complexity :math:`O(c)` per allocation for ``c`` candidates (their split is computed once per
limits and replica count and memoized).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError
from optsched.goodput.goodput import GoodputModel

__all__ = [
    "ARTIFACT_CANDIDATES",
    "BatchChoice",
    "BatchLimits",
    "best_batch",
    "best_goodputs",
    "split_batch",
]

#: Candidate global batch sizes the artifact samples per allocation.
ARTIFACT_CANDIDATES = 50
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Slack on the ceilings, so that a quotient a rounding error above a whole number is that number.
_CEIL_SLACK = 1e-8


@dataclass(frozen=True)
class BatchLimits:
    r"""A job type's batch-size limits.

    Parameters
    ----------
    init_batch_size : float
        :math:`M_0`, the submitted (and smallest) global batch.
    max_batch_size : float
        :math:`M_\mathrm{max} \ge M_0`, beyond which the job's accuracy is not trusted.
    min_local_bsz, max_local_bsz : float
        :math:`m_\mathrm{min} \le m_\mathrm{max}`, the per-GPU batch range (the upper end is the
        GPU's memory).
    """

    init_batch_size: float
    max_batch_size: float
    min_local_bsz: float
    max_local_bsz: float

    def __post_init__(self) -> None:
        for name in ("init_batch_size", "max_batch_size", "min_local_bsz", "max_local_bsz"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise InvalidInstanceError(name, f"must be a finite number > 0, got {value!r}")
        if self.max_batch_size < self.init_batch_size:
            raise InvalidInstanceError("max_batch_size", "must be >= init_batch_size")
        if self.max_local_bsz < self.min_local_bsz:
            raise InvalidInstanceError("max_local_bsz", "must be >= min_local_bsz")


@dataclass(frozen=True)
class BatchChoice:
    r"""The chosen configuration of one allocation.

    Attributes
    ----------
    goodput : float
        Its goodput (0 when no candidate is valid).
    atomic_bsz, accum_steps : int
        The per-GPU batch :math:`m` and the accumulation steps :math:`s`.
    batch_size : int
        :math:`K m (s + 1)`.
    within_limits : bool
        Whether :math:`\\max(M_0, K m_\\mathrm{min}) \\le M_\\mathrm{max}`.
    """

    goodput: float
    atomic_bsz: int
    accum_steps: int
    batch_size: int
    within_limits: bool


def split_batch(
    batch_size: float, num_replicas: int, limits: BatchLimits, *, accumulation: bool = True
) -> tuple[int, int]:
    r"""Split a global batch into ``(m, s)`` (module notes); ``s = 0`` without accumulation."""
    local = batch_size / num_replicas
    steps = 0
    if accumulation:
        steps = int(np.ceil(local / limits.max_local_bsz - _CEIL_SLACK)) - 1
        if num_replicas == 1 and local > limits.init_batch_size + _CEIL_SLACK:
            steps = max(steps, 1)
        steps = max(steps, 0)
    atomic = int(np.ceil(local / (steps + 1) - _CEIL_SLACK))
    return atomic, steps


#: The candidates of each ``(limits, num_replicas, accumulation, candidates)`` (read-only).
_CANDIDATES: dict[tuple[BatchLimits, int, bool, int], tuple[float, FloatArray, FloatArray,
                                                               BoolArray]] = {}  # fmt: skip
#: Entries kept before the memo starts over (a job type has one per replica count).
_CANDIDATES_MAX = 4096


def _candidates(
    limits: BatchLimits, num_replicas: int, accumulation: bool, candidates: int
) -> tuple[float, FloatArray, FloatArray, BoolArray]:
    """The grid's low end and each candidate's ``(m, s)`` and validity, memoized.

    They depend on the limits and the replicas only, not on the model: a policy asking the
    same job type's speedups round after round (Pollux's, hundreds per round) splits each grid
    once.
    """
    key = (limits, num_replicas, accumulation, candidates)
    hit = _CANDIDATES.get(key)
    if hit is None:
        low = max(limits.init_batch_size, limits.min_local_bsz * num_replicas)
        grid = np.geomspace(low, limits.max_batch_size, candidates)
        split = [split_batch(float(b), num_replicas, limits, accumulation=accumulation)
                 for b in grid]  # fmt: skip
        atomic = np.array([a for a, _ in split], dtype=np.float64)
        steps = np.array([s for _, s in split], dtype=np.float64)
        valid = (limits.min_local_bsz <= atomic) & (atomic <= limits.max_local_bsz)
        for array in (atomic, steps, valid):
            array.flags.writeable = False
        if len(_CANDIDATES) >= _CANDIDATES_MAX:
            _CANDIDATES.clear()
        hit = _CANDIDATES[key] = (low, atomic, steps, valid)
    return hit


def best_batch(
    model: GoodputModel,
    limits: BatchLimits,
    num_nodes: int,
    num_replicas: int,
    *,
    accumulation: bool = True,
    candidates: int = ARTIFACT_CANDIDATES,
) -> BatchChoice:
    r"""The goodput-maximizing ``(m, s)`` for ``num_replicas`` GPUs on ``num_nodes`` nodes.

    Parameters
    ----------
    model : GoodputModel
        The job's current goodput model.
    limits : BatchLimits
        Its batch limits (:math:`M_0` should equal ``model.init_batch_size``).
    num_nodes, num_replicas : int
        The allocation, :math:`1 \le N \le K`.
    accumulation : bool
        Whether gradient accumulation may be used (otherwise :math:`s = 0`).
    candidates : int
        Size of the geometric grid of global batch sizes (:data:`ARTIFACT_CANDIDATES`).

    Returns
    -------
    BatchChoice
    """
    if not 1 <= num_nodes <= num_replicas:
        raise InvalidInstanceError("num_nodes", f"needs 1 <= num_nodes <= num_replicas, got "
                                   f"{num_nodes} and {num_replicas}")  # fmt: skip
    if candidates < 1:
        raise InvalidInstanceError("candidates", "must be >= 1")
    low, atomic, steps, valid = _candidates(limits, int(num_replicas), accumulation, candidates)
    values = model.goodput(num_nodes, num_replicas, atomic, steps)
    values = np.where(valid, values, 0.0)
    best = int(np.argmax(values))
    m, s = int(atomic[best]), int(steps[best])
    return BatchChoice(
        goodput=float(values[best]),
        atomic_bsz=m,
        accum_steps=s,
        batch_size=num_replicas * m * (s + 1),
        within_limits=low <= limits.max_batch_size,
    )


def best_goodputs(
    model: GoodputModel,
    limits: BatchLimits,
    num_nodes: npt.ArrayLike,
    num_replicas: npt.ArrayLike,
    *,
    accumulation: bool = True,
    candidates: int = ARTIFACT_CANDIDATES,
) -> FloatArray:
    r""":func:`best_batch`'s goodput of many allocations, in one evaluation of the model.

    Entry :math:`i` is ``best_batch(model, limits, num_nodes[i], num_replicas[i]).goodput``,
    the same float: the candidates of every allocation are stacked into one
    ``(len, candidates)`` array, on which the model's arithmetic runs entry by entry as on each
    allocation's own row. Costs :math:`O(R c)` array work in one pass instead of :math:`R`
    passes of :math:`O(c)`.
    """
    nodes = np.asarray(num_nodes, dtype=np.int64).reshape(-1)
    replicas = np.asarray(num_replicas, dtype=np.int64).reshape(-1)
    if nodes.shape != replicas.shape:
        raise InvalidInstanceError("num_replicas", "needs one entry per entry of num_nodes")
    bad = (nodes < 1) | (nodes > replicas)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidInstanceError("num_nodes", f"needs 1 <= num_nodes <= num_replicas, got "
                                   f"{nodes[i]} and {replicas[i]}")  # fmt: skip
    if candidates < 1:
        raise InvalidInstanceError("candidates", "must be >= 1")
    if nodes.size == 0:
        return np.zeros(0)
    rows = [_candidates(limits, int(k), accumulation, candidates) for k in replicas]
    atomic = np.stack([r[1] for r in rows])
    steps = np.stack([r[2] for r in rows])
    valid = np.stack([r[3] for r in rows])
    values = model.goodput(nodes[:, None], replicas[:, None], atomic, steps)
    values = np.where(valid, values, 0.0)
    best = np.argmax(values, axis=1)
    return np.asarray(values[np.arange(len(values)), best], dtype=np.float64)
