"""Allocation LPs as simulator policies: every round's LP proven optimal and recorded, every run
validated, and the round mechanism gives each job the share its LP fractions say."""

from __future__ import annotations

import pytest

from optsched import sim
from optsched.allocation.gavel import POLICIES as LP_POLICIES
from optsched.errors import InvalidInstanceError
from optsched.sim.policies import POLICIES, AllocationLP, make_policy

pytestmark = pytest.mark.solver("highs")


def test_every_allocation_lp_is_a_registered_policy() -> None:
    assert set(LP_POLICIES) <= set(POLICIES)
    assert isinstance(make_policy("ftf-perf"), AllocationLP)


@pytest.mark.parametrize("policy", sorted(LP_POLICIES))
def test_rounds_are_solved_exactly_and_the_run_validates(policy: str) -> None:
    world = sim.generate_instance(8, "v100=2,k80=2", seed=3)
    chosen = make_policy(policy)
    result = sim.simulate(world, chosen)
    assert sim.validate(world, result).ok
    assert chosen.solves, "no round was solved"
    assert {s.status for s in chosen.solves} == {"optimal"}
    # FTF may prove a round optimal with no LP at all: the isolated share can meet its lower
    # bound (every job alone on its fastest type).
    assert all(s.jobs >= 1 and s.lp_solves >= (0 if "ftf" in policy else 1) for s in chosen.solves)


def test_identical_jobs_on_one_type_share_it_in_turn() -> None:
    """Four identical single-GPU jobs, two GPUs: max-min gives each half of the rounds, so the
    four finish together (round-robin), not two and then two (as FIFO)."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(4)],
            "arrival": [0.0] * 4,
            "num_gpus": [1] * 4,
            "model": [""] * 4,
            "total_steps": [float("nan")] * 4,
            "duration": [3600.0] * 4,
            "batch_size": [float("nan")] * 4,
            "weight": [1.0] * 4,
            "deadline": [float("nan")] * 4,
            "user": [""] * 4,
        }
    )
    world = sim.World.from_frame(frame, sim.parse_cluster("v100=2"))
    fair = sim.simulate(world, AllocationLP("max-min", round_seconds=360.0))
    fifo = sim.simulate(world, make_policy("fifo"))
    done_fair = sorted(fair.to_frame()["completion"])
    done_fifo = sorted(fifo.to_frame()["completion"])
    assert done_fifo[0] == pytest.approx(3600.0)
    assert done_fair[0] == pytest.approx(done_fair[-1], rel=0.15)  # everyone ends near 7200 s
    assert done_fair[0] > done_fifo[0]


def test_bad_allocation_policy_names_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        AllocationLP("bogus")
    assert err.value.field == "policy"
    with pytest.raises(InvalidInstanceError) as err:
        AllocationLP("max-min", round_seconds=float("nan"))
    assert err.value.field == "round_seconds"


def test_slo_rounds_read_deadlines_and_infeasible_ones_are_never_used_silently() -> None:
    """Deadlines come from the trace; a round no allocation can serve raises when asked to,
    and by default is recorded as infeasible and re-solved without deadlines (the run then
    validates)."""
    from optsched.errors import NotOptimalError

    world = sim.generate_instance(10, "v100=4,k80=4", seed=0, deadline_fraction=0.5)
    strict = AllocationLP("min-cost-slo-perf", infeasible_deadlines="raise")
    with pytest.raises(NotOptimalError) as err:
        sim.simulate(world, strict)
    assert err.value.result.status.value == "infeasible"

    relaxed = make_policy("min-cost-slo-perf")
    assert isinstance(relaxed, AllocationLP)
    result = sim.simulate(world, relaxed)
    assert sim.validate(world, result).ok
    statuses = [(s.status, s.policy) for s in relaxed.solves]
    assert ("infeasible", "min-cost-slo-perf") in statuses
    assert ("optimal", "min-cost-slo-perf") in statuses  # rounds whose deadlines can be met
    infeasible = [i for i, s in enumerate(relaxed.solves) if s.status == "infeasible"]
    assert all(relaxed.solves[i + 1].policy == "min-cost-perf" for i in infeasible)
    with pytest.raises(InvalidInstanceError) as bad:
        AllocationLP("min-cost-slo-perf", infeasible_deadlines="ignore")
    assert bad.value.field == "infeasible_deadlines"


def test_cost_policies_price_unknown_gpu_types_uniformly_and_say_so() -> None:
    world = sim.generate_instance(6, "fast=2,slow=2", seed=1)
    policy = AllocationLP("min-cost-perf")
    assert sim.validate(world, sim.simulate(world, policy)).ok
    assert policy.uniform_prices
    priced = AllocationLP("min-cost-perf", prices={"fast": 3.0, "slow": 1.0})
    assert sim.validate(world, sim.simulate(world, priced)).ok
    assert not priced.uniform_prices
    known = AllocationLP("min-cost-perf")
    sim.simulate(sim.generate_instance(6, "v100=2,k80=2", seed=1), known)
    assert not known.uniform_prices
    with pytest.raises(InvalidInstanceError) as err:
        sim.simulate(world, AllocationLP("min-cost-perf", prices={"fast": 3.0}))
    assert err.value.field == "prices"
