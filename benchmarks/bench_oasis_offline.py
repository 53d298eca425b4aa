"""Offline OASiS ILP: Pyomo model-building time vs HiGHS solve time on growing instances.

For each generated instance (``optsched.online.oasis.generate.generate_instance``, default
``scale``)
this builds the exact ILP of :mod:`optsched.online.oasis.offline`, counts its variables and
constraints, and solves it with HiGHS under a time limit. A solve stopped by the limit is kept
with its incumbent, proven bound and gap (``accept_feasible=True``), and its status says so.

Columns
-------
- ``build (s)``: building the Pyomo model in Python (``SolveResult.build_seconds``).
- ``translate (s)``: a separate solver call with a 1 ms time limit on the same model, i.e.
  handing the model to HiGHS plus HiGHS's set-up: an estimate (from its own run, so noisy on
  tiny models) of the translation part of ``solve (s)``.
- ``solve (s)``: the whole solver call (``SolveResult.solve_seconds``: translation + HiGHS).
- ``overhead``: ``build / (build + solve)``, the share of wall time spent building the model.
- ``objective`` / ``utility``: the solver's objective and the returned schedule's utility as
  recomputed by the independent validator (equal at a proven optimum; for an incumbent stopped
  by the time limit the schedule can be worth more than its ILP objective, because a completion
  indicator may sit after the job's last active slot).
- ``LP bound``: the LP relaxation's value (``relax=True``), an upper bound on the optimum.

The benchmark checks what it reports: every schedule returned passes the independent
validator, its recomputed utility is at least the ILP objective (equal when optimal) and at most
the proven bound, and the LP bound is not below it.
"""

from __future__ import annotations

import math
import time
from typing import Any

from optsched.errors import NotOptimalError
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.offline import DEFAULT_MIP_GAP, build_model, extract_schedule
from optsched.online.oasis.schedule import validate
from optsched.solvers import solve

#: Seconds HiGHS may spend on one instance before its incumbent and bound are reported.
TIME_LIMIT = 60.0
QUICK_TIME_LIMIT = 20.0
#: Time limit used to measure the translation into HiGHS (stops before any real search).
TRANSLATE_LIMIT = 1e-3
#: Relative tolerance when comparing the validator's utility with the solver's objective.
UTILITY_RTOL = 1e-6

#: (jobs, worker servers = PS servers, horizon); servers in total = 2 * H.
SIZES = [(5, 2, 20), (10, 3, 20), (15, 4, 25), (20, 5, 30), (30, 6, 35), (40, 8, 40)]
QUICK_SIZES = [(5, 2, 20), (10, 3, 20)]
SEED = 0


def _warm_up() -> None:
    # Import Pyomo and HiGHS once so the first row's build time is not the import time.
    inst = generate_instance(2, 1, 1, 3, seed=SEED)
    solve(build_model(inst))


def _one(n_jobs: int, servers: int, horizon: int, time_limit: float) -> list[Any]:
    inst = generate_instance(n_jobs, servers, servers, horizon, seed=SEED)

    start = time.perf_counter()
    model = build_model(inst)
    build = time.perf_counter() - start
    n_vars, n_cons = model.nvariables(), model.nconstraints()

    try:
        solve(model, time_limit=TRANSLATE_LIMIT)
        translate = math.nan  # solved within 1 ms: nothing separates translation
    except NotOptimalError as exc:
        translate = exc.result.solve_seconds

    model = build_model(inst)  # a fresh model: no state from the probe above
    res = solve(
        model,
        time_limit=time_limit,
        mip_gap=DEFAULT_MIP_GAP,
        accept_feasible=True,
        build_seconds=build,
    )
    schedule = extract_schedule(model, inst)
    report = validate(inst, schedule)
    report.raise_if_invalid()
    objective = res.objective if res.objective is not None else 0.0
    slack = UTILITY_RTOL * max(1.0, abs(objective))
    # The schedule's true utility is never below the ILP objective (a completion indicator can
    # only sit at or after the last active slot), and equals it at a proven optimum.
    if report.objective < objective - slack or (
        res.status.value == "optimal" and report.objective > objective + slack
    ):
        raise AssertionError(f"validator utility {report.objective} vs objective {objective}")
    if res.bound is not None and report.objective > res.bound + slack:
        raise AssertionError(f"validator utility {report.objective} above bound {res.bound}")

    relaxed = build_model(inst, relax=True)
    lp = solve(relaxed).objective
    assert lp is not None
    if lp < report.objective - slack:
        raise AssertionError(f"LP bound {lp} below the schedule's utility {report.objective}")

    total = res.build_seconds + res.solve_seconds
    return [
        n_jobs,
        2 * servers,
        horizon,
        n_vars,
        n_cons,
        res.build_seconds,
        translate,
        res.solve_seconds,
        res.build_seconds / total,
        res.status.value,
        objective,
        report.objective,
        res.bound if res.bound is not None else float("nan"),
        res.gap if res.gap is not None else float("nan"),
        lp,
    ]


def run(quick: bool = False) -> dict[str, Any]:
    """Build and solve the offline ILP on growing instances; report sizes, times and gaps."""
    sizes = QUICK_SIZES if quick else SIZES
    limit = QUICK_TIME_LIMIT if quick else TIME_LIMIT
    _warm_up()
    rows = [_one(n, s, t, limit) for n, s, t in sizes]
    overheads = [r[8] for r in rows]
    proven = sum(1 for r in rows if r[9] == "optimal")
    lp_ratio = [r[14] / r[11] for r in rows if r[11] > 0]
    return {
        "name": "oasis_offline",
        "title": "Offline OASiS ILP: model building vs HiGHS",
        "description": (
            f"generate_instance(jobs, H, H, T, seed={SEED}) with H = K; HiGHS through "
            f"pyomo.contrib.solver, time limit {limit:g} s, MIP gap {DEFAULT_MIP_GAP:g}. "
            "overhead = build / (build + solve); translate = the solver call with a 1 ms time "
            "limit (Pyomo -> HiGHS hand-over), included in solve. objective = the solver's value; "
            "utility = the returned schedule's utility recomputed by the independent validator "
            "(every schedule passed it; equal to the objective when optimal, possibly higher "
            "for an incumbent)."
        ),
        "columns": [
            "jobs",
            "servers",
            "T",
            "variables",
            "constraints",
            "build (s)",
            "translate (s)",
            "solve (s)",
            "overhead",
            "status",
            "objective",
            "utility",
            "bound",
            "gap",
            "LP bound",
        ],
        "rows": rows,
        "summary": {
            "instances proven optimal": f"{proven} of {len(rows)}",
            "max build overhead": max(overheads),
            "min build overhead": min(overheads),
            "largest model (variables)": max(r[3] for r in rows),
            "LP bound / best utility (min)": min(lp_ratio),
            "LP bound / best utility (max)": max(lp_ratio),
        },
        "notes": [
            "status 'feasible' = stopped at the time limit: objective is the incumbent's ILP "
            "value, bound the best proven upper bound, gap their relative difference.",
        ],
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2, default=str))
