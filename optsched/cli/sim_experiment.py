"""Experiment files on the command line: ``sim run/compare/sweep EXPERIMENT.toml``, ``sim report``.

``optsched sim run|compare|sweep EXPERIMENT.toml [--store PATH] [--report DIR] [--csv FILE]
[--backend B] [-j N] [--allow-plugins [--plugin-timeout S]] [--json]``
    Run the experiment file (:mod:`optsched.runs.experiment`): every trace x cluster x scale x
    seed x load x policy it names, resumable through its store, then write its outputs (run
    store, CSV, report) and print the per-policy summary. The three commands behave alike on an
    experiment file (the file names what is compared and swept); given a trace instead, each
    keeps its own behaviour. ``--json`` prints the summary, every run, and the file's text and
    SHA-256. Exit 1 when the validator rejects a run's record. A file naming ``plugins`` is
    refused (exit 2 naming ``plugins``) unless ``--allow-plugins`` is given; outputs the file
    names stay inside its folder (exit 2 naming the key otherwise).
``optsched sim report STORE [-o DIR] [--json]``
    Write ``report.html`` (self-contained: figures embedded, nothing loaded from the network),
    ``report.md`` and its figures for an experiment or ``sim sweep`` store
    (:mod:`optsched.report.sweep`); ``DIR`` defaults to ``<store>-report`` beside the store.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from optsched.cli.common import (
    TextTable,
    emit,
    err_console,
    json_option,
    print_json,
    say,
    wide_option,
)

__all__ = ["ExperimentOr", "experiment_command", "register", "report_command"]


def _is_experiment(arg: str) -> bool:
    return arg.lower().endswith(".toml") and not arg.startswith("-")


class ExperimentOr(click.Command):
    """A ``sim`` command that runs an experiment file when its first argument is one."""

    def __init__(self, plain: click.Command, experiment: click.Command) -> None:
        help_text = (plain.help or "") + (
            "\n\nGiven EXPERIMENT.toml instead, run that experiment file (see `optsched sim "
            "sweep EXPERIMENT.toml --help`)."
        )
        super().__init__(
            plain.name,
            context_settings=plain.context_settings,
            callback=plain.callback,
            params=plain.params,
            help=help_text,
            epilog=plain.epilog,
            short_help=plain.short_help,
            options_metavar=plain.options_metavar,
            add_help_option=plain.add_help_option,
            no_args_is_help=plain.no_args_is_help,
            hidden=plain.hidden,
            deprecated=plain.deprecated,
        )
        self.experiment = experiment

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse as the experiment command when the first argument is a ``.toml`` file."""
        if args and _is_experiment(args[0]):
            return self.experiment.make_context(info_name, args, parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command("experiment")
@click.argument("experiment", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Run store (default: the file's outputs.store).",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write report.html and report.md here (default: the file's outputs.report).",
)
@click.option(
    "--backend",
    default="joblib",
    show_default=True,
    help="Where runs execute: joblib, serial, dask or ray (as `sim sweep`).",
)
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write every run's metrics here (default: the file's outputs.csv).",
)
@click.option("-j", "--n-jobs", type=int, default=None, help="joblib workers.")
@click.option("--address", default=None, help="Dask scheduler or Ray cluster address.")
@click.option(
    "--allow-plugins",
    is_flag=True,
    default=False,
    help="Import the Python modules the file names under `plugins` (this RUNS THEIR CODE). "
    "Without it a file naming plug-ins is refused, and nothing in it is imported.",
)
@click.option(
    "--plugin-timeout",
    type=float,
    default=None,
    metavar="SECONDS",
    help="With --allow-plugins: seconds each plug-in's import may take in its probe (a "
    "separate interpreter) before it is refused as hanging (default 60).",
)
@json_option
@wide_option
def experiment_command(
    experiment: Path,
    store: Path | None,
    report_dir: Path | None,
    csv_path: Path | None,
    backend: str,
    n_jobs: int | None,
    address: str | None,
    allow_plugins: bool,
    plugin_timeout: float | None,
    as_json: bool,
) -> None:
    """Run EXPERIMENT.toml (an experiment file) and print its per-policy summary.

    Outputs the file names (outputs.store, outputs.report, outputs.csv) stay inside the file's
    folder; --store, --report and --csv write anywhere.
    """
    from optsched.errors import InvalidInstanceError
    from optsched.runs.experiment import load_experiment, resolve_output, run_experiment

    if plugin_timeout is not None and not (math.isfinite(plugin_timeout) and plugin_timeout > 0):
        raise InvalidInstanceError(
            "--plugin-timeout", f"must be a finite number > 0, got {plugin_timeout}"
        )
    if plugin_timeout is not None and not allow_plugins:
        raise InvalidInstanceError("--plugin-timeout", "applies only with --allow-plugins")
    loaded = load_experiment(experiment, allow_plugins=allow_plugins, plugin_timeout=plugin_timeout)
    outputs = loaded.experiment.outputs
    # every output is checked before any run: a report path that is a file, or one leading
    # out of the experiment's folder, is refused now rather than after the sweep
    target: Path | None = report_dir
    report_field = "--report"
    if target is None and outputs.report is not None:
        target = Path(resolve_output(loaded, outputs.report, "outputs.report"))
        report_field = "outputs.report"
    csv_target: Path | None = csv_path
    csv_field = "--csv"
    if csv_target is None and outputs.csv is not None:
        csv_target = Path(resolve_output(loaded, outputs.csv, "outputs.csv"))
        csv_field = "outputs.csv"
    if target is not None and target.exists() and not target.is_dir():
        raise InvalidInstanceError(
            report_field, f"{target} exists and is not a directory (the report is a folder)"
        )
    if csv_target is not None and csv_target.is_dir():
        raise InvalidInstanceError(csv_field, f"{csv_target} is a directory, not a file")
    try:
        result = run_experiment(
            loaded,
            store=store,
            backend=backend,
            n_jobs=n_jobs,
            address=address,
            progress=not as_json,
            allow_plugins=allow_plugins,
            plugin_timeout=plugin_timeout,
        )
    except InvalidInstanceError as exc:
        if exc.field in ("backend", "n_jobs"):
            raise InvalidInstanceError(f"--{exc.field.replace('_', '-')}", exc.message) from None
        raise
    if csv_target is not None:
        csv_target.parent.mkdir(parents=True, exist_ok=True)
        result.runs.to_csv(csv_target, index=False)
    written: dict[str, str] = {}
    if target is not None:
        from optsched.report.sweep import sweep_report

        written = {k: str(v) for k, v in sweep_report(result).write(target).items()}
    summary = result.to_frame()
    if as_json:
        from optsched.cli.sim_table import with_units

        print_json(
            with_units(
                {
                    "experiment": result.name,
                    "file": str(experiment),
                    "sha256": result.sha256,
                    "experiment_toml": result.text,
                    "store": result.store,
                    "report": written,
                    "runs": len(result.runs),
                    "summary": summary.to_dict(orient="records"),
                    "rows": result.runs.to_dict(orient="records"),
                    "notes": result.notes,
                    "policy_specs": result.policy_specs,
                }
            )
        )
    else:
        print_summary(summary, result.name)
        for kind, path in written.items():
            err_console.print(f"{kind} report: {path}", markup=False, highlight=False)
    for note in result.notes:
        # a seed or load that changes nothing: on stderr beside the table, and in the JSON
        err_console.print(f"note: {note}", markup=False, highlight=False)
    _refuse_invalid(result.runs)


def print_summary(summary: Any, name: str) -> None:
    """The per-policy summary on stdout: mean [low, high] of the CI clipped at 0, times in one unit.

    The cells are those of the report's summary table
    (:func:`optsched.report.sweep.summary_table`); a group column every row shares (one
    trace, one cluster) is a line of the notes instead of a column.
    """
    from optsched.report.sweep import CELL_NOTE, summary_table

    if not len(summary):
        say("no runs")
        return
    shown = summary_table(summary)
    notes = [CELL_NOTE]
    keys = []
    for column in ("trace", "cluster", "cluster_scale", "load"):
        if column not in shown.columns:
            continue
        values = [str(v) for v in shown[column]]
        if len(set(values)) == 1:
            notes.append(f"{column}: {values[0]}")
            shown = shown.drop(columns=column)
        else:
            keys.append(column)
    table = TextTable(f"experiment {name}", notes=notes, key=len(keys) + 1)
    columns = [*keys, "policy", *(c for c in shown.columns if c not in (*keys, "policy"))]
    for column in columns:
        text = column in ("trace", "cluster", "policy")
        table.add_column(column, justify="left" if text else "right", wrap=text)
    for _, row in shown[columns].iterrows():
        table.add_row(*(str(row[c]) for c in columns))
    emit(table)


def _refuse_invalid(runs: Any) -> None:
    if len(runs) and not bool(runs["valid"].astype(bool).all()):
        bad = runs[~runs["valid"].astype(bool)]
        listed = ", ".join(f"{r['policy']} on {r['trace']}" for _, r in bad.head(10).iterrows())
        err_console.print(
            f"[red]{len(bad)} run(s) rejected by the validator: {escape(listed)}[/red]",
            highlight=False,
        )
        raise click.exceptions.Exit(1)


@click.command("report")
@click.argument("store", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for report.html, report.md and figures/ (default: <store>-report).",
)
@json_option
def report_command(store: Path, output: Path | None, as_json: bool) -> None:
    """Write the HTML and Markdown report of a sweep STORE (experiment or `sim sweep`)."""
    from optsched.report.sweep import sweep_report

    report = sweep_report(store)
    if output is None:
        base = store if store.is_dir() else store.with_suffix("")
        output = base.parent / f"{base.name}-report"
    paths = report.write(output)
    if as_json:
        print_json(
            {
                "html": str(paths["html"]),
                "markdown": str(paths["markdown"]),
                "sections": [s.title for s in report.sections],
                "summary": report.to_frame().to_dict(orient="records"),
            }
        )
    else:
        for kind, path in paths.items():
            err_console.print(f"{kind} report: {path}", markup=False, highlight=False)


def register(group: click.Group) -> None:
    """Let ``sim run/compare/sweep`` take an experiment file; add ``sim report``."""
    sim = group.commands["sim"]
    assert isinstance(sim, click.Group)
    for name in ("run", "compare", "sweep"):
        plain = sim.commands.get(name)
        if plain is not None and not isinstance(plain, ExperimentOr):
            sim.add_command(ExperimentOr(plain, experiment_command), name)
    sim.add_command(report_command)
