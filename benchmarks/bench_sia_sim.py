"""Cross-check against Sia's own simulator: one workload and cluster, Sia and its baselines.

Sia (SOSP 2023; github.com/siasosp23/artifacts, folder ``sia-simulator/``) ships a simulator of
a heterogeneous cluster (``multi_simulator.py``) with Sia's policy and the Gavel and Pollux
baselines. Its runs on ``workloads/scale/rate_10/workload-5.csv`` (80 jobs; 6 x 4 T4, 2 x 8
A100, 3 x 8 RTX 2080 Ti) are read from a folder of cached runs, one sub-folder per policy with
the simulator's ``summary.json`` and per-round log (``--output``), made as that folder's
``README.md`` says (Sia: ``--policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01
--mip_lambda_n=1.1 --interval=60 --project_throughputs --share_max_replicas``; Gavel:
``--policy=gavel --interval=360``; Gavel under its max-min fairness (LAS): the same with
``simulator_config.gavel_default_policy = "max_min_fairness_perf"`` set in the process,
``_sia_gavel_policy.py``, folder ``gavel-max_min_fairness_perf``; Pollux:
``multi_simulator_unaware.py --policy=pollux --interval=60 --policy_p_val=-1``). optsched runs
the same workload file and measurements in
:func:`optsched.goodput.hetero.world.simulate_hetero` with
:class:`~optsched.goodput.hetero.gavel.SiaGavel` (360 s; ``policy="max_min_fairness_perf"``,
its shares from ECOS as in Sia's run, for the LAS row) and
:class:`~optsched.goodput.hetero.sia.SiaHetero` (60 s; its round solved by HiGHS, and by CBC
through cvxpy as Sia's policy solves it, ``solver="cbc"``, a row left out without cylp),
runs Sia's heterogeneity-unaware Pollux
(:class:`~optsched.goodput.hetero.pollux_unaware.PolluxUnaware`, seeds 0, 1 and 2 and their
mean; 60 s; ~4 CPU minutes each) and replays the
Sia and Pollux runs' logged decisions (:mod:`optsched.goodput.hetero.replay`), and switches one
thing on the unaware Pollux: Sia's logged decisions until its ImageNet job is the only one left
(28,860 s), optsched's search (seed 0) from there (``_HandOver``), each run checked
by :func:`optsched.goodput.hetero.validate.validate`. The same hand-over inside Sia's own
simulator, its search seeded (``_sia_pollux_handover.py``, not run here), moves its figures by
under 2 % from its cached run (docs/guide/sia_world.rst). Compared per policy: average JCT, makespan
and GPU-hours and their differences in percent, the jobs whose JCT is equal in both, and
restarts per job.

Sia's figures: JCTs from ``summary.json``; makespan the last completion less the first
submission; GPU-hours the GPUs of every unfinished job's allocation in each log record times
the interval (``utils/print_run_stats.py``'s rule, which optsched's
:meth:`~optsched.goodput.hetero.world.HeteroRun.gpu_hours` follows); restarts the last record's.

Finding them: ``OPTSCHED_SIA_SRC`` (the ``sia-simulator/`` folder, for its traces and workload),
else ``~/.cache/optsched/sia-src/sia-simulator``; ``OPTSCHED_SIA_RUNS`` (the runs), else
``~/.cache/optsched/sia-runs``. Without them the benchmark is skipped with the reason. It starts
no run of Sia's simulator (Sia's policy takes ~25 minutes there, Pollux's ~36).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _peers import say, skipped  # noqa: E402

NAME = "bench_sia_sim"
TITLE = "Heterogeneous goodput world vs Sia's own simulator"
WORKLOAD = Path("workloads") / "scale" / "rate_10" / "workload-5.csv"
#: Row -> (Sia's run folder, optsched policy, interval seconds). ``replay-*`` rows replay the
#: run's logged decisions (:class:`~optsched.goodput.hetero.replay.LoggedDecisions`): the world
#: alone, the policy taken from Sia's run.
POLICIES: dict[str, tuple[str, str, float]] = {
    "gavel": ("gavel", "gavel", 360.0),
    "gavel max-min fairness (LAS)": ("gavel-max_min_fairness_perf", "gavel-mmf", 360.0),
    "sia": ("sia", "sia", 60.0),
    "sia with CBC (Sia's solver)": ("sia", "sia-cbc", 60.0),
    "sia, decisions replayed": ("sia", "replay-sia", 60.0),
    "pollux, decisions replayed": ("pollux", "replay-pollux", 60.0),
    "pollux (heterogeneity-unaware, seed 0)": ("pollux", "pollux-unaware-0", 60.0),
    "pollux (heterogeneity-unaware, seed 1)": ("pollux", "pollux-unaware-1", 60.0),
    "pollux (heterogeneity-unaware, seed 2)": ("pollux", "pollux-unaware-2", 60.0),
}
#: One switch on the unaware Pollux (seed 0): Sia's logged decisions until this time, when the
#: ImageNet job is the only one left in Sia's run, then optsched's search.
HANDOVER = ("pollux (unaware, seed 0), Sia's decisions until ImageNet is alone (28,860 s)",
            ("pollux", "handover-28860", 60.0))  # fmt: skip
POLICIES[HANDOVER[0]] = HANDOVER[1]
#: The row of the seeds' mean: each figure averaged over the seeded unaware Pollux runs.
SEEDS_MEAN = "pollux (heterogeneity-unaware, mean of seeds 0-2)"
#: The issue's bar: every figure within this many percent.
GOAL_PCT = 2.0
COLUMNS = [
    "policy",
    "interval (s)",
    "Sia sim avg JCT (s)",
    "optsched avg JCT (s)",
    "avg JCT diff (%)",
    "Sia sim makespan (h)",
    "optsched makespan (h)",
    "makespan diff (%)",
    "Sia sim GPU-hours",
    "optsched GPU-hours",
    "GPU-hours diff (%)",
    "jobs with equal JCT",
    "Sia sim restarts/job",
    "optsched restarts/job",
    "optsched CPU (s)",
    "status",
]


def _place(variable: str, default: Path) -> Path:
    return Path(os.environ.get(variable, default)).expanduser()


def theirs(run_dir: Path, workload: Path, interval: float) -> dict[str, Any]:
    """Sia's figures of one cached run (module notes)."""
    import csv

    (jcts,) = json.loads((run_dir / "summary.json").read_text())["jcts"].values()
    with workload.open() as f:
        submit = {r["name"]: float(r["time"]) for r in csv.DictReader(f)}
    gpu_s, restarts = 0.0, {}
    (log,) = sorted(run_dir.glob("*.log"))
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        for j in rec["submitted_jobs"]:
            restarts[j["name"]] = j["num_restarts"] or 0
            if j["completion_time"] is None and j["allocation"]:
                gpu_s += len(j["allocation"][1]) * interval
    return {
        "jct": jcts,
        "avg_jct": sum(jcts.values()) / len(jcts),
        "makespan": max(submit[n] + v for n, v in jcts.items()) - min(submit.values()),
        "gpu_hours": gpu_s / 3600,
        "restarts": sum(restarts.values()) / len(submit),
        "complete": len(jcts) == len(submit),
    }


def sia_seeded(runs: Path, reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Sia's own unaware Pollux seeded from the start, against its one unseeded run.

    The runs of ``benchmarks/_sia_pollux_handover.py --at 0`` (Sia's code unmodified, numpy's
    and Python's generators seeded with ``k``; ``runs/pollux-seeded/seed<k>.json``, whose
    figures follow ``summarize.py``'s rules as :func:`theirs` does): per seed, its figures and
    their differences in percent from ``reference`` (:func:`theirs` of the cached run).
    """
    out = []
    for path in sorted((runs / "pollux-seeded").glob("seed*.json")):
        got = json.loads(path.read_text())
        if got.get("handover_at") != 0.0 or got.get("completed") != len(reference["jct"]):
            continue  # a hand-over later than the start, or a run cut short
        figures = {"avg_jct": got["avg_jct_s"], "makespan": got["makespan_h"] * 3600,
                   "gpu_hours": got["gpu_hours"]}  # fmt: skip
        diffs = {k: 100.0 * (v - reference[k]) / reference[k] for k, v in figures.items()}
        out.append({"seed": got["seed"], **figures, "diff": diffs})
    return out


def _seeded_note(seeded: list[dict[str, Any]]) -> str:
    parts = [
        f"seed {r['seed']} {r['avg_jct']:,.1f} s / {r['makespan'] / 3600:.2f} h / "
        f"{r['gpu_hours']:.1f} GPU-h ({r['diff']['avg_jct']:+.1f} / "
        f"{r['diff']['makespan']:+.1f} / {r['diff']['gpu_hours']:+.1f} %)"
        for r in seeded
    ]
    return (
        "Sia's own simulator, its unaware Pollux seeded from the start "
        "(benchmarks/_sia_pollux_handover.py --at 0, Sia's code unmodified), against its "
        f"unseeded run (avg JCT / makespan / GPU-hours): {'; '.join(parts)}. The reference "
        "itself moves this much with the seed, so no single run of it is a 2 % target; the "
        "decisions-replayed and hand-over rows compare like with like."
    )


def _cbc() -> bool:
    from optsched.goodput.sia_cbc import cbc_available

    return cbc_available()


class _HandOver:
    """Sia's logged decisions before ``until``, then :class:`PolluxUnaware`'s (module notes).

    At each logged round the search's previous allocation is set to the logged one in virtual
    nodes (each physical node's GPUs filling its virtual nodes in order), as if it had made it.
    """

    def __init__(self, decisions: Any, until: float, seed: int) -> None:
        from optsched.goodput.hetero.pollux_unaware import PolluxUnaware

        self.inner = PolluxUnaware(seed=seed)
        self.decisions, self.until, self.name = decisions, until, "pollux-unaware-handover"
        self.batcher = self.inner.batcher

    def allocate(self, jobs: Any, cluster: Any, previous: Any) -> Any:
        from optsched.goodput.hetero.pollux_unaware import virtual_nodes

        if cluster.time >= self.until:
            return self.inner.allocate(jobs, cluster, previous)
        out = {k: v for k, v in self.decisions.get(cluster.time, {}).items() if k in jobs}
        g, vmap = virtual_nodes(cluster.gpu_types)
        vprev = {}
        for name, (gpu_type, nodes) in out.items():
            vnodes: list[int] = []
            for node in sorted(set(nodes)):
                pool = [v for v, key in enumerate(vmap) if key == (gpu_type, node)]
                count = nodes.count(node)
                vnodes += [pool[i // g] for i in range(count)]
            vprev[name] = tuple(vnodes)
        self.inner._vprev = vprev
        return out


def _policy(policy: str, interval: float, log: Path) -> Any:
    from optsched.goodput.hetero.gavel import SiaGavel
    from optsched.goodput.hetero.pollux_unaware import PolluxUnaware
    from optsched.goodput.hetero.replay import LoggedDecisions, MergedProfileBatcher, read_sia_log
    from optsched.goodput.hetero.sia import SiaHetero

    if policy == "gavel":
        return SiaGavel(interval)
    if policy == "gavel-mmf":
        return SiaGavel(interval, policy="max_min_fairness_perf")
    if policy == "sia":
        return SiaHetero()
    if policy == "sia-cbc":
        return SiaHetero(solver="cbc")
    if policy.startswith("pollux-unaware-"):
        return PolluxUnaware(seed=int(policy.rsplit("-", 1)[1]))
    decisions = read_sia_log(log)
    if policy.startswith("handover-"):
        return _HandOver(decisions, float(policy.rsplit("-", 1)[1]), seed=0)
    if policy == "replay-sia":
        return LoggedDecisions(decisions, SiaHetero().batcher)
    if policy == "replay-pollux":
        return LoggedDecisions(decisions, lambda spec, apps: MergedProfileBatcher(apps))
    return LoggedDecisions(decisions)


def ours(policy: str, src: Path, interval: float, log: Path) -> dict[str, Any]:
    """optsched's run of ``policy`` on the workload, validated (``replay-*``: Sia's decisions)."""
    from optsched.goodput.hetero.validate import validate
    from optsched.goodput.hetero.world import simulate_hetero

    pol = _policy(policy, interval, log)
    start = time.process_time()
    run = simulate_hetero(src / WORKLOAD, pol, src / "traces", interval=interval)
    cpu = time.process_time() - start
    report = validate(run)
    return {
        "jct": {j.name: j.jct for j in run.jobs},
        "avg_jct": run.avg_jct(),
        "makespan": run.makespan(),
        "gpu_hours": run.gpu_hours(),
        "restarts": sum(j.num_restarts for j in run.jobs) / len(run.jobs),
        "cpu": cpu,
        "valid": report.ok,
        "complete": run.complete,
    }


def _pct(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(100 * (a - b) / b, 3)


def _row(name: str, interval: float, t: dict[str, Any], o: dict[str, Any]) -> list[Any]:
    got = o.get
    equal = sum(o["jct"].get(k) == v for k, v in t["jct"].items())
    status = "validator clean" if o["valid"] else "VALIDATOR FAILED"
    if not o["complete"]:
        status += f"; {sum(v is None for v in o['jct'].values())} jobs unfinished"
    avg, mk, gh = got("avg_jct"), got("makespan"), got("gpu_hours")
    if not o["complete"]:
        # a replay ends with Sia's log: compare the jobs both completed, no makespan
        both = [k for k, v in o["jct"].items() if v is not None]
        avg = sum(o["jct"][k] for k in both) / len(both)
        t = {**t, "avg_jct": sum(t["jct"][k] for k in both) / len(both)}
        mk = None
        status += f" (avg JCT over the {len(both)} jobs both completed)"
    return [
        name, interval, round(t["avg_jct"], 2), avg and round(avg, 2), _pct(avg, t["avg_jct"]),
        round(t["makespan"] / 3600, 4), mk and round(mk / 3600, 4), _pct(mk, t["makespan"]),
        round(t["gpu_hours"], 2), gh and round(gh, 2), _pct(gh, t["gpu_hours"]), equal,
        round(t["restarts"], 3), got("restarts") and round(o["restarts"], 3),
        got("cpu") and round(o["cpu"], 1), status,
    ]  # fmt: skip


def _mean_row(t: dict[str, Any], seeds: list[dict[str, Any]]) -> list[Any]:
    """:data:`SEEDS_MEAN`'s row: the seeded runs' figures averaged (no per-job column)."""

    def mean(key: str) -> float:
        return sum(o[key] for o in seeds) / len(seeds)

    o = {k: mean(k) for k in ("avg_jct", "makespan", "gpu_hours", "restarts", "cpu")}
    o |= {"jct": {}, "valid": all(x["valid"] for x in seeds), "complete": True}
    row = _row(SEEDS_MEAN, 60.0, t, o)
    row[11] = None  # equal JCTs: per seed only
    return row


def _summary(rows: list[list[Any]]) -> dict[str, Any]:
    """The rows within :data:`GOAL_PCT` on every figure; how many of them are policies deciding
    in the loop (rows replaying Sia's decisions, wholly or up to a hand-over, left out)."""
    within = [r[0] for r in rows if all(r[i] is not None and abs(r[i]) <= GOAL_PCT
                                        for i in (4, 7, 10))]  # fmt: skip
    in_loop = [n for n in within if "replayed" not in n and "decisions until" not in n]
    return {
        f"policies with every figure within {GOAL_PCT:g} %": "; ".join(within) or "none",
        f"policies in the loop with every figure within {GOAL_PCT:g} %": len(in_loop),
        "largest abs difference (%)": max(
            (abs(r[i]) for r in rows for i in (4, 7, 10) if r[i] is not None), default=None
        ),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Every policy of :data:`POLICIES` with a cached Sia run (``quick``: Gavel only)."""
    src = _place("OPTSCHED_SIA_SRC", Path.home() / ".cache/optsched/sia-src/sia-simulator")
    runs = _place("OPTSCHED_SIA_RUNS", Path.home() / ".cache/optsched/sia-runs")
    head = __doc__.split("\n\n")[0]
    if not (src / "traces").is_dir() or not (src / WORKLOAD).is_file():
        return skipped(NAME, TITLE, head, "policy", f"Sia's simulator folder not at {src}")
    rows, seeds = [], []
    for name, (run_name, policy, interval) in POLICIES.items():
        folder = runs / run_name
        if not (folder / "summary.json").is_file() or (quick and name != "gavel"):
            say(f"{name}: no cached run in {folder}" if not quick else f"{name}: quick, left out")
            continue
        if policy == "sia-cbc" and not _cbc():
            say(f"{name}: skipped, CBC through cvxpy is not installed (pip install cylp)")
            continue
        t = theirs(folder, src / WORKLOAD, interval)
        o = ours(policy, src, interval, folder / "workload-5.log")
        rows.append(_row(name, interval, t, o))
        say(f"{name}: avg JCT Sia {rows[-1][2]} optsched {rows[-1][3]} ({rows[-1][4]} %)")
        if policy.startswith("pollux-unaware-"):
            seeds.append(o)
            if len(seeds) == 3:
                rows.append(_mean_row(t, seeds))
    seeded: list[dict[str, Any]] = []
    if (runs / "pollux" / "summary.json").is_file():
        seeded = sia_seeded(runs, theirs(runs / "pollux", src / WORKLOAD, 60.0))
    spread = {
        f"Sia's own unaware Pollux, seed {r['seed']}, {f} diff from its unseeded run (%)": v
        for r in seeded
        for f, v in r["diff"].items()
    }
    return {
        "name": NAME,
        "title": TITLE,
        "description": head,
        "columns": COLUMNS,
        "rows": rows,
        "summary": {**_summary(rows), **spread},
        "notes": [
            "Differences are optsched's figure minus Sia's simulator's, in percent of Sia's.",
            "GPU-hours: each decision's GPUs times the interval, summed (print_run_stats.py).",
            "Gavel max-min fairness (LAS): Gavel's max_min_fairness_perf in Sia's GavelPolicy; "
            "its shares are not rounded, so ECOS's point (reproduced bit for bit from the same "
            "input, the measurements read as Sia's pandas reads them) breaks identical jobs' "
            "ties (see the guide).",
            "Sia's policy is solved by CBC in Sia's simulator and by HiGHS in optsched; their "
            "tie-breaking differs and the runs diverge after the first tie (see the guide). The "
            "CBC row switches that one knob (SiaHetero(solver='cbc'): the round stated as Sia's "
            "cvxpy problem, solved by CBC at Sia's gap); it is left out without cylp.",
            "Replayed rows: the policy's decisions read from Sia's log, each job with the batcher "
            "of that run (Sia's per-type models; Pollux's one merged model); what differs is the "
            "world.",
            "Pollux (heterogeneity-unaware): Sia's unaware baseline (virtual nodes of the "
            "smallest node size, one merged model per job, the majority type kept) searched by "
            "optsched's seeded NSGA-II (PolluxUnaware(seed=0, 1, 2) and their mean), its merged "
            "model fitted with the artifact's floored network time; Sia's run's search is "
            "unseeded, so its figures are one draw of a spread.",
            f"Sia's simulator: {src}; its runs: {runs} (not re-run here).",
            *([_seeded_note(seeded)] if seeded else []),
        ],
    }


if __name__ == "__main__":
    result = run("--quick" in sys.argv)
    from run import to_markdown

    print(to_markdown(result))
