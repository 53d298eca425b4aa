r"""The exact time-indexed ILP of the family, in two objectives.

One Pyomo model over slots serves both exact problems of the family:

* ``"completion"`` (:func:`solve`): the offline optimum, :math:`\min \sum_j w_j C_j` over every
  job, each job :math:`j` restricted to slots :math:`a_j \le t < D_j` with the completion bounds
  :math:`D_j` of :meth:`~optsched.online.aonline.AonlineInstance.completion_bounds` (no optimal
  schedule
  is lost);
* ``"packing"`` (:func:`pack_exact`): the interval problem of the doubling reduction,
  :math:`\max \sum_{j \in P} w_j x_j` over the pending jobs :math:`P` that can *finish* within
  the slots :math:`[b, b + \ell)`.

Variables (per job :math:`j`, slot :math:`t` in its window, pool :math:`g`, server :math:`s`):
:math:`y_{jtgs} \in \{0,1\}` the gang sits on server :math:`s` (only where it fits),
:math:`z_{jtg} \in \{0,1\}` it is spread over pool :math:`g` with
:math:`v_{jtgs} \in \mathbb{Z}_{\ge 0}` GPUs on server :math:`s`, :math:`e_{jt} \in \{0,1\}`
slot :math:`t` is its last.

.. math::

    \rho_{jt} := \textstyle\sum_{g,s} y_{jtgs} + \sum_g z_{jtg} &\le 1
        & \text{(one\_run)} \\
    \textstyle\sum_s v_{jtgs} &= n_j z_{jtg} & \text{(spread\_gang)} \\
    \textstyle\sum_j n_j y_{jtgs} + \sum_j v_{jtgs} &\le m_{gs} & \text{(server\_capacity)} \\
    \textstyle\sum_t e_{jt} &= 1 \;\; (\le 1 \text{ when packing: } x_j)
        & \text{(one\_last)} \\
    \rho_{jt} &\le \textstyle\sum_{t' \ge t} e_{jt'} & \text{(no\_run\_after\_last)} \\
    \rho_{jt} &\ge e_{jt} & \text{(last\_runs)} \\
    \textstyle\sum_{t,g,s} r_{jg} y_{jtgs} + \sum_{t,g} \tilde r_{jg} z_{jtg}
        &\ge W_j \textstyle\sum_t e_{jt} & \text{(work)}

with objective :math:`\min \sum_j w_j \sum_t (t + 1) e_{jt}` (``completion``) or
:math:`\max \sum_j w_j \sum_t e_{jt}` (``packing``). ``last_runs`` puts the completion indicator
on a slot with a run, so :math:`\sum_t (t+1) e_{jt}` is exactly the validator's :math:`C_j`.
Size: :math:`O(n\,T\,S)` variables for :math:`S` servers in all.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from optsched.errors import InvalidInstanceError
from optsched.limits import check_size
from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.schedule import Run
from optsched.solvers import BuildClock

__all__ = ["Packing", "build_model", "pack_exact"]

#: The family's objective.

Mode = Literal["completion", "packing"]


@dataclass(frozen=True)
class Packing:
    """A packing step's answer: the chosen jobs, their weight and their runs in the interval."""

    chosen: tuple[int, ...]
    weight: float
    runs: tuple[Run, ...]


@dataclass
class _Built:
    model: Any
    windows: dict[int, range]
    y_keys: list[tuple[int, int, int, int]]
    z_keys: list[tuple[int, int, int]]
    v_keys: list[tuple[int, int, int, int]]
    build_seconds: float


def build_model(
    instance: AonlineInstance,
    mode: Mode = "completion",
    *,
    jobs: Sequence[int] | None = None,
    start: int = 0,
    length: int | None = None,
    clock: BuildClock | None = None,
) -> _Built:
    """Build the Pyomo model of the module notes.

    Parameters
    ----------
    instance : AonlineInstance
    mode : {"completion", "packing"}
    jobs : sequence of int, optional
        The jobs of a packing problem (default every job); ``completion`` uses every job.
    start, length : int
        The packing interval (slots ``start .. start + length - 1``).
    clock : BuildClock, optional
        Stops the build once a time limit is spent.

    Raises
    ------
    InvalidInstanceError
        The model would exceed the ``max_model_variables`` budget, or a bad interval.
    """
    import pyomo.environ as pyo

    t0 = time.perf_counter()
    if mode == "completion":
        members = list(range(instance.n_jobs))
        bounds = instance.completion_bounds()
        windows = {j: range(instance.jobs[j].arrival, bounds[j]) for j in members}
    else:
        if length is None or length < 1 or start < 0:
            raise InvalidInstanceError(
                "length", f"a packing interval needs length >= 1, got {length}"
            )
        members = sorted(set(range(instance.n_jobs) if jobs is None else jobs))
        for j in members:
            if not 0 <= j < instance.n_jobs:
                raise InvalidInstanceError("jobs", f"job index {j} out of range")
        windows = {j: range(max(start, instance.jobs[j].arrival), start + length) for j in members}
    servers = [
        (g, s, p.server_capacity(s))
        for g, p in enumerate(instance.pools)
        for s in range(p.num_servers)
    ]
    size = sum(len(w) for w in windows.values()) * (2 * len(servers) + len(instance.pools) + 1)
    check_size("variables", size, "max_model_variables", "variables")
    y_keys: list[tuple[int, int, int, int]] = []
    z_keys: list[tuple[int, int, int]] = []
    v_keys: list[tuple[int, int, int, int]] = []
    rate_y: dict[tuple[int, int], int] = {}
    rate_z: dict[tuple[int, int], int] = {}
    for j in members:
        job = instance.jobs[j]
        for g, p in enumerate(instance.pools):
            ry = instance.rate(j, p.name, True)
            rz = instance.rate(j, p.name, False)
            rate_y[(j, g)], rate_z[(j, g)] = ry, rz
            for t in windows[j]:
                if ry > 0:
                    y_keys.extend(
                        (j, t, g, s) for gg, s, cap in servers if gg == g and cap >= job.gpus
                    )
                if rz > 0:
                    z_keys.append((j, t, g))
                    v_keys.extend((j, t, g, s) for gg, s, _ in servers if gg == g)
    e_keys = [(j, t) for j in members for t in windows[j]]
    m = pyo.ConcreteModel(name=f"aonline-{mode}")
    m.y = pyo.Var(y_keys, domain=pyo.Binary)
    m.z = pyo.Var(z_keys, domain=pyo.Binary)
    m.v = pyo.Var(
        v_keys,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _m, j, t, g, s: (
            0,
            min(instance.jobs[j].gpus, instance.pools[g].server_capacity(s)),
        ),
    )
    m.e = pyo.Var(e_keys, domain=pyo.Binary)
    if clock is not None:
        clock.check("variables")
    runs: dict[tuple[int, int], list[Any]] = {k: [] for k in e_keys}
    for j, t, g, s in y_keys:
        runs[(j, t)].append(m.y[j, t, g, s])
    for j, t, g in z_keys:
        runs[(j, t)].append(m.z[j, t, g])
    m.one_run = pyo.Constraint(
        [k for k in e_keys if runs[k]], rule=lambda _m, j, t: sum(runs[(j, t)]) <= 1
    )
    spread: dict[tuple[int, int, int], list[Any]] = {k: [] for k in z_keys}
    for j, t, g, s in v_keys:
        spread[(j, t, g)].append(m.v[j, t, g, s])
    m.spread_gang = pyo.Constraint(
        z_keys,
        rule=lambda _m, j, t, g: sum(spread[(j, t, g)]) == instance.jobs[j].gpus * m.z[j, t, g],
    )
    load: dict[tuple[int, int, int], list[Any]] = {}
    for j, t, g, s in y_keys:
        load.setdefault((t, g, s), []).append(instance.jobs[j].gpus * m.y[j, t, g, s])
    for j, t, g, s in v_keys:
        load.setdefault((t, g, s), []).append(m.v[j, t, g, s])
    m.server_capacity = pyo.Constraint(
        sorted(load),
        rule=lambda _m, t, g, s: sum(load[(t, g, s)]) <= instance.pools[g].server_capacity(s),
    )
    if clock is not None:
        clock.check("server_capacity")

    def one_last(_m: Any, j: int) -> Any:
        total = sum(m.e[j, t] for t in windows[j])
        if mode == "completion":
            return total == 1
        return total <= 1

    m.one_last = pyo.Constraint(members, rule=one_last)

    def rho(j: int, t: int) -> Any:
        return sum(runs[(j, t)]) if runs[(j, t)] else 0

    m.no_run_after_last = pyo.Constraint(
        [k for k in e_keys if runs[k]],
        rule=lambda _m, j, t: rho(j, t) <= sum(m.e[j, u] for u in windows[j] if u >= t),
    )
    m.last_runs = pyo.Constraint(e_keys, rule=lambda _m, j, t: rho(j, t) >= m.e[j, t])

    def work(_m: Any, j: int) -> Any:
        done = sum(rate_y[(j, g)] * m.y[jj, t, g, s] for jj, t, g, s in y_keys if jj == j)
        done += sum(rate_z[(j, g)] * m.z[jj, t, g] for jj, t, g in z_keys if jj == j)
        return done >= instance.jobs[j].work * sum(m.e[j, t] for t in windows[j])

    m.work = pyo.Constraint(members, rule=work)
    if mode == "completion":
        m.objective = pyo.Objective(
            expr=sum(instance.jobs[j].weight * (t + 1) * m.e[j, t] for j, t in e_keys),
            sense=pyo.minimize,
        )
    else:
        m.objective = pyo.Objective(
            expr=sum(instance.jobs[j].weight * m.e[j, t] for j, t in e_keys),
            sense=pyo.maximize,
        )
    if clock is not None:
        clock.check("objective")
    return _Built(m, windows, y_keys, z_keys, v_keys, time.perf_counter() - t0)


def _extract(instance: AonlineInstance, built: _Built, keep: set[int] | None) -> list[Run]:
    m = built.model
    out: list[Run] = []
    for j, t, g, s in built.y_keys:
        if (keep is None or j in keep) and m.y[j, t, g, s].value is not None:
            if m.y[j, t, g, s].value > 0.5:
                out.append(
                    Run(
                        slot=t,
                        job=j,
                        pool=instance.pools[g].name,
                        servers=((s, instance.jobs[j].gpus),),
                    )
                )
    for j, t, g in built.z_keys:
        if (keep is None or j in keep) and (m.z[j, t, g].value or 0.0) > 0.5:
            servers = tuple(
                (s, round(m.v[jj, tt, gg, s].value))
                for jj, tt, gg, s in built.v_keys
                if (jj, tt, gg) == (j, t, g) and (m.v[jj, tt, gg, s].value or 0.0) > 0.5
            )
            out.append(Run(slot=t, job=j, pool=instance.pools[g].name, servers=servers))
    return sorted(out, key=lambda r: (r.slot, r.job))


def _last_slots(built: _Built) -> dict[int, int]:
    m = built.model
    return {j: t for j, rng in built.windows.items() for t in rng if (m.e[j, t].value or 0.0) > 0.5}


def _trim(runs: list[Run], last: dict[int, int]) -> list[Run]:
    """Drop runs after a job's completion indicator (an incumbent may carry idle ones)."""
    return [r for r in runs if r.job in last and r.slot <= last[r.job]]


def pack_exact(
    instance: AonlineInstance,
    jobs: Sequence[int],
    start: int,
    length: int,
    *,
    solver: str = "highs",
) -> Packing:
    """The exact interval packing: the heaviest set of ``jobs`` that can finish in the interval.

    Raises
    ------
    NotOptimalError
        The solver did not prove optimality (never used silently).
    """
    from optsched.solvers import solve as solve_model

    members = sorted(set(jobs))
    if not members:
        return Packing((), 0.0, ())
    built = build_model(instance, "packing", jobs=members, start=start, length=length)
    solve_model(built.model, solver, build_seconds=built.build_seconds)
    last = _last_slots(built)
    chosen = tuple(sorted(last))
    runs = _trim(_extract(instance, built, set(chosen)), last)
    weight = float(sum(instance.jobs[j].weight for j in chosen))
    return Packing(chosen, weight, tuple(runs))
