"""PACE's exact schedule: fusion DP + Jackson's rule on every shipped profile, and the LP.

For each profile (8 workers, 10 Gbit/s ring, 5 us per hop, 64 MB fusion buffer) this times the
fusion dynamic program (the pruned Numba kernel) and the optimal preemptive schedule of its
groups (Jackson's rule, O(n log n)); their sum is the time to compute PACE's schedule. The
previous kernel (every state of the O(n^2 G) DP, ``kernel="full"``) is timed on the same input
in the same run, and both must return the same grouping. A synthetic profile of about 1,500
tensors (budgets raised: the default ones refuse the full DP's tables past about 1,060 tensors)
shows the scaling. On the
smaller profiles it also solves the declarative model, the time-indexed transportation LP with
its exact search on the iteration time (cvxpy + HiGHS), on the unfused tensors, and reports
how much slower it is than the fast exact algorithm on the same instance.

The benchmark checks what it reports: the DP's value equals the exact schedule's, and the LP
optimum equals Jackson's rule.
"""

from __future__ import annotations

import math
import time
from typing import Any

from optsched.comm.pace import CostModel, build_dag, exact_schedule, optimal_fusion, solve_lp
from optsched.comm.pace.exact import jackson_value
from optsched.comm.pace.generate import random_profile
from optsched.limits import override
from optsched.profiles import available_profiles, load_profile
from optsched.solvers import available_solvers

REPEATS = 5
LP_MODELS = ("resnet18", "resnet34", "resnet50")
QUICK_LP_MODELS = ("resnet18",)
#: LP optima come from a solver with ~1e-7 feasibility tolerance.
LP_RTOL = 1e-6
#: Synthetic profile for the large case: ``random_profile(SYNTH_SEED, layers=SYNTH_LAYERS,
#: max_tensors=2, max_params=2_000_000)`` (1,490 tensors).
SYNTH_SEED = 0
SYNTH_LAYERS = 1500


def _best_of(fn, repeats: int) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def run(quick: bool = False) -> dict[str, Any]:
    cost = CostModel.ring(8, 10.0, 5.0)
    names = sorted(available_profiles(), key=lambda n: len(load_profile(n).tensors))
    if quick:
        names = [names[0], names[-1]]
    lp_models = QUICK_LP_MODELS if quick else LP_MODELS
    has_lp = "highs" in available_solvers(frontend="cvxpy")
    # Compile (or load) the Numba kernels before timing.
    optimal_fusion(build_dag(load_profile(names[0])), cost)
    rows = []
    largest: tuple[int, float, str] = (0, 0.0, "")
    ratios = {}
    dp_ratio: dict[str, float] = {}
    cases = [(name, build_dag(load_profile(name))) for name in names]
    synth = build_dag(
        random_profile(SYNTH_SEED, layers=SYNTH_LAYERS, max_tensors=2, max_params=2_000_000)
    )
    synth_name = f"synthetic ({synth.n_tensors} tensors)"
    cases.append((synth_name, synth))
    optimal_fusion(build_dag(load_profile(names[0])), cost, kernel="full")
    for name, dag in cases:
        with override(max_events=10**10, max_array_cells=10**9):
            t_dp, fusion = _best_of(lambda d=dag: optimal_fusion(d, cost, max_group_mb=64), REPEATS)
            t_full, full = _best_of(
                lambda d=dag: optimal_fusion(d, cost, max_group_mb=64, kernel="full"),
                1 if dag.n_tensors > 1000 else REPEATS,
            )
        assert full == fusion, name
        t_js, sched = _best_of(lambda d=dag, g=fusion.groups: exact_schedule(d, cost, g), REPEATS)
        value = float((sched.completion + sched.jobs.tail).max())
        assert math.isclose(value, fusion.value, rel_tol=1e-9), name
        dp_ratio[name] = t_full / t_dp
        row: list[Any] = [
            name,
            dag.n_tensors,
            len(fusion.groups),
            t_dp * 1e3,
            t_full * 1e3,
            t_full / t_dp,
            t_js * 1e3,
            (t_dp + t_js) * 1e3,
            (t_full + t_js) * 1e3,
            "",
            "",
            "",
        ]
        if has_lp and name in lp_models:
            unfused = exact_schedule(dag, cost)
            jobs = unfused.jobs
            t_fast, fast = _best_of(
                lambda j=jobs: jackson_value(j.release, j.work, j.tail), REPEATS
            )
            start = time.perf_counter()
            lp = solve_lp(jobs.release, jobs.work, jobs.tail)
            t_lp = time.perf_counter() - start
            assert math.isclose(lp.value, fast, rel_tol=LP_RTOL), name
            row[9] = t_lp
            row[10] = t_lp / t_fast
            row[11] = len(lp.solves)
            ratios[name] = t_lp / t_fast
        rows.append(row)
        if name != synth_name and dag.n_tensors > largest[0]:
            largest = (dag.n_tensors, (t_dp + t_js) * 1e3, name)
    synth_row = rows[-1]
    summary: dict[str, Any] = {
        "largest profile": f"{largest[2]} ({largest[0]} tensors)",
        "PACE schedule on the largest profile (ms)": largest[1],
        f"fusion DP speed-up on {largest[2]} (full / pruned)": dp_ratio[largest[2]],
        f"PACE schedule on the {synth_name} (ms)": synth_row[7],
        f"fusion DP speed-up on the {synth_name}": synth_row[5],
        "smallest fusion DP speed-up": min(dp_ratio.values()),
    }
    for name, ratio in ratios.items():
        summary[f"LP / fast exact on {name} (unfused)"] = ratio
    return {
        "name": "bench_pace_exact",
        "title": "PACE: exact schedule time (fusion DP + Jackson) and the LP",
        "description": (
            "Best of 5 runs; 8 workers, 10 Gbit/s ring, 64 MB fusion buffer. `fusion DP` is "
            "the pruned kernel, `full DP` the previous one (every state) on the same input "
            "(one run past 1,000 tensors); both return the same grouping. The LP columns solve "
            "the transportation LP with its exact search on the unfused tensors."
        ),
        "columns": [
            "model",
            "tensors",
            "groups",
            "fusion DP (ms)",
            "full DP (ms)",
            "DP speed-up",
            "exact schedule (ms)",
            "PACE total (ms)",
            "PACE total, full DP (ms)",
            "LP search (s)",
            "LP / fast",
            "LP solves",
        ],
        "rows": rows,
        "summary": summary,
        "notes": [] if has_lp else ["HiGHS is not available to cvxpy: LP columns skipped."],
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2, default=str))
