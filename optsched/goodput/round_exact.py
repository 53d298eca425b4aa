r"""The exact optimum of one round of Pollux's problem, as a MILP solved by HiGHS.

The round (:mod:`optsched.goodput.round_model`) maximizes the generalized mean
:math:`M = (\frac1J \sum_j (x_j + \varepsilon)^p)^{1/p}`. For :math:`p < 0` (Pollux's
:math:`p = -1`) :math:`M` is decreasing in :math:`\sum_j (x_j + \varepsilon)^p`, for
:math:`p > 0` increasing, so the optimum of :math:`M` is the optimum of that sum. Each job's
term depends only on its *configuration*: the nodes :math:`K` and GPUs :math:`N` it gets and
whether its row is unchanged (no restart penalty). Over the finite set :math:`C_j` of
configurations the sum is **linear in configuration indicators** :math:`y_{jc}`: the
linearization is exact, with no approximation of the power mean.

.. math::

   \min_{y, a, u, d}\ (\max \text{ if } p > 0) \quad
       & \sum_j \sum_{c \in C_j} w_{jc}\, y_{jc},
       \qquad w_{jc} = (\sigma S_j(K_c, N_c)\, \rho_j^{[c \ne \text{keep}]} + \varepsilon)^p \\
   \text{s.t.}\quad
       & \textstyle\sum_{c} y_{jc} = 1 && \texttt{one\_configuration} \\
       & \textstyle\sum_n a_{jn} = \sum_c N_c\, y_{jc} && \texttt{gpus\_of\_configuration} \\
       & \textstyle\sum_n u_{jn} = \sum_c K_c\, y_{jc} && \texttt{nodes\_of\_configuration} \\
       & u_{jn} \le a_{jn} \le G\, u_{jn} && \texttt{node\_used} \\
       & a_{jn} \ge b_{jn}\, y_{j,\text{keep}} && \texttt{keep\_previous} \\
       & \textstyle\sum_j a_{jn} \le G && \texttt{node\_capacity} \\
       & d_{jn} \ge u_{jn} + \sum_{c: K_c \ge 2} y_{jc} - 1,\quad
         \textstyle\sum_j d_{jn} \le 1 && \texttt{interference} \\
       & y, u \in \{0,1\},\ a \in \{0..G\},\ d \in [0, 1].

:math:`C_j` holds :math:`(0, 0)`, every :math:`(K, N)` with
:math:`\max(1, \text{min}_j) \le N \le \min(\text{max}_j, nG)` and
:math:`\lceil N/G \rceil \le K \le \min(N, n, 16)` (so ``min_replicas``, ``max_replicas`` and
``max_job_nodes`` hold by construction), and *keep* (the previous row, unpenalized) when that
row is itself one of these. ``keep_previous`` with the GPU count forces :math:`a_{j\cdot} =
b_{j\cdot}`. A changed row labelled with a non-keep configuration equal to the previous one is
only charged the penalty, never preferred, so the optimum is the true one.

Optional symmetry cuts (``symmetry=True``): nodes whose previous columns are equal are
interchangeable, so their loads may be ordered, :math:`\sum_j a_{jn} \ge \sum_j a_{jn'}` for
consecutive such :math:`n < n'`.

The solve is bounded by a **node limit** (HiGHS's ``mip_max_nodes``), never by wall-clock time;
a solve stopped by it reports its status, incumbent, bound and gap.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.errors import InvalidInstanceError
from optsched.goodput.round_model import RoundInstance, configurations
from optsched.solvers.result import SolveResult, Status

__all__ = [
    "DEFAULT_NODE_LIMIT",
    "RoundModel",
    "RoundSolution",
    "build_model",
    "canonical",
    "solve",
]

#: Branch-and-bound nodes HiGHS may explore before it stops with its incumbent and bound.
DEFAULT_NODE_LIMIT = 20_000


@dataclass(frozen=True)
class RoundSolution:
    r"""What the exact model found for a round.

    Attributes
    ----------
    status : Status
        ``optimal`` (proven within :data:`~optsched.tolerances.OPTIMALITY_GAP`) or ``feasible``
        (stopped by the node limit).
    objective : float
        :math:`M` of the allocation found.
    bound : float or None
        A proven upper bound on :math:`M`.
    gap : float or None
        :math:`(\text{bound} - \text{objective}) / \text{objective}`.
    state : ndarray
        The ``(J, n)`` allocation.
    result : SolveResult
        The solver's result, on the linear sum :math:`\sum_j (x_j+\varepsilon)^p`.
    """

    status: Status
    objective: float
    bound: float | None
    gap: float | None
    state: npt.NDArray[np.int64]
    result: SolveResult
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RoundModel:
    """The MILP's matrices and the meaning of its columns."""

    lp: Any
    configs: list[list[tuple[int, int, bool]]]
    y_start: list[int]
    a_start: int
    u_start: int
    d_index: dict[tuple[int, int], int]
    symmetry: bool = True


def _keep_allowed(instance: RoundInstance, j: int) -> bool:
    prev = instance.jobs[j].previous
    gpus = sum(prev)
    nodes = sum(1 for v in prev if v > 0)
    if gpus == 0:
        return False
    job = instance.jobs[j]
    return max(1, job.min_replicas) <= gpus <= instance.replica_bound(j) and nodes <= min(
        instance.num_nodes, instance.max_job_nodes
    )


def _costs(instance: RoundInstance) -> list[list[tuple[int, int, bool]]]:
    out = []
    for j in range(instance.num_jobs):
        cfgs = [(k, n, False) for k, n in configurations(instance, j)]
        if _keep_allowed(instance, j):
            prev = instance.jobs[j].previous
            cfgs.append((sum(1 for v in prev if v > 0), sum(prev), True))
        out.append(cfgs)
    return out


class _Rows:
    """Sparse rows in COO form."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.up: list[float] = []

    def add(self, entries: list[tuple[int, float]], lo: float, up: float) -> None:
        r = len(self.lo)
        for c, v in entries:
            self.rows.append(r)
            self.cols.append(c)
            self.vals.append(v)
        self.lo.append(lo)
        self.up.append(up)


def _job_rows(
    instance: RoundInstance,
    rows: _Rows,
    j: int,
    cfgs: list[tuple[int, int, bool]],
    y0: int,
    a_start: int,
    u_start: int,
    d_index: dict[tuple[int, int], int],
) -> None:
    """Job ``j``'s rows: one_configuration ... keep_previous and interference's linking rows."""
    nn, g = instance.num_nodes, instance.gpus_per_node
    ys = [y0 + i for i in range(len(cfgs))]
    a = [a_start + j * nn + n for n in range(nn)]
    u = [u_start + j * nn + n for n in range(nn)]
    rows.add([(y, 1.0) for y in ys], 1.0, 1.0)  # one_configuration
    gpus = [(y, -float(n)) for y, (_, n, _) in zip(ys, cfgs, strict=True) if n]
    rows.add([(c, 1.0) for c in a] + gpus, 0.0, 0.0)  # gpus_of_configuration
    nodes = [(y, -float(k)) for y, (k, _, _) in zip(ys, cfgs, strict=True) if k]
    rows.add([(c, 1.0) for c in u] + nodes, 0.0, 0.0)  # nodes_of_configuration
    for n in range(nn):
        rows.add([(a[n], 1.0), (u[n], -float(g))], -np.inf, 0.0)  # node_used
        rows.add([(a[n], 1.0), (u[n], -1.0)], 0.0, np.inf)
    keep = [i for i, c in enumerate(cfgs) if c[2]]
    if keep:
        prev = instance.jobs[j].previous
        for n in range(nn):
            if prev[n] > 0:  # keep_previous
                rows.add([(a[n], 1.0), (ys[keep[0]], -float(prev[n]))], 0.0, np.inf)
    multi = [(ys[i], -1.0) for i, (k, _, _) in enumerate(cfgs) if k >= 2]
    for n in range(nn):
        if (j, n) in d_index:  # interference (linking)
            rows.add([(d_index[(j, n)], 1.0), (u[n], -1.0), *multi], -1.0, np.inf)


def build_model(instance: RoundInstance, *, symmetry: bool = True) -> RoundModel:
    r"""The MILP of the module notes (complete the instance's tables first).

    :math:`O(\sum_j |C_j| + J n)` columns and :math:`O(J n)` rows.
    """
    import scipy.sparse as sp

    from optsched.solvers.matrix import LinearProgram

    nj, nn, g = instance.num_jobs, instance.num_nodes, instance.gpus_per_node
    configs = _costs(instance)
    cost: list[float] = []
    y_start = []
    for j, cfgs in enumerate(configs):
        y_start.append(len(cost))
        for k, n, keep in cfgs:
            cost.append(
                instance.term(j, k, n, restart=not keep) if n else instance.term(j, 0, 0, False)
            )
    a_start = len(cost)
    u_start = a_start + nj * nn
    d_index: dict[tuple[int, int], int] = {}
    col = u_start + nj * nn
    for j in range(nj):
        if any(k >= 2 for k, _, _ in configs[j]):
            for n in range(nn):
                d_index[(j, n)] = col
                col += 1
    ncols = col
    cost += [0.0] * (ncols - a_start)
    rows = _Rows()
    for j, cfgs in enumerate(configs):
        _job_rows(instance, rows, j, cfgs, y_start[j], a_start, u_start, d_index)
    for n in range(nn):
        rows.add([(a_start + j * nn + n, 1.0) for j in range(nj)], -np.inf, float(g))
        ds = [d_index[(j, n)] for j in range(nj) if (j, n) in d_index]
        if ds:
            rows.add([(d, 1.0) for d in ds], -np.inf, 1.0)
    if symmetry:
        _symmetry_rows(instance, rows, a_start)
    lower = np.zeros(ncols)
    upper = np.ones(ncols)
    upper[a_start:u_start] = g
    integrality = np.ones(ncols, dtype=bool)
    integrality[u_start + nj * nn :] = False
    matrix = sp.csc_array(
        (np.array(rows.vals), (np.array(rows.rows), np.array(rows.cols))),
        shape=(len(rows.lo), ncols),
    )
    lp = LinearProgram(cost, matrix, rows.lo, rows.up, lower, upper,
                       sense="min" if instance.p < 0 else "max",
                       integrality=integrality)  # fmt: skip
    return RoundModel(lp, configs, y_start, a_start, u_start, d_index, symmetry)


def _interchangeable(instance: RoundInstance) -> list[list[int]]:
    """Groups of nodes whose previous columns are equal (in node order)."""
    prev = instance.previous
    groups: dict[tuple[int, ...], list[int]] = {}
    for n in range(instance.num_nodes):
        groups.setdefault(tuple(int(v) for v in prev[:, n]), []).append(n)
    return list(groups.values())


def _symmetry_rows(instance: RoundInstance, rows: _Rows, a_start: int) -> None:
    nj, nn = instance.num_jobs, instance.num_nodes
    for members in _interchangeable(instance):
        for first, second in itertools.pairwise(members):
            rows.add([(a_start + j * nn + first, 1.0) for j in range(nj)]
                     + [(a_start + j * nn + second, -1.0) for j in range(nj)],
                     0.0, np.inf)  # fmt: skip


def canonical(instance: RoundInstance, state: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``state`` with each group of interchangeable nodes ordered by decreasing load.

    Swapping nodes with equal previous columns changes neither the value nor feasibility; the
    result satisfies the symmetry cuts (a stable sort, so an ordered state is unchanged).
    """
    out = np.array(state, dtype=np.int64)
    for members in _interchangeable(instance):
        load = out[:, members].sum(axis=0)
        order = np.argsort(-load, kind="stable")
        out[:, members] = out[:, [members[i] for i in order]]
    return out


def _start_vector(model: RoundModel, instance: RoundInstance, state: npt.NDArray[np.int64]) -> Any:
    """A MIP start from a feasible allocation, or None when it is not one of the model's points."""
    from optsched.solvers.program import MatrixSolution
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    nn = instance.num_nodes
    if model.symmetry:
        state = canonical(instance, state)
    x = np.zeros(model.lp.n_variables)
    for j, cfgs in enumerate(model.configs):
        row = state[j]
        k, n = int(np.count_nonzero(row)), int(row.sum())
        same = tuple(int(v) for v in row) == instance.jobs[j].previous
        pick = [i for i, c in enumerate(cfgs) if (c[0], c[1]) == (k, n) and (c[2] or not same)]
        pick = pick or [i for i, c in enumerate(cfgs) if (c[0], c[1], c[2]) == (k, n, False)]
        if not pick:
            return None
        x[model.y_start[j] + pick[-1]] = 1.0
        for m in range(nn):
            x[model.a_start + j * nn + m] = row[m]
            x[model.u_start + j * nn + m] = 1.0 if row[m] > 0 else 0.0
            if (j, m) in model.d_index and k >= 2 and row[m] > 0:
                x[model.d_index[(j, m)]] = 1.0
    result = assemble(TerminationCondition.OTHER_LIMIT, SolutionStatus.FEASIBLE,
                      float(np.dot(model.lp.c, x)), None, build_seconds=0.0, solve_seconds=0.0,
                      solver="start", solver_version="", native_status="start")  # fmt: skip
    return MatrixSolution(result=result, x=x)


def solve(
    instance: RoundInstance,
    *,
    node_limit: int = DEFAULT_NODE_LIMIT,
    symmetry: bool = True,
    warm_start: npt.ArrayLike | None = None,
    threads: int | None = 1,
) -> RoundSolution:
    """Solve the round's MILP with HiGHS within ``node_limit`` branch-and-bound nodes.

    Parameters
    ----------
    instance : RoundInstance
        Its speedup tables are completed first (:meth:`RoundInstance.complete`).
    node_limit : int
        HiGHS's ``mip_max_nodes``: the only limit (no time limit decides a result).
    symmetry : bool
        Add the symmetry cuts of the module notes.
    warm_start : array_like, optional
        A feasible ``(J, n)`` allocation handed to HiGHS as a MIP start (e.g. the genetic
        algorithm's); it changes how fast the optimum is proven, never the optimum. Without
        one, the allocation giving no job GPUs (always feasible) is the start.
    threads : int or None

    Returns
    -------
    RoundSolution

    Raises
    ------
    NotOptimalError
        HiGHS stopped without any allocation (not expected: it starts from a feasible one).
    """
    from optsched.solvers.matrix import solve_matrix

    if int(node_limit) < 0:
        raise InvalidInstanceError("node_limit", f"must be >= 0, got {node_limit}")
    start = time.perf_counter()
    instance.complete()
    model = build_model(instance, symmetry=symmetry)
    # no job holding GPUs is always feasible: HiGHS always has an incumbent to return
    warm = _start_vector(model, instance, np.zeros_like(instance.previous))
    if warm_start is not None:
        given = _start_vector(model, instance, np.asarray(warm_start, dtype=np.int64))
        warm = given if given is not None else warm
    built = time.perf_counter() - start
    sol = solve_matrix(model.lp, solver="highs", threads=threads, accept_feasible=True,
                       build_seconds=built, options={"mip_max_nodes": int(node_limit)},
                       warm_start=warm)  # fmt: skip
    assert sol.x is not None  # accept_feasible returns only with a point
    nj, nn = instance.num_jobs, instance.num_nodes
    a = sol.x[model.a_start : model.a_start + nj * nn]
    state = np.rint(a).astype(np.int64).reshape(nj, nn)
    res = sol.result
    objective = instance.mean_of(float(res.objective))  # type: ignore[arg-type]
    bound = None
    if res.bound is not None and (res.bound > 0 if instance.p < 0 else True):
        bound = instance.mean_of(float(res.bound))
    gap = None if bound is None else max(bound - objective, 0.0) / max(abs(objective), 1e-12)
    return RoundSolution(res.status, objective, bound, gap, state, res,
                         extra={"nodes": res.extra.get("nodes"), "columns": model.lp.n_variables,
                                "rows": model.lp.a.shape[0]})  # fmt: skip
