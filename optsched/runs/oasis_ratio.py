r"""OASiS's empirical competitive ratio OPT/ALG over seeded instances, resumably.

:func:`sweep` measures :func:`~optsched.online.oasis.competitive.sweep_record` on the instances
:func:`~optsched.online.oasis.generate_instance` draws with seeds ``seed, seed + 1, ...``,
through the one sweep driver (:func:`~optsched.runs.driver.run_sweep`): each finished instance is
written whole to ``out_dir/runs.sqlite`` (a :class:`~optsched.runs.store.RunStore` of kind
:data:`SWEEP_KIND`, keyed by the seed) as soon as it is measured; a rerun measures only the seeds
the store lacks, and one with other parameters is refused naming the parameter. The table and
figure of a sweep are :func:`optsched.report.oasis.ratio_sweep`'s.

Complexity: one online run and one exact offline solve per instance.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.errors import InvalidInstanceError
from optsched.online.oasis.competitive import sweep_record
from optsched.online.oasis.engine import OnlineAlgorithm
from optsched.online.oasis.generate import generate_instance
from optsched.runs.driver import Progress, SweepTask, run_sweep
from optsched.runs.store import RunStore, run_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SWEEP_KIND", "RatioSweep", "ratio_settings", "sweep"]

#: The :class:`~optsched.runs.store.RunStore` kind of ``oasis ratio`` sweeps.
SWEEP_KIND = "oasis-ratio"


@dataclass(frozen=True, repr=False)
class RatioSweep:
    """The records of a ratio sweep, in seed order.

    Attributes
    ----------
    records : list of dict
        One per instance (:func:`~optsched.online.oasis.competitive.sweep_record`), including
        those stored by earlier runs.
    config : dict
        The parameters shared by every instance (the store's config).
    computed : int
        Instances measured by this call (the others were read from the store).
    """

    records: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    computed: int = 0

    def to_frame(self) -> pd.DataFrame:
        """One row per instance (the ``holds`` checks as ``holds.<name>`` columns)."""
        import pandas as pd

        return pd.json_normalize(self.records)

    def __repr__(self) -> str:
        return (
            f"RatioSweep({len(self.records)} instances, algorithm="
            f"{self.config.get('algorithm')!r}, computed={self.computed})"
        )

    def _repr_html_(self) -> str:
        frame: Any = self.to_frame()
        return f"<p>{html.escape(repr(self))}</p>" + str(frame.to_html(index=False))


def ratio_settings(
    *,
    algorithm: OnlineAlgorithm | None,
    n_jobs: int,
    worker_servers: int,
    ps_servers: int,
    horizon: int,
    scale: float,
    priority: tuple[float, float],
    time_limit: float | None,
    mip_gap: float | None,
    solver: str,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters shared by every instance of a sweep (what a resumed sweep must repeat)."""
    return {
        "algorithm": algorithm.name if algorithm is not None else "oasis",
        # The algorithm's own result-affecting options (OASiS and the baselines expose them).
        "work": getattr(algorithm, "work", "chunks"),
        "algorithm_seed": getattr(algorithm, "seed", None),
        "n_jobs": n_jobs,
        "worker_servers": worker_servers,
        "ps_servers": ps_servers,
        "horizon": horizon,
        "scale": scale,
        "priority": list(priority),
        "time_limit": time_limit,
        "mip_gap": mip_gap,
        "solver": solver,
        **dict(config or {}),
    }


def sweep(
    n_instances: int,
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_jobs: int = 10,
    worker_servers: int = 3,
    ps_servers: int = 3,
    horizon: int = 10,
    scale: float = 0.05,
    priority: tuple[float, float] = (1.0, 100.0),
    time_limit: float | None = 60.0,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver: str = "highs",
    algorithm: OnlineAlgorithm | None = None,
    config: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    backend: str = "serial",
    workers: int | None = None,
) -> RatioSweep:
    """Measure OPT/ALG on ``n_instances`` seeded instances, resumably (module notes).

    Parameters
    ----------
    n_instances : int
        Instances ``k = 0 .. n_instances - 1``, instance ``k`` drawn with seed ``seed + k``.
    out_dir : str or Path
        The directory of the store (``runs.sqlite``).
    n_jobs, worker_servers, ps_servers, horizon, scale, priority
        The generator's parameters (:func:`~optsched.online.oasis.generate_instance`).
    time_limit, mip_gap, threads, solver
        The exact offline solve of each instance.
    algorithm : OnlineAlgorithm, optional
        The online algorithm measured (default OASiS).
    config : mapping, optional
        Further parameters that affect the results but are not arguments here (e.g. the
        algorithm's options); recorded and compared on resume.
    progress : callable, optional
        ``progress(done, total)`` before the first instance and after each one.
    backend, workers
        Where the instances are measured, as ``backend`` and ``n_jobs`` of
        :func:`~optsched.runs.driver.run_sweep` (default: one after the other in this process;
        the process backends need a picklable ``algorithm``).

    Returns
    -------
    RatioSweep

    Raises
    ------
    InvalidInstanceError
        ``out_dir`` holds a sweep with different parameters, a corrupt record, or a parameter
        is out of range.
    """
    if n_instances < 1:
        raise InvalidInstanceError("instances", f"must be >= 1, got {n_instances}")
    settings = ratio_settings(
        algorithm=algorithm,
        n_jobs=n_jobs,
        worker_servers=worker_servers,
        ps_servers=ps_servers,
        horizon=horizon,
        scale=scale,
        priority=priority,
        time_limit=time_limit,
        mip_gap=mip_gap,
        solver=solver,
        config=config,
    )
    # Check the generator's parameters before the store records them as the sweep's config.
    generate_instance(
        n_jobs, worker_servers, ps_servers, horizon, seed=seed, scale=scale, priority=priority
    )
    measure = partial(
        sweep_record,
        n_jobs=n_jobs,
        worker_servers=worker_servers,
        ps_servers=ps_servers,
        horizon=horizon,
        scale=scale,
        priority=priority,
        algorithm=algorithm,
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
    )
    tasks = [SweepTask(key=run_key(seed=seed + k), params=seed + k) for k in range(n_instances)]
    with RunStore(Path(out_dir), kind=SWEEP_KIND, config=settings) as store:
        outcome = run_sweep(
            tasks, measure, store=store, backend=backend, n_jobs=workers, progress=progress
        )
    return RatioSweep(outcome.records, settings, outcome.computed)
