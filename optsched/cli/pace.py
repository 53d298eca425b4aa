"""``optsched pace``: PACE against the communication-scheduling baselines.

``optsched pace MODEL_OR_FILE --workers N --bandwidth GBPS --latency-us X [--partition-mb P]``
runs every policy on one model; ``optsched pace sweep`` runs them over bandwidths and worker
counts and writes a table and a plot of PACE's speed-up. Times are in milliseconds; bandwidths
in Gbit/s; MB means 2^20 bytes.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import err_console, json_option, print_json
from optsched.errors import InvalidInstanceError

__all__ = ["pace", "register", "sweep_rows"]

BASELINES = ("fifo", "horovod", "p3", "tictac", "bytescheduler")


class _DefaultGroup(click.Group):
    """A group whose first argument is a model unless it names a subcommand (``sweep``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _floats(text: str, field: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InvalidInstanceError(
            field, f"must be comma-separated numbers, got {text!r}"
        ) from None
    if not values or any(not v > 0 for v in values):
        raise InvalidInstanceError(field, f"must list numbers > 0, got {text!r}")
    return values


def _ints(text: str, field: str) -> list[int]:
    values = _floats(text, field)
    if any(v != int(v) for v in values):
        raise InvalidInstanceError(field, f"must list whole numbers, got {text!r}")
    return [int(v) for v in values]


_common = [
    click.option(
        "--workers", type=int, default=8, show_default=True, help="Data-parallel workers."
    ),
    click.option(
        "--bandwidth",
        "bandwidth_gbps",
        type=float,
        default=10.0,
        show_default=True,
        help="Per-link bandwidth in Gbit/s.",
    ),
    click.option(
        "--latency-us", type=float, default=5.0, show_default=True, help="Per-hop latency (us)."
    ),
    click.option(
        "--partition-mb",
        type=float,
        default=None,
        help="Partition size of P3 and ByteScheduler (default: P3 4 MB, ByteScheduler tuned).",
    ),
    click.option(
        "--overhead-us",
        type=float,
        default=0.0,
        show_default=True,
        help="Fixed overhead per all-reduce call (the per-partition overhead), us.",
    ),
    click.option(
        "--fusion-mb",
        type=float,
        default=64.0,
        show_default=True,
        help="Horovod's fusion threshold and PACE's fusion buffer (MB).",
    ),
    click.option(
        "--cycle-ms", type=float, default=5.0, show_default=True, help="Horovod's cycle time."
    ),
    click.option(
        "--order",
        default="profile",
        show_default=True,
        help="Forward execution order: 'profile' or 'kahn' (a FIFO ready queue).",
    ),
    click.option(
        "--update-ms-per-mb",
        type=float,
        default=0.0,
        show_default=True,
        help="Optimizer update time per MB of parameters (0: no update ops).",
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
    shipped profile name or a profile file), or 'optsched pace sweep [MODEL ...]' for the
    speed-up over bandwidths and worker counts.
    """


@pace.command("run")
@click.argument("model")
@_with_common
@click.option("--no-schedule", is_flag=True, help="Leave PACE's schedule out of the JSON.")
@click.option(
    "--validate/--no-validate",
    default=True,
    show_default=True,
    help="Re-check every simulated trace with the independent validator.",
)
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
    as_json: bool,
) -> None:
    """Compare FIFO, Horovod, P3, TicTac, ByteScheduler and PACE on MODEL (name or file)."""
    from optsched.comm import compare
    from optsched.comm.simulate import validate_trace

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
        for r in result.results.values():
            validate_trace(result.dag, result.cost, r.plan, r.trace)
    report = result.to_dict(schedule=not no_schedule)
    report["validated"] = validate
    if as_json:
        print_json(report)
        return
    _print_comparison(result)


def _print_comparison(result: Any) -> None:
    from rich import box
    from rich.table import Table

    dag = result.dag
    err_console.print(
        f"[bold]{result.display_name}[/bold]: {dag.n_tensors} tensors, "
        f"{dag.total_bytes / 2**20:.1f} MB, compute {dag.compute_ms:.2f} ms; "
        f"{result.cost.description}",
        highlight=False,
    )
    table = Table(box=box.SIMPLE)
    for col in ("policy", "iteration ms", "x PACE", "overlap", "calls", "settings"):
        table.add_column(col, justify="left" if col in ("policy", "settings") else "right")
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
    err_console.print(table)
    err_console.print(
        f"lower bound {result.lower_bound:.3f} ms; fastest: {result.fastest}; "
        f"PACE fuses {dag.n_tensors} tensors into {len(result.pace.jobs.groups)} calls",
        highlight=False,
    )
    f = result.fusion
    err_console.print(
        f"optimal preemptive schedule with no fusion {f['none']:.3f} ms, "
        f"threshold fusion {f['threshold']:.3f} ms, fusion DP {f['dp']:.3f} ms",
        highlight=False,
    )


def sweep_rows(
    models: list[str],
    bandwidths: list[float],
    workers: list[int],
    latency_us: float,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """One row per (model, workers, bandwidth): every policy's time and PACE's speed-ups."""
    from rich.progress import Progress

    from optsched.comm import compare

    rows: list[dict[str, Any]] = []
    total = len(models) * len(bandwidths) * len(workers)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("sweep", total=total)
        for model in models:
            for n in workers:
                for bw in bandwidths:
                    res = compare(model, n, bw, latency_us, **kwargs)
                    times = res.iteration_times
                    pace_t = times["pace"]
                    best = min(times[b] for b in BASELINES if b in times)
                    row: dict[str, Any] = {
                        "model": res.model,
                        "workers": n,
                        "bandwidth_gbps": bw,
                        "lower_bound": res.lower_bound,
                        **{name: times[name] for name in times},
                        "speedup_vs_best_baseline": best / pace_t,
                        "speedup_vs_horovod": times.get("horovod", pace_t) / pace_t,
                        "best_baseline": min(
                            (b for b in BASELINES if b in times), key=lambda b: times[b]
                        ),
                    }
                    rows.append(row)
                    progress.advance(task)
    return rows


def _write_table(rows: list[dict[str, Any]], out: Path) -> tuple[Path, Path]:
    cols = list(rows[0])
    csv_path = out / "pace_sweep.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
    md_path = out / "pace_sweep.md"
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in r.values()]
        lines.append("| " + " | ".join(cells) + " |")
    md_path.write_text(
        "PACE sweep: iteration times in ms; speed-up = baseline time / PACE time.\n\n"
        + "\n".join(lines)
        + "\n",
        encoding="utf-8",
    )
    return csv_path, md_path


def _plot(rows: list[dict[str, Any]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(
        1, len(models), figsize=(4.2 * len(models), 3.4), squeeze=False, sharey=True
    )
    for ax, model in zip(axes[0], models, strict=True):
        mine = [r for r in rows if r["model"] == model]
        for n in sorted({r["workers"] for r in mine}):
            pts = sorted((r for r in mine if r["workers"] == n), key=lambda r: r["bandwidth_gbps"])
            x = [r["bandwidth_gbps"] for r in pts]
            (line,) = ax.plot(
                x, [r["speedup_vs_best_baseline"] for r in pts], marker="o", label=f"{n} workers"
            )
            ax.plot(
                x,
                [r["speedup_vs_horovod"] for r in pts],
                linestyle="--",
                color=line.get_color(),
                alpha=0.6,
            )
        ax.set_xscale("log")
        ax.set_title(model)
        ax.set_xlabel("bandwidth (Gbit/s)")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("PACE speed-up")
    axes[0][-1].legend(fontsize="small")
    fig.suptitle("iteration time of the baseline / PACE (solid: best baseline; dashed: Horovod)")
    fig.tight_layout()
    path = out / "pace_sweep.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


@pace.command("sweep")
@click.argument("models", nargs=-1)
@click.option(
    "--bandwidths",
    default="1,2.5,10,25,40,100",
    show_default=True,
    help="Comma-separated bandwidths (Gbit/s).",
)
@click.option(
    "--workers", "workers_text", default="4,8,16", show_default=True, help="Worker counts."
)
@click.option("--latency-us", type=float, default=5.0, show_default=True)
@click.option("--partition-mb", type=float, default=None)
@click.option("--overhead-us", type=float, default=0.0, show_default=True)
@click.option("--fusion-mb", type=float, default=64.0, show_default=True)
@click.option("--cycle-ms", type=float, default=5.0, show_default=True)
@click.option("--all-models", is_flag=True, help="Every shipped profile.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("pace_sweep"),
    show_default=True,
    help="Directory for pace_sweep.csv, pace_sweep.md and pace_sweep.png.",
)
@json_option
def sweep_cmd(
    models: tuple[str, ...],
    bandwidths: str,
    workers_text: str,
    latency_us: float,
    partition_mb: float | None,
    overhead_us: float,
    fusion_mb: float,
    cycle_ms: float,
    all_models: bool,
    out: Path,
    as_json: bool,
) -> None:
    """Speed-up of PACE over bandwidths and worker counts (default models: resnet50, vgg16)."""
    from optsched.profiles import available_profiles

    chosen = list(models) or (available_profiles() if all_models else ["resnet50", "vgg16"])
    bw = _floats(bandwidths, "bandwidths")
    ws = _ints(workers_text, "workers")
    rows = sweep_rows(
        chosen,
        bw,
        ws,
        latency_us,
        partition_mb=partition_mb,
        overhead_us=overhead_us,
        fusion_mb=fusion_mb,
        cycle_ms=cycle_ms,
    )
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = _write_table(rows, out)
    png_path = _plot(rows, out)
    files = {"csv": str(csv_path), "markdown": str(md_path), "plot": str(png_path)}
    if as_json:
        print_json({"rows": rows, "files": files, "latency_us": latency_us})
        return
    err_console.print(md_path.read_text(encoding="utf-8"), highlight=False)
    err_console.print(f"wrote {csv_path}, {md_path} and {png_path}", highlight=False)


def register(group: click.Group) -> None:
    """Add ``pace`` to the root command."""
    group.add_command(pace)
