"""OASiS online runs at the paper's scale: per-job decision time for 1,000 and 10,000 jobs.

Instances: :func:`optsched.online.oasis.generate.generate_instance` with T = 300 slots, H = K = 50
servers, arrivals uniform over the whole horizon and ``scale = 0.3`` (E*N of a few hundred to
about 2,000 chunk-epochs; at ``scale = 1`` the paper's ranges give jobs that cannot finish in
300 slots). The decision time of a job is the wall time from its arrival to its admission
decision and price update (one oracle call under the residual capacities, and on admission the
capacity check, the usage update and the new prices of the touched slots and servers). The
certificate (one more full-capacity oracle call per job) is timed separately on the 1,000-job
run only, to keep ``make bench`` short. ``--quick`` runs 200 jobs and a 300-job prefix of a
1,000-job instance instead (the report then says so).

What the window excludes, on purpose: Numba compilation (every kernel of both paths is compiled,
or loaded from the cache, on a small instance before anything is timed), the instance's cached
tables (utility tables and demand arrays, filled by ``run`` before the first decision), and each
job's work accounting (:func:`~optsched.online.oasis.engine.work_units`, computed for all jobs
before the loop: its cost per job is reported on its own).

Each run is made with the fused decision path (``kernel="fused"``, the default: one Numba call
per job for the room, the oracle and the deployment, the commit in Numba) and with the previous
default (``kernel="bounded"``: the bounded oracle kernel between numpy room and result code, the
vectorised numpy commit), alternately on the same instance in the same process; both must give
the same payoffs, final prices and schedule, and the ratios of their mean and 95th-percentile
decision times are reported. Each path is run twice (once with ``--quick``) and the run with
the lower mean is kept: the machine these figures come from is shared, and load comes in bursts.
A second horizon (T = 1,200: the 1,000-job instance of the generator at four times the slots)
measures how the decision time grows with T: the exponent is
``log(ms(1200) / ms(300)) / log 4`` (1 = linear).

Why 1,000 jobs cost more per job than 10,000: the time goes to jobs with a positive payoff (a
long DP scan up to their best deadline, then the commit). The 1,000-job run admits about a
fifth of its jobs; with ten times as many arrivals in the same 300 slots the cluster's prices
rise early and most later jobs are refused after a short scan, which pulls the mean down. The
columns ``admitted mean ms`` and ``refused mean ms`` show it.
"""

from __future__ import annotations

import math
import time

import numpy as np

from optsched.online.oasis.engine import work_units
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.online import OASiS, dual_bound

T = 300
#: Second horizon of the growth measurement (same number of jobs, T_LONG / T times the slots).
T_LONG = 1200
H = K = 50
SCALE = 0.3
#: The goal: mean decision time at 1,000 jobs, T = 300, H = K = 50 (ms).
GOAL_MS = 1.0
#: The path measured, and the previous default it is compared with.
AFTER, BEFORE = "fused", "bounded"


def _prefix(inst, n: int):
    jobs = sorted(inst.jobs, key=lambda j: j.arrival)[:n]
    return inst.model_copy(update={"jobs": tuple(jobs)})


def _warm_up() -> None:
    """Compile (or load) every kernel of both paths, the commit kernels included."""
    inst = generate_instance(12, 3, 3, 12, seed=1)
    for kernel in (AFTER, BEFORE):
        run = OASiS(certify=False, kernel=kernel).run(inst)
        assert run.admitted, "the warm-up instance must admit a job"


def _timed(inst, kernel: str):
    start = time.perf_counter()
    result = OASiS(certify=False, kernel=kernel).run(inst)
    return result, time.perf_counter() - start


def _best_of(inst, repeats: int) -> dict:
    """Run both paths ``repeats`` times, alternately; keep each path's run of lowest mean."""
    best: dict = {}
    for _ in range(repeats):
        for kernel in (AFTER, BEFORE):
            result, total = _timed(inst, kernel)
            mean = float(np.mean(result.decision_seconds))
            if kernel not in best or mean < best[kernel][2]:
                best[kernel] = (result, total, mean)
    return best


def run(quick: bool = False) -> dict:
    sizes = [(200, None, T), (1000, 300, T)] if quick else [(1000, None, T), (10000, None, T)]
    sizes.append((250 if quick else 1000, None, T_LONG))
    repeats = 1 if quick else 2
    _warm_up()
    rows = []
    summary: dict[str, float] = {}
    notes = []
    mean_at: dict[tuple[str, int], float] = {}
    for n_jobs, prefix, horizon in sizes:
        inst = generate_instance(
            n_jobs, H, K, horizon, seed=n_jobs, scale=SCALE, arrival_window=1.0
        )
        ran = inst if prefix is None else _prefix(inst, prefix)
        chunk_epochs = np.array([j.chunk_epochs for j in ran.jobs])
        start = time.perf_counter()
        for i in range(ran.n_jobs):
            work_units(ran, i)
        units_ms = (time.perf_counter() - start) / ran.n_jobs * 1e3
        best = _best_of(ran, repeats)
        result, total, _ = best[AFTER]
        before, total_before, _ = best[BEFORE]
        assert before.payoffs == result.payoffs
        assert np.array_equal(before.worker_prices, result.worker_prices)
        assert np.array_equal(before.ps_prices, result.ps_prices)
        assert before.schedule == result.schedule
        ms = np.array(result.decision_seconds) * 1e3
        ms_before = np.array(before.decision_seconds) * 1e3
        order = sorted(range(ran.n_jobs), key=lambda j: (ran.jobs[j].arrival, j))
        admitted = np.array([result.payoffs[j] > 0 for j in order])
        cert_ms = cert_ratio = None
        if n_jobs <= 1000 and horizon == T:
            start = time.perf_counter()
            cert = dual_bound(ran, result.worker_prices, result.ps_prices)
            cert_ms = (time.perf_counter() - start) / len(ran.jobs) * 1e3
            cert_ratio = cert.value / max(result.utility, 1e-12)
        p95, p95_before = float(np.percentile(ms, 95)), float(np.percentile(ms_before, 95))
        rows.append(
            [
                n_jobs,
                len(ran.jobs),
                horizon,
                H,
                K,
                int(np.median(chunk_epochs)),
                int(chunk_epochs.max()),
                len(result.admitted),
                float(ms.mean()),
                float(ms_before.mean()),
                float(ms_before.mean() / ms.mean()),
                p95,
                p95_before,
                p95_before / p95,
                float(np.median(ms)),
                float(ms.max()),
                float(ms[admitted].mean()) if admitted.any() else None,
                float(ms[~admitted].mean()) if (~admitted).any() else None,
                total,
                total_before,
                units_ms,
                cert_ms,
                cert_ratio,
            ]
        )
        if horizon == T:
            summary[f"mean ms per decision ({n_jobs} jobs)"] = float(ms.mean())
            summary[f"previous mean ms per decision ({n_jobs} jobs)"] = float(ms_before.mean())
            summary[f"speed-up ({n_jobs} jobs)"] = float(ms_before.mean() / ms.mean())
            summary[f"p95 ms per decision ({n_jobs} jobs)"] = p95
            summary[f"previous p95 ms per decision ({n_jobs} jobs)"] = p95_before
            summary[f"p95 speed-up ({n_jobs} jobs)"] = p95_before / p95
        if prefix is None:
            mean_at.setdefault((AFTER, horizon), float(ms.mean()))
            mean_at.setdefault((BEFORE, horizon), float(ms_before.mean()))
        if prefix is not None:
            notes.append(
                f"{n_jobs}-job instance: the first {prefix} arrivals were run (the full run "
                f"would take about {total / prefix * n_jobs:.0f} s at the measured rate); "
                "figures are per job of that prefix."
            )
    goal_key = "mean ms per decision (1000 jobs)"
    if goal_key in summary and not quick:
        mean = summary[goal_key]
        summary["mean / 1 ms goal (1000 jobs)"] = mean / GOAL_MS
        verdict = (
            f"met: {mean:.3g} ms, {mean / GOAL_MS:.2f} of the goal"
            if mean <= GOAL_MS
            else f"not met: {mean:.3g} ms, a factor {mean / GOAL_MS:.2f} still to cut"
        )
        notes.insert(
            0, f"Goal, mean decision time <= {GOAL_MS:g} ms at 1,000 jobs (T = {T}): {verdict}."
        )
    else:
        notes.insert(0, "Goal (1,000 jobs, T = 300) not measured at the quick sizes.")
    if (AFTER, T) in mean_at and (AFTER, T_LONG) in mean_at:
        for kernel, label in ((AFTER, ""), (BEFORE, " (previous)")):
            growth = math.log(mean_at[(kernel, T_LONG)] / mean_at[(kernel, T)])
            summary[f"growth exponent of ms per decision, T = {T} to {T_LONG}{label}"] = (
                growth / math.log(T_LONG / T)
            )
    notes.append(
        "Measured on a 2-core machine shared with about seven other users at once: absolute "
        "times move with their load (by up to a factor of 2 between runs); the ratios, from "
        "runs alternated in one process, are the comparable figures."
    )
    notes.append(
        "Not in the decision window: compilation (done before timing), the instance's cached "
        "tables (filled before the first decision) and the per-job work accounting "
        "(column 'work units ms/job', computed for every job before the loop)."
    )
    notes.append(
        "D/ALG uses the final prices untightened: at this scale the price term dominates and "
        "the certificate is loose; tightening (tighten=True) costs about 60 oracle calls per job."
    )
    notes.append(
        "The paper reports under 1 s per job at T = 100 with 80 servers (hardware unstated)."
    )
    return {
        "name": "bench_oasis_online",
        "title": "OASiS online: per-job decision time at T = 300 (and 1,200), H = K = 50",
        "description": __doc__.strip().splitlines()[0],
        "columns": [
            "jobs",
            "run",
            "T",
            "H",
            "K",
            "median E*N",
            "max E*N",
            "admitted",
            "mean ms/job",
            "previous mean ms/job",
            "speed-up",
            "p95 ms/job",
            "previous p95 ms/job",
            "p95 speed-up",
            "median ms/job",
            "max ms/job",
            "admitted mean ms",
            "refused mean ms",
            "total s",
            "previous total s",
            "work units ms/job",
            "certificate ms/job",
            "D/ALG",
        ],
        "rows": rows,
        "summary": summary,
        "notes": notes,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2, default=str))
