"""Every number a command prints with ``--json`` has its unit in the document's ``units`` map.

A representative set of commands (those of tests/test_glossary.py and tests/test_cli_tables.py
that print JSON) runs through click's CliRunner on small inputs. For each document, every
numeric leaf (a number, or a number in a list; ``"inf"``/``"-inf"`` count as numbers) outside
the maps keyed by data (:data:`DATA_MAPS`) must be named by an entry of the document's own
``units`` map, exactly or by a ``*`` pattern (:func:`optsched.cli.common.unit_entry`), and
every unit is a non-empty string.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from optsched.cli import cli
from optsched.cli.common import unit_entry, units_map
from optsched.cli.json_units import PLACEMENT_OBJECTIVE_UNITS, placement_units

ROOT = Path(__file__).resolve().parents[1]
GAVEL = ROOT / "tests" / "data" / "traces" / "gavel" / "physical_cluster_small_test.trace"
EF = ROOT / "tests" / "data" / "traces" / "elasticflow" / "cluster10_head40.csv"

#: Maps keyed by data, not by field names (the ``units`` map itself among them).
DATA_MAPS = frozenset({"top", "gpu_demand", "units", "policy_specs"})

#: The commands; ``{name}`` is a file of the fixture.
COMMANDS: list[str] = [
    "limits",
    "profile --list",
    "oasis generate --jobs 3 --worker-servers 2 --ps-servers 2 --horizon 4 --seed 2 -o {inst2}",
    "validate {inst} {sched}",
    "oasis offline {inst}",
    "oasis offline {inst} -o {sched2}",
    "oasis online {inst}",
    "oasis check {inst}",
    "oasis ratio --instances 1 --jobs 3 --horizon 4 --worker-servers 2 --ps-servers 2 -o {ratio}",
    "profile resnet50",
    "profile resnet50 --layers",
    "profile resnet50 -o {profile}",
    "pace run resnet50 --workers 8 --bandwidth 10 -o {pace_run}",
    "placement solve {placement} --objective max-load -o {placed}",
    "pace run resnet50 --workers 8 --bandwidth 10",
    "pace sweep resnet18 --bandwidths 1,10 --workers 4 -o {pace_sweep}",
    "placement solve {placement} --objective servers",
    "placement solve {placement} --objective traffic",
    "placement compare {placement}",
    "tensorlights compare --generate",
    "harmony place --jobs 6 --seed 2",
    "harmony compare --jobs 4 --policies harmony,pairwise-ilp --gaps",
    "harmony train --reward true --iterations 2 --episodes 1 --jobs 3 --servers 3 --types 3"
    " -o {harmony_model}",
    f"sim run {GAVEL} --cluster v100=4 --policy fifo",
    f"sim compare {GAVEL} --cluster v100=4,p100=4 --policies fifo,srtf,max-min-perf --bound",
    "sim sweep {jobs} --cluster v100=4 --policies fifo,srtf --scales 1,2 --n-jobs 1",
    f"sim compare {GAVEL} --cluster v100=8 --policies fifo,srtf --exact --objectives makespan",
    f"trace info {GAVEL}",
    f"trace info {EF}",
    f"trace convert {EF} {{converted}}",
]


def numeric_leaves(obj: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The key path of every numeric leaf of a JSON value, skipping :data:`DATA_MAPS`."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key not in DATA_MAPS:
                yield from numeric_leaves(value, (*path, key))
    elif isinstance(obj, list):
        for item in obj:
            yield from numeric_leaves(item, path)
    elif (isinstance(obj, (int, float)) and not isinstance(obj, bool)) or obj in ("inf", "-inf"):
        yield path


def missing_units(document: dict[str, Any]) -> set[str]:
    """The numeric leaves of ``document`` its ``units`` map does not name."""
    units = document.get("units", {})
    return {".".join(path) for path in numeric_leaves(document) if unit_entry(path, units) is None}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("units")
    paths = {
        name: str(folder / file)
        for name, file in (
            ("inst", "inst.json"),
            ("inst2", "inst2.json"),
            ("sched", "sched.json"),
            ("sched2", "sched2.json"),
            ("placement", "placement.json"),
            ("pace_sweep", "pace_sweep.csv"),
            ("ratio", "ratio"),
            ("jobs", "jobs.csv"),
            ("harmony_model", "m.npz"),
            ("profile", "profile.json"),
            ("pace_run", "pace_run.json"),
            ("placed", "placed.json"),
            ("converted", "converted.csv"),
        )
    }
    for line in (
        "oasis generate --jobs 6 --worker-servers 2 --ps-servers 2 --horizon 6 --seed 1 -o {inst}",
        "oasis offline {inst} --json -o {sched}",
        "placement generate --jobs 4 --servers 4 --seed 0 -o {placement}",
        f"trace convert {GAVEL} {{jobs}}",
    ):
        done = CliRunner().invoke(cli, line.format(**paths).split())
        assert done.exit_code == 0, (line, done.output)
    return paths


@pytest.mark.solver("highs")
@pytest.mark.parametrize("command", COMMANDS)
def test_every_number_has_a_unit(files: dict[str, str], command: str) -> None:
    args = [*command.format(**files).split(), "--json"]
    done = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output[-2000:]
    document = json.loads(done.stdout)
    assert isinstance(document.get("units"), dict), f"{command}: no units map"
    assert list(numeric_leaves(document)), f"{command}: prints no number (not a useful case)"
    missing = missing_units(document)
    assert not missing, f"{command}: numbers without a unit: {sorted(missing)}"
    for entry, unit in document["units"].items():
        assert isinstance(unit, str) and unit.strip(), (command, entry, unit)


def test_the_check_fails_on_a_number_without_a_unit() -> None:
    table = {"jct_mean": "s", "rows.*.value": "s", "gap_*": "fraction"}
    document = {"jct_mean": 1.0, "rows": [{"a": {"value": 2}, "b": {"count": 3}}], "gap_x": "inf"}
    document["units"] = units_map(document, table)
    assert document["units"] == {"gap_*": "fraction", "jct_mean": "s", "rows.*.value": "s"}
    assert missing_units(document) == {"rows.b.count"}
    # a key holding a section is not a field: its own entry is not listed
    assert units_map({"jct_mean": [{"x": 1}]}, table) == {}


def test_placement_objective_and_bound_take_the_objectives_unit() -> None:
    for name, unit in PLACEMENT_OBJECTIVE_UNITS.items():
        table = placement_units(name)
        assert table["objective"] == table["bound"] == unit
    assert "objective" not in placement_units(None)
