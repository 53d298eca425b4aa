"""An ANDREAS plan: for every queued job, run now (node type, GPUs, nodes) or postpone."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AndreasPlan", "Assignment"]


@dataclass(frozen=True, slots=True)
class Assignment:
    """Run ``job`` now on ``gpus`` GPUs of ``node_type``, on the nodes ``nodes``.

    ``nodes`` are indices of the node type's nodes (0-based): one node when ``gpus`` fits on a
    node, else ``gpus / gpus_per_server`` distinct whole nodes.
    """

    job: str
    node_type: str
    gpus: int
    nodes: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "job": self.job,
            "node_type": self.node_type,
            "gpus": self.gpus,
            "nodes": list(self.nodes),
        }


@dataclass(frozen=True)
class AndreasPlan:
    """The decision of one scheduling point, the same type for the MILP and the greedy.

    Attributes
    ----------
    assignments : tuple of Assignment
        The jobs that run now.
    postponed : tuple of str
        The jobs that wait for the next scheduling point.
    method : str
        What produced it (``"milp"``, ``"greedy"``).
    """

    assignments: tuple[Assignment, ...]
    postponed: tuple[str, ...] = ()
    method: str = ""

    def assignment(self, job: str) -> Assignment | None:
        """The assignment of ``job`` (``None`` when postponed or absent)."""
        for a in self.assignments:
            if a.job == job:
                return a
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "kind": "andreas-plan",
            "method": self.method,
            "assignments": [a.to_dict() for a in self.assignments],
            "postponed": list(self.postponed),
        }

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per job and node used, one per postponed job.

        Columns ``job, decision, node_type, gpus, node``; ``decision`` is ``run`` or
        ``postpone`` (no node type, 0 GPUs, no node).
        """
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for a in self.assignments:
            for n in a.nodes:
                rows.append(
                    {
                        "job": a.job,
                        "decision": "run",
                        "node_type": a.node_type,
                        "gpus": a.gpus,
                        "node": n,
                    }
                )
        for j in self.postponed:
            rows.append({"job": j, "decision": "postpone", "node_type": None, "gpus": 0})
        columns = ["job", "decision", "node_type", "gpus", "node"]
        frame = pd.DataFrame(rows, columns=columns)
        frame["node"] = frame["node"].astype("Int64")
        return frame

    def __repr__(self) -> str:
        gpus = sum(a.gpus for a in self.assignments)
        return (
            f"AndreasPlan(method={self.method!r}, run={len(self.assignments)}, "
            f"postponed={len(self.postponed)}, gpus={gpus})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(a.job)}</td><td>{html.escape(a.node_type)}</td>"
            f"<td>{a.gpus}</td><td>{', '.join(map(str, a.nodes))}</td></tr>"
            for a in self.assignments[:50]
        )
        return (
            f"<p>{html.escape(repr(self))}</p><table><tr><th>job</th><th>node type</th>"
            f"<th>GPUs</th><th>nodes</th></tr>{rows}</table>"
        )
