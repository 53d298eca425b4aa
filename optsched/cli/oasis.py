"""``optsched oasis``: OASiS instances and the exact offline optimum."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import (
    SolverOptions,
    TextTable,
    emit,
    err_console,
    json_option,
    output_option,
    plain,
    print_json,
    print_written,
    say,
    solver_options,
    wide_option,
    with_units,
)
from optsched.cli.json_units import OASIS_UNITS

__all__ = ["GENERATOR_FLAGS", "generator_flags", "oasis", "register"]

#: generate_instance's argument names -> the flags of ``oasis generate`` and ``oasis ratio``.
GENERATOR_FLAGS = {
    "n_jobs": "--jobs",
    "worker_servers": "--worker-servers",
    "ps_servers": "--ps-servers",
    "horizon": "--horizon",
    "scale": "--scale",
    "seed": "--seed",
    "priority": "--priority-low",
}


@contextlib.contextmanager
def generator_flags() -> Iterator[None]:
    """Re-raise the generator's argument errors naming the command-line flag instead."""
    from optsched.errors import InvalidInstanceError

    try:
        yield
    except InvalidInstanceError as exc:
        if exc.field in GENERATOR_FLAGS and exc.file is None:
            raise InvalidInstanceError(GENERATOR_FLAGS[exc.field], exc.message) from None
        raise


@click.group("oasis")
def oasis() -> None:
    """Cluster job scheduling (OASiS): generate instances, solve them exactly or online."""


@oasis.command("generate")
@click.option("--jobs", "n_jobs", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--worker-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--ps-servers", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--horizon", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--scale",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.1,
    show_default=True,
    help="Multiplies the paper's epochs/chunks/minibatches ranges (1 = the paper).",
)
@output_option((".json", ".toml"), required=True, help="Instance file to write")
@json_option
def generate_cmd(
    n_jobs: int,
    worker_servers: int,
    ps_servers: int,
    horizon: int,
    seed: int,
    scale: float,
    output: Path,
    as_json: bool,
) -> None:
    """Write a seeded synthetic instance drawn from the paper's distributions."""
    from optsched.online.oasis import generate_instance

    with generator_flags():
        inst = generate_instance(
            n_jobs, worker_servers, ps_servers, horizon, seed=seed, scale=scale
        )
    inst.save(output)
    err_console.print(
        f"wrote {output}: {n_jobs} jobs, {worker_servers} worker servers (H), {ps_servers} "
        f"parameter servers (K), {horizon} time slots (T)",
        highlight=False,
        markup=False,
    )
    if as_json:
        print_json(
            with_units(
                {
                    "output": str(output),
                    "jobs": n_jobs,
                    "worker_servers": worker_servers,
                    "ps_servers": ps_servers,
                    "horizon": horizon,
                    "seed": seed,
                    "scale": scale,
                },
                OASIS_UNITS,
            )
        )


@oasis.command("offline")
@wide_option
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--relax",
    is_flag=True,
    help="Solve the LP relaxation (an upper bound on the optimum; no schedule, so no -o).",
)
@output_option((".json", ".toml"), help="Also write the schedule to this file")
@json_option
@solver_options(imports=("optsched.online.oasis",))  # innermost: it wraps the function
def offline_cmd(
    instance: Path,
    solver_opts: SolverOptions,
    relax: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Solve INSTANCE's offline problem exactly (the ILP) with HiGHS or another solver.

    Exits 3 when the solver stops short of a proven optimum (a time limit, or a --mip-gap
    looser than optsched's optimality tolerance) unless --accept-feasible; the JSON error
    object then still holds the incumbent schedule under "solution".
    """
    from optsched.online.oasis import OasisInstance, solve

    if relax and output is not None:
        raise click.UsageError(
            "--relax computes an upper bound, not a schedule, so there is nothing for "
            "-o/--output to write; use --json for the bound record"
        )
    inst = OasisInstance.load(instance)
    with err_console.status(f"solving the offline ILP with {solver_opts.solver} ..."):
        res = solve(inst, relax=relax, **solver_opts.kwargs())
    if output is not None and res.solution is not None:
        res.solution.save(output)
    if as_json and output is not None and res.solution is not None:
        # the schedule is in the file: one line with the solve's figures, not the file again
        headline = {k: v for k, v in res.to_dict().items() if k != "solution"}
        headline["admitted"] = sum(1 for js in res.solution.jobs if js.admitted)
        headline["jobs"] = len(res.solution.jobs)
        print_written(output, "oasis-schedule", headline, OASIS_UNITS)
        return
    if as_json:
        print_json(with_units(res.to_dict(), OASIS_UNITS))
        return
    _print_offline(inst, res)
    if output is not None and res.solution is not None:
        err_console.print(f"wrote {output}", highlight=False, markup=False)


def _print_offline(inst: Any, res: Any) -> None:
    """The offline solve on stdout: its schedule's table, the solve's figures under it."""
    notes = [
        f"status {res.status.value}, objective {plain(res.objective, 6)}, bound "
        f"{plain(res.bound, 6)}, gap {plain(res.gap)}; build {res.build_seconds:.2f} s, solve "
        f"{res.solve_seconds:.2f} s",
    ]
    never = res.extra.get("never_completable") or []
    if never:
        notes.append(
            f"note: {len(never)} job(s) can never complete within the horizon (their work "
            f"exceeds N_i workers in every slot until T): {', '.join(never[:10])}"
            + (" ..." if len(never) > 10 else "")
        )
    if res.solution is None:
        for line in notes:
            say(line)
        return
    table = TextTable("offline schedule", notes=notes)
    for col in ("job", "arrival", "admitted", "completion", "utility", "worker-slots"):
        table.add_column(col, justify="left" if col == "job" else "right", wrap=col == "job")
    for i, js in enumerate(res.solution.jobs):
        table.add_row(
            js.job,
            str(inst.jobs[i].arrival),
            "yes" if js.admitted else "no",
            str(js.completion or "-"),
            f"{js.utility:.3f}",
            str(sum(n for _, _, n in js.workers)),
        )
    emit(table)


def register(group: click.Group) -> None:
    """Add the ``oasis`` group to the root command."""
    group.add_command(oasis)
