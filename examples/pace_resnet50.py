"""PACE on ResNet-50: the optimal preemptive all-reduce schedule against the baselines.

Eight workers on a 10 Gbit/s ring. Prints every policy's iteration time with the common lower
bound, the fusion comparison, PACE's fused groups, and checks the optimum three ways: Jackson's
rule, Horn's closed form and the transportation LP (when HiGHS is installed).
"""

from __future__ import annotations

import math

from optsched.comm import compare, solve_lp, validate_trace
from optsched.comm.exact import horn_value
from optsched.solvers import available_solvers


def main() -> None:
    result = compare("resnet50", workers=8, bandwidth_gbps=10, latency_us=5)
    dag = result.dag
    print(
        f"{result.display_name}: {dag.n_tensors} gradient tensors, "
        f"{dag.total_bytes / 2**20:.1f} MB, compute {dag.compute_ms:.1f} ms per iteration"
    )
    print(result.cost.description)
    print(f"\n{'policy':<14} {'iteration ms':>12} {'x PACE':>7} {'overlap':>8} {'calls':>6}")
    speed = result.speedup()
    for name, r in result.results.items():
        validate_trace(dag, result.cost, r.plan, r.trace)  # independent re-check
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
            f"{pace.jobs.nbytes[g] / 2**20:6.1f} MB, released {pace.jobs.release[g]:6.2f} ms, "
            f"done {pace.completion[g]:6.2f} ms"
        )

    jobs = pace.jobs
    closed = max(dag.compute_ms, horn_value(jobs.release, jobs.work, jobs.tail))
    print(f"\nJackson's rule {pace.iteration_time:.4f} ms = Horn's closed form {closed:.4f} ms")
    assert math.isclose(pace.iteration_time, closed, rel_tol=1e-9)
    if "highs" in available_solvers(frontend="cvxpy"):
        lp = solve_lp(jobs.release, jobs.work, jobs.tail)
        print(
            f"transportation LP {max(dag.compute_ms, lp.value):.4f} ms "
            f"({len(lp.solves)} LP solves, {lp.seconds:.2f} s)"
        )
    assert result.fastest == "pace"


if __name__ == "__main__":
    main()
