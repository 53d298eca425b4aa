"""The registry of families and the commands generated from it (families, schema, validate)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.family import (
    FAMILIES,
    Family,
    family_for_kind,
    family_kinds,
    get_family,
    kind_of,
    register_family,
    solution_kinds,
)
from optsched.family import registry as registry_module


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_the_registry_imports_no_family_until_asked() -> None:
    # Listing names and resolving kinds imports no family package ...
    probe = (
        "import sys\n"
        "from optsched.family import FAMILIES, family_for_kind, family_kinds, solution_kinds\n"
        "family_kinds(); solution_kinds(); family_for_kind('optsched.sim.world'); list(FAMILIES)\n"
        "from optsched.cli.core import schema_names\n"
        "schema_names()\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('optsched.online',"
        " 'optsched.comm', 'optsched.allocation', 'optsched.placement', 'optsched.sim')))))\n"
    )
    # ... and reading the entries imports each family's package.
    code = (
        "import sys\n"
        "from optsched.family import FAMILIES\n"
        "packages = [FAMILIES[n].package for n in FAMILIES]\n"
        "print(','.join(sorted(p for p in packages if p in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.strip() == ""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.strip().split(",") == sorted(FAMILIES[n].package for n in FAMILIES)


def test_lookups_name_the_field_of_a_bad_argument() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        get_family("nope")
    assert err.value.field == "family" and "oasis" in err.value.message
    with pytest.raises(InvalidInstanceError) as err:
        family_for_kind("dnn-profile")
    assert err.value.field == "kind"
    with pytest.raises(InvalidInstanceError) as err:
        FAMILIES["oasis"].run("nope", FAMILIES["oasis"].small_instance())
    assert err.value.field == "algorithm" and "fifo" in err.value.message
    assert get_family("gavel") is FAMILIES["gavel"]
    assert family_kinds()["allocation-instance"] == "gavel"


def test_the_table_of_kinds_agrees_with_the_declarations() -> None:
    # The kinds resolve without imports from the registry's table; each declaration says them
    # again, and the two must agree.
    for name in FAMILIES:
        family = FAMILIES[name]
        assert family_kinds()[family.kind] == name
        if family.solution_kind is not None:
            assert family.solution_files and solution_kinds()[family.solution_kind] == name
    assert set(solution_kinds().values()) == {
        n for n in FAMILIES if FAMILIES[n].solution_kind is not None
    }


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"kind": "comm-instance"}, "comm-instance"),
        ({"format": "optsched.sim.world", "version": 1}, "optsched.sim.world"),
        ({"jobs": []}, "oasis-instance"),
        ([1, 2], "oasis-instance"),
    ],
)
def test_kind_of_a_file(data: object, kind: str) -> None:
    assert kind_of(data) == kind


def test_a_kind_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        kind_of({"kind": ["oasis-instance"]})
    assert err.value.field == "kind"


def test_a_family_defined_elsewhere_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "FAMILIES", registry_module._Registry())
    oasis = FAMILIES["oasis"]
    mine = dataclasses.replace(oasis, name="mine", package="elsewhere", kind="mine-instance")
    assert register_family(mine) is mine
    assert registry_module.get_family("mine") is mine
    assert registry_module.family_for_kind("mine-instance") == "mine"
    assert list(registry_module.FAMILIES)[-1] == "mine"
    with pytest.raises(InvalidInstanceError) as err:
        register_family(mine)
    assert err.value.field == "name"
    with pytest.raises(InvalidInstanceError) as err:
        register_family(dataclasses.replace(mine, name="other", kind="oasis-instance"))
    assert err.value.field == "kind" and "oasis" in err.value.message
    register_family(dataclasses.replace(mine, summary="again"), replace=True)
    assert registry_module.get_family("mine").summary == "again"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "Two Words"}, "name"),
        ({"objectives": ("weighted_jct",)}, "objectives"),
        ({"objectives": ()}, "objectives"),
        ({"algorithms": {"Bad_Name": lambda instance, *, seed=0: None}}, "algorithms"),
        ({"solve": None}, "solve"),
        ({"Instance": "OasisInstance"}, "Instance"),
    ],
)
def test_a_malformed_declaration_is_refused(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        dataclasses.replace(FAMILIES["oasis"], **change)
    assert err.value.field == field


def test_a_declaration_is_read_only() -> None:
    family = FAMILIES["pace"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        family.kind = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        family.algorithms["x"] = family.algorithms["fifo"]  # type: ignore[index]


def test_families_json_lists_every_family(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "families", "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)["families"]}
    assert list(rows) == list(FAMILIES)
    for name, row in rows.items():
        family = FAMILIES[name]
        assert row["kind"] == family.kind and row["objectives"] == list(family.objectives)
        assert row["algorithms"] == sorted(family.algorithms) and row["summary"]
    code, out = _run(capsys, "families")
    # the human listing is the result: on stdout, every family named, within 100 columns
    assert code == 0 and all(f"{name}  " in out for name in FAMILIES)
    assert max(len(line) for line in out.splitlines()) <= 100


def test_schema_lists_every_kind_and_prints_each(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "schema", "--list")
    names = out.split()
    assert code == 0
    assert set(family_kinds()) | {"oasis-schedule", "placement", "dnn-profile"} <= set(names)
    for name in names:
        code, out = _run(capsys, "schema", name)
        assert code == 0 and isinstance(json.loads(out), dict), name
    assert main(["schema", "nope"]) == 2
    assert "unknown schema 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(FAMILIES))
def test_validate_finds_every_family_from_its_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    family = FAMILIES[name]
    path = tmp_path / "instance.json"
    family.small_instance().save(path)
    code, out = _run(capsys, "validate", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["valid"] is True
    assert data["kind"] == family.kind and data["family"] == name


@pytest.mark.solver("highs")
def test_validate_checks_a_solution_file(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    family = FAMILIES["aonline"]
    instance = family.small_instance()
    (tmp_path / "i.json").write_text(json.dumps(instance.to_dict()))
    schedule = family.algorithms["aonline"](instance, seed=0)
    schedule.save(tmp_path / "s.json")
    code, out = _run(
        capsys, "validate", str(tmp_path / "i.json"), str(tmp_path / "s.json"), "--json"
    )
    data = json.loads(out)
    assert (
        code == 0
        and data["valid"]
        and data["objective"] == family.validate(instance, schedule).objective
    )
    # A schedule of another instance breaks a constraint: exit 2 with the violations.
    other = family.generate_instance(6, seed=2)
    (tmp_path / "o.json").write_text(json.dumps(other.to_dict()))
    code, out = _run(
        capsys, "validate", str(tmp_path / "o.json"), str(tmp_path / "s.json"), "--json"
    )
    assert code == 2 and json.loads(out)["violations"]


def test_validate_refuses_a_solution_file_where_solutions_are_not_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    family = FAMILIES["gavel"]
    assert not family.solution_files
    path = tmp_path / "i.json"
    family.small_instance().save(path)
    code, out = _run(capsys, "validate", str(path), str(path), "--json")
    assert code == 2 and json.loads(out)["field"] == "schedule"


def test_validate_refuses_an_unknown_kind(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"kind": "dnn-profile"}))
    code, out = _run(capsys, "validate", str(path), "--json")
    data = json.loads(out)
    assert code == 2 and data["field"] == "kind" and "aonline-instance" in data["message"]


def test_the_anatomy_page_lists_every_field_of_a_declaration() -> None:
    guide = Path(__file__).resolve().parents[1] / "docs" / "guide" / "anatomy.rst"
    text = guide.read_text(encoding="utf-8")
    table = text[text.index("The shape at a glance") : text.index("The registry\n")]
    documented = set(re.findall(r"^   \* - ``(\w+)``", table, flags=re.MULTILINE))
    documented |= set(re.findall(r"^   \* - ``\w+``, ``(\w+)``", table, flags=re.MULTILINE))
    assert {f.name for f in dataclasses.fields(Family)} == documented
