"""Cross-check against the Tiresias simulator: the same traces, cluster sizes and schedules.

Tiresias (Gu et al., NSDI 2019; github.com/SymbioticLab/Tiresias, Apache-2.0) ships a
discrete-event simulator (``simulator/run_sim.py``, Python 2.7) with its discretized 2D-LAS
(``--schedule=dlas-gpu``) and the same with its starvation rule (``dlas-gpu-K``, ``K`` the
promotion knob). This benchmark runs it, unmodified, in a child process under Python 2.7 with
``--scheme=count``, as its ``sim_runs.sh`` does, and runs optsched in this process under
``--mechanism tiresias`` (:mod:`optsched.sim.engine.tiresias_run`) on the same jobs. Compared
per row: the mean JCT of each, their difference, how many jobs complete at the same second and
the largest difference of a job's completion, met deadlines where the trace has deadlines, and
the CPU time of each.

Settings:

* ``60_job-n32g4``: the simulator's own ``60_job.csv`` on its ``n32g4.csv`` (32 servers of 4
  GPUs), its README's example; optsched reads the file (``read_trace``, the Tiresias format);
* ``60_job-n2g4``: the same 60 jobs on 2 servers of 4 GPUs (a cluster-spec file in its format
  written into the cache), where they queue and are preempted;
* ``cluster10-16``: ElasticFlow's Microsoft ITP ``cluster10.csv`` (260 jobs, from
  ``../shared/data/elasticflow``) on 2 servers of 8 GPUs, as ``bench_elasticflow_sim``'s
  setting of that name: optsched runs the world it builds from that trace (the shipped
  ElasticFlow A100 profiles); the simulator runs the same jobs converted to its format, a
  job's ``duration`` its work over its profiled rate on its requested gang made whole as the
  mechanism makes it (:func:`~optsched.sim.engine.tiresias_run.whole_seconds`),
  ``job_id`` its index in the world. Met deadlines count a job done by its deadline.

Rows: the schedule under ``--mechanism tiresias`` with its options (``tiresias``); for
``dlas-gpu``, four more optsched rows: three switch one knob of the mechanism,
``jump_division="ceil"`` (``ceil``: the predicted jump read as Python 3 reads it, ElasticFlow's
copy), ``limits=(1800, 3600, 7200)`` (``limits``: optsched's default thresholds, four queues)
and ``queue_order="arrival"`` (``order``: each queue by arrival, as optsched's default), and
one is optsched's default engine (``engine``: ``tiresias-las`` event-driven, its
own thresholds, order by arrival, demotion at the exact crossing).

Finding the simulator: ``OPTSCHED_TIRESIAS_SRC`` (a checkout's root, holding ``simulator/``),
else a bare mirror ``.mirror/SymbioticLab+Tiresias/repo/.git`` in a parent directory, exported
at commit 959f9b0 into the cache. Its Python: ``OPTSCHED_TIRESIAS_PYTHON``, else
``~/.pyenv/versions/2.7.18/bin/python`` or ``python2.7`` on the path; it needs ``numpy``
(``jobs.py`` imports it), installed once with that Python's pip into ``site/`` under the cache
(``numpy==1.16.6``, the last for Python 2.7) unless the interpreter has it. Without either the
benchmark is skipped with the reason. Runs go one at a time under ``nice -n 19`` and are cached
in ``OPTSCHED_TIRESIAS_CACHE`` (default ``~/.cache/optsched/tiresias-sim``) under a key of the
trace's and cluster spec's bytes, the schedule and the commit. Nothing is written into the
working tree.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from _peers import (
    cache_dir,
    cached_result,
    export_once,
    find_mirror,
    keep_result,
    python_works,
    run_key,
    run_niced,
    skipped,
    timeout_from,
)
from _peers import say as _say

HERE = Path(__file__).resolve().parent
SHARED = next(
    (
        p / "shared"
        for p in (HERE.parent.parent, HERE.parent.parent.parent)
        if (p / "shared" / "data" / "elasticflow").is_dir()
    ),
    HERE.parent.parent / "shared",
)
MIRROR = Path(".mirror") / "SymbioticLab+Tiresias" / "repo" / ".git"
COMMIT = "959f9b0"
NUMPY = "numpy==1.16.6"
SPEC_HEADER = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node"
#: (label, trace, cluster spec: "repo:<file>" or (servers, GPUs per server), optsched cluster)
SETTINGS: list[tuple[str, str, Any, str]] = [
    ("60_job-n32g4", "repo:60_job.csv", "repo:n32g4.csv", "v100=128:4"),
    ("60_job-n2g4", "repo:60_job.csv", (2, 4), "v100=8:4"),
    ("cluster10-16", "cluster10.csv", (2, 8), "a100=16:8"),
]
#: (schedule, promotion knob) run on every setting (the knobs on cluster10-16 only)
SCHEDULES: list[tuple[str, float | None]] = [("dlas-gpu", None)]
PROMOTIONS: list[tuple[str, float | None]] = [("dlas-gpu-1", 1.0), ("dlas-gpu-4", 4.0)]
#: optsched's default thresholds (``Tiresias()``), for the ``limits`` row
DEFAULT_LIMITS = (1800.0, 3600.0, 7200.0)
COLUMNS = [
    "setting",
    "schedule",
    "optsched",
    "jobs",
    "Tiresias mean JCT (s)",
    "optsched mean JCT (s)",
    "difference (%)",
    "same completion",
    "largest difference (s)",
    "Tiresias met",
    "optsched met",
    "Tiresias CPU (s)",
    "optsched CPU (s)",
]


def _cache() -> Path:
    return cache_dir("OPTSCHED_TIRESIAS_CACHE", "tiresias-sim")


def _source(cache: Path) -> tuple[Path | None, str]:
    given = os.environ.get("OPTSCHED_TIRESIAS_SRC")
    if given:
        sim = Path(given).expanduser() / "simulator"
        if (sim / "run_sim.py").is_file():
            return sim, "OPTSCHED_TIRESIAS_SRC"
        return None, f"OPTSCHED_TIRESIAS_SRC={given} holds no simulator/run_sim.py"
    mirror = find_mirror(HERE, MIRROR)
    if mirror is None:
        return None, f"no Tiresias source: set OPTSCHED_TIRESIAS_SRC or mirror it at {MIRROR}"
    return export_once(mirror, COMMIT, "simulator", cache / "src"), f"the mirror at {COMMIT}"


def _python(cache: Path) -> tuple[list[str] | None, str]:
    """The command prefix that runs the simulator's Python with numpy (else None and why)."""
    given = os.environ.get("OPTSCHED_TIRESIAS_PYTHON")
    candidates = (
        [given] if given else [str(Path.home() / ".pyenv/versions/2.7.18/bin/python"), "python2.7"]
    )
    base = next((c for c in candidates if shutil.which(c)), None)
    if base is None:
        return None, f"no Python 2.7 ({', '.join(candidates)}): set OPTSCHED_TIRESIAS_PYTHON"
    if python_works(base, "import numpy"):
        return [base], base
    site = cache / "site"
    prefix = ["env", f"PYTHONPATH={site}", base]
    if not _site_works(prefix):
        _say(f"installing {NUMPY} for the Tiresias simulator into {site} (once)")
        try:
            subprocess.run(
                [base, "-m", "pip", "install", "--quiet", "--target", str(site), NUMPY],
                check=True,
                timeout=1800,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"could not install {NUMPY} for {base}: {exc}"
    if not _site_works(prefix):
        return None, f"{base} cannot import numpy from {site}"
    return prefix, f"{base} with {NUMPY} in {site}"


def _site_works(prefix: list[str]) -> bool:
    try:
        done = subprocess.run([*prefix, "-c", "import numpy"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _spec_file(spec: Any, sim: Path, inputs: Path) -> Path:
    if isinstance(spec, str):
        return sim / spec.removeprefix("repo:")
    servers, gpus = spec
    path = inputs / f"n{servers}g{gpus}.csv"
    path.write_text(f"{SPEC_HEADER}\n1,{servers},{gpus},128,256\n")
    return path


def _world(trace: str, sim: Path, cluster: str) -> Any:
    from optsched import sim as osim
    from optsched.sim.comparison import world_from_trace
    from optsched.traces import read_trace

    path = (
        sim / trace.removeprefix("repo:")
        if trace.startswith("repo:")
        else SHARED / ("data/elasticflow/" + trace)
    )
    return world_from_trace(read_trace(path), osim.parse_cluster(cluster))


def _convert(world: Any, path: Path) -> Path:
    """``world``'s jobs in the simulator's trace format (module notes), ``job_id`` the index."""
    from optsched.sim.engine.tiresias_run import whole_seconds

    (gt,) = world.cluster.gpu_types
    order = sorted(range(len(world.jobs)), key=lambda i: (world.jobs[i].arrival, i))
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]
        )
        for k, i in enumerate(order):
            job = world.jobs[i]
            nxt = world.jobs[order[k + 1]].arrival if k + 1 < len(order) else job.arrival
            model = job.model or job.job_type.split(" ")[0]
            seconds = whole_seconds(world.work_seconds(job, gt.name))
            row = [i, job.num_gpus, int(job.arrival), int(job.work), model, seconds]
            out.writerow([*row, int(nxt - job.arrival)])
    return path


def _run_theirs(
    prefix: list[str], sim: Path, trace: Path, spec: Path, schedule: str, cache: Path
) -> dict[str, Any]:
    """The simulator's run (cached): job id -> end time, and its CPU seconds."""
    key = run_key(trace.read_bytes(), spec.read_bytes(), schedule.encode(), COMMIT.encode())
    path = cache / "runs" / f"{key}.json"
    limit = timeout_from("OPTSCHED_TIRESIAS_TIMEOUT")
    kept = cached_result(path, limit)
    if kept is not None:
        return kept
    logs = cache / "runs" / key
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [
        *prefix,
        "run_sim.py",
        f"--cluster_spec={spec}",
        "--print",
        "--scheme=count",
        f"--trace_file={trace}",
        f"--schedule={schedule}",
        f"--log_path={logs}",
    ]
    _say(f"Tiresias simulator: {schedule} on {trace.name}, {spec.name}")
    done = run_niced(cmd, limit, cwd=sim, stdout=logs / "stdout.txt")
    result: dict[str, Any] = {"command": cmd, "cpu_s": done.cpu_seconds, "error": None}
    if done.returncode != 0:
        result["error"] = done.stderr or f"exit {done.returncode}"
        result["timed_out"] = done.timed_out
        result["timeout_s"] = limit
    else:
        with (logs / "job.csv").open() as f:
            result["end"] = {r["job_id"]: int(r["end_time"]) for r in csv.DictReader(f)}
    keep_result(path, result)
    return result


def _run_ours(world: Any, knob: float | None, variant: str) -> dict[str, Any]:
    """optsched on ``world``: the mechanism (``variant`` "tiresias" or "ceil") or its engine."""
    from optsched import sim as osim
    from optsched.sim.engine.tiresias_options import TIRESIAS_LIMITS, TiresiasMechanism

    began = time.process_time()
    if variant == "engine":
        record = osim.simulate(world, "tiresias-las", round_seconds=None)
    else:
        division = "ceil" if variant == "ceil" else "floor"
        limits = DEFAULT_LIMITS if variant == "limits" else TIRESIAS_LIMITS
        order = "arrival" if variant == "order" else "entry"
        how = TiresiasMechanism(
            limits=limits, promote_knob=knob, jump_division=division, queue_order=order
        )
        record = osim.simulate(world, "tiresias-las", mechanism=how)
    cpu = time.process_time() - began
    osim.validate(record.world, record).raise_if_invalid()
    return {"completion": list(record.completion), "cpu_s": cpu}


def _row(
    label: str,
    schedule: str,
    variant: str,
    world: Any,
    theirs: dict[str, Any],
    ours: dict[str, Any],
) -> list[Any]:
    jobs = world.jobs
    ids = [str(i) for i in range(len(jobs))] if label.startswith("cluster10") else None
    end_t = [theirs["end"][ids[i] if ids else j.job_id] for i, j in enumerate(jobs)]
    end_o = ours["completion"]
    jct_t = sum(e - j.arrival for e, j in zip(end_t, jobs, strict=True)) / len(jobs)
    jct_o = sum(e - j.arrival for e, j in zip(end_o, jobs, strict=True)) / len(jobs)
    same = sum(1 for a, b in zip(end_t, end_o, strict=True) if a == b)
    worst = max(abs(a - b) for a, b in zip(end_t, end_o, strict=True))
    deadlines = [j.deadline for j in jobs]
    has = any(d == d for d in deadlines)
    met_t = sum(1 for e, d in zip(end_t, deadlines, strict=True) if e <= d) if has else "-"
    met_o = sum(1 for e, d in zip(end_o, deadlines, strict=True) if e <= d) if has else "-"
    return [
        label,
        schedule,
        variant,
        len(jobs),
        round(jct_t, 2),
        round(jct_o, 2),
        round(100.0 * (jct_o - jct_t) / jct_t, 3),
        f"{same}/{len(jobs)}",
        worst,
        met_t,
        met_o,
        round(theirs["cpu_s"], 3),
        round(ours["cpu_s"], 3),
    ]


def _setting_rows(
    setting: tuple[str, str, Any, str], prefix: list[str], sim: Path, cache: Path
) -> list[list[Any]]:
    label, trace, spec, cluster = setting
    inputs = cache / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    world = _world(trace, sim, cluster)
    theirs_trace = (
        sim / trace.removeprefix("repo:")
        if trace.startswith("repo:")
        else _convert(world, inputs / f"{label}_tiresias.csv")
    )
    spec_path = _spec_file(spec, sim, inputs)
    schedules = SCHEDULES + (PROMOTIONS if label.startswith("cluster10") else [])
    rows = []
    for schedule, knob in schedules:
        theirs = _run_theirs(prefix, sim, theirs_trace, spec_path, schedule, cache)
        if theirs.get("error"):
            rows.append([label, schedule, "not run: " + str(theirs["error"])[-200:]])
            continue
        variants = ["tiresias"] + (["ceil", "limits", "order", "engine"] if knob is None else [])
        for variant in variants:
            rows.append(
                _row(label, schedule, variant, world, theirs, _run_ours(world, knob, variant))
            )
    return rows


def _readme(cache: Path, python: str, source: str) -> None:
    (cache / "README").write_text(
        "The Tiresias simulator's runs for benchmarks/bench_tiresias_sim.py.\n\n"
        f"src/simulator: SymbioticLab/Tiresias at {COMMIT} ({source}), unmodified.\n"
        f"Python: {python}. site/: {NUMPY} installed with its pip (--target).\n"
        "inputs/: cluster-spec files in its format (nXgY.csv) and cluster10.csv converted to\n"
        "its trace format (job_id = the optsched world's index; duration = whole seconds).\n"
        "runs/<key>.json: one run (command, CPU seconds, job id -> end time); runs/<key>/: its\n"
        "logs (job.csv, cluster.csv, stdout). Command, run in src/simulator:\n"
        "  python run_sim.py --cluster_spec=SPEC --print --scheme=count --trace_file=TRACE\n"
        "      --schedule=dlas-gpu[-K] --log_path=runs/<key>\n"
    )


def run(quick: bool = False) -> dict[str, Any]:
    title = "Cross-check: the Tiresias simulator (dlas-gpu) and optsched's --mechanism tiresias"
    description = __doc__.split("\n\n")[0]
    cache = _cache()
    cache.mkdir(parents=True, exist_ok=True)
    sim, source = _source(cache)
    if sim is None:
        return skipped("bench_tiresias_sim", title, description, "setting", source)
    prefix, python = _python(cache)
    if prefix is None:
        return skipped("bench_tiresias_sim", title, description, "setting", python)
    _readme(cache, python, source)
    rows: list[list[Any]] = []
    notes = [f"Tiresias at {COMMIT} ({source}); its Python: {python}."]
    for setting in SETTINGS[:2] if quick else SETTINGS:
        if setting[1] == "cluster10.csv" and not (SHARED / "data/elasticflow").is_dir():
            notes.append(f"{setting[0]}: not run, {SHARED}/data/elasticflow is absent")
            continue
        rows.extend(_setting_rows(setting, prefix, sim, cache))
    mech = [r for r in rows if len(r) == len(COLUMNS) and r[2] == "tiresias"]
    summary = {
        "rows under --mechanism tiresias": len(mech),
        "rows with every job at the same second": sum(
            1 for r in mech if r[7].split("/")[0] == r[7].split("/")[1]
        ),
        "largest mean-JCT difference (%)": max((abs(r[6]) for r in mech), default=0.0),
    }
    return {
        "name": "bench_tiresias_sim",
        "title": title,
        "description": description,
        "columns": COLUMNS,
        "rows": rows,
        "summary": summary,
        "notes": notes,
    }
