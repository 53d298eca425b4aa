"""The allocation LPs' fast round path gives the very run of the plain path.

The fast path (:data:`optsched.sim.policies.allocation.FAST_ROUNDS`: rates looked up once per
run, round jobs built without pydantic's pass; :data:`optsched.solvers.matrix.TRUSTED_BUILDS`:
the LPs built by the allocation family stored without conversion;
:data:`optsched.solvers.highs.REUSE_HIGHS`: one cleared HiGHS object for every LP) must change
nothing a run records: every
completion time, every interval and every round's LP objective are compared exactly, on seeded
traces with several GPU types, gang sizes and a backlog.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from optsched import sim
from optsched.sim.policies import AllocationLP
from optsched.sim.policies import allocation as round_module
from optsched.solvers import highs as highs_module
from optsched.solvers import matrix as matrix_module

pytestmark = pytest.mark.solver("highs")

POLICIES = ("ftf-perf", "max-min-perf", "max-sum-throughput-perf")


def _run(world: sim.World, policy: str) -> tuple[Any, list[Any]]:
    chosen = AllocationLP(policy)
    result = sim.simulate(world, chosen)
    assert sim.validate(world, result).ok
    return result, [(s.now, s.jobs, s.status, s.objective, s.lp_solves) for s in chosen.solves]


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", [0, 5])
def test_fast_rounds_record_the_same_run(
    policy: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = sim.generate_instance(30, "v100=4,p100=4,k80=4", seed=seed)
    fast, fast_solves = _run(world, policy)
    monkeypatch.setattr(round_module, "FAST_ROUNDS", False)
    monkeypatch.setattr(matrix_module, "TRUSTED_BUILDS", False)
    monkeypatch.setattr(highs_module, "REUSE_HIGHS", False)
    plain, plain_solves = _run(world, policy)
    assert len(fast_solves) > 3  # several rounds, so later rounds depend on earlier ones
    assert _same(fast.completion, plain.completion)
    assert _same(fast.first_start, plain.first_start)
    assert fast.intervals == plain.intervals
    assert fast_solves == plain_solves


def test_fast_round_jobs_equal_validated_ones_and_bad_fields_still_raise() -> None:
    from optsched.allocation.gavel import AllocationInstance, AllocationJob
    from optsched.errors import InvalidInstanceError

    fields: dict[str, Any] = {
        "job_id": "a",
        "throughput_steps_per_s": (2.0, 0.0),
        "scale_factor": 2,
        "weight": 1,
        "steps_remaining": 3.0,
        "time_since_start_s": 0.0,
        "isolated_time_s": 0.5,
        "job_type": None,
        "time_to_deadline_s": None,
    }
    fast = round_module._round_job(**fields)
    assert fast == AllocationJob(**fields)
    assert type(fast.weight) is float  # coerced as validation coerces it
    instance = round_module._round_instance(("v100", "k80"), (2, 2), (fast,), (), None)
    assert instance == AllocationInstance(
        gpu_types=("v100", "k80"), capacity=(2, 2), jobs=(fast,), pair_throughputs=(), prices=None
    )
    with pytest.raises(InvalidInstanceError, match="steps_remaining"):
        round_module._round_job(**{**fields, "steps_remaining": math.nan})
    with pytest.raises(InvalidInstanceError, match=r"throughput_steps_per_s\[1\]"):
        round_module._round_job(**{**fields, "throughput_steps_per_s": (2.0, math.inf)})
    with pytest.raises(InvalidInstanceError, match="capacity"):
        round_module._round_instance(("v100", "k80"), (2,), (fast,), (), None)
