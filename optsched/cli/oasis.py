"""``optsched oasis``: OASiS instances and the exact offline optimum."""

from __future__ import annotations

from pathlib import Path

import click

from optsched.cli.common import err_console, json_option, print_json

__all__ = ["oasis", "register"]


@click.group("oasis")
def oasis() -> None:
    """Cluster job scheduling (OASiS): generate instances, solve them exactly or online."""


@oasis.command("generate")
@click.option("--jobs", "n_jobs", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--worker-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--ps-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--horizon", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--scale",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.1,
    show_default=True,
    help="Multiplies the paper's epochs/chunks/minibatches ranges (1 = the paper).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write (.json or .toml).",
)
def generate_cmd(
    n_jobs: int,
    worker_servers: int,
    ps_servers: int,
    horizon: int,
    seed: int,
    scale: float,
    output: Path,
) -> None:
    """Write a seeded synthetic instance drawn from the paper's distributions."""
    from optsched.jobs.generate import generate_instance

    inst = generate_instance(n_jobs, worker_servers, ps_servers, horizon, seed=seed, scale=scale)
    inst.save(output)
    err_console.print(
        f"wrote {output}: {n_jobs} jobs, H = {worker_servers}, K = {ps_servers}, T = {horizon}"
    )


@oasis.command("offline")
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--solver", default="highs", show_default=True, help="MILP solver name.")
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds; past it the best incumbent and bound are reported (exit 3 unless "
    "--accept-feasible).",
)
@click.option(
    "--mip-gap", type=click.FloatRange(min=0), default=None, help="Relative MIP gap (default 1e-7)."
)
@click.option("--relax", is_flag=True, help="Solve the LP relaxation (an upper bound).")
@click.option(
    "--accept-feasible",
    is_flag=True,
    help="Report a feasible incumbent found before a limit instead of failing.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the schedule to this file.",
)
@json_option
def offline_cmd(
    instance: Path,
    solver: str,
    time_limit: float | None,
    mip_gap: float | None,
    relax: bool,
    accept_feasible: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Solve INSTANCE's offline problem exactly (the ILP) with HiGHS or another solver."""
    from rich.table import Table

    from optsched.jobs.instance import load_instance
    from optsched.jobs.offline import DEFAULT_MIP_GAP, solve_offline

    inst = load_instance(instance)
    with err_console.status(f"solving the offline ILP with {solver} ..."):
        res = solve_offline(
            inst,
            solver,
            time_limit=time_limit,
            mip_gap=DEFAULT_MIP_GAP if mip_gap is None else mip_gap,
            relax=relax,
            accept_feasible=accept_feasible,
        )
    if output is not None and res.schedule is not None:
        res.schedule.save(output)
    if as_json:
        print_json(res.to_dict())
        return
    err_console.print(
        f"status [bold]{res.status.value}[/bold]  objective {res.objective}  bound {res.bound}  "
        f"gap {res.gap}  build {res.result.build_seconds:.2f}s  "
        f"solve {res.result.solve_seconds:.2f}s"
    )
    if res.schedule is not None:
        table = Table(title="offline schedule")
        for col in ("job", "arrival", "admitted", "completion", "utility", "worker-slots"):
            table.add_column(col)
        for i, js in enumerate(res.schedule.jobs):
            table.add_row(
                js.job,
                str(inst.jobs[i].arrival),
                "yes" if js.admitted else "no",
                str(js.completion or "-"),
                f"{js.utility:.3f}",
                str(sum(n for _, _, n in js.workers)),
            )
        err_console.print(table)


def register(group: click.Group) -> None:
    """Add the ``oasis`` group to the root command."""
    group.add_command(oasis)
