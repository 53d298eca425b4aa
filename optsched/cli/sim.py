"""``optsched sim``: replay a job trace on a simulated GPU cluster under a scheduling policy.

Subcommands
-----------
``run TRACE --cluster v100=32,p100=16 --policy NAME [--throughputs TABLE] [--elastic F] [--json]``
    Simulate TRACE (any format of :mod:`optsched.traces`, detected from its first line, or the
    normalized job table), check the record with the
    independent validator and print the run's metrics. ``-o FILE.csv`` writes the per-job
    metrics. ``--restore-on-first-start`` charges the restore cost on every job's first start
    too (the reference semantics of Gavel-derived simulators). ``--throughputs`` takes
    ``gavel`` (Gavel's measured table, shipped; the default for a Gavel-format trace),
    ``uniform`` (the default for other formats), Gavel's JSON format or a directory of
    ElasticFlow profile CSVs named ``..._<GPU type>`` (``throughputs_A100``: the type ``a100``).
    The table used is printed with the metrics and written as ``throughputs`` in the JSON.
    ``--window START:END`` computes the metrics over the jobs of arrival index
    ``START <= k < END`` only (a steady-state window, as Gavel's ``-s/-e``); ``compare`` and
    ``sweep`` take it too.
    The ``accordion``/``gns`` jobs of Shockwave's traces change batch size by epoch
    (``optsched.sim.world.batch_schedule``); ``--static-batches`` runs every job at its trace batch
    size.

Exit codes of ``run``: 0 every job finished and the record is valid; 1 the validator rejected
the record (the violations are printed); 3 the record is valid but jobs did not finish (the
metrics table and the JSON are printed all the same, with ``status`` and ``unfinished``); 2 bad
input, among it a trace with no job (header only, or every row skipped by its reader, e.g. a
Gavel trace whose scale factors are all 0), refused naming the file, as in ``compare`` and
``sweep``: there is nothing to simulate and no metric over zero jobs.
``policies [--json]``
    List the policy names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from optsched.cli._mechanism import (
    clock_from_trace,
    mechanism_from,
    mechanism_options,
    refuse_unsupported,
    seed_policy,
)
from optsched.cli.common import (
    EXIT_OTHER,
    err_console,
    json_option,
    output_option,
    print_json,
    wide_option,
)
from optsched.cli.sim_extra import (
    ELASTIC_OPTION,
    LOAD_OPTION,
    OFFERED_LOAD_OPTION,
    PLUGIN_OPTION,
    THROUGHPUTS_HELP,
    WINDOW_OPTION,
    _table,
    elastic_world,
    read_jobs,
    scaled_arrivals,
    study_world,
    window_arg,
)
from optsched.errors import InvalidInstanceError
from optsched.limits import check_range

__all__ = ["EXIT_UNFINISHED", "register", "sim"]

#: Exit code of a valid run that left jobs unfinished (as a solve that stopped short: 3).
EXIT_UNFINISHED = 3


@click.group("sim")
def sim() -> None:
    """Simulate a GPU cluster over a job trace under a scheduling policy."""


def _mechanism_option(k: int) -> Any:
    """The ``k``-th ``--mechanism`` option (:mod:`optsched.cli._mechanism`)."""
    return mechanism_options()[k]


def _check_run_ranges(
    restore_s: float, max_time: float | None, round_seconds: float | None
) -> None:
    """``sim run``'s numeric options in range, each refused naming its flag."""
    check_range("--restore-seconds", restore_s, "restore_s")
    if max_time is not None:
        check_range("--max-time", max_time, "max_time")
    if round_seconds is not None:
        check_range("--round-seconds", round_seconds, "round_seconds")


@sim.command("run")
@wide_option
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--cluster", required=True, help="GPU types and counts: v100=32,p100=16[:GPUS/SERVER]."
)
@click.option(
    "--policy",
    default="fifo",
    show_default=True,
    help="Policy name (see `sim policies`; plug-ins with --plugin), or module:attr of a factory.",
)
@click.option("--throughputs", default=None, help=THROUGHPUTS_HELP)
@click.option(
    "--reference",
    default="v100",
    show_default=True,
    help="GPU type on which trace durations were measured (Gavel tables).",
)
@click.option(
    "--round-seconds",
    type=float,
    default=None,
    help="Round/lease length in seconds (default: the policy's own).",
)
@click.option(
    "--restore-seconds",
    "restore_s",
    type=float,
    default=0.0,
    show_default=True,
    help="Checkpoint/restore cost of each preemption or migration (s).",
)
@click.option(
    "--restore-on-first-start",
    is_flag=True,
    default=False,
    help="Charge --restore-seconds on every job's first start too (the reference semantics "
    "of Gavel-derived simulators); by default only resumed and moved jobs pay it.",
)
@click.option("--max-time", type=float, default=None, help="Stop the simulation at this time (s).")
@click.option(
    "--static-batches",
    is_flag=True,
    default=False,
    help="Run every job at its trace batch size: no batch-size schedules for the "
    "accordion/gns jobs of Shockwave's traces (by default their batch size changes by epoch).",
)
@ELASTIC_OPTION
@PLUGIN_OPTION
@WINDOW_OPTION
@LOAD_OPTION
@OFFERED_LOAD_OPTION
@_mechanism_option(0)
@_mechanism_option(1)
@_mechanism_option(2)
@output_option((".csv",), help="Write the per-job metrics")
@json_option
def run(
    trace: Path,
    cluster: str,
    policy: str,
    throughputs: str | None,
    reference: str,
    round_seconds: float | None,
    restore_s: float,
    restore_on_first_start: bool,
    max_time: float | None,
    static_batches: bool,
    elastic: float | None,
    window: str | None,
    load: float,
    offered_load: float | None,
    mechanism: str,
    reset_interval: float | None,
    mechanism_seed: int | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """Simulate TRACE and print its metrics."""
    from optsched.sim import parse_cluster, simulate, validate
    from optsched.sim.comparison import labelled_policies
    from optsched.sim.measure.metrics import job_metrics, run_metrics

    spec = parse_cluster(cluster, field="--cluster")
    # labelled as everywhere: its name, its spec only when its class gives none
    chosen = labelled_policies([policy], field="--policy")[0][0]
    how = mechanism_from(mechanism, reset_interval, mechanism_seed)
    refuse_unsupported(chosen, how)
    seed_policy(chosen, how)
    _check_run_ranges(restore_s, max_time, round_seconds)
    steady = window_arg(window)
    # any trace format read_trace knows (detected, or the normalized job table itself); an
    # empty one is refused naming the file
    read = read_jobs(trace)
    table = _table(spec, throughputs, reference, read)
    world = study_world(
        read, spec, table, restore_s=restore_s, batch_modes=not static_batches, load=load
    )
    how = clock_from_trace(how, read)
    world = scaled_arrivals(world, 1.0, offered_load)
    world = world if elastic is None else elastic_world(world, elastic)
    kwargs: dict[str, Any] = {}
    if round_seconds is not None:
        kwargs["round_seconds"] = round_seconds
    try:
        result = simulate(
            world,
            chosen,
            max_time=max_time,
            restore_on_first_start=restore_on_first_start,
            mechanism=how,
            **kwargs,
        )
    except InvalidInstanceError as exc:
        if exc.field == "round_seconds":
            raise InvalidInstanceError("--round-seconds", exc.message) from None
        raise
    report = validate(result.world, result)
    jobs = job_metrics(result)
    try:
        metrics = run_metrics(result, jobs, window=steady)
    except InvalidInstanceError as exc:
        if exc.field == "window":
            raise InvalidInstanceError("--window", exc.message) from None
        raise
    if output is not None:
        jobs.to_csv(output, index=False)
    payload = {
        "trace": str(trace),
        "cluster": str(spec),
        "policy": chosen.name,
        "policy_spec": policy,
        "round_seconds": result.round_seconds,
        "throughputs": table.source,
        "restore_s": restore_s,
        "restore_on_first_start": restore_on_first_start,
        "mechanism": mechanism,
        "status": result.status,
        "unfinished": result.unfinished,
        "notes": list(result.notes),
        "metrics": metrics,
        "run": result.summary(),
        "valid": report.ok,
        "violations": [v.to_dict() for v in report.violations[:20]],
    }
    if as_json:
        from optsched.cli.sim_table import with_units

        print_json(with_units(payload))
    else:
        _print_table(
            f"{chosen.name} on {spec}, throughputs: {table.source}",
            metrics,
            report.ok,
            result.notes,
        )
    _exit_status(report, result)


#: Run metrics in seconds (shown in a human unit: s, min or h).
_SECONDS = frozenset(
    {
        "jct_mean",
        "jct_median",
        "jct_p95",
        "jct_p99",
        "weighted_jct_mean",
        "makespan",
        "best_effort_jct_mean",
        "spread_gang_seconds_with_room",
        "spread_gang_seconds",
        "queueing_delay_mean",
    }
)


def _print_table(title: str, metrics: dict[str, Any], valid: bool, notes: list[str]) -> None:
    """The run's metrics on stdout (times in one unit); its validity and notes under it."""
    from optsched.cli.common import TextTable, emit
    from optsched.cli.sim_table import UNIT_WORDS, time_unit
    from optsched.report._text import fixed, fixed_decimals

    times = [v for k, v in metrics.items() if k in _SECONDS and isinstance(v, float)]
    scale, unit = time_unit(times)
    table = TextTable(
        title,
        notes=[
            f"times in {UNIT_WORDS[unit]} ({unit}); gpu_hours in GPU-hours",
            f"record valid: {valid}",
            *(f"note: {note}" for note in notes),
        ],
    )
    table.add_column("metric", justify="left", wrap=True)
    table.add_column("value")
    for key, value in metrics.items():
        if key.startswith("deadlines") and not metrics.get("deadlines"):
            continue  # the trace has no deadline: nothing to count
        if isinstance(value, float) and key in _SECONDS:
            shown = f"{fixed(value / scale, 3)} {unit}"
        elif isinstance(value, float):
            shown = fixed(value, fixed_decimals([value], significant=6, most=6))
            shown += " GPU-h" if key == "gpu_hours" else ""
        else:
            shown = str(value)
        table.add_row(key, shown)
    emit(table)


def _exit_status(report: Any, result: Any) -> None:
    """Exit 1 for a rejected record (violations printed), 3 for unfinished jobs, else return."""
    if not report.ok:
        # the engine produced a record its independent validator rejects: never a success
        for v in report.violations[:5]:
            err_console.print(f"[red]{escape(str(v))}[/red]", highlight=False)
        raise click.exceptions.Exit(EXIT_OTHER)
    # jobs an admission control declined never run by design: not an unfinished run
    left = result.left
    if left > 0:
        err_console.print(
            f"[yellow]{left} of {len(result.world.jobs)} jobs did not finish "
            f"({result.status})[/yellow]",
            highlight=False,
        )
        raise click.exceptions.Exit(EXIT_UNFINISHED)


@sim.command("policies")
@PLUGIN_OPTION
@json_option
def policies(as_json: bool) -> None:
    """List the policy names (built-in, then plug-ins)."""
    from optsched.sim.policies import policy_names

    names = policy_names()
    if as_json:
        print_json({"policies": list(names)})
        return
    for name in names:
        click.echo(name)


def register(group: click.Group) -> None:
    """Add ``sim`` to the root command."""
    group.add_command(sim)
