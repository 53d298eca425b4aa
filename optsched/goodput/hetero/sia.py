r"""Sia's policy in the heterogeneous goodput world, its round solved by optsched's ILP.

Sia's artifact (``sia-simulator/sia.py``, ``cluster.py``, ``job.py``) runs, per job, a model
learned online and, every round, an integer program over the jobs' goodputs per configuration.
This module rebuilds both from the job's own measurements and hands the round to
:func:`optsched.goodput.sia_ilp.solve` (HiGHS) instead of Sia's CBC call.

**The job's model** (:class:`SiaBatcher`). Per GPU type a profile of the configurations the job
ran there, ``(nodes, GPUs, atomic batch) -> (step, sync time)``, first measurement kept, each
new one refitting that type's throughput parameters
(:func:`~optsched.goodput.fit.fit_throughput` with Sia's ``tol=1e-5``), and one set of gradient
statistics, the latest (shared by the types). The job's batch (``update_local_bsz``): without a
fitted model on its type, the smallest admissible batch :math:`\max(M_0, K m_\min)` split as a
fixed batch (:func:`~optsched.goodput.hetero.apps.fixed_split`); with one, the goodput-optimal
``(m, s)`` up to the job type's largest validated batch, per-GPU batch within the type's
smallest measured and the placement's largest measured
(:func:`~optsched.goodput.batch.best_batch`), then the placement's memory cap and
:math:`\lfloor M_\max / (K(s+1)) \rfloor`.

**A round** (``optimize_mip``), with the artifact's command-line settings (``p = -0.5``,
:math:`\lambda_n = 1.1`, ``--project_throughputs``, ``--share_max_replicas``):

1. configurations per GPU type: :func:`~optsched.goodput.sia_instance.sia_configs` over at
   most the type's ``max_physical_nodes`` (:data:`MAX_PHYSICAL_NODES`);
2. a job's goodput on configuration :math:`(N, K)` of type :math:`g`: with a model on
   :math:`g`, the best goodput at most the owner's batch (Sia's speedup function caps the batch
   at ``target_batch_size``); without one but with one on another type :math:`h` (the first in
   cluster order), the goodput on :math:`h` with :math:`\lceil K / n_h \rceil` nodes times
   :math:`x_g / x_h`, :math:`x` the type's single-GPU throughput measured at its largest batch
   (``project_throughputs``); without any model, 1 on the one-GPU configurations. Only
   configurations of at most ``max_replicas`` GPUs (the largest over types of
   :math:`\min(\max(2 R_g, 1), 64, \lfloor M_\max / m_\min \rfloor)`, :math:`R_g` the most GPUs
   profiled on :math:`g`) count; the others keep :math:`10^{-4}`;
3. the row divided by its smallest goodput above :math:`10^{-4}` (values in single precision
   as Sia's matrices are), the rest raised to :math:`10^{-4}`;
4. Pollux's re-allocation factor with Sia's restart penalties
   (:func:`~optsched.goodput.sia_instance.realloc_factor`), the option held last round, and
   the job pinned to it while a checkpoint-restore is under way (``preserve_ckpt_allocs``);
5. the ILP (:class:`~optsched.goodput.sia_instance.SiaInstance`), its coefficients
   :math:`\min(3000, \mathrm{round}_2(\hat g^{\,p}))` computed in single precision as Sia's
   matrices are, solved by HiGHS; then each type's jobs placed in decreasing GPU count by Sia's
   ``alloc_to_placement_fast`` (whole free nodes first from a rotating node pointer, the rest
   wherever GPUs are free), from empty nodes every round.

**Ties.** Rounded to two decimals, the coefficients of two options often tie (a new job's
one-GPU configurations all have goodput 1; a job's next size up, scaled by its re-allocation
factor, often rounds to what it holds). Sia's CBC and HiGHS then pick different optima and the
runs part. ``tie_break`` adds a credit of at most :data:`TIE_CREDIT` per job, far below the
coefficients' resolution, so that only equal allocations are reordered: ``"later"`` (default)
favours each job's options in proportion to their index in Sia's order (aws, dgx-ext, rtx;
fewer GPUs first), which is what CBC chose in three of the four ties of the artifact's first
1,560 s and in 53 of 80 first allocations (rtx, the last type); ``"previous"`` favours the
option the job holds (no restart); ``"none"`` hands HiGHS the instance's own double-precision
coefficients, ties and all. ``solver="cbc"`` leaves the ties to Sia's own solve (CBC through
cvxpy on Sia's matrix and gap, :func:`optsched.goodput.sia_ilp.solve_cbc`): on the artifact's
80-job run it reproduces all but five of Sia's 664 decisions.

Cost per round: :math:`O(J C)` goodput evaluations (:math:`C` configurations, 50 batches each)
plus the ILP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from optsched.errors import InvalidInstanceError
from optsched.goodput.batch import best_batch
from optsched.goodput.efficiency import GradientStats
from optsched.goodput.fit import StepMeasurements, fit_throughput
from optsched.goodput.goodput import GoodputModel
from optsched.goodput.hetero.apps import GpuType, HeteroApp, fixed_split, max_local_bsz
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView
from optsched.goodput.sia_instance import (
    RESTART_PENALTIES,
    SiaGpuType,
    SiaInstance,
    SiaJob,
    SiaOption,
    realloc_factor,
    sia_configs,
)
from optsched.goodput.throughput import ThroughputParams
from optsched.goodput.workload import PolluxJob

__all__ = ["MAX_PHYSICAL_NODES", "TIE_BREAKS", "SiaBatcher", "SiaHetero", "place_fast"]

#: Nodes a configuration may span per GPU type (``cluster_max_physical_nnodes``).
MAX_PHYSICAL_NODES: dict[str, int] = {"azure": 5, "aws": 16, "dgx": 2, "dgx-ext": 2,
                                      "quad": 1, "rtx": 3}  # fmt: skip
#: Ways to break ties between equal-objective allocations (module notes, step 5).
TIE_BREAKS = ("later", "previous", "none")
#: The largest objective credit a tie-break gives one job: summed over a round's jobs far below
#: the coefficients' 0.01 resolution, so it only decides between equal allocations, and far
#: above the solve's 1e-9 relative gap, so the solver sees it.
TIE_CREDIT = 1e-5
#: The goodput Sia gives configurations a job cannot use (``ZERO_ALLOC_GAIN``).
ZERO_GAIN = np.float32(0.0001)


def _penalty(name: str) -> float:
    return next((v for k, v in RESTART_PENALTIES.items() if k in name), 30.0)


class SiaBatcher:
    """A job's per-type profiles, fitted models and batch choice (module notes)."""

    def __init__(self, apps: Mapping[str, HeteroApp], tol: float | None = 1e-5) -> None:
        self.apps = apps
        self.tol = tol
        self.profiles: dict[str, dict[tuple[int, int, int], tuple[float, float]]] = {
            g: {} for g in apps
        }
        self.params: dict[str, ThroughputParams | None] = dict.fromkeys(apps)
        self.stats: GradientStats | None = None

    def observe(
        self,
        gpu_type: str,
        placement: tuple[int, ...],
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        stats: GradientStats,
    ) -> None:
        """Take the statistics; profile a new configuration and refit that type's model."""
        self.stats = stats
        prof = self.profiles[gpu_type]
        key = (len(placement), sum(placement), atomic_bsz)
        if key in prof:
            return
        prof[key] = (step_time, sync_time)
        keys, times = list(prof), list(prof.values())
        data = StepMeasurements.of([k[0] for k in keys], [k[1] for k in keys],
                                   [k[2] for k in keys], [t[0] - t[1] for t in times],
                                   [t[0] for t in times])  # fmt: skip
        self.params[gpu_type] = fit_throughput(data, tol=self.tol)

    def model(self, gpu_type: str) -> GoodputModel | None:
        """The goodput model on ``gpu_type``, once the job has run there."""
        params = self.params.get(gpu_type)
        if params is None or self.stats is None:
            return None
        return GoodputModel(params, self.stats, self.apps[gpu_type].limits.init_batch_size)

    def max_profiled_replicas(self, gpu_type: str) -> int:
        """Most GPUs among the configurations profiled on ``gpu_type`` (0 if none)."""
        return max((k[1] for k in self.profiles[gpu_type]), default=0)

    def choose(self, app: HeteroApp, placement: tuple[int, ...]) -> tuple[int, int]:
        """``(m, s)`` on ``placement`` (module notes, Sia's ``update_local_bsz``)."""
        k = sum(placement)
        lim = app.limits
        model = self.model(app.gpu_type)
        if model is None:
            return fixed_split(app, placement, max(lim.init_batch_size, lim.min_local_bsz * k))
        bound = replace(lim, max_local_bsz=max_local_bsz(app, placement))
        choice = best_batch(model, bound, len(placement), k)
        atomic, accum = choice.atomic_bsz, choice.accum_steps
        measured = app.traces.num_replicas == k
        if np.any(measured):
            atomic = int(min(atomic, app.traces.local_bsz[measured].max()))
        return min(atomic, int(lim.max_batch_size / (k * (accum + 1)))), accum


def place_fast(
    gpus_per_node: int, num_nodes: int, wants: list[tuple[str, int]]
) -> dict[str, tuple[int, ...]]:
    """Sia's ``alloc_to_placement_fast`` on empty nodes: ``{job: node per GPU}`` (module notes)."""
    free = [gpus_per_node] * num_nodes
    ptr = 0
    out: dict[str, tuple[int, ...]] = {}
    for name, gpus in sorted(wants, key=lambda w: w[1], reverse=True):
        node, whole, got = ptr, gpus // gpus_per_node, []
        checked = 0
        while whole > 0 and checked < num_nodes:
            if free[node] == gpus_per_node:
                free[node] = 0
                gpus -= gpus_per_node
                got += [node] * gpus_per_node
                whole -= 1
            node = (node + 1) % num_nodes
            checked += 1
        while gpus > 0:
            take = min(gpus, free[node])
            gpus -= take
            free[node] -= take
            got += [node] * take
            node = (node + 1) % num_nodes
        out[name] = tuple(got)
        ptr = node
    return out


def _tie_broken(inst: SiaInstance, eps: float, later: float = 0.0) -> SiaInstance:
    """``inst`` with Sia's single-precision coefficients and tie-breaking credits.

    Sia's simulator scales, powers and rounds its goodput matrix in single precision
    (``np.float32``); the instance's :func:`~optsched.goodput.sia_instance.coefficients` works in
    double. The coefficients are computed here as Sia does, improved by ``eps`` on the option a
    job held and by ``later`` times the option's index over the job's option count, and handed
    back as goodputs :math:`a^{1/p}` of an instance that neither scales nor rounds them: the
    same objective up to the credits.
    """
    jobs = []
    p32 = np.float32(inst.p)
    for job in inst.jobs:
        g = np.array([o.goodput for o in job.options], dtype=np.float32)
        if job.previous is not None:
            keep = g[job.previous]
            g = g * np.float32(job.realloc_factor)
            g[job.previous] = keep
        a = np.round(np.power(g, p32), 2).astype(np.float64)
        a = np.minimum(a, inst.clip)
        if job.previous is not None:
            a[job.previous] += -eps if inst.p < 0 else eps
        # a smaller credit rising with the option's index: among still equal options, the later
        a += (-later if inst.p < 0 else later) * np.arange(a.size) / a.size
        goodput = np.power(a, 1.0 / inst.p)
        jobs.append(job.model_copy(update={"realloc_factor": 1.0, "options": tuple(
            o.model_copy(update={"goodput": float(v)}) for o, v in zip(job.options, goodput,
                                                                       strict=True))}))  # fmt: skip
    return inst.model_copy(update={"jobs": tuple(jobs), "decimals": None})


def _sia_coefficients(inst: SiaInstance) -> list[np.ndarray]:
    """Each job's coefficients as Sia's matrices hold them: single precision, no credits.

    The goodputs scaled by the re-allocation factor off the option held, powered, rounded to
    two decimals and clipped, all in ``np.float32`` (Sia's ``__power_up_speedup_matrix``).
    """
    p32 = np.float32(inst.p)
    out = []
    for job in inst.jobs:
        g = np.array([o.goodput for o in job.options], dtype=np.float32)
        if job.previous is not None:
            keep = g[job.previous]
            g = g * np.float32(job.realloc_factor)
            g[job.previous] = keep
        a = np.round(np.power(g, p32), 2)
        a[a > inst.clip] = np.float32(inst.clip)
        out.append(a)
    return out


def _xput(app: HeteroApp) -> float:
    one = app.traces.num_replicas == 1
    return float(app.traces.local_bsz[one].max() / app.traces.step_time[one].max())


class SiaHetero:
    """Sia's policy (module notes).

    ``solver`` is :func:`~optsched.goodput.sia_ilp.solve`'s (``"highs"``, ``"scip"``), or
    ``"cbc"``: the round stated and solved as Sia's policy does it, CBC through cvxpy on Sia's
    single-precision matrix at Sia's gap (:func:`optsched.goodput.sia_ilp.solve_cbc`); with it
    ``tie_break`` does not apply, CBC's own choices being the point.
    """

    name = "sia"

    def __init__(
        self,
        p: float = -0.5,
        lambda_n: float = 1.1,
        *,
        project_throughputs: bool = True,
        share_max_replicas: bool = True,
        solver: str = "highs",
        fit_tol: float | None = 1e-5,
        tie_break: str = "later",
    ) -> None:
        if tie_break not in TIE_BREAKS:
            raise InvalidInstanceError(
                "tie_break", f"must be one of {', '.join(TIE_BREAKS)}, got {tie_break!r}"
            )
        self.p, self.lambda_n, self.solver, self.fit_tol = p, lambda_n, solver, fit_tol
        self.tie_break = tie_break
        self.project = project_throughputs
        self.share = share_max_replicas or project_throughputs
        self.reset()

    def reset(self) -> None:
        """Forget the previous round's choices (a new run)."""
        self._prev: dict[str, int] = {}

    def batcher(self, spec: PolluxJob, apps: Mapping[str, HeteroApp]) -> SiaBatcher:
        """Each job's :class:`SiaBatcher`."""
        return SiaBatcher(apps, self.fit_tol)

    def _goodputs(self, view: HeteroJobView, g: GpuType, nodes: np.ndarray, gpus: np.ndarray,
                  types: tuple[GpuType, ...]) -> np.ndarray | None:  # fmt: skip
        agent = view.state.batcher
        assert isinstance(agent, SiaBatcher)
        src = g
        if agent.model(g.name) is None:
            if not self.project:
                return None
            src = next((h for h in types if agent.model(h.name) is not None), g)
            if src is g:
                return None
            nodes = np.ceil(gpus / src.gpus_per_node).astype(int)
        model = agent.model(src.name)
        assert model is not None
        app = view.apps[src.name]
        lim = replace(app.limits, max_batch_size=float(view.target_batch_size))
        out = np.array([best_batch(model, lim, int(n), int(k)).goodput
                        for n, k in zip(nodes, gpus, strict=True)], dtype=np.float32)  # fmt: skip
        if src is not g:
            out = out * (_xput(view.apps[g.name]) / _xput(app))
        return out

    def _row(self, view: HeteroJobView, types: tuple[GpuType, ...],
             configs: dict[str, list[tuple[int, int]]]) -> list[np.ndarray]:  # fmt: skip
        agent = view.state.batcher
        assert isinstance(agent, SiaBatcher)
        caps = {g.name: min(max(2 * agent.max_profiled_replicas(g.name), 1), 64,
                            int(view.apps[g.name].limits.max_batch_size
                                // view.apps[g.name].limits.min_local_bsz))
                for g in types}  # fmt: skip
        rows, empty = {}, set()
        for g in types:
            cfg = np.array(configs[g.name])
            rows[g.name] = np.full(len(cfg), ZERO_GAIN, dtype=np.float32)
            cap = max(caps.values()) if self.share else caps[g.name]
            valid = cfg[:, 1] <= max(1, cap)
            gp = self._goodputs(view, g, cfg[valid, 0], cfg[valid, 1], types)
            if gp is None or not np.any(valid):
                empty.add(g.name)
                continue
            rows[g.name][valid] = gp
        mins = [r[r > ZERO_GAIN].min() for n, r in rows.items() if n not in empty]
        scale = 1.0 / (min(mins) if mins else 1)
        out = []
        for g in types:
            r = rows[g.name] * np.float32(scale)
            if g.name in empty:
                r[np.array(configs[g.name])[:, 1] == 1] = 1
            out.append(np.where(r <= ZERO_GAIN, ZERO_GAIN, r).astype(np.float32))
        return out

    def allocate(
        self,
        jobs: Mapping[str, HeteroJobView],
        cluster: HeteroClusterView,
        previous: Mapping[str, HeteroAllocation],
    ) -> dict[str, HeteroAllocation]:
        """One round (module notes)."""
        from optsched.goodput.sia_ilp import solve

        types = cluster.gpu_types
        cap = MAX_PHYSICAL_NODES
        configs = {
            g.name: sia_configs(g.gpus_per_node, min(g.num_nodes, cap.get(g.name, g.num_nodes)))
            for g in types
        }
        index = [(g.name, n, k) for g in types for n, k in configs[g.name]]
        sia_jobs = []
        for name, view in jobs.items():
            goodputs = np.concatenate(self._row(view, types, configs))
            prev = self._prev.get(name)
            pen = _penalty(name)
            sia_jobs.append(SiaJob(
                name=name,
                options=tuple(SiaOption(gpu_type=t, gpus=k, nodes=n, goodput=float(v))
                              for (t, n, k), v in zip(index, goodputs, strict=True)),
                previous=prev,
                realloc_factor=realloc_factor(view.age, view.num_restarts, pen),
                pinned=prev is not None and view.state.restart_left > 0,
            ))  # fmt: skip
        inst = SiaInstance(gpu_types=tuple(SiaGpuType(name=g.name, gpus=g.num_gpus,
                                                      gpus_per_node=g.gpus_per_node)
                                           for g in types),
                           jobs=tuple(sia_jobs), p=self.p, lambda_n=self.lambda_n)  # fmt: skip
        if self.solver == "cbc":
            # Sia's own solve: its matrix and gap; CBC breaks the ties as in Sia's runs
            from optsched.goodput.sia_cbc import SIA_GAP, SIA_THREADS
            from optsched.goodput.sia_ilp import solve_cbc

            solution = solve_cbc(inst, coefficients_override=_sia_coefficients(inst),
                                 mip_gap=SIA_GAP, threads=SIA_THREADS,
                                 accept_feasible=True).solution  # fmt: skip
        else:
            if self.tie_break != "none":
                keep = TIE_CREDIT if self.tie_break == "previous" else 0.0
                later = TIE_CREDIT if self.tie_break == "later" else 0.0
                inst = _tie_broken(inst, keep, later)
            solution = solve(inst, solver=self.solver).solution
        assert solution is not None  # solve raises unless it proved an optimum
        choices = solution.choices()
        self._prev = {j.name: c for j, c in zip(sia_jobs, choices, strict=True) if c is not None}
        wants: dict[str, list[tuple[str, int]]] = {g.name: [] for g in types}
        for j, c in zip(sia_jobs, choices, strict=True):
            if c is not None:
                wants[index[c][0]].append((j.name, index[c][2]))
        out: dict[str, HeteroAllocation] = {}
        for g in types:
            for name, nodes in place_fast(g.gpus_per_node, g.num_nodes, wants[g.name]).items():
                out[name] = (g.name, nodes)
        return out
