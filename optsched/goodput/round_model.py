r"""One round of Pollux's scheduling problem: the allocations it searches, the value it maximizes.

Every scheduling interval Pollux's policy (Qiao et al., OSDI'21, §4.2; the artifact's
``simulator/pollux.py``) chooses, for each active job :math:`j`, how many GPUs it holds on each
node: a row :math:`a_{j\cdot} \in \{0, \dots, G\}^{n}` of a matrix over ``num_nodes`` nodes of
:math:`G` GPUs. This module states that problem once, for both the genetic algorithm
(:mod:`optsched.goodput.policies.pollux`) and the exact model (:mod:`optsched.goodput.round_exact`).

**Value.** Job :math:`j` on :math:`K_j = |\{n: a_{jn} > 0\}|` nodes with
:math:`N_j = \sum_n a_{jn}` GPUs has the scaled, penalized speedup

.. math::

   x_j = \sigma\, S_j(K_j, N_j)\, \rho_j^{[a_{j\cdot} \ne b_{j\cdot}]},
   \qquad
   \rho_j = \frac{\max(\mathrm{age}_j - 30\,r_j,\ 0)}{\mathrm{age}_j + 30},

where :math:`S_j` is its speedup over its *fair share* (:math:`\lceil nG/J \rceil` GPUs on one
node, the artifact's normalization), :math:`\sigma = 1/G` (a node's worth of GPUs is speedup 1),
:math:`b` the previous allocation and :math:`r_j` the job's restarts: a job whose row changes
pays the restart penalty :math:`\rho_j \le 1` (30 s being the artifact's restart delay). The
round's value is the generalized mean with fairness exponent :math:`p` (Pollux: :math:`p = -1`)

.. math::

   M(a) = \Bigl(\frac{1}{J} \sum_j (x_j + \varepsilon)^p\Bigr)^{1/p}, \qquad \varepsilon = 10^{-3}.

**Feasible allocations** (what the artifact's repair operator enforces):

==========================  ==========================================================
name                        constraint
==========================  ==========================================================
``node_capacity``           :math:`\sum_j a_{jn} \le G` for every node
``interference``            at most one job with :math:`K_j \ge 2` on any node
``max_replicas``            :math:`N_j \le` the job's ``max_replicas``
``min_replicas``            :math:`N_j = 0` or :math:`N_j \ge` ``min_replicas``
``max_job_nodes``           :math:`K_j \le 16` (the artifact's ``max_nodes``)
``gpu_range``               :math:`a_{jn} \in \{0, \dots, G\}`
==========================  ==========================================================

The artifact's second objective, the *cluster utility*
:math:`\sum_j S_j(K_j, N_j) / (G \cdot |\{n : \sum_j a_{jn} > 0\}|)`, steers its NSGA-II
(:func:`cluster_utility`); the allocation it carries out is the one of best :math:`M`.

A :class:`RoundInstance` holds the speedup of every configuration :math:`(K, N)` a job may take,
so evaluating an allocation is a table look-up; one built from live jobs (:func:`build_round`)
may compute its entries on first use (:meth:`RoundInstance.complete` computes them all).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError
from optsched.goodput.decision import Allocation, ClusterView, JobView

__all__ = [
    "EPSILON",
    "FAIRNESS_P",
    "MAX_JOB_NODES",
    "RESTART_DELAY",
    "RoundInstance",
    "RoundJob",
    "allocation_matrix",
    "build_round",
    "cluster_utility",
    "configurations",
    "fitness",
    "fitness_of",
    "generate_instance",
    "matrix_allocations",
    "restart_factor",
    "speedup_lookup",
    "utility_of",
]

#: Pollux's fairness exponent of the generalized mean (more negative: fairer).
FAIRNESS_P = -1.0
#: The constant the artifact adds to every scaled speedup before the power mean.
EPSILON = 1e-3
#: The most nodes one job may span (the repair operator's ``max_nodes``).
MAX_JOB_NODES = 16
#: Seconds the artifact's restart penalty charges per restart.
RESTART_DELAY = 30.0

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
#: ``(num_nodes, num_replicas) -> speedup`` over the job's fair share, for a missing table entry.
SpeedupSource = Callable[[int, int], float]


def restart_factor(age: float, num_restarts: int, delay: float = RESTART_DELAY) -> float:
    r""":math:`\max(\mathrm{age} - \mathrm{delay}\cdot r, 0) / (\mathrm{age} + \mathrm{delay})`."""
    return max(age - num_restarts * delay, 0.0) / (age + delay)


class RoundJob:
    r"""One job of a round.

    Parameters
    ----------
    name : str
    min_replicas, max_replicas : int
        :math:`0 \le` ``min_replicas`` :math:`\le` ``max_replicas``, ``max_replicas >= 1``.
    restart_factor : float
        :math:`\rho_j \in [0, 1]`, the factor a changed allocation multiplies its speedup by.
    previous : sequence of int
        GPUs held on each node before the round (zeros for a job without GPUs).
    speedup : mapping ``(K, N) -> float``
        :math:`S_j(K, N) \ge 0` over the job's fair share, for configurations it may take;
        entries not given are asked of ``source``.
    source : callable, optional
        Computes a missing entry (see :func:`build_round`).
    """

    def __init__(
        self,
        name: str,
        *,
        min_replicas: int,
        max_replicas: int,
        restart_factor: float,
        previous: Sequence[int],
        speedup: Mapping[tuple[int, int], float] | None = None,
        source: SpeedupSource | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidInstanceError("name", f"must be a non-empty string, got {name!r}")
        if int(max_replicas) < 1 or int(min_replicas) < 0 or min_replicas > max_replicas:
            raise InvalidInstanceError(
                f"{name}.max_replicas",
                f"needs 0 <= min_replicas <= max_replicas and max_replicas >= 1, got "
                f"{min_replicas} and {max_replicas}",
            )
        if not 0.0 <= float(restart_factor) <= 1.0:
            raise InvalidInstanceError(
                f"{name}.restart_factor", f"must be in [0, 1], got {restart_factor}"
            )
        prev = tuple(int(v) for v in previous)
        if any(v < 0 for v in prev):
            raise InvalidInstanceError(f"{name}.previous", f"must be >= 0, got {prev}")
        table = {(int(k), int(n)): float(v) for (k, n), v in (speedup or {}).items()}
        for (k, n), v in table.items():
            if not (math.isfinite(v) and v >= 0):
                raise InvalidInstanceError(
                    f"{name}.speedup[{k},{n}]", f"must be a finite number >= 0, got {v}"
                )
        self.name = name
        self.min_replicas = int(min_replicas)
        self.max_replicas = int(max_replicas)
        self.restart_factor = float(restart_factor)
        self.previous = prev
        self.speedup = table
        self.source = source

    def value(self, num_nodes: int, num_replicas: int) -> float:
        """:math:`S_j(K, N)`, 0 for no GPUs; computed (and kept) when the table lacks it."""
        if num_replicas == 0:
            return 0.0
        key = (num_nodes, num_replicas)
        hit = self.speedup.get(key)
        if hit is None:
            if self.source is None:
                raise InvalidInstanceError(
                    f"{self.name}.speedup", f"has no entry for K={num_nodes}, N={num_replicas}"
                )
            hit = float(self.source(num_nodes, num_replicas))
            if not (math.isfinite(hit) and hit >= 0):
                raise InvalidInstanceError(
                    f"{self.name}.speedup[{num_nodes},{num_replicas}]",
                    f"must be a finite number >= 0, got {hit}",
                )
            self.speedup[key] = hit
        return hit

    def fill(self, configs: Sequence[tuple[int, int]]) -> bool:
        """Compute the missing entries of ``configs`` at once, when the source can batch them.

        Only valid values (finite, >= 0) are kept: an invalid one stays missing, so that asking
        for it (:meth:`value`) reports it as before. Returns whether the source batched.
        """
        many = getattr(self.source, "many", None)
        if many is None:
            return False
        todo = [c for c in configs if c[1] != 0 and c not in self.speedup]
        if todo:
            for key, v in zip(todo, many(todo), strict=True):
                hit = float(v)
                if math.isfinite(hit) and hit >= 0:
                    self.speedup[key] = hit
        return True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (the speedup table as ``[K, N, value]`` triples)."""
        return {
            "name": self.name,
            "min_replicas": self.min_replicas,
            "max_replicas": self.max_replicas,
            "restart_factor": self.restart_factor,
            "previous": list(self.previous),
            "speedup": [[k, n, v] for (k, n), v in sorted(self.speedup.items())],
        }


class RoundInstance:
    r"""One round: the cluster, the jobs in Pollux's priority order, and the objective's constants.

    Parameters
    ----------
    num_nodes, gpus_per_node : int
        :math:`n` nodes of :math:`G` GPUs.
    jobs : sequence of RoundJob
        In the order the artifact's repair operator gives priority (fewest attained service
        first); every ``previous`` has ``num_nodes`` entries.
    p : float
        Fairness exponent, non-zero (:data:`FAIRNESS_P`).
    epsilon : float
        :data:`EPSILON`.
    scale : float, optional
        :math:`\sigma`; default :math:`1/G`.
    max_job_nodes : int
        :data:`MAX_JOB_NODES`.
    """

    def __init__(
        self,
        num_nodes: int,
        gpus_per_node: int,
        jobs: Sequence[RoundJob],
        *,
        p: float = FAIRNESS_P,
        epsilon: float = EPSILON,
        scale: float | None = None,
        max_job_nodes: int = MAX_JOB_NODES,
    ) -> None:
        if int(num_nodes) < 1:
            raise InvalidInstanceError("num_nodes", f"must be >= 1, got {num_nodes}")
        if int(gpus_per_node) < 1:
            raise InvalidInstanceError("gpus_per_node", f"must be >= 1, got {gpus_per_node}")
        if not jobs:
            raise InvalidInstanceError("jobs", "a round needs at least one job")
        if not math.isfinite(p) or p == 0:
            raise InvalidInstanceError("p", f"must be a finite non-zero number, got {p}")
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise InvalidInstanceError("epsilon", f"must be > 0, got {epsilon}")
        if int(max_job_nodes) < 1:
            raise InvalidInstanceError("max_job_nodes", f"must be >= 1, got {max_job_nodes}")
        self.num_nodes = int(num_nodes)
        self.gpus_per_node = int(gpus_per_node)
        self.jobs = tuple(jobs)
        names = [j.name for j in self.jobs]
        if len(set(names)) != len(names):
            raise InvalidInstanceError("jobs", "job names must be unique")
        for j in self.jobs:
            if len(j.previous) != self.num_nodes:
                raise InvalidInstanceError(
                    f"{j.name}.previous",
                    f"must have {self.num_nodes} entries, got {len(j.previous)}",
                )
        prev = self.previous
        if (prev > self.gpus_per_node).any() or (prev.sum(axis=0) > self.gpus_per_node).any():
            raise InvalidInstanceError("previous", "the previous allocation overfills a node")
        self.p = float(p)
        self.epsilon = float(epsilon)
        self.scale = 1.0 / self.gpus_per_node if scale is None else float(scale)
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise InvalidInstanceError("scale", f"must be > 0, got {scale}")
        self.max_job_nodes = int(max_job_nodes)
        self._grid: FloatArray | None = None

    @property
    def num_jobs(self) -> int:
        """:math:`J`."""
        return len(self.jobs)

    @property
    def previous(self) -> IntArray:
        """The previous allocation :math:`b`, shape ``(J, n)``."""
        return np.array([j.previous for j in self.jobs], dtype=np.int64)

    def node_bound(self, job: int) -> int:
        """The most nodes job ``job`` may span."""
        return min(self.num_nodes, self.max_job_nodes, self.replica_bound(job))

    def replica_bound(self, job: int) -> int:
        """The most GPUs job ``job`` may hold."""
        return min(self.jobs[job].max_replicas, self.num_nodes * self.gpus_per_node)

    def grid(self) -> FloatArray:
        """The speedups as a ``(J, K+1, N+1)`` array over the bounds, NaN where not computed yet."""
        if self._grid is None:
            kdim = min(self.num_nodes, self.max_job_nodes) + 1
            ndim = max(self.replica_bound(j) for j in range(self.num_jobs)) + 1
            grid = np.full((self.num_jobs, kdim, ndim), np.nan)
            grid[:, 0, 0] = 0.0
            for j, job in enumerate(self.jobs):
                for (k, n), v in job.speedup.items():
                    if k < kdim and n < ndim:
                        grid[j, k, n] = v
            self._grid = grid
        return self._grid

    def complete(self) -> RoundInstance:
        """Compute every configuration's speedup (:func:`configurations`); returns ``self``."""
        for j, job in enumerate(self.jobs):
            for k, n in configurations(self, j):
                job.value(k, n)
        return self

    def term(self, job: int, num_nodes: int, num_replicas: int, restart: bool) -> float:
        r""":math:`(x_j + \varepsilon)^p` of one job in one configuration."""
        x = self.scale * self.jobs[job].value(num_nodes, num_replicas)
        if restart:
            x *= self.jobs[job].restart_factor
        return float((x + self.epsilon) ** self.p)

    def mean_of(self, total: float) -> float:
        r""":math:`M = (\text{total} / J)^{1/p}` from :math:`\sum_j (x_j + \varepsilon)^p`."""
        return float((total / self.num_jobs) ** (1.0 / self.p))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (:meth:`from_dict` reads it back)."""
        return {
            "kind": "goodput-round",
            "num_nodes": self.num_nodes,
            "gpus_per_node": self.gpus_per_node,
            "p": self.p,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "max_job_nodes": self.max_job_nodes,
            "jobs": [j.to_dict() for j in self.jobs],
        }

    @classmethod
    def from_dict(cls, data: Any) -> RoundInstance:
        """Read :meth:`to_dict`'s mapping, naming the first bad field."""
        if not isinstance(data, dict) or data.get("kind") != "goodput-round":
            raise InvalidInstanceError("kind", "not a goodput round (kind 'goodput-round')")
        try:
            jobs = []
            for raw in data["jobs"]:
                table = {}
                for entry in raw["speedup"]:
                    k, n, v = entry
                    table[(int(k), int(n))] = float(v)
                jobs.append(
                    RoundJob(
                        str(raw["name"]),
                        min_replicas=int(raw["min_replicas"]),
                        max_replicas=int(raw["max_replicas"]),
                        restart_factor=float(raw["restart_factor"]),
                        previous=[int(v) for v in raw["previous"]],
                        speedup=table,
                    )
                )
            return cls(
                int(data["num_nodes"]),
                int(data["gpus_per_node"]),
                jobs,
                p=float(data["p"]),
                epsilon=float(data["epsilon"]),
                scale=float(data["scale"]),
                max_job_nodes=int(data["max_job_nodes"]),
            )
        except KeyError as exc:
            raise InvalidInstanceError(str(exc.args[0]), "is missing") from None
        except (TypeError, ValueError) as exc:
            if isinstance(exc, InvalidInstanceError):
                raise
            raise InvalidInstanceError("jobs", f"malformed round: {exc}") from None

    def save(self, path: str | Path) -> None:
        """Write the JSON of :meth:`to_dict`."""
        from optsched._json import dumps

        Path(path).write_text(dumps(self.to_dict()) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> RoundInstance:
        """Read a file :meth:`save` wrote."""
        from optsched._io import load_data

        return cls.from_dict(load_data(path))

    def __repr__(self) -> str:
        return (
            f"RoundInstance({self.num_jobs} jobs on {self.num_nodes} x {self.gpus_per_node} GPUs, "
            f"p={self.p:g})"
        )


def configurations(instance: RoundInstance, job: int) -> list[tuple[int, int]]:
    r"""Every ``(K, N)`` job ``job`` may take, ``(0, 0)`` first.

    :math:`N = 0`, or :math:`\max(1, \text{min}) \le N \le \min(\text{max}, nG)` and
    :math:`\lceil N/G \rceil \le K \le \min(N, n, 16)`. :math:`O(n \cdot \text{max})`.
    """
    g = instance.gpus_per_node
    spec = instance.jobs[job]
    out = [(0, 0)]
    for n in range(max(1, spec.min_replicas), instance.replica_bound(job) + 1):
        for k in range(-(-n // g), min(n, instance.num_nodes, instance.max_job_nodes) + 1):
            out.append((k, n))
    return out


def speedup_lookup(instance: RoundInstance, nodes: IntArray, replicas: IntArray) -> FloatArray:
    """:math:`S_j(K, N)` for every row of a population: arrays of shape ``(P, J)``.

    Read from a dense cache over every job's configurations (NaN where not computed yet);
    each missing entry is computed once. Shared by :func:`fitness` and the compiled search
    (:mod:`optsched.goodput.policies.pollux_kernels`), which reads the same cache.

    Parameters
    ----------
    instance : RoundInstance
        The round; its cache (``instance.grid()``) is filled in place.
    nodes, replicas : ndarray of int
        :math:`K` and :math:`N` of each job in each row, shape ``(P, J)``.

    Returns
    -------
    ndarray of float
        The speedups, shape ``(P, J)``. Complexity: :math:`O(PJ)` plus one evaluation per
        entry not yet cached.
    """
    grid = instance.grid()
    jobs = np.broadcast_to(np.arange(instance.num_jobs), nodes.shape)
    if nodes.max(initial=0) >= grid.shape[1] or replicas.max(initial=0) >= grid.shape[2]:
        # outside every job's bounds: only an unrepaired allocation asks, and gets its error
        return np.array(
            [[instance.jobs[j].value(int(k), int(n)) for j, (k, n) in
              enumerate(zip(row_k, row_n, strict=True))]
             for row_k, row_n in zip(nodes, replicas, strict=True)],
            dtype=np.float64,
        )  # fmt: skip
    out = grid[jobs, nodes, replicas]
    missing = np.isnan(out)
    if missing.any():
        keys = np.unique(np.stack([jobs[missing], nodes[missing], replicas[missing]]), axis=1)
        for j in np.unique(keys[0]).tolist():
            # a job missing one entry will miss more: its whole table at once, when batched
            job = instance.jobs[j]
            if job.fill(configurations(instance, j)):
                for (k, n), v in job.speedup.items():
                    if k < grid.shape[1] and n < grid.shape[2]:
                        grid[j, k, n] = v
        for j, k, n in keys.T:
            grid[j, k, n] = instance.jobs[int(j)].value(int(k), int(n))
        out = grid[jobs, nodes, replicas]
    return np.asarray(out, dtype=np.float64)


def fitness(instance: RoundInstance, states: npt.ArrayLike) -> FloatArray:
    r""":math:`M(a)` of each allocation of a population ``states`` of shape ``(P, J, n)``.

    Vectorized over the population; each distinct :math:`(K, N)` of a job is looked up once.
    """
    s = np.asarray(states, dtype=np.int64)
    nodes = np.count_nonzero(s, axis=2)
    replicas = s.sum(axis=2)
    changed = np.any(s != instance.previous[None], axis=2)
    return fitness_of(instance, speedup_lookup(instance, nodes, replicas), changed)


def fitness_of(
    instance: RoundInstance, speedups: FloatArray, changed: npt.NDArray[np.bool_]
) -> FloatArray:
    r""":math:`M(a)` from each job's speedup :math:`S_j(K_j, N_j)` and whether its row changed.

    Both of shape ``(P, J)``; :func:`fitness` once the population's counts are known.
    """
    x = instance.scale * speedups
    factor = np.array([j.restart_factor for j in instance.jobs])
    x = np.where(changed, x * factor[None], x)
    total = np.sum((x + instance.epsilon) ** instance.p, axis=1)
    return np.asarray((total / instance.num_jobs) ** (1.0 / instance.p), dtype=np.float64)


def cluster_utility(instance: RoundInstance, states: npt.ArrayLike) -> FloatArray:
    r"""The artifact's second objective (module notes), 0 when no node is used; shape ``(P,)``."""
    s = np.asarray(states, dtype=np.int64)
    speedups = speedup_lookup(instance, np.count_nonzero(s, axis=2), s.sum(axis=2))
    return utility_of(instance, speedups, np.count_nonzero(s.sum(axis=1), axis=1))


def utility_of(instance: RoundInstance, speedups: FloatArray, used: IntArray) -> FloatArray:
    r""":func:`cluster_utility` from the jobs' speedups ``(P, J)`` and the nodes used ``(P,)``."""
    active = used * instance.gpus_per_node
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(active > 0, speedups.sum(axis=1) / np.maximum(active, 1), 0.0)
    return np.asarray(util, dtype=np.float64)


def allocation_matrix(instance: RoundInstance, allocations: Mapping[str, Allocation]) -> IntArray:
    """The ``(J, n)`` matrix of GPUs per job and node of a policy's allocations."""
    index = {j.name: i for i, j in enumerate(instance.jobs)}
    out = np.zeros((instance.num_jobs, instance.num_nodes), dtype=np.int64)
    for name, alloc in allocations.items():
        if name not in index:
            raise InvalidInstanceError(f"allocations[{name}]", "is not a job of the round")
        for node in alloc:
            if not 0 <= node < instance.num_nodes:
                raise InvalidInstanceError(f"allocations[{name}]", f"names no node: {node}")
            out[index[name], node] += 1
    return out


def matrix_allocations(instance: RoundInstance, state: npt.ArrayLike) -> dict[str, Allocation]:
    """The allocations of a ``(J, n)`` matrix: one node index per GPU, for jobs that get GPUs."""
    s = np.asarray(state, dtype=np.int64)
    out: dict[str, Allocation] = {}
    for j, job in enumerate(instance.jobs):
        alloc = tuple(n for n in range(instance.num_nodes) for _ in range(int(s[j, n])))
        if alloc:
            out[job.name] = alloc
    return out


class _FairSource:
    """A job's speedup over its fair share; ``many`` when its speedup function has it."""

    def __init__(self, view: JobView, base: float) -> None:
        self.view = view
        self.base = base
        batch = getattr(view.speedup, "many", None)
        self.many: Callable[[list[tuple[int, int]]], list[float]] | None = None
        if batch is not None:
            self.many = lambda pairs: [float(v) / base for v in batch(pairs)]

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        return float(self.view.speedup(num_nodes, num_replicas)) / self.base


def _fair_source(view: JobView, base: float) -> SpeedupSource:
    return _FairSource(view, base)


def build_round(
    jobs: Mapping[str, JobView],
    cluster: ClusterView,
    previous: Mapping[str, Allocation],
    *,
    p: float = FAIRNESS_P,
) -> RoundInstance:
    r"""The round Pollux's policy solves for these jobs, as the artifact states it.

    Jobs are ordered by attained service, then submission time (then the order given), as the
    artifact sorts them (its repair operator favours earlier jobs). Speedups are taken over each
    job's fair share, :math:`S_j(K, N) = \mathrm{SPEEDUP}_j(K, N) /
    \mathrm{SPEEDUP}_j(1, \lceil nG / J \rceil)`, the artifact's rebasing of every job's
    goodput on its fair-share goodput; a job whose fair-share speedup is not positive keeps its
    one-GPU base. Entries are computed on first use (:meth:`RoundInstance.complete`).
    """
    if not jobs:
        raise InvalidInstanceError("jobs", "a round needs at least one job")
    order = sorted(
        enumerate(jobs.values()),
        key=lambda iv: (iv[1].attained_service, iv[1].submission_time, iv[0]),
    )
    fair = -(-cluster.num_gpus // len(jobs))
    out = []
    for _, view in order:
        base = float(view.speedup(1, fair))
        if not (math.isfinite(base) and base > 0):
            base = 1.0
        prev = [0] * cluster.num_nodes
        for node in previous.get(view.name, ()):
            if not 0 <= node < cluster.num_nodes:
                raise InvalidInstanceError(f"previous[{view.name}]", f"names no node: {node}")
            prev[node] += 1
        out.append(
            RoundJob(
                view.name,
                min_replicas=view.min_replicas,
                max_replicas=view.max_replicas,
                restart_factor=restart_factor(view.age, view.num_restarts),
                previous=prev,
                source=_fair_source(view, base),
            )
        )
    return RoundInstance(cluster.num_nodes, cluster.gpus_per_node, out, p=p)


def _random_table(
    rng: np.random.Generator, g: int, kmax: int, nmax: int
) -> dict[tuple[int, int], float]:
    # concave in N (exponent < 1) and, mostly, a loss per extra node (Pollux's fitted speedups'
    # shape); sometimes a gain, so that spanning jobs compete for nodes
    alpha = rng.uniform(0.4, 1.0)
    loss = rng.uniform(-0.2, 0.3)
    base = rng.uniform(0.5, 2.0)
    table = {}
    for n in range(1, nmax + 1):
        for k in range(-(-n // g), min(n, kmax) + 1):
            table[(k, n)] = round(base * n**alpha * (1.0 - loss) ** (k - 1), 6)
    return table


def generate_instance(
    num_jobs: int = 4,
    *,
    num_nodes: int = 2,
    gpus_per_node: int = 4,
    seed: int = 0,
    p: float = FAIRNESS_P,
) -> RoundInstance:
    """A random round: concave speedups, random bounds, ages, restarts and previous allocation.

    The previous allocation respects the nodes' capacity; it may break other constraints (as a
    stale allocation can, once a job's bounds change).
    """
    if num_jobs < 1:
        raise InvalidInstanceError("num_jobs", f"must be >= 1, got {num_jobs}")
    rng = np.random.default_rng(seed)
    g = int(gpus_per_node)
    free = np.full(num_nodes, g, dtype=np.int64)
    jobs = []
    for j in range(num_jobs):
        max_r = int(rng.integers(1, num_nodes * g + 1))
        min_r = int(rng.integers(0, min(max_r, 2) + 1))
        prev = np.zeros(num_nodes, dtype=np.int64)
        if rng.random() < 0.6:
            for node in rng.permutation(num_nodes)[: int(rng.integers(1, num_nodes + 1))]:
                take = int(rng.integers(0, free[node] + 1))
                prev[node] = take
                free[node] -= take
        age = float(rng.uniform(0.0, 3600.0))
        restarts = int(rng.integers(0, 4))
        kmax = min(num_nodes, MAX_JOB_NODES, max_r)
        jobs.append(
            RoundJob(
                f"job-{j}",
                min_replicas=min_r,
                max_replicas=max_r,
                restart_factor=restart_factor(age, restarts),
                previous=prev.tolist(),
                speedup=_random_table(rng, g, kmax, min(max_r, num_nodes * g)),
            )
        )
    return RoundInstance(num_nodes, g, jobs, p=p)
