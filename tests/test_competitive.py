"""The competitive-ratio checker, the comparison table, ratio sweeps and their commands."""

from __future__ import annotations

import json
import math

import pytest

from optsched.cli import main
from optsched.online.oasis import solve
from optsched.online.oasis.baselines import FIFO
from optsched.online.oasis.competitive import (
    RATIO_TOL,
    CheckReport,
    OfflineSummary,
    check_competitive,
    compare_algorithms,
    measure,
    ratio,
)
from optsched.online.oasis.engine import OnlineRun
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.online import OASiS
from optsched.online.oasis.schedule import build_schedule
from optsched.report.oasis import (
    comparison_table,
    plot_comparison,
    ratio_sweep,
    sweep_summary,
)


def test_ratio_conventions():
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(0.0, 0.0) == 1.0
    assert ratio(1.0, 0.0) == math.inf
    assert ratio(None, 1.0) is None


def _fake_run(inst, dual=None, proven=None) -> OnlineRun:
    sched = build_schedule(inst, [None] * inst.n_jobs, algorithm="idle")
    return OnlineRun("idle", sched, proven_bound=proven, dual_bound=dual)


def _summary(optimum=None, incumbent=None, bound=None) -> OfflineSummary:
    status = "optimal" if optimum is not None else "feasible"
    return OfflineSummary(status, optimum, incumbent, bound, None, 0.0)


def test_holds_logic_on_synthetic_summaries():
    """The decision table of `measure`, with ALG = 0 (an idle algorithm) on a 2-job instance."""
    inst = generate_instance(2, 1, 1, 4, seed=0)
    # Proven OPT = 0: everything holds and the ratio is 1.
    rep = measure(_fake_run(inst, dual=0.0, proven=2.0), inst, _summary(optimum=0.0))
    assert rep.holds == {"alg_le_opt": True, "opt_le_dual": True, "ratio_within_proven_bound": True}
    assert rep.ratio == 1.0 and rep.valid
    # Proven OPT = 5 against D = 4: the certificate claim fails; ratio inf > bound.
    rep = measure(_fake_run(inst, dual=4.0, proven=2.0), inst, _summary(optimum=5.0))
    assert rep.holds["opt_le_dual"] is False
    assert rep.holds["ratio_within_proven_bound"] is False
    # Unproven: incumbent 3, bound 12, D = 10 -> OPT <= D is undecided, ALG <= OPT holds.
    rep = measure(_fake_run(inst, dual=10.0), inst, _summary(incumbent=3.0, bound=12.0))
    assert rep.holds["opt_le_dual"] is None and rep.holds["alg_le_opt"] is True
    assert rep.upper == 10.0 and rep.ratio is None and rep.ratio_upper == math.inf
    # Unproven with bound <= D: decided True; incumbent > D: decided False.
    rep = measure(_fake_run(inst, dual=6.0), inst, _summary(incumbent=3.0, bound=6.0))
    assert rep.holds["opt_le_dual"] is True
    rep = measure(_fake_run(inst, dual=2.0), inst, _summary(incumbent=3.0, bound=6.0))
    assert rep.holds["opt_le_dual"] is False and rep.upper == 2.0
    # Tolerance: an OPT above D by less than RATIO_TOL still counts as OPT <= D.
    rep = measure(_fake_run(inst, dual=1.0), inst, _summary(optimum=1.0 + RATIO_TOL / 2))
    assert rep.holds["opt_le_dual"] is True


@pytest.mark.solver("highs")
def test_check_competitive_on_a_generated_instance():
    inst = generate_instance(8, 2, 2, 8, seed=1, scale=0.05)
    rep = check_competitive(inst)
    opt = solve(inst).objective
    assert isinstance(rep, CheckReport) and rep.valid
    assert rep.offline.optimum == pytest.approx(opt, rel=1e-6)
    assert rep.ratio == pytest.approx(opt / rep.alg)
    assert rep.holds["alg_le_opt"] and rep.holds["opt_le_dual"]
    assert rep.certified_ratio is not None and rep.certified_ratio >= rep.ratio - RATIO_TOL
    d = rep.to_dict()
    for key in (
        "online",
        "offline",
        "offline_status",
        "ratio",
        "proven_bound",
        "certified_ratio",
        "holds",
        "theorem_applies",
    ):
        assert key in d
    # Generic: any object with name and run() works, e.g. a baseline.
    fifo = check_competitive(inst, FIFO(seed=2))
    assert fifo.proven_bound is None and fifo.certified_ratio is None
    assert fifo.holds["alg_le_opt"] and fifo.holds["ratio_within_proven_bound"] is None


def _stopped_at_the_root(monkeypatch: pytest.MonkeyPatch, options: dict[str, object]) -> None:
    """Make the reference ILP stop on a HiGHS node limit (a work budget, not a clock)."""
    import optsched.online.oasis.offline as offline

    whole = offline.solve

    def stopped(instance, **kwargs):
        if not kwargs.get("relax"):
            kwargs["solver_options"] = {**(kwargs.get("solver_options") or {}), **options}
        return whole(instance, **kwargs)

    monkeypatch.setattr(offline, "solve", stopped)


@pytest.mark.solver("highs")
def test_stopped_check_brackets_the_optimum(monkeypatch):
    inst = generate_instance(20, 3, 3, 20, seed=1, scale=0.2)
    opt = solve(inst).objective
    # One node without presolve: HiGHS has an incumbent and a bound, and no proof.
    _stopped_at_the_root(monkeypatch, {"mip_max_nodes": 1, "presolve": "off"})
    rep = check_competitive(inst)
    off = rep.offline
    assert off.optimum is None and off.status == "feasible"
    assert off.incumbent is not None and off.bound is not None and rep.upper is not None
    assert off.incumbent <= opt + 1e-6 and opt <= off.bound + 1e-6
    assert rep.upper <= off.bound + 1e-9
    assert rep.ratio is None and rep.ratio_upper is not None
    assert rep.ratio_upper >= off.incumbent / max(rep.alg, 1e-12) - 1e-9
    assert rep.holds["alg_le_opt"] is True


@pytest.mark.solver("highs")
def test_check_without_an_incumbent_falls_back_to_the_lp_bound(monkeypatch):
    inst = generate_instance(20, 3, 3, 20, seed=1, scale=0.2)
    opt = solve(inst).objective
    # No node at all: no incumbent, no MIP bound; the LP relaxation still bounds OPT. (The
    # baselines' seed, which a stopped solve otherwise keeps, is withheld here.)
    import optsched.online.oasis.offline as offline

    monkeypatch.setattr(offline, "seed", lambda instance: None)
    _stopped_at_the_root(monkeypatch, {"mip_max_nodes": 0})
    rep = check_competitive(inst)
    off = rep.offline
    assert off.optimum is None and off.incumbent is None
    assert off.lp_bound is not None and off.bound == off.lp_bound
    assert opt <= off.bound + 1e-6
    assert rep.ratio is None and rep.ratio_upper is not None
    assert rep.holds["alg_le_opt"] is True


@pytest.mark.solver("highs")
def test_compare_algorithms_report(tmp_path):
    inst = generate_instance(8, 2, 2, 8, seed=1, scale=0.05)
    messages: list[str] = []
    # No time limit: the optimum is asserted below, so no clock may cut the solve short.
    comp = compare_algorithms(inst, time_limit=None, progress=messages.append)
    names = [r["algorithm"] for r in comp.rows()]
    assert names == ["oasis", "fifo", "drf", "rrh", "dorm"]
    assert messages[0] == "running oasis" and messages[-1] == "solving the offline optimum"
    opt = comp.offline.optimum
    assert opt is not None
    for row in comp.rows():
        assert row["valid"]
        assert row["utility"] <= opt * (1 + RATIO_TOL) + RATIO_TOL
        assert row["ratio"] == pytest.approx(ratio(opt, row["utility"]))
    assert comp.lower <= opt * (1 + RATIO_TOL) + RATIO_TOL
    assert comp.rows()[0]["dual_bound"] >= opt * (1 - RATIO_TOL)
    png = tmp_path / "cmp.png"
    plot_comparison(comp).savefig(png)
    assert png.read_bytes()[:4] == b"\x89PNG"
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(comparison_table(comp))
    text = console.export_text()
    assert "oasis" in text and "dorm" in text
    json.dumps(comp.to_dict(), default=str)


@pytest.mark.solver("highs")
def test_ratio_sweep_resumes(tmp_path, monkeypatch):
    import sqlite3

    import optsched.online.oasis.competitive as comp
    from optsched.errors import InvalidInstanceError

    calls: list[int] = []
    real = comp.check_competitive

    def counting(inst, *args, **kwargs):
        calls.append(1)
        return real(inst, *args, **kwargs)

    monkeypatch.setattr(comp, "check_competitive", counting)
    kw = dict(seed=3, n_jobs=5, worker_servers=2, ps_servers=2, horizon=6, scale=0.05)
    first = ratio_sweep(2, tmp_path, **kw)
    assert len(calls) == 2 and len(first) == 2
    # A rerun redoes only the seeds it lacks.
    again = ratio_sweep(3, tmp_path, **kw)
    assert len(calls) == 3  # seed 5 only
    assert [r["seed"] for r in again] == [3, 4, 5]
    assert again[:2] == first
    assert (tmp_path / "table.md").read_text().startswith("# Empirical competitive ratios")
    assert (tmp_path / "ratio.png").read_bytes()[:4] == b"\x89PNG"
    summary = sweep_summary(again)
    assert summary["instances"] == 3 and summary["all_valid"]
    assert summary["opt_le_dual"] == summary["opt_proven"]
    # Other settings are refused, naming the parameter.
    with pytest.raises(InvalidInstanceError, match=r"config\.horizon: differs"):
        ratio_sweep(1, tmp_path, **{**kw, "horizon": 7})
    with pytest.raises(InvalidInstanceError, match=r"config\.work: differs"):
        ratio_sweep(1, tmp_path, **kw, algorithm=comp_oasis("worker-slots"))
    # A forged record is reported, never trusted or skipped.
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    with db:
        db.execute("UPDATE runs SET record = replace(record, '\"valid\":true', '\"valid\":false')")
    db.close()
    with pytest.raises(InvalidInstanceError, match="checksum"):
        ratio_sweep(3, tmp_path, **kw)


def comp_oasis(work: str) -> OASiS:
    return OASiS(work=work, tighten=True)


# ------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------


@pytest.fixture
def instance_file(tmp_path):
    path = tmp_path / "inst.json"
    generate_instance(10, 3, 3, 10, seed=4, scale=0.05).save(path)
    return path


def test_online_command_json(instance_file, capsys):
    assert main(["oasis", "online", str(instance_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "utility",
        "admitted",
        "alpha",
        "proven_bound",
        "dual_bound",
        "schedule",
        "payoffs",
        "theorem",
    ):
        assert key in out
    run = OASiS(tighten=True).run(generate_instance(10, 3, 3, 10, seed=4, scale=0.05))
    assert out["utility"] == pytest.approx(run.utility)
    assert out["dual_bound"] == pytest.approx(run.dual_bound)
    assert out["proven_bound"] == pytest.approx(2 * out["alpha"])


def test_online_command_options(instance_file, tmp_path, capsys):
    sched = tmp_path / "s.json"
    assert (
        main(
            [
                "oasis",
                "online",
                str(instance_file),
                "--prices",
                "warmup",
                "--warmup",
                "3",
                "--multiplier",
                "0.5",
                "--work",
                "worker-slots",
                "--no-tighten",
                "--with-prices",
                "-o",
                str(sched),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["price_params"]["source"] == "warmup" and "final_prices" in out
    assert json.loads(sched.read_text())["algorithm"] == "oasis"
    assert main(["validate", str(instance_file), str(sched)]) == 0
    prices = tmp_path / "p.json"
    prices.write_text(
        json.dumps(
            {
                "upper_worker": {"gpu": 50},
                "upper_ps": {"cpu": 5},
                "lower_worker": 0.01,
                "lower_ps": 0.01,
            }
        )
    )
    capsys.readouterr()
    assert main(["oasis", "online", str(instance_file), "--prices", str(prices), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["price_params"]["source"] == "given"
    assert main(["oasis", "online", str(instance_file), "--history", str(instance_file)]) == 0
    capsys.readouterr()
    prices.write_text(
        json.dumps(
            {"upper_worker": {"tpu": 5}, "upper_ps": {}, "lower_worker": 0.01, "lower_ps": 0.01}
        )
    )
    assert main(["oasis", "online", str(instance_file), "--prices", str(prices), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "upper_worker.tpu"


def test_online_command_bad_instance(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    data = generate_instance(2, 1, 1, 4, seed=0).to_dict()
    data["jobs"][0]["epochs"] = 0
    bad.write_text(json.dumps(data))
    assert main(["oasis", "online", str(bad), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "jobs[0].epochs"


@pytest.mark.solver("highs")
def test_check_command_json(instance_file, capsys):
    assert main(["oasis", "check", str(instance_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "online",
        "offline",
        "offline_status",
        "ratio",
        "proven_bound",
        "certified_ratio",
        "holds",
    ):
        assert key in out
    assert out["offline_status"] == "optimal"
    assert out["holds"]["alg_le_opt"] and out["holds"]["opt_le_dual"]
    assert out["ratio"] <= out["proven_bound"]
    assert main(["oasis", "check", str(instance_file), "--algorithm", "drf"]) == 0


@pytest.mark.solver("highs")
def test_ratio_command(tmp_path, capsys):
    out_dir = tmp_path / "sweep"
    args = [
        "oasis",
        "ratio",
        "--instances",
        "2",
        "--jobs",
        "4",
        "--horizon",
        "5",
        "--worker-servers",
        "2",
        "--ps-servers",
        "1",
        "--seed",
        "1",
        "-o",
        str(out_dir),
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["instances"] == 2 and len(out["records"]) == 2
    assert (out_dir / "table.md").exists() and (out_dir / "ratio.png").exists()
    assert main(args) == 0  # resumes: nothing to redo
    assert json.loads(capsys.readouterr().out)["records"] == out["records"]
