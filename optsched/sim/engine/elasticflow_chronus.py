r"""ElasticFlow's Chronus baseline: leases, admission at arrival, a lease MILP every term.

Read from the Chronus simulator ElasticFlow ships (``chronus-scheduler``, its
``time-aware-with-lease`` scheduler as ``run_fig8b.sh`` and ``run_fig10.sh`` run it:
``--lease_term_interval=240 --mip_objective=adaptive --aggressive=True
--disable_turn_off=True``); none of it copied. Its clock counts seconds of the trace from 0,
and everything but a completion happens on the grid of :data:`LEASE_SECONDS` (its lease term,
and its ``BEST_SLOT``, at which arrivals and pending jobs are looked at): the decisions here
are at the trace times that are multiples of :math:`L = 240` s. A job runs on its requested
gang :math:`g_j`, always, at one second of *progress* per second run; its duration
:math:`D_j` is the trace's (the world's work over the gang's rate).

**Admission** (at the first boundary at or after the arrival, after that boundary's lease
decision). A job needs :math:`E_j = \lfloor D_j (1 + (1 + \log_2 g_j) \cdot 0.5 / L) \cdot
1.1 \rfloor` seconds (its ``estimate_duration``: the checkpoint-and-resume allowance and a
10 % margin), :math:`q_j = \lceil E_j / L \rceil` leases, within the
:math:`m_j = \lfloor d_j / L \rfloor - (k + 1)` leases that end by its deadline :math:`d_j`
(lease 0 is the next term: the current one is already handed out). It is *accepted* when the
greedy packing of ``batch_fast_check_if_packable`` fits it, together with the jobs accepted
earlier in the same event, into what the accepted jobs' cached plans leave
(:func:`greedy_packable`); an accepted job's deadline becomes :math:`\lfloor d_j / L \rfloor
L`, the end of its last lease. Otherwise it is *unaccepted* (its deadline unchanged); it may
still run on GPUs left over. A declined arrival stays in the boundary's packing with its
deadline moved to the least lease count that fits (its ``process_unaccepted_jobs`` searches
it, then truncates the lists under local names only, :meth:`ChronusLeases._relaxed`), so the
arrivals after it at the same boundary are packed around it (``hold_declined``).

**Every lease boundary** every running job is stopped; each accepted job's leases still needed
are :math:`\min(q_j, \lceil (E_j - p_j) / L \rceil)` for its progress :math:`p_j`, and the MILP
of ``MIPSolver.job_selection`` picks for every accepted job its leases among its first
:math:`m_j` (:func:`lease_plan`, on HiGHS through optsched's solver layer; ElasticFlow's is
python-mip with Gurobi, a 5 s limit): binary :math:`x_{jl}`,

.. math::

    \sum_{l < m_j} x_{jl} = q_j, \qquad \sum_j g_j x_{jl} \le N \ \ \forall l, \qquad
    \max\ \pm \sum_j g_j x_{j0},

with the sign :math:`+` (*maximize*) when no unaccepted job was counted at the last boundary
and the arrivals since, :math:`-` (*minimize*) otherwise (its ``adaptive`` objective). The jobs
with :math:`x_{j0} = 1` run this term; the rest of the solution is each job's cached plan,
against which arrivals are admitted. Then the jobs that cannot finish by their deadline any more
running from now (:math:`d_j < t + D_j - p_j`) become *lowest*, and the GPUs left go to the
jobs that are neither accepted nor waiting on a lease: the unaccepted ones first by least
remaining estimated GPU time :math:`(E_j - p_j) g_j`, earliest arrival on ties, then the lowest
ones by most negative slack :math:`(d_j - t - E_j + p_j) g_j`, each taken when its gang fits in
what is left. GPUs a completion frees stay idle until the next boundary (its ``filling_jobs``
is never reached: it runs when the clock is odd).

**Overhead**: a job that runs in a term without having run in the previous one, and every job
run on the GPUs left over (they are placed after the lease holders, which is a resume in its
count), loses :math:`0.5 (1 + \log_2 g_j)` s (its checkpoint and resume constants, 0.1 + 0.4).

**Met** (its ``summary_all_jobs``): completion by the job's deadline, the lease-end one for an
accepted job. The record's ``extra["met_by_lease_end"]`` lists those jobs.

Which of several optimal plans is kept is the solver's choice (ElasticFlow keeps its solver's
point): here ties of lease 0 go to the least slack :math:`m_j - q_j` (``least_slack``; a weight
under one GPU in all), a block's leases are its latest (``late``), and the solver is HiGHS or
SCIP (``solver``, the mechanism's ``chronus_solver``).

Not carried out: the rule that takes a job whose run time passed its estimate out of the MILP
(its overhead is at most 1.5 % of a lease, the estimate's margin 10 %); the solver's time
limit (the MILP is solved to optimality here); and the credit its progress accounting gives a
job the lease MILP resumes after a term spent waiting (``flush_lease_jobs`` keeps the
``last_check_time`` its pending flush set a term before, so ``update_job_time`` counts that term
as run): here a job's progress is what its GPUs ran.

The reduced MILP (:func:`lease_plan`): lease :math:`l` can only be used by the jobs with
:math:`m_j > l`; once their gangs sum to at most :math:`N` its capacity row is redundant, and
since that sum only falls with :math:`l`, the leases from the first such :math:`l^*` on need no
row. They are grouped into blocks between consecutive :math:`m_j`, with an integer count
:math:`0 \le y_{jb} \le |b|` of leases per job and block, which is exact (any count of distinct
leases of a block is feasible alone). Leases :math:`0 .. l^*-1` keep their binaries.
Complexity: :math:`J l^* + J B` variables, :math:`J + l^*` rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optsched.tolerances import FIT_TOL

if TYPE_CHECKING:
    from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism
    from optsched.sim.world.jobs import SimJob

__all__ = [
    "LEASE_SECONDS",
    "ChronusLeases",
    "chronus_leases",
    "estimate_seconds",
    "greedy_packable",
    "lease_plan",
    "resume_seconds",
]

#: Chronus's lease term as ElasticFlow runs it (``--lease_term_interval=240``), also its
#: ``BEST_SLOT``: the grid of every decision.
LEASE_SECONDS = 240
#: Its ``CHECKPOINT_OVER_HEAD + RESUME_OVER_HEAD`` (seconds, times ``1 + log2 g``).
_RESUME = 0.1 + 0.4


def resume_seconds(g: int) -> float:
    """Seconds a resume of a gang of ``g`` GPUs costs (module notes)."""
    return _RESUME * (1.0 + math.log2(g))


def estimate_seconds(duration: float, g: int, lease: int = LEASE_SECONDS) -> int:
    """Chronus's ``estimate_duration`` :math:`E_j` of a job (module notes)."""
    coef = 1 + (1 + math.log2(1.0 * g)) * _RESUME / lease
    return int(duration * coef * 1.1)


def size_bin(g: int) -> int:
    """Its ``convert_to_bin``: 3-4 GPUs count as 4, 5-7 as 8; others as they are."""
    if g > 8:
        return g
    if g in (5, 6, 7):
        return 8
    if g in (3, 4):
        return 4
    return g


def greedy_packable(items: Sequence[tuple[int, int, int]], free: Sequence[int], total: int) -> bool:
    r"""Its ``batch_fast_check_if_packable``: whether ``(size, leases, within)`` items fit.

    ``free[l]`` GPUs are left in lease ``l`` (``total`` past the list). Items are taken by size
    (largest first), then least slack :math:`m - q`, then latest :math:`m`; each takes the latest
    of its first :math:`m` leases with room, one lease at a time, until it has :math:`q`. False
    at the first item that does not get them. Complexity: :math:`O(I \log I + I H)`.
    """
    if not items:
        return True
    horizon = max(m for _, _, m in items)
    left = [free[i] if i < len(free) else total for i in range(horizon)]
    for size, need, within in sorted(items, key=lambda e: (-e[0], e[2] - e[1], -e[2])):
        got = 0
        ok = False  # as written: the count is compared after a lease is taken (need 0 fails)
        for i in range(within - 1, -1, -1):
            if left[i] >= size:
                got += 1
                left[i] -= size
            if got == need:
                ok = True
                break
        if not ok:
            return False
    return True


@dataclass
class LeasePlan:
    """A solved lease MILP: the jobs run in lease 0 and every job's leases (0/1 per lease)."""

    now: list[bool]
    leases: list[list[int]]
    variables: int = 0


def _blocks(m: Sequence[int], sizes: Sequence[int], total: int) -> tuple[int, list[int]]:
    """``l*`` and the block edges of the free suffix (module notes)."""
    horizon = max(m)
    order = sorted(range(len(m)), key=lambda j: m[j])
    demand = sum(sizes)
    first = horizon
    k = 0
    for lease in range(1, horizon):
        while k < len(order) and m[order[k]] <= lease:
            demand -= sizes[order[k]]
            k += 1
        if demand <= total:
            first = lease
            break
    edges = sorted({first, horizon, *(x for x in m if first < x < horizon)})
    return first, edges


def lease_plan(
    sizes: Sequence[int],
    need: Sequence[int],
    within: Sequence[int],
    total: int,
    maximize: bool,
    late: bool = True,
    least_slack: bool = True,
    solver: str = "highs",
) -> LeasePlan | None:
    """The lease MILP of the module notes, solved to optimality; ``None`` when infeasible.

    Within a block of the free suffix a job's count of leases is expanded onto the block's
    latest leases (any expansion is a solution; ElasticFlow keeps whichever point its solver
    returns). ``solver`` is a matrix backend of :func:`optsched.solvers.solve_matrix`
    (``"highs"`` or ``"scip"``): every backend returns an optimal plan, but which of several
    optimal plans (the knob that tells whether the solver's pick moves the met count).
    """
    import numpy as np
    import scipy.sparse as sp

    from optsched.errors import NotOptimalError
    from optsched.solvers import LinearProgram, solve_matrix

    n = len(sizes)
    if any(q > m for q, m in zip(need, within, strict=True)):
        return None
    first, edges = _blocks(within, sizes, total)
    cols: list[tuple[int, int, int, int]] = []  # (job, kind 0 lease/1 block, index, upper)
    for j in range(n):
        for lease in range(min(within[j], first)):
            cols.append((j, 0, lease, 1))
        for b in range(len(edges) - 1):
            if within[j] >= edges[b + 1]:
                cols.append((j, 1, b, edges[b + 1] - edges[b]))
    rows, cidx, vals = [], [], []
    for c, (j, kind, idx, _) in enumerate(cols):
        rows.append(j)
        cidx.append(c)
        vals.append(1.0)
        if kind == 0:
            rows.append(n + idx)
            cidx.append(c)
            vals.append(float(sizes[j]))
    a = sp.csc_array((vals, (rows, cidx)), shape=(n + first, len(cols)))
    lo = np.array([float(q) for q in need] + [-np.inf] * first)
    up = np.array([float(q) for q in need] + [float(total)] * first)
    sign = 1.0 if maximize else -1.0
    cost = [sign * sizes[j] if kind == 0 and idx == 0 else 0.0 for j, kind, idx, _ in cols]
    if least_slack:
        # among the optima, lease 0 to the jobs of least slack m_j - q_j: weights below
        # 1/(2n) each, so their sum never outweighs one GPU of the objective (integers)
        slack = [m - q for q, m in zip(need, within, strict=True)]
        top = max(slack) + 1
        for c, (j, kind, idx, _) in enumerate(cols):
            if kind == 0 and idx == 0:
                cost[c] += (1.0 - slack[j] / top) / (2.0 * n)
    lp = LinearProgram(
        cost,
        a,
        lo,
        up,
        0.0,
        [float(u) for *_, u in cols],
        sense="max",
        integrality=[True] * len(cols),
    )
    try:
        sol = solve_matrix(lp, solver=solver, mip_gap=0.0)
    except NotOptimalError:
        return None
    assert sol.x is not None
    x = np.rint(sol.x).astype(int)
    leases = [[0] * within[j] for j in range(n)]
    for c, (j, kind, idx, _) in enumerate(cols):
        if kind == 0:
            leases[j][idx] += int(x[c])
        else:
            begin, end = edges[idx], edges[idx + 1]
            span = range(end - int(x[c]), end) if late else range(begin, begin + int(x[c]))
            for lease in span:
                leases[j][lease] = 1
    return LeasePlan([row[0] == 1 if row else False for row in leases], leases, len(cols))


@dataclass
class _Job:
    duration: float
    estimate: int
    deadline: float  # world time; an accepted job's is its lease end
    state: str = "unaccepted"  # accepted | unaccepted | lowest
    need: int = 0
    cache: list[int] | None = None  # lease 0 = the next term
    progress: float = 0.0
    resumes: int = 0


@dataclass
class ChronusLeases:
    """ElasticFlow's Chronus across lease boundaries (module notes).

    ``origin`` is the trace time of the world's 0: the boundaries are the world times ``t``
    with ``t + origin`` a multiple of :data:`LEASE_SECONDS`.
    """

    gangs: Sequence[int]
    arrivals: Sequence[float]
    deadlines: Sequence[float]
    total: int
    duration: Callable[[int], float]
    origin: float = 0.0
    jobs: dict[int, _Job] = field(default_factory=dict)
    running: dict[int, int] = field(default_factory=dict)
    last: float = math.nan
    unaccepted_count: int = 0
    plans: int = 0
    infeasible: int = 0
    overhead: dict[int, float] = field(default_factory=dict)
    final_deadline: dict[int, float] = field(default_factory=dict)
    accepted: list[int] = field(default_factory=list)
    late: bool = True
    hold_declined: bool = True
    least_slack: bool = True
    solver: str = "highs"

    def lease_index(self, t: float) -> int:
        """The index :math:`k` of the lease that starts at world time ``t``."""
        return round((t + self.origin) / LEASE_SECONDS)

    def next_boundary(self, t: float) -> float:
        """The first boundary at or after world time ``t``."""
        return math.ceil((t + self.origin) / LEASE_SECONDS - 1e-9) * LEASE_SECONDS - self.origin

    def lease_end(self, d: float) -> float:
        """The end of the last lease that ends by world time ``d``."""
        return math.floor((d + self.origin) / LEASE_SECONDS + 1e-9) * LEASE_SECONDS - self.origin

    def decide(self, t: float, done: set[int], new: Sequence[int]) -> dict[int, int]:
        """The boundary at world time ``t``: job -> GPUs for the term (``overhead`` set)."""
        k = self.lease_index(t)
        for i, _ in self.running.items():
            if i not in done and i in self.jobs:
                self.jobs[i].progress += t - self.last
        for i in done:
            self.jobs.pop(i, None)
        if self.last == self.last and t - self.last > LEASE_SECONDS + 1e-6:
            self.unaccepted_count = 0  # idle boundaries in between recounted it: none active
        before = set(self.running) - done
        self.last = t
        holders = self._lease(k)
        self.unaccepted_count = sum(1 for j in self.jobs.values() if j.state == "unaccepted")
        self._admit(t, k, new)
        run = {i: self.gangs[i] for i in holders}
        self.overhead = {i: 0.0 if i in before else self._resume(i) for i in holders}
        free = self.total - sum(run.values())
        for i in self._fill_order(t, holders):
            if self.gangs[i] <= free:
                run[i] = self.gangs[i]
                free -= self.gangs[i]
                self.overhead[i] = self._resume(i)
        self.running = run
        return run

    def _resume(self, i: int) -> float:
        self.jobs[i].resumes += 1
        return resume_seconds(self.gangs[i])

    def _lease(self, k: int) -> list[int]:
        """The lease decision at boundary ``k``: the accepted jobs that hold lease 0."""
        ids = []
        for i, job in self.jobs.items():
            if job.state != "accepted":
                continue
            job.need = min(job.need, math.ceil((job.estimate - job.progress) / LEASE_SECONDS))
            if job.need > 0:
                ids.append(i)
        if not ids:
            return []
        within = [self._within(i, k) for i in ids]
        sizes = [size_bin(self.gangs[i]) for i in ids]
        for i, m in zip(ids, within, strict=True):
            if self.jobs[i].need > m:
                self.jobs[i].state = "unaccepted"  # cannot be kept (module notes)
                self.jobs[i].cache = None
                self.infeasible += 1
        keep = [n for n, i in enumerate(ids) if self.jobs[i].state == "accepted"]
        ids = [ids[n] for n in keep]
        if not ids:
            return []
        plan = lease_plan(
            [sizes[n] for n in keep],
            [self.jobs[i].need for i in ids],
            [within[n] for n in keep],
            self.total,
            maximize=self.unaccepted_count == 0,
            late=self.late,
            least_slack=self.least_slack,
            solver=self.solver,
        )
        self.plans += 1
        assert plan is not None, "a lease plan of accepted jobs is always feasible"
        holders = []
        for i, now, row in zip(ids, plan.now, plan.leases, strict=True):
            self.jobs[i].cache = row[1:]
            if now:
                holders.append(i)
                self.jobs[i].need -= 1
        return holders

    def _within(self, i: int, k: int) -> int:
        """:math:`m_j` at the boundary of lease ``k`` (lease 0 = lease ``k``)."""
        end = self.jobs[i].deadline + self.origin
        return math.floor(end / LEASE_SECONDS + 1e-9) - k

    def _admit(self, t: float, k: int, new: Sequence[int]) -> None:
        """Admission of the arrivals at the boundary of lease ``k`` (module notes)."""
        free = self._cached_free()
        items: list[tuple[int, int, int]] = []
        for i in new:
            g = self.gangs[i]
            d = self.duration(i)
            est = estimate_seconds(d, g)
            job = _Job(d, est, self.deadlines[i])
            self.jobs[i] = job
            need = math.ceil(est / LEASE_SECONDS)
            if not math.isfinite(self.deadlines[i]):
                self.unaccepted_count += 1  # no deadline: nothing to promise
                continue
            within = math.floor((self.deadlines[i] + self.origin) / LEASE_SECONDS + 1e-9) - (k + 1)
            trial = [*items, (size_bin(g), need, within)]
            if need <= within and greedy_packable(trial, free, self.total):
                items = trial
                job.state = "accepted"
                job.need = need
                job.deadline = self.lease_end(self.deadlines[i])
                self.final_deadline[i] = job.deadline
                self.accepted.append(i)
                continue
            self.unaccepted_count += 1
            if self.hold_declined:
                # its process_unaccepted_jobs searches the least lease count that would fit and
                # leaves the job in the event's lists with it (it rebinds the truncated lists
                # to local names only): later arrivals of the boundary are packed around it
                items = [*items, self._relaxed(items, (size_bin(g), need, within), free)]

    def _relaxed(
        self, items: list[tuple[int, int, int]], item: tuple[int, int, int], free: list[int]
    ) -> tuple[int, int, int]:
        """A declined arrival with its deadline moved to the least lease count that fits.

        Its binary search, read as written: from ``max(q, m)`` to ``max(m, cached leases) + q +
        1``, the greedy deciding; it ends at the upper end when nothing fits.
        """
        size, need, within = item
        left = max(need, within)
        right = max(left, *(m for _, _, m in items), len(free)) + need + 1
        while left < right:
            mid = left + (right - left) // 2
            if greedy_packable([*items, (size, need, mid)], free, self.total):
                right = mid
            else:
                left = mid + 1
        return size, need, right

    def _cached_free(self) -> list[int]:
        """GPUs left in each lease from the next on by the accepted jobs' cached plans."""
        free: list[int] = []
        for i, job in self.jobs.items():
            if job.state != "accepted" or job.cache is None:
                continue
            while len(free) < len(job.cache):
                free.append(self.total)
            for lease, used in enumerate(job.cache):
                free[lease] -= used * self.gangs[i]
        return free

    def _fill_order(self, t: float, holders: list[int]) -> list[int]:
        """The jobs that may take the GPUs left, in Chronus's order (module notes)."""
        held = set(holders)
        pool = []
        for i, job in self.jobs.items():
            if i in held:
                continue
            if job.state != "lowest" and job.deadline < t + job.duration - job.progress:
                job.state = "lowest"
            if job.state == "accepted":
                continue  # an accepted job waits for its lease
            g = self.gangs[i]
            if job.state == "unaccepted":
                key = (1, -(job.estimate - job.progress) * g)
            else:
                key = (0, -(job.deadline - t - job.estimate + job.progress) * g)
            pool.append((key, -self.arrivals[i], -i, i))
        pool.sort(reverse=True)
        return [i for *_, i in pool]

    def met(self, completion: Sequence[float]) -> list[int]:
        """The jobs Chronus counts as met: done by their (lease-end, if accepted) deadline."""
        out = []
        for i, c in enumerate(completion):
            d = self.final_deadline.get(i, self.deadlines[i])
            if c == c and c <= d + 1e-6:
                out.append(i)
        return out

    def extra(self, ids: Sequence[str], completion: Sequence[float]) -> dict[str, object]:
        """The record's extras: admissions, plans solved, and its own met count."""
        return {
            "chronus_accepted": [ids[i] for i in sorted(self.accepted)],
            "chronus_plans": self.plans,
            "chronus_dropped": self.infeasible,
            "met_by_lease_end": [ids[i] for i in self.met(completion)],
        }


def chronus_leases(
    jobs: Sequence[SimJob],
    rate: Callable[[int], float],
    total: int,
    opts: ElasticFlowMechanism,
) -> ChronusLeases:
    """Chronus's state for a run: ``rate(i)`` is job ``i``'s rate on its requested gang."""

    def duration(i: int) -> float:
        # the trace's duration, an integer there: the world's work over the rate, rounded
        # back to it when within a float's error (Chronus truncates its estimate)
        d = jobs[i].work / rate(i)
        return float(round(d)) if abs(d - round(d)) <= FIT_TOL * max(1.0, d) else d

    return ChronusLeases(
        [j.num_gpus for j in jobs],
        [j.arrival for j in jobs],
        [j.deadline if j.deadline == j.deadline else math.inf for j in jobs],
        total,
        duration,
        opts.clock_origin,
        solver=opts.chronus_solver,
    )
