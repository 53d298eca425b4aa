r"""Online versus offline: empirical competitive ratios, proven bounds and certificates.

For one instance, :func:`check_competitive` runs an online algorithm (OASiS by default, or any
object with ``name`` and ``run(instance) -> OnlineRun``, see
:class:`~optsched.jobs.engine.OnlineAlgorithm`), solves the exact offline ILP
(:func:`~optsched.jobs.offline.solve_offline`) and reports

* ALG (the online utility) and OPT, or, when the ILP stops at its time limit, the best proven
  upper bound on OPT (the ILP's bound, the LP relaxation, and the online algorithm's own dual
  certificate, whichever is smallest) with the gap;
* the empirical ratio :math:`OPT/ALG` (or an upper bound on it), the algorithm's proven ratio
  (:math:`2\alpha` for OASiS) and its certified ratio :math:`D/ALG`;
* whether each claim holds: :math:`ALG \le OPT`, :math:`OPT \le D`, :math:`OPT/ALG \le 2\alpha`,
  and whether Theorem 4's assumptions hold on the instance at all.

:func:`compare_algorithms` does the same for OASiS and every baseline at once (the ``optsched
demo`` table), and :func:`ratio_sweep` over many seeded instances (``optsched oasis ratio``).

Conventions: a ratio with ALG = 0 is ``inf`` when the numerator is positive and 1 when it is 0
(both algorithms earn nothing). Comparisons allow the relative slack :data:`RATIO_TOL`, since
the ILP's optimum is only optimal up to its gap and feasibility tolerances.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.jobs.engine import OnlineAlgorithm, OnlineRun
from optsched.jobs.instance import OasisInstance
from optsched.jobs.schedule import Schedule, validate

__all__ = [
    "PAPER_BAND",
    "RATIO_TOL",
    "CheckReport",
    "Comparison",
    "OfflineSummary",
    "check_competitive",
    "compare_algorithms",
    "ratio",
    "ratio_sweep",
]

#: Relative slack on ``ALG <= OPT``, ``OPT <= D`` and ``OPT/ALG <= bound`` (the ILP is solved to
#: a relative gap of 1e-7 and HiGHS's feasibility tolerance is 1e-7).
RATIO_TOL = 1e-6
#: The band of empirical OPT/OASiS ratios the paper reports for its Fig. 5 setting
#: (10 jobs, T = 10, 3-12 servers).
PAPER_BAND = (1.1, 1.5)

Progress = Callable[[str], None]


def ratio(num: float | None, den: float) -> float | None:
    """``num / den`` with the module's conventions (``None`` when ``num`` is unknown)."""
    if num is None:
        return None
    if den > 0:
        return num / den
    return 1.0 if num <= 0 else math.inf


def _le(a: float, b: float) -> bool:
    return a <= b + RATIO_TOL * max(1.0, abs(b))


# ------------------------------------------------------------------------------------------
# The offline side
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfflineSummary:
    """What the exact offline solve established.

    Attributes
    ----------
    status : str
        The solver layer's status (``"optimal"``, ``"feasible"``, ``"limit_no_solution"``...).
    optimum : float or None
        OPT when proven optimal.
    incumbent : float or None
        Best feasible utility found (a lower bound on OPT).
    bound : float or None
        Best proven upper bound on OPT from the solver side: the ILP's bound and, when the ILP
        did not finish, the LP relaxation's value.
    gap : float or None
        Relative gap of the ILP.
    seconds : float
        Build plus solve time.
    """

    status: str
    optimum: float | None
    incumbent: float | None
    bound: float | None
    gap: float | None
    seconds: float
    lp_bound: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "status": self.status,
            "optimum": self.optimum,
            "incumbent": self.incumbent,
            "bound": self.bound,
            "lp_bound": self.lp_bound,
            "gap": self.gap,
            "seconds": self.seconds,
        }


def solve_reference(
    instance: OasisInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    lp_bound: bool = True,
    initial: Schedule | None = None,
) -> OfflineSummary:
    """Solve the offline ILP, accepting an incumbent at the time limit and adding an LP bound.

    The result never passes a non-optimal value off as OPT: ``optimum`` is set only when the
    solver proved optimality; otherwise ``incumbent`` and ``bound`` bracket it.
    """
    from optsched.jobs.offline import solve_offline

    start = time.perf_counter()
    incumbent = optimum = bound = gap = None
    try:
        res = solve_offline(
            instance, solver, time_limit=time_limit, accept_feasible=True, initial=initial
        )
        status = res.status.value
        incumbent = res.objective
        bound = res.bound
        gap = res.gap
        if status == "optimal":
            optimum = res.objective
            bound = res.objective if bound is None else max(bound, res.objective or 0.0)
    except NotOptimalError as exc:
        status = exc.result.status.value
        bound = exc.result.bound
    lp = None
    if optimum is None and lp_bound:
        try:
            relaxed = solve_offline(instance, solver, relax=True, time_limit=time_limit)
            if relaxed.status.value == "optimal":
                lp = relaxed.bound
        except NotOptimalError:
            lp = None
        if lp is not None:
            bound = lp if bound is None else min(bound, lp)
    return OfflineSummary(
        status=status,
        optimum=optimum,
        incumbent=incumbent,
        bound=bound,
        gap=gap,
        seconds=time.perf_counter() - start,
        lp_bound=lp,
    )


# ------------------------------------------------------------------------------------------
# One algorithm against the optimum
# ------------------------------------------------------------------------------------------


@dataclass
class CheckReport:
    r"""One online run measured against the offline optimum.

    Attributes
    ----------
    run : OnlineRun
        The online run (its schedule was re-checked by the independent validator).
    offline : OfflineSummary
    valid : bool
        Whether the validator accepted the online schedule.
    upper : float or None
        Best proven upper bound on OPT: OPT itself when proven, else the smallest of the ILP
        bound, the LP bound and the run's certificate :math:`D`.
    ratio : float or None
        :math:`OPT / ALG` when OPT is proven.
    ratio_upper : float or None
        :math:`\text{upper} / ALG`, an upper bound on the true ratio.
    holds : dict
        ``alg_le_opt``, ``opt_le_dual`` and ``ratio_within_proven_bound``: ``True``/``False``
        when decided, ``None`` when the solve did not settle it (or there is no such claim).
    theorem : dict or None
        The run's theorem-assumption check (``theorem_applies`` and reasons), when offered.
    """

    run: OnlineRun
    offline: OfflineSummary
    valid: bool
    upper: float | None
    ratio: float | None
    ratio_upper: float | None
    holds: dict[str, bool | None]
    theorem: dict[str, Any] | None = None
    violations: list[str] = field(default_factory=list)

    @property
    def alg(self) -> float:
        """The online utility ALG."""
        return self.run.utility

    @property
    def proven_bound(self) -> float | None:
        """The algorithm's proven competitive ratio (``None`` for heuristics)."""
        return self.run.proven_bound

    @property
    def certified_ratio(self) -> float | None:
        """:math:`D / ALG` from the run's own certificate (``None`` without one)."""
        return ratio(self.run.dual_bound, self.alg)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (the ``optsched oasis check --json`` object)."""
        return {
            "algorithm": self.run.algorithm,
            "online": self.alg,
            "admitted": len(self.run.admitted),
            "valid": self.valid,
            "violations": self.violations,
            "offline": self.offline.optimum
            if self.offline.optimum is not None
            else self.offline.incumbent,
            "offline_status": self.offline.status,
            "offline_detail": self.offline.to_dict(),
            "upper_bound": self.upper,
            "ratio": self.ratio,
            "ratio_upper": self.ratio_upper,
            "proven_bound": self.proven_bound,
            "dual_bound": self.run.dual_bound,
            "certified_ratio": self.certified_ratio,
            "holds": self.holds,
            "theorem_applies": None if self.theorem is None else self.theorem["theorem_applies"],
            "theorem": self.theorem,
        }


def _holds(
    alg: float,
    off: OfflineSummary,
    dual: float | None,
    proven: float | None,
) -> dict[str, bool | None]:
    opt, inc, bound = off.optimum, off.incumbent, off.bound
    out: dict[str, bool | None] = {}
    if opt is not None:
        out["alg_le_opt"] = _le(alg, opt)
    elif bound is not None:
        out["alg_le_opt"] = True if _le(alg, bound) else False
    else:
        out["alg_le_opt"] = None
    if dual is None:
        out["opt_le_dual"] = None
    elif opt is not None:
        out["opt_le_dual"] = _le(opt, dual)
    elif inc is not None and not _le(inc, dual):
        out["opt_le_dual"] = False
    elif bound is not None and _le(bound, dual):
        out["opt_le_dual"] = True
    else:
        out["opt_le_dual"] = None
    if proven is None:
        out["ratio_within_proven_bound"] = None
    else:
        uppers = [v for v in (opt, bound, dual) if v is not None]
        lowers = [v for v in (opt, inc) if v is not None]
        up = ratio(min(uppers), alg) if uppers else None
        low = ratio(max(lowers), alg) if lowers else None
        if opt is not None:
            r = ratio(opt, alg)
            assert r is not None
            out["ratio_within_proven_bound"] = _le(r, proven)
        elif up is not None and _le(up, proven):
            out["ratio_within_proven_bound"] = True
        elif low is not None and not _le(low, proven):
            out["ratio_within_proven_bound"] = False
        else:
            out["ratio_within_proven_bound"] = None
    return out


def measure(run: OnlineRun, instance: OasisInstance, offline: OfflineSummary) -> CheckReport:
    """Compare one finished run with an offline summary (no solving)."""
    rep = validate(instance, run.schedule)
    alg = run.utility
    uppers = [v for v in (offline.optimum, offline.bound, run.dual_bound) if v is not None]
    upper = offline.optimum if offline.optimum is not None else (min(uppers) if uppers else None)
    holds = _holds(alg, offline, run.dual_bound, run.proven_bound)
    theorem = None
    check = getattr(run, "theorem_check", None)
    if callable(check):
        known = offline.optimum
        theorem = check(known).to_dict()
    return CheckReport(
        run=run,
        offline=offline,
        valid=rep.ok,
        upper=upper,
        ratio=ratio(offline.optimum, alg),
        ratio_upper=ratio(upper, alg),
        holds=holds,
        theorem=theorem,
        violations=[str(v) for v in rep.violations],
    )


def check_competitive(
    instance: OasisInstance,
    algorithm: OnlineAlgorithm | None = None,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    lp_bound: bool = True,
) -> CheckReport:
    r"""Run an online algorithm and the exact offline ILP on one instance and compare.

    Parameters
    ----------
    instance : OasisInstance
    algorithm : OnlineAlgorithm, optional
        Default :class:`~optsched.jobs.online.OASiS` with a tightened certificate.
    solver : str, default "highs"
        MILP solver for the offline optimum.
    time_limit : float, optional
        Seconds for the ILP; past it the incumbent and bound bracket OPT (and the LP relaxation
        is solved for a further bound when ``lp_bound``).
    lp_bound : bool, default True

    Returns
    -------
    CheckReport

    Raises
    ------
    SolverUnavailableError
        The MILP solver is not installed.

    Examples
    --------
    >>> from optsched.jobs.generate import generate_instance
    >>> report = check_competitive(generate_instance(5, 2, 2, 6, seed=0, scale=0.05))
    >>> report.holds["alg_le_opt"], report.holds["opt_le_dual"]
    (True, True)
    """
    if algorithm is None:
        from optsched.jobs.online import OASiS

        algorithm = OASiS(tighten=True)
    run = algorithm.run(instance)
    offline = solve_reference(instance, solver=solver, time_limit=time_limit, lp_bound=lp_bound)
    return measure(run, instance, offline)


# ------------------------------------------------------------------------------------------
# Every algorithm on one instance (the demo)
# ------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """OASiS and the baselines against the offline optimum on one instance.

    Attributes
    ----------
    reports : list of CheckReport
        One per algorithm, in the order run.
    offline : OfflineSummary
    upper : float or None
        Best proven upper bound on OPT over the ILP, the LP and every certificate.
    seconds : dict
        Wall time per algorithm and for the offline solve.
    """

    instance: OasisInstance
    reports: list[CheckReport]
    offline: OfflineSummary
    upper: float | None
    seconds: dict[str, float]

    @property
    def lower(self) -> float:
        """Best lower bound on OPT: the ILP's incumbent or the best valid online utility.

        Every valid online schedule is feasible for the ILP.
        """
        values = [self.offline.incumbent or 0.0]
        values += [r.alg for r in self.reports if r.valid]
        return max(values)

    def rows(self) -> list[dict[str, Any]]:
        """One row per algorithm: utility, admitted, ratio to OPT (or to the bound), bounds."""
        rows = []
        for rep in self.reports:
            alg = rep.alg
            proven = self.offline.optimum is not None
            rows.append(
                {
                    "algorithm": rep.run.algorithm,
                    "utility": alg,
                    "admitted": len(rep.run.admitted),
                    "jobs": self.instance.n_jobs,
                    "ratio": ratio(self.offline.optimum if proven else self.upper, alg),
                    "ratio_is_bound": not proven,
                    "proven_bound": rep.proven_bound,
                    "dual_bound": rep.run.dual_bound,
                    "certified_ratio": rep.certified_ratio,
                    "valid": rep.valid,
                    "seconds": self.seconds.get(rep.run.algorithm),
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "offline": self.offline.to_dict(),
            "upper_bound": self.upper,
            "lower_bound": self.lower,
            "algorithms": self.rows(),
            "seconds": self.seconds,
        }

    def table(self) -> Any:
        """A :class:`rich.table.Table` of :meth:`rows`."""
        from rich.table import Table

        off = self.offline
        if off.optimum is not None:
            title = f"offline optimum {off.optimum:.4g} (proven)"
        else:
            title = (
                f"offline not proven ({off.status}): OPT in [{_fmt(self.lower)}, "
                f"{_fmt(self.upper)}]"
            )
        table = Table(title=title)
        for col in ("algorithm", "utility", "admitted", "OPT/ALG", "proven", "D", "D/ALG", "s"):
            table.add_column(col, justify="left" if col == "algorithm" else "right")
        for row in self.rows():
            r = row["ratio"]
            rs = "-" if r is None else ("inf" if math.isinf(r) else f"{r:.3f}")
            if row["ratio_is_bound"] and r is not None:
                rs = "<= " + rs
            table.add_row(
                row["algorithm"],
                f"{row['utility']:.4g}",
                f"{row['admitted']}/{row['jobs']}",
                rs,
                _fmt(row["proven_bound"]),
                _fmt(row["dual_bound"]),
                _fmt(row["certified_ratio"]),
                _fmt(row["seconds"], ".2f"),
            )
        return table

    def save_plot(self, path: str | Path) -> Path:
        """Bar chart of each algorithm's utility against OPT (or its bound); PNG via Agg."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.rows()
        fig, ax = plt.subplots(figsize=(7, 4))
        names = [r["algorithm"] for r in rows]
        ax.bar(names, [r["utility"] for r in rows], color="tab:blue")
        off = self.offline
        if off.optimum is not None:
            ax.axhline(off.optimum, color="black", ls="--", label=f"OPT = {off.optimum:.4g}")
        else:
            if off.incumbent is not None:
                ax.axhline(off.incumbent, color="gray", ls=":", label="best offline found")
            if self.upper is not None:
                ax.axhline(self.upper, color="black", ls="--", label="upper bound on OPT")
        ax.set_ylabel("total utility")
        ax.set_title(f"{self.instance.n_jobs} jobs, T = {self.instance.horizon}")
        ax.legend(loc="lower right")
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, dpi=120)
        plt.close(fig)
        return out


def _fmt(value: float | None, spec: str = ".4g") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def compare_algorithms(
    instance: OasisInstance,
    *,
    time_limit: float | None = 30.0,
    progress: Progress | None = None,
    algorithms: Sequence[OnlineAlgorithm] | None = None,
    solver: str = "highs",
    lp_bound: bool = False,
) -> Comparison:
    """Run OASiS and every baseline and solve the offline optimum (bounded when not proven).

    Parameters
    ----------
    instance : OasisInstance
    time_limit : float, optional, default 30
        Seconds for the offline ILP (the LP relaxation gets the same).
    progress : callable, optional
        Called with a short message before each step (e.g. a rich status's ``update``).
    algorithms : sequence, optional
        Default: OASiS (tightened certificate) then FIFO, DRF, RRH and Dorm-like.
    solver : str, default "highs"
    lp_bound : bool, default False
        Also solve the LP relaxation when the ILP stops short. Off by default: on instances
        too big for the ILP the LP is slow too, and OASiS's certificate is usually tighter.

    Returns
    -------
    Comparison
    """
    if algorithms is None:
        from optsched.jobs.baselines import baseline_algorithms
        from optsched.jobs.online import OASiS

        algorithms = [OASiS(tighten=True), *baseline_algorithms()]
    say = progress or (lambda _msg: None)
    runs: list[OnlineRun] = []
    seconds: dict[str, float] = {}
    for alg in algorithms:
        say(f"running {alg.name}")
        start = time.perf_counter()
        runs.append(alg.run(instance))
        seconds[alg.name] = time.perf_counter() - start
    say("solving the offline optimum")
    # The best valid online schedule is a MIP start: the ILP's incumbent never trails it.
    valid = [r for r in runs if validate(instance, r.schedule).ok]
    best = max(valid, key=lambda r: r.schedule.total_utility).schedule if valid else None
    offline = solve_reference(
        instance, solver=solver, time_limit=time_limit, lp_bound=lp_bound, initial=best
    )
    seconds["offline"] = offline.seconds
    reports = [measure(run, instance, offline) for run in runs]
    uppers = [v for v in [offline.bound] + [r.dual_bound for r in runs] if v is not None]
    if offline.optimum is not None:
        upper: float | None = offline.optimum
    else:
        upper = min(uppers) if uppers else None
    return Comparison(instance, reports, offline, upper, seconds)


# ------------------------------------------------------------------------------------------
# Sweeps over seeded instances
# ------------------------------------------------------------------------------------------


def ratio_sweep(
    n_instances: int,
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_jobs: int = 10,
    worker_servers: int = 3,
    ps_servers: int = 3,
    horizon: int = 10,
    scale: float = 0.05,
    priority: tuple[float, float] = (1.0, 100.0),
    time_limit: float | None = 60.0,
    solver: str = "highs",
    algorithm: OnlineAlgorithm | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Measure OPT/ALG on ``n_instances`` seeded instances, resumably.

    Instance ``k`` is :func:`~optsched.jobs.generate.generate_instance` with seed ``seed + k``.
    Each finished instance is appended at once to ``out_dir/results.jsonl``; a rerun with the
    same settings skips the seeds already there (a different setting is refused). At the end
    ``out_dir/table.md`` (summary and per-instance rows) and ``out_dir/ratio.png`` (the ratio
    distribution against the paper's band and the proven bounds) are written.

    Returns
    -------
    list of dict
        One record per instance (seed order), including those from earlier runs.

    Raises
    ------
    InvalidInstanceError
        ``out_dir`` holds results of a sweep with different settings, or a bad parameter.
    """
    from optsched.jobs.generate import generate_instance

    if n_instances < 1:
        raise InvalidInstanceError("instances", f"must be >= 1, got {n_instances}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = algorithm.name if algorithm is not None else "oasis"
    config = {
        "algorithm": name,
        "n_jobs": n_jobs,
        "worker_servers": worker_servers,
        "ps_servers": ps_servers,
        "horizon": horizon,
        "scale": scale,
        "priority": list(priority),
        "time_limit": time_limit,
        "solver": solver,
    }
    cfg_path = out / "config.json"
    if cfg_path.exists():
        old = json.loads(cfg_path.read_text())
        if old != config:
            raise InvalidInstanceError(
                "output",
                f"{out} holds a sweep with other settings ({old}); use another directory",
            )
    else:
        cfg_path.write_text(json.dumps(config, indent=2) + "\n")
    results_path = out / "results.jsonl"
    done: dict[int, dict[str, Any]] = {}
    if results_path.exists():
        for line in results_path.read_text().splitlines():
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interruption: redo that instance
                done[int(rec["seed"])] = rec
    say = progress or (lambda _msg: None)
    for k in range(n_instances):
        s = seed + k
        if s in done:
            continue
        say(f"instance {k + 1}/{n_instances} (seed {s})")
        inst = generate_instance(
            n_jobs, worker_servers, ps_servers, horizon, seed=s, scale=scale, priority=priority
        )
        rep = check_competitive(inst, algorithm, solver=solver, time_limit=time_limit)
        rec = {
            "seed": s,
            "alg": rep.alg,
            "opt": rep.offline.optimum,
            "upper": rep.upper,
            "offline_status": rep.offline.status,
            "ratio": rep.ratio,
            "ratio_upper": rep.ratio_upper,
            "proven_bound": rep.proven_bound,
            "dual_bound": rep.run.dual_bound,
            "certified_ratio": rep.certified_ratio,
            "theorem_applies": None if rep.theorem is None else rep.theorem["theorem_applies"],
            "holds": rep.holds,
            "valid": rep.valid,
        }
        from optsched._json import to_jsonable

        with results_path.open("a") as fh:
            fh.write(json.dumps(to_jsonable(rec)) + "\n")
        done[s] = json.loads(json.dumps(to_jsonable(rec)))
    records = [done[seed + k] for k in range(n_instances)]
    (out / "table.md").write_text(sweep_table(records, config))
    sweep_plot(records, out / "ratio.png")
    return records


def _num(v: Any) -> float | None:
    if v is None:
        return None
    if v == "inf":
        return math.inf
    return float(v)


def sweep_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and quantiles of the empirical ratios of a sweep."""
    import numpy as np

    proven = [r for r in records if _num(r.get("ratio")) is not None]
    ratios = np.array([_num(r["ratio"]) for r in proven], dtype=float)
    finite = ratios[np.isfinite(ratios)]
    lo, hi = PAPER_BAND
    out: dict[str, Any] = {
        "instances": len(records),
        "opt_proven": len(proven),
        "ratio_infinite": int(np.sum(~np.isfinite(ratios))),
        "theorem_applies": sum(1 for r in records if r.get("theorem_applies") is True),
        "within_proven_bound": sum(
            1 for r in records if r["holds"].get("ratio_within_proven_bound") is True
        ),
        "opt_le_dual": sum(1 for r in records if r["holds"].get("opt_le_dual") is True),
        "all_valid": all(r.get("valid", False) for r in records),
    }
    if finite.size:
        out.update(
            ratio_min=float(finite.min()),
            ratio_median=float(np.median(finite)),
            ratio_mean=float(finite.mean()),
            ratio_max=float(finite.max()),
            in_paper_band=int(np.sum((finite >= lo) & (finite <= hi))),
            below_paper_band=int(np.sum(finite < lo)),
            above_paper_band=int(np.sum(finite > hi)),
        )
    return out


def sweep_table(records: Sequence[dict[str, Any]], config: dict[str, Any]) -> str:
    """Markdown: the settings, a summary and one row per instance."""
    summary = sweep_summary(records)
    lines = ["# Empirical competitive ratios", ""]
    lines += ["Settings: " + ", ".join(f"{k} = {v}" for k, v in config.items()), ""]
    lines += [f"Paper (Fig. 5): OPT/OASiS in {PAPER_BAND[0]}-{PAPER_BAND[1]}.", ""]
    lines += ["| figure | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(v) if isinstance(v, float) else v} |" for k, v in summary.items()]
    lines += ["", "| seed | ALG | OPT | OPT/ALG | 2 alpha | D/ALG | theorem applies | status |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in records:
        lines.append(
            "| {} | {} | {} | {} | {} | {} | {} | {} |".format(
                r["seed"],
                _fmt(_num(r["alg"])),
                _fmt(_num(r["opt"])),
                _fmt(_num(r["ratio"])),
                _fmt(_num(r["proven_bound"])),
                _fmt(_num(r["certified_ratio"])),
                r["theorem_applies"],
                r["offline_status"],
            )
        )
    return "\n".join(lines) + "\n"


def sweep_plot(records: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Histogram of OPT/ALG with the paper's band, and OPT/ALG against the proven bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pts = [
        (_num(r["ratio"]), _num(r["proven_bound"]), _num(r["certified_ratio"]))
        for r in records
        if _num(r.get("ratio")) is not None and math.isfinite(_num(r["ratio"]) or math.inf)
    ]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    if pts:
        ratios = np.array([p[0] for p in pts], dtype=float)
        ax1.hist(ratios, bins=min(20, max(5, len(pts) // 2)), color="tab:blue", alpha=0.8)
    ax1.axvspan(*PAPER_BAND, color="tab:orange", alpha=0.2, label="paper's band (Fig. 5)")
    ax1.set_xlabel("OPT / ALG")
    ax1.set_ylabel("instances")
    ax1.legend()
    bounded = [p for p in pts if p[1] is not None]
    if bounded:
        xs = np.array([p[1] for p in bounded], dtype=float)
        ax2.scatter(xs, [p[0] for p in bounded], s=14, label="OPT/ALG")
        cert = [(p[1], p[2]) for p in bounded if p[2] is not None and math.isfinite(p[2])]
        if cert:
            ax2.scatter([c[0] for c in cert], [c[1] for c in cert], s=14, marker="x", label="D/ALG")
        top = float(xs.max())
        ax2.plot([0, top], [0, top], color="black", lw=1, ls="--", label="proven bound 2 alpha")
        ax2.set_yscale("log")
    ax2.set_xlabel("proven bound 2 alpha")
    ax2.set_ylabel("ratio")
    ax2.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
