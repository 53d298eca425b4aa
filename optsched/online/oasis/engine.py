r"""The slot engine shared by OASiS and the baselines.

Every job-scheduling algorithm in :mod:`optsched.online.oasis.online` and
:mod:`optsched.online.oasis.baselines`
runs on the pieces defined here, so their schedules are counted, checked and compared the same
way:

* :func:`work_units` fixes how a job's progress is counted (the paper's chunk-epochs, or plain
  worker-slots as in the ILP's constraint (2)) and how many PSs a worker count needs;
* :class:`ClusterState` holds the committed usage of every server, slot and resource, says how
  many more workers or PSs of a job fit, and refuses any commitment that would exceed a capacity;
* :func:`round_robin` spreads a count over servers one unit at a time;
* :class:`SlotEngine` simulates slot by slot for policies that decide per slot (the baselines),
  trimming each job's last slot to the work it still needs;
* :class:`OnlineRun` is the common result (a :class:`~optsched.online.oasis.schedule.Schedule` plus
  per-job figures), and :class:`OnlineAlgorithm` the interface every online algorithm offers.

Work accounting
---------------
With ``work="chunks"`` (the paper's Alg. 2, the default) progress is counted in chunk-epochs:
processing :math:`d > 0` chunk-epochs in one slot needs
:math:`\max(1, \lceil d\, w_i \rceil)` workers, where :math:`w_i` is the work of one
chunk-epoch in worker-slots (:attr:`~optsched.online.oasis.instance.Job.work_per_chunk`), and a job
is
done after :math:`E_i N_i` chunk-epochs. So :math:`n` workers process

.. math:: q_i(n) = \max\{d : \max(1, \lceil d\, w_i \rceil) \le n\} = \lfloor n / w_i \rfloor

chunk-epochs in a slot. With ``work="worker-slots"`` progress is the worker count itself,
:math:`q_i(n) = n`, and a job needs :math:`\lceil W_i \rceil` worker-slots (at least one): this is
exactly the ILP's constraint (2), whose per-job schedule set contains the chunk-epoch one because
:math:`\sum_t \lceil d_t w_i \rceil \ge \lceil \sum_t d_t w_i \rceil`.

A slot with :math:`n` workers needs at least
:math:`m_i(n) = \min\{m \in \mathbb{Z} : b_i n \le B_i m\}` PSs (constraint (6)); since
:math:`b_i \le B_i`, :math:`m_i(n) \le n` (constraint (7)).
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numba
import numpy as np

from optsched.errors import CapacityExceededError, InvalidInstanceError
from optsched.online.oasis.instance import OasisInstance, ceil_work
from optsched.online.oasis.schedule import Schedule, build_schedule
from optsched.tolerances import FIT_TOL, WORK_TOL

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FIT_TOL",
    "WORK_MODES",
    "ClusterState",
    "OnlineAlgorithm",
    "OnlineRun",
    "SlotEngine",
    "SlotPlacement",
    "SlotPolicy",
    "WorkMode",
    "WorkUnits",
    "check_work_mode",
    "round_robin",
    "work_units",
]

WorkMode = Literal["chunks", "worker-slots"]
#: The two ways of counting a job's progress (see the module docstring).
WORK_MODES: tuple[str, ...] = ("chunks", "worker-slots")

# FIT_TOL (imported from optsched.tolerances, re-exported here): relative slack when deciding
# whether one more worker or PS fits in a residual capacity; far below the validator's
# CAPACITY_TOL, so whatever fits here also validates.


def check_work_mode(work: str) -> WorkMode:
    """Return ``work`` if it names a work mode, else raise naming the choices.

    Raises
    ------
    InvalidInstanceError
        ``work`` is not a work mode (field ``"work"``).
    """
    if work not in WORK_MODES:
        raise InvalidInstanceError("work", f"must be one of {list(WORK_MODES)}, got {work!r}")
    return work  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------
# Work units
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkUnits:
    r"""How job ``i``'s progress is counted.

    Attributes
    ----------
    mode : {"chunks", "worker-slots"}
    demand : int
        Units the job needs in all (:math:`E_i N_i` chunk-epochs, or :math:`\\lceil W_i \\rceil`
        worker-slots).
    per_workers : numpy.ndarray of int64, shape (N_i + 1,)
        ``per_workers[n]``: units that ``n`` workers process in one slot, capped at ``demand``.
    ps_needed : numpy.ndarray of int64, shape (N_i + 1,)
        ``ps_needed[n]``: fewest PSs that serve ``n`` workers (constraint (6)).
    """

    mode: WorkMode
    demand: int
    per_workers: np.ndarray
    ps_needed: np.ndarray

    @property
    def max_workers(self) -> int:
        """:math:`N_i`, the cap on concurrent workers."""
        return len(self.per_workers) - 1

    def workers_for(self, units: int) -> int:
        """Fewest workers that process ``units`` in one slot (``N_i + 1`` if impossible)."""
        if units <= 0:
            return 0
        idx = int(np.searchsorted(self.per_workers, units, side="left"))
        return idx


def _ps_needed(n: int, b: float, B: float) -> int:
    """Smallest integer ``m`` with ``b * n <= B * m`` (checked exactly in floating point)."""
    if n <= 0:
        return 0
    m = ceil_work(n * b / B)
    # ceil_work may be off by one either way near an integer; the exact products decide.
    while m > 0 and b * n <= B * (m - 1):
        m -= 1
    while b * n > B * m:
        m += 1
    return m


def _chunks_per_slot(n: int, w: float, cap: int) -> int:
    """Largest ``d <= cap`` with ``max(1, ceil_work(d * w)) <= n``."""
    if n <= 0:
        return 0
    if w <= 0.0:
        return cap
    d = min(cap, math.floor(n / w + WORK_TOL * max(1.0, n / w)))
    while d < cap and ceil_work((d + 1) * w) <= n:
        d += 1
    while d > 0 and max(1, ceil_work(d * w)) > n:
        d -= 1
    return d


def work_units(instance: OasisInstance, i: int, work: str = "chunks") -> WorkUnits:
    r"""Work accounting of job ``i`` (see the module docstring).

    Parameters
    ----------
    instance : OasisInstance
    i : int
        Job index.
    work : {"chunks", "worker-slots"}, default "chunks"

    Returns
    -------
    WorkUnits

    Notes
    -----
    :math:`O(N_i)` time.
    """
    mode = check_work_mode(work)
    job = instance.jobs[i]
    N = job.chunks
    w = float(instance.work_per_chunk[i])
    if mode == "chunks":
        demand = job.chunk_epochs
        q = [_chunks_per_slot(n, w, demand) for n in range(N + 1)]
    else:
        demand = max(1, ceil_work(float(instance.total_work[i])))
        q = [min(n, demand) for n in range(N + 1)]
    ps = [_ps_needed(n, job.b, job.B) for n in range(N + 1)]
    return WorkUnits(
        mode=mode,
        demand=int(demand),
        per_workers=np.asarray(q, dtype=np.int64),
        ps_needed=np.asarray(ps, dtype=np.int64),
    )


# ------------------------------------------------------------------------------------------
# Cluster state
# ------------------------------------------------------------------------------------------


def room_for(free: np.ndarray, demand: np.ndarray, cap: int) -> np.ndarray:
    r"""How many units of a demand vector fit in each row of residual capacities.

    Parameters
    ----------
    free : numpy.ndarray, shape (..., R)
        Residual capacities.
    demand : numpy.ndarray, shape (R,)
        Demand of one unit (worker or PS).
    cap : int
        Upper clip (e.g. :math:`N_i`).

    Returns
    -------
    numpy.ndarray of int64, shape (...)
        :math:`\min(\text{cap}, \min_{r: d^r > 0} \lfloor \text{free}^r / d^r \rfloor)`, at least 0.
    """
    pos = demand > 0
    out = np.full(free.shape[:-1], cap, dtype=np.int64)
    if pos.any():
        ratio = free[..., pos] / demand[pos]
        fit = np.floor(ratio + FIT_TOL * np.maximum(1.0, np.abs(ratio)))
        out = np.minimum(out, np.min(fit, axis=-1).astype(np.int64))
    return np.maximum(out, 0)


class ClusterState:
    """Committed usage of every worker and PS server, slot and resource.

    Parameters
    ----------
    instance : OasisInstance

    Attributes
    ----------
    worker_used : numpy.ndarray, shape (T, H, R)
        :math:`g_h^r(t)`, resources committed on worker servers.
    ps_used : numpy.ndarray, shape (T, K, R)
        :math:`v_k^r(t)`, resources committed on PS servers.
    worker_touched, ps_touched : numpy.ndarray of bool, shapes (T, H) and (T, K)
        Pairs (slot, server) that a commit wrote to; elsewhere the usage is still exactly 0.0
        (:func:`~optsched.online.oasis.oracle.decide_kernel` reuses the idle room there).
    """

    def __init__(self, instance: OasisInstance) -> None:
        self.instance = instance
        T = instance.horizon
        self.worker_capacity = instance.worker_capacity
        self.ps_capacity = instance.ps_capacity
        self.worker_used = np.zeros((T, *self.worker_capacity.shape), dtype=np.float64)
        self.ps_used = np.zeros((T, *self.ps_capacity.shape), dtype=np.float64)
        self.worker_touched = np.zeros((T, len(self.worker_capacity)), dtype=np.bool_)
        self.ps_touched = np.zeros((T, len(self.ps_capacity)), dtype=np.bool_)

    def worker_room(self, i: int, t: int | slice) -> np.ndarray:
        """Workers of job ``i`` that still fit per worker server in slot(s) ``t``."""
        free = self.worker_capacity - self.worker_used[t]
        return room_for(free, self.instance.worker_demand[i], self.instance.jobs[i].chunks)

    def ps_room(self, i: int, t: int | slice) -> np.ndarray:
        """PSs of job ``i`` that still fit per PS server in slot(s) ``t``."""
        free = self.ps_capacity - self.ps_used[t]
        return room_for(free, self.instance.ps_demand[i], self.instance.jobs[i].chunks)

    def commit(
        self,
        i: int,
        workers: Iterable[tuple[int, int, int]],
        ps: Iterable[tuple[int, int, int]],
    ) -> None:
        """Reserve job ``i``'s deployment ``(slot, server, count)`` lists.

        Raises
        ------
        CapacityExceededError
            Some server would exceed a capacity (nothing is committed then).
        """
        w_list = [(int(t), int(h), int(n)) for t, h, n in workers if n > 0]
        p_list = [(int(t), int(k), int(n)) for t, k, n in ps if n > 0]
        inst = self.instance
        cap_n = inst.jobs[i].chunks
        sides = (
            ("worker", w_list, self.worker_capacity, self.worker_used, inst.worker_demand[i]),
            ("PS", p_list, self.ps_capacity, self.ps_used, inst.ps_demand[i]),
        )
        for label, items, capacity, used, demand in sides:
            need: dict[tuple[int, int], int] = {}
            for t, s, n in items:
                need[(t, s)] = need.get((t, s), 0) + n
            if not need:
                continue
            # Room of every touched (slot, server) at once: room_for is elementwise, so this
            # is the per-pair check, without recomputing whole slots.
            ts = np.fromiter((t for t, _ in need), dtype=np.int64, count=len(need))
            ss = np.fromiter((s for _, s in need), dtype=np.int64, count=len(need))
            avail = room_for(capacity[ss] - used[ts, ss], demand, cap_n)
            counts = np.fromiter(need.values(), dtype=np.int64, count=len(need))
            over = np.flatnonzero(counts > avail)
            if over.size:
                b = int(over[0])
                raise CapacityExceededError(
                    f"job {i}: {int(counts[b])} {label}s on server {int(ss[b])} in slot "
                    f"{int(ts[b])}, only {int(avail[b])} fit"
                )
        for items, used, touched, demand in (
            (w_list, self.worker_used, self.worker_touched, inst.worker_demand[i]),
            (p_list, self.ps_used, self.ps_touched, inst.ps_demand[i]),
        ):
            if items:
                arr = np.asarray(items, dtype=np.int64)
                # Unbuffered and in list order: the same additions as one loop over the items.
                np.add.at(used, (arr[:, 0], arr[:, 1]), arr[:, 2, None] * demand)
                touched[arr[:, 0], arr[:, 1]] = True

    def commit_arrays(
        self,
        i: int,
        workers: tuple[np.ndarray, np.ndarray, np.ndarray],
        ps: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`commit` of a deployment given as int64 arrays (slot, server, count).

        Every (slot, server) pair at most once per side and every count positive (as the
        oracle returns them). The check and the additions are :meth:`commit`'s, in two Numba
        loops; the touched pairs are also marked in :attr:`worker_touched` and
        :attr:`ps_touched`.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            The usage rows of the touched worker and PS pairs before the commit, shapes
            (m, R) and (m', R), in the order given.

        Raises
        ------
        CapacityExceededError
            Some server would exceed a capacity (nothing is committed then).
        """
        inst = self.instance
        cap_n = inst.jobs[i].chunks
        sides = (
            ("worker", workers, self.worker_capacity, self.worker_used, inst.worker_demand[i]),
            ("PS", ps, self.ps_capacity, self.ps_used, inst.ps_demand[i]),
        )
        for label, (ts, ss, ns), capacity, used, demand in sides:
            b, avail = _first_overfull(capacity, used, demand, ts, ss, ns, cap_n, FIT_TOL)
            if b >= 0:
                raise CapacityExceededError(
                    f"job {i}: {int(ns[b])} {label}s on server {int(ss[b])} in slot "
                    f"{int(ts[b])}, only {avail} fit"
                )
        old_w = _add_usage(self.worker_used, self.worker_touched, inst.worker_demand[i], *workers)
        old_p = _add_usage(self.ps_used, self.ps_touched, inst.ps_demand[i], *ps)
        return old_w, old_p

    def commit_reference(
        self,
        i: int,
        workers: Iterable[tuple[int, int, int]],
        ps: Iterable[tuple[int, int, int]],
    ) -> None:
        """Plain twin of :meth:`commit`: room recomputed per (slot, server), one add per item.

        The previous implementation, kept as the test oracle of the vectorised one and for
        benchmarks. Same contract, same errors, same usage afterwards.
        """
        w_list = [(int(t), int(h), int(n)) for t, h, n in workers if n > 0]
        p_list = [(int(t), int(k), int(n)) for t, k, n in ps if n > 0]
        for label, items, room in (
            ("worker", w_list, self.worker_room),
            ("PS", p_list, self.ps_room),
        ):
            need: dict[tuple[int, int], int] = {}
            for t, s, n in items:
                need[(t, s)] = need.get((t, s), 0) + n
            for (t, s), n in need.items():
                avail = int(room(i, t)[s])
                if n > avail:
                    raise CapacityExceededError(
                        f"job {i}: {n} {label}s on server {s} in slot {t}, only {avail} fit"
                    )
        wd = self.instance.worker_demand[i]
        pd = self.instance.ps_demand[i]
        for t, h, n in w_list:
            self.worker_used[t, h] += n * wd
            self.worker_touched[t, h] = True
        for t, k, n in p_list:
            self.ps_used[t, k] += n * pd
            self.ps_touched[t, k] = True


@numba.njit(cache=True)
def _first_overfull(
    capacity: np.ndarray,
    used: np.ndarray,
    demand: np.ndarray,
    ts: np.ndarray,
    ss: np.ndarray,
    ns: np.ndarray,
    cap: int,
    tol: float,
) -> tuple[int, int]:
    """First ``k`` with ``ns[k]`` above the room of ``(ts[k], ss[k])``, and that room.

    ``(-1, 0)`` when everything fits. The room is :func:`room_for`'s formula on
    ``capacity[s] - used[t, s]``, entry by entry.
    """
    R = demand.shape[0]
    for k in range(ts.shape[0]):
        t = ts[k]
        s = ss[k]
        best = cap
        for r in range(R):
            if demand[r] > 0:
                ratio = (capacity[s, r] - used[t, s, r]) / demand[r]
                slack = abs(ratio) if abs(ratio) > 1.0 else 1.0
                fit = int(np.floor(ratio + tol * slack))
                if fit < best:
                    best = fit
        avail = best if best > 0 else 0
        if ns[k] > avail:
            return k, avail
    return -1, 0


@numba.njit(cache=True)
def _add_usage(
    used: np.ndarray,
    touched: np.ndarray,
    demand: np.ndarray,
    ts: np.ndarray,
    ss: np.ndarray,
    ns: np.ndarray,
) -> np.ndarray:
    """Add ``ns[k] * demand`` at ``(ts[k], ss[k])`` in order; return the usage rows before.

    The same additions as :meth:`ClusterState.commit` (``n * demand`` rounded once, added
    once per item in list order); ``touched`` is set on every pair written.
    """
    R = demand.shape[0]
    old = np.empty((ts.shape[0], R))
    for k in range(ts.shape[0]):
        for r in range(R):
            old[k, r] = used[ts[k], ss[k], r]
    for k in range(ts.shape[0]):
        t = ts[k]
        s = ss[k]
        n = ns[k]
        for r in range(R):
            used[t, s, r] += n * demand[r]
        touched[t, s] = True
    return old


def round_robin(room: np.ndarray, count: int, start: int = 0) -> list[tuple[int, int]] | None:
    """Place ``count`` units on servers one at a time in cyclic order from ``start``.

    Servers without room are skipped. Returns ``[(server, n), ...]`` or ``None`` when the
    servers cannot hold ``count`` units in all.
    """
    if count <= 0:
        return []
    room = np.asarray(room, dtype=np.int64).copy()
    if int(room.sum()) < count:
        return None
    S = len(room)
    placed = np.zeros(S, dtype=np.int64)
    s = start % S
    left = count
    while left > 0:
        if room[s] > 0:
            room[s] -= 1
            placed[s] += 1
            left -= 1
        s = (s + 1) % S
    return [(int(h), int(n)) for h, n in enumerate(placed) if n > 0]


# ------------------------------------------------------------------------------------------
# Results and the algorithm interface
# ------------------------------------------------------------------------------------------


@dataclass(repr=False)
class OnlineRun:
    """What an online algorithm or baseline returns.

    Attributes
    ----------
    algorithm : str
        The algorithm's name.
    schedule : Schedule
        Checked by :func:`~optsched.online.oasis.schedule.validate` like any other schedule.
    decision_seconds : list of float
        Wall time spent deciding on each job (arrival order); empty when the algorithm decides
        per slot rather than per job.
    stats : dict
        Algorithm-specific counters (e.g. unfinished jobs, non-optimal MILP re-solves).
    proven_bound : float or None
        A competitive ratio the algorithm provably achieves under its assumptions.
    dual_bound : float or None
        A certified upper bound on the offline optimum, when the algorithm produces one.
    """

    algorithm: str
    schedule: Schedule
    decision_seconds: list[float] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    proven_bound: float | None = None
    dual_bound: float | None = None

    @property
    def utility(self) -> float:
        """Total utility (ALG)."""
        return float(self.schedule.total_utility)

    @property
    def admitted(self) -> list[int]:
        """Indices of admitted (and completed) jobs."""
        return self.schedule.admitted

    def to_frame(self) -> pd.DataFrame:
        """The schedule in long format (see :meth:`Schedule.to_frame`)."""
        return self.schedule.to_frame()

    def __repr__(self) -> str:
        dual = "" if self.dual_bound is None else f", dual_bound={self.dual_bound:.6g}"
        return (
            f"{type(self).__name__}({self.algorithm!r}, utility={self.utility:.6g}, "
            f"admitted={len(self.admitted)}/{len(self.schedule.jobs)}{dual})"
        )

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>" + self.schedule._repr_html_()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "algorithm": self.algorithm,
            "utility": self.utility,
            "admitted": [self.schedule.jobs[i].job for i in self.admitted],
            "n_admitted": len(self.admitted),
            "proven_bound": self.proven_bound,
            "dual_bound": self.dual_bound,
            "decision_seconds_mean": (
                float(np.mean(self.decision_seconds)) if self.decision_seconds else None
            ),
            "stats": self.stats,
            "schedule": self.schedule.to_dict(),
        }


@runtime_checkable
class OnlineAlgorithm(Protocol):
    """What :mod:`optsched.online.oasis.competitive` needs of an online algorithm.

    Any object with a ``name`` and a ``run(instance) -> OnlineRun`` method qualifies: OASiS,
    every baseline, or a user's own policy.
    """

    name: str

    def run(self, instance: OasisInstance) -> OnlineRun:
        """Process ``instance``'s jobs in arrival order and return the run."""
        ...


# ------------------------------------------------------------------------------------------
# The per-slot simulation used by the baselines
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotPlacement:
    """Explicit per-server counts for one job in one slot: ``[(server, n), ...]`` each."""

    workers: tuple[tuple[int, int], ...]
    ps: tuple[tuple[int, int], ...]

    @property
    def n_workers(self) -> int:
        """Total workers."""
        return sum(n for _, n in self.workers)

    @property
    def n_ps(self) -> int:
        """Total PSs."""
        return sum(n for _, n in self.ps)


class SlotPolicy(Protocol):
    """A policy that decides slot by slot (the baselines).

    The engine calls :meth:`admit` once per arriving job and then :meth:`allocate` once per
    slot. ``allocate`` gives jobs resources for the slot by calling :meth:`SlotEngine.assign`
    (which commits at once, so later calls see what earlier ones took); a job not assigned in
    a slot is paused in it.
    """

    def admit(self, engine: SlotEngine, t: int, i: int) -> bool:
        """Decide on job ``i`` arriving in slot ``t`` (rejected jobs never run)."""
        ...

    def allocate(self, engine: SlotEngine, t: int, arrivals: Sequence[int], event: bool) -> None:
        """Assign slot ``t`` (``event``: an arrival now or a completion just before)."""
        ...


class SlotEngine:
    """Slot-by-slot simulation of a :class:`SlotPolicy` on one instance.

    Parameters
    ----------
    instance : OasisInstance
    work : {"chunks", "worker-slots"}, default "chunks"
        How progress is counted (the same choice as OASiS's oracle, so comparisons are fair).

    Attributes
    ----------
    state : ClusterState
        Usage committed so far (only past and current slots: baselines do not plan ahead).
    units : list of WorkUnits
    done : numpy.ndarray of int64
        Units processed per job.
    active : list of int
        Admitted jobs that have arrived and not finished, in arrival order.
    finished : dict
        Job -> completion time (last slot with workers + 1).
    previous : dict
        Job -> the placement it had in the previous slot (sticky policies reuse it).
    current : dict
        Job -> its placement in the current slot so far.
    """

    def __init__(self, instance: OasisInstance, work: str = "chunks") -> None:
        self.instance = instance
        self.work = check_work_mode(work)
        self.state = ClusterState(instance)
        self.units = [work_units(instance, i, work) for i in range(instance.n_jobs)]
        self.done = np.zeros(instance.n_jobs, dtype=np.int64)
        self.active: list[int] = []
        self.rejected: list[int] = []
        self.finished: dict[int, int] = {}
        self.previous: dict[int, SlotPlacement] = {}
        self.current: dict[int, SlotPlacement] = {}
        self._workers: dict[int, list[tuple[int, int, int]]] = {}
        self._ps: dict[int, list[tuple[int, int, int]]] = {}
        self._worker_ptr = 0
        self._ps_ptr = 0

    def remaining(self, i: int) -> int:
        """Units job ``i`` still needs."""
        return int(self.units[i].demand - self.done[i])

    def slots_needed(self, i: int, n: int) -> int | None:
        """Slots job ``i`` needs to finish with ``n`` workers per slot (``None``: never)."""
        n = min(n, self.units[i].max_workers)
        per = int(self.units[i].per_workers[n]) if n > 0 else 0
        if per <= 0:
            return None
        return -(-self.remaining(i) // per)

    def max_fit(self, i: int) -> int:
        """Most workers of job ``i`` an empty cluster holds together with their PSs."""
        u = self.units[i]
        w_total = int(
            room_for(
                self.state.worker_capacity, self.instance.worker_demand[i], u.max_workers
            ).sum()
        )
        p_total = int(
            room_for(self.state.ps_capacity, self.instance.ps_demand[i], u.max_workers).sum()
        )
        n = min(u.max_workers, w_total)
        while n > 0 and u.ps_needed[n] > p_total:
            n -= 1
        return n

    def place_count(self, i: int, t: int, n: int, *, exact: bool = False) -> SlotPlacement | None:
        """Place up to ``n`` workers of job ``i`` round-robin, with the fewest PSs they need.

        The count shrinks until workers and PSs both fit (unless ``exact``); ``None`` when not
        even one worker fits (or, with ``exact``, not all ``n``). Nothing is committed.
        """
        u = self.units[i]
        n = min(n, u.max_workers)
        w_room = self.state.worker_room(i, t)
        p_room = self.state.ps_room(i, t)
        want = n
        n = min(n, int(w_room.sum()))
        while n > 0 and u.ps_needed[n] > p_room.sum():
            n -= 1
        if n <= 0 or (exact and n < want):
            return None
        wp = round_robin(w_room, n, self._worker_ptr)
        pp = round_robin(p_room, int(u.ps_needed[n]), self._ps_ptr)
        if wp is None or pp is None:  # pragma: no cover - guarded by the sums above
            return None
        self._worker_ptr = (self._worker_ptr + n) % len(w_room)
        self._ps_ptr = (self._ps_ptr + int(u.ps_needed[n])) % len(p_room)
        return SlotPlacement(tuple(wp), tuple(pp))

    def fits(self, i: int, t: int, p: SlotPlacement) -> bool:
        """Whether placement ``p`` of job ``i`` fits in slot ``t`` now."""
        w_room = self.state.worker_room(i, t)
        p_room = self.state.ps_room(i, t)
        return all(n <= w_room[h] for h, n in p.workers) and all(m <= p_room[k] for k, m in p.ps)

    def assign(
        self, i: int, t: int, request: SlotPlacement | int, *, exact: bool = False
    ) -> SlotPlacement | None:
        """Give job ``i`` resources in slot ``t`` and commit them.

        Parameters
        ----------
        i, t : int
            Job and slot.
        request : SlotPlacement or int
            An explicit placement (used as given if it fits, else nothing is assigned), or a
            worker count placed round-robin (shrunk to what fits unless ``exact``).
        exact : bool
            With a count: all or nothing.

        Returns
        -------
        SlotPlacement or None
            What was committed (trimmed to the work the job still needs), or ``None``.
        """
        if i not in self.active or i in self.current:
            return None
        if isinstance(request, SlotPlacement):
            p: SlotPlacement | None = request if self.fits(i, t, request) else None
        else:
            p = self.place_count(i, t, int(request), exact=exact)
        if p is None or p.n_workers == 0:
            return None
        p = self._trim(i, p)
        self.state.commit(i, [(t, h, n) for h, n in p.workers], [(t, k, m) for k, m in p.ps])
        self.current[i] = p
        self._workers.setdefault(i, []).extend((t, h, n) for h, n in p.workers)
        self._ps.setdefault(i, []).extend((t, k, m) for k, m in p.ps)
        u = self.units[i]
        self.done[i] = min(u.demand, self.done[i] + int(u.per_workers[p.n_workers]))
        return p

    def _trim(self, i: int, p: SlotPlacement) -> SlotPlacement:
        """Drop workers (and then PSs) a job does not need in its last slot."""
        u = self.units[i]
        need = u.workers_for(self.remaining(i))
        n = p.n_workers
        if n <= need:
            return p
        workers = list(p.workers)
        drop = n - need
        while drop > 0:
            h, c = workers[-1]
            take = min(c, drop)
            drop -= take
            workers[-1] = (h, c - take)
            if workers[-1][1] == 0:
                workers.pop()
        ps = list(p.ps)
        # Down to the fewest PSs the remaining workers need: keeps (6), and (7) since m(n) <= n.
        drop_ps = p.n_ps - int(u.ps_needed[need])
        while drop_ps > 0 and ps:
            k, c = ps[-1]
            take = min(c, drop_ps)
            drop_ps -= take
            ps[-1] = (k, c - take)
            if ps[-1][1] == 0:
                ps.pop()
        return SlotPlacement(tuple(workers), tuple(ps))

    def run(self, policy: SlotPolicy, name: str) -> OnlineRun:
        """Simulate every slot and return the run (unfinished jobs count as rejected)."""
        inst = self.instance
        by_slot: dict[int, list[int]] = {}
        for i in sorted(range(inst.n_jobs), key=lambda j: (inst.jobs[j].arrival, j)):
            by_slot.setdefault(inst.jobs[i].arrival, []).append(i)
        decision: dict[int, float] = {}
        completed_last = False
        for t in range(inst.horizon):
            arrivals = by_slot.get(t, [])
            for i in arrivals:
                start = time.perf_counter()
                if policy.admit(self, t, i):
                    self.active.append(i)
                else:
                    self.rejected.append(i)
                decision[i] = time.perf_counter() - start
            self.current = {}
            policy.allocate(self, t, arrivals, bool(arrivals) or completed_last)
            completed_last = False
            for i in list(self.current):
                if self.done[i] >= self.units[i].demand:
                    self.finished[i] = t + 1
                    self.active.remove(i)
                    completed_last = True
            self.previous = self.current
        deployments: list[Any] = []
        for i in range(inst.n_jobs):
            if i in self.finished:
                deployments.append((self._workers.get(i, []), self._ps.get(i, [])))
            else:
                deployments.append(None)
        schedule = build_schedule(inst, deployments, algorithm=name)
        unfinished = list(self.active)
        order = sorted(range(inst.n_jobs), key=lambda j: (inst.jobs[j].arrival, j))
        return OnlineRun(
            algorithm=name,
            schedule=schedule,
            decision_seconds=[decision.get(i, 0.0) for i in order],
            stats={
                "work": self.work,
                "rejected_on_arrival": len(self.rejected),
                "unfinished": len(unfinished),
                "wasted_worker_slots": int(
                    sum(n for i in unfinished for _, _, n in self._workers.get(i, []))
                ),
            },
        )
