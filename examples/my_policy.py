"""A plug-in scheduling policy in ten lines: fewest GPUs first, registered as ``fewest-gpus``.

Importing this module registers the policy, after which every entry point knows it by name:
``simulate(world, "fewest-gpus")``, ``compare(trace, "fifo,fewest-gpus", cluster=...)``,
``sweep(traces, cluster, ["fewest-gpus"])`` and, on the command line,
``optsched sim compare TRACE --cluster v100=4 --policies fifo,fewest-gpus --plugin my_policy``
(with this directory on ``PYTHONPATH``). A distribution registers it instead through the
entry-point group ``optsched.policies``.

Run: ``python examples/my_policy.py`` (a few seconds).
"""

from __future__ import annotations

from optsched.sim.policies import OrderPolicy, register_policy


class FewestGpusFirst(OrderPolicy):
    """Preemptive: the smallest gangs first (ties: arrival), greedily on the GPU types."""

    base_name = "fewest-gpus"

    def key(self, state, s):  # type: ignore[no-untyped-def]
        return (s.job.num_gpus,)


# replace=True: importing the module twice (a worker process, a reload) registers it once
register_policy("fewest-gpus", FewestGpusFirst, replace=True)


if __name__ == "__main__":
    from optsched.sim import compare, generate_job_table

    jobs = generate_job_table(12, seed=1)
    result = compare(jobs, "fifo,fewest-gpus", cluster="v100=8,k80=8")
    print(result.to_frame()[["policy", "jct_mean", "makespan", "valid"]].to_string(index=False))
