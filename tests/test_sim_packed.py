"""Packed allocation LPs in the simulator: pair rows carried out as shared gangs, every run
passing the simulator's independent validator (which re-checks pair rates and GPUs counted
once per pair), every round's LP proven optimal."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from optsched import sim
from optsched.allocation.gavel import PACKED_POLICIES
from optsched.errors import InvalidInstanceError
from optsched.sim.policies import POLICIES, PackedAllocationLP, make_policy
from optsched.sim.world.throughputs import Throughputs

pytestmark = pytest.mark.solver("highs")

_ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` from a clone's root; one level further up from a worktree nested beside clones.
SHARED = next(
    (p / "shared" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared").is_dir()),
    _ROOT.parent / "shared",
)
GAVEL_THROUGHPUTS = SHARED / "data" / "gavel" / "simulation_throughputs.json"


def _pair_table() -> Throughputs:
    """Three job types on two GPU types; A/B and A/A share well on v100, B/C only on k80."""
    alone = {
        ("v100", True): {("A", 1): 2.0, ("B", 1): 1.0, ("C", 1): 1.5, ("A", 2): 3.6},
        ("k80", True): {("A", 1): 0.8, ("B", 1): 0.5, ("C", 1): 0.6, ("A", 2): 1.5},
    }
    pairs = {
        ("v100", True): {
            (("A", 1), ("B", 1)): (1.6, 0.9),
            (("B", 1), ("A", 1)): (0.9, 1.6),
            (("A", 1), ("A", 1)): (1.3, 1.3),
            (("A", 2), ("A", 2)): (2.5, 2.5),
        },
        ("k80", True): {(("B", 1), ("C", 1)): (0.4, 0.5), (("C", 1), ("B", 1)): (0.5, 0.4)},
    }
    return Throughputs(
        alone=alone, pairs=pairs, generic_speed={"v100": 1.0, "k80": 0.4}, reference="v100"
    )


def _world(n: int = 10) -> sim.World:
    models = ["A", "B", "C", "A", "B", "", "A", "C", "B", "A"]
    frame = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "arrival": [60.0 * i for i in range(n)],
            "num_gpus": [2 if i == 6 or i == 9 else 1 for i in range(n)],
            "model": [models[i % len(models)] for i in range(n)],
            "total_steps": [float("nan")] * n,
            "duration": [1800.0 + 500.0 * (i % 4) for i in range(n)],
            "batch_size": [float("nan")] * n,
            "weight": [1.0] * n,
            "deadline": [float("nan")] * n,
            "user": [""] * n,
        }
    )
    return sim.World.from_frame(frame, sim.parse_cluster("v100=2,k80=2"), _pair_table())


def _shared_seconds(result: sim.SimResult) -> float:
    iv = pd.DataFrame(result.intervals)
    shared = iv[iv["shared_with"].astype(str) != ""]
    return float((shared["end"] - shared["start"]).sum())


@pytest.mark.parametrize("policy", sorted(PACKED_POLICIES))
def test_packed_rounds_share_gangs_and_the_run_validates(policy: str) -> None:
    world = _world()
    chosen = make_policy(policy)
    assert isinstance(chosen, PackedAllocationLP)
    result = sim.simulate(world, chosen)
    report = sim.validate(world, result)
    assert report.ok, report.violations
    assert chosen.solves and {s.status for s in chosen.solves} == {"optimal"}
    assert _shared_seconds(result) > 0, "no pair row was ever carried out"


def test_without_pairs_packed_runs_as_its_perf_form() -> None:
    """A uniform table has no measured pairs: every job is generic and never shares, and the
    round LPs are the unpacked ones (same objectives round by round)."""
    world = sim.generate_instance(8, "v100=2,k80=2", seed=3)
    packed, perf = make_policy("max-min-packed"), make_policy("max-min-perf")
    r1, r2 = sim.simulate(world, packed), sim.simulate(world, perf)
    assert sim.validate(world, r1).ok
    assert _shared_seconds(r1) == 0
    first = [s.objective for s in packed.solves][:3]
    assert first == pytest.approx([s.objective for s in perf.solves][:3], rel=1e-6)
    assert r2.completion  # the unpacked run completes too


@pytest.mark.skipif(not GAVEL_THROUGHPUTS.exists(), reason=f"{GAVEL_THROUGHPUTS} is absent")
def test_packed_on_gavel_throughputs_validates() -> None:
    table = sim.load_throughputs(GAVEL_THROUGHPUTS)
    models = ("ResNet-18 (batch size 64)", "LM (batch size 20)", "A3C", "CycleGAN")
    world = sim.generate_instance(
        12, "v100=2,p100=2,k80=2", table, seed=1, models=models, mean_interarrival=60.0
    )
    chosen = make_policy("max-min-packed")
    result = sim.simulate(world, chosen)
    report = sim.validate(world, result)
    assert report.ok, report.violations
    assert {s.status for s in chosen.solves} == {"optimal"}


def test_a_pair_row_gets_its_share_of_the_rounds() -> None:
    """Two jobs on one GPU sharing at 80 % / 90 % of their rates alone: max-min-packed's LP
    pairs them for 1/1.1 of the time and runs the slower-kept job alone for the rest (closed
    form in test_allocation_packed), so until the first job ends most rounds are shared."""
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "arrival": [0.0, 0.0],
            "num_gpus": [1, 1],
            "model": ["A", "B"],
            "total_steps": [float("nan")] * 2,
            "duration": [7200.0, 7200.0],
            "batch_size": [float("nan")] * 2,
            "weight": [1.0, 1.0],
            "deadline": [float("nan")] * 2,
            "user": ["", ""],
        }
    )
    table = Throughputs(
        alone={("v100", True): {("A", 1): 2.0, ("B", 1): 1.0}},
        pairs={
            ("v100", True): {(("A", 1), ("B", 1)): (1.6, 0.9), (("B", 1), ("A", 1)): (0.9, 1.6)}
        },
        generic_speed={"v100": 1.0},
        reference="v100",
    )
    world = sim.World.from_frame(frame, sim.parse_cluster("v100=1"), table)
    result = sim.simulate(world, make_policy("max-min-packed"))
    assert sim.validate(world, result).ok
    first = min(result.completion)
    assert _shared_seconds(result) / 2 >= 0.75 * first  # each shared second counted per job


def test_packed_names_are_registered() -> None:
    assert set(PACKED_POLICIES) <= set(POLICIES)
    with pytest.raises(InvalidInstanceError) as err:
        PackedAllocationLP("max-min-perf")
    assert err.value.field == "policy"
