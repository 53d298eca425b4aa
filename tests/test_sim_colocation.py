"""The simulator's colocation mode: engine rates, validator, placement policies, sim compare."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.harmony.sim_policies import PLACEMENT_POLICIES, PlacementPolicy
from optsched.sim import SimState, simulate, validate
from optsched.sim.engine.core import simulate_steps
from optsched.sim.engine.policy import Grant, GrantPlacement, Policy, PolicyDecision
from optsched.sim.policies import PLACEMENT_POLICIES as SIM_PLACEMENT_NAMES
from optsched.sim.policies import PROVIDED, all_policy_names, make_policy, policy_names
from optsched.sim.world.colocation import (
    ColocationJob,
    colocation_world,
    colocation_world_from_trace,
)

TRACE = Path(__file__).parent / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
REL = 1e-9


class Planned(Policy):
    """Starts each job as soon as it arrives, on the servers of the plan."""

    name = "planned"

    def __init__(self, plan: dict[str, tuple[tuple[tuple[int, int], ...], tuple[int, ...]]]):
        self.plan = plan

    def allocate(self, state: SimState) -> PolicyDecision:
        grants = []
        for s in state.active:
            if s.placement is None:
                workers, ps = self.plan[s.job_id]
                grants.append(Grant(s.job_id, "gpu", GrantPlacement("gpu", workers), ps_servers=ps))
        return PolicyDecision(grants=tuple(grants), keep_running=True)


def _hand_world() -> tuple[object, dict[str, float], float]:
    """a (type 0) on server 0 with its PS; b (type 1): worker on 4, PS on 0; c (type 2) alone
    on servers 1, 2 with its PS on 3. b arrives at 2; a's work ends at 5 and b's at 9, c's at 10.
    """
    probe = colocation_world([ColocationJob("x", 0.0, 0, 1, 1, 1.0)])
    coloc = probe.colocation
    truth, lam = coloc.truth, coloc.spread_penalty
    t0 = truth.standalone_times
    s_ab = truth.slowdown(0, [1])  # a beside b
    s_ba = truth.slowdown(1, [0])  # b beside a
    ra0, ra1 = 1 / t0[0], 1 / (t0[0] * (1 + s_ab))
    rb1, rb2 = 1 / (t0[1] * (1 + s_ba + lam)), 1 / (t0[1] * (1 + lam))
    rc = 1 / (t0[2] * (1 + 2 * lam))
    jobs = [
        ColocationJob("a", 0.0, 0, 1, 1, 2 * ra0 + 3 * ra1),
        ColocationJob("c", 0.0, 2, 2, 1, 10 * rc),
        ColocationJob("b", 2.0, 1, 1, 1, 3 * rb1 + 4 * rb2),
    ]
    world = colocation_world(jobs)
    return world, {"a": 5.0, "b": 9.0, "c": 10.0}, lam


PLAN = {
    "a": (((0, 1),), (0,)),
    "b": (((4, 1),), (0,)),
    "c": (((1, 1), (2, 1)), (3,)),
}


def test_engine_rates_match_a_hand_computation() -> None:
    world, expected, _ = _hand_world()
    result = simulate(world, Planned(PLAN), round_seconds=None)
    for job, comp in zip(world.jobs, result.completion, strict=True):
        assert comp == pytest.approx(expected[job.job_id], rel=REL)
    frame = result.intervals_frame()
    # a's neighbour b arrives at 2: a's segment is cut there; its PS server is recorded
    a_rows = frame[frame.job_id == "a"]
    assert sorted(a_rows.start) == pytest.approx([0.0, 2.0])
    assert set(a_rows.ps_servers) == {"0"}
    # b's rate changes when a completes at 5 (b shares server 0 through its PS only)
    b_rows = frame[frame.job_id == "b"]
    assert sorted(b_rows.end) == pytest.approx([5.0, 9.0])
    assert validate(world, result).ok


def test_validator_catches_a_tampered_record() -> None:
    world, _, _ = _hand_world()
    good = simulate(world, Planned(PLAN), round_seconds=None)
    assert validate(world, good).ok
    # b's PS moved off a's server: b would have run faster, its completion is then wrong
    moved = simulate(world, Planned(PLAN), round_seconds=None)
    col = moved.intervals["ps_servers"]
    for k, job in enumerate(moved.intervals["job_id"]):
        if job == "b":
            col[k] = "5"
    report = validate(world, moved)
    assert not report.ok
    assert {v.constraint for v in report.violations} >= {"work_done"}
    # a completion shifted by a second
    late = simulate(world, Planned(PLAN), round_seconds=None)
    late.completion[0] += 1.0
    assert any(v.constraint == "work_done" for v in validate(world, late).violations)
    # a PS count that is not the job's
    wrong = simulate(world, Planned(PLAN), round_seconds=None)
    for k, job in enumerate(wrong.intervals["job_id"]):
        if job == "c":
            wrong.intervals["ps_servers"][k] = "3,3"
    assert any(v.constraint == "server_capacity" for v in validate(world, wrong).violations)


def test_cpu_capacity_enforced_by_engine_and_validator() -> None:
    # a: 3 workers and 2 PSs on server 0 (14 of 16 CPUs); b: 1 worker elsewhere
    jobs = [ColocationJob("a", 0.0, 0, 3, 2, 100.0), ColocationJob("b", 1.0, 1, 1, 1, 100.0)]
    world = colocation_world(jobs)
    over = {"a": (((0, 3),), (0, 0)), "b": (((1, 1),), (0,))}
    with pytest.raises(PolicyError, match=r"'b'.*server 0"):
        simulate(world, Planned(over), round_seconds=None)
    fine = {"a": (((0, 3),), (0, 0)), "b": (((1, 1),), (1,))}
    record = simulate(world, Planned(fine), round_seconds=None)
    assert validate(world, record).ok
    for k, job in enumerate(record.intervals["job_id"]):
        if job == "b":
            record.intervals["ps_servers"][k] = "0"  # 14 + 4 CPUs on server 0
    violations = validate(world, record).violations
    assert any(v.constraint == "server_capacity" and "CPUs" in v.message for v in violations), (
        violations
    )


def test_engine_places_ps_when_the_grant_does_not() -> None:
    world, _, _ = _hand_world()
    plan = {k: (w, ()) for k, (w, _) in PLAN.items()}
    record = simulate(world, Planned(plan), round_seconds=None)
    frame = record.intervals_frame()
    # least-loaded servers by CPU, lowest index first: every PS lands on a server
    assert all(frame.ps_servers != "")
    assert validate(world, record).ok


def test_steps_generator_reproduces_simulate() -> None:
    world = colocation_world_from_trace(TRACE)
    policy = make_policy("first-fit")
    steps = simulate_steps(world, policy)
    try:
        state = next(steps)
        while True:
            state = steps.send(policy.allocate(state))
    except StopIteration as done:
        driven = done.value
    direct = simulate(world, "first-fit", round_seconds=None)
    assert driven.completion == direct.completion
    assert driven.intervals == direct.intervals


def test_placement_policies_refuse_other_worlds_and_names_are_new() -> None:
    from optsched.sim import World, parse_cluster

    names = policy_names()
    for name in PLACEMENT_POLICIES:
        assert names.count(name) == 1
    plain = World.from_frame(_plain_frame(), parse_cluster("v100=4"))
    reason = make_policy("tetris").refuses(plain)
    assert reason is not None and "colocation" in reason
    with pytest.raises(InvalidInstanceError) as err:
        simulate(plain, "tetris")
    assert err.value.field == "world"


def test_the_simulator_names_harmonys_policies_harmony_makes_them() -> None:
    # the simulator's table of names is Harmony's, every name made by Harmony's class
    assert SIM_PLACEMENT_NAMES == tuple(PLACEMENT_POLICIES)
    assert set(PROVIDED) == set(PLACEMENT_POLICIES)
    for name in PLACEMENT_POLICIES:
        made = make_policy(name)
        assert isinstance(made, PlacementPolicy) and made.name == name
    assert not set(PLACEMENT_POLICIES) & set(all_policy_names())


def test_a_placement_name_resolves_without_importing_harmony_first() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from optsched.sim import simulate\n"
        "from optsched.sim.policies import make_policy, policy_names\n"
        "assert 'first-fit' in policy_names()\n"
        "assert not any(m.startswith('optsched.harmony') for m in sys.modules), 'eager'\n"
        "p = make_policy('first-fit')\n"
        "print(type(p).__module__, p.name)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.split() == ["optsched.harmony.sim_policies", "first-fit"]


def test_a_world_takes_a_colocation_mode_and_refuses_anything_else() -> None:
    import dataclasses

    from optsched.sim.world.jobs import ColocationMode

    world = colocation_world_from_trace(TRACE)
    assert isinstance(world.colocation, ColocationMode)
    # the same world rebuilt from its fields passes the mode's own check again
    assert dataclasses.replace(world).colocation is world.colocation
    with pytest.raises(InvalidInstanceError) as err:
        dataclasses.replace(world, colocation=world.colocation.truth)  # type: ignore[arg-type]
    assert err.value.field == "colocation"


def _plain_frame() -> object:
    import pandas as pd

    return pd.DataFrame(
        {
            "job_id": ["x"],
            "arrival": [0.0],
            "num_gpus": [1],
            "model": [""],
            "total_steps": [10.0],
            "duration": [float("nan")],
            "batch_size": [float("nan")],
            "weight": [1.0],
            "deadline": [float("nan")],
            "user": [""],
        }
    )


def test_colocation_world_has_no_world_document(tmp_path: Path) -> None:
    world = colocation_world_from_trace(TRACE)
    with pytest.raises(InvalidInstanceError) as err:
        world.save(tmp_path / "w.json")
    assert err.value.field == "colocation"


def test_sim_policies_agree_with_harmonys_run_policy() -> None:
    """A placement policy run by ``simulate`` and the same rule placed job by job by Harmony's
    driver (both on the engine) give the same JCTs."""
    from optsched.harmony import HarmonyWorld, run_policy
    from optsched.harmony.compare import arrivals_from_trace

    hw = HarmonyWorld()
    arrivals = arrivals_from_trace(hw, TRACE)
    world = colocation_world_from_trace(TRACE)
    for name, rule in (("first-fit", "first-fit"), ("tetris", "tetris")):
        ref = run_policy(hw, arrivals, rule)
        record = simulate(world, name, round_seconds=None)
        jct = [c - j.arrival for j, c in zip(world.jobs, record.completion, strict=True)]
        assert np.mean(jct) == pytest.approx(float(np.mean(ref.jct)), rel=1e-9)


@st.composite
def _jobs(draw: st.DrawFn) -> list[ColocationJob]:
    n = draw(st.integers(1, 6))
    t = 0.0
    out = []
    for k in range(n):
        t += draw(st.floats(0.0, 50.0))
        out.append(
            ColocationJob(
                f"j{k}",
                t,
                draw(st.integers(0, 5)),
                draw(st.integers(1, 3)),
                draw(st.integers(0, 2)),
                draw(st.floats(5.0, 500.0)),
            )
        )
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_jobs(), servers=st.integers(2, 4))
def test_every_placement_policy_validates(jobs: list[ColocationJob], servers: int) -> None:
    world = colocation_world(jobs, n_servers=servers)
    for name in PLACEMENT_POLICIES:
        record = simulate(world, name, round_seconds=None)
        report = validate(world, record)
        assert report.ok, (name, report.violations[:3])
        assert record.all_finished
        assert all(math.isfinite(c) for c in record.completion)


def test_sim_compare_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    from optsched.cli import main

    code = main(
        [
            "sim",
            "compare",
            str(TRACE),
            "--policies",
            "harmony,first-fit,load-balance,tetris",
            "--json",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    rows = {r["policy"]: r for r in data["policies"]}
    assert list(rows) == ["harmony", "first-fit", "load-balance", "tetris"]
    for r in rows.values():
        assert r["valid"] and r["status"] == "finished"
        assert r["jct_mean"] > 0 and r["makespan"] > 0
    assert data["colocation"]["servers"] == 6
    # the rows differ: the rules place differently
    assert len({round(r["jct_mean"], 6) for r in rows.values()}) > 1


def test_sim_compare_cli_refuses_what_colocation_cannot_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from optsched.cli import main

    code = main(["sim", "compare", str(TRACE), "--policies", "tetris", "--exact", "--json"])
    _, err = capsys.readouterr()
    assert code == 2 and "--exact" in err
    code = main(["sim", "compare", str(TRACE), "--policies", "fifo", "--json"])
    _, err = capsys.readouterr()
    assert code == 2 and "--cluster" in err


def test_env_episode_is_the_engines_run() -> None:
    """An episode placing every task on the first valid server is the engine's first-fit run
    on the same arrivals: the same JCTs, and a record the validator accepts."""
    pytest.importorskip("gymnasium", reason="the Harmony environment needs the rl extra")
    from gymnasium.utils.env_checker import check_env

    from optsched.harmony.env import PlacementEnv
    from optsched.harmony.world import HarmonyWorld

    world = HarmonyWorld(n_servers=3, n_types=4, seed=2)
    check_env(PlacementEnv(world, n_jobs=3), skip_render_check=True)
    env = PlacementEnv(world, n_jobs=8, mean_interarrival_s=20.0)
    _, info = env.reset(seed=11)
    while True:
        _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        if terminated:
            break
    driver = env._sim
    assert driver is not None and driver.result is not None
    assert validate(driver.sim_world, driver.result).ok
    record = simulate(driver.sim_world, "first-fit", round_seconds=None)
    jct = [c - j.arrival for j, c in zip(driver.sim_world.jobs, record.completion, strict=True)]
    assert info["avg_jct_s"] == pytest.approx(float(np.mean(jct)), rel=1e-12)


def test_models_without_neighbours_refuse_a_colocation_world() -> None:
    from optsched.sim.comparison import compare

    world = colocation_world_from_trace(TRACE)
    with pytest.raises(InvalidInstanceError) as err:
        simulate(world, "fifo", mechanism="gavel")
    assert err.value.field == "mechanism"
    with pytest.raises(InvalidInstanceError) as err:
        compare(world, ["first-fit"], exact=True, round_seconds=None)
    assert err.value.field == "exact"
