r"""The baselines of the OASiS paper, on the same slot engine and Schedule type.

Bao et al. (INFOCOM 2018, §V-A) compare OASiS with four schedulers; each is reimplemented here
on :class:`~optsched.online.oasis.engine.SlotEngine`, so every one returns a
:class:`~optsched.online.oasis.schedule.Schedule` that the independent validator checks, with
progress
counted exactly as OASiS counts it (``work=``). Baselines decide slot by slot and do not plan
ahead; a job that has not finished by the horizon earns nothing and is reported as not
admitted (its deployments are dropped from the schedule and counted in
``stats["wasted_worker_slots"]``).

Common choices (the paper gives one sentence per baseline; these are ours):

* A slot with :math:`n` workers gets the fewest PSs :math:`m(n) = \lceil n b_i / B_i \rceil`
  (constraints (6)-(7)); workers and PSs are placed round-robin over the servers with room,
  as the paper says for FIFO, DRF and RRH.
* "Fixed" worker counts (FIFO, RRH) are drawn uniformly from ``[low, high] = [1, 30]`` per job
  with ``seed`` (the paper: "a value in [1, 30]"), then capped at :math:`N_i` and at what an
  empty cluster holds. ``workers=`` fixes one count for every job instead.
* In its last slot a job gets only the workers it still needs.

========= ================================================================================
policy    source and our reading
========= ================================================================================
FIFO      Hadoop/Spark default. Jobs start in arrival order with their fixed count; a job
          that does not fit blocks those behind it (no backfilling); a started job keeps its
          servers until it finishes (no preemption).
DRF       YARN/Mesos default (Ghodsi et al., NSDI 2011). Admits every job; at every arrival
          and completion, progressive filling gives one more worker (plus a PS when
          :math:`m(n)` grows) to the job with the smallest dominant share until nothing fits;
          shares are relative to the pool totals; counts are capped at what the job still
          needs in a slot. Between events placements are kept.
RRH       Risk-Reward Heuristic (Irwin, Grit, Chase, HPDC 2004), FirstReward-style. A job
          with fixed count :math:`n_i` and remaining time :math:`\rho_i` yields
          :math:`y_i = f_i(t + \rho_i - a_i)` if run now and loses
          :math:`\delta_i = y_i - f_i(t + \rho_i + 1 - a_i)` per slot of delay. Admission:
          with the expected wait :math:`\omega` (backlog of admitted work over what the
          cluster holds of the job), admit iff :math:`f_i(\omega + \rho_i) > 0` and
          :math:`f_i(\omega + \rho_i) \ge \theta f_i(\rho_i)` (``threshold`` :math:`\theta`).
          At every event, run jobs by decreasing reward
          :math:`(\alpha y_i - (1 - \alpha) \rho_i \sum_{j \ne i} \delta_j) / (\rho_i s_i)`
          (:math:`s_i` the dominant share of its deployment), pausing those that do not fit
          and dropping those that can no longer earn anything.
Dorm      Sun et al., "Dorm: dynamically partitioning cluster resources for distributed ML"
          (2017). Admits every job; at every event re-solves a MILP (through
          :func:`optsched.solvers.solve`) that places integer workers and PSs per server to
          maximise normalised utilisation, minus ``adjustment`` per worker changed since the
          previous allocation (adjustment overhead), with every job kept at least
          :math:`\lfloor (1-\theta) n_i^{DRF} \rfloor` workers (fairness within
          :math:`\theta` of DRF, which also makes the MILP feasible). A solve that stops at its
          time limit with an incumbent uses it (counted in ``stats``); without one, the DRF
          allocation is used (counted too).
========= ================================================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.online.oasis.engine import (
    OnlineRun,
    SlotEngine,
    SlotPlacement,
    check_work_mode,
)
from optsched.online.oasis.instance import OasisInstance
from optsched.solvers.result import TerminationCondition

__all__ = ["DRF", "FIFO", "RRH", "DormLike", "baseline_algorithms", "drf_allocation"]


def _fixed_counts(
    engine: SlotEngine, workers: int | None, low: int, high: int, seed: int
) -> list[int]:
    """Per-job fixed worker counts (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(engine.instance.n_jobs):
        n = workers if workers is not None else int(rng.integers(low, high + 1))
        out.append(max(0, min(n, engine.max_fit(i))))
    return out


def _check_seed(seed: int) -> None:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InvalidInstanceError("seed", f"must be an integer >= 0, got {seed!r}")


def _check_range(low: int, high: int, workers: int | None) -> None:
    if workers is not None and workers < 1:
        raise InvalidInstanceError("workers", f"must be >= 1, got {workers}")
    if not 1 <= low <= high:
        raise InvalidInstanceError("low", f"need 1 <= low <= high, got low={low}, high={high}")


def _dominant_share(engine: SlotEngine, i: int, n: int, m: int) -> float:
    inst = engine.instance
    tw = inst.worker_capacity.sum(axis=0)
    tp = inst.ps_capacity.sum(axis=0)
    share = 0.0
    for demand, total, count in ((inst.worker_demand[i], tw, n), (inst.ps_demand[i], tp, m)):
        pos = total > 0
        if pos.any():
            share = max(share, float(np.max(count * demand[pos] / total[pos])))
    return share


# ------------------------------------------------------------------------------------------
# FIFO
# ------------------------------------------------------------------------------------------


class _FifoPolicy:
    def __init__(self, counts: list[int]) -> None:
        self.counts = counts
        self.started: list[int] = []

    def admit(self, engine: SlotEngine, t: int, i: int) -> bool:
        return True

    def allocate(self, engine: SlotEngine, t: int, arrivals: Sequence[int], event: bool) -> None:
        for i in list(self.started):
            if i in engine.active:
                engine.assign(i, t, engine.previous[i])
        for i in engine.active:
            if i in self.started:
                continue
            if self.counts[i] <= 0 or engine.assign(i, t, self.counts[i], exact=True) is None:
                break  # strict FIFO: the head of the queue blocks the rest
            self.started.append(i)


class FIFO:
    """First-in first-out with fixed worker counts (Hadoop/Spark default).

    Parameters
    ----------
    workers : int, optional
        One fixed count for every job; default: drawn per job from ``[low, high]``.
    low, high : int, default 1, 30
        Range of the drawn counts (the paper's [1, 30]).
    seed : int, default 0
    work : {"chunks", "worker-slots"}, default "chunks"
    """

    name = "fifo"

    def __init__(
        self,
        workers: int | None = None,
        *,
        low: int = 1,
        high: int = 30,
        seed: int = 0,
        work: str = "chunks",
    ) -> None:
        _check_range(low, high, workers)
        _check_seed(seed)
        self.workers, self.low, self.high, self.seed = workers, low, high, seed
        self.work = check_work_mode(work)

    def run(self, instance: OasisInstance) -> OnlineRun:
        """Simulate FIFO on ``instance``."""
        engine = SlotEngine(instance, self.work)
        counts = _fixed_counts(engine, self.workers, self.low, self.high, self.seed)
        return engine.run(_FifoPolicy(counts), self.name)


# ------------------------------------------------------------------------------------------
# DRF
# ------------------------------------------------------------------------------------------


def drf_allocation(engine: SlotEngine, t: int, jobs: Sequence[int]) -> dict[int, SlotPlacement]:
    """Dominant-resource fair allocation of slot ``t`` by progressive filling.

    One worker at a time (and one more PS whenever :math:`m(n)` grows) goes to the job with the
    smallest dominant share (ties: lower index) among those that can still grow; workers go to
    the next worker server with room in round-robin order, PSs likewise. A job stops growing at
    :math:`N_i`, at the workers it still needs, or when nothing more fits. Nothing is committed.

    Returns
    -------
    dict
        Job -> placement (jobs that got nothing are left out).
    """
    inst = engine.instance
    wfree = inst.worker_capacity - engine.state.worker_used[t]
    pfree = inst.ps_capacity - engine.state.ps_used[t]
    H, K = wfree.shape[0], pfree.shape[0]
    n = dict.fromkeys(jobs, 0)
    wplace: dict[int, dict[int, int]] = {i: {} for i in jobs}
    pplace: dict[int, dict[int, int]] = {i: {} for i in jobs}
    cap = {
        i: min(engine.units[i].max_workers, engine.units[i].workers_for(engine.remaining(i)))
        for i in jobs
    }
    growing = {i for i in jobs if cap[i] > 0}
    share = dict.fromkeys(jobs, 0.0)
    wptr = pptr = 0
    tol = 1e-9

    def find(free: np.ndarray, demand: np.ndarray, start: int, size: int) -> int:
        for step in range(size):
            s = (start + step) % size
            if np.all(free[s] + tol * np.maximum(1.0, np.abs(free[s])) >= demand):
                return s
        return -1

    while growing:
        i = min(growing, key=lambda j: (share[j], j))
        u = engine.units[i]
        h = find(wfree, inst.worker_demand[i], wptr, H)
        extra_ps = int(u.ps_needed[n[i] + 1] - u.ps_needed[n[i]])
        k = find(pfree, inst.ps_demand[i], pptr, K) if extra_ps > 0 else -2
        if h < 0 or k == -1:
            growing.discard(i)
            continue
        wfree[h] -= inst.worker_demand[i]
        wplace[i][h] = wplace[i].get(h, 0) + 1
        wptr = (h + 1) % H
        if k >= 0:
            pfree[k] -= inst.ps_demand[i]
            pplace[i][k] = pplace[i].get(k, 0) + 1
            pptr = (k + 1) % K
        n[i] += 1
        share[i] = _dominant_share(engine, i, n[i], int(u.ps_needed[n[i]]))
        if n[i] >= cap[i]:
            growing.discard(i)
    return {
        i: SlotPlacement(tuple(sorted(wplace[i].items())), tuple(sorted(pplace[i].items())))
        for i in jobs
        if n[i] > 0
    }


class _DrfPolicy:
    def __init__(self) -> None:
        self.plan: dict[int, SlotPlacement] = {}

    def admit(self, engine: SlotEngine, t: int, i: int) -> bool:
        return True

    def allocate(self, engine: SlotEngine, t: int, arrivals: Sequence[int], event: bool) -> None:
        if event or not self.plan:
            self.plan = drf_allocation(engine, t, list(engine.active))
        for i, p in self.plan.items():
            engine.assign(i, t, p)


class DRF:
    """Dominant Resource Fairness, recomputed at arrivals and completions (YARN/Mesos).

    Parameters
    ----------
    work : {"chunks", "worker-slots"}, default "chunks"
    """

    name = "drf"

    def __init__(self, *, work: str = "chunks") -> None:
        self.work = check_work_mode(work)

    def run(self, instance: OasisInstance) -> OnlineRun:
        """Simulate DRF on ``instance``."""
        return SlotEngine(instance, self.work).run(_DrfPolicy(), self.name)


# ------------------------------------------------------------------------------------------
# RRH
# ------------------------------------------------------------------------------------------


class _RrhPolicy:
    def __init__(self, counts: list[int], alpha: float, threshold: float) -> None:
        self.counts = counts
        self.alpha = alpha
        self.threshold = threshold
        self.plan: dict[int, SlotPlacement] = {}
        self.dropped: set[int] = set()

    def _f(self, engine: SlotEngine, i: int, duration: int) -> float:
        return engine.instance.jobs[i].utility(float(duration))

    def admit(self, engine: SlotEngine, t: int, i: int) -> bool:
        n = self.counts[i]
        rho = engine.slots_needed(i, n) if n > 0 else None
        if rho is None:
            return False
        backlog = 0
        for j in engine.active:
            rj = engine.slots_needed(j, self.counts[j])
            if rj is not None and j not in self.dropped:
                backlog += rj * self.counts[j]
        wait = backlog // max(1, engine.max_fit(i))
        if t + wait + rho > engine.instance.horizon:
            return False
        expected = self._f(engine, i, wait + rho)
        return expected > 0 and expected >= self.threshold * self._f(engine, i, rho)

    def allocate(self, engine: SlotEngine, t: int, arrivals: Sequence[int], event: bool) -> None:
        if event or not self.plan:
            self.plan = {}
            T = engine.instance.horizon
            info = {}
            for i in engine.active:
                if i in self.dropped:
                    continue
                rho = engine.slots_needed(i, self.counts[i])
                a = engine.instance.jobs[i].arrival
                if rho is None or t + rho > T or self._f(engine, i, t + rho - a) <= 0:
                    self.dropped.add(i)  # can no longer earn anything
                    continue
                y = self._f(engine, i, t + rho - a)
                late = self._f(engine, i, t + rho + 1 - a) if t + rho + 1 <= T else 0.0
                n = self.counts[i]
                share = _dominant_share(engine, i, n, int(engine.units[i].ps_needed[n]))
                info[i] = (rho, y, y - late, max(share, 1e-12))
            total_decay = sum(v[2] for v in info.values())
            score = {
                i: (self.alpha * y - (1 - self.alpha) * rho * (total_decay - d)) / (rho * s)
                for i, (rho, y, d, s) in info.items()
            }
            for i in sorted(info, key=lambda j: (-score[j], j)):
                p = engine.assign(i, t, self.counts[i], exact=True)
                if p is not None:
                    self.plan[i] = p
            return
        for i, p in self.plan.items():
            engine.assign(i, t, p)


class RRH:
    """Risk-Reward Heuristic (Irwin et al., HPDC 2004): value-based admission and run/pause.

    Parameters
    ----------
    workers : int, optional
        One fixed count for every job; default drawn per job from ``[low, high]``.
    low, high : int, default 1, 30
    alpha : float, default 0.5
        Weight of a job's own yield against the delay it imposes on the others (FirstReward).
    threshold : float, default 0.1
        Admit only if the utility expected after the estimated wait is at least this fraction
        of the undelayed utility.
    seed : int, default 0
    work : {"chunks", "worker-slots"}, default "chunks"
    """

    name = "rrh"

    def __init__(
        self,
        workers: int | None = None,
        *,
        low: int = 1,
        high: int = 30,
        alpha: float = 0.5,
        threshold: float = 0.1,
        seed: int = 0,
        work: str = "chunks",
    ) -> None:
        _check_range(low, high, workers)
        _check_seed(seed)
        if not 0 <= alpha <= 1:
            raise InvalidInstanceError("alpha", f"must be in [0, 1], got {alpha}")
        if not 0 <= threshold <= 1:
            raise InvalidInstanceError("threshold", f"must be in [0, 1], got {threshold}")
        self.workers, self.low, self.high, self.seed = workers, low, high, seed
        self.alpha, self.threshold = alpha, threshold
        self.work = check_work_mode(work)

    def run(self, instance: OasisInstance) -> OnlineRun:
        """Simulate RRH on ``instance``."""
        engine = SlotEngine(instance, self.work)
        counts = _fixed_counts(engine, self.workers, self.low, self.high, self.seed)
        policy = _RrhPolicy(counts, self.alpha, self.threshold)
        run = engine.run(policy, self.name)
        run.stats["dropped"] = len(policy.dropped)
        return run


# ------------------------------------------------------------------------------------------
# Dorm-like
# ------------------------------------------------------------------------------------------


def _node_limit_option(solver: str, nodes: int) -> dict[str, Any]:
    """The solver's own name for a branch-and-bound node budget (none for other solvers)."""
    if solver == "highs":
        return {"mip_max_nodes": nodes}
    if solver == "scip":
        return {"limits/nodes": nodes}
    return {}


class _DormPolicy:
    def __init__(
        self,
        solver: str,
        time_limit: float,
        mip_gap: float,
        theta: float,
        adjustment: float,
        node_limit: int,
    ) -> None:
        self.solver = solver
        self.mip_gap = mip_gap
        self.time_limit = time_limit
        self.theta = theta
        self.adjustment = adjustment
        self.node_limit = node_limit
        self.plan: dict[int, SlotPlacement] = {}
        self.counts: dict[int, int] = {}
        self.stats: dict[str, float] = {
            "solves": 0,
            "not_optimal": 0,
            "fallbacks": 0,
            "time_limited": 0,
            "placement_shortfalls": 0,
            "solve_seconds": 0.0,
        }

    def admit(self, engine: SlotEngine, t: int, i: int) -> bool:
        return True

    def allocate(self, engine: SlotEngine, t: int, arrivals: Sequence[int], event: bool) -> None:
        if event or not self.plan:
            jobs = list(engine.active)
            drf = drf_allocation(engine, t, jobs)
            # _solve assigns its own placements for this slot (fallback: the DRF plan).
            self.plan = self._solve(engine, t, jobs, drf) if jobs else {}
            self.counts = {i: p.n_workers for i, p in self.plan.items()}
        for i, p in self.plan.items():
            if i not in engine.current:
                engine.assign(i, t, p)

    def _solve(
        self, engine: SlotEngine, t: int, jobs: list[int], drf: dict[int, SlotPlacement]
    ) -> dict[int, SlotPlacement]:
        import pyomo.environ as pyo

        from optsched.solvers import solve

        inst = engine.instance
        R = len(inst.resources)
        wfree = (inst.worker_capacity - engine.state.worker_used[t]).sum(axis=0)
        pfree = (inst.ps_capacity - engine.state.ps_used[t]).sum(axis=0)
        tw = inst.worker_capacity.sum(axis=0)
        tp = inst.ps_capacity.sum(axis=0)
        need = {
            i: min(engine.units[i].max_workers, engine.units[i].workers_for(engine.remaining(i)))
            for i in jobs
        }
        jb = {i: inst.jobs[i] for i in jobs}
        m = pyo.ConcreteModel(name="dorm")
        m.J = pyo.Set(initialize=jobs)
        m.n = pyo.Var(m.J, domain=pyo.NonNegativeIntegers, bounds=lambda _m, i: (0, need[i]))
        m.m = pyo.Var(m.J, domain=pyo.NonNegativeIntegers, bounds=lambda _m, i: (0, need[i]))
        m.d = pyo.Var(m.J, domain=pyo.NonNegativeReals)
        m.bandwidth = pyo.Constraint(m.J, rule=lambda _m, i: jb[i].b * m.n[i] <= jb[i].B * m.m[i])
        m.count = pyo.Constraint(m.J, rule=lambda _m, i: m.m[i] <= m.n[i])
        floor_n = {
            i: min(need[i], math.floor((1 - self.theta) * (drf[i].n_workers if i in drf else 0)))
            for i in jobs
        }
        m.fair = pyo.Constraint(m.J, rule=lambda _m, i: m.n[i] >= floor_n[i])
        prev = {i: self.counts.get(i, 0) for i in jobs}
        m.adj_up = pyo.Constraint(m.J, rule=lambda _m, i: m.d[i] >= m.n[i] - prev[i])
        m.adj_down = pyo.Constraint(m.J, rule=lambda _m, i: m.d[i] >= prev[i] - m.n[i])
        m.capacity = pyo.ConstraintList()
        for r in range(R):
            wt = [
                (float(inst.worker_demand[i, r]), m.n[i])
                for i in jobs
                if inst.worker_demand[i, r] > 0
            ]
            if wt:
                m.capacity.add(sum(c * v for c, v in wt) <= float(wfree[r]))
            pt = [(float(inst.ps_demand[i, r]), m.m[i]) for i in jobs if inst.ps_demand[i, r] > 0]
            if pt:
                m.capacity.add(sum(c * v for c, v in pt) <= float(pfree[r]))
        util_w = {
            i: float(sum(inst.worker_demand[i, r] / tw[r] for r in range(R) if tw[r] > 0))
            for i in jobs
        }
        util_p = {
            i: float(sum(inst.ps_demand[i, r] / tp[r] for r in range(R) if tp[r] > 0)) for i in jobs
        }
        m.obj = pyo.Objective(
            expr=sum(
                util_w[i] * m.n[i] + util_p[i] * m.m[i] - self.adjustment * m.d[i] for i in jobs
            ),
            sense=pyo.maximize,
        )
        self.stats["solves"] += 1
        try:
            res = solve(
                m,
                self.solver,
                time_limit=self.time_limit,
                mip_gap=self.mip_gap,
                accept_feasible=True,
                options=_node_limit_option(self.solver, self.node_limit),
            )
        except NotOptimalError as exc:
            self.stats["fallbacks"] += 1
            self.stats["solve_seconds"] += exc.result.solve_seconds
            self.stats["time_limited"] += exc.result.termination is TerminationCondition.TIME_LIMIT
            return drf
        self.stats["solve_seconds"] += res.solve_seconds
        self.stats["time_limited"] += res.termination is TerminationCondition.TIME_LIMIT
        if res.status.value != "optimal":
            self.stats["not_optimal"] += 1
        counts = {i: round(m.n[i].value or 0) for i in jobs}
        # Place largest worker demands first (first-fit decreasing keeps fragmentation low); a
        # count that does not fit server by server shrinks to what does.
        order = sorted(jobs, key=lambda i: (-float(inst.worker_demand[i].sum()), i))
        plan: dict[int, SlotPlacement] = {}
        for i in order:
            if counts[i] > 0:
                p = engine.assign(i, t, counts[i])
                if p is not None:
                    plan[i] = p
        if sum(p.n_workers for p in plan.values()) < sum(counts.values()):
            self.stats["placement_shortfalls"] += 1
        return plan


class DormLike:
    r"""Dorm-like utilisation MILP re-solved at every arrival and completion.

    Parameters
    ----------
    solver : str, default "highs"
        MILP solver (through :func:`optsched.solvers.solve`).
    node_limit : int, default 1000
        Branch-and-bound nodes per re-solve (HiGHS's ``mip_max_nodes``, SCIP's
        ``limits/nodes``); an incumbent found by then is used (and counted in
        ``stats["not_optimal"]``). A node budget, unlike a wall-clock one, makes the policy's
        decisions, and so its runs, the same on every machine.
    time_limit : float, default 60.0
        Seconds per re-solve, a safety cap only: a re-solve that reaches it is counted in
        ``stats["time_limited"]``, and a run with any such re-solve depends on the machine's
        speed.
    mip_gap : float, default 0.01
        Relative gap at which a re-solve stops: the policy is a heuristic, and the placement
        MILP has many symmetric optima that take long to prove.
    theta : float, default 0.2
        Fairness slack: every job keeps at least :math:`\lfloor (1-\theta) n^{DRF} \rfloor`
        workers.
    adjustment : float, default 1e-3
        Objective penalty per worker added or removed since the previous allocation.
    work : {"chunks", "worker-slots"}, default "chunks"
    """

    name = "dorm"

    def __init__(
        self,
        *,
        solver: str = "highs",
        node_limit: int = 1000,
        time_limit: float = 60.0,
        mip_gap: float = 0.01,
        theta: float = 0.2,
        adjustment: float = 1e-3,
        work: str = "chunks",
    ) -> None:
        if not (math.isfinite(time_limit) and time_limit > 0):
            raise InvalidInstanceError("time_limit", f"must be finite and > 0, got {time_limit}")
        if isinstance(node_limit, bool) or not isinstance(node_limit, int) or node_limit < 1:
            raise InvalidInstanceError("node_limit", f"must be an integer >= 1, got {node_limit!r}")
        if not 0 <= theta <= 1:
            raise InvalidInstanceError("theta", f"must be in [0, 1], got {theta}")
        if not (math.isfinite(adjustment) and adjustment >= 0):
            raise InvalidInstanceError("adjustment", f"must be >= 0, got {adjustment}")
        if not (math.isfinite(mip_gap) and mip_gap >= 0):
            raise InvalidInstanceError("mip_gap", f"must be >= 0, got {mip_gap}")
        self.solver, self.time_limit, self.mip_gap = solver, time_limit, mip_gap
        self.node_limit = node_limit
        self.theta, self.adjustment = theta, adjustment
        self.work = check_work_mode(work)

    def run(self, instance: OasisInstance) -> OnlineRun:
        """Simulate the Dorm-like policy on ``instance``."""
        policy = _DormPolicy(
            self.solver, self.time_limit, self.mip_gap, self.theta, self.adjustment, self.node_limit
        )
        run = SlotEngine(instance, self.work).run(policy, self.name)
        run.stats.update(policy.stats)
        return run


def baseline_algorithms(
    *, seed: int = 0, work: str = "chunks", dorm_time_limit: float = 60.0
) -> list[Any]:
    """One instance of every baseline with default settings: FIFO, DRF, RRH, Dorm-like."""
    return [
        FIFO(seed=seed, work=work),
        DRF(work=work),
        RRH(seed=seed, work=work),
        DormLike(time_limit=dorm_time_limit, work=work),
    ]
