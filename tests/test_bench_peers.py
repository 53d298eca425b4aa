"""The shared pieces of the peer-simulator benchmarks (``benchmarks/_peers.py``), and the
reading of Pollux's simulator log (``benchmarks/bench_pollux_sim.py``): no network, no peer."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
pytestmark = pytest.mark.skipif(
    not (BENCH / "_peers.py").exists(), reason="benchmarks/ not in this tree"
)


def _load(stem: str):
    # the benchmarks import their helpers by bare name, as run.py runs them from benchmarks/
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(stem, BENCH / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def peers():
    return _load("_peers")


def test_run_key_names_every_part(peers) -> None:
    key = peers.run_key(b"trace", b"fifo", b"60")
    assert key == peers.run_key(b"trace", b"fifo", b"60")
    assert len(key) == peers.KEY_DIGITS and int(key, 16) >= 0
    # any part changed, or the same bytes split otherwise, is another key
    others = {
        peers.run_key(b"trace!", b"fifo", b"60"),
        peers.run_key(b"trace", b"edf", b"60"),
        peers.run_key(b"trace", b"fifo", b"61"),
        peers.run_key(b"tracef", b"ifo", b"60"),
        peers.run_key(b"trace", b"fifo", b"60", b""),
    }
    assert key not in others and len(others) == 5


def test_run_key_is_the_digest_of_the_nul_joined_parts(peers) -> None:
    import hashlib

    expected = hashlib.sha256(b"a\0bc\0").hexdigest()[:16]
    assert peers.run_key(b"a", b"bc", b"") == expected


def test_chosen_parses_comma_lists(peers, monkeypatch) -> None:
    monkeypatch.setenv("OPTSCHED_TEST_LIST", " fifo, ,max-min ,fifo,")
    assert peers.chosen("OPTSCHED_TEST_LIST") == {"fifo", "max-min"}
    monkeypatch.setenv("OPTSCHED_TEST_LIST", "")
    assert peers.chosen("OPTSCHED_TEST_LIST") == set()
    monkeypatch.delenv("OPTSCHED_TEST_LIST")
    assert peers.chosen("OPTSCHED_TEST_LIST") == set()


def test_cache_dir_and_timeout_from_the_environment(peers, monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPTSCHED_TEST_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert peers.cache_dir("OPTSCHED_TEST_CACHE", "peer") == tmp_path / "xdg" / "optsched" / "peer"
    monkeypatch.setenv("OPTSCHED_TEST_CACHE", str(tmp_path / "mine"))
    assert peers.cache_dir("OPTSCHED_TEST_CACHE", "peer") == tmp_path / "mine"
    monkeypatch.delenv("OPTSCHED_TEST_TIMEOUT", raising=False)
    assert peers.timeout_from("OPTSCHED_TEST_TIMEOUT") == 3600.0
    assert peers.timeout_from("OPTSCHED_TEST_TIMEOUT", 15) == 15.0
    monkeypatch.setenv("OPTSCHED_TEST_TIMEOUT", "7200")
    assert peers.timeout_from("OPTSCHED_TEST_TIMEOUT") == 7200.0


def test_cached_results_keep_successes_and_timeouts_only(peers, tmp_path) -> None:
    ok, failed, stopped = tmp_path / "ok.json", tmp_path / "failed.json", tmp_path / "t.json"
    assert peers.cached_result(ok, 60) is None
    assert peers.keep_result(ok, {"error": None, "met": 3})
    assert peers.cached_result(ok, 1e9) == {"error": None, "met": 3}
    # a failed run is not kept: the next run tries again
    assert not peers.keep_result(failed, {"error": "exit 1"})
    assert not failed.exists()
    # a run stopped at 60 s stands for limits up to 60 s, and is tried again above
    assert peers.keep_result(stopped, {"error": "stopped", "timed_out": True, "timeout_s": 60})
    assert peers.cached_result(stopped, 60)["timed_out"]
    assert peers.cached_result(stopped, 30)["timed_out"]
    assert peers.cached_result(stopped, 61) is None


def test_skipped_result_gives_the_reason(peers, capsys) -> None:
    result = peers.skipped("bench_x", "X", "about x", "trace", "no peer")
    assert result["rows"] == [] and result["columns"] == ["trace"]
    assert result["notes"] == ["skipped: no peer"] and result["name"] == "bench_x"
    assert "skipped: no peer" in capsys.readouterr().err


def test_niced_and_a_child_run(peers, tmp_path) -> None:
    assert peers.niced(["python", "-V"]) == ["nice", "-n", "19", "python", "-V"]
    if shutil.which("nice") is None:
        pytest.skip("no nice on this machine")
    out = tmp_path / "out.txt"
    child = peers.run_niced([sys.executable, "-c", "print('hello')"], 60, stdout=out)
    assert child.returncode == 0 and not child.timed_out
    assert out.read_text() == "hello\n" and child.cpu_seconds >= 0
    failed = peers.run_niced([sys.executable, "-c", "import sys; sys.exit('bad')"], 60)
    assert failed.returncode == 1 and "bad" in failed.stderr


def _mirror(tmp_path: Path) -> tuple[Path, str]:
    """A bare git repository with ``pkg/a.txt`` and ``pkg/sub/b.txt``; its commit."""
    if shutil.which("git") is None:
        pytest.skip("git not found")
    work = tmp_path / "work"
    (work / "pkg" / "sub").mkdir(parents=True)
    (work / "pkg" / "a.txt").write_text("alpha\n")
    (work / "pkg" / "sub" / "b.txt").write_bytes(b"\x00beta")
    (work / "other.txt").write_text("not exported\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "c"], check=True)
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    commit = subprocess.run(
        ["git", f"--git-dir={bare}", "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return bare, commit


def test_export_tree_and_once(peers, tmp_path) -> None:
    bare, commit = _mirror(tmp_path)
    dest = tmp_path / "dest"
    assert peers.export_tree(bare, "HEAD", "pkg", dest) == 2
    assert (dest / "pkg" / "a.txt").read_text() == "alpha\n"
    assert (dest / "pkg" / "sub" / "b.txt").read_bytes() == b"\x00beta"
    assert not (dest / "other.txt").exists()
    assert peers.head_of(bare) == commit[: len(peers.head_of(bare))]
    once = tmp_path / "once"
    folder = peers.export_once(bare, commit, "pkg", once)
    assert folder == once / "pkg" and (once / peers.COMPLETE).read_text().strip() == commit
    # a complete export is reused as it is; an incomplete one is done again
    (folder / "a.txt").write_text("changed\n")
    peers.export_once(bare, commit, "pkg", once)
    assert (folder / "a.txt").read_text() == "changed\n"
    (once / peers.COMPLETE).unlink()
    peers.export_once(bare, commit, "pkg", once)
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_find_mirror_looks_in_the_parents(peers, tmp_path) -> None:
    (tmp_path / ".mirror" / "o+r" / "repo").mkdir(parents=True)
    deep = tmp_path / "a" / "b" / "c.py"
    rel = Path(".mirror") / "o+r" / "repo"
    assert peers.find_mirror(deep, rel) == tmp_path / rel
    assert peers.find_mirror(deep, Path(".mirror") / "x+y" / "repo") is None


def test_pollux_log_figures_by_hand(tmp_path) -> None:
    """Two jobs, 60-s records: GPU-seconds up to each completion, as computed by hand."""
    pollux = _load("bench_pollux_sim")

    def job(name, sub, alloc, done=None, restarts=0):
        return {"name": name, "submission_time": sub, "allocation": alloc,
                "completion_time": done, "num_restarts": restarts}  # fmt: skip

    records = [
        # a: 2 GPUs over [60, 120), then 4 GPUs from 120 until it completes at 150
        {"timestamp": 60, "submitted_jobs": [job("a", 10, [0, 0])]},
        {
            "timestamp": 120,
            "submitted_jobs": [job("a", 10, [0, 0, 1, 1], None, 1), job("b", 100, [])],
        },
        # b waits, then holds 1 GPU over [180, 240) and completes at 200; a's stale allocation
        # after its completion holds nothing
        {
            "timestamp": 180,
            "submitted_jobs": [job("a", 10, [0, 0, 1, 1], 150, 1), job("b", 100, [2])],
        },
        {
            "timestamp": 240,
            "submitted_jobs": [job("a", 10, [0, 0, 1, 1], 150, 1), job("b", 100, [2], 200)],
        },
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "stdout.txt"
    out.write_text("Average JCT: 1\nAverage JCT: 120.0\n")
    got = pollux.read_log(log, out)
    gpu_seconds = 2 * 60 + 4 * 30 + 1 * 20
    assert got["gpu_hours"] == pytest.approx(gpu_seconds / 3600.0, rel=1e-12)
    assert got["avg_jct"] == pytest.approx(((150 - 10) + (200 - 100)) / 2)
    assert got["makespan"] == 200 and got["printed_avg_jct"] == 120.0
    assert got["jobs"] == {"a": (150, 1), "b": (200, 0)}


def test_pollux_pairs_map_every_registered_policy(monkeypatch) -> None:
    pollux = _load("bench_pollux_sim")
    from optsched.goodput.policies import POLICIES

    monkeypatch.delenv("OPTSCHED_POLLUX_POLICIES", raising=False)
    pairs = pollux._pairs()
    assert [n for n, _ in pairs if n is not None] == list(POLICIES)
    # every artifact policy has a row, with or without an optsched counterpart
    assert {p for _, p in pairs} == set(pollux.ARTIFACT_POLICIES)
    assert ("tiresias", "tiresias") in pairs and ("optimus-oracle", "optimus") in pairs
    monkeypatch.setenv("OPTSCHED_POLLUX_POLICIES", "optimus")
    assert pollux._pairs() == [("optimus-oracle", "optimus")]


def test_copy_given_takes_the_folder_or_its_parent(peers, monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPTSCHED_TEST_SRC", raising=False)
    assert peers.copy_given("OPTSCHED_TEST_SRC", "sim", "run.py", tmp_path / "c") is None
    (tmp_path / "repo" / "sim").mkdir(parents=True)
    (tmp_path / "repo" / "sim" / "run.py").write_text("x = 1\n")
    for named in (tmp_path / "repo", tmp_path / "repo" / "sim"):
        monkeypatch.setenv("OPTSCHED_TEST_SRC", str(named))
        copy, why = peers.copy_given("OPTSCHED_TEST_SRC", "sim", "run.py", tmp_path / "c")
        assert copy == tmp_path / "c" / "src-given" / "sim" and "OPTSCHED_TEST_SRC" in why
        assert (copy / "run.py").read_text() == "x = 1\n"
    monkeypatch.setenv("OPTSCHED_TEST_SRC", str(tmp_path / "nothing"))
    copy, why = peers.copy_given("OPTSCHED_TEST_SRC", "sim", "run.py", tmp_path / "c")
    assert copy is None and "holds no sim/run.py" in why


def test_tree_digest_follows_files_not_caches(peers, tmp_path) -> None:
    (tmp_path / "t" / "sub").mkdir(parents=True)
    (tmp_path / "t" / "a.py").write_text("a")
    (tmp_path / "t" / "sub" / "b.csv").write_text("b")
    first = peers.tree_digest(tmp_path / "t")
    (tmp_path / "t" / "__pycache__").mkdir()
    (tmp_path / "t" / "__pycache__" / "a.pyc").write_bytes(b"\0")
    assert peers.tree_digest(tmp_path / "t") == first
    (tmp_path / "t" / "sub" / "b.csv").write_text("B")
    assert peers.tree_digest(tmp_path / "t") != first
    (tmp_path / "t" / "sub" / "b.csv").write_text("b")
    (tmp_path / "t" / "sub" / "b.csv").rename(tmp_path / "t" / "sub" / "c.csv")
    assert peers.tree_digest(tmp_path / "t") != first


def test_tiresias_conversion_reads_back_to_the_same_run(tmp_path) -> None:
    """``bench_tiresias_sim`` writes a world in the Tiresias simulator's trace format; read back
    by optsched (its Tiresias reader) the jobs run to the same seconds under the mechanism."""
    from strategies.sim import job_frame

    from optsched.sim import ClusterSpec, GpuType, World, simulate, validate
    from optsched.sim.comparison import world_from_trace
    from optsched.traces import read_trace

    bench = _load("bench_tiresias_sim")
    cluster = ClusterSpec(gpu_types=(GpuType(name="a100", count=4, gpus_per_server=2),))
    # 1 step/s whatever the gang (the generic table); c's 4000.5 s run 4000 s in the simulator
    rows = [("a", 0.0, 2, 3000.0), ("b", 10.0, 4, 800.0), ("c", 10.0, 1, 4000.5)]
    frame = job_frame(
        [
            {"job_id": j, "arrival": a, "num_gpus": g, "total_steps": w, "duration": w}
            for j, a, g, w in rows
        ]
    )
    world = World.from_frame(frame, cluster)
    path = bench._convert(world, tmp_path / "t.csv")
    back = world_from_trace(read_trace(path), cluster)
    runs = [simulate(w, "tiresias-las", mechanism="tiresias") for w in (world, back)]
    for run in runs:
        validate(run.world, run).raise_if_invalid()
    order = [int(j.job_id) for j in back.jobs]
    assert [runs[0].completion[i] for i in order] == runs[1].completion
    assert runs[0].extra["durations"] == {"a": 3000, "b": 800, "c": 4000}


def test_pollux_cases_default_quick_and_chosen(monkeypatch) -> None:
    pollux = _load("bench_pollux_sim")
    monkeypatch.delenv("OPTSCHED_POLLUX_WORKLOADS", raising=False)
    default = pollux._cases(False)
    # the baselines on all 8 workloads and on workload 6's load variants; every policy on 6
    assert [(n, load) for n, load, _ in default] == [(n, "1.0") for n in range(1, 9)] + [
        (6, "0.5"), (6, "1.5"), (6, "2.0")
    ]  # fmt: skip
    assert [n for n, _, only in default if not only] == [6]
    assert pollux._cases(True) == [(6, "1.0", False)]
    monkeypatch.setenv("OPTSCHED_POLLUX_WORKLOADS", "6@2.0, 2,6")
    assert pollux._cases(True) == [(2, "1.0", False), (6, "1.0", False), (6, "2.0", False)]
    for bad in ("six", "6@3.0"):
        monkeypatch.setenv("OPTSCHED_POLLUX_WORKLOADS", bad)
        assert repr(bad) in pollux._cases(False)


def test_pollux_run_dir_names_the_load_variant(tmp_path, monkeypatch) -> None:
    pollux = _load("bench_pollux_sim")
    monkeypatch.setenv("OPTSCHED_POLLUX_CACHE", str(tmp_path / "cache"))
    for sub in ("workloads", "workloads-1.5"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "workload-6.csv").write_text(f"name,time\n{sub},0\n")
    base = pollux._run_dir(tmp_path, tmp_path / "workloads" / "workload-6.csv", "tiresias")
    high = pollux._run_dir(tmp_path, tmp_path / "workloads-1.5" / "workload-6.csv", "tiresias")
    assert base.name.startswith("workload-6-tiresias-")
    assert high.name.startswith("workloads-1.5-workload-6-tiresias-")


def test_pollux_published_and_group_summary(tmp_path) -> None:
    pollux = _load("bench_pollux_sim")
    kept = tmp_path / "results-jobload" / "tiresias-1.0"
    kept.mkdir(parents=True)
    summary = {"jcts": {"workload-1": {"a": 10, "b": 20}}, "avgs": {"workload-1": 15.0}}
    (kept / "summary.json").write_text(json.dumps(summary))
    published = pollux._published(tmp_path, "tiresias", "1.0", 1)
    assert published == {"avg": 15.0, "jcts": {"a": 10, "b": 20}}
    assert pollux._published(tmp_path, "tiresias", "1.0", 2) == {}
    assert pollux._published(tmp_path, "optimus", "1.0", 1) == {}

    def side(a_done, restarts=0):
        return {
            "jobs": {"a": (a_done, restarts), "b": (25.0, 0)},
            "jcts": {"a": a_done, "b": 20.0},  # both submitted at 0 and 5
            "avg_jct": (a_done + 20.0) / 2,
            "makespan": 25.0,
            "gpu_hours": 1.0,
        }

    rows = [
        pollux._row((1, "1.0"), "tiresias", "tiresias", side(10.0), side(10.0), published),
        # optsched restarts job a once more, completes it 2 s later: one job of two differs
        pollux._row((2, "1.0"), "tiresias", "tiresias", side(10.0), side(12.0, 1), {}),
        pollux._row((3, "1.0"), "tiresias", "tiresias", {"error": "not run"}, side(10.0), {}),
        pollux._row((6, "1.5"), "tiresias", "tiresias", side(10.0), side(10.0), {}),
    ]
    col = pollux.COLUMNS.index
    assert rows[0][col("published JCTs equal (artifact; optsched)")] == "2 / 2; 2 / 2"
    assert rows[1][col("jobs equal")] == "1 / 2"
    assert rows[1][col("avg JCT diff (%)")] == pytest.approx(100 * 1.0 / 15.0)
    got = pollux._group_summary(rows)
    label = "tiresias, workloads 1,2,3, load 1.0"
    assert got[f"{label}: jobs equal"] == "3 / 4 (2 of 3 rows compared)"
    assert got[f"{label}: largest |avg JCT diff| (%)"] == pytest.approx(100 / 15.0)
    assert got[f"{label}: largest |makespan diff| (%)"] == 0.0
    assert got[f"{label}: published JCTs equal (artifact; optsched)"] == "2 / 2; 2 / 2"
    assert got["tiresias, workload 6, load 1.5: jobs equal"] == "2 / 2 (1 of 1 rows compared)"


def test_pollux_seed_rows_mean_is_compared(tmp_path, monkeypatch) -> None:
    """The seeds' rows and their mean: the mean row's figures are the runs' means, and the
    group summary compares it with the artifact although it has no jobs to compare."""
    pollux = _load("bench_pollux_sim")
    ran: list[int | None] = []

    def fake_run(workload, folder, name, seed=None):
        ran.append(seed)
        k = float(seed or 0)
        return {"jobs": {"a": (10.0 + k, 0)}, "jcts": {"a": 10.0 + k}, "avg_jct": 10.0 + k,
                "makespan": 20.0, "gpu_hours": 2.0 + k, "cpu_seconds": 1.0,
                "validation_cpu_seconds": 0.1, "valid": True, "violations": []}  # fmt: skip

    monkeypatch.setattr(pollux, "_run_ours", fake_run)
    theirs = {"jobs": {"a": (10.0, 0)}, "avg_jct": 10.0, "makespan": 20.0, "gpu_hours": 2.0}
    seed0 = fake_run(None, None, "pollux")
    rows = pollux._seed_rows((6, "1.0"), tmp_path, tmp_path, theirs, seed0, {})
    col = pollux.COLUMNS.index
    assert ran == [None, 1, 2, 3]
    assert [r[col("policy")] for r in rows] == [
        "pollux (seed 1)", "pollux (seed 2)", "pollux (seed 3)", "pollux (mean of seeds 0-3)"
    ]  # fmt: skip
    mean = rows[-1]
    assert mean[col("optsched avg JCT (s)")] == pytest.approx(11.5)  # (10 + 11 + 12 + 13) / 4
    assert mean[col("avg JCT diff (%)")] == pytest.approx(15.0)
    assert mean[col("jobs equal")] == "-"
    got = pollux._group_summary(rows)
    label = "pollux (mean of seeds 0-3), workload 6, load 1.0"
    assert got[f"{label}: largest |avg JCT diff| (%)"] == pytest.approx(15.0)
    assert got[f"{label}: largest |GPU-hours diff| (%)"] == pytest.approx(75.0)


def test_sia_summary_counts_in_loop_policies_within_the_goal() -> None:
    """Rows replaying Sia's decisions (wholly or up to a hand-over) are listed but not counted
    as policies agreeing in the loop; a row off by more than 2 % on one figure is neither."""
    sia = _load("bench_sia_sim")
    width = len(sia.COLUMNS)

    def row(name: str, jct: float, makespan: float, gpu_h: float) -> list:
        r: list = [name] + [None] * (width - 1)
        r[4], r[7], r[10] = jct, makespan, gpu_h
        return r

    rows = [
        row("gavel", 0.0, 0.0, 0.0),
        row("sia with CBC (Sia's solver)", 0.085, 0.0, -0.046),
        row("sia, decisions replayed", 0.0, 0.0, 0.0),
        row("pollux (unaware, seed 0), Sia's decisions until ImageNet is alone", -0.6, -1.6, -0.8),
        row("pollux (heterogeneity-unaware, seed 1)", 41.2, 106.6, 30.4),
        row("sia", 2.9, 3.1, 11.1),
    ]
    got = sia._summary(rows)
    assert got["policies in the loop with every figure within 2 %"] == 2
    assert got["largest abs difference (%)"] == 106.6
    assert "sia, decisions replayed" in got["policies with every figure within 2 %"]


def test_sia_seeded_runs_against_the_unseeded_one(tmp_path) -> None:
    """Sia's own seeded runs: hand-overs later than the start and runs cut short are left out;
    the differences are in percent of the unseeded run (makespan read in hours)."""
    sia = _load("bench_sia_sim")
    folder = tmp_path / "pollux-seeded"
    folder.mkdir()

    def write(name: str, at: float, done: int, jct: float) -> None:
        run = {"seed": int(name[-1]), "handover_at": at, "completed": done, "avg_jct_s": jct,
               "makespan_h": 5.0, "gpu_hours": 30.0}  # fmt: skip
        (folder / f"{name}.json").write_text(json.dumps(run))

    write("seed0", 0.0, 2, 110.0)
    write("seed1", 28860.0, 2, 50.0)  # a hand-over: not a run from the start
    write("seed2", 0.0, 1, 50.0)  # cut short
    reference = {"jct": {"a": 1.0, "b": 2.0}, "avg_jct": 100.0, "makespan": 20000.0,
                 "gpu_hours": 40.0}  # fmt: skip
    got = sia.sia_seeded(tmp_path, reference)
    assert [r["seed"] for r in got] == [0]
    assert got[0]["diff"]["avg_jct"] == pytest.approx(10.0)
    assert got[0]["diff"]["makespan"] == pytest.approx(-10.0)  # 18,000 s against 20,000 s
    assert got[0]["diff"]["gpu_hours"] == pytest.approx(-25.0)
    assert "seed 0 110.0 s / 5.00 h / 30.0 GPU-h (+10.0 / -10.0 / -25.0 %)" in sia._seeded_note(got)
