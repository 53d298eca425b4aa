"""ElasticFlow's Chronus under ``mechanism="elasticflow"``: the lease MILP, admission, records."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.sim import job_frame

from optsched.cli import main
from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
from optsched.sim.engine.elasticflow import ElasticFlowMechanism
from optsched.sim.engine.elasticflow_chronus import (
    LEASE_SECONDS,
    ChronusLeases,
    estimate_seconds,
    greedy_packable,
    lease_plan,
    resume_seconds,
)
from optsched.sim.world.elasticflow_profiles import ScalingCurve, ScalingProfiles
from optsched.sim.world.throughputs import Throughputs
from optsched.tolerances import TIME_TOL

SLICE = Path(__file__).resolve().parent / "data" / "traces" / "elasticflow" / "cluster10_head40.csv"
# "lin": n steps/s on n GPUs
LIN = ScalingCurve((1, 2, 4, 8), (1.0, 2.0, 4.0, 8.0))


def _world(rows: list[dict[str, object]], count: int = 8) -> World:
    profiles = ScalingProfiles(gpu_type="a100", curves={("lin", 64): LIN})
    table = Throughputs.from_scaling_profiles([profiles])
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=count, gpus_per_server=8),))
    frame = job_frame([{"batch_size": 64, "num_gpus": 1, "model": "lin", **r} for r in rows])
    return World.from_frame(frame, cluster, table)


# ----------------------------------------------------------------------------- the lease MILP


def _brute(sizes, need, within, total, maximize):  # type: ignore[no-untyped-def]
    """The best lease-0 GPUs of the full time-indexed model, by enumeration (None: infeasible)."""
    horizon = max(within)
    choices = [list(itertools.combinations(range(m), q)) for q, m in zip(need, within, strict=True)]
    best = None
    for pick in itertools.product(*choices):
        load = [0] * horizon
        for s, leases in zip(sizes, pick, strict=True):
            for lease in leases:
                load[lease] += s
        if max(load) > total:
            continue
        now = sum(s for s, leases in zip(sizes, pick, strict=True) if 0 in leases)
        value = now if maximize else -now
        best = value if best is None else max(best, value)
    return best


def _instance(seed: int) -> tuple[list[int], list[int], list[int], int]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5))
    total = int(rng.choice([4, 8, 16]))
    sizes = [int(rng.choice([1, 2, 4, 8])) for _ in range(n)]
    sizes = [min(s, total) for s in sizes]
    within = [int(rng.integers(1, 7)) for _ in range(n)]
    need = [int(rng.integers(1, m + 1)) for m in within]
    return sizes, need, within, total


def _solver(name: str) -> str:
    if name == "scip":
        pytest.importorskip("pyscipopt", reason="SCIP's lease plans need pyscipopt")
    return name


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("maximize", [True, False])
@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_lease_plan_against_enumeration(seed: int, maximize: bool, solver: str) -> None:
    """The reduced MILP (a binding prefix, blocks after it) has the full model's optimum of
    lease 0, and its plan is a schedule of the full model: q_j distinct leases among the first
    m_j, no lease over the GPUs; on either solver (the same optimum)."""
    sizes, need, within, total = _instance(seed)
    best = _brute(sizes, need, within, total, maximize)
    plan = lease_plan(sizes, need, within, total, maximize, solver=_solver(solver))
    if best is None:
        assert plan is None
        return
    assert plan is not None
    load = [0] * max(within)
    for s, q, m, row in zip(sizes, need, within, plan.leases, strict=True):
        assert len(row) == m and sum(row) == q and set(row) <= {0, 1}
        for lease, used in enumerate(row):
            load[lease] += s * used
    assert max(load) <= total
    now = sum(s for s, flag in zip(sizes, plan.now, strict=True) if flag)
    assert (now if maximize else -now) == best


def test_lease_plan_reduces_the_free_suffix() -> None:
    """Two 1-GPU jobs on 8 GPUs never contend: every lease but 0 goes into blocks."""
    plan = lease_plan([1, 1], [3, 5], [200, 400], 8, maximize=True)
    assert plan is not None and plan.now == [True, True]
    # lease 0's binaries, then one block [1, 200) for both and [200, 400) for the second
    assert plan.variables == 2 + 2 + 1
    assert [sum(r) for r in plan.leases] == [3, 5]
    # a block's count sits on its latest leases
    assert plan.leases[0][-2:] == [1, 1] and plan.leases[1][-4:] == [1, 1, 1, 1]


def test_lease_plan_infeasible() -> None:
    assert lease_plan([8, 8], [2, 2], [3, 3], 8, maximize=True) is None
    assert lease_plan([1], [4], [3], 8, maximize=True) is None


# ----------------------------------------------------------------------------- admission


def test_greedy_packing_hand_cases() -> None:
    """Latest leases first, largest gang first; it fails where it has no room left."""
    assert greedy_packable([(8, 2, 2)], [], 8)
    assert not greedy_packable([(8, 2, 2), (1, 1, 2)], [], 8)
    # the 8-GPU job takes leases 2 and 1; the 4-GPU one is left lease 0 alone
    assert greedy_packable([(4, 1, 3), (8, 2, 3)], [], 8)
    assert not greedy_packable([(4, 2, 3), (8, 2, 3)], [], 8)
    # the free profile: lease 0 has 3 GPUs left, lease 1 none
    assert greedy_packable([(2, 1, 2)], [3, 0], 8)
    assert not greedy_packable([(4, 1, 2)], [3, 0], 8)


def test_estimate_and_resume() -> None:
    """E = floor(D (1 + (1 + log2 g) 0.5 / 240) 1.1); a resume costs 0.5 (1 + log2 g) s."""
    assert estimate_seconds(600, 1) == 661  # 600 * 1.0020833 * 1.1 = 661.375
    assert estimate_seconds(600, 8) == math.floor(600 * (1 + 4 * 0.5 / 240) * 1.1)
    assert resume_seconds(1) == 0.5 and resume_seconds(8) == 2.0


# ----------------------------------------------------------------------------- the mechanism


def test_hand_case_admission_adaptive_objective_and_overhead() -> None:
    """a (600 s, due 5000) is accepted at 0 and waits for lease 1; b (600 s, due 700) cannot
    get 3 leases by 700, so it is unaccepted and runs on the GPUs left, paying 0.5 s at every
    boundary (0, 240, 480): done at 601.5. With an unaccepted job counted, the MILP minimises
    lease 0's GPUs: a is held back at 240, 480 and 720 (b counted at the boundary before), and
    runs from 960 with one resume: done at 960.5 + 600."""
    rows = [
        {"job_id": "a", "arrival": 0, "total_steps": 600, "deadline": 5000},
        {"job_id": "b", "arrival": 0, "total_steps": 600, "deadline": 700},
    ]
    res = simulate(_world(rows), "chronus", mechanism="elasticflow")
    validate(res.world, res).raise_if_invalid()
    assert res.completion == [pytest.approx(1560.5), pytest.approx(601.5)]
    assert res.extra["chronus_accepted"] == ["a"]
    # a is met by its lease end (4800), b by its own deadline
    assert res.extra["met_by_lease_end"] == ["a", "b"]


def test_alone_accepted_job_runs_from_the_next_lease() -> None:
    rows = [{"job_id": "a", "arrival": 100, "total_steps": 600, "deadline": 5000}]
    res = simulate(_world(rows), "chronus", mechanism="elasticflow")
    # decided at the boundary 240 (admitted: lease 0 is the next term), run from 480
    assert res.completion == [pytest.approx(480 + resume_seconds(1) + 600)]
    assert res.first_start == [pytest.approx(480.5)]


def test_clock_origin_moves_the_grid() -> None:
    """Boundaries are multiples of 240 s of the trace's time: origin 200 puts them at 40, 280."""
    rows = [{"job_id": "b", "arrival": 0, "total_steps": 100, "deadline": 300}]
    opts = ElasticFlowMechanism(clock_origin=200.0)
    res = simulate(_world(rows), "chronus", mechanism=opts)
    # unaccepted (no lease by its deadline), run at the first boundary, 40
    assert res.completion == [pytest.approx(40 + 0.5 + 100)]
    assert res.extra["met_by_lease_end"] == ["b"]


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, object]]:
    n = draw(st.integers(1, 7))
    rows = []
    for k in range(n):
        arrival = draw(st.integers(0, 1500))
        rows.append(
            {
                "job_id": f"j{k}",
                "arrival": arrival,
                "total_steps": draw(st.integers(1, 4000)),
                "deadline": arrival + draw(st.integers(1, 4000)),
                "num_gpus": draw(st.sampled_from([1, 2, 4, 8])),
            }
        )
    rows.sort(key=lambda r: r["arrival"])  # type: ignore[arg-type, return-value]
    return rows


@given(_rows(), st.sampled_from([8, 16]), st.integers(0, 239))
def test_records_valid_rigid_gangs_on_the_grid(
    rows: list[dict[str, object]], count: int, origin: int
) -> None:
    """Every record passes the validator; gangs are the requested ones, started on the lease
    grid (plus a resume); every job completes; an accepted job meets its lease-end deadline."""
    world = _world(rows, count=count)
    res = simulate(world, "chronus", mechanism=ElasticFlowMechanism(clock_origin=float(origin)))
    validate(res.world, res).raise_if_invalid()
    frame = res.intervals_frame()
    for r in frame.itertuples():
        phase = (r.start + origin) % LEASE_SECONDS
        assert min(phase, LEASE_SECONDS - phase) <= 2.0 + TIME_TOL  # a resume is at most 2 s
    gangs = frame.groupby(["job_id", "start"])["gpus"].sum()
    ids = [j.job_id for j in world.jobs]
    for (job_id, _), g in gangs.items():
        assert g == world.jobs[ids.index(job_id)].num_gpus
    assert not any(math.isnan(c) for c in res.completion)
    for job_id in res.extra["chronus_accepted"]:
        i = ids.index(job_id)
        due = math.floor((world.jobs[i].deadline + origin) / LEASE_SECONDS) * LEASE_SECONDS
        assert res.completion[i] <= due - origin + TIME_TOL
        assert job_id in res.extra["met_by_lease_end"]


def test_compare_command_runs_chronus(capsys: pytest.CaptureFixture[str]) -> None:
    """``sim compare ... --mechanism elasticflow --policies chronus``."""
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
            "chronus,themis",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "chronus" in json.dumps(json.loads(out))


def test_lease_plan_ties_go_to_the_least_slack() -> None:
    """One GPU, three leases, needs 1 and 2: lease 0 must hold one job (minimised to one GPU);
    of the two optima the job with less slack (1 against 2) takes it."""
    plan = lease_plan([1, 1], [1, 2], [3, 3], 1, maximize=False)
    assert plan is not None and plan.now == [False, True]


def _leases(hold: bool) -> ChronusLeases:
    # three 8-GPU jobs of 600 s (665 s estimated: 3 leases) on 8 GPUs, all at 0; the boundary
    # at 0 admits into leases 0.. of the next terms: deadlines 1680 (6 leases) and 720 (2)
    c = ChronusLeases([8, 8, 8], [0.0] * 3, [1680.0, 720.0, 1680.0], 8, lambda i: 600.0)
    c.hold_declined = hold
    return c


def test_declined_arrival_keeps_its_relaxed_leases() -> None:
    """B (3 leases within 2) is declined; its least fitting count is 3 (it packs first, least
    slack, into leases 0-2, A into 3-5), and C is then packed around both: no room, declined.
    Without that reservation C fits beside A and is accepted."""
    held = _leases(True)
    held.decide(0.0, set(), [0, 1, 2])
    assert held.accepted == [0]
    assert held._relaxed([(8, 3, 6)], (8, 3, 2), []) == (8, 3, 3)
    free = _leases(False)
    free.decide(0.0, set(), [0, 1, 2])
    assert free.accepted == [0, 2]


def test_chronus_solver_option() -> None:
    """The mechanism's solver names are the matrix backends; a wrong one names the field."""
    from optsched.errors import InvalidInstanceError
    from optsched.solvers import MATRIX_SOLVERS

    assert set(MATRIX_SOLVERS) == {"highs", "scip"}  # the names the option accepts
    with pytest.raises(InvalidInstanceError, match="chronus_solver"):
        ElasticFlowMechanism(chronus_solver="cbc")


@given(_rows(), st.sampled_from([8, 16]))
def test_scip_lease_plans_valid_records(rows: list[dict[str, object]], count: int) -> None:
    """With the lease MILP on SCIP every record passes the validator and every job completes
    (its plans' optimality against enumeration: ``test_lease_plan_against_enumeration``)."""
    _solver("scip")
    world = _world(rows, count=count)
    opts = ElasticFlowMechanism(chronus_solver="scip")
    res = simulate(world, "chronus", mechanism=opts)
    validate(res.world, res).raise_if_invalid()
    assert not any(math.isnan(c) for c in res.completion)


def test_scip_and_highs_lease_zero_agree_on_ties() -> None:
    """Hand case with two optimal plans (one GPU, needs 1 and 2 of 3 leases, minimised): both
    solvers put one GPU in lease 0, and the least-slack weights make the pick the same job."""
    for solver in ("highs", _solver("scip")):
        plan = lease_plan([1, 1], [1, 2], [3, 3], 1, maximize=False, solver=solver)
        assert plan is not None and plan.now == [False, True]
        loose = lease_plan(
            [1, 1], [1, 2], [3, 3], 1, maximize=False, least_slack=False, solver=solver
        )
        assert loose is not None and sum(loose.now) == 1
