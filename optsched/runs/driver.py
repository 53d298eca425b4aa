r"""The one sweep driver: independent keyed runs, resumable, written as each one finishes.

Every sweep of optsched (``oasis ratio``, ``pace sweep``, ``sim sweep``) is a list of
:class:`SweepTask`\ s, each a run key (:func:`~optsched.runs.store.run_key` of the run's parameters)
and the picklable parameters a function turns into one JSON-ready record. :func:`run_sweep`

1. reads every record already in the :class:`~optsched.runs.store.RunStore` (each checked
   against its checksum, before any work: a corrupt or foreign record is an error naming its
   key) and keeps the tasks whose key is missing;
2. runs those on the chosen backend and collects them *unordered*, as each finishes, writing
   each record to the store at once (one transaction per record): an interruption at any
   instant loses only the runs in flight, and a rerun redoes exactly the missing keys;
3. returns every task's record in task order, fresh and stored ones alike passed through the
   store's JSON form (:func:`~optsched.runs.store.as_stored`), so a resumed sweep's table equals
   an uninterrupted one's to the last bit.

Backends
    ``"serial"``: in this process, one run after the other. ``"loky"`` (joblib's process pool;
    ``"joblib"`` is the same): :func:`worker_count` processes. ``"dask"``: joblib's Dask
    backend on a ``distributed.Client`` (the one given, one at ``address``, else a local
    in-process one, closed at the end). ``"ray"``: one Ray task per run, collected with
    :func:`ray.wait` as each finishes (Ray's joblib backend cannot yield results as they end);
    a Ray started here is shut down at the end, one already running is left as it was. The
    extras ``optsched[dask]`` and ``optsched[ray]`` install the last two.

Refused inputs
    A run raising :class:`~optsched.errors.InvalidInstanceError` does not stop the others: its
    error crosses any backend as data (exceptions with keyword-only arguments do not survive
    every backend's pickling), the other runs finish and are stored, and the first such error
    is raised again here, with its field, file and row. Any other exception propagates at once.

Complexity: one call of ``fn`` per missing task; the store is read once and written once per
finished run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from optsched.errors import InvalidInstanceError
from optsched.runs.store import RunStore, as_stored

__all__ = [
    "BACKENDS",
    "Progress",
    "SweepOutcome",
    "SweepTask",
    "check_n_jobs",
    "progress_bar",
    "run_sweep",
    "worker_count",
]

#: The execution backends (``"joblib"`` is accepted as a name of ``"loky"``).
BACKENDS: tuple[str, ...] = ("serial", "loky", "dask", "ray")

#: ``progress(done, total)``: runs finished (stored before included) out of all tasks.
Progress = Callable[[int, int], None]

_ALIASES = {"joblib": "loky"}


@dataclass(frozen=True)
class SweepTask:
    """One run of a sweep: its key in the store and the parameters ``fn`` receives.

    Attributes
    ----------
    key : str
        The run's key, usually :func:`~optsched.runs.store.run_key` of its parameters.
    params : Any
        What ``fn(params)`` computes the record from (picklable for the parallel backends).
    """

    key: str
    params: Any


@dataclass(frozen=True)
class SweepOutcome:
    """What :func:`run_sweep` returns.

    Attributes
    ----------
    records : list of dict
        One record per task, in task order (stored before or computed now), each in the
        store's JSON form.
    computed : int
        Runs computed by this call (the others were read from the store).
    """

    records: list[dict[str, Any]]
    computed: int


def _cores() -> int:
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13: honours the affinity mask
    if counter is not None:
        return max(1, int(counter() or 1))
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def worker_count(n_jobs: int | None, remaining: int) -> int:
    """Processes for ``remaining`` runs: never more than the runs, nor the cores unless asked.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` or ``-1``: one per core; ``-k`` (``k >= 2``): the cores less ``k - 1``
        (joblib's convention); ``k >= 1``: ``k``, even above the cores (asked for), but never
        more than :data:`~optsched.limits.MAX_WORKERS_PER_CORE` a core.
    remaining : int
        Runs left to do.

    Returns
    -------
    int
        ``max(1, min(wanted, remaining))``: an explicit ``n_jobs`` above the runs left starts
        one worker a run.

    Raises
    ------
    InvalidInstanceError
        ``n_jobs`` is 0, not an integer, or above ``MAX_WORKERS_PER_CORE`` x the cores (an
        absurd pool size; field ``n_jobs``): see :func:`check_n_jobs`.

    Examples
    --------
    >>> worker_count(4, 3)
    3
    >>> worker_count(1, 10)
    1
    """
    check_n_jobs(n_jobs)
    if n_jobs is None or n_jobs < 0:
        cores = _cores()
        wanted = cores if n_jobs is None else max(1, cores + 1 + n_jobs)
    else:
        wanted = n_jobs
    return max(1, min(wanted, remaining))


def check_n_jobs(n_jobs: int | None) -> None:
    """Refuse a local pool size that is not an integer, is 0, or is absurd for this machine.

    An explicit ``n_jobs`` above :data:`~optsched.limits.MAX_WORKERS_PER_CORE` times the cores
    this process may use is refused before any run (a pool that size only thrashes: runs are
    CPU-bound), naming ``n_jobs`` and the largest accepted value.

    Raises
    ------
    InvalidInstanceError
        Field ``n_jobs``.
    """
    from optsched.limits import MAX_WORKERS_PER_CORE

    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int)):
        raise InvalidInstanceError("n_jobs", f"must be an integer, got {n_jobs!r}")
    if n_jobs == 0:
        raise InvalidInstanceError("n_jobs", "must be >= 1, or negative as in joblib; got 0")
    if n_jobs is not None and n_jobs > 0:
        cores = _cores()
        most = MAX_WORKERS_PER_CORE * cores
        if n_jobs > most:
            raise InvalidInstanceError(
                "n_jobs",
                f"{n_jobs} workers is an absurd pool size for {cores} cores: at most {most} "
                f"({MAX_WORKERS_PER_CORE} a core); runs beyond the workers wait their turn",
            )


_ERROR = "__invalid__"


def _call(fn: Callable[[Any], Mapping[str, Any]], task: SweepTask) -> tuple[str, dict[str, Any]]:
    """``fn(task.params)`` with its key; a refused input comes back as data (module notes)."""
    try:
        return task.key, dict(fn(task.params))
    except InvalidInstanceError as exc:
        error = {"field": exc.field, "message": exc.message, "file": exc.file, "row": exc.row}
        return task.key, {_ERROR: {**error, "errors": [list(e) for e in exc.errors]}}


#: Seconds between two looks of a pool worker at its parent (see :func:`_watch_parent`).
PARENT_POLL = 0.5

_watched_by: int | None = None


def _watch_parent(parent: int) -> None:
    """In a pool worker: exit as soon as the process that started the pool is gone.

    A sweep killed with SIGKILL cannot stop its workers; they were re-parented and lived on
    (with the sweep's stdout and stderr open) until their pool timed out. The pool's
    initializer: each worker starts, before its first run, one daemon thread that looks at its
    parent every :data:`PARENT_POLL` seconds and ends the process when the parent changed
    (re-parented: the sweep died).

    ``parent`` is the sweep's process id, passed from it: a worker orphaned before it got here
    sees a different parent already and ends at once.
    """
    import threading
    import time

    global _watched_by
    me = os.getpid()
    if _watched_by == me:
        return
    _watched_by = me

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)  # no cleanup to wait for: the run's result has nobody to go to

    threading.Thread(target=watch, name="optsched-parent-watch", daemon=True).start()


def _serial(fn: Callable[[Any], Mapping[str, Any]], todo: Sequence[SweepTask]) -> Iterator[Any]:
    for task in todo:
        yield _call(fn, task)


def _joblib(
    fn: Callable[[Any], Mapping[str, Any]],
    todo: Sequence[SweepTask],
    n_jobs: int,
    local: bool = False,
) -> Iterator[Any]:
    import joblib

    if local:
        # the local pool's workers end with the sweep, even one killed by SIGKILL
        watch = {"initializer": _watch_parent, "initargs": (os.getpid(),)}
        with joblib.parallel_config(backend="loky", **watch):
            parallel = joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    else:
        parallel = joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    yield from parallel(joblib.delayed(_call)(fn, task) for task in todo)


#: Seconds to wait for a remote scheduler or cluster (``address``) to answer before the sweep
#: is refused (exit 2 naming ``--address``), instead of waiting as long as the backend would.
CONNECT_TIMEOUT = 10.0


def reachable(address: str | None, backend: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse a remote ``address`` that does not accept a TCP connection within ``timeout``.

    ``None``, ``"auto"`` and ``"local"`` (Ray's own names for "find or start one here") are
    not probed.

    Raises
    ------
    InvalidInstanceError
        Field ``address``: not ``host:port``, or no answer within ``timeout`` seconds.

    Examples
    --------
    >>> reachable(None, "ray")
    """
    import socket

    if address is None or address in ("auto", "local"):
        return
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidInstanceError(
            "address", f"{backend} address must be host:port, got {address!r}"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise InvalidInstanceError(
            "address",
            f"cannot reach the {backend} cluster at {address!r} within {timeout:g} s: {exc}",
        ) from None


def _ray(
    fn: Callable[[Any], Mapping[str, Any]],
    todo: Sequence[SweepTask],
    address: str | None,
    in_flight: int | None,
) -> Iterator[Any]:
    try:
        import ray
    except ImportError:
        raise InvalidInstanceError(
            "backend", "ray needs the extra: pip install 'optsched[ray]'"
        ) from None
    started = not ray.is_initialized()
    if started:
        reachable(address, "ray")
        ray.init(address=address, include_dashboard=False)
    try:
        remote = ray.remote(_call)
        queue = list(reversed(todo))
        limit = len(todo) if in_flight is None or in_flight < 1 else in_flight
        pending: list[Any] = []
        # every pass takes one finished run out of ``pending``: len(todo) passes in all
        while queue or pending:
            while queue and len(pending) < limit:
                pending.append(remote.remote(fn, queue.pop()))
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()


@contextmanager
def _dask(client: Any, address: str | None) -> Iterator[None]:
    import joblib

    try:
        import distributed
    except ImportError:
        raise InvalidInstanceError(
            "backend", "dask needs the extra: pip install 'optsched[dask]'"
        ) from None
    with ExitStack() as stack:
        if client is None:
            # joblib's Dask backend finds the current client; start one if none was given
            if address:
                try:
                    client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
                except OSError as exc:
                    raise InvalidInstanceError(
                        "address", f"cannot reach the Dask scheduler at {address!r}: {exc}"
                    ) from None
            else:
                client = distributed.Client(processes=False, dashboard_address=None)
            stack.callback(client.close)
        stack.enter_context(joblib.parallel_config(backend="dask"))
        yield


def run_sweep(
    tasks: Sequence[SweepTask],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    store: RunStore | None = None,
    backend: str = "serial",
    n_jobs: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
    address: str | None = None,
) -> SweepOutcome:
    """Run every task whose key the store lacks, storing each record as it finishes.

    Parameters
    ----------
    tasks : sequence of SweepTask
        The sweep's runs, in the order the records are returned. A key may repeat (it is
        computed once).
    fn : callable
        ``fn(params) -> record`` (a JSON-ready mapping). For the process and cluster backends
        it must be picklable: a module-level function or a :func:`functools.partial` of one.
    store : RunStore, optional
        Where each record is written as soon as its run finishes, and read back from on a
        rerun. Without one the records are kept in memory only.
    backend : {"serial", "loky", "dask", "ray"}
        Where the runs execute (module notes). ``"loky"`` with one worker runs in this process.
    n_jobs : int, optional
        ``"loky"``: see :func:`worker_count`. ``"dask"``: joblib's ``n_jobs`` on the cluster
        (default: all its workers). ``"ray"``: at most this many runs in flight (default, or
        ``-1``: all).
    progress : callable, optional
        ``progress(done, total)``, once before the first run and after each finished one.
    client : distributed.Client, optional
        ``"dask"``: the cluster to use (default: ``address``, else a local in-process one).
    address : str, optional
        ``"dask"`` or ``"ray"``: the scheduler's or cluster's address.

    Returns
    -------
    SweepOutcome

    Raises
    ------
    InvalidInstanceError
        An unknown backend (field ``backend``), a bad ``n_jobs``, a corrupt stored record (its
        key named), or the first input a run refused (module notes).

    Examples
    --------
    >>> tasks = [SweepTask(key=str(k), params=k) for k in (3, 1, 2)]
    >>> out = run_sweep(tasks, lambda k: {"k": k, "square": k * k})
    >>> [r["square"] for r in out.records], out.computed
    ([9, 1, 4], 3)
    """
    name = _ALIASES.get(backend, backend)
    if name not in BACKENDS:
        raise InvalidInstanceError(
            "backend", f"unknown backend {backend!r}; known: {(*BACKENDS, *_ALIASES)}"
        )
    if name == "loky":
        check_n_jobs(n_jobs)  # an absurd pool size is refused before the store is read
    # Every stored record is read, and checked against its checksum, before any work.
    done: dict[str, dict[str, Any]] = dict(store.items()) if store is not None else {}
    todo = list({t.key: t for t in tasks if t.key not in done}.values())
    # how many tasks share each missing key: a finished run completes all of them
    counts: dict[str, int] = {t.key: 0 for t in todo}
    for t in tasks:
        if t.key in counts:
            counts[t.key] += 1
    total = len(tasks)
    finished = total - sum(counts.values())

    def advance(k: int) -> None:
        nonlocal finished
        finished += k
        if progress is not None:
            progress(finished, total)

    advance(0)
    failed: dict[str, Any] | None = None
    context: AbstractContextManager[Any] = nullcontext()
    results: Iterator[Any]
    if not todo:
        results = iter(())
    elif name == "ray":
        results = _ray(fn, todo, address, n_jobs)
    elif name == "dask":
        context = _dask(client, address)
        results = _joblib(fn, todo, -1 if n_jobs is None else n_jobs)
    elif name == "loky":
        workers = worker_count(n_jobs, len(todo))
        # one worker: this process, without a pool to start or arguments to pickle
        results = _joblib(fn, todo, workers, local=True) if workers > 1 else _serial(fn, todo)
    else:
        results = _serial(fn, todo)
    with context, _closing(results):
        for key, record in results:
            if _ERROR in record:
                # the other runs go on and are kept; the first refusal is raised at the end
                failed = failed or record[_ERROR]
                continue
            stored = as_stored(record)
            if store is not None:
                store.put(key, stored)
            done[key] = stored
            advance(counts[key])
    if failed is not None:
        raise InvalidInstanceError(
            failed["field"],
            failed["message"],
            [tuple(e) for e in failed["errors"]],
            file=failed["file"],
            row=failed["row"],
        )
    return SweepOutcome([done[t.key] for t in tasks], len(todo))


@contextmanager
def _closing(results: Iterator[Any]) -> Iterator[None]:
    """Close a generator of results on the way out (a Ray started for it is shut down)."""
    try:
        yield
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


@contextmanager
def progress_bar(label: str, show: bool = True) -> Iterator[Progress | None]:
    """A rich progress bar on stderr as a :data:`Progress` callable (``None`` when not shown)."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress as Bar

    with Bar(console=Console(stderr=True), transient=False) as bar:
        # the label holds an experiment's name (data): shown as it is, never as markup
        task = bar.add_task(escape(label), total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
