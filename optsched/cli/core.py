"""Family-independent subcommands: ``schema`` and ``validate``.

Families register their file formats in :data:`SCHEMAS` (name -> ``"module:function"``
returning a JSON Schema dict) and their checkers in :data:`VALIDATORS` (instance ``kind`` ->
``"module:function"`` taking ``(instance_path, schedule_path_or_None)`` and returning a
JSON-ready report dict with a boolean ``"valid"``).
Imports are lazy so ``optsched --help`` stays fast.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

from optsched.cli.common import err_console, json_option, print_json
from optsched.errors import InvalidInstanceError

__all__ = ["SCHEMAS", "VALIDATORS", "register"]

#: Schema name -> "module:function" returning the JSON Schema (a dict).
SCHEMAS: dict[str, str] = {
    "oasis-instance": "optsched.online.oasis.instance:instance_schema",
    "oasis-schedule": "optsched.online.oasis.schedule:schedule_schema",
    "oasis-prices": "optsched.online.oasis.prices:price_schema",
    "dnn-profile": "optsched.profiles:profile_schema",
    "comm-instance": "optsched.comm.pace.instance:instance_schema",
    "tensorlights-instance": "optsched.comm.tensorlights.instance:instance_schema",
    "placement-instance": "optsched.placement.instance:instance_schema",
    "placement": "optsched.placement.solution:placement_schema",
    "trace-job": "optsched.traces.schema:row_schema",
    "optimus-instance": "optsched.allocation.optimus:instance_schema",
    "andreas-instance": "optsched.allocation.andreas:instance_schema",
    "chronus-instance": "optsched.allocation.chronus.instance:instance_schema",
}

#: Instance kind (the file's optional ``"kind"`` key; default ``"oasis-instance"``) ->
#: "module:function" taking (instance path, schedule path or None) and returning a report dict.
VALIDATORS: dict[str, str] = {
    "oasis-instance": "optsched.cli.oasis:validate_files",
    "tensorlights-instance": "optsched.comm.tensorlights.validator:validate_files",
    "placement-instance": "optsched.cli.placement:validate_files",
    "comm-instance": "optsched.comm.pace.solve:validate_files",
}


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@click.command("schema")
@click.argument("name", type=click.Choice(sorted(SCHEMAS), case_sensitive=False), required=False)
@click.option("--list", "list_only", is_flag=True, help="List the schema names.")
def schema_cmd(name: str | None, list_only: bool) -> None:
    """Print the JSON Schema of a file format (instances, schedules, profiles)."""
    if list_only or name is None:
        for key in sorted(SCHEMAS):
            click.echo(key)
        return
    print_json(_resolve(SCHEMAS[name.lower()])())


@click.command("validate")
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("schedule", type=click.Path(dir_okay=False, path_type=Path), required=False)
@json_option
def validate_cmd(instance: Path, schedule: Path | None, as_json: bool) -> None:
    """Check INSTANCE, and SCHEDULE against it when given.

    Exits 0 when everything is valid, 2 when the instance or the schedule is not (the message
    names the field or lists every violated constraint).
    """
    from optsched._validation import load_data

    data = load_data(instance)
    kind = data.get("kind", "oasis-instance") if isinstance(data, dict) else "oasis-instance"
    if not isinstance(kind, str) or kind not in VALIDATORS:
        raise InvalidInstanceError(
            "kind", f"unknown instance kind {kind!r}; known: {sorted(VALIDATORS)}"
        )
    report = _resolve(VALIDATORS[kind])(instance, schedule)
    if as_json:
        print_json(report)
    else:
        lines = report.get("lines") or []
        for line in lines:
            err_console.print(line, highlight=False, markup=False)
        err_console.print("[green]valid[/green]" if report["valid"] else "[red]invalid[/red]")
    if not report["valid"]:
        raise click.exceptions.Exit(2)


@click.command("solvers")
@json_option
def solvers_cmd(as_json: bool) -> None:
    """List the solvers optsched knows, the paths to each, and how to install each.

    The paths are ``pyomo`` and ``cvxpy`` models and ``matrix`` (sparse-matrix models).
    """
    from optsched.solvers import SOLVERS, available_solvers

    present = set(available_solvers())
    rows: list[dict[str, Any]] = [
        {
            "name": info.name,
            "installed": info.name in present,
            "frontends": list(info.frontends),
            "mip": info.mip,
            "install": info.install,
        }
        for info in SOLVERS.values()
    ]
    if as_json:
        print_json({"solvers": rows})
        return
    for row in rows:
        mark = "installed" if row["installed"] else f"missing ({row['install']})"
        kind = "MILP" if row["mip"] else "LP/conic"
        err_console.print(
            f"{row['name']:<12} {kind:<9} {'/'.join(row['frontends']):<19} {mark}",
            highlight=False,
            markup=False,
        )


@click.command("limits")
@json_option
def limits_cmd(as_json: bool) -> None:
    """Print the size budgets in force (raise one with the environment variable OPTSCHED_<NAME>)."""
    from optsched import limits

    budget = limits.current().describe()
    if as_json:
        print_json({"limits": budget})
        return
    for name, value in budget.items():
        err_console.print(
            f"{name:<22} {value:>16,}   OPTSCHED_{name.upper()}", highlight=False, markup=False
        )


def register(group: click.Group) -> None:
    """Add ``schema``, ``validate``, ``solvers`` and ``limits`` to the root command."""
    group.add_command(schema_cmd)
    group.add_command(validate_cmd)
    group.add_command(solvers_cmd)
    group.add_command(limits_cmd)
