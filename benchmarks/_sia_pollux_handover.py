"""Hand Sia's own Pollux search the rest of its cached run at a time T, under chosen seeds.

Run with Sia's Python (numpy 1.23, pymoo 0.4.2), never imported by optsched::

    python _sia_pollux_handover.py SIA_DIR WORKLOAD_CSV RUN_LOG OUT_DIR --at SECONDS \\
        [--seeds 0,1,2] [--replay] [--parallel 2]

The cluster is built and stepped as in ``_sia_pollux_fit.py`` (``multi_simulator_unaware.py``'s
:class:`ClusterUnaware` with :class:`PolluxPolicyUnaware`, 60 s rounds, Sia's code unmodified).
Every round whose decision time is before ``--at`` answers ``optimize`` with the cached run's
logged allocation (each GPU named by the first virtual node of its physical node). At the first
round at or after ``--at`` the instance overrides are removed, so Sia's own ``get_job_infos`` and
``PolluxPolicyUnaware.optimize`` (pymoo NSGA-II, 100 generations of 100) decide every round to
the end. The process forks there, once per seed ``k``; each child seeds numpy's global generator
and Python's ``random`` with ``k`` (the search draws from ``np.random`` only) and runs alone.
``--replay`` adds a child that keeps replaying the log to the end: it must give the cached run's
figures, which checks the prefix and the metrics.

The search's carried population (``_prev_states``) is not in Sia's log, so at the hand-over it
is empty and the policy starts as after a fresh start: its initial population is the single
current allocation (``base_allocations``, the logged allocation of the round before, in the
first-virtual-node form above), which is also what its restart penalty compares against.

Metrics, per child (``OUT_DIR/<name>.json`` and one printed line): average JCT over completed
jobs and makespan (last completion minus first submission) from the cluster's JCTs, GPU-hours
as GPUs held by unfinished jobs in each round's record times 60 s -- the rule of Sia's
``utils/print_run_stats.py`` and of the cached run's ``summarize.py``; plus the allocations the
still-running jobs held from ``--at`` on, and (seeded children) the search's own answers before
Sia's majority-type repair (virtual node ids), both as runs of equal allocation.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sia_pollux_fit import _cluster, _logged_hooks, _read_log

INTERVAL = 60


def _metrics(cluster, submit: dict[str, float], at: float) -> dict:  # type: ignore[no-untyped-def]
    jcts = cluster.get_jcts()
    makespan = max(submit[n] + j for n, j in jcts.items()) - min(submit.values())
    gpu_s = 0.0
    per_type: dict[str, float] = {}
    held: dict[str, list[list]] = {}
    for rec in cluster.logs:
        for j in rec["submitted_jobs"]:
            a = j["allocation"]
            if j["completion_time"] is None and a != () and a != [] and a[0] is not None:
                gpu_s += len(a[1]) * INTERVAL
                per_type[a[0]] = per_type.get(a[0], 0.0) + len(a[1]) * INTERVAL
                if rec["timestamp"] >= at:
                    cur = [a[0], [int(x) for x in a[1]]]
                    runs = held.setdefault(j["name"], [])
                    if runs and runs[-1][2:] == cur and runs[-1][1] == rec["timestamp"] - INTERVAL:
                        runs[-1][1] = rec["timestamp"]
                    else:
                        runs.append([rec["timestamp"], rec["timestamp"], *cur])
    return {
        "completed": len(jcts),
        "avg_jct_s": sum(jcts.values()) / len(jcts),
        "makespan_h": makespan / 3600,
        "gpu_hours": gpu_s / 3600,
        "gpu_hours_per_type": {k: v / 3600 for k, v in sorted(per_type.items())},
        "held_from_handover": held,
        "jcts": jcts,
    }


def _finish(cluster, policy, name, seed, at, submit, out_dir):  # type: ignore[no-untyped-def]
    if seed is not None:
        # back to Sia's own methods (the overrides are instance attributes)
        del policy.optimize
        del cluster.get_job_infos
        random.seed(seed)
        import numpy as np

        # Sia's search draws from numpy's legacy global generator; it is the state to seed
        np.random.seed(seed)  # noqa: NPY002
    raw: dict[str, list[list]] = {}
    if seed is not None:
        search = policy.optimize

        def recorded(job_infos, node_infos, prev_allocs, node_template):  # type: ignore[no-untyped-def]
            # the search's own answer, before Sia's majority-type repair
            allocs, n = search(job_infos, node_infos, prev_allocs, node_template)
            now = int(cluster.current_time)
            for name, vnodes in allocs.items():
                runs = raw.setdefault(name, [])
                cur = sorted(int(v) for v in vnodes)
                if runs and runs[-1][2] == cur and runs[-1][1] == now - INTERVAL:
                    runs[-1][1] = now
                else:
                    runs.append([now, now, cur])
            return allocs, n

        policy.optimize = recorded
    t0 = time.time()
    rounds = 0
    with contextlib.redirect_stdout(io.StringIO()) as sink:
        while not cluster.all_complete():
            cluster.step(INTERVAL)
            rounds += 1
            sink.seek(0)
            sink.truncate()
            if rounds in (5, 20):
                print(f"{name}: {rounds} rounds in {time.time() - t0:.1f} s", file=sys.stderr)
    out = {"name": name, "seed": seed, "handover_at": at, "rounds_after": rounds,
           "wall_s": time.time() - t0, **_metrics(cluster, submit, at),
           "search_from_handover": raw}  # fmt: skip
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"{name}: avg JCT {out['avg_jct_s']:.1f} s, makespan {out['makespan_h']:.3f} h, "
          f"GPU-h {out['gpu_hours']:.2f} {out['gpu_hours_per_type']}, {out['completed']} done, "
          f"{rounds} rounds after hand-over, {out['wall_s']:.0f} s")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sia_dir")
    ap.add_argument("workload")
    ap.add_argument("log")
    ap.add_argument("out_dir")
    ap.add_argument("--at", type=float, required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--parallel", type=int, default=2)
    args = ap.parse_args()
    workload = os.path.abspath(args.workload)
    log = _read_log(os.path.abspath(args.log))
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cluster, policy = _cluster(args.sia_dir, workload)
    submit = {j.name: float(j.submission_time) for j in cluster.jobs}

    policy.optimize, cluster.get_job_infos = _logged_hooks(cluster, log)
    # step() advances the clock by one round and then decides: stop while the next decision
    # time (current_time + INTERVAL) is still before the hand-over
    with contextlib.redirect_stdout(io.StringIO()) as sink:
        while not cluster.all_complete() and cluster.current_time + INTERVAL < args.at:
            cluster.step(INTERVAL)
            sink.seek(0)
            sink.truncate()
    print(f"replayed to {cluster.current_time:.0f} s; the search decides from "
          f"{cluster.current_time + INTERVAL:.0f} s", flush=True)  # fmt: skip
    tasks: list[tuple[str, int | None]] = [(f"seed{s}", int(s)) for s in args.seeds.split(",") if s]
    if args.replay:
        tasks.insert(1, ("replay", None))
    running: set[int] = set()
    for name, seed in tasks:
        while len(running) >= args.parallel:
            running.discard(os.wait()[0])
        pid = os.fork()
        if pid == 0:
            try:
                _finish(cluster, policy, name, seed, args.at, submit, out_dir)
            finally:
                sys.stdout.flush()
                os._exit(0)
        running.add(pid)
    while running:
        running.discard(os.wait()[0])


if __name__ == "__main__":
    main()
