"""Family-independent subcommands: ``schema``, ``validate``, ``families``, ``solvers``, ``limits``.

``schema``, ``validate`` and ``families`` are generated from the registry of families
(:data:`optsched.family.FAMILIES`): every family's instance ``kind`` is a schema name and a kind
``validate`` accepts, and a solution type with its own ``kind`` (``oasis-schedule``,
``placement``) is a schema name too. File formats that belong to no family's instance or
solution (price parameters, DNN profiles, trace rows) are listed in :data:`FILE_FORMATS`.
Imports are lazy so ``optsched --help`` stays fast: a family is imported when a command needs it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from optsched.cli.common import (
    TextTable,
    emit,
    json_option,
    print_json,
    say,
    wide_option,
    with_units,
)
from optsched.cli.json_units import LIMITS_UNITS, family_units
from optsched.errors import InvalidInstanceError

if TYPE_CHECKING:
    from optsched.family import Family

__all__ = ["FILE_FORMATS", "register", "schema_names", "validate_files"]

#: File formats outside the families' instances and solutions: schema name ->
#: "module:function" returning its JSON Schema (a dict).
FILE_FORMATS: dict[str, str] = {
    "oasis-prices": "optsched.online.oasis.prices:price_schema",
    "dnn-profile": "optsched.profiles:profile_schema",
    "trace-job": "optsched.traces.schema:row_schema",
    "sim-experiment": "optsched.runs.experiment:experiment_schema",
}


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _call(target: str) -> dict[str, Any]:
    schema: dict[str, Any] = _resolve(target)()
    return schema


def schema_names() -> list[str]:
    """Every schema name, sorted (imports no family).

    The names are the families' instance kinds, their solutions' kinds where a solution is a
    file of its own, and :data:`FILE_FORMATS`.
    """
    from optsched.family import family_kinds, solution_kinds

    return sorted({*FILE_FORMATS, *family_kinds(), *solution_kinds()})


def _schema(name: str) -> dict[str, Any]:
    """The JSON Schema called ``name``, importing only the family it belongs to."""
    from optsched.family import FAMILIES, family_kinds, solution_kinds

    if name in FILE_FORMATS:
        return _call(FILE_FORMATS[name])
    owner = family_kinds().get(name)
    if owner is not None:
        return FAMILIES[owner].Instance.schema()  # type: ignore[attr-defined]
    owner = solution_kinds().get(name)
    if owner is not None:
        return FAMILIES[owner].Solution.schema()  # type: ignore[attr-defined]
    raise InvalidInstanceError("name", f"unknown schema {name!r}; known: {schema_names()}")


@click.command("schema")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the schema names.")
def schema_cmd(name: str | None, list_only: bool) -> None:
    """Print the JSON Schema of a file format (instances, schedules, profiles).

    NAME is a family's instance kind (``optsched families`` lists them), a solution kind
    (``oasis-schedule``, ``placement``) or another file format; ``--list`` prints them all.
    """
    if list_only or name is None:
        for key in schema_names():
            click.echo(key)
        return
    print_json(_schema(name.lower()))


def validate_files(
    family: Family, instance_path: str | Path, schedule_path: str | Path | None
) -> dict[str, Any]:
    """Check an instance file of ``family``, and a solution file against it when given.

    Returns
    -------
    dict
        ``valid``, ``kind``, ``family``, the instance's sizes (``family.describe``) and, with a
        solution, the :meth:`~optsched.results.Report.to_dict` of the family's validator
        (``objective`` recomputed, ``violations``); ``lines`` holds the human output.

    Raises
    ------
    InvalidInstanceError
        The instance or the solution file is malformed (the message names the field), or a
        solution file was given for a family whose solutions are not files.
    """
    instance = family.Instance.load(instance_path)  # type: ignore[attr-defined]
    sizes = dict(family.describe(instance)) if family.describe is not None else {}
    out: dict[str, Any] = {"valid": True, "kind": family.kind, "family": family.name, **sizes}
    said = ", ".join(f"{k} {v}" for k, v in sizes.items() if isinstance(v, (int, float, str)))
    lines = [f"instance ({family.kind}{': ' + said if said else ''}): valid"]
    if schedule_path is not None:
        if not family.solution_files:
            raise InvalidInstanceError(
                "schedule",
                f"solutions of the {family.name} family are Python objects, not files: check "
                f"them with {family.package}.validate, or give the instance alone",
            )
        solution = family.Solution.load(schedule_path)  # type: ignore[attr-defined]
        report = family.validate(instance, solution)
        out.update(report.to_dict())
        lines.append(
            f"solution: {'feasible' if report.ok else 'INFEASIBLE'}"
            + (
                f", objective {report.objective:.6g} (recomputed)"
                if report.objective is not None
                else ""
            )
        )
        lines.extend(
            f"  {name}: {value:.6g}"
            for name, value in report.objectives.items()
            if value is not None
        )
        lines.extend(f"  violation: {v}" for v in report.violations[:50])
    out["lines"] = lines
    return out


@click.command("validate")
@click.argument("instance", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("schedule", type=click.Path(dir_okay=False, path_type=Path), required=False)
@json_option
def validate_cmd(instance: Path, schedule: Path | None, as_json: bool) -> None:
    """Check INSTANCE, and SCHEDULE against it when given.

    The instance file's ``kind`` names its family (``optsched families`` lists the kinds; a
    file without one is an ``oasis-instance``, a simulator world says ``format``). Exits 0 when
    everything is valid, 2 when the instance or the schedule is not (the message names the
    field or lists every violated constraint).
    """
    from optsched._validation import load_data
    from optsched.family import family_for_kind, get_family, kind_of

    family = get_family(family_for_kind(kind_of(load_data(instance))))
    report = validate_files(family, instance, schedule)
    if as_json:
        print_json(with_units(report, family_units(family.name)))
    else:
        for line in report.get("lines") or []:
            say(line)
        say("valid" if report["valid"] else "invalid")
    if not report["valid"]:
        raise click.exceptions.Exit(2)


@click.command("families")
@json_option
@wide_option
def families_cmd(as_json: bool) -> None:
    """List every problem family: instance kind, objectives, algorithms and what it decides."""
    from optsched.family import FAMILIES

    rows = [family.to_dict() for family in FAMILIES.values()]
    if as_json:
        print_json({"families": rows})
        return
    for row in rows:
        say(f"{row['name']}  {row['summary']}")
        say(f"  kind        {row['kind']}  ({row['package']})")
        say(f"  objectives  {', '.join(row['objectives'])}")
        say(f"  algorithms  {', '.join(row['algorithms']) or '-'}")


@click.command("solvers")
@json_option
@wide_option
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
    table = TextTable(box="simple")
    for header in ("solver", "kind", "paths", "installed"):
        table.add_column(header, justify="left", wrap=header == "installed")
    for row in rows:
        mark = "yes" if row["installed"] else f"no: {row['install']}"
        kind = "MILP" if row["mip"] else "LP/conic"
        table.add_row(row["name"], kind, "/".join(row["frontends"]), mark)
    emit(table)


@click.command("limits")
@json_option
@wide_option
def limits_cmd(as_json: bool) -> None:
    """Print the size budgets in force (raise one with the environment variable OPTSCHED_<NAME>)."""
    from optsched import limits

    budget = limits.current().describe()
    if as_json:
        print_json(with_units({"limits": budget}, LIMITS_UNITS))
        return
    table = TextTable(box="simple")
    for header, justify in (("limit", "left"), ("value", "right"), ("raise with", "left")):
        table.add_column(header, justify=justify)
    for name, value in budget.items():
        table.add_row(name, f"{value:,}", f"OPTSCHED_{name.upper()}")
    emit(table)


def register(group: click.Group) -> None:
    """Add ``schema``, ``validate``, ``families``, ``solvers`` and ``limits`` to the root."""
    group.add_command(schema_cmd)
    group.add_command(validate_cmd)
    group.add_command(families_cmd)
    group.add_command(solvers_cmd)
    group.add_command(limits_cmd)
