"""Cross-check against Pollux's own simulator: its workloads, cluster and policies in both.

Pollux (Qiao et al., OSDI 2021; github.com/petuum/adaptdl, branch ``osdi21-artifact``,
Apache-2.0) ships a cluster simulator (``simulator/simulator.py``) with its Pollux policy and
the Tiresias and Optimus+Oracle baselines. This benchmark runs it, unmodified, in a child process
with its own Python, as its README does (``python simulator.py --policy P --output LOG
workloads/workload-6.csv``: 16 nodes of 4 GPUs, 60-s interval, its defaults), one policy at a
time under ``nice -n 19``, and runs :func:`optsched.goodput.cluster.simulate` in this process on
the same workload file and measurements with every policy registered in
:data:`optsched.goodput.policies.POLICIES` (``tiresias`` = ``tiresias``, ``optimus-oracle`` =
``optimus``, ``pollux`` = ``pollux``), each record checked by
:func:`optsched.goodput.validate.validate`. Compared per policy: average JCT, makespan and
GPU-hours of each and their difference in percent, the jobs whose completion time and restart
count are equal in both, and the CPU seconds of each.

The rows (table order): the two deterministic baselines on all 8 workloads of ``workloads/``
(load 1.0) and on workload 6 at the artifact's relative job loads 0.5, 1.5 and 2.0
(``workloads-<load>/``, its Figure 8a), and Pollux's policy on workload 6 at load 1.0 only (the
artifact's run takes ~85 minutes). ``--quick``: workload 6 at load 1.0, every policy, from the
cache only. The summary gives, per policy, at load 1.0 and over the other loads, the largest
|difference| of average JCT, makespan and GPU-hours and the jobs equal in all its rows
(``1280 / 1280`` for eight workloads of 160 jobs).

A third side: the artifact ships the results its authors ran for Figure 8a,
``results-jobload/<policy>-<load>/summary.json`` (every job's JCT per workload, and the
averages). Column ``published avg JCT`` gives its average, ``published JCTs equal`` the jobs
whose JCT the artifact's run here and optsched's each have exactly.

The artifact's figures come from its ``--output`` log: one JSON record per 60-s interval, at the
end of the interval's decision, with every submitted job's allocation (one node index per GPU,
in force until the next record), restarts, submission and completion. Average JCT and makespan
are those of the last record's completions (its average JCT is checked against the one the
simulator prints last); GPU-hours are computed as optsched computes them (the artifact's
``attained_service``): every allocation's GPUs times the time it was held, from its record's
timestamp to the next record's or the job's completion, whichever comes first (restart delays
included), summed over jobs, over 3600.

The README's average JCTs on workload 6 (Pollux 2,446 s, Optimus+Oracle 5,302 s, Tiresias
3,470 s) are the goal: column ``README goal`` says, for the artifact's run and optsched's, whether
it is within 5 % of them. Pollux's policy draws random numbers unseeded: its runs differ.

Finding the artifact: ``OPTSCHED_POLLUX_SRC`` (its ``simulator/`` folder, copied into the cache),
else a bare mirror ``.mirror/petuum+adaptdl/repo`` in a parent directory, ``simulator/``
exported at commit c793c70 into the cache. Its Python: ``OPTSCHED_POLLUX_PYTHON``, else the
virtual environment ``~/.cache/optsched/pollux-venv``, built once when absent with
``OPTSCHED_POLLUX_BASE_PYTHON`` (else ``python3.8`` on the path; numpy 1.19 needs it) from its
``requirements.txt`` plus ``autograd`` (its ``goodput.py`` imports it; the file omits it).
Without either the benchmark is skipped with the reason.

Its runs are cached in ``OPTSCHED_POLLUX_CACHE`` (default ``~/.cache/optsched/pollux``), one
directory a run, ``runs/<workload>-<policy>-<key>/`` (a load variant's name starts with its
folder, ``workloads-1.5-``), where the key digests the workload file's
bytes, the policy, the simulator's options, the commit and the files of the simulator folder
run: ``log.jsonl`` (its ``--output``), ``stdout.txt`` and ``run.json`` (exit code, wall and CPU
seconds, the limit). A run past
``OPTSCHED_POLLUX_TIMEOUT`` seconds (default 3600; Pollux's own policy takes ~85 minutes here, so
its row comes from the cache unless the limit is raised) is stopped, kept as such and tried
again only under a larger limit. ``OPTSCHED_POLLUX_CACHED_ONLY`` (any value), and ``--quick``,
start no run and report the rows with nothing cached as not run. Runs made by hand the same way
seed the cache: ``w<N>-<policy>.log`` and ``.stdout`` in ``OPTSCHED_POLLUX_SEED_RUNS`` (default
``~/.cache/optsched/pollux-runs``), with the exit code and seconds in its ``summary.txt``
(``<policy> rc=0 seconds=S ...``), are copied under their key when the simulator folder they
ran in (``~/.cache/optsched/pollux-src/simulator``) holds the commit's files and the same
workload; their CPU time was not measured (wall seconds only). ``OPTSCHED_POLLUX_WORKLOADS``
(numbers 1-8 of ``workloads/``, or ``N@LOAD`` for a load variant, e.g. ``6@1.5``; every policy
on each; unset: the rows above) and ``OPTSCHED_POLLUX_POLICIES`` (optsched or artifact names),
comma-separated, choose the rows. Nothing is written into the working tree.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _peers import (
    PeerPython,
    cache_base,
    cache_dir,
    cached_result,
    chosen,
    copy_given,
    export_once,
    find_mirror,
    keep_result,
    peer_python,
    run_key,
    run_niced,
    say,
    skipped,
    timeout_from,
    tree_digest,
)

HERE = Path(__file__).resolve().parent
MIRROR = Path(".mirror") / "petuum+adaptdl" / "repo"
COMMIT = "c793c7089bd307462686339d29707925c461f9a9"
FOLDER = "simulator"
#: The simulator's options besides policy, output and workload: none (its defaults, 16 nodes
#: of 4 GPUs, 60-s interval; optsched's ``simulate`` defaults are the same).
OPTIONS: tuple[str, ...] = ()
#: optsched's goodput policy -> the artifact's ``--policy``.
ARTIFACT_NAME = {"tiresias": "tiresias", "optimus-oracle": "optimus", "pollux": "pollux"}
ARTIFACT_POLICIES = ("pollux", "optimus", "tiresias")
#: The artifact's relative job loads -> their workload folders (``workloads/`` is 1.0x).
LOADS = {"1.0": "workloads", "0.5": "workloads-0.5", "1.5": "workloads-1.5", "2.0": "workloads-2.0"}
#: The artifact's deterministic baselines: by default on all 8 workloads and the load variants
#: of workload 6 (a few minutes each); its Pollux policy (~85 min a run) on workload 6 only.
BASELINES = ("tiresias", "optimus")
#: The artifact's own results for its Figure 8a (``results-jobload/<policy>-<load>/``).
PUBLISHED = "results-jobload"
#: The README's "Checking Simulator Fidelity" average JCTs on workload 6, seconds.
README_AVG_JCT = {6: {"pollux": 2446.13125, "optimus": 5301.875, "tiresias": 3469.69375}}
#: The goal: average JCT within this many percent of the README's.
GOAL_PCT = 5.0
#: optsched's Pollux runs on workload 6 at load 1.0 (seed 0 is the registered policy's row):
#: the artifact's run is one unseeded draw, compared with these seeds' mean.
POLLUX_SEEDS = (0, 1, 2, 3)
PEER = PeerPython(
    who="Pollux",
    needs="the Pollux simulator's dependencies",
    variable="OPTSCHED_POLLUX_PYTHON",
    venv="pollux-venv",
    probe="import numpy, pandas, scipy, pymoo, autograd",
)
NAME = "bench_pollux_sim"
TITLE = "Goodput cluster vs Pollux's own simulator"
COLUMNS = [
    "workload",
    "load",
    "policy",
    "artifact policy",
    "jobs",
    "artifact avg JCT (s)",
    "optsched avg JCT (s)",
    "avg JCT diff (%)",
    "artifact makespan (s)",
    "optsched makespan (s)",
    "makespan diff (%)",
    "artifact GPU-hours",
    "optsched GPU-hours",
    "GPU-hours diff (%)",
    "jobs equal",
    "published avg JCT (s)",
    "published JCTs equal (artifact; optsched)",
    "README avg JCT (s)",
    "README goal ±5 % (artifact; optsched)",
    "artifact CPU (s)",
    "artifact wall (s)",
    "optsched CPU (s)",
    "optsched validation CPU (s)",
    "status",
]


def _cache() -> Path:
    return cache_dir("OPTSCHED_POLLUX_CACHE", "pollux")


# ----------------------------------------------------------------------------- the artifact


def _source(cache: Path) -> tuple[Path | None, str]:
    """The artifact's ``simulator/`` folder, in the cache (it writes ``__pycache__`` there)."""
    given = copy_given("OPTSCHED_POLLUX_SRC", FOLDER, "simulator.py", cache)
    if given is not None:
        return given
    git_dir = find_mirror(HERE, MIRROR)
    if git_dir is None:
        return None, "Pollux's source not found (set OPTSCHED_POLLUX_SRC, or fetch the mirror)"
    dest = cache / f"src-{COMMIT[:7]}"
    return export_once(git_dir, COMMIT, FOLDER, dest), f"the mirror at {COMMIT[:7]} in {dest}"


def _python(folder: Path) -> tuple[str | None, str]:
    """The artifact's Python 3.8 environment (``peer_python`` with its requirements)."""
    base = os.environ.get("OPTSCHED_POLLUX_BASE_PYTHON") or shutil.which("python3.8")
    if base is None and not os.environ.get(PEER.variable):
        venv = cache_base() / PEER.venv / "bin" / "python"
        if not venv.exists():
            return None, "no Python 3.8 to build Pollux's environment (OPTSCHED_POLLUX_PYTHON)"
    peer = replace(PEER, base=base or PEER.base)

    def deps() -> list[str]:
        lines = (folder / "requirements.txt").read_text().split()
        return [line for line in lines if line and not line.startswith("#")] + ["autograd"]

    return peer_python(peer, deps)


def _run_dir(folder: Path, workload: Path, policy: str) -> Path:
    """The cache directory of one run: the key digests the workload's bytes, the policy, the
    options, the commit and the simulator folder's files (a copy named by
    ``OPTSCHED_POLLUX_SRC`` that differs from the commit gets other keys)."""
    parts = (workload.read_bytes(), policy.encode(), " ".join(OPTIONS).encode())
    key = run_key(*parts, COMMIT.encode(), tree_digest(folder))
    # a load variant (``workloads-1.5/``) is named by its folder too: the key alone tells it apart
    load = "" if workload.parent.name == "workloads" else f"{workload.parent.name}-"
    return _cache() / "runs" / f"{load}{workload.stem}-{policy}-{key}"


def _seed(folder: Path, workload: Path, policy: str, kept: Path) -> bool:
    """Copy a run made by hand (module notes) under its key; whether one was found."""
    seeds = Path(os.environ.get("OPTSCHED_POLLUX_SEED_RUNS", cache_base() / "pollux-runs"))
    number = workload.stem.removeprefix("workload-")
    log, out = seeds / f"w{number}-{policy}.log", seeds / f"w{number}-{policy}.stdout"
    summary = seeds / "summary.txt"
    ran_in = cache_base() / "pollux-src" / FOLDER
    if workload.parent.name != "workloads" or not all(p.is_file() for p in (log, out, summary)):
        return False
    # the folder it ran in must hold what this benchmark runs: the commit's code, this workload
    for rel in [p.name for p in folder.glob("*.py")] + [f"workloads/{workload.name}"]:
        if (
            not (ran_in / rel).is_file()
            or (ran_in / rel).read_bytes() != (folder / rel).read_bytes()
        ):
            return False
    found = re.findall(rf"^{policy} rc=(\d+) seconds=(\d+)", summary.read_text(), re.M)
    if not found or found[-1][0] != "0":
        return False
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log, kept / "log.jsonl")
    shutil.copyfile(out, kept / "stdout.txt")
    meta = {"returncode": 0, "wall_seconds": float(found[-1][1]), "cpu_seconds": None,
            "seeded_from": str(seeds), "error": None}  # fmt: skip
    keep_result(kept / "run.json", meta)
    return True


def _run_theirs(
    python: str, folder: Path, workload: Path, policy: str, quick: bool
) -> dict[str, Any]:
    """One run of the artifact's simulator, read from the cache when it holds it."""
    kept = _run_dir(folder, workload, policy)
    limit = timeout_from("OPTSCHED_POLLUX_TIMEOUT")
    meta = cached_result(kept / "run.json", limit)
    if meta is None and not (kept / "run.json").is_file() and _seed(folder, workload, policy, kept):
        say(f"Pollux {policy} on {workload.name}: seeded from the runs made by hand")
        meta = cached_result(kept / "run.json", limit)
    if meta is None:
        if quick or os.environ.get("OPTSCHED_POLLUX_CACHED_ONLY"):
            return {"error": "not run (cached only, nothing cached)"}
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir(parents=True)
        say(f"Pollux {policy} on {workload.name} (limit {limit:g} s) ...")
        cmd = [python, "simulator.py", "--policy", policy, *OPTIONS]
        cmd += ["--output", str(kept / "log.jsonl"), str(workload)]
        child = run_niced(cmd, limit, cwd=folder, stdout=kept / "stdout.txt")
        meta = {"returncode": child.returncode, "wall_seconds": child.wall_seconds,
                "cpu_seconds": child.cpu_seconds, "error": None}  # fmt: skip
        if child.timed_out:
            meta.update(timed_out=True, timeout_s=limit, error=f"stopped after {limit:g} s")
        elif child.returncode != 0 or not (kept / "log.jsonl").is_file():
            meta["error"] = f"exit {child.returncode}: {child.stderr[-300:]}"
        keep_result(kept / "run.json", meta)
    if meta.get("error"):
        return dict(meta)
    return {**meta, **read_log(kept / "log.jsonl", kept / "stdout.txt")}


def read_log(log: Path, stdout: Path | None = None) -> dict[str, Any]:
    """The figures of an artifact run from its ``--output`` log (module notes).

    Returns ``jobs`` (name -> (completion or None, restarts)), ``jcts`` (name -> completion
    minus submission, completed jobs), ``avg_jct``, ``makespan``, ``gpu_hours`` and
    ``printed_avg_jct`` (the last ``Average JCT:`` of ``stdout``, if given).
    """
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    last = {j["name"]: j for j in records[-1]["submitted_jobs"]}
    done = {n: j["completion_time"] for n, j in last.items() if j["completion_time"] is not None}
    gpu_seconds = 0.0
    for now, after in itertools.pairwise(records):
        start, end = now["timestamp"], after["timestamp"]
        for job in now["submitted_jobs"]:
            if job["allocation"]:
                stop = min(end, done.get(job["name"], end))
                gpu_seconds += len(job["allocation"]) * max(0.0, stop - start)
    jcts = {n: done[n] - last[n]["submission_time"] for n in done}
    printed = None
    if stdout is not None and stdout.is_file():
        found = re.findall(r"^Average JCT: (\S+)$", stdout.read_text(), re.M)
        printed = float(found[-1]) if found else None
    return {
        "jobs": {n: (j["completion_time"], j["num_restarts"] or 0) for n, j in last.items()},
        "jcts": jcts,
        "avg_jct": sum(jcts.values()) / len(jcts) if jcts else 0.0,
        "makespan": max(done.values(), default=0.0),
        "gpu_hours": gpu_seconds / 3600.0,
        "printed_avg_jct": printed,
    }


# ----------------------------------------------------------------------------- optsched


def _run_ours(workload: Path, folder: Path, name: str, seed: int | None = None) -> dict[str, Any]:
    """optsched's goodput cluster on the same file and measurements, validated; ``seed``
    (Pollux only) seeds its search, else the registered policy's default (seed 0)."""
    from optsched.goodput.artifact import read_job_types
    from optsched.goodput.cluster import simulate
    from optsched.goodput.policies import PolluxPolicy, make_policy
    from optsched.goodput.validate import validate
    from optsched.goodput.workload import read_workload

    traces = read_job_types(folder)
    policy = make_policy(name) if seed is None else PolluxPolicy(seed=seed)
    began = time.process_time()
    run = simulate(read_workload(workload), policy, traces=traces)
    cpu = time.process_time() - began
    began = time.process_time()
    report = validate(run)
    checked = time.process_time() - began
    return {
        "jobs": {j.name: (j.completion_time, j.num_restarts) for j in run.jobs},
        "jcts": {j.name: j.jct for j in run.jobs if j.jct is not None},
        "avg_jct": run.average_jct,
        "makespan": run.makespan,
        "gpu_hours": run.gpu_hours,
        "cpu_seconds": cpu,
        "validation_cpu_seconds": checked,
        "valid": report.ok,
        "violations": [str(v) for v in report.violations[:3]],
    }


# ----------------------------------------------------------------------------- the table


def _diff(ours: float | None, theirs: float | None) -> float | None:
    """optsched's figure minus the artifact's, in percent of the artifact's."""
    if ours is None or theirs is None or theirs == 0:
        return None
    return 100.0 * (ours - theirs) / theirs


def _goal(avg: float | None, target: float | None) -> str:
    if avg is None or target is None:
        return "-"
    off = _diff(avg, target)
    assert off is not None
    return f"{'met' if abs(off) <= GOAL_PCT else 'not met'} ({off:+.1f} %)"


def _published(folder: Path, policy: str | None, load: str, number: int) -> dict[str, Any]:
    """The artifact's own result for a row (:data:`PUBLISHED`): ``avg`` and ``jcts``, or {}."""
    path = folder / PUBLISHED / f"{policy}-{load}" / "summary.json"
    if policy is None or not path.is_file():
        return {}
    data = json.loads(path.read_text())
    key = f"workload-{number}"
    if key not in data.get("jcts", {}):
        return {}
    return {"avg": data["avgs"][key], "jcts": data["jcts"][key]}


def _equal_jcts(got: dict[str, Any], want: dict[str, Any]) -> str:
    """How many of ``want``'s JCTs ``got`` has exactly, as ``"k / n"`` (``-`` when either
    side is missing)."""
    if not got.get("jcts") or not want.get("jcts"):
        return "-"
    same = sum(got["jcts"].get(n) == v for n, v in want["jcts"].items())
    return f"{same} / {len(want['jcts'])}"


def _problems(name: str | None, policy: str | None, theirs: dict[str, Any],
              ours: dict[str, Any]) -> list[str]:  # fmt: skip
    problems = []
    if policy is None:
        problems.append("no artifact counterpart")
    elif theirs.get("error"):
        problems.append(f"artifact: {theirs['error']}")
    if name is None:
        problems.append("optsched: no such goodput policy registered")
    elif ours.get("valid") is False:
        problems.append(f"optsched record invalid: {'; '.join(ours['violations'])}")
    printed = theirs.get("printed_avg_jct")
    if printed is not None and abs(printed - theirs["avg_jct"]) > 1e-6 * max(1.0, printed):
        problems.append(f"artifact log avg JCT {theirs['avg_jct']} != printed {printed}")
    if theirs.get("seeded_from"):
        problems.append("artifact run seeded from a run made by hand (wall only)")
    return problems


def _row(
    case: tuple[int, str],
    name: str | None,
    policy: str | None,
    theirs: dict[str, Any],
    ours: dict[str, Any],
    published: dict[str, Any],
) -> list[Any]:
    """One table row (:data:`COLUMNS`) of workload ``case`` = (number, load); an empty dict
    stands for a side that did not run (or an artifact result it does not publish)."""
    number, load = case
    target = README_AVG_JCT.get(number, {}).get(policy or "") if load == "1.0" else None
    both = [n for n in ours.get("jobs", {}) if n in theirs.get("jobs", {})]
    equal = sum(tuple(ours["jobs"][n]) == tuple(theirs["jobs"][n]) for n in both)
    goal = f"{_goal(theirs.get('avg_jct'), target)}; {_goal(ours.get('avg_jct'), target)}"
    vs_published = f"{_equal_jcts(theirs, published)}; {_equal_jcts(ours, published)}"
    return [
        f"workload-{number}",
        load,
        name or "-",
        policy or "-",
        len(ours.get("jobs") or theirs.get("jobs") or {}),
        theirs.get("avg_jct"),
        ours.get("avg_jct"),
        _diff(ours.get("avg_jct"), theirs.get("avg_jct")),
        theirs.get("makespan"),
        ours.get("makespan"),
        _diff(ours.get("makespan"), theirs.get("makespan")),
        theirs.get("gpu_hours"),
        ours.get("gpu_hours"),
        _diff(ours.get("gpu_hours"), theirs.get("gpu_hours")),
        f"{equal} / {len(both)}" if both else "-",
        published.get("avg"),
        vs_published if published else "-",
        target,
        goal if target is not None else "-",
        theirs.get("cpu_seconds"),
        theirs.get("wall_seconds"),
        ours.get("cpu_seconds"),
        ours.get("validation_cpu_seconds"),
        "; ".join(_problems(name, policy, theirs, ours)) or "ok",
    ]


def _pairs() -> list[tuple[str | None, str | None]]:
    """(optsched policy, artifact policy) for every registered policy, then the artifact's
    policies no registered one maps to; filtered by ``OPTSCHED_POLLUX_POLICIES``."""
    from optsched.goodput.policies import POLICIES

    pairs: list[tuple[str | None, str | None]] = [(n, ARTIFACT_NAME.get(n)) for n in POLICIES]
    covered = {p for _, p in pairs}
    pairs += [(None, p) for p in ARTIFACT_POLICIES if p not in covered]
    only = chosen("OPTSCHED_POLLUX_POLICIES")
    return [(n, p) for n, p in pairs if not only or n in only or p in only]


def _cases(quick: bool) -> list[tuple[int, str, bool]] | str:
    """The workloads of the rows: (number, load, baselines only), in table order; a string
    says what is wrong with ``OPTSCHED_POLLUX_WORKLOADS``.

    Unset: all 8 workloads at load 1.0 and workload 6 at the other loads, the baselines only
    (:data:`BASELINES`) except on workload 6 at load 1.0; ``quick``: workload 6 at load 1.0.
    Set: its entries ``N`` (load 1.0) or ``N@LOAD``, every policy on each.
    """
    listed = chosen("OPTSCHED_POLLUX_WORKLOADS")
    if not listed:
        if quick:
            return [(6, "1.0", False)]
        cases = [(n, "1.0", n != 6) for n in range(1, 9)]
        return cases + [(6, load, True) for load in LOADS if load != "1.0"]
    out = []
    for item in listed:
        number, _, load = item.partition("@")
        load = load or "1.0"
        if not number.isdigit() or load not in LOADS:
            return (f"OPTSCHED_POLLUX_WORKLOADS entry {item!r}: a workload number 1-8, "
                    f"optionally @ a load ({', '.join(LOADS)})")  # fmt: skip
        out.append((int(number), load, False))
    return sorted(out, key=lambda c: (c[1] != "1.0", float(c[1]), c[0]))


def _fraction(cells: list[str]) -> str:
    """The sum of ``"k / n"`` cells, as ``"K / N"`` (``-`` cells left out)."""
    pairs = [tuple(int(x) for x in c.split(" / ")) for c in cells if c != "-"]
    return f"{sum(k for k, _ in pairs)} / {sum(n for _, n in pairs)}" if pairs else "-"


def _group_summary(rows: list[list[Any]]) -> dict[str, Any]:
    """Per policy, at load 1.0 and over the other loads: the largest |difference| of each
    figure and the jobs equal in all of the group's rows."""
    col = COLUMNS.index
    groups: dict[tuple[str, bool], list[list[Any]]] = {}  # (policy, at load 1.0) -> rows
    for r in rows:
        groups.setdefault((r[col("policy")], r[col("load")] == "1.0"), []).append(r)
    out: dict[str, Any] = {}
    for group in groups.values():
        name = group[0][col("policy")]
        numbers = sorted({int(r[0].removeprefix("workload-")) for r in group})
        loads = sorted({r[col("load")] for r in group}, key=float)
        where = f"workload{'s' * (len(numbers) > 1)} {','.join(map(str, numbers))}"
        label = f"{name}, {where}, load {'/'.join(loads)}"
        compared = [r for r in group if r[col("jobs equal")] != "-"]
        for figure in ("avg JCT", "makespan", "GPU-hours"):
            # every row with both sides, the seeds' mean (no jobs to compare) included
            values = [abs(r[col(f"{figure} diff (%)")]) for r in group
                      if r[col(f"{figure} diff (%)")] is not None]  # fmt: skip
            out[f"{label}: largest |{figure} diff| (%)"] = max(values, default=None)
        equal = _fraction([r[col("jobs equal")] for r in group])
        out[f"{label}: jobs equal"] = f"{equal} ({len(compared)} of {len(group)} rows compared)"
        published = [r[col("published JCTs equal (artifact; optsched)")] for r in group]
        sides = [p.split("; ") for p in published if p != "-"]
        out[f"{label}: published JCTs equal (artifact; optsched)"] = (
            f"{_fraction([a for a, _ in sides])}; {_fraction([b for _, b in sides])}"
        )
    return out


def _summary(rows: list[list[Any]]) -> dict[str, Any]:
    col = COLUMNS.index

    def worst(column: str) -> float | None:
        values = [abs(r[col(column)]) for r in rows if r[col(column)] is not None]
        return max(values) if values else None

    readme = [
        abs(100.0 * (r[col("optsched avg JCT (s)")] - r[col("README avg JCT (s)")]))
        / r[col("README avg JCT (s)")]
        for r in rows
        if r[col("optsched avg JCT (s)")] is not None and r[col("README avg JCT (s)")]
    ]
    return {
        "largest |avg JCT diff| optsched vs artifact (%)": worst("avg JCT diff (%)"),
        "largest |makespan diff| optsched vs artifact (%)": worst("makespan diff (%)"),
        "largest |GPU-hours diff| optsched vs artifact (%)": worst("GPU-hours diff (%)"),
        "largest deviation from the README's avg JCT, optsched (%)": max(readme, default=None),
        **_group_summary(rows),
    }


def _rows(
    python: str, folder: Path, cases: list[tuple[int, str, bool]], quick: bool
) -> list[list[Any]]:
    """Both simulators on every case and policy pair (:func:`_cases`, :func:`_pairs`)."""
    col = COLUMNS.index
    rows = []
    for number, load, baselines_only in cases:
        workload = folder / LOADS[load] / f"workload-{number}.csv"
        if not workload.is_file():
            say(f"{workload} not found, left out")
            continue
        for name, policy in _pairs():
            if baselines_only and policy not in BASELINES:
                continue
            theirs = {} if policy is None else _run_theirs(python, folder, workload, policy, quick)
            ours = {} if name is None else _run_ours(workload, folder, name)
            published = _published(folder, policy, load, number)
            row = _row((number, load), name, policy, theirs, ours, published)
            rows.append(row)
            say(f"workload-{number} at {load} {name}/{policy}: avg JCT artifact "
                f"{row[col('artifact avg JCT (s)')]} optsched {row[col('optsched avg JCT (s)')]}, "
                f"jobs equal {row[col('jobs equal')]}, {row[-1]}")  # fmt: skip
            if name == "pollux" and load == "1.0" and not quick and ours:
                rows += _seed_rows((number, load), workload, folder, theirs, ours, published)
    return rows


def _seed_rows(
    case: tuple[int, str],
    workload: Path,
    folder: Path,
    theirs: dict[str, Any],
    seed0: dict[str, Any],
    published: dict[str, Any],
) -> list[list[Any]]:
    """optsched's Pollux under :data:`POLLUX_SEEDS` beyond 0, one row each, then their mean.

    The artifact's Pollux draws unseeded, so its run is one sample of a spread; the mean of
    optsched's seeds is the figure compared with it (the seeds' own rows show the spread).
    """
    runs = [seed0] + [_run_ours(workload, folder, "pollux", seed=k) for k in POLLUX_SEEDS[1:]]
    rows = [
        _row(case, f"pollux (seed {k})", "pollux", theirs, run, published)
        for k, run in zip(POLLUX_SEEDS[1:], runs[1:], strict=True)
    ]
    figures = ("avg_jct", "makespan", "gpu_hours", "cpu_seconds", "validation_cpu_seconds")
    mean: dict[str, Any] = {f: sum(r[f] for r in runs) / len(runs) for f in figures}
    bad = [v for r in runs for v in r["violations"]]
    mean.update(valid=all(r["valid"] for r in runs), violations=bad)
    label = f"pollux (mean of seeds {POLLUX_SEEDS[0]}-{POLLUX_SEEDS[-1]})"
    rows.append(_row(case, label, "pollux", theirs, mean, {}))
    say(f"{label}: avg JCT {mean['avg_jct']:.2f} s against the artifact's {theirs.get('avg_jct')}")
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    cache = _cache()
    folder, src_from = _source(cache)
    if folder is None:
        return skipped(NAME, TITLE, __doc__.split("\n\n")[0], "workload", src_from)
    python, python_from = _python(folder)
    if python is None:
        return skipped(NAME, TITLE, __doc__.split("\n\n")[0], "workload", python_from)
    say(f"Pollux: {src_from}; Python: {python_from}")
    cases = _cases(quick)
    if isinstance(cases, str):
        return skipped(NAME, TITLE, __doc__.split("\n\n")[0], "workload", cases)
    rows = _rows(python, folder, cases, quick)
    return {
        "name": NAME,
        "title": TITLE,
        "description": __doc__.split("\n\n")[0],
        "columns": COLUMNS,
        "rows": rows,
        "summary": _summary(rows),
        "notes": [
            "Differences are optsched's figure minus the artifact's, in percent of the "
            "artifact's; jobs equal: completion time and restart count both equal.",
            "Load: the artifact's relative job load (its workloads-<load>/ folders, Figure 8a "
            "of the paper). Published: the artifact's own results-jobload/<policy>-<load>/"
            "summary.json, the runs its authors made; equal: the same JCT, job by job.",
            "GPU-hours of the artifact: from its log's per-interval allocations, held up to "
            "each job's completion, restart delays included (optsched's GoodputRun.gpu_hours).",
            f"README goal: average JCT within {GOAL_PCT:g} % of the README's workload-6 figures "
            "(Pollux 2,446 s, Optimus+Oracle 5,302 s, Tiresias 3,470 s); Pollux's policy is "
            "unseeded in the artifact, so its runs vary.",
            "CPU seconds: the artifact's child process (user + system), optsched's "
            "simulate() and validate() in this process; one run each on a shared machine.",
            f"Pollux: {src_from}; its Python: {python_from}; its runs under nice -n 19, one "
            f"at a time, cached in {cache}.",
        ],
    }
