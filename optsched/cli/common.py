"""Shared pieces of the ``optsched`` command: result output, diagnostics, exit codes.

Contract (DESIGN §2.2): a command's result goes to stdout, its diagnostics to stderr. The
result is a table (or listing) for people, or with ``--json`` exactly one JSON object; with
``--json -o FILE`` the file holds the full result and the JSON object on stdout is a one-line
summary (what was written where, the headline numbers). Diagnostics are progress, warnings,
``wrote FILE`` lines and errors. Tables fit :data:`~optsched.report._text.TABLE_WIDTH` (100)
columns, split into parts rather than cut; ``--wide`` draws every column on one line.
Exit codes: 0 success, 2 invalid input, 3 the solver did not reach the requested status, 1
anything else.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from optsched._json import dumps, to_jsonable
from optsched.report._text import TABLE_WIDTH, TextTable, plain

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NOT_OPTIMAL",
    "EXIT_OTHER",
    "FIELD_FLAGS",
    "FiniteFloat",
    "NumberList",
    "SolverOptions",
    "TextTable",
    "command_started",
    "emit",
    "err_console",
    "json_option",
    "mark_started",
    "output_option",
    "plain",
    "preload",
    "print_json",
    "print_written",
    "results_on_stderr",
    "say",
    "solver_options",
    "table_width",
    "to_jsonable",
    "unit_entry",
    "units_map",
    "wide_option",
    "with_units",
]

EXIT_OTHER = 1
EXIT_INVALID = 2
EXIT_NOT_OPTIMAL = 3
EXIT_INTERRUPTED = 130

#: Diagnostics (progress, warnings, errors) go to stderr; results go to stdout (:func:`emit`,
#: :func:`say`, :func:`print_json`). ``soft_wrap``: error text is never hard-wrapped (a message
#: must stay one greppable line when stderr is a file).
err_console = Console(stderr=True, soft_wrap=True)

#: Library argument names -> the command-line flag a user typed, so that errors raised by the
#: library name the flag (``--time-limit: must be ...``), not the Python argument.
FIELD_FLAGS: dict[str, str] = {
    "time_limit": "--time-limit",
    "mip_gap": "--mip-gap",
    "threads": "--threads",
    "solver": "--solver",
    "seed": "--seed",
    "accept_feasible": "--accept-feasible",
    "address": "--address",
}

F = TypeVar("F", bound=Callable[..., Any])

#: :func:`time.monotonic` when the running command's work started: after the interpreter
#: started, optsched and the solver stack were imported and the arguments parsed (None before).
_STARTED: float | None = None

#: Seconds a command may run past its ``--time-limit``: starting the interpreter, importing
#: optsched and the solver stack and parsing the arguments before the clock starts, and reading
#: back, checking and writing the result after the last solve stops. Stated in the docs
#: (guide/limits) and held by the tests.
TIME_LIMIT_MARGIN = 5.0

#: Modules every solving command needs, imported before its budget starts: importing them is
#: not the command's work, and on a loaded machine it once took a whole one-second budget.
SOLVER_STACK: tuple[str, ...] = (
    "pyomo.environ",
    "pyomo.contrib.solver.common.factory",
    "optsched.solvers.pyomo",
    "optsched.family.exact",
)


def command_started() -> float:
    """When the running command's work started (now, when it has not been marked)."""
    import time

    return time.monotonic() if _STARTED is None else _STARTED


def mark_started(when: float | None) -> None:
    """Record (or, with ``None``, forget) the start of the command being run."""
    global _STARTED
    _STARTED = when


def preload(modules: Sequence[str]) -> None:
    """Import ``modules`` now (a module whose optional package is missing is skipped).

    The solve reports the missing solver itself, with its install hint, at the right time.
    """
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            continue


class NumberList(click.ParamType):
    """The one list syntax of the command line: comma-separated values, ``--workers 4,8,16``.

    Each item is checked like a single value (finite, within the bounds); an empty item or a
    non-number exits 2 naming the option.
    """

    name = "list"

    def __init__(
        self,
        kind: type[int] | type[float] = int,
        min: float | None = None,
        max: float | None = None,
    ) -> None:
        self.kind, self.min, self.max = kind, min, max

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``"a,b,c"`` into a tuple of numbers."""
        if isinstance(value, tuple):
            return value
        out = []
        for item in str(value).split(","):
            text = item.strip()
            try:
                number = self.kind(text)
            except ValueError:
                self.fail(f"{text!r} in {value!r} is not a {self.kind.__name__}", param, ctx)
            if isinstance(number, float) and not math.isfinite(number):
                self.fail(f"{text!r} is not a finite number", param, ctx)
            if (self.min is not None and number < self.min) or (
                self.max is not None and number > self.max
            ):
                self.fail(f"{text} is outside [{self.min}, {self.max}]", param, ctx)
            out.append(number)
        return tuple(out)


class FiniteFloat(click.ParamType):
    """A float that must be finite (no ``nan``/``inf``) and within optional bounds."""

    name = "number"

    def __init__(
        self, min: float | None = None, max: float | None = None, min_open: bool = False
    ) -> None:
        self.min, self.max, self.min_open = min, max, min_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse and check ``value``."""
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and (number < self.min or (self.min_open and number == self.min)):
            self.fail(f"{value} must be {'>' if self.min_open else '>='} {self.min:g}", param, ctx)
        if self.max is not None and number > self.max:
            self.fail(f"{value} must be <= {self.max:g}", param, ctx)
        return number


@dataclass(frozen=True)
class SolverOptions:
    """What :func:`solver_options` collects, ready to pass to a family's ``solve``."""

    solver: str = "highs"
    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    accept_feasible: bool = False

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``solve(instance, **opts.kwargs())``."""
        return {
            "solver": self.solver,
            "time_limit": self.time_limit,
            "mip_gap": self.mip_gap,
            "threads": self.threads,
            "accept_feasible": self.accept_feasible,
        }


class _SolverName(click.ParamType):
    name = "solver"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from optsched.solvers import SOLVERS

        name = str(value).lower()
        if name not in SOLVERS:
            self.fail(f"unknown solver {value!r}; known: {', '.join(sorted(SOLVERS))}", param, ctx)
        return name


def solver_options(
    default: str = "highs", *, whole_command: bool = True, imports: Sequence[str] = ()
) -> Callable[[F], F]:
    """Add ``--solver``, ``--time-limit``, ``--mip-gap``, ``--threads``, ``--accept-feasible``.

    The command receives one ``solver_opts`` argument (a :class:`SolverOptions`). Every value is
    checked here (finite, in range, a known solver), so a bad one exits 2 naming the flag.
    With ``whole_command`` (the default) ``--time-limit`` bounds the whole command from the
    start of its work (:mod:`optsched.solvers.deadline`): once the arguments are parsed and
    the solver stack (:data:`SOLVER_STACK`) and ``imports`` (the command's family packages)
    are imported, so that a budget is never spent on imports. A sweep whose limit is per run
    passes ``False``.
    """

    def decorate(func: F) -> F:
        def pack(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
            ctx.meta.setdefault("optsched_solver", {})[param.name] = value
            return value

        options = [
            click.option(
                "--accept-feasible",
                is_flag=True,
                expose_value=False,
                callback=pack,
                help="Report a feasible incumbent found before a limit instead of failing (exit 0"
                " instead of 3).",
            ),
            click.option(
                "--threads",
                type=click.IntRange(min=1),
                default=None,
                expose_value=False,
                callback=pack,
                help="Solver threads.",
            ),
            click.option(
                "--mip-gap",
                type=FiniteFloat(min=0),
                default=None,
                expose_value=False,
                callback=pack,
                help="Relative MIP gap at which the solver may stop (default 1e-7); a solve "
                "stopped at a gap looser than 1e-6 is reported as feasible, not optimal.",
            ),
            click.option(
                "--time-limit",
                type=FiniteFloat(min=0, min_open=True),
                default=None,
                expose_value=False,
                callback=pack,
                help="Seconds, model building included; past it the best incumbent and bound are "
                "reported (exit 3 unless --accept-feasible).",
            ),
            click.option(
                "--solver",
                type=_SolverName(),
                default=default,
                show_default=True,
                expose_value=False,
                callback=pack,
                help="Solver name (see `optsched solvers`).",
            ),
        ]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from optsched.solvers.deadline import deadline

            got = click.get_current_context().meta.get("optsched_solver", {})
            kwargs["solver_opts"] = opts = SolverOptions(**got)
            # --time-limit bounds the whole command from the start of its work: every solve
            # inside it gets only what reading the input and the earlier solves left. The
            # arguments are parsed by now; the imports are done before the clock starts.
            budget = opts.time_limit if whole_command else None
            if budget is not None:
                import time

                preload((*SOLVER_STACK, *imports))
                mark_started(time.monotonic())
            with deadline(budget, started=command_started()):
                return func(*args, **kwargs)

        # functools.wraps also carries ``__click_params__``: options declared below this
        # decorator (applied before it) stay on the command.
        functools.wraps(func)(wrapper)
        out: Any = wrapper
        for option in options:
            out = option(out)
        return out

    return decorate


def _check_writable(path: Path, ctx: click.Context, param: click.Parameter) -> None:
    """Refuse, before the run, a folder in which no file can be created (read-only, forbidden).

    Permission bits are not enough (root ignores them; a read-only mount does not show in
    them): a temporary file is created beside ``path`` and removed.
    """
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".probe"):
            pass
    except OSError as exc:
        raise click.BadParameter(
            f"{path}: cannot write in {path.parent}: {exc.strerror or exc}", ctx=ctx, param=param
        ) from None


def output_option(
    formats: Sequence[str] = (".json",),
    *,
    required: bool = False,
    help: str = "File to write.",
) -> Callable[[F], F]:
    """Add ``-o/--output PATH`` whose extension must be one of ``formats``.

    An extension that does not match the format written is refused (exit 2), so ``-o x.csv``
    never silently writes JSON.
    """
    allowed = tuple(f.lower() for f in formats)

    def check(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        if value is not None and value.suffix.lower() not in allowed:
            raise click.BadParameter(
                f"{value.name}: the file written is {' or '.join(allowed)}, got extension "
                f"{value.suffix or '(none)'!r}",
                ctx=ctx,
                param=param,
            )
        if value is not None and not value.parent.is_dir():
            # Refused before the run: the writers create no folders, so ``-o /dev/full/x.json``
            # or ``-o missing/x.json`` once failed with an OSError (exit 1) after the whole run.
            what = "is not a directory" if value.parent.exists() else "does not exist"
            raise click.BadParameter(f"{value}: {value.parent} {what}", ctx=ctx, param=param)
        if value is not None:
            _check_writable(value, ctx, param)
        return value

    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        required=required,
        callback=check,
        help=f"{help} ({', '.join(allowed)}).",
    )


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout."
)


def print_json(obj: Any) -> None:
    """Write one JSON object to stdout (strict JSON: NaN becomes null)."""
    sys.stdout.write(dumps(obj) + "\n")
    sys.stdout.flush()


def unit_entry(path: Sequence[str], table: dict[str, str]) -> str | None:
    """The entry of ``table`` naming the unit of the field at ``path`` (``None``: none does).

    ``path`` is the field's chain of keys from the document's top (lists add nothing). An
    entry is a field name, or dotted names with ``*`` wildcards matched against the last keys
    of the chain; an exact name wins, else the first entry (in the table's order) that matches.

    >>> table = {"jct_mean": "s", "gap_*": "fraction", "bounds.*.value": "s"}
    >>> unit_entry(["policies", "gap_makespan"], table), unit_entry(["bounds", "m", "value"], table)
    ('gap_*', 'bounds.*.value')
    >>> unit_entry(["value"], table) is None
    True
    """
    if not path:
        return None
    if path[-1] in table:
        return path[-1]
    for entry in table:
        parts = entry.split(".")
        if len(parts) <= len(path) and all(
            fnmatch.fnmatchcase(key, part)
            for key, part in zip(path[-len(parts) :], parts, strict=True)
        ):
            return entry
    return None


def units_map(document: Any, table: dict[str, str]) -> dict[str, str]:
    """The entries of ``table`` naming the fields ``document`` holds, at any depth, sorted.

    A document's ``units`` map holds only the fields it has, so a reader sees at once the unit
    of every number on the page (a map of every field of a family would bury them). An
    existing ``units`` key is not walked, and a key whose value holds a map
    (``"jobs": [{...}]``) is a section, not a field: only its fields get units. Linear in the
    document's size times the table's.

    >>> units_map({"rows": [{"jct_mean": 1.0, "gap_x": 0.1}]}, {"jct_mean": "s", "gap_*": "1"})
    {'gap_*': '1', 'jct_mean': 's'}
    """
    found: set[str] = set()
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                where = (*path, str(key))
                entry = unit_entry(where, table)
                if entry is not None and not _holds_map(value):
                    found.add(entry)
                if key != "units":
                    stack.append((value, where))
        elif isinstance(node, list):
            stack.extend((item, path) for item in node)
    return {key: table[key] for key in sorted(found)}


def _holds_map(value: Any) -> bool:
    """``value`` is a map or a list holding one, at any depth."""
    if isinstance(value, list):
        return any(_holds_map(item) for item in value)
    return isinstance(value, dict)


def with_units(document: dict[str, Any], table: dict[str, str]) -> dict[str, Any]:
    """``document`` with its ``units`` map (:func:`units_map` of ``table``) added."""
    return {**document, "units": units_map(document, table)}


def print_written(
    output: Path, written: str, headline: dict[str, Any], units: dict[str, str] | None = None
) -> None:
    """``--json -o FILE``: one line on stdout saying what was written where, and the headline.

    The file holds the full result; printing it again would bury the few numbers a reader
    wants, so the JSON object is ``{"output": FILE, "written": what, **headline}`` on one line.
    """
    payload = {"output": str(output), "written": written, **headline}
    if units is not None:
        payload = with_units(payload, units)
    sys.stdout.write(dumps(payload, indent=None) + "\n")
    sys.stdout.flush()


def _wide_flag(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta["optsched_wide"] = bool(value) or ctx.meta.get("optsched_wide", False)
    return value


#: ``--wide``: every column of a table on one line, however wide (default: fit 100 columns).
wide_option = click.option(
    "--wide",
    is_flag=True,
    expose_value=False,
    callback=_wide_flag,
    help=f"Print tables with every column on one line (default: fit {TABLE_WIDTH} columns, "
    "splitting a wide table into parts).",
)


def table_width() -> int | None:
    """The width of the result's tables: None with ``--wide``, else at most 100 columns.

    A terminal narrower than 100 columns keeps its width; a wider one, a pipe or a file gets
    100, so that the output reads the same wherever it is sent (``COLUMNS`` does not widen it).
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get("optsched_wide"):
        return None
    if sys.stdout.isatty():
        import shutil

        return max(40, min(TABLE_WIDTH, shutil.get_terminal_size().columns))
    return TABLE_WIDTH


def results_on_stderr() -> None:
    """Send the running command's tables and result lines to stderr (its stdout is JSON).

    For a command that shows its tables as it goes and prints one JSON object at the end
    (``demo --json``): stdout must carry that object alone.
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["optsched_results_on_stderr"] = True


def _out_console(width: int | None) -> Console:
    ctx = click.get_current_context(silent=True)
    on_stderr = ctx is not None and ctx.meta.get("optsched_results_on_stderr", False)
    return Console(
        width=width if width is not None else 100_000,
        highlight=False,
        soft_wrap=width is None,
        stderr=on_stderr,
    )


def emit(table: TextTable) -> None:
    """Print a result table (and its notes) on stdout, within :func:`table_width`."""
    width = table_width()
    console = _out_console(width if width is not None else table.width() + 2)
    console.print(table)
    console.file.flush()


def say(text: str = "") -> None:
    """Print one line of the result on stdout (literal text, wrapped at :func:`table_width`)."""
    _out_console(table_width()).print(text, markup=False, overflow="fold")
