r"""The exact placement of one arriving job under the *true* group slowdown.

At a decision the cluster holds running jobs (:class:`~optsched.harmony.world.ClusterState`)
and the head job :math:`j` of type :math:`\tau` with :math:`W` workers (1 GPU, 2 CPUs) and
:math:`P` parameter servers (4 CPUs) is placed; nothing running moves. Its *true cost* is the
cluster's added slowdown, in units of the job's standalone iteration time:

.. math::

    f(x) = 1 + \sum_{i \in R \cup \{j\}} \big(\sigma_i(x) - \sigma_i^{\text{before}}\big),

with :math:`\sigma_i` the true total slowdown of job :math:`i` (the world's
:math:`\sum_{h \in S_i} S_{\tau_i}(B_{ih}) + \lambda(|S_i| - 1)`, superadditive group slowdown
:math:`S_a(B)` of the ground truth) and :math:`R` the running jobs. It is the placement ILP's
``interference`` objective (:mod:`optsched.harmony.snapshot`) with the true group slowdown in
place of its pairwise sum; the two agree on servers holding at most one other job.

Why it is a small MILP
----------------------
A job is present on a server once whatever its number of tasks there, so the newcomer changes
server :math:`h`'s job set from :math:`M_h` to :math:`M_h \cup \{j\}` iff it puts a task on
:math:`h`. The change of every slowdown on :math:`h` then depends on :math:`M_h` alone:

.. math::

    c_h = S_\tau(n_h) + \sum_{i \in M_h} \big(S_{\tau_i}(n_h - e_{\tau_i} + e_\tau)
          - S_{\tau_i}(n_h - e_{\tau_i})\big) \;\ge 0,

with :math:`n_h` the jobs per type on :math:`h` (:math:`S_a(0) = 0`; :math:`S_a` is monotone,
hence :math:`c_h \ge 0`), and :math:`f = 1 + \sum_{h \in U} c_h + \lambda(|U| - 1)` for the set
:math:`U` of servers used. Exactly (the nonlinearity sits in the precomputed coefficients, one
per server job set :math:`M_h \cup \{j\}`):

.. math::

    \min_{w, p, y}\; (1 - \lambda) + \sum_h (c_h + \lambda)\, y_h \quad\text{s.t.}\quad
    \sum_h w_h = W,\; \sum_h p_h = P,\;
    w_h \le \lfloor g_h \rfloor y_h,\; 2 w_h + 4 p_h \le u_h,\;
    y_h \le w_h + p_h \le (W + P)\, y_h,

:math:`w_h, p_h \in \mathbb Z_{\ge 0}`, :math:`y_h \in \{0, 1\}`, :math:`g_h, u_h` the free GPUs
and CPUs. The last pair makes :math:`y` exactly the set of used servers, so the same model
maximised gives the worst feasible placement (used to tell forced decisions). It is solved by
HiGHS (:func:`scipy.optimize.milp`); :func:`brute_force` enumerates every task assignment
(:math:`H^{W+P}`) on the world's own slowdown bookkeeping as an independent check.

Trivial decisions
-----------------
:math:`f \ge 1`, with equality iff the job sits on one server with :math:`c_h = 0`. A decision
is **trivial** (:attr:`ExactDecision.trivial`) when either

* ``lone``: some server with :math:`c_h = 0` (in practice an empty one) fits the whole job, so
  :math:`f^\star = 1` is attained by construction, or
* ``forced``: every feasible placement has the same cost
  (:math:`f_{\max} \le f^\star (1 + \texttt{RATIO\_TOL})`), so every valid policy is optimal.

Every other decision is **non-trivial**: some valid placement is strictly worse than another.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optsched.errors import InconsistentResultError, InvalidInstanceError
from optsched.harmony.world import ClusterState, JobArrival
from optsched.tolerances import INTEGRALITY_TOL, RATIO_TOL, WORK_TOL

__all__ = [
    "CONSTRAINTS",
    "ExactDecision",
    "brute_force",
    "server_costs",
    "solve_exact",
    "true_cost",
]


#: The MILP's constraint families, as named in the code that builds its rows (``name[h]`` per
#: server); the formulation page maps every constraint to one of them.
CONSTRAINTS = (
    "workers_placed",
    "ps_placed",
    "gpu_capacity",
    "cpu_capacity",
    "used_has_task",
    "task_marks_used",
)


def server_costs(state: ClusterState, job: JobArrival) -> np.ndarray:
    r"""The true added slowdown :math:`c_h` of putting ``job`` on each server (module notes).

    ``state`` must not hold ``job`` yet. Complexity :math:`O(H \cdot m \cdot T R)` for
    :math:`m` jobs per server, :math:`T` types, :math:`R` resources.
    """
    world = state.world
    if any(job.id in m for m in state.members):
        raise InvalidInstanceError("job", f"job {job.id} is already placed")
    counts = state.type_counts()
    fn = world.true_slowdown
    out = np.zeros(world.n_servers)
    for h, members in enumerate(state.members):
        if not members:
            continue
        n_h = counts[h]
        c = fn(job.job_type, n_h)
        for i in members:
            before = n_h.copy()
            before[state.types[i]] -= 1
            after = before.copy()
            after[job.job_type] += 1
            c += fn(state.types[i], after) - (fn(state.types[i], before) if before.any() else 0.0)
        out[h] = c
    return out


def true_cost(state: ClusterState, job: JobArrival, servers: Sequence[int]) -> float:
    r"""The true cost :math:`f` of placing ``job``'s tasks on ``servers`` (one per task).

    From the per-server costs: :math:`1 + \sum_{h \in U} c_h + \lambda(|U| - 1)`. Feasibility
    is not checked here (:func:`optsched.harmony.snapshot.validate_decision` does).
    """
    used = sorted({int(h) for h in servers})
    if len(servers) != job.n_tasks or not used:
        raise InvalidInstanceError("servers", f"need {job.n_tasks} servers, one per task")
    c = server_costs(state, job)
    lam = state.world.spread_penalty
    return 1.0 + float(c[used].sum()) + lam * (len(used) - 1)


@dataclass(frozen=True)
class ExactDecision:
    r"""The exact solution of one decision under the true objective.

    Attributes
    ----------
    servers : list of int
        An optimal placement: the server of every task (workers, then parameter servers).
    objective : float
        :math:`f^\star`.
    worst : float
        :math:`f_{\max}`, the worst feasible placement's cost.
    costs : numpy.ndarray
        :math:`c_h` per server.
    kind : str
        ``"lone"``, ``"forced"`` or ``"open"`` (non-trivial); see the module notes.
    """

    servers: list[int]
    objective: float
    worst: float
    costs: np.ndarray
    kind: str

    @property
    def trivial(self) -> bool:
        """Whether the optimum is optimal by construction (``lone`` or ``forced``)."""
        return self.kind != "open"


def _milp(
    state: ClusterState, job: JobArrival, costs: np.ndarray, *, maximize: bool
) -> tuple[list[int], float]:
    from scipy.optimize import Bounds, LinearConstraint, milp

    world = state.world
    n = world.n_servers
    w_tot, p_tot = job.n_workers, job.n_ps
    lam = world.spread_penalty
    gpus = np.floor(state.free[:, 0] + WORK_TOL)
    cpus = state.free[:, 1] + WORK_TOL
    # variables: w_0..w_{n-1}, p_0..p_{n-1}, y_0..y_{n-1}
    nv = 3 * n
    c = np.concatenate([np.zeros(2 * n), costs + lam])
    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    names: list[str] = []

    def row(name: str, entries: dict[int, float], lower: float, upper: float) -> None:
        assert name.split("[")[0] in CONSTRAINTS
        r = np.zeros(nv)
        for k, v in entries.items():
            r[k] = v
        rows.append(r)
        lo.append(lower)
        hi.append(upper)
        names.append(name)

    # sum_h w_h = W and sum_h p_h = P: every task is placed
    row("workers_placed", {h: 1.0 for h in range(n)}, w_tot, w_tot)
    row("ps_placed", {n + h: 1.0 for h in range(n)}, p_tot, p_tot)
    for h in range(n):
        w, p, y = h, n + h, 2 * n + h
        # w_h <= floor(g_h) y_h: the free GPUs (a worker needs a whole one)
        row(f"gpu_capacity[{h}]", {w: 1.0, y: -max(gpus[h], 0.0)}, -np.inf, 0.0)
        # 2 w_h + 4 p_h <= u_h: the free CPUs
        row(f"cpu_capacity[{h}]", {w: 2.0, p: 4.0}, -np.inf, max(cpus[h], 0.0))
        # w_h + p_h >= y_h: a server counted as used holds a task (exact for the maximum)
        row(f"used_has_task[{h}]", {w: 1.0, p: 1.0, y: -1.0}, 0.0, np.inf)
        # w_h + p_h <= (W + P) y_h: a server holding a task is counted as used
        row(f"task_marks_used[{h}]", {w: 1.0, p: 1.0, y: -float(w_tot + p_tot)}, -np.inf, 0.0)
    res = milp(
        -c if maximize else c,
        constraints=LinearConstraint(np.array(rows), lo, hi),
        integrality=np.ones(nv),
        bounds=Bounds(
            np.zeros(nv),
            np.concatenate([np.full(n, w_tot), np.full(n, p_tot), np.ones(n)]).astype(float),
        ),
        options={"mip_rel_gap": 0.0, "presolve": True},
    )
    if res.status != 0 or res.x is None:
        raise InconsistentResultError(
            f"the exact placement MILP of job {job.id} found no optimum ({res.message}); "
            "admission guaranteed a feasible placement"
        )
    x = np.round(res.x).astype(int)
    if np.max(np.abs(res.x - x)) > INTEGRALITY_TOL:
        raise InconsistentResultError(f"the exact placement MILP of job {job.id} is fractional")
    servers = [h for h in range(n) for _ in range(x[h])] + [
        h for h in range(n) for _ in range(x[n + h])
    ]
    used = x[2 * n :]
    return servers, (1.0 - lam) + float((costs + lam) @ used)


def solve_exact(state: ClusterState, job: JobArrival) -> ExactDecision:
    """Solve one decision exactly under the true objective (minimum and maximum).

    Raises
    ------
    InconsistentResultError
        No feasible placement (admission guarantees one) or an objective that does not match
        the recomputed cost of the returned placement.
    """
    costs = server_costs(state, job)
    servers, best = _milp(state, job, costs, maximize=False)
    _, worst = _milp(state, job, costs, maximize=True)
    check = true_cost(state, job, servers)
    if not math.isclose(check, best, rel_tol=RATIO_TOL, abs_tol=RATIO_TOL):
        raise InconsistentResultError(f"exact MILP objective {best} != recomputed cost {check}")
    lone = any(
        costs[h] <= RATIO_TOL and np.all(job.demands().sum(axis=0) <= state.free[h] + WORK_TOL)
        for h in range(state.world.n_servers)
    )
    if lone:
        kind = "lone"
    elif worst <= best * (1 + RATIO_TOL):
        kind = "forced"
    else:
        kind = "open"
    return ExactDecision(servers, best, worst, costs, kind)


def brute_force(state: ClusterState, job: JobArrival) -> tuple[float, float]:
    r"""Best and worst true cost over every feasible task assignment, by enumeration.

    Independent of :func:`server_costs`: each assignment is placed on a copy of ``state`` and
    scored as :math:`1 + \sum_i \sigma_i^{\text{after}} - \sum_i \sigma_i^{\text{before}}` with
    :meth:`ClusterState.slowdowns <optsched.harmony.world.ClusterState.slowdowns>`.
    Complexity :math:`O(H^{W+P})` placements: tiny cases only.

    Raises
    ------
    InvalidInstanceError
        No feasible assignment.
    """
    demands = job.demands()
    before = sum(state.slowdowns().values())
    best, worst = math.inf, -math.inf
    for servers in itertools.product(range(state.world.n_servers), repeat=len(demands)):
        work = state.copy()
        ok = True
        for d, h in zip(demands, servers, strict=True):
            if not np.all(d <= work.free[h] + WORK_TOL):
                ok = False
                break
            work.place_task(job, d, h)
        if not ok:
            continue
        f = 1.0 + sum(work.slowdowns().values()) - before
        best, worst = min(best, f), max(worst, f)
    if best == math.inf:
        raise InvalidInstanceError("job", f"job {job.id} fits nowhere")
    return best, worst
