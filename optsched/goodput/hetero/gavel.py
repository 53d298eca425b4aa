r"""Gavel as Sia's simulator runs it: Gavel's shares turned into rounds of gangs.

Sia's artifact runs Gavel (``sia-simulator/gavel.py``, 360-s rounds) with fixed jobs: each job's
gang of :math:`s_m` GPUs (its owner's ``num_replicas``) on one GPU type at its owner's global
batch, under the Gavel policy named by ``simulator_config.gavel_default_policy``
(``max_sum_throughput_perf`` in its runs; :data:`GAVEL_POLICIES` here). Every round:

1. **Throughputs.** :math:`T_{mj}` is the job's iterations per second on type :math:`j`, its
   gang packed onto as few nodes as it fits, at the batch split Gavel's estimate uses (that of
   :func:`~optsched.goodput.hetero.apps.fixed_split` without the memory cap, and at least one
   accumulation step on a single GPU whatever the batch), times the job type's calibration
   factor: :math:`1/(T_\mathrm{step} + s(T_\mathrm{step} - T_\mathrm{sync}))`, the step times
   in the artifact's arithmetic (:func:`gavel_step_time`).
2. **Shares**, by the policy (weights all 1, as Sia's wrapper passes them):

   * ``max_sum_throughput_perf``: :math:`X` solves :math:`\max \sum_{m,j} T_{mj} X_{mj}` s.t.
     :math:`X \ge 0`, :math:`\sum_j X_{mj} \le 1`, :math:`\sum_m s_m X_{mj} \le n_j`, as an
     interior-point solver returns it (the analytic centre of the optimal face, which splits
     the share of identical jobs evenly; Sia's run uses ECOS through cvxpy), rounded to 5
     decimals (as Gavel's policy rounds it). ``solver="clarabel"`` (default) states the same
     inequalities to Clarabel
     (:func:`~optsched.allocation.gavel.interior.interior_allocation`); ``"ecos"`` asks cvxpy's
     ECOS as the artifact does (the ``bench`` extra); ``"highs"`` takes HiGHS's vertex optimum
     instead (the knob that shows what the centre matters).
   * ``max_min_fairness_perf`` (Gavel's heterogeneity-aware LAS): :math:`X` maximises
     :math:`\min_m (s_m/p_m) \sum_j T_{mj} X_{mj}` under the same constraints, :math:`p_m` the
     job's throughput under the equal proportional share (:func:`max_min_fairness_shares`),
     *unrounded* (Gavel's policy only clips it). Only the minimum is optimised, so the point
     is the solver's own: ECOS (default, as Sia's run) stops short of the analytic centre
     (Clarabel's point differs by up to 0.08 in the artifact's workload), and identical jobs'
     shares then differ in their last bits, which decide the walk's exact ties (step 4). The
     ECOS point is reproduced bit for bit when its input is: the problem stated to cvxpy as
     Gavel states it, jobs and types by name, :math:`p_m` and the coefficients in Gavel's
     order of operations, and :math:`T` from the traces as Sia's pandas reads them.

   The shares are clipped to :math:`[0, 1]`.
3. **Priorities.** Each job's time on each type starts at half a round when it arrives, and
   the type's total with it; a job's priority on type :math:`j` is :math:`X_{mj}` over its
   fraction of the type's time so far (time received, never reset, finished jobs kept).
4. **Gangs.** All (job, type) pairs sorted by priority, then share, descending (ties in type
   order, then workload order); each job is placed on the first type of its list that still
   has :math:`s_m` free GPUs.
5. **Workers.** Per type, jobs in decreasing gang size keep their previous workers when all are
   free; the others take free workers server by server in index order.

Cost per round: one LP of :math:`MK` variables (:math:`MK+1` and :math:`M` more rows for
max-min) plus :math:`O(MK \log(MK))` for the walk.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError, SolverUnavailableError
from optsched.goodput.hetero.apps import GpuType, max_local_bsz
from optsched.goodput.hetero.world import HeteroAllocation, HeteroClusterView, HeteroJobView
from optsched.goodput.progress import measured_step_time, normalize_placement
from optsched.goodput.traces import ModelTraces

__all__ = [
    "GAVEL_POLICIES",
    "GAVEL_SOLVERS",
    "SiaGavel",
    "gavel_step_time",
    "gavel_throughput",
    "max_min_fairness_shares",
    "max_sum_throughput_shares",
    "pandas_parsed",
]

#: Solvers of the shares LP (module notes).
GAVEL_SOLVERS = ("clarabel", "ecos", "highs")
#: Gavel's policies of the shares (module notes, step 2), by the names Sia's
#: ``simulator_config.gavel_default_policy`` takes.
GAVEL_POLICIES = ("max_sum_throughput_perf", "max_min_fairness_perf")


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
    step, sync = gavel_step_time(app.traces, placement, atomic)
    return 1 / (step + (step - sync) * accum) * app.calibration


def pandas_parsed(value: float) -> float:
    r"""``value``'s shortest decimal as pandas 1.x's C parser reads it (Sia's ``read_csv``).

    That parser (``precise_xstrtod``) keeps the first 17 significant digits of the mantissa
    *including leading zeros*, accumulates them as :math:`n \leftarrow 10n + d` in floating
    point and divides by :math:`10^k` for the :math:`k` decimals kept: not always the correctly
    rounded number (``0.057434022426605225`` reads as ``0.0574340224266052``; where leading
    zeros use up the 17 digits, thousands of units in the last place off). The traces' files
    hold the shortest decimals of their doubles, so ``repr`` gives the file's text. Checked
    against pandas 1.5.3 on 45,002 decimals (``tests/data/sia/pandas15-parsed.json`` keeps 202).
    """
    text = repr(float(value))
    if not math.isfinite(value) or "e" in text or "E" in text:
        return float(value)
    negative = text.startswith("-")
    whole, _, decimals = text.lstrip("-").partition(".")
    number, digits, exponent = 0.0, 0, 0
    for ch in whole:
        if digits < 17:
            number, digits = number * 10.0 + int(ch), digits + 1
        else:
            exponent += 1
    for ch in decimals[: max(0, 17 - digits)]:
        number, exponent = number * 10.0 + int(ch), exponent - 1
    number = number * float(10**exponent) if exponent >= 0 else number / float(10**-exponent)
    return -number if negative else number


#: Per traces object (by id, with a weak reference to check it): placement -> interpolator.
_EXACT: dict[int, tuple[Any, dict[str, Any]]] = {}


def gavel_step_time(
    traces: ModelTraces, placement: tuple[int, ...], local_bsz: float
) -> tuple[float, float]:
    r"""``(step_time, sync_time)`` as Sia's ``Application.get_throughput`` computes them.

    The numbers of :func:`~optsched.goodput.progress.measured_step_time`, in the artifact's
    arithmetic: a measured placement is interpolated in ``local_bsz`` by scipy's ``interp1d``
    (:math:`y_\ell + (y_h - y_\ell)/(x_h - x_\ell)\,(x - x_\ell)` on the interval whose
    *right* end is the first knot :math:`\ge x`), which at a knot can differ from
    ``numpy.interp``'s exact knot value in the last bit, through the measurements as Sia's
    pandas 1.x reads its CSV files (:func:`pandas_parsed`: 14,944 of the artifact's 21,638
    measured step and sync times read otherwise than correctly rounded, as optsched reads them
    elsewhere, by up to 1,778 units in the last place on the smallest sync times). Gavel's
    max-min shares are not rounded and break exact ties between identical jobs on such bits
    (module notes). Other placements are interpolated as ``measured_step_time`` does (from the
    correctly rounded values: the artifact's workload asks for none).
    """
    key = normalize_placement(placement)
    hit = _EXACT.get(id(traces))
    if hit is None or hit[0]() is not traces:
        hit = (weakref.ref(traces), {})
        _EXACT[id(traces)] = hit
    table = hit[1]
    if key not in table:
        rows = [i for i, p in enumerate(traces.placement) if p == key]
        table[key] = None
        if rows:
            from scipy.interpolate import interp1d

            step = [pandas_parsed(v) for v in traces.step_time[rows]]
            sync = [pandas_parsed(v) for v in traces.sync_time[rows]]
            table[key] = interp1d(traces.local_bsz[rows], np.array([step, sync]).T, axis=0)
    fn = table[key]
    if fn is None or not fn.x[0] <= local_bsz <= fn.x[-1]:
        return measured_step_time(traces, placement, local_bsz)
    out = fn(local_bsz)
    return float(out[0]), float(out[1])


def max_sum_throughput_shares(
    throughputs: np.ndarray, scale: np.ndarray, capacity: np.ndarray, solver: str = "clarabel"
) -> np.ndarray:
    """:math:`X` of step 2 (module notes) for jobs by row, types by column, unrounded."""
    if solver == "clarabel":
        return _interior(throughputs, scale, capacity, "max-sum-throughput-perf")
    if solver == "ecos":
        cp = _require_ecos()
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
    raise _bad_solver(solver)


def max_min_fairness_shares(
    throughputs: np.ndarray, scale: np.ndarray, capacity: np.ndarray, solver: str = "ecos"
) -> np.ndarray:
    r""":math:`X` of Gavel's heterogeneity-aware max-min fairness (LAS), unrounded.

    Jobs by row, types by column, every priority weight 1 (as Sia's wrapper passes them):

    .. math::

        \max_X \min_m \frac{s_m}{p_m} \sum_j T_{mj} X_{mj}
        \quad\text{s.t.}\quad X \ge 0,\ \sum_j X_{mj} \le 1,\ \sum_m s_m X_{mj} \le n_j,

    with :math:`p_m = \sum_j T_{mj} n_j / \sum_{j'} n_{j'}` the job's throughput under the equal
    proportional share (:func:`~optsched.allocation.gavel.shares.proportional_throughput`, here
    in Gavel's order of operations: :math:`(n_j/M)` over its row sum, then the row sums of the
    products; the bits matter to ECOS's point, hence to exact ties in the walk).
    Only the minimum is optimised, so the optimal face is wide and the returned point is the
    solver's: ``"ecos"`` states the problem as Gavel's policy does to cvxpy and ECOS (Sia's run;
    ECOS stops near, not at, the analytic centre); ``"clarabel"`` returns the analytic centre of
    the optimal face (:func:`~optsched.allocation.gavel.interior.interior_allocation`,
    ``"max-min-perf"``, which also holds a gang at 0 on a type with fewer GPUs than it needs,
    where Gavel's LP allows the fraction :math:`s_m X_{mj} \le n_j`); ``"highs"`` a vertex
    optimum.
    """
    if solver == "clarabel":
        return _interior(throughputs, scale, capacity, "max-min-perf")
    if solver not in GAVEL_SOLVERS:
        raise _bad_solver(solver)
    m, k = throughputs.shape
    # the objective's coefficients in Gavel's order of operations (T / p, then times s)
    share = capacity / m
    share = share / share.sum()
    p = np.multiply(throughputs, share[None, :]).sum(axis=1)
    sfa = np.repeat(scale[:, None].astype(float), k, axis=1)
    coef = np.multiply(throughputs * (1.0 / p)[:, None], sfa)
    if solver == "ecos":
        cp = _require_ecos()
        x = cp.Variable((m, k))
        cons = [x >= 0, cp.sum(cp.multiply(sfa, x), axis=0) <= capacity, cp.sum(x, axis=1) <= 1]
        cp.Problem(cp.Maximize(cp.min(cp.sum(cp.multiply(coef, x), axis=1))), cons).solve(
            solver="ECOS"
        )
        if x.value is None:
            raise InvalidInstanceError("throughputs", "ECOS returned no max-min shares")
        return np.asarray(x.value, dtype=np.float64)
    return _highs_max_min(coef, scale, capacity)


def _interior(throughputs: np.ndarray, scale: np.ndarray, capacity: np.ndarray,
              policy: str) -> np.ndarray:  # fmt: skip
    from optsched.allocation.gavel.instance import AllocationInstance, AllocationJob
    from optsched.allocation.gavel.interior import interior_allocation

    inst = AllocationInstance(
        gpu_types=tuple(f"t{k}" for k in range(len(capacity))),
        capacity=tuple(int(c) for c in capacity),
        jobs=tuple(AllocationJob(job_id=f"j{i}", throughput_steps_per_s=tuple(row),
                                 scale_factor=int(scale[i]))
                   for i, row in enumerate(throughputs.tolist())),
    )  # fmt: skip
    return interior_allocation(inst, policy)


def _highs_max_min(coef: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """HiGHS's vertex optimum of the max-min LP: ``max v`` s.t. ``v <= coef_m . X_m``."""
    from scipy.optimize import linprog

    m, k = coef.shape
    job_rows = np.kron(np.eye(m), np.ones(k))
    a = np.vstack([
        np.hstack([job_rows, np.zeros((m, 1))]),
        np.hstack([np.kron(scale[:, None].T, np.eye(k)), np.zeros((k, 1))]),
        np.hstack([-job_rows * coef.ravel()[None, :], np.ones((m, 1))]),
    ])  # fmt: skip
    b = np.concatenate([np.ones(m), capacity, np.zeros(m)])
    c = np.zeros(m * k + 1)
    c[-1] = -1.0
    bounds = [(0.0, None)] * (m * k) + [(None, None)]
    res = linprog(c, A_ub=a, b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        raise InvalidInstanceError(
            "throughputs", f"HiGHS did not solve the max-min LP: {res.message}"
        )
    return np.asarray(res.x[:-1], dtype=np.float64).reshape(m, k)


def _require_ecos() -> Any:
    """cvxpy, with ECOS among its solvers (the ``bench`` extra), or a typed error."""
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - cvxpy is a dependency
        raise SolverUnavailableError("solver 'ecos' needs cvxpy: pip install cvxpy") from exc
    if "ECOS" not in cp.installed_solvers():
        raise SolverUnavailableError("solver 'ecos' is not installed: pip install ecos")
    return cp


def _bad_solver(solver: str) -> InvalidInstanceError:
    return InvalidInstanceError(
        "solver", f"must be one of {', '.join(GAVEL_SOLVERS)}, got {solver!r}"
    )


class SiaGavel:
    """Gavel's rounds as Sia's simulator runs them (module notes), under one of Gavel's policies.

    Parameters
    ----------
    interval : float
        The round length (360 s in the paper's runs): a new job's initial time.
    solver : str, optional
        One of :data:`GAVEL_SOLVERS`. Default: ``"clarabel"`` for ``max_sum_throughput_perf``
        (its rounded shares are the analytic centre's), ``"ecos"`` for
        ``max_min_fairness_perf`` (its unrounded shares are the point ECOS stops at, which is
        not the centre: module notes).
    policy : str
        One of :data:`GAVEL_POLICIES` (Sia's ``simulator_config.gavel_default_policy``):
        ``"max_sum_throughput_perf"`` (the artifact's runs) or ``"max_min_fairness_perf"``
        (Gavel's heterogeneity-aware LAS, :func:`max_min_fairness_shares`).

    Raises
    ------
    InvalidInstanceError
        An unknown ``solver`` or ``policy`` (the field named).
    SolverUnavailableError
        ``solver="ecos"`` without ECOS installed (``pip install ecos``).
    """

    def __init__(
        self,
        interval: float = 360.0,
        solver: str | None = None,
        policy: str = "max_sum_throughput_perf",
    ) -> None:
        if policy not in GAVEL_POLICIES:
            raise InvalidInstanceError(
                "policy", f"must be one of {', '.join(GAVEL_POLICIES)}, got {policy!r}"
            )
        if solver is None:
            solver = "clarabel" if policy == "max_sum_throughput_perf" else "ecos"
        if solver not in GAVEL_SOLVERS:
            raise InvalidInstanceError("solver", f"must be one of {', '.join(GAVEL_SOLVERS)}")
        if solver == "ecos":
            _require_ecos()
        self.interval = float(interval)
        self.solver = solver
        self.policy = policy
        self.name = "gavel" if policy == "max_sum_throughput_perf" else f"gavel-{policy}"
        self.reset()

    def reset(self) -> None:
        """Forget every job (a new run)."""
        self._job_time: dict[str, dict[str, float]] = {}
        self._type_time: dict[str, float] = {}
        self._workers: dict[str, tuple[str, tuple[int, ...]]] = {}

    def _shares(self, jobs: Mapping[str, HeteroJobView], types: tuple[GpuType, ...]) -> np.ndarray:
        # Gavel's LP lists jobs and types by name: the analytic centre does not depend on the
        # order, the point ECOS stops at does (in its last digits)
        names = sorted(jobs)
        t = np.array([[gavel_throughput(jobs[n], g) for g in types] for n in names])
        sf = np.array([jobs[n].target_num_replicas for n in names], dtype=np.float64)
        cap = np.array([g.num_gpus for g in types], dtype=np.float64)
        if self.policy == "max_sum_throughput_perf":
            x = max_sum_throughput_shares(t, sf, cap, self.solver).round(decimals=5)
        else:  # Gavel's max-min policy returns its shares unrounded
            cols = sorted(range(len(types)), key=lambda k: types[k].name)
            x = np.empty_like(t)
            x[:, cols] = max_min_fairness_shares(t[:, cols], sf, cap[cols], self.solver)
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
