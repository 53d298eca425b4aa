"""The exact offline OASiS ILP: hand-worked optima, exhaustive search, validator, relaxation."""

from __future__ import annotations

import json

import pytest
from brute.oasis import exhaustive_optimum
from hypothesis import given, settings
from strategies.oasis import tiny_instances

from optsched.cli import main
from optsched.errors import NotOptimalError
from optsched.online.oasis import OasisInstance, build_schedule, validate
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.offline import CONSTRAINT_NAMES, build_model, solve
from optsched.solvers import Status

pytestmark = pytest.mark.solver("highs")

#: Relative tolerance when comparing optimal utilities from two exact methods.
OPT_RTOL = 1e-6


def close(a: float, b: float, rtol: float = OPT_RTOL) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def _cluster(workers: list[dict], ps: list[dict], horizon: int, jobs: list[dict]) -> OasisInstance:
    return OasisInstance.from_dict(
        {
            "horizon": horizon,
            "slot_s": 1.0,
            "resources": ["gpu", "bandwidth"],
            "worker_servers": [{"capacity": c} for c in workers],
            "ps_servers": [{"capacity": c} for c in ps],
            "jobs": jobs,
        }
    )


def _job(
    arrival: int,
    chunk_epochs: int,
    work_per_chunk: float,
    utility: dict,
    gpus: float = 1.0,
    chunks: int | None = None,
) -> dict:
    # chunk_epochs = E * N with E = chunk_epochs / chunks; minibatch time gives the work per chunk.
    n = chunks or chunk_epochs
    return {
        "arrival": arrival,
        "epochs": chunk_epochs // n,
        "chunks": n,
        "minibatches": 1,
        "minibatch_s": work_per_chunk,
        "gradient_mb": 0.0,
        "worker_demand": {"gpu": gpus, "bandwidth": 1.0},
        "ps_demand": {"bandwidth": 2.0},
        "utility": utility,
    }


def test_single_job_runs_as_fast_as_it_can() -> None:
    # 4 worker-slots of work, N = 2 concurrent workers, 2 GPUs: finishes after 2 slots.
    inst = _cluster(
        [{"gpu": 2, "bandwidth": 10}],
        [{"gpu": 0, "bandwidth": 10}],
        5,
        [_job(1, 2, 2.0, {"kind": "linear", "value": 10, "slope": 1}, chunks=2)],
    )
    res = solve(inst)
    assert res.status is Status.OPTIMAL
    assert close(res.objective, 9.0)  # duration 2 -> 10 - 1*(2-1)
    js = res.solution.jobs[0]
    assert js.completion == 3 and {t for t, _, _ in js.workers} == {1, 2}
    # One PS suffices for 2 workers (b = 1, B = 2): 1 * 2 <= 2 * 1.
    assert all(n == 1 for _, _, n in js.ps)


def test_scarce_server_goes_to_the_valuable_job() -> None:
    # One GPU, one slot: only one of two identical-size jobs can run; the optimum picks the
    # one worth more.
    jobs = [
        _job(0, 1, 1.0, {"kind": "constant", "value": 3.0}),
        _job(0, 1, 1.0, {"kind": "constant", "value": 7.0}),
    ]
    inst = _cluster([{"gpu": 1, "bandwidth": 10}], [{"gpu": 0, "bandwidth": 10}], 1, jobs)
    res = solve(inst)
    assert close(res.objective, 7.0)
    assert res.solution.admitted == [1]


def test_deadline_job_is_served_first() -> None:
    # Two unit jobs, one GPU, two slots: the step job (deadline 1) must go first for both to count.
    jobs = [
        _job(0, 1, 1.0, {"kind": "constant", "value": 5.0}),
        _job(0, 1, 1.0, {"kind": "step", "value": 5.0, "deadline": 1}),
    ]
    inst = _cluster([{"gpu": 1, "bandwidth": 10}], [{"gpu": 0, "bandwidth": 10}], 2, jobs)
    res = solve(inst)
    assert close(res.objective, 10.0)
    assert res.solution.jobs[1].completion == 1 and res.solution.jobs[0].completion == 2


def test_job_needing_more_than_the_horizon_is_rejected() -> None:
    jobs = [_job(0, 6, 1.0, {"kind": "constant", "value": 5.0}, chunks=1)]
    inst = _cluster([{"gpu": 4, "bandwidth": 10}], [{"gpu": 0, "bandwidth": 10}], 3, jobs)
    res = solve(inst)
    assert close(res.objective, 0.0) and res.solution.admitted == []


def test_zero_work_job_still_needs_one_worker_slot() -> None:
    # No compute and no gradients: admitted means one worker in one slot (DESIGN §2.3).
    job = _job(0, 1, 0.0, {"kind": "constant", "value": 4.0})
    inst = _cluster([{"gpu": 1, "bandwidth": 10}], [{"gpu": 0, "bandwidth": 10}], 2, [job])
    res = solve(inst)
    assert close(res.objective, 4.0) and res.solution.jobs[0].admitted
    assert close(res.objective, exhaustive_optimum(inst))
    assert validate(inst, res.solution).ok


def test_empty_instance() -> None:
    inst = _cluster([{"gpu": 1, "bandwidth": 1}], [{"gpu": 0, "bandwidth": 1}], 2, [])
    res = solve(inst)
    assert res.status is Status.OPTIMAL and close(res.objective or 0.0, 0.0)


@settings(max_examples=30)
@given(tiny_instances())
def test_ilp_equals_exhaustive_search(inst: OasisInstance) -> None:
    res = solve(inst)
    assert res.status is Status.OPTIMAL
    assert close(res.objective, exhaustive_optimum(inst))
    report = validate(inst, res.solution)
    assert report.ok, report.violations
    # The validator's recomputed utility is the ILP objective.
    assert close(report.objective, res.objective)


@pytest.mark.solver("scip")
@settings(max_examples=15)
@given(tiny_instances(max_jobs=3, max_servers=2, max_horizon=5))
def test_second_solver_agrees(inst: OasisInstance) -> None:
    highs = solve(inst, solver="highs")
    scip = solve(inst, solver="scip")
    assert close(highs.objective, scip.objective)
    assert validate(inst, scip.solution).ok


@settings(max_examples=15)
@given(tiny_instances(max_jobs=3, max_horizon=5))
def test_lp_relaxation_bounds_the_optimum(inst: OasisInstance) -> None:
    exact = solve(inst)
    relaxed = solve(inst, relax=True)
    assert relaxed.solution is None and relaxed.extra["relaxed"]
    assert relaxed.bound >= exact.objective - OPT_RTOL * max(1.0, exact.objective)


@pytest.mark.parametrize("seed", range(4))
def test_generated_instances_solve_and_validate(seed: int) -> None:
    inst = generate_instance(8, 2, 2, 8, seed=seed)
    res = solve(inst)
    assert res.status is Status.OPTIMAL
    assert validate(inst, res.solution).ok
    assert res.bound >= res.objective - OPT_RTOL * max(1.0, res.objective)


def test_model_has_every_documented_constraint_family() -> None:
    import pyomo.environ as pyo

    inst = generate_instance(4, 2, 2, 6, seed=1)
    m = build_model(inst)
    names = {c.name for c in m.component_objects(pyo.Constraint)}
    assert set(CONSTRAINT_NAMES) <= names


@pytest.mark.solver("highs")
def test_a_stopped_solve_is_never_used_silently() -> None:
    # Stopped by HiGHS node limits (work budgets, the same on any machine): never returned as
    # if optimal. Without accept_feasible it raises with the result; with it, the status says
    # what was found.
    inst = generate_instance(20, 3, 3, 20, seed=1, scale=0.2)
    opt = solve(inst).objective
    one_node = {"mip_max_nodes": 1, "presolve": "off"}  # an incumbent, no proof
    with pytest.raises(NotOptimalError) as info:
        solve(inst, solver_options=one_node)
    assert info.value.result.status is Status.FEASIBLE
    res = solve(inst, solver_options=one_node, accept_feasible=True)
    assert res.status is Status.FEASIBLE and res.solution is not None and not res.optimal
    assert validate(inst, res.solution).ok
    assert res.bound is not None and res.objective <= opt + 1e-6 <= res.bound + 2e-6
    # No node at all: the solver has no incumbent, so the stopped solve keeps the best cheap
    # baseline (the seed), validated, never reported as optimal.
    from optsched.online.oasis.offline import seed

    got = seed(inst)
    assert got is not None
    with pytest.raises(NotOptimalError) as info:
        solve(inst, solver_options={"mip_max_nodes": 0})
    stopped = info.value.result
    assert stopped.status is Status.FEASIBLE and stopped.extra["incumbent_source"] == got[0]
    assert stopped.objective == pytest.approx(validate(inst, got[1]).objective)
    assert stopped.objective <= opt + 1e-6
    res = solve(inst, solver_options={"mip_max_nodes": 0}, accept_feasible=True)
    assert res.status is Status.FEASIBLE and not res.optimal
    assert res.solution is not None and validate(inst, res.solution).ok


def test_warm_start_never_trails_the_start() -> None:
    from optsched.errors import InvalidScheduleError
    from optsched.online.oasis.online import OASiS

    inst = generate_instance(12, 3, 3, 12, seed=2028)
    start = OASiS().run(inst).schedule
    # A node limit, not a time limit, so the outcome does not depend on the machine's speed.
    res = solve(inst, accept_feasible=True, warm_start=start, solver_options={"mip_max_nodes": 1})
    assert res.objective >= start.total_utility - OPT_RTOL * max(1.0, start.total_utility)
    assert validate(inst, res.solution).ok
    assert res.message == "warm-started"
    # A start must be feasible.
    broken = start.model_copy(update={"total_utility": start.total_utility + 1})
    with pytest.raises(InvalidScheduleError):
        solve(inst, warm_start=broken)


def test_validator_catches_broken_schedules() -> None:
    inst = generate_instance(5, 1, 1, 6, seed=2)
    res = solve(inst)
    sched = res.solution
    admitted = sched.admitted
    assert admitted, "fixture must admit a job"
    i = admitted[0]
    js = sched.jobs[i]

    def with_job(**changes: object) -> object:
        jobs = list(sched.jobs)
        jobs[i] = js.model_copy(update=changes)
        return sched.model_copy(update={"jobs": tuple(jobs)})

    # Too little work: drop the last worker entry (the reported completion may go stale too).
    kinds = {v.constraint for v in validate(inst, with_job(workers=js.workers[:-1])).violations}
    assert kinds & {"work_requirement", "completion", "utility"}
    # Wrong reported utility.
    assert any(
        v.constraint == "utility"
        for v in validate(inst, with_job(utility=js.utility + 1)).violations
    )
    # Workers before arrival.
    if inst.jobs[i].arrival > 0:
        early = ((0, js.workers[0][1], 1), *js.workers)
        assert any(
            v.constraint == "before_arrival"
            for v in validate(inst, with_job(workers=early)).violations
        )
    # Over capacity: put 100 workers in one slot.
    t, h, _ = js.workers[0]
    big = ((t, h, 100), *(e for e in js.workers if (e[0], e[1]) != (t, h)))
    kinds = {v.constraint for v in validate(inst, with_job(workers=big)).violations}
    assert {"worker_capacity", "worker_cap"} & kinds
    # PSs without workers / more PSs than workers.
    many_ps = tuple((tt, k, n + 50) for tt, k, n in js.ps)
    kinds = {v.constraint for v in validate(inst, with_job(ps=many_ps)).violations}
    assert "ps_count" in kinds
    no_ps = with_job(ps=())
    assert any(v.constraint == "ps_bandwidth" for v in validate(inst, no_ps).violations)
    # A rejected job with deployments.
    rejected = with_job(admitted=False, utility=0.0)
    assert any(v.constraint == "rejected_idle" for v in validate(inst, rejected).violations)


def test_build_schedule_matches_validator() -> None:
    inst = generate_instance(3, 1, 1, 5, seed=4)
    res = solve(inst)
    rebuilt = build_schedule(
        inst, [(js.workers, js.ps) if js.admitted else None for js in res.solution.jobs]
    )
    assert rebuilt.total_utility == pytest.approx(res.solution.total_utility)


def test_cli_offline_json_and_validate(tmp_path, capsys) -> None:
    inst_path = tmp_path / "inst.json"
    sched_path = tmp_path / "sched.json"
    assert (
        main(
            [
                "oasis",
                "generate",
                "--jobs",
                "6",
                "--worker-servers",
                "2",
                "--ps-servers",
                "2",
                "--horizon",
                "8",
                "--seed",
                "3",
                "-o",
                str(inst_path),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["oasis", "offline", str(inst_path), "--json", "-o", str(sched_path)]) == 0
    printed = capsys.readouterr().out
    # With -o the schedule is in the file: one line names it with the solve's figures.
    assert len(printed.strip().splitlines()) == 1
    line = json.loads(printed)
    assert line["output"] == str(sched_path) and "solution" not in line
    assert main(["oasis", "offline", str(inst_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("status", "objective", "bound", "gap", "build_seconds", "solve_seconds"):
        assert key in out and key in line
    assert out["status"] == line["status"] == "optimal"
    assert line["objective"] == pytest.approx(out["objective"], rel=OPT_RTOL)
    assert line["admitted"] == sum(j["admitted"] for j in out["solution"]["jobs"])
    # The schedule written is the one the solve prints without -o, and validate accepts it.
    assert json.loads(sched_path.read_text()) == out["solution"]
    assert main(["validate", str(inst_path), str(sched_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] and report["objective"] == pytest.approx(out["objective"], rel=OPT_RTOL)
    # A tampered schedule is rejected with exit 2.
    bad = out["solution"]
    first = next(j for j in bad["jobs"] if j["admitted"])
    first["utility"] += 1.0
    sched_path.write_text(json.dumps(bad))
    assert main(["validate", str(inst_path), str(sched_path), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert not report["valid"] and report["violations"]


@pytest.mark.solver("highs")
def test_cli_exit_3_keeps_the_message(tmp_path, capsys) -> None:
    # A --mip-gap of 1000% lets HiGHS stop at its first incumbent (a rule on the gap, not on
    # the clock): the proof is missing, so exit 3 with the incumbent, its bound and the hint.
    p = tmp_path / "big.json"
    generate_instance(20, 3, 3, 20, seed=1, scale=0.2).save(p)
    assert main(["oasis", "offline", str(p), "--mip-gap", "10", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "NotOptimalError" and "accept_feasible" in out["message"]
    assert out["status"] == "feasible" and out["termination"] == "gap_limit"
    assert out["solution"] is not None and out["bound"] >= out["objective"]


def test_cli_relax_reports_a_bound(tmp_path, capsys) -> None:
    p = tmp_path / "i.toml"
    generate_instance(4, 1, 1, 5, seed=0).save(p)
    assert main(["oasis", "offline", str(p), "--relax", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relaxed"] is True and out["solution"] is None and out["bound"] is not None
    assert out["objective"] == out["bound"] == out["lp_bound"]


def test_cli_relax_refuses_an_output_file(tmp_path, capsys) -> None:
    """--relax has no schedule to write: -o is refused (exit 2), nothing is written."""
    p = tmp_path / "i.json"
    generate_instance(4, 1, 1, 5, seed=0).save(p)
    out_file = tmp_path / "s.json"
    assert main(["oasis", "offline", str(p), "--relax", "-o", str(out_file), "--json"]) == 2
    assert "--relax" in json.loads(capsys.readouterr().out)["message"]
    assert not out_file.exists()
