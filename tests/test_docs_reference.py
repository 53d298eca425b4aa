"""The reference tables of the guide agree with the code they describe.

"Limits and guarantees" tabulates every size budget with its default, "Anatomy of a family"
every field of :class:`~optsched.results.ExactResult`, and "Contracts" the shared solver
options and exit codes; a change to the code that the page does not follow fails here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from optsched.cli import common
from optsched.limits import Budget
from optsched.results import ExactResult
from optsched.solvers import Status

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide"


def _read(name: str) -> str:
    return (GUIDE / name).read_text(encoding="utf-8")


def test_budget_table_lists_every_budget_with_its_default():
    text = _read("limits.rst")
    table = text[text.index(".. _budget-table:") :]
    rows = dict(re.findall(r"^``(max_\w+)``\s+([\d,]+)\s", table, flags=re.MULTILINE))
    assert {name: int(value.replace(",", "")) for name, value in rows.items()} == (
        Budget().describe()
    )


def test_every_budget_names_its_environment_variable_form():
    # The page explains the OPTSCHED_<NAME> form once; the example must be a real budget.
    text = _read("limits.rst")
    for variable in re.findall(r"OPTSCHED_([A-Z_]+)=", text):
        assert variable.lower() in Budget().describe()


def test_every_status_is_in_the_status_table():
    text = _read("limits.rst")
    section = text[text.index("Statuses and exit codes") : text.index("Resumable sweeps")]
    for status in Status:
        assert f"``{status.value}``" in section, status


def test_exit_codes_are_the_cli_constants():
    text = _read("limits.rst")
    codes = {int(c) for c in re.findall(r"^(\d+)\s{2,}\S", text, flags=re.MULTILINE)}
    assert codes == {
        0,
        common.EXIT_OTHER,
        common.EXIT_INVALID,
        common.EXIT_NOT_OPTIMAL,
        common.EXIT_INTERRUPTED,
    }


def test_anatomy_lists_every_exact_result_field():
    text = _read("anatomy.rst")
    table = text[text.index("holds:") : text.index("**Status semantics.**")]
    documented = set(re.findall(r"``(\w+)``", table))
    fields = {f.name for f in dataclasses.fields(ExactResult)}
    assert fields <= documented, fields - documented


def test_contracts_list_the_shared_solver_options():
    text = _read("contracts.rst")
    section = text[text.index("Options every command shares") : text.index(".. _units:")]
    flags = {"--" + name.replace("_", "-") for name in common.SolverOptions.__dataclass_fields__}
    for flag in flags:
        assert f"``{flag}" in section, flag
