"""``optsched trace``: summarize a public cluster trace, or convert it to the normalized CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    TextTable,
    emit,
    err_console,
    json_option,
    print_json,
    say,
    wide_option,
    with_units,
)
from optsched.cli.json_units import TRACE_UNITS

__all__ = ["register", "trace_group"]

_FORMAT_HELP = (
    "Trace format (default: detected from the first line): optsched, gavel, elasticflow, "
    "tiresias, helios, philly, pai-job, pai-task."
)


def _read(path: Path, fmt: str | None, tasks: Path | None) -> Any:
    from optsched.traces import read_trace

    options = {"tasks": tasks} if tasks is not None else {}
    return read_trace(path, format=fmt, **options)


def _format_option(func: Any) -> Any:
    return click.option("--format", "fmt", default=None, metavar="FORMAT", help=_FORMAT_HELP)(func)


def _tasks_option(func: Any) -> Any:
    return click.option(
        "--tasks",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="PAI task table joined to a pai-job table (default: pai_task_table.csv beside it).",
    )(func)


@click.group("trace")
def trace_group() -> None:
    """Read public GPU-cluster traces into optsched's normalized job table."""


@trace_group.command("info")
@wide_option
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@_format_option
@_tasks_option
@json_option
def info_cmd(file: Path, fmt: str | None, tasks: Path | None, as_json: bool) -> None:
    """Summarize FILE: jobs, time span, GPU-demand histogram, per-column summary.

    Exits 2 naming the file, row and column when a row is invalid.
    """
    trace = _read(file, fmt, tasks)
    report = trace.info()
    if as_json:
        print_json(with_units(report, TRACE_UNITS))
        return
    _print_info(report)


def _print_info(report: dict[str, Any]) -> None:
    """The summary line, then the GPU-demand and column tables on stdout; skips and notes under."""
    from optsched.report._text import column_cells

    known = report["columns"]["duration"]["known"]
    hours = f"{report['gpu_hours']:,.1f} GPU-hours" + (
        "" if known == report["jobs"] else f" over the {known:,} jobs with a duration"
    )
    say(
        f"{report['source']}: {report['jobs']:,} jobs ({report['format']}), "
        f"arrivals over {report['span']:,.0f} s, {hours}"
    )
    demand = TextTable("GPU demand", box="simple")
    demand.add_column("GPUs")
    demand.add_column("jobs")
    for gpus, count in report["gpu_demand"].items():
        demand.add_row(gpus, f"{count:,}")
    emit(demand)
    notes = [
        f"skipped {count:,} rows: {why}"
        for why, count in (report["meta"].get("skipped") or {}).items()
    ]
    notes += [f"note: {note}" for note in report["meta"].get("notes") or ()]
    cols = TextTable("columns (times in s)", box="simple", notes=notes)
    for name in ("column", "known", "min", "median", "max", "distinct / top"):
        text = name in {"column", "distinct / top"}
        cols.add_column(name, justify="left" if text else "right", wrap=text)
    for name, entry in report["columns"].items():
        if "distinct" in entry:
            top = ", ".join(f"{k or '(empty)'} {v}" for k, v in list(entry["top"].items())[:3])
            cols.add_row(name, f"{entry['known']:,}", "", "", "", f"{entry['distinct']:,}: {top}")
        else:
            cols.add_row(
                name,
                f"{entry['known']:,}",
                *(
                    column_cells([entry[k] for k in ("min", "median", "max")])
                    if "min" in entry
                    else ("", "", "")
                ),
                "",
            )
    emit(cols)


@trace_group.command("convert")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@_format_option
@_tasks_option
@json_option
def convert_cmd(
    source: Path, output: Path, fmt: str | None, tasks: Path | None, as_json: bool
) -> None:
    """Convert SOURCE (any supported format) to the normalized CSV OUTPUT (.csv).

    OUTPUT reads back as the same table (``optsched trace info OUTPUT``). A clean normalized
    CSV in arrival order is converted in a stream (bounded memory, any length up to
    max_trace_rows); any other file is read whole, and one with more rows than the budget
    max_convert_rows (1,000,000; env OPTSCHED_MAX_CONVERT_ROWS) is refused up front naming
    it (exit 2). OUTPUT is written to a temporary file and renamed: never left partial.
    """
    from optsched.traces.convert import convert_trace

    if output.suffix.lower() != ".csv":
        raise click.BadParameter(
            f"{output.name}: the file written is .csv, got extension {output.suffix or '(none)'!r}",
            param_hint="OUTPUT",
        )
    try:
        report = convert_trace(source, output, format=fmt, tasks=tasks)
    except OSError as exc:
        if exc.filename is None or Path(str(exc.filename)).resolve() != source.resolve():
            # full disk, file-size limit, read-only place: name the OUTPUT the user gave (exit 2)
            exc.filename = str(output)
        raise
    if as_json:
        print_json(with_units(report, TRACE_UNITS))
    else:
        err_console.print(
            f"wrote {report['jobs']:,} jobs ({report['format']}) to {output}", highlight=False
        )
        for note in report.get("notes") or ():
            err_console.print(f"note: {note}", highlight=False, markup=False)


def register(group: click.Group) -> None:
    """Add ``trace info`` and ``trace convert`` to the root command."""
    group.add_command(trace_group)
