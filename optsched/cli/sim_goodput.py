"""``optsched sim compare`` on a Pollux workload: the goodput world's cluster and policies.

A trace whose first line is Pollux's workload header (``name,time,application,num_replicas,
batch_size``, :mod:`optsched.goodput.workload`) is run by
:func:`~optsched.goodput.cluster.simulate` under each policy of ``--policies`` (names of
:data:`optsched.goodput.policies.POLICIES`), each record checked by
:func:`~optsched.goodput.validate.validate`; the table gives each policy's average JCT,
makespan and GPU-hours. A name of the simulator's policies (``fifo``, ``srtf``,
``tiresias-las``, ...) runs them on the same jobs at fixed batches
(:class:`~optsched.goodput.policies.sim_adapter.SimPolicyAdapter`); ``all`` names the goodput
world's own policies. The job types' measurements are read from the artifact's
``simulator/`` folder (:func:`~optsched.goodput.artifact.simulator_dir`). ``--cluster NxG``
sets the cluster (default ``16x4``, the artifact's), ``--round-seconds`` the decision interval
(default 60 s); the other world options of ``sim compare`` do not apply and are refused.
``--seeds`` (e.g. ``0-3`` or ``0,5,7``) runs each randomized policy (one taking a ``seed``:
Pollux's genetic search) once per seed, a row each, then a row of their mean: a genetic
search's figures move with its draws, so a comparison with another simulator's run (itself one
draw) reads the mean; the deterministic policies run once.
Exit 1 when a record is rejected by the validator, 3 when a run left jobs unfinished.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import TextTable, emit, err_console, print_json
from optsched.errors import InvalidInstanceError

__all__ = [
    "MAX_SEEDS",
    "POLLUX_HEADER",
    "compare_goodput",
    "compare_if_pollux",
    "is_pollux_workload",
    "parse_seeds",
]

#: The first line of a Pollux workload CSV.
POLLUX_HEADER = "name,time,application,num_replicas,batch_size"
#: The most seeds ``--seeds`` takes (each is a whole run; refused before any runs).
MAX_SEEDS = 100


def parse_seeds(text: str | None) -> tuple[int, ...]:
    """``--seeds``: comma-separated seeds or ranges ``A-B`` (inclusive), e.g. ``0-3,9``.

    Returns the distinct seeds in the order given (empty for ``None``).

    Raises
    ------
    InvalidInstanceError
        Naming ``--seeds``: an entry that is not a non-negative integer or range, an empty
        list, or more than :data:`MAX_SEEDS` seeds (checked before a range is expanded).
    """
    if text is None:
        return ()
    seeds: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        low, dash, high = item.partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise InvalidInstanceError(
                "--seeds", f"entry {item!r} is not a seed or a range A-B of non-negative integers"
            )
        a, b = int(low), int(high) if dash else int(low)
        if b < a:
            raise InvalidInstanceError("--seeds", f"range {item!r} runs backwards")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise InvalidInstanceError("--seeds", f"more than {MAX_SEEDS} seeds")
        seeds += [k for k in range(a, b + 1) if k not in seeds]
    return tuple(seeds)


def is_pollux_workload(path: Path) -> bool:
    """Whether ``path`` starts with Pollux's workload header."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return False
    return first.strip().lstrip("\ufeff").replace(" ", "") == POLLUX_HEADER


def _cluster(text: str | None) -> tuple[int, int]:
    if text is None:
        return 16, 4
    nodes, sep, per = text.lower().partition("x")
    if sep and nodes.strip().isdigit() and per.strip().isdigit():
        return int(nodes), int(per)
    raise InvalidInstanceError(
        "--cluster", f"a Pollux workload runs on NODESxGPUS (e.g. 16x4), got {text!r}"
    )


def compare_if_pollux(options: Mapping[str, Any]) -> bool:
    """Run ``sim compare``'s ``options`` here when its trace is a Pollux workload.

    ``options`` are ``sim compare``'s parameters by name; False (nothing done) for any other
    trace.
    """
    trace = Path(options["trace"])
    if not is_pollux_workload(trace):
        return False
    refused = {
        "--exact": options.get("exact", False),
        "--bound": options.get("bound", False),
        "--elastic": options.get("elastic") is not None,
        "--throughputs": options.get("throughputs") is not None,
        "--window": options.get("window") is not None,
        "--restore-seconds": options.get("restore_s", 0) != 0,
        "--mechanism": options.get("mechanism", "optsched") != "optsched",
        "--offered-load": options.get("offered_load") is not None,
        "--load": options.get("load", 1.0) != 1.0,
        "--rounds": options.get("rounds") is not None,
    }
    compare_goodput(
        trace,
        str(options["policies"]),
        options.get("cluster"),
        options.get("round_seconds"),
        options.get("output"),
        bool(options.get("as_json", False)),
        refused,
        parse_seeds(options.get("seeds")),
    )
    return True


def compare_goodput(
    trace: Path,
    policies: str,
    cluster: str | None,
    round_seconds: float | None,
    output: Path | None,
    as_json: bool,
    refused: Mapping[str, bool],
    seeds: tuple[int, ...] = (),
) -> None:
    """Run and print the comparison (module notes)."""
    from optsched.goodput.artifact import simulator_dir
    from optsched.goodput.cluster import simulate
    from optsched.goodput.policies import POLICIES, make_policy
    from optsched.goodput.validate import validate
    from optsched.goodput.workload import read_workload

    for flag, given in refused.items():
        if given:
            raise InvalidInstanceError(flag, "does not apply to a Pollux workload")
    names = (
        list(POLICIES)
        if policies.strip() == "all"
        else [p.strip() for p in policies.split(",") if p.strip()]
    )
    if not names:
        raise InvalidInstanceError("--policies", "names no policy")
    nodes, per_node = _cluster(cluster)
    interval = 60.0 if round_seconds is None else float(round_seconds)
    workload = read_workload(trace)
    traces = None
    if any(n not in POLICIES for n in names):
        # read once for the adapters' worlds and the runs alike
        from optsched.goodput.traces import read_model_traces

        root = simulator_dir() / "traces"
        traces = {a: read_model_traces(root / a) for a in workload.applications}
    made = [make_policy(n, workload, traces) for n in names]  # refused before any run
    for policy in made:
        prepare = getattr(policy, "prepare", None)  # a simulator policy's own refusal
        if callable(prepare):
            prepare(nodes, per_node)

    def row(label: str, policy: Any) -> dict[str, Any]:
        run = simulate(workload, policy, num_nodes=nodes, gpus_per_node=per_node,
                       interval=interval, traces=traces)  # fmt: skip
        report = validate(run)
        return {
            **run.summary(),
            "policy": label,
            "valid": report.ok,
            "violation": str(report.violations[0]) if report.violations else None,
        }

    rows: list[dict[str, Any]] = []
    for name, policy in zip(names, made, strict=True):
        if not (seeds and _seeded(name)):
            rows.append(row(name, policy))
            continue
        make: Any = POLICIES[name]  # a factory taking seed= (_seeded)
        runs = [row(f"{name} (seed {k})", make(seed=k)) for k in seeds]
        rows += [*runs, _mean(name, seeds, runs)]
    _show(trace, nodes, per_node, interval, rows, output, as_json)
    bad = [r for r in rows if not r["valid"]]
    for r in bad:
        err_console.print(
            f"{r['policy']}: record rejected by the validator: {r['violation']}",
            markup=False,
            highlight=False,
        )
    if bad:
        raise click.exceptions.Exit(1)
    if any(not r["finished"] for r in rows):
        raise click.exceptions.Exit(3)


def _seeded(name: str) -> bool:
    """Whether the goodput policy registered as ``name`` takes a ``seed`` (a random search)."""
    import inspect

    from optsched.goodput.policies import POLICIES

    factory = POLICIES.get(name)
    return factory is not None and "seed" in inspect.signature(factory).parameters


def _mean(name: str, seeds: tuple[int, ...], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of ``runs``' mean figures (valid and finished only when every run is)."""
    n = len(runs)
    label = ",".join(map(str, seeds)) if len(seeds) <= 8 else f"{seeds[0]}..{seeds[-1]}"
    bad = [r["violation"] for r in runs if r["violation"]]
    return {
        "policy": f"{name} (mean of seeds {label})",
        "jobs": runs[0]["jobs"],
        "finished": all(r["finished"] for r in runs),
        "average_jct": sum(r["average_jct"] for r in runs) / n,
        "makespan": sum(r["makespan"] for r in runs) / n,
        "gpu_hours": sum(r["gpu_hours"] for r in runs) / n,
        "restarts": sum(r["restarts"] for r in runs) / n,
        "valid": all(r["valid"] for r in runs),
        "violation": bad[0] if bad else None,
    }


def _show(
    trace: Path,
    nodes: int,
    per_node: int,
    interval: float,
    rows: list[dict[str, Any]],
    output: Path | None,
    as_json: bool,
) -> None:
    if output is not None:
        import pandas as pd

        pd.DataFrame(rows).to_csv(output, index=False)
    if as_json:
        print_json(
            {
                "trace": str(trace),
                "world": "goodput",
                "num_nodes": nodes,
                "gpus_per_node": per_node,
                "interval_s": interval,
                "policies": rows,
            }
        )
        return
    table = TextTable(
        f"{trace.name}: Pollux workload, {nodes} nodes x {per_node} GPUs, {interval:g}-s interval",
        notes=[
            "average JCT over completed jobs; makespan = latest completion; GPU-hours held "
            "up to completion, restart delays included"
        ],
    )
    for header in ("policy", "jobs", "avg JCT (s)", "makespan (s)", "GPU-hours", "restarts"):
        table.add_column(header, justify="left" if header == "policy" else "right")
    for r in rows:
        table.add_row(
            r["policy"],
            r["jobs"],
            f"{r['average_jct']:.2f}",
            f"{r['makespan']:.0f}",
            f"{r['gpu_hours']:.2f}",
            f"{r['restarts']:g}",
        )
    emit(table)
