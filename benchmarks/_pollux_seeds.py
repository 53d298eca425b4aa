"""optsched's Pollux on one artifact workload under several seeds: what its randomness moves.

Pollux's policy is a genetic search. The artifact's run draws from an unseeded generator, so
one run of it is one sample; ``bench_pollux_sim`` pairs it with optsched's seed 0. This runs
:class:`~optsched.goodput.policies.PolluxPolicy` on the same workload with each seed given
and prints, per seed, the average JCT, makespan and GPU-hours (each record checked by the
validator), then their mean and spread: the scale of a difference that a change of seed alone
makes, against which the cross-check's Pollux row is read.

Usage: ``python benchmarks/_pollux_seeds.py SIMULATOR_DIR WORKLOAD_CSV SEED [SEED ...]``, e.g.
``~/.cache/optsched/pollux/src-c793c70/simulator`` (the artifact's ``simulator/`` folder,
exported by ``bench_pollux_sim``) ``.../workloads/workload-6.csv 0 1 2 3``. Each seed takes
about 1 minute of CPU on workload 6 (6 minutes with ``PolluxPolicy(compiled=False)``, the same
records).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    from optsched.goodput.artifact import read_job_types
    from optsched.goodput.cluster import simulate
    from optsched.goodput.policies.pollux import PolluxPolicy
    from optsched.goodput.validate import validate
    from optsched.goodput.workload import read_workload

    if len(argv) < 3:
        print(__doc__.split("Usage: ")[1].split("\n\n")[0], file=sys.stderr)
        return 2
    folder, workload = Path(argv[0]), Path(argv[1])
    traces = read_job_types(folder)
    jobs = read_workload(workload)
    rows = []
    for seed in (int(s) for s in argv[2:]):
        began = time.process_time()
        run = simulate(jobs, PolluxPolicy(seed=seed), traces=traces)
        cpu = time.process_time() - began
        row = {
            "seed": seed,
            "avg_jct": run.average_jct,
            "makespan": run.makespan,
            "gpu_hours": run.gpu_hours,
            "valid": validate(run).ok,
            "cpu_seconds": round(cpu, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    for key in ("avg_jct", "makespan", "gpu_hours"):
        values = [float(r[key]) for r in rows]
        mean = statistics.fmean(values)
        spread = 100.0 * (max(values) - min(values)) / mean
        print(f"{key}: mean {mean:.2f}, spread (max - min) {spread:.2f} % of the mean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
