"""Shared pieces of the ``optsched`` command: JSON output, stderr console, exit codes.

Contract (DESIGN §2.2): with ``--json`` a command prints exactly one JSON object on stdout; human
output, progress and logs go to stderr. Exit codes: 0 success, 2 invalid input, 3 the solver did
not reach the requested status, 1 anything else.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click
from rich.console import Console

__all__ = [
    "EXIT_INVALID",
    "EXIT_NOT_OPTIMAL",
    "EXIT_OTHER",
    "err_console",
    "json_option",
    "print_json",
    "to_jsonable",
]

EXIT_OTHER = 1
EXIT_INVALID = 2
EXIT_NOT_OPTIMAL = 3

#: Human output goes to stderr so that stdout carries only the JSON object.
err_console = Console(stderr=True)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout."
)


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, enums, tuples and non-finite floats for ``json.dumps``."""
    import enum

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    return obj


def print_json(obj: Any) -> None:
    """Write one JSON object to stdout."""
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")
    sys.stdout.flush()
