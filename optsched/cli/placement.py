"""``optsched placement``: exact placement ILPs, heuristics, and the gap between them.

Subcommands
-----------
``solve FILE --objective NAME [solver options] [--json]``
    Solve exactly; the JSON is the :class:`~optsched.results.ExactResult` (``status``,
    ``optimal``, ``objective`` (the value), ``objective_name``, ``bound``, ``gap``, ``lp_bound``,
    ``solution`` (the placement: ``assignment`` task id -> server, ``gpus``)). A solve stopped by
    a limit exits 3 unless ``--accept-feasible`` is given (then it exits 0 with status
    ``feasible``); either way the incumbent placement, when there is one, and the LP relaxation
    bound are reported.
``heuristic FILE --heuristic NAME [--json]``
    Run one heuristic and score it with the validator.
``compare FILE [--objective A,B] [--heuristic X,Y] [solver options] [--json]``
    Every heuristic against the optimum of every objective: the gap table. Exits 3 when an
    exact solve stopped short (its gaps are then measured against the bound) unless
    ``--accept-feasible``.
``generate (--bin-packing N | --jobs N) [--seed S] -o FILE``
    Write a seeded synthetic instance.

Solver options are the shared ones (``--solver``, ``--time-limit``, ``--mip-gap``,
``--threads``, ``--accept-feasible``) plus ``--solver-option NAME=VALUE`` (repeatable), passed
to the solver as a native option, e.g. ``--solver-option mip_max_nodes=0`` for HiGHS.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from optsched.cli.common import (
    EXIT_NOT_OPTIMAL,
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
from optsched.cli.json_units import PLACEMENT_UNITS, placement_units

if TYPE_CHECKING:
    from optsched.placement import Placement, PlacementComparison, PlacementInstance
    from optsched.results import ExactResult

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


class ChoiceList(click.ParamType):
    """Comma-separated names from a fixed set (the command line's one list syntax)."""

    name = "list"

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``"a,b"`` into ``("a", "b")``, each a known name."""
        if isinstance(value, tuple):
            return value
        out = []
        for item in str(value).split(","):
            name = item.strip()
            if name not in self.choices:
                self.fail(f"{name!r} is not one of {', '.join(self.choices)}", param, ctx)
            out.append(name)
        return tuple(out)


def _native_options(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; values parsed as int, float, true/false, else kept as text."""
    out: dict[str, Any] = {}
    for text in values:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{text!r}: write NAME=VALUE", ctx=ctx, param=param)
        value: Any = raw.strip()
        lowered = value.lower()
        if lowered in ("true", "false"):
            value = lowered == "true"
        else:
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    continue
        if isinstance(value, float) and not math.isfinite(value):
            raise click.BadParameter(f"{text!r}: the value must be finite", ctx=ctx, param=param)
        out[name.strip()] = value
    return out


native_option = click.option(
    "--solver-option",
    "native",
    multiple=True,
    callback=_native_options,
    metavar="NAME=VALUE",
    help="A native solver option (repeatable), e.g. mip_max_nodes=0 for HiGHS.",
)


@click.group("placement")
def placement() -> None:
    """Place training tasks on servers: exact ILPs, heuristics and their gaps."""


def _load(path: Path) -> PlacementInstance:
    from optsched.placement import PlacementInstance

    return PlacementInstance.load(path)


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return plain(value, 6)


def _percent(gap: float | None) -> str:
    if gap is None:
        return "-"
    if math.isinf(gap):
        # A relative gap over an optimum of 0 is undefined; say what the reference is instead.
        return "vs 0"
    return f"{100 * gap:+.1f}%"


@placement.command("solve")
@wide_option
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--objective",
    type=click.Choice(_OBJECTIVES),
    default="servers",
    show_default=True,
    help="What to minimise.",
)
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
@native_option
@output_option((".json", ".toml"), help="Also write the placement (optimal or incumbent) here")
@json_option
@solver_options(imports=("optsched.placement",))  # innermost: it wraps the function
def solve_cmd(
    file: Path,
    objective: str,
    formulation: str,
    symmetry: str,
    solver_opts: SolverOptions,
    native: dict[str, Any],
    output: Path | None,
    as_json: bool,
) -> None:
    """Solve FILE exactly for one objective."""
    from optsched.errors import NotOptimalError
    from optsched.placement import solve

    instance = _load(file)
    options: dict[str, Any] = {"symmetry": symmetry}
    if objective == "servers":
        options["formulation"] = formulation
    try:
        result = solve(
            instance, objective, **solver_opts.kwargs(), solver_options=native, **options
        )
    except NotOptimalError as exc:
        # The incumbent is kept: written with -o, and in the JSON of the error (the top level
        # prints the ExactResult, solution included, and exits 3).
        stopped: Any = exc.result
        if output is not None and stopped.solution is not None:
            stopped.solution.save(output)
        lp = stopped.lp_bound
        if lp is not None:
            err_console.print(f"LP relaxation bound: {_fmt(lp)}", highlight=False)
        raise
    if output is not None and result.solution is not None:
        result.solution.save(output)
    if as_json and output is not None and result.solution is not None:
        # the placement is in the file: one line with the solve's figures, not the file again
        headline = {k: v for k, v in result.to_dict().items() if k != "solution"}
        print_written(output, "placement", headline, placement_units(objective))
        return
    if as_json:
        print_json(with_units(result.to_dict(), placement_units(objective)))
        return
    _print_solution(instance, result)


def _print_solution(instance: PlacementInstance, result: ExactResult[Placement]) -> None:
    """The solve's figures, then the placement's table, on stdout."""
    placement = result.solution
    figures = (
        f"{result.objective_name} ({result.extra.get('formulation', '')}): status "
        f"{result.status.value}, objective {_fmt(result.objective)}, bound {_fmt(result.bound)}, "
        f"LP bound {_fmt(result.lp_bound)}, solve {result.solve_seconds:.2f} s"
    )
    if placement is None:
        say(figures)
        return
    table = TextTable(f"placement of {len(instance.tasks)} tasks", notes=[figures])
    table.add_column("server", justify="left")
    table.add_column("tasks", justify="left", wrap=True)
    by_server: dict[str, list[str]] = {}
    for task, server in placement.assignment.items():
        gpu = (placement.gpus or {}).get(task)
        by_server.setdefault(server, []).append(task if gpu is None else f"{task}@gpu{gpu}")
    for server in (s.name for s in instance.servers):
        if server in by_server:
            table.add_row(server, ", ".join(by_server[server]))
    emit(table)


@placement.command("heuristic")
@wide_option
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--heuristic",
    "--name",
    "name",
    type=click.Choice(_HEURISTICS),
    required=True,
    help="Which heuristic (--name is the older spelling).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of 'random'.")
@output_option((".json", ".toml"), help="Also write the placement here")
@json_option
def heuristic_cmd(file: Path, name: str, seed: int, output: Path | None, as_json: bool) -> None:
    """Run one heuristic on FILE and score it on every objective."""
    from optsched.placement import run_heuristic, validate

    instance = _load(file)
    placed = run_heuristic(name, instance, seed)
    report = validate(instance, placed)
    if output is not None:
        placed.save(output)
    if as_json:
        payload = {"heuristic": name, **report.to_dict(), "solution": placed.to_dict()}
        print_json(with_units(payload, PLACEMENT_UNITS))
        return
    say(f"{name}: {'valid' if report.ok else 'INVALID'}")
    for objective, value in report.objectives.items():
        say(f"  {objective}: {_fmt(value)}")


@placement.command("compare")
@wide_option
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--objective",
    "objectives",
    type=ChoiceList(_OBJECTIVES),
    multiple=True,
    help="Objectives to compare, comma-separated (default all but nlwp).",
)
@click.option(
    "--heuristic",
    "heuristics",
    type=ChoiceList(_HEURISTICS),
    multiple=True,
    help="Heuristics to run, comma-separated (default all).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of 'random'.")
@native_option
@json_option
@solver_options(imports=("optsched.placement",))  # innermost: it wraps the function
def compare_cmd(
    file: Path,
    objectives: tuple[tuple[str, ...], ...],
    heuristics: tuple[tuple[str, ...], ...],
    seed: int,
    solver_opts: SolverOptions,
    native: dict[str, Any],
    as_json: bool,
) -> None:
    """Gap table: every heuristic against the optimum of every objective.

    Exits 3 when an exact solve stopped short (its heuristics' gaps are then measured against
    the solver's bound) unless --accept-feasible.
    """
    from optsched.placement import compare

    instance = _load(file)
    objs = [o for group in objectives for o in group]
    names = [h for group in heuristics for h in group]
    result = compare(
        instance,
        objectives=list(dict.fromkeys(objs)) or None,
        heuristics=list(dict.fromkeys(names)) or None,
        time_limit=solver_opts.time_limit,
        solver=solver_opts.solver,
        mip_gap=solver_opts.mip_gap,
        threads=solver_opts.threads,
        solver_options=native,
        seed=seed,
    )
    if as_json:
        print_json(with_units(result.to_dict(), PLACEMENT_UNITS))
    else:
        _print_comparison(instance, result)
    if result.stopped_short:
        err_console.print(
            f"[yellow]not optimal[/yellow] the exact solve of {', '.join(result.stopped_short)} "
            "stopped short: those gaps are measured against the solver's bound"
            + ("" if solver_opts.accept_feasible else " (--accept-feasible to exit 0)"),
            highlight=False,
        )
        if not solver_opts.accept_feasible:
            raise click.exceptions.Exit(EXIT_NOT_OPTIMAL)


def _print_comparison(instance: PlacementInstance, result: PlacementComparison) -> None:
    """The heuristics' objective values and gaps on stdout, the exact reference first."""
    table = TextTable(
        "heuristics: objective value (gap vs the exact reference)",
        notes=[f"instance: {instance.describe()}"],
    )
    table.add_column("heuristic", justify="left", wrap=True)
    for objective in result.objectives:
        table.add_column(objective, justify="right", wrap=True)
    ref_row = []
    for objective in result.objectives:
        kind = result.reference.get(objective, "")
        ref_row.append(f"{_fmt(result.optimum.get(objective))} ({kind})")
    table.add_row("exact", *ref_row)
    for name in result.heuristics:
        cells = []
        for objective in result.objectives:
            cell = result.cell(name, objective)
            if cell.note:
                cells.append(cell.note)
            else:
                cells.append(f"{_fmt(cell.value)} ({_percent(cell.gap)})")
        table.add_row(name, *cells)
    emit(table)


@placement.command("generate")
@click.option(
    "--bin-packing",
    "n_tasks",
    type=click.IntRange(min=1, max=100_000),
    default=None,
    help="A bin-packing-shaped instance of this many single-task jobs.",
)
@click.option(
    "--jobs",
    "n_jobs",
    type=click.IntRange(min=1, max=10_000),
    default=None,
    help="A training-cluster instance with this many PS / all-reduce jobs.",
)
@click.option(
    "--servers", "n_servers", type=click.IntRange(min=1, max=100_000), default=4, show_default=True
)
@click.option("--gpus", type=click.IntRange(min=0, max=1024), default=8, show_default=True)
@click.option("--racks", type=click.IntRange(min=1, max=10_000), default=1, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@output_option((".json", ".toml"), required=True, help="The instance file")
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
    from optsched.placement import bin_packing_instance, generate_instance

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
