"""Hypothesis strategies for the goodput world's cluster: small Pollux workloads.

The jobs are of the two job types the test slice ships (``tests/data/pollux/traces``: cifar10
and bert) at global batches the artifact's workloads use for them, so every configuration a
baseline runs is inside the measurements. Submissions are sorted, names unique; a job's GPU
count is at most ``max_gpus`` (a rigid gang larger than the cluster would never run).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from optsched.goodput.traces import ModelTraces, read_model_traces
from optsched.goodput.workload import PolluxJob, PolluxWorkload

SLICE = Path(__file__).resolve().parents[1] / "data" / "pollux" / "traces"
#: Job type -> global batches its jobs use in the artifact's workloads.
BATCHES = {"cifar10": (2048, 4096), "bert": (384,)}


@cache
def shipped_traces() -> dict[str, ModelTraces]:
    """The slice's job types, by name."""
    return {name: read_model_traces(SLICE / name) for name in BATCHES}


@st.composite
def pollux_workloads(
    draw: st.DrawFn, max_jobs: int = 4, max_gpus: int = 8, horizon: int = 1800
) -> PolluxWorkload:
    """A workload of 1..``max_jobs`` cifar10/bert jobs submitted within ``horizon`` seconds."""
    n = draw(st.integers(1, max_jobs))
    times = sorted(draw(st.lists(st.integers(0, horizon), min_size=n, max_size=n)))
    jobs = []
    for i, t in enumerate(times):
        app = draw(st.sampled_from(sorted(BATCHES)))
        jobs.append(
            PolluxJob(
                name=f"{app}-{i}",
                time=float(t),
                application=app,
                num_replicas=draw(st.integers(1, max_gpus)),
                batch_size=draw(st.sampled_from(BATCHES[app])),
            )
        )
    return PolluxWorkload(tuple(jobs))
