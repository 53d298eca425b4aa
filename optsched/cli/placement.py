"""``optsched placement``: exact placement ILPs, heuristics, and the gap between them.

Subcommands
-----------
``solve FILE --objective NAME [--time-limit S] [--json]``
    Solve exactly; JSON keys include ``status``, ``objective`` (the value), ``bound``,
    ``lp_bound``, ``assignment`` (task id -> server) and ``gpus``. A solve stopped by the time
    limit exits 3 unless ``--accept-feasible`` is given (then it exits 0 with status
    ``feasible``); either way the LP relaxation bound is reported.
``heuristic FILE --name NAME [--json]``
    Run one heuristic and score it with the validator.
``compare FILE [--objective NAME ...] [--json]``
    Every heuristic against the optimum of every objective: the gap table.
``generate (--bin-packing N | --jobs N) [--seed S] -o FILE``
    Write a seeded synthetic instance.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from optsched.cli.common import EXIT_NOT_OPTIMAL, err_console, json_option, print_json

if TYPE_CHECKING:
    from optsched.placement.instance import PlacementInstance

__all__ = ["placement", "register"]

_OBJECTIVES = ("servers", "traffic", "max-load", "interference", "clwp", "nlwp")
_HEURISTICS = (
    "round-robin",
    "first-fit",
    "best-fit-decreasing",
    "consolidate-first",
    "random",
    "clwp-greedy",
    "nlwp-greedy",
)


@click.group("placement")
def placement() -> None:
    """Place training tasks on servers: exact ILPs, heuristics and their gaps."""


def _load(path: Path) -> PlacementInstance:
    from optsched.placement.instance import load_instance

    return load_instance(path)


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.6g}"


def _percent(gap: float | None) -> str:
    if gap is None:
        return "-"
    if math.isinf(gap):
        # A relative gap over an optimum of 0 is undefined; say what the reference is instead.
        return "vs 0"
    return f"{100 * gap:+.1f}%"


@placement.command("solve")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--objective",
    type=click.Choice(_OBJECTIVES),
    default="servers",
    show_default=True,
    help="What to minimise.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Solver time limit in seconds.",
)
@click.option("--solver", default="highs", show_default=True, help="MILP solver.")
@click.option(
    "--formulation",
    type=click.Choice(["auto", "arcflow", "assignment"]),
    default="auto",
    show_default=True,
    help="Formulation of the servers objective.",
)
@click.option(
    "--symmetry",
    type=click.Choice(["solver", "constraints", "none"]),
    default="solver",
    show_default=True,
    help="Identical servers: the solver's symmetry handling, symmetry-breaking constraints, "
    "or neither.",
)
@click.option(
    "--accept-feasible",
    is_flag=True,
    help="Exit 0 with a feasible incumbent when the time limit stops the solver.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the placement file here.",
)
@json_option
def solve_cmd(
    file: Path,
    objective: str,
    time_limit: float | None,
    solver: str,
    formulation: str,
    symmetry: str,
    accept_feasible: bool,
    output: Path | None,
    as_json: bool,
) -> None:
    """Solve FILE exactly for one objective."""
    from optsched.errors import NotOptimalError
    from optsched.placement.exact import solve_placement

    instance = _load(file)
    options: dict[str, Any] = {"symmetry": symmetry}
    if objective == "servers":
        options["formulation"] = formulation
    try:
        solution = solve_placement(
            instance,
            objective,
            solver=solver,
            time_limit=time_limit,
            accept_feasible=accept_feasible,
            **options,
        )
    except NotOptimalError as exc:
        result = exc.result
        payload = {
            "status": result.status.value,
            "objective_name": objective,
            "objective": result.objective,
            "bound": result.bound,
            "gap": result.gap,
            "lp_bound": result.extra.get("lp_bound"),
            "assignment": None,
            "termination": result.termination.value,
            "solve_seconds": result.solve_seconds,
            "message": str(exc),
        }
        err_console.print(f"[yellow]not optimal[/yellow] {exc}", highlight=False)
        lp = result.extra.get("lp_bound")
        if lp is not None:
            err_console.print(f"LP relaxation bound: {_fmt(lp)}")
        if as_json:
            print_json(payload)
        raise click.exceptions.Exit(EXIT_NOT_OPTIMAL) from None
    if output is not None:
        solution.placement.save(output)
    if as_json:
        print_json(solution.to_dict())
        return
    _print_solution(instance, solution)


def _print_solution(instance: PlacementInstance, solution: Any) -> None:
    from rich.table import Table

    err_console.print(
        f"{solution.objective} ({solution.formulation}): status {solution.result.status.value}, "
        f"objective {_fmt(solution.value)}, bound {_fmt(solution.bound)}, "
        f"LP bound {_fmt(solution.lp_bound)}, solve {solution.result.solve_seconds:.2f} s",
        highlight=False,
    )
    table = Table(title=f"placement of {len(instance.tasks)} tasks")
    table.add_column("server")
    table.add_column("tasks")
    by_server: dict[str, list[str]] = {}
    for task, server in solution.placement.assignment.items():
        gpu = (solution.placement.gpus or {}).get(task)
        by_server.setdefault(server, []).append(task if gpu is None else f"{task}@gpu{gpu}")
    for server in (s.name for s in instance.servers):
        if server in by_server:
            table.add_row(server, ", ".join(by_server[server]))
    err_console.print(table)


@placement.command("heuristic")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--name", type=click.Choice(_HEURISTICS), required=True, help="Which heuristic.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of 'random'.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the placement file here.",
)
@json_option
def heuristic_cmd(file: Path, name: str, seed: int, output: Path | None, as_json: bool) -> None:
    """Run one heuristic on FILE and score it on every objective."""
    from optsched.placement.heuristics import run_heuristic
    from optsched.placement.placement import validate

    instance = _load(file)
    placed = run_heuristic(name, instance, seed)
    report = validate(instance, placed)
    if output is not None:
        placed.save(output)
    if as_json:
        print_json(
            {
                "heuristic": name,
                "valid": report.valid,
                "violations": report.violations,
                "objectives": report.objectives,
                "assignment": placed.assignment,
                "gpus": placed.gpus,
            }
        )
        return
    err_console.print(f"{name}: {'valid' if report.valid else 'INVALID'}")
    for objective, value in report.objectives.items():
        err_console.print(f"  {objective}: {_fmt(value)}", highlight=False)


@placement.command("compare")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--objective",
    "objectives",
    type=click.Choice(_OBJECTIVES),
    multiple=True,
    help="Objectives to compare (repeatable; default all but nlwp).",
)
@click.option(
    "--heuristic",
    "heuristics",
    type=click.Choice(_HEURISTICS),
    multiple=True,
    help="Heuristics to run (repeatable; default all).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Per exact solve; stopped solves are compared against their bound.",
)
@click.option("--solver", default="highs", show_default=True, help="MILP solver.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of 'random'.")
@json_option
def compare_cmd(
    file: Path,
    objectives: tuple[str, ...],
    heuristics: tuple[str, ...],
    time_limit: float | None,
    solver: str,
    seed: int,
    as_json: bool,
) -> None:
    """Gap table: every heuristic against the optimum of every objective."""
    from rich.table import Table

    from optsched.placement.compare import compare

    instance = _load(file)
    result = compare(
        instance,
        objectives=list(objectives) or None,
        heuristics=list(heuristics) or None,
        time_limit=time_limit,
        solver=solver,
        seed=seed,
    )
    if as_json:
        print_json(result.to_dict())
        return
    err_console.print(f"instance: {instance.describe()}", highlight=False)
    table = Table(title="heuristics: objective value (gap vs the exact reference)")
    table.add_column("heuristic")
    for objective in result.objectives:
        table.add_column(objective, justify="right")
    ref_row = []
    for objective in result.objectives:
        kind = result.reference.get(objective, "")
        ref_row.append(f"{_fmt(result.optimum.get(objective))} ({kind})")
    table.add_row("[bold]exact[/bold]", *ref_row)
    for name in result.heuristics:
        cells = []
        for objective in result.objectives:
            cell = result.cell(name, objective)
            if cell.note:
                cells.append(cell.note)
            else:
                cells.append(f"{_fmt(cell.value)} ({_percent(cell.gap)})")
        table.add_row(name, *cells)
    # Wide enough for six objective columns whatever the terminal (stderr may be a file).
    from rich.console import Console

    Console(stderr=True, width=max(err_console.width, 150)).print(table)


@placement.command("generate")
@click.option(
    "--bin-packing",
    "n_tasks",
    type=click.IntRange(min=1),
    default=None,
    help="A bin-packing-shaped instance of this many single-task jobs.",
)
@click.option(
    "--jobs",
    "n_jobs",
    type=click.IntRange(min=1),
    default=None,
    help="A training-cluster instance with this many PS / all-reduce jobs.",
)
@click.option("--servers", "n_servers", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--gpus", type=click.IntRange(min=0), default=8, show_default=True)
@click.option("--racks", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True)
def generate_cmd(
    n_tasks: int | None,
    n_jobs: int | None,
    n_servers: int,
    gpus: int,
    racks: int,
    seed: int,
    output: Path,
) -> None:
    """Write a seeded synthetic placement instance (JSON, or TOML by extension)."""
    from optsched.errors import InvalidInstanceError
    from optsched.placement.instance import bin_packing_instance, generate_instance

    if (n_tasks is None) == (n_jobs is None):
        raise InvalidInstanceError("--bin-packing", "give exactly one of --bin-packing and --jobs")
    if n_tasks is not None:
        instance = bin_packing_instance(n_tasks, seed=seed)
    else:
        assert n_jobs is not None
        instance = generate_instance(n_jobs, n_servers=n_servers, gpus=gpus, racks=racks, seed=seed)
    instance.save(output)
    err_console.print(f"wrote {output}: {instance.describe()}", highlight=False)


def register(group: click.Group) -> None:
    """Add ``placement`` to the root command."""
    group.add_command(placement)
