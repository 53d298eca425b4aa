r"""Online versus offline for the jobs family: competitive ratios, bounds and certificates.

For one instance, :func:`check_competitive` runs an online algorithm (OASiS by default, or any
object with ``name`` and ``run(instance) -> OnlineRun``, see
:class:`~optsched.online.oasis.engine.OnlineAlgorithm`), solves the exact offline ILP
(:func:`optsched.online.oasis.solve`) and reports

* ALG (the online utility) and OPT, or, when the ILP stops at its time limit, the best proven
  upper bound on OPT (the ILP's bound, the LP relaxation, and the online algorithm's own dual
  certificate, whichever is smallest) with the gap;
* the empirical ratio :math:`OPT/ALG` (or an upper bound on it), the algorithm's proven ratio
  (:math:`2\alpha` for OASiS) and its certified ratio :math:`D/ALG`;
* whether each claim holds: :math:`ALG \le OPT`, :math:`OPT \le D`, :math:`OPT/ALG \le 2\alpha`,
  and whether Theorem 4's assumptions hold on the instance at all.

:func:`compare_algorithms` does the same for OASiS and every baseline at once (the ``optsched
demo`` table), and :func:`sweep_record` measures one seeded instance of a sweep (``optsched oasis
ratio``; the resumable sweep is :mod:`optsched.runs.oasis_ratio`, its table and plots
:mod:`optsched.report.oasis`).

Conventions: a ratio with ALG = 0 is ``inf`` when the numerator is positive and 1 when it is 0
(both algorithms earn nothing). Comparisons allow the relative slack :data:`RATIO_TOL`, since
the ILP's optimum is only optimal up to its gap and feasibility tolerances.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optsched._json import to_jsonable
from optsched.errors import NotOptimalError
from optsched.online.oasis.engine import OnlineAlgorithm, OnlineRun
from optsched.online.oasis.instance import OasisInstance
from optsched.online.oasis.schedule import Schedule, validate
from optsched.tolerances import RATIO_TOL

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAPER_BAND",
    "RATIO_TOL",
    "CheckReport",
    "OasisComparison",
    "OfflineSummary",
    "check_competitive",
    "compare_algorithms",
    "measure",
    "ratio",
    "solve_reference",
    "sweep_record",
]
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

    @property
    def proven(self) -> bool:
        """Whether OPT was proven (``optimum`` is set)."""
        return self.optimum is not None

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
    mip_gap: float | None = None,
    threads: int | None = None,
    lp_bound: bool = True,
    warm_start: Schedule | None = None,
) -> OfflineSummary:
    """Solve the offline ILP, accepting an incumbent at the time limit and adding an LP bound.

    The result never passes a non-optimal value off as OPT: ``optimum`` is set only when the
    solver proved optimality; otherwise ``incumbent`` and ``bound`` bracket it.
    """
    from optsched.online.oasis.offline import solve

    start = time.perf_counter()
    incumbent = optimum = bound = gap = None
    try:
        res = solve(
            instance,
            solver=solver,
            time_limit=time_limit,
            mip_gap=mip_gap,
            threads=threads,
            accept_feasible=True,
            warm_start=warm_start,
        )
        status = res.status.value
        incumbent = res.objective
        bound = res.bound
        gap = res.gap
        if res.optimal:
            optimum = res.objective
            bound = res.objective if bound is None else max(bound, res.objective or 0.0)
    except NotOptimalError as exc:
        status = exc.result.status.value
        bound = exc.result.bound
    lp = None
    if optimum is None and lp_bound:
        try:
            relaxed = solve(
                instance, solver=solver, relax=True, time_limit=time_limit, threads=threads
            )
            lp = relaxed.lp_bound
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
    mip_gap: float | None = None,
    threads: int | None = None,
    lp_bound: bool = True,
) -> CheckReport:
    r"""Run an online algorithm and the exact offline ILP on one instance and compare.

    Parameters
    ----------
    instance : OasisInstance
    algorithm : OnlineAlgorithm, optional
        Default :class:`~optsched.online.oasis.online.OASiS` with a tightened certificate.
    solver : str, default "highs"
        MILP solver for the offline optimum.
    time_limit : float, optional
        Seconds for the ILP; past it the incumbent and bound bracket OPT (and the LP relaxation
        is solved for a further bound when ``lp_bound``).
    mip_gap, threads : optional
        Passed to :func:`optsched.online.oasis.solve`.
    lp_bound : bool, default True

    Returns
    -------
    CheckReport
        ``report.offline.proven`` says whether OPT was proven; when not, the figures are
        bounds (callers that require an exact answer treat that as a stopped solve).

    Raises
    ------
    SolverUnavailableError
        The MILP solver is not installed.

    Examples
    --------
    >>> from optsched.online.oasis.generate import generate_instance
    >>> report = check_competitive(generate_instance(5, 2, 2, 6, seed=0, scale=0.05))
    >>> report.holds["alg_le_opt"], report.holds["opt_le_dual"]
    (True, True)
    """
    if algorithm is None:
        from optsched.online.oasis.online import OASiS

        algorithm = OASiS(tighten=True)
    run = algorithm.run(instance)
    offline = solve_reference(
        instance,
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        lp_bound=lp_bound,
    )
    return measure(run, instance, offline)


# ------------------------------------------------------------------------------------------
# Every algorithm on one instance (the demo)
# ------------------------------------------------------------------------------------------


@dataclass
class OasisComparison:
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

    def to_frame(self) -> pd.DataFrame:
        """:meth:`rows` as a DataFrame, one row per algorithm."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def __repr__(self) -> str:
        names = ", ".join(r.run.algorithm for r in self.reports)
        return (
            f"OasisComparison({self.instance.n_jobs} jobs, algorithms=[{names}], "
            f"offline={self.offline.status!r}, upper={_fmt(self.upper)})"
        )

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


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
    mip_gap: float | None = None,
    threads: int | None = None,
    lp_bound: bool = False,
) -> OasisComparison:
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
    OasisComparison
    """
    if algorithms is None:
        from optsched.online.oasis.baselines import baseline_algorithms
        from optsched.online.oasis.online import OASiS

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
        instance,
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        lp_bound=lp_bound,
        warm_start=best,
    )
    seconds["offline"] = offline.seconds
    reports = [measure(run, instance, offline) for run in runs]
    uppers = [v for v in [offline.bound] + [r.dual_bound for r in runs] if v is not None]
    if offline.optimum is not None:
        upper: float | None = offline.optimum
    else:
        upper = min(uppers) if uppers else None
    return OasisComparison(instance, reports, offline, upper, seconds)


# ------------------------------------------------------------------------------------------
# One record of a sweep over seeded instances
# ------------------------------------------------------------------------------------------


def sweep_record(
    seed: int,
    *,
    n_jobs: int = 10,
    worker_servers: int = 3,
    ps_servers: int = 3,
    horizon: int = 10,
    scale: float = 0.05,
    priority: tuple[float, float] = (1.0, 100.0),
    algorithm: OnlineAlgorithm | None = None,
    solver: str = "highs",
    time_limit: float | None = 60.0,
    mip_gap: float | None = None,
    threads: int | None = None,
) -> dict[str, Any]:
    """Measure OPT/ALG on the seeded instance ``generate_instance(..., seed=seed)``.

    Returns
    -------
    dict
        JSON-ready: ``seed``, ``alg``, ``opt`` (``None`` unless proven), ``upper``,
        ``offline_status``, ``ratio``, ``ratio_upper``, ``proven_bound``, ``dual_bound``,
        ``certified_ratio``, ``theorem_applies``, ``holds`` and ``valid``.
    """
    from optsched.online.oasis.generate import generate_instance

    inst = generate_instance(
        n_jobs, worker_servers, ps_servers, horizon, seed=seed, scale=scale, priority=priority
    )
    rep = check_competitive(
        inst, algorithm, solver=solver, time_limit=time_limit, mip_gap=mip_gap, threads=threads
    )
    record = {
        "seed": seed,
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
    out: dict[str, Any] = to_jsonable(record)
    return out
