r"""Gavel's round mechanism, as an alternative to the engine's (``simulate(mechanism="gavel")``).

The default engine (:mod:`optsched.sim.engine.core`) carries out a fractional allocation every round
by :func:`~optsched.sim.engine.policy.carry_out`: the allocation is re-solved every round, pairs
``(job, type)`` are taken in one global priority order, the priority of a pair is
``X / (rounds on the type / rounds since arrival)``. Gavel's simulator (stanford-futuredata/gavel
at c4fa400, ``scheduler/scheduler.py``) differs in each of these points; this module reproduces
its mechanism so that optsched's policies can be run the way Gavel runs them. Under it:

**Rounds.** A round starts when the previous one has ended, and lasts ``L``
(``time_per_iteration``, 360 s) for every job placed in it, except that a job whose work is done
earlier stops then; when every job of the round stops early the round ends at the last one's
stop. Arrivals and completions take effect at the next round start (an arriving job waits for
it). With nothing running, the clock jumps to the next arrival.

**Allocation resets.** The policy's allocation ``X`` is recomputed only at a round start where an
arrival or a completion happened since the last recomputation *and* at least ``reset_interval``
(Gavel's ``minimum_time_between_allocation_resets``, 1920 s) has passed since the last reset, or
no reset has happened at a positive time yet. When all jobs have arrived and nothing ran in the
previous round, the next round start resets. A job that arrived after the last reset is not in
``X``: it may be counted in a round's walk below but is never given GPUs (the GPUs counted for
it stay idle that round), so it waits for the next reset.

**Priorities** (Gavel's ``_update_priorities``). Since the last reset each job ``m`` has
received ``t_mj`` seconds on type ``j`` (including a prior of ``L / 2`` set at the reset and at
its arrival) and the type has been used ``T_j`` seconds (the sum of the priors of the jobs active
at the reset, plus the seconds of every job run on it since). The priority of ``(m, j)`` is

.. math::

    p_{mj} = \begin{cases} 0 & m \notin X \text{ or } X_{mj} = 0 \text{ or rate}_{mj} = 0 \\
             X_{mj} \, T_j / t_{mj} & \text{otherwise.} \end{cases}

A *deficit* ``d_mj`` breaks ties: at every reset it grows by
``X^{old}_{mj} (\text{now} - \text{last reset}) - (t_{mj} - L/2)``.

**The walk** (Gavel's ``_schedule_jobs_on_workers_helper``). The GPU types are taken in Gavel's
order ``v100, p100, k80`` (other types after, in the cluster's order); for a
heterogeneity-agnostic policy the order is shuffled every round by a generator seeded with
``seed + 5`` (Gavel's ``_worker_type_shuffler``). Each type's jobs are sorted by decreasing
``(p, d, X)`` (ties: arrival order), and the per-type lists are walked one after the other: a job
is counted on the type when the type still has GPUs left for its gang, the job was not counted
already, its rate there is positive and (``gavel-fifo`` only) its priority is positive. Jobs with
zero priority thus take GPUs left over by the others (work conservation among the jobs in ``X``).

**Placement** (Gavel's ``_assign_workers_to_job``). Per type, largest gang first: a job counted
on the type it held in the previous round keeps its GPUs when they are all still free; the others
take the first free GPUs in server order. The rate of a gang is the world's rate for its
placement (consolidated or not).

**The allocation** of an allocation LP is, by default, the optimum an interior-point solver
returns (:meth:`~optsched.sim.policies.AllocationLP.interior_fractional`), as Gavel's cvxpy
solve: where the optimum is not unique (often, e.g. every job not at the max-min bottleneck),
the simplex vertex of :meth:`~optsched.sim.Policy.fractional` splits time differently.

**Pairs** (packing policies, ``gavel-gandiva``: :attr:`gavel_packing`). Every two active jobs
of the same gang size form a *combination* besides the two single jobs (Gavel's
``_populate_job_combination_metadata``); combinations have their own ``X``, priorities, deficits
and received time (starting at 0 rather than the prior, so that a pair's first reset books it a
deficit of ``L / 2``). A pair is counted when neither job was, runs on one gang at the table's
pair rates, and when one of the two is done mid-round the other goes on alone at its alone rate
for the rest of the round (Gavel's partner keeps its pair rate). Gavel dates the finished
job's completion at the end of the pair's round, which optsched's record cannot (the validator
checks that a job's work is done at its completion): the completion times as Gavel reports
them are in ``SimResult.extra["gavel_completion"]`` (equal to the record's except for such
pair members).

**Progress** counts whole steps per round as Gavel does (``int(rate L)`` steps for a job not
done, which so ends its round a fraction of a step early, and the round ends at the last
gang's end); pairs, whose two record rows must end together, and runs with ``restore_s > 0``
progress continuously instead
(:attr:`GavelMechanism.whole_steps`). A run that resumes a job which ran before (or any run, with
``restore_on_first_start``) makes no progress for its first ``restore_s``, as in the engine;
Gavel's simulator charges no restore time, so a world with ``restore_s = 0`` reproduces it.

**Time bookkeeping quirk reproduced.** The seconds a job received in a round are counted from the
*previous* round's end (Gavel's ``current_round_start_time``), which after an idle stretch (or
before the first round, from time 0) over-counts them; only the priorities read them.

Complexity: :math:`O(R (P \log P + K P + G))` for :math:`R` rounds, :math:`P` job combinations
(the :math:`A` active jobs, plus up to :math:`A^2/2` pairs for a packing policy), :math:`K` GPU
types and :math:`G` GPUs, plus the policy's work at each reset.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.errors import InvalidInstanceError, PolicyError
from optsched.sim.engine.bounds import default_horizon
from optsched.sim.engine.policy import GrantPlacement, JobState, Policy, SimState
from optsched.sim.measure.record import SimResult, add_interval, empty_intervals
from optsched.tolerances import TIME_TOL

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = [
    "DEFAULT_RESET_INTERVAL",
    "DEFAULT_ROUND_SECONDS",
    "GAVEL_TYPE_ORDER",
    "GavelMechanism",
    "gavel_refuses",
    "is_agnostic",
    "simulate_gavel",
]

#: Gavel's ``minimum_time_between_allocation_resets`` (seconds).
DEFAULT_RESET_INTERVAL = 1920.0
#: Gavel's driver default ``--time_per_iteration`` (seconds).
DEFAULT_ROUND_SECONDS = 360.0
#: The order in which Gavel walks its per-type queues.
GAVEL_TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")


@dataclass(frozen=True)
class GavelMechanism:
    """Options of Gavel's mechanism (module notes).

    Attributes
    ----------
    reset_interval : float
        Minimum seconds between two allocation resets (Gavel's
        ``minimum_time_between_allocation_resets``), default 1920.
    seed : int
        Seed of the per-round shuffle of the type order of heterogeneity-agnostic policies
        (the generator is seeded with ``seed + 5``, as Gavel's ``_worker_type_shuffler``).
    shuffle : bool or None
        Shuffle the type order every round; ``None`` (default): for heterogeneity-agnostic
        policies only (:func:`is_agnostic`), as Gavel does.
    whole_steps : bool or None
        Count whole steps per round, as Gavel (``int(rate L)`` steps, so a job not done ends
        its round a fraction of a step early); ``None`` (default): when the world's
        ``restore_s`` is 0 (Gavel's simulator charges no restore), continuous progress
        otherwise. Refused with ``restore_s > 0``: the gap it leaves before every round's end
        would count as a new run, with its restore, every round.
    interior : bool
        Allocation LPs (:class:`~optsched.sim.policies.AllocationLP`): take the
        interior-point optimum (:meth:`~optsched.sim.policies.AllocationLP.interior_fractional`)
        as Gavel's cvxpy solve does, rather than the simplex vertex. Default ``True``.
    direct : bool
        With ``interior``: build the interior-point problems straight into Clarabel
        (:mod:`optsched.allocation.gavel.interior`, default) rather than through cvxpy (the
        reference: the same point up to the solver's stopping tolerance).
    """

    reset_interval: float = DEFAULT_RESET_INTERVAL
    seed: int = 0
    shuffle: bool | None = None
    whole_steps: bool | None = None
    interior: bool = True
    direct: bool = True

    def __post_init__(self) -> None:
        r = self.reset_interval
        if isinstance(r, bool) or not (isinstance(r, int | float) and math.isfinite(r) and r >= 0):
            raise InvalidInstanceError("reset_interval", f"must be a finite number >= 0, got {r!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidInstanceError("seed", f"must be an integer, got {self.seed!r}")
        if self.shuffle is not None and not isinstance(self.shuffle, bool):
            raise InvalidInstanceError("shuffle", f"must be a bool or None, got {self.shuffle!r}")
        if not isinstance(self.interior, bool):
            raise InvalidInstanceError("interior", f"must be a bool, got {self.interior!r}")
        if not isinstance(self.direct, bool):
            raise InvalidInstanceError("direct", f"must be a bool, got {self.direct!r}")
        if self.whole_steps is not None and not isinstance(self.whole_steps, bool):
            raise InvalidInstanceError(
                "whole_steps", f"must be a bool or None, got {self.whole_steps!r}"
            )


def is_agnostic(policy: Policy) -> bool:
    """Whether Gavel would shuffle the type order for ``policy`` every round.

    Gavel shuffles unless its policy's name contains ``Perf`` or ``Packing``: here, unless the
    name ends in ``-perf``, contains ``packed`` or is Gavel's Gandiva (a packing policy).
    """
    name = policy.name
    return not (name.endswith("-perf") or "packed" in name or "gandiva" in name)


def gavel_refuses(policy: Policy) -> str | None:
    """Why Gavel's mechanism cannot carry out ``policy`` (``None``: it can).

    The mechanism carries out a fractional allocation ``X``; a policy that decides its grants
    itself (it overrides :meth:`~optsched.sim.Policy.allocate`) has none.
    """
    cls = type(policy)
    if cls.allocate is not Policy.allocate or cls.fractional is Policy.fractional:
        return "Gavel's mechanism carries out a fractional allocation, which this policy has not"
    return None


def _type_order(world: World) -> list[str]:
    names = list(world.cluster.names)
    known = [t for t in GAVEL_TYPE_ORDER if t in names]
    return known + [t for t in names if t not in GAVEL_TYPE_ORDER]


#: A job combination: ``(i,)`` one job, ``(i, j)`` (``i < j``) two jobs sharing a gang.
Key = tuple[int, ...]


@dataclass(slots=True)
class _Open:
    """A job's open record segment (one placement, one partner)."""

    seg_start: float
    gpu_type: str
    slots: tuple[int, ...]  # indices into the type's GPU slots (Gavel's worker ids)
    placement: GrantPlacement
    partner: int  # -1: alone
    last_end: float  # end of its progress in the last round it ran


class _GavelSim:
    def __init__(self, world: World, policy: Policy, L: float, opts: GavelMechanism) -> None:
        self.world = world
        self.policy = policy
        self.L = L
        self.prior = L / 2.0
        self.opts = opts
        self.jobs = world.jobs
        self.states = [JobState(job=j) for j in world.jobs]
        self.types = {t.name: t for t in world.cluster.gpu_types}
        self.order = _type_order(world)
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
        self.open: dict[int, _Open] = {}
        # completions Gavel reports later than the work is done (pair members; module notes)
        self.reported: dict[int, float] = {}
        self.resets = 0
        self.reset_times: list[float] = []
        self.rounds = 0
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

    def _priority_table(self) -> NDArray[np.float64]:
        r"""Gavel's ``_update_priorities``: one column per type, one row per combination.

        Elementwise as Gavel: :math:`X / (t / T)` (:math:`X \cdot 10^9` where the fraction is
        0), 0 where :math:`X = 0` or the combination cannot run on the type.
        """
        total = np.array([self.worker_time[name] for name in self.types])
        x = self.x
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(
                total == 0.0, 0.0, self.job_time / np.where(total == 0.0, 1.0, total)
            )
            p = np.where(fraction > 0.0, x / fraction, x * 1e9)
        return np.where((x == 0.0) | ~self.can_run, 0.0, p)

    def priorities(self) -> dict[str, dict[Key, float]]:
        """Gavel's ``_update_priorities`` (module notes), for every combination and type."""
        table = self._priority_table()
        return {
            name: {key: float(table[r, j]) for key, r in self.row.items()}
            for j, name in enumerate(self.types)
        }

    def walk(self, order: list[str]) -> dict[str, list[Key]]:
        """The combinations counted on each type this round (module notes, "The walk")."""
        counted: dict[str, list[Key]] = {name: [] for name in order}
        keys = list(self.keys)
        table = self._priority_table()
        need = [self.jobs[key[0]].num_gpus for key in keys]
        done: set[int] = set()
        for name in order:
            j = self.col[name]
            p = table[:, j]
            # decreasing (p, deficit, X), ties in insertion order: Gavel's stable
            # sorted(reverse=True); lexsort is stable, its last key the primary one
            ranked = np.lexsort((-self.x[:, j], -self.deficit[:, j], -p)).tolist()
            runs = self.can_run[:, j].tolist()
            positive = (p > 0.0).tolist()
            left = self.types[name].count
            here = counted[name]
            for r in ranked:
                if left == 0:
                    break  # the type's other entries are all skipped
                if not runs[r]:
                    continue
                key = keys[r]
                if key[0] in done or (len(key) == 2 and key[1] in done):
                    continue
                if self.fifo and not positive[r]:
                    continue
                if need[r] > left:
                    continue
                left -= need[r]
                done.update(key)
                here.append(key)
        return counted

    def place(self, counted: dict[str, list[Key]]) -> dict[Key, tuple[str, tuple[int, ...]]]:
        """Gavel's worker assignment: keep previous GPUs when free, else first free in order."""
        placed: dict[Key, tuple[str, tuple[int, ...]]] = {}
        for name, keys in counted.items():
            taken: set[int] = set()
            ptr = 0
            slots = self.slots[name]
            sizes = [self.jobs[key[0]].num_gpus for key in keys]
            distinct = sorted(set(sizes), reverse=True)
            for size in distinct:
                group = (
                    keys
                    if len(distinct) == 1
                    else [key for key, z in zip(keys, sizes, strict=True) if z == size]
                )
                fresh: list[Key] = []
                for key in group:
                    prev = self.prev.get(key)
                    if prev is not None and prev[0] == name and taken.isdisjoint(prev[1]):
                        placed[key] = prev
                        taken.update(prev[1])
                    else:
                        fresh.append(key)
                for key in fresh:
                    if key not in self.alloc:
                        continue  # new since the last reset: its GPUs stay idle
                    got: list[int] = []
                    while len(got) < size and ptr < len(slots):
                        if ptr not in taken:
                            got.append(ptr)
                            taken.add(ptr)
                        ptr += 1
                    if len(got) != size:  # pragma: no cover - the walk counted the GPUs
                        raise RuntimeError("could not place a counted gang")
                    placed[key] = (name, tuple(got))
        return placed

    def _placement(self, name: str, slots: tuple[int, ...]) -> GrantPlacement:
        memo = (name, slots)
        got = self._placement_memo.get(memo)
        if got is None:
            got = self._placement_memo[memo] = self._new_placement(name, slots)
        return got

    def _gang(self, name: str, slots: tuple[int, ...]) -> tuple[GrantPlacement, bool, int]:
        """The gang's placement, whether it is consolidated and its GPUs (kept per run)."""
        memo = (name, slots)
        got = self._gang_memo.get(memo)
        if got is None:
            placement = self._placement(name, slots)
            gps = self.types[name].gpus_per_server
            got = (placement, placement.consolidated(gps), placement.num_gpus)
            self._gang_memo[memo] = got
        return got

    def _new_placement(self, name: str, slots: tuple[int, ...]) -> GrantPlacement:
        per: dict[int, int] = {}
        for k in slots:
            s = self.slots[name][k][0]
            per[s] = per.get(s, 0) + 1
        return GrantPlacement(name, tuple(sorted(per.items())))

    # -- the loop ---------------------------------------------------------------------------

    def run(self, horizon: float, bound: float) -> SimResult:
        n = len(self.jobs)
        ptr = 0
        t = self.jobs[0].arrival if n else 0.0
        round_start = 0.0
        round_end: float | None = None
        remaining = n
        running: dict[Key, tuple[str, float]] = {}  # the round's gangs: type, end
        truncated = False
        stalled = 0
        events = 0
        while remaining > 0:
            events += 1
            if events > bound:  # pragma: no cover - the bound is proven in the docs
                raise RuntimeError("simulation exceeded its proven event bound")
            next_arrival = self.jobs[ptr].arrival if ptr < n else None
            if next_arrival is None and not running:
                self.last_reset = 0.0  # Gavel forces a reset when the cluster ran idle
            if running:
                end = max(e for _, e in running.values())
                if round_end is not None:
                    round_start = round_end
                round_end = end
                t = end
            elif next_arrival is not None:
                t = max(t, next_arrival)
            remaining -= self._end_round(running, round_start)
            while ptr < n and self.jobs[ptr].arrival <= t + TIME_TOL:
                self._add(ptr)
                ptr += 1
            if remaining == 0:
                break
            if t > horizon:
                truncated = True
                break
            if self.need_update and (
                t - self.last_reset >= self.opts.reset_interval or self.last_reset == 0.0
            ):
                self._reset(t)
            order = list(self.order)
            if self.shuffle:
                self.rng.shuffle(order)
            counted = self.walk(order)
            placed = self.place(counted)
            self.rounds += 1
            self.idle_gpu_rounds += sum(
                self.jobs[key[0]].num_gpus
                for keys in counted.values()
                for key in keys
                if key not in placed
            )
            had = bool(running)
            running = self._start(t, placed)
            if not running and not had and ptr >= n:
                stalled += 1
                if stalled > 2:
                    break  # nothing can ever run again: the jobs left stay unfinished
            else:
                stalled = 0
        for i in list(self.open):
            self._close(i, self.open[i].last_end)
        done_all = all(not math.isnan(c) for c in self.completion)
        return SimResult(
            world=self.world,
            policy=self.policy.name,
            round_seconds=self.L,
            intervals=self.table,
            completion=self.completion,
            first_start=self.first_start,
            end_time=t,
            truncated=truncated and not done_all,
            events=events,
            decisions=self.rounds,
            extra={
                "mechanism": "gavel",
                "horizon": horizon,
                "reset_interval": self.opts.reset_interval,
                "seed": self.opts.seed,
                "shuffle": self.shuffle,
                "resets": self.resets,
                "reset_times": list(self.reset_times),
                "rounds": self.rounds,
                "reserved_idle_gpu_rounds": self.idle_gpu_rounds,
                "gavel_completion": [
                    self.reported.get(i, c) for i, c in enumerate(self.completion)
                ],
                "work_conserving": False,
                **self.policy.run_facts(),
            },
        )

    def _end_round(self, running: dict[Key, tuple[str, float]], round_start: float) -> int:
        """The round's gangs end: time received (Gavel's bookkeeping), completions."""
        completed = 0
        rows: list[int] = []
        cols: list[int] = []
        got: list[float] = []
        for key, (name, end) in running.items():
            # counted from the previous round's end, as Gavel's current_round_start_time
            executed = end - round_start
            r = self.row.get(key)
            if r is not None:
                rows.append(r)
                cols.append(self.col[name])
                got.append(executed)
                self.worker_time[name] += executed  # in Gavel's order (a float sum)
        if rows:
            # each combination ran on one type: one addition per entry, as one by one
            self.job_time[rows, cols] += got
        for key in running:
            for i in key:
                if not math.isnan(self.completion[i]) and i in self.active:
                    self._remove(i)
                    completed += 1
        return completed

    def _close(self, i: int, end: float) -> None:
        o = self.open.pop(i)
        if end > o.seg_start:
            add_interval(
                self.table,
                self.jobs[i].job_id,
                o.gpu_type,
                o.placement.servers,
                o.seg_start,
                end,
                self.jobs[o.partner].job_id if o.partner >= 0 else "",
            )

    def _open(self, i: int, t: float, name: str, slots: tuple[int, ...], partner: int) -> float:
        """Open or continue job ``i``'s record segment at ``t``; its restore seconds now."""
        o = self.open.get(i)
        if o is not None and o.gpu_type == name and o.slots == slots:
            # it ran on these GPUs in the previous round: the run goes on (no restore); a new
            # record segment when the partner changes or whole steps left a gap before the
            # round's end (whole steps only with restore_s = 0: no restore is hidden there)
            # (any gap, however small: it is no progress, and it adds up over the rounds)
            gap = o.last_end < t
            if gap or o.partner != partner:
                self._close(i, o.last_end)
                self.open[i] = _Open(t, name, slots, o.placement, partner, t)
            return 0.0
        if o is not None:
            self._close(i, o.last_end)
            self.states[i].preemptions += 1
        st = self.states[i]
        self.open[i] = _Open(t, name, slots, self._placement(name, slots), partner, t)
        st.last_start = t
        if math.isnan(self.first_start[i]):
            self.first_start[i] = t
        charged = self.ever_ran[i] or self.world.restore_on_first_start
        self.ever_ran[i] = True
        return self.world.restore_s if charged else 0.0

    def _start(
        self, t: float, placed: dict[Key, tuple[str, tuple[int, ...]]]
    ) -> dict[Key, tuple[str, float]]:
        """Run the round's gangs: progress, record segments, completions (module notes)."""
        out: dict[Key, tuple[str, float]] = {}
        members = {i for key in placed for i in key}
        for i in [i for i in self.open if i not in members]:
            o = self.open[i]
            self._close(i, o.last_end)
            self.states[i].placement = None
            self.states[i].last_stop = o.last_end
            if math.isnan(self.completion[i]):
                self.states[i].preemptions += 1
        gangs, rate_memo = self._gang_memo, self._rate_memo
        for key, (name, slots) in placed.items():
            # the memos read inline: this loop runs for every gang of every round
            placement, consolidated, size = gangs.get((name, slots)) or self._gang(name, slots)
            rates = rate_memo.get((key, name, consolidated)) or self._rates(key, name, consolidated)
            if not (rates[0] > 0.0 and rates[-1] > 0.0):  # every member's (one or two)
                # a spread gang the table gives no rate: it waits
                for i in key:
                    if i in self.open:
                        o = self.open[i]
                        self._close(i, o.last_end)
                continue
            if len(key) == 1:
                self._run_alone(key, t, name, slots, placement, size, rates[0], out)
                continue
            partner = {key[0]: key[-1], key[-1]: key[0]} if len(key) == 2 else {key[0]: -1}
            overhead = {i: self._open(i, t, name, slots, partner[i]) for i in key}
            ends = self._progress(key, t, rates, overhead, name, slots)
            for i in key:
                st = self.states[i]
                st.placement = placement
                st.partner = self.jobs[partner[i]].job_id if partner[i] >= 0 else None
                st.rounds_received[name] = st.rounds_received.get(name, 0) + 1
                st.executed_seconds += ends[i] - t
                st.attained_service += size * (ends[i] - t)
                self.open[i].last_end = ends[i]
            out[key] = (name, max(ends.values()))
            self.prev[key] = (name, slots)
        for key in [k for k in self.prev if k not in placed]:
            del self.prev[key]
        return out

    def _run_alone(
        self,
        key: Key,
        t: float,
        name: str,
        slots: tuple[int, ...],
        placement: GrantPlacement,
        size: int,
        rate: float,
        out: dict[Key, tuple[str, float]],
    ) -> None:
        """One job's gang this round (the rounds' common case).

        :meth:`_open` and :meth:`_progress` for a single job, written out.
        """
        i = key[0]
        o = self.open.get(i)
        if o is not None and o.gpu_type == name and o.slots == slots:
            # as _open: the run goes on; a new segment after a gap or a partner change
            over = 0.0
            if o.last_end < t or o.partner != -1:
                self._close(i, o.last_end)
                o = self.open[i] = _Open(t, name, slots, o.placement, -1, t)
        else:
            over = self._open(i, t, name, slots, -1)
            o = self.open[i]
        st = self.states[i]
        work = self.jobs[i].work
        span = self.L - over
        steps = float(math.floor(rate * span)) if self.whole else rate * span
        left = work - st.done
        if left <= steps:
            end = t + over + left / rate
            self._complete(i, end)
        else:
            st.done = min(work, st.done + steps)
            end = t + over + steps / rate if self.whole else t + self.L
        st.placement = placement
        st.partner = None
        st.rounds_received[name] = st.rounds_received.get(name, 0) + 1
        st.executed_seconds += end - t
        st.attained_service += size * (end - t)
        o.last_end = end
        out[key] = (name, end)
        self.prev[key] = (name, slots)

    def _steps(self, rate: float, overhead: float, whole: bool) -> float:
        """Steps a gang makes in a whole round: Gavel's ``int(rate * L)`` with whole steps."""
        span = self.L - overhead
        return float(math.floor(rate * span)) if whole else rate * span

    def _progress(
        self,
        key: Key,
        t: float,
        rates: tuple[float, ...],
        overhead: dict[int, float],
        name: str,
        slots: tuple[int, ...],
    ) -> dict[int, float]:
        """Each member's progress this round and the end of it (completions booked).

        A job not done this round makes :meth:`_steps` steps; one done finishes at its own
        time. A pair runs at its pair rates until one of them is done; the other then goes
        on alone, at its alone rate, for the rest of the round.
        """
        limit = t + self.L
        # a pair's two rows must have one end: pairs progress continuously (module notes)
        whole = self.whole and len(key) == 1
        finish: dict[int, float] = {}
        for i, r in zip(key, rates, strict=True):
            left = self.jobs[i].work - self.states[i].done
            if left <= self._steps(r, overhead[i], whole):
                finish[i] = t + overhead[i] + left / r
        ends: dict[int, float] = {}
        if not finish:
            for i, r in zip(key, rates, strict=True):
                steps = self._steps(r, overhead[i], whole)
                st = self.states[i]
                st.done = min(st.job.work, st.done + steps)
                ends[i] = t + overhead[i] + steps / r if whole else limit
            return ends
        first = min(finish.values())
        a = min(finish, key=lambda i: (finish[i], i))
        self._complete(a, first)
        ends[a] = first
        if len(key) == 1:
            return ends
        # Gavel dates a pair member's completion at the end of the pair's round: the later of
        # the two members' whole steps at the pair rates (Scheduler.simulate, max_finish_time)
        gavel_end = max(
            t
            + overhead[i]
            + min(self.jobs[i].work - self.states[i].done, math.floor(r * self.L)) / r
            for i, r in zip(key, rates, strict=True)
            if i != a
        )
        self.reported[a] = max(first, gavel_end)
        b = key[0] if a == key[1] else key[1]
        if b in finish and finish[b] <= first + TIME_TOL * max(1.0, abs(first)):
            self.reported[b] = self.reported[a]
            self._complete(b, first)
            ends[b] = first
            return ends
        # b at the pair rate until a is done, then alone: the same run, a new record segment
        st = self.states[b]
        rb = rates[key.index(b)]
        st.done = min(st.job.work, st.done + rb * max(0.0, first - t - overhead[b]))
        self._close(b, first)
        placement = self._placement(name, slots)
        self.open[b] = _Open(first, name, slots, placement, -1, first)
        gps = self.types[name].gpus_per_server
        alone = self.world.rate(self.jobs[b], name, placement.consolidated(gps))
        o_b = max(0.0, overhead[b] - (first - t))
        tail = first + o_b + (st.job.work - st.done) / alone
        if tail <= limit:
            self._complete(b, tail)
            ends[b] = tail
        else:
            st.done = min(st.job.work, st.done + alone * max(0.0, limit - first - o_b))
            ends[b] = limit
        return ends

    def _complete(self, i: int, when: float) -> None:
        self.states[i].done = self.jobs[i].work
        self.completion[i] = when


def event_bound(world: World, round_seconds: float, horizon: float) -> float:
    """Upper bound on the loop's iterations.

    Every iteration ends a full round (at most ``horizon / L`` of them), a round shortened by a
    completion (at most ``n``), jumps to an arrival (at most ``n``), or is one of at most three
    idle iterations before the run stops; ``n`` more for the arrival batches.
    """
    return math.floor(horizon / round_seconds) + 3.0 * len(world.jobs) + 5.0


def simulate_gavel(
    world: World,
    policy: Policy,
    *,
    round_seconds: float | None = None,
    max_time: float | None = None,
    options: GavelMechanism | None = None,
) -> SimResult:
    """Run ``policy`` on ``world`` under Gavel's mechanism (module notes).

    Parameters
    ----------
    world : World
    policy : Policy
        A policy with :meth:`~optsched.sim.Policy.fractional` (the allocation LPs,
        ``gavel-fifo``, ``gavel-gandiva``).
    round_seconds : float, optional
        Gavel's ``time_per_iteration`` (default 360 s).
    max_time : float, optional
        Horizon (default :func:`optsched.sim.engine.core.default_horizon` with the round length).
    options : GavelMechanism, optional

    Raises
    ------
    InvalidInstanceError
        ``round_seconds`` not finite or not > ``world.restore_s``; ``max_time`` not finite;
        the event bound over ``limits.max_events``; a job with a ``batch_schedule`` (field
        ``batch_schedule``).
    PolicyError
        The policy has no fractional allocation, or names an inactive job or unknown type.
    """
    opts = GavelMechanism() if options is None else options
    L = DEFAULT_ROUND_SECONDS if round_seconds is None else round_seconds
    if isinstance(L, bool) or not (isinstance(L, int | float) and math.isfinite(L) and L > 0):
        raise InvalidInstanceError("round_seconds", f"must be a finite number > 0, got {L!r}")
    if L <= world.restore_s:
        raise InvalidInstanceError(
            "round_seconds",
            f"must exceed restore_s ({world.restore_s:g}) or no job could progress in a "
            f"round, got {L:g}",
        )
    if opts.whole_steps and world.restore_s > 0:
        raise InvalidInstanceError(
            "whole_steps",
            "whole steps per round need restore_s = 0 (the gap before a round's end would "
            f"count as a new run, with its restore, every round); restore_s is {world.restore_s:g}",
        )
    dynamic = [j.job_id for j in world.jobs if j.batch_schedule is not None]
    if dynamic:
        # this mechanism books a round's progress at one rate per job; batch-size phases
        # change the rate inside a round (only the engine's own mechanism carries them)
        raise InvalidInstanceError(
            "batch_schedule",
            f"Gavel's mechanism has no batch-size phases (jobs {', '.join(dynamic[:5])}); use "
            "the default mechanism, or build the world with batch_modes=False",
        )
    horizon = default_horizon(world, float(L)) if max_time is None else max_time
    if not (isinstance(horizon, int | float) and math.isfinite(horizon) and horizon >= 0):
        raise InvalidInstanceError("max_time", f"must be a finite number >= 0, got {horizon!r}")
    # idle jumps to arrivals and stalled rounds add to the rounds that fit in the horizon
    horizon = float(horizon)
    why = gavel_refuses(policy)
    if why is not None:
        raise PolicyError(f"{policy.name}: {why}")
    policy.reset(world)
    bound = event_bound(world, float(L), horizon)
    limits.check_size("jobs", bound, "max_events", "events")
    sim = _GavelSim(world, policy, float(L), opts)
    return sim.run(horizon, bound)
