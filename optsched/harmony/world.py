r"""The interference-aware world over time: PS jobs arrive, are placed, slow each other, finish.

Time runs on the general simulator's engine in its placement-aware *colocation* mode
(:mod:`optsched.sim.world.colocation`): the arrivals become a world of that mode
(:func:`sim_world`),
:class:`EngineDriver` places its jobs one at a time at the engine's decision points, and the
engine's record is checked by the simulator's validator (:func:`optsched.sim.validate`), which
re-derives every rate. This module adds the placement view (:class:`ClusterState`: free
capacity and who runs where, with the per-task action mask) and the arrival generator; the
slowdown is the ground truth's (:func:`optsched.sim.world.colocation.group_slowdown`), and every
decision can also be checked by the placement validator
(:func:`optsched.harmony.snapshot.validate_decision`).

Model [R]
---------
A job :math:`j` of type :math:`\tau_j` has :math:`W_j` workers (1 GPU, 2 CPUs each) and
:math:`P_j` parameter servers (4 CPUs each) and :math:`I_j` iterations to run. Server
:math:`h` has :math:`G` GPUs and :math:`C` CPUs. With :math:`S_j` the servers job :math:`j`
spans and :math:`B_{jh}` the multiset of the types of the *other* jobs present on :math:`h`,
its iteration time is

.. math::

    t_j = t^0_{\tau_j} \Big(1 + \sum_{h \in S_j} S_{\tau_j}(B_{jh})
          + \lambda\, (|S_j| - 1)\Big),

the Harmony placement ILP's structure (:mod:`optsched.placement.interference`) with the true,
superadditive group slowdown :math:`S_a(B)` of the ground truth in place of its pairwise sum,
and :math:`\lambda` the cost of each extra server the job's PS traffic crosses. Its normalised
speed is :math:`v_j = 1 / (1 + \text{slowdown}_j) \in (0, 1]`, and the cluster's training speed
is the mean of :math:`v_j` over running jobs.

Jobs wait in arrival order (FIFO) until the first fits; a job is admitted when the
first-fit-decreasing packing of its tasks succeeds on the free capacity, so every admitted job
has at least one complete placement and the per-task action mask (:meth:`ClusterState.mask`)
never leaves a policy without a valid server.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.interference import InterferenceTruth, generate_interference_truth
from optsched.tolerances import WORK_TOL

if TYPE_CHECKING:
    from optsched.sim.engine.policy import SimState
    from optsched.sim.measure.record import SimResult
    from optsched.sim.world.jobs import World

__all__ = [
    "PS_DEMAND",
    "WORKER_DEMAND",
    "WORLD_SETTINGS",
    "ClusterState",
    "EngineDriver",
    "HarmonyWorld",
    "JobArrival",
    "check_world_settings",
    "cluster_view",
    "ffd_fits",
    "generate_arrivals",
    "sim_world",
]

#: Demand of a worker: (GPUs, CPUs).
WORKER_DEMAND = np.array([1.0, 2.0])
#: Demand of a parameter server: (GPUs, CPUs).
PS_DEMAND = np.array([0.0, 4.0])

#: ``slowdown_fn(job_type, partner_counts) -> S``: the slowdown a job of ``job_type`` suffers
#: beside co-runners counted per type (``partner_counts[b]`` jobs of type ``b``).
SlowdownFn = Callable[[int, np.ndarray], float]


@dataclass(frozen=True)
class JobArrival:
    """One arriving PS-architecture training job.

    Attributes
    ----------
    id : int
        Index in its trace (arrival order).
    arrival_s : float
        Arrival time (s).
    job_type : int
        Interference type (a row of the truth's profiles).
    n_workers, n_ps : int
        Workers (1 GPU, 2 CPUs) and parameter servers (4 CPUs).
    iterations : float
        Iterations to run.
    """

    id: int
    arrival_s: float
    job_type: int
    n_workers: int
    n_ps: int
    iterations: float

    @property
    def n_tasks(self) -> int:
        """Workers plus parameter servers."""
        return self.n_workers + self.n_ps

    def demands(self) -> np.ndarray:
        """Demand per task, shape (tasks, 2), workers first (largest first, as FFD orders)."""
        return np.array([WORKER_DEMAND] * self.n_workers + [PS_DEMAND] * self.n_ps)


@dataclass(frozen=True, eq=False)
class HarmonyWorld:
    r"""The static part of the world: servers, job types and the interference truth.

    Parameters
    ----------
    n_servers : int, default 6
    gpus, cpus : int, default 4 and 16
        Capacity of every server.
    truth : InterferenceTruth, optional
        Default: :func:`~optsched.interference.generate_interference_truth` with ``n_types``
        types and ``seed``.
    n_types : int, default 6
    spread_penalty : float, default 0.1
        :math:`\lambda`, relative slowdown per extra server spanned.
    seed : int, default 0
        Seed of the default truth.
    max_workers, max_ps : int, default 3 and 2
        Largest job the trace generator draws.

    Raises
    ------
    InvalidInstanceError
        A size out of range (the field is named), or a job that would fit on no empty cluster.
    """

    n_servers: int = 6
    gpus: int = 4
    cpus: int = 16
    truth: InterferenceTruth | None = None
    n_types: int = 6
    spread_penalty: float = 0.1
    seed: int = 0
    max_workers: int = 3
    max_ps: int = 2
    capacity: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_world_settings({name: getattr(self, name) for name in WORLD_SETTINGS})
        truth = self.truth
        if truth is None:
            truth = generate_interference_truth(self.n_types, n_families=4, seed=self.seed)
        else:
            limits.check_size("truth.n_types", truth.n_types, "max_harmony_types", "types")
        object.__setattr__(self, "truth", truth)
        object.__setattr__(self, "n_types", truth.n_types)
        largest = self.max_workers * WORKER_DEMAND + self.max_ps * PS_DEMAND
        if np.any(largest > self.n_servers * np.array([self.gpus, self.cpus])):
            raise InvalidInstanceError(
                "max_workers", "the largest job does not fit on the empty cluster"
            )
        cap = np.tile(np.array([float(self.gpus), float(self.cpus)]), (self.n_servers, 1))
        cap.setflags(write=False)
        object.__setattr__(self, "capacity", cap)

    @property
    def the_truth(self) -> InterferenceTruth:
        """The interference truth (never ``None`` after construction)."""
        assert self.truth is not None
        return self.truth

    def true_slowdown(self, job_type: int, partner_counts: np.ndarray) -> float:
        r"""Ground-truth :math:`S_a(B)` for co-runners counted per type (vectorised truth)."""
        from optsched.sim.world.colocation import group_slowdown

        return group_slowdown(self.the_truth, job_type, partner_counts)


#: The settings of a :class:`HarmonyWorld` (its truth is regenerated from them): what a
#: checkpoint records and :func:`check_world_settings` checks.
WORLD_SETTINGS = (
    "n_servers", "gpus", "cpus", "n_types", "spread_penalty", "seed", "max_workers", "max_ps",
)  # fmt: skip

#: Largest GPU or CPU count of one server (a 32-bit count; features divide by it).
MAX_SERVER_CAPACITY = 2**31 - 1


def check_world_settings(values: Mapping[str, Any], prefix: str = "") -> None:
    """Check the settings of a world before anything of their size is built.

    Every count must be an integer (not a bool, not a float) in range and within its budget
    (:mod:`optsched.limits`: ``max_harmony_servers``, ``max_harmony_types``,
    ``max_harmony_job_tasks``); the spread penalty a finite number >= 0. Only arithmetic on the
    values: nothing is allocated, so a checkpoint's settings can be checked before they are used.

    Parameters
    ----------
    values : mapping
        Any subset of :data:`WORLD_SETTINGS`.
    prefix : str
        Prepended to the field named in an error (``"meta.world."`` for a checkpoint).

    Raises
    ------
    InvalidInstanceError
        The first offending setting, named.
    """
    lower = {"n_servers": 1, "gpus": 1, "cpus": 1, "n_types": 1, "seed": 0, "max_workers": 1,
             "max_ps": 0}  # fmt: skip
    for name, low in lower.items():
        if name not in values:
            continue
        v = values[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidInstanceError(prefix + name, f"must be an integer, got {v!r}")
        if v < low:
            raise InvalidInstanceError(prefix + name, f"must be >= {low}, got {v}")
    for name in ("gpus", "cpus"):
        if name in values and values[name] > MAX_SERVER_CAPACITY:
            raise InvalidInstanceError(
                prefix + name, f"must be <= {MAX_SERVER_CAPACITY}, got {values[name]}"
            )
    if "spread_penalty" in values:
        v = values["spread_penalty"]
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
            raise InvalidInstanceError(prefix + "spread_penalty", f"must be a number, got {v!r}")
        if not math.isfinite(float(v)) or v < 0:
            raise InvalidInstanceError(
                prefix + "spread_penalty", f"must be finite and >= 0, got {v}"
            )
    if "n_servers" in values:
        limits.check_size(prefix + "n_servers", values["n_servers"], "max_harmony_servers",
                          "servers")  # fmt: skip
    if "n_types" in values:
        limits.check_size(prefix + "n_types", values["n_types"], "max_harmony_types", "types")
    if "max_workers" in values:
        tasks = int(values["max_workers"]) + int(values.get("max_ps", 0))
        limits.check_size(prefix + "max_workers", tasks, "max_harmony_job_tasks",
                          "tasks in the largest job")  # fmt: skip


def generate_arrivals(
    world: HarmonyWorld,
    n_jobs: int,
    *,
    seed: int = 0,
    mean_interarrival_s: float = 60.0,
    mean_iterations: float = 600.0,
) -> tuple[JobArrival, ...]:
    """A seeded Poisson arrival trace of PS jobs.

    Types are uniform; workers uniform in ``1..max_workers``, PSs in ``1..max_ps`` (0 when
    ``max_ps`` is 0); iterations log-uniform in ``[mean/3, 3 mean]``.

    Raises
    ------
    InvalidInstanceError
        ``n_jobs < 1`` or a non-positive mean.
    """
    if n_jobs < 1:
        raise InvalidInstanceError("n_jobs", f"must be >= 1, got {n_jobs}")
    for name, value in (
        ("mean_interarrival_s", mean_interarrival_s),
        ("mean_iterations", mean_iterations),
    ):
        if not math.isfinite(value) or value <= 0:
            raise InvalidInstanceError(name, f"must be finite and > 0, got {value}")
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(mean_interarrival_s, n_jobs))
    types = rng.integers(0, world.n_types, n_jobs)
    workers = rng.integers(1, world.max_workers + 1, n_jobs)
    ps = rng.integers(1, world.max_ps + 1, n_jobs) if world.max_ps > 0 else np.zeros(n_jobs, int)
    iters = np.exp(rng.uniform(np.log(mean_iterations / 3), np.log(mean_iterations * 3), n_jobs))
    return tuple(
        JobArrival(i, float(times[i]), int(types[i]), int(workers[i]), int(ps[i]), float(iters[i]))
        for i in range(n_jobs)
    )


def ffd_fits(demands: np.ndarray, free: np.ndarray) -> bool:
    """Whether first-fit (in the given, decreasing order) packs ``demands`` into ``free``."""
    left = free.copy()
    for d in demands:
        ok = np.all(d <= left + WORK_TOL, axis=1)
        if not ok.any():
            return False
        left[int(np.argmax(ok))] -= d
    return True


class ClusterState:
    """Who runs where: free capacity and the jobs present on every server.

    Parameters
    ----------
    world : HarmonyWorld
    """

    def __init__(self, world: HarmonyWorld) -> None:
        self.world = world
        self.free = world.capacity.copy()
        #: ``members[h][job_id]`` = tasks of the job on server ``h``.
        self.members: list[dict[int, int]] = [{} for _ in range(world.n_servers)]
        self.types: dict[int, int] = {}

    def copy(self) -> ClusterState:
        """An independent copy."""
        out = ClusterState.__new__(ClusterState)
        out.world = self.world
        out.free = self.free.copy()
        out.members = [dict(m) for m in self.members]
        out.types = dict(self.types)
        return out

    def type_counts(self, exclude: int | None = None) -> np.ndarray:
        """Jobs of each type present per server, shape (servers, types)."""
        counts = np.zeros((self.world.n_servers, self.world.n_types))
        for h, m in enumerate(self.members):
            for j in m:
                if j != exclude:
                    counts[h, self.types[j]] += 1
        return counts

    def mask(self, demands: np.ndarray, k: int) -> np.ndarray:
        """Valid servers for task ``k`` of a job whose tasks ``demands[:k]`` are placed.

        A server is valid when the task fits and first-fit can still pack the job's remaining
        tasks afterwards, so a policy following the mask never strands a half-placed job.
        """
        out = np.zeros(self.world.n_servers, dtype=bool)
        d = demands[k]
        for h in range(self.world.n_servers):
            if np.all(d <= self.free[h] + WORK_TOL):
                left = self.free.copy()
                left[h] -= d
                out[h] = ffd_fits(demands[k + 1 :], left)
        return out

    def place_task(self, job: JobArrival, demand: np.ndarray, h: int) -> None:
        """Put one task of ``job`` on server ``h``."""
        self.free[h] -= demand
        self.members[h][job.id] = self.members[h].get(job.id, 0) + 1
        self.types[job.id] = job.job_type

    def remove(self, job_id: int, demands: np.ndarray, servers: Sequence[int]) -> None:
        """Release every task of a finished job."""
        for d, h in zip(demands, servers, strict=True):
            self.free[h] += d
            self.members[h].pop(job_id, None)
        self.types.pop(job_id, None)

    def slowdowns(self, slowdown_fn: SlowdownFn | None = None) -> dict[int, float]:
        r"""Total relative slowdown of every present job (see the module's :math:`t_j`)."""
        fn = self.world.true_slowdown if slowdown_fn is None else slowdown_fn
        counts = self.type_counts()
        out: dict[int, float] = {}
        for h, m in enumerate(self.members):
            for j in m:
                partners = counts[h].copy()
                partners[self.types[j]] -= 1
                s = fn(self.types[j], partners) if partners.any() else 0.0
                out[j] = out.get(j, 0.0) + s + self.world.spread_penalty
        # Each job was charged lambda once per server; it pays for all but the first.
        return {j: s - self.world.spread_penalty for j, s in out.items()}

    def cluster_speed(self, slowdown_fn: SlowdownFn | None = None) -> float:
        r"""Mean normalised speed :math:`1/(1+\text{slowdown})` of the present jobs (1 if none)."""
        s = self.slowdowns(slowdown_fn)
        if not s:
            return 1.0
        return float(np.mean([1.0 / (1.0 + v) for v in s.values()]))


def cluster_view(
    state: SimState, hworld: HarmonyWorld, arrivals: Sequence[JobArrival]
) -> ClusterState:
    """The cluster at a decision point as a :class:`~optsched.harmony.world.ClusterState`.

    Free GPUs and CPUs per server and the jobs present on each (running jobs: their workers
    on their GPU servers, their parameter servers on ``JobState.ps_servers``).
    """
    view = ClusterState(hworld)
    t = state.world.cluster.gpu_types[0]
    for h in range(hworld.n_servers):
        # the last server of a type may hold fewer GPUs than the others
        view.free[h, 0] = float(t.server_capacity(h))
    for s in state.running:
        job = arrivals[s.job.index]
        assert s.placement is not None
        for h, k in s.placement.servers:
            for _ in range(k):
                view.place_task(job, WORKER_DEMAND, h)
        for h in s.ps_servers:
            view.place_task(job, PS_DEMAND, h)
    return view


class EngineDriver:
    """Place arriving jobs one at a time on the simulator's engine (its colocation mode).

    The arrivals become a world in the colocation mode (:func:`sim_world`) and time, rates and
    completions are the engine's (:func:`optsched.sim.engine.core.simulate_steps`): this class only
    holds the decision point open while its jobs are placed one by one. Use :meth:`next_job`
    to advance to the next job to place (strict FIFO: the head of the queue, once
    first-fit-decreasing packing fits it on the free capacity), :meth:`commit` to place it,
    and :meth:`finish` to run the last jobs to completion; :attr:`result` is then the
    engine's record, which :func:`optsched.sim.validate` checks.

    Parameters
    ----------
    world : HarmonyWorld
    arrivals : sequence of JobArrival
        In arrival order, each fitting on the empty cluster.
    name : str, default "harmony"
        The policy name of the record.

    Raises
    ------
    InvalidInstanceError
        Arrivals out of order, or a job that fits on no empty cluster.
    """

    def __init__(
        self, world: HarmonyWorld, arrivals: Sequence[JobArrival], *, name: str = "harmony"
    ) -> None:
        from optsched.sim.engine.core import simulate_steps
        from optsched.sim.engine.policy import Policy

        self.world = world
        self.arrivals = tuple(arrivals)
        empty = world.capacity.copy()
        last = -math.inf
        for i, job in enumerate(self.arrivals):
            if job.arrival_s < last:
                raise InvalidInstanceError(f"arrivals[{i}].arrival_s", "must not decrease")
            last = job.arrival_s
            if not 0 <= job.job_type < world.n_types:
                raise InvalidInstanceError(
                    f"arrivals[{i}].job_type", f"must be in [0, {world.n_types})"
                )
            if job.n_workers < 1 or job.n_ps < 0 or job.iterations <= 0:
                raise InvalidInstanceError(
                    f"arrivals[{i}]", "needs >= 1 worker, >= 0 PSs and iterations > 0"
                )
            if not ffd_fits(job.demands(), empty):
                raise InvalidInstanceError(f"arrivals[{i}]", "fits on no empty cluster")
        self.sim_world = sim_world(world, self.arrivals)
        stub = Policy()
        stub.name = name
        self._steps = simulate_steps(self.sim_world, stub)
        self.result: SimResult | None = None
        self.placements: dict[int, list[int]] = {}
        self.start: dict[int, float] = {}
        self._pending: list[Any] = []
        self._granted: set[int] = set()
        self._head: JobArrival | None = None
        self._head_index = -1
        self._enter(next(self._steps))

    def _enter(self, sim_state: Any) -> None:
        self._sim_state = sim_state
        self.state = cluster_view(sim_state, self.world, self.arrivals)
        self._pending = []
        self._granted = set()

    @property
    def now(self) -> float:
        """The time of the current decision point (the end of the run once finished)."""
        if self.result is not None:
            return self.result.end_time
        return float(self._sim_state.now)

    def _send(self) -> bool:
        """Send the decision; ``False`` when the run ended."""
        from optsched.sim.engine.policy import PolicyDecision

        decision = PolicyDecision(grants=tuple(self._pending), keep_running=True)
        try:
            self._enter(self._steps.send(decision))
        except StopIteration as done:
            self.result = done.value
            return False
        return True

    def next_job(self) -> JobArrival | None:
        """Advance to the next job to place; ``None`` once every job is placed."""
        while self.result is None:
            for s in self._sim_state.active:
                if s.placement is None and s.job.index not in self._granted:
                    job = self.arrivals[s.job.index]
                    if ffd_fits(job.demands(), self.state.free):
                        self._head, self._head_index = job, s.job.index
                        return job
                    break  # strict FIFO: the head waits, and every job behind it
            else:
                if not self._pending and len(self.placements) == len(self.arrivals):
                    return None  # every job is placed: the rest is :meth:`finish`
            self._send()
        return None

    def commit(self, job: JobArrival, servers: Sequence[int]) -> None:
        """Place the head job on ``servers`` (one per task, in :meth:`JobArrival.demands` order).

        Raises
        ------
        InvalidInstanceError
            Not the head job, wrong length, or a task that does not fit.
        """
        from optsched.sim.engine.policy import Grant, GrantPlacement
        from optsched.sim.world.colocation import COLOCATION_GPU_TYPE

        if self._head is None or self._head.id != job.id:
            raise InvalidInstanceError("job", f"job {job.id} is not the one to place")
        demands = job.demands()
        if len(servers) != len(demands):
            raise InvalidInstanceError("servers", f"need {len(demands)} servers")
        work = self.state.copy()
        for k, (d, h) in enumerate(zip(demands, servers, strict=True)):
            if not 0 <= int(h) < self.world.n_servers:
                raise InvalidInstanceError(f"servers[{k}]", f"no server {h}")
            if not np.all(d <= work.free[int(h)] + WORK_TOL):
                raise InvalidInstanceError(f"servers[{k}]", f"task does not fit on server {h}")
            work.place_task(job, d, int(h))
        self.state = work
        chosen = [int(h) for h in servers]
        workers: dict[int, int] = {}
        for h in chosen[: job.n_workers]:
            workers[h] = workers.get(h, 0) + 1
        index = self._head_index
        self._pending.append(
            Grant(
                job=self.sim_world.jobs[index].job_id,
                gpu_type=COLOCATION_GPU_TYPE,
                placement=GrantPlacement(COLOCATION_GPU_TYPE, tuple(sorted(workers.items()))),
                ps_servers=tuple(chosen[job.n_workers :]),
            )
        )
        self._granted.add(index)
        self._head = None
        self.placements[job.id] = chosen
        self.start[job.id] = self.now

    def finish(self) -> SimResult:
        """Run every placed job to completion; the engine's record."""
        while self.result is None:
            self._send()
        return self.result

    # ----- metrics -------------------------------------------------------------------------

    def jcts(self) -> np.ndarray:
        """Completion minus arrival time of every finished job, in arrival order."""
        result = self.finish()
        return np.array(
            [
                c - j.arrival
                for j, c in zip(self.sim_world.jobs, result.completion, strict=True)
                if not math.isnan(c)
            ]
        )

    def makespan(self) -> float:
        """Last completion minus first arrival."""
        result = self.finish()
        done = [c for c in result.completion if not math.isnan(c)]
        if not done:
            return 0.0
        return max(done) - self.arrivals[0].arrival_s


def sim_world(world: HarmonyWorld, arrivals: Sequence[JobArrival]) -> World:
    """The arrivals as a world of the simulator's colocation mode.

    The mode is :mod:`optsched.sim.world.colocation`.

    Job ``k`` has id ``str(arrivals[k].id)``, its workers as its gang and its iterations as its
    work, on ``world``'s servers, truth and spread penalty.
    """
    from optsched.sim.world.colocation import ColocationJob, colocation_world

    jobs = [
        ColocationJob(str(a.id), a.arrival_s, a.job_type, a.n_workers, a.n_ps, a.iterations)
        for a in arrivals
    ]
    return colocation_world(
        jobs,
        truth=world.the_truth,
        n_servers=world.n_servers,
        gpus=world.gpus,
        cpus=float(world.cpus),
        spread_penalty=world.spread_penalty,
        max_workers=world.max_workers,
        max_ps=world.max_ps,
    )
