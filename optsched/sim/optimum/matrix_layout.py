r"""The matrix model's column layout, and its column bounds, integrality and objective.

:func:`matrix_layout` lays the columns of
:func:`~optsched.sim.optimum.exact_matrix.build_matrix` out once: which job, round and type each
``x``/``u`` key and each ``e``/``E``/``W`` entry is, where every variable block starts, and the
index arrays every row family of :mod:`optsched.sim.optimum.matrix_rows` reads.
:func:`column_bounds` sets the columns' bounds, integrality and costs; :class:`Rows` collects
the rows family by family.

Complexity: :math:`O(n K G)` for :math:`n` jobs, :math:`K` rounds and :math:`G` GPU types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.errors import InvalidInstanceError
from optsched.sim.optimum.rounds import completion_floor, one_round_jobs, types_for
from optsched.sim.world.jobs import World
from optsched.tolerances import RATIO_TOL, WORK_TOL

__all__ = [
    "MatrixLayout",
    "Rows",
    "column_bounds",
    "matrix_layout",
    "parity_coefficients",
    "work_shares",
]

IntArray = NDArray[np.int64]


def work_shares(world: World, L: float, names: list[str]) -> NDArray[np.float64]:
    r""":math:`c_{jg}` per job and type (0 where the job cannot run)."""
    out = np.zeros((len(world.jobs), len(names)))
    for j in world.jobs:
        for g in types_for(world, j):
            out[j.index, names.index(g)] = world.rate(j, g, True) * L / j.work
    return out


class Rows:
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
        """The rows added so far as a CSC matrix of ``n`` columns (duplicates summed)."""
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


@dataclass
class MatrixLayout:
    """The column layout of the matrix model and the index arrays every row family reads.

    Attributes
    ----------
    world, L, objective, eps
        The world, round length, objective and last-run floor.
    first, stop : list of int
        Per job, its first round and one past its last.
    c : ndarray, shape (n, G)
        :math:`c_{jg}` (:func:`shares`).
    n, nk, ne, nf, plast, ncol : int
        Jobs, ``x`` keys, ``(job, round)`` entries, ``f`` columns, parity rounds, columns.
    off : dict of str to int
        First column of each variable block (``x``, ``u``, ``e``, ``E``, ``W``, ``T``, ``f``,
        ``F``, ``P``, ``Q`` and, for ``makespan``, ``span``).
    kj, kk, kg : ndarray
        Job, round and type of each ``x``/``u`` key.
    ej, ek : ndarray
        Job and round of each ``e``/``E``/``W`` entry; ``e_base`` a job's first entry.
    kpos, kc, kn : ndarray
        Per key, its entry, its share :math:`c_{jg}` and its gang size.
    xs, us, es, Es, Ws : ndarray
        The columns of ``x``, ``u`` (per key) and ``e``, ``E``, ``W`` (per entry).
    first_of_job, last_of_job : ndarray of bool
        Per entry, whether it is its job's first / last round.
    single_arr, multi_jobs : ndarray
        The one-round jobs and the others.
    sk, se : ndarray of bool
        Per key / entry, whether its job is a one-round job.
    MK, SK, ME, SE, loc, rm, rk, mnext, mprev : ndarray
        Keys and entries of the other (``M``) and one-round (``S``) jobs, each entry's position
        among its kind, ``arange`` of the ``ME`` entries and ``MK`` keys, and the ``ME``
        entries with a next / a previous round.
    count : ndarray
        GPUs per type.
    odd_single, odd_multi : list of int
        One-round jobs and other jobs of odd gang size (the parity cuts).
    """

    world: World
    L: float
    objective: str
    eps: float
    first: list[int]
    stop: list[int]
    c: NDArray[np.float64]
    n: int
    nk: int
    ne: int
    nf: int
    plast: int
    ncol: int
    off: dict[str, int]
    kj: IntArray
    kk: IntArray
    kg: IntArray
    ej: IntArray
    ek: IntArray
    e_base: IntArray
    kpos: IntArray
    kc: NDArray[np.float64]
    kn: NDArray[np.float64]
    xs: IntArray
    us: IntArray
    es: IntArray
    Es: IntArray
    Ws: IntArray
    first_of_job: NDArray[np.bool_]
    last_of_job: NDArray[np.bool_]
    single_arr: IntArray
    multi_jobs: IntArray
    sk: NDArray[np.bool_]
    se: NDArray[np.bool_]
    MK: IntArray
    SK: IntArray
    ME: IntArray
    SE: IntArray
    loc: IntArray
    rm: IntArray
    rk: IntArray
    mnext: IntArray
    mprev: IntArray
    count: NDArray[np.float64]
    odd_single: list[int]
    odd_multi: list[int]


def _keys_and_entries(
    c: NDArray[np.float64], first: list[int], stop: list[int]
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
    """``kj, kk, kg`` (every job's rounds times its types) and ``ej, ek, e_base``."""
    n = len(first)
    kj_l, kk_l, kg_l, ej_l, ek_l = [], [], [], [], []
    e_base = np.zeros(n, dtype=np.int64)
    ne = 0
    for ji in range(n):
        tj = np.flatnonzero(c[ji] > 0)
        R = stop[ji] - first[ji]
        ks = np.arange(first[ji], stop[ji])
        e_base[ji] = ne
        kj_l.append(np.full(R * tj.size, ji))
        kk_l.append(np.repeat(ks, tj.size))
        kg_l.append(np.tile(tj, R))
        ej_l.append(np.full(R, ji))
        ek_l.append(ks)
        ne += R
    kj, kk, kg = (np.concatenate(a).astype(np.int64) for a in (kj_l, kk_l, kg_l))
    ej, ek = (np.concatenate(a).astype(np.int64) for a in (ej_l, ek_l))
    return kj, kk, kg, ej, ek, e_base


def matrix_layout(
    world: World,
    L: float,
    objective: str,
    eps: float,
    first: list[int],
    stop: list[int],
    names: list[str],
) -> MatrixLayout:
    """The columns of the matrix model for the rounds ``first..stop`` of each job."""
    jobs = world.jobs
    n = len(jobs)
    c = work_shares(world, L, names)
    single = set(one_round_jobs(world, L))
    kj, kk, kg, ej, ek, e_base = _keys_and_entries(c, first, stop)
    nk, ne = int(kj.size), int(ej.size)
    off = {"x": 0, "u": nk, "e": 2 * nk, "E": 2 * nk + ne, "W": 2 * nk + 2 * ne}
    off["T"] = 2 * nk + 3 * ne
    # f: the last-run type indicator of the other jobs' keys (see matrix_rows.end_type_rows)
    multi_key = ~np.isin(kj, np.fromiter(sorted(single), dtype=np.int64, count=len(single)))
    nf = int(multi_key.sum())
    off["f"] = off["T"] + n
    # P, Q: the two sums of the parity cuts, per round (see matrix_rows.parity_rows)
    odd_single = [j for j in single if jobs[j].num_gpus % 2 == 1]
    plast = max((stop[j] for j in single), default=0) if odd_single else 0
    off["F"] = off["f"] + nf
    off["P"] = off["F"] + ne
    off["Q"] = off["P"] + plast
    ncol = off["Q"] + plast
    if objective == "makespan":
        off["span"] = ncol
        ncol += 1
    # the next (job, round) entry of the same job, -1 at a job's last round
    last_of_job = np.zeros(ne, dtype=bool)
    for j in jobs:
        last_of_job[e_base[j.index] + stop[j.index] - first[j.index] - 1] = True
    first_of_job = np.zeros(ne, dtype=bool)
    first_of_job[e_base] = True
    # one-round jobs (one run does all the work) get the rows that are not implied for them
    # (see matrix_rows.one_run_rows); the others get the model's rows
    single_arr = np.fromiter(sorted(single), dtype=np.int64, count=len(single))
    sk = np.isin(kj, single_arr)
    se = np.isin(ej, single_arr)
    MK, SK = np.flatnonzero(~sk), np.flatnonzero(sk)
    ME, SE = np.flatnonzero(~se), np.flatnonzero(se)
    loc = np.full(ne, -1, dtype=np.int64)
    loc[ME] = np.arange(ME.size)
    loc[SE] = np.arange(SE.size)
    return MatrixLayout(
        world=world,
        L=L,
        objective=objective,
        eps=eps,
        first=first,
        stop=stop,
        c=c,
        n=n,
        nk=nk,
        ne=ne,
        nf=nf,
        plast=plast,
        ncol=ncol,
        off=off,
        kj=kj,
        kk=kk,
        kg=kg,
        ej=ej,
        ek=ek,
        e_base=e_base,
        # per key: its (job, round) position, its share, gang size
        kpos=e_base[kj] + (kk - np.asarray(first)[kj]),
        kc=c[kj, kg],
        kn=np.asarray([j.num_gpus for j in jobs], dtype=np.float64)[kj],
        xs=np.arange(nk) + off["x"],
        us=np.arange(nk) + off["u"],
        es=np.arange(ne) + off["e"],
        Es=np.arange(ne) + off["E"],
        Ws=np.arange(ne) + off["W"],
        first_of_job=first_of_job,
        last_of_job=last_of_job,
        single_arr=single_arr,
        multi_jobs=np.asarray([j.index for j in jobs if j.index not in single], dtype=np.int64),
        sk=sk,
        se=se,
        MK=MK,
        SK=SK,
        ME=ME,
        SE=SE,
        loc=loc,
        rm=np.arange(ME.size),
        rk=np.arange(MK.size),
        mnext=ME[~last_of_job[ME]],  # entries of ME with a next round
        mprev=ME[~first_of_job[ME]],
        count=np.asarray([t.count for t in world.cluster.gpu_types], dtype=np.float64),
        odd_single=odd_single,
        odd_multi=[j.index for j in jobs if j.index not in single and j.num_gpus % 2 == 1],
    )


def parity_coefficients(
    kn: NDArray[np.float64], sk: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per key, its coefficient in the parity cuts' early and late sums (:func:`parity_rows`)."""
    odd = sk & (kn % 2 == 1)
    early = np.where(odd, 0.0, np.floor(kn / 2.0))
    late = np.where(odd, np.ceil(kn / 2.0), 0.0)
    return early, late


# -- bounds, integrality, objective ----------------------------------------------------------


def column_bounds(
    lay: MatrixLayout, horizon: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64], float]:
    """Column bounds, integrality, objective and its constant of the layout.

    Raises
    ------
    InvalidInstanceError
        A job whose completion floor is past its last round (field ``rounds``).
    """
    world, L, off, ncol = lay.world, lay.L, lay.off, lay.ncol
    jobs = world.jobs
    n, nk, ne, nf = lay.n, lay.nk, lay.ne, lay.nf
    c, ej, ek, stop = lay.c, lay.ej, lay.ek, lay.stop
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
    if lay.objective == "makespan":
        upper[off["span"]] = K * L
    # e fixed 0 before a job's fastest full rounds allow it to end (as the Pyomo model)
    cmax = c.max(axis=1)
    need = np.maximum(1, np.ceil((1.0 - WORK_TOL) / cmax)).astype(np.int64)
    early = ek < np.asarray(lay.first)[ej] + need[ej] - 1
    upper[off["e"] + np.flatnonzero(early)] = 0.0
    # one_round with last_run_positive: a one-round job cannot run where 1 / c < eps
    tiny = np.flatnonzero(lay.sk & (1.0 / lay.kc < lay.eps))
    upper[off["x"] + tiny] = 0.0
    upper[off["u"] + tiny] = 0.0
    ints = np.zeros(ncol, dtype=bool)
    ints[: 2 * nk + ne] = True
    ints[off["u"] : off["u"] + nk] = False
    ints[off["f"] : off["f"] + nf] = True
    # F_jk <= max_g c_jg (one last run); unused (one-round jobs) at 0
    upper[off["F"] : off["F"] + ne] = np.where(single_job[ej], 0.0, c.max(axis=1)[ej])
    # P_r, Q_r: at most every key's coefficient
    a_early, a_late = parity_coefficients(lay.kn, lay.sk)
    plast = off["Q"] - off["P"]
    upper[off["P"] : off["P"] + plast] = float(a_early.sum())
    upper[off["Q"] : off["Q"] + plast] = float(a_late.sum())
    cost = np.zeros(ncol)
    offset = 0.0
    if lay.objective == "weighted-jct":
        w = np.asarray([j.weight for j in jobs], dtype=np.float64)
        cost[off["T"] : off["T"] + n] = w * L
        offset = -float(sum(j.weight * j.arrival for j in jobs))
    else:
        cost[off["span"]] = 1.0
        offset = -world.origin  # the makespan counts from the first arrival
    return lower, upper, ints, cost, offset
