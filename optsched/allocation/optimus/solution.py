"""An Optimus allocation: how many PSs and workers each job gets.

The same type for every algorithm (the exact MILP, the marginal-gain greedy).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OptimusAllocation"]


@dataclass(frozen=True)
class OptimusAllocation:
    """PSs :math:`p_j` and workers :math:`w_j` of every job.

    Attributes
    ----------
    job_ids : tuple of str
        In the instance's order.
    ps, workers : tuple of int
        :math:`p_j` and :math:`w_j`.
    algorithm : str
        What produced it (``milp``, ``marginal-gain``, ...).
    """

    job_ids: tuple[str, ...]
    ps: tuple[int, ...]
    workers: tuple[int, ...]
    algorithm: str = ""

    def counts(self, job_id: str) -> tuple[int, int]:
        """``(ps, workers)`` of one job."""
        i = self.job_ids.index(job_id)
        return self.ps[i], self.workers[i]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{job: {"ps": p, "workers": w}}`` and the algorithm."""
        return {
            "algorithm": self.algorithm,
            "jobs": {
                j: {"ps": int(p), "workers": int(w)}
                for j, p, w in zip(self.job_ids, self.ps, self.workers, strict=True)
            },
        }

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per (job, role) with the count (role ``ps`` or ``worker``)."""
        import pandas as pd

        rows = []
        for j, p, w in zip(self.job_ids, self.ps, self.workers, strict=True):
            rows.append({"job": j, "role": "ps", "count": int(p)})
            rows.append({"job": j, "role": "worker", "count": int(w)})
        return pd.DataFrame(rows, columns=["job", "role", "count"])

    def __repr__(self) -> str:
        return (
            f"OptimusAllocation({self.algorithm!r}, jobs={len(self.job_ids)}, "
            f"ps={sum(self.ps)}, workers={sum(self.workers)})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(j)}</td><td>{p}</td><td>{w}</td></tr>"
            for j, p, w in list(zip(self.job_ids, self.ps, self.workers, strict=True))[:50]
        )
        head = "<tr><th>job</th><th>ps</th><th>workers</th></tr>"
        return f"<table><caption>{html.escape(repr(self))}</caption>{head}{rows}</table>"
