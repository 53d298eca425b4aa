r"""The one solution type of the family (:class:`AonlineSchedule`) and its independent validator.

A schedule is a list of :class:`Run`\ s: in slot ``slot`` job ``job`` runs its whole gang on pool
``pool``, ``gpus`` GPUs on each listed server. The validator re-derives everything from the
instance and the runs alone (it shares no code with the models or the online algorithm), one
function per constraint, named as below (:data:`CONSTRAINTS` maps each name to its function):

=================== ==========================================================================
constraint          meaning
=================== ==========================================================================
``unknown_job``     the run names a job index outside the instance
``unknown_pool``    the run names no pool of the instance
``unknown_server``  a server index outside the pool, or a non-positive GPU count
``arrival``         a run before the job's arrival slot
``gang_size``       the GPUs of a run do not add up to the job's gang size
``one_run``         two runs of one job in one slot
``no_rate``         a run on a placement where the job makes no progress (rate 0)
``server_capacity`` GPUs used on a server in a slot exceed its GPUs
``work``            a job does less than its work by its last run (or never runs)
=================== ==========================================================================

The objective recomputed is :math:`\sum_j w_j C_j` with :math:`C_j` = last slot with a run + 1;
a run on one server earns the consolidated rate, on two or more the spread rate.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from optsched._validation import Frozen
from optsched.results import Report, Violation

if TYPE_CHECKING:
    import pandas as pd

    from optsched.online.aonline.instance import AonlineInstance

__all__ = ["CONSTRAINTS", "AonlineSchedule", "IntervalRecord", "Run", "validate"]

_Idx = Annotated[int, Field(ge=0)]


class Run(Frozen):
    """Job ``job`` on pool ``pool`` in slot ``slot``: ``(server, gpus)`` per server used."""

    slot: _Idx
    job: _Idx
    pool: str
    servers: tuple[tuple[int, int], ...]

    @property
    def consolidated(self) -> bool:
        """Whether the gang sits on one server (the consolidated rate applies)."""
        return len({s for s, _ in self.servers}) == 1


class IntervalRecord(Frozen):
    """One interval of the doubling reduction: what the packing step saw and chose.

    Attributes
    ----------
    start, length : int
        The interval covers slots ``start .. start + length - 1``.
    pending : tuple of int
        Jobs arrived by ``start`` and not finished.
    chosen : tuple of int
        Jobs the packing step scheduled to finish within the interval.
    weight : float
        Their total weight (the packing objective).
    alpha : float or None
        The packing step's approximation ratio for this interval (``None`` for an exact
        packing, ratio 1, or an interval where no pending job can finish).
    upper : float or None
        The OASiS prices' upper value :math:`U` of this interval (primal-dual only).
    lower : float or None
        The lower value :math:`L` (primal-dual only).
    dual : float or None
        The final dual objective (an upper bound on the packing optimum; primal-dual only).
    """

    start: _Idx
    length: Annotated[int, Field(ge=1)]
    pending: tuple[int, ...] = ()
    chosen: tuple[int, ...] = ()
    weight: float = 0.0
    alpha: float | None = None
    upper: float | None = None
    lower: float | None = None
    dual: float | None = None


class AonlineSchedule(Frozen):
    """Runs of every job (see the module notes), with the algorithm's name and its intervals.

    Attributes
    ----------
    runs : tuple of Run
    algorithm : str
        ``"exact"``, ``"aonline"`` (primal-dual packing) or ``"aonline-exact"`` (exact packing).
    intervals : tuple of IntervalRecord
        The doubling intervals an online run went through (empty for the exact model).
    """

    runs: tuple[Run, ...] = ()
    algorithm: str = ""
    intervals: tuple[IntervalRecord, ...] = ()

    def completions(self, n_jobs: int) -> list[int | None]:
        """Last slot with a run + 1 per job (``None`` for a job that never runs)."""
        out: list[int | None] = [None] * n_jobs
        for r in self.runs:
            if r.job < n_jobs:
                c = out[r.job]
                out[r.job] = r.slot + 1 if c is None else max(c, r.slot + 1)
        return out

    @property
    def alpha(self) -> float:
        """Largest packing ratio over the intervals (1 when every packing was exact)."""
        return max([1.0, *(iv.alpha for iv in self.intervals if iv.alpha is not None)])

    @property
    def bound_factor(self) -> float:
        r"""The competitive factor :math:`4\alpha` of the doubling reduction (see the docs)."""
        return 4.0 * self.alpha

    def objective(self, instance: AonlineInstance) -> float:
        """Total weighted completion time (recomputed by :func:`validate`)."""
        value = validate(instance, self).objective
        return float("nan") if value is None else value

    def to_frame(self) -> pd.DataFrame:
        """One row per (run, server): slot, job, pool, server, gpus, consolidated."""
        import pandas as pd

        rows = [
            {
                "slot": r.slot,
                "job": r.job,
                "pool": r.pool,
                "server": s,
                "gpus": g,
                "consolidated": r.consolidated,
            }
            for r in self.runs
            for s, g in r.servers
        ]
        return pd.DataFrame(rows, columns=["slot", "job", "pool", "server", "gpus", "consolidated"])

    def __repr__(self) -> str:
        jobs = len({r.job for r in self.runs})
        extra = f", {len(self.intervals)} intervals" if self.intervals else ""
        return (
            f"AonlineSchedule({self.algorithm or '?'}: {len(self.runs)} runs, {jobs} jobs{extra})"
        )

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def _fault(instance: AonlineInstance, run: Run) -> str:
    """The first of the unknown_* constraints ``run`` breaks, or ``""`` when none."""
    if run.job >= len(instance.jobs):
        return "unknown_job"
    pool = next((p for p in instance.pools if p.name == run.pool), None)
    if pool is None:
        return "unknown_pool"
    servers = [s for s, _ in run.servers]
    if len(set(servers)) != len(servers):
        return "unknown_server"
    if any(not (0 <= s < pool.num_servers) or g <= 0 for s, g in run.servers):
        return "unknown_server"
    return ""


def _where(k: int, run: Run) -> dict[str, Any]:
    return {"run": k, "slot": run.slot, "job": run.job}


def _runs(instance: AonlineInstance, solution: AonlineSchedule) -> list[tuple[int, Run]]:
    """``(index, run)`` of every run on a known job, pool and servers."""
    return [(k, r) for k, r in enumerate(solution.runs) if not _fault(instance, r)]


def _faults(
    instance: AonlineInstance, solution: AonlineSchedule, name: str, message: str
) -> list[Violation]:
    return [
        Violation(name, message.format(k=k, r=r, n=len(instance.jobs)), _where(k, r))
        for k, r in enumerate(solution.runs)
        if _fault(instance, r) == name
    ]


def unknown_job(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``unknown_job``: every run is of a job of the instance."""
    return _faults(instance, solution, "unknown_job", "run {k}: job {r.job} of {n}")


def unknown_pool(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``unknown_pool``: every run is on a pool of the instance."""
    return _faults(instance, solution, "unknown_pool", "run {k}: pool {r.pool!r}")


def unknown_server(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``unknown_server``: every run names distinct servers of its pool, each with GPUs."""
    return _faults(instance, solution, "unknown_server", "run {k}: servers {r.servers}")


def arrival(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``arrival``: a job runs from its arrival slot on."""
    return [
        Violation(
            "arrival",
            f"job {r.job} runs in slot {r.slot} before {instance.jobs[r.job].arrival}",
            _where(k, r),
        )
        for k, r in _runs(instance, solution)
        if r.slot < instance.jobs[r.job].arrival
    ]


def gang_size(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``gang_size``: a run holds exactly the job's :math:`n_j` GPUs."""
    out: list[Violation] = []
    for k, r in _runs(instance, solution):
        gpus, need = sum(g for _, g in r.servers), instance.jobs[r.job].gpus
        if gpus != need:
            out.append(
                Violation(
                    "gang_size",
                    f"job {r.job} runs {gpus} GPUs, its gang is {need}",
                    _where(k, r),
                    float(gpus - need),
                )
            )
    return out


def one_run(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``one_run``: at most one placement per job and slot."""
    out: list[Violation] = []
    seen: set[tuple[int, int]] = set()
    for k, r in _runs(instance, solution):
        if (r.job, r.slot) in seen:
            out.append(
                Violation("one_run", f"job {r.job} runs twice in slot {r.slot}", _where(k, r))
            )
        seen.add((r.job, r.slot))
    return out


def _rate(instance: AonlineInstance, run: Run) -> int:
    """Work units the run does: the pool's rate alone on one server, else the spread rate."""
    job = instance.jobs[run.job]
    rate = job.rates.get(run.pool, 0)
    if len(run.servers) == 1:
        return rate
    if job.spread_rates is not None:
        return job.spread_rates.get(run.pool, 0)
    return int(instance.spread_penalty * rate // 1)


def no_rate(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``no_rate``: every run makes progress (a positive rate where it runs)."""
    return [
        Violation("no_rate", f"job {r.job} makes no progress there", _where(k, r))
        for k, r in _runs(instance, solution)
        if _rate(instance, r) <= 0
    ]


def server_capacity(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``server_capacity``: the GPUs held on a server in a slot are at most its GPUs."""
    pools = {p.name: p for p in instance.pools}
    used: dict[tuple[int, str, int], int] = defaultdict(int)
    for _, r in _runs(instance, solution):
        for s, g in r.servers:
            used[(r.slot, r.pool, s)] += g
    out: list[Violation] = []
    for (t, name, s), g in sorted(used.items()):
        cap = pools[name].server_capacity(s)
        if g > cap:
            out.append(
                Violation(
                    "server_capacity",
                    f"slot {t}: server {s} of {name} holds {g} GPUs, it has {cap}",
                    {"slot": t, "pool": name, "server": s},
                    float(g - cap),
                )
            )
    return out


def _work_done(instance: AonlineInstance, solution: AonlineSchedule) -> list[int]:
    done = [0] * len(instance.jobs)
    for _, r in _runs(instance, solution):
        done[r.job] += _rate(instance, r)
    return done


def work(instance: AonlineInstance, solution: AonlineSchedule) -> list[Violation]:
    """``work``: every job gets its work done."""
    done = _work_done(instance, solution)
    return [
        Violation(
            "work",
            f"job {j} does {done[j]} of {job.work} units",
            {"job": j},
            float(job.work - done[j]),
        )
        for j, job in enumerate(instance.jobs)
        if done[j] < job.work
    ]


#: Every constraint the validator checks, by its name on the formulation page, in check order.
CONSTRAINTS: dict[str, Callable[[AonlineInstance, AonlineSchedule], list[Violation]]] = {
    "unknown_job": unknown_job,
    "unknown_pool": unknown_pool,
    "unknown_server": unknown_server,
    "arrival": arrival,
    "gang_size": gang_size,
    "one_run": one_run,
    "no_rate": no_rate,
    "server_capacity": server_capacity,
    "work": work,
}


def validate(instance: AonlineInstance, solution: AonlineSchedule) -> Report:
    r"""Check every constraint of :data:`CONSTRAINTS` and recompute the objective.

    Returns
    -------
    Report
        ``objective`` is :math:`\sum_j w_j C_j` when every job finishes (else ``None``);
        ``details`` holds ``completion`` (per job) and ``work_done`` (per job).

    Notes
    -----
    Time :math:`O(R + n)` for :math:`R` runs and :math:`n` jobs, per constraint.
    """
    v: list[Violation] = []
    for check in CONSTRAINTS.values():
        v += check(instance, solution)
    last: list[int | None] = [None] * len(instance.jobs)
    for _, r in _runs(instance, solution):
        last[r.job] = max(last[r.job] or 0, r.slot)
    completion = [None if s is None else s + 1 for s in last]
    objective = (
        float(sum(job.weight * c for job, c in zip(instance.jobs, completion, strict=True) if c))
        if all(c is not None for c in completion)
        else None
    )
    return Report(
        violations=v,
        objective=objective,
        objectives={"weighted_completion": objective},
        details={"completion": completion, "work_done": _work_done(instance, solution)},
    )
