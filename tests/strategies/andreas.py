"""Hypothesis strategies for the ANDREAS family: tiny scheduling points, valid by construction."""

from __future__ import annotations

from hypothesis import strategies as st

from optsched.allocation.andreas import AndreasInstance, AndreasJob, Configuration, NodeType

__all__ = ["tiny_instances"]


@st.composite
def tiny_instances(draw: st.DrawFn, max_jobs: int = 3) -> AndreasInstance:
    """Up to ``max_jobs`` jobs on one or two node types of one or two small nodes, with busy GPUs,
    multi-node configurations, jobs without due dates and zero weights among the cases."""
    n_types = draw(st.integers(1, 2))
    types = []
    for t in range(n_types):
        size = draw(st.integers(1, 3))
        nodes = draw(st.integers(1, 2))
        busy = tuple(draw(st.integers(0, size)) for _ in range(nodes))
        types.append(
            NodeType(
                name=f"t{t}",
                gpu_type=("v100", "k80")[t],
                gpus_per_server=size,
                nodes=nodes,
                power_watts=draw(st.sampled_from([150.0, 300.0])),
                unavailable=busy if draw(st.booleans()) else (),
            )
        )
    jobs = []
    for j in range(draw(st.integers(0, max_jobs))):
        options = []
        for t in types:
            counts = sorted({1, t.gpus_per_server, 2 * t.gpus_per_server})
            for g in draw(st.lists(st.sampled_from(counts), min_size=0, max_size=2, unique=True)):
                options.append(
                    Configuration(
                        node_type=t.name, gpus=g, runtime_s=float(draw(st.integers(60, 20_000)))
                    )
                )
        if not options:
            options.append(Configuration(node_type=types[0].name, gpus=1, runtime_s=3600.0))
        due = draw(st.one_of(st.none(), st.integers(0, 20_000).map(float)))
        weight = draw(st.sampled_from([0.0, 1e-5, 1e-4, 1e-3]))
        jobs.append(
            AndreasJob(job_id=f"j{j}", due_s=due, weight=weight, configurations=tuple(options))
        )
    return AndreasInstance(
        now_s=float(draw(st.integers(0, 1000))),
        period_s=float(draw(st.integers(60, 3600))),
        energy_price_per_kwh=draw(st.sampled_from([0.0, 0.1, 0.3])),
        postponed_energy=draw(st.sampled_from(["min", "none"])),
        node_types=tuple(types),
        jobs=tuple(jobs),
    )
