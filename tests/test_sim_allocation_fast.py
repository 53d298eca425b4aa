"""The allocation LPs' fast round path gives the very run of the plain path.

The fast path (:data:`optsched.sim.policies.allocation.FAST_ROUNDS`: rates looked up once per
run, round jobs built without pydantic's pass, rounds built from per-run arrays;
:data:`optsched.allocation.gavel.lp.REUSE_LEVEL_LPS`: the LPs of a finish-time-fairness round
changed in place; :data:`optsched.solvers.program.TRUSTED_BUILDS`:
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
from optsched.allocation.gavel import lp as lp_module
from optsched.sim.policies import AllocationLP
from optsched.sim.policies import allocation as round_module
from optsched.solvers import highs as highs_module
from optsched.solvers import program as program_module

pytestmark = pytest.mark.solver("highs")

POLICIES = ("ftf-perf", "max-min-perf", "max-sum-throughput-perf")


def _run(world: sim.World, policy: str) -> tuple[Any, list[Any]]:
    chosen = AllocationLP(policy)
    result = sim.simulate(world, chosen)
    assert sim.validate(world, result).ok
    return result, [(s.now, s.jobs, s.status, s.objective, s.lp_solves) for s in chosen.solves]


def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(round_module, "FAST_ROUNDS", False)
    monkeypatch.setattr(lp_module, "REUSE_LEVEL_LPS", False)
    monkeypatch.setattr(program_module, "TRUSTED_BUILDS", False)
    monkeypatch.setattr(highs_module, "REUSE_HIGHS", False)


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
    _plain(monkeypatch)
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


def test_round_tables_keep_the_plain_history_and_build_the_plain_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The array rounds' isolated-share history and instances are the plain path's, exactly."""
    import numpy as np

    world = sim.generate_instance(40, "v100=4,p100=4,k80=4", seed=3)
    instances: list[Any] = []

    class Kept(AllocationLP):
        def solve_round(self, state: sim.SimState) -> Any:
            out = super().solve_round(state)
            if out is not None:
                instances.append(out[0])
            return out

    fast = Kept("ftf-perf")
    sim.simulate(world, fast)
    assert fast._tables is not None  # the rounds took the array path
    fast_history = fast._tables.to_isolated()
    fast_instances = list(instances)
    instances.clear()
    _plain(monkeypatch)
    plain = Kept("ftf-perf")
    sim.simulate(world, plain)
    assert plain._tables is None
    assert fast_history._history == plain._isolated._history
    assert fast_history._history  # some job has a history: the comparison says something
    assert fast_history._previous == plain._isolated._previous
    plain_instances = list(instances)
    assert len(fast_instances) == len(plain_instances) > 3
    for a, b in zip(fast_instances, plain_instances, strict=True):
        assert a.jobs == b.jobs
        assert (a.gpu_types, a.capacity, a.prices) == (b.gpu_types, b.capacity, b.prices)
        for name in ("throughputs", "scale_factors", "weights", "steps", "since_start"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
        assert np.array_equal(a.isolated_times, b.isolated_times)
        assert np.array_equal(a.deadlines, b.deadlines)
        assert a.job_ids == b.job_ids


def test_a_run_switching_to_the_plain_history_goes_on_with_the_same_history() -> None:
    """The interior-point rounds take over the array rounds' history (job by job)."""
    world = sim.generate_instance(30, "v100=4,p100=4,k80=4", seed=1)
    policy = AllocationLP("ftf-perf")
    sim.simulate(world, policy)
    assert policy._tables is not None
    expected = policy._tables.to_isolated()
    assert expected._history and expected._previous
    policy._history_by_id()
    assert policy._tables is None and policy._plain_history
    assert policy._isolated._history == expected._history
    assert policy._isolated._previous == expected._previous


def test_round_tables_refuse_a_bad_field_naming_it() -> None:
    from optsched.errors import InvalidInstanceError

    world = sim.generate_instance(12, "v100=4,p100=4", seed=0)
    seen: list[Any] = []

    class Spoiled(AllocationLP):
        def solve_round(self, state: sim.SimState) -> Any:
            tables = self._round_tables(state)
            if tables is not None and len(seen) == 1:
                tables.history[:] = math.nan  # an impossible history
            seen.append(state)
            return super().solve_round(state)

    with pytest.raises(InvalidInstanceError, match="isolated_time_s"):
        sim.simulate(world, Spoiled("ftf-perf"))


def test_with_values_is_the_model_built_again_and_checks_the_values() -> None:
    import numpy as np
    import scipy.sparse as sp

    from optsched.errors import InvalidInstanceError
    from optsched.solvers.matrix import LinearProgram

    a = sp.csc_array(np.array([[1.0, 2.0], [0.0, 3.0]]))
    lp = LinearProgram([1.0, 1.0], a, [1.0, 1.0], [np.inf, np.inf], trusted=True)
    changed = lp.with_values([4.0, 5.0, 6.0])
    rebuilt = LinearProgram(
        [1.0, 1.0], np.array([[4.0, 5.0], [0.0, 6.0]]), [1.0, 1.0], [np.inf, np.inf]
    )
    assert np.array_equal(changed.a.toarray(), rebuilt.a.toarray())
    assert np.array_equal(lp.a.toarray(), [[1.0, 2.0], [0.0, 3.0]])  # the original is kept
    for name in ("c", "row_lower", "row_upper", "col_lower", "col_upper"):
        assert np.array_equal(getattr(changed, name), getattr(rebuilt, name))
    with pytest.raises(InvalidInstanceError, match="data"):
        lp.with_values([1.0, 2.0])
    with pytest.raises(InvalidInstanceError, match="NaN or infinite"):
        lp.with_values([1.0, math.nan, 2.0])


def test_model_copy_forgets_the_kept_fairness_terms() -> None:
    from optsched.allocation.gavel import AllocationInstance, AllocationJob, solve

    jobs = [
        AllocationJob(
            job_id=f"j{i}",
            throughput_steps_per_s=(2.0 + i, 1.0),
            steps_remaining=100.0 * (i + 1),
            time_since_start_s=10.0 * i,
        )
        for i in range(3)
    ]
    instance = AllocationInstance(gpu_types=("v100", "k80"), capacity=(1, 1), jobs=jobs)
    solve(instance, "ftf-perf")
    assert lp_module._FTF_TERMS in instance.__dict__
    fewer = instance.model_copy(update={"jobs": tuple(jobs[:2])})
    assert lp_module._FTF_TERMS not in fewer.__dict__
    assert fewer.throughputs.shape == (2, 2)
    fresh = AllocationInstance(gpu_types=("v100", "k80"), capacity=(1, 1), jobs=jobs[:2])
    assert solve(fewer, "ftf-perf").objective == solve(fresh, "ftf-perf").objective
