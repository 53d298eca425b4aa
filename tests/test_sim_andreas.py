"""ANDREAS as a simulator policy, and the energy metric every policy is measured by."""

from __future__ import annotations

import math

import pytest

from optsched import sim
from optsched.allocation.andreas import AndreasInstance, solve, validate
from optsched.errors import InvalidInstanceError
from optsched.power import JOULES_PER_KWH, gpu_power
from optsched.sim.engine.policy import PolicyDecision, SimState
from optsched.sim.measure.metrics import energy_kwh, run_metrics
from optsched.sim.policies import POLICIES, Andreas, make_policy
from optsched.tolerances import OBJECTIVE_AGREEMENT_TOL, TIME_TOL, leq, within

pytestmark = pytest.mark.solver("highs")


def test_registered() -> None:
    assert "andreas" in POLICIES
    assert isinstance(make_policy("andreas"), Andreas)


@pytest.mark.parametrize("seed", [1, 2])
def test_runs_pass_the_validator_and_finish(seed: int) -> None:
    world = sim.generate_instance(14, "v100=4,p100=4,k80=8", seed=seed)
    policy = Andreas(restarts=16)
    record = sim.simulate(world, policy)
    report = sim.validate(world, record)
    assert report.ok, report.violations
    assert record.all_finished
    assert policy.decisions and all(d.started <= d.queued for d in policy.decisions)
    again = sim.simulate(world, Andreas(restarts=16))
    assert again.intervals == record.intervals  # seeded: the same run again


class _Checked(Andreas):
    """Records each decision point's instance and the greedy's cost there."""

    def __init__(self) -> None:
        super().__init__(restarts=8)
        self.seen: list[tuple[AndreasInstance, float]] = []

    def allocate(self, state: SimState) -> PolicyDecision:
        out = super().allocate(state)
        inst, _ = self.instance(state)
        if inst.jobs:
            self.seen.append((inst, self.decisions[-1].cost))
        return out


def test_each_decision_is_no_better_than_the_milp_on_its_instance() -> None:
    world = sim.generate_instance(10, "v100=2,k80=4", seed=3)
    policy = _Checked()
    assert sim.validate(world, sim.simulate(world, policy)).ok
    assert policy.seen
    for inst, cost in policy.seen[:6]:
        optimum = solve(inst)
        assert optimum.objective is not None
        assert leq(optimum.objective, cost, OBJECTIVE_AGREEMENT_TOL)
        assert validate(inst, optimum.solution).ok  # type: ignore[arg-type]


def test_energy_metric_equals_work_over_rate_on_one_type() -> None:
    # One GPU type, FIFO without preemption: each job holds num_gpus GPUs for work / rate.
    world = sim.generate_instance(6, "v100=4", seed=5)
    record = sim.simulate(world, make_policy("fifo"))
    expected = sum(
        j.num_gpus * j.work / world.rate(j, "v100") * gpu_power("v100") for j in world.jobs
    )
    assert within(energy_kwh(record), expected / JOULES_PER_KWH, TIME_TOL)
    metrics = run_metrics(record)
    assert metrics["energy_kwh"] == energy_kwh(record)
    assert within(
        metrics["energy_kwh"], metrics["gpu_hours"] * 3600 * 300 / JOULES_PER_KWH, TIME_TOL
    )


def test_energy_metric_in_compare_rows() -> None:
    world = sim.generate_instance(6, "v100=2,k80=2", seed=2)
    frame = sim.compare(world, ["fifo", "andreas"]).to_frame()
    assert "energy_kwh" in frame.columns
    assert (frame["energy_kwh"] > 0).all() and frame["valid"].all()


def test_a_gpu_type_without_power_is_assumed_or_named() -> None:
    world = sim.generate_instance(3, "h200=2", seed=1)
    with pytest.raises(InvalidInstanceError, match="power"):
        sim.simulate(world, Andreas(unknown_watts=None))
    assert sim.validate(world, sim.simulate(world, Andreas())).ok  # assumes 250 W
    assert Andreas().watts("h200") == 250.0 and Andreas(power={"h200": 700.0}).watts("h200") == 700
    record = sim.simulate(world, make_policy("fifo"))
    assert math.isnan(run_metrics(record)["energy_kwh"])
    assert within(energy_kwh(record, {"h200": 700.0}), run_metrics(record)["gpu_hours"] * 0.7, 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"energy_price": -1.0}, "energy_price"),
        ({"tardiness_cost": math.nan}, "tardiness_cost"),
        ({"period": 0.0}, "period"),
        ({"due_factor": -2.0}, "due_factor"),
        ({"restarts": 0}, "restarts"),
        ({"unknown_watts": 0.0}, "unknown_watts"),
    ],
)
def test_bad_options_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(InvalidInstanceError, match=field):
        Andreas(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("cluster", ["v100=6:4,k80=8:4", "v100=8:4", "v100=6:3,p100=3:3"])
def test_partial_servers_multi_server_gangs_and_gangs_outside_the_model(cluster: str) -> None:
    # 6:4 has a 2-GPU last server; 8:4 takes 8-GPU gangs on two whole servers; on 3-GPU
    # servers a 4-GPU gang fits no layout of the model and is granted after the plan.
    world = sim.generate_instance(12, cluster, seed=6)
    record = sim.simulate(world, Andreas(restarts=8))
    assert sim.validate(world, record).ok
    assert record.all_finished


def test_elastic_worlds_get_other_gang_sizes_and_pass_the_validator() -> None:
    speeds = sim.Throughputs.uniform({"v100": 1.0, "p100": 0.6, "k80": 0.3})
    world = sim.generate_instance(12, "v100=4,p100=4,k80=8", speeds, seed=2).elastic(
        min_gpus=1, max_factor=2.0
    )
    policy = _Checked()
    record = sim.simulate(world, policy)
    report = sim.validate(world, record)
    assert report.ok, report.violations
    assert record.all_finished
    sizes = record.intervals_frame().groupby(["job_id", "start"])["gpus"].sum()
    own = {j.job_id: j.num_gpus for j in world.jobs}
    assert any(n != own[job] for (job, _), n in sizes.items())  # some gang was resized
    for inst, cost in policy.seen[:4]:
        assert any(len({c.gpus for c in j.configurations}) > 1 for j in inst.jobs)
        optimum = solve(inst).objective
        assert optimum is not None and leq(optimum, cost, OBJECTIVE_AGREEMENT_TOL)
