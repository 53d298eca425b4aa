"""What the benchmarks measure beside wall time: CPU time and the resident memory peak.

``tracemalloc`` sees only the allocations made through Python's allocator: a solver's own
memory (HiGHS's model and search tree, a BLAS workspace) is invisible to it, so a tracemalloc
peak of 117 MiB can sit beside a process that held 837 MiB. The resident peak of the process is
what the machine had to give. On Linux it is ``VmHWM`` in ``/proc/self/status``, and writing
``5`` to ``/proc/self/clear_refs`` resets it to the current resident size, so one process can
measure the peak of each case in turn: :func:`rss_peak` around a case reports that case's peak
(the resident size it started from included, so it is never below what the process held).
Where the reset is refused, the peak reported is the process's since it started
(``ru_maxrss``), and :attr:`Peak.fresh` says so.

Time budgets that decide an outcome ("proven optimal within 60 s") count CPU seconds
(:func:`time.process_time`, every thread of the process, HiGHS's included), which a loaded
machine does not inflate the way it inflates wall time; :func:`cpu_budget` runs a solve under a
wall-clock cap scaled by the machine's load (:func:`load_factor`) and judges it by the CPU it
used.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["Budgeted", "Peak", "cpu_budget", "load_factor", "resident_mib", "rss_peak"]

T = TypeVar("T")

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> float | None:
    """A ``kB`` figure of ``/proc/self/status`` (``VmHWM``, ``VmRSS``), or None elsewhere."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def _max_rss_kib() -> float:
    """``ru_maxrss`` in KiB (macOS reports bytes)."""
    peak = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak / 1024.0 if sys.platform == "darwin" else peak


def resident_mib() -> float:
    """The process's resident peak so far, in MiB (VmHWM, else ``ru_maxrss``)."""
    hwm = _status_kib("VmHWM")
    return (hwm if hwm is not None else _max_rss_kib()) / 1024.0


def _reset_peak() -> bool:
    """Reset VmHWM to the current resident size (Linux >= 4.0); whether it worked."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


@dataclass
class Peak:
    """The resident peak of one measured block, filled in when the block ends.

    Attributes
    ----------
    mib : float
        The resident peak (MiB) of the block: the process's memory while it ran, the solver's
        own included, and what the process already held when the block began (``base``).
    fresh : bool
        Whether the peak was reset when the block began (otherwise ``mib`` is the process's
        peak since it started, which may come from an earlier case).
    """

    mib: float = float("nan")
    fresh: bool = False
    #: the resident size (MiB) when the block began: ``mib - base`` is what the block added
    base: float = float("nan")


@contextlib.contextmanager
def rss_peak() -> Iterator[Peak]:
    """Measure the resident peak of the block (see the module notes).

    Examples
    --------
    >>> with rss_peak() as peak:
    ...     block = bytearray(8 * 2**20)
    >>> peak.mib >= 8
    True
    """
    peak = Peak(fresh=_reset_peak())
    rss = _status_kib("VmRSS")
    peak.base = float("nan") if rss is None else rss / 1024.0
    try:
        yield peak
    finally:
        peak.mib = resident_mib()


@dataclass(frozen=True)
class Budgeted:
    """The outcome of :func:`cpu_budget`: the value, the times, and the CPU verdict."""

    value: Any
    wall: float
    cpu: float
    within: bool
    #: the wall-clock cap handed to ``run``, as a multiple of the CPU budget
    wall_factor: float = 1.0


def load_factor(most: float = 10.0) -> float:
    """How many times slower than wall time a CPU-bound process runs now, in ``[1, most]``.

    The one-minute load average per core the process may use (``os.getloadavg``,
    ``os.sched_getaffinity``): 1 on an idle machine, 8 at a load of 16 on 2 cores.
    """
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return min(most, max(1.0, os.getloadavg()[0] / max(cores, 1)))


def cpu_budget(
    run: Callable[[float], T], cpu_seconds: float, wall_factor: float | None = None
) -> Budgeted:
    """Run ``run(wall_cap)`` and judge it by the CPU seconds it used.

    ``run`` receives a wall-clock cap to pass on as the solver's time limit (HiGHS has no CPU
    limit): ``cpu_seconds`` times ``wall_factor``, by default :func:`load_factor` (1 on an idle
    machine, so a solve stops where it always did; more on a loaded one, so the solve gets about
    ``cpu_seconds`` of CPU before the cap). ``within`` is whether the process used at most
    ``cpu_seconds`` of CPU (every thread counted) in ``run``: that, not the wall time, decides
    whether the budget was met.
    """
    factor = load_factor() if wall_factor is None else wall_factor
    began, cpu = time.perf_counter(), time.process_time()
    value = run(cpu_seconds * factor)
    used = time.process_time() - cpu
    return Budgeted(value, time.perf_counter() - began, used, used <= cpu_seconds, factor)
