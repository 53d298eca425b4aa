"""``optsched pace``: PACE against the communication-scheduling baselines.

``optsched pace MODEL_OR_FILE --workers N --bandwidth GBPS --latency-us X [--partition-mb P]``
runs every policy on one model; ``optsched pace solve INSTANCE`` computes PACE's exact schedule
of an instance file; ``optsched pace generate`` writes a random instance; ``optsched pace
sweep`` runs the policies over bandwidths and worker counts, writing each run to a resumable
store as it goes, then a table and a plot of PACE's speed-up. Times are in milliseconds;
bandwidths in Gbit/s; MB means 10^6 bytes; lists are comma-separated (``--workers 4,8,16``).
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    FiniteFloat,
    NumberList,
    SolverOptions,
    TextTable,
    emit,
    err_console,
    json_option,
    output_option,
    print_json,
    print_written,
    say,
    solver_options,
    wide_option,
    with_units,
)
from optsched.cli.json_units import PACE_UNITS
from optsched.errors import InvalidInstanceError

__all__ = ["FLAGS", "pace", "register"]

#: Library field names -> the flag a user typed, so that errors name the flag.
FLAGS: dict[str, str] = {
    "workers": "--workers",
    "bandwidth_gbps": "--bandwidth",
    "bandwidths": "--bandwidths",
    "latency_us": "--latency-us",
    "overhead_us": "--overhead-us",
    "fusion_mb": "--fusion-mb",
    "max_group_mb": "--fusion-mb",
    "cycle_ms": "--cycle-ms",
    "horovod.cycle_ms": "--cycle-ms",
    "horovod.threshold_mb": "--fusion-mb",
    "partition_mb": "--partition-mb",
    "p3.slice_mb": "--partition-mb",
    "bytescheduler.partition_mb": "--partition-mb",
    "order": "--order",
    "update_ms_per_mb": "--update-ms-per-mb",
    "model": "MODEL_OR_FILE",
    "profile": "MODEL_OR_FILE",
    "models": "MODELS",
    "seed": "--seed",
    "method": "--method",
    "time_limit": "--time-limit",
    "solver": "--solver",
}


@contextlib.contextmanager
def flag_names(extra: dict[str, str] | None = None) -> Iterator[None]:
    """Re-raise the library's field-named errors naming the command-line flag instead.

    A field under ``config.`` (a resumed sweep made with other parameters) maps like the
    parameter it names. Errors about a file's own fields (a profile's layer) keep their path.
    """
    names = {**FLAGS, **(extra or {})}
    try:
        yield
    except InvalidInstanceError as exc:
        field = exc.field
        prefix = "config." if field.startswith("config.") else ""
        key = field[len(prefix) :]
        if key in names and (exc.file is None or prefix):
            raise InvalidInstanceError(
                names[key], exc.message, [(names[key], exc.message)], file=exc.file
            ) from None
        raise


class _DefaultGroup(click.Group):
    """A group whose first argument is a model unless it names a subcommand (``sweep``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


_common = [
    click.option(
        "--workers",
        type=click.IntRange(1, 10**6),
        default=8,
        show_default=True,
        help="Data-parallel workers.",
    ),
    click.option(
        "--bandwidth",
        "bandwidth_gbps",
        type=FiniteFloat(min=0, min_open=True),
        default=10.0,
        show_default=True,
        help="Per-link bandwidth in Gbit/s.",
    ),
    click.option(
        "--latency-us",
        type=FiniteFloat(min=0),
        default=5.0,
        show_default=True,
        help="Per-hop latency (us).",
    ),
    click.option(
        "--partition-mb",
        type=FiniteFloat(min=0, min_open=True),
        default=None,
        help="Partition size of P3 and ByteScheduler, MB = 10^6 bytes (default: P3 4 MB, "
        "ByteScheduler tuned).",
    ),
    click.option(
        "--overhead-us",
        type=FiniteFloat(min=0),
        default=0.0,
        show_default=True,
        help="Fixed overhead per all-reduce call (the per-partition overhead), us.",
    ),
    click.option(
        "--fusion-mb",
        type=FiniteFloat(min=0, min_open=True),
        default=64.0,
        show_default=True,
        help="Horovod's fusion threshold and PACE's fusion buffer (MB = 10^6 bytes).",
    ),
    click.option(
        "--cycle-ms",
        type=FiniteFloat(min=0, min_open=True),
        default=5.0,
        show_default=True,
        help="Horovod's cycle time (ms).",
    ),
    click.option(
        "--order",
        type=click.Choice(["profile", "kahn"]),
        default="profile",
        show_default=True,
        help="Forward execution order: 'profile' or 'kahn' (a FIFO ready queue).",
    ),
    click.option(
        "--update-ms-per-mb",
        type=FiniteFloat(min=0),
        default=0.0,
        show_default=True,
        help="Optimizer update time per MB (10^6 bytes) of parameters (0: no update ops).",
    ),
]


def _with_common(fn: Any) -> Any:
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@click.group("pace", cls=_DefaultGroup, invoke_without_command=False)
def pace() -> None:
    """PACE (optimal preemptive all-reduce scheduling with tensor fusion) vs the baselines.

    Run 'optsched pace MODEL_OR_FILE [options]' to compare the policies on one model (a
    shipped profile name or a profile file), 'optsched pace solve INSTANCE' for PACE's exact
    schedule of an instance file, 'optsched pace generate' for a random instance, or
    'optsched pace sweep [MODEL ...]' for the speed-up over bandwidths and worker counts.
    Units: ms, Gbit/s, MB = 10^6 bytes.
    """


@pace.command("run")
@wide_option
@click.argument("model", metavar="MODEL_OR_FILE")
@_with_common
@click.option("--no-schedule", is_flag=True, help="Leave PACE's schedule out of the JSON.")
@click.option(
    "--validate/--no-validate",
    default=True,
    show_default=True,
    help="Re-check every policy's schedule with the independent validator.",
)
@output_option((".json", ".csv"), help="Write the report (.json) or the per-policy table (.csv)")
@json_option
def run_cmd(
    model: str,
    workers: int,
    bandwidth_gbps: float,
    latency_us: float,
    partition_mb: float | None,
    overhead_us: float,
    fusion_mb: float,
    cycle_ms: float,
    order: str,
    update_ms_per_mb: float,
    no_schedule: bool,
    validate: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Compare FIFO, Horovod, P3, TicTac, ByteScheduler and PACE on MODEL_OR_FILE.

    MODEL_OR_FILE is a shipped profile name (see `optsched profile --list`) or a profile file.
    """
    from optsched.comm.pace import compare
    from optsched.comm.pace import validate as check

    with flag_names():
        result = compare(
            model,
            workers,
            bandwidth_gbps,
            latency_us,
            partition_mb,
            overhead_us=overhead_us,
            fusion_mb=fusion_mb,
            cycle_ms=cycle_ms,
            order=order,
            update_ms_per_mb=update_ms_per_mb,
        )
    if validate:
        assert result.instance is not None
        for r in result.results.values():
            check(result.instance, r).raise_if_invalid()
    report = result.to_dict(schedule=not no_schedule)
    report["validated"] = validate
    if output is not None:
        _write_report(report, result.to_frame(), output)
    if as_json and output is not None:
        # the report is in the file: one line with the headline, not the file again
        times = {name: r.iteration_time for name, r in result.results.items()}
        headline = {"model": report["model"], "time_unit": "ms", "fastest": result.fastest}
        headline |= {"lower_bound": result.lower_bound, "iteration_time": times}
        written = "pace-report" if output.suffix.lower() == ".json" else "csv"
        print_written(output, written, headline, PACE_UNITS)
        return
    if as_json:
        print_json(with_units(report, PACE_UNITS))
        return
    _print_comparison(result)


def _write_report(report: dict[str, Any], frame: Any, output: Path) -> None:
    from optsched._json import dumps

    if output.suffix.lower() == ".csv":
        frame.to_csv(output, index=False)
    else:
        output.write_text(dumps(report) + "\n", encoding="utf-8")


def _print_comparison(result: Any) -> None:
    """The policies' iteration times on stdout (ms), the bounds and fusion under the table."""
    dag = result.dag
    f = result.fusion
    table = TextTable(
        f"{result.display_name}: {dag.n_tensors} tensors, {dag.total_bytes / 1e6:.1f} MB, "
        f"compute {dag.compute_ms:.2f} ms; {result.cost.description}",
        box="simple",
        notes=[
            f"lower bound {result.lower_bound:.3f} ms; fastest: {result.fastest}; PACE fuses "
            f"{dag.n_tensors} tensors into {len(result.pace.jobs.groups)} calls",
            f"optimal preemptive schedule with no fusion {f['none']:.3f} ms, threshold fusion "
            f"{f['threshold']:.3f} ms, fusion DP {f['dp']:.3f} ms",
        ],
    )
    for col in ("policy", "iteration ms", "x PACE", "overlap", "calls", "settings"):
        text = col in ("policy", "settings")
        table.add_column(col, justify="left" if text else "right", wrap=text)
    speed = result.speedup()
    for name, r in result.results.items():
        settings = ", ".join(f"{k}={v}" for k, v in r.params.items() if v is not None)
        table.add_row(
            name,
            f"{r.iteration_time:.3f}",
            f"{speed[name]:.3f}",
            f"{r.overlap:.0%}",
            str(r.n_calls),
            settings,
        )
    emit(table)


#: The figures ``pace solve --json -o FILE`` prints (the file holds the whole result).
_SOLVE_HEADLINE = frozenset(
    {"status", "optimal", "objective", "bound", "gap", "groups", "time_unit", "solver"}
)


@pace.command("solve")
@wide_option
@click.argument(
    "instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False, path_type=Path)
)
@click.option(
    "--method",
    type=click.Choice(["exact", "lp"]),
    default="exact",
    show_default=True,
    help="'exact': fusion DP + Jackson's rule; 'lp': prove the optimum with the LP.",
)
@output_option(
    (".json", ".csv"), help="Write the result (.json) or the iteration's timeline (.csv)"
)
@json_option
@solver_options(imports=("optsched.comm.pace",))  # innermost: it wraps the function
def solve_cmd(
    instance_path: Path,
    method: str,
    solver_opts: SolverOptions,
    output: Path | None,
    as_json: bool,
) -> None:
    """PACE's exact schedule of a comm-instance file (see `optsched schema comm-instance`).

    Exits 3 when --method lp stops short (unless --accept-feasible).
    """
    from optsched.comm.pace import CommInstance, solve

    with flag_names():
        instance = CommInstance.load(instance_path)
        result = solve(
            instance,
            method=method,  # type: ignore[arg-type]
            solver=solver_opts.solver,
            time_limit=solver_opts.time_limit,
            accept_feasible=solver_opts.accept_feasible,
        )
    payload = result.to_dict()
    if output is not None:
        if output.suffix.lower() == ".csv":
            assert result.solution is not None
            result.solution.to_frame().to_csv(output, index=False)
        else:
            from optsched._json import dumps

            output.write_text(dumps(payload) + "\n", encoding="utf-8")
    if as_json and output is not None:
        headline = {k: v for k, v in payload.items() if k in _SOLVE_HEADLINE}
        written = "pace-solution" if output.suffix == ".json" else "csv"
        print_written(output, written, headline, PACE_UNITS)
        return
    if as_json:
        print_json(with_units(payload, PACE_UNITS))
        return
    say(
        f"{instance}: {result.status.value}, iteration {result.objective:.4f} ms, bound "
        f"{result.bound if result.bound is None else f'{result.bound:.4f}'} ms, "
        f"{payload.get('groups')} fused calls"
    )


@pace.command("generate")
@click.option("--seed", type=click.IntRange(min=0), required=True, help="Random seed (>= 0).")
@click.option(
    "--layers", type=click.IntRange(1, 10_000), default=8, show_default=True, help="Layers."
)
@click.option("--chain", is_flag=True, help="A chain (default: a DAG).")
@output_option((".json", ".toml"), required=True, help="Instance file to write")
@json_option
def generate_cmd(seed: int, layers: int, chain: bool, output: Path, as_json: bool) -> None:
    """Write a random comm-instance (a random profile inline on a random cluster)."""
    from optsched.comm.pace import generate_instance

    with flag_names({"layers": "--layers"}):
        instance = generate_instance(seed=seed, layers=layers, dag=not chain)
    instance.save(output)
    if as_json:
        print_json(with_units({"file": str(output), **instance.summary()}, PACE_UNITS))
    else:
        err_console.print(f"wrote {output}: {instance}", highlight=False)


def _write_table(rows: list[dict[str, Any]], csv_path: Path) -> Path:
    from optsched.report._text import plain

    cols = list(rows[0])
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
    md_path = csv_path.with_suffix(".md")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [plain(v) if isinstance(v, float) else str(v) for v in r.values()]
        lines.append("| " + " | ".join(cells) + " |")
    md_path.write_text(
        "PACE sweep: iteration times in ms; speed-up = baseline time / PACE time.\n\n"
        + "\n".join(lines)
        + "\n",
        encoding="utf-8",
    )
    return md_path


def _print_sweep(rows: list[dict[str, Any]]) -> None:
    """The sweep's rows on stdout (the cells of the Markdown table), within 100 columns."""
    from optsched.report._text import plain

    table = TextTable(
        "PACE sweep", notes=["iteration times in ms; speed-up = baseline time / PACE time"], key=3
    )
    cols = list(rows[0])
    for col in cols:
        table.add_column(col, justify="left" if col in ("model", "best_baseline") else "right")
    for r in rows:
        table.add_row(*(plain(v) if isinstance(v, float) else str(v) for v in r.values()))
    emit(table)


@pace.command("sweep")
@click.argument("models", nargs=-1)
@click.option(
    "--bandwidths",
    type=NumberList(float, min=1e-6),
    default="1,2.5,10,25,40,100",
    show_default=True,
    help="Comma-separated bandwidths (Gbit/s).",
)
@click.option(
    "--workers",
    type=NumberList(int, min=1, max=10**6),
    default="4,8,16",
    show_default=True,
    help="Comma-separated worker counts.",
)
@click.option(
    "--latency-us",
    type=FiniteFloat(min=0),
    default=5.0,
    show_default=True,
    help="Per-hop latency (us).",
)
@click.option(
    "--partition-mb",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Partition of P3 and ByteScheduler (MB = 10^6 bytes; default: 4 MB / tuned).",
)
@click.option(
    "--overhead-us",
    type=FiniteFloat(min=0),
    default=0.0,
    show_default=True,
    help="Fixed overhead per all-reduce call (us).",
)
@click.option(
    "--fusion-mb", type=FiniteFloat(min=0, min_open=True), default=64.0, show_default=True
)
@click.option("--cycle-ms", type=FiniteFloat(min=0, min_open=True), default=5.0, show_default=True)
@click.option(
    "--order", type=click.Choice(["profile", "kahn"]), default="profile", show_default=True
)
@click.option("--update-ms-per-mb", type=FiniteFloat(min=0), default=0.0, show_default=True)
@click.option("--all-models", is_flag=True, help="Every shipped profile.")
@output_option(
    (".csv",),
    help="Table to write (default pace_sweep.csv); the run store (.sqlite), a markdown table "
    "(.md) and the plot (.png) go beside it. Rerunning resumes from the store",
)
@json_option
@wide_option
def sweep_cmd(
    models: tuple[str, ...],
    bandwidths: tuple[float, ...],
    workers: tuple[int, ...],
    latency_us: float,
    partition_mb: float | None,
    overhead_us: float,
    fusion_mb: float,
    cycle_ms: float,
    order: str,
    update_ms_per_mb: float,
    all_models: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Speed-up of PACE over bandwidths and worker counts (default models: resnet50, vgg16).

    Every run is written to OUTPUT's .sqlite store as soon as it is computed; a killed sweep
    rerun with the same options computes only the missing runs and writes the same table. A
    rerun with other shared options (latency, overhead, partition, fusion, cycle, order,
    update rate) exits 2 naming the option.
    """
    from optsched.profiles import available_profiles
    from optsched.runs.pace_sweep import SWEEP_KIND, sweep, sweep_config
    from optsched.runs.store import RunStore

    chosen = list(models) or (available_profiles() if all_models else ["resnet50", "vgg16"])
    csv_path = output or Path("pace_sweep.csv")
    params: dict[str, Any] = {
        "latency_us": latency_us,
        "partition_mb": partition_mb,
        "overhead_us": overhead_us,
        "fusion_mb": fusion_mb,
        "cycle_ms": cycle_ms,
        "order": order,
        "update_ms_per_mb": update_ms_per_mb,
    }
    from rich.progress import Progress

    with flag_names():
        store = RunStore(
            csv_path.with_suffix(".sqlite"), kind=SWEEP_KIND, config=sweep_config(**params)
        )
        with store, Progress(console=err_console, transient=True) as progress:
            task = progress.add_task("sweep", total=len(chosen) * len(workers) * len(bandwidths))
            result = sweep(
                chosen,
                list(bandwidths),
                list(workers),
                **params,
                store=store,
                progress=lambda done, total: progress.update(task, completed=done),
            )
    rows = result.rows
    md_path = _write_table(rows, csv_path)
    from optsched.report.pace import plot_speedup

    png_path = csv_path.with_suffix(".png")
    plot_speedup(result.to_frame()).savefig(png_path, dpi=120)
    files = {
        "csv": str(csv_path),
        "markdown": str(md_path),
        "plot": str(png_path),
        "store": str(store.path),
    }
    if as_json:
        payload = {"rows": rows, "files": files, "computed": result.computed, **result.config}
        print_json(with_units(payload, PACE_UNITS))
        return
    _print_sweep(rows)
    err_console.print(
        f"wrote {csv_path}, {md_path} and {png_path} ({result.computed} runs computed, "
        f"{len(rows) - result.computed} read from {store.path})",
        highlight=False,
    )


def register(group: click.Group) -> None:
    """Add ``pace`` to the root command."""
    group.add_command(pace)
