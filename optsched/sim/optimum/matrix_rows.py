r"""The matrix model's rows, one function per constraint family.

:func:`optsched.sim.optimum.exact_matrix.build_matrix` lays the columns out once
(:func:`~optsched.sim.optimum.matrix_layout.matrix_layout`), then adds the row families in the
order of :data:`MODEL_ROWS` and :data:`CUT_ROWS`, each by the function named after it
(``capacity`` by :func:`capacity_rows`, ``parity`` by :func:`parity_rows`, ...). The families
and their constraints are the formulation page's tables (``docs/formulations/sim_exact.rst``,
which names these functions); the proofs of the matrix model's own rows are in the docstrings
here.

Notation of the code: ``MK``/``SK`` the ``x`` keys of the other / the one-round jobs,
``ME``/``SE`` their ``(job, round)`` entries, ``loc`` an entry's position among its kind (the
fields of :class:`~optsched.sim.optimum.matrix_layout.MatrixLayout`).

Complexity: every family is :math:`O(\mathrm{nnz})` numpy work, but ``gang_clique``
(:math:`O(n^2 K G)` at most, over the big gangs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from optsched.sim.optimum.matrix_layout import MatrixLayout, Rows, parity_coefficients
from optsched.sim.optimum.rounds import area_sets, interchangeable_groups

__all__ = [
    "CUT_ROWS",
    "MODEL_ROWS",
    "area_cut_rows",
    "capacity_rows",
    "completion_rows",
    "cumulative_rows",
    "end_cumulative_rows",
    "end_run_rows",
    "end_share_rows",
    "end_type_rows",
    "ends_on_fast_rows",
    "final_round_runs_rows",
    "finished_by_rows",
    "full_round_rows",
    "full_unless_end_rows",
    "gang_clique_rows",
    "interchangeable_rows",
    "last_run_positive_rows",
    "last_share_rows",
    "no_run_after_final_rows",
    "one_final_rows",
    "one_round_rows",
    "one_run_rows",
    "parity_early_rows",
    "parity_late_rows",
    "parity_rows",
    "partial_last_rows",
    "remaining_rows",
    "run_upper_rows",
    "span_def_rows",
    "work_rows",
]

IntArray = NDArray[np.int64]


# -- the model's rows (the Pyomo model's, on the substitutions E and W) -----------------------


def _capacity_ids(lay: MatrixLayout) -> IntArray:
    """Per key, its ``(round, type)`` pair as one id."""
    return lay.kk * len(lay.count) + lay.kg


def capacity_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``capacity[k, g]``: :math:`\sum_j n_j x_{jkg} \le C_g`."""
    G = len(lay.count)
    used, cap_row = np.unique(_capacity_ids(lay), return_inverse=True)
    rows.add("capacity", used.size, cap_row, lay.xs, lay.kn, -math.inf, lay.count[used % G])


def gang_clique_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``gang_clique[i]``: gangs of which no two fit one round of a type together.

    In round :math:`k` on type :math:`g`, the jobs of the big gangs :math:`Q = \{a: 2 n_a >
    C_g\}` pairwise exceed :math:`C_g`, and so does a gang :math:`i` with
    :math:`n_i + \min_{a \in Q} n_a > C_g` with each of them: at most one of them runs,

    .. math:: x_{ikg} + \sum_{a \in Q,\, a \ne i} x_{akg} \le 1

    (one row per such :math:`i`, and one for :math:`Q` alone). ``capacity`` lets the LP run
    half a big gang beside a whole small one.
    """
    cap_id, kn, cap, xs = _capacity_ids(lay), lay.kn, lay.count[lay.kg], lay.xs
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


def one_final_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``one_final[j]``: :math:`E_{j k_j} = 1` (:math:`\sum_k e_{jk} = 1` for a one-round job)."""
    multi_jobs, single_arr = lay.multi_jobs, lay.single_arr
    jrow = np.zeros(lay.n, dtype=np.int64)
    jrow[multi_jobs] = np.arange(multi_jobs.size)
    jrow[single_arr] = multi_jobs.size + np.arange(single_arr.size)
    rows.add(
        "one_final",
        lay.n,
        np.concatenate([jrow[multi_jobs], jrow[lay.ej[lay.SE]]]),
        np.concatenate([lay.Es[lay.e_base[multi_jobs]], lay.es[lay.SE]]),
        1.0,
        1.0,
        1.0,
    )


def remaining_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``remaining[j, k]``: :math:`E_{jk} - e_{jk} - E_{j,k+1} = 0`."""
    ME, rm, mnext = lay.ME, lay.rm, lay.mnext
    rows.add(
        "remaining",
        ME.size,
        np.concatenate([rm, rm, lay.loc[mnext]]),
        np.concatenate([lay.Es[ME], lay.es[ME], lay.Es[mnext + 1]]),
        np.concatenate([np.ones(ME.size), -np.ones(ME.size), -np.ones(mnext.size)]),
        0.0,
        0.0,
    )


def no_run_after_final_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``no_run_after_final[j, k]``: :math:`\sum_g x_{jkg} - E_{jk} \le 0`."""
    MK, ME = lay.MK, lay.ME
    rows.add(
        "no_run_after_final",
        ME.size,
        np.concatenate([lay.loc[lay.kpos[MK]], lay.rm]),
        np.concatenate([lay.xs[MK], lay.Es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        -math.inf,
        0.0,
    )


def final_round_runs_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``final_round_runs[j, k]``: :math:`\sum_g x_{jkg} - e_{jk} \ge 0`."""
    MK, ME = lay.MK, lay.ME
    rows.add(
        "final_round_runs",
        ME.size,
        np.concatenate([lay.loc[lay.kpos[MK]], lay.rm]),
        np.concatenate([lay.xs[MK], lay.es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        0.0,
        math.inf,
    )


def one_run_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``one_run[j, k]`` (one-round jobs): :math:`\sum_g x_{jkg} - e_{jk} = 0`.

    For a job of :func:`~optsched.sim.optimum.rounds.one_round_jobs` it implies, with
    ``one_round`` and ``one_final``, the rows the other jobs get (the formulation page lists
    them), which are not built for it.
    """
    SK, SE = lay.SK, lay.SE
    rows.add(
        "one_run",
        SE.size,
        np.concatenate([lay.loc[lay.kpos[SK]], np.arange(SE.size)]),
        np.concatenate([lay.xs[SK], lay.es[SE]]),
        np.concatenate([np.ones(SK.size), -np.ones(SE.size)]),
        0.0,
        0.0,
    )


def run_upper_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``run_upper[j, k, g]``: :math:`u - x \le 0`."""
    MK, rk = lay.MK, lay.rk
    rows.add("run_upper", MK.size, np.concatenate([rk, rk]),
             np.concatenate([lay.us[MK], lay.xs[MK]]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size)]), -math.inf, 0.0)  # fmt: skip


def full_round_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``full_round[j, k, g]``: :math:`u - x + e \ge 0`."""
    MK, rk = lay.MK, lay.rk
    rows.add(
        "full_round",
        MK.size,
        np.concatenate([rk, rk, rk]),
        np.concatenate([lay.us[MK], lay.xs[MK], lay.es[lay.kpos[MK]]]),
        np.concatenate([np.ones(MK.size), -np.ones(MK.size), np.ones(MK.size)]),
        0.0,
        math.inf,
    )


def partial_last_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``partial_last[j, k]``: :math:`\sum_g (x - u) - (1 - \varepsilon) e \le 0`."""
    MK, ME, at = lay.MK, lay.ME, lay.loc[lay.kpos[lay.MK]]
    rows.add(
        "partial_last",
        ME.size,
        np.concatenate([at, at, lay.rm]),
        np.concatenate([lay.xs[MK], lay.us[MK], lay.es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(MK.size), -(1.0 - lay.eps) * np.ones(ME.size)]),
        -math.inf,
        0.0,
    )


def last_run_positive_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``last_run_positive[j, k, g]``: :math:`u - \varepsilon x \ge 0`."""
    MK, rk = lay.MK, lay.rk
    rows.add("last_run_positive", MK.size, np.concatenate([rk, rk]),
             np.concatenate([lay.us[MK], lay.xs[MK]]),
             np.concatenate([np.ones(MK.size), -lay.eps * np.ones(MK.size)]),
             0.0, math.inf)  # fmt: skip


def cumulative_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``cumulative[j, k]``: :math:`W_{jk} - W_{j,k-1} - \sum_g c_{jg} x_{jkg} = 0`."""
    MK, ME, mprev = lay.MK, lay.ME, lay.mprev
    rows.add(
        "cumulative",
        ME.size,
        np.concatenate([lay.rm, lay.loc[mprev], lay.loc[lay.kpos[MK]]]),
        np.concatenate([lay.Ws[ME], lay.Ws[mprev - 1], lay.xs[MK]]),
        np.concatenate([np.ones(ME.size), -np.ones(mprev.size), -lay.kc[MK]]),
        0.0,
        0.0,
    )


def finished_by_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``finished_by[j, k]``: :math:`W_{jk} + E_{j,k+1} \ge 1`."""
    ME, mnext = lay.ME, lay.mnext
    rows.add(
        "finished_by",
        ME.size,
        np.concatenate([lay.rm, lay.loc[mnext]]),
        np.concatenate([lay.Ws[ME], lay.Es[mnext + 1]]),
        1.0,
        1.0,
        math.inf,
    )


def work_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``work[j]``: :math:`\sum_{k,g} c_{jg} u_{jkg} = 1` (the other jobs)."""
    MK, multi_jobs = lay.MK, lay.multi_jobs
    wrow = np.full(lay.n, -1, dtype=np.int64)
    wrow[multi_jobs] = np.arange(multi_jobs.size)
    rows.add("work", multi_jobs.size, wrow[lay.kj[MK]], lay.us[MK], lay.kc[MK], 1.0, 1.0)


def completion_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``completion[j]``: :math:`T_j - \sum_k k e_{jk} - \sum (u - x) = 1`."""
    n, nk = lay.n, lay.nk
    rows.add(
        "completion",
        n,
        np.concatenate([np.arange(n), lay.ej, lay.kj, lay.kj]),
        np.concatenate([lay.off["T"] + np.arange(n), lay.es, lay.us, lay.xs]),
        np.concatenate([np.ones(n), -lay.ek.astype(np.float64), -np.ones(nk), np.ones(nk)]),
        1.0,
        1.0,
    )


# -- the last-run type f of the jobs that are not one-round ----------------------------------
#
# In a schedule the last round runs on exactly one type, every other run is full, and the last
# share completes the work; f_jkg = x_jkg e_jk ties the last share to the type the job ends on,
# which full_round and last_share (on e_jk, summed over the types) leave loose.


def _end_columns(lay: MatrixLayout) -> tuple[IntArray, IntArray]:
    """The columns of ``f`` (per other job's key) and of ``F`` (per entry)."""
    return lay.off["f"] + np.arange(lay.MK.size), lay.off["F"] + np.arange(int(lay.Ws.size))


def end_type_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``end_type[j, k]``: :math:`\sum_g f_{jkg} = e_{jk}` (the last round is on one type)."""
    MK, ME = lay.MK, lay.ME
    if MK.size == 0:
        return
    fs, _Fs = _end_columns(lay)
    rows.add(
        "end_type",
        ME.size,
        np.concatenate([lay.loc[lay.kpos[MK]], np.arange(ME.size)]),
        np.concatenate([fs, lay.es[ME]]),
        np.concatenate([np.ones(MK.size), -np.ones(ME.size)]),
        0.0,
        0.0,
    )


def end_run_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``end_run[j, k, g]``: :math:`f_{jkg} \le x_{jkg}`."""
    MK, rk = lay.MK, lay.rk
    if MK.size == 0:
        return
    fs, _Fs = _end_columns(lay)
    rows.add("end_run", MK.size, np.concatenate([rk, rk]), np.concatenate([fs, lay.xs[MK]]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size)]), -math.inf, 0.0)  # fmt: skip


def full_unless_end_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``full_unless_end[j, k, g]``: :math:`u_{jkg} \ge x_{jkg} - f_{jkg}`."""
    MK, rk = lay.MK, lay.rk
    if MK.size == 0:
        return
    fs, _Fs = _end_columns(lay)
    rows.add("full_unless_end", MK.size, np.concatenate([rk, rk, rk]),
             np.concatenate([lay.us[MK], lay.xs[MK], fs]),
             np.concatenate([np.ones(MK.size), -np.ones(MK.size), np.ones(MK.size)]),
             0.0, math.inf)  # fmt: skip


def end_share_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``end_share[j, k, g]``: :math:`c_{jg} u_{jkg} + W_{j,k-1} - F_{j,k-1} \ge f_{jkg}`.

    :math:`F_{jk} = \sum_{q \le k, g} c_{jg} f_{jqg}` (``end_cumulative``), so :math:`W - F` is
    the work of the full runs before round :math:`k`. Where :math:`f_{jkg} = 1` no run before
    is the last (:math:`F_{j,k-1} = 0`) and the work is done exactly; elsewhere the left side
    is at least :math:`\sum_{q<k,g} c_{jg} (x_{jqg} - f_{jqg}) \ge 0`.
    """
    MK, rk = lay.MK, lay.rk
    if MK.size == 0:
        return
    fs, Fs = _end_columns(lay)
    prev = np.flatnonzero(~lay.first_of_job[lay.kpos[MK]])
    before = lay.kpos[MK][prev] - 1
    rows.add(
        "end_share",
        MK.size,
        np.concatenate([rk, prev, prev, rk]),
        np.concatenate([lay.us[MK], lay.Ws[before], Fs[before], fs]),
        np.concatenate([lay.kc[MK], np.ones(prev.size), -np.ones(prev.size), -np.ones(MK.size)]),
        0.0,
        math.inf,
    )


def end_cumulative_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``end_cumulative[j, k]``: :math:`F_{jk} - F_{j,k-1} - \sum_g c_{jg} f_{jkg} = 0`."""
    MK, ME, mprev = lay.MK, lay.ME, lay.mprev
    if MK.size == 0:
        return
    fs, Fs = _end_columns(lay)
    rows.add(
        "end_cumulative",
        ME.size,
        np.concatenate([lay.rm, lay.loc[mprev], lay.loc[lay.kpos[MK]]]),
        np.concatenate([Fs[ME], Fs[mprev - 1], fs]),
        np.concatenate([np.ones(ME.size), -np.ones(mprev.size), -lay.kc[MK]]),
        0.0,
        0.0,
    )


# -- parity cuts ---------------------------------------------------------------------------


def parity_early_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``parity_early[r]``: the early sums :math:`P_r` of the parity cuts, round by round.

    :math:`P_r - P_{r-1} - \sum_{j \notin O, g} \lfloor n_j/2 \rfloor x_{jrg} = 0`
    (:func:`parity_rows`).
    """
    last = lay.plast
    if last == 0:
        return
    a_early, _a_late = parity_coefficients(lay.kn, lay.sk)
    P = lay.off["P"] + np.arange(last)
    r = np.arange(last)
    ek = np.flatnonzero((a_early > 0) & (lay.kk < last))
    rows.add(
        "parity_early",
        last,
        np.concatenate([r, r[1:], lay.kk[ek]]),
        np.concatenate([P, P[:-1], lay.xs[ek]]),
        np.concatenate([np.ones(last), -np.ones(last - 1), -a_early[ek]]),
        0.0,
        0.0,
    )


def parity_late_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``parity_late[r]``: the late sums :math:`Q_r` of the parity cuts, round by round.

    :math:`Q_r - Q_{r+1} - \sum_{i \in O, g} \lceil n_i/2 \rceil x_{i,r+1,g} = 0`, every
    round from ``plast`` on at the last :math:`r` (:func:`parity_rows`).
    """
    last = lay.plast
    if last == 0:
        return
    _a_early, a_late = parity_coefficients(lay.kn, lay.sk)
    Q = lay.off["Q"] + np.arange(last)
    r = np.arange(last)
    lk = np.flatnonzero((a_late > 0) & (lay.kk >= 1))
    row_of = np.minimum(lay.kk[lk] - 1, last - 1)
    rows.add(
        "parity_late",
        last,
        np.concatenate([r, r[:-1], row_of]),
        np.concatenate([Q, Q[1:], lay.xs[lk]]),
        np.concatenate([np.ones(last), -np.ones(last - 1), -a_late[lk]]),
        0.0,
        0.0,
    )


def parity_rows(rows: Rows, lay: MatrixLayout) -> None:
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
    last = lay.plast
    if last == 0:
        return
    sizes = [j.num_gpus for j in lay.world.jobs]
    first, stop, odd_multi = lay.first, lay.stop, lay.odd_multi
    N_O = float(sum(sizes[j] for j in lay.odd_single) + sum(sizes[j] for j in odd_multi))
    extra_rhs = float(sum(sizes[j] // 2 for j in odd_multi))
    P = lay.off["P"] + np.arange(last)
    Q = lay.off["Q"] + np.arange(last)
    arrived = np.zeros(last)
    for j, f in enumerate(first):
        if f < last:
            arrived[f] += sizes[j]
    # GPUs a round can hold: the cluster's, or the gangs arrived by then
    room = np.cumsum(np.minimum(float(lay.count.sum()), np.cumsum(arrived)))
    odd_rows = np.flatnonzero((room - N_O) % 2 == 1)
    if not odd_rows.size:
        return
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
        cc.append(lay.Es[lay.e_base[j] + nxt[inside] - first[j]])
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


# -- the strengthened model's valid inequalities (exact._strengthen, as rows) ----------------


def interchangeable_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``interchangeable[p]``: :math:`T_i - T_j \le 0` for consecutive interchangeable jobs.

    The pairs of :func:`~optsched.sim.optimum.rounds.interchangeable_groups` whose jobs keep
    the same rounds (``stop``), as in the Pyomo model.
    """
    T = lay.off["T"] + np.arange(lay.n)
    pairs: list[tuple[int, int]] = []
    for group in interchangeable_groups(lay.world, lay.L):
        same = [j for j in group if lay.stop[j] == lay.stop[group[0]]]
        pairs += list(itertools.pairwise(same))
    if pairs:
        p = np.asarray(pairs, dtype=np.int64)
        rp = np.arange(len(pairs))
        ones = np.ones(len(pairs))
        rows.add("interchangeable", len(pairs), np.concatenate([rp, rp]),
                 np.concatenate([T[p[:, 0]], T[p[:, 1]]]),
                 np.concatenate([ones, -ones]), -math.inf, 0.0)  # fmt: skip


def area_cut_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``area_cut[s]``: :math:`\sum_{j \in S} P_j T_j \ge` the right side of its set.

    The sets, :math:`P_j` and right sides are :func:`~optsched.sim.optimum.rounds.area_sets`'.
    """
    T = lay.off["T"] + np.arange(lay.n)
    sets, coef, rhs = area_sets(lay.world, lay.L)
    if sets:
        rr = np.concatenate([np.full(len(S), s) for s, S in enumerate(sets)])
        cc = np.concatenate([T[np.asarray(S)] for S in sets])
        pj = np.asarray(coef, dtype=np.float64)
        vv = np.concatenate([pj[np.asarray(S)] for S in sets])
        rows.add("area_cut", len(sets), rr, cc, vv, np.asarray(rhs), math.inf)


def one_round_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``one_round[j, k, g]``: :math:`c_{jg} u - x = 0`, a job one run finishes on any type."""
    one = np.flatnonzero(lay.sk)
    if one.size:
        ro = np.arange(one.size)
        rows.add("one_round", one.size, np.concatenate([ro, ro]),
                 np.concatenate([lay.us[one], lay.xs[one]]),
                 np.concatenate([lay.kc[one], -np.ones(one.size)]), 0.0, 0.0)  # fmt: skip


def ends_on_fast_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``ends_on_fast[j, k, g]``: :math:`x - e \le 0` where a full round does the whole work.

    Implied by ``one_run`` for a one-round job, so built for the others only.
    """
    fast = np.flatnonzero((lay.kc >= 1.0) & ~lay.sk)
    if fast.size:
        rf = np.arange(fast.size)
        rows.add("ends_on_fast", fast.size, np.concatenate([rf, rf]),
                 np.concatenate([lay.xs[fast], lay.es[lay.kpos[fast]]]),
                 np.concatenate([np.ones(fast.size), -np.ones(fast.size)]),
                 -math.inf, 0.0)  # fmt: skip


def last_share_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``last_share[j, k, g]``: the last share completes the work (the other jobs).

    :math:`c u + W_{j,k-1} - x - e \ge -1`, and :math:`c u + W_{j,k-1} - x \ge 0` where
    :math:`c \ge 1`.
    """
    kc, kpos = lay.kc, lay.kpos
    rest = np.flatnonzero(~lay.sk)
    if rest.size:
        fastr = kc[rest] >= 1.0
        has_prev = ~lay.first_of_job[kpos[rest]]
        rl = np.arange(rest.size)
        pr = np.flatnonzero(has_prev)
        slow = np.flatnonzero(~fastr)
        rows.add(
            "last_share",
            rest.size,
            np.concatenate([rl, rl, pr, slow]),
            np.concatenate(
                [lay.us[rest], lay.xs[rest], lay.Ws[kpos[rest][pr] - 1], lay.es[kpos[rest][slow]]]
            ),
            np.concatenate([kc[rest], -np.ones(rest.size), np.ones(pr.size), -np.ones(slow.size)]),
            np.where(fastr, 0.0, -1.0),
            math.inf,
        )


def span_def_rows(rows: Rows, lay: MatrixLayout) -> None:
    r"""``span_def[j]`` (``makespan``): :math:`\mathit{span} - L T_j \ge 0`."""
    if lay.objective != "makespan":
        return
    n = lay.n
    rows.add(
        "span_def",
        n,
        np.concatenate([np.arange(n), np.arange(n)]),
        np.concatenate([np.full(n, lay.off["span"]), lay.off["T"] + np.arange(n)]),
        np.concatenate([np.ones(n), -lay.L * np.ones(n)]),
        0.0,
        math.inf,
    )


#: The families of the model, in row order: the Pyomo model's rows on the substitutions, the
#: last-run type and the parity cuts.
MODEL_ROWS: tuple[Callable[[Rows, MatrixLayout], None], ...] = (
    capacity_rows,
    gang_clique_rows,
    one_final_rows,
    remaining_rows,
    no_run_after_final_rows,
    final_round_runs_rows,
    one_run_rows,
    run_upper_rows,
    full_round_rows,
    partial_last_rows,
    last_run_positive_rows,
    cumulative_rows,
    finished_by_rows,
    work_rows,
    completion_rows,
    end_type_rows,
    end_run_rows,
    full_unless_end_rows,
    end_share_rows,
    end_cumulative_rows,
    parity_early_rows,
    parity_late_rows,
    parity_rows,
)

#: The families after them: the strengthened model's valid inequalities and the makespan's.
CUT_ROWS: tuple[Callable[[Rows, MatrixLayout], None], ...] = (
    interchangeable_rows,
    area_cut_rows,
    one_round_rows,
    ends_on_fast_rows,
    last_share_rows,
    span_def_rows,
)
