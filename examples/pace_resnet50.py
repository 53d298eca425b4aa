"""PACE on ResNet-50: the optimal preemptive all-reduce schedule against the baselines.

Eight workers on a 10 Gbit/s ring (MB = 10^6 bytes). Prints every policy's iteration time with
the common lower bound, the fusion comparison and PACE's fused groups; checks the optimum three
ways (Jackson's rule, Horn's closed form and, when HiGHS is installed, the transportation LP);
and draws the timeline of PACE's iteration to ``pace_resnet50.png``.
"""

from __future__ import annotations

import math
import sys

from optsched.comm.pace import CommInstance, compare, solve, validate
from optsched.comm.pace.exact import horn_value
from optsched.report.pace import plot_iteration
from optsched.solvers import available_solvers


def main(out: str = "pace_resnet50.png") -> None:
    instance = CommInstance(profile="resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
    result = compare(instance)
    dag = result.dag
    print(
        f"{result.display_name}: {dag.n_tensors} gradient tensors, "
        f"{dag.total_bytes / 1e6:.1f} MB, compute {dag.compute_ms:.1f} ms per iteration"
    )
    print(result.cost.description)
    print(f"\n{'policy':<14} {'iteration ms':>12} {'x PACE':>7} {'overlap':>8} {'calls':>6}")
    speed = result.speedup()
    for name, r in result.results.items():
        validate(instance, r).raise_if_invalid()  # independent re-check
        print(
            f"{name:<14} {r.iteration_time:12.2f} {speed[name]:7.3f} "
            f"{r.overlap:8.0%} {r.n_calls:6d}"
        )
    print(f"{'lower bound':<14} {result.lower_bound:12.2f}")

    f = result.fusion
    print(
        f"\noptimal preemptive schedule: no fusion {f['none']:.2f} ms, "
        f"Horovod-style threshold fusion {f['threshold']:.2f} ms, fusion DP {f['dp']:.2f} ms"
    )

    pace = result.pace
    print(
        f"\nPACE sends {len(pace.jobs.groups)} fused all-reduces "
        f"({len(pace.segments) - len(pace.jobs.groups)} preemptions):"
    )
    for g, (a, b) in enumerate(pace.jobs.groups):
        print(
            f"  group {g}: {b - a:3d} tensors {dag.tensors[a]} .. {dag.tensors[b - 1]}, "
            f"{pace.jobs.nbytes[g] / 1e6:6.1f} MB, released {pace.jobs.release[g]:6.2f} ms, "
            f"done {pace.completion[g]:6.2f} ms"
        )

    exact = solve(instance)
    jobs = pace.jobs
    closed = max(dag.compute_ms, horn_value(jobs.release, jobs.work, jobs.tail))
    print(f"\nJackson's rule {exact.objective:.4f} ms = Horn's closed form {closed:.4f} ms")
    assert math.isclose(exact.objective, closed, rel_tol=1e-9)
    if "highs" in available_solvers(frontend="cvxpy"):
        proof = solve(instance, method="lp")
        print(f"transportation LP {proof.bound:.4f} ms ({proof.extra['lp_solves']} LP solves)")
    assert result.fastest == "pace"
    assert exact.solution is not None
    plot_iteration(exact.solution).savefig(out, dpi=120)
    print(f"\ntimeline of PACE's iteration: {out}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
