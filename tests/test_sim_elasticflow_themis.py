"""ElasticFlow's Themis under ``mechanism="elasticflow"``: the round's program, walk, records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize
from strategies.sim import job_frame

from optsched.cli import main
from optsched.sim import ClusterSpec, GpuType, World, job_metrics, simulate, validate
from optsched.sim.engine.elasticflow_themis import ThemisLeases, ftf_allocation, ftf_optimum
from optsched.sim.measure.metrics import admission_counts
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import SOLVER_AGREEMENT_TOL, TIME_TOL

SLICE = Path(__file__).resolve().parent / "data" / "traces" / "elasticflow" / "cluster10_head40.csv"
#: Agreement of two numerical optimisers of the same smooth barrier (not the solvers' 1e-8).
CENTRE_TOL = 1e-4


def _world(rows: list[dict[str, object]]) -> World:
    """One 8-GPU server; model "lin" runs n steps/s on n GPUs."""
    curve = ScalingCurve((1, 2, 4, 8), (1.0, 2.0, 4.0, 8.0))
    profiles = ScalingProfiles(gpu_type="a100", curves={("lin", 64): curve})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=8, gpus_per_server=8),))
    frame = job_frame([{"batch_size": 64, "num_gpus": 8, **r} for r in rows])
    return World.from_frame(frame, cluster, table)


def _instance(seed: int) -> tuple[np.ndarray, ...]:
    """A small round: (A, L, T, D, g, N) as ElasticFlow's loop builds them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    gangs = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    total = np.array([float(rng.choice([4, 8, 16]))])
    left = rng.uniform(100, 5000, n)
    rate = rng.uniform(1, 20, n)
    since = rng.uniform(0, 3000, n) * (rng.random(n) < 0.7)
    isolated = rng.uniform(100, 8000, n)
    return since, left, rate, isolated, gangs, total


def _cvxpy(since, left, rate, isolated, gangs, total, solver):  # type: ignore[no-untyped-def]
    """ElasticFlow's statement of the round, as its loop writes it, solved by ``solver``."""
    n = len(left)
    x = cp.Variable(n)
    rho = [(since[j] + left[j] * cp.inv_pos(rate[j] * x[j])) / isolated[j] for j in range(n)]
    cons = [x >= 0, x <= 1, cp.sum(cp.multiply(gangs, x)) <= total]
    prob = cp.Problem(cp.Minimize(cp.maximum(*rho)), cons)
    prob.solve(solver=solver)
    assert prob.status == "optimal"
    return float(prob.value), np.asarray(x.value)


@pytest.mark.parametrize("seed", range(12))
def test_round_optimum_against_a_conic_solver(seed: int) -> None:
    """F* from the 1-D characterisation is the conic solver's optimum; where the optimum is a
    single point (the capacity binds) the shares are the solver's too."""
    since, left, rate, isolated, gangs, (total,) = _instance(seed)
    opt = ftf_optimum(left / (rate * isolated), since / isolated, gangs, total)
    value, x = _cvxpy(since, left, rate, isolated, gangs, total, "CLARABEL")
    assert opt.value == pytest.approx(value, rel=SOLVER_AGREEMENT_TOL)
    ours = ftf_allocation(since, left, rate, isolated, gangs, total)
    rho = (since + left / (rate * ours)) / isolated
    # ours is optimal and feasible whatever the point of the face
    assert rho.max() <= opt.value * (1 + SOLVER_AGREEMENT_TOL)
    assert gangs @ ours <= total * (1 + SOLVER_AGREEMENT_TOL) and ours.max() <= 1.0
    if opt.unique:
        np.testing.assert_allclose(ours, x, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(rho, opt.value, rtol=SOLVER_AGREEMENT_TOL)


def test_round_optimum_hand_case() -> None:
    """Two one-GPU jobs on one GPU, equal but for their wait: the capacity binds, and F* is the
    root of a quadratic, (F - b0)(F - b1) = a (2F - b0 - b1); the one that waited runs."""
    a, b0, b1 = 0.01, 1.0, 0.0
    opt = ftf_optimum(np.array([a, a]), np.array([b0, b1]), np.array([1.0, 1.0]), 1.0)
    # F^2 - (b0 + b1 + 2a) F + b0 b1 + a (b0 + b1) = 0, the larger root
    p, q = b0 + b1 + 2 * a, b0 * b1 + a * (b0 + b1)
    root = (p + math.sqrt(p * p - 4 * q)) / 2
    assert opt.unique and opt.value == pytest.approx(root, rel=1e-12)
    np.testing.assert_allclose(opt.lower, [a / (root - b0), a / (root - b1)], rtol=1e-12)
    leases = ThemisLeases([1, 1], [0.0, 100.0], 1, lambda i: 1.0)
    # at t = 100 both are there: job 0 waited 100 s, job 1 none
    assert leases.decide(100.0, set(), [0, 1], [100.0, 100.0]) == {0: 1}


def _barrier(z, low, upper, rate, gangs, room):  # type: ignore[no-untyped-def]
    """Minus the log-barrier of the optimal face's slacks (module notes), in (x, u)."""
    n = len(low)
    x, u = z[:n], z[n:]
    q = rate * x * u - 1
    r = room - gangs @ x
    if np.any(x <= 0) or np.any(x >= 1) or np.any(u >= upper) or np.any(q <= 0) or r <= 0:
        return 1e30
    return -float(np.sum(np.log(x) + np.log(1 - x) + np.log(upper - u) + np.log(q)) + math.log(r))


@pytest.mark.parametrize("seed", range(40))
def test_face_point_is_the_analytic_centre(seed: int) -> None:
    """On a face, the shares maximise the barrier: checked by another optimiser (Nelder-Mead on
    the whole (x, u) barrier, no closed forms) from our point and from another start."""
    since, left, rate, isolated, gangs, (total,) = _instance(seed)
    alpha, beta = left / (rate * isolated), since / isolated
    opt = ftf_optimum(alpha, beta, gangs, total)
    if opt.unique:
        pytest.skip("the optimum is a point here")
    ours = ftf_allocation(since, left, rate, isolated, gangs, total)
    free = ~opt.held
    assert np.all(ours[opt.held] == 1.0)
    upper = ((opt.value * isolated - since) / left)[free]
    low, rf, gf = opt.lower[free], rate[free], gangs[free]
    room = total - gangs[opt.held].sum()
    x0 = 0.5 * (low + 1) if gf @ (0.5 * (low + 1)) < room else low + 0.01 * (1 - low)
    u0 = 0.5 * (1 / (rf * x0) + upper)
    found = minimize(
        _barrier,
        np.concatenate([x0, u0]),
        args=(low, upper, rf, gf, room),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 200000, "maxfev": 200000},
    )
    n = int(free.sum())
    np.testing.assert_allclose(ours[free], found.x[:n], atol=CENTRE_TOL)


@pytest.mark.skipif("ECOS" not in cp.installed_solvers(), reason="ECOS (the bench extra) absent")
def test_ecos_stops_elsewhere_on_the_face() -> None:
    """ECOS, the solver ElasticFlow names, returns the same optimum but another point of the
    face than the analytic centre (its iterates stop before centring): the evidence for the
    guide's statement that priorities on a face are the solver's, not the program's."""
    differ = 0
    for seed in range(40):
        since, left, rate, isolated, gangs, (total,) = _instance(seed)
        opt = ftf_optimum(left / (rate * isolated), since / isolated, gangs, total)
        value, x = _cvxpy(since, left, rate, isolated, gangs, total, "ECOS")
        assert opt.value == pytest.approx(value, rel=SOLVER_AGREEMENT_TOL)
        ours = ftf_allocation(since, left, rate, isolated, gangs, total)
        if not opt.unique:
            differ += bool(np.max(np.abs(ours - x)) > CENTRE_TOL)
    assert differ > 0


def test_history_and_event_time() -> None:
    """C_j adds the iterations made since the last slot over the last slot's isolated share;
    A_j reads the time of the last slot with an event."""
    leases = ThemisLeases([1, 2], [0.0, 0.0], 2, lambda i: 1.0)
    leases.decide(0.0, set(), [0, 1], [100.0, 100.0])
    assert leases.event_time == 0.0 and leases.prev_share == {0: 1.0, 1: 0.5}
    leases.decide(60.0, set(), [], [40.0, 100.0])  # no event: A_j still from t = 0
    assert leases.event_time == 0.0
    assert leases.history == {0: 60.0, 1: 0.0}
    leases.decide(120.0, {0}, [], [0.0, 70.0])
    assert leases.event_time == 120.0 and leases.lease_end == {0: 120.0}
    # job 1 alone: its share ceil(2/1)/2 = 1 now, the last one 0.5
    assert leases.history[1] == pytest.approx(30.0 / 0.5)


def test_slots_and_lease_ends() -> None:
    """Leases every 60 s from the first arrival; an arrival waits for the next slot; a job done
    within a slot completes then, and its slot's end is its ElasticFlow end time."""
    rows = [
        {"job_id": "a", "model": "lin", "arrival": 0, "total_steps": 900, "deadline": 2000},
        {"job_id": "b", "model": "lin", "arrival": 45, "total_steps": 30, "deadline": 100},
    ]
    world = _world(rows)
    res = simulate(world, "themis", mechanism="elasticflow")
    validate(res.world, res).raise_if_invalid()
    # a runs alone from 0 (8 steps/s); b arrives at 45, decided at 60: who runs from 60 is the
    # program's call, one job at a time on the 8 GPUs
    assert res.first_start[0] == 0.0 and res.first_start[1] % 60.0 == 0.0
    for i, job in enumerate(world.jobs):
        end = res.extra["lease_end"][job.job_id]
        assert end % 60.0 == 0.0 and res.completion[i] <= end + TIME_TOL < res.completion[i] + 60
    met = set(res.extra["met_by_lease_end"])
    assert met == {j.job_id for j in world.jobs if res.extra["lease_end"][j.job_id] <= j.deadline}


def test_elasticflow_count_reads_the_slot_ends() -> None:
    """Done at 30 s, due at 45 s: met by its completion, missed by ElasticFlow's end time (the
    slot's end, 60 s), which its count ("met, declined = missed") follows."""
    world = _world(
        [{"job_id": "a", "model": "lin", "arrival": 0, "total_steps": 240, "deadline": 45}]
    )
    res = simulate(world, "themis", mechanism="elasticflow")
    frame = job_metrics(res)
    assert res.completion == [pytest.approx(30.0)] and bool(frame["deadline_met"].iloc[0])
    assert res.extra["lease_end"] == {"a": 60.0} and res.extra["met_by_lease_end"] == []
    assert admission_counts(res, frame)["deadlines_met_admitted"] == 0


def test_issue_command_runs_with_themis(capsys: pytest.CaptureFixture[str]) -> None:
    """``sim compare`` of ElasticFlow's four baselines and Themis under its mechanism."""
    if not SLICE.is_file():
        pytest.skip(f"{SLICE} absent")
    code = main(
        [
            "sim",
            "compare",
            str(SLICE),
            "--cluster",
            "a100=16:8",
            "--mechanism",
            "elasticflow",
            "--policies",
            "elasticflow,edf,gandiva,tiresias-las,themis",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    text = json.dumps(json.loads(out))
    assert "themis" in text


@pytest.mark.parametrize("seed", range(12))
def test_face_vertex_is_the_least_shares(seed: int) -> None:
    """``face="vertex"``: HiGHS on the face as an LP without objective stops at every free job's
    least share (checked against scipy's own HiGHS dual simplex as well)."""
    from scipy.optimize import linprog

    since, left, rate, isolated, gangs, (total,) = _instance(seed)
    opt = ftf_optimum(left / (rate * isolated), since / isolated, gangs, total)
    ours = ftf_allocation(since, left, rate, isolated, gangs, total, face="vertex")
    low = np.where(opt.held, 1.0, opt.lower)
    np.testing.assert_allclose(ours, low, rtol=1e-9, atol=1e-12)
    bounds = list(zip(low, np.ones(len(low)), strict=True))
    other = linprog(
        np.zeros(len(low)), A_ub=[gangs], b_ub=[total], bounds=bounds, method="highs-ds"
    )
    np.testing.assert_allclose(other.x, low, rtol=1e-9, atol=1e-12)


def test_face_option_runs_and_is_checked() -> None:
    from optsched.errors import InvalidInstanceError
    from optsched.sim.engine.elasticflow import ElasticFlowMechanism

    with pytest.raises(InvalidInstanceError) as err:
        ElasticFlowMechanism(themis_face="middle")
    assert err.value.field == "themis_face"
    rows = [
        {"job_id": f"j{k}", "model": "lin", "arrival": 20 * k, "total_steps": 400 + 90 * k}
        for k in range(5)
    ]
    world = _world(
        [{**r, "deadline": 1000, "num_gpus": 2 + 2 * (k % 2)} for k, r in enumerate(rows)]
    )
    for face in ("centre", "vertex"):
        res = simulate(world, "themis", mechanism=ElasticFlowMechanism(themis_face=face))
        validate(res.world, res).raise_if_invalid()
        assert not any(math.isnan(c) for c in res.completion)
