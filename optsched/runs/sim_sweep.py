r"""Sweeps of the simulator: policies x traces x cluster sizes x seeds x load, resumable, parallel.

Every combination is one *run*: read the trace, build the world, simulate the policy, check the
record with the independent validator, keep the run metrics. Runs go through the one sweep
driver (:func:`~optsched.runs.driver.run_sweep`): on local processes by default
(``backend="joblib"``, joblib's loky pool, at most one process per core and per run left), in
this process (``"serial"``), on a Dask cluster (``"dask"``: joblib's Dask backend, through a
``distributed.Client`` given or started locally) or on Ray (``"ray"``: one Ray task per run,
collected as each finishes; the Ray running in the process, else one started at ``address`` or
locally and shut down at the end); the extras ``optsched[dask]`` and ``optsched[ray]`` install
them.

Each finished run is written whole to a :class:`~optsched.runs.store.RunStore` (SQLite) under
its key (trace, cluster scale, seed, load, policy) as soon as it comes back, so a sweep killed
at any instant loses only the runs in flight; rerunning it with the same parameters redoes
exactly the missing keys, and the table it returns equals an uninterrupted sweep's (records
carry no wall-clock figures for that reason). Resuming with other shared parameters (cluster,
round length, throughputs) is refused naming the parameter. Every row names the throughput
table it ran on (``throughputs``: ``gavel`` by default for a Gavel-format trace, ``uniform``
for other formats and synthetic tables).

What varies per run
    * ``trace``: a file in any format :func:`optsched.traces.read_trace` reads, or
      ``synthetic:N`` (:func:`optsched.sim.generate_job_table` with ``N`` jobs);
    * ``cluster_scale``: the cluster's GPU counts times this factor
      (:meth:`ClusterSpec.scaled <optsched.sim.ClusterSpec.scaled>`);
    * ``seed``: seeds the synthetic generator; for a file trace, seed 0 is the trace as is and
      seed ``s > 0`` permutes its inter-arrival gaps with ``numpy.random.default_rng(s)`` (job
      sizes and order kept), a resampling of the same workload;
    * ``load``: arrival times divided by ``load`` (2 = twice the arrival rate).

Complexity: one simulation per run; the store holds one row per run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.errors import InvalidInstanceError
from optsched.limits import check_range
from optsched.runs.driver import SweepTask, run_sweep

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BACKENDS",
    "KIND",
    "run_one",
    "study_notes",
    "study_source",
    "sweep",
    "sweep_progress",
    "sweep_runs",
]

#: Execution backends (``"joblib"``: joblib's loky process pool, as the driver's ``"loky"``).
BACKENDS: tuple[str, ...] = ("joblib", "loky", "serial", "dask", "ray")

#: The RunStore kind of simulator sweeps.
KIND = "sim-sweep"

#: The parameters that name one run (the store key), in column order.
KEY_FIELDS: tuple[str, ...] = ("trace", "cluster_scale", "seed", "load", "policy")

_SYNTHETIC = "synthetic:"

#: How a store spells ``round_seconds=None`` (event-driven runs): never a null, which stores
#: written before used for each policy's own length.
_EVENT_DRIVEN = "event-driven"
#: The store's ``throughputs`` when none is named: each trace's default table (Gavel's for a
#: Gavel-format trace, uniform otherwise), kept apart from ``"uniform"`` asked for by name.
_DEFAULT = "default"


def _job_frame(trace: str, seed: int, load: float) -> pd.DataFrame:
    """The run's job table (see :func:`_job_frame_and_format`)."""
    return _job_frame_and_format(trace, seed, load)[0]


def study_source(trace: str, seed: int) -> tuple[Any, int]:
    """What a run's world is built from, and the seed left for its arrivals.

    ``synthetic:N``: the table :func:`~optsched.sim.generate_job_table` draws with ``seed``
    (the seed is spent: 0 is left); a file: the :class:`~optsched.traces.Trace` read, and
    ``seed`` for :func:`~optsched.sim.comparison.study_frame` to permute its gaps.
    """
    from optsched.sim.world.generate import generate_job_table

    if trace.startswith(_SYNTHETIC):
        text = trace[len(_SYNTHETIC) :]
        if not text.isdigit() or int(text) < 1:
            raise InvalidInstanceError("traces", f"{trace!r}: expected synthetic:N with N >= 1")
        return generate_job_table(int(text), seed=seed), 0
    from optsched.traces import read_trace

    return read_trace(trace), seed


def _job_frame_and_format(trace: str, seed: int, load: float) -> tuple[pd.DataFrame, str | None]:
    """The run's job table and its trace format (``None`` for a synthetic table)."""
    from optsched.sim.comparison import study_frame

    source, left = study_source(trace, seed)
    frame = study_frame(getattr(source, "jobs", source), seed=left, load=load)
    return frame, getattr(source, "format", None)


def run_one(
    params: dict[str, Any],
    config: dict[str, Any],
    policies: dict[str, Any] | None = None,
    table: Any = None,
) -> dict[str, Any]:
    """One run of the sweep: its record (the key fields, the run metrics, the validity).

    A module-level function of picklable arguments, so that every backend can ship it.
    ``policies`` maps a policy name to the object to run (a copy of it, so that runs in one
    process never share state); a name not in it is made from the registry. ``table``: a
    throughput table given as an object (else ``config["throughputs"]`` names one).
    """
    import copy

    from optsched.sim.comparison import world_from_trace
    from optsched.sim.engine.core import simulate
    from optsched.sim.measure.metrics import job_metrics, run_metrics
    from optsched.sim.measure.validate import validate
    from optsched.sim.policies import make_policy
    from optsched.sim.world.cluster import parse_cluster

    spec = parse_cluster(config["cluster"]).scaled(params["cluster_scale"])
    source, seed = study_source(params["trace"], params["seed"])
    chosen = config.get("throughputs")
    # the world every entry point builds (compare, sim run, experiment files): the trace's
    # default table by content, the clock at the first arrival, the seed and load applied
    world = world_from_trace(
        source,
        spec,
        table if table is not None else None if chosen in (None, _DEFAULT) else chosen,
        restore_s=config["restore_s"],
        reference=config["reference"],
        seed=seed,
        load=params["load"],
    )
    table = world.throughputs
    kwargs: dict[str, Any] = {}
    # the store's spelling: a number, "policy" (each policy's own) or "event-driven" (None in
    # the API, as in simulate); a null from stores written before meant the policy's own
    stored = config.get("round_seconds")
    kwargs["round_seconds"] = (
        "policy" if stored is None else None if stored == _EVENT_DRIVEN else stored
    )
    given = (policies or {}).get(params["policy"])
    policy = copy.deepcopy(given) if given is not None else make_policy(params["policy"])
    record = simulate(world, policy, **kwargs)
    report = validate(world, record)
    window = config.get("window")
    metrics = run_metrics(
        record, job_metrics(record), window=None if window is None else tuple(window)
    )
    metrics.pop("policy", None)
    row = {
        **{k: params[k] for k in KEY_FIELDS},
        **metrics,
        "throughputs": table.source,
        "valid": report.ok,
        "violations": len(report.violations),
        "events": record.events,
    }
    if config.get("bound"):
        row.update(_bound_columns(world, record, params, config))
    return row


#: Bounds already computed in this process, by world (the key fields but the policy, and the
#: config): every policy of one world shares them.
_BOUND_CACHE: dict[str, Any] = {}


def _bound_columns(
    world: Any, record: Any, params: dict[str, Any], config: dict[str, Any]
) -> dict[str, Any]:
    """``bound_<objective>``, ``bound_gap_<objective>`` (NaN if unfinished), and how it was got.

    ``bound_method_<objective>`` names the relaxation that gave the bound and
    ``bound_complete_<objective>`` says whether every relaxation finished: a bound whose LP ran
    out of time is still valid but weaker, and the row says so rather than a note elsewhere.
    """
    import json
    import math

    from optsched.sim.optimum.bounds import bounds, certified_gap
    from optsched.sim.optimum.exact import objective_value

    key = json.dumps(
        [{k: params[k] for k in KEY_FIELDS if k != "policy"}, config], sort_keys=True, default=str
    )
    found = _BOUND_CACHE.get(key)
    if found is None:
        found = bounds(world, time_limit=config.get("bound_time_limit"))
        _BOUND_CACHE.clear()  # one world at a time is enough: runs come grouped by world
        _BOUND_CACHE[key] = found
    out: dict[str, Any] = {}
    for objective, b in found.items():
        value = objective_value(world, record, objective) if record.all_finished else math.nan
        out[f"bound_{objective}"] = b.value
        out[f"bound_gap_{objective}"] = certified_gap(objective, value, b.value)
        out[f"bound_method_{objective}"] = b.method
        out[f"bound_complete_{objective}"] = b.complete
    return out


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@contextmanager
def sweep_progress(
    label: str, show: bool = True, *, stream: Any = None, terminal: bool | None = None
) -> Iterator[Any]:
    """Progress of a sweep on stderr as ``update(done, total)``: ``n/N`` runs with an ETA.

    On a terminal, a live bar (runs done ``n/N``, elapsed, time remaining). Elsewhere (a log
    file, CI), one line per finished run, ``label: n/N runs done, elapsed 0:00:12, ETA
    0:00:30``, the ETA the mean time per run finished in this process times the runs left
    (runs taken from the store count as done without time); ``None`` when not shown.
    """
    import sys
    import time

    if not show:
        yield None
        return
    out = stream if stream is not None else sys.stderr
    tty = terminal if terminal is not None else bool(getattr(out, "isatty", lambda: False)())
    if tty:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs, elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=Console(file=out)) as bar:
            task = bar.add_task(label, total=None)

            def update_bar(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update_bar
        return
    start = time.monotonic()
    first: list[int] = []

    def update_lines(done: int, total: int) -> None:
        if not first:
            first.append(done)  # stored before: done, but no time of this process
            if done:
                print(f"{label}: {done}/{total} runs already stored", file=out, flush=True)
            return
        elapsed = time.monotonic() - start
        here = done - first[0]
        eta = elapsed / here * (total - done) if here > 0 else float("nan")
        shown = _clock(eta) if eta == eta else "?"
        print(
            f"{label}: {done}/{total} runs done, elapsed {_clock(elapsed)}, ETA {shown}",
            file=out,
            flush=True,
        )

    yield update_lines


def sweep_runs(
    traces: Sequence[str | Path],
    policies: str | Sequence[Any],
    *,
    cluster_scales: Sequence[float] = (1.0,),
    seeds: Sequence[int] = (0,),
    loads: Sequence[float] = (1.0,),
) -> list[dict[str, Any]]:
    """Every run's parameters (the product), checked, in a fixed order.

    Raises
    ------
    InvalidInstanceError
        An empty list, an unknown policy, a scale or load not finite and > 0, a seed not an
        integer >= 0, or duplicates (the field is named).
    """
    from optsched.sim.comparison import labelled_policies

    # names, Policy objects or a comma string alike; each run is keyed by the policy's name
    names = [p.name for p, _ in labelled_policies(policies, field="policies")]
    policies = names
    lists: dict[str, Sequence[Any]] = {
        "traces": traces,
        "policies": policies,
        "cluster_scales": cluster_scales,
        "seeds": seeds,
        "loads": loads,
    }
    for name, values in lists.items():
        if len(values) == 0:
            raise InvalidInstanceError(name, "must name at least one value")
        if len(set(map(str, values))) != len(values):
            raise InvalidInstanceError(name, "a value is repeated")
    for name in ("cluster_scales", "loads"):
        for v in lists[name]:
            if isinstance(v, bool) or not (
                isinstance(v, int | float) and math.isfinite(v) and v > 0
            ):
                raise InvalidInstanceError(name, f"must be finite numbers > 0, got {v!r}")
    for v in loads:
        check_range("loads", v, "load")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise InvalidInstanceError("seeds", f"must be integers >= 0, got {s!r}")
    return [
        {
            "trace": str(t),
            "cluster_scale": float(c),
            "seed": int(s),
            "load": float(ld),
            "policy": p,
        }
        for t, c, s, ld, p in itertools.product(traces, cluster_scales, seeds, loads, policies)
    ]


def sweep(
    traces: Sequence[str | Path],
    cluster: Any,
    policies: str | Sequence[Any],
    *,
    store: str | Path | None = None,
    cluster_scales: Sequence[float] = (1.0,),
    seeds: Sequence[int] = (0,),
    loads: Sequence[float] = (1.0,),
    round_seconds: float | str | None = "policy",
    restore_s: float = 0.0,
    throughputs: Any = None,
    reference: str = "v100",
    backend: str = "joblib",
    n_jobs: int | None = None,
    client: Any = None,
    address: str | None = None,
    progress: bool = False,
    window: tuple[int, int | None] | None = None,
    bound: bool = False,
    bound_time_limit: float | None = None,
) -> pd.DataFrame:
    """Run every combination (see the module notes) and return one row per run.

    Parameters
    ----------
    traces : sequence of str or Path
        Trace files (any supported format) or ``synthetic:N``.
    cluster : str or ClusterSpec
        The base cluster, ``v100=8,p100=16[:GPUS/SERVER]``.
    policies : sequence of str or Policy, or str
        Registered names (plug-ins included) and/or Policy objects, or a comma-separated
        string (``"fifo,srtf"``, ``"all"``). Objects must pickle for the process backends.
    store : str or Path, optional
        The resumable store (a SQLite file, or a directory holding ``runs.sqlite``); without one
        the runs are kept in memory only.
    cluster_scales, seeds, loads : sequences
        See the module notes.
    round_seconds, restore_s, throughputs, reference
        As in ``optsched sim run``; shared by every run (the store's config). ``round_seconds``
        as in :func:`~optsched.sim.simulate`: a number, ``"policy"`` (default) for each
        policy's own, ``None`` for event-driven runs. ``throughputs``:
        ``"gavel"``, ``"uniform"``, a path, a Throughputs object, or ``None`` for each trace's
        default (Gavel's
        table for a Gavel-format trace, uniform otherwise); each row's ``throughputs`` column
        names the table it ran on.
    backend : {"joblib", "loky", "serial", "dask", "ray"}
        See the module notes and :func:`~optsched.runs.driver.run_sweep`.
    n_jobs : int, optional
        Processes for ``"joblib"`` (default: one per core, at most one per run left; ``-1``
        likewise; above the runs: one per run; above
        :data:`~optsched.limits.MAX_WORKERS_PER_CORE` x the cores: refused before any run);
        see :func:`~optsched.runs.driver.worker_count`.
    client : distributed.Client, optional
        For ``"dask"``: the cluster to use (default: ``address``, else a local in-process one).
    address : str, optional
        Scheduler address for ``"dask"`` or ``"ray"``.
    progress : bool, default False
        Show progress on stderr: a bar with ``n/N`` runs and an ETA on a terminal, one line
        per finished run elsewhere (:func:`sweep_progress`).
    window : (int, int or None), optional
        The steady-state window of arrival indices ``[start, end)`` the metrics count (see
        :func:`~optsched.sim.measure.metrics.run_metrics`); shared by every run (the store's
        config).
    bound : bool, default False
        Also compute the certified bounds on each world's optimum
        (:func:`optsched.sim.optimum.bounds.bounds`, once per world in each worker) and give every
        row
        ``bound_<objective>`` and ``bound_gap_<objective>`` (see
        :func:`~optsched.sim.optimum.bounds.certified_gap`), with ``bound_method_<objective>`` (the
        relaxation that gave it) and ``bound_complete_<objective>`` (False when an LP ran out
        of time and a weaker relaxation stands).
    bound_time_limit : float, optional
        Seconds for each world's bounds (the closed forms always come back).

    Returns
    -------
    pandas.DataFrame
        One row per run (every run, stored before or now), sorted by the key fields. Its
        ``attrs["notes"]`` says which seeds and loads change nothing (:func:`study_notes`)
        and ``attrs["policy_specs"]`` maps each policy's name (the ``policy`` column) to the
        text that named it (:func:`~optsched.sim.comparison.labelled_policies`).

    Raises
    ------
    InvalidInstanceError
        A bad list or option (field named), a store of another sweep or config, a corrupt
        record (its key named), a trace that fails to read.
    """
    import pandas as pd

    from optsched.runs.store import RunStore, run_key
    from optsched.sim.world.cluster import ClusterSpec, parse_cluster
    from optsched.sim.world.throughputs import Throughputs

    if backend not in BACKENDS:
        raise InvalidInstanceError("backend", f"unknown backend {backend!r}; known: {BACKENDS}")
    if isinstance(cluster, ClusterSpec):
        cluster = str(cluster)  # its text round-trips (the store's config is text)
    elif not isinstance(cluster, str):
        raise InvalidInstanceError(
            "cluster",
            f"must be a ClusterSpec or its text ('v100=4,k80=4'), got {type(cluster).__name__}",
        )
    parse_cluster(cluster)
    if backend in ("joblib", "loky"):
        from optsched.runs.driver import check_n_jobs

        check_n_jobs(n_jobs)  # before the store is opened or any trace read
    if isinstance(round_seconds, str) and round_seconds != "policy":
        raise InvalidInstanceError(
            "round_seconds", f"must be a number of seconds, 'policy' or None, got {round_seconds!r}"
        )
    if isinstance(round_seconds, int | float) and not (
        math.isfinite(round_seconds) and round_seconds > 0
    ):
        raise InvalidInstanceError(
            "round_seconds", f"must be a finite number > 0, got {round_seconds}"
        )
    if not (math.isfinite(restore_s) and restore_s >= 0):
        raise InvalidInstanceError("restore_s", f"must be a finite number >= 0, got {restore_s}")
    from optsched.sim.comparison import labelled_policies

    labelled = labelled_policies(policies, field="policies")
    objects = {p.name: p for p, _ in labelled}
    # the objects, not their names: a policy made from module:attr or given as an object is
    # no registered name, and is never made again
    runs = sweep_runs(
        traces, list(objects.values()), cluster_scales=cluster_scales, seeds=seeds, loads=loads
    )
    table_object: Throughputs | None = None
    if throughputs is not None:
        from optsched.sim.world.sources import resolve_throughputs

        # a misspelt table name or missing file is refused before any run
        checked = resolve_throughputs(throughputs, parse_cluster(cluster), reference=reference)
        if isinstance(throughputs, Throughputs):
            # a table object travels with the runs; the store records its source
            table_object, throughputs = checked, f"object:{checked.source}"
    config: dict[str, Any] = {
        "cluster": cluster,
        "round_seconds": _EVENT_DRIVEN if round_seconds is None else round_seconds,
        "restore_s": restore_s,
        "throughputs": _DEFAULT if throughputs is None else str(throughputs),
        "reference": reference,
    }
    if window is not None:
        from optsched.sim.measure.metrics import check_window

        # only set when given, so that a store written without a window resumes unchanged
        config["window"] = list(check_window(window, len_jobs=None))
    if bound:
        # only set when asked, so that a store written without bounds resumes unchanged
        config["bound"] = True
        config["bound_time_limit"] = bound_time_limit
    tasks = [SweepTask(key=run_key(**r), params=r) for r in runs]
    with ExitStack() as stack:
        opened = None
        if store is not None:
            opened = stack.enter_context(RunStore(store, kind=KIND, config=config))
        bar = stack.enter_context(sweep_progress("sim sweep", show=progress))
        rows = run_sweep(
            tasks,
            partial(run_one, config=config, policies=objects, table=table_object),
            store=opened,
            backend=backend,
            n_jobs=n_jobs,
            progress=bar,
            client=client,
            address=address,
        ).records
    frame = pd.DataFrame(rows)
    if len(frame):
        rest = sorted(c for c in frame.columns if c not in KEY_FIELDS)
        frame = frame[[*KEY_FIELDS, *rest]]
        frame = frame.sort_values(list(KEY_FIELDS), kind="stable").reset_index(drop=True)
    frame.attrs["notes"] = study_notes(traces, seeds, loads)
    frame.attrs["policy_specs"] = {p.name: spec for p, spec in labelled}
    return frame


def study_notes(
    traces: Sequence[str | Path],
    seeds: Sequence[int],
    loads: Sequence[float],
    names: Sequence[str] | None = None,
) -> list[str]:
    """Per trace, the seeds and loads of a study that change nothing, in words.

    :func:`~optsched.sim.comparison.arrival_knob_notes` on each trace (read once more here, only
    when the study varies a seed or a load): every arrival at one time makes every load and
    seed a no-op, equal gaps every seed. A ``synthetic:N`` table is drawn anew by each seed,
    so only its loads are looked at (on the first seed's table). A sweep returns these notes
    in ``DataFrame.attrs["notes"]``; ``optsched sim sweep`` prints them and puts them in its
    JSON (``notes``). ``names``: how the notes name each trace (default: as given).
    """
    from optsched.sim.comparison import arrival_knob_notes

    varies = len(seeds) > 1 or any(int(v) != 0 for v in seeds)
    varies = varies or len(loads) > 1 or any(float(v) != 1.0 for v in loads)
    if not varies:
        return []
    notes: list[str] = []
    for k, trace in enumerate(traces):
        source, _ = study_source(str(trace), int(seeds[0]))
        frame = getattr(source, "jobs", source)
        drawn = str(trace).startswith(_SYNTHETIC)
        name = str(trace) if names is None else names[k]
        notes += arrival_knob_notes(frame, seeds=[0] if drawn else seeds, loads=loads, name=name)
    return notes
