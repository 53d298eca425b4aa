"""Command-line contract on degenerate input: exit codes and a single JSON object on stdout.

Exit 0 success, 2 bad input naming the field/flag/file, 3 stopped short, 130 interrupted, 1 only
for a defect; under ``--json`` stdout holds exactly one JSON object, errors included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.cli import main

HEADER = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
ELASTICFLOW_HEADER = (
    "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
)
GAVEL_ROW = "A3C\tcmd\t--n\t1\t{steps}\t{arrival}\t0\n"


def _json_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    """Run ``optsched ARGS --json``; the exit code and the one JSON object on stdout."""
    code = main([*args, "--json"])
    out, _ = capsys.readouterr()
    # exactly one JSON object: json.loads refuses anything before or after it
    payload = json.loads(out)
    assert isinstance(payload, dict)
    return code, payload


# --- 1. a trace with no job -------------------------------------------------------------


def _empty_trace(tmp_path: Path, form: str) -> Path:
    if form == "normalized":
        path = tmp_path / "empty.csv"
        path.write_text(HEADER)
    elif form == "gavel-all-scale-0":
        path = tmp_path / "zero.trace"
        path.write_text(
            GAVEL_ROW.format(steps=10, arrival=0) + GAVEL_ROW.format(steps=20, arrival=5)
        )
    else:
        path = tmp_path / "elasticflow.csv"
        path.write_text(ELASTICFLOW_HEADER)
    return path


@pytest.mark.parametrize("form", ["normalized", "gavel-all-scale-0", "elasticflow-header"])
@pytest.mark.parametrize(
    "command",
    [
        ["sim", "run", "--policy", "fifo"],
        ["sim", "compare", "--policies", "fifo"],
        ["sim", "sweep", "--policies", "fifo"],
    ],
)
def test_trace_without_jobs_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str, command: list[str]
) -> None:
    trace = _empty_trace(tmp_path, form)
    code, out = _json_run(capsys, *command[:2], str(trace), "--cluster", "v100=4", *command[2:])
    assert code == 2
    assert out["error"] == "InvalidInstanceError"
    assert out["file"] == str(trace)
    assert "no job" in str(out["message"])


# --- 2. --elastic bounds ----------------------------------------------------------------


@pytest.mark.parametrize("factor", ["inf", "nan", "0.5"])
@pytest.mark.parametrize(
    "command",
    [["sim", "run", "--policy", "optimus"], ["sim", "compare", "--policies", "optimus"]],
)
def test_elastic_factor_out_of_bounds_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factor: str, command: list[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "a,0,2,,,10,,1,,u\n")
    code, out = _json_run(
        capsys, *command[:2], str(trace), "--cluster", "v100=4", *command[2:], "--elastic", factor
    )
    assert code == 2
    assert out["field"] == "--elastic"


def test_elastic_factor_at_the_cluster_size_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "a,0,2,,,10,,1,,u\n")
    code, out = _json_run(
        capsys,
        "sim",
        "run",
        str(trace),
        "--cluster",
        "v100=4",
        "--policy",
        "optimus",
        "--elastic",
        "4",
    )
    assert code == 0 and out["valid"] is True


def test_world_elastic_huge_factor_caps_at_the_largest_type() -> None:
    from optsched import sim

    world = sim.generate_instance(4, "v100=8", seed=0)
    # gangs of 8 and 4 GPUs: 1e308 times them overflows to inf before any cap
    assert max(j.num_gpus for j in world.jobs) >= 2
    grown = world.elastic(max_factor=1e308)
    assert [j.max_gpus for j in grown.jobs] == [8] * 4


# --- 3. an OASiS schedule with fewer job entries than the instance -------------------------


@pytest.mark.solver("highs")
def test_validate_short_oasis_schedule_reports_schedule_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from optsched.online.oasis import Schedule, generate_instance
    from optsched.online.oasis.schedule import CONSTRAINTS

    instance = generate_instance(4, 2, 2, 6, seed=0)
    inst_path, sched_path = tmp_path / "i.json", tmp_path / "s.json"
    instance.save(inst_path)
    assert main(["oasis", "offline", str(inst_path), "-o", str(sched_path), "--json"]) == 0
    capsys.readouterr()
    data = json.loads(sched_path.read_text())
    data["jobs"] = data["jobs"][:2]
    sched_path.write_text(json.dumps(data))
    code, out = _json_run(capsys, "validate", str(inst_path), str(sched_path))
    assert code == 2 and out["valid"] is False
    violations = out["violations"]
    assert isinstance(violations, list)
    assert violations[0]["constraint"] == "schedule_shape"
    assert "2 job entries for 4 jobs" in violations[0]["message"]
    # every named constraint, called alone, tolerates the short schedule (no TypeError)
    short = Schedule.from_dict(data)
    for check in CONSTRAINTS.values():
        assert isinstance(check(instance, short), list)


# --- 4. a run store damaged in the middle ----------------------------------------------------


def _flip_middle_page(path: Path) -> None:
    """Invert 16 bytes at the start of the middle page (a B-tree page, never the header)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    page = 65536 if page == 1 else page
    pages = len(data) // page
    assert pages >= 3, "the store must span several pages for the test to mean anything"
    start = max(1, pages // 2) * page
    for i in range(start, start + 16):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _assert_corrupt_store(code: int, out: dict[str, object], store: Path) -> None:
    assert code == 2
    assert out["error"] == "InvalidInstanceError"
    assert out["file"] == str(store)
    assert "not a valid run store" in str(out["message"])


def test_sim_sweep_on_a_corrupt_store_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "a,0,1,,,10,,1,,u\nb,3,2,,,20,,1,,u\n")
    argv = ["sim", "sweep", str(trace), "--cluster", "v100=4", "--policies", "fifo,srtf"]
    argv += ["--seeds", "0,1,2", "--store", str(tmp_path / "st")]
    code, _ = _json_run(capsys, *argv)
    assert code == 0
    store = tmp_path / "st" / "runs.sqlite"
    _flip_middle_page(store)
    code, out = _json_run(capsys, *argv)
    _assert_corrupt_store(code, out, store)


def test_pace_sweep_on_a_corrupt_store_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "t.csv"
    argv = ["pace", "sweep", "resnet50", "--bandwidths", "10", "--workers", "4,8"]
    argv += ["-o", str(table)]
    code, _ = _json_run(capsys, *argv)
    assert code == 0
    store = tmp_path / "t.sqlite"
    _flip_middle_page(store)
    code, out = _json_run(capsys, *argv)
    _assert_corrupt_store(code, out, store)


def test_store_with_a_flipped_page_is_refused_on_open(tmp_path: Path) -> None:
    from optsched.errors import InvalidInstanceError
    from optsched.runs.store import RunStore, run_key

    path = tmp_path / "runs.sqlite"
    store = RunStore(path, kind="demo", config={"n": 1})
    for seed in range(200):
        store.put(run_key(seed=seed), {"value": "x" * 50, "seed": seed})
    _flip_middle_page(path)
    store.close()
    with pytest.raises(InvalidInstanceError, match="not a valid run store") as info:
        RunStore(path, kind="demo", config={"n": 1})
    assert info.value.file == str(path)


# --- 5. pace solve --method lp --json: nothing but the JSON object on stdout -------------------


@pytest.mark.solver("highs")
def test_pace_lp_solve_json_stdout_is_one_object(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    instance = tmp_path / "i.json"
    assert main(["pace", "generate", "--seed", "1", "-o", str(instance)]) == 0
    # a fresh process: HiGHS prints its banner only for the first instance of a process
    code = "import sys; from optsched.cli import main; sys.exit(main(sys.argv[1:]))"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", code, "pace", "solve", str(instance), "--method", "lp", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "HiGHS" not in done.stdout
    payload = json.loads(done.stdout)
    assert payload["status"] == "optimal"


# --- 6. an interrupt during a store's commit ---------------------------------------------------


class _InterruptingConnection:
    """A sqlite3 connection whose next ``COMMIT`` is interrupted once, before or after it runs."""

    def __init__(self, db: object, *, after: bool) -> None:
        self._db = db
        self._after = after
        self.fired = False

    def execute(self, sql: str, *args: object) -> object:
        if sql == "COMMIT" and not self.fired:
            self.fired = True
            if self._after:
                self._db.execute(sql)  # type: ignore[attr-defined]
            raise KeyboardInterrupt
        return self._db.execute(sql, *args)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)


@pytest.mark.parametrize("after", [False, True], ids=["before-commit", "after-commit"])
def test_interrupt_during_commit_propagates_and_keeps_the_store(
    tmp_path: Path, after: bool
) -> None:
    from optsched.runs.store import RunStore, run_key

    path = tmp_path / "runs.sqlite"
    store = RunStore(path, kind="demo", config={"n": 1})
    for seed in range(3):
        store.put(run_key(seed=seed), {"seed": seed})
    real = store._db
    wrapper = _InterruptingConnection(real, after=after)
    store._db = wrapper  # type: ignore[assignment]
    # the interrupt itself propagates (the command line turns it into exit 130), not a
    # "cannot rollback - no transaction is active" error from the cleanup
    with pytest.raises(KeyboardInterrupt):
        store.put(run_key(seed=3), {"seed": 3})
    assert wrapper.fired
    store._db = real
    store.close()
    with RunStore(path, kind="demo", config={"n": 1}) as reopened:
        records = {key: rec for key, rec in reopened.items()}
    for seed in range(3):
        assert records[run_key(seed=seed)] == {"seed": seed}
    # all or nothing: the interrupted record is there whole (committed) or absent (rolled back)
    assert (run_key(seed=3) in records) is after
    if after:
        assert records[run_key(seed=3)] == {"seed": 3}


# joblib warns that the tasks still running were cancelled when the interrupt stops the sweep
@pytest.mark.filterwarnings("ignore:.*tasks .*:UserWarning")
def test_interrupt_during_a_sweep_commit_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from optsched.runs import store as store_module

    real_init = store_module.RunStore.__init__

    def interrupted_init(self: store_module.RunStore, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        self._db = _InterruptingConnection(self._db, after=True)  # type: ignore[assignment]

    monkeypatch.setattr(store_module.RunStore, "__init__", interrupted_init)
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "a,0,1,,,10,,1,,u\n")
    argv = ["sim", "sweep", str(trace), "--cluster", "v100=4", "--policies", "fifo,srtf"]
    argv += ["--store", str(tmp_path / "st"), "--json"]
    assert main(argv) == 130
    capsys.readouterr()
    monkeypatch.undo()
    # the record committed before the interrupt is kept; a rerun completes the sweep
    code, out = _json_run(capsys, *argv[:-1])
    assert code == 0 and out
