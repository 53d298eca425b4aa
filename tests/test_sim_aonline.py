"""Aonline in the simulator: registered, validated runs, its plan kept, its gap to the proven
optimum; and the family's exact model against the simulator's on worlds where the two coincide."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import sim
from optsched.cli import main
from optsched.online.aonline import AonlineInstance, AonlineJob, GpuPool
from optsched.online.aonline import solve as solve_aonline
from optsched.sim.policies import POLICIES, AonlinePolicy, make_policy
from optsched.sim.policies.aonline import interval_of
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, RATIO_TOL, TIME_TOL, leq, within

pytestmark = pytest.mark.solver("highs")


def _frame(
    arrivals: list[float], durations: list[float], gpus: list[int], weights: list[float]
) -> pd.DataFrame:
    n = len(arrivals)
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "arrival": arrivals,
            "num_gpus": gpus,
            "model": [""] * n,
            "total_steps": [math.nan] * n,
            "duration": durations,
            "batch_size": [math.nan] * n,
            "weight": weights,
            "deadline": [math.nan] * n,
            "user": [""] * n,
        }
    )


def test_registered() -> None:
    assert {"aonline", "aonline-strict"} <= set(POLICIES)
    assert make_policy("aonline").backfill and not make_policy("aonline-strict").backfill
    assert isinstance(make_policy("aonline"), AonlinePolicy)
    assert [interval_of(k) for k in (0, 1, 2, 3, 4, 7, 8)] == [
        (0, 1),
        (1, 2),
        (2, 4),
        (2, 4),
        (4, 8),
        (4, 8),
        (8, 16),
    ]


@pytest.mark.parametrize("name", ["aonline", "aonline-strict"])
def test_runs_validate_and_chosen_jobs_finish_in_their_interval(name: str) -> None:
    world = sim.generate_instance(8, "v100=4,k80=4", seed=5)
    policy = make_policy(name)
    assert isinstance(policy, AonlinePolicy)
    L = 600.0
    result = sim.simulate(world, policy, round_seconds=L)
    assert sim.validate(world, result).ok
    assert result.all_finished
    assert policy.packings and policy.packings[0].round == 0
    done = dict(zip(result.to_frame()["job_id"], result.to_frame()["completion"], strict=True))
    for step in policy.packings:
        assert set(step.chosen) <= set(step.pending)
        for jid in step.chosen:
            # rates rounded down and work up: the plan is conservative (no restore cost here)
            assert done[jid] <= step.end * L + TIME_TOL


def test_compare_shows_the_gap_to_the_proven_optimum() -> None:
    world = sim.generate_instance(6, "v100=4,k80=4", seed=4)
    from optsched.sim.comparison import auto_round_seconds

    # the policies run on the optimum's grid, so that a gap is a gap
    comp = sim.compare(
        world,
        ["aonline", "aonline-strict"],
        exact=True,
        objectives=("weighted-jct",),
        round_seconds=auto_round_seconds(world),
    )
    frame = comp.to_frame().set_index("policy")
    for name in ("aonline", "aonline-strict"):
        gap = frame.loc[name, "gap_weighted-jct"]
        assert math.isfinite(gap) and gap >= -RATIO_TOL
        assert frame.loc[name, "unfinished"] == 0


def _to_family(world: sim.World, L: float) -> AonlineInstance:
    """The mapping where the two worlds coincide: a slot is a round; every rate is one round of
    work per round on every type (uniform table, consolidated = spread); work = duration / L."""
    pools = tuple(
        GpuPool(name=t.name, count=t.count, gpus_per_server=t.gpus_per_server)
        for t in world.cluster.gpu_types
    )
    jobs = []
    for j in world.jobs:
        units = world.rate(j, world.cluster.names[0]) * L
        jobs.append(
            AonlineJob(
                arrival=round(j.arrival / L),
                weight=j.weight,
                work=round(j.work / units),
                gpus=j.num_gpus,
                rates=dict.fromkeys(world.cluster.names, 1),
                spread_rates=dict.fromkeys(world.cluster.names, 1),
            )
        )
    return AonlineInstance(pools=pools, jobs=tuple(jobs))


@settings(max_examples=6)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(1, 2), st.integers(1, 4)),
        min_size=1,
        max_size=4,
    )
)
def test_family_exact_equals_simulator_exact_where_worlds_coincide(
    rows: list[tuple[int, int, int, int]],
) -> None:
    """Arrivals and durations whole rounds, a uniform table: the simulator's optimal weighted JCT
    equals L * (the family's optimal sum w_j C_j) - sum w_j a_j."""
    L = 600.0
    rows = sorted(rows)
    rows[0] = (0, *rows[0][1:])  # the first round starts at the first arrival
    frame = _frame(
        [a * L for a, _, _, _ in rows],
        [d * L for _, d, _, _ in rows],
        [g for _, _, g, _ in rows],
        [float(w) for _, _, _, w in rows],
    )
    world = sim.World.from_frame(frame, sim.parse_cluster("v100=2:2,k80=2:1"))
    inst = _to_family(world, L)
    family = solve_aonline(inst).objective
    simulated = sim.solve(world, round_seconds=L).objective
    assert family is not None and simulated is not None
    offset = sum(j.weight * j.arrival for j in world.jobs)
    assert within(simulated, L * family - offset, OBJECTIVE_AGREEMENT_TOL)
    # and Aonline's own run in the simulator never beats that optimum
    run = sim.simulate(world, make_policy("aonline-strict"), round_seconds=L)
    value = sim.validate(world, run).objective
    assert value is not None and leq(simulated, value, RATIO_TOL)


def test_cli_compare_on_a_six_job_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (
        Path(__file__).parent / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
    )
    trace = tmp_path / "six.trace"
    trace.write_text("".join(source.read_text().splitlines(keepends=True)[:6]))
    from optsched.sim.comparison import auto_round_seconds, world_from_trace
    from optsched.traces import read_trace

    grid = auto_round_seconds(
        world_from_trace(
            read_trace(trace).jobs, sim.parse_cluster("v100=2,k80=2"), throughputs="uniform"
        )
    )
    code = main(
        [
            "sim",
            "compare",
            str(trace),
            "--cluster",
            "v100=2,k80=2",
            # AOnline's model has no per-job-type speeds: uniform, asked for by name
            "--throughputs",
            "uniform",
            "--policies",
            "aonline,aonline-strict",
            "--exact",
            "--objectives",
            "weighted-jct",
            # the policies on the optimum's grid (auto_round_seconds of these six jobs)
            "--round-seconds",
            str(grid),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = {r["policy"]: r for r in out["policies"]}
    for name in ("aonline", "aonline-strict"):
        assert rows[name]["valid"] is True and rows[name]["finished"] == 6
        assert rows[name]["gap_weighted-jct"] >= -RATIO_TOL


def test_event_driven_runs_are_refused() -> None:
    from optsched.errors import InvalidInstanceError

    world = sim.generate_instance(3, "v100=2", seed=1)
    with pytest.raises(InvalidInstanceError) as err:
        sim.simulate(world, make_policy("aonline"), round_seconds=None)
    assert err.value.field == "round_seconds"
