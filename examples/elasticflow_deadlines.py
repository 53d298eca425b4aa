"""Deadline satisfaction on an ElasticFlow trace: rigid and elastic policies side by side.

ElasticFlow's ``cluster10.csv`` (260 jobs with deadlines, 33 days of the Microsoft ITP cluster)
runs on 16 A100 GPUs (two servers of 8) with ElasticFlow-schema throughput profiles, under EDF
(rigid and elastic), Gandiva (rigid and grow-shrink), Tiresias (2D-LAS, rigid and elastic),
Themis, Chronus (its admission MILP every lease; rigid, and growing into idle GPUs) and
ElasticFlow (on rigid and on elastic gangs). Elastic gangs may take 1 up to 64 GPUs (the
largest profiled count), at the profile's concave rate. The table gives, per policy, the
deadline satisfaction ratio (jobs finished by their deadline over jobs with one), the mean JCT,
and for ElasticFlow the jobs it declined.
Every run is checked by the simulator's validator.

Data: the trace is read from ``../shared/data/elasticflow`` (beside the repository); without it,
from the 40-job slice shipped in ``tests/data/traces``. Profiles: ElasticFlow's own A100
profiles, shipped with optsched under their Apache-2.0 licence
(:func:`optsched.sim.world.sources.elasticflow_profiles`), or a directory of profile CSVs of
the type ``a100`` given as the first argument or in ``OPTSCHED_ELASTICFLOW_PROFILES``.

Run: ``python examples/elasticflow_deadlines.py [PROFILE_DIR]`` (a minute or two on the whole
trace).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pandas as pd

from optsched import sim
from optsched.sim.comparison import world_from_trace
from optsched.sim.policies import make_policy
from optsched.sim.policies.elasticflow import ElasticFlow
from optsched.sim.world.elasticflow_profiles import load_scaling_profiles
from optsched.sim.world.sources import elasticflow_profiles
from optsched.traces import read_trace

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p / "shared" / "data" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "data",
)
SLICE = ROOT / "tests" / "data" / "traces" / "elasticflow" / "cluster10_head40.csv"
CLUSTER = "a100=16:8"
#: Largest elastic gang: ElasticFlow profiles up to 64 GPUs.
MAX_GANG = 64
#: (label, registry name, elastic world)
RUNS = (
    ("edf", "edf", False),
    ("edf-elastic", "edf-elastic", True),
    ("gandiva", "gandiva", False),
    ("gandiva-elastic", "gandiva-elastic", True),
    ("tiresias-las", "tiresias-las", False),
    ("tiresias-las-elastic", "tiresias-las-elastic", True),
    ("themis", "themis", False),
    ("chronus", "chronus", False),
    ("chronus-elastic", "chronus-elastic", True),
    ("elasticflow (rigid)", "elasticflow", False),
    ("elasticflow", "elasticflow", True),
)


def _inputs() -> tuple[Path, Path | None, str]:
    trace = SHARED / "elasticflow" / "cluster10.csv"
    which = "cluster10.csv"
    if not trace.is_file():
        trace, which = SLICE, "cluster10.csv, first 40 jobs (shared/data not found)"
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OPTSCHED_ELASTICFLOW_PROFILES")
    profiles = Path(given) if given else None  # None: the shipped A100 profiles
    if profiles is not None and not profiles.is_dir():
        raise SystemExit(f"{profiles}: not a directory of ElasticFlow profile CSVs")
    return trace, profiles, which


def main() -> None:
    trace, profile_dir, which = _inputs()
    spec = sim.parse_cluster(CLUSTER)
    profiles = (
        elasticflow_profiles()
        if profile_dir is None
        else load_scaling_profiles(profile_dir, gpu_type="a100")
    )
    table = sim.Throughputs.from_scaling_profiles([profiles], reference="a100")
    rigid = world_from_trace(read_trace(trace), spec, table)
    elastic = rigid.elastic(max_gpus=MAX_GANG, max_factor=MAX_GANG)
    print(f"trace: {which}, {len(rigid.jobs)} jobs; cluster {CLUSTER}")
    name = "ElasticFlow's A100 (shipped)" if profile_dir is None else profile_dir.name
    print(f"profiles: {name} ({', '.join(profiles.models)})\n")
    rows = []
    for label, name, is_elastic in RUNS:
        world = elastic if is_elastic else rigid
        policy = make_policy(name)
        began = time.perf_counter()
        record = sim.simulate(world, policy)
        seconds = time.perf_counter() - began
        sim.validate(world, record).raise_if_invalid()
        d = sim.deadline_metrics(record)
        jcts = [c - j.arrival for c, j in zip(record.completion, world.jobs, strict=True) if c == c]
        rows.append(
            {
                "policy": label,
                "deadlines": d["deadlines"],
                "met": d["deadlines_met"],
                "satisfaction": round(d["deadline_satisfaction"], 3),
                "mean JCT (h)": round(sum(jcts) / max(1, len(jcts)) / 3600, 2),
                "declined": policy.run_facts()["declined"]
                if isinstance(policy, ElasticFlow)
                else "",
                "run (s)": round(seconds, 1),
            }
        )
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
