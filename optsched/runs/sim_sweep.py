r"""Sweeps of the simulator: policies x traces x cluster sizes x seeds x load, resumable, parallel.

Every combination is one *run*: read the trace, build the world, simulate the policy, check the
record with the independent validator, keep the run metrics. Runs go through joblib, on local
processes by default (``backend="joblib"``), on a Dask cluster (``"dask"``: joblib's Dask
backend, through a ``distributed.Client`` given or started locally) or on Ray (``"ray"``: one
Ray task per run, collected as each finishes; the Ray running in the process, else one started
at ``address`` or locally and shut down at the end); the extras ``optsched[dask]`` and
``optsched[ray]`` install them.

Each finished run is written whole to a :class:`~optsched.runs.store.RunStore` (SQLite) under
its key (trace, cluster scale, seed, load, policy) as soon as it comes back, so a sweep killed
at any instant loses only the runs in flight; rerunning it with the same parameters redoes
exactly the missing keys, and the table it returns equals an uninterrupted sweep's (records
carry no wall-clock figures for that reason). Resuming with other shared parameters (cluster,
round length, throughputs) is refused naming the parameter.

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
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched._json import dumps
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BACKENDS", "KIND", "run_one", "sweep", "sweep_runs"]

#: Execution backends.
BACKENDS: tuple[str, ...] = ("joblib", "dask", "ray")

#: The RunStore kind of simulator sweeps.
KIND = "sim-sweep"

#: The parameters that name one run (the store key), in column order.
KEY_FIELDS: tuple[str, ...] = ("trace", "cluster_scale", "seed", "load", "policy")

_SYNTHETIC = "synthetic:"


def _job_frame(trace: str, seed: int, load: float) -> pd.DataFrame:
    import numpy as np

    from optsched.sim.generate import generate_job_table

    if trace.startswith(_SYNTHETIC):
        text = trace[len(_SYNTHETIC) :]
        if not text.isdigit() or int(text) < 1:
            raise InvalidInstanceError("traces", f"{trace!r}: expected synthetic:N with N >= 1")
        frame = generate_job_table(int(text), seed=seed)
    else:
        from optsched.traces import read_trace

        frame = read_trace(trace).jobs.copy()
        if seed > 0 and len(frame) > 1:
            arrivals = frame["arrival"].to_numpy(dtype=float)
            gaps = np.diff(arrivals)
            np.random.default_rng(seed).shuffle(gaps)
            frame["arrival"] = np.concatenate([[arrivals[0]], arrivals[0] + np.cumsum(gaps)])
    if load != 1.0:
        frame["arrival"] = frame["arrival"].astype(float) / load
    return frame


def run_one(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """One run of the sweep: its record (the key fields, the run metrics, the validity).

    A top-level function of picklable arguments, so that every backend can ship it.
    """
    from optsched.sim.cluster_spec import parse_cluster
    from optsched.sim.engine import simulate
    from optsched.sim.metrics import job_metrics, run_metrics
    from optsched.sim.policies import make_policy
    from optsched.sim.throughputs import Throughputs, load_throughputs
    from optsched.sim.validate import validate
    from optsched.sim.world import World

    spec = parse_cluster(config["cluster"]).scaled(params["cluster_scale"])
    if config.get("throughputs"):
        table = load_throughputs(config["throughputs"], reference=config["reference"])
    else:
        table = Throughputs.uniform(spec.names)
    frame = _job_frame(params["trace"], params["seed"], params["load"])
    world = World.from_frame(
        frame, spec, table, restore_s=config["restore_s"], file=params["trace"]
    )
    kwargs: dict[str, Any] = {}
    if config.get("round_seconds") is not None:
        kwargs["round_seconds"] = config["round_seconds"]
    record = simulate(world, make_policy(params["policy"], field="policies"), **kwargs)
    report = validate(world, record)
    metrics = run_metrics(record, job_metrics(record))
    metrics.pop("policy", None)
    return {
        **{k: params[k] for k in KEY_FIELDS},
        **metrics,
        "valid": report.ok,
        "violations": len(report.violations),
        "events": record.events,
    }


def _guarded_run(params: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_one`, with a refused input returned as data (it then crosses any backend).

    Exceptions with keyword-only constructor arguments do not survive every backend's
    pickling; the main process raises the error again from these fields.
    """
    try:
        return run_one(params, config)
    except InvalidInstanceError as exc:
        return {
            _ERROR: {
                "field": exc.field,
                "message": exc.message,
                "file": exc.file,
                "row": exc.row,
            }
        }


_ERROR = "__invalid__"


def sweep_runs(
    traces: Sequence[str | Path],
    policies: Sequence[str],
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
    from optsched.sim.policies import make_policy

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
    for p in policies:
        make_policy(p, field="policies")
    for name in ("cluster_scales", "loads"):
        for v in lists[name]:
            if isinstance(v, bool) or not (
                isinstance(v, int | float) and math.isfinite(v) and v > 0
            ):
                raise InvalidInstanceError(name, f"must be finite numbers > 0, got {v!r}")
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


def _ray_runs(
    todo: Sequence[dict[str, Any]], config: dict[str, Any], address: str | None
) -> Iterator[dict[str, Any]]:
    """Every run as a Ray task, yielded as each finishes (the order in which they end).

    Ray's joblib backend cannot return results as they finish, which the store needs so that
    an interrupted sweep loses only the runs in flight; plain tasks and :func:`ray.wait` can.
    A Ray started here (none was running: a local one, or ``address``) is shut down at the
    end; one already running is left as it was.
    """
    try:
        import ray
    except ImportError:
        raise InvalidInstanceError(
            "backend", "ray needs the extra: pip install 'optsched[ray]'"
        ) from None

    def runs() -> Iterator[dict[str, Any]]:
        started = not ray.is_initialized()
        if started:
            ray.init(address=address, include_dashboard=False)
        try:
            task = ray.remote(_guarded_run)
            pending = [task.remote(r, config) for r in todo]
            # each pass takes one finished run out of ``pending``: len(todo) passes at most
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    yield ray.get(ref)
        finally:
            if started:
                ray.shutdown()

    return runs()


def _backend_context(backend: str, client: Any, address: str | None) -> AbstractContextManager[Any]:
    import joblib

    if backend == "joblib":
        return nullcontext()
    if backend == "dask":
        try:
            import distributed
        except ImportError:
            raise InvalidInstanceError(
                "backend", "dask needs the extra: pip install 'optsched[dask]'"
            ) from None
        if client is None:
            # joblib's dask backend finds the current client; start one if none was given
            client = (
                distributed.Client(address)
                if address
                else distributed.Client(processes=False, dashboard_address=None)
            )
            owned = client
        else:
            owned = None
        return _Owned(joblib.parallel_config(backend="dask"), owned)
    raise InvalidInstanceError("backend", f"unknown backend {backend!r}; known: {BACKENDS}")


class _Owned(AbstractContextManager[Any]):
    """A joblib backend context that closes the client it started."""

    def __init__(self, inner: AbstractContextManager[Any], owned: Any) -> None:
        self.inner, self.owned = inner, owned

    def __enter__(self) -> Any:
        return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.inner.__exit__(*exc)
        if self.owned is not None:
            self.owned.close()


def sweep(
    traces: Sequence[str | Path],
    cluster: str,
    policies: Sequence[str],
    *,
    store: str | Path | None = None,
    cluster_scales: Sequence[float] = (1.0,),
    seeds: Sequence[int] = (0,),
    loads: Sequence[float] = (1.0,),
    round_seconds: float | None = None,
    restore_s: float = 0.0,
    throughputs: str | Path | None = None,
    reference: str = "v100",
    backend: str = "joblib",
    n_jobs: int | None = None,
    client: Any = None,
    address: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Run every combination (see the module notes) and return one row per run.

    Parameters
    ----------
    traces : sequence of str or Path
        Trace files (any supported format) or ``synthetic:N``.
    cluster : str
        The base cluster, ``v100=8,p100=16[:GPUS/SERVER]``.
    policies : sequence of str
    store : str or Path, optional
        The resumable store (a SQLite file, or a directory holding ``runs.sqlite``); without one
        the runs are kept in memory only.
    cluster_scales, seeds, loads : sequences
        See the module notes.
    round_seconds, restore_s, throughputs, reference
        As in ``optsched sim run``; shared by every run (the store's config).
    backend : {"joblib", "dask", "ray"}
    n_jobs : int, optional
        joblib workers (default: the machine's cores; ``-1`` likewise).
    client : distributed.Client, optional
        For ``"dask"``: the cluster to use (default: ``address``, else a local in-process one).
    address : str, optional
        Scheduler address for ``"dask"`` or ``"ray"``.
    progress : bool, default False
        Show a progress bar on stderr.

    Returns
    -------
    pandas.DataFrame
        One row per run (every run, stored before or now), sorted by the key fields.

    Raises
    ------
    InvalidInstanceError
        A bad list or option (field named), a store of another sweep or config, a corrupt
        record (its key named), a trace that fails to read.
    """
    import joblib
    import pandas as pd

    from optsched.runs.store import RunStore, run_key
    from optsched.sim.cluster_spec import parse_cluster

    if backend not in BACKENDS:
        raise InvalidInstanceError("backend", f"unknown backend {backend!r}; known: {BACKENDS}")
    parse_cluster(cluster)
    if round_seconds is not None and not (math.isfinite(round_seconds) and round_seconds > 0):
        raise InvalidInstanceError(
            "round_seconds", f"must be a finite number > 0, got {round_seconds}"
        )
    if not (math.isfinite(restore_s) and restore_s >= 0):
        raise InvalidInstanceError("restore_s", f"must be a finite number >= 0, got {restore_s}")
    runs = sweep_runs(traces, policies, cluster_scales=cluster_scales, seeds=seeds, loads=loads)
    config: dict[str, Any] = {
        "cluster": cluster,
        "round_seconds": round_seconds,
        "restore_s": restore_s,
        "throughputs": None if throughputs is None else str(throughputs),
        "reference": reference,
    }
    opened = RunStore(store, kind=KIND, config=config) if store is not None else None
    memory: dict[str, dict[str, Any]] = {}
    failed: dict[str, Any] = {}
    try:
        done = opened.keys() if opened is not None else set()
        todo = [r for r in runs if run_key(**r) not in done]
        bar = _progress(progress, len(runs), len(runs) - len(todo))
        context = _backend_context(backend, client, address) if backend != "ray" else nullcontext()
        with bar as (advance), context:
            if todo:
                out: Iterator[dict[str, Any]]
                if backend == "ray":
                    out = _ray_runs(todo, config, address)
                else:
                    parallel = joblib.Parallel(
                        n_jobs=n_jobs if n_jobs is not None else -1,
                        return_as="generator_unordered",
                    )
                    out = parallel(joblib.delayed(_guarded_run)(r, config) for r in todo)
                for record in out:
                    if _ERROR in record:
                        # drain the generator (the other runs are kept) and raise afterwards
                        failed = failed or record[_ERROR]
                        continue
                    key = run_key(**{k: record[k] for k in KEY_FIELDS})
                    if opened is not None:
                        opened.put(key, record)
                    else:
                        # the same JSON round trip as the store's, so both tables are equal
                        memory[key] = json.loads(dumps(record))
                    advance()
        if failed:
            raise InvalidInstanceError(
                failed["field"], failed["message"], file=failed["file"], row=failed["row"]
            )
        wanted = {run_key(**r) for r in runs}
        if opened is not None:
            rows = [rec for key, rec in opened.items() if key in wanted]
        else:
            rows = list(memory.values())
    finally:
        if opened is not None:
            opened.close()
    frame = pd.DataFrame(rows)
    if len(frame):
        rest = sorted(c for c in frame.columns if c not in KEY_FIELDS)
        frame = frame[[*KEY_FIELDS, *rest]]
        frame = frame.sort_values(list(KEY_FIELDS), kind="stable").reset_index(drop=True)
    return frame


class _Bar(AbstractContextManager[Any]):
    """A rich progress bar on stderr (or nothing), yielding an ``advance()`` callable."""

    def __init__(self, show: bool, total: int, completed: int) -> None:
        self.show, self.total, self.completed = show, total, completed
        self.progress: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        if self.show:
            from rich.console import Console
            from rich.progress import Progress

            self.progress = Progress(console=Console(stderr=True), transient=False)
            self.progress.__enter__()
            self.task = self.progress.add_task(
                "sim sweep", total=self.total, completed=self.completed
            )
        return self.advance

    def advance(self) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)


def _progress(show: bool, total: int, completed: int) -> _Bar:
    return _Bar(show, total, completed)
