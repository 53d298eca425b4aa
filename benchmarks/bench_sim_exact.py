"""The exact optimum of the round-based simulator world: how large, how close, how fast.

Seeded synthetic traces (:func:`optsched.sim.generate_job_table`, gangs of 1 or 2 GPUs,
log-normal sizes) on a three-type cluster (v100=2, p100=2, k80=4, per-GPU speeds 3 : 2 : 1),
rounds of :func:`optsched.sim.comparison.auto_round_seconds` (about 24 rounds), min total weighted
JCT with HiGHS under a budget of 60 CPU seconds per solve (model building included; the
process's CPU time, HiGHS's threads counted, judged after the solve; HiGHS, which has no CPU
limit, gets a wall-clock cap of the budget times the one-minute load per core, 1 on an idle
machine, ``benchmarks/_measure.py``): a wall-clock limit made the headline depend on the
machine's load (100 jobs proven in 31.9 s at load 4.5, stopped at a 93% gap at load 16).
HiGHS gets the strengthened model as sparse matrices (:mod:`optsched.sim.optimum.exact_matrix`:
compact rounds, root LP, a start from it and reduced-cost fixing before the search), the
``plain`` model through Pyomo.
Three parts, one run:

* ``sweep``: the strengthened model started from the best of FIFO, SJF and SRTF on the same
  rounds (a MIP start), growing sizes until one is not proven optimal within the CPU budget;
  the headline is the largest size proven. Each row also gives the time in HiGHS's search
  (``solve s``), the time before it (``build s``: model, root LP, root heuristic, fixing) and
  the process's CPU time (``cpu s``, HiGHS's threads included), the figure the budget judges;
* ``plain/strong``: the plain and the strengthened model, both without a start, on the same
  instances; the ratio of their CPU times (a solve stopped short counts what it used);
* ``cold/warm``: at 150 and 250 jobs, the strengthened model without and with the start: the
  proven gap each reaches in the budget.

Every optimum and every incumbent is replayed and validated by the solve itself, and the sweep
checks that no policy without mid-round decisions or sharing beats a proven optimum.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from optsched.errors import NotOptimalError
from optsched.results import ExactResult
from optsched.sim import ClusterSpec, GpuType, Throughputs, World, generate_job_table, simulate
from optsched.sim.comparison import auto_round_seconds
from optsched.sim.optimum.exact import MipStart, objective_value, solve, start_from_record
from optsched.sim.policies import make_policy

if str(Path(__file__).resolve().parent) not in sys.path:
    # the shared helpers beside this file, also when it is loaded by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import cpu_budget

#: CPU seconds per solve (every thread of the process counted): the budget of "proven optimal
#: within 60 s", judged by CPU time so that the machine's load does not decide it.
TIME_LIMIT = 60.0
SIZES = (16, 24, 32, 40, 48, 56, 64, 80, 100, 120, 150, 200, 250)
RATIO_SIZES = (8, 12, 16, 20, 24)
GAP_SIZES = (150, 250)
QUICK_SIZES = (4, 6, 8)
QUICK_RATIO_SIZES = (4, 8)
QUICK_GAP_SIZES = (16,)
POLICIES = ("fifo", "sjf", "srtf")
SEED = 7


def _world(n: int) -> World:
    cluster = ClusterSpec(
        gpu_types=(
            GpuType(name="v100", count=2, gpus_per_server=2),
            GpuType(name="p100", count=2, gpus_per_server=2),
            GpuType(name="k80", count=4, gpus_per_server=4),
        )
    )
    table = generate_job_table(
        n, seed=SEED, mean_interarrival=600.0, gangs=(1, 2), gang_weights=(0.7, 0.3)
    )
    tp = Throughputs.uniform({"v100": 3.0, "p100": 2.0, "k80": 1.0})
    return World.from_frame(table, cluster, tp)


def _best_start(world: World, L: float) -> tuple[MipStart | None, dict[str, float]]:
    """The best policy run on the model's rounds as a MIP start, and every policy's value."""
    best: MipStart | None = None
    values: dict[str, float] = {}
    for name in POLICIES:
        record = simulate(world, make_policy(name), round_seconds=L)
        values[name] = objective_value(world, record, "weighted-jct")
        if record.extra.get("wakeups", 0):
            continue
        start = start_from_record(world, record, L)
        if best is None or start.value < best.value:
            best = start
    return best, values


def _solve(
    world: World, L: float, limit: float, *, strengthen: bool, start: MipStart | None
) -> tuple[ExactResult[Any], float, float, bool]:
    """The solve, its wall time, the process's CPU time in it, and whether it is proven
    optimal within ``limit`` CPU seconds (the wall-clock cap handed to HiGHS is the budget
    times the machine's load per core, :func:`_measure.load_factor`)."""

    def attempt(wall_cap: float) -> ExactResult[Any]:
        try:
            return solve(
                world,
                L,
                time_limit=wall_cap,
                accept_feasible=True,
                strengthen=strengthen,
                warm_start=start,
            )
        except NotOptimalError as exc:
            return exc.result  # no incumbent at all (e.g. the cap ran out while building)

    out = cpu_budget(attempt, limit)
    res: ExactResult[Any] = out.value
    return res, out.wall, out.cpu, bool(res.optimal and out.within)


def _row(
    part: str,
    n: int,
    L: float,
    res: ExactResult[Any],
    timing: tuple[float, float],
    model: str,
    start: str,
) -> list[Any]:
    wall, cpu = timing
    return [
        part,
        n,
        res.extra.get("rounds", res.size.get("rounds", "")),
        res.extra.get("model_rounds", ""),
        res.size.get("binaries", ""),
        model,
        start,
        res.status.value,
        wall,
        res.build_seconds,
        res.solve_seconds,
        cpu,
        "" if res.objective is None else res.objective,
        "" if res.bound is None else res.bound,
        "" if res.gap is None else res.gap,
    ]


def _gap_text(res: ExactResult[Any]) -> Any:
    """The proven gap, or what is missing for one."""
    if res.gap is not None:
        return res.gap
    if res.objective is None:
        return "no incumbent"
    return f"incumbent {res.objective:.4g}, no bound (the root LP did not finish)"


def run(quick: bool = False) -> dict[str, Any]:
    limit = 15.0 if quick else TIME_LIMIT
    rows: list[list[Any]] = []
    largest = 0
    best_policy_gap: dict[int, float] = {}
    for n in QUICK_SIZES if quick else SIZES:
        world = _world(n)
        L = auto_round_seconds(world)
        start, values = _best_start(world, L)
        res, wall, cpu, proven = _solve(world, L, limit, strengthen=True, start=start)
        rows.append(
            _row("sweep", n, L, res, (wall, cpu), "strong", start.policy if start else "none")
        )
        if not proven or res.objective is None:
            break  # larger sizes only take longer
        largest = n
        for name, value in values.items():
            # no policy acting only at round starts, without sharing, beats the optimum
            record = simulate(world, make_policy(name), round_seconds=L)
            if record.extra.get("wakeups", 0) == 0 and max(record.completion) <= (
                res.extra["rounds"] * L
            ):
                assert value >= res.objective * (1 - 1e-6), (n, name)
        best_policy_gap[n] = min((v - res.objective) / res.objective for v in values.values())
    ratios: list[float] = []
    for n in QUICK_RATIO_SIZES if quick else RATIO_SIZES:
        world = _world(n)
        L = auto_round_seconds(world)
        plain, plain_wall, plain_cpu, _ = _solve(world, L, limit, strengthen=False, start=None)
        strong, strong_wall, strong_cpu, _ = _solve(world, L, limit, strengthen=True, start=None)
        rows.append(_row("plain/strong", n, L, plain, (plain_wall, plain_cpu), "plain", "none"))
        rows.append(_row("plain/strong", n, L, strong, (strong_wall, strong_cpu), "strong", "none"))
        if plain.optimal or strong.optimal:
            # CPU, not wall: the load of a shared machine cancels less in a ratio of wall times
            ratios.append(plain_cpu / strong_cpu)
    gaps: dict[str, Any] = {}
    for n in QUICK_GAP_SIZES if quick else GAP_SIZES:
        world = _world(n)
        L = auto_round_seconds(world)
        start, _ = _best_start(world, L)
        for label, given in (("cold", None), ("warm", start)):
            res, wall, cpu, _ = _solve(world, L, limit, strengthen=True, start=given)
            rows.append(
                _row(
                    "cold/warm", n, L, res, (wall, cpu), "strong", given.policy if given else "none"
                )
            )
            gaps[f"{n} jobs gap in {limit:g} CPU s, {label} start"] = _gap_text(res)
    summary: dict[str, Any] = {
        f"largest trace proven optimal within {limit:g} CPU s (jobs)": largest,
        "plain / strengthened CPU time, geometric mean over the instances": (
            math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else math.nan
        ),
        **gaps,
    }
    if best_policy_gap:
        summary["best policy gap to the optimum, range"] = (
            f"{min(best_policy_gap.values()):.3g} .. {max(best_policy_gap.values()):.3g}"
        )
    return {
        "name": "bench_sim_exact",
        "title": "Exact optimum of the round-based simulator world (min total weighted JCT)",
        "description": (
            "Seeded synthetic traces on v100=2,p100=2,k80=4 (speeds 3:2:1), HiGHS, "
            f"{limit:g} CPU s per solve (model building included; the process's CPU time, every "
            "thread counted; HiGHS's wall-clock cap is the budget times the load per core, 1 on "
            "an idle machine). `sweep`: strengthened "
            f"model, MIP start = best of {', '.join(POLICIES)} on the same rounds, stops at the "
            "first size not proven optimal within the CPU budget. `plain/strong`: both models "
            "without a start on the "
            "same instance. `cold/warm`: the strengthened model without and with the start. "
            "`rounds` is the horizon K, `model rounds` what is left below the start's value."
        ),
        "columns": [
            "part",
            "jobs",
            "rounds",
            "model rounds",
            "binaries",
            "model",
            "start",
            "status",
            "wall s",
            "build s",
            "solve s",
            "cpu s",
            "objective",
            "bound",
            "gap",
        ],
        "rows": rows,
        "summary": summary,
        "notes": [
            "Every optimum and incumbent is replayed by the simulator and checked by its "
            "validator inside `solve`; the replayed objective agrees with the solver's to 1e-6.",
            "A solve stopped by the cap reports [bound, objective] and the proven gap; "
            "`no incumbent` means the cap ran out before the solver had a point (building "
            "the model included); a row `optimal` with `cpu s` above the budget is not "
            "counted as proven within it.",
            "The budget is CPU time; wall time on a shared 2-core machine is noisy and only "
            "reported. `build s` is everything before HiGHS's search (the model, "
            "and for the matrix model the root LP, the root heuristic and the fixing), "
            "`solve s` HiGHS's search and the polishing, `cpu s` the process's CPU time "
            "(HiGHS's threads included).",
        ],
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=1, default=str))
