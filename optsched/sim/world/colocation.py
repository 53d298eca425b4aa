r"""The simulator's placement-aware ("colocation") mode: a job's speed depends on its neighbours.

A :class:`~optsched.sim.World` with a :class:`Colocation` (``World.colocation``) describes
parameter-server (PS) training jobs on a cluster of identical servers, each with :math:`G`
GPUs and :math:`C` CPUs (the world's single GPU type; its servers are the CPU servers too).
Job :math:`j` of interference type :math:`\tau_j` runs :math:`W_j` workers (its gang: one GPU
and ``worker_cpus`` CPUs each) and :math:`P_j` parameter servers (``ps_cpus`` CPUs each, no
GPU). The engine (:mod:`optsched.sim.engine.core`) places every worker on a GPU as usual and every
PS on a server (``Grant.ps_servers``, or the least-loaded server by CPU when the grant gives
none), and checks the CPUs of every server as it checks its GPUs.

Physics (Harmony's world, :mod:`optsched.harmony`). Let :math:`S_j` be the set of servers
holding any task of :math:`j` (workers *and* PSs) and :math:`B_{jh}` the multiset of the types
of the *other* running jobs with any task on server :math:`h`. The job's speed factor is

.. math::

    f_j = \frac{1}{1 + \sum_{h \in S_j} S_{\tau_j}(B_{jh}) + \lambda\,(|S_j| - 1)},

with :math:`S_a(B)` the ground truth's group slowdown
(:class:`~optsched.interference.InterferenceTruth`: contention plus over-subscription of each
resource, superadditive in :math:`B`) and :math:`\lambda` the spread penalty per extra server
its PS traffic crosses; its rate is the world's consolidated rate times :math:`f_j`. Because
:math:`f_j` depends on who else runs on :math:`S_j`, a job's start, stop or completion changes
the rates of the running jobs sharing a server with it: the engine then closes their record
segments, so every recorded segment has one constant rate, and the validator re-derives every
rate from the record alone (:mod:`optsched.sim.measure.validate`, ``work_done`` and
``cpu_capacity``).

A world of this mode is built from a trace by :func:`colocation_world_from_trace` (the mapping
of :func:`trace_jobs`) or from task lists by :func:`colocation_world`: every job's rate is
:math:`1 / t^0_{\tau_j}` iterations per second alone (whatever its number of workers, as in
Harmony's world) and its work is its iterations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.interference import InterferenceTruth, generate_interference_truth

if TYPE_CHECKING:
    from optsched.sim.world.jobs import World

__all__ = [
    "COLOCATION_GPU_TYPE",
    "Colocation",
    "ColocationJob",
    "colocation_world",
    "colocation_world_from_trace",
    "group_slowdown",
    "trace_jobs",
]

#: Name of the single GPU type of the worlds :func:`colocation_world` builds.
COLOCATION_GPU_TYPE = "gpu"


def group_slowdown(truth: InterferenceTruth, job_type: int, counts: np.ndarray) -> float:
    r"""The truth's :math:`S_a(B)` for co-runners counted per type (``counts[b]`` of type ``b``).

    Vectorised :meth:`InterferenceTruth.slowdown
    <optsched.interference.InterferenceTruth.slowdown>`:
    :math:`\sum_r w_r p_{ar} L_r + \gamma \sum_r p_{ar} (p_{ar} + L_r - 1)_+^2`,
    :math:`L = \text{counts}^\top P`.
    """
    load = counts @ truth.profiles
    own = truth.profiles[job_type]
    over = np.maximum(own + load - 1.0, 0.0)
    return float((own * load) @ truth.weights + truth.overflow * np.sum(own * over**2))


@dataclass(frozen=True, eq=False)
class Colocation:
    r"""The placement-aware mode of a world (see the module notes).

    Parameters
    ----------
    truth : InterferenceTruth
        The interference ground truth (:math:`S_a(B)`).
    job_types : mapping of str to int
        Job id -> interference type (a row of ``truth.profiles``).
    ps : mapping of str to int
        Job id -> number of parameter servers (>= 0).
    cpus_per_server : float, default 16
        :math:`C`, CPUs of every server.
    worker_cpus, ps_cpus : float, default 2 and 4
        CPUs of a worker and of a PS.
    spread_penalty : float, default 0.1
        :math:`\lambda`.
    max_workers, max_ps : int, default 3 and 2
        The largest job of the mode's generator and the scale of the learned policy's size
        features (:func:`optsched.harmony.network.features`); no job may exceed them.

    Raises
    ------
    InvalidInstanceError
        A value out of range (the field is named).
    """

    truth: InterferenceTruth
    job_types: Mapping[str, int]
    ps: Mapping[str, int]
    cpus_per_server: float = 16.0
    worker_cpus: float = 2.0
    ps_cpus: float = 4.0
    spread_penalty: float = 0.1
    max_workers: int = 3
    max_ps: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.truth, InterferenceTruth):
            raise InvalidInstanceError("colocation.truth", "must be an InterferenceTruth")
        n = self.truth.n_types
        types = {str(k): int(v) for k, v in dict(self.job_types).items()}
        for jid, t in types.items():
            if not 0 <= t < n:
                raise InvalidInstanceError(
                    "colocation.job_types", f"job {jid!r}: type {t} not in [0, {n})"
                )
        ps = {str(k): int(v) for k, v in dict(self.ps).items()}
        for jid, p in ps.items():
            if not 0 <= p <= self.max_ps:
                raise InvalidInstanceError(
                    "colocation.ps", f"job {jid!r}: {p} parameter servers not in [0, {self.max_ps}]"
                )
        for name in ("cpus_per_server", "worker_cpus", "ps_cpus", "spread_penalty"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise InvalidInstanceError(
                    f"colocation.{name}", f"must be a finite number, got {v!r}"
                )
            if v < 0 or (name == "cpus_per_server" and v <= 0):
                raise InvalidInstanceError(f"colocation.{name}", f"out of range: {v}")
        for name in ("max_workers", "max_ps"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int)
                or v < (1 if name == "max_workers" else 0)
            ):
                raise InvalidInstanceError(f"colocation.{name}", f"out of range: {v!r}")
        object.__setattr__(self, "job_types", MappingProxyType(types))
        object.__setattr__(self, "ps", MappingProxyType(ps))
        object.__setattr__(self, "cpus_per_server", float(self.cpus_per_server))
        object.__setattr__(self, "worker_cpus", float(self.worker_cpus))
        object.__setattr__(self, "ps_cpus", float(self.ps_cpus))
        object.__setattr__(self, "spread_penalty", float(self.spread_penalty))

    @property
    def n_types(self) -> int:
        """Interference types of the truth."""
        return self.truth.n_types

    def check(self, world: World) -> None:
        """Refuse a world this mode cannot describe (called by ``World``'s constructor).

        Raises
        ------
        InvalidInstanceError
            More than one GPU type; a job without a type or PS count, with a batch-size
            schedule, an elastic gang, more workers than ``max_workers``, or whose tasks fit
            on no empty cluster (the field and the job are named).
        """
        if len(world.cluster.gpu_types) != 1:
            raise InvalidInstanceError(
                "colocation", "the colocation mode needs a cluster of exactly one GPU type"
            )
        t = world.cluster.gpu_types[0]
        if self.worker_cpus * min(t.gpus_per_server, t.count) > self.cpus_per_server:
            raise InvalidInstanceError(
                "colocation.cpus_per_server",
                f"{self.cpus_per_server:g} CPUs cannot hold a full server's workers",
            )
        caps = [t.server_capacity(s) for s in range(t.num_servers)]
        for k, j in enumerate(world.jobs):
            if j.job_id not in self.job_types:
                raise InvalidInstanceError(
                    "colocation.job_types", f"no interference type for job {j.job_id!r}"
                )
            if j.job_id not in self.ps:
                raise InvalidInstanceError("colocation.ps", f"no PS count for job {j.job_id!r}")
            if j.batch_schedule is not None or j.elastic:
                raise InvalidInstanceError(
                    f"jobs[{k}]",
                    f"job {j.job_id!r}: the colocation mode models rigid static jobs only",
                )
            if j.num_gpus > self.max_workers:
                raise InvalidInstanceError(
                    f"jobs[{k}].num_gpus",
                    f"job {j.job_id!r}: {j.num_gpus} workers exceed max_workers {self.max_workers}",
                )
            if not self._fits_empty(j.num_gpus, self.ps[j.job_id], caps):
                raise InvalidInstanceError(
                    f"jobs[{k}]", f"job {j.job_id!r}: its tasks fit on no empty cluster"
                )

    def _fits_empty(self, workers: int, ps: int, gpu_caps: Sequence[int]) -> bool:
        """First-fit of the workers then the PSs on empty servers."""
        gpus = list(gpu_caps)
        cpus = [self.cpus_per_server] * len(gpus)
        for demand in [(1, self.worker_cpus)] * workers + [(0, self.ps_cpus)] * ps:
            for h in range(len(gpus)):
                if gpus[h] >= demand[0] and cpus[h] >= demand[1]:
                    gpus[h] -= demand[0]
                    cpus[h] -= demand[1]
                    break
            else:
                return False
        return True

    def slowdown(self, job_type: int, counts: np.ndarray) -> float:
        r""":math:`S_a(B)` for co-runners counted per type (:func:`group_slowdown`)."""
        return group_slowdown(self.truth, job_type, counts)

    def speed_factor(self, job_type: int, neighbours: Sequence[Sequence[int]]) -> float:
        r"""The speed factor :math:`f_j` (module notes).

        Parameters
        ----------
        job_type : int
            :math:`\tau_j`.
        neighbours : sequence of sequences of int
            One entry per server of :math:`S_j`: the types of the other jobs with a task there.
        """
        total = 0.0
        for others in neighbours:
            if len(others):
                counts = np.bincount(np.asarray(others, dtype=np.int64), minlength=self.n_types)
                total += self.slowdown(job_type, counts.astype(float))
        total += self.spread_penalty * max(0, len(neighbours) - 1)
        return 1.0 / (1.0 + total)

    def max_slowdown_factor(self, world: World) -> float:
        r"""An upper bound on :math:`1 / f_j` over every job and every placement of ``world``.

        :math:`S_a` is monotone in :math:`B`, so every other job of the world on each of the
        :math:`\min(H, W_j + P_j)` servers a job can span bounds its slowdown.
        """
        counts = np.zeros(self.n_types)
        for j in world.jobs:
            counts[self.job_types[j.job_id]] += 1
        n_servers = world.cluster.gpu_types[0].num_servers if world.cluster.gpu_types else 1
        worst = 1.0
        for j in world.jobs:
            a = self.job_types[j.job_id]
            others = counts.copy()
            others[a] -= 1
            span = min(n_servers, j.num_gpus + self.ps[j.job_id])
            worst = max(
                worst, 1.0 + span * self.slowdown(a, others) + self.spread_penalty * (span - 1)
            )
        return worst

    def cpu_use(
        self, servers: Sequence[tuple[int, int]], ps_servers: Sequence[int]
    ) -> dict[int, float]:
        """CPUs a job uses on each server: its workers' (``(server, gpus)`` pairs) and PSs'."""
        use: dict[int, float] = {}
        for s, k in servers:
            use[s] = use.get(s, 0.0) + self.worker_cpus * k
        for s in ps_servers:
            use[s] = use.get(s, 0.0) + self.ps_cpus
        return use


@dataclass(frozen=True)
class ColocationJob:
    """One PS job of a colocation world (what :func:`colocation_world` builds a SimJob from).

    Attributes
    ----------
    job_id : str
    arrival : float
    job_type : int
    workers, ps : int
    iterations : float
    model : str
    """

    job_id: str
    arrival: float
    job_type: int
    workers: int
    ps: int
    iterations: float
    model: str = ""


def colocation_world(
    jobs: Sequence[ColocationJob],
    *,
    truth: InterferenceTruth | None = None,
    n_servers: int = 6,
    gpus: int = 4,
    cpus: float = 16.0,
    spread_penalty: float = 0.1,
    max_workers: int = 3,
    max_ps: int = 2,
    n_types: int = 6,
    seed: int = 0,
) -> World:
    r"""A colocation world of ``n_servers`` servers of ``gpus`` GPUs and ``cpus`` CPUs.

    Each job runs alone at :math:`1 / t^0_{\tau}` iterations per second (``truth``'s standalone
    time of its type) whatever its workers, and its work is its iterations: the per-job scale
    of the uniform table is :math:`1 / (t^0_\tau W_j)`. ``truth`` defaults to Harmony's
    (:func:`~optsched.interference.generate_interference_truth` with ``n_types`` types, 4
    families and ``seed``).

    Raises
    ------
    InvalidInstanceError
        A size out of range or a job the mode refuses (:meth:`Colocation.check`).
    """
    from optsched.sim.world.cluster import ClusterSpec, GpuType
    from optsched.sim.world.jobs import SimJob, World
    from optsched.sim.world.throughputs import GENERIC, Throughputs

    for name, v in (("n_servers", n_servers), ("gpus", gpus)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InvalidInstanceError(name, f"must be an integer >= 1, got {v!r}")
    if truth is None:
        truth = generate_interference_truth(n_types, n_families=4, seed=seed)
    t0 = truth.standalone_times
    sim_jobs = []
    for k, j in enumerate(jobs):
        if not (math.isfinite(j.iterations) and j.iterations > 0):
            raise InvalidInstanceError(f"jobs[{k}].iterations", f"must be > 0, got {j.iterations}")
        if not 0 <= j.job_type < truth.n_types:
            raise InvalidInstanceError(f"jobs[{k}].job_type", f"not in [0, {truth.n_types})")
        if j.workers < 1:
            raise InvalidInstanceError(f"jobs[{k}].workers", f"must be >= 1, got {j.workers}")
        sim_jobs.append(
            SimJob(
                index=k,
                job_id=j.job_id,
                arrival=float(j.arrival),
                num_gpus=int(j.workers),
                job_type=GENERIC,
                work=float(j.iterations),
                scale=1.0 / (float(t0[j.job_type]) * j.workers),
                weight=1.0,
                deadline=math.nan,
                model=j.model,
                user="",
            )
        )
    coloc = Colocation(
        truth=truth,
        job_types={j.job_id: j.job_type for j in jobs},
        ps={j.job_id: j.ps for j in jobs},
        cpus_per_server=cpus,
        spread_penalty=spread_penalty,
        max_workers=max_workers,
        max_ps=max_ps,
    )
    cluster = ClusterSpec(
        gpu_types=(GpuType(name=COLOCATION_GPU_TYPE, count=n_servers * gpus, gpus_per_server=gpus),)
    )
    return World(
        cluster=cluster,
        throughputs=Throughputs.uniform((COLOCATION_GPU_TYPE,)),
        jobs=tuple(sim_jobs),
        colocation=coloc,
    )


def trace_jobs(
    frame: Any,
    standalone_times: np.ndarray,
    *,
    n_types: int,
    max_workers: int,
    max_ps: int,
    file: str | None = None,
) -> list[ColocationJob]:
    """PS jobs of a normalized job table, in arrival order (ties by input order).

    The arrival is kept; workers are the requested GPUs clipped to ``1..max_workers``; one PS
    per two workers (at least one, at most ``max_ps``; none when ``max_ps`` is 0); the type
    is the job's model, models numbered in order of appearance, modulo ``n_types``; the
    iterations are ``total_steps``, else ``duration`` over the type's standalone iteration time.
    Job ids are the trace's.

    Raises
    ------
    InvalidInstanceError
        No job, or a job with neither steps nor a duration (the row is named).
    """
    jobs = frame.sort_values("arrival", kind="stable").reset_index(drop=True)
    if len(jobs) == 0:
        raise InvalidInstanceError("<file>", f"{file}: the trace has no job", file=file)
    models: dict[str, int] = {}
    out = []
    for i, row in jobs.iterrows():
        model = str(row["model"])
        job_type = models.setdefault(model, len(models)) % n_types
        workers = int(min(max(int(row["num_gpus"]), 1), max_workers))
        ps = 0 if max_ps == 0 else int(min(max(1, (workers + 1) // 2), max_ps))
        steps = float(row["total_steps"])
        duration = float(row["duration"])
        if math.isfinite(steps) and steps > 0:
            iterations = steps
        elif math.isfinite(duration) and duration > 0:
            iterations = duration / float(standalone_times[job_type])
        else:
            raise InvalidInstanceError(
                "total_steps", "a job needs total_steps or duration", file=file, row=int(i) + 1
            )
        jid = str(row["job_id"]) if "job_id" in jobs.columns else str(i)
        out.append(
            ColocationJob(jid, float(row["arrival"]), job_type, workers, ps, iterations, model)
        )
    return out


def colocation_world_from_trace(
    trace: Any,
    *,
    truth: InterferenceTruth | None = None,
    n_servers: int = 6,
    gpus: int = 4,
    cpus: float = 16.0,
    spread_penalty: float = 0.1,
    max_workers: int = 3,
    max_ps: int = 2,
    n_types: int = 6,
    seed: int = 0,
) -> World:
    """A colocation world of a trace (path, :class:`~optsched.traces.Trace` or job table).

    The jobs are :func:`trace_jobs` of its table; the cluster and truth as in
    :func:`colocation_world` (Harmony's defaults: 6 servers of 4 GPUs and 16 CPUs, 6 types).
    """
    file = None
    if isinstance(trace, str | Path):
        from optsched.traces import read_trace

        file = str(trace)
        trace = read_trace(trace)
    frame = getattr(trace, "jobs", trace)
    if file is None and getattr(trace, "path", None) is not None:
        file = str(trace.path)
    if truth is None:
        truth = generate_interference_truth(n_types, n_families=4, seed=seed)
    jobs = trace_jobs(
        frame,
        truth.standalone_times,
        n_types=truth.n_types,
        max_workers=max_workers,
        max_ps=max_ps,
        file=file,
    )
    return colocation_world(
        jobs,
        truth=truth,
        n_servers=n_servers,
        gpus=gpus,
        cpus=cpus,
        spread_penalty=spread_penalty,
        max_workers=max_workers,
        max_ps=max_ps,
    )
