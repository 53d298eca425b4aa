"""The simulator's policies on Pollux's jobs: every policy compared on one world.

The goodput world (:mod:`optsched.goodput`) runs Pollux's jobs at their measured step times,
decides every 60 s and restarts a job whose GPUs change. Its own policies are Pollux's
baselines (``tiresias``: rigid gangs; ``optimus-oracle``: fixed batches, any GPU count) and
Pollux. :class:`~optsched.goodput.policies.sim_adapter.SimPolicyAdapter` runs the cluster
simulator's policies (``fifo``, ``srtf``, ``tiresias-las``, ``themis``, Gavel's ``max-min``,
...) on the same jobs at their owners' batches: rigid gangs for the policies of fixed gangs,
gangs of 1 up to the batch's bound for those that size them (``optimus``, the ``-elastic``
variants). Every run is checked by the goodput world's validator.

Then a cross-check: the simulator's 2D-LAS with the goodput baseline's one threshold of
16 GPU-hours takes the goodput Tiresias's decisions, job for job.

The first 32 cifar10/bert jobs of the Pollux artifact's workload 6 (the slice shipped in
``tests/data/pollux``) on 4 nodes of 4 GPUs; a few seconds. Run: ``python
examples/sim_policies_goodput.py``; with ``OPTSCHED_POLLUX_SIMULATOR`` pointing at the
artifact's ``simulator/`` folder, ``--workload 6`` runs the whole workload on the artifact's
16 x 4 cluster (about a minute; ``optsched sim compare workload-6.csv --policies ...`` too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from optsched.goodput.artifact import read_workload_of
from optsched.goodput.cluster import simulate
from optsched.goodput.policies import OptimusOraclePolicy, TiresiasPolicy
from optsched.goodput.policies.sim_adapter import SimPolicyAdapter, refusal
from optsched.goodput.traces import read_model_traces
from optsched.goodput.validate import validate
from optsched.goodput.workload import PolluxWorkload, read_workload
from optsched.sim.policies import Tiresias

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "pollux"
SIM_POLICIES = ["fifo", "srtf", "tiresias-las", "gandiva", "themis", "max-min", "optimus",
                "srtf-elastic", "tiresias-las-elastic"]  # fmt: skip


def workload_and_cluster() -> tuple[PolluxWorkload, Any, int]:
    if "--workload" in sys.argv:
        number = int(sys.argv[sys.argv.index("--workload") + 1])
        return read_workload_of(number), None, 16
    w6 = read_workload(SLICE / "workload-6.csv")
    rows = [j for j in w6.jobs if j.application in ("cifar10", "bert")][:32]
    traces = {name: read_model_traces(SLICE / "traces" / name) for name in ("bert", "cifar10")}
    return PolluxWorkload(tuple(rows)), traces, 4


def main() -> None:
    workload, traces, nodes = workload_and_cluster()
    policies: list[Any] = [TiresiasPolicy(), OptimusOraclePolicy()]
    policies += [SimPolicyAdapter(name, workload, traces) for name in SIM_POLICIES]
    print(f"{len(workload)} jobs on {nodes} nodes x 4 GPUs, 60 s decisions")
    print(f"{'policy':<22}{'job kind':<12}{'avg JCT (s)':>12}{'makespan (s)':>14}"
          f"{'GPU-hours':>11}{'restarts':>10}  valid")  # fmt: skip
    runs = {}
    for policy in policies:
        run = runs[policy.name] = simulate(workload, policy, num_nodes=nodes, traces=traces)
        report = validate(run)
        assert report.ok, report.violations[:3]
        s = run.summary()
        print(f"{policy.name:<22}{run.job_kind:<12}{s['average_jct']:>12.1f}{s['makespan']:>14.0f}"
              f"{s['gpu_hours']:>11.2f}{s['restarts']:>10}  {report.ok}")  # fmt: skip
    print(f"\nedf is refused: {refusal('edf')}")

    las = SimPolicyAdapter(Tiresias("las", thresholds=(16 * 3600.0,)), workload, traces)
    same = simulate(workload, las, num_nodes=nodes, traces=traces)
    base = runs["tiresias"]
    equal = sum(
        a.completion_time == b.completion_time and a.segments == b.segments
        for a, b in zip(base.jobs, same.jobs, strict=True)
    )
    assert equal == len(workload), "2D-LAS with one 16-GPU-hour threshold is Tiresias's rule"
    print(f"tiresias-las with one threshold of 16 GPU-hours: {equal} / {len(workload)} jobs "
          f"as the goodput tiresias (avg JCT {same.average_jct:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
