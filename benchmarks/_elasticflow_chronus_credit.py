"""The one switch that closes Chronus's ``cluster10-16`` row: ElasticFlow's pending-term credit.

An experiment, not a mechanism option: its records fail the validator's work check by design.

ElasticFlow's ``chronus-scheduler`` (``time_aware_with_lease.py``) keeps a job's progress by
``update_job_time``: a running job is credited ``cur_time - last_check_time``. The pending flush
at every lease boundary sets a waiting job's ``last_check_time`` to that boundary, and when the
next boundary's lease MILP (``flush_lease_jobs``) places the job, nothing resets it: its first
check afterwards credits it the whole term it waited as run (240 s, less if it needs less).
Jobs resumed on GPUs left over (``opportunistic_run``, ``flush_pending_jobs``) have it reset
and get nothing; a job that held the previous lease too has it reset at the boundary. Its log
shows it: job ``4feb9f90`` (vgg16, 2 GPUs, 68,253 s) is resumed at 2,710,320 and never
stopped, and its run ends at 2,778,334, 68,014 s later.

This runs optsched's ``chronus`` under ``--mechanism elasticflow`` with that credit: at each
boundary, every lease holder that was in the system at the previous boundary (a boundary
exactly one term back), did not run in the previous term, and is charged a resume, gets
``min(credit, its remaining time)`` of progress, in Chronus's state and in the engine's work
left. ``credit=0`` is the mechanism as it is (the same met set). It prints the met count
(``extra["met_by_lease_end"]``), the accepted count and how many resumes were credited.

Usage: ``python benchmarks/_elasticflow_chronus_credit.py TRACE GPUS [CREDIT_SECONDS]``, e.g.
``/work/shared/data/elasticflow/cluster10.csv 16 240`` (ElasticFlow meets 111: with the
credit optsched meets the same 111 jobs, without it 104).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from optsched import sim
from optsched.sim.comparison import world_from_trace
from optsched.sim.engine import elasticflow_chronus as ec
from optsched.sim.engine import elasticflow_run as er
from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism
from optsched.sim.policies import make_policy
from optsched.traces import read_trace


def run(trace: str, gpus: int, credit: float) -> dict[str, Any]:
    """optsched's Chronus on ``trace`` with ``credit`` seconds of a resumed pending term."""
    counted = {"resumes": 0, "seconds": 0.0}
    engines: list[Any] = []
    init, decide = er.ElasticFlowSim.__init__, ec.ChronusLeases.decide

    def init_(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        engines.append(self)

    def decide_(self: ec.ChronusLeases, t: float, done: set[int], new: Any) -> dict[int, int]:
        before = set(self.running) - set(done)
        seen = set(self.jobs) - set(new)
        last = self.last
        out = decide(self, t, done, new)
        if not (last == last and abs(t - last - ec.LEASE_SECONDS) < 1e-6):
            return out  # not one term after the last boundary: no pending flush in between
        eng = engines[-1]
        for i in out:
            job = self.jobs.get(i)
            if job is None or i in before or i not in seen or job.state != "accepted":
                continue
            if self.overhead.get(i, 0.0) == 0.0:
                continue
            rate = eng._rate(i, eng.jobs[i].num_gpus)
            c = min(credit, max(eng.left[i] / rate - 1e-6, 0.0))
            job.progress += c
            eng.left[i] -= rate * c
            counted["resumes"] += 1
            counted["seconds"] += c
        return out

    er.ElasticFlowSim.__init__ = init_  # type: ignore[method-assign]
    ec.ChronusLeases.decide = decide_  # type: ignore[method-assign]
    try:
        table = read_trace(trace)
        world = world_from_trace(table, sim.parse_cluster(f"a100={gpus}:8"))
        mech = ElasticFlowMechanism(clock_origin=float(table.jobs["arrival"].min()))
        rec = sim.simulate(world, make_policy("chronus"), round_seconds=60, mechanism=mech)
    finally:
        er.ElasticFlowSim.__init__ = init  # type: ignore[method-assign]
        ec.ChronusLeases.decide = decide  # type: ignore[method-assign]
    extra = rec.extra
    return {
        "credit": credit,
        "met": len(extra["met_by_lease_end"]),
        "accepted": len(extra["chronus_accepted"]),
        "credited_resumes": counted["resumes"],
        "credited_seconds": round(counted["seconds"], 1),
        "met_jobs": sorted(extra["met_by_lease_end"]),
    }


if __name__ == "__main__":
    out = run(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 240.0)
    print(json.dumps(out))
