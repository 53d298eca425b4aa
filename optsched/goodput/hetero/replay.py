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
from collections.abc import Callable, Mapping
from pathlib import Path

from optsched.errors import InvalidInstanceError
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements, fit_throughput
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.hetero.apps import HeteroApp
from optsched.goodput.hetero.job import HeteroBatcher
from optsched.goodput.hetero.sia import SiaBatcher
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView
from optsched.goodput.workload import PolluxJob

__all__ = ["LoggedDecisions", "MergedProfileBatcher", "read_sia_log"]

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
            except (ValueError, KeyError, TypeError, IndexError, RecursionError) as err:
                # RecursionError: a line nested thousands deep exhausts the decoder's stack
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
    batcher : callable, optional
        ``batcher(spec, apps)`` makes each job's batcher: ``SiaHetero().batcher`` for Sia's run,
        :class:`MergedProfileBatcher` for its heterogeneity-unaware Pollux; by default jobs keep
        their owner's batch (Gavel's run).
    name : str
    """

    def __init__(
        self, decisions: Mapping[float, Mapping[str, HeteroAllocation]],
        batcher: Callable[[PolluxJob, Mapping[str, HeteroApp]], HeteroBatcher] | None = None,
        name: str = "replay",
    ) -> None:  # fmt: skip
        self.decisions = decisions
        self.name = name
        if batcher is not None:
            self.batcher = batcher

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """The logged allocations of the active jobs at ``cluster.time`` (none if unlogged)."""
        logged = self.decisions.get(cluster.time, {})
        return {k: v for k, v in logged.items() if k in jobs}


class MergedProfileBatcher(SiaBatcher):
    r"""A heterogeneity-unaware job's model: one profile and one fit over every GPU type.

    Sia's ``multi_simulator_unaware.py`` makes its jobs ``h_unaware``: the configurations run on
    any type go into one profile, ``(nodes, GPUs, atomic batch)`` keyed without the type, and
    one throughput fit serves every type; the batch is then chosen as
    :class:`~optsched.goodput.hetero.sia.SiaBatcher` chooses it, with the limits of the type the
    job runs on.

    The fit is :func:`~optsched.goodput.fit.fit_throughput` with ``floored=True``: the
    artifact's network-time model, whose single replica syncs in :math:`10^{-8}` s and whose
    retrogression counts :math:`\max(K-2, 10^{-8})` rounds. The floors change the loss by
    :math:`O(10^{-8})` only, but L-BFGS-B at ``tol=1e-5`` stops elsewhere without them on the
    merged profiles: Sia's run of this baseline, replayed in Sia's own code with every refit
    recorded (:file:`benchmarks/_sia_pollux_fit.py`), has 1,934 refits, of which optsched's fit
    without the floors reproduces 640 (to :math:`10^{-6}` relative), with them 1,770; the rest
    stop within :math:`10^{-2}` but for a few, from the last bits of autograd's gradient. With
    them the replay of the run's decisions gives all 80 JCTs, without them 68.
    """

    def observe(
        self,
        gpu_type: str,
        placement: tuple[int, ...],
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Take the statistics; profile a new configuration (any type) and refit."""
        self.stats = stats
        prof = self.profiles.setdefault("*", {})
        key = (len(placement), sum(placement), atomic_bsz)
        if key in prof:
            return
        prof[key] = (step_time, sync_time)
        keys, times = list(prof), list(prof.values())
        data = StepMeasurements.of([k[0] for k in keys], [k[1] for k in keys],
                                   [k[2] for k in keys], [t[0] - t[1] for t in times],
                                   [t[0] for t in times])  # fmt: skip
        self.params["*"] = fit_throughput(data, tol=self.tol, floored=True)

    def model(self, gpu_type: str) -> GoodputModel | None:
        """The merged model, with ``gpu_type``'s initial batch."""
        params = self.params.get("*")
        if params is None or self.stats is None:
            return None
        return GoodputModel(params, self.stats, self.apps[gpu_type].limits.init_batch_size)
