"""ElasticFlow's Chronus simulator for ``bench_elasticflow_sim``: its runs, cached, and the README.

ElasticFlow's ``chronus-scheduler`` builds every model with python-mip's ``Model(solver_name=GRB)``
(Gurobi). It is run here with its code unmodified, through ``_elasticflow_chronus_driver.py``,
which binds ``mip.GRB`` to ``mip.CBC`` before its modules are imported: COIN-OR CBC (the build
bundled with python-mip) solves every model, under the time limits its code gives. Its source is
the mirror at the benchmark's commit, exported into ``OPTSCHED_ELASTICFLOW_CHRONUS_CACHE``
(default ``~/.cache/optsched/elasticflow-chronus``), where its gRPC stubs are generated as its
Makefile's ``rpc`` target does; its Python is ElasticFlow's (the same environment, which holds
python-mip). Runs go one at a time under ``nice -n 19``, are kept under a key of the trace's
bytes, the cluster, the check interval, the commit and the driver's bytes, and are stopped
after ``OPTSCHED_ELASTICFLOW_CHRONUS_TIMEOUT`` seconds (default 7200);
``OPTSCHED_ELASTICFLOW_CACHED_ONLY``
starts none. :func:`write_readme` lists every kept run in the cache's ``README.md``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from _peers import cache_dir, cached_result, export_once, keep_result, run_key, timeout_from
from _peers import say as _say

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "_elasticflow_chronus_driver.py"
PROTOS = [
    "common",
    "worker_to_master",
    "master_to_worker",
    "worker_to_trainer",
    "scheduler_to_master",
    "trainer_to_scheduler",
]
#: The columns its trace converter reads, from the published names optsched reads.
EF_COLUMNS = {"submission_time": "submit_time", "num_iteration": "iteration", "deadline": "ddl"}


def cache() -> Path:
    return cache_dir("OPTSCHED_ELASTICFLOW_CHRONUS_CACHE", "elasticflow-chronus")


def source(git_dir: Path, commit: str) -> Path:
    """ElasticFlow's tree at ``commit`` in this cache, with the Chronus gRPC stubs generated."""
    dest = cache() / f"src-{commit[:7]}"
    return export_once(git_dir, commit, "ElasticFlow", dest)


def stubs(python: str, ef: Path) -> None:
    """Its ``make rpc`` in ``chronus-scheduler`` (the committed stubs predate protobuf 4)."""
    grpc_stubs(python, ef / "chronus-scheduler")


def grpc_stubs(python: str, sched: Path) -> None:
    """ElasticFlow's gRPC stubs in the scheduler folder ``sched``, as its Makefile's ``rpc``.

    The committed stubs predate protobuf 4, which refuses them: generated again with this
    Python's ``grpc_tools``, once per interpreter (``.generated`` names it).
    """
    stubs = sched / "runtime" / "rpc_stubs"
    done = stubs / ".generated"
    if done.is_file() and done.read_text() == python:
        return
    stubs.mkdir(parents=True, exist_ok=True)
    for proto in PROTOS:
        subprocess.run(
            [
                python,
                "-m",
                "grpc_tools.protoc",
                "-Iruntime/proto",
                "--python_out=runtime/rpc_stubs",
                "--grpc_python_out=runtime/rpc_stubs",
                f"runtime/proto/{proto}.proto",
            ],
            cwd=sched,
            check=True,
            capture_output=True,
        )
    done.write_text(python)


def ef_columns(trace: Path, inputs: Path) -> Path:
    """``trace`` with ElasticFlow's own column names (its converter reads those alone)."""
    with trace.open(newline="") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    if "submit_time" in fields:
        return trace
    out = inputs / f"{trace.stem}.ef-columns.csv"
    with out.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([EF_COLUMNS.get(c, c) for c in fields])
        for row in rows:
            writer.writerow([row[c] for c in fields])
    return out


def run(python: str, ef: Path, trace: Path, nodes: int, check: int, commit: str) -> dict[str, Any]:
    """One run of ElasticFlow's Chronus simulator, read from the cache when it holds it."""
    where = cache()
    key = run_key(
        *(trace.read_bytes(), str(nodes).encode(), str(check).encode()),
        *(commit.encode(), DRIVER.read_bytes()),
    )
    name = f"{trace.stem}-n{nodes}g8-chronus-{check}s-{key}"
    kept = where / "runs" / f"{name}.json"
    limit = timeout_from("OPTSCHED_ELASTICFLOW_CHRONUS_TIMEOUT", 7200.0)
    result = cached_result(kept, limit)
    if result is not None:
        return result
    if os.environ.get("OPTSCHED_ELASTICFLOW_CACHED_ONLY"):
        return {"error": "not run (OPTSCHED_ELASTICFLOW_CACHED_ONLY, nothing cached)"}
    logs = where / "logs" / name
    shutil.rmtree(logs, ignore_errors=True)
    out = where / "runs" / f"{name}.part.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["nice", "-n", "19", python, str(DRIVER), str(ef), str(trace.resolve())]
    cmd += [str(nodes), str(check), str(logs), str(out)]
    _say(f"ElasticFlow's Chronus on {trace.name}, n{nodes}g8, {check} s checks ...")
    began = time.perf_counter()
    logs.mkdir(parents=True, exist_ok=True)
    try:
        # its log (the scheduler's INFO lines and CBC's output) kept, compressed afterwards
        with (logs / "stderr.txt").open("wb") as err:
            subprocess.run(cmd, check=True, timeout=limit, stdout=err, stderr=subprocess.STDOUT)
        result = json.loads(out.read_text())
    except subprocess.TimeoutExpired:
        result = {"timed_out": True, "timeout_s": limit, "error": f"stopped after {limit:g} s"}
        result["progress"] = _last_progress(logs)
    except (subprocess.CalledProcessError, OSError, ValueError) as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["elapsed_s"] = time.perf_counter() - began
    result["command"] = " ".join(cmd)
    if (logs / "stderr.txt").is_file():
        subprocess.run(["gzip", "-f", str(logs / "stderr.txt")], check=False)
    keep_result(kept, result)
    out.unlink(missing_ok=True)
    write_readme()
    return result


def _last_progress(logs: Path) -> str | None:
    path = logs / "progress.txt"
    if not path.is_file():
        return None
    lines = path.read_text().strip().splitlines()
    return lines[-1] if len(lines) > 1 else None


def as_row_input(theirs: dict[str, Any]) -> dict[str, Any]:
    """Its result in the shape the benchmark's rows read (ElasticFlow's accepted/declined)."""
    if theirs.get("error") is not None or theirs.get("satisfied") is None:
        return {k: v for k, v in theirs.items() if k in ("error", "cpu_seconds")}
    n = int(theirs["jobs"])
    met = int(theirs["satisfied"])
    return {
        "accepted": met,
        "declined": n - met,
        # its own met test: end within the job's expect_time (an accepted job's lease end)
        "finished": {j: [v[0], v[2]] for j, v in theirs["finished"].items()},
        "cpu_seconds": theirs.get("cpu_seconds"),
        "error": None,
    }


def write_readme() -> None:
    """``README.md`` of the cache: what was run, how, the solver, the times and met counts."""
    where = cache()
    lines = [
        "# ElasticFlow's Chronus simulator, its solver swapped to CBC",
        "",
        "ElasticFlow (github.com/pkusys/ElasticFlow, commit 04a0109) ships the Chronus",
        "artifact's simulator (`ElasticFlow/chronus-scheduler`). Its `alg/scheduler/solver.py`",
        "does `from mip import *` and builds every model as `Model(solver_name=GRB)` (Gurobi).",
        "optsched's `benchmarks/_elasticflow_chronus_driver.py` runs it with its code unmodified,",
        "in its own directory, after `import mip; mip.GRB = mip.CBC`: every model is solved by",
        "COIN-OR CBC as bundled with python-mip 1.12.0, under the time limits its code sets",
        "(`max_seconds=5`, `max_seconds_same_incumbent=1` for the lease MILP). The flags are",
        "`run_fig8b.sh`'s / `run_fig10.sh`'s: `--schedule=time-aware-with-lease --ident=chronus",
        "--aggressive=True --mip_objective=adaptive --placement=local_search --profile=True",
        "--check_time_interval=C --disable_turn_off=True --num_node_p_switch=N",
        "--lease_term_interval=240 --simulation=True --gpu_type=A100 --num_gpu_p_node=8`, the",
        "trace converted by its own `utils/convert_ef_trace_to_chronus.py` and",
        "`utils/get_name_list.py`. Python: `~/.cache/optsched/elasticflow-venv`. Runs under",
        "`nice -n 19`, one at a time, on a 2-core machine shared with other work (wall times",
        "are that machine's). `src-04a0109/`: the export (gRPC stubs generated by `make rpc`'s",
        "commands); `logs/<run>/`: its output, `progress.txt` (wall s, simulated s, jobs ended",
        "every 30 s); `runs/<run>.json`: what the driver wrote.",
        "",
        "`satisfied` is its own count (`summary_all_jobs`: end - submit <= expect_time, an",
        "accepted job's expect_time moved to its last lease's end); `met_trace` counts end <=",
        "the trace's deadline.",
        "",
        "| run | jobs | satisfied | met_trace | wall (s) | CPU (s) | error |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = sorted((where / "runs").glob("*.json")) if (where / "runs").is_dir() else []
    for path in runs:
        if path.name.endswith(".part.json"):
            continue
        r = json.loads(path.read_text())
        wall = r.get("wall_seconds", r.get("elapsed_s"))
        cells = [path.stem, r.get("jobs"), r.get("satisfied"), r.get("met_trace")]
        cells += [None if wall is None else f"{wall:.0f}", _fmt(r.get("cpu_seconds"))]
        cells += [r.get("error") or "-"]
        lines.append("| " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
        if r.get("command"):
            lines.append(f"|   command: `{r['command']}` | | | | | | |")
        if r.get("progress"):
            lines.append(f"|   got to (wall s, sim s, ended, jobs): {r['progress']} | | | | | | |")
        if r.get("note"):
            lines.append(f"|   {r['note']} | | | | | | |")
    notes = where / "notes.md"  # what was run by hand beside the keyed runs, if anything
    if notes.is_file():
        lines += ["", notes.read_text().rstrip()]
    where.mkdir(parents=True, exist_ok=True)
    (where / "README.md").write_text("\n".join(lines) + "\n")


def _fmt(x: Any) -> str | None:
    return None if x is None else f"{float(x):.0f}"
