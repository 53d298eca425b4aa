"""The makespan LP's secondary objective: among makespan-optimal allocations, short jobs first."""

from __future__ import annotations

import numpy as np
from strategies.sim import job_frame

from optsched.allocation.gavel import AllocationInstance, AllocationJob, solve
from optsched.sim import ClusterSpec, GpuType, World, simulate
from optsched.sim.policies import make_policy
from optsched.tolerances import MAKESPAN_SECONDARY_TOL, OPTIMALITY_GAP, within


def _job(name: str, steps: float, thr: tuple[float, ...]) -> AllocationJob:
    return AllocationJob(job_id=name, throughput_steps_per_s=thr, steps_remaining=steps)


def test_short_job_finishes_before_the_makespan_which_is_unchanged() -> None:
    """Two 1-GPU jobs (100 and 1000 steps at 1 step/s) on 2 GPUs: the makespan is 1000.

    The optimal makespan needs only theta_short >= 0.1; the secondary objective gives the short
    job the whole second GPU, so its estimate is 100 s, strictly below the makespan.
    """
    inst = AllocationInstance(
        gpu_types=("v100",),
        capacity=(2,),
        jobs=[_job("short", 100.0, (1.0,)), _job("long", 1000.0, (1.0,))],
    )
    res = solve(inst, "makespan-perf")
    assert res.optimal and res.solution is not None
    assert within(res.objective, 1000.0, OPTIMALITY_GAP)
    assert res.bound is not None and within(res.bound, 1000.0, OPTIMALITY_GAP)
    x = res.solution.fractions
    short_finish = 100.0 / x[0, 0]
    assert short_finish < 1000.0 * (1 - 0.5)  # strictly (by far) before the makespan
    assert within(short_finish, 100.0, OPTIMALITY_GAP)


def test_heterogeneous_short_job_gets_its_type_whole() -> None:
    """Fast and slow GPU (10 and 1 step/s); long 1000 steps, short 10 steps: makespan 100 s.

    The long job needs the fast GPU whole; the short one needs only 0.1 of the slow GPU for the
    makespan but gets it all: it finishes in 10 s.
    """
    inst = AllocationInstance(
        gpu_types=("fast", "slow"),
        capacity=(1, 1),
        jobs=[_job("long", 1000.0, (10.0, 1.0)), _job("short", 10.0, (10.0, 1.0))],
    )
    res = solve(inst, "makespan-perf")
    assert res.optimal and res.solution is not None
    assert within(res.objective, 100.0, 2 * MAKESPAN_SECONDARY_TOL)
    theta = (res.solution.fractions * np.array([[10.0, 1.0]])).sum(axis=1)
    assert within(10.0 / theta[1], 10.0, 1e-5)
    assert 1000.0 / theta[0] <= 100.0 * (1 + 2 * MAKESPAN_SECONDARY_TOL)


def test_simulated_short_jobs_no_longer_wait_for_the_longest() -> None:
    """On 2 GPUs: a 1000 s job and three short ones (50, 100, 150 s), rounds of 10 s.

    The long job bounds the makespan (1000 s); the short jobs share the other GPU. Each round
    the secondary objective gives the shortest the most, so the 50 s job is done within a round
    of running alone (with the vertex optimum alone it finished at 260 s).
    """
    cluster = ClusterSpec(gpu_types=(GpuType(name="gpu", count=2, gpus_per_server=2),))
    rows = [{"arrival": 0.0, "duration": d} for d in (1000.0, 50.0, 100.0, 150.0)]
    world = World.from_frame(job_frame(rows), cluster)
    record = simulate(world, make_policy("makespan"), round_seconds=10.0)
    done = record.completion
    makespan = max(done)
    assert done[1] <= 50.0 + 10.0
    assert all(c < makespan for c in done[1:])
    # the long job still runs (nearly) throughout: the makespan stays within rounds of 1000 s
    assert makespan <= 1000.0 + 3 * 10.0
