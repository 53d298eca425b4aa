r"""The round world both exact models read: its grid, floors, starts and objective values.

The Pyomo model (:mod:`optsched.sim.optimum.exact`) and the matrix model
(:mod:`optsched.sim.optimum.exact_matrix`) state the same round-based world (the model is on the
formulation page, ``docs/formulations/sim_exact.rst``); what both read about it is here, once:

* the grid: the round length's check (:func:`check_round_seconds`), a job's first round
  (:func:`earliest_round`) and types (:func:`types_for`), the default horizon
  (:func:`default_rounds`), the last-run floor (:func:`last_run_floor`), the worlds the model
  takes (:func:`check_world`) and one round's placement (:func:`pack_round`);
* the floors and index sets of the strengthened model: :func:`completion_floor`,
  :func:`latest_final_rounds` and :func:`round_stops` (pruning below a start),
  :func:`interchangeable_groups`, :func:`area_sets`, :func:`one_round_jobs`;
* MIP starts: :class:`MipStart`, one job's runs in the model's semantics
  (:func:`model_run`), interchangeable jobs sorted (:func:`ordered_start`);
* objective values: of completion times (:func:`value_of`) and of a record
  (:func:`objective_value`), and how a solution is handed back (:class:`ReplayedPlan`).

Complexity: every function here is :math:`O(n G)` for :math:`n` jobs and :math:`G` GPU types,
but :func:`area_sets` (:math:`O(n^2)`, its right sides) and :func:`objective_value` (the
validator's).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from optsched.errors import InvalidInstanceError, ModelError
from optsched.results import Report, Sense, Violation
from optsched.sim.engine.policy import GrantPlacement
from optsched.sim.engine.replay import replay_rounds
from optsched.sim.measure.record import SimResult
from optsched.sim.measure.validate import validate
from optsched.sim.world.jobs import SimJob, World
from optsched.tolerances import FIT_TOL, RATIO_TOL, TIME_TOL, WORK_TOL, leq

__all__ = [
    "OBJECTIVES",
    "POLISH",
    "MipStart",
    "ReplayedPlan",
    "area_sets",
    "check_round_seconds",
    "check_world",
    "completion_floor",
    "default_rounds",
    "earliest_round",
    "fastest_share",
    "interchangeable_groups",
    "last_run_floor",
    "latest_final_rounds",
    "model_run",
    "objective_value",
    "one_round_jobs",
    "ordered_start",
    "pack_round",
    "round_stops",
    "types_for",
    "types_of",
    "value_of",
]

Objective = Literal["weighted-jct", "makespan", "deadlines"]


#: The objectives and their sense.
OBJECTIVES: dict[str, Sense] = {"weighted-jct": "min", "makespan": "min", "deadlines": "max"}


#: The variables fixed when an incumbent is polished: which jobs run when, and their last round.
POLISH = ("x", "e")


def check_round_seconds(round_seconds: float) -> float:
    """``round_seconds`` as a float, or a field-named error when it is no finite number > 0."""
    if (
        isinstance(round_seconds, bool)
        or not isinstance(round_seconds, int | float)
        or not math.isfinite(round_seconds)
        or round_seconds <= 0
    ):
        raise InvalidInstanceError(
            "round_seconds", f"must be a finite number > 0, got {round_seconds!r}"
        )
    return float(round_seconds)


def earliest_round(arrival: float, round_seconds: float) -> int:
    """The first round ``k`` whose start ``k L`` admits the job (``arrival <= k L + TIME_TOL``).

    The same test as the engine's; at most two corrections after the closed form.
    """
    k = max(0, math.ceil((arrival - TIME_TOL) / round_seconds))
    if k > 0 and arrival <= (k - 1) * round_seconds + TIME_TOL:
        k -= 1
    if arrival > k * round_seconds + TIME_TOL:
        k += 1
    return k


def types_for(world: World, job: SimJob) -> list[str]:
    """The GPU types ``job`` can run on: rate > 0 and enough GPUs for its gang (:math:`G_j`)."""
    return [
        t.name
        for t in world.cluster.gpu_types
        if t.count >= job.num_gpus and world.rate(job, t.name, True) > 0
    ]


def default_rounds(world: World, round_seconds: float) -> int:
    """Rounds that always admit a schedule: last arrival's round + each job alone, slowest type."""
    L = check_round_seconds(round_seconds)
    if not world.jobs:
        return 0
    total = max(earliest_round(j.arrival, L) for j in world.jobs)
    for j in world.jobs:
        slowest = min(world.rate(j, t, True) for t in types_for(world, j))
        total += math.ceil(j.work / (slowest * L) - FIT_TOL) if slowest > 0 else 0
    return max(1, total)


def last_run_floor(world: World, round_seconds: float, rounds: int) -> float:
    r"""The floor :math:`\varepsilon` on a last run's share of its round (see the module notes).

    Large enough that the engine's completion slack (``FIT_TOL`` relative to the time) never
    closes a run of :math:`\varepsilon L` seconds, whatever the rate ratio between two types.
    """
    ratio = 1.0
    for j in world.jobs:
        rates = [world.rate(j, t, True) for t in types_for(world, j)]
        if rates:
            ratio = max(ratio, max(rates) / min(rates))
    horizon = max(1.0, rounds * round_seconds)
    return max(1e-6, 10.0 * FIT_TOL * horizon * ratio / round_seconds)


def check_world(world: World) -> dict[str, bool]:
    """Refuse worlds outside the model (see the module notes).

    Returns
    -------
    dict of str to bool
        Per GPU type, whether placement matters there (some job's spread rate differs).

    Raises
    ------
    InvalidInstanceError
        ``restore_s`` not 0, no jobs, an elastic job (``min_gpus``), or a GPU type whose
        servers or gang sizes do not allow every count-feasible round to be placed
        consolidated (``cluster``).
    """
    if world.restore_s != 0:
        raise InvalidInstanceError(
            "restore_s",
            f"the exact model needs free preemption (0), got {world.restore_s:g}",
        )
    if not world.jobs:
        raise InvalidInstanceError("jobs", "the exact model needs at least one job")
    elastic = [j.job_id for j in world.jobs if j.elastic]
    if elastic:
        # its gang variables are of the requested size only: with elastic jobs its optimum
        # would not bound the policies that resize them
        raise InvalidInstanceError(
            "min_gpus",
            f"the exact model is of rigid gangs; elastic jobs: {', '.join(elastic[:5])}",
        )
    matters: dict[str, bool] = {}
    for t in world.cluster.gpu_types:
        jobs = [j for j in world.jobs if t.name in types_for(world, j)]
        matters[t.name] = any(
            world.rate(j, t.name, True) != world.rate(j, t.name, False) for j in jobs
        )
        if not matters[t.name]:
            continue
        gps = t.gpus_per_server
        if t.count % gps:
            raise InvalidInstanceError(
                "cluster",
                f"{t.name}: {t.count} GPUs are not whole servers of {gps}; the exact model "
                "needs equal servers where placement changes a job's rate",
            )
        sizes = sorted({j.num_gpus for j in jobs})
        chain = [s for s in sizes if s < gps] + [gps]
        for a, b in itertools.pairwise(chain):
            if b % a:
                raise InvalidInstanceError(
                    "cluster",
                    f"{t.name}: gang sizes {a} and {b} (servers of {gps}) do not divide each "
                    "other; the exact model needs divisible gang sizes where placement changes "
                    "a job's rate",
                )
        for s in sizes:
            if s > gps and s % gps:
                raise InvalidInstanceError(
                    "cluster",
                    f"{t.name}: gang size {s} is not a multiple of the {gps} GPUs per server",
                )
    return matters


def pack_round(
    world: World, plan: Mapping[str, str], matters: Mapping[str, bool]
) -> dict[str, GrantPlacement]:
    """Place one round's gangs (job id -> GPU type) on servers, by first fit, largest first.

    On a type where placement matters (divisible sizes, see :func:`check_world`) every gang is
    consolidated; elsewhere gangs fill servers in order.

    Raises
    ------
    ModelError
        A gang does not fit although the count capacity holds (a broken invariant).
    """
    out: dict[str, GrantPlacement] = {}
    for t in world.cluster.gpu_types:
        free = [t.server_capacity(s) for s in range(t.num_servers)]
        gps = t.gpus_per_server
        jobs = sorted(
            (world.job(jid) for jid, g in plan.items() if g == t.name),
            key=lambda j: (-j.num_gpus, j.index),
        )
        for j in jobs:
            n = j.num_gpus
            servers: list[tuple[int, int]] = []
            if matters.get(t.name, False) and n <= gps:
                s = next((s for s, f in enumerate(free) if f >= n), -1)
                if s >= 0:
                    servers = [(s, n)]
            elif matters.get(t.name, False):
                empty = [s for s, f in enumerate(free) if f == gps][: n // gps]
                if len(empty) * gps == n:
                    servers = [(s, gps) for s in empty]
            else:
                left = n
                for s, f in enumerate(free):
                    if left == 0:
                        break
                    if f > 0:
                        servers.append((s, min(f, left)))
                        left -= min(f, left)
                if left:
                    servers = []
            if not servers:
                raise ModelError(f"{t.name}: gang {j.job_id!r} of {n} GPUs does not fit")
            for s, k in servers:
                free[s] -= k
            out[j.job_id] = GrantPlacement(t.name, tuple(sorted(servers)))
    return out


def fastest_share(world: World, job: SimJob, round_seconds: float) -> float:
    r""":math:`\max_g c_{jg}`: the share of ``job``'s work its fastest full round does."""
    return max(world.rate(job, g, True) for g in types_for(world, job)) * round_seconds / job.work


def completion_floor(world: World, round_seconds: float) -> list[float]:
    r"""Per job, :math:`\underline T_j = k_j + 1 / \max_g c_{jg}` (rounds).

    Valid: a job does at most :math:`\max_g c_{jg}` of its work per round from its first
    admissible round :math:`k_j` on, so its last round :math:`k` and last share :math:`u`
    satisfy :math:`1 \le \max_g c_{jg}\,(k - k_j + u)`, i.e. :math:`T_j = k + u \ge
    \underline T_j`.
    """
    L = check_round_seconds(round_seconds)
    return [earliest_round(j.arrival, L) + 1.0 / fastest_share(world, j, L) for j in world.jobs]


def latest_final_rounds(
    world: World, round_seconds: float, objective: str, upper_bound: float, eps: float
) -> list[int]:
    r"""Per job, the last round it may end in within a schedule no worse than ``upper_bound``.

    ``weighted-jct``: every other job :math:`i` costs at least
    :math:`w_i (L \underline T_i - a_i)` (:func:`completion_floor`), so a schedule of value at
    most :math:`U` has

    .. math:: T_j \le \underline T_j + \Big(U - \sum_i w_i (L \underline T_i - a_i)\Big)
              \big/ (w_j L);

    ``makespan`` (counted from the first arrival :math:`a_0`): :math:`T_j \le (U + a_0) / L`.
    A job ending in round :math:`k` has :math:`T_j = k + u \ge k + \varepsilon`, so
    :math:`k \le \lfloor T_j^{\max} - \varepsilon \rfloor`. :math:`U` is loosened by
    :data:`~optsched.tolerances.RATIO_TOL` (relative and absolute) against rounding.
    ``deadlines`` (maximised) prunes nothing: the result is then one past any horizon, as for
    a job of weight 0.

    Every schedule of value at most :math:`U` keeps all its rounds, so when :math:`U` is the
    value of a feasible schedule every optimum survives.
    """
    L = check_round_seconds(round_seconds)
    floor = completion_floor(world, L)
    never = 2**31 - 1
    if objective == "makespan":
        # the makespan is counted from the first arrival: the last completion is U + origin
        top = (upper_bound * (1 + RATIO_TOL) + world.origin) / L + RATIO_TOL
        return [math.floor(top - eps) for _ in world.jobs]
    if objective != "weighted-jct":
        return [never for _ in world.jobs]
    least = sum(j.weight * (L * f - j.arrival) for j, f in zip(world.jobs, floor, strict=True))
    slack = upper_bound * (1 + RATIO_TOL) + RATIO_TOL * max(1.0, abs(upper_bound)) - least
    return [
        math.floor(f + slack / (j.weight * L) - eps) if j.weight > 0 else never
        for j, f in zip(world.jobs, floor, strict=True)
    ]


def round_stops(
    world: World,
    L: float,
    objective: str,
    first: list[int],
    K: int,
    eps: float,
    upper_bound: float | None,
) -> list[int]:
    """Per job, one past its last round: ``K``, or less below ``upper_bound``."""
    if upper_bound is None:
        return [K] * len(first)
    latest = latest_final_rounds(world, L, objective, upper_bound, eps)
    return [min(K, max(f + 1, last + 1)) for f, last in zip(first, latest, strict=True)]


def interchangeable_groups(world: World, round_seconds: float) -> list[list[int]]:
    """Groups (two or more, by index) of jobs that are interchangeable in the model.

    Same first round, work, gang size, weight, deadline and rate on every GPU type: swapping
    two such jobs' runs maps a schedule onto one of the same value (the objectives sum
    :math:`w_j (L T_j - a_j)`, whose arrival terms do not depend on the schedule).
    """
    L = check_round_seconds(round_seconds)
    names = [t.name for t in world.cluster.gpu_types]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for j in world.jobs:
        key = (
            earliest_round(j.arrival, L),
            j.work,
            j.num_gpus,
            j.weight,
            "none" if math.isnan(j.deadline) else j.deadline,
            tuple(world.rate(j, g, True) if g in types_for(world, j) else 0.0 for g in names),
        )
        groups.setdefault(key, []).append(j.index)
    return [g for g in groups.values() if len(g) > 1]


def area_sets(
    world: World, round_seconds: float
) -> tuple[list[list[int]], list[float], list[float]]:
    r"""The job sets, coefficients :math:`P_j` and right sides of the ``area_cut`` rows.

    For job sets :math:`S` (the prefixes of two orders: by first round then
    :math:`1/\bar c_j`; by :math:`P_j / w_j`), with :math:`P_j = n_j / \bar c_j`
    GPU-rounds, :math:`C = \sum_g C_g` and :math:`R_S = \min_{j \in S} k_j`:

    .. math:: \sum_{j \in S} P_j T_j \ge P(S)\Big(R_S + \frac{P(S)}{2C}\Big)
              + \sum_{j \in S} \frac{P_j}{2 \bar c_j}

    (the proof is in :func:`_strengthen` and on the formulation page).
    """
    L = check_round_seconds(round_seconds)
    jobs = world.jobs
    idx = [j.index for j in jobs]
    fastest = [fastest_share(world, j, L) for j in jobs]
    area = [j.num_gpus / c for j, c in zip(jobs, fastest, strict=True)]
    first = [earliest_round(j.arrival, L) for j in jobs]
    cap = float(sum(t.count for t in world.cluster.gpu_types))
    orders = [
        sorted(idx, key=lambda j: (first[j], 1.0 / fastest[j], j)),
        sorted(idx, key=lambda j: (area[j] / max(jobs[j].weight, 1e-300), j)),
    ]
    sets: list[list[int]] = []
    seen: set[frozenset[int]] = set()
    for order in orders:
        for size in range(1, len(order) + 1):
            key = frozenset(order[:size])
            if key not in seen:
                seen.add(key)
                sets.append(order[:size])
    rhs = []
    for S in sets:
        total = sum(area[j] for j in S)
        rhs.append(
            total * (min(first[j] for j in S) + total / (2.0 * cap))
            + sum(area[j] / (2.0 * fastest[j]) for j in S)
        )
    return sets, area, rhs


def one_round_jobs(world: World, round_seconds: float) -> list[int]:
    r"""Jobs (by index) one full round on any of their types finishes: :math:`\min_g c_{jg} \ge 1`.

    Such a job runs exactly once in every schedule: a run that is not its last is a full round
    doing :math:`c_{jg} \ge 1` of its work, and its last run then adds at least
    :math:`\varepsilon c > 0` more, beyond the work (``work``).
    """
    L = check_round_seconds(round_seconds)
    return [
        j.index
        for j in world.jobs
        if min(world.rate(j, g, True) for g in types_for(world, j)) * L / j.work >= 1.0
    ]


@dataclass(frozen=True)
class MipStart:
    """A policy's run translated into the model's variables (a MIP start).

    Attributes
    ----------
    policy : str
        The run's policy.
    runs : tuple of tuple of (int, str)
        Per job (by index), its rounds and GPU types in the model's semantics, up to and
        including its last round.
    last_share : tuple of float
        Per job, :math:`u` of its last round (the share of that round it runs).
    value : float
        The objective of the start, from its completion times :math:`L T_j`.
    record_value : float
        The objective of the run as recorded (differs from ``value`` only when a repair
        changed a completion; ``notes`` then says which).
    notes : tuple of str
        Every repair made (never silent).
    """

    policy: str
    runs: tuple[tuple[tuple[int, str], ...], ...]
    last_share: tuple[float, ...]
    value: float
    record_value: float
    notes: tuple[str, ...] = ()

    def completion_rounds(self) -> list[float]:
        """Per job, :math:`T_j = k + u` of its last round ``k`` (rounds)."""
        return [r[-1][0] + u for r, u in zip(self.runs, self.last_share, strict=True)]

    def summary(self) -> dict[str, Any]:
        """JSON-ready: policy, values and repairs."""
        return {
            "policy": self.policy,
            "value": self.value,
            "record_value": self.record_value,
            "notes": list(self.notes),
        }


def value_of(world: World, done: list[float], objective: str) -> float:
    """The objective of completion times ``done`` (s), as the Pyomo model's ``value()``."""
    if objective == "weighted-jct":
        return sum(j.weight * (c - j.arrival) for j, c in zip(world.jobs, done, strict=True))
    if objective == "makespan":
        return max(done) - world.origin
    return float(
        sum(
            1
            for j, c in zip(world.jobs, done, strict=True)
            if not math.isnan(j.deadline) and leq(c, j.deadline, TIME_TOL)
        )
    )


def model_run(
    world: World, j: SimJob, plan: Mapping[int, str], L: float, K: int, eps: float, refuse: Any
) -> tuple[list[tuple[int, str]], float]:
    """One job's rounds (to its last, in the model's rates) and its last round's share."""
    first, types = earliest_round(j.arrival, L), types_for(world, j)
    done, mine = 0.0, []
    for k in sorted(plan):
        g = plan[k]
        if k < first or g not in types or k >= K:
            raise refuse(f"job {j.job_id!r} runs in round {k} on {g}, outside the model")
        c = world.rate(j, g, True) * L / j.work
        mine.append((k, g))
        if done + c >= 1.0 - WORK_TOL:
            last = min(1.0, max(0.0, (1.0 - done) / c))
            if last < eps:
                raise refuse(
                    f"job {j.job_id!r}'s last run is {last:.3g} of a round, below the model's "
                    f"floor {eps:.3g}"
                )
            return mine, last
        done += c
    raise refuse(f"job {j.job_id!r} does not finish in the model's rates")


def ordered_start(interchangeable: list[list[int]], start: MipStart) -> tuple[MipStart, list[str]]:
    """``start`` with interchangeable jobs' schedules sorted by completion (``interchangeable``).

    ``interchangeable`` is the built model's groups (:func:`interchangeable_groups`, empty for
    the plain model); a note says how many groups were reordered.
    """
    runs, shares = list(start.runs), list(start.last_share)
    T = start.completion_rounds()
    swapped = 0
    for group in interchangeable:
        order = sorted(group, key=lambda j: (T[j], j))
        if order != group:
            swapped += 1
            taken = [(start.runs[j], start.last_share[j]) for j in order]
            for j, (r, u) in zip(group, taken, strict=True):
                runs[j], shares[j] = r, u
    if not swapped:
        return start, []
    note = f"schedules of interchangeable jobs reordered by completion in {swapped} group(s)"
    return dataclasses.replace(start, runs=tuple(runs), last_share=tuple(shares)), [note]


def objective_value(world: World, record: SimResult, objective: str) -> float:
    """``objective`` recomputed from a simulation record alone (every job must have finished).

    ``weighted-jct`` is the validator's total weighted JCT, ``makespan`` its last completion
    time minus the first arrival (:attr:`World.origin <optsched.sim.World.origin>`: the span
    the ``makespan`` metric reports, whatever the trace's clock), ``deadlines`` the number of
    jobs whose completion is at most their deadline (within
    :data:`~optsched.tolerances.TIME_TOL` relative).
    """
    if objective not in OBJECTIVES:
        raise InvalidInstanceError(
            "objective", f"unknown objective {objective!r}; known: {', '.join(OBJECTIVES)}"
        )
    if objective == "deadlines":
        return float(
            sum(
                1
                for j, c in zip(world.jobs, record.completion, strict=True)
                if not math.isnan(j.deadline) and not math.isnan(c) and leq(c, j.deadline, TIME_TOL)
            )
        )
    report = validate(world, record)
    value = report.objective if objective == "weighted-jct" else report.objectives["makespan"]
    if value is None:
        raise ModelError(f"{objective}: no job finished in the record")
    if objective == "makespan":
        return float(value) - world.origin
    return float(value)


def types_of(placements: Mapping[str, GrantPlacement]) -> list[str]:
    """The GPU types of one round's placements, in first-seen order."""
    return list(dict.fromkeys(p.gpu_type for p in placements.values()))


class ReplayedPlan:
    """How both models hand a solution back: the round plan replayed by the simulator, checked.

    :meth:`replay` carries out a plan (per round, job id to placement) with
    :func:`~optsched.sim.replay_rounds` and keeps it, per round and type, in :attr:`plan` (the
    result's ``extra["plan"]``); :meth:`check` is the simulator's validator on the record, with
    a ``finished`` violation for a job the replay leaves unfinished.
    """

    def __init__(self, world: World, objective: str) -> None:
        self.world = world
        self.objective = objective
        self.plan: list[dict[str, list[str]]] = []

    def replay(self, plan: list[dict[str, GrantPlacement]], round_seconds: float) -> SimResult:
        """The record of ``plan`` carried out by the simulator, its rounds kept in :attr:`plan`."""
        self.plan = [
            {g: [jid for jid, p in r.items() if p.gpu_type == g] for g in types_of(r)} for r in plan
        ]
        return replay_rounds(self.world, plan, round_seconds, name=f"exact-{self.objective}")

    def check(self, record: SimResult) -> Report:
        """The validator's report on ``record``, and every job it leaves unfinished."""
        report = validate(self.world, record)
        if not record.all_finished:
            report.violations.append(
                Violation("finished", f"exact {self.objective}: a job is unfinished in the replay")
            )
        return report
