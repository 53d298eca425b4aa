r"""Placement heuristics, each returning the same :class:`Placement` type as the exact ILPs.

======================= ==========================================================================
name                    rule
======================= ==========================================================================
``round-robin``         tasks in order; each on the next server (cyclically, after the previous
                        task's) that has room
``first-fit``           tasks in order; each on the lowest-index server with room
``best-fit-decreasing`` tasks by decreasing size; each on the server it leaves with the least
                        free capacity
``consolidate-first``   jobs by decreasing size; a job goes whole onto the best-fitting server
                        that can hold it, else its tasks fill the emptiest servers first (few
                        servers per job, as Optimus and Tiresias place consolidation-sensitive
                        jobs)
``random``              tasks in a random order; each on a uniformly random server with room
``clwp-greedy``         CLWP's rule (formulations §5.2): jobs in order, each whole onto the server
                        with the least predicted interference with residents and jobs already
                        there, ties to the least loaded
``nlwp-greedy``         NLWP's rule: tasks in order, each onto the GPU (or host) slot adding the
                        least interference and communication cost; also assigns GPUs
======================= ==========================================================================

The *size* of a demand vector :math:`d` is :math:`\sum_r d_r / \max_h C_{hr}` (resources a
cluster lacks are skipped); *free capacity* is measured the same way. Every heuristic raises
:class:`HeuristicFailedError` when a task finds no server with room; none of them backtracks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from optsched.errors import HeuristicFailedError, InvalidInstanceError
from optsched.limits import check_size
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.tolerances import FIT_TOL

__all__ = [
    "HEURISTICS",
    "best_fit_decreasing",
    "clwp_greedy",
    "consolidate_first",
    "first_fit",
    "nlwp_greedy",
    "random_fit",
    "round_robin",
    "run_heuristic",
]


class _State:
    """Free capacity of every server, with the normalisation used for sizes."""

    def __init__(self, instance: PlacementInstance) -> None:
        self.instance = instance
        self.demand = instance.demand
        self.free = instance.capacity.copy()
        scale = instance.capacity.max(axis=0)
        self.scale = np.where(scale > 0, scale, 1.0)
        self.server = np.full(len(instance.tasks), -1, dtype=np.int64)

    def fits(self, need: np.ndarray, h: int) -> bool:
        slack = FIT_TOL * np.maximum(1.0, np.abs(self.instance.capacity[h]))
        return bool(np.all(need <= self.free[h] + slack))

    def size(self, need: np.ndarray) -> float:
        return float((need / self.scale).sum())

    def place(self, t: int, h: int) -> None:
        self.free[h] -= self.demand[t]
        self.server[t] = h

    def fail(self, name: str, t: int) -> HeuristicFailedError:
        task = self.instance.tasks[t].id
        return HeuristicFailedError(f"{name}: no server has room for task {task!r}")

    def placement(self, method: str) -> Placement:
        return Placement.from_indices(self.instance, self.server.tolist(), method=method)


def _decreasing(instance: PlacementInstance, state: _State) -> list[int]:
    sizes = [state.size(instance.demand[t]) for t in range(len(instance.tasks))]
    return sorted(range(len(sizes)), key=lambda t: (-sizes[t], t))


def round_robin(instance: PlacementInstance, seed: int | None = None) -> Placement:
    """Round-robin: each task on the next server with room, cyclically.

    Parameters
    ----------
    instance : PlacementInstance
    seed : int, optional
        Unused (deterministic); accepted so every heuristic has one signature.

    Raises
    ------
    HeuristicFailedError
        A task fits on no server.
    """
    state = _State(instance)
    n = len(instance.servers)
    nxt = 0
    for t in range(len(instance.tasks)):
        for step in range(n):
            h = (nxt + step) % n
            if state.fits(instance.demand[t], h):
                state.place(t, h)
                nxt = (h + 1) % n
                break
        else:
            raise state.fail("round-robin", t)
    return state.placement("heuristic:round-robin")


def first_fit(instance: PlacementInstance, seed: int | None = None) -> Placement:
    """First-fit: each task, in order, on the lowest-index server with room.

    Raises
    ------
    HeuristicFailedError
        A task fits on no server.
    """
    state = _State(instance)
    for t in range(len(instance.tasks)):
        h = next((h for h in range(len(instance.servers)) if state.fits(instance.demand[t], h)), -1)
        if h < 0:
            raise state.fail("first-fit", t)
        state.place(t, h)
    return state.placement("heuristic:first-fit")


def best_fit_decreasing(instance: PlacementInstance, seed: int | None = None) -> Placement:
    r"""Best-fit decreasing: largest tasks first, each where it leaves the least room.

    Notes
    -----
    With one resource and identical servers this is the classic BFD bin-packing rule, which
    uses at most :math:`\\tfrac{11}{9}\\mathrm{OPT} + \\tfrac{6}{9}` servers.

    Raises
    ------
    HeuristicFailedError
        A task fits on no server.
    """
    state = _State(instance)
    for t in _decreasing(instance, state):
        best, best_left = -1, np.inf
        for h in range(len(instance.servers)):
            if state.fits(instance.demand[t], h):
                left = state.size(state.free[h] - instance.demand[t])
                if left < best_left - 1e-12:
                    best, best_left = h, left
        if best < 0:
            raise state.fail("best-fit-decreasing", t)
        state.place(t, best)
    return state.placement("heuristic:best-fit-decreasing")


def consolidate_first(instance: PlacementInstance, seed: int | None = None) -> Placement:
    """Consolidate-first: each job whole on one server when possible, else on few servers.

    Raises
    ------
    HeuristicFailedError
        A task fits on no server.
    """
    state = _State(instance)
    totals = [instance.demand[list(ts)].sum(axis=0) for ts in instance.job_tasks]
    order = sorted(range(len(instance.jobs)), key=lambda j: (-state.size(totals[j]), j))
    for j in order:
        tasks = list(instance.job_tasks[j])
        whole = [h for h in range(len(instance.servers)) if state.fits(totals[j], h)]
        if whole:
            h = min(whole, key=lambda h: (state.size(state.free[h] - totals[j]), h))
            for t in tasks:
                state.place(t, h)
            continue
        # Spread over the emptiest servers, filling each before opening the next.
        servers = sorted(
            range(len(instance.servers)), key=lambda h: (-state.size(state.free[h]), h)
        )
        tasks.sort(key=lambda t: (-state.size(instance.demand[t]), t))
        for t in tasks:
            h = next((h for h in servers if state.fits(instance.demand[t], h)), -1)
            if h < 0:
                raise state.fail("consolidate-first", t)
            state.place(t, h)
    return state.placement("heuristic:consolidate-first")


def random_fit(instance: PlacementInstance, seed: int | None = 0) -> Placement:
    """Random: tasks in a random order, each on a uniformly random server with room.

    Parameters
    ----------
    seed : int, optional
        Seed of the generator (default 0); equal seeds give equal placements.

    Raises
    ------
    HeuristicFailedError
        A task fits on no server.
    """
    rng = np.random.default_rng(seed)
    state = _State(instance)
    for t in rng.permutation(len(instance.tasks)):
        options = [h for h in range(len(instance.servers)) if state.fits(instance.demand[t], h)]
        if not options:
            raise state.fail("random", int(t))
        state.place(int(t), int(options[int(rng.integers(len(options)))]))
    return state.placement(f"heuristic:random(seed={seed})")


def clwp_greedy(instance: PlacementInstance, seed: int | None = None) -> Placement:
    r"""CLWP's greedy rule: each job whole onto the server it interferes with least.

    The cost of putting job :math:`a` on server :math:`h` is
    :math:`\\omega_a R_{ah} + \\sum_{b \\text{ on } h} (\\omega_a c_{ab} + \\omega_b c_{ba})`;
    ties go to the server left with the most free capacity, then the lowest index.

    Raises
    ------
    HeuristicFailedError
        A job fits whole on no server.
    """
    state = _State(instance)
    c = instance.pair_coefficients
    resident = instance.resident_costs
    weight = np.array([job.weight for job in instance.jobs])
    hosted: list[list[int]] = [[] for _ in instance.servers]
    for a, tasks in enumerate(instance.job_tasks):
        total = instance.demand[list(tasks)].sum(axis=0)
        best, best_key = -1, (np.inf, np.inf, np.inf)
        for h in range(len(instance.servers)):
            if not state.fits(total, h):
                continue
            cost = weight[a] * resident[a, h] + sum(
                weight[a] * c[a, b] + weight[b] * c[b, a] for b in hosted[h]
            )
            key = (cost, -state.size(state.free[h] - total), h)
            if key < best_key:
                best, best_key = h, key
        if best < 0:
            raise state.fail("clwp-greedy", tasks[0])
        for t in tasks:
            state.place(t, best)
        hosted[best].append(a)
    return state.placement("heuristic:clwp-greedy")


def nlwp_greedy(instance: PlacementInstance, seed: int | None = None) -> Placement:
    """NLWP's greedy rule: each task onto the slot (GPU, or host for CPU tasks) adding least cost.

    The added cost counts co-runner interference with the tasks already on the GPU and the
    communication time to the tasks already placed (formulations §5.2); ties go to the lowest
    server, then GPU, index.

    Raises
    ------
    HeuristicFailedError
        A task fits on no slot.
    """
    from optsched.errors import ModelError

    # Every task scans every slot: bound the scan before starting it.
    n_slots = sum(s.gpus + 1 for s in instance.servers)
    check_size("jobs", len(instance.tasks) * n_slots, "max_events", "task-slot pairs")
    state = _State(instance)
    gpu_col = instance.resources.index("gpu") if "gpu" in instance.resources else None
    c = instance.pair_coefficients
    weight = [job.weight for job in instance.jobs]
    share: dict[tuple[int, int], float] = {}
    memory: dict[tuple[int, int], float] = {}
    on_gpu: dict[tuple[int, int], list[int]] = {}
    gpu_of: dict[int, int] = {}
    neighbours: dict[int, list[tuple[int, float]]] = {}
    for src, dst, v in instance.flows:
        neighbours.setdefault(src, []).append((dst, v))
        neighbours.setdefault(dst, []).append((src, v))
    tasks = instance.tasks

    def tau(t: int, h: int, g: int, u: int) -> float:
        hu, gu = int(state.server[u]), gpu_of.get(u, -1)
        sa, sb = instance.servers[h], instance.servers[hu]
        if h != hu:
            return 1.0 / min(sa.nic_bandwidth_gbps, sb.nic_bandwidth_gbps)
        if g < 0 and gu < 0:
            return 0.0
        if g < 0 or gu < 0:
            return 1.0 / sa.gpu_bandwidth_gbps
        return 0.0 if g == gu else 1.0 / sa.gpu_pair_bandwidth(g, gu)

    for t in range(len(tasks)):
        need = instance.demand[t]
        share_t = float(need[gpu_col]) if gpu_col is not None else 0.0
        if share_t > 1.0 + FIT_TOL:
            raise ModelError(
                f"nlwp-greedy: task {tasks[t].id!r} demands {share_t:g} GPUs;"
                " NLWP puts a task on one GPU"
            )
        mem_t = instance.spec(t).gpu_memory_gb
        best: tuple[float, int, int] | None = None
        for h, server in enumerate(instance.servers):
            if not state.fits(need, h):
                continue
            slots = range(server.gpus) if share_t > 0.0 else [-1]
            for g in slots:
                if g >= 0:
                    if share.get((h, g), 0.0) + share_t > 1.0 + FIT_TOL:
                        continue
                    limit = server.gpu_memory_gb
                    if limit is not None and memory.get(
                        (h, g), 0.0
                    ) + mem_t > limit + FIT_TOL * max(1.0, limit):
                        continue
                cost = 0.0
                if g >= 0:
                    a = tasks[t].job
                    for u in on_gpu.get((h, g), []):
                        b = tasks[u].job
                        if a != b:
                            cost += weight[a] * c[a, b] + weight[b] * c[b, a]
                for u, v in neighbours.get(t, []):
                    if state.server[u] >= 0:
                        cost += instance.comm_weight * v * tau(t, h, g, u)
                key = (cost, h, g)
                if best is None or key < best:
                    best = key
        if best is None:
            raise state.fail("nlwp-greedy", t)
        _, h, g = best
        state.place(t, h)
        if g >= 0:
            gpu_of[t] = g
            share[(h, g)] = share.get((h, g), 0.0) + share_t
            memory[(h, g)] = memory.get((h, g), 0.0) + mem_t
            on_gpu.setdefault((h, g), []).append(t)
    return Placement.from_indices(
        instance, state.server.tolist(), gpus=gpu_of, method="heuristic:nlwp-greedy"
    )


Heuristic = Callable[["PlacementInstance", "int | None"], Placement]

#: Every heuristic by name.
HEURISTICS: dict[str, Heuristic] = {
    "round-robin": round_robin,
    "first-fit": first_fit,
    "best-fit-decreasing": best_fit_decreasing,
    "consolidate-first": consolidate_first,
    "random": random_fit,
    "clwp-greedy": clwp_greedy,
    "nlwp-greedy": nlwp_greedy,
}


def run_heuristic(name: str, instance: PlacementInstance, seed: int | None = 0) -> Placement:
    """Run the heuristic called ``name`` (a key of :data:`HEURISTICS`).

    Raises
    ------
    InvalidInstanceError
        Unknown name (field ``heuristic``).
    HeuristicFailedError
        The heuristic found no room for some task.
    """
    if name not in HEURISTICS:
        raise InvalidInstanceError(
            "heuristic", f"unknown heuristic {name!r}; known: {sorted(HEURISTICS)}"
        )
    return HEURISTICS[name](instance, seed)
