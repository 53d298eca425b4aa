"""Optimus as a simulator policy: registered, every run validated, models fitted from the
world's rates, and the marginal-gain growth equal to the exact MILP for the same models."""

from __future__ import annotations

import pytest

from optsched import sim
from optsched.errors import InvalidInstanceError
from optsched.sim.policies import POLICIES, Optimus, make_policy
from optsched.sim.policies.optimus import probe_counts


def test_optimus_is_a_registered_policy() -> None:
    assert "optimus" in POLICIES
    assert isinstance(make_policy("optimus"), Optimus)


def test_bad_round_length_names_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        Optimus(round_seconds=0.0)
    assert err.value.field == "round_seconds"


@pytest.mark.parametrize(
    ("low", "high"), [(1, 1), (1, 8), (2, 7), (3, 4), (1, 2), (5, 64), (5, 7), (9, 15)]
)
def test_probe_counts_hold_the_range_ends_and_powers_of_two_between(low: int, high: int) -> None:
    counts = probe_counts(low, high)
    assert counts[0] == low and counts[-1] == high
    inner = {2**i for i in range(8) if low < 2**i < high}
    assert {low, high} | inner <= set(counts)
    # Either every allowed count is measured, or there are enough points to fit the model.
    assert len(counts) == high - low + 1 or len(counts) >= 3


def test_every_count_in_range_has_a_finite_speed() -> None:
    """Ranges 5..8 and 5..12 are not covered by their probes: the model fills the gaps."""
    from strategies.sim import job_frame

    world = _planted_world(["A"], gpus=16)
    frame = job_frame([{"model": "B", "total_steps": 1e4, "num_gpus": n} for n in (8, 12)])
    world = sim.World.from_frame(frame, world.cluster, world.throughputs).elastic(min_gpus=5)
    policy = Optimus()
    ranges = set()
    for job in world.jobs:
        model = policy.model(world, job, "g")
        assert model is not None and model.fit is not None
        ranges.add((model.low, model.high))
        assert all(0 < model.speed(k) < float("inf") for k in range(model.low, model.high + 1))
    assert ranges == {(5, 8), (5, 12)}


@pytest.mark.parametrize("seed", [1, 3])
def test_runs_validate_on_a_heterogeneous_cluster(seed: int) -> None:
    world = sim.generate_instance(10, "v100=4,k80=4", seed=seed)
    policy = make_policy("optimus")
    result = sim.simulate(world, policy)
    report = sim.validate(world, result)
    assert report.ok, report.violations
    assert result.to_frame()["finished"].all()


# -- elastic gangs --------------------------------------------------------------------------

#: Planted colocated models (theta_0, theta_1, theta_2) of three job types: step time
#: theta_0 / k + theta_1 + theta_2 k on k GPUs, so speed-ups diminish (and C turns down).
PLANTED = {"A": (1.0, 0.05, 0.0), "B": (2.0, 0.1, 0.02), "C": (0.5, 0.2, 0.08)}


def _planted_world(models: list[str], gpus: int = 8, steps: float = 5_000.0) -> sim.World:
    """One GPU type whose measured rates (1, 2, 4, 8 GPUs) follow PLANTED exactly."""
    from strategies.sim import job_frame

    from optsched.sim.world.throughputs import throughputs_from_dict

    table = {
        f"('{jt}', {n})": {"null": 1.0 / (t0 / n + t1 + t2 * n)}
        for jt, (t0, t1, t2) in PLANTED.items()
        for n in (1, 2, 4, 8)
    }
    cluster = sim.ClusterSpec(gpu_types=(sim.GpuType(name="g", count=gpus, gpus_per_server=4),))
    frame = job_frame([{"model": m, "total_steps": steps * (1 + i)} for i, m in enumerate(models)])
    world = sim.World.from_frame(frame, cluster, throughputs_from_dict({"g": table}, reference="g"))
    return world.elastic(min_gpus=1, max_gpus=gpus, max_factor=float(gpus))


class _FirstRound(Optimus):
    """Optimus that keeps its first allocation."""

    first: sim.PolicyDecision | None = None

    def allocate(self, state: sim.SimState) -> sim.PolicyDecision:
        out = super().allocate(state)
        if self.first is None:
            self.first = out
        return out


def test_fits_recover_the_planted_speed_models() -> None:
    from optsched.tolerances import FIT_RECOVERY_TOL, within

    world = _planted_world(["A", "B", "C"])
    policy = Optimus()
    for job in world.jobs:
        model = policy.model(world, job, "g")
        assert model is not None and model.fit is not None
        planted = PLANTED[job.model]
        scale = max(planted)
        assert all(
            abs(a - b) <= FIT_RECOVERY_TOL * scale
            for a, b in zip(model.fit.theta, planted, strict=True)
        )
        for k in range(1, 9):  # the fitted speed at every count, measured or not
            assert within(
                model.speed(k),
                1.0 / (planted[0] / k + planted[1] + planted[2] * k),
                FIT_RECOVERY_TOL,
            )


@pytest.mark.solver("highs")
@pytest.mark.parametrize("models", [["A", "B", "C"], ["C", "C", "B", "A"], ["B", "A"]])
def test_growth_equals_the_exact_milp_for_the_fitted_models(models: list[str]) -> None:
    """One GPU type, every job admitted at one GPU: the marginal-gain growth is the separable
    convex case of the greedy theorem, so its total remaining time is the MILP's optimum."""
    from optsched.allocation.optimus import (
        OptimusAllocation,
        OptimusInstance,
        OptimusJob,
        solve,
        validate,
    )
    from optsched.tolerances import OPTIMALITY_GAP, within

    world = _planted_world(models)
    policy = _FirstRound()
    result = sim.simulate(world, policy)
    assert sim.validate(world, result).ok
    assert policy.first is not None
    grants = {g.job: g.num_gpus for g in policy.first.grants}
    assert set(grants) == {j.job_id for j in world.jobs}
    jobs = []
    for job in world.jobs:
        model = policy.models[(job.job_id, "g")]
        assert model is not None and model.fit is not None
        jobs.append(
            OptimusJob(
                job_id=job.job_id,
                remaining_steps=job.work,
                speed_kind="colocated",
                theta=model.fit.theta,
                worker_demand=(1.0,),
                ps_demand=(0.0,),
                max_workers=model.high,
                max_ps=1,
            )
        )
    inst = OptimusInstance(resources=("gpu",), capacity=(8.0,), jobs=tuple(jobs))
    ids = tuple(j.job_id for j in world.jobs)
    ours = OptimusAllocation(ids, (1,) * len(ids), tuple(int(grants[i] or 0) for i in ids))
    report = validate(inst, ours)
    assert report.ok, report.violations
    exact = solve(inst)
    assert within(report.objective, exact.objective, OPTIMALITY_GAP)


@pytest.mark.parametrize("seed", [2, 5])
def test_elastic_runs_validate_and_resize_jobs(seed: int) -> None:
    world = sim.generate_instance(10, "v100=8,k80=8", seed=seed).elastic(min_gpus=1, max_factor=4)
    policy = _FirstRound()
    result = sim.simulate(world, policy)
    report = sim.validate(world, result)
    assert report.ok, report.violations
    assert policy.first is not None
    sizes = {g.job: g.num_gpus for g in policy.first.grants}
    requested = {j.job_id: j.num_gpus for j in world.jobs}
    assert any(sizes[j] != requested[j] for j in sizes)  # it does resize
    for g in policy.first.grants:
        job = world.job(g.job)
        assert g.num_gpus is not None and job.min_gpus <= g.num_gpus <= job.max_gpus


def _two_type_world(models: list[str]) -> sim.World:
    """Types g (8 GPUs) and h (4 GPUs, 0.6 times as fast), rates following PLANTED."""
    from strategies.sim import job_frame

    from optsched.sim.world.throughputs import throughputs_from_dict

    def table(factor: float) -> dict[str, dict[str, float]]:
        return {
            f"('{jt}', {n})": {"null": factor / (t0 / n + t1 + t2 * n)}
            for jt, (t0, t1, t2) in PLANTED.items()
            for n in (1, 2, 4, 8)
        }

    cluster = sim.ClusterSpec(
        gpu_types=(
            sim.GpuType(name="g", count=8, gpus_per_server=4),
            sim.GpuType(name="h", count=4, gpus_per_server=4),
        )
    )
    frame = job_frame(
        [{"model": m, "total_steps": 4_000.0 * (1 + i)} for i, m in enumerate(models)]
    )
    rates = throughputs_from_dict({"g": table(1.0), "h": table(0.6)}, reference="g")
    return sim.World.from_frame(frame, cluster, rates).elastic(min_gpus=1, max_factor=8.0)


@pytest.mark.parametrize(
    "models",
    [["A", "B", "C"], ["C", "C", "B", "A"], ["B", "A"], ["A"] * 9, ["C", "B", "A"] * 3, ["A", "C"]],
)
def test_the_adapter_allocates_as_the_family_greedy(models: list[str]) -> None:
    """The policy's grants of a round equal :func:`optsched.allocation.optimus.marginal_gain`
    on the same state: the GPU types as resources, every admitted job one worker (GPU) of its
    type, its fitted model, its steps left."""
    from optsched.allocation.optimus import OptimusInstance, OptimusJob, marginal_gain

    world = _two_type_world(models)
    policy = _FirstRound()
    sim.simulate(world, policy)
    assert policy.first is not None
    grants = {g.job: g for g in policy.first.grants}
    types = world.cluster.names
    jobs = []
    for job in world.jobs:
        if job.job_id not in grants:
            continue  # not admitted (no room): it takes no part in growth
        gpu = grants[job.job_id].gpu_type
        model = policy.models[(job.job_id, gpu)]
        assert model is not None and model.fit is not None and model.low == 1
        jobs.append(
            OptimusJob(
                job_id=job.job_id,
                remaining_steps=job.work,
                speed_kind="colocated",
                theta=model.fit.theta,
                worker_demand=tuple(1.0 if t == gpu else 0.0 for t in types),
                ps_demand=(0.0,) * len(types),
                max_workers=model.high,
                max_ps=1,
            )
        )
    capacity = tuple(float(world.cluster.count(t)) for t in types)
    family = marginal_gain(OptimusInstance(resources=types, capacity=capacity, jobs=tuple(jobs)))
    assert family.ps == (1,) * len(jobs)
    ours = tuple(grants[j.job_id].num_gpus for j in jobs)
    assert ours == family.workers
    assert any(k > 1 for k in ours)  # the round did grow some job
