"""Optimus family: fits against planted parameters, the MILP against brute force, the greedy
against the MILP (never better; equal where the greedy is proven optimal), the validator against
hand-broken allocations."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies.optimus import KINDS, betas, thetas, tiny_instances

from optsched.allocation.optimus import (
    ConvergenceSpec,
    MarginalGain,
    OptimusAllocation,
    OptimusInstance,
    OptimusJob,
    convergence_step,
    fit_convergence,
    fit_speed,
    generate_instance,
    loss_curve,
    marginal_gain,
    solve,
    speed,
    validate,
)
from optsched.allocation.optimus.models import step_design
from optsched.errors import InvalidInstanceError
from optsched.tolerances import FIT_RECOVERY_TOL, OPTIMALITY_GAP, RATIO_TOL, leq, within

#: (ps, workers) measured for the speed fits: Optimus probes a handful of small combinations.
GRID = [(1, 1), (1, 2), (2, 2), (1, 4), (2, 4), (4, 4), (2, 1), (3, 6), (4, 8)]


def _close(got: tuple[float, ...], want: tuple[float, ...], tol: float) -> bool:
    scale = max(abs(v) for v in want)
    return all(abs(g - w) <= tol * max(abs(w), scale) for g, w in zip(got, want, strict=True))


# -- speed fit ------------------------------------------------------------------------------


def _step_times(kind: str, theta: tuple[float, ...], batch: float) -> list[tuple[int, int, float]]:
    p = np.array([g[0] for g in GRID])
    w = np.array([g[1] for g in GRID])
    t = step_design(kind, p, w, batch) @ np.asarray(theta)  # type: ignore[arg-type]
    return [(int(a), int(b), float(c)) for a, b, c in zip(p, w, t, strict=True)]


@settings(max_examples=25)
@given(data=st.data(), kind=st.sampled_from(KINDS), batch=st.sampled_from([1.0, 32.0]))
def test_speed_fit_recovers_planted_coefficients(
    data: st.DataObject, kind: str, batch: float
) -> None:
    theta = data.draw(thetas(kind))
    fit = fit_speed(_step_times(kind, theta, batch), kind, batch=batch)  # type: ignore[arg-type]
    assert _close(fit.theta, theta, FIT_RECOVERY_TOL), (fit.theta, theta)
    assert fit.rmse <= FIT_RECOVERY_TOL


@settings(max_examples=25)
@given(
    data=st.data(),
    kind=st.sampled_from(KINDS),
    noise=st.floats(0.001, 0.05),
    seed=st.integers(0, 2**16),
)
def test_speed_fit_with_noise_is_within_twice_the_noise(
    data: st.DataObject, kind: str, noise: float, seed: int
) -> None:
    """The planted theta is feasible, so the fit's relative residual norm is at most the noise's;
    by the triangle inequality the fitted step times are within twice the noise of the true."""
    theta = data.draw(thetas(kind))
    clean = _step_times(kind, theta, 1.0)
    eps = np.random.default_rng(seed).normal(0.0, noise, size=len(clean))
    noisy = [(p, w, t * (1 + e)) for (p, w, t), e in zip(clean, eps, strict=True)]
    fit = fit_speed(noisy, kind)  # type: ignore[arg-type]
    observed = np.array([t for *_, t in noisy])
    true = np.array([t for *_, t in clean])
    design = step_design(kind, [p for p, *_ in clean], [w for _, w, _ in clean])  # type: ignore[arg-type]
    fitted = design @ np.asarray(fit.theta)
    assert leq(
        float(np.linalg.norm(fit.residuals)), float(np.linalg.norm(true / observed - 1)), RATIO_TOL
    )
    gap = float(np.linalg.norm((fitted - true) / observed))
    assert leq(gap, 2 * float(np.linalg.norm(true / observed - 1)), RATIO_TOL)


def test_speed_is_the_inverse_step_time() -> None:
    theta = (0.2, 0.1, 0.01, 0.005)
    f = speed("async", theta, [2], [4])[0]
    assert within(float(f), 4 / (0.2 + 0.1 * 2 + 0.04 + 0.01), FIT_RECOVERY_TOL)
    f = speed("sync", (0.01, 0.1, 0.2, 0.0, 0.0), [2], [4], batch=32)[0]
    assert within(float(f), 1 / (0.01 * 8 + 0.1 + 0.4), FIT_RECOVERY_TOL)


@pytest.mark.parametrize(
    ("points", "field"),
    [
        ([(1, 1, 0.1), (1, 2, 0.2), (2, 2, 0.3)], "points"),  # 3 < 4 coefficients
        ([(1, 1, 0.1), (1, 2, math.nan), (2, 2, 0.3), (2, 4, 0.4)], "points[1].step_seconds"),
        ([(1, 1, 0.1), (1, 2, 0.0), (2, 2, 0.3), (2, 4, 0.4)], "points[1].step_seconds"),
        ([(1, 1, 0.1), (1, 2, -1.0), (2, 2, 0.3), (2, 4, 0.4)], "points[1].step_seconds"),
        ([(0, 1, 0.1), (1, 2, 0.2), (2, 2, 0.3), (2, 4, 0.4)], "points[0].ps"),
        ([(1, 1.5, 0.1), (1, 2, 0.2), (2, 2, 0.3), (2, 4, 0.4)], "points[0].workers"),
        ([(1, 1, 0.1), (2, 2, 0.2), (3, 3, 0.3), (4, 4, 0.4)], "points"),  # w/p always 1
        ([(1, 1), (1, 2, 0.2), (2, 2, 0.3), (2, 4, 0.4)], "points[0]"),
        ([(1, 1, "x"), (1, 2, 0.2), (2, 2, 0.3), (2, 4, 0.4)], "points[0].step_seconds"),
    ],
)
def test_speed_fit_refuses_bad_points(points: list, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        fit_speed(points, "async")
    assert err.value.field == field


def test_speed_fit_refuses_unknown_kind_and_batch() -> None:
    pts = _step_times("async", (0.1, 0.1, 0.0, 0.0), 1.0)
    with pytest.raises(InvalidInstanceError, match="kind"):
        fit_speed(pts, "ring")  # type: ignore[arg-type]
    with pytest.raises(InvalidInstanceError, match="batch"):
        fit_speed(pts, "sync", batch=0.0)


# -- convergence fit -----------------------------------------------------------------------


@settings(max_examples=30)
@given(planted=betas(), n=st.integers(6, 30), weighted=st.booleans())
def test_convergence_fit_recovers_planted_coefficients(
    planted: tuple[tuple[float, float, float], float], n: int, weighted: bool
) -> None:
    beta, horizon = planted
    steps = np.linspace(0.0, horizon, n)
    points = list(zip(steps, loss_curve(beta, steps), strict=True))
    fit = fit_convergence(points, weighted=weighted)
    assert _close(fit.beta, beta, FIT_RECOVERY_TOL), (fit.beta, beta)


@settings(max_examples=20)
@given(planted=betas(), noise=st.floats(0.0005, 0.02), seed=st.integers(0, 2**16))
def test_convergence_fit_with_noise_is_no_worse_than_the_truth(
    planted: tuple[tuple[float, float, float], float], noise: float, seed: int
) -> None:
    """The fit's weighted cost is at most the planted curve's (it is a minimiser), so its curve
    is within twice the noise of the true one at the points (weighted norm)."""
    beta, horizon = planted
    steps = np.linspace(0.0, horizon, 24)
    true = loss_curve(beta, steps)
    observed = true * (1 + np.random.default_rng(seed).normal(0.0, noise, steps.size))
    fit = fit_convergence(list(zip(steps, observed, strict=True)))
    from optsched.allocation.optimus.fit import optimus_weights

    omega = optimus_weights(steps.size)
    truth_cost = 0.5 * float(np.sum((omega * (true - observed)) ** 2))
    assert leq(fit.cost, truth_cost, RATIO_TOL)
    gap = float(np.linalg.norm(omega * (loss_curve(fit.beta, steps) - true)))
    assert leq(gap, 2 * float(np.linalg.norm(omega * (true - observed))), RATIO_TOL)


@pytest.mark.parametrize(
    ("points", "field"),
    [
        ([(0, 1.0), (1, 0.9)], "points"),
        ([(0, 1.0), (1, 0.9), (1, 0.8)], "points"),  # two distinct steps
        ([(0, 1.0), (1, math.nan), (2, 0.8)], "points[1].loss"),
        ([(0, 1.0), (1, 0.0), (2, 0.8)], "points[1].loss"),
        ([(-1, 1.0), (1, 0.9), (2, 0.8)], "points[0].step"),
        ([(0, 1.0), (math.inf, 0.9), (2, 0.8)], "points[1].step"),
    ],
)
def test_convergence_fit_refuses_bad_points(points: list, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        fit_convergence(points)
    assert err.value.field == field


@settings(max_examples=30)
@given(
    b0=st.floats(1e-4, 1.0),
    b1=st.floats(0.1, 10.0),
    threshold=st.floats(1e-5, 0.1),
    window=st.sampled_from([1.0, 10.0, 100.0]),
)
def test_convergence_step_is_the_first_small_drop(
    b0: float, b1: float, threshold: float, window: float
) -> None:
    """The closed form against the definition: the drop is >= threshold just before, < at."""
    beta = (b0, b1, 0.3)
    k = convergence_step(beta, threshold, window)
    assert k == int(k) and k >= 0

    def drop(x: float) -> float:
        return float(loss_curve(beta, [x])[0] - loss_curve(beta, [x + window])[0])

    assert drop(k) < threshold * (1 + FIT_RECOVERY_TOL)
    if k > 0:
        assert drop(k - 1) >= threshold * (1 - FIT_RECOVERY_TOL)


# -- instance -------------------------------------------------------------------------------


def _job(**kw: object) -> OptimusJob:
    base: dict[str, object] = {
        "job_id": "a",
        "remaining_steps": 1000.0,
        "theta": (0.1, 0.05, 0.0, 0.0),
        "worker_demand": (1.0, 2.0),
        "ps_demand": (0.0, 1.0),
        "max_workers": 3,
        "max_ps": 2,
    }
    base.update(kw)
    return OptimusJob(**base)


def test_instance_round_trips_and_has_a_schema(tmp_path: Path) -> None:
    inst = generate_instance(5, kind="sync", seed=3)
    for name in ("i.json", "i.toml"):
        inst.save(tmp_path / name)
        assert OptimusInstance.load(tmp_path / name) == inst
    assert OptimusInstance.schema()["properties"]["kind"]["default"] == "optimus-instance"
    assert len(repr(inst)) < 200


def test_remaining_steps_from_the_convergence_curve() -> None:
    conv = ConvergenceSpec(beta=(0.01, 0.5, 0.2), progress=100.0, threshold=1e-3, window=10.0)
    job = _job(remaining_steps=None, convergence=conv)
    assert job.remaining == convergence_step((0.01, 0.5, 0.2), 1e-3, 10.0) - 100.0
    capped = ConvergenceSpec(
        beta=(0.01, 0.5, 0.2), progress=100.0, threshold=1e-3, window=10.0, max_steps=150.0
    )
    assert _job(remaining_steps=None, convergence=capped).remaining == 50.0


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"remaining_steps": None}, "remaining_steps"),
        ({"theta": (0.1, 0.0, 0.0)}, "theta"),
        ({"theta": (0.0, 0.0, 0.0, 0.0)}, "theta"),
        ({"theta": (0.1, -1.0, 0.0, 0.0)}, "theta[1]"),
        ({"worker_demand": (1.0, -2.0)}, "worker_demand[1]"),
        ({"remaining_steps": 0.0}, "remaining_steps"),
        ({"speed_kind": "colocated", "theta": (0.1, 0.0, 0.0)}, "max_ps"),
        ({"max_workers": 0}, "max_workers"),
        (
            {
                "remaining_steps": None,
                "convergence": {
                    "beta": (0.01, 0.5, 0.2),
                    "threshold": 1e-3,
                    "window": 10.0,
                    "progress": 1e9,
                },
            },
            "convergence",
        ),
    ],
)
def test_bad_jobs_name_the_field(kw: dict, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        _job(**kw)
    assert err.value.field == field


def test_bad_instances_name_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        OptimusInstance(
            resources=("gpu", "cpu"), capacity=(1.0, 16.0), jobs=[_job(), _job(job_id="b")]
        )
    assert err.value.field == "capacity[0]"
    with pytest.raises(InvalidInstanceError) as err:
        OptimusInstance(resources=("gpu", "cpu"), capacity=(4.0, 16.0), jobs=[_job(), _job()])
    assert err.value.field == "jobs[1].job_id"
    with pytest.raises(InvalidInstanceError) as err:
        OptimusInstance(resources=("gpu",), capacity=(4.0,), jobs=[_job()])
    assert err.value.field == "jobs[0].worker_demand"


# -- exact, greedy, validator ---------------------------------------------------------------


def _brute_force(inst: OptimusInstance) -> float:
    """The least total remaining time over every integral allocation, from the validator."""
    ranges = [
        list(itertools.product(range(1, j.max_ps + 1), range(1, j.max_workers + 1)))
        for j in inst.jobs
    ]
    best = math.inf
    ids = tuple(j.job_id for j in inst.jobs)
    for combo in itertools.product(*ranges):
        alloc = OptimusAllocation(ids, tuple(c[0] for c in combo), tuple(c[1] for c in combo))
        report = validate(inst, alloc)
        if report.ok and report.objective is not None:
            best = min(best, report.objective)
    return best


pytestmark = pytest.mark.solver("highs")


@settings(max_examples=30)
@given(inst=tiny_instances())
def test_milp_equals_brute_force_and_greedy_never_beats_it(inst: OptimusInstance) -> None:
    res = solve(inst)
    assert res.optimal and res.solution is not None
    assert validate(inst, res.solution).ok
    assert within(res.objective, _brute_force(inst), OPTIMALITY_GAP)
    for per in ("demand", "share"):
        greedy = MarginalGain(per).run(inst)  # type: ignore[arg-type]
        report = validate(inst, greedy)
        assert report.ok, report.violations
        assert leq(res.objective, report.objective, OPTIMALITY_GAP)
        optimal = within(report.objective, res.objective, OPTIMALITY_GAP)
        event(f"greedy ({per}) optimal outside the proven case: {optimal}")


@settings(max_examples=30)
@given(inst=tiny_instances(max_jobs=4, max_tasks=5, one_resource_unit_workers=True))
def test_greedy_is_optimal_for_fixed_ps_and_equal_worker_demands(inst: OptimusInstance) -> None:
    """The separable convex case of the greedy module's theorem."""
    res = solve(inst)
    for per in ("demand", "share"):
        report = validate(inst, marginal_gain(inst, per))  # type: ignore[arg-type]
        assert report.ok and within(report.objective, res.objective, OPTIMALITY_GAP)


def test_generated_instances_solve_and_the_greedy_validates() -> None:
    for kind in KINDS:
        inst = generate_instance(6, kind=kind, seed=2)  # type: ignore[arg-type]
        res = solve(inst)
        greedy = marginal_gain(inst)
        assert leq(res.objective, validate(inst, greedy).objective, OPTIMALITY_GAP)
        assert set(res.to_frame()["role"]) == {"ps", "worker"}
        assert len(repr(res)) < 400 and len(repr(greedy)) < 200


def test_validator_catches_every_kind_of_broken_allocation() -> None:
    inst = OptimusInstance(
        resources=("gpu", "cpu"), capacity=(4.0, 10.0), jobs=[_job(), _job(job_id="b")]
    )
    ok = OptimusAllocation(("a", "b"), (1, 1), (1, 1))
    assert validate(inst, ok).ok
    cases = {
        "shape": OptimusAllocation(("b", "a"), (1, 1), (1, 1)),
        "integral": OptimusAllocation(("a", "b"), (1.5, 1), (1, 1)),  # type: ignore[arg-type]
        "ps_range": OptimusAllocation(("a", "b"), (0, 1), (1, 1)),
        "worker_range": OptimusAllocation(("a", "b"), (1, 1), (4, 1)),
        "capacity": OptimusAllocation(("a", "b"), (2, 2), (3, 2)),
    }
    for name, alloc in cases.items():
        report = validate(inst, alloc)
        assert [v.constraint for v in report.violations][:1] == [name], report.violations
        assert report.objective is None
    assert validate(inst, OptimusAllocation(("a",), (1,), (1,))).violations[0].constraint == "shape"


def test_objective_is_the_sum_of_remaining_times() -> None:
    inst = OptimusInstance(resources=("gpu", "cpu"), capacity=(4.0, 10.0), jobs=[_job()])
    report = validate(inst, OptimusAllocation(("a",), (2,), (3,)))
    assert within(report.objective, 1000.0 / (3 / (0.1 + 0.05 * 3 / 2)), OPTIMALITY_GAP)


def test_the_milp_refuses_a_model_over_budget() -> None:
    from optsched import limits

    inst = generate_instance(4, max_tasks=6, seed=0)
    with limits.override(max_model_variables=100), pytest.raises(InvalidInstanceError) as err:
        solve(inst)
    assert err.value.field == "jobs"


def test_a_solve_stopped_short_raises_with_its_result() -> None:
    """A node limit of 0 (deterministic, no timing) stops HiGHS before any incumbent."""
    from optsched.errors import NotOptimalError

    inst = generate_instance(10, seed=0)
    with pytest.raises(NotOptimalError) as err:
        solve(inst, node_limit=0)
    result = err.value.result
    # no solver incumbent: the stopped solve keeps the marginal-gain seed (feasible, named)
    assert not result.optimal and result.status.value == "feasible"
    assert result.extra["incumbent_source"] == "marginal-gain"
    assert result.objective == pytest.approx(validate(inst, marginal_gain(inst)).objective)
    assert result.objective >= solve(inst).objective - 1e-6


def test_every_pruned_choice_is_dominated_by_a_kept_one() -> None:
    """Pruning keeps the optimum: each dropped (ps, workers) is no faster than a kept choice
    using no more of any resource (checked pairwise, by loops), and the MILP still equals brute
    force."""
    from optsched.allocation.optimus.total_time import choices

    inst = generate_instance(3, max_tasks=4, slack=1.5, seed=4)
    dropped = 0
    for j, job in enumerate(inst.jobs):
        ps, workers, _, _ = choices(inst, j)
        kept = set(zip(ps.tolist(), workers.tolist(), strict=True))
        for p, w in itertools.product(range(1, job.max_ps + 1), range(1, job.max_workers + 1)):
            if (p, w) in kept:
                continue
            dropped += 1
            use = [p * s + w * d for s, d in zip(job.ps_demand, job.worker_demand, strict=True)]
            fits_alone = all(
                u <= c - sum(o.ps_demand[r] + o.worker_demand[r] for o in inst.jobs if o is not job)
                for r, (u, c) in enumerate(zip(use, inst.capacity, strict=True))
            )
            assert not fits_alone or any(
                job.remaining_time(kp, kw) <= job.remaining_time(p, w)
                and all(
                    kp * s + kw * d <= u
                    for s, d, u in zip(job.ps_demand, job.worker_demand, use, strict=True)
                )
                for kp, kw in kept
            )
    assert dropped > 0
    assert within(solve(inst).objective, _brute_force(inst), OPTIMALITY_GAP)  # type: ignore[arg-type]


def test_per_share_narrows_the_colocated_gaps_shown_in_the_docs() -> None:
    """The formulation page's figure caption: on its colocated instances, dividing gains by the
    share is never worse in the worst case than dividing by the raw demand."""
    worst = {"demand": 1.0, "share": 1.0}
    for seed in range(6):
        inst = generate_instance(8, kind="colocated", slack=1.5, seed=seed)
        best = solve(inst).objective
        for per in worst:
            value = validate(inst, marginal_gain(inst, per)).objective  # type: ignore[arg-type]
            worst[per] = max(worst[per], value / best)  # type: ignore[operator]
    assert worst["share"] <= worst["demand"]


def test_bad_greedy_divisor_names_the_field() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        MarginalGain("gpu")  # type: ignore[arg-type]
    assert err.value.field == "per"
    with pytest.raises(InvalidInstanceError) as err:
        marginal_gain(generate_instance(2, seed=0), "gpu")  # type: ignore[arg-type]
    assert err.value.field == "per"


def test_no_jobs_is_the_empty_allocation() -> None:
    inst = OptimusInstance(resources=("gpu",), capacity=(1.0,), jobs=())
    res = solve(inst)
    assert res.optimal and res.objective == 0.0
    assert res.solution is not None and res.solution.job_ids == ()
    assert validate(inst, marginal_gain(inst)).objective == 0.0
