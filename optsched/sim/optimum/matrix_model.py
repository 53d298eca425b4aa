r"""The built matrix model (:class:`MatrixModel`): its program and how to read its points.

:func:`optsched.sim.optimum.exact_matrix.build_matrix` builds it; here is what decoding a point
needs (completion times, value, the per-round plan), a start as a point of it
(:meth:`MatrixModel.start_point`) and the check of a point against every row, fixed column and
bound (:meth:`MatrixModel.violations`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from optsched.errors import ModelError
from optsched.sim.engine.policy import GrantPlacement
from optsched.sim.optimum.matrix_layout import parity_coefficients, work_shares
from optsched.sim.optimum.rounds import MipStart, one_round_jobs, pack_round, value_of
from optsched.sim.world.jobs import World
from optsched.solvers.matrix import LinearProgram
from optsched.tolerances import CAPACITY_TOL

__all__ = ["MatrixModel"]


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
        shares = work_shares(world, self.round_seconds, self.type_names)
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
