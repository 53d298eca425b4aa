r"""Gavel as Sia's simulator runs it: max-sum-throughput shares turned into rounds of gangs.

Sia's artifact runs Gavel (``sia-simulator/gavel.py``, ``max_sum_throughput_perf``, 360-s
rounds) with fixed jobs: each job's gang of :math:`s_m` GPUs (its owner's ``num_replicas``) on
one GPU type at its owner's global batch. Every round:

1. **Throughputs.** :math:`T_{mj}` is the job's iterations per second on type :math:`j`, its
   gang packed onto as few nodes as it fits, at the batch split Gavel's estimate uses (that of
   :func:`~optsched.goodput.hetero.apps.fixed_split` without the memory cap, and at least one
   accumulation step on a single GPU whatever the batch), times the job type's calibration
   factor: :math:`1/(T_\mathrm{step} + s(T_\mathrm{step} - T_\mathrm{sync}))`.
2. **Shares.** :math:`X` solves :math:`\max \sum_{m,j} T_{mj} X_{mj}` s.t. :math:`X \ge 0`,
   :math:`\sum_j X_{mj} \le 1`, :math:`\sum_m s_m X_{mj} \le n_j`, as an interior-point solver
   returns it (the analytic centre of the optimal face, which splits the share of identical
   jobs evenly; Sia's run uses ECOS through cvxpy), rounded to 5 decimals and clipped to
   :math:`[0, 1]`. ``solver="clarabel"`` (default) states the same inequalities to Clarabel
   (:func:`~optsched.allocation.gavel.interior.interior_allocation`); ``"ecos"`` asks cvxpy's
   ECOS as the artifact does (the ``bench`` extra); ``"highs"`` takes HiGHS's vertex optimum
   instead (the knob that shows what the centre matters).
3. **Priorities.** Each job's time on each type starts at half a round when it arrives, and
   the type's total with it; a job's priority on type :math:`j` is :math:`X_{mj}` over its
   fraction of the type's time so far (time received, never reset, finished jobs kept).
4. **Gangs.** All (job, type) pairs sorted by priority, then share, descending (ties in type
   order, then workload order); each job is placed on the first type of its list that still
   has :math:`s_m` free GPUs.
5. **Workers.** Per type, jobs in decreasing gang size keep their previous workers when all are
   free; the others take free workers server by server in index order.

Cost per round: one LP of :math:`MK` variables plus :math:`O(MK \log(MK))` for the walk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.hetero.apps import GpuType, max_local_bsz
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView
from optsched.goodput.progress import measured_step_time

__all__ = ["GAVEL_SOLVERS", "SiaGavel", "gavel_throughput", "max_sum_throughput_shares"]

#: Solvers of the shares LP (module notes).
GAVEL_SOLVERS = ("clarabel", "ecos", "highs")


def gavel_throughput(view: HeteroJobView, gpu: GpuType) -> float:
    """Gavel's estimate of the job's iterations per second on ``gpu`` (module notes, step 1)."""
    app = view.apps[gpu.name]
    sf = view.target_num_replicas
    placement: tuple[int, ...] = ()
    while sum(placement) < sf:
        placement = (*placement, min(sf - sum(placement), gpu.gpus_per_node))
    local = math.ceil(view.target_batch_size / sf - 1e-8)
    accum = math.ceil(local / max_local_bsz(app, placement) - 1e-8) - 1
    if sf == 1:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = min(atomic, int(app.limits.max_batch_size / (sf * (accum + 1))))
    step, sync = measured_step_time(app.traces, placement, atomic)
    return 1 / (step + (step - sync) * accum) * app.calibration


def max_sum_throughput_shares(
    throughputs: np.ndarray, scale: np.ndarray, capacity: np.ndarray, solver: str = "clarabel"
) -> np.ndarray:
    """:math:`X` of step 2 (module notes) for jobs by row, types by column, unrounded."""
    if solver == "clarabel":
        from optsched.allocation.gavel.instance import AllocationInstance, AllocationJob
        from optsched.allocation.gavel.interior import interior_allocation

        inst = AllocationInstance(
            gpu_types=tuple(f"t{k}" for k in range(len(capacity))),
            capacity=tuple(int(c) for c in capacity),
            jobs=tuple(AllocationJob(job_id=f"j{i}", throughput_steps_per_s=tuple(row),
                                     scale_factor=int(scale[i]))
                       for i, row in enumerate(throughputs.tolist())),
        )  # fmt: skip
        return interior_allocation(inst, "max-sum-throughput-perf")
    if solver == "ecos":
        import cvxpy as cp

        x = cp.Variable(throughputs.shape)
        sfa = np.repeat(scale[:, None].astype(float), throughputs.shape[1], axis=1)
        cons = [x >= 0, cp.sum(cp.multiply(sfa, x), axis=0) <= capacity, cp.sum(x, axis=1) <= 1]
        cp.Problem(cp.Maximize(cp.sum(cp.multiply(throughputs, x))), cons).solve(solver="ECOS")
        return np.asarray(x.value, dtype=np.float64)
    if solver == "highs":
        from scipy.optimize import linprog

        m, k = throughputs.shape
        rows = [np.kron(np.eye(m), np.ones(k)), np.kron(scale[:, None].T, np.eye(k))]
        res = linprog(-throughputs.ravel(), A_ub=np.vstack(rows),
                      b_ub=np.concatenate([np.ones(m), capacity]), bounds=(0, None),
                      method="highs")  # fmt: skip
        return np.asarray(res.x, dtype=np.float64).reshape(m, k)
    raise InvalidInstanceError(
        "solver", f"must be one of {', '.join(GAVEL_SOLVERS)}, got {solver!r}"
    )


class SiaGavel:
    """Gavel's ``max_sum_throughput_perf`` rounds as Sia's simulator runs them (module notes).

    Parameters
    ----------
    interval : float
        The round length (360 s in the paper's runs): a new job's initial time.
    solver : str
        One of :data:`GAVEL_SOLVERS`.
    """

    name = "gavel"

    def __init__(self, interval: float = 360.0, solver: str = "clarabel") -> None:
        if solver not in GAVEL_SOLVERS:
            raise InvalidInstanceError("solver", f"must be one of {', '.join(GAVEL_SOLVERS)}")
        self.interval = float(interval)
        self.solver = solver
        self.reset()

    def reset(self) -> None:
        """Forget every job (a new run)."""
        self._job_time: dict[str, dict[str, float]] = {}
        self._type_time: dict[str, float] = {}
        self._workers: dict[str, tuple[str, tuple[int, ...]]] = {}

    def _shares(self, jobs: Mapping[str, HeteroJobView], types: tuple[GpuType, ...]) -> np.ndarray:
        names = sorted(jobs)  # Gavel's LP lists jobs by name; the centre does not depend on it
        t = np.array([[gavel_throughput(jobs[n], g) for g in types] for n in names])
        sf = np.array([jobs[n].target_num_replicas for n in names], dtype=np.float64)
        cap = np.array([g.num_gpus for g in types], dtype=np.float64)
        x = max_sum_throughput_shares(t, sf, cap, self.solver).round(decimals=5)
        x = x.clip(min=0.0).clip(max=1.0)
        order = {n: i for i, n in enumerate(names)}
        return np.array([x[order[n]] for n in jobs])

    def _select(
        self, jobs: Mapping[str, HeteroJobView], types: tuple[GpuType, ...], x: np.ndarray
    ) -> dict[str, list[tuple[str, int]]]:
        entries = []
        for k, g in enumerate(types):
            total = self._type_time[g.name]
            for i, name in enumerate(jobs):
                share = float(x[i, k])
                fraction = float(self._job_time[name][g.name]) / float(total) if total else 0.0
                prio = share * 1e9 if fraction == 0 else (share / fraction if share else 0.0)
                entries.append((name, g.name, prio, share))
        entries.sort(key=lambda e: (e[2], 0, e[3]), reverse=True)
        left = {g.name: g.num_gpus for g in types}
        chosen: dict[str, list[tuple[str, int]]] = {g.name: [] for g in types}
        placed: set[str] = set()
        for name, gname, *_ in entries:
            sf = jobs[name].target_num_replicas
            if left[gname] == 0 or name in placed or sf > left[gname]:
                continue
            left[gname] -= sf
            placed.add(name)
            chosen[gname].append((name, sf))
        return chosen

    def _assign(self, g: GpuType, chosen: list[tuple[str, int]]) -> dict[str, tuple[int, ...]]:
        chosen = sorted(chosen, key=lambda e: e[1], reverse=True)
        servers = [list(range(s * g.gpus_per_node, (s + 1) * g.gpus_per_node))
                   for s in range(g.num_nodes)]  # fmt: skip
        taken: set[int] = set()
        ptr = 0
        out: dict[str, tuple[int, ...]] = {}
        for size in sorted({sf for _, sf in chosen}, reverse=True):
            for name, sf in chosen:
                prev = self._workers.get(name)
                if sf == size and prev is not None and prev[0] == g.name \
                        and not any(w in taken for w in prev[1]):  # fmt: skip
                    out[name] = prev[1]
                    taken.update(prev[1])
            for name, sf in chosen:
                if sf != size or name in out:
                    continue
                got: list[int] = []
                while len(got) < sf and ptr < len(servers):
                    if not servers[ptr]:
                        ptr += 1
                        continue
                    w = servers[ptr].pop(0)
                    if w not in taken:
                        got.append(w)
                        taken.add(w)
                if len(got) != sf:
                    raise InvalidInstanceError("gavel", f"could not place {name} on {g.name}")
                out[name] = tuple(got)
        return out

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """One round (module notes)."""
        types = cluster.gpu_types
        for name in jobs:
            if name not in self._job_time:
                self._job_time[name] = {g.name: self.interval / 2 for g in types}
                for g in types:
                    self._type_time[g.name] = self._type_time.get(g.name, 0.0) + self.interval / 2
        chosen = self._select(jobs, types, self._shares(jobs, types))
        workers: dict[str, tuple[str, tuple[int, ...]]] = {}
        for g in types:
            for name, ids in self._assign(g, chosen[g.name]).items():
                workers[name] = (g.name, ids)
        self._workers = workers
        for name, (gname, _) in workers.items():
            self._job_time[name][gname] += self.interval
            self._type_time[gname] += self.interval
        gpn = {g.name: g.gpus_per_node for g in types}
        return {n: (t, tuple(w // gpn[t] for w in ids)) for n, (t, ids) in workers.items()}
