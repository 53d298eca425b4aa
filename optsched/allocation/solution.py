"""An allocation: the fraction of time each job spends on each GPU type."""

from __future__ import annotations

from dataclasses import dataclass
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
    """

    job_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    fractions: NDArray[np.float64]
    policy: str = ""

    def effective_throughput(self, throughputs: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`\sum_j T_{mj} X_{mj}` per job (steps/s averaged over the round)."""
        return np.einsum("mj,mj->m", throughputs, self.fractions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{job: {type: fraction}}`` plus the policy."""
        return {
            "policy": self.policy,
            "gpu_types": list(self.gpu_types),
            "fractions": {
                job: {t: float(v) for t, v in zip(self.gpu_types, row, strict=True)}
                for job, row in zip(self.job_ids, self.fractions, strict=True)
            },
        }

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per (job, GPU type) with a positive fraction."""
        import pandas as pd

        m, j = np.nonzero(self.fractions > 0)
        return pd.DataFrame(
            {
                "job": [self.job_ids[i] for i in m],
                "gpu_type": [self.gpu_types[k] for k in j],
                "fraction": self.fractions[m, j],
            }
        )

    def __repr__(self) -> str:
        return (
            f"Allocation(policy={self.policy!r}, jobs={len(self.job_ids)}, "
            f"gpu_types={self.gpu_types}, busy={float(self.fractions.sum()):.4g})"
        )
