"""The ``optsched`` command.

Each family registers its subcommands from its own module (listed in :data:`SUBCOMMAND_MODULES`,
each exposing ``register(group)``), so the root stays small. :func:`main` maps optsched's typed
errors onto the exit codes of DESIGN §2.2.
"""

from __future__ import annotations

import errno
import importlib
import sys
from typing import Any

import click

from optsched._version import __version__
from optsched.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_OPTIMAL,
    EXIT_OTHER,
    FIELD_FLAGS,
    err_console,
    print_json,
)

__all__ = ["SUBCOMMAND_MODULES", "cli", "main"]

#: Modules that add subcommands; each defines ``register(group: click.Group) -> None``.
SUBCOMMAND_MODULES: list[str] = [
    "optsched.cli.core",
    "optsched.cli.oasis",
    "optsched.cli.oasis_online",
    "optsched.cli.demo",
    "optsched.cli.harmony",
    "optsched.cli.profile",
    "optsched.cli.tensorlights",
    "optsched.cli.pace",
    "optsched.cli.placement",
    "optsched.cli.sim",
    "optsched.cli.sim_extra",
    "optsched.cli.sim_experiment",
    "optsched.cli.trace",
    # last: it adds the glossary line to the help of the commands registered above
    "optsched.cli.docs",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="optsched")
def cli() -> None:
    """Exact and online optimization for scheduling deep-learning training in GPU clusters."""


for _name in SUBCOMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def _error_payload(exc: BaseException) -> dict[str, Any]:
    payload: dict[str, Any] = {"error": type(exc).__name__, "message": _message(exc)}
    field = getattr(exc, "field", None)
    if field is not None:
        payload["field"] = FIELD_FLAGS.get(field, field)
    for key in ("file", "row"):
        if getattr(exc, key, None) is not None:
            payload[key] = getattr(exc, key)
    result = getattr(exc, "result", None)
    if result is not None and hasattr(result, "to_dict"):
        # The solve's figures join the payload without overwriting the error's own message.
        for key, value in result.to_dict().items():
            payload.setdefault(key, value)
    return payload


def _say(label: str, text: str) -> None:
    """Print ``label`` (rich markup) and ``text`` (literal, never markup) on stderr."""
    from rich.markup import escape

    err_console.print(f"{label} {escape(text)}", highlight=False)


def _message(exc: BaseException) -> str:
    """The error's text, naming the command-line flag where the library named an argument."""
    text = str(exc)
    field = getattr(exc, "field", None)
    if field in FIELD_FLAGS and text.startswith(f"{field}:"):
        text = FIELD_FLAGS[field] + text[len(field) :]
    return text


#: ``OSError`` numbers that describe the place written (full, too large, read-only,
#: forbidden), reported as invalid environment (exit 2), never as a defect.
_ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return (and exit with) its exit code."""
    from optsched.cli import common
    from optsched.errors import (
        InvalidInstanceError,
        NotOptimalError,
        OptschedError,
        SolverUnavailableError,
    )

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    code = 0
    # The budget of --time-limit starts with the command's work (common.solver_options), after
    # the arguments are parsed and the solver stack imported; a start left by an earlier
    # command run in this process is forgotten.
    common.mark_started(None)
    try:
        rv = cli.main(args=args, prog_name="optsched", standalone_mode=False)
        # Without standalone mode click returns the code of a ``click.exceptions.Exit``.
        if isinstance(rv, int):
            code = rv
    except click.exceptions.Exit as exc:
        code = int(exc.exit_code or 0)
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns SIGINT (KeyboardInterrupt) into Abort; either way: exit 130.
        err_console.print("[yellow]interrupted[/yellow]")
        code = EXIT_INTERRUPTED
        if as_json:
            print_json({"error": "Interrupted", "message": "interrupted by the user (SIGINT)"})
    except click.ClickException as exc:
        # Usage errors are invalid input (click's own convention is also 2).
        exc.show(file=sys.stderr)
        code = EXIT_INVALID if exc.exit_code == 2 else EXIT_OTHER
        if as_json:
            print_json({"error": "UsageError", "message": exc.format_message()})
    except InvalidInstanceError as exc:
        _say("[red]invalid input[/red]", _message(exc))
        code = EXIT_INVALID
        if as_json:
            print_json(_error_payload(exc))
    except SolverUnavailableError as exc:
        # The requested solver is missing or cannot take this model: the --solver value is
        # invalid input here (DESIGN §2.2), so exit 2 naming the flag.
        _say("[red]invalid input[/red]", f"--solver: {_message(exc)}")
        code = EXIT_INVALID
        if as_json:
            print_json({**_error_payload(exc), "field": FIELD_FLAGS["solver"]})
    except NotOptimalError as exc:
        _say("[yellow]not optimal[/yellow]", _message(exc))
        code = EXIT_NOT_OPTIMAL
        if as_json:
            print_json(_error_payload(exc))
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            _say("[red]error[/red]", _message(exc))
            code = EXIT_OTHER
            if as_json:
                print_json(_error_payload(exc))
        else:
            # a full disk, a file-size limit, a read-only or forbidden place: the environment
            # the user gave, not a defect (exit 2, naming the file written)
            where = exc.filename or "<output>"
            _say("[red]cannot write[/red]", f"{where}: {exc.strerror or exc}")
            code = EXIT_INVALID
            if as_json:
                print_json(
                    {
                        "error": "OutputError",
                        "message": f"{where}: {exc.strerror or exc}",
                        "field": str(where),
                        "errno": exc.errno,
                    }
                )
    except OptschedError as exc:
        _say("[red]error[/red]", _message(exc))
        code = EXIT_OTHER
        if as_json:
            print_json(_error_payload(exc))
    except Exception as exc:  # the contract holds even for a defect: exit 1, one JSON object
        import os
        import traceback

        _say(
            "[red]internal error[/red]",
            f"{type(exc).__name__}: {exc} (this is a defect in optsched: please report it with "
            "the command line that caused it; set OPTSCHED_DEBUG=1 for the traceback)",
        )
        if os.environ.get("OPTSCHED_DEBUG"):
            traceback.print_exc()
        code = EXIT_OTHER
        if as_json:
            print_json(
                {
                    "error": "InternalError",
                    "type": type(exc).__name__,
                    "message": str(exc)[:2000],
                    "hint": "a defect in optsched; please report it with the command line",
                }
            )
    common.mark_started(None)
    if argv is None:
        sys.exit(code)
    return code
