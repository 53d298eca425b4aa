r"""Replaying the decisions of a run of Sia's simulator in the heterogeneous world.

Sia's ``multi_simulator.py --output=DIR`` writes one JSON record per round (``cluster.py``'s
``step_log``): the round's ``timestamp`` and, per submitted job, its ``allocation`` made at that
time, ``[gpu_type, [node per GPU]]`` or ``[]``. :func:`read_sia_log` reads those decisions;
:class:`LoggedDecisions` hands them to :func:`~optsched.goodput.hetero.world.simulate_hetero`
as its policy, each job keeping the batcher of the policy that made them (Sia's jobs tune their
batch, Gavel's do not). With the policy's choices taken from the log, what is left to compare is
the world itself: each job's progress, batch choices, restarts, completion and the GPU-hours
(:file:`benchmarks/bench_sia_sim.py`'s ``replay`` rows).

:math:`O(\text{records} \cdot \text{jobs})` to read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from optsched.errors import InvalidInstanceError
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView

__all__ = ["LoggedDecisions", "read_sia_log"]

Decisions = dict[float, dict[str, HeteroAllocation]]


def read_sia_log(path: str | Path) -> Decisions:
    """``{time: {job: (GPU type, nodes)}}`` of every record of Sia's ``--output`` log.

    Raises
    ------
    InvalidInstanceError
        Naming the file and line of a record that is not JSON or lacks the fields.
    """
    out: Decisions = {}
    file = str(path)
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                t = float(rec["timestamp"])
                jobs = rec["submitted_jobs"]
                allocs: dict[str, HeteroAllocation] = {}
                for j in jobs:
                    a = j["allocation"]
                    if a and a[0] is not None and a[1]:
                        allocs[str(j["name"])] = (str(a[0]), tuple(int(n) for n in a[1]))
            except (ValueError, KeyError, TypeError, IndexError) as err:
                raise InvalidInstanceError("allocation", f"not a record of Sia's log: {err}",
                                           file=file, row=line_no) from None  # fmt: skip
            out[t] = allocs
    if not out:
        raise InvalidInstanceError("<file>", f"{path} has no records", file=file)
    return out


class LoggedDecisions:
    """A policy answering each round with the logged decision of that time (module notes).

    Parameters
    ----------
    decisions : mapping
        :func:`read_sia_log`'s result.
    batchers : object, optional
        A policy whose ``batcher(spec, apps)`` makes each job's batcher (e.g.
        :class:`~optsched.goodput.hetero.sia.SiaHetero` for Sia's run); by default jobs keep
        their owner's batch (Gavel's run).
    name : str
    """

    def __init__(
        self, decisions: Mapping[float, Mapping[str, HeteroAllocation]],
        batchers: object | None = None, name: str = "replay",
    ) -> None:  # fmt: skip
        self.decisions = decisions
        self.name = name
        make = getattr(batchers, "batcher", None)
        if callable(make):
            self.batcher = make

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """The logged allocations of the active jobs at ``cluster.time`` (none if unlogged)."""
        logged = self.decisions.get(cluster.time, {})
        return {k: v for k, v in logged.items() if k in jobs}
