"""Size budgets: what optsched refuses to read or allocate, and how to raise it.

Every input crosses one guarded boundary (:mod:`optsched._io`) and every *derived* size a model,
kernel or simulator is about to allocate (variables, ``slots x servers x jobs`` arrays, events)
is checked against a budget here **before** memory is allocated. A refusal is an
:class:`~optsched.errors.InvalidInstanceError` naming the field that drives the size, the size it
would need, and the budget's name.

Budgets are raised (or lowered) three ways, innermost first:

* ``with optsched.limits.override(max_array_cells=10**9): ...`` for one block of code;
* :func:`set_budget` for the rest of the process;
* the environment variable ``OPTSCHED_<NAME>`` (e.g. ``OPTSCHED_MAX_FILE_BYTES=1e9``), read when
  the process first asks for a budget; the ``optsched`` command reads it too.

The defaults keep one request under a few GiB of memory on a laptop-class machine.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from optsched.errors import InvalidInstanceError

__all__ = [
    "MAX_STALLED_ROUNDS",
    "MAX_WORKERS_PER_CORE",
    "RANGES",
    "Budget",
    "Range",
    "check_range",
    "check_size",
    "current",
    "override",
    "set_budget",
]

#: Longest a simulated job may hold GPUs where its rate is 0, in rounds of the run, before the
#: simulator's validator rejects the record (constraint ``no_progress`` of
#: :mod:`optsched.sim.measure.validate`; event-driven runs allow no such stretch). The engine never
#: places a job where it cannot progress, so any such stretch is a defect; one round is the
#: slack a round-based replay of an external schedule gets before it is called starvation.
MAX_STALLED_ROUNDS = 1

#: Most local worker processes a sweep starts per core, however many it is asked for
#: (``sim sweep -j``, ``pace sweep -j``, ``n_jobs`` of :func:`optsched.runs.driver.run_sweep`
#: on the process backend). Runs are CPU-bound solves and simulations, so beyond a few workers a
#: core they only add memory and start-up time (each worker imports the library and its
#: solvers) and lengthen every run; a larger ``-j`` is refused as an absurd pool size before any
#: work. The remote backends (Dask, Ray) size their own pools and are not bounded here.
MAX_WORKERS_PER_CORE = 4


@dataclass(frozen=True)
class Range:
    """The closed range ``[low, high]`` a time, rate or load value must lie in, and why."""

    low: float
    high: float
    unit: str
    why: str


#: Every time, rate and load a user gives the simulator, bounded before a run (the closed list
#: of ``docs/guide/limits.rst``). The bounds keep every simulated time within ``1e12`` s (the
#: largest arrival a trace may hold) and far from the float precision the validator's tolerances
#: assume: a round of ``1e300`` s or a load of ``1e-300`` would give times whose sums lose every
#: digit of a job's work, and a run its own validator rejects.
RANGES: dict[str, Range] = {
    "round_seconds": Range(1e-3, 1e6, "s", "a round from a millisecond to 11.6 days"),
    "restore_s": Range(0.0, 1e6, "s", "a checkpoint/restore cost of at most 11.6 days"),
    "load": Range(1e-3, 1e3, "", "arrivals at most a thousand times sparser or denser"),
    "offered_load": Range(1e-3, 1e3, "", "an offered load from 0.1 % to 1000 times the cluster"),
    "max_time": Range(0.0, 1e12, "s", "the largest arrival time a trace may hold"),
    "arrival": Range(0.0, 1e12, "s", "an arrival time after scaling, as a trace's own"),
}


def check_range(field: str, value: object, name: str) -> float:
    """``value`` as a float if it is a number within ``RANGES[name]``, else refused.

    Parameters
    ----------
    field : str
        The option or key named in the error (``--round-seconds``, ``round_seconds``).
    value : object
        The value given; a bool or a non-number is refused.
    name : str
        A key of :data:`RANGES`.

    Raises
    ------
    InvalidInstanceError
        ``value`` is not a finite number in the range (naming ``field`` and the range).
    """
    r = RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInstanceError(field, f"must be a number, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and r.low <= x <= r.high):
        raise InvalidInstanceError(
            field,
            f"must be within [{r.low:g}, {r.high:g}]{' ' + r.unit if r.unit else ''} "
            f"({r.why}), got {value!r}",
        )
    return x


@dataclass(frozen=True)
class Budget:
    """The size budgets in force.

    Attributes
    ----------
    max_file_bytes : int
        Largest instance/schedule/profile/price file (JSON, TOML) read whole.
    max_trace_bytes : int
        Largest trace file read (traces are streamed row by row).
    max_trace_rows : int
        Most rows (jobs or tasks) taken from one trace.
    max_convert_rows : int
        Most rows ``trace convert`` reads into memory whole (about 265 bytes a row); a larger
        file is refused up front unless it is a clean normalized CSV in arrival order, which is
        converted in a stream in bounded memory (:mod:`optsched.traces.convert`).
    max_json_depth : int
        Deepest nesting of arrays/objects in a JSON or TOML document.
    max_int_digits : int
        Most digits of an integer literal in a file (any field's legal values are far shorter).
    max_model_variables : int
        Most variables (or constraint rows) of one optimization model (a Pyomo model builds
        roughly 30,000-100,000 variables a second, so the default bounds building to tens of
        seconds; model building also counts against a solve's time limit).
    max_array_cells : int
        Most cells of one dense array a model, kernel or validator allocates
        (8 bytes each: the default is 800 MB).
    max_events : int
        Most events (or loop iterations) of one simulation or search.
    max_exact_job_rounds : int
        Most job-rounds (jobs x the rounds that always admit a schedule,
        :func:`optsched.sim.optimum.exact.default_rounds`) of the exact model that
        :func:`optsched.sim.compare` solves on the policies' own round length; above it the
        optimum is solved on a coarser grid and shown as the optimum of another world, with
        no gap (the default is about 100 jobs in 25 rounds, proven in seconds).
    max_schedule_epochs : int
        Most epochs of one dynamic job's batch-size schedule (Shockwave's ``accordion`` and
        ``gns`` modes, :mod:`optsched.sim.world.batch_schedule`): the schedule is built epoch by
        epoch, and its phases grow with the epochs (Shockwave's jobs train for tens to
        hundreds of epochs).
    max_checkpoint_weights : int
        Most weights (float32 numbers, summed over every array) a policy checkpoint's settings
        may call for (:mod:`optsched.harmony.checkpoint`; the default is 64 MiB of weights,
        the shipped model has about 8,000). Checked from the settings before any array of the
        file is decompressed.
    max_harmony_servers : int
        Most servers of a Harmony world (:class:`optsched.harmony.HarmonyWorld`, from a
        checkpoint or an option): every decision scores every server and checks every server's
        packing, so the work per decision grows with the square of the servers.
    max_harmony_types : int
        Most job types of a Harmony world: the policy's input per server holds a type-pair
        table, so its weights grow with the square of the types.
    max_harmony_job_tasks : int
        Most tasks (workers plus parameter servers) of the largest job of a Harmony world: one
        decision per task, each checking the packing of the rest.
    """

    max_file_bytes: int = 64 * 2**20
    max_trace_bytes: int = 4 * 2**30
    max_trace_rows: int = 20_000_000
    max_convert_rows: int = 1_000_000
    max_json_depth: int = 64
    max_int_digits: int = 40
    max_model_variables: int = 1_000_000
    max_array_cells: int = 100_000_000
    max_events: int = 200_000_000
    max_exact_job_rounds: int = 2_500
    max_schedule_epochs: int = 100_000
    max_checkpoint_weights: int = 2**24
    max_harmony_servers: int = 4_096
    max_harmony_types: int = 256
    max_harmony_job_tasks: int = 256

    def describe(self) -> dict[str, int]:
        """Every budget by name (what ``optsched limits`` and the docs print)."""
        return dataclasses.asdict(self)


_FIELDS = {f.name for f in dataclasses.fields(Budget)}


def _from_environment() -> Budget:
    values: dict[str, int] = {}
    for name in _FIELDS:
        raw = os.environ.get(f"OPTSCHED_{name.upper()}")
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInstanceError(
                f"OPTSCHED_{name.upper()}", f"must be a positive number, got {raw!r}"
            ) from None
        if not (math.isfinite(value) and value >= 1 and value == int(value)):
            raise InvalidInstanceError(
                f"OPTSCHED_{name.upper()}", f"must be a whole number >= 1, got {raw!r}"
            )
        values[name] = int(value)
    return Budget(**values)


_process_budget: Budget | None = None
_scoped: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "optsched_budget", default=None
)


def current() -> Budget:
    """The budget in force (innermost :func:`override`, else :func:`set_budget`, else env)."""
    scoped = _scoped.get()
    if scoped is not None:
        return scoped
    return _process()


def _replace(base: Budget, changes: dict[str, Any]) -> Budget:
    unknown = sorted(set(changes) - _FIELDS)
    if unknown:
        raise InvalidInstanceError(
            unknown[0], f"is not a budget; known: {', '.join(sorted(_FIELDS))}"
        )
    for name, value in changes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInstanceError(name, f"must be an integer >= 1, got {value!r}")
    return dataclasses.replace(base, **changes)


def _process() -> Budget:
    global _process_budget
    if _process_budget is None:
        _process_budget = _from_environment()
    return _process_budget


def set_budget(**changes: int) -> Budget:
    """Change budgets for the rest of the process; returns the new budget.

    Inside an :func:`override` block only ``changes`` outlive the block (the process budget is
    changed, not the block's temporary one).
    """
    global _process_budget
    _process_budget = _replace(_process(), changes)
    return _process_budget


@contextlib.contextmanager
def override(**changes: int) -> Iterator[Budget]:
    """Change budgets inside a ``with`` block (thread- and task-local)."""
    token = _scoped.set(_replace(current(), changes))
    try:
        yield current()
    finally:
        _scoped.reset(token)


def check_size(field: str, size: float, budget: str, what: str = "cells") -> None:
    """Refuse ``size`` if it exceeds the budget named ``budget``.

    Parameters
    ----------
    field : str
        The input field that drives the size (named in the error), e.g. ``"horizon"``.
    size : float
        The derived size about to be allocated (may be a float product, to avoid overflow).
    budget : str
        A :class:`Budget` attribute name, e.g. ``"max_array_cells"``.
    what : str
        What is counted, for the message.

    Raises
    ------
    InvalidInstanceError
        ``size`` is not finite or exceeds the budget.
    """
    limit = getattr(current(), budget)
    try:
        value = float(size)
    except OverflowError:  # an integer product beyond the float range
        value = math.inf
    if math.isnan(value) or value < 0:
        raise InvalidInstanceError(field, f"derives a size that is not a number >= 0 ({size!r})")
    if not math.isfinite(value) or value > limit:
        shown = f"{value:,.0f}" if math.isfinite(value) else str(size)[:40]
        raise InvalidInstanceError(
            field,
            f"would need {shown} {what}, over the budget {budget} = {limit:,}; raise it with "
            f"optsched.limits.override({budget}=...) or the environment variable "
            f"OPTSCHED_{budget.upper()}",
        )
