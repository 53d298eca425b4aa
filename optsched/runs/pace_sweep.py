"""PACE's speed-up over the baselines across bandwidths and worker counts, resumably.

:func:`sweep` runs :func:`~optsched.comm.pace.compare.compare` on every (model, workers, bandwidth)
of a grid, through the one sweep driver (:func:`~optsched.runs.driver.run_sweep`). With a
:class:`~optsched.runs.store.RunStore` every run's row is written whole as soon as it is
computed, keyed by the run's parameters (and the profile's SHA-256, so an edited profile file is
a different run); a rerun computes only the missing keys and yields the same table as an
uninterrupted run. Every parameter shared by the runs (latency, overhead,
partition, fusion buffer, cycle, order, update rate, the byte convention) is the store's config:
resuming with another value is an error naming it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from optsched.comm.pace.compare import compare
from optsched.comm.pace.instance import CommInstance
from optsched.errors import InvalidInstanceError
from optsched.runs.driver import SweepTask, run_sweep
from optsched.runs.store import RunStore, run_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BASELINES", "SWEEP_KIND", "PaceSweep", "sweep", "sweep_config"]

#: The policies PACE is compared with.
BASELINES = ("fifo", "horovod", "p3", "tictac", "bytescheduler")
#: The kind of a sweep store (a store of another kind is refused).
SWEEP_KIND = "pace-sweep"
#: Version of the rows' layout, part of the config.
ROW_VERSION = 1


@dataclass(frozen=True, repr=False)
class PaceSweep:
    """The rows of a sweep, in grid order (model, workers, bandwidth).

    Attributes
    ----------
    rows : list of dict
        Per run: ``model``, ``workers``, ``bandwidth_gbps``, ``lower_bound`` and every
        policy's iteration time (ms), ``speedup_vs_best_baseline``, ``speedup_vs_horovod``
        and ``best_baseline``.
    config : dict
        The parameters shared by every run.
    computed : int
        Runs computed by this call (the others were read from the store).
    """

    rows: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    computed: int = 0

    def to_frame(self) -> pd.DataFrame:
        """One row per run (columns as in :attr:`rows`)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def __repr__(self) -> str:
        models = sorted({r["model"] for r in self.rows})
        return f"PaceSweep({len(self.rows)} runs, models={models}, computed={self.computed})"

    def _repr_html_(self) -> str:
        frame: Any = self.to_frame()
        return f"<p>{html.escape(repr(self))}</p>" + str(frame.to_html(index=False))


def sweep_config(
    *,
    latency_us: float,
    partition_mb: float | None,
    overhead_us: float,
    fusion_mb: float,
    cycle_ms: float,
    order: str,
    update_ms_per_mb: float,
) -> dict[str, Any]:
    """The parameters shared by every run of a sweep (what a resumed sweep must repeat)."""
    return {
        "latency_us": float(latency_us),
        "partition_mb": None if partition_mb is None else float(partition_mb),
        "overhead_us": float(overhead_us),
        "fusion_mb": float(fusion_mb),
        "cycle_ms": float(cycle_ms),
        "order": order,
        "update_ms_per_mb": float(update_ms_per_mb),
        "mb_bytes": 10**6,
        "row_version": ROW_VERSION,
    }


def _row(model: str, n: int, bw: float, config: dict[str, Any]) -> dict[str, Any]:
    res = compare(
        model,
        n,
        bw,
        config["latency_us"],
        config["partition_mb"],
        overhead_us=config["overhead_us"],
        fusion_mb=config["fusion_mb"],
        cycle_ms=config["cycle_ms"],
        order=config["order"],
        update_ms_per_mb=config["update_ms_per_mb"],
    )
    times = res.iteration_times
    pace_t = times["pace"]
    present = [b for b in BASELINES if b in times]
    best = min(present, key=lambda b: times[b])
    return {
        "model": res.model,
        "workers": n,
        "bandwidth_gbps": bw,
        "lower_bound": res.lower_bound,
        **dict(times),
        "speedup_vs_best_baseline": times[best] / pace_t,
        "speedup_vs_horovod": times.get("horovod", pace_t) / pace_t,
        "best_baseline": best,
    }


def _run(params: tuple[str, int, float], config: dict[str, Any]) -> dict[str, Any]:
    """One run of the grid (module level, so that process backends can ship it)."""
    model, n, bw = params
    return _row(model, n, bw, config)


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    first = ["model", "workers", "bandwidth_gbps", "lower_bound", *BASELINES, "pace"]
    last = ["speedup_vs_best_baseline", "speedup_vs_horovod", "best_baseline"]
    keys = [k for k in first if k in row]
    keys += sorted(k for k in row if k not in first and k not in last)
    keys += [k for k in last if k in row]
    return {k: row[k] for k in keys}


def sweep(
    models: Sequence[str],
    bandwidths: Sequence[float],
    workers: Sequence[int],
    *,
    latency_us: float = 5.0,
    partition_mb: float | None = None,
    overhead_us: float = 0.0,
    fusion_mb: float = 64.0,
    cycle_ms: float = 5.0,
    order: str = "profile",
    update_ms_per_mb: float = 0.0,
    store: RunStore | None = None,
    progress: Callable[[int, int], None] | None = None,
    backend: str = "serial",
    n_jobs: int | None = None,
) -> PaceSweep:
    """Compare every policy on each (model, workers, bandwidth) of the grid.

    Parameters
    ----------
    models : sequence of str
        Shipped profile names or profile files.
    bandwidths : sequence of float
        Per-link bandwidths (Gbit/s).
    workers : sequence of int
        Worker counts.
    latency_us, partition_mb, overhead_us, fusion_mb, cycle_ms, order, update_ms_per_mb
        As in :func:`~optsched.comm.pace.compare.compare`, shared by every run.
    store : RunStore, optional
        Where each row is written as soon as it is computed; rows already in it are reused.
        Its config must equal :func:`sweep_config` of these parameters (open it with
        ``RunStore(path, kind=SWEEP_KIND, config=sweep_config(...))``).
    progress : callable, optional
        Called as ``progress(done, total)`` before the first run and after each one.
    backend, n_jobs
        Where the runs execute, as in :func:`~optsched.runs.driver.run_sweep` (default: one
        after the other in this process).

    Returns
    -------
    PaceSweep

    Raises
    ------
    InvalidInstanceError
        An empty grid, a bad value (named), or a store made with other parameters.

    Notes
    -----
    The grid has ``len(models) * len(workers) * len(bandwidths)`` runs; each is one
    :func:`~optsched.comm.pace.compare.compare`.
    """
    for name, values in (("models", models), ("bandwidths", bandwidths), ("workers", workers)):
        if len(values) == 0:
            raise InvalidInstanceError(name, "must list at least one value")
    config = sweep_config(
        latency_us=latency_us,
        partition_mb=partition_mb,
        overhead_us=overhead_us,
        fusion_mb=fusion_mb,
        cycle_ms=cycle_ms,
        order=order,
        update_ms_per_mb=update_ms_per_mb,
    )
    if store is not None and store.config != json.loads(json.dumps(config)):
        raise InvalidInstanceError(
            "store", "was opened with another config than this sweep's parameters"
        )
    # Validate every model before the first run; its digest is part of each run's key.
    digests: dict[str, str] = {}
    for model in dict.fromkeys(models):
        digests[model] = CommInstance(profile=model).profile_digest()[:16]
    tasks = [
        SweepTask(
            key=run_key(model=model, profile=digests[model], workers=int(n), bandwidth=bw),
            params=(model, int(n), float(bw)),
        )
        for model in models
        for n in workers
        for bw in bandwidths
    ]
    outcome = run_sweep(
        tasks,
        partial(_run, config=config),
        store=store,
        backend=backend,
        n_jobs=n_jobs,
        progress=progress,
    )
    rows = [_ordered(row) for row in outcome.records]
    computed = outcome.computed
    return PaceSweep(rows, config, computed)
