"""``optsched.runs.sim_sweep``: one row per run, resumable after a kill, on joblib, Dask and Ray."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.sim_sweep import KEY_FIELDS, run_one, sweep, sweep_runs
from optsched.sim import parse_cluster, simulate, validate
from optsched.sim.measure.metrics import run_metrics
from optsched.sim.policies import make_policy

CLUSTER = "v100=8,p100=8"
TRACES = ["synthetic:12", "synthetic:6"]
POLICIES = ["fifo", "srtf"]
GRID = {"seeds": [0, 1], "loads": [1.0, 2.0], "cluster_scales": [1.0, 2.0]}


def _small(store: Path | None = None, **kw: object) -> pd.DataFrame:
    return sweep(TRACES, CLUSTER, POLICIES, store=store, n_jobs=1, **GRID, **kw)  # type: ignore[arg-type]


def test_one_row_per_run_matching_a_direct_simulation(tmp_path: Path) -> None:
    frame = _small(tmp_path / "s")
    assert len(frame) == 2 * 2 * 2 * 2 * 2
    assert list(frame.columns[: len(KEY_FIELDS)]) == list(KEY_FIELDS)
    assert not frame.duplicated(list(KEY_FIELDS)).any()
    assert bool(frame["valid"].all())
    # one row recomputed another way: build the world by hand and simulate it
    from optsched.sim import Throughputs, World, generate_job_table

    row = frame[
        (frame["trace"] == "synthetic:12")
        & (frame["seed"] == 1)
        & (frame["load"] == 2.0)
        & (frame["cluster_scale"] == 2.0)
        & (frame["policy"] == "srtf")
    ].iloc[0]
    table = generate_job_table(12, seed=1)
    table["arrival"] = table["arrival"] / 2.0
    spec = parse_cluster(CLUSTER).scaled(2.0)
    world = World.from_frame(table, spec, Throughputs.uniform(spec.names))
    record = simulate(world, make_policy("srtf"))
    assert validate(world, record).ok
    assert row["jct_mean"] == pytest.approx(run_metrics(record)["jct_mean"], rel=1e-12)
    # the in-memory sweep gives the same table as the stored one
    pd.testing.assert_frame_equal(frame, _small())


def test_rerun_reuses_the_store_and_refuses_another_config(tmp_path: Path) -> None:
    store = tmp_path / "s"
    first = _small(store)
    with sqlite3.connect(store / "runs.sqlite") as db:
        written = dict(db.execute("SELECT key, written FROM runs").fetchall())
    again = _small(store)
    pd.testing.assert_frame_equal(first, again)
    with sqlite3.connect(store / "runs.sqlite") as db:
        assert dict(db.execute("SELECT key, written FROM runs").fetchall()) == written
    with pytest.raises(InvalidInstanceError) as err:
        _small(store, round_seconds=60.0)
    assert err.value.field == "config.round_seconds"


def test_a_corrupt_record_is_reported_by_key(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _small(store)
    with sqlite3.connect(store / "runs.sqlite") as db:
        key = db.execute("SELECT key FROM runs ORDER BY key LIMIT 1").fetchone()[0]
        db.execute(
            "UPDATE runs SET record = replace(record, '\"valid\":true', '\"valid\":false') "
            "WHERE key = ?",
            (key,),
        )
    with pytest.raises(InvalidInstanceError) as err:
        _small(store)
    assert key in err.value.field


def test_bad_lists_name_the_field() -> None:
    for kw, field in (
        ({"seeds": [-1]}, "seeds"),
        ({"seeds": [0, 0]}, "seeds"),
        ({"loads": [0.0]}, "loads"),
        ({"cluster_scales": [float("nan")]}, "cluster_scales"),
        ({"loads": []}, "loads"),
    ):
        with pytest.raises(InvalidInstanceError) as err:
            sweep_runs(TRACES, POLICIES, **kw)  # type: ignore[arg-type]
        assert err.value.field == field
    with pytest.raises(InvalidInstanceError) as err:
        sweep_runs(TRACES, ["fifo", "nope"])
    assert err.value.field == "policies"
    with pytest.raises(InvalidInstanceError) as err:
        sweep(TRACES, CLUSTER, POLICIES, backend="spark")
    assert err.value.field == "backend"
    with pytest.raises(InvalidInstanceError) as err:
        run_one(
            {
                "trace": "synthetic:x",
                "cluster_scale": 1.0,
                "seed": 0,
                "load": 1.0,
                "policy": "fifo",
            },
            {"cluster": CLUSTER, "round_seconds": None, "restore_s": 0.0},
        )
    assert err.value.field == "traces"


def test_a_file_trace_with_seeds_permutes_its_gaps(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "a,0,1,,,100,,1,,u\nb,10,2,,,50,,1,,u\nc,50,1,,,10,,2,,v\nd,51,1,,,30,,1,,v\n",
        encoding="utf-8",
    )
    frame = sweep([str(trace)], "v100=2", ["fifo"], seeds=[0, 3], n_jobs=1)
    assert len(frame) == 2 and bool(frame["valid"].all())
    assert frame["finished"].tolist() == [4, 4]


# -- killed and resumed -----------------------------------------------------------------------

_KILLER = """
import os, signal, sys
from optsched.runs.store import RunStore
from optsched.runs.sim_sweep import sweep

after, before = int(sys.argv[2]), sys.argv[3] == "before"
put = RunStore.put
count = [0]

def dying_put(self, key, record):
    count[0] += 1
    if before and count[0] == after:
        os.kill(os.getpid(), signal.SIGKILL)  # a result computed, not yet written
    put(self, key, record)
    if not before and count[0] == after:
        os.kill(os.getpid(), signal.SIGKILL)  # right after a commit

RunStore.put = dying_put
sweep(
    {traces!r}, {cluster!r}, {policies!r}, store=sys.argv[1], n_jobs=1,
    seeds={seeds!r}, loads={loads!r}, cluster_scales={scales!r},
)
"""


@pytest.mark.parametrize("when", ["after", "before"])
def test_a_killed_sweep_resumes_to_the_uninterrupted_table(tmp_path: Path, when: str) -> None:
    script = tmp_path / "killer.py"
    script.write_text(
        textwrap.dedent(_KILLER).format(
            traces=TRACES,
            cluster=CLUSTER,
            policies=POLICIES,
            seeds=GRID["seeds"],
            loads=GRID["loads"],
            scales=GRID["cluster_scales"],
        ),
        encoding="utf-8",
    )
    store = tmp_path / "killed"
    proc = subprocess.run(
        [sys.executable, str(script), str(store), "5", when], capture_output=True, timeout=600
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    with sqlite3.connect(store / "runs.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert stored == (5 if when == "after" else 4)
    resumed = _small(store)
    uninterrupted = _small(tmp_path / "whole")
    pd.testing.assert_frame_equal(resumed, uninterrupted)


# -- other backends -------------------------------------------------------------------------


def test_a_small_sweep_on_a_local_dask_cluster() -> None:
    # In the test extra: its absence is a failure, not a skip.
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        frame = sweep(
            TRACES, CLUSTER, POLICIES, backend="dask", client=client, seeds=[0, 1], loads=[1.0]
        )
        assert client.status == "running"
    expected = sweep(TRACES, CLUSTER, POLICIES, n_jobs=1, seeds=[0, 1], loads=[1.0])
    pd.testing.assert_frame_equal(frame, expected)


def test_a_small_sweep_on_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ray  # in the test extra: its absence is a failure, not a skip

    # a throwaway local Ray: no token written to the home directory, no dashboard, one CPU
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    store = tmp_path / "runs.sqlite"
    try:
        # half the runs first, as if interrupted; the rerun does only the missing ones
        sweep(TRACES, CLUSTER, ["fifo"], backend="ray", seeds=[0, 1], store=store)
        frame = sweep(TRACES, CLUSTER, POLICIES, backend="ray", seeds=[0, 1], store=store)
        assert ray.is_initialized()  # a Ray the caller started is left running
    finally:
        ray.shutdown()
    expected = sweep(TRACES, CLUSTER, POLICIES, n_jobs=1, seeds=[0, 1])
    pd.testing.assert_frame_equal(frame, expected)


# -- the command line ------------------------------------------------------------------------


def test_cli_sweep_json_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "sim",
        "sweep",
        *TRACES,
        "--cluster",
        CLUSTER,
        "--policies",
        "fifo,srtf",
        "--seeds",
        "0,1",
        "--loads",
        "1,2",
        "--store",
        str(tmp_path / "s"),
        "-j",
        "1",
        "--json",
    ]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["runs"] == 2 * 2 * 2 * 2
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert main([*args[:-1], "--backend", "spark", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "--backend"
    assert main([*args[:-1], "--round-seconds", "30", "--json"]) == 2
    assert "config.round_seconds" in json.loads(capsys.readouterr().out)["field"]


def test_a_bad_trace_row_is_named_from_a_worker_process(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(
        "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
        "a,0,1,,,10,,1,,u\nb,1,1,,,abc,,1,,u\n",
        encoding="utf-8",
    )
    # two loky processes: the error crosses the process boundary and keeps file, row, column
    with pytest.raises(InvalidInstanceError) as err:
        sweep([str(trace)], "v100=2", ["fifo", "srtf"], n_jobs=2)
    assert (err.value.field, err.value.row, err.value.file) == ("duration", 3, str(trace))
