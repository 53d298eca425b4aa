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
Exit 1 when a record is rejected by the validator, 3 when a run left jobs unfinished.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import TextTable, emit, err_console, print_json
from optsched.errors import InvalidInstanceError

__all__ = ["POLLUX_HEADER", "compare_goodput", "compare_if_pollux", "is_pollux_workload"]

#: The first line of a Pollux workload CSV.
POLLUX_HEADER = "name,time,application,num_replicas,batch_size"


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
    rows: list[dict[str, Any]] = []
    for name, policy in zip(names, made, strict=True):
        run = simulate(workload, policy, num_nodes=nodes, gpus_per_node=per_node,
                       interval=interval, traces=traces)  # fmt: skip
        report = validate(run)
        rows.append(
            {
                "policy": name,
                **run.summary(),
                "valid": report.ok,
                "violation": str(report.violations[0]) if report.violations else None,
            }
        )
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
            r["restarts"],
        )
    emit(table)
