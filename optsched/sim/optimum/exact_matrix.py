r"""The round-based world's exact model as sparse matrices for HiGHS, without Pyomo.

:func:`optsched.sim.optimum.exact.solve` builds this model for HiGHS (``weighted-jct`` and
``makespan``, strengthened); the Pyomo model of :func:`optsched.sim.optimum.exact.build_model` stays
the
declared formulation for the other solvers and objectives. Every row of the strengthened Pyomo
model is here under its name (the formulation page, ``docs/formulations/sim_exact.rst``, has the
table), built with numpy in :math:`O(\mathrm{nnz})`, with:

* two exact substitutions that keep the size linear in the rounds: the *remaining* indicator
  :math:`E_{jk} = \sum_{k' \ge k} e_{jk'}` (``remaining[j, k]``), on which
  ``no_run_after_final`` reads :math:`\sum_g x_{jkg} \le E_{jk}` and ``one_final``
  :math:`E_{j k_j} = 1`, and the *cumulative work* :math:`W_{jk} = \sum_{q \le k, g} c_{jg}
  x_{jqg}` (``cumulative[j, k]``), on which ``finished_by`` reads
  :math:`W_{jk} + E_{j,k+1} \ge 1` (equalities defining new continuous variables: the same
  feasible set projected on the old ones, the same LP relaxation);
* for one-round jobs only the rows not implied by ``one_round`` and ``one_run``;
* further valid rows: the last-run type (:func:`_end_type_rows`), gang cliques
  (:func:`_gang_clique_rows`), parity cuts (:func:`_parity_rows`);
* only the rounds a compact schedule uses (:func:`compact_last_rounds`; some optimum is
  compact);
* a root pass (:func:`root_pass`): the LP relaxation, a start from it, and reduced-cost fixing
  with a Lagrangian bound valid for any multipliers (:func:`lagrangian_bound`).

Complexity: :math:`O(n K G)` columns, rows and non-zeros for :math:`n` jobs, :math:`K` rounds and
:math:`G` GPU types (the gang cliques :math:`O(n^2 K G)` at most, over the big gangs).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.errors import InvalidInstanceError, ModelError, NotOptimalError
from optsched.sim.measure.record import SimResult
from optsched.sim.optimum.rounds import (
    OBJECTIVES,
    POLISH,
    MipStart,
    ReplayedPlan,
    area_sets,
    check_round_seconds,
    check_world,
    completion_floor,
    default_rounds,
    earliest_round,
    interchangeable_groups,
    last_run_floor,
    model_run,
    objective_value,
    one_round_jobs,
    ordered_start,
    pack_round,
    round_stops,
    types_for,
    value_of,
)
from optsched.sim.world.jobs import World
from optsched.solvers.matrix import LinearProgram, MatrixSolution
from optsched.tolerances import CAPACITY_TOL, RATIO_TOL, WORK_TOL, leq

if TYPE_CHECKING:
    from optsched.family.exact import Formulation
    from optsched.sim.engine.policy import GrantPlacement
    from optsched.solvers import BuildClock

__all__ = [
    "MATRIX_OBJECTIVES",
    "MatrixModel",
    "build_matrix",
    "compact_last_rounds",
    "compact_start",
    "compaction_applies",
    "fix_by_reduced_cost",
    "formulation",
    "lagrangian_bound",
    "placeholder_start",
    "repaired_point",
    "root_pass",
    "start_from_point",
    "start_solution",
]

#: HiGHS options of the root heuristic's MIP (:func:`_fix_and_solve`): a node budget, so that it
#: stops early without a time limit too.
HEURISTIC_OPTIONS: dict[str, Any] = {"mip_max_nodes": 500}

#: The objectives the matrix model states (``deadlines`` needs its indicator free when
#: polishing, which the matrix path's polish cannot leave; it stays a Pyomo model).
MATRIX_OBJECTIVES = ("weighted-jct", "makespan")


@dataclass
class MatrixModel:
    """The built matrix model and what decoding its points needs.

    Attributes
    ----------
    lp : LinearProgram
        The model (after :func:`root_fixing`, over the columns ``cols`` of the full layout).
    world, round_seconds, objective, matters
        As :class:`optsched.sim.optimum.exact.ExactModel`.
    rounds : int
        Rounds built (below a start's value, fewer than ``horizon``).
    horizon : int
        The requested :math:`K`.
    kj, kk, kg : ndarray
        Job, round and type index of each ``x``/``u`` key (the Pyomo model's ``keys`` order).
    ej, ek : ndarray
        Job and round of each ``e``/``E``/``W`` entry.
    offsets : dict of str to int
        First column of each variable block in the full layout (``x``, ``u``, ``e``, ``E``,
        ``W``, ``T`` and ``span``).
    n_full : int
        Columns of the full layout.
    cols : ndarray or None
        Full-layout index of each column of ``lp`` (``None``: all, in order).
    row_families : list of (str, int, int)
        Row name, first row, one past the last row, in row order.
    eps : float
        The last-run floor.
    first, stop : list of int
        Per job, its first round and one past its last.
    size : dict
    build_seconds : float
    interchangeable : list of list of int
    root : dict
        What :func:`root_fixing` did (empty without it).
    """

    lp: LinearProgram
    world: World
    round_seconds: float
    objective: str
    matters: dict[str, bool]
    rounds: int
    horizon: int
    type_names: list[str]
    kj: NDArray[np.int64]
    kk: NDArray[np.int64]
    kg: NDArray[np.int64]
    ej: NDArray[np.int64]
    ek: NDArray[np.int64]
    offsets: dict[str, int]
    n_full: int
    row_families: list[tuple[str, int, int]]
    eps: float
    first: list[int]
    stop: list[int]
    size: dict[str, int] = field(default_factory=dict)
    build_seconds: float = 0.0
    interchangeable: list[list[int]] = field(default_factory=list)
    cols: NDArray[np.int64] | None = None
    root: dict[str, Any] = field(default_factory=dict)
    strengthened: bool = True

    def full(self, point: NDArray[np.float64]) -> NDArray[np.float64]:
        """A point of ``lp`` in the full layout (removed columns at 0, their only value)."""
        if self.cols is None:
            return np.asarray(point, dtype=np.float64)
        out = np.zeros(self.n_full)
        out[self.cols] = point
        return out

    def reduced(self, full: NDArray[np.float64]) -> NDArray[np.float64]:
        """A full-layout point restricted to the columns of ``lp``."""
        return full if self.cols is None else full[self.cols]

    def completion(self, point: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per job, :math:`T_j` (rounds) at ``point`` (a point of ``lp``)."""
        x = self.full(point)
        t0 = self.offsets["T"]
        return x[t0 : t0 + len(self.world.jobs)]

    def value(self, point: NDArray[np.float64]) -> float:
        """The objective of ``point``'s schedule, from its completion times :math:`L T_j`."""
        done = [self.round_seconds * float(t) for t in self.completion(point)]
        return value_of(self.world, done, self.objective)

    def plan(self, point: NDArray[np.float64]) -> list[dict[str, GrantPlacement]]:
        """The per-round placements of ``point`` (runs where :math:`x > 1/2`)."""
        x = self.full(point)
        x0 = self.offsets["x"]
        on = np.flatnonzero(x[x0 : x0 + self.kj.size] > 0.5)
        by_round: list[dict[str, str]] = [{} for _ in range(self.rounds)]
        for i in on:
            by_round[int(self.kk[i])][self.world.jobs[int(self.kj[i])].job_id] = self.type_names[
                int(self.kg[i])
            ]
        return [pack_round(self.world, r, self.matters) for r in by_round]

    def row_name(self, row: int) -> str:
        """The family and position of row ``row`` (e.g. ``capacity[12]``)."""
        for name, lo, hi in self.row_families:
            if lo <= row < hi:
                return f"{name}[{row - lo}]"
        return f"row[{row}]"  # pragma: no cover - every row belongs to a family

    def start_point(self, start: MipStart) -> NDArray[np.float64]:
        """``start`` as a full-layout point (every column, objective columns included).

        Raises
        ------
        ModelError
            The start runs where the model has no column (a round outside the job's range).
        """
        world, off = self.world, self.offsets
        x = np.zeros(self.n_full)
        key_at = _key_index(self)
        types = {name: t for t, name in enumerate(self.type_names)}
        shares = _shares(world, self.round_seconds, self.type_names)
        T = start.completion_rounds()
        fpos = self.f_positions()
        for j in world.jobs:
            ji = j.index
            runs, u_last = start.runs[ji], start.last_share[ji]
            done = 0.0
            worked: dict[int, float] = {}
            for pos, (k, g) in enumerate(runs):
                i = key_at.get((ji, k, types.get(g, -1)))
                if i is None:
                    raise ModelError(
                        f"start of {start.policy}: job {j.job_id!r} has no round {k} on {g}"
                    )
                last = pos == len(runs) - 1
                x[off["x"] + i] = 1.0
                x[off["u"] + i] = u_last if last else 1.0
                done += shares[ji, types[g]]
                worked[k] = done
            k_last = runs[-1][0]
            if not self.first[ji] <= k_last < self.stop[ji]:
                raise ModelError(
                    f"start of {start.policy}: job {j.job_id!r} ends in round {k_last}, which "
                    "the model rules out"
                )
            base = _e_base(self)[ji]
            f = self.first[ji]
            x[off["e"] + base + k_last - f] = 1.0
            cum = 0.0
            for k in range(f, self.stop[ji]):
                pos = base + k - f
                x[off["E"] + pos] = 1.0 if k <= k_last else 0.0
                cum = worked.get(k, cum)
                x[off["W"] + pos] = cum
            x[off["T"] + ji] = T[ji]
            i_last = key_at[(ji, k_last, types[runs[-1][1]])]
            if fpos[i_last] >= 0:
                x[off["f"] + fpos[i_last]] = 1.0
                at = base + np.arange(k_last - f, self.stop[ji] - f)
                x[off["F"] + at] = shares[ji, types[runs[-1][1]]]
        if "span" in off:
            x[off["span"]] = self.round_seconds * max(T)
        plast = off["Q"] - off["P"]
        if plast:
            a_early, a_late = parity_coefficients(self.key_sizes(), self.key_single())
            run = x[off["x"] : off["x"] + self.kj.size]
            early = np.bincount(self.kk, weights=a_early * run, minlength=self.kk.max() + 1)
            late = np.bincount(self.kk, weights=a_late * run, minlength=self.kk.max() + 1)
            x[off["P"] : off["P"] + plast] = np.cumsum(early)[:plast]
            # Q_r: the late sum over the rounds after r
            after = late.sum() - np.cumsum(late)
            x[off["Q"] : off["Q"] + plast] = after[:plast]
        return x

    def key_sizes(self) -> NDArray[np.float64]:
        """Per ``x`` key, its job's gang size."""
        return np.asarray([j.num_gpus for j in self.world.jobs], dtype=np.float64)[self.kj]

    def key_single(self) -> NDArray[np.bool_]:
        """Per ``x`` key, whether its job is a one-round job."""
        return np.isin(self.kj, np.asarray(one_round_jobs(self.world, self.round_seconds)))

    def f_positions(self) -> NDArray[np.int64]:
        """Per ``x`` key, its ``f`` column's position (-1 for a one-round job's key)."""
        single = one_round_jobs(self.world, self.round_seconds)
        multi = ~np.isin(self.kj, np.asarray(single, dtype=np.int64))
        out = np.full(self.kj.size, -1, dtype=np.int64)
        out[multi] = np.arange(int(multi.sum()))
        return out

    def violations(self, full: NDArray[np.float64]) -> list[str]:
        """The first row, fixed column or bound a full-layout point violates (or none).

        The rows are the model's (its removed columns, at 0, change no row); the tolerance is
        :data:`~optsched.tolerances.CAPACITY_TOL`, relative, as for the Pyomo model's check.
        """
        lp = self.lp
        point = self.reduced(full)
        if self.cols is not None:
            dropped = np.setdiff1d(np.arange(self.n_full), self.cols)
            bad = dropped[np.abs(full[dropped]) > CAPACITY_TOL]
            if bad.size:
                return [f"{self._col_name(int(bad[0]))}: {full[bad[0]]:.9g}, a removed column"]
        ax = lp.a @ point
        for value, lo, up, what in (
            (ax, lp.row_lower, lp.row_upper, "row"),
            (point, lp.col_lower, lp.col_upper, "col"),
        ):
            low = value < lo - CAPACITY_TOL * np.maximum(1.0, np.abs(lo))
            high = value > up + CAPACITY_TOL * np.maximum(1.0, np.abs(up))
            hit = np.flatnonzero(low | high)
            if hit.size:
                i = int(hit[0])
                name = self.row_name(i) if what == "row" else self._col_name(self._col_of(i))
                side = f"< {lo[i]:.9g}" if low[i] else f"> {up[i]:.9g}"
                return [f"{name}: {value[i]:.9g} {side}"]
        return []

    def _col_of(self, i: int) -> int:
        return i if self.cols is None else int(self.cols[i])

    def _col_name(self, c: int) -> str:
        off = self.offsets
        nk, ne = self.kj.size, self.ej.size
        for name, base, size in (
            ("x", off["x"], nk),
            ("u", off["u"], nk),
            ("e", off["e"], ne),
            ("E", off["E"], ne),
            ("W", off["W"], ne),
        ):
            if base <= c < base + size:
                i = c - base
                if name in ("x", "u"):
                    return (
                        f"{name}[{int(self.kj[i])}, {int(self.kk[i])}, "
                        f"{self.type_names[int(self.kg[i])]}]"
                    )
                return f"{name}[{int(self.ej[i])}, {int(self.ek[i])}]"
        if off["T"] <= c < off["T"] + len(self.world.jobs):
            return f"T[{c - off['T']}]"
        if "span" in off and c == off["span"]:
            return "span"
        if off["F"] <= c < off["P"]:
            i = c - off["F"]
            return f"F[{int(self.ej[i])}, {int(self.ek[i])}]"
        if off["P"] <= c < off["Q"]:
            return f"P[{c - off['P']}]"
        if off["Q"] <= c < off["Q"] + (off["Q"] - off["P"]):
            return f"Q[{c - off['Q']}]"
        i = int(np.flatnonzero(self.f_positions() == c - off["f"])[0])
        return f"f[{int(self.kj[i])}, {int(self.kk[i])}, {self.type_names[int(self.kg[i])]}]"


def _shares(world: World, L: float, names: list[str]) -> NDArray[np.float64]:
    r""":math:`c_{jg}` per job and type (0 where the job cannot run)."""
    out = np.zeros((len(world.jobs), len(names)))
    for j in world.jobs:
        for g in types_for(world, j):
            out[j.index, names.index(g)] = world.rate(j, g, True) * L / j.work
    return out


def _e_base(model: MatrixModel) -> list[int]:
    """Per job, the position of its first ``e``/``E``/``W`` entry."""
    base, out = 0, []
    for f, s in zip(model.first, model.stop, strict=True):
        out.append(base)
        base += s - f
    return out


def _key_index(model: MatrixModel) -> dict[tuple[int, int, int], int]:
    return {
        (int(j), int(k), int(g)): i
        for i, (j, k, g) in enumerate(zip(model.kj, model.kk, model.kg, strict=True))
    }


class _Rows:
    """Triplets of a sparse matrix, one named row family at a time."""

    def __init__(self) -> None:
        self.rows: list[NDArray[np.int64]] = []
        self.cols: list[NDArray[np.int64]] = []
        self.vals: list[NDArray[np.float64]] = []
        self.lower: list[NDArray[np.float64]] = []
        self.upper: list[NDArray[np.float64]] = []
        self.families: list[tuple[str, int, int]] = []
        self.m = 0

    def add(
        self,
        name: str,
        count: int,
        rows: Any,
        cols: Any,
        vals: Any,
        lower: Any,
        upper: Any,
    ) -> None:
        """``count`` rows: entries at local rows ``rows`` (0-based), bounds per row."""
        if count == 0:
            return
        self.rows.append(np.asarray(rows, dtype=np.int64) + self.m)
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), np.shape(rows)))
        self.lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (count,)))
        self.upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (count,)))
        self.families.append((name, self.m, self.m + count))
        self.m += count

    def matrix(self, n: int) -> Any:
        import scipy.sparse as sp

        if not self.rows:
            return sp.csc_array((0, n))
        coo = sp.coo_array(
            (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
            shape=(self.m, n),
        )
        out = coo.tocsc()
        out.sum_duplicates()
        return sp.csc_array(out, dtype=np.float64)


def build_matrix(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    upper_bound: float | None = None,
    clock: BuildClock | None = None,
    compact: bool = True,
) -> MatrixModel:
    """Build the strengthened model (module notes) as a :class:`LinearProgram`.

    The rows and bounds are those of :func:`optsched.sim.optimum.exact.build_model` with
    ``strengthen=True`` (the same names, the formulation page's table), with the two exact
    substitutions of the module notes. ``upper_bound`` prunes the rounds as there
    (:func:`optsched.sim.optimum.exact.latest_final_rounds`). ``compact`` (default) builds only the
    rounds a compact schedule uses (:func:`compact_last_rounds`; some optimum is compact): a
    start must then be compact too (:func:`compact_start`).

    Raises
    ------
    InvalidInstanceError
        As :func:`~optsched.sim.optimum.exact.build_model`; an objective outside
        :data:`MATRIX_OBJECTIVES` (field ``objective``).
    """
    began = time.perf_counter()
    if objective not in MATRIX_OBJECTIVES:
        raise InvalidInstanceError(
            "objective",
            f"the matrix model states {', '.join(MATRIX_OBJECTIVES)}, got {objective!r}",
        )
    L = check_round_seconds(round_seconds)
    matters = check_world(world)
    if rounds is None:
        rounds = default_rounds(world, L)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InvalidInstanceError("rounds", f"must be an integer >= 1, got {rounds!r}")
    horizon = rounds
    names = [t.name for t in world.cluster.gpu_types]
    G = len(names)
    jobs = world.jobs
    n = len(jobs)
    limits.check_size("rounds", 2.0 * n * rounds * (G + 1), "max_model_variables", "variables")
    eps = last_run_floor(world, L, rounds)
    first = [earliest_round(j.arrival, L) for j in jobs]
    for j in jobs:
        if first[j.index] >= rounds:
            raise InvalidInstanceError(
                "rounds", f"job {j.job_id!r} arrives after the last of the {rounds} rounds"
            )
    stop = round_stops(world, L, objective, first, rounds, eps, upper_bound)
    if compact and compaction_applies(world, objective):
        stop = _compact_stops(world, L, eps, first, stop)
    K = max(stop)
    c = _shares(world, L, names)
    single = set(one_round_jobs(world, L))

    # -- the column layout -------------------------------------------------------------------
    kj_l, kk_l, kg_l, ej_l, ek_l = [], [], [], [], []
    key_base = np.zeros(n, dtype=np.int64)
    e_base = np.zeros(n, dtype=np.int64)
    ntypes = np.zeros(n, dtype=np.int64)
    types_of: list[NDArray[np.int64]] = []
    nk = ne = 0
    for j in jobs:
        ji = j.index
        tj = np.flatnonzero(c[ji] > 0)
        types_of.append(tj)
        R = stop[ji] - first[ji]
        ks = np.arange(first[ji], stop[ji])
        key_base[ji], e_base[ji], ntypes[ji] = nk, ne, tj.size
        kj_l.append(np.full(R * tj.size, ji))
        kk_l.append(np.repeat(ks, tj.size))
        kg_l.append(np.tile(tj, R))
        ej_l.append(np.full(R, ji))
        ek_l.append(ks)
        nk += R * tj.size
        ne += R
    kj, kk, kg = (np.concatenate(a).astype(np.int64) for a in (kj_l, kk_l, kg_l))
    ej, ek = (np.concatenate(a).astype(np.int64) for a in (ej_l, ek_l))
    off = {"x": 0, "u": nk, "e": 2 * nk, "E": 2 * nk + ne, "W": 2 * nk + 2 * ne}
    off["T"] = 2 * nk + 3 * ne
    # f: the last-run type indicator of the other jobs' keys (see _end_type_rows)
    multi_key = ~np.isin(kj, np.fromiter(sorted(single), dtype=np.int64, count=len(single)))
    nf = int(multi_key.sum())
    off["f"] = off["T"] + n
    # P, Q: the two sums of the parity cuts, per round (see _parity_rows)
    odd_single = [j for j in single if jobs[j].num_gpus % 2 == 1]
    plast = max((stop[j] for j in single), default=0) if odd_single else 0
    off["F"] = off["f"] + nf
    off["P"] = off["F"] + ne
    off["Q"] = off["P"] + plast
    ncol = off["Q"] + plast
    if objective == "makespan":
        off["span"] = ncol
        ncol += 1
    # per key: its (job, round) position, its share, gang size
    kpos = e_base[kj] + (kk - np.asarray(first)[kj])
    kc = c[kj, kg]
    kn = np.asarray([j.num_gpus for j in jobs], dtype=np.float64)[kj]
    xs = np.arange(nk) + off["x"]
    us = np.arange(nk) + off["u"]
    es = np.arange(ne) + off["e"]
    Es = np.arange(ne) + off["E"]
    Ws = np.arange(ne) + off["W"]
    # the next (job, round) entry of the same job, -1 at a job's last round
    last_of_job = np.zeros(ne, dtype=bool)
    for j in jobs:
        last_of_job[e_base[j.index] + stop[j.index] - first[j.index] - 1] = True
    first_of_job = np.zeros(ne, dtype=bool)
    first_of_job[e_base] = True
    if clock is not None:
        clock.check("columns")

    rows = _Rows()
    inf = math.inf
    # one-round jobs (one run does all the work) get the rows that are not implied for them
    # (see :func:`_one_round_rows`); the others get the model's rows
    single_arr = np.fromiter(sorted(single), dtype=np.int64, count=len(single))
    sk = np.isin(kj, single_arr)
    se = np.isin(ej, single_arr)
    MK, SK = np.flatnonzero(~sk), np.flatnonzero(sk)
    ME, SE = np.flatnonzero(~se), np.flatnonzero(se)
    loc = np.full(ne, -1, dtype=np.int64)
    loc[ME] = np.arange(ME.size)
    loc[SE] = np.arange(SE.size)
    # capacity[k, g]: sum_j n_j x_jkg <= C_g
    cap_id = kk * G + kg
    used, cap_row = np.unique(cap_id, return_inverse=True)
    count = np.asarray([t.count for t in world.cluster.gpu_types], dtype=np.float64)
    rows.add("capacity", used.size, cap_row, xs, kn, -inf, count[used % G])
    _gang_clique_rows(rows, cap_id, kn, count[kg], xs)
    # one_final[j]: E_j,k_j = 1 (sum_k e_jk = 1 for a one-round job)
    multi_jobs = np.asarray([j.index for j in jobs if j.index not in single], dtype=np.int64)
    jrow = np.zeros(n, dtype=np.int64)
    jrow[multi_jobs] = np.arange(multi_jobs.size)
    jrow[single_arr] = multi_jobs.size + np.arange(single_arr.size)
    rows.add(
        "one_final",
        n,
        np.concatenate([jrow[multi_jobs], jrow[ej[SE]]]),
        np.concatenate([Es[e_base[multi_jobs]], es[SE]]),
        1.0,
        1.0,
        1.0,
    )
    mnext = ME[~last_of_job[ME]]  # entries of ME with a next round
    # remaining[j, k]: E_jk - e_jk - E_j,k+1 = 0
    rm = np.arange(ME.size)
    rows.add(
        "remaining",
        ME.size,
        np.concatenate([rm, rm, loc[mnext]]),
        np.concatenate([Es[ME], es[ME], Es[mnext + 1]]),
        np.concatenate([np.ones(ME.size), -np.ones(ME.size), -np.ones(mnext.size)]),
        0.0,
        0.0,
    )
    # no_run_after_final[j, k]: sum_g x_jkg - E_jk <= 0
    rows.add(
        "no_run_after_final",
        ME.size,
        np.concatenate([loc[kpos[MK]], rm]),
        np.concatenate([xs[MK], Es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        -inf,
        0.0,
    )
    # final_round_runs[j, k]: sum_g x_jkg - e_jk >= 0
    rows.add(
        "final_round_runs",
        ME.size,
        np.concatenate([loc[kpos[MK]], rm]),
        np.concatenate([xs[MK], es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        0.0,
        inf,
    )
    # one_run[j, k] (one-round jobs): sum_g x_jkg - e_jk = 0
    rows.add(
        "one_run",
        SE.size,
        np.concatenate([loc[kpos[SK]], np.arange(SE.size)]),
        np.concatenate([xs[SK], es[SE]]),
        np.concatenate([np.ones(SK.size), -np.ones(SE.size)]),
        0.0,
        0.0,
    )
    rk = np.arange(MK.size)
    # run_upper: u - x <= 0
    rows.add("run_upper", MK.size, np.concatenate([rk, rk]), np.concatenate([us[MK], xs[MK]]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size)]), -inf, 0.0)  # fmt: skip
    # full_round: u - x + e >= 0
    rows.add(
        "full_round",
        MK.size,
        np.concatenate([rk, rk, rk]),
        np.concatenate([us[MK], xs[MK], es[kpos[MK]]]),
        np.concatenate([np.ones(MK.size), -np.ones(MK.size), np.ones(MK.size)]),
        0.0,
        inf,
    )
    # partial_last[j, k]: sum_g (x - u) - (1 - eps) e <= 0
    rows.add(
        "partial_last",
        ME.size,
        np.concatenate([loc[kpos[MK]], loc[kpos[MK]], rm]),
        np.concatenate([xs[MK], us[MK], es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(MK.size), -(1.0 - eps) * np.ones(ME.size)]),
        -inf,
        0.0,
    )
    # last_run_positive: u - eps x >= 0
    rows.add("last_run_positive", MK.size, np.concatenate([rk, rk]),
             np.concatenate([us[MK], xs[MK]]),
             np.concatenate([np.ones(MK.size), -eps * np.ones(MK.size)]), 0.0, inf)  # fmt: skip
    # cumulative[j, k]: W_jk - W_j,k-1 - sum_g c x_jkg = 0
    mprev = ME[~first_of_job[ME]]
    rows.add(
        "cumulative",
        ME.size,
        np.concatenate([rm, loc[mprev], loc[kpos[MK]]]),
        np.concatenate([Ws[ME], Ws[mprev - 1], xs[MK]]),
        np.concatenate([np.ones(ME.size), -np.ones(mprev.size), -kc[MK]]),
        0.0,
        0.0,
    )
    # finished_by[j, k]: W_jk + E_j,k+1 >= 1
    rows.add(
        "finished_by",
        ME.size,
        np.concatenate([rm, loc[mnext]]),
        np.concatenate([Ws[ME], Es[mnext + 1]]),
        1.0,
        1.0,
        inf,
    )
    # work[j]: sum c u = 1
    wrow = np.full(n, -1, dtype=np.int64)
    wrow[multi_jobs] = np.arange(multi_jobs.size)
    rows.add("work", multi_jobs.size, wrow[kj[MK]], us[MK], kc[MK], 1.0, 1.0)
    # completion[j]: T_j - sum_k k e_jk - sum (u - x) = 1
    rows.add(
        "completion",
        n,
        np.concatenate([np.arange(n), ej, kj, kj]),
        np.concatenate([off["T"] + np.arange(n), es, us, xs]),
        np.concatenate([np.ones(n), -ek.astype(np.float64), -np.ones(nk), np.ones(nk)]),
        1.0,
        1.0,
    )
    _end_type_rows(rows, MK, ME, loc, kpos, kc, xs, us, es, Ws, first_of_job, off)
    odd_multi = [j.index for j in jobs if j.index not in single and j.num_gpus % 2 == 1]
    _parity_rows(rows, kk, kn, sk, xs, float(count.sum()), plast,
                 [j.num_gpus for j in jobs], first, odd_single, off,
                 (odd_multi, stop, e_base, Es))  # fmt: skip
    if clock is not None:
        clock.check("model")
    _strengthen_rows(rows, world, L, stop, off, kj, kk, kg, kc, kpos, xs, us, es, Ws,
                     first_of_job, sk)  # fmt: skip
    if objective == "makespan":
        # span_def[j]: span - L T_j >= 0
        rows.add(
            "span_def",
            n,
            np.concatenate([np.arange(n), np.arange(n)]),
            np.concatenate([np.full(n, off["span"]), off["T"] + np.arange(n)]),
            np.concatenate([np.ones(n), -L * np.ones(n)]),
            0.0,
            inf,
        )
    if clock is not None:
        clock.check("cuts")

    # -- bounds, integrality, objective -------------------------------------------------------
    lower, upper, ints, cost, offset = _columns(
        world,
        L,
        objective,
        off,
        ncol,
        (nk, ne, nf),
        c,
        ej,
        ek,
        kc,
        sk,
        kn,
        first,
        stop,
        eps,
        horizon,
    )
    lp = LinearProgram(
        cost,
        rows.matrix(ncol),
        np.concatenate(rows.lower),
        np.concatenate(rows.upper),
        lower,
        upper,
        sense="min",
        integrality=ints,
        offset=offset,
    )
    size = {
        "jobs": n,
        "rounds": K,
        "gpu_types": G,
        "variables": 2 * nk + ne + n,
        "binaries": nk + ne,
        "columns": ncol,
        "rows": rows.m,
        "nonzeros": int(lp.a.nnz),
    }
    return MatrixModel(
        lp=lp,
        world=world,
        round_seconds=L,
        objective=objective,
        matters=matters,
        rounds=K,
        horizon=horizon,
        type_names=names,
        kj=kj,
        kk=kk,
        kg=kg,
        ej=ej,
        ek=ek,
        offsets=off,
        n_full=ncol,
        row_families=rows.families,
        eps=eps,
        first=first,
        stop=stop,
        size=size,
        build_seconds=time.perf_counter() - began,
        interchangeable=interchangeable_groups(world, L),
    )


def parity_coefficients(
    kn: NDArray[np.float64], sk: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per key, its coefficient in the parity cuts' early and late sums (:func:`_parity_rows`)."""
    odd = sk & (kn % 2 == 1)
    early = np.where(odd, 0.0, np.floor(kn / 2.0))
    late = np.where(odd, np.ceil(kn / 2.0), 0.0)
    return early, late


def _parity_rows(
    rows: _Rows,
    kk: NDArray[np.int64],
    kn: NDArray[np.float64],
    sk: NDArray[np.bool_],
    xs: NDArray[np.int64],
    C: float,
    last: int,
    sizes: list[int],
    first: list[int],
    odd_jobs: list[int],
    off: dict[str, int],
    multi: tuple[list[int], list[int], NDArray[np.int64], NDArray[np.int64]],
) -> None:
    r"""``parity[r]``: a Chvátal-Gomory cut on the GPU-rounds of rounds :math:`0..r`.

    Let :math:`O` be the one-round jobs of odd gang size, :math:`N_O = \sum_{i \in O} n_i`,
    :math:`X_{j,\le r} = \sum_{k \le r, g} x_{jkg}` and :math:`X_{j,>r}` the rest. Summing
    ``capacity`` over rounds :math:`0..r` and types, and writing :math:`X_{i,\le r} = 1 -
    X_{i,>r}` for :math:`i \in O` (``one_run`` and ``one_final``: one run),

    .. math:: \sum_{j \notin O} n_j X_{j,\le r} - \sum_{i \in O} n_i X_{i,>r}
              \le \sum_{k \le r} \min(C, A_k) - N_O ,

    with :math:`A_k` the GPUs of the gangs arrived by round :math:`k` (no other job can run
    then).

    Halving it and rounding every coefficient and the right side down (all :math:`X \ge 0`,
    the left side integral at a schedule) gives the valid

    .. math:: \sum_{j \notin O} \lfloor n_j / 2 \rfloor X_{j,\le r}
              - \sum_{i \in O} \lceil n_i / 2 \rceil X_{i,>r}
              \le \Big\lfloor \Big(\sum_{k \le r} \min(C, A_k) - N_O\Big) / 2 \Big\rfloor,

    stronger than the sum when the right side is odd: with every type of even size, an odd
    number of odd gangs leaves a GPU-round idle, which the LP fills with half a gang. The two
    sums are continuous columns defined round by round (``parity_early[r]``:
    :math:`P_r = P_{r-1} + \sum_{j \notin O, g} \lfloor n_j/2 \rfloor x_{jrg}`;
    ``parity_late[r]``: :math:`Q_r = Q_{r+1} + \sum_{i \in O, g} \lceil n_i/2 \rceil
    x_{i,r+1,g}`), so that ``parity[r]`` reads :math:`P_r - Q_r \le \dots` in linear size.

    The other jobs of odd gang size (set :math:`M`) join through their last round: with
    :math:`D_{j,>r} = E_{j,r+1}` (not finished by round :math:`r`) and
    :math:`Y_{j,\le r} = X_{j,\le r} - (1 - D_{j,>r}) \ge 0` (their runs by :math:`r` other
    than the last: a job finished by :math:`r` ran by then), :math:`n_j X_{j,\le r} = n_j -
    n_j D_{j,>r} + n_j Y_{j,\le r}`; the same halving and rounding give
    :math:`\lfloor n_j/2 \rfloor X_{j,\le r}` on the left (in :math:`P_r`), :math:`-D_{j,>r}`,
    :math:`n_j` in :math:`N_O` and :math:`\lfloor n_j/2 \rfloor` added to the right side
    (``parity[r]`` then also reads :math:`E_{j,r+1}`; :math:`D_{j,>r} = 1` before the job's
    first round, 0 from its last).
    """
    if last == 0:
        return
    odd_multi, stop, e_base, Es = multi
    N_O = float(sum(sizes[j] for j in odd_jobs) + sum(sizes[j] for j in odd_multi))
    extra_rhs = float(sum(sizes[j] // 2 for j in odd_multi))
    a_early, a_late = parity_coefficients(kn, sk)
    P = off["P"] + np.arange(last)
    Q = off["Q"] + np.arange(last)
    r = np.arange(last)
    # parity_early[r]: P_r - P_{r-1} - sum_{k = r} a x = 0
    ek = np.flatnonzero((a_early > 0) & (kk < last))
    rows.add(
        "parity_early",
        last,
        np.concatenate([r, r[1:], kk[ek]]),
        np.concatenate([P, P[:-1], xs[ek]]),
        np.concatenate([np.ones(last), -np.ones(last - 1), -a_early[ek]]),
        0.0,
        0.0,
    )
    # parity_late[r]: Q_r - Q_{r+1} - sum_{k = r+1} a x = 0 (all rounds >= last at r = last-1)
    lk = np.flatnonzero((a_late > 0) & (kk >= 1))
    row_of = np.minimum(kk[lk] - 1, last - 1)
    rows.add(
        "parity_late",
        last,
        np.concatenate([r, r[:-1], row_of]),
        np.concatenate([Q, Q[1:], xs[lk]]),
        np.concatenate([np.ones(last), -np.ones(last - 1), -a_late[lk]]),
        0.0,
        0.0,
    )
    arrived = np.zeros(last)
    for j, f in enumerate(first):
        if f < last:
            arrived[f] += sizes[j]
    # GPUs a round can hold: the cluster's, or the gangs arrived by then
    room = np.cumsum(np.minimum(C, np.cumsum(arrived)))
    odd_rows = np.flatnonzero((room - N_O) % 2 == 1)
    if odd_rows.size:
        ro = np.arange(odd_rows.size)
        rr = [ro, ro]
        cc = [P[odd_rows], Q[odd_rows]]
        vv = [np.ones(odd_rows.size), -np.ones(odd_rows.size)]
        hi = np.floor((room[odd_rows] - N_O) / 2.0) + extra_rhs
        for j in odd_multi:
            nxt = odd_rows + 1  # D_{j,>r} = E_{j,r+1}
            before = nxt < first[j]
            hi[before] += 1.0  # D = 1, a constant on the left side
            inside = np.flatnonzero(~before & (nxt < stop[j]))
            rr.append(ro[inside])
            cc.append(Es[e_base[j] + nxt[inside] - first[j]])
            vv.append(-np.ones(inside.size))
        rows.add(
            "parity",
            odd_rows.size,
            np.concatenate(rr),
            np.concatenate(cc),
            np.concatenate(vv),
            -math.inf,
            hi,
        )


def _gang_clique_rows(
    rows: _Rows,
    cap_id: NDArray[np.int64],
    kn: NDArray[np.float64],
    cap: NDArray[np.float64],
    xs: NDArray[np.int64],
) -> None:
    r"""``gang_clique[i]``: gangs of which no two fit one round of a type together.

    In round :math:`k` on type :math:`g`, the jobs of the big gangs :math:`Q = \{a: 2 n_a >
    C_g\}` pairwise exceed :math:`C_g`, and so does a gang :math:`i` with
    :math:`n_i + \min_{a \in Q} n_a > C_g` with each of them: at most one of them runs,

    .. math:: x_{ikg} + \sum_{a \in Q,\, a \ne i} x_{akg} \le 1

    (one row per such :math:`i`, and one for :math:`Q` alone). ``capacity`` lets the LP run
    half a big gang beside a whole small one.
    """
    order = np.argsort(cap_id, kind="stable")
    bounds = np.flatnonzero(np.diff(cap_id[order])) + 1
    rr: list[NDArray[np.int64]] = []
    cc: list[NDArray[np.int64]] = []
    count = 0
    for group in np.split(order, bounds):
        C = cap[group[0]]
        big = group[2 * kn[group] > C]
        if big.size == 0:
            continue
        least = kn[big].min()
        small = group[(2 * kn[group] <= C) & (kn[group] + least > C)]
        heads = [None, *small.tolist()] if big.size > 1 else small.tolist()
        for head in heads:
            members = big if head is None else np.concatenate([[head], big])
            rr.append(np.full(members.size, count, dtype=np.int64))
            cc.append(xs[members])
            count += 1
    if count:
        rows.add("gang_clique", count, np.concatenate(rr), np.concatenate(cc), 1.0, -math.inf, 1.0)


def _end_type_rows(
    rows: _Rows,
    MK: NDArray[np.int64],
    ME: NDArray[np.int64],
    loc: NDArray[np.int64],
    kpos: NDArray[np.int64],
    kc: NDArray[np.float64],
    xs: NDArray[np.int64],
    us: NDArray[np.int64],
    es: NDArray[np.int64],
    Ws: NDArray[np.int64],
    first_of_job: NDArray[np.bool_],
    off: dict[str, int],
) -> None:
    r"""The last-run type :math:`f_{jkg} = x_{jkg} e_{jk}` of the jobs that are not one-round.

    In a schedule the last round runs on exactly one type, every other run is full, and the
    last share completes the work, so

    * ``end_type[j, k]``: :math:`\sum_g f_{jkg} = e_{jk}`;
    * ``end_run[j, k, g]``: :math:`f_{jkg} \le x_{jkg}`;
    * ``full_unless_end[j, k, g]``: :math:`u_{jkg} \ge x_{jkg} - f_{jkg}`;
    * ``end_share[j, k, g]``: :math:`c_{jg} u_{jkg} + W_{j,k-1} - F_{j,k-1} \ge f_{jkg}`,
      with :math:`F_{jk} = \sum_{q \le k, g} c_{jg} f_{jqg}` (``end_cumulative[j, k]``:
      :math:`F_{jk} = F_{j,k-1} + \sum_g c_{jg} f_{jkg}`): :math:`W - F` is the work of the
      full runs before round :math:`k`. Where :math:`f_{jkg} = 1` no run before is the last
      (:math:`F_{j,k-1} = 0`) and the work is done exactly; elsewhere the left side is at
      least :math:`\sum_{q<k,g} c_{jg} (x_{jqg} - f_{jqg}) \ge 0`.

    They tie the last share to the type the job ends on, which ``full_round`` and
    ``last_share`` (on :math:`e_{jk}`, summed over the types) leave loose.
    """
    inf = math.inf
    if MK.size == 0:
        return
    fs = off["f"] + np.arange(MK.size)
    Fs = off["F"] + np.arange(int(Ws.size))
    rk = np.arange(MK.size)
    rows.add(
        "end_type",
        ME.size,
        np.concatenate([loc[kpos[MK]], np.arange(ME.size)]),
        np.concatenate([fs, es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        0.0,
        0.0,
    )
    rows.add("end_run", MK.size, np.concatenate([rk, rk]), np.concatenate([fs, xs[MK]]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size)]), -inf, 0.0)  # fmt: skip
    rows.add("full_unless_end", MK.size, np.concatenate([rk, rk, rk]),
             np.concatenate([us[MK], xs[MK], fs]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size), np.ones(MK.size)]),
             0.0, inf)  # fmt: skip
    prev = np.flatnonzero(~first_of_job[kpos[MK]])
    rows.add(
        "end_share",
        MK.size,
        np.concatenate([rk, prev, prev, rk]),
        np.concatenate([us[MK], Ws[kpos[MK][prev] - 1], Fs[kpos[MK][prev] - 1], fs]),
        np.concatenate([kc[MK], np.ones(prev.size), -np.ones(prev.size), -np.ones(MK.size)]),
        0.0,
        inf,
    )
    # end_cumulative[j, k]: F_jk - F_j,k-1 - sum_g c f_jkg = 0
    rm = np.arange(ME.size)
    mprev = ME[~first_of_job[ME]]
    rows.add(
        "end_cumulative",
        ME.size,
        np.concatenate([rm, loc[mprev], loc[kpos[MK]]]),
        np.concatenate([Fs[ME], Fs[mprev - 1], fs]),
        np.concatenate([np.ones(ME.size), -np.ones(mprev.size), -kc[MK]]),
        0.0,
        0.0,
    )


def _columns(
    world: World,
    L: float,
    objective: str,
    off: dict[str, int],
    ncol: int,
    sizes: tuple[int, int, int],
    c: NDArray[np.float64],
    ej: NDArray[np.int64],
    ek: NDArray[np.int64],
    kc: NDArray[np.float64],
    sk: NDArray[np.bool_],
    kn: NDArray[np.float64],
    first: list[int],
    stop: list[int],
    eps: float,
    horizon: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64], float]:
    """Column bounds, integrality and objective of :func:`build_matrix`'s layout."""
    jobs = world.jobs
    n = len(jobs)
    nk, ne, nf = sizes
    K = max(stop)
    single_job = np.zeros(n, dtype=bool)
    single_job[one_round_jobs(world, L)] = True
    lower = np.zeros(ncol)
    upper = np.ones(ncol)
    # W_jk <= 1 + max_g c_jg: full rounds before the last do less than 1, the last at most c
    upper[off["W"] : off["W"] + ne] = 1.0 + c.max(axis=1)[ej]
    floor = completion_floor(world, L)
    late = [j.job_id for j in jobs if floor[j.index] > stop[j.index] + RATIO_TOL]
    if late:
        # T_j = k + u <= stop_j; the rounds never shrink below a schedule (module notes)
        raise InvalidInstanceError(
            "rounds",
            f"no schedule finishes every job within {horizon} rounds (jobs "
            f"{', '.join(late[:5])} cannot)",
        )
    lower[off["T"] : off["T"] + n] = floor  # completion_floor[j]
    upper[off["T"] : off["T"] + n] = np.asarray(stop, dtype=np.float64)
    if objective == "makespan":
        upper[off["span"]] = K * L
    # e fixed 0 before a job's fastest full rounds allow it to end (as the Pyomo model)
    cmax = c.max(axis=1)
    need = np.maximum(1, np.ceil((1.0 - WORK_TOL) / cmax)).astype(np.int64)
    early = ek < np.asarray(first)[ej] + need[ej] - 1
    upper[off["e"] + np.flatnonzero(early)] = 0.0
    # one_round with last_run_positive: a one-round job cannot run where 1 / c < eps
    tiny = np.flatnonzero(sk & (1.0 / kc < eps))
    upper[off["x"] + tiny] = 0.0
    upper[off["u"] + tiny] = 0.0
    ints = np.zeros(ncol, dtype=bool)
    ints[: 2 * nk + ne] = True
    ints[off["u"] : off["u"] + nk] = False
    ints[off["f"] : off["f"] + nf] = True
    # F_jk <= max_g c_jg (one last run); unused (one-round jobs) at 0
    upper[off["F"] : off["F"] + ne] = np.where(single_job[ej], 0.0, c.max(axis=1)[ej])
    # P_r, Q_r: at most every key's coefficient
    a_early, a_late = parity_coefficients(kn, sk)
    plast = off["Q"] - off["P"]
    upper[off["P"] : off["P"] + plast] = float(a_early.sum())
    upper[off["Q"] : off["Q"] + plast] = float(a_late.sum())
    cost = np.zeros(ncol)
    offset = 0.0
    if objective == "weighted-jct":
        w = np.asarray([j.weight for j in jobs], dtype=np.float64)
        cost[off["T"] : off["T"] + n] = w * L
        offset = -float(sum(j.weight * j.arrival for j in jobs))
    else:
        cost[off["span"]] = 1.0
        offset = -world.origin  # the makespan counts from the first arrival
    return lower, upper, ints, cost, offset


def _strengthen_rows(
    rows: _Rows,
    world: World,
    L: float,
    stop: list[int],
    off: dict[str, int],
    kj: NDArray[np.int64],
    kk: NDArray[np.int64],
    kg: NDArray[np.int64],
    kc: NDArray[np.float64],
    kpos: NDArray[np.int64],
    xs: NDArray[np.int64],
    us: NDArray[np.int64],
    es: NDArray[np.int64],
    Ws: NDArray[np.int64],
    first_of_job: NDArray[np.bool_],
    is_single: NDArray[np.bool_],
) -> None:
    """The valid inequalities of :func:`optsched.sim.optimum.exact._strengthen`, as rows."""
    import itertools

    inf = math.inf
    n = len(world.jobs)
    T = off["T"] + np.arange(n)
    # interchangeable[p]: T_i - T_j <= 0
    pairs: list[tuple[int, int]] = []
    for group in interchangeable_groups(world, L):
        same = [j for j in group if stop[j] == stop[group[0]]]
        pairs += list(itertools.pairwise(same))
    if pairs:
        p = np.asarray(pairs, dtype=np.int64)
        rp = np.arange(len(pairs))
        ones = np.ones(len(pairs))
        rows.add("interchangeable", len(pairs), np.concatenate([rp, rp]),
                 np.concatenate([T[p[:, 0]], T[p[:, 1]]]),
                 np.concatenate([ones, -ones]), -inf, 0.0)  # fmt: skip
    # area_cut[s]: sum_S P_j T_j >= rhs
    sets, coef, rhs = area_sets(world, L)
    if sets:
        rr = np.concatenate([np.full(len(S), s) for s, S in enumerate(sets)])
        cc = np.concatenate([T[np.asarray(S)] for S in sets])
        pj = np.asarray(coef, dtype=np.float64)
        vv = np.concatenate([pj[np.asarray(S)] for S in sets])
        rows.add("area_cut", len(sets), rr, cc, vv, np.asarray(rhs), inf)
    # one_round[j, k, g]: c u - x = 0 for a job one run finishes on every type
    one = np.flatnonzero(is_single)
    if one.size:
        ro = np.arange(one.size)
        rows.add("one_round", one.size, np.concatenate([ro, ro]),
                 np.concatenate([us[one], xs[one]]),
                 np.concatenate([kc[one], -np.ones(one.size)]), 0.0, 0.0)  # fmt: skip
    # ends_on_fast[j, k, g]: x - e <= 0 where one full round on g does the whole work (implied
    # by one_run for a one-round job)
    fast = np.flatnonzero((kc >= 1.0) & ~is_single)
    if fast.size:
        rf = np.arange(fast.size)
        rows.add("ends_on_fast", fast.size, np.concatenate([rf, rf]),
                 np.concatenate([xs[fast], es[kpos[fast]]]),
                 np.concatenate([np.ones(fast.size), -np.ones(fast.size)]), -inf, 0.0)  # fmt: skip
    # last_share[j, k, g]: c u + W_j,k-1 - x - e >= -1 (x alone where c >= 1), other jobs
    rest = np.flatnonzero(~is_single)
    if rest.size:
        fastr = kc[rest] >= 1.0
        has_prev = ~first_of_job[kpos[rest]]
        rl = np.arange(rest.size)
        pr = np.flatnonzero(has_prev)
        slow = np.flatnonzero(~fastr)
        rows.add(
            "last_share",
            rest.size,
            np.concatenate([rl, rl, pr, slow]),
            np.concatenate([us[rest], xs[rest], Ws[kpos[rest][pr] - 1], es[kpos[rest][slow]]]),
            np.concatenate([kc[rest], -np.ones(rest.size), np.ones(pr.size), -np.ones(slow.size)]),
            np.where(fastr, 0.0, -1.0),
            inf,
        )


def lagrangian_bound(
    lp: LinearProgram, y: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    r"""A lower bound of ``lp`` (a minimisation) from any row multipliers ``y``.

    For :math:`r^{lo} \le Ax \le r^{up}`, :math:`l \le x \le u` (finite :math:`l, u`) and any
    :math:`y`, let :math:`y^+` keep the signs a finite side admits (:math:`y_i > 0` needs
    :math:`r^{lo}_i > -\infty`, :math:`y_i < 0` needs :math:`r^{up}_i < \infty`; others are set
    to 0) and :math:`d = c - A^\top y^+`. Every feasible :math:`x` has
    :math:`y^{+\top} A x \ge \beta = \sum_i \min(y^+_i r^{lo}_i, y^+_i r^{up}_i)` (the side
    its sign picks), so

    .. math:: c^\top x = y^{+\top} A x + d^\top x \ge \beta + \sum_j \min(d_j l_j, d_j u_j)
              =: z(y),

    a bound for every :math:`y` (weak duality; no optimality of :math:`y` is assumed, so a
    solver's inexact duals only loosen it). Returns :math:`z(y) + c_0`, :math:`d`, and per
    column the increase :math:`\delta_j = |d_j| (u_j - l_j)` of the bound when :math:`x_j` is
    forced to the bound its :math:`d_j` does not pick.

    Raises
    ------
    ModelError
        A column bound is infinite where its reduced cost is not zero (no finite bound).
    """
    yy = np.asarray(y, dtype=np.float64).copy()
    yy[(yy > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    yy[(yy < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    beta = float(
        np.sum(np.where(yy > 0, yy * np.where(np.isfinite(lp.row_lower), lp.row_lower, 0.0), 0.0))
        + np.sum(np.where(yy < 0, yy * np.where(np.isfinite(lp.row_upper), lp.row_upper, 0.0), 0.0))
    )
    d = lp.c - lp.a.T @ yy
    lo, up = lp.col_lower, lp.col_upper
    pos, neg = d > 0, d < 0
    if (pos & ~np.isfinite(lo)).any() or (neg & ~np.isfinite(up)).any():
        raise ModelError("a Lagrangian bound needs finite bounds where a reduced cost is not 0")
    at = np.where(pos, d * np.where(pos, lo, 0.0), 0.0) + np.where(
        neg, d * np.where(neg, up, 0.0), 0.0
    )
    width = np.where(np.isfinite(up - lo), up - lo, 0.0)
    delta = np.abs(d) * width
    return beta + float(at.sum()) + lp.offset, d, delta


def root_pass(
    model: MatrixModel,
    start: MipStart | None,
    *,
    time_limit: float | None = None,
    heuristic: bool = True,
) -> MipStart | None:
    r"""The root of the search: the LP relaxation, a start from it, and reduced-cost fixing.

    1. The LP relaxation of ``model`` is solved (within ``time_limit``; without an optimal LP
       the model is left as it is and ``start`` returned).
    2. With ``heuristic``, the jobs whose binaries are all integral in the LP (without the
       parity cuts, :func:`_guide`) keep them and the rest is solved as a MIP within a quarter
       of the time left (:func:`_fix_and_solve`); its
       schedule, re-derived exactly (:func:`start_from_point`), replaces ``start`` when it is
       better. Either is a schedule of the model, of value :math:`U`.
    3. Reduced-cost fixing against :math:`U` (:func:`fix_by_reduced_cost`).

    Returns the best start known (``None`` without one); ``model.root`` records each step.
    """
    from optsched.solvers import solve_matrix
    from optsched.solvers.result import Status

    began = time.perf_counter()
    lp = model.lp
    relaxed = _relaxation(lp)
    try:
        sol = solve_matrix(relaxed, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError:
        model.root = {"lp": "failed"}
        return start
    if sol.result.status is not Status.OPTIMAL or sol.row_dual is None or sol.x is None:
        model.root = {"lp": sol.result.status.value}
        return start
    model.root = {
        "lp_bound": float(sol.result.objective) if sol.result.objective is not None else None,
        "lp_seconds": sol.result.solve_seconds,
        "given_value": None if start is None else start.value,
    }
    best = start
    left = None if time_limit is None else time_limit - (time.perf_counter() - began)
    # a budget spent by the LP leaves the heuristic nothing: skipped, never a limit <= 0
    if heuristic and (left is None or left > 0):
        found = _fix_and_solve(
            model, _guide(model, sol.x, left), None if left is None else left / 4
        )
        model.root["heuristic_value"] = None if found is None else found.value
        if found is not None and (best is None or found.value < best.value):
            best = found
    if best is not None:
        fix_by_reduced_cost(model, relaxed, sol.row_dual, best.value)
    model.root["seconds"] = time.perf_counter() - began
    return best


def _guide(
    model: MatrixModel, point: NDArray[np.float64], time_limit: float | None
) -> NDArray[np.float64]:
    """The LP point the root heuristic rounds: that of the LP without the parity cuts.

    The parity cuts raise the bound but spread the LP point over many jobs (58 of 120
    fractional on the 120-job trace, 10 without them), which leaves the heuristic's MIP
    nearly the whole problem. Falls back to ``point`` when that LP is not solved.
    """
    from optsched.solvers import solve_matrix
    from optsched.solvers.result import Status

    lp = model.lp
    upper = lp.row_upper.copy()
    found = False
    for name, lo, hi in model.row_families:
        if name == "parity":
            upper[lo:hi] = math.inf
            found = True
    if not found:
        return point
    loose = LinearProgram(
        lp.c, lp.a, lp.row_lower, upper, lp.col_lower, lp.col_upper,
        sense="min", offset=lp.offset,
    )  # fmt: skip
    try:
        sol = solve_matrix(loose, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError:
        return point
    if sol.result.status is not Status.OPTIMAL or sol.x is None:
        return point
    return sol.x


def _relaxation(lp: LinearProgram) -> LinearProgram:
    return LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper,
        sense="min", offset=lp.offset,
    )  # fmt: skip


def _fix_and_solve(
    model: MatrixModel, point: NDArray[np.float64], time_limit: float | None
) -> MipStart | None:
    """The LP point's integral jobs kept, the others solved as a MIP: a schedule, or ``None``.

    A job is kept when every binary of it (``x`` and ``e``) is within
    :data:`~optsched.tolerances.INTEGRALITY_TOL` of an integer in the LP; its binaries are then
    fixed at those integers. Every point of the restricted MIP is a point of ``model``.
    """
    from optsched.solvers import solve_matrix
    from optsched.tolerances import INTEGRALITY_TOL

    lp = model.lp
    ints = np.asarray(lp.integrality, dtype=bool)
    full = model.full(point)
    off, nk, ne = model.offsets, model.kj.size, model.ej.size
    frac = np.abs(full - np.round(full)) > INTEGRALITY_TOL
    loose = np.zeros(len(model.world.jobs), dtype=bool)
    loose[model.kj[frac[off["x"] : off["x"] + nk]]] = True
    loose[model.ej[frac[off["e"] : off["e"] + ne]]] = True
    job_of = np.full(model.n_full, -1, dtype=np.int64)
    job_of[off["x"] : off["x"] + nk] = model.kj
    job_of[off["e"] : off["e"] + ne] = model.ej
    owner = job_of if model.cols is None else job_of[model.cols]
    fix = ints & (owner >= 0) & ~loose[np.maximum(owner, 0)]
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    lower[fix] = upper[fix] = np.clip(np.round(point[fix]), lp.col_lower[fix], lp.col_upper[fix])
    sub = LinearProgram(
        lp.c, lp.a, lp.row_lower, lp.row_upper, lower, upper,
        sense="min", integrality=ints, offset=lp.offset,
    )  # fmt: skip
    try:
        out = solve_matrix(sub, time_limit=time_limit, accept_feasible=True)
    except NotOptimalError:
        return None
    if out.x is None:
        return None
    return start_from_point(model, out.x)


def start_from_point(model: MatrixModel, point: NDArray[np.float64]) -> MipStart | None:
    """The schedule of a (near-)integral point, re-derived exactly as a :class:`MipStart`.

    Each job's runs are read off :math:`x > 1/2` and carried out as
    :func:`~optsched.sim.optimum.exact.start_from_record` does (full rounds, the last share computed
    from the work left), so the start's value is that of the schedule itself, not the solver's
    figure. ``None`` when the runs are no schedule (two types in one round, unfinished work,
    a last run below the floor).
    """
    world, L = model.world, model.round_seconds
    x = model.full(point)
    x0 = model.offsets["x"]
    plans: list[dict[int, str]] = [{} for _ in world.jobs]
    for i in np.flatnonzero(x[x0 : x0 + model.kj.size] > 0.5):
        ji, k = int(model.kj[i]), int(model.kk[i])
        if k in plans[ji]:
            return None
        plans[ji][k] = model.type_names[int(model.kg[i])]

    class _Refused(Exception):
        pass

    def refuse(_why: str) -> _Refused:
        return _Refused()

    runs: list[tuple[tuple[int, str], ...]] = []
    shares: list[float] = []
    try:
        for j in world.jobs:
            mine, last = model_run(world, j, plans[j.index], L, model.horizon, model.eps, refuse)
            runs.append(tuple(mine))
            shares.append(last)
    except _Refused:
        return None
    done = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    value = value_of(world, done, model.objective)
    return MipStart(
        policy="root",
        runs=tuple(runs),
        last_share=tuple(shares),
        value=value,
        record_value=value,
        notes=("found at the root: the LP's integral jobs kept, the others solved",),
    )


def fix_by_reduced_cost(
    model: MatrixModel, relaxed: LinearProgram, duals: NDArray[np.float64], upper_bound: float
) -> None:
    r"""Remove the binaries that only schedules worse than ``upper_bound`` set (minimisation).

    With the Lagrangian bound :math:`z` of the LP's row duals (:func:`lagrangian_bound`), a
    binary whose reduced cost :math:`d_j > 0` (at its lower bound 0 in the bound) with
    :math:`z + d_j > U'` is 0 in every point of value at most :math:`U'`: forcing it to 1 raises
    the bound by :math:`d_j`. With :math:`U' = U` loosened by
    :data:`~optsched.tolerances.RATIO_TOL` (relative and absolute), every schedule of value at
    most :math:`U` keeps all its columns: the start of value :math:`U` and every better
    schedule, hence every optimum, are points of the reduced model. Symmetrically a binary with
    :math:`d_j < 0` and :math:`z - d_j > U'` is fixed to 1. Columns fixed to 0 are removed
    (they enter no row at 0); ``model.cols`` maps the rest.

    Raises
    ------
    ModelError
        The bound is above ``upper_bound`` (the duals or the start are wrong).
    """
    import scipy.sparse as sp

    lp = model.lp
    z, d, _delta = lagrangian_bound(relaxed, duals)
    if not leq(z, upper_bound, RATIO_TOL):
        raise ModelError(f"root bound {z:.9g} above a schedule's value {upper_bound:.9g}")
    U = upper_bound * (1 + RATIO_TOL) + RATIO_TOL * max(1.0, abs(upper_bound))
    ints = np.asarray(lp.integrality, dtype=bool)
    free = ints & (lp.col_lower < lp.col_upper)
    zero = free & (d > 0) & (z + d > U)
    one = free & (d < 0) & (z - d > U)
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    upper[zero] = 0.0
    lower[one] = 1.0
    keep = np.flatnonzero(~((upper == 0.0) & (lower == 0.0) & ints))
    model.lp = LinearProgram(
        lp.c[keep],
        sp.csc_array(lp.a[:, keep], dtype=np.float64),
        lp.row_lower,
        lp.row_upper,
        lower[keep],
        upper[keep],
        sense="min",
        integrality=ints[keep],
        offset=lp.offset,
    )
    old = model.cols if model.cols is not None else np.arange(model.n_full)
    model.cols = old[keep]
    e0, ne = model.offsets["e"], model.ej.size
    alive = np.flatnonzero(np.isin(np.arange(e0, e0 + ne), model.cols))
    kept = ints[keep]
    model.root.update(
        {
            "lagrangian_bound": z,
            "upper_bound": upper_bound,
            "fixed_to_0": int(zero.sum()),
            "fixed_to_1": int(one.sum()),
            "binaries_left": int(kept.sum() - (lower[keep] == upper[keep])[kept].sum()),
            "last_round": int(model.ek[alive].max()) if alive.size else -1,
        }
    )


def start_solution(model: MatrixModel, full: NDArray[np.float64]) -> MatrixSolution:
    """A full-layout start as the :class:`MatrixSolution` the matrix path takes as MIP start."""
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    result = assemble(
        TerminationCondition.OTHER_LIMIT,
        SolutionStatus.FEASIBLE,
        float(model.lp.objective_value(model.reduced(full))),
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="start",
        solver_version="",
        native_status="start",
    )
    return MatrixSolution(result=result, x=model.reduced(full))


def formulation(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    start: MipStart | None = None,
    root: bool = True,
    handed: MatrixSolution | None = None,
) -> Formulation[SimResult]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``world`` with this model.

    As :func:`optsched.sim.optimum.exact.formulation` (same extract, validation and figures), for
    the
    matrix model. With ``start`` the model is built below its value, the start is checked
    against every row, fixed column and bound (:meth:`MatrixModel.violations`), and with
    ``root`` the binaries only worse schedules set are removed (:func:`root_fixing`); the
    checked start is then written into ``handed``, the :class:`MatrixSolution` the caller passes
    to ``exact_solve`` as its warm start (its columns are known only once the model is built).

    Raises
    ------
    ModelError
        The start violates the model (named row or column).
    """
    from optsched.family.exact import Formulation

    if objective not in MATRIX_OBJECTIVES:
        raise InvalidInstanceError(
            "objective",
            f"the matrix model states {', '.join(MATRIX_OBJECTIVES)}, got {objective!r}",
        )
    replayed = ReplayedPlan(world, objective)
    held: dict[str, Any] = {}

    def build(clock: BuildClock) -> MatrixModel:
        given = start
        if given is not None and compaction_applies(world, objective):
            K = default_rounds(world, round_seconds) if rounds is None else rounds
            eps = last_run_floor(world, round_seconds, K)
            given = compact_start(world, round_seconds, given, eps, objective)
        built = build_matrix(
            world,
            round_seconds,
            objective,
            rounds=rounds,
            upper_bound=None if given is None else given.value,
            clock=clock,
        )
        clock.check("model")
        held["given"] = given
        if given is not None:
            # the start must be a point of the model before anything is pruned below it
            held["repairs"] = check_start(built, given)[1]
        if root:
            left = None if clock.time_limit is None else clock.time_limit - clock.elapsed
            if left is None or left > 0:
                given = root_pass(built, given, time_limit=left)
            clock.check("root")
        if given is None:
            return built
        full, _notes = check_start(built, given)
        built.root["start"] = given.policy
        built.root["start_value"] = given.value
        if handed is not None:
            point = start_solution(built, full)
            object.__setattr__(handed, "x", point.x)
            object.__setattr__(handed, "result", point.result)
        return built

    def extract(built: MatrixModel, point: Any) -> SimResult:
        return replayed.replay(built.plan(point.x), built.round_seconds)

    def model_rounds(built: MatrixModel) -> int:
        last = built.root.get("last_round")
        return built.rounds if last is None else min(built.rounds, int(last) + 1)

    return Formulation(
        sense=OBJECTIVES[objective],
        objective_name=objective,
        build=build,
        extract=extract,
        validate=replayed.check,
        objective_of=lambda record, _report: objective_value(world, record, objective),
        size=lambda built: built.size,
        lp_bound=lambda built, _result: built.root.get("lp_bound"),
        extra=lambda built, _record, _result: {
            "rounds": built.horizon,
            "model_rounds": model_rounds(built),
            "round_seconds": built.round_seconds,
            "strengthened": True,
            "model": "matrix",
            "root": dict(built.root),
            "polish": list(POLISH),
            "plan": replayed.plan,
            "warm_start": None
            if held.get("given") is None
            else {
                **held["given"].summary(),
                "notes": [*held["given"].notes, *held.get("repairs", [])],
            },
        },
        polish=True,
        repair=repaired_point,
        solvable=lambda built: built.lp,
    )


def check_start(model: MatrixModel, start: MipStart) -> tuple[NDArray[np.float64], list[str]]:
    """``start`` (interchangeable jobs sorted) as a full-layout point, checked against the model.

    Raises
    ------
    ModelError
        The start violates a row, a fixed or removed column or a bound (named).
    """
    ordered, notes = ordered_start(model.interchangeable, start)
    full = model.start_point(ordered)
    bad = model.violations(full)
    if bad:
        raise ModelError(f"start of {start.policy} is infeasible in the model: {bad[0]}")
    return full, notes


def repaired_point(model: MatrixModel, point: MatrixSolution) -> NDArray[np.float64] | None:
    """The schedule ``point``'s runs carry out, as a point of ``lp`` to polish (or ``None``).

    As :func:`optsched.sim.optimum.exact.repair_incumbent` for the Pyomo model: the runs re-derived
    exactly (:func:`start_from_point`) and checked against every row (:func:`check_start`), so
    that the integer columns rounded and fixed are a point of the model by construction, not a
    binary a tolerance off 1 rounded up. ``None`` (the plain rounding stands) when the runs are
    no schedule of the model.
    """
    if point.x is None:
        return None
    start = start_from_point(model, point.x)
    if start is None:
        return None
    try:
        full, _notes = check_start(model, start)
    except ModelError:
        return None
    return model.reduced(full)


def placeholder_start() -> MatrixSolution:
    """An empty :class:`MatrixSolution` that :func:`formulation`'s build fills with the start."""
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    result = assemble(
        TerminationCondition.UNKNOWN,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="start",
        solver_version="",
        native_status="start",
    )
    return MatrixSolution(result=result, x=None)


def _compact_stops(
    world: World, L: float, eps: float, first: list[int], stop: list[int]
) -> list[int]:
    """``stop`` lowered to one past each job's :func:`compact_last_rounds` (at least one round)."""
    out = list(stop)
    for ji, last in enumerate(compact_last_rounds(world, L, eps)):
        if last is not None:
            out[ji] = max(first[ji] + 1, min(out[ji], last + 1))
    return out


def compaction_applies(world: World, objective: str) -> bool:
    """Whether moving a job earlier never worsens ``objective`` (:func:`compact_last_rounds`)."""
    if objective == "makespan":
        return True
    return objective == "weighted-jct" and all(j.weight >= 0 for j in world.jobs)


def _max_runs(world: World, L: float) -> list[int]:
    r"""Per job, at most how many runs it has: :math:`\lfloor 1 / \min_g c_{jg} \rfloor + 1`.

    Runs before the last are full rounds of at least :math:`\min_g c_{jg}` each and do less
    than the whole work (the last run adds :math:`\varepsilon c > 0`).
    """
    out = []
    for j in world.jobs:
        slowest = min(world.rate(j, g, True) for g in types_for(world, j)) * L / j.work
        out.append(math.floor(1.0 / slowest) + 1)
    return out


def _single_types(world: World, L: float, eps: float, ji: int) -> list[str]:
    r"""The types a one-round job's run can be on: :math:`1 / c_{jg} \ge \varepsilon`."""
    j = world.jobs[ji]
    return [g for g in types_for(world, j) if j.work / (world.rate(j, g, True) * L) >= eps]


def compact_last_rounds(world: World, round_seconds: float, eps: float) -> list[int | None]:
    r"""Per job, the last round it ends in within a *compact* schedule (``None``: no bound).

    A schedule is compact when no one-round job (:func:`~optsched.sim.optimum.exact.one_round_jobs`)
    ending in round :math:`k^*` could run instead in an earlier round :math:`k \in [k_j, k^*)`
    on a type :math:`g` it runs on (:math:`1/c_{jg} \ge \varepsilon`) with :math:`n_j` GPUs
    free there. Moving such a job there is a schedule of the model again (its only run, the
    same share of the same type's rate) and ends it at :math:`k + 1/c_{jg} < k + 1 \le k^* <
    T_j`, so it changes no other job and lowers the total :math:`\sum_j T_j`; as the
    schedules are finitely many, moves from any schedule reach a compact one, no worse in
    ``weighted-jct`` (weights :math:`\ge 0`) or ``makespan``. Some optimum is therefore
    compact, and sorting interchangeable jobs keeps a schedule compact (the condition is the
    same for identical jobs).

    In a compact schedule every round :math:`k \in [k_j, k^*)` has fewer than :math:`n_j` free
    GPUs on every such type, so the other jobs hold at least
    :math:`B_j = \sum_g (C_g - n_j + 1)` GPUs of those types in each of these
    :math:`k^* - k_j` rounds; they hold at most :math:`Q_j = \sum_{i \ne j} n_i R_i` GPU-rounds
    of them in all, with :math:`R_i` the most runs job :math:`i` can have
    (:math:`\lfloor 1/\min_g c_{ig} \rfloor + 1`). Hence
    :math:`k^* \le k_j + \lfloor Q_j / B_j \rfloor`.
    """
    L = round_seconds
    runs = _max_runs(world, L)
    out: list[int | None] = [None] * len(world.jobs)
    count = {t.name: t.count for t in world.cluster.gpu_types}
    for ji in one_round_jobs(world, L):
        j = world.jobs[ji]
        types = _single_types(world, L, eps, ji)
        if not types:
            continue
        busy = sum(count[g] - j.num_gpus + 1 for g in types)
        mine = set(types)
        held = sum(
            i.num_gpus * runs[i.index]
            for i in world.jobs
            if i.index != ji and mine.intersection(types_for(world, i))
        )
        out[ji] = earliest_round(j.arrival, L) + held // busy
    return out


def compact_start(
    world: World, round_seconds: float, start: MipStart, eps: float, objective: str
) -> MipStart:
    """``start`` made compact (:func:`compact_last_rounds`): one-round jobs moved earlier.

    Repeatedly moves the one-round job of latest completion that has a free earlier slot to
    the slot that ends it first, until no job has one; every move lowers the job's completion
    and changes no other, so the value never rises. The moves are listed in ``notes``.
    """
    import dataclasses

    L = round_seconds
    count = {t.name: t.count for t in world.cluster.gpu_types}
    runs = [list(r) for r in start.runs]
    shares = list(start.last_share)
    used: dict[tuple[int, str], int] = {}
    for j in world.jobs:
        for k, g in runs[j.index]:
            used[k, g] = used.get((k, g), 0) + j.num_gpus
    single = one_round_jobs(world, L)
    types = {ji: _single_types(world, L, eps, ji) for ji in single}
    moved = 0
    changed = True
    while changed:
        changed = False
        for ji in sorted(single, key=lambda i: -(runs[i][-1][0] + shares[i])):
            j = world.jobs[ji]
            k, g = runs[ji][-1]
            best: tuple[float, int, str] | None = None
            for q in range(earliest_round(j.arrival, L), k):
                for h in types[ji]:
                    if count[h] - used.get((q, h), 0) >= j.num_gpus:
                        t = q + j.work / (world.rate(j, h, True) * L)
                        if best is None or t < best[0]:
                            best = (t, q, h)
                if best is not None:
                    break  # the earliest round with a free slot ends the job first
            if best is None:
                continue
            _, q, h = best
            used[k, g] -= j.num_gpus
            used[q, h] = used.get((q, h), 0) + j.num_gpus
            runs[ji] = [(q, h)]
            shares[ji] = j.work / (world.rate(j, h, True) * L)
            moved += 1
            changed = True
    if not moved:
        return start
    done = [L * (r[-1][0] + u) for r, u in zip(runs, shares, strict=True)]
    return dataclasses.replace(
        start,
        runs=tuple(tuple(r) for r in runs),
        last_share=tuple(shares),
        value=value_of(world, done, objective),
        notes=(*start.notes, f"{moved} one-round job(s) moved to an earlier free slot"),
    )
