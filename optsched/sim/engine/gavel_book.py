"""Gavel's mechanism, the book: job combinations, time received, deficits, resets, allocation.

:class:`GavelBook` keeps what Gavel's scheduler keeps between rounds (see
:mod:`optsched.sim.engine.gavel`, "Allocation resets" and "Priorities"): the active jobs and their
combinations (pairs, for packing policies), each combination's seconds received since the last
reset and deficit per GPU type, the allocation ``X`` and whether a combination can run on a type;
and, at a reset, the policy's new allocation.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from optsched.errors import PolicyError
from optsched.sim.engine.gavel_options import GavelMechanism, is_agnostic, type_order
from optsched.sim.engine.policy import GrantPlacement, JobState, Policy, SimState
from optsched.sim.measure.record import INTERVAL_COLUMNS, empty_intervals

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = ["GavelBook", "Key", "Open"]

#: A job combination: ``(i,)`` one job, ``(i, j)`` (``i < j``) two jobs sharing a gang.
Key = tuple[int, ...]


@dataclass(slots=True)
class Open:
    """A job's open record segment (one placement, one partner)."""

    seg_start: float
    gpu_type: str
    slots: tuple[int, ...]  # indices into the type's GPU slots (Gavel's worker ids)
    placement: GrantPlacement
    partner: int  # -1: alone
    last_end: float  # end of its progress in the last round it ran


class GavelBook:
    """The state of one run of Gavel's mechanism and its bookkeeping (module notes)."""

    def __init__(self, world: World, policy: Policy, L: float, opts: GavelMechanism) -> None:
        self.world = world
        self.policy = policy
        self.L = L
        self.prior = L / 2.0
        self.opts = opts
        self.jobs = world.jobs
        self.states = [JobState(job=j) for j in world.jobs]
        self.types = {t.name: t for t in world.cluster.gpu_types}
        self.order = type_order(world)
        self.shuffle = is_agnostic(policy) if opts.shuffle is None else opts.shuffle
        self.packing = bool(getattr(policy, "gavel_packing", False))
        self.fifo = bool(getattr(policy, "skips_zero_priority", False))
        self.whole = world.restore_s == 0 if opts.whole_steps is None else opts.whole_steps
        self.rng = random.Random(opts.seed + 5)
        # every GPU of a type as (server, slot), in server order: Gavel's worker ids
        self.slots = {
            name: [(s, g) for s in range(t.num_servers) for g in range(t.server_capacity(s))]
            for name, t in self.types.items()
        }
        self.table = empty_intervals()
        self.ids = [j.job_id for j in world.jobs]
        # the interval table's columns' appends, in INTERVAL_COLUMNS' order (GavelSim._segment)
        self.appends = tuple(self.table[c].append for c in INTERVAL_COLUMNS)
        self.completion = [math.nan] * len(world.jobs)
        self.first_start = [math.nan] * len(world.jobs)
        self.ever_ran = [False] * len(world.jobs)
        self.active: dict[int, None] = {}  # arrival order
        # job combinations in Gavel's insertion order: a job, then its pairs with earlier jobs
        self.keys: dict[Key, None] = {}
        self.alloc: dict[Key, dict[str, float]] = {}
        # per combination (rows, in self.keys' order) and type (columns, self.types' order):
        # seconds received since the last reset (job_time), deficit, X (0 where not in the
        # allocation) and whether it can run there; vectorised for the walk's priorities
        self.col = {name: j for j, name in enumerate(self.types)}
        self.row: dict[Key, int] = {}
        k = len(self.types)
        self.job_time = np.zeros((0, k))
        self.deficit = np.zeros((0, k))
        self.x = np.zeros((0, k))
        self.can_run = np.zeros((0, k), dtype=bool)
        self.worker_time = {name: 0.0 for name in self.types}
        self.last_reset = 0.0
        self.need_update = False
        self.prev: dict[Key, tuple[str, tuple[int, ...]]] = {}  # the previous round's gangs
        self.open: dict[int, Open] = {}
        # completions Gavel reports later than the work is done (pair members; module notes)
        self.reported: dict[int, float] = {}
        self.resets = 0
        self.reset_times: list[float] = []
        self.rounds = 0
        self.completed = 0  # completions booked since the last round's end
        self.idle_gpu_rounds = 0
        self.arrived: list[int] = []
        self.finished: list[str] = []
        # lookups fixed for the run, kept (see _rates, _placement)
        self._rate_memo: dict[tuple[Key, str, bool], tuple[float, ...]] = {}
        self._runs_memo: dict[tuple[Key, str], bool] = {}
        self._placement_memo: dict[tuple[str, tuple[int, ...]], GrantPlacement] = {}
        self._gang_memo: dict[tuple[str, tuple[int, ...]], tuple[GrantPlacement, bool, int]] = {}

    # -- bookkeeping ------------------------------------------------------------------------

    def _add(self, i: int) -> None:
        self.active[i] = None
        new: list[Key] = [(i,)]
        if self.packing:
            n = self.jobs[i].num_gpus
            new += [(k, i) for k in self.active if k != i and self.jobs[k].num_gpus == n]
        k = len(self.types)
        for key in new:
            self.row[key] = len(self.keys)
            self.keys[key] = None
        # a pair's time starts at 0, a job's at the prior (Gavel's add_job and
        # _populate_job_combination_metadata)
        start = np.array([[self.prior if len(key) == 1 else 0.0] for key in new])
        self.job_time = np.vstack([self.job_time, np.broadcast_to(start, (len(new), k))])
        self.deficit = np.vstack([self.deficit, np.zeros((len(new), k))])
        self.x = np.vstack([self.x, np.zeros((len(new), k))])
        runs = [[self._runs(key, name) for name in self.types] for key in new]
        self.can_run = np.vstack([self.can_run, np.array(runs, dtype=bool).reshape(-1, k)])
        self.need_update = True
        self.arrived.append(i)

    def _remove(self, i: int) -> None:
        del self.active[i]
        gone = [k for k in self.keys if i in k]
        keep = np.ones(len(self.keys), dtype=bool)
        for key in gone:
            keep[self.row[key]] = False
            del self.keys[key]
        self.row = {key: r for r, key in enumerate(self.keys)}
        self.job_time = self.job_time[keep]
        self.deficit = self.deficit[keep]
        self.x = self.x[keep]
        self.can_run = self.can_run[keep]
        self.need_update = True
        self.finished.append(self.jobs[i].job_id)

    def _close(self, i: int, end: float) -> None:
        """Close job ``i``'s open record segment at ``end`` (kept when it is not empty)."""
        o = self.open.pop(i)
        if end > o.seg_start:
            self._segment(i, o.gpu_type, o.placement.servers, o.seg_start, end, o.partner)

    def _segment(
        self,
        i: int,
        name: str,
        servers: tuple[tuple[int, int], ...],
        start: float,
        end: float,
        partner: int,
    ) -> None:
        """Append job ``i``'s record segment, one row per server (as ``add_interval``).

        The columns' appends are bound once (:attr:`appends`): a segment closes for nearly
        every gang of every round (whole steps leave a gap before the round's end).
        """
        job_id, gpu_type, server, gpus, begin, stop, shared, ps = self.appends
        job = self.ids[i]
        other = self.ids[partner] if partner >= 0 else ""
        for s, g in servers:
            job_id(job)
            gpu_type(name)
            server(s)
            gpus(g)
            begin(start)
            stop(end)
            shared(other)
            ps("")  # no parameter servers under this mechanism

    def _reset(self, t: float) -> None:
        """Gavel's ``_reset_time_run_so_far`` followed by a new allocation."""
        elapsed = t - self.last_reset
        # every combination: deficit += X elapsed - (received - prior); X = 0 for one not in
        # the allocation (elementwise as Gavel's loop)
        self.deficit = (self.deficit + self.x * elapsed) - (self.job_time - self.prior)
        self.job_time[:] = self.prior
        for name in self.types:
            total = 0.0
            for _ in self.keys:  # summed one by one, as Gavel
                total += self.prior
            self.worker_time[name] = total
        self.last_reset = t
        self.alloc = self._allocate(t)
        for key, r in self.row.items():
            a = self.alloc.get(key)
            self.x[r] = [0.0 if a is None else a.get(name, 0.0) for name in self.types]
        self.need_update = False
        self.resets += 1
        self.reset_times.append(t)

    def _allocate(self, t: float) -> dict[Key, dict[str, float]]:
        active = tuple(self.states[i] for i in self.active)
        state = SimState(
            now=t,
            world=self.world,
            active=active,
            round_index=self.resets,
            round_seconds=self.L,
            running=tuple(self.states[i] for i in self.open if i in self.active),
            arrived=tuple(self.states[i] for i in self.arrived),
            finished=tuple(self.finished),
        )
        for i in self.arrived:
            self.states[i].first_decision = self.resets
        self.arrived = []
        self.finished = []
        ids = {self.jobs[i].job_id: i for i in self.active}
        raw: Mapping[tuple[str, ...], Mapping[str, float]]
        if self.packing:
            pairs = [tuple(self.jobs[k].job_id for k in key) for key in self.keys if len(key) == 2]
            raw = self.policy.gavel_allocation(state, pairs)  # type: ignore[attr-defined]
        else:
            interior = getattr(self.policy, "interior_fractional", None)
            if self.opts.interior and interior is not None:
                # Gavel's interior-point optimum (module notes)
                x = interior(state, direct=self.opts.direct)
            else:
                x = self.policy.fractional(state)
            assert x is not None  # gavel_refuses
            raw = {(jid,): row for jid, row in x.items()}
        # every combination known now is in the allocation (a zero row unless given one)
        alloc: dict[Key, dict[str, float]] = {key: {} for key in self.keys}
        for names, row in raw.items():
            members = [ids.get(jid, -1) for jid in names]
            key = tuple(sorted(members))
            if key not in alloc:
                raise PolicyError(
                    f"{self.policy.name}: allocation names {names!r}, not an active job or pair"
                )
            clean: dict[str, float] = {}
            for name, v in row.items():
                if name not in self.types:
                    raise PolicyError(f"{self.policy.name}: unknown GPU type {name!r}")
                clean[name] = float(v)
            alloc[key] = clean
        return alloc

    def _rates(self, key: Key, name: str, consolidated: bool = True) -> tuple[float, ...]:
        """Each member's rate on a gang of ``name`` (pair rates for a pair).

        The world's rates are fixed for a run (no batch-size phases here): each is looked up
        once and kept, as the walk asks for every combination and type every round.
        """
        memo = (key, name, consolidated)
        got = self._rate_memo.get(memo)
        if got is not None:
            return got
        if len(key) == 1:
            got = (self.world.rate(self.jobs[key[0]], name, consolidated),)
        else:
            a, b = self.jobs[key[0]], self.jobs[key[1]]
            got = (
                self.world.rate(a, name, consolidated, b),
                self.world.rate(b, name, consolidated, a),
            )
        self._rate_memo[memo] = got
        return got

    def _runs(self, key: Key, name: str) -> bool:
        memo = (key, name)
        got = self._runs_memo.get(memo)
        if got is None:
            got = self._runs_memo[memo] = all(r > 0.0 for r in self._rates(key, name))
        return got
