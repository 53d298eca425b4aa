"""Baselines (FIFO, DRF, RRH, Dorm-like) and the slot engine they share with OASiS."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.oasis import tiny_instances, works

from optsched.errors import CapacityExceededError
from optsched.online.oasis import solve
from optsched.online.oasis.baselines import (
    DRF,
    FIFO,
    RRH,
    DormLike,
    baseline_algorithms,
    drf_allocation,
)
from optsched.online.oasis.engine import (
    ClusterState,
    SlotEngine,
    SlotPlacement,
    round_robin,
    work_units,
)
from optsched.online.oasis.instance import OasisInstance, ceil_work
from optsched.online.oasis.schedule import validate

#: Relative slack of ALG <= OPT (the ILP is optimal to a 1e-7 gap).
OPT_RTOL = 1e-6

small = tiny_instances(max_jobs=4, max_servers=2, max_horizon=6, max_chunks=3)


# ------------------------------------------------------------------------------------------
# Engine pieces
# ------------------------------------------------------------------------------------------


@given(small, works)
def test_work_units_match_their_definition(inst, work):
    for i, job in enumerate(inst.jobs):
        u = work_units(inst, i, work)
        w = float(inst.work_per_chunk[i])
        assert u.max_workers == job.chunks
        if work == "chunks":
            assert u.demand == job.chunk_epochs
            for n in range(job.chunks + 1):
                # The largest d whose worker need max(1, ceil(d w)) fits in n, by search.
                fits = [d for d in range(u.demand + 1) if (d == 0 or max(1, ceil_work(d * w)) <= n)]
                assert u.per_workers[n] == max(fits)
        else:
            assert u.demand == max(1, ceil_work(float(inst.total_work[i])))
            assert list(u.per_workers) == [min(n, u.demand) for n in range(job.chunks + 1)]
        for n in range(job.chunks + 1):
            m = int(u.ps_needed[n])
            assert job.b * n <= job.B * m and m <= n
            assert m == 0 or job.b * n > job.B * (m - 1)
        assert np.all(np.diff(u.per_workers) >= 0)
        for units in range(u.demand + 1):
            n = u.workers_for(units)
            assert n == u.max_workers + 1 or u.per_workers[n] >= units
            assert n == 0 or u.per_workers[n - 1] < units


@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.integers(0, 20), st.integers(0, 9))
def test_round_robin(room, count, start):
    out = round_robin(np.array(room), count, start)
    if count > sum(room):
        assert out is None
        return
    assert out is not None
    placed = dict(out)
    assert sum(placed.values()) == count
    assert all(placed.get(s, 0) <= room[s] for s in range(len(room)))
    # Cyclic one-at-a-time filling: counts on servers with room differ by at most one unless a
    # server ran out.
    spread = [placed.get(s, 0) for s in range(len(room)) if placed.get(s, 0) < room[s]]
    if spread:
        assert max(placed.values(), default=0) - min(spread) <= 1


def test_commit_refuses_overflow():
    inst = OasisInstance.from_dict(
        {
            "horizon": 2,
            "slot_s": 1.0,
            "resources": ["gpu", "bandwidth"],
            "worker_servers": [{"capacity": {"gpu": 2, "bandwidth": 10}}],
            "ps_servers": [{"capacity": {"gpu": 0, "bandwidth": 10}}],
            "jobs": [
                {
                    "arrival": 0,
                    "epochs": 1,
                    "chunks": 4,
                    "minibatches": 1,
                    "minibatch_s": 1.0,
                    "gradient_mb": 0.0,
                    "worker_demand": {"gpu": 1, "bandwidth": 1},
                    "ps_demand": {"bandwidth": 2},
                    "utility": {"kind": "constant", "value": 1},
                }
            ],
        }
    )
    state = ClusterState(inst)
    assert state.worker_room(0, 0).tolist() == [2]
    state.commit(0, [(0, 0, 2)], [(0, 0, 1)])
    assert state.worker_room(0, 0).tolist() == [0]
    with pytest.raises(CapacityExceededError, match="only 0 fit"):
        state.commit(0, [(0, 0, 1)], [])
    assert state.worker_used[0, 0, 0] == 2.0  # nothing committed by the failed call
    eng = SlotEngine(inst)
    eng.active.append(0)
    assert eng.assign(0, 1, SlotPlacement(((0, 3),), ((0, 1),))) is None  # does not fit
    got = eng.assign(0, 1, 3)  # shrinks to what fits
    assert got is not None and got.n_workers == 2


# ------------------------------------------------------------------------------------------
# Every baseline: valid schedules
# ------------------------------------------------------------------------------------------


def _algorithms(work: str, seed: int) -> list:
    algs: list = [
        FIFO(seed=seed, work=work),
        FIFO(workers=2, work=work),
        DRF(work=work),
        RRH(seed=seed, work=work),
        RRH(workers=1, alpha=1.0, threshold=0.0, work=work),
    ]
    return algs


@settings(max_examples=30)
@given(small, works, st.integers(0, 3))
def test_baseline_schedules_are_valid(inst, work, seed):
    _check_valid(inst, _algorithms(work, seed))


@pytest.mark.solver("highs")
@settings(max_examples=10)
@given(small, works)
def test_dorm_like_schedules_are_valid(inst, work):
    _check_valid(inst, [DormLike(work=work)])


def _check_valid(inst, algorithms):
    for alg in algorithms:
        run = alg.run(inst)
        rep = validate(inst, run.schedule)
        assert rep.ok, (alg.name, rep.violations)
        assert run.utility == pytest.approx(rep.objective)
        assert (
            run.stats["unfinished"] + len(run.admitted) + run.stats["rejected_on_arrival"]
            == inst.n_jobs
        )
        assert run.proven_bound is None and run.dual_bound is None


@pytest.mark.solver("highs")
@settings(max_examples=15)
@given(small)
def test_baselines_never_beat_the_optimum(inst):
    res = solve(inst)
    assert res.objective is not None
    for alg in _algorithms("chunks", 0):
        assert alg.run(inst).utility <= res.objective + OPT_RTOL * max(1.0, res.objective)


@given(small)
def test_fifo_starts_jobs_in_arrival_order_without_preemption(inst):
    run = FIFO(seed=1).run(inst)
    sched = run.schedule
    starts = {i: min(t for t, _, _ in js.workers) for i, js in enumerate(sched.jobs) if js.admitted}
    order = sorted(starts, key=lambda i: (inst.jobs[i].arrival, i))
    # Completed jobs started in arrival order, and ran in every slot until they finished.
    assert [starts[i] for i in order] == sorted(starts[i] for i in order)
    for i in starts:
        slots = sorted({t for t, _, _ in sched.jobs[i].workers})
        assert slots == list(range(slots[0], slots[-1] + 1))


def _two_job_instance(demand_a: dict, demand_b: dict) -> OasisInstance:
    def job(d):
        return {
            "arrival": 0,
            "epochs": 10,
            "chunks": 8,
            "minibatches": 1,
            "minibatch_s": 1.0,
            "gradient_mb": 0.0,
            "worker_demand": d,
            "ps_demand": {"cpu": 0.1, "bandwidth": d["bandwidth"]},
            "utility": {"kind": "constant", "value": 1},
        }

    return OasisInstance.from_dict(
        {
            "horizon": 2,
            "slot_s": 1.0,
            "resources": ["gpu", "cpu", "bandwidth"],
            "worker_servers": [{"capacity": {"gpu": 9, "cpu": 18, "bandwidth": 100}}],
            "ps_servers": [{"capacity": {"gpu": 0, "cpu": 100, "bandwidth": 100}}],
            "jobs": [job(demand_a), job(demand_b)],
        }
    )


def test_drf_equalises_dominant_shares():
    """Ghodsi et al.'s example: <1 GPU, 4 CPU> and <3 GPU, 1 CPU> on <9 GPU, 18 CPU> get 3 and 2
    workers (dominant shares 2/3 each)."""
    inst = _two_job_instance(
        {"gpu": 1, "cpu": 4, "bandwidth": 1}, {"gpu": 3, "cpu": 1, "bandwidth": 1}
    )
    eng = SlotEngine(inst)
    eng.active.extend([0, 1])
    alloc = drf_allocation(eng, 0, [0, 1])
    assert alloc[0].n_workers == 3 and alloc[1].n_workers == 2


def test_drf_identical_jobs_get_equal_counts():
    d = {"gpu": 1, "cpu": 1, "bandwidth": 1}
    inst = _two_job_instance(d, d)
    eng = SlotEngine(inst)
    eng.active.extend([0, 1])
    alloc = drf_allocation(eng, 0, [0, 1])
    assert abs(alloc[0].n_workers - alloc[1].n_workers) <= 1
    assert alloc[0].n_workers + alloc[1].n_workers == 9  # GPUs run out at 9 workers


def test_rrh_rejects_jobs_that_cannot_finish():
    inst = _two_job_instance(
        {"gpu": 1, "cpu": 1, "bandwidth": 1}, {"gpu": 1, "cpu": 1, "bandwidth": 1}
    )
    # 80 chunk-epochs of one worker-slot each cannot finish in 2 slots with 1 worker.
    run = RRH(workers=1).run(inst)
    assert run.stats["rejected_on_arrival"] == 2 and run.utility == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        FIFO(workers=0)
    with pytest.raises(ValueError):
        FIFO(low=5, high=2)
    with pytest.raises(ValueError):
        RRH(alpha=2)
    with pytest.raises(ValueError):
        RRH(threshold=-1)
    with pytest.raises(ValueError):
        DormLike(time_limit=0)
    with pytest.raises(ValueError):
        DormLike(theta=2)
    with pytest.raises(ValueError):
        DRF(work="epochs")
    assert [a.name for a in baseline_algorithms()] == ["fifo", "drf", "rrh", "dorm"]


@pytest.mark.solver("highs")
def test_dorm_reports_its_solves():
    from optsched.online.oasis.generate import generate_instance

    inst = generate_instance(8, 2, 2, 8, seed=3)
    run = DormLike().run(inst)
    assert validate(inst, run.schedule).ok
    assert run.stats["solves"] >= 1
    assert run.stats["solves"] >= run.stats["not_optimal"] + run.stats["fallbacks"]


@pytest.mark.solver("highs")
def test_dorm_stops_each_solve_by_a_node_budget_not_the_clock(monkeypatch):
    """Every re-solve gets the node budget; runs with one budget agree whatever the time cap."""
    from optsched import solvers
    from optsched.online.oasis.generate import generate_instance

    seen: list[dict] = []
    real = solvers.solve

    def spy(model, solver="highs", **kwargs):
        seen.append(dict(kwargs.get("options") or {}))
        return real(model, solver, **kwargs)

    monkeypatch.setattr(solvers, "solve", spy)
    inst = generate_instance(8, 2, 2, 8, seed=3)
    first = DormLike(node_limit=7).run(inst)
    assert seen and all(o == {"mip_max_nodes": 7} for o in seen)
    second = DormLike(node_limit=7, time_limit=1e4).run(inst)
    assert first.stats["time_limited"] == second.stats["time_limited"] == 0
    assert first.schedule.to_frame().equals(second.schedule.to_frame())
    with pytest.raises(ValueError, match="node_limit"):
        DormLike(node_limit=0)
