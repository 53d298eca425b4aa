"""An allocation: the fraction of time each job spends on each GPU type, alone or in a pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Allocation"]


@dataclass(frozen=True, eq=False)
class Allocation:
    """Time fractions :math:`X_{mj}` of one round, the same type for every policy.

    Attributes
    ----------
    job_ids : tuple of str
    gpu_types : tuple of str
    fractions : ndarray, shape (jobs, types)
        :math:`X_{mj}`: the fraction of the round's wall time job ``m`` runs on type ``j``.
    policy : str
        The policy that produced it.
    pairs : ndarray of int, shape (pairs, 2)
        Space sharing (packed policies): the job indices :math:`(m_1, m_2)`, :math:`m_1 < m_2`,
        of each pair row; empty for the unpacked policies.
    pair_fractions : ndarray, shape (pairs, types)
        :math:`X_{(m_1 m_2) j}`: the fraction of the round's wall time the two jobs share the
        same gang of GPUs of type ``j`` (counted once against the type's GPUs, and against each
        job's time).
    """

    job_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    fractions: NDArray[np.float64]
    policy: str = ""
    pairs: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    pair_fractions: NDArray[np.float64] = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.float64)
    )

    @property
    def n_pairs(self) -> int:
        """Number of pair rows."""
        return int(self.pairs.shape[0])

    def time_share(self) -> NDArray[np.float64]:
        """Each job's total share of the round, alone and in pairs."""
        total = self.fractions.sum(axis=1)
        if self.n_pairs:
            per_pair = self.pair_fractions.sum(axis=1)
            np.add.at(total, self.pairs[:, 0], per_pair)
            np.add.at(total, self.pairs[:, 1], per_pair)
        return total

    def effective_throughput(
        self,
        throughputs: NDArray[np.float64],
        pair_rates: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        r""":math:`\sum_j T_{mj} X_{mj}` per job (steps/s averaged over the round).

        With ``pair_rates`` (shape (pairs, types, 2): each job's steps/s in each pair row, see
        :func:`optsched.allocation.gavel.packed.pair_rates`) the pair rows' progress is added.
        """
        theta = np.einsum("mj,mj->m", throughputs, self.fractions)
        if self.n_pairs and pair_rates is not None:
            for side in (0, 1):
                part = np.einsum("pj,pj->p", pair_rates[:, :, side], self.pair_fractions)
                np.add.at(theta, self.pairs[:, side], part)
        return theta

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{job: {type: fraction}}`` plus the policy.

        Pair rows, if any, as ``"pairs": [{"jobs": [a, b], "fractions": {type: fraction}}]``.
        """
        out: dict[str, Any] = {
            "policy": self.policy,
            "gpu_types": list(self.gpu_types),
            "fractions": {
                job: {t: float(v) for t, v in zip(self.gpu_types, row, strict=True)}
                for job, row in zip(self.job_ids, self.fractions, strict=True)
            },
        }
        if self.n_pairs:
            out["pairs"] = [
                {
                    "jobs": [self.job_ids[int(a)], self.job_ids[int(b)]],
                    "fractions": {t: float(v) for t, v in zip(self.gpu_types, row, strict=True)},
                }
                for (a, b), row in zip(self.pairs, self.pair_fractions, strict=True)
            ]
        return out

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per (job, GPU type, partner) with a positive fraction.

        The ``partner`` is ``""`` when the job runs alone (a pair row gives one row per job).
        """
        import pandas as pd

        m, j = np.nonzero(self.fractions > 0)
        jobs = [self.job_ids[i] for i in m]
        types = [self.gpu_types[k] for k in j]
        partners = [""] * len(jobs)
        values = list(self.fractions[m, j])
        if self.n_pairs:
            p, k = np.nonzero(self.pair_fractions > 0)
            for side in (0, 1):
                jobs += [self.job_ids[int(self.pairs[i, side])] for i in p]
                partners += [self.job_ids[int(self.pairs[i, 1 - side])] for i in p]
                types += [self.gpu_types[c] for c in k]
                values += list(self.pair_fractions[p, k])
        return pd.DataFrame(
            {"job": jobs, "gpu_type": types, "partner": partners, "fraction": values}
        )

    def __repr__(self) -> str:
        return (
            f"Allocation(policy={self.policy!r}, jobs={len(self.job_ids)}, "
            f"gpu_types={self.gpu_types}, busy={float(self.fractions.sum()):.4g}"
            + (f", pairs={self.n_pairs})" if self.n_pairs else ")")
        )
