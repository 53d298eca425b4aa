"""The heterogeneous goodput world (Sia's simulator), its Gavel and Sia policies, its validator.

Tiny worlds are built from the shipped Pollux slice (cifar10, bert): a "fast" GPU type with the
measured step times and a "slow" one with them doubled. ``tests/data/sia/gavel-rate10-5.json``
holds what Sia's own simulator computed for Gavel on its 80-job workload; that comparison needs
Sia's ``sia-simulator/`` folder (``$OPTSCHED_SIA_SRC``) and skips without it.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from strategies.goodput import shipped_traces
from strategies.sia import SIA_SRC

from optsched.errors import InvalidInstanceError, PolicyError
from optsched.goodput.hetero.apps import GpuType, HeteroApp, hetero_app, load_apps
from optsched.goodput.hetero.gavel import SiaGavel, max_sum_throughput_shares
from optsched.goodput.hetero.job import Stretch
from optsched.goodput.hetero.sia import SiaHetero, _tie_broken, place_fast
from optsched.goodput.hetero.validate import validate
from optsched.goodput.hetero.world import HeteroRun, simulate_hetero
from optsched.goodput.sia_ilp import solve
from optsched.goodput.sia_instance import SiaGpuType, SiaInstance, SiaJob, SiaOption
from optsched.goodput.workload import PolluxJob, PolluxWorkload, read_workload

DATA = Path(__file__).resolve().parent / "data" / "sia"
SIA_DIR = SIA_SRC
needs_sia = pytest.mark.skipif(
    not (SIA_DIR / "traces").is_dir(), reason=f"Sia's simulator folder not found at {SIA_DIR}"
)
TINY = (GpuType("fast", 2, 4), GpuType("slow", 2, 4))


def _slow(t: Any) -> Any:
    scal = dict(t.scalability)
    scal["step_time"] = scal["step_time"] * 2
    scal["sync_time"] = scal["sync_time"] * 2
    return replace(t, step_time=t.step_time * 2, sync_time=t.sync_time * 2, scalability=scal)


@cache
def tiny_apps() -> dict[str, dict[str, HeteroApp]]:
    return {name: {"fast": hetero_app(t, "fast"), "slow": hetero_app(_slow(t), "slow")}
            for name, t in shipped_traces().items()}  # fmt: skip


def workload(*jobs: tuple[str, float, str, int, int]) -> PolluxWorkload:
    return PolluxWorkload(tuple(PolluxJob(*j) for j in jobs))


MIXED = workload(
    ("cifar10-0", 0.0, "cifar10", 4, 2048),
    ("bert-1", 30.0, "bert", 2, 384),
    ("cifar10-2", 100.0, "cifar10", 8, 4096),
    ("cifar10-3", 400.0, "cifar10", 2, 2048),
)


@cache
def gavel_run() -> HeteroRun:
    return simulate_hetero(MIXED, SiaGavel(360), tiny_apps(), gpu_types=TINY, interval=360)


def test_one_job_completes_when_its_epochs_add_up() -> None:
    """One fixed job, one long interval: delay plus each epoch's rounded length, by hand."""
    app = tiny_apps()["cifar10"]["fast"]
    t = app.traces
    run = simulate_hetero(workload(("c", 0.0, "cifar10", 2, 256)), SiaGavel(1e5), tiny_apps(),
                          gpu_types=(GpuType("fast", 1, 4),), interval=1e5)  # fmt: skip
    rows = [i for i, p in enumerate(t.placement) if p == "2"]
    xs = t.local_bsz[rows]
    order = np.argsort(xs)
    accum = math.ceil(128 / xs.max() - 1e-8) - 1
    m = math.ceil(128 / (accum + 1) - 1e-8)
    step = float(np.interp(m, xs[order], t.step_time[rows][order]))
    sync = float(np.interp(m, xs[order], t.sync_time[rows][order]))
    batch = 2 * m * (accum + 1)
    init = float(min(t.validation))
    done, p = 1e5 + 50.0, 0.0  # first decision, then cifar10's 50-s restart delay
    for e in range(100):
        runs = list(t.validation.values())
        lo = max(b for b in t.validation if b <= batch)
        hi = min(b for b in t.validation if b >= batch)
        sqr = np.interp(
            batch, [lo, hi], [t.validation[lo].grad_sqr[e], t.validation[hi].grad_sqr[e]]
        )
        var = np.interp(
            batch, [lo, hi], [t.validation[lo].grad_var[e], t.validation[hi].grad_var[e]]
        )
        g = (var + sqr) / (var / (batch / init) + sqr)
        rate = g / (step + accum * (step - sync)) / 1.8
        target = min(r.progress[e] for r in runs)
        done += round((target - p) / rate)
        p = target
    assert run.jobs[0].completion_time == pytest.approx(done, abs=1e-6)
    assert run.jobs[0].num_restarts == 0
    assert validate(run).ok


def test_gavel_runs_gangs_and_validates() -> None:
    run = gavel_run()
    assert run.complete
    report = validate(run)
    assert report.ok, report.violations[:5]
    assert report.objective == pytest.approx(run.avg_jct())
    assert report.details["gpu_hours"] == pytest.approx(run.gpu_hours())
    sizes = {j.name: j.application for j in run.jobs}
    for _, allocs in run.decisions:
        for name, (_, nodes) in allocs.items():
            assert len(nodes) == next(j.num_replicas for j in MIXED.jobs if j.name == name)
    assert set(sizes) == {j.name for j in MIXED.jobs}


@cache
def sia_run() -> HeteroRun:
    return simulate_hetero(MIXED, SiaHetero(), tiny_apps(), gpu_types=TINY, interval=60)


def test_sia_runs_and_validates() -> None:
    run = sia_run()
    assert run.complete
    report = validate(run)
    assert report.ok, report.violations[:5]
    # adaptive jobs choose their batch: some stretch runs other than the owner's split
    assert not run.fixed_batch


def test_shares_split_identical_jobs_evenly() -> None:
    """Two identical jobs, room for one: the centre splits 1/2-1/2, HiGHS takes a vertex."""
    t = np.array([[2.0, 1.0], [2.0, 1.0]])
    sf, cap = np.array([4.0, 4.0]), np.array([4.0, 4.0])
    centre = max_sum_throughput_shares(t, sf, cap, "clarabel")
    assert centre[:, 0] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert centre[:, 1] == pytest.approx([0.5, 0.5], abs=1e-6)
    vertex = max_sum_throughput_shares(t, sf, cap, "highs")
    assert float((t * vertex).sum()) == pytest.approx(float((t * centre).sum()), rel=1e-6)
    assert sorted(np.round(vertex[:, 0], 6)) in ([0.0, 1.0], [0.5, 0.5])


def test_fast_placement_fills_whole_nodes_first() -> None:
    got = place_fast(4, 3, [("a", 2), ("b", 8), ("c", 1), ("d", 1)])
    assert got["b"] == (0, 0, 0, 0, 1, 1, 1, 1)
    used: dict[int, int] = {}
    for name, want in (("a", 2), ("b", 8), ("c", 1), ("d", 1)):
        assert len(got[name]) == want
        for n in got[name]:
            used[n] = used.get(n, 0) + 1
    assert max(used.values()) <= 4


def test_tie_break_keeps_the_held_option() -> None:
    """Both options power and round to 0.32: the credit keeps the job where it is."""
    inst = SiaInstance(
        gpu_types=(SiaGpuType(name="a", gpus=8, gpus_per_node=8),),
        jobs=(SiaJob(name="j", options=(SiaOption(gpu_type="a", gpus=2, goodput=9.82),
                                        SiaOption(gpu_type="a", gpus=4, goodput=13.064)),
                     previous=0, realloc_factor=0.758),),
    )  # fmt: skip
    broken = _tie_broken(inst, 1e-6)
    assert solve(broken).solution.choices() == [0]
    # the credit is all that separates them
    flipped = _tie_broken(inst.model_copy(update={"jobs": (inst.jobs[0].model_copy(
        update={"previous": 1}),)}), 1e-6)  # fmt: skip
    assert solve(flipped).solution.choices() == [1]


def test_later_tie_break_takes_the_last_equal_option() -> None:
    """A new job: goodput 1 on every one-GPU option; the credit picks the last, as CBC did."""
    types = tuple(SiaGpuType(name=n, gpus=4, gpus_per_node=4) for n in ("a", "b", "c"))
    opts = tuple(SiaOption(gpu_type=n, gpus=1, goodput=1.0) for n in ("a", "b", "c"))
    inst = SiaInstance(gpu_types=types, jobs=(SiaJob(name="j", options=opts),))
    assert solve(_tie_broken(inst, 0.0, 1e-5)).solution.choices() == [2]
    # a real difference (0.01 in a coefficient) is never overturned by the credit
    worse = (*opts[:2], SiaOption(gpu_type="c", gpus=1, goodput=0.97))
    inst = inst.model_copy(update={"jobs": (SiaJob(name="j", options=worse),)})
    assert solve(_tie_broken(inst, 0.0, 1e-5)).solution.choices() == [1]
    with pytest.raises(InvalidInstanceError, match="tie_break"):
        SiaHetero(tie_break="first")


def test_validator_catches_tampering() -> None:
    run = gavel_run()
    j = run.jobs[0]
    s = j.stretches[-1]
    late = replace(j, completion_time=(j.completion_time or 0) + 5)
    bad = replace(run, jobs=(late, *run.jobs[1:]))
    assert "progress" in {v.constraint for v in validate(bad).violations}
    drift = replace(
        j, stretches=(*j.stretches[:-1], replace(s, progress_end=s.progress_end * 1.01))
    )
    assert "progress" in {
        v.constraint for v in validate(replace(run, jobs=(drift, *run.jobs[1:]))).violations
    }
    counts = replace(j, num_restarts=j.num_restarts + 1)
    assert "restarts" in {
        v.constraint for v in validate(replace(run, jobs=(counts, *run.jobs[1:]))).violations
    }
    t, allocs = run.decisions[0]
    crowded = dict(allocs)
    crowded["cifar10-0"] = ("fast", (0, 0, 0, 0, 0))
    bad = replace(run, decisions=((t, crowded), *run.decisions[1:]))
    assert "decisions" in {v.constraint for v in validate(bad).violations}
    wrong = replace(j, stretches=tuple(replace(x, atomic_bsz=x.atomic_bsz + 1) if x.atomic_bsz
                                       else x for x in j.stretches))  # fmt: skip
    assert "fixed_batch" in {
        v.constraint for v in validate(replace(run, jobs=(wrong, *run.jobs[1:]))).violations
    }


class _Breaks:
    name = "breaks"

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def allocate(self, jobs: Any, cluster: Any, previous: Any) -> dict[str, Any]:
        return dict(self.answer)


@pytest.mark.parametrize(
    "answer",
    [{"x": ("fast", (0,))}, {"c": ("gpu9", (0,))}, {"c": ("fast", (5,))},
     {"c": ("fast", (0, 1, 0))}, {"c": ("fast", (0,) * 5)}, {"c": "fast"}],
)  # fmt: skip
def test_a_policy_breaking_the_rules_gets_a_typed_error(answer: dict[str, Any]) -> None:
    one = workload(("c", 0.0, "cifar10", 1, 2048))
    pol = _Breaks(answer)
    with pytest.raises(PolicyError):
        simulate_hetero(one, pol, tiny_apps(), gpu_types=TINY, interval=60)


def test_bad_traces_name_file_row_and_column(tmp_path: Path) -> None:
    with pytest.raises(InvalidInstanceError, match="application"):
        load_apps(tmp_path, ["gpt2"], ["aws"])
    src = shipped_traces()["cifar10"]
    folder = tmp_path / "cifar10"
    src.save(folder)
    text = (folder / "placements.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",fast"
    (folder / "placements-aws.csv").write_text("\n".join(text) + "\n")
    (folder / "scalability-aws.csv").write_text((folder / "scalability.csv").read_text())
    with pytest.raises(InvalidInstanceError) as err:
        load_apps(tmp_path, ["cifar10"], ["aws"])
    assert err.value.row == 4 and "sync_time" in str(err.value)
    assert "placements-aws.csv" in str(err.value)
    with pytest.raises(InvalidInstanceError):
        load_apps(tmp_path, ["cifar10"], ["rtx"])  # no placements-rtx.csv


def test_stretch_is_recorded_per_configuration() -> None:
    run = gavel_run()
    for j in run.jobs:
        assert all(isinstance(s, Stretch) and s.start <= s.end for s in j.stretches)


@needs_sia
def test_gavel_matches_sias_simulator_job_for_job() -> None:
    """Every JCT and the GPU-hours of Sia's own Gavel run on its rate-10 workload 5."""
    want = json.loads((DATA / "gavel-rate10-5.json").read_text())
    wl = read_workload(SIA_DIR / "workloads" / "scale" / "rate_10" / "workload-5.csv")
    run = simulate_hetero(wl, SiaGavel(360), SIA_DIR / "traces", interval=360)
    assert {j.name: j.jct for j in run.jobs} == want["jct"]
    assert {j.name: j.num_restarts for j in run.jobs} == want["num_restarts"]
    assert run.gpu_hours() == pytest.approx(want["gpu_hours"], abs=1e-9)
    assert run.gpu_hours(by_type=True) == pytest.approx(want["gpu_hours_per_type"], abs=1e-9)
    assert validate(run).ok


def test_a_job_completing_at_a_decision_after_it_was_active() -> None:
    """Its last epoch ended < 0.5 s after the decision: a 0-s stretch from it, completion there."""
    from optsched.goodput.hetero.validate import _active

    run = gavel_run()
    j = run.jobs[0]
    t = j.stretches[-1].start
    last = replace(j.stretches[-1], end=t)
    at = replace(j, completion_time=t, stretches=(*j.stretches[:-1], last))
    assert _active(at, t)
    before = replace(j, completion_time=t, stretches=j.stretches[:-1])
    assert not _active(before, t)


def _as_log(run: HeteroRun, path: Path) -> None:
    """Write ``run``'s decisions as Sia's simulator logs them (one JSON record a round)."""
    with path.open("w") as f:
        for t, allocs in run.decisions:
            jobs = [{"name": j.name, "allocation": list(allocs[j.name]) if j.name in allocs
                     else []} for j in run.jobs]  # fmt: skip
            f.write(json.dumps({"timestamp": t, "submitted_jobs": jobs}) + "\n")


def test_replaying_a_runs_decisions_gives_the_same_run(tmp_path: Path) -> None:
    from optsched.goodput.hetero.replay import LoggedDecisions, read_sia_log

    for run, batcher in ((gavel_run(), None), (sia_run(), SiaHetero().batcher)):
        _as_log(run, tmp_path / "log.jsonl")
        again = simulate_hetero(MIXED, LoggedDecisions(read_sia_log(tmp_path / "log.jsonl"),
                                                       batcher),
                                tiny_apps(), gpu_types=TINY, interval=run.interval)  # fmt: skip
        assert again.jobs == run.jobs
        assert again.gpu_hours() == run.gpu_hours()


def test_a_bad_log_names_its_line(tmp_path: Path) -> None:
    from optsched.goodput.hetero.replay import read_sia_log

    log = tmp_path / "log.jsonl"
    log.write_text('{"timestamp": 60, "submitted_jobs": []}\n{"timestamp": 120}\n')
    with pytest.raises(InvalidInstanceError) as err:
        read_sia_log(log)
    assert err.value.row == 2
    # a line nested past the decoder's stack: refused with its line, not a RecursionError
    log.write_text('{"timestamp": 60, "submitted_jobs": []}\n' + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInstanceError) as err:
        read_sia_log(log)
    assert err.value.row == 2
    log.write_text("")
    with pytest.raises(InvalidInstanceError):
        read_sia_log(log)


@pytest.mark.skipif(
    not __import__("optsched.goodput.sia_cbc", fromlist=["x"]).cbc_available(),
    reason="CBC through cvxpy is not installed (pip install cylp)",
)
def test_sia_solver_knob_hands_the_rounds_to_cbc(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SiaHetero(solver="cbc")``: every round goes to CBC with Sia's matrix and gap."""
    from optsched.goodput import sia_ilp

    calls: list[dict[str, Any]] = []
    real = sia_ilp.solve_cbc

    def spy(inst: SiaInstance, **kw: Any) -> Any:
        calls.append(kw)
        return real(inst, **kw)

    monkeypatch.setattr(sia_ilp, "solve_cbc", spy)
    run = simulate_hetero(MIXED, SiaHetero(solver="cbc"), tiny_apps(), gpu_types=TINY, interval=60)
    assert run.complete and validate(run).ok
    assert len(calls) == len(run.decisions)
    # Sia's single-precision coefficients, Sia's gap accepted as CBC's answer
    assert all(kw["accept_feasible"] and kw["mip_gap"] == 1e-4 for kw in calls)
    assert all(a.dtype == np.float32 for kw in calls for a in kw["coefficients_override"])
