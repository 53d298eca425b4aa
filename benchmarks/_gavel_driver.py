"""Run Gavel's own simulator on one trace and write its per-job JCTs as JSON.

Runs under a Python with Gavel's dependencies (not optsched's), so it imports nothing from
optsched. Gavel (github.com/stanford-futuredata/gavel, MIT) is used unmodified: its
``scheduler/`` directory goes on ``sys.path`` and the calls are those of its
``scripts/drivers/simulate_scheduler_with_trace.py`` (``utils.parse_trace``, ``utils.get_policy``,
``scheduler.Scheduler(..., simulate=True)``, ``Scheduler.simulate``), one GPU per server as that
driver's default. Per-job JCTs are the scheduler's ``_job_completion_times`` (completion minus
arrival, keyed by the job's position in the trace); the makespan is the simulated clock at the end,
which Gavel prints as "Total duration". Wall time (and the process's CPU time, ``cpu_seconds``,
robust to a busy machine) covers parsing, the policy, the scheduler and the simulation, not the
imports; Gavel's own logging (DEBUG, on stderr) stays on.

Usage: ``python _gavel_driver.py SCHEDULER_DIR TRACE POLICY V:P:K SEED ROUND_S THROUGHPUTS OUT``
"""

import json
import sys
import time


def main() -> None:
    sched_dir, trace, policy_name, cluster, seed, round_s, throughputs, out = sys.argv[1:9]
    sys.path.insert(0, sched_dir)
    import scheduler  # Gavel's
    import utils  # Gavel's

    start = time.perf_counter()
    cpu_start = time.process_time()
    jobs, arrivals = utils.parse_trace(trace)
    policy = utils.get_policy(policy_name, solver="ECOS", seed=int(seed))
    sched = scheduler.Scheduler(
        policy,
        throughputs_file=throughputs,
        simulate=True,
        seed=int(seed),
        time_per_iteration=int(round_s),
    )
    v100, p100, k80 = (int(x) for x in cluster.split(":"))
    error = None
    try:
        sched.simulate(
            {"v100": v100, "p100": p100, "k80": k80},
            arrivals,
            jobs,
            num_gpus_per_server={"v100": 1, "p100": 1, "k80": 1},
        )
    except Exception as exc:  # e.g. ECOS's SolverError on long traces: recorded, not raised
        error = f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    jct = {str(job_id[0]): value for job_id, value in sched._job_completion_times.items()}
    with open(out, "w") as f:
        json.dump(
            {
                "jobs": len(jobs),
                "jct": jct,
                "makespan": sched.get_current_timestamp(),
                "wall_seconds": wall,
                "cpu_seconds": cpu,
                "error": error,
            },
            f,
        )


if __name__ == "__main__":
    main()
