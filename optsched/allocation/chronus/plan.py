"""A lease plan: which SLO jobs are admitted and who holds GPUs in each future lease."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LeasePlan"]


@dataclass(frozen=True)
class LeasePlan:
    r"""The solution type of the family, the same for the MILP and every heuristic.

    Attributes
    ----------
    admitted : tuple of str
        Ids of the admitted SLO jobs (:math:`a_j = 1`).
    grants : tuple of (str, int, str)
        ``(job, lease, gpu_type)``: the job holds its whole gang of that type during that lease
        (:math:`x_{j\ell k} = 1`); sorted by lease, then job id.
    algorithm : str
        What produced it (``milp``, ``chronus-greedy``, ``edf``).
    """

    admitted: tuple[str, ...]
    grants: tuple[tuple[str, int, str], ...]
    algorithm: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "grants", tuple(sorted(self.grants, key=lambda g: (g[1], g[0]))))

    def in_lease(self, lease: int) -> dict[str, str]:
        """``{job: gpu_type}`` of the grants of one lease."""
        return {job: gpu for job, ell, gpu in self.grants if ell == lease}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "kind": "chronus-plan",
            "algorithm": self.algorithm,
            "admitted": list(self.admitted),
            "grants": [{"job": j, "lease": ell, "gpu_type": g} for j, ell, g in self.grants],
        }

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per grant (``job, lease, gpu_type, admitted``)."""
        import pandas as pd

        admitted = set(self.admitted)
        return pd.DataFrame(
            {
                "job": [j for j, _, _ in self.grants],
                "lease": [ell for _, ell, _ in self.grants],
                "gpu_type": [g for _, _, g in self.grants],
                "admitted": [j in admitted for j, _, _ in self.grants],
            },
            columns=["job", "lease", "gpu_type", "admitted"],
        )

    def __repr__(self) -> str:
        return (
            f"LeasePlan(algorithm={self.algorithm!r}, admitted={len(self.admitted)}, "
            f"grants={len(self.grants)})"
        )

    def _repr_html_(self) -> str:
        return (
            f"<p>LeasePlan <b>{html.escape(self.algorithm)}</b>: {len(self.admitted)} SLO "
            f"job(s) admitted, {len(self.grants)} grant(s)</p>"
        )
