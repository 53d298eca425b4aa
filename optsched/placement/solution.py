r"""The Placement type: where every task of a placement instance runs.

Every placement algorithm in optsched (the exact ILPs, the heuristics, brute force) returns a
:class:`Placement`: a server for every task, and optionally a GPU for every task that uses one.
The independent validator (:func:`optsched.placement.validate`) checks it.

File format (``optsched schema placement``)::

    {"kind": "placement", "assignment": {"job/w0": "s0", ...}, "gpus": {"job/w0": 3},
     "method": "ilp:servers"}

:meth:`Placement.load` also reads the JSON that ``optsched placement solve --json`` prints (the
placement is its ``solution``).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import ConfigDict, Field

from optsched._validation import Frozen, parse
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

    from optsched.placement.instance import PlacementInstance

__all__ = ["Placement", "placement_schema"]


class Placement(Frozen):
    """Where every task runs.

    Attributes
    ----------
    assignment : dict of str to str
        Task id (``"<job>/<task>"``) to server name.
    gpus : dict of str to int, optional
        Task id to GPU index on its server, for node-level (GPU) assignment. Tasks without GPU
        demand have no entry.
    method : str
        What produced it (``"ilp:servers"``, ``"heuristic:first-fit"``...).

    Examples
    --------
    >>> p = Placement(assignment={"a/w0": "s0", "a/w1": "s1"}, method="by hand")
    >>> p
    Placement(2 tasks on 2 servers, method='by hand')
    >>> p.to_frame()[["job", "task", "server"]].to_dict("records")[0]
    {'job': 'a', 'task': 'w0', 'server': 's0'}
    """

    # The title of the published JSON Schema (``optsched schema placement``).
    model_config = ConfigDict(title="optsched placement")

    kind: Literal["placement"] = "placement"
    assignment: dict[str, str] = Field(description="Task id -> server name.")
    gpus: dict[str, int] | None = Field(default=None, description="Task id -> GPU index.")
    method: str = ""

    # ----- construction ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Validate plain data; the JSON of a solve (``{"status": ..., "solution": {...}}``) too.

        Raises
        ------
        InvalidInstanceError
            Naming the offending field.
        """
        if isinstance(data, dict) and "status" in data:
            if isinstance(data.get("solution"), dict):
                return parse(cls, data["solution"], "solution")
            if "assignment" in data:
                # The JSON of earlier releases: the placement's keys at the top level.
                keys = ("assignment", "gpus", "method")
                data = {k: data[k] for k in keys if data.get(k) is not None}
            else:
                raise InvalidInstanceError(
                    "solution", "the solve report holds no placement (the solver found none)"
                )
        return parse(cls, data)

    @classmethod
    def from_indices(
        cls,
        instance: PlacementInstance,
        servers: Sequence[int],
        gpus: Mapping[int, int] | None = None,
        method: str = "",
    ) -> Placement:
        """Build from a server index per task (in ``instance.tasks`` order).

        Parameters
        ----------
        instance : PlacementInstance
        servers : sequence of int
            ``servers[i]`` is the index of task ``i``'s server.
        gpus : mapping of int to int, optional
            Task index to GPU index, for the tasks that have a GPU.
        method : str

        Raises
        ------
        ValueError
            A server index out of range, or not one per task.
        """
        names = [s.name for s in instance.servers]
        if len(servers) != len(instance.tasks):
            raise ValueError(
                f"need one server per task ({len(instance.tasks)}), got {len(servers)}"
            )
        bad = [int(h) for h in servers if not 0 <= int(h) < len(names)]
        if bad:
            raise ValueError(f"server index {bad[0]} out of range 0..{len(names) - 1}")
        assignment = {t.id: names[int(servers[i])] for i, t in enumerate(instance.tasks)}
        gpu_map = None
        if gpus is not None:
            gpu_map = {instance.tasks[i].id: int(g) for i, g in gpus.items()}
        return cls(assignment=assignment, gpus=gpu_map, method=method)

    # ----- queries -----------------------------------------------------------------------------

    def server_indices(self, instance: PlacementInstance) -> list[int]:
        """Server index of every task, in ``instance.tasks`` order.

        Raises
        ------
        KeyError
            A task is unassigned or its server is unknown (run :func:`validate` first).
        """
        index = {s.name: h for h, s in enumerate(instance.servers)}
        return [index[self.assignment[t.id]] for t in instance.tasks]

    @property
    def servers_used(self) -> list[str]:
        """Names of the servers hosting at least one task, in first-use order."""
        return list(dict.fromkeys(self.assignment.values()))

    # ----- output ------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per task with ``job``, ``task``, ``server``, ``gpu``.

        ``gpu`` is a nullable integer (missing for tasks without a GPU or without GPU
        assignment). Count tasks per server and job with
        ``frame.groupby(["server", "job"]).size()``.
        """
        import pandas as pd

        rows = []
        gpus = self.gpus or {}
        for task_id, server in self.assignment.items():
            job, _, task = task_id.partition("/")
            rows.append({"job": job, "task": task, "server": server, "gpu": gpus.get(task_id)})
        frame = pd.DataFrame(rows, columns=["job", "task", "server", "gpu"])
        frame["gpu"] = frame["gpu"].astype("Int64")
        return frame

    def __repr__(self) -> str:
        method = f", method={self.method!r}" if self.method else ""
        gpus = f", {len(self.gpus)} GPUs assigned" if self.gpus else ""
        return (
            f"Placement({len(self.assignment)} tasks on {len(self.servers_used)} servers"
            f"{gpus}{method})"
        )

    def _repr_html_(self) -> str:
        per_server = Counter(self.assignment.values())
        rows = "".join(
            f"<tr><td>{html.escape(s)}</td><td>{n}</td></tr>" for s, n in per_server.items()
        )
        return (
            f"<table><caption>{html.escape(repr(self))}</caption>"
            f"<tr><th>server</th><th>tasks</th></tr>{rows}</table>"
        )


def placement_schema() -> dict[str, Any]:
    """JSON Schema of the placement file format."""
    schema = Placement.schema()
    schema["title"] = "optsched placement"
    return schema
